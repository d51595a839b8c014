"""leaderboards.rescore re-applies the task's current filters to the logged raw ``resps``. It scored the logged
``filtered_resps`` (the run's filters) while treating a changed ``filter_list`` as re-scorable, so a fixed
answer-extraction filter was re-scored with the old filter's numbers. Now the filters are lm-eval's own
(``task._filters``, ``FilterEnsemble.apply`` over Instances built from the log); with unchanged filters the samples and
the report are as logged (tests/test_leaderboard_v2.py's byte-identical report)."""

from __future__ import annotations

import json

import pytest
from leaderboard_helpers import copy_toy_runs, finished_toy_runs, pin_cell_keys

from leaderboards.cli import main as lb_main
from leaderboards.rescore import collect_for_rescore, refiltered_samples, rescore_loaded, task_for_docs
from leaderboards.runner import cell_keys, load_cell
from leaderboards.spec import load_spec

# the toy model answers amber/teal/blue/white (gold red/teal/blue/white) under standard, "I do not know" under none
FIXED = ('filter_list:\n  - name: {name}\n    filter:\n'
         '      - {{function: map, mapping_dict: {{amber: red, teal: teal, blue: blue, white: white}},'
         ' default_value: "[invalid]"}}\n      - {{function: take_first}}\n')


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    pin_cell_keys(monkeypatch)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """toy_qa (2 methods, 4 questions) run from a copy of the fixture tasks; tests copy it."""
    return finished_toy_runs(tmp_path_factory.mktemp("rescore_filters"), tasks=["toy_qa"], limit=4)


def _copy(finished, tmp_path):
    spec, runs = copy_toy_runs(finished, tmp_path, tasks=["toy_qa"], limit=4)
    return spec, runs, tmp_path / "tasks" / "toy_qa" / "toy_qa.yaml"


def _em(out):
    rows = json.loads((out / "leaderboard.json").read_text())["rows"]
    return {r["method"]: r["metrics"]["em"]["mean"] for r in rows}


@pytest.mark.parametrize("name", ["none", "fixed"])
def test_a_changed_filter_is_reapplied_to_the_logged_resps(finished, tmp_path, capsys, name):
    spec, runs, yaml = _copy(finished, tmp_path)
    assert lb_main(["rescore", str(spec), "--runs-dir", str(runs), "--out", str(tmp_path / "before")]) == 0
    assert _em(tmp_path / "before") == {"standard": 0.75, "none": 0.0}  # amber is not red
    yaml.write_text(yaml.read_text() + FIXED.format(name=name))
    capsys.readouterr()
    assert lb_main(["rescore", str(spec), "--runs-dir", str(runs), "--out", str(tmp_path / "after")]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["cells"] == 2
    assert _em(tmp_path / "after") == {"standard": 1.0, "none": 0.0}  # the map filter's amber -> red is scored
    spec_obj = load_spec(spec)
    loaded, _ = collect_for_rescore(spec_obj, runs)
    out, changes = rescore_loaded(spec_obj, loaded)
    std = next(data for cid, (_, _, data) in out.items() if cid.startswith("standard/"))
    assert [s["filtered_resps"] for s in std["samples"]["toy_qa"]] == [["red"], ["teal"], ["blue"], ["white"]]
    assert {s["filter"] for s in std["samples"]["toy_qa"]} == {name}
    assert {s["resps"][0][0] for s in std["samples"]["toy_qa"]} == {"amber", "teal", "blue", "white"}  # raw kept
    res = std["results"]["results"]["toy_qa"]
    assert res[f"em,{name}"] == 1.0 and res[f"f1,{name}"] == 1.0
    if name != "none":  # the run's filter is gone, and its aggregates with it
        assert not [k for k in res if k.endswith(",none")]


def test_unchanged_filters_give_the_logged_samples(finished, tmp_path):
    spec, runs, _ = _copy(finished, tmp_path)
    spec_obj = load_spec(spec)
    for cell, key, _ in cell_keys(spec_obj, runs):
        samples = load_cell(runs / key, cell.cell_id)["samples"]["toy_qa"]
        task = task_for_docs(spec_obj, "toy_qa", [s["doc"] for s in samples])
        assert refiltered_samples(task, samples) == samples
        bare = [{k: v for k, v in s.items() if k != "resps"} for s in samples]  # no raw resps logged: as logged
        assert refiltered_samples(task, bare) == bare


def test_a_changed_filter_without_logged_resps_is_refused(finished, tmp_path, monkeypatch):
    import leaderboards.rescore as rescore_mod
    spec, runs, yaml = _copy(finished, tmp_path)

    def without_resps(folder, cell_id):
        data = load_cell(folder, cell_id)
        data["samples"] = {t: [{k: v for k, v in s.items() if k != "resps"} for s in ss]
                           for t, ss in data["samples"].items()}
        return data

    monkeypatch.setattr(rescore_mod, "load_cell", without_resps)
    assert lb_main(["rescore", str(spec), "--runs-dir", str(runs), "--out", str(tmp_path / "same")]) == 0  # unchanged
    yaml.write_text(yaml.read_text() + FIXED.format(name="none"))
    with pytest.raises(rescore_mod.StaleGenerationsError) as exc:
        lb_main(["rescore", str(spec), "--runs-dir", str(runs), "--out", str(tmp_path / "r")])
    lines = str(exc.value).splitlines()
    assert sorted(line.split(":")[0] for line in lines) == ["none/toy_qa/seed1", "standard/toy_qa/seed1"]
    assert all("filter_list: null in the run -> [" in line and "log no raw resps" in line for line in lines)
    assert not (tmp_path / "r").exists()
