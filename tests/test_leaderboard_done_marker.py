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
    with pytest.raises(IncompleteRunError) as exc:  # rescore stops on a damaged folder of the cell's own key
        collect_for_rescore(spec, runs)
    assert not isinstance(exc.value, MisplacedRunError) and str(exc.value) == want
    missing: list[str] = []  # with allow_missing the cell is missing, with the reason, as in report (it raised)
    assert collect_for_rescore(spec, runs, allow_missing=True, missing_out=missing)[0][CELL][2] is None
    assert missing == [f"{CELL} ({want})"]
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


def test_run_estimate_counts_a_marker_without_cell_id_to_do(toy_runs, tmp_path, capsys):
    """A DONE without its cell_id is damage that ``run`` redoes (above); the estimate counted it done (it checked the
    marker without the cell's id, so only a missing config_hash was seen) and under-estimated the run."""
    from leaderboards.cli import main as lb_main

    spec, runs, d = _damaged(toy_runs, tmp_path, cell_id=None)
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


@pytest.mark.parametrize("text, why", [
    ("[]", "it holds a JSON list, not the object with 'files', 'config_hash' and 'cell_id' the runner writes"),
    ('"x"', "it holds a JSON string, not the object with 'files', 'config_hash' and 'cell_id' the runner writes"),
    ('{"schema": 1}', "it has no 'files', the cell's files with their SHA-256"),
    ("", "the file is empty"),
    ("{", "not valid JSON at line 1 column 2"),
])
def test_a_damaged_done_is_told_in_words(toy_runs, tmp_path, text, why):
    """It said 'unreadable manifest (list indices must be integers or slices, not str)' and "('files')"."""
    from leaderboards.check import MissingCell
    from leaderboards.runner import IncompleteRunError, verify_cell_dir

    spec, runs, d = _damaged(toy_runs, tmp_path)
    base = tmp_path / "baseline.json"
    write_baseline(spec, runs, base)
    (d / "DONE").write_text(text)
    with pytest.raises(IncompleteRunError) as exc:
        verify_cell_dir(d, CELL)
    assert str(exc.value) == f"{d / 'DONE'}: unreadable manifest ({why}); re-run the cell"
    bad = [x for x in check_against_baseline(spec, runs, base) if not x.ok]
    assert len(bad) == 1 and isinstance(bad[0], MissingCell) and bad[0].state == "damaged"
    assert f"damaged run folder {d}: {d / 'DONE'}: unreadable manifest ({why}); its metrics" in bad[0].render()


def test_a_done_that_is_a_folder_is_named_as_such(toy_runs, tmp_path):
    """It was reported as 'no DONE marker (the cell started but did not finish)', and check said 'not finished'."""
    from leaderboards.check import MissingCell
    from leaderboards.runner import IncompleteRunError, verify_cell_dir

    spec, runs, d = _damaged(toy_runs, tmp_path)
    base = tmp_path / "baseline.json"
    write_baseline(spec, runs, base)
    (d / "DONE").unlink()
    (d / "DONE").mkdir()
    with pytest.raises(IncompleteRunError) as exc:
        verify_cell_dir(d, CELL)
    assert str(exc.value) == (f"{d / 'DONE'}: the DONE marker is a folder, not the manifest file the runner writes; "
                              "re-run the cell")
    bad = [x for x in check_against_baseline(spec, runs, base) if not x.ok]
    assert len(bad) == 1 and isinstance(bad[0], MissingCell) and bad[0].state == "damaged"
    assert bad[0].render().startswith(f"FAIL {CELL}  damaged run folder {d}: {d / 'DONE'}: the DONE marker is a folder")


def test_a_tolerance_without_unit_is_accepted_and_the_message_says_unit_is_optional(toy_runs, tmp_path):
    """The rule accepted {"abs": 0.2} while the error text said {abs: number >= 0, unit: text}: unit is optional (the
    check prints the metric's own unit), and the message now says so; a unit that is not text is refused."""
    from leaderboards.check import load_baseline
    from retrieval.errors import ConfigError

    spec, runs, d = _damaged(toy_runs, tmp_path)
    base = tmp_path / "baseline.json"
    b = write_baseline(spec, runs, base)
    data = json.loads(base.read_text())
    data["tolerances"]["em"] = {"abs": 0.2}
    base.write_text(json.dumps(data))
    line = next(x for x in check_against_baseline(spec, runs, base) if getattr(x, "metric", None) == "em")
    assert line.ok and line.unit == "fraction of questions"
    data["tolerances"]["em"] = {"abs": 0.2, "unit": 5}
    base.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as exc:
        load_baseline(base)
    assert str(exc.value) == (f'baseline {base}: tolerances.em must be {{abs: number >= 0}} with an optional unit: text '
                              f'(e.g. {{"abs": 0.04, "unit": "fraction of questions"}}), got {{"abs": 0.2, "unit": 5}}')
    assert b["tolerances"]["em"]["unit"]
