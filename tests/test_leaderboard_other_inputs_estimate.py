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


def test_run_and_check_name_the_same_closest_run(tmp_path):
    """``run``/``run --estimate`` (other_inputs_summary) and ``check``/``report`` (other_inputs_note) pick the closest
    finished run of a cell with one rule (fewest differences, then folder name), so they explain a rerun alike when two
    earlier runs differ in as many fields: here the data folder (folder ``aaa…``) or the generation settings (``bbb…``)."""
    import json

    from leaderboards.runner import DONE, finished_runs_by_cell, other_inputs_note, other_inputs_summary

    spec, runs = load_spec(write_spec(tmp_path, limit=4, tasks=["toy_qa"])), tmp_path / "runs"
    cell = spec.cells()[0]
    key, mat = "c" * 20, {"data_fingerprint": "new", "gen_kwargs": {"max_gen_toks": 8}, "seed": 1}
    for name, old in (("b" * 20, {"gen_kwargs": {"max_gen_toks": 9}}), ("a" * 20, {"data_fingerprint": "old"}),
                      ("d" * 20, {"data_fingerprint": "old", "seed": 2})):  # written out of name order; ddd… is farther
        (runs / name).mkdir(parents=True)
        (runs / name / "config.json").write_text(json.dumps({**mat, **old, "cell_id": cell.cell_id, "spec": spec.name,
                                                             "config_hash": name}))
        (runs / name / DONE).write_text("{}")
    note = other_inputs_note(cell.cell_id, key, mat, finished_runs_by_cell(runs), spec=spec.name)
    summary = other_inputs_summary(spec, runs, [(cell, key, mat)])
    assert f"(key {'a' * 20}) (3 such folders; the closest named): its config differs in data_fingerprint old -> new;" in note
    assert summary.startswith(f"1 of the 1 cells to do has a finished run with other inputs in {runs} (data_fingerprint "
                              "differs: the data folder changed); run computes it anew")
    assert "gen_kwargs" not in summary
