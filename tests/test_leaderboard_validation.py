"""Bad spec values, arguments and baselines are one-line errors naming the file and the key, before any model loads;
``check --write`` never drops a baseline's cells (fast: toy spec, no model)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, TOY, run_toy_spec, write_spec

from leaderboards.check import check_against_baseline, load_baseline, write_baseline
from leaderboards.cli import main as lb_main
from leaderboards.keys import cell_keys
from leaderboards.report import build_report
from leaderboards.runner import DONE, run_spec
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError


def _shared(**over):
    shared = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
              "limit": 12}
    for key, value in over.items():
        if key in ("model_args", "gen_kwargs"):
            shared[key] = {**shared[key], **value}
        else:
            shared[key] = value
    return {"shared": shared}


@pytest.mark.parametrize(
    "change, message",
    [
        (_shared(model_args={"k": 0}), "shared.model_args.k must be an integer >= 1, got 0"),
        (_shared(model_args={"k": -1}), "shared.model_args.k must be an integer >= 1, got -1"),
        (_shared(model_args={"k": "5"}), "shared.model_args.k must be an integer >= 1, got '5'"),
        ({"methods": [{"name": "a", "model": TOY, "specific": {"k": 0}}]}, "methods[0].specific.k must be an integer >= 1"),
        (_shared(apply_chat_template="false"),
         "shared.apply_chat_template must be true or false (an unquoted YAML boolean), got 'false'"),
        (_shared(fewshot_as_multiturn="no"), "shared.fewshot_as_multiturn must be true or false"),
        (_shared(gen_kwargs={"do_sample": "false"}), "shared.gen_kwargs.do_sample must be true or false"),
        (_shared(gen_kwargs={"max_gen_toks": -3}), "shared.gen_kwargs.max_gen_toks must be an integer >= 1, got -3"),
        (_shared(gen_kwargs={"max_gen_toks": "abc"}), "shared.gen_kwargs.max_gen_toks must be an integer >= 1, got 'abc'"),
        ({"methods": [{"name": "a", "model": TOY, "specific_gen_kwargs": {"max_gen_toks": 0}}]},
         "methods[0].specific_gen_kwargs.max_gen_toks must be an integer >= 1"),
        (_shared(num_fewshot=-1), "shared.num_fewshot must be an integer >= 0 or null, got -1"),
        (_shared(batch_size=2.7), "shared.batch_size must be an integer >= 1, got 2.7"),
        (_shared(batch_size="abc"), "shared.batch_size must be an integer >= 1, got 'abc'"),
        (_shared(device="gpu9"), "shared.device 'gpu9' is not a device torch knows"),
        ({"bootstrap": {"iters": "abc"}}, "bootstrap.iters must be an integer >= 100, got 'abc'"),
        ({"bootstrap": {"confidence": "x"}}, "bootstrap.confidence must be a number in (0.5, 1), got 'x'"),
        ({"progress_chunk": "abc"}, "progress_chunk must be an integer >= 1, got 'abc'"),
        ({"primary_metric": "nosuchmetric"}, "primary_metric 'nosuchmetric' is not a metric of the spec's tasks"),
        ({"primary_metric": "answer_mach"}, "(did you mean 'answer_match'?)"),
    ],
)
def test_spec_rejects_bad_values_naming_the_key(tmp_path, change, message):
    p = write_spec(tmp_path, extra=change)
    with pytest.raises(ConfigError) as exc:
        load_spec(p)
    text = str(exc.value)
    assert message in text and str(p) in text and "\n" not in text


def test_spec_keeps_valid_values_as_given(tmp_path):
    p = write_spec(tmp_path, extra={**_shared(num_fewshot=0, batch_size=2, apply_chat_template=False, device="cuda:0",
                                              fewshot_as_multiturn=False), "primary_metric": "f1"})
    cell = load_spec(p).cells()[0]
    assert (cell.num_fewshot, cell.batch_size, cell.apply_chat_template, cell.device, cell.fewshot_as_multiturn) == \
        (0, 2, False, "cuda:0", False)
    assert load_spec(p).primary_metric == "f1"


# --------------------------------------------------------------------------- command line and paths

@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory):
    """The toy spec (2 methods x 2 tasks) run once; tests copy the run folder before changing it."""
    return run_toy_spec(tmp_path_factory.mktemp("lbv"))


@pytest.fixture()
def runs_copy(toy_runs, tmp_path):
    spec, runs = toy_runs
    dst = tmp_path / "runs"
    shutil.copytree(runs, dst, ignore=shutil.ignore_patterns("reports"))
    return spec, dst


def _one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text, text
    return text


@pytest.mark.parametrize("argv, message", [
    (["--jobs", "0"], "run --jobs must be an integer >= 1"),
    (["--jobs", "-2"], "run --jobs must be an integer >= 1 (runner processes), got -2"),
    (["--max-cells", "0"], "run --max-cells must be an integer >= 1"),
    (["--estimate", "--fallback-s-per-question", "-5"], "run --fallback-s-per-question must be a number of seconds > 0, got -5.0"),
])
def test_run_rejects_bad_numbers(tmp_path, argv, message):
    spec = write_spec(tmp_path)
    with pytest.raises(ConfigError) as exc:
        lb_main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), "--no-progress", *argv])
    assert message in _one_line(exc)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"jobs": 0}, "run --jobs must be an integer >= 1 (runner processes), got 0"),
    ({"jobs": True}, "run --jobs must be an integer >= 1 (runner processes), got True"),
    ({"max_cells": 0}, "run --max-cells must be an integer >= 1, got 0"),
    ({"max_cells": 1.5}, "run --max-cells must be an integer >= 1, got 1.5"),
])
def test_run_spec_checks_jobs_and_max_cells_as_the_cli_does(tmp_path, kwargs, message):
    """One check (runner.check_run_args) for the CLI and run_spec: the same one-line message either way."""
    spec = load_spec(write_spec(tmp_path))
    with pytest.raises(ConfigError) as exc:
        run_spec(spec, tmp_path / "runs", progress=False, **kwargs)
    assert _one_line(exc) == message
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("cmd", [["run"], ["run", "--estimate"], ["report"], ["check", "--baseline", "b.json"]])
def test_a_file_as_the_runs_dir_is_named(tmp_path, cmd):
    spec = write_spec(tmp_path)
    (tmp_path / "b.json").write_text(json.dumps({"spec": "toy", "tolerances": {}, "cells": {}}))
    cmd = [x if x != "b.json" else str(tmp_path / x) for x in cmd]
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(ConfigError) as exc:
        lb_main([cmd[0], str(spec), "--runs-dir", str(afile), *cmd[1:]])
    assert f"the runs dir {afile} (--runs-dir) is a file, not a folder" in _one_line(exc)
    assert afile.read_text() == "x"


def test_report_and_baseline_paths_are_checked_before_work(tmp_path):
    spec = write_spec(tmp_path)
    afile = tmp_path / "afile"
    afile.write_text("x")
    runs = str(tmp_path / "runs")
    for out, message in ((afile, f"report --out {afile} is a file, not a folder"),
                         (afile / "sub", f"report --out {afile / 'sub'}: {afile} is a file, so the path cannot be created")):
        with pytest.raises(ConfigError) as exc:
            lb_main(["report", str(spec), "--runs-dir", runs, "--out", str(out)])
        assert message in _one_line(exc)
    with pytest.raises(ConfigError) as exc:
        lb_main(["check", str(spec), "--runs-dir", runs, "--write", "--baseline", str(tmp_path)])
    assert f"check --write --baseline {tmp_path} is a folder; give a file path" in _one_line(exc)
    with pytest.raises(ConfigError) as exc:
        lb_main(["check", str(spec), "--runs-dir", runs, "--write", "--baseline", str(afile / "b.json")])
    assert f"{afile} is a file, so the path cannot be created" in _one_line(exc)
    with pytest.raises(ConfigError) as exc:
        lb_main(["report", str(spec), "--runs-dir", runs, "--out", "/proc/nope"])
    assert "report --out /proc/nope: cannot create it (/proc is not writable" in _one_line(exc)
    with pytest.raises(ConfigError) as exc:
        lb_main(["check", str(spec), "--runs-dir", runs, "--write", "--baseline", "/proc/nope/b.json"])
    assert "check --write --baseline /proc/nope/b.json: cannot create it (/proc is not writable" in _one_line(exc)
    assert not list(tmp_path.glob(".tokrag-probe-*")) and not list(Path("/proc").glob(".tokrag-probe-*"))
    assert afile.read_text() == "x"


def test_estimate_refuses_a_model_class_that_is_not_an_lm_eval_model(tmp_path):
    spec = write_spec(tmp_path, methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
                                         {"name": "json", "model": "json:JSONDecoder"}])
    for argv in (["--estimate"], []):
        with pytest.raises(ConfigError) as exc:
            lb_main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), "--no-progress", *argv])
        text = _one_line(exc)
        assert "method json: model 'json:JSONDecoder' is <class 'json.decoder.JSONDecoder'>, not an lm-eval model" in text
        assert str(spec) in text
    assert not list((tmp_path / "runs").glob("*/DONE"))


# --------------------------------------------------------------------------- baselines

@pytest.mark.parametrize("content, message", [
    ({"spec": "toy", "tolerances": {"em": {"abs": 0.04}}, "cells": {"standard/toy_qa/seed1": {"em": "abc"}}},
     "cells.standard/toy_qa/seed1.em must be a number, got the text \"abc\"; edit the file, or move it aside and "
     "write a new baseline with check --write"),
    ({"spec": "toy", "tolerances": {}, "cells": {"standard/toy_qa/seed1": [0.5]}},
     "cells.standard/toy_qa/seed1 must be a mapping {metric: number}, got a list; edit the file"),
    ({"cells": 5, "tolerances": "x"}, "'cells' must be a mapping {cell id: {metric: number}}, got the number 5; edit the file"),
    ({"cells": {}, "tolerances": "x"}, "'tolerances' must be a mapping {metric: {abs: number >= 0, unit: text (optional)}}, got the text \"x\""),
    ({"cells": {}}, "expected keys 'cells' and 'tolerances' (missing 'tolerances'); edit the file"),
    # NaN is no number (the same test as the spec's numbers): a NaN tolerance or value could never be met
    ({"spec": "toy", "tolerances": {"em": {"abs": float("nan")}}, "cells": {}}, "tolerances.em must be {abs: number >= 0"),
    ({"spec": "toy", "tolerances": {"em": {"abs": 0.04}}, "cells": {"standard/toy_qa/seed1": {"em": float("nan")}}},
     "cells.standard/toy_qa/seed1.em must be a number, got NaN (not a number)"),
])
def test_malformed_baseline_says_what_is_wrong(tmp_path, content, message):
    p = tmp_path / "b.json"
    p.write_text(json.dumps(content))
    with pytest.raises(ConfigError) as exc:
        load_baseline(p)
    assert message in _one_line(exc) and str(p) in str(exc.value)


@pytest.mark.parametrize("content, got", [
    ([1, 2], "expected a mapping (JSON object) with keys 'cells' and 'tolerances', got a list"),
    ({"cells": {"c/t/seed1": {"em": None}}, "tolerances": {}}, "cells.c/t/seed1.em must be a number, got null"),
    ({"cells": {"c/t/seed1": {"em": True}}, "tolerances": {}}, "cells.c/t/seed1.em must be a number, got true"),
    ({"cells": {}, "tolerances": {}, "n": {"c/t/seed1": "ten"}}, "n.c/t/seed1 must be a number of questions >= 1, got the text \"ten\""),
    ({"cells": {}, "tolerances": {}, "spec": ["toy"]}, "'spec' must be the spec's name (text), got a list"),
])
def test_baseline_messages_speak_json_not_python(tmp_path, content, got):
    """The messages named Python's types and values (``got dict``, ``got None``, ``got 'ten'``); now one line in JSON's
    words naming the file, the field and what to do. Fails on the old code."""
    p = tmp_path / "b.json"
    p.write_text(json.dumps(content))
    with pytest.raises(ConfigError) as exc:
        load_baseline(p)
    assert str(exc.value) == (f"baseline {p}: {got}; edit the file, or move it aside and write a new baseline with "
                              "check --write")


def test_check_refuses_another_specs_baseline(toy_runs, tmp_path):
    spec, runs = toy_runs
    b = tmp_path / "b.json"
    write_baseline(spec, runs, b)
    data = json.loads(b.read_text())
    data["spec"] = "ci"
    b.write_text(json.dumps(data))
    for argv in ([], ["--write"]):
        with pytest.raises(ConfigError) as exc:
            lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(b), *argv])
        assert f"baseline {b} was written for spec 'ci', not 'toy'" in _one_line(exc)
    assert json.loads(b.read_text()) == data  # --write did not replace it


def test_write_refuses_while_a_cell_is_unfinished_and_partial_keeps_its_entry(runs_copy, tmp_path, capsys):
    spec, runs = runs_copy
    b = tmp_path / "b.json"
    write_baseline(spec, runs, b)
    before = json.loads(b.read_text())
    assert len(before["cells"]) == 4
    cell, key, _ = cell_keys(spec)[0]
    (runs / key / DONE).unlink()
    with pytest.raises(ConfigError) as exc:
        lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(b), "--write"])
    text = _one_line(exc)
    assert f"1 of 4 cells of spec 'toy' are unfinished (first: {cell.cell_id}: " in text and "--allow-partial" in text
    assert json.loads(b.read_text()) == before
    # a check names why the cell is missing (the report's reason), not only "missing from the runs"
    capsys.readouterr()
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(b)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {cell.cell_id}  not finished: " in out and f"no {DONE} marker" in out
    assert sum(cell.cell_id in x for x in out.splitlines()) == 1  # one line for the cell, not one per metric
    # --allow-partial: the finished cells are written, the unfinished one keeps its baseline entry
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(b), "--write",
                    "--allow-partial"]) == 0
    assert "1 unfinished cell(s) not updated (1 kept as the baseline had them" in capsys.readouterr().out
    assert json.loads(b.read_text()) == before
    mine = [x for x in check_against_baseline(spec, runs, b) if x.cell == cell.cell_id]
    assert mine and all(not x.ok and x.value is None for x in mine)  # still checked (FAIL), not NEW


def test_report_names_a_file_given_as_the_runs_dir(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    afile = tmp_path / "runs"
    afile.write_text("x")
    with pytest.raises(ConfigError) as exc:
        build_report(spec, afile)
    assert f"the runs dir {afile} (--runs-dir) is a file, not a folder" in _one_line(exc)


@pytest.mark.parametrize("content", ["notes\n", '{"cells": {"x": {"em": null}}, "tolerances": {}}'])
def test_write_never_replaces_a_file_that_is_not_a_valid_baseline(runs_copy, tmp_path, content):
    spec, runs = runs_copy
    b = tmp_path / "notes.md"
    b.write_text(content)
    for extra in ([], ["--allow-partial"]):
        with pytest.raises(ConfigError) as exc:
            lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(b), "--write", *extra])
        text = _one_line(exc)
        assert f"baseline {b}" in text and "move it aside or pass another --baseline" in text
        assert b.read_text() == content


def test_write_refuses_a_baseline_with_no_cells(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    (tmp_path / "runs").mkdir()
    b = tmp_path / "b.json"
    with pytest.raises(ConfigError) as exc:
        lb_main(["check", str(spec.path), "--runs-dir", str(tmp_path / "runs"), "--baseline", str(b), "--write",
                 "--allow-partial"])
    assert "no cell of spec 'toy' is finished (0 cells to write)" in _one_line(exc)
    assert not b.exists()
