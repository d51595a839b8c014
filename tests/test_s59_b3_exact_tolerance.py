"""A value moved by exactly its tolerance passes ``check`` at any size (s59 b3, breaker): the check rounds the runs'
value and the baseline's to 6 decimals and compared their float difference with ``abs + 1e-12``, but that difference
carries the float error of the values' size: at a word perplexity of 98765.432109 a move of exactly 0.1 was
0.10000000000582077 > 0.1 and FAILed (the README promises ``|value - baseline| <= abs``). The difference is now rounded
to the same 6 decimals. The cell is synthetic (``collect`` stubbed), as in test_s52_f6_check_write_tolerance.py: a
rolling task's corpus metric, read from results.json."""

from __future__ import annotations

import json
from types import SimpleNamespace

import leaderboards.check as C

TASK = "my_lm"
CID = "standard/my_lm/seed1"
SPEC = SimpleNamespace(name="mine", whole=None, selection=None, path="mine.yaml", runs_dir=None)


def _loaded(value: float) -> dict:
    cell = SimpleNamespace(task=SimpleNamespace(task=TASK), model_name=None, method=SimpleNamespace(name="standard"))
    return {CID: (cell, "key", {"samples": {TASK: []}, "results": {"results": {TASK: {"word_perplexity,none": value}}}})}


def _check(monkeypatch, tmp_path, value: float, baseline: float, tol: float) -> list[str]:
    monkeypatch.setattr(C, "collect", lambda *a, **k: _loaded(value))
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"spec": "mine", "tolerances": {"word_perplexity": {"abs": tol}},
                                "cells": {CID: {"word_perplexity": baseline}}}), encoding="utf-8")
    return [x.render() for x in C.check_against_baseline(SPEC, tmp_path, path)]


def test_rounded_delta_is_the_six_decimal_difference():
    assert C.rounded_delta(98765.532109, 98765.432109) == 0.1  # was 0.10000000000582077
    assert C.rounded_delta(543210.133456, 543210.123456) == 0.01  # was 0.010000000009313226
    assert C.rounded_delta(0.78, 0.75) == 0.03
    assert C.rounded_delta(0.7500004, 0.75) == 0.0  # under the 6th decimal: not seen, as before


def test_a_large_value_moved_by_exactly_the_tolerance_passes(monkeypatch, tmp_path):
    for value in (98765.532109, 98765.332109):  # up and down by exactly 0.1
        assert _check(monkeypatch, tmp_path, value, 98765.432109, 0.1) == [
            f"OK   {CID}  word_perplexity = {value:.4f} (baseline 98765.4321, |Δ| 0.1000 <= 0.1000 perplexity per word)"]


def test_one_millionth_beyond_the_tolerance_still_fails(monkeypatch, tmp_path):
    assert _check(monkeypatch, tmp_path, 98765.532110, 98765.432109, 0.1) == [
        f"FAIL {CID}  word_perplexity = 98765.532110 (baseline 98765.432109, |Δ| 0.100001 > 0.100000 perplexity per word)"]
