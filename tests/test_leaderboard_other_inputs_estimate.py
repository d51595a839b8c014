"""``run --estimate`` and ``run`` say why finished cells are computed again (a new-user trial: after appending to the
data folder's README.md, ``run --estimate`` printed "0 of 12 cells done" and ``run`` recomputed everything without a
word; only ``check`` named the changed data_fingerprint)."""

from __future__ import annotations

import logging

from leaderboard_helpers import pin_cell_keys, write_spec

from leaderboards.cli import main
from leaderboards.estimate import estimate, render
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec


def test_estimate_and_run_name_a_changed_data_folder(tmp_path, monkeypatch, capsys, caplog):
    data = tmp_path / "data"
    data.mkdir()
    (data / "README.md").write_text("toy data\n")
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    path = write_spec(tmp_path, limit=4)
    spec, runs = load_spec(path), tmp_path / "runs"
    run_spec(spec, runs, progress=False)
    est = estimate(spec, runs)
    assert est["cells_done"] == 4 and est["other_inputs"] == ""  # nothing to say while every cell is done

    with (data / "README.md").open("a") as f:  # any change in the data folder: a new data_fingerprint, new keys
        f.write("one more line\n")
    est = estimate(spec, runs)
    assert est["cells_done"] == 0 and est["cells_todo"] == 4
    line = (f"4 of the 4 cells to do have a finished run with other inputs in {runs} (data_fingerprint differs: "
            "the data folder changed); run computes them anew")
    assert est["other_inputs"].startswith(line)
    assert main(["run", str(path), "--runs-dir", str(runs), "--estimate"]) == 0
    assert line in capsys.readouterr().out

    pin_cell_keys(monkeypatch)  # the second run's keys: those the estimate saw (other work may edit hashed source)
    with caplog.at_level(logging.WARNING, logger="leaderboards.runner"):
        run_spec(spec, runs, progress=False)
    said = [r.getMessage() for r in caplog.records if "with other inputs" in r.getMessage()]
    assert len(said) == 1 and line in said[0]
    assert estimate(spec, runs)["other_inputs"] == ""  # all done again


def test_estimate_counts_each_differing_field(tmp_path, monkeypatch):
    """Two fields differ in some cells only: each is counted over the cells it differs in."""
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    spec, runs = load_spec(write_spec(tmp_path, limit=4, tasks=["toy_qa"])), tmp_path / "runs"
    run_spec(spec, runs, progress=False)
    (data / "new.txt").write_text("x")
    other = load_spec(write_spec(tmp_path, limit=4, tasks=["toy_qa"],
                                 extra={"shared": {"model_args": {"pretrained": str(spec.cells()[0].model_args["pretrained"]),
                                                                  "k": 3}, "gen_kwargs": {"max_gen_toks": 9}, "limit": 4}}))
    got = estimate(other, runs)["other_inputs"]
    assert got.startswith("2 of the 2 cells to do have a finished run with other inputs")
    assert "data_fingerprint differs: the data folder changed" in got
    assert "gen_kwargs differs (a setting of the spec)" in got
