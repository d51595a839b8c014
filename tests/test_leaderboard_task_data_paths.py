"""A task whose metadata names a data file by a relative path, run from another directory (a new-user trial: a task
YAML under ``mytasks/`` with ``questions: data/q.jsonl``, ``tokrag leaderboard run work/spec.yaml`` from the folder
above): ``run --estimate`` said nothing about the missing file, ``run`` failed only after the model loaded (an
unfinished cell folder left behind), and ``check``/``report`` blamed every cell's "changed inputs". Now the pre-run
checks refuse the path in one line, and check/report say the file is missing from this working directory (fast:
toy model, no real weights)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, write_spec

import leaderboards.runner
from leaderboards.check import check_against_baseline, write_baseline
from leaderboards.cli import main as lb_main
from leaderboards.keys import _HashMemo, cell_keys, task_data_files
from leaderboards.report import collect
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

REPO_TASKS = Path(__file__).resolve().parents[1] / "tasks"


def _byo_toy(tmp_path: Path, **meta: str):
    """A copy of the toy task whose metadata adds ``meta`` (e.g. ``questions: data/q.jsonl``), its spec, and a
    working directory ``work/`` holding ``data/q.jsonl``; returns ``(spec, yaml, work)``."""
    tasks = tmp_path / "mytasks"
    shutil.copytree(FIX / "tasks" / "toy_qa", tasks / "toy_qa")
    yml = tasks / "toy_qa" / "toy_qa.yaml"
    extra = "".join(f", {k}: {v}" for k, v in meta.items())
    yml.write_text(yml.read_text().replace("metadata: {version: 1.0}", f"metadata: {{version: 1.0{extra}}}"))
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "q.jsonl").write_text('{"id": "q1", "question": "capital of australia", "answers": ["Canberra"]}\n')
    spec = load_spec(write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3))
    return spec, yml, work


def test_run_and_estimate_refuse_a_missing_task_data_path_before_any_model_loads(tmp_path, monkeypatch):
    spec, yml, work = _byo_toy(tmp_path, questions="data/q.jsonl")
    monkeypatch.chdir(tmp_path)  # not work/: data/q.jsonl does not resolve from here
    loads = []
    monkeypatch.setattr(leaderboards.runner, "make_model", lambda cell: loads.append(cell) or 1 / 0)
    want = (f"leaderboard spec {spec.path}: task toy_qa: metadata questions 'data/q.jsonl' (in {yml}) names "
            f"{tmp_path / 'data' / 'q.jsonl'}, which does not exist (relative to the working directory {tmp_path}); "
            f"run from the directory that holds 'data/q.jsonl', or give an absolute path as questions in {yml}")
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError) as exc:
        run_spec(spec, runs, progress=False)
    assert str(exc.value) == want
    assert loads == [] and [p.name for p in runs.iterdir()] == []  # no model, no cell folder
    with pytest.raises(ConfigError) as exc:
        lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--estimate"])
    assert str(exc.value) == want

    # from work/ the same spec runs (and its key holds the file)
    monkeypatch.undo()  # the real make_model
    monkeypatch.chdir(work)
    from leaderboards.keys import missing_task_data

    assert missing_task_data("toy_qa", spec.include_path) == []
    summary = run_spec(spec, runs, progress=False)
    assert len(summary.skipped) == 0 and len(list(runs.glob("*/DONE"))) == 2


@pytest.mark.parametrize("key,value,refused", [
    ("corpus", "data/c.jsonl", True),
    ("oracle_file", "/nonexistent/oracle.jsonl.gz", True),
    ("hub_id", "./data/hub_copy", True),
    ("hub_id", "data/hub/copy", True),
    ("hub_id", "someone/some_dataset", False),  # a hub id, read from the hub
    ("corpus", "nq-wiki-12k", False),  # a named corpus
    ("corpus", "prebuilt:wikipedia-dpr-100w", False),
    ("questions", "someone/my_questions", False),  # a bring-your-own hub data set (tasks.byo.is_hub_id)
    ("questions", "my_questions_hub", False),
    ("questions", "data/q2.jsonl", True),
    ("questions", "./someone/my_questions", True),
    ("questions", "~nosuchuser_tokrag/q.jsonl", True),  # was a RuntimeError traceback (Could not determine home directory)
])
def test_which_task_data_values_are_refused(tmp_path, monkeypatch, key, value, refused):
    from leaderboards.keys import missing_task_data

    spec, yml, work = _byo_toy(tmp_path, **{key: value})
    monkeypatch.chdir(tmp_path)
    gone = missing_task_data("toy_qa", spec.include_path)
    assert [(m.key, m.value) for m in gone] == ([(key, value)] if refused else [])
    if refused:
        with pytest.raises(ConfigError, match=rf"task toy_qa: metadata {key} '{value}' \(in {yml}\) names "):
            leaderboards.runner.check_cell_args(spec, spec.cells())
    else:
        leaderboards.runner.check_cell_args(spec, spec.cells())


def test_check_and_report_say_the_data_file_is_missing_not_that_inputs_changed(tmp_path, monkeypatch):
    spec, yml, work = _byo_toy(tmp_path, questions="data/q.jsonl")
    runs, base = tmp_path / "runs", tmp_path / "base.json"
    monkeypatch.chdir(work)
    run_spec(spec, runs, progress=False)
    write_baseline(spec, runs, base)
    assert all(x.ok for x in check_against_baseline(spec, runs, base))
    read = str((work / "data" / "q.jsonl").resolve())

    monkeypatch.chdir(tmp_path)  # the same spec and runs, checked from the folder above
    what = (f"task toy_qa: metadata questions 'data/q.jsonl' (in {yml}) names {tmp_path / 'data' / 'q.jsonl'}, "
            f"which does not exist (relative to the working directory {tmp_path})")
    gone = f"{what}; run from {work.resolve()}, which holds 'data/q.jsonl', or give an absolute path as questions in {yml}"
    # from work/ the path names the very file the run read, unchanged: nothing to re-run (s52 f6, u1 P16)
    same = (f"{what}; from {work.resolve()} this path names the file that run read, unchanged: run this command from "
            f"{work.resolve()} (or give an absolute path as questions in {yml}); nothing needs re-running")
    fails = [x.render() for x in check_against_baseline(spec, runs, base) if not x.ok]
    assert fails and all("inputs changed" not in f and "config differs" not in f for f in fails)
    line = next(f for f in fails if "standard/toy_qa/seed1" in f)
    assert "a finished run of this cell exists (key " in line
    assert f", which read {read}, but {same}" in line
    reasons: dict[str, str] = {}
    collect(spec, runs, allow_missing=True, reasons=reasons)
    assert set(reasons) == {"standard/toy_qa/seed1", "none/toy_qa/seed1"}
    assert all(r.endswith(same) and f"which read {read}, but" in r for r in reasons.values())
    from leaderboards.rescore import collect_for_rescore  # rescore's own lookup says the same

    missing: list[str] = []
    collect_for_rescore(spec, runs, allow_missing=True, missing_out=missing)
    assert len(missing) == 2 and all(f"which read {read}, but {same}" in m and "inputs changed" not in m for m in missing)

    # another difference besides the missing file is still named
    edited = load_spec(write_spec(tmp_path / "edited", include=spec.include_path[0], tasks=["toy_qa"], limit=2))
    reasons = {}
    collect(edited, runs, allow_missing=True, reasons=reasons)
    assert all(r.endswith(f"{gone}; its config also differs in limit 3 -> 2") for r in reasons.values())


def test_the_run_keys_of_valid_specs_are_unchanged(tmp_path, monkeypatch):
    """The refactored reading of the metadata (keys.task_data_paths) gives the same task_data_files, and a spec of
    built-in tasks gets no entry (so the ci spec's keys stay those of leaderboards/baselines/ci.json)."""
    from leaderboards.keys import missing_task_data

    spec, yml, work = _byo_toy(tmp_path, questions="data/q.jsonl", corpus="nq-wiki-12k", hub_id="someone/ds")
    monkeypatch.chdir(work)
    q = work / "data" / "q.jsonl"
    assert task_data_files("toy_qa", spec.include_path, _HashMemo()) == {str(q.resolve()): _HashMemo().sha(q)}
    ci = load_spec(Path(__file__).resolve().parents[1] / "leaderboards" / "specs" / "ci.yaml")
    assert all("task_data_files" not in mat for _, _, mat in cell_keys(ci))
    assert all(missing_task_data(t.task, ci.include_path) == [] for t in ci.tasks)


def test_a_misspelt_named_corpus_gets_the_loaders_did_you_mean(tmp_path, monkeypatch):
    """corpus: nq-wiki12k was refused as a missing path ("run from the directory that holds 'nq-wiki12k'"); a value
    with no / and no extension is meant as a named corpus, so the refusal is the loader's own did-you-mean."""
    spec, yml, work = _byo_toy(tmp_path, corpus="nq-wiki12k")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as exc:
        leaderboards.runner.check_cell_args(spec, spec.cells())
    assert str(exc.value).startswith(f"leaderboard spec {spec.path}: task toy_qa: unknown corpus 'nq-wiki12k' "
                                     "(did you mean 'nq-wiki-12k'?")
