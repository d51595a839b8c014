"""The prebuilt pre-check's run-cache look-up skips a damaged ``meta.json`` (s56 b2).

:func:`tasks.precheck._run_cached` (``check_prebuilt_download``: is the task's prebuilt run already cached?) says an
unreadable entry is no hit, but an entry whose ``config`` or ``config.corpus`` was JSON of another type (a list, a
string: a hand edit, another tool's file in ``runs/``) stopped the pre-check with ``AttributeError: 'str' object has no
attribute 'get'`` (a traceback before the model load), also when a good entry of the run lay beside it.
"""

from __future__ import annotations

import json

import pytest

from retrieval.cache import engine_versions, run_code
from tasks.precheck import _run_cached

CORPUS = "prebuilt:wikipedia-dpr-100w"


def entry(cache, name: str, meta) -> None:
    folder = cache / "runs" / f"bm25-{name}"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


GOOD = {"config": {"retriever": "bm25", "corpus": {"name": CORPUS}, "k": 5}}


@pytest.mark.parametrize("damaged", [{"config": {"retriever": "bm25", "corpus": CORPUS, "k": 5}},
                                     {"config": ["bm25", CORPUS]}, {"config": "bm25"}, {"config": {"corpus": 7}}])
def test_a_damaged_entry_is_no_hit_and_a_good_one_beside_it_still_counts(tmp_path, damaged):
    cache = tmp_path / "cache"
    entry(cache, "0damaged", damaged)
    assert _run_cached(cache, CORPUS, "bm25", 5) is False
    good = json.loads(json.dumps(GOOD))
    good["config"].update(engine=engine_versions("bm25"), code=run_code("bm25", prebuilt=True))
    entry(cache, "1good", good)
    assert _run_cached(cache, CORPUS, "bm25", 5) is True
    assert _run_cached(cache, CORPUS, "bm25", 10) is False
