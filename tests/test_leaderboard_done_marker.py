"""A run folder whose ``DONE`` lacks ``config_hash`` and/or ``cell_id`` (hand-written, truncated, edited) was accepted
as the cell's finished run by report, rescore, check and run (the identity check skipped a field it could not read).
Every ``DONE`` the runner writes names both, so such a marker is damaged: refused by all of them in one line naming
the folder, with "delete DONE and re-run" (as for an edited ``config_hash``), and the folder is left as it was."""

from __future__ import annotations

import json
import shutil

import pytest

from leaderboards.check import check_against_baseline, write_baseline
from leaderboards.keys import cell_keys
from leaderboards.report import collect
from leaderboards.rescore import collect_for_rescore
from leaderboards.runner import MisplacedRunError, cell_is_done, run_spec
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec

CELL = "standard/toy_qa/seed1"


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory):
    """Both toy methods on toy_qa at limit 3, run once (read-only: tests copy the folder)."""
    root = tmp_path_factory.mktemp("done_marker")
    spec = load_spec(write_spec(root, tasks=["toy_qa"], limit=3))
    run_spec(spec, root / "runs", progress=False)
    return spec, root / "runs"


def _damaged(toy_runs, tmp_path, **edit):
    """A copy of the runs with the standard cell's DONE edited: a key set to None is removed, others set."""
    spec, runs = toy_runs
    dst = tmp_path / "runs"
    shutil.copytree(runs, dst)
    key = {c.cell_id: k for c, k, _ in cell_keys(spec)}[CELL]
    done = json.loads((dst / key / "DONE").read_text())
    assert isinstance(done["config_hash"], str) and isinstance(done["cell_id"], str)  # what the runner writes
    done = {k: v for k, v in {**done, **edit}.items() if v is not None}
    (dst / key / "DONE").write_text(json.dumps(done))
    return spec, dst, dst / key


def _damaged_line(d, lacking: str) -> str:
    """The message of a DONE without its identity in a folder whose config.json says it is this folder's run."""
    return (f"{d / 'DONE'}: damaged manifest: it names no {lacking}, though every DONE the runner writes names its "
            "folder's key and cell; re-run the cell")


def _misplaced_line(d, lacking: str) -> str:
    """The refusal when config.json does not say the run is this folder's either."""
    return (f"{d}: its DONE has no string {lacking}, expected config_hash {d.name!r}, cell_id {CELL!r}: the DONE "
            f"marker was edited or is damaged; delete it (rm {d / 'DONE'}) and re-run the spec to compute this cell")


@pytest.mark.parametrize("edit, lacking", [
    ({"config_hash": None}, "config_hash (got None)"),
    ({"cell_id": None}, "cell_id (got None)"),
    ({"config_hash": None, "cell_id": None}, "config_hash (got None) and no cell_id (got None)"),
    ({"config_hash": 12345}, "config_hash (got 12345)"),
])
def test_done_without_its_identity_is_damage_to_report_rescore_check_and_run(toy_runs, tmp_path, edit, lacking):
    """Never read as the cell's numbers; treated as other damage (an empty DONE): report/rescore list the cell as
    unfinished (missing with --allow-missing), check gives one 'damaged run folder' FAIL line for it (it aborted
    with exit 2 and no per-cell lines), run redoes it."""
    from leaderboards.check import MissingCell
    from leaderboards.runner import IncompleteRunError

    spec, runs, d = _damaged(toy_runs, tmp_path)
    base = tmp_path / "baseline.json"
    write_baseline(spec, runs, base)  # from the intact marker
    spec, runs, d = _damaged(toy_runs, tmp_path / "edited", **edit)
    want = _damaged_line(d, lacking)
    assert not cell_is_done(d, CELL)
    with pytest.raises(IncompleteRunError) as exc:
        collect(spec, runs)
    assert not isinstance(exc.value, MisplacedRunError) and want in str(exc.value)
    reasons: dict = {}
    assert collect(spec, runs, allow_missing=True, reasons=reasons)[CELL][2] is None
    assert reasons[CELL] == want
    for allow in (False, True):  # rescore stops on a damaged folder of the cell's own key, as on an empty DONE
        with pytest.raises(IncompleteRunError) as exc:
            collect_for_rescore(spec, runs, allow_missing=allow)
        assert not isinstance(exc.value, MisplacedRunError) and str(exc.value) == want
    lines = check_against_baseline(spec, runs, base)
    bad = [x for x in lines if not x.ok]
    assert len(bad) == 1 and isinstance(bad[0], MissingCell) and bad[0].cell == CELL and bad[0].state == "damaged"
    assert bad[0].render().startswith(f"FAIL {CELL}  damaged run folder {d}: {want[:-len('; re-run the cell')]}; ")
    assert run_spec(spec, runs, progress=False).ran == [CELL]  # redone, as an empty DONE is
    done = json.loads((d / "DONE").read_text())
    assert (done["config_hash"], done["cell_id"]) == (d.name, CELL)


def test_done_without_its_identity_in_another_runs_folder_is_still_refused(toy_runs, tmp_path):
    """When config.json does not say the run is this folder's either, whose run it is cannot be told: refused, never
    redone over (it may be the only copy of another cell's results)."""
    spec, runs, d = _damaged(toy_runs, tmp_path, cell_id=None)
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "config_hash": "0" * 20}))
    done = json.loads((d / "DONE").read_text())
    done["files"]["config.json"] = __import__("hashlib").sha256((d / "config.json").read_bytes()).hexdigest()
    (d / "DONE").write_text(json.dumps(done))
    want = _misplaced_line(d, "cell_id (got None)")
    for allow in (False, True):
        with pytest.raises(MisplacedRunError) as exc:
            collect(spec, runs, allow_missing=allow)
        assert str(exc.value) == want
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    with pytest.raises(MisplacedRunError) as exc:
        run_spec(spec, runs, progress=False)
    assert str(exc.value) == want
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before


def test_run_estimate_counts_the_damaged_marker_to_do(toy_runs, tmp_path, capsys):
    """As for other damage: the cell is to do (it refused with MisplacedRunError)."""
    from leaderboards.cli import main as lb_main

    spec, runs, d = _damaged(toy_runs, tmp_path, config_hash=None)
    assert lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--estimate"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["cells_todo"] == 1 and out["cells_done"] == len(spec.cells()) - 1


def test_deleting_the_damaged_marker_and_rerunning_mends_the_folder(toy_runs, tmp_path):
    """What the message says to do works: the cell is recomputed and its DONE names it again."""
    spec, runs, d = _damaged(toy_runs, tmp_path, cell_id=None)
    (d / "DONE").unlink()
    assert run_spec(spec, runs, progress=False).ran == [CELL]
    done = json.loads((d / "DONE").read_text())
    assert (done["config_hash"], done["cell_id"]) == (d.name, CELL)
    assert collect(spec, runs)[CELL][2] is not None


def test_intact_markers_are_still_read(toy_runs, tmp_path):
    """The rule refuses only missing fields: the runner's own markers (and a model-prefixed cell_id) pass."""
    spec, runs, d = _damaged(toy_runs, tmp_path, cell_id="smol/" + CELL)
    assert cell_is_done(d, CELL) and cell_is_done(d)
    assert all(v[2] is not None for v in collect(spec, runs).values())
    assert run_spec(spec, runs, progress=False).ran == []
