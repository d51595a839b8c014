"""``check --write`` recorded only the metrics with a tolerance, and the defaults named only em, f1, answer_match, the
retrieval metrics and two perplexities (s59 b3): a metric that tokrag's own tasks log, such as the counterfactual
tasks' ``cf_match`` (their main metric), ``empty_pred``/``overlong_pred`` of every QA task, or the long-form tasks'
``rougeL``, was left out of the baseline without a word, so ``check`` passed whatever it did (a regression of it
shipped). Now those metrics have default tolerances, and ``--write`` names a metric of the runs that still has no
tolerance (another lm-eval task's own metric) in one ``note:`` line saying how to have it checked.

A real ToyLM run of a copy of the toy task that also logs ``cf_match`` (1 where the answer is wrong) and ``my_acc`` (a
user's metric, equal to em)."""

from __future__ import annotations

import json
import shutil

import pytest

from leaderboards.cli import main as lb_main
from tests.leaderboard_helpers import FIX, edit, write_spec

STANDARD, NONE = "standard/toy_qa/seed1", "none/toy_qa/seed1"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The toy spec over a task copy logging cf_match and my_acc, 5 questions, run once; returns (spec, runs)."""
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    root = tmp_path_factory.mktemp("unrecorded")
    shutil.copytree(FIX / "tasks", root / "tasks", ignore=shutil.ignore_patterns("__pycache__"))
    qa = root / "tasks" / "toy_qa"
    edit(qa / "toy_qa.yaml", "  - {metric: answer_recall, aggregation: mean, higher_is_better: true}\n",
         "  - {metric: answer_recall, aggregation: mean, higher_is_better: true}\n"
         "  - {metric: cf_match, aggregation: mean, higher_is_better: false}\n"
         "  - {metric: my_acc, aggregation: mean, higher_is_better: true}\n")
    edit(qa / "utils.py", '    return scores\n',
         '    scores["cf_match"] = 1.0 - scores["em"]\n    scores["my_acc"] = scores["em"]\n    return scores\n')
    spec = load_spec(write_spec(root / "s", include=root / "tasks", tasks=["toy_qa"], limit=5))
    run_spec(spec, root / "runs", progress=False)
    return spec.path, root / "runs"


def _write(spec, runs, base, capsys):
    capsys.readouterr()
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(base), "--write"]) == 0
    return json.loads(base.read_text(encoding="utf-8")), capsys.readouterr().out


def test_write_records_cf_match_and_check_fails_on_its_regression(finished, tmp_path, capsys):
    spec, runs = finished
    base = tmp_path / "b.json"
    b, _out = _write(spec, runs, base, capsys)
    # standard answers 3 of 5 right (toy fixture), none 0: cf_match = 1 - em per question
    assert b["cells"][STANDARD]["em"] == 0.6 and b["cells"][STANDARD]["cf_match"] == 0.4
    assert b["cells"][NONE]["cf_match"] == 1.0
    assert b["questions"][STANDARD]["cf_match"] == [0, 4]
    # the default 0.04 raised to one question of five, as for em
    assert b["tolerances"]["cf_match"] == {"abs": 0.2, "flips": 1, "raised_from": 0.04,
                                           "unit": "fraction of questions answered with the planted (counterfactual) "
                                                   "answer"}
    b["cells"][STANDARD]["cf_match"] = 0.0  # the runs' 0.4 is now 0.4 above it: beyond 0.2
    b["questions"][STANDARD]["cf_match"] = []
    base.write_text(json.dumps(b), encoding="utf-8")
    capsys.readouterr()
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(base)]) == 1
    out = capsys.readouterr().out
    assert (f"FAIL {STANDARD}  cf_match = 0.4000 (baseline 0.0000, |Δ| 0.4000 > 0.2000 fraction of questions answered "
            "with the planted (counterfactual) answer)") in out
    assert (f"FAIL {STANDARD}  cf_match: 2 of 5 questions differ from the baseline (> 1 allowed): 2 from 0 to 1 "
            "(doc_id 0, 4)") in out


def test_write_names_a_metric_it_leaves_out_and_records_it_once_it_has_a_tolerance(finished, tmp_path, capsys):
    spec, runs = finished
    base = tmp_path / "b.json"
    b, out = _write(spec, runs, base, capsys)
    assert "my_acc" not in b["cells"][STANDARD] and "my_acc" not in b["tolerances"]
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert notes == [f"note: metric of the runs with no tolerance, not recorded, so never checked: my_acc; to check it, "
                     f"add a tolerance to {base} (e.g. \"tolerances\": {{\"my_acc\": {{\"abs\": 0.04}}, ...}}, the largest "
                     "change of its mean to accept, in its unit) and run check --write again"]
    b["tolerances"]["my_acc"] = {"abs": 0.2}
    base.write_text(json.dumps(b), encoding="utf-8")
    b, out = _write(spec, runs, base, capsys)
    assert b["cells"][STANDARD]["my_acc"] == 0.6 and b["tolerances"]["my_acc"] == {"abs": 0.2, "flips": 1}
    assert "note:" not in out
