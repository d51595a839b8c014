"""``check --write`` refuses a NaN or infinite value (s59 b3, breaker): a corpus metric's results.json value (a rolling
task's word_perplexity, a user task's own aggregation) is no invariant's, which check the samples' values, so an infinite
one was written into the baseline as ``Infinity`` with exit 0, and every later ``check`` and ``--write`` then refused
the file as malformed (``cells.X.word_perplexity must be a finite number``). The cell is synthetic (``collect``
stubbed), as in test_s52_f6_check_write_tolerance.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import leaderboards.check as C
from retrieval.errors import ConfigError

TASK = "my_lm"
CID = "standard/my_lm/seed1"
SPEC = SimpleNamespace(name="mine", whole=None, selection=None, path="mine.yaml", runs_dir=None)


def _loaded(value: float) -> dict:
    cell = SimpleNamespace(task=SimpleNamespace(task=TASK), model_name=None, method=SimpleNamespace(name="standard"))
    return {CID: (cell, "key", {"samples": {TASK: []}, "results": {"results": {TASK: {"word_perplexity,none": value}}}})}


def test_write_refuses_an_infinite_corpus_metric(monkeypatch, tmp_path):
    """One line naming the cell, the metric and its run folder; nothing written. A finite value is written as before."""
    cell, key, data = _loaded(float("inf"))[CID]
    data["samples"][TASK] = [{"doc_id": 0, "metrics": ["word_perplexity"], "word_perplexity": [-1e6, 3]}]
    monkeypatch.setattr(C, "collect", lambda *a, **k: {CID: (cell, key, data)})
    path = tmp_path / "b.json"
    with pytest.raises(ConfigError) as err:
        C.write_baseline(SPEC, tmp_path, path)
    assert str(err.value) == (
        f"baseline {path} not written: cell {CID} has word_perplexity = inf in its runs ({tmp_path / 'key'}), not a "
        "finite number, which a baseline cannot hold; fix the task's word_perplexity (or its aggregation) and re-run "
        "the cell")
    assert not path.exists()
    data["results"]["results"][TASK]["word_perplexity,none"] = 37.5  # finite: written as before
    assert C.write_baseline(SPEC, tmp_path, path)["cells"] == {CID: {"word_perplexity": 37.5}}
