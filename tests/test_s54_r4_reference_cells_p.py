"""``benchmarks/reference_cells.py``'s JSON line (s54 r4, review of b132d08): it rounded every float to 4 decimals, so
the exact binomial p of rag-standard - rag-none on nq_oracle_gold (119 of 119 discordant questions one way,
3.009e-36) read ``"p_gold_minus_none": 0.0``; and since b132d08 a paired comparison without a CI (one question, no
question differs) has ``lo``/``hi`` None, which stopped the script with a TypeError when it checked ``ci_low > 0``.
The leaderboard calls are replaced by stubs (as in test_s51_lead_reference_cells_no_ci.py): only the figures under test."""

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _row(method, task, paired):
    m = {"answer_match": {"mean": 0.5, "lo": 0.25, "hi": 0.75, "n": 2},
         "empty_pred": {"mean": 0.0, "n": 2}, "overlong_pred": {"mean": 0.0, "n": 2}}
    return {"method": method, "task": task, "n": 2, "metrics": m, "paired": paired, "cost": {"wall_s": 2.0}}


def _run(monkeypatch, capsys, tmp_path, gold, bm25):
    sys.path.insert(0, str(REPO))
    import benchmarks.reference_cells as rc
    import leaderboards.report as report
    import leaderboards.runner as runner
    import leaderboards.spec as spec

    rows = [_row("rag-standard", "nq_oracle_gold", {"rag-none": {"answer_match": gold}}),
            _row("rag-standard", "nq_oracle_bm25", {"rag-none": {"answer_match": bm25}}),
            _row("rag-none", "nq_oracle_gold", {}), _row("rag-none", "nq_oracle_bm25", {})]
    monkeypatch.setattr(spec, "load_spec", lambda path: object())
    monkeypatch.setattr(runner, "resolve_runs_dir", lambda s, d: tmp_path)
    monkeypatch.setattr(report, "collect", lambda s, runs: None)
    monkeypatch.setattr(report, "compute", lambda s, cells, timings=True: {"rows": rows})
    assert rc.main(["--no-run", "--runs-dir", str(tmp_path)]) == 0
    return json.loads(capsys.readouterr().out.splitlines()[-1])


def test_a_tiny_p_keeps_three_significant_digits(monkeypatch, capsys, tmp_path):
    out = _run(monkeypatch, capsys, tmp_path, {"lo": 0.3512345, "hi": 0.5, "p": 3.009265538105056e-36},
               {"lo": 0.05, "hi": 0.14, "p": 0.00071234})
    assert out["p_gold_minus_none"] == 3.01e-36  # was 0.0
    assert out["p_bm25_minus_none"] == 0.000712  # was 0.0007
    assert out["ci_low_gold_minus_none"] == 0.3512  # bounds keep 4 decimals
    assert out["met"]["ci_low_gold_minus_none"] is True and out["met"]["ci_low_bm25_minus_none"] is True


def test_a_comparison_without_ci_is_null_and_not_met(monkeypatch, capsys, tmp_path):
    out = _run(monkeypatch, capsys, tmp_path, {"lo": None, "hi": None, "p": 1.0, "no_ci": "one question"},
               {"lo": 0.05, "hi": 0.14, "p": 1.0})
    assert out["ci_low_gold_minus_none"] is None and out["ci_high_gold_minus_none"] is None
    assert out["met"]["ci_low_gold_minus_none"] is False and out["met"]["ci_low_bm25_minus_none"] is True
    assert out["p_gold_minus_none"] == 1.0
