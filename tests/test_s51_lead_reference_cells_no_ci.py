"""``benchmarks/reference_cells.py`` prints a row whose answer match has no CI (s51 r4: since 0079b17/0e3984a a row over
one question whose seeds disagree has ``lo``/``hi`` None in :func:`leaderboards.report.compute`'s output; the script
formatted them with ``:.3f`` and stopped with a TypeError). The leaderboard calls are replaced by stubs: only the
printing is under test."""

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _row(method, task, mean, lo, hi, n=1):
    m = {"answer_match": {"mean": mean, "lo": lo, "hi": hi, "n": n},
         "empty_pred": {"mean": 0.0, "n": n}, "overlong_pred": {"mean": 0.0, "n": n}}
    paired = {"rag-none": {"answer_match": {"lo": 0.0, "hi": 1.0, "p": 1.0}}} if method == "rag-standard" else {}
    return {"method": method, "task": task, "n": n, "metrics": m, "paired": paired, "cost": {"wall_s": 2.0}}


def test_a_row_without_ci_prints_its_mean_alone(monkeypatch, capsys, tmp_path):
    sys.path.insert(0, str(REPO))
    import benchmarks.reference_cells as rc
    import leaderboards.report as report
    import leaderboards.runner as runner
    import leaderboards.spec as spec

    rows = [_row("rag-standard", "nq_oracle_gold", 0.5, None, None), _row("rag-standard", "nq_oracle_bm25", 1.0, 0.025, 1.0),
            _row("rag-none", "nq_oracle_gold", 0.0, 0.0, 0.975), _row("rag-none", "nq_oracle_bm25", 0.0, 0.0, 0.975)]
    monkeypatch.setattr(spec, "load_spec", lambda path: object())
    monkeypatch.setattr(runner, "resolve_runs_dir", lambda s, d: tmp_path)
    monkeypatch.setattr(report, "collect", lambda s, runs: None)
    monkeypatch.setattr(report, "compute", lambda s, cells, timings=True: {"rows": rows})
    assert rc.main(["--no-run", "--runs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["rag-standard", "nq_oracle_gold", "answer", "match", "0.500", "n=1", "empty", "0.000",
                              "overlong", "0.000", "wall", "2", "s"]
    assert "answer match 1.000 [0.025, 1.000] n=1" in out[1]
    assert json.loads(out[-1])["gold_standard"] == 0.5
