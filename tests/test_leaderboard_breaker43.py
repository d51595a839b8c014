"""Defects of the leaderboard workflow found by a read-only breaker (stop 43), each refused or reported now."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

from leaderboard_helpers import write_spec

REPO = Path(__file__).resolve().parents[1]


def _real_spec(tmp_path: Path, tasks: list, **extra) -> Path:
    """A spec over the repository's own tasks (tasks/qa); load_spec reads only their YAMLs."""
    spec = {"name": "b43", "reference": "rag-standard",
            "shared": {"model_args": {"pretrained": "smollm2-135m-instruct", "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
                       "limit": 4},
            "tasks": tasks, "seeds": [1234],
            "methods": [{"name": "rag-none", "model": "rag-none"}, {"name": "rag-standard", "model": "rag-standard"}],
            **extra}
    path = tmp_path / "b43.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- 1. a task entry's noise label

@pytest.mark.parametrize("entry, given, want", [
    ({"task": "nq_oracle_gold", "noise": 0.5}, "0.5", "0"),
    ({"task": "nq_oracle_bm25_noise60", "noise": 0.2}, "0.2", "0.6"),
])
def test_a_noise_label_other_than_the_tasks_is_refused(tmp_path, entry, given, want):
    """The spec's noise filled the report's noise column and the robustness plot's x-axis unchecked: 0.50 printed for
    the clean nq_oracle_gold, 0.2 for a task that replaces 60% of the passages."""
    path = _real_spec(tmp_path, ["nq_oracle_bm25", entry])
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    msg = str(exc.value)
    assert "\n" not in msg and str(path) in msg and entry["task"] in msg
    assert f"noise {given} is not the noise the task draws, {want} " in msg
    assert f"{entry['task']}.yaml" in msg


def test_a_noise_label_that_is_not_a_number_is_refused(tmp_path):
    """``noise: true`` was read as 1.0 (bool is an int)."""
    with pytest.raises(ConfigError, match=r"tasks\[1\] \(nq_oracle_gold\): noise must be a ratio in \[0, 1\], got True"):
        load_spec(_real_spec(tmp_path, ["nq_oracle_bm25", {"task": "nq_oracle_gold", "noise": True}]))


def test_the_noise_comes_from_the_task(tmp_path):
    """The tasks' own noise (YAML metadata, else the name's _noiseNN: the toy fixture's), and a spec value equal to it."""
    spec = load_spec(_real_spec(tmp_path, ["nq_oracle_bm25", {"task": "nq_oracle_bm25_noise60", "noise": 0.6},
                                           "nq_oracle_bm25_noise20", {"task": "nq_oracle_gold", "noise": 0}]))
    assert [(t.task, t.noise, t.family) for t in spec.tasks] == [
        ("nq_oracle_bm25", 0.0, "nq_oracle_bm25"), ("nq_oracle_bm25_noise60", 0.6, "nq_oracle_bm25"),
        ("nq_oracle_bm25_noise20", 0.2, "nq_oracle_bm25"), ("nq_oracle_gold", 0.0, "nq_oracle_gold")]
    toy = load_spec(write_spec(tmp_path / "toy", tasks=["toy_qa", {"task": "toy_qa_noise67", "noise": 0.67}]))
    assert [(t.task, t.noise) for t in toy.tasks] == [("toy_qa", 0.0), ("toy_qa_noise67", 0.67)]
    with pytest.raises(ConfigError, match=r"noise 0.5 is not the noise the task draws, 0.67 "):
        load_spec(write_spec(tmp_path / "toy2", tasks=["toy_qa", {"task": "toy_qa_noise67", "noise": 0.5}]))


# --------------------------------------------------------------------------- 2. references that pair nothing

@pytest.mark.parametrize("reference, match", [
    ([], r"reference: \[\] names no method; .*or leave reference: out"),
    (["standard", "standard"], r"reference: \['standard'\] given more than once in \['standard', 'standard'\]"),
])
def test_an_empty_or_repeated_reference_list_is_refused(tmp_path, reference, match):
    """``reference: []`` gave a report without paired sections; a repeated reference printed its section twice."""
    with pytest.raises(ConfigError, match=match) as exc:
        load_spec(write_spec(tmp_path, tasks=["toy_qa"], extra={"reference": reference}))
    assert "\n" not in str(exc.value) and "toy.yaml" in str(exc.value)


def test_a_model_whose_methods_hold_no_reference_is_refused(tmp_path):
    """Such a model got no paired section and no word about it."""
    models = [{"name": "a"}, {"name": "b", "methods": ["none"]}]
    with pytest.raises(ConfigError) as exc:
        load_spec(write_spec(tmp_path, tasks=["toy_qa"], extra={"models": models}))
    msg = str(exc.value)
    assert "\n" not in msg and "toy.yaml" in msg
    assert "models[1] (b).methods ['none'] hold no reference method ['standard'], so its methods would have no paired " \
           "test; add a reference to its methods" in msg
    # one of two references is enough, and a model with all the methods
    spec = load_spec(write_spec(tmp_path / "ok", tasks=["toy_qa"],
                                extra={"models": models, "reference": ["standard", "none"], "closed_book": "none"}))
    assert [m.methods for m in spec.models] == [None, ("none",)]


# --------------------------------------------------------------------------- 3. the resume journal's checksums

JOURNAL = "journal.jsonl"  # leaderboards.runner.JOURNAL, spelled out: the tests also run on the runner before checksums


class _Killed(RuntimeError):
    """Raised by the toy model's generate_until in place of a kill."""


@pytest.fixture
def killed_toy(tmp_path, monkeypatch):
    """One ToyLM cell (toy_qa, 4 questions, one request per chunk) run uninterrupted into ``ref`` and killed on its
    4th chunk into ``runs`` (3 journal lines); the run keys and commit pinned (others edit the hashed source meanwhile).
    Returns ``(spec, calls, reference folder, killed folder)``; ``calls["n"]`` counts the computed chunks."""
    import leaderboards.runner
    from leaderboards.keys import cell_keys
    from leaderboards.runner import _model_class, run_spec

    from leaderboard_helpers import TOY

    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")
    frozen: dict = {}
    monkeypatch.setattr(leaderboards.runner, "cell_keys",
                        lambda spec, runs=None: frozen.setdefault(spec.path, cell_keys(spec)))
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1}, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first", "trace": "tokens"}}]))
    cls = _model_class(TOY)
    orig = cls.generate_until
    calls = {"n": 0, "fail_at": None}

    def generate_until(lm, requests, *args, **kw):
        calls["n"] += 1
        if calls["n"] == calls["fail_at"]:
            calls["fail_at"] = None
            raise _Killed("killed")
        return orig(lm, requests, *args, **kw)

    monkeypatch.setattr(cls, "generate_until", generate_until)
    run_spec(spec, tmp_path / "ref", progress=False)
    calls.update(n=0, fail_at=4)
    with pytest.raises(_Killed):
        run_spec(spec, tmp_path / "runs", progress=False)
    calls["n"] = 0
    ((_cell, key, _),) = leaderboards.runner.cell_keys(spec)
    return spec, calls, tmp_path / "ref" / key, tmp_path / "runs" / key


def _journal_lines(d: Path) -> tuple[str, list[dict]]:
    header, *lines = (d / JOURNAL).read_text().splitlines()
    return header, [json.loads(x) for x in lines]


def _write_journal(d: Path, header: str, lines: list[dict]) -> None:
    (d / JOURNAL).write_text("\n".join([header, *(json.dumps(x) for x in lines)]) + "\n")


def _samples(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.glob("samples_*.jsonl"))}


def test_a_tampered_journal_line_is_not_replayed(killed_toy, tmp_path, caplog):
    """A hand-edited response (valid JSON, same fingerprints) was replayed into the finished cell."""
    from leaderboards.runner import journaled_requests, run_spec

    spec, calls, ref, got = killed_toy
    header, lines = _journal_lines(got)
    assert len(lines) == 3
    lines[1]["responses"] = ["a tampered answer"]
    _write_journal(got, header, lines)
    assert journaled_requests(got / JOURNAL) == 1  # what can replay: the line before the tampered one
    caplog.set_level(logging.INFO, logger="leaderboards.runner")
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls["n"] == 3 and json.loads((got / "cost.json").read_text())["resumed_requests"] == 1
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "checksum" in r.getMessage()]
    assert len(warned) == 1 and warned[0].endswith(
        "the journal's line 3 fails its checksum (edited or damaged after it was written): it and the 1 line(s) after it "
        "(2 chunk(s), 2 request(s); checksum wrong or missing on 1 of these 2 lines) are dropped and computed again")
    assert _samples(ref) and _samples(got) == _samples(ref)
    assert b"a tampered answer" not in b"".join(_samples(got).values())


def test_a_journal_without_checksums_is_recomputed(killed_toy, tmp_path, caplog):
    """A journal written before lines carried a checksum (an older runner's) is not verified: computed again."""
    from leaderboards.runner import run_spec

    spec, calls, ref, got = killed_toy
    header, lines = _journal_lines(got)
    _write_journal(got, header, [{k: v for k, v in x.items() if k != "sha256"} for x in lines])
    caplog.set_level(logging.INFO, logger="leaderboards.runner")
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls["n"] == 4 and json.loads((got / "cost.json").read_text())["resumed_requests"] == 0
    assert "the journal's line 2 has no checksum (written by an older runner: not verified): it and the 2 line(s) " \
           "after it (3 chunk(s), 3 request(s); checksum wrong or missing on 3 of these 3 lines) are dropped and " \
           "computed again" in caplog.text
    assert _samples(got) == _samples(ref)


def test_an_intact_journal_still_replays(killed_toy, tmp_path):
    """The checksums written with the lines verify: the 3 journaled chunks replay, one is computed."""
    from leaderboards.runner import run_spec

    spec, calls, ref, got = killed_toy
    assert all(len(x["sha256"]) == 64 for x in _journal_lines(got)[1])
    run_spec(spec, tmp_path / "runs", progress=False)
    assert calls["n"] == 1 and json.loads((got / "cost.json").read_text())["resumed_requests"] == 3
    assert _samples(got) == _samples(ref)


# --------------------------------------------------------------------------- 4. metrics: read by nothing

def test_a_top_level_metrics_key_is_refused(tmp_path):
    """``metrics: [nope]`` passed: the key was allowed and nothing read it."""
    with pytest.raises(ConfigError, match=r"top level: unknown key\(s\) 'metrics'"):
        load_spec(write_spec(tmp_path, tasks=["toy_qa"], extra={"metrics": ["nope"]}))


# --------------------------------------------------------------------------- 5. baseline tolerances, metrics, estimate

@pytest.mark.parametrize("abs_text, match", [
    ("Infinity", r"tolerances\.em\.abs must be a finite number >= 0, got the number inf \(it would pass every value\)"),
    ("NaN", r"tolerances\.em must be \{abs: number >= 0\}"),  # these two were refused already
    ("-0.5", r"tolerances\.em must be \{abs: number >= 0\}"),
])
def test_a_tolerance_that_is_not_a_finite_number_at_least_0_is_refused(tmp_path, abs_text, match):
    """``abs: Infinity`` passed every value."""
    from leaderboards.check import load_baseline

    path = tmp_path / "b.json"
    path.write_text('{"cells": {}, "tolerances": {"em": {"abs": %s}}}' % abs_text)
    with pytest.raises(ConfigError, match=match):
        load_baseline(path)


def test_a_metric_missing_from_a_baseline_cell_gets_a_line(tmp_path):
    """A baseline cell without one of the checked metrics skipped it without a word."""
    from leaderboards.check import check_against_baseline, summary_line, write_baseline
    from leaderboards.runner import run_spec

    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=4))
    run_spec(spec, tmp_path / "runs", progress=False)
    path = tmp_path / "b.json"
    written = write_baseline(spec, tmp_path / "runs", path)
    value = written["cells"]["standard/toy_qa/seed1"]["f1"]
    b = json.loads(path.read_text())
    del b["cells"]["standard/toy_qa/seed1"]["f1"]
    path.write_text(json.dumps(b))
    lines = check_against_baseline(spec, tmp_path / "runs", path)
    shown = [x.render() for x in lines]
    assert f"NEW  standard/toy_qa/seed1  f1 = {value:.4f}: not in the baseline's entry of the cell: not checked " \
           "(accept its value with --write)" in shown
    assert all(x.ok for x in lines)
    assert [s for s in shown if s.startswith(("OK", "FAIL")) and "standard/toy_qa/seed1  f1 " in s] == []
    n = len(b["cells"]["standard/toy_qa/seed1"]) + len(b["cells"]["none/toy_qa/seed1"])
    assert summary_line(lines) == f"{n} checks: {n} OK, 0 FAIL, 1 metric values not in the baseline (not checked)"


def test_the_estimate_says_a_question_count_from_a_limit_is_an_upper_bound(tmp_path):
    """``limit: 10**9`` was read as 10**9 questions per cell (the task has 24), without a word."""
    from dataclasses import replace

    from leaderboards.estimate import Measurement, count_is_upper_bound, estimate, questions_of, render

    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=10**9))
    est = estimate(spec, tmp_path / "runs", fallback=1.0)
    assert est["questions"] == 2 * 10**9 and est["questions_upper_bound"] == 2
    assert all(c["questions_upper_bound"] for c in est["cells"])
    assert "2000000000 questions (at most: 2 cells count their limit as their number of questions; a task's size is " \
           "known once a cell of that task finishes), " in render(est)
    cell = spec.cells()[0]
    done = Measurement(method="x", model="y", pretrained="p", k=3, task="toy_qa", kind="qa", limit=20, n=20, wall_s=1.0)
    assert count_is_upper_bound(cell, []) and count_is_upper_bound(cell, [done])  # 20 of 20: the task's size unknown
    # a finished cell that shows the task's size (run without a limit, or scoring fewer than its limit) caps the count:
    # 24, exact (it counted 10**9, marked at most)
    for m in (replace(done, limit=None, n=24), replace(done, limit=50, n=24)):
        assert questions_of(cell, [m]) == 24 and not count_is_upper_bound(cell, [m])
    done = replace(done, limit=None, n=24)
    small = load_spec(write_spec(tmp_path / "s", tasks=["toy_qa"], limit=12)).cells()[0]
    assert not count_is_upper_bound(small, [done])  # a finished cell scored 24 >= 12 of the task's questions


def test_a_finished_cell_of_an_older_task_version_does_not_cap_the_estimate(tmp_path):
    """The estimate capped a cell's count at the size a finished cell of the same task name showed, whatever version
    of the task it ran: a leftover cell of wiki_lm_bm25 1.0 (253 documents; 3.0 has 231) capped and marked exact
    (a reviewer, stop 46). Only a cell whose results.json records the task's current YAML version tells its size."""
    from leaderboards import estimate as lb_estimate

    estimate = lb_estimate.estimate
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=10**9))  # toy_qa's YAML: metadata version 1.0
    runs = tmp_path / "runs"
    old = runs / "leftover"  # a finished cell of toy_qa 0.5 (no key of this spec: only a measurement)
    old.mkdir(parents=True)
    (old / "config.json").write_text(json.dumps({"method": "none", "model": "rag-none", "model_args": {"pretrained": "p"},
                                                 "task": "toy_qa", "limit": None}))
    (old / "cost.json").write_text(json.dumps({"n_samples": 30, "wall_s": 3.0}))
    (old / "results.json").write_text(json.dumps({"versions": {"toy_qa": 0.5}}))
    (old / "DONE").write_text("{}")
    est = estimate(spec, runs, fallback=1.0)
    assert est["questions"] == 2 * 10**9 and est["questions_upper_bound"] == 2  # not 2 x 30, exact
    ms = lb_estimate.measurements(runs, spec.include_path)
    assert [(m.task, m.n, m.version) for m in ms] == [("toy_qa", 30, 0.5)]
    assert lb_estimate.of_current_version(ms, spec.include_path) == []
    (old / "results.json").write_text(json.dumps({"versions": {"toy_qa": 1}}))  # the current version (1 == 1.0)
    est = estimate(spec, runs, fallback=1.0)
    assert est["questions"] == 2 * 30 and est["questions_upper_bound"] == 0
