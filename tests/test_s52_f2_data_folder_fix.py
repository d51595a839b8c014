"""s52 f2: report's line before its run command ("first set the data folder the finished runs read: export
TOKRAG_DATA_DIR=...") parsed the folder back out of each cell's note with a regex, so a folder whose quoted name
the regex misreads got a wrong command: ``it's data`` gave ``export TOKRAG_DATA_DIR='/tmp/.../it'`` and a folder
named ``a: set TOKRAG_DATA_DIR=b`` gave ``export TOKRAG_DATA_DIR=b``. The folder now travels as data from
:func:`leaderboards.keys.data_folder_change` (``to_set``); the messages are otherwise unchanged.

The finished runs are written by hand (tests/test_s51_f7_data_folder_note.py's helper): no model runs."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from leaderboards.report import collect
from leaderboards.runner import IncompleteRunError, data_folder_fix
from tests.test_s51_f7_data_folder_note import _finished_under


@pytest.mark.parametrize("name", ["it's data", "my data (v2)", "a: set TOKRAG_DATA_DIR=b", "plain"])
def test_the_fix_line_names_the_folder_the_runs_read_whatever_its_name(tmp_path, monkeypatch, name):
    data = tmp_path / name
    spec, runs = _finished_under(tmp_path, monkeypatch, data)
    monkeypatch.delenv("TOKRAG_DATA_DIR")
    with pytest.raises(IncompleteRunError) as e:
        collect(spec, runs)
    lines = str(e.value).splitlines()
    quoted = shlex.quote(str(data))
    for line in lines[1:3]:  # each cell's line, as before
        assert line.endswith(f") read {data}: set TOKRAG_DATA_DIR={quoted}; nothing needs re-running)"), line
    assert lines[3] == f"first set the data folder the finished runs read: export TOKRAG_DATA_DIR={quoted}", lines[3]
    out = subprocess.run(["bash", "-c", lines[3].split(": ", 1)[1] + '; printf %s "$TOKRAG_DATA_DIR"'],
                         capture_output=True, text=True, check=True).stdout
    assert out == str(data)


def test_several_folders_are_counted_and_quoted_as_the_notes_write_them(tmp_path):
    a, b = tmp_path / "it's a", tmp_path / "b"
    assert data_folder_fix([a, b, a]) == (f"TOKRAG_DATA_DIR='{tmp_path}/it'\"'\"'s a' (2 cells) or {b} (1 cell), as "
                                          "each cell's line says: no one folder finds them all")
    assert data_folder_fix([b, b]) == f"export TOKRAG_DATA_DIR={b}"
    assert data_folder_fix([]) == ""
