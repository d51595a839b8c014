"""CI wall time (s56 t2): what the suite's set-up relies on.

* test_analyze's real-model test runs over the session's SmolLM2 (the ``backbone`` fixture), not a load of its own.
"""

from __future__ import annotations

import inspect


def test_the_analyze_model_test_runs_over_the_sessions_smollm2():
    import test_analyze

    params = inspect.signature(test_analyze.test_records_match_the_scorer_and_cli_resumes).parameters
    assert "backbone" in params
    assert 'TokRAGLM(pretrained="smollm2-135m-instruct")' not in inspect.getsource(
        test_analyze.test_records_match_the_scorer_and_cli_resumes)
