"""Helped / hurt / neutral and noise flips with several seeds are counted per seed and averaged over seeds.

They were counted on the per-question values averaged over seeds: a question right in 1 of 2 seeds where closed book is
wrong in both counted as a whole "helped" (so helped - hurt was not n x the difference of the means), and a noise flip
counted only questions right in every clean seed. A paper reader reads "helped 6.5" as the mean over the runs (seeds)
of each run's count, as every other number of a multi-seed row is a mean over seeds: that is the definition now.

Toy run, 2 seeds, 12 questions, answer match per question (doc ids 0-11), ``sample`` answers at random:

* sample/toy_qa       seed 1: 011101110111 (9 right), seed 2: 000001110001 (4 right); none: all wrong;
* sample/toy_qa_noise67 seed 1: 000100100100,             seed 2: 000000100000.

helped vs none on toy_qa: 9 and 4 -> 6.5 (neutral 3 and 8 -> 5.5; on the averaged values: 9); noise flips of sample:
seed 1 right on clean {1,2,3,5,6,7,9,10,11}, right on noisy {3,6,9}: 6 of 9; seed 2 {5,6,7,11} and {6}: 3 of 4 ->
4.5 of 6.5 (on the averaged values: 3 of 4).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboards.report import collect, compute, render_markdown
from tests.leaderboard_helpers import pin_cell_keys


@pytest.fixture(scope="module")
def two_seeds(two_seed_runs):  # the session's run of run_two_seed_spec (tests/conftest.py)
    spec, runs, frozen = two_seed_runs
    with pytest.MonkeyPatch.context() as mp:
        pin_cell_keys(mp, frozen=frozen)
        yield spec, runs, compute(spec, collect(spec, runs), timings=False)


def _answer_match(runs: Path) -> dict[str, str]:
    """cell id -> answer match per question in doc-id order, read from the samples files (not the report)."""
    out = {}
    for done in runs.glob("*/DONE"):
        cid = json.loads(done.read_text())["cell_id"]
        (samples,) = done.parent.glob("samples_*.jsonl")
        rows = sorted((json.loads(x) for x in samples.read_text().splitlines()), key=lambda s: s["doc_id"])
        out[cid] = "".join(str(int(s["answer_match"])) for s in rows)
    return out


def test_the_toy_runs_are_the_hand_counted_ones(two_seeds):
    _, runs, _ = two_seeds
    am = _answer_match(runs)
    assert am["sample/toy_qa/seed1"] == "011101110111" and am["sample/toy_qa/seed2"] == "000001110001"
    assert am["sample/toy_qa_noise67/seed1"] == "000100100100" and am["sample/toy_qa_noise67/seed2"] == "000000100000"
    assert am["none/toy_qa/seed1"] == am["none/toy_qa/seed2"] == "0" * 12


def test_helped_hurt_and_noise_flips_are_per_seed_counts_averaged(two_seeds):
    _, _, data = two_seeds
    rows = {(r["method"], r["task"]): r for r in data["rows"]}
    sample = rows[("sample", "toy_qa")]
    assert sample["closed_book"] == {"helped": 6.5, "hurt": 0, "neutral": 5.5, "seeds": 2}
    # for a 0/1 metric helped - hurt = n x the difference of the means, as with one seed
    n, diff = sample["n"], sample["metrics"]["answer_match"]["mean"] - rows[("none", "toy_qa")]["metrics"]["answer_match"]["mean"]
    assert sample["closed_book"]["helped"] - sample["closed_book"]["hurt"] == pytest.approx(n * diff)
    assert rows[("sample", "toy_qa_noise67")]["closed_book"] == {"helped": 2, "hurt": 0, "neutral": 10, "seeds": 2}
    assert rows[("sample", "toy_qa_noise67")]["noise_sensitivity"] == {"flips": 4.5, "clean_correct": 6.5,
                                                                      "clean_task": "toy_qa", "seeds": 2}
    # a deterministic method: both seeds alike, whole counts
    assert rows[("standard", "toy_qa")]["closed_book"] == {"helped": 9, "hurt": 0, "neutral": 3, "seeds": 2}
    assert rows[("standard", "toy_qa_noise67")]["noise_sensitivity"]["flips"] == 6
    md = render_markdown(data)
    assert "| sample | toy_qa | 6.5 | 0 | 5.5 | - |" in md
    assert "| sample | toy_qa_noise67 | 2 | 0 | 10 | 4.5/6.5 |" in md
    assert "With several seeds each count is per seed (seed s of the method against seed s of the closed-book row" in md


def test_the_readme_states_the_multi_seed_definition():
    text = " ".join((Path(__file__).resolve().parents[1] / "leaderboards" / "README.md").read_text().split())
    assert "counted per seed (seed s of the method against seed s of closed book" in text
