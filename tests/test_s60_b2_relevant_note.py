"""``tokrag analyze``'s table labels a generation-relevant AUC and CI that stand on a handful of tokens (s60 b2, breaker):
with enough strict tokens (240) but 6 generation-relevant ones (the others bypassed function tokens), the table gave
``relevant AUC [95% CI]`` ``0.333 [0.000, 0.800]`` and no note at all; the small-sample note covered the strict count
only. Fake 4-layer model (``tests/analyze_fakes.py``), no weights."""

from __future__ import annotations

import json

import pytest


def _install(monkeypatch, bypassed_from: int):
    """Fake data: one strict token per sample (even samples benefit, odd ones detriment), S_R per layer; samples from
    ``bypassed_from`` on have their RAG top-1 bypassed (a function token), so they leave the relevant subset."""
    from tasks import analyze

    from tests.analyze_fakes import install_fake

    def record(i, sid):
        tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
        s_r = [0.1 * (j + 1) + 0.05 * (i % 7) for j in range(4)]
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, i >= bypassed_from, 0.2, s_r,
                                    [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]

    monkeypatch.setattr(analyze, "check_data_paths", lambda args: None)
    state = install_fake(monkeypatch, record, device="cpu")
    state.pool = 240
    return state


def _run(tmp_path, capsys, n: int) -> tuple[str, dict]:
    from tasks import analyze

    out = tmp_path / "out"
    assert analyze.main(["--data", "wiki", "--n", str(n), "--bootstrap", "20", "--layers", "none", "--out", str(out)]) == 0
    return capsys.readouterr().out, json.loads((out / "results.json").read_text())["results"]["wiki"]


def test_a_handful_of_relevant_tokens_is_labelled(monkeypatch, tmp_path, capsys) -> None:
    _install(monkeypatch, bypassed_from=6)
    text, res = _run(tmp_path, capsys, 240)
    assert res["counts"]["strict"] == 240 and res["counts"]["relevant"] == 6
    assert res["policies"]["default"]["relevant"]["n"] == 6 and res["policies"]["default"]["relevant"]["benefit"] == 3
    notes = [line for line in text.splitlines() if "note:" in line]
    assert notes == ["wiki: note: the relevant columns stand on only 6 generation-relevant strict tokens (3 benefit): "
                     "below 200 an AUC's 95% CI is about ±0.08 or wider and a degenerate bootstrap CI is not certainty; "
                     "raise --n"]


def test_relevant_tokens_of_one_class_are_labelled(monkeypatch, tmp_path, capsys) -> None:
    _install(monkeypatch, bypassed_from=1)  # one relevant token, a benefit one
    text, res = _run(tmp_path, capsys, 240)
    assert res["counts"]["relevant"] == 1 and res["policies"]["default"]["relevant"]["auc"] is None
    assert ("wiki: note: the 1 generation-relevant strict token(s) are all benefit: the relevant AUC needs both (n/a); "
            "raise --n") in text.splitlines()


def test_enough_relevant_tokens_or_few_strict_ones_add_no_relevant_note(monkeypatch, tmp_path, capsys) -> None:
    """Guards: 240 relevant tokens print no note; 8 strict tokens print the strict note only (it covers both)."""
    _install(monkeypatch, bypassed_from=10_000)
    text, _ = _run(tmp_path, capsys, 240)
    assert "note:" not in text
    text, _ = _run(tmp_path, capsys, 8)
    assert [line for line in text.splitlines() if "note:" in line] == [
        "wiki: note: only 8 strict tokens (4 benefit): below 200 an AUC's 95% CI is about ±0.08 or wider and a "
        "degenerate bootstrap CI is not certainty; raise --n"]
