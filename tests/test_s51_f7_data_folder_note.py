"""s51 u2 M1: ``report`` and ``check`` with no data folder set (or another one than the finished runs read) said the
cells were "not run yet" because "data_fingerprint ... -> hub; ... the spec's inputs ... changed since then", and
suggested a ``run`` that cannot work (the NQ data is not on the hub). They now say that the data folder is not set
(or is another folder) and name the folder the finished runs read (their results.json ``tokrag_data``) to set.

The finished runs are written by hand (config.json with the cell's key material under a data folder, a results.json
whose ``tokrag_data`` lists a file of that folder, a DONE marker): no model runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboards.check import check_against_baseline
from leaderboards.keys import cell_keys
from leaderboards.report import collect
from leaderboards.runner import IncompleteRunError
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec


def _finished_under(tmp_path: Path, monkeypatch, data: Path):
    """The toy spec (one task, two methods) with each cell 'finished' while $TOKRAG_DATA_DIR was ``data``."""
    (data / "nq_open").mkdir(parents=True)
    dev = data / "nq_open" / "NQ-open.dev.jsonl"
    dev.write_text('{"question": "what", "answer": ["x"]}\n')
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    spec = load_spec(write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3))
    runs = tmp_path / "runs"
    for cell, key, mat in cell_keys(spec, runs):
        d = runs / key
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps({**mat, "cell_id": cell.cell_id, "config_hash": key,
                                                   "spec": spec.name}))
        rec = {"files": {"nq_open/NQ-open.dev.jsonl": {"path": str(dev.resolve()), "sha256": "0" * 64}}}
        (d / "results.json").write_text(json.dumps({"configs": {"toy_qa": {"metadata": {"tokrag_data": rec}}}}))
        (d / "DONE").write_text("{}")
    return spec, runs


def test_report_with_no_data_folder_names_the_folder_the_finished_runs_read(tmp_path, monkeypatch):
    data = tmp_path / "data"
    spec, runs = _finished_under(tmp_path, monkeypatch, data)
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    with pytest.raises(IncompleteRunError) as e:
        collect(spec, runs)
    msg = str(e.value)
    lines = msg.splitlines()
    assert lines[0] == f"2 of 2 cells are not finished in {runs}:"
    assert len(lines) == 6, msg
    for line in lines[1:3]:
        assert ("not run yet (no run folder); the data folder is not set ($TOKRAG_DATA_DIR is unset), while the "
                "finished run of this cell (key ") in line
        assert line.endswith(f") read {data}: set TOKRAG_DATA_DIR={data}; nothing needs re-running)"), line
        assert "inputs" not in line and "-> hub" not in line
    assert lines[3] == f"first set the data folder the finished runs read: export TOKRAG_DATA_DIR={data}"
    assert lines[4].startswith("run: tokrag leaderboard run ")


def test_report_with_another_data_folder_names_the_one_the_finished_runs_read(tmp_path, monkeypatch):
    data, other = tmp_path / "data", tmp_path / "other"
    spec, runs = _finished_under(tmp_path, monkeypatch, data)
    other.mkdir()
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(other))
    reasons: dict[str, str] = {}
    collect(spec, runs, allow_missing=True, reasons=reasons)
    assert len(reasons) == 2
    for why in reasons.values():
        assert why.endswith(f"the data folder is {other} ($TOKRAG_DATA_DIR), while the finished run of this cell (key "
                            f"{why.split('(key ')[1].split(')')[0]}) read {data}: set TOKRAG_DATA_DIR={data}; "
                            "nothing needs re-running"), why


def test_the_same_folder_with_a_changed_file_still_says_the_inputs_changed(tmp_path, monkeypatch):
    data = tmp_path / "data"
    spec, runs = _finished_under(tmp_path, monkeypatch, data)
    (data / "nq_open" / "NQ-open.dev.jsonl").write_text('{"question": "what", "answer": ["y"]}\n')
    reasons: dict[str, str] = {}
    collect(spec, runs, allow_missing=True, reasons=reasons)
    for why in reasons.values():
        assert "its config differs in data_fingerprint" in why and "the spec's inputs" in why
        assert "TOKRAG_DATA_DIR" not in why


def test_check_with_no_data_folder_says_to_set_it_and_suggests_no_run(tmp_path, monkeypatch):
    data = tmp_path / "data"
    spec, runs = _finished_under(tmp_path, monkeypatch, data)
    cells = [c.cell_id for c in spec.cells()]
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"spec": spec.name, "cells": {c: {"em": 0.5} for c in cells},
                                "tolerances": {"em": {"abs": 0.0}}}))
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    lines = [ln.render() for ln in check_against_baseline(spec, runs, base)]
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("FAIL ") and "the data folder is not set ($TOKRAG_DATA_DIR is unset)" in line
        assert line.endswith(f"read {data}: set TOKRAG_DATA_DIR={data}; nothing needs re-running; its metrics (em) "
                             "are not compared until then"), line
        assert "run the cell with" not in line and "inputs" not in line
