"""Shared pytest set-up: the data folder (../shared/data), thread settings, and a shared cache.

Tests read real data from ``../shared/data`` (override with ``TOKRAG_DATA_DIR``). Model conversions
and indexes go to ``$TOKRAG_CACHE_DIR`` (default ``~/.cache/tokrag``): they are keyed by fingerprint,
so sharing them between test runs is safe and keeps the suite fast.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The Ctrl-C tests (test_cli_interrupt_s44f6a, test_lmeval_interrupt_s44f6b, ...) send SIGINT to a child and expect
# it to die of it. A shell starts a background job (`pytest ... &`, `nohup`, a CI runner's job) with SIGINT ignored,
# every child inherits an ignored signal through exec, and a Python child started so installs no KeyboardInterrupt
# handler: those tests then failed (plain lm_eval ran to the end, exit 0; a BM25 build slept out the wait), as they
# did for a helper's backgrounded `pytest` (s58). A handler set here is reset to the default in every child by exec,
# so the children start as from a terminal. The suite's own behaviour does not change: a Ctrl-C stops pytest.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO.parent / "shared" / "data").resolve()
os.environ.setdefault("TOKRAG_DATA_DIR", str(SHARED_DATA))
# A relative TOKRAG_DATA_DIR (the README's `TOKRAG_DATA_DIR=../shared/data pytest`) must survive tests that
# start lm_eval in another working directory.
os.environ["TOKRAG_DATA_DIR"] = str(Path(os.environ["TOKRAG_DATA_DIR"]).resolve())

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def backbone():
    """SmolLM2-135M-Instruct (the ``smollm2-135m-instruct`` alias), loaded once per process and shared by every
    module that builds methods over it (``Method.with_backbone``). Defined here, not imported from a test
    module: a fixture imported into several modules is a separate fixture in each, so each module loaded it again."""
    from tokrag_model.base import Backbone

    return Backbone.load("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def smollm2_standard(backbone, data_dir):
    """rag-standard's generations on test_model_smollm2's questions (``make_docs``, ``gen_requests``, its GEN), made
    once per process: ``{"out", "traces", "stats", "lm"}``. test_model_smollm2's ``outputs``, test_method_cad and
    test_method_selfrag_filter compare with them; each made them again (~10 CPU-s a time)."""
    from test_model_smollm2 import gen_requests, make_docs

    from tokrag_model.methods import MODELS

    lm = MODELS["rag-standard"].with_backbone(backbone)
    reqs = gen_requests(backbone.tokenizer, make_docs(data_dir))
    out = lm.generate_until(reqs, disable_tqdm=True)
    return {"out": out, "traces": [r.args[-1]["tokrag_trace"] for r in reqs], "stats": dict(lm.stats), "lm": lm}


@pytest.fixture(scope="session")
def two_seed_runs(tmp_path_factory):
    """``leaderboard_helpers.run_two_seed_spec``'s toy run (12 cells), run once per process for the modules that read
    it (test_report_seed_counts, test_report_identical_seeds, test_report_seeds_partial,
    test_leaderboard_report_partial_pairs: each ran it again, ~1.5 CPU-s a time): ``(spec, runs_dir, frozen)``, where
    ``frozen`` is the run's pinned key table. Read-only: a test that edits the runs takes a copy
    (``runs_without``); a module pins the same keys again while it reads (``pin_cell_keys(mp, frozen=frozen)``). The
    run's own pins are undone when it returns, so no other test sees them."""
    from leaderboard_helpers import run_two_seed_spec

    frozen: dict = {}
    with pytest.MonkeyPatch.context() as mp:
        spec, runs = run_two_seed_spec(tmp_path_factory.mktemp("twoseeds"), mp, frozen)
    return spec, runs, frozen


@pytest.fixture(scope="session")
def gemma():
    """Gemma 3 270M (the ``gemma-3-270m`` alias), loaded once per process for the modules in :data:`GEMMA_MODULES`
    (8.7 s of CPU a load: its 262k-token tokenizer and the weights). Those modules run on one xdist worker
    (``ModuleScheduling``), so the suite loads it once."""
    from tokrag_model.base import Backbone

    return Backbone.load("gemma-3-270m")


@pytest.fixture
def one_thread():
    """torch at one thread for the test, the thread count put back after (MKL's row-count probe is trusted at one
    thread only: ``tokrag_model.decoder.mkl_min_rows``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder laid out like ``../shared/data``."""
    path = Path(os.environ["TOKRAG_DATA_DIR"])
    if not path.is_dir():
        pytest.fail(f"data folder {path} missing: put ../shared beside the repository or set TOKRAG_DATA_DIR")
    return path


# `pytest -n 2` (pytest-xdist; .ci/run runs the suite so on its two cores): every test module runs whole on one
# worker, so its module- and session-scoped fixtures (the Gemma 3 generations, the SmolLM2 golden outputs,
# indexes, encoders) are built once, except the modules below, whose tests are independent and heavy and share
# at most a cheap model load: those are spread test by test. (xdist's own `--dist loadgroup` marks are ignored
# from pytest 9.2 on, which renamed the node id attribute it rewrites; a scheduler hook does not depend on it.)
SPREAD_MODULES = {"test_model_batching.py", "test_leaderboard_reliability.py"}
# The modules that use the session's ``gemma`` fixture: one scheduling unit (named by the first), so one worker loads
# Gemma once for all of them.
GEMMA_MODULES = ("test_model_gemma.py", "test_bos_consistency.py", "test_rolling_prefix.py")

# Longest first: a worker takes its next module while it runs the last tests of the current one, and xdist's own
# order (most tests first) left the heavy few-test modules for the end, where one worker ran them while the other
# idled. Rough seconds per module (per test for the spread modules; a parametrized test counts per case); only the
# order matters. Others: 0.3 s per test. An estimate too high only starts a module earlier; one too low (a module of
# few tests that starts processes or loads a model) can leave it for the end, beside an idle worker. Measured one
# module (one test in the spread modules) per process, `pytest -n 0 --durations`, on the 2-core CI machine with other
# work running (s55 t1, load 2-4); s56 t2's (the reliability group's and the modules of a few slow tests) scaled by
# 0.6 from runs under about twice that load.
EXPECTED_S = {
    "test_model_gemma.py": 167,  # with test_bos_consistency.py and test_rolling_prefix.py: GEMMA_MODULES
    "test_model_smollm2.py": 91, "test_method_cad.py": 55, "test_analyze.py": 44, "test_method_ensemble_entropy.py": 44,
    "test_leaderboard_backbone_reuse.py": 40, "test_method_selfrag_filter.py": 37,
    "test_methods_leave_model_unchanged.py": 36, "test_method_adacad.py": 25, "test_docs_examples.py": 24,
    "test_model_lmeval.py": 17, "test_logs_root_configured.py": 10, "test_errors_names.py": 10,
    "test_results_provenance.py": 100, "test_leaderboard_jobs_summary.py": 60, "test_tasks_dense.py": 33,
    "test_leaderboard_interrupt.py": 21, "test_s54_f4_cell_records.py": 19, "test_fa_preset_prompt_reuse.py": 18,
    "test_s53_r8_converter_key_memo.py": 17, "test_leaderboard_max_cells_left.py": 14,
    "test_s54_r2_memo_count_drift.py": 11, "test_leaderboard_browser.py": 8, "test_retrieval_index_rebuild.py": 7,
    "test_s52_f2_estimate_cached_run.py": 6, "test_leaderboard_report_interrupt.py": 5,
    # not measured again (pytest -n 2 --durations with both cores busy):
    "test_leaderboard_resume_chunks.py": 85, "test_leaderboard.py": 55,
    "test_leaderboard_overwrite.py": 50, "test_tokrag.py": 45, "test_leaderboard_v2.py": 35,
    "test_retrieval.py": 30, "test_model_args.py": 25, "test_replug_scores.py": 25, "test_retrieval_dense.py": 20,
    "test_tasks_wiki.py": 17, "test_tasks_lmeval.py": 17, "test_tasks_precheck.py": 17, "test_prompt_chat.py": 16,
    "test_preset_prompt_format.py": 12, "test_leaderboard_model_time.py": 30, "test_leaderboard_seeds.py": 18,
    "test_leaderboard_gen_kwargs_log.py": 14, "test_leaderboard_task_data_paths.py": 14, "test_device_placement.py": 32,
    "test_model_batching.py::test_standard_equals_lm_eval_hf_strings_on_k5_prompts": 65,
    "test_model_batching.py::test_loglikelihood_and_rolling_at_batch_8_equal_batch_1": 18,  # 11-26 by method
    # the reliability group (pytest -m reliability)
    "test_model_data_parallel.py": 60, "test_retrieval_reliability.py": 56,
    "test_model_batching.py::test_generation_outputs_and_traces_are_identical_at_batch_1_and_4": 40,  # 16-69 by method
    "test_leaderboard_reliability.py::test_sigkill_at_random_points_then_resume_gives_the_uninterrupted_report": 39,
    "test_leaderboard_reliability.py::test_two_runners_on_one_folder_share_the_work_without_corruption": 18,
    "test_leaderboard_reliability.py::test_same_spec_and_seed_give_byte_identical_results_across_runs": 11,
    "test_leaderboard_reliability.py::test_jobs_2_gives_the_numbers_of_one_process": 9,
}


def expected_seconds(scope: str, n_tests: int) -> float:
    """:data:`EXPECTED_S` of a scheduling scope (a module path, or a test's node id in a spread module)."""
    path, _, test = scope.partition("::")
    module = path.rsplit("/", 1)[-1]
    if test:
        return EXPECTED_S.get(f"{module}::{test.split('[', 1)[0]}", 0.3 * n_tests)
    return EXPECTED_S.get(module, 0.3 * n_tests)


@pytest.hookimpl(optionalhook=True)  # plain `pytest` without pytest-xdist installed must still run
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "load":  # an explicit --dist loadscope/loadfile/... is left to xdist
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        _longest_first = False

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            folder, _, name = module.rpartition("/")
            if name in GEMMA_MODULES:
                return f"{folder}/{GEMMA_MODULES[0]}" if folder else GEMMA_MODULES[0]
            return nodeid if name in SPREAD_MODULES else module

        def _assign_work_unit(self, node) -> None:
            if not self._longest_first:  # the queue is complete before the first unit is handed out
                self._longest_first = True
                units = sorted(self.workqueue.items(), key=lambda kv: -expected_seconds(kv[0], len(kv[1])))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return ModuleScheduling(config, log)


@pytest.fixture(autouse=True)
def _package_logging_isolated():
    """Each test starts with ``lm_eval`` propagating and ends with the ``lm_eval`` and package loggers as it found them.

    pytest attaches its capture handlers to every logger that does not propagate, and lm-eval's ``setup_logging``
    (run by any in-process lm-eval CLI or evaluation) leaves ``lm_eval`` non-propagating: ``follow_lm_eval_logging``
    then copied one test's capture handlers onto our package loggers, where they stayed (a later test's record
    captured twice, writes to a closed stream), and ``lm_eval``'s stream handler kept an earlier test's closed
    ``capsys`` stream. Which tests failed depended on which ran before them on the same xdist worker.
    """
    import logging

    from retrieval.logs import PACKAGES

    loggers = [logging.getLogger(n) for n in ("lm_eval", *PACKAGES)]
    saved = [(lg, list(lg.handlers), lg.level, lg.propagate) for lg in loggers]
    loggers[0].propagate = True  # before the call phase: pytest then attaches nothing to it
    yield
    for lg, handlers, level, propagate in saved:
        lg.handlers[:] = handlers
        lg.setLevel(level)
        lg.propagate = propagate
