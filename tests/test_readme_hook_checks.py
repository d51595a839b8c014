"""README.md's list of what the start-up hook checks before the model loads left out ``--cache_requests true``
(refused for tokrag tasks since the hook's check_cache_requests) and did not say the checks cover the CLI only, not a
direct ``lm_eval.simple_evaluate(cache_requests=True)`` call (found by a review). Checked against the code: the hook
patches the CLI's ``EvaluatorConfig.process_tasks``, which ``simple_evaluate`` never calls."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _hook_paragraph() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("The hook also checks a\nrun's arguments before the model loads")
    return re.sub(r"\s+", " ", text[start:text.index("\n\n", start)])


def test_readme_names_the_cache_requests_check_and_its_reach():
    para = _hook_paragraph()
    assert "`--cache_requests true` is refused for our tasks: lm-eval keys its request cache by task name only" in para
    assert "`refresh` rebuilds them" in para
    # since s46 (d589294) the checks also reach a direct simple_evaluate call (test_the_claims_hold_in_the_code)
    assert ("These checks also run for a direct Python call of `lm_eval.simple_evaluate` (once under the CLI), and "
            "`lm_eval.evaluator.evaluate` refuses a plain-text task chat-framed") in para


def test_the_claims_hold_in_the_code():
    import lm_eval.evaluator

    from tokrag_model import _lmeval_hook

    assert "check_cache_requests(" in inspect.getsource(_lmeval_hook.check_loaded_run)
    assert "check_loaded_run(" in inspect.getsource(_lmeval_hook._patch_process_tasks)
    # since s46 (f7) also for a direct simple_evaluate call: the start-up hook wraps it (the README's "CLI only"
    # sentence is stale; tests/test_python_callers_s46f7.py checks the reach)
    assert "process_tasks" not in inspect.getsource(inspect.unwrap(lm_eval.evaluator.simple_evaluate))
    assert "check_loaded_run(" in inspect.getsource(_lmeval_hook._python_run_checks)
    assert getattr(lm_eval.evaluator.simple_evaluate, "_tokrag", False)
