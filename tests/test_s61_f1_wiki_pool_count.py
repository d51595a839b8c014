"""s61 f1: the empty-wiki-pool refusal (``tasks.utils.check_wiki_lm_pool``, p1's f85a70b) said "(1 articles)" for a
summaries file of one article; the count now takes its noun in the right number ("(1 article)", "(2 articles)")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import DataError


def _summaries(tmp_path: Path, data_dir: Path, n: int) -> Path:
    """A data folder whose summaries hold the first ``n`` test articles (more than 40 words each) and no dev one."""
    from tasks.utils import wiki_split_of

    src = json.loads((data_dir / "wiki_vital_summaries" / "summaries_en-us.json").read_text(encoding="utf-8"))
    kept = dict([(t, r) for t, r in src.items() if wiki_split_of(t) == "test" and len(r["extract"].split()) > 40][:n])
    assert len(kept) == n
    folder = tmp_path / "data" / "wiki_vital_summaries"
    folder.mkdir(parents=True)
    (folder / "summaries_en-us.json").write_text(json.dumps(kept), encoding="utf-8")
    return folder / "summaries_en-us.json"


@pytest.mark.parametrize("n, words", [(1, "1 article"), (2, "2 articles")])
def test_the_article_count_takes_its_noun_in_the_right_number(tmp_path, data_dir, n, words):
    from tasks.utils import check_wiki_lm_pool

    summaries = _summaries(tmp_path, data_dir, n)
    with pytest.raises(DataError) as err:
        check_wiki_lm_pool("dev", data_dir=tmp_path / "data")
    assert str(err.value) == (
        f"wiki_lm_bm25 split dev: the wiki-vital summaries {summaries} ({words}) hold no dev paragraph with text after "
        "its first 32 words (the dev pool: the articles of hash bucket 1 of 40), so there is nothing to score; point "
        "TOKRAG_DATA_DIR at a data folder whose wiki_vital_summaries/summaries_en-us.json holds all 10,033 articles "
        "(or unset it for the installed wheel's copy)")
