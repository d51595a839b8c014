"""``keys.cell_input_material`` is the part of a cell's key material that ``runner.inputs_now`` checks again before a
cell starts and before its ``DONE`` (a review: ``inputs_now`` computed the whole material, code fingerprints, model
weights and library versions included, to keep these four fields): the same values, in the same order, as
``cell_key_material`` gives, and ``inputs_now`` of unchanged inputs gives the cell's own key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from leaderboards import keys
from leaderboards.runner import CELL_INPUT_FIELDS, inputs_now
from leaderboards.spec import load_spec

DATA = Path(os.environ.get("TOKRAG_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
SPECS = Path(__file__).resolve().parents[1] / "leaderboards" / "specs"
pytestmark = pytest.mark.skipif(not (DATA / "nq_open_oracle").is_dir(), reason="needs the shared data folder")


@pytest.mark.parametrize("name", ["ci.yaml", "reference-cells.yaml"])
def test_cell_input_material_is_the_input_fields_of_the_key_material(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    spec = load_spec(SPECS / name)
    memo = keys._HashMemo()
    for cell, key, mat in keys.cell_keys(spec):
        got = keys.cell_input_material(spec, cell, memo)
        assert set(got) <= set(CELL_INPUT_FIELDS) and {"task_fingerprint", "data_fingerprint"} <= set(got)
        assert list(got.items()) == [(f, v) for f, v in mat.items() if f in CELL_INPUT_FIELDS], cell.cell_id
        new_key, new_mat, diffs = inputs_now(spec, cell, mat)
        assert (new_key, diffs) == (key, []) and new_mat == json.loads(json.dumps(mat)), cell.cell_id
