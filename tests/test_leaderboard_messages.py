"""The leaderboard's messages from a new-user trial: suggested commands carry the ``--runs-dir`` they were given,
an interrupted ``run`` says in one line what it kept and how to resume, ``check`` says when a cell has no values yet
or was run with other inputs, ``run --estimate`` names the cell to run first, the report labels its two corpus
hashes, and the spec docstring reads as written (fast: toy model, no real weights)."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import shutil
import signal
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, pin_cell_keys, run_toy_spec, write_spec

import leaderboards.report
import leaderboards.runner
from leaderboards.check import check_against_baseline, write_baseline
from leaderboards.cli import main as lb_main
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

JOURNAL = "journal.jsonl"


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    """Each spec's run keys computed once per spec file and selection (other work may edit the source the keys hash
    meanwhile)."""
    pin_cell_keys(monkeypatch)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The toy spec (2 methods on toy_qa, 4 questions) run once: ``(spec, runs)``; tests copy the runs."""
    return run_toy_spec(tmp_path_factory.mktemp("messages"), tasks=["toy_qa"], limit=4)


def _copy(finished, tmp_path: Path) -> tuple:
    spec, runs = finished
    shutil.copytree(runs, tmp_path / "runs3")
    return spec, tmp_path / "runs3"


def _with_extra_method(folder: Path, limit: int = 4) -> Path:
    """The toy spec plus a third method, never run."""
    return write_spec(folder, tasks=["toy_qa"], limit=limit, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "none", "model": TOY, "model_args": {"mode": "none"}},
        {"name": "vote", "model": TOY, "model_args": {"mode": "vote"}}])


# --------------------------------------------------------------------------- 2: suggested commands carry --runs-dir

def test_check_write_suggests_the_run_command_with_the_runs_dir_it_was_given(finished, tmp_path):
    """'check my2.yaml --runs-dir runs3 --baseline mybase.json --write' with a cell not run said 'finish them with
    tokrag leaderboard run my2.yaml': following it ran the cell into ./runs."""
    _, runs = _copy(finished, tmp_path)
    spec2 = load_spec(_with_extra_method(tmp_path / "my2"))
    base = tmp_path / "mybase.json"
    with pytest.raises(ConfigError) as err:
        lb_main(["check", str(spec2.path), "--runs-dir", str(runs), "--baseline", str(base), "--write"])
    assert f"finish them with tokrag leaderboard run {spec2.path} --runs-dir {runs}, or pass --allow-partial" in str(err.value)
    # no cell finished at all: the same
    want = f"run them first with tokrag leaderboard run {spec2.path} --runs-dir {tmp_path / 'none'}"
    with pytest.raises(ConfigError, match=re.escape(want) + "$"):
        write_baseline(spec2, tmp_path / "none", base, allow_partial=True)
    # report's refusal: the same command (shell-quoted when a path needs it)
    odd = tmp_path / "runs with space"
    shutil.copytree(runs, odd)
    with pytest.raises(leaderboards.runner.IncompleteRunError) as err:
        leaderboards.report.collect(spec2, odd)
    assert str(err.value).endswith(f"run: tokrag leaderboard run {spec2.path} --runs-dir {shlex.quote(str(odd))}\n"
                                   f"or report the finished ones: tokrag leaderboard report {spec2.path} --runs-dir "
                                   f"{shlex.quote(str(odd))} --allow-missing")


@pytest.mark.parametrize("verb, what", [("report", "report"), ("rescore", "re-score")])
def test_report_of_a_partial_run_names_allow_missing(finished, tmp_path, verb, what):
    """'report my2.yaml' (and 'rescore') with a cell not run listed it and said 'run: tokrag leaderboard run ...',
    never that --allow-missing reports the finished cells (what someone running part of a grid wants): the refusal
    now ends with that command too, of the same spec and runs folder."""
    _, runs = _copy(finished, tmp_path)
    spec2 = load_spec(_with_extra_method(tmp_path / "my2"))
    with pytest.raises(leaderboards.runner.IncompleteRunError) as err:
        lb_main([verb, str(spec2.path), "--runs-dir", str(runs), "--out", str(tmp_path / "out")])
    lines = str(err.value).splitlines()
    assert lines[0].startswith("1 of 3 cells ") and lines[1].startswith("  vote/toy_qa/seed")
    assert lines[-2] == f"run: tokrag leaderboard run {spec2.path} --runs-dir {runs}"
    assert lines[-1] == f"or {what} the finished ones: tokrag leaderboard {verb} {spec2.path} --runs-dir {runs} --allow-missing"
    assert not (tmp_path / "out").exists()
    lb_main([verb, str(spec2.path), "--runs-dir", str(runs), "--out", str(tmp_path / "out"), "--allow-missing"])
    assert (tmp_path / "out" / "leaderboard.json").is_file()  # the suggested command works


# --------------------------------------------------------------------------- 7: NEW without values, other inputs

def test_new_cell_not_run_yet_says_it_has_no_values_and_how_to_run_it(finished, tmp_path):
    """'NEW ... not in the baseline: not checked (accept its values with --write)' for a cell never run: there were
    no values, and --write then refused."""
    spec, runs = _copy(finished, tmp_path)
    base = tmp_path / "b.json"
    write_baseline(spec, runs, base)
    spec2 = load_spec(_with_extra_method(tmp_path / "my2"))
    lines = {x.cell: x.render() for x in check_against_baseline(spec2, runs, base)}
    new = lines["vote/toy_qa/seed1"]
    assert new.startswith("NEW  vote/toy_qa/seed1  not in the baseline and not finished, so it has no values to check")
    assert "not run yet (no run folder)" in new
    assert new.endswith(f"run it with tokrag leaderboard run {spec2.path} --runs-dir {runs}, then accept its values with --write")
    # a finished cell that the baseline lacks keeps its old line
    b = json.loads(base.read_text())
    del b["cells"]["none/toy_qa/seed1"]
    base.write_text(json.dumps(b))
    lines = {x.cell: x.render() for x in check_against_baseline(spec, runs, base)}
    assert lines["none/toy_qa/seed1"] == "NEW  none/toy_qa/seed1  not in the baseline: not checked (accept its values with --write)"


def test_a_cell_run_with_other_inputs_is_named_with_what_differs(finished, tmp_path, capsys):
    """After an edit of the inputs (here the contract's limit; a questions file works the same way) every cell read
    'missing from the runs ... not run yet (no run folder)', with no hint that the inputs changed."""
    spec, runs = _copy(finished, tmp_path)
    base = tmp_path / "b.json"
    write_baseline(spec, runs, base)
    edited = load_spec(write_spec(tmp_path / "edited", tasks=["toy_qa"], limit=3))
    old_key = {c.cell_id: k for c, k, _ in leaderboards.runner.cell_keys(spec)}["standard/toy_qa/seed1"]
    fails = [x.render() for x in check_against_baseline(edited, runs, base) if not x.ok]
    line = next(x for x in fails if "standard/toy_qa/seed1" in x)
    assert "not run yet (no run folder)" in line
    assert (f"a finished run of this cell with other inputs exists (key {old_key}): its config differs in limit 4 -> 3; "
            "if that is the run you expected here, the spec's inputs") in line
    # the report's refusal lists the same
    with pytest.raises(leaderboards.runner.IncompleteRunError, match=r"other inputs exists \(key \w+\): its config differs in limit 4 -> 3"):
        leaderboards.report.collect(edited, runs)
    # and the config of a never-run cell id is no hint
    assert "other inputs" not in leaderboards.runner.other_inputs_note("vote/toy_qa/seed1", "k", {}, {})


def test_another_specs_run_of_the_same_cell_id_is_not_called_an_edit(finished, tmp_path):
    """Two specs in one runs folder (the README's ci and reference-cells specs in the default ./runs) share cell ids
    such as rag-none/nq_oracle_bm25/seed1234: a new-user trial got 'a run of this cell with other inputs exists ...;
    re-run it (the spec's inputs changed since that run)' for the spec never run, naming the other spec's limit and
    batch size. Another spec's folder is not this cell's run; the plain 'not run yet' stays."""
    spec, runs = _copy(finished, tmp_path)
    other = load_spec(write_spec(tmp_path / "other", name="other", tasks=["toy_qa"], limit=3))
    assert {c.cell_id for c, _, _ in leaderboards.runner.cell_keys(other)} <= {c.cell_id for c, _, _ in leaderboards.runner.cell_keys(spec)}
    with pytest.raises(leaderboards.runner.IncompleteRunError) as err:
        leaderboards.report.collect(other, runs)
    assert "not run yet (no run folder)" in str(err.value) and "other inputs" not in str(err.value)


# --------------------------------------------------------------------------- 8: --estimate names the cell to run first

def _fake_measurement(runs: Path, method: str, model: str) -> None:
    """A finished folder as --estimate reads it (DONE, config.json, cost.json): a cell of another method and model."""
    d = runs / f"fake-{method}"
    d.mkdir(parents=True)
    (d / "DONE").write_text("{}")
    (d / "config.json").write_text(json.dumps({"method": method, "model": model, "task": "toy_qa", "limit": 4,
                                               "model_args": {"pretrained": "x", "k": 3}}))
    (d / "cost.json").write_text(json.dumps({"n_samples": 4, "wall_s": 2.0}))


def test_estimate_names_a_cell_per_method_to_run_first_and_prints_no_empty_table(tmp_path, capsys):
    """With a finished cell of another method (rag-standard), the estimate said 'run one cell first (tokrag
    leaderboard run SPEC --max-cells 1)', which could run a cell that makes nothing estimable, under an empty table
    header."""
    runs = tmp_path / "runs"
    _fake_measurement(runs, "rag-standard", "rag-standard")
    spec_path = write_spec(tmp_path, tasks=["toy_qa", "toy_qa_noise67"], limit=4)
    assert lb_main(["run", str(spec_path), "--runs-dir", str(runs), "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "s/question" not in out and "-----" not in out  # no table header over no rows
    cmds = [f"tokrag leaderboard run {spec_path} --runs-dir {runs} --methods {m} --tasks toy_qa --max-cells 1"
            for m in ("standard", "none")]
    assert ("total: not estimated: none of the 4 unfinished cells resembles a finished cell in "
            f"{runs} (similar: the same method, or the same lm-eval model, on the same kind of task") in out
    assert f"run one cell of each such method first ({cmds[0]}; {cmds[1]}) and estimate again" in out
    assert "SPEC --max-cells 1" not in out
    last = json.loads(out.strip().splitlines()[-1])
    assert "first_runs" not in last and last["cell_hours"] is None
    # the advice works: after the two commands every remaining cell is estimated
    for cmd in cmds:
        assert lb_main(shlex.split(cmd)[2:] + ["--no-progress"]) == 0
    capsys.readouterr()
    assert lb_main(["run", str(spec_path), "--runs-dir", str(runs), "--estimate"]) == 0
    out = capsys.readouterr().out
    last = json.loads(out.strip().splitlines()[-1])
    assert last["complete"] is True and last["cells_done"] == 2 and last["cells_todo"] == 2 and last["cell_hours"] is not None, out
    assert "s/question" in out


# --------------------------------------------------------------------------- 3: Ctrl-C and SIGTERM during run

def _interrupt_on(monkeypatch, call: int, action) -> None:
    """ToyLM's generate_until runs ``action`` on its call number ``call`` (one request per chunk)."""
    toy = leaderboards.runner._model_class(TOY)
    orig, n = toy.generate_until, [0]

    def method(lm, requests, *a, **kw):
        n[0] += 1
        if n[0] == call:
            action()
        return orig(lm, requests, *a, **kw)

    monkeypatch.setattr(toy, "generate_until", method)


def _raise_interrupt():
    raise KeyboardInterrupt


def _sigterm():
    """SIGTERM to this process, only when the run handles it (else the default action would end pytest)."""
    assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN, None), "run installed no SIGTERM handler"
    os.kill(os.getpid(), signal.SIGTERM)


def _main(argv: list[str]) -> int:
    """:func:`lb_main`, with an escaping KeyboardInterrupt a test failure (not the end of the pytest session)."""
    try:
        return lb_main(argv)
    except KeyboardInterrupt as exc:
        pytest.fail(f"{type(exc).__name__} escaped tokrag leaderboard run (a traceback, not a one-line message)")


@pytest.mark.parametrize("how, action, status", [
    ("Ctrl-C", _raise_interrupt, 130),
    ("SIGTERM", _sigterm, 143),
])
def test_an_interrupted_run_says_in_one_line_what_it_kept_and_how_to_resume(tmp_path, monkeypatch, capsys, how, action,
                                                                            status):
    """Ctrl-C printed a 36-frame KeyboardInterrupt traceback and no recovery hint; SIGTERM exited silently."""
    spec_path = write_spec(tmp_path, tasks=["toy_qa"], limit=4, extra={"progress_chunk": 1})
    runs = tmp_path / "runs3"
    _interrupt_on(monkeypatch, 7, action)  # cell 1: 4 requests; cell 2: 2 journaled, interrupted in its 3rd
    assert _main(["run", str(spec_path), "--runs-dir", str(runs), "--no-progress"]) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"tokrag leaderboard: interrupted ({how}): 1 of 2 cells are finished and kept in {runs}; the "
                       "unfinished cell none/toy_qa/seed1 kept 2 requests in its journal (replayed when resumed on "
                       "this machine with the same software; otherwise recomputed); resume with: tokrag leaderboard "
                       f"run {spec_path} --runs-dir {runs} --no-progress")
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is the run's only
    spec = load_spec(spec_path)
    cell = {c.cell_id: runs / k for c, k, _ in leaderboards.runner.cell_keys(spec)}["none/toy_qa/seed1"]
    assert leaderboards.runner.journaled_requests(cell / JOURNAL) == 2
    # the command it names resumes: the 2 journaled requests are replayed, not recomputed
    capsys.readouterr()
    assert lb_main(shlex.split(err[-1].split("resume with: ")[1])[2:] + ["--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["replayed_requests"] == 2 and summary["ran"] == ["none/toy_qa/seed1"]


def test_an_interrupted_selection_resumes_with_the_same_options(tmp_path, monkeypatch, capsys):
    """The resume command keeps the selection, --no-progress and --report (not --max-cells or --no-resume)."""
    spec_path = write_spec(tmp_path, tasks=["toy_qa", "toy_qa_noise67"], limit=4)
    runs = tmp_path / "runs"
    _interrupt_on(monkeypatch, 1, _raise_interrupt)
    monkeypatch.setattr(leaderboards.runner.subprocess, "Popen", lambda *a, **kw: pytest.fail("no helper expected"))
    rc = _main(["run", str(spec_path), "--runs-dir", str(runs), "--no-progress", "--methods", "none", "--report",
                "--no-resume", "--max-cells", "1"])
    assert rc == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("tokrag leaderboard: interrupted (Ctrl-C): 0 of 2 cells are finished and kept in ")
    assert last.endswith(f"resume with: tokrag leaderboard run {spec_path} --runs-dir {runs} --methods none --no-progress "
                        "--report")


# --------------------------------------------------------------------------- 14: the two corpus hashes

def test_provenance_labels_the_corpus_fingerprint_and_the_file_sha256(finished, tmp_path):
    """'passages.jsonl@63683c2702d9ded8' and 'passages.jsonl 94a5be01ebc7' for one file, without saying which is which."""
    from leaderboards.page import render_html
    from leaderboards.report import collect, compute, provenance_table, render_markdown

    spec, runs = finished
    data = compute(spec, collect(spec, runs), timings=False)
    sha = "94a5be01ebc7" + "0" * 52
    for p in data["provenance"]:
        p["retrieval"]["corpus"] = "passages.jsonl@63683c2702d9ded8 (40 passages)"
        p["task_data_files"] = {"/data/passages.jsonl": sha, "/data/corpus-folder": "0123456789abcdef"}
    head, rows = provenance_table(data)
    assert "corpus=passages.jsonl (passages fingerprint 63683c2702d9ded8, 40 passages)" in rows[0][4]
    assert head[5] == "data fingerprint; task data files: file SHA-256"
    assert rows[0][5].endswith("; corpus-folder 0123456789ab; passages.jsonl 94a5be01ebc7")
    note = ("a corpus's \"passages fingerprint\" (retrieval column) is retrieval's corpus fingerprint, SHA-256 over its "
            "passages' ids, titles and texts, which names its index and cached runs; the hash after a task data file's "
            "name (data column) is the SHA-256 of the file's bytes")
    assert note in render_markdown(data)
    assert html.escape(note) in render_html(data, [])
    # a report without either hash has no note
    plain = compute(spec, collect(spec, runs), timings=False)
    assert "passages fingerprint" not in render_markdown(plain) and provenance_table(plain)[0][5] == "data fingerprint"


# --------------------------------------------------------------------------- 15: the spec docstring

def test_spec_docstrings_show_backslash_n_as_written():
    """``["\\n"]`` showed as a line break in help(leaderboards.spec)."""
    import leaderboards.spec

    assert 'until: ["\\n"] unless the contract sets until' in leaderboards.spec.__doc__
    assert 'gen_kwargs.until: ["\\n"]``' in leaderboards.spec._prompt_contract.__doc__


# --------------------------------------------------------------------------- 13: what "byte-identical" covers

def test_readme_names_the_fields_in_which_two_runs_results_json_differ(finished, tmp_path):
    """The README promised byte-identical 'samples, results and report (without timings)'; results.json differs in
    lm-eval's "date". Two runs of the same cells: the samples are byte-identical, results.json differs only in the
    fields the README names."""
    spec, runs = finished
    again = tmp_path / "again"
    leaderboards.runner.run_spec(spec, again, progress=False)
    keys = leaderboards.runner.cell_keys(spec)
    for _, key, _ in keys:
        a, b = runs / key, again / key
        assert {p.name: p.read_bytes() for p in a.glob("samples_*")} == {p.name: p.read_bytes() for p in b.glob("samples_*")}
        ra, rb = (json.loads((d / "results.json").read_text()) for d in (a, b))
        assert {k for k in ra.keys() | rb.keys() if ra.get(k) != rb.get(k)} <= {"date"}
    readme = " ".join((Path(leaderboards.runner.__file__).parent / "README.md").read_text().split())
    assert ("Same spec and seed → byte-identical samples files (`samples_<task>.jsonl`) and report (without timings, "
            "`--no-timings`) across runs, a killed and resumed run included") in readme
    assert "`results.json` in lm-eval's `date`" in readme
    # a plain lm_eval/leaderboard results.json also records tokrag's commit and the data files' absolute paths (e24e4d4)
    assert "`config.tokrag_versions.tokrag_commit` when tokrag's commit differs" in readme
    assert "the absolute file paths in `configs.<task>.metadata.tokrag_data`" in readme
    # the README said 'nothing is written or removed on the way out' of an interrupted run
    assert "nothing is written or removed on the way out" not in readme
    assert "On the way out no cell's file is written or removed" in readme and "`.max-cells-*` folder" in readme


def test_tokrag_model_provenance_does_not_import_leaderboards():
    """tokrag_model.provenance imported leaderboards.runner.git_commit: the model package leaned sideways on the
    leaderboards (and their imports). git_commit lives in tokrag_model.provenance; leaderboards.runner re-exports it."""
    import subprocess
    import sys

    import tokrag_model.provenance

    code = ("import sys, tokrag_model.provenance as p; p.tokrag_commit(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('leaderboards', 'torch', 'lm_eval')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(tokrag_model.provenance.__file__).parents[1]).stdout
    assert out.strip() == "[]"
    assert leaderboards.runner.git_commit is tokrag_model.provenance.git_commit


def test_an_interrupt_while_the_report_is_built_names_the_report_command(finished, tmp_path, monkeypatch, capsys):
    """run --report interrupted in the report: the runs are finished; the line names the report command (built by
    runner.run_command, shell-quoted, with the run's --runs-dir), not 'before any cell started'."""
    spec, runs = _copy(finished, tmp_path)

    def interrupted(*_a, **_kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(leaderboards.report, "build_report", interrupted)
    assert _main(["run", str(spec.path), "--runs-dir", str(runs), "--no-progress", "--report"]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"tokrag leaderboard: interrupted (Ctrl-C) while building the report: the run folders are finished and kept "
        f"in {runs}; build the report with: tokrag leaderboard report {spec.path} --runs-dir {runs}")
