"""s61 p1: ``tokrag calibrate`` / ``tokrag analyze`` with ``wiki`` in ``--data`` over a ``wiki-vital`` corpus whose
``--split`` pool is empty are refused before the model loads, in one line naming the split, the summaries file and
what to do.

Before, a data folder whose ``wiki_vital_summaries`` held no dev article loaded the model and then stopped with
retrieval's ``no queries given: the query set is empty`` (measured with a tiny random 4-layer Llama over 12 articles,
6 test and 6 retrieval-only: exit 2 after the load, about 5 s; a 7B model takes minutes to load). Now 0.6 s, no load;
``wiki_lm_bm25`` (lm-eval's task, the same docs) says the same line, headed by the task and split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import DataError

class Loaded(Exception):
    """The model load was reached."""


@pytest.fixture
def no_dev(tmp_path, monkeypatch, data_dir) -> Path:
    """A data folder whose summaries hold 6 test articles and 6 retrieval-only ones, no dev article; the model load
    raises :class:`Loaded`."""
    from tasks.utils import wiki_split_of

    src = json.loads((data_dir / "wiki_vital_summaries" / "summaries_en-us.json").read_text(encoding="utf-8"))
    kept, counts = {}, {"test": 0, None: 0}
    for title, rec in src.items():
        split = wiki_split_of(title)
        if split in counts and counts[split] < 6 and len(rec["extract"].split()) > 40:
            kept[title] = rec
            counts[split] += 1
    folder = tmp_path / "data" / "wiki_vital_summaries"
    folder.mkdir(parents=True)
    (folder / "summaries_en-us.json").write_text(json.dumps(kept), encoding="utf-8")
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))

    def load(args):
        raise Loaded

    monkeypatch.setattr("tasks.analyze.load_lm", load)
    return folder / "summaries_en-us.json"


def _line(summaries: Path, where: str) -> str:
    return (f"{where}: the wiki-vital summaries {summaries} (12 articles) hold no dev paragraph with text after its "
            "first 32 words (the dev pool: the articles of hash bucket 1 of 40), so there is nothing to score; point "
            "TOKRAG_DATA_DIR at a data folder whose wiki_vital_summaries/summaries_en-us.json holds all 10,033 "
            "articles (or unset it for the installed wheel's copy)")


@pytest.mark.parametrize("command", ["calibrate", "analyze"])
def test_an_empty_dev_pool_is_refused_before_the_model_loads(no_dev, tmp_path, command):
    from tasks import analyze, calibrate

    main = calibrate.main if command == "calibrate" else analyze.main
    with pytest.raises(DataError) as err:
        main(["--model", "unused-model", "--data", "wiki", "--split", "dev", "--n", "2", "--out", str(tmp_path / "o")])
    assert str(err.value) == _line(no_dev, "--data wiki --split dev") + ", or drop wiki from --data"


def test_the_task_says_the_same_line(no_dev):
    from tasks.utils import build_wiki_lm_docs, check_wiki_lm_pool

    with pytest.raises(DataError) as err:
        build_wiki_lm_docs(split="dev")
    assert str(err.value) == _line(no_dev, "wiki_lm_bm25 split dev")
    assert check_wiki_lm_pool("test") == 6  # the test pool is there: analyze --split test runs


def test_nq_alone_is_not_refused_for_the_wiki_pool(no_dev, tmp_path, data_dir):
    """Guard: without wiki in --data the summaries are not read for a pool (the load is reached)."""
    from tasks import analyze

    with pytest.raises(Loaded):
        analyze.main(["--model", "unused-model", "--data", "nq", "--split", "dev", "--n", "2",
                      "--data-dir", str(data_dir), "--out", str(tmp_path / "o")])


def test_the_real_pools(data_dir, monkeypatch):
    """Guard: the shared data folder's dev and test pools (238 and 231 paragraphs, the README's counts)."""
    from tasks.utils import check_wiki_lm_pool

    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data_dir))
    assert (check_wiki_lm_pool("dev"), check_wiki_lm_pool("test")) == (238, 231)
