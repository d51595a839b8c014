"""s61 r1 (review of p1's f85a70b): ``wiki_lm_bm25``'s task-metadata ``query`` is checked before its pool.

f85a70b made ``tasks.utils.build_wiki_lm_docs`` refuse an empty ``split`` pool (a data folder whose wiki-vital
summaries hold no dev article) with its own line, but put that check before the metadata checks, so a task with
``query: title`` (refused: titles share no word with other articles) over such a folder was told to point
``TOKRAG_DATA_DIR`` elsewhere first, and only after that about its query. Now the metadata line comes first, as
before s61; a right query over the empty pool still gets the pool's line."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError, DataError


@pytest.fixture
def no_dev(tmp_path, monkeypatch, data_dir):
    """A data folder of 3 test and 3 retrieval-only wiki-vital articles: no dev article."""
    from tasks.utils import wiki_split_of

    src = json.loads((data_dir / "wiki_vital_summaries" / "summaries_en-us.json").read_text(encoding="utf-8"))
    kept, counts = {}, {"test": 0, None: 0}
    for title, rec in src.items():
        split = wiki_split_of(title)
        if split in counts and counts[split] < 3 and len(rec["extract"].split()) > 40:
            kept[title] = rec
            counts[split] += 1
    (tmp_path / "data" / "wiki_vital_summaries").mkdir(parents=True)
    (tmp_path / "data" / "wiki_vital_summaries" / "summaries_en-us.json").write_text(json.dumps(kept), encoding="utf-8")
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def test_a_wrong_query_is_said_before_the_empty_pool(no_dev):
    from tasks.utils import build_wiki_lm_docs

    with pytest.raises(ConfigError) as err:
        build_wiki_lm_docs(split="dev", query="title")
    assert str(err.value).startswith("wiki_lm_bm25: task metadata query='title' is not supported: ")
    with pytest.raises(ConfigError) as err:
        build_wiki_lm_docs(split="dev", query="words")
    assert str(err.value) == "task metadata query='words': expected 'lead' (the only query this task supports)"


def test_the_right_query_gets_the_pool_line(no_dev):
    """Guard: query lead over the empty dev pool is refused for the pool (6 articles, no dev one)."""
    from tasks.utils import build_wiki_lm_docs

    with pytest.raises(DataError) as err:
        build_wiki_lm_docs(split="dev")
    assert str(err.value).startswith("wiki_lm_bm25 split dev: the wiki-vital summaries ")
    assert "(6 articles) hold no dev paragraph with text after its first 32 words" in str(err.value)
