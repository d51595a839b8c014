"""Timings taken at a load average above the machine's CPUs are said so under the Cost table (s52 u1, P17).

u1's cells ran while other jobs kept the load at 6.4-8.7 on 2 cores (cost.json ``loadavg_start`` ``[8.02, 7.65, 5.81]``
-> ``loadavg_end`` ``[7.67, 7.61, 6.05]`` for tokrag); the report printed model s / question 16.739 for tokrag beside
16.639 for rag-standard with no word of the load (``grep -c loadavg`` on the four report files: 0), while tokrag's
forward passes / token were 2.05 vs 1.02. Now cost.json also records ``cpu_count`` (the CPUs the process may run on),
each row's cost carries ``loadavg_max`` / ``cpu_count`` / ``cells_overloaded`` (JSON, CSV columns), and the Cost
table (Markdown, HTML) has a note naming the cells whose highest 1-minute load at start or end exceeded their CPUs.
A folder written before ``cpu_count`` compares with provenance.json's ``machine.torch_num_threads`` (torch's default,
the core count) unless OMP_NUM_THREADS / MKL_NUM_THREADS set it; a cell without a recorded load claims nothing.
"""

from __future__ import annotations

import copy
import csv
import html
import io
import json
import os

import pytest

from leaderboards.page import render_html
from leaderboards.report import collect, compute, render_csv, render_markdown
from tests.leaderboard_helpers import pin_cell_keys, run_toy_spec

NOTE = ("timings of 2 cells taken at load 7.79 on 2 CPUs (the highest 1-minute load average at a cell's start or end, "
        "cost.json loadavg_start / loadavg_end, above 1.5 times the CPUs it ran on): their seconds also measure the machine's "
        "other work; compare forward passes / tokens, not seconds (standard/toy_qa, none/toy_qa)")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        pin_cell_keys(mp)
        spec, runs = run_toy_spec(tmp_path_factory.mktemp("p17"), tasks=["toy_qa"], limit=4)
        yield spec, runs, collect(spec, runs)


def _with_load(loaded: dict, cid: str, start, end, *, cpus=None, threads=None, omp=None) -> None:
    _cell, _key, d = loaded[cid]
    d["cost"].update(loadavg_start=start, loadavg_end=end)
    d["cost"].pop("cpu_count", None)
    if cpus is not None:
        d["cost"]["cpu_count"] = cpus
    if threads is not None:
        d["provenance"]["machine"] = {**(d["provenance"].get("machine") or {}), "torch_num_threads": threads,
                                      "env": {"OMP_NUM_THREADS": omp, "MKL_NUM_THREADS": None}}


def test_the_runner_records_the_cpus_the_load_compares_to(toy):
    _, runs, _ = toy
    for done in runs.glob("*/DONE"):
        cost = json.loads((done.parent / "cost.json").read_text())
        assert cost["cpu_count"] == len(os.sched_getaffinity(0))
        assert len(cost["loadavg_start"]) == 3 and len(cost["loadavg_end"]) == 3


def test_cells_above_their_cpus_get_a_note_and_fields(toy):
    spec, _, loaded = toy
    loaded = copy.deepcopy(loaded)
    # u1's tokrag cell (cpu_count recorded), and an older folder: torch's default thread count, no OMP setting
    _with_load(loaded, "standard/toy_qa/seed1", [8.02, 7.65, 5.81], [7.67, 7.61, 6.05], cpus=2)
    _with_load(loaded, "none/toy_qa/seed1", [7.79, 7.12, 6.44], [7.51, 7.23, 6.54], threads=2)
    data = compute(spec, loaded)
    rows = {r["method"]: r["cost"] for r in data["rows"]}
    assert {k: rows["standard"][k] for k in ("loadavg_max", "cpu_count", "cells_overloaded")} == {
        "loadavg_max": 8.02, "cpu_count": 2, "cells_overloaded": 1}
    assert {k: rows["none"][k] for k in ("loadavg_max", "cpu_count", "cells_overloaded")} == {
        "loadavg_max": 7.79, "cpu_count": 2, "cells_overloaded": 1}
    note = NOTE.replace("load 7.79", "load 7.79 to 8.02")
    assert f"- {note}" in render_markdown(data)
    assert html.escape(note) in render_html(data, [])
    table = list(csv.DictReader(io.StringIO(render_csv(data))))
    assert [(r["method"], r["loadavg_max"], r["cpu_count"], r["cells_overloaded"]) for r in table] == [
        ("standard", "8.02", "2", "1"), ("none", "7.79", "2", "1")]


def test_no_claim_below_the_cpus_without_a_load_or_with_threads_set(toy):
    spec, _, loaded = toy
    loaded = copy.deepcopy(loaded)
    # 2.9 on 2 CPUs: above the CPU count, as a cell alone on the machine with a torch thread per core gives (its own
    # threads count in the load), but not above 1.5x: no claim (s53 r4: a strict load > CPUs flagged such runs)
    _with_load(loaded, "standard/toy_qa/seed1", [1.5, 1.2, 1.0], [2.9, 1.3, 1.0], cpus=2)
    # an older folder whose thread count OMP_NUM_THREADS set: not the core count, so no comparison
    _with_load(loaded, "none/toy_qa/seed1", [7.79, 7.12, 6.44], [7.51, 7.23, 6.54], threads=1, omp="1")
    data = compute(spec, loaded)
    rows = {r["method"]: r["cost"] for r in data["rows"]}
    assert rows["standard"]["cells_overloaded"] == 0 and rows["standard"]["loadavg_max"] == 2.9
    assert "loadavg_max" not in rows["none"]
    md = render_markdown(data)
    assert "timings of" not in md and "loadavg" not in md
    # no load recorded at all (a folder from before loadavg): no field, no column, no note
    for cid in loaded:
        for k in ("loadavg_start", "loadavg_end", "cpu_count"):
            loaded[cid][2]["cost"].pop(k, None)
    data = compute(spec, loaded)
    assert not any("loadavg_max" in r["cost"] for r in data["rows"])
    assert "loadavg_max" not in render_csv(data).splitlines()[0] and "timings of" not in render_markdown(data)
