"""A leaderboard task with more than one lm-eval filter (``filter_list`` with two named filters, as lm-eval's gsm8k
has ``strict-match`` and ``flexible-extract``) is refused when the spec loads. lm-eval logs one sample per (question,
filter) and ``em,strict`` / ``em,flexible`` aggregates, while ``report.compute`` keyed samples by question (the last
filter's overwrote the first's) and averaged every filter's aggregates: the toy below (strict em 1.0, flexible 0.75)
came out as em 0.75 over n 8 "questions", naming no filter, and the report command refused it only after every cell
had run, with an invariant line ("4 doc id(s) logged more than once") that names no filter. ``load_spec`` now refuses
such a task in one line; the report refuses a run of several filters (a task of lm-eval's own registry, whose YAML is
not read) naming them. A task of one filter not named ``none`` is reported as before (``em,strict``)"""

from __future__ import annotations

import json
import shutil

import pytest
from leaderboard_helpers import FIX, pin_cell_keys, write_spec

import leaderboards.spec
from leaderboards.report import build_report, collect, compute
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec, task_filters
from retrieval.errors import ConfigError

# the toy model answers amber/teal/blue/white (gold red/teal/blue/white) under standard: strict maps amber to red
STRICT = ('  - name: strict\n    filter:\n'
          '      - {function: map, mapping_dict: {amber: red, teal: teal, blue: blue, white: white},'
          ' default_value: "[invalid]"}\n      - {function: take_first}\n')
FLEXIBLE = '  - name: flexible\n    filter:\n      - {function: take_first}\n'


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    pin_cell_keys(monkeypatch)


def _tasks(root):
    """The fixture tasks plus toy_qa_two (filters strict and flexible) and toy_qa_strict (include: of toy_qa_two,
    its own filter_list of strict alone: the fix the error asks for)."""
    shutil.copytree(FIX / "tasks", root / "tasks", ignore=shutil.ignore_patterns("__pycache__"))
    folder = root / "tasks" / "toy_qa"
    two = (folder / "toy_qa.yaml").read_text().replace("task: toy_qa\n", "task: toy_qa_two\n")
    (folder / "toy_qa_two.yaml").write_text(two + "filter_list:\n" + STRICT + FLEXIBLE)
    (folder / "toy_qa_strict.yaml").write_text("include: toy_qa_two.yaml\ntask: toy_qa_strict\nfilter_list:\n" + STRICT)
    (folder / "toy_qa_inherits.yaml").write_text("include: toy_qa_two.yaml\ntask: toy_qa_inherits\n")
    return root / "tasks"


def test_task_filters_reads_the_chain(tmp_path):
    tasks = [_tasks(tmp_path)]
    assert task_filters("toy_qa_two", tasks) == ["strict", "flexible"]
    assert task_filters("toy_qa_inherits", tasks) == ["strict", "flexible"]  # from the included file
    assert task_filters("toy_qa_strict", tasks) == ["strict"]  # its own list wins over the included one
    assert task_filters("toy_qa", tasks) == ["none"]
    assert task_filters("no_such_task", tasks) is None


@pytest.mark.parametrize("task", ["toy_qa_two", "toy_qa_inherits"])
def test_load_spec_refuses_two_filters(tmp_path, task):
    tasks = _tasks(tmp_path)
    spec = write_spec(tmp_path / "s", include=tasks, tasks=["toy_qa", task], limit=4)
    with pytest.raises(ConfigError) as exc:
        load_spec(spec)
    msg = str(exc.value)
    assert "\n" not in msg
    assert str(spec) in msg and repr(task) in msg and "['strict', 'flexible']" in msg
    assert "include: toy_qa_two.yaml" in msg or "include: toy_qa_inherits.yaml" in msg


def test_report_refuses_a_run_of_two_filters(tmp_path, monkeypatch):
    """A run with two filters (the spec check bypassed, as for a task of lm-eval's registry): the per-filter truth
    differs (strict 1.0, flexible 0.75) and the report refuses it instead of printing em 0.75 over n 8."""
    tasks = _tasks(tmp_path)
    monkeypatch.setattr(leaderboards.spec, "_check_one_filter", lambda *a: None, raising=False)
    spec = load_spec(write_spec(tmp_path / "s", include=tasks, tasks=["toy_qa_two"], limit=4))
    run_spec(spec, tmp_path / "runs", progress=False)
    loaded = collect(spec, tmp_path / "runs")
    cell, _key, data = next(v for v in loaded.values() if v[0].method.name == "standard")
    res = data["results"]["results"]["toy_qa_two"]
    assert (res["em,strict"], res["em,flexible"]) == (1.0, 0.75)
    samples = data["samples"]["toy_qa_two"]
    assert len(samples) == 8 and {s["filter"] for s in samples} == {"strict", "flexible"}
    with pytest.raises(ConfigError) as exc:
        compute(spec, loaded, timings=False)
    msg = str(exc.value)
    assert "\n" not in msg and "'toy_qa_two'" in msg and "['flexible', 'strict']" in msg
    # the report command names the filters (before, the invariants' "4 doc id(s) logged more than once" did not)
    with pytest.raises(ConfigError, match=r"lm-eval filters \['flexible', 'strict'\]"):
        build_report(spec, tmp_path / "runs", out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_one_filter_not_named_none(tmp_path):
    """toy_qa_strict (one filter, 'strict'): the report reads em,strict and the per-question values of that filter."""
    tasks = _tasks(tmp_path)
    spec = load_spec(write_spec(tmp_path / "s", include=tasks, tasks=["toy_qa_strict"], limit=4))
    run_spec(spec, tmp_path / "runs", progress=False)
    loaded = collect(spec, tmp_path / "runs")
    for _cell, _key, d in loaded.values():
        assert set(d["results"]["results"]["toy_qa_strict"]) >= {"em,strict", "f1,strict"}
        assert {s["filter"] for s in d["samples"]["toy_qa_strict"]} == {"strict"}
    data = compute(spec, loaded, timings=False)
    rows = {r["method"]: r for r in data["rows"]}
    assert rows["standard"]["n"] == 4 and rows["none"]["n"] == 4
    em = rows["standard"]["metrics"]["em"]
    assert em["mean"] == 1.0 and em["n"] == 4 and em["lo"] is not None  # mapped amber -> red: all four right
    assert rows["none"]["metrics"]["em"]["mean"] == 0.0
    json.dumps(data)  # JSON-able
