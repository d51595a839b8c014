"""rescore --allow-missing lists a cell whose own run folder is damaged as missing (with the reason), as report and
check do; it raised the damaged folder's error again (the folder matched itself as a 'task code changed' candidate)."""

from __future__ import annotations

import json
import shutil

import pytest
from leaderboard_helpers import pin_cell_keys, run_toy_spec

from leaderboards.rescore import collect_for_rescore
from leaderboards.runner import IncompleteRunError

CELL = "standard/toy_qa/seed1"


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    pin_cell_keys(monkeypatch)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    return run_toy_spec(tmp_path_factory.mktemp("rescore_damaged"), tasks=["toy_qa"], limit=3)


def test_damaged_own_folder_is_missing_with_its_reason(finished, tmp_path):
    spec, runs0 = finished
    runs = tmp_path / "runs"
    shutil.copytree(runs0, runs)
    loaded, _ = collect_for_rescore(spec, runs)
    key = loaded[CELL][1]
    res = runs / key / "results.json"
    data = json.loads(res.read_text())
    data["date"] = 0  # an edit after the run: the DONE checksum no longer matches
    res.write_text(json.dumps(data))
    missing: list[str] = []
    loaded, _ = collect_for_rescore(spec, runs, allow_missing=True, missing_out=missing)
    assert loaded[CELL][2] is None and loaded["none/toy_qa/seed1"][2] is not None
    assert len(missing) == 1 and missing[0].startswith(f"{CELL} (") and "checksum mismatch" in missing[0]
    with pytest.raises(IncompleteRunError, match="checksum mismatch"):  # without allow_missing: refused, as before
        collect_for_rescore(spec, runs)
