"""CI wall time (s56 t2): what the suite's schedule and set-up rely on.

* tests/conftest.py's EXPECTED_S orders xdist's scheduling units longest first; a module whose estimate is far below
  its cost can be left for the end, beside an idle worker. The figures follow measurements (one module per process,
  ``pytest -n 0 --durations``), and the reliability group's tests have their own.
* test_analyze's real-model test runs over the session's SmolLM2 (the ``backbone`` fixture), not a load of its own.
* .ci/run runs the README's tests and the reliability group in one pytest session.
"""

from __future__ import annotations

import inspect
import shlex
from pathlib import Path

import conftest

REPO = Path(__file__).resolve().parents[1]


def _s(scope: str, n_tests: int = 1) -> float:
    return conftest.expected_seconds(f"tests/{scope}", n_tests)


def test_measured_module_seconds_order_the_schedule():
    # measured (s55 t1): test_docs_examples 24 s for its 7 tests (it had no entry: 7 x 0.3 s); test_errors_names 9-11 s
    # and test_logs_root_configured 10-11 s (they had 75, above test_method_cad's 55)
    assert _s("test_docs_examples.py", 7) == 24
    assert _s("test_errors_names.py", 11) == _s("test_logs_root_configured.py", 5) == 10
    assert _s("test_method_cad.py", 6) == 55 and _s("test_methods_leave_model_unchanged.py", 9) == 36
    measured = ["test_model_gemma.py", "test_model_smollm2.py", "test_method_cad.py", "test_analyze.py",
                "test_leaderboard_backbone_reuse.py", "test_method_selfrag_filter.py",
                "test_methods_leave_model_unchanged.py", "test_method_adacad.py", "test_docs_examples.py",
                "test_model_lmeval.py", "test_errors_names.py"]
    assert sorted(measured, key=lambda m: -_s(m)) == measured
    assert _s("test_some_module_without_an_entry.py", 20) == 0.3 * 20
    # measured (s56 t2): modules of a few tests that start runner or lm_eval processes (they had 0.3 s a test, so
    # they were handed out near the end)
    assert _s("test_results_provenance.py", 11) == 100 and _s("test_leaderboard_jobs_summary.py", 7) == 60
    assert _s("test_s54_f4_cell_records.py", 1) == 19 and _s("test_leaderboard_browser.py", 1) == 8


def test_spread_tests_and_the_reliability_group_have_their_own_seconds():
    batching = "test_model_batching.py::"
    assert _s(batching + "test_standard_equals_lm_eval_hf_strings_on_k5_prompts") == 65
    assert _s(batching + "test_loglikelihood_and_rolling_at_batch_8_equal_batch_1[rag-adacad]") == 18  # per case
    assert _s(batching + "test_generation_outputs_and_traces_are_identical_at_batch_1_and_4[tokrag]") == 40
    rel = "test_leaderboard_reliability.py::"
    order = [_s("test_model_data_parallel.py"), _s("test_retrieval_reliability.py", 4),
             _s(rel + "test_sigkill_at_random_points_then_resume_gives_the_uninterrupted_report"),
             _s(rel + "test_two_runners_on_one_folder_share_the_work_without_corruption"),
             _s(rel + "test_same_spec_and_seed_give_byte_identical_results_across_runs"),
             _s(rel + "test_jobs_2_gives_the_numbers_of_one_process")]
    assert order == [60, 56, 39, 18, 11, 9]


def test_the_analyze_model_test_runs_over_the_sessions_smollm2():
    import test_analyze

    params = inspect.signature(test_analyze.test_records_match_the_scorer_and_cli_resumes).parameters
    assert "backbone" in params
    assert 'TokRAGLM(pretrained="smollm2-135m-instruct")' not in inspect.getsource(
        test_analyze.test_records_match_the_scorer_and_cli_resumes)


def test_ci_runs_both_groups_in_one_pytest_session():
    runs = [shlex.split(line) for line in (REPO / ".ci" / "run").read_text().splitlines()
            if "pytest" in line.split("#", 1)[0] and not line.lstrip().startswith("#")]
    assert len(runs) == 1, runs
    cmd = runs[0]
    assert cmd[:4] == ["TOKRAG_DATA_DIR=../shared/data", "pytest", "-n", "2"]
    assert cmd[cmd.index("-m") + 1] == "reliability or not reliability"
