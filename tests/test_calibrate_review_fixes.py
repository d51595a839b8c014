"""Findings of a review of ``tokrag calibrate`` on hand-built records: a preset is not chosen where a data set holds
one class of strict tokens only (its AUCs compare tokens within each data set), and the dynamic rule's fallback rate
counts real fallbacks, not scan hits that land on the fallback layer."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks.analyze import TokenRecord

L = 8


def rec(sample, lab, s_r=None, gaps=None):
    """A strict token of class ``lab`` (1 benefit, 0 detriment; None: both greedy tokens wrong, not strict)."""
    tr, tp = (1, 2) if lab == 1 else (2, 1) if lab == 0 else (3, 2)
    return TokenRecord(sample, 0, 1, -1.0, -2.0, tr, tp, -0.5, -1.0, False, 0.5, s_r or [0.5] * L,
                       gaps or [None] * 3 + [1e-6] * (L - 3), (0.0, 0.0))


def test_no_data_set_with_both_classes_is_refused_naming_them() -> None:
    """wiki all benefit and nq all detriment: no data set holds a benefit/detriment pair, every stratified AUC is NaN,
    and calibrate wrote params {'layer': 5} (dev_auc NaN) without a word; now it is refused, naming the data sets."""
    from tasks.calibrate import calibrate_records

    wiki = [rec(f"wiki:{j}", 1, [0.1 * j] * L) for j in range(4)]
    nq = [rec(f"nq:{j}", 0, [0.1 * j] * L) for j in range(4)]
    with pytest.raises(ConfigError, match=r"^calibrate: no data set's dev records hold strict tokens of both classes "
                                          r"\(the wiki dev records hold 4 strict tokens, all benefit; the nq dev records "
                                          r"hold 4 strict tokens, all detriment\): .*; raise --n$"):
        calibrate_records(wiki + nq, L, quantiles=(0.5,))
    with pytest.raises(ConfigError, match=r"the nq dev records hold no strict token"):
        calibrate_records([rec("nq:0", None)], L, quantiles=(0.5,))


def test_a_data_set_with_one_class_is_named_in_a_warning_and_the_preset(caplog) -> None:
    """wiki holds both classes, nq one: the choice rests on wiki's pairs only (at --n 20 NQ's strict tokens are
    often all benefit, so refusing would stop the README's quick look); a WARNING and calibration.uncompared say so."""
    from tasks.calibrate import calibrate_records

    mixed = [rec(f"wiki:{j}", j % 2, [0.1 * j] * L) for j in range(4)]
    nq = [rec(f"nq:{j}", 0, [0.1 * j] * L) for j in range(4)]
    with caplog.at_level("WARNING", logger="tasks.calibrate"):
        cal = calibrate_records(mixed + nq, L, quantiles=(0.5,))
    assert cal["calibration"]["uncompared"] == ["the nq dev records hold 4 strict tokens, all detriment"]
    assert [r.getMessage() for r in caplog.records] == [
        "calibrate: the nq dev records hold 4 strict tokens, all detriment: it adds no benefit/detriment pair, so the "
        "preset is chosen on the other data sets' tokens only (raise --n to include it)"]
    assert cal["params"] == calibrate_records(mixed, L, quantiles=(0.5,))["params"] == {"layer": 5}  # every layer ties
    assert "uncompared" not in calibrate_records(mixed, L, quantiles=(0.5,))["calibration"]


def test_fallback_rate_counts_real_fallbacks_not_scan_hits_on_the_fallback_layer() -> None:
    """``fallback_rate`` counted the strict tokens whose layer equals the fallback (the best fixed layer 3), which
    includes the rule's scan hits at pair ℓ = 4 (layer ℓ − 1 = 3): here 1.00 while only 2 of 4 tokens fell back."""
    from tasks.analyze import Policy
    from tasks.calibrate import calibrate_records

    recs = []
    for j, (lab, hit) in enumerate([(1, True), (0, True), (1, False), (0, False)]):
        s_r = [0.5] * L
        s_r[3] = 0.9 if lab else 0.1  # layer 3 separates the classes: the best fixed layer, the fallback
        gaps = [None] * 3 + [0.0] * (L - 3)
        if hit:
            gaps[4] = 1.0  # pair 4 fires: layer 3, the fallback's own index
        recs.append(rec(f"q{j}", lab, s_r, gaps))
    cal = calibrate_records(recs, L, quantiles=(0.5,))["calibration"]
    row = cal["dev_auc_by_quantile"][0]
    assert cal["fixed"]["layer"] == 3 and row["threshold"] == 0.0
    assert row["fallback_rate"] == 0.5
    pol = Policy("dynamic", "dynamic", 3, 0.0, 2)
    assert [pol.layer_of(r) for r in recs] == [3, 3, 3, 3]
    assert [pol.fell_back(r) for r in recs] == [False, False, True, True]
    assert not Policy("layer3", "fixed", 3).fell_back(recs[2])
