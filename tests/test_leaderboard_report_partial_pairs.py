"""A paired test between rows that finished different seeds (``report --allow-missing``) is over the seeds both finished.

Before, it compared each row's average over its own finished seeds: a row with seed 1 only against the other's average
over seeds 1 and 2, which is not paired (each seed draws its own passages on a noise task) and broke the report's own
note (its paired tests are over the finished seed only) and the identity helped - hurt = n x Δ against the closed book,
whose counts were already over the common seeds.

Toy run (:func:`tests.leaderboard_helpers.run_two_seed_spec`), 12 questions of toy_qa, answer match per question:
standard (both seeds) and sample seed 1: 9 of 12 right, the same questions; sample seed 2: 4 of 12, a subset of them;
none: 0 of 12. Seed 2 of standard and of none on toy_qa is left unfinished, so sample (seeds 1 and 2) meets both
references over seed 1 only: Δ vs standard 0 (old: 13/24 - 9/12 = -0.208, p 0.0625 over the 5 questions sample missed
in seed 2), Δ vs none 0.75 = (helped 9 - hurt 0) / 12 (old: 13/24 = 0.542).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from leaderboards.report import collect, compute, render_markdown
from leaderboards.stats import paired_test
from tests.leaderboard_helpers import pin_cell_keys, runs_without as _without


@pytest.fixture(scope="module")
def two_seeds(two_seed_runs):  # the session's run of run_two_seed_spec (tests/conftest.py); tests copy the runs
    spec, runs, frozen = two_seed_runs
    with pytest.MonkeyPatch.context() as mp:
        pin_cell_keys(mp, frozen=frozen)
        yield spec, runs


def _am(loaded: dict, cid: str) -> np.ndarray:
    """Answer match per question (by doc id) of one loaded cell."""
    cell, _key, data = loaded[cid]
    return np.array([s["answer_match"] for s in sorted(data["samples"][cell.task.task], key=lambda s: s["doc_id"])], float)


def test_paired_tests_use_the_seeds_both_rows_finished(two_seeds, tmp_path):
    spec, runs = two_seeds
    runs = _without(runs, tmp_path / "runs", "standard/toy_qa/seed2", "none/toy_qa/seed2")
    loaded = collect(spec, runs, allow_missing=True)
    s1, s2 = _am(loaded, "sample/toy_qa/seed1"), _am(loaded, "sample/toy_qa/seed2")
    std, none = _am(loaded, "standard/toy_qa/seed1"), _am(loaded, "none/toy_qa/seed1")
    assert (s1.sum(), s2.sum(), std.sum(), none.sum()) == (9, 4, 9, 0)  # the toy run the docstring describes
    data = compute(spec, loaded, timings=False)
    row = next(r for r in data["rows"] if (r["method"], r["task"]) == ("sample", "toy_qa"))
    assert row["seeds"] == [1, 2] and "seeds_expected" not in row  # sample itself is complete
    assert row["metrics"]["answer_match"]["mean"] == pytest.approx(13 / 24)  # its own value: both seeds

    vs_std = row["paired"]["standard"]["answer_match"]
    assert vs_std["diff"] == 0.0 and vs_std["p"] == 1.0 and vs_std["n"] == 12 and vs_std["seeds"] == [1]
    assert vs_std["diff"] == pytest.approx(float((s1 - std).mean()))

    vs_none = row["paired"]["none"]["answer_match"]
    assert vs_none["diff"] == pytest.approx(0.75) and vs_none["seeds"] == [1]
    assert vs_none["p"] == pytest.approx(paired_test(s1 - none, 500, 0.95, 0)["p"])  # McNemar, 9 of 9 discordant
    cb = row["closed_book"]  # helped / hurt against none: over seed 1 too, so helped - hurt = n x Δ
    assert (cb["helped"], cb["hurt"]) == (9, 0) and "seeds" not in cb
    assert cb["helped"] - cb["hurt"] == pytest.approx(row["n"] * vs_none["diff"])

    # a pair whose rows finished the same seeds is as before: no "seeds" recorded
    std_row = next(r for r in data["rows"] if (r["method"], r["task"]) == ("standard", "toy_qa"))
    assert std_row["paired"]["none"]["answer_match"]["diff"] == 0.75 and "seeds" not in std_row["paired"]["none"]["answer_match"]

    # Holm over the three pairs of toy_qa and the MDE use the restricted tests
    ps = {k: r["paired"]["none"]["answer_match"]["p"] for k, r in (("sample", row), ("standard", std_row))}
    assert ps["sample"] == ps["standard"]  # both are 9 of 9 discordant over seed 1
    assert vs_std["p_holm"] == 1.0 and vs_none["p_holm"] == pytest.approx(min(1.0, 3 * ps["sample"]))
    mde = next(x for x in data["mde"] if x["task"] == "toy_qa")
    # s1 - std is all 0 (no spread): left out of the RMS since s54 f3 (it pulled the pooled sd down)
    sd = math.sqrt(np.mean([np.std(d, ddof=1) ** 2 for d in (s1 - none, std - none)]))
    assert mde["n"] == 12 and mde["sd"] == pytest.approx(round(sd, 4))

    md = render_markdown(data)
    # against standard: no question differs, so no zero-width CI (s54 f3)
    assert "| sample † | toy_qa | +0.000 (no question differs) p=1.000 (0+/0−) holm=1.000 |" in md


def test_pair_values_average_ratio_metrics_over_the_common_seeds():
    """The corpus-ratio path: (loglik, length) per document averaged over the seeds both rows finished."""
    from leaderboards.report import _pair_values

    per_seed = {("m", "a", "t"): {1: {"word_perplexity": {0: (-2.0, 4.0), 1: (-6.0, 2.0)}},
                                  2: {"word_perplexity": {0: (-4.0, 4.0), 1: (-8.0, 2.0)}}},
                ("m", "b", "t"): {1: {"word_perplexity": {0: (-1.0, 4.0), 1: (-3.0, 2.0)}}}}
    keys = {("m", "a", "t"): {1: "ka1", 2: "ka2"}, ("m", "b", "t"): {1: "kb1"}}
    qa, qb, id_a, id_b, seeds = _pair_values(("m", "a", "t"), ("m", "b", "t"), "word_perplexity", {}, per_seed, keys, {})
    assert qa == {0: (-2.0, 4.0), 1: (-6.0, 2.0)} and qb == {0: (-1.0, 4.0), 1: (-3.0, 2.0)}
    assert (id_a, id_b, seeds) == ("ka1", "kb1", [1])
    per_seed[("m", "b", "t")] = {3: per_seed[("m", "b", "t")][1]}
    assert _pair_values(("m", "a", "t"), ("m", "b", "t"), "word_perplexity", {}, per_seed, keys, {}) is None
