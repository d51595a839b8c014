"""s61 r6 (review of f1's 4369758): ``run --estimate`` prints times under an hour in seconds or minutes since
4369758, but its one-time dense index build line kept hours and whole minutes, so a small corpus read ``about 0.00 h
(0 min at 20 passages/s ...)`` under a total of ``... cell-seconds``: the ``0.00`` f1's change removed elsewhere.
Under a minute it now reads :func:`leaderboards.estimate.duration`'s ``about 5.0 s (at 20 passages/s ...)``; a
minute and more keep the line as before (``about 0.02 h (1 min at ...``, test_s51_f7_estimate_index_build).

A toy task over a 100-passage local corpus, retriever dense (all-MiniLM-L6-v2), an empty ``$TOKRAG_CACHE_DIR``;
nothing is encoded."""

from __future__ import annotations

import json
import shutil

import pytest

from leaderboards.cli import main as lb_main
from leaderboards.estimate import index_build_line
from tests.leaderboard_helpers import FIX, write_spec

RATE = "20 passages/s on one free core, measured; included in the total)"


def test_a_small_index_build_prints_seconds_not_zero_hours(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"passage number {i}"}) + "\n"
                              for i in range(100)), encoding="utf-8")  # 100 / 20 passages/s = 5 s
    tasks = tmp_path / "tasks"
    shutil.copytree(FIX / "tasks", tasks, ignore=shutil.ignore_patterns("__pycache__"))
    y = tasks / "toy_qa" / "toy_qa.yaml"
    y.write_text(y.read_text().replace("metadata: {version: 1.0}", "metadata: {version: 1.0, retriever: dense, "
                                       "corpus: %s}" % corpus))
    spec = write_spec(tmp_path / "s", include=tasks, tasks=["toy_qa"], limit=3)
    capsys.readouterr()
    assert lb_main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), "--estimate",
                    "--fallback-s-per-question", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    (build,) = [line for line in lines if line.startswith("one-time index build")]
    assert build == (f"one-time index build (not in the cache): the dense index of {corpus} (100 passages, encoder "
                     f"all-MiniLM-L6-v2) for toy_qa, about 5.0 s (at {RATE}; the first cell over it encodes the corpus "
                     f"before its questions; or build it first: tokrag index build --corpus {corpus} --dense")
    assert "0.00 h" not in build and "0 min" not in build
    # 2 cells x 3 questions x 1 s + the build once: 11 s, as the total says
    (total,) = [line for line in lines if line.startswith("total")]
    assert ", 11 cell-seconds (CPU-seconds, one process per cell); about 11 s wall with --jobs 1 " in total
    assert json.loads(lines[-1])["index_hours"] == 0.0  # the JSON keeps its hours


def _line(seconds: float | None) -> str:
    return index_build_line({"corpus": "c.jsonl", "passages": 300, "encoder": "all-MiniLM-L6-v2", "tasks": ["t"],
                             "seconds": seconds, "command": None, "folder": "/cache/dense/x"})


@pytest.mark.parametrize("seconds, cost", [
    (0.05, f"about 0.1 s (at {RATE}"),
    (15.0, f"about 15 s (at {RATE}"),
    (59.4, f"about 59 s (at {RATE}"),
    (59.5, f"about 0.02 h (1 min at {RATE}"),  # a minute and more: as before
    (660.0, f"about 0.18 h (11 min at {RATE}"),
    (None, "time not estimated (no measured rate for this encoder; all-MiniLM-L6-v2 encodes 20 passages/s on one "
           "free core)"),
])
def test_the_build_time_reads_in_seconds_under_a_minute(seconds, cost):
    assert _line(seconds) == ("one-time index build (not in the cache): the dense index of c.jsonl (300 passages, encoder "
                              f"all-MiniLM-L6-v2) for t, {cost}; the first cell over it encodes the corpus before its "
                              "questions")
