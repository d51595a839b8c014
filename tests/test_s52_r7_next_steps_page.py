"""check's first ``next:`` line (s52 f6, 427abac) sent the user to the report's per-question page "to see which
questions changed"; that page (leaderboards.page.write_question_pages) shows the runs' own answers and no baseline, so
it cannot show what changed (s52 r7). The line now says what the page holds and where the changed questions are
named. Toy model."""

from __future__ import annotations

import json

from leaderboard_helpers import run_toy_spec

from leaderboards.check import write_baseline
from leaderboards.cli import main as lb_main


def test_the_next_line_does_not_promise_a_baseline_comparison_on_the_page(tmp_path, capsys):
    spec, runs = run_toy_spec(tmp_path / "lb", tasks=["toy_qa"], limit=8)
    base = tmp_path / "baseline.json"
    write_baseline(spec, runs, base)
    b = json.loads(base.read_text())
    cell = "standard/toy_qa/seed1"
    b["cells"][cell]["em"] = round(b["cells"][cell]["em"] - 0.5, 6)
    base.write_text(json.dumps(b))
    capsys.readouterr()
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(base)]) == 1
    first = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("next:"))
    page = runs / "reports" / "toy" / "questions" / "toy_qa.html"
    assert first == (f"next: to read these runs' answers question by question, write the report (tokrag leaderboard "
                     f"report {spec.path} --runs-dir {runs}) and open its per-question page {page} (the page shows "
                     "no baseline: the questions that changed are named above, in the per-question lines, where the "
                     "baseline has per-question values)")
    assert lb_main(["report", str(spec.path), "--runs-dir", str(runs)]) == 0
    assert "baseline" not in page.read_text(encoding="utf-8").lower()  # what the page holds: no baseline values
