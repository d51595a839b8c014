"""s51 r7, review of bcf3452 (the data folder note of report/check): two cases it got wrong.

* $TOKRAG_DATA_DIR naming another copy of the data folder that holds the same files with other contents: the cells
  are keyed on other data, so the note must say the inputs changed, not "set TOKRAG_DATA_DIR=<the run's folder>;
  nothing needs re-running" (which bcf3452 said). A folder lacking the run's files still gets that advice.
* Finished runs that read two different folders: report's line before its run command named the first folder
  alone ("export TOKRAG_DATA_DIR=<d1>"), which leaves the cells that read the other one unfound; it now names both.

The finished runs are written by hand (tests/test_s51_f7_data_folder_note.py's helper): no model runs."""

from __future__ import annotations

import json
import shutil

import pytest

from leaderboards.keys import cell_keys
from leaderboards.report import collect
from leaderboards.runner import IncompleteRunError
from tests.test_s51_f7_data_folder_note import _finished_under


def test_another_copy_with_other_contents_is_a_change_of_the_inputs(tmp_path, monkeypatch):
    data, copy, empty = tmp_path / "data", tmp_path / "copy", tmp_path / "empty"
    spec, runs = _finished_under(tmp_path, monkeypatch, data)
    (copy / "nq_open").mkdir(parents=True)
    (copy / "nq_open" / "NQ-open.dev.jsonl").write_text('{"question": "what", "answer": ["other"]}\n')
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(copy))
    reasons: dict[str, str] = {}
    collect(spec, runs, allow_missing=True, reasons=reasons)
    assert len(reasons) == 2
    for why in reasons.values():
        assert "a finished run of this cell with other inputs exists" in why and "its config differs in data_fingerprint" in why
        assert "the spec's inputs" in why and "TOKRAG_DATA_DIR" not in why and "nothing needs re-running" not in why
    empty.mkdir()  # a folder without the run's file: set the folder the run read
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(empty))
    reasons = {}
    collect(spec, runs, allow_missing=True, reasons=reasons)
    for why in reasons.values():
        assert f"the data folder is {empty} ($TOKRAG_DATA_DIR), while the finished run of this cell (key " in why
        assert why.endswith(f" read {data}: set TOKRAG_DATA_DIR={data}; nothing needs re-running"), why


def test_runs_that_read_two_folders_are_both_named_before_the_run_command(tmp_path, monkeypatch):
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    spec, runs = _finished_under(tmp_path, monkeypatch, d1)
    (d2 / "nq_open").mkdir(parents=True)
    dev2 = d2 / "nq_open" / "NQ-open.dev.jsonl"
    dev2.write_text('{"question": "what", "answer": ["y"]}\n')
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(d2))
    cell, key, mat = list(cell_keys(spec, runs))[1]  # the second cell: finished under d2 instead
    for d in list(runs.iterdir()):
        if json.loads((d / "config.json").read_text())["cell_id"] == cell.cell_id:
            shutil.rmtree(d)
    d = runs / key
    d.mkdir()
    (d / "config.json").write_text(json.dumps({**mat, "cell_id": cell.cell_id, "config_hash": key, "spec": spec.name}))
    rec = {"files": {"nq_open/NQ-open.dev.jsonl": {"path": str(dev2.resolve()), "sha256": "0" * 64}}}
    (d / "results.json").write_text(json.dumps({"configs": {"toy_qa": {"metadata": {"tokrag_data": rec}}}}))
    (d / "DONE").write_text("{}")
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    with pytest.raises(IncompleteRunError) as e:
        collect(spec, runs)
    lines = str(e.value).splitlines()
    assert sum(f"set TOKRAG_DATA_DIR={d1}; nothing needs re-running" in ln for ln in lines[1:3]) == 1
    assert sum(f"set TOKRAG_DATA_DIR={d2}; nothing needs re-running" in ln for ln in lines[1:3]) == 1
    assert lines[3] == (f"first set the data folder the finished runs read: TOKRAG_DATA_DIR={d1} (1 cell) or {d2} "
                        "(1 cell), as each cell's line says: no one folder finds them all"), lines[3]
    assert lines[4].startswith("run: tokrag leaderboard run ")
