"""``tokrag leaderboard run`` and lm-eval's warning about generation kwargs "specified through cli" (leaderboards/runner.py)."""

from __future__ import annotations

import logging

from tests.leaderboard_helpers import run_toy_spec
from tests.logging_helpers import saved_loggers


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_run_does_not_warn_about_cli_generation_kwargs(tmp_path):
    """The runner passes the spec's gen_kwargs to simple_evaluate, and lm-eval logged "generation_kwargs:
    {'max_gen_toks': 8} specified through cli ... Ensure 'do_sample=True' for non-greedy decoding!" once per cell
    although no CLI option was given. That one record is dropped now; lm-eval's other records of the same logger
    (its "Using gen_kwargs" line) still come, and the filter is gone after the run."""
    keep = _Keep()
    with saved_loggers(["lm_eval.evaluator"]):
        logger = logging.getLogger("lm_eval.evaluator")
        logger.setLevel(logging.INFO)
        logger.addHandler(keep)
        filters = list(logger.filters)
        run_toy_spec(tmp_path, tasks=["toy_qa"], limit=3)
        assert logger.filters == filters
    messages = [r.getMessage() for r in keep.records]
    assert not [m for m in messages if "specified through cli" in m], messages
    assert sum("toy_qa: Using gen_kwargs: " in m and "'max_gen_toks': 8" in m for m in messages) == 2  # one per cell
