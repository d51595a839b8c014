"""A finished cell's files were checksummed two to four times per command: the key's legacy adoption
(:func:`leaderboards.keys.adopt_legacy_key`) asked :func:`leaderboards.runner.cell_is_done`, the run asked again, and
the report's :func:`leaderboards.runner.load_cell` verified once more. Now a folder that passed is hashed once per
process while ``DONE`` and the files it lists are unchanged (size, mtime, inode-change time, inode); an edit after
the first verification is still caught, and a file written within the settling time is hashed again."""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter

import pytest

from leaderboards import runner
from leaderboards.keys import cell_keys
from leaderboards.report import collect
from leaderboards.runner import IncompleteRunError, cell_is_done, load_cell, run_spec
from tests.leaderboard_helpers import run_toy_spec

CELL = "standard/toy_qa/seed1"


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory):
    """Both toy methods on toy_qa at limit 3, run once (read-only: tests copy the folder)."""
    return run_toy_spec(tmp_path_factory.mktemp("verify_once"), tasks=["toy_qa"], limit=3)


@pytest.fixture
def runs(toy_runs, tmp_path, monkeypatch):
    """A fresh copy of the runs (files new to this process), remembered as soon as they verify (no settling)."""
    spec, src = toy_runs
    shutil.copytree(src, tmp_path / "runs")
    monkeypatch.setattr(runner, "_SETTLED_NS", 0, raising=False)
    time.sleep(0.05)  # past the file system's timestamp tick, as a later command is
    return spec, tmp_path / "runs"


@pytest.fixture
def hashed(monkeypatch):
    """``Counter`` of the files :func:`leaderboards.runner.sha256_file` hashed (by path)."""
    seen: Counter = Counter()
    real = runner.sha256_file

    def counting(path, *a, **kw):
        seen[str(path)] += 1
        return real(path, *a, **kw)

    monkeypatch.setattr(runner, "sha256_file", counting)
    return seen


def test_a_finished_cell_is_hashed_once_per_process(runs, hashed):
    spec, folder = runs
    keyed = cell_keys(spec, folder)  # the legacy adoption's cell_is_done
    assert len(keyed) == 2
    summary = run_spec(spec, folder, progress=False)  # every cell done: cell_is_done again
    assert sorted(summary.skipped) == sorted(c.cell_id for c, _, _ in keyed) and not summary.ran
    loaded = collect(spec, folder)  # the report's load_cell
    assert sorted(loaded) == sorted(c.cell_id for c, _, _ in keyed)
    listed = {str(folder / key / name) for _, key, _ in keyed for name in os.listdir(folder / key) if name != "DONE"}
    assert len(listed) >= 2 * 5  # config, results, cost, provenance and samples of each cell
    assert sorted(Counter(hashed.values()).items()) == [(1, len(listed))]  # old code: each file 5 times
    assert set(hashed) == listed


@pytest.mark.parametrize("name", ["results.json", "DONE"])
def test_an_edit_after_the_first_verification_is_still_caught(runs, hashed, name):
    spec, folder = runs
    key = {c.cell_id: k for c, k, _ in cell_keys(spec, folder)}[CELL]
    d = folder / key
    assert cell_is_done(d, CELL) and load_cell(d, CELL)["results"]
    path = d / name
    st = path.stat()
    data = path.read_bytes()
    i = data.index(b'"', data.index(b"{") + 2) - 1  # the last letter of the first key: same size, another text
    path.write_bytes(data[:i] + bytes([data[i] ^ 1]) + data[i + 1:])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the mtime put back, as touch -r / cp -p / rsync -a do
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert not cell_is_done(d, CELL)
    with pytest.raises(IncompleteRunError):
        load_cell(d, CELL)


def test_a_file_written_within_the_settling_time_is_hashed_again(toy_runs, tmp_path, hashed):
    """Files younger than the file system's timestamp tick could be rewritten without a new stamp: not remembered."""
    spec, src = toy_runs
    shutil.copytree(src, tmp_path / "runs")  # just written: within the (default) settling time
    key = {c.cell_id: k for c, k, _ in cell_keys(spec, tmp_path / "runs")}[CELL]
    d = tmp_path / "runs" / key
    hashed.clear()
    assert cell_is_done(d, CELL) and cell_is_done(d, CELL)
    assert hashed[str(d / "results.json")] == 2
