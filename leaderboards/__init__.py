"""Reproducible leaderboards: YAML spec -> run folders -> report -> regression check.

    spec = load_spec("leaderboards/specs/ci.yaml")     # methods x tasks x seeds + the fairness contract
    run_spec(spec, runs_dir)                            # runs/<config-hash>/ per cell, resumable
    build_report(spec, runs_dir, out_dir)               # Markdown, CSV, JSON, HTML from run folders only
    check_against_baseline(spec, runs_dir, baseline)    # OK/FAIL per cell and metric

Command line: ``tokrag leaderboard run|report|check SPEC ...`` (:mod:`leaderboards.cli`).
Heavy imports (lm_eval, torch, matplotlib) happen inside the functions that need them.
"""

from __future__ import annotations

from .spec import Cell, LeaderboardSpec, MethodSpec, TaskSpec, load_spec

__all__ = [
    "Cell",
    "LeaderboardSpec",
    "MethodSpec",
    "TaskSpec",
    "load_spec",
    "run_spec",
    "build_report",
    "check_against_baseline",
]


def run_spec(*args, **kwargs):  # noqa: D103 - thin lazy re-export, documented in runner.run_spec
    from .runner import run_spec as _run

    return _run(*args, **kwargs)


def build_report(*args, **kwargs):  # noqa: D103 - documented in report.build_report
    from .report import build_report as _build

    return _build(*args, **kwargs)


def check_against_baseline(*args, **kwargs):  # noqa: D103 - documented in check.check_against_baseline
    from .check import check_against_baseline as _check

    return _check(*args, **kwargs)
