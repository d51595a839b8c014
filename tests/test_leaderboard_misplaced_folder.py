"""A run folder that holds another cell's finished run (``cp -a runs/<none key> runs/<standard key>``) is refused by
report, rescore, check and run, naming the folder, what its DONE says and what was expected; the folders that are
legitimately read for a cell (one shared by two specs, the task-code match of rescore) still are."""

from __future__ import annotations

import json
import shutil

import pytest

from leaderboards.check import check_against_baseline, write_baseline
from leaderboards.keys import cell_keys
from leaderboards.report import collect
from leaderboards.rescore import collect_for_rescore
from leaderboards.runner import MisplacedRunError, run_spec
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec


@pytest.fixture(scope="module")
def toy_runs(tmp_path_factory):
    """Both toy methods on toy_qa at limit 3, run once (read-only: tests copy the folder)."""
    root = tmp_path_factory.mktemp("misplaced")
    spec = load_spec(write_spec(root, tasks=["toy_qa"], limit=3))
    run_spec(spec, root / "runs", progress=False)
    return root, spec, root / "runs"


def _copy(toy_runs, tmp_path):
    root, spec, runs = toy_runs
    dst = tmp_path / "runs"
    shutil.copytree(runs, dst)
    keys = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    return spec, dst, keys


def _misplace(runs, keys):
    """``rm -rf runs/<standard>; cp -a runs/<none> runs/<standard>``."""
    std, none = keys["standard/toy_qa/seed1"], keys["none/toy_qa/seed1"]
    shutil.rmtree(runs / std)
    shutil.copytree(runs / none, runs / std)
    return std, none


def _says_what(msg: str, runs, std: str, none: str) -> None:
    assert str(runs / std) in msg and "\n" not in msg
    assert f"config_hash {none!r}" in msg and "cell 'none/toy_qa/seed1'" in msg  # what DONE says
    assert f"expected config_hash {std!r}, cell 'standard/toy_qa/seed1'" in msg
    assert "delete it" in msg and "re-run" in msg


def test_copied_folder_is_refused_by_report_rescore_and_check(toy_runs, tmp_path):
    spec, runs, keys = _copy(toy_runs, tmp_path)
    base = tmp_path / "baseline.json"
    write_baseline(spec, runs, base)
    std, none = _misplace(runs, keys)
    for allow in (False, True):  # never shown as rag-none's numbers, nor silently as missing
        with pytest.raises(MisplacedRunError) as exc:
            collect(spec, runs, allow_missing=allow)
        _says_what(str(exc.value), runs, std, none)
        with pytest.raises(MisplacedRunError) as exc:
            collect_for_rescore(spec, runs, allow_missing=allow)
        _says_what(str(exc.value), runs, std, none)
    with pytest.raises(MisplacedRunError):
        check_against_baseline(spec, runs, base)


def test_run_refuses_before_any_cell_and_keeps_the_folder(toy_runs, tmp_path):
    spec, runs, keys = _copy(toy_runs, tmp_path)
    std, none = _misplace(runs, keys)
    before = {p.name: p.read_bytes() for p in (runs / std).iterdir()}
    with pytest.raises(MisplacedRunError) as exc:
        run_spec(spec, runs, progress=False)
    _says_what(str(exc.value), runs, std, none)
    assert {p.name: p.read_bytes() for p in (runs / std).iterdir()} == before  # not skipped as done, not redone over


def test_done_naming_another_cell_is_refused(toy_runs, tmp_path):
    """Same key, but DONE names another method's cell (an edited or mixed-up marker)."""
    spec, runs, keys = _copy(toy_runs, tmp_path)
    d = runs / keys["standard/toy_qa/seed1"]
    done = json.loads((d / "DONE").read_text())
    (d / "DONE").write_text(json.dumps({**done, "cell_id": "none/toy_qa/seed1"}))
    with pytest.raises(MisplacedRunError, match="cell 'none/toy_qa/seed1', expected config_hash"):
        collect(spec, runs)
    with pytest.raises(MisplacedRunError):
        run_spec(spec, runs, progress=False)


def test_legitimate_shared_folders_are_read(toy_runs, tmp_path, monkeypatch):
    """Another spec with the same cells (same ids: ci / reference-cells) or naming the model (``model/`` before the
    cell id; the key leaves the spec's model name out) reads the same folders; rescore's match of a folder whose key
    differs only in the task code is checked against that folder's own name."""
    spec, runs, keys = _copy(toy_runs, tmp_path)
    other = load_spec(write_spec(tmp_path / "other", name="other", tasks=["toy_qa"], limit=3))
    assert run_spec(other, runs, progress=False).ran == []
    assert all(v[2] is not None for v in collect(other, runs).values())
    d = runs / keys["standard/toy_qa/seed1"]
    done = json.loads((d / "DONE").read_text())
    (d / "DONE").write_text(json.dumps({**done, "cell_id": "smol/standard/toy_qa/seed1"}))
    assert collect(spec, runs)["standard/toy_qa/seed1"][2] is not None
    (d / "DONE").write_text(json.dumps(done))

    def edited_task(spec_, runs_=None):  # the task code changed since the run: the cell's key and task fingerprint moved
        return [(c, "0123456789abcdef0123" if c.cell_id == "standard/toy_qa/seed1" else k,
                 {**m, "task_fingerprint": "edited"} if c.cell_id == "standard/toy_qa/seed1" else m)
                for c, k, m in cell_keys(spec_)]

    monkeypatch.setattr("leaderboards.rescore.cell_keys", edited_task)
    loaded, notes = collect_for_rescore(spec, runs)
    assert loaded["standard/toy_qa/seed1"][2]["dir"] == str(d)
    assert notes == [f"standard/toy_qa/seed1: task folder changed since the run; re-scoring the samples of {d.name}"]


def test_a_run_moved_to_another_folder_name_is_not_recomputed(toy_runs, tmp_path, capsys):
    """``mv runs/<key> runs/movedaway``: report/check named the move back, but ``run`` recomputed the cell without a
    word and ``--estimate`` counted it to do (a breaker). Both now refuse in one line with the move back; the folder
    is untouched."""
    from leaderboards.cli import main as lb_main
    from retrieval.errors import ConfigError

    spec, runs, keys = _copy(toy_runs, tmp_path)
    std = keys["standard/toy_qa/seed1"]
    (runs / std).rename(runs / "movedaway")
    before = sorted(p.name for p in (runs / "movedaway").iterdir())
    want = (f"leaderboard spec {spec.path}: the finished run of a cell is in {runs / 'movedaway'}, not in {runs / std} "
            f"(its config.json says config_hash {std}): move it back (mv {runs / 'movedaway'} {runs / std}); nothing was run")
    with pytest.raises(ConfigError) as exc:
        run_spec(spec, runs, progress=False)
    assert str(exc.value) == want
    with pytest.raises(ConfigError) as exc:
        lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--estimate"])
    assert str(exc.value) == want
    assert not (runs / std).exists() and sorted(p.name for p in (runs / "movedaway").iterdir()) == before
    (runs / "movedaway").rename(runs / std)
    assert run_spec(spec, runs, progress=False).ran == []


def test_a_done_marker_edited_in_place_is_named_as_such(toy_runs, tmp_path):
    """DONE's config_hash edited by hand (folder and config.json in place): the message said to move the folder to
    the edited hash's folder (a breaker); now it says the marker is off and to re-run the cell."""
    spec, runs, keys = _copy(toy_runs, tmp_path)
    std = keys["standard/toy_qa/seed1"]
    done = json.loads((runs / std / "DONE").read_text())
    (runs / std / "DONE").write_text(json.dumps({**done, "config_hash": "deadbeef"}))
    with pytest.raises(MisplacedRunError) as exc:
        collect(spec, runs)
    assert str(exc.value) == (f"{runs / std}: its DONE says config_hash 'deadbeef' but its config.json says {std!r}, "
                              f"the folder's own key: the DONE marker was edited or is damaged; delete it (rm {runs / std / 'DONE'}) "
                              "and re-run the spec to compute this cell")
