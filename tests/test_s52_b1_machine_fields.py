"""A finished cell whose provenance.json machine record holds a field of another shape than the runner writes (a list
for cpu_model, a mapping for cuda) ended tokrag leaderboard report in a traceback (s52 b1,
/work/scratch/s52/b1/probe_report.py, probe_report.txt: cpu_model ['AMD', 'EPYC'] -> 'TypeError: unhashable type:
'list'' in provenance_view.settings_differ; cuda {'0': 'H100'} -> 'KeyError: 0' in compute_setting). Such a field
now counts as not recorded, as a missing one does; the report is written. Synthetic cells (tests/s51_f4_synthetic.py)."""

from __future__ import annotations

import copy

import pytest

from leaderboards.provenance_view import compute_setting, setting_label, settings_differ
from leaderboards.report import compute, render_markdown
from tests.s51_f4_synthetic import synthetic

MACHINE = {"arch": "x86_64", "cpu_capability": "AVX2", "cpu_model": "AMD EPYC", "cuda_device": None,
           "torch_num_threads": 2}
VERSIONS = {"torch": "2.13.0+cpu"}


def cell(**machine):
    return {"provenance": {"machine": {**copy.deepcopy(MACHINE), **machine}, "versions": dict(VERSIONS)},
            "results": {"config": {}}}


@pytest.mark.parametrize("field, value", [("cpu_model", ["AMD", "EPYC"]), ("cpu_capability", {"avx": 2}),
                                          ("torch_num_threads", [2]), ("cuda_device", {"name": "H100"})])
def test_a_field_of_another_shape_is_not_recorded(field, value):
    s = compute_setting(cell(**{field: value}))
    assert s[field] is None and s["device"] == "cpu"
    assert settings_differ([s, compute_setting(cell())]) is False  # unknown, not a difference


@pytest.mark.parametrize("cuda, shown", [({"0": "H100"}, None), ("H100", None), ([], None), (["NVIDIA H100"], "NVIDIA H100")])
def test_the_cuda_list_is_read_only_as_the_runner_writes_it(cuda, shown):
    s = compute_setting(cell(cuda=cuda))
    assert s["cuda_device"] == shown
    assert s["device"] == ("cuda" if shown else "cpu")


def test_versions_of_another_shape_leave_torch_unrecorded():
    d = cell()
    d["provenance"]["versions"] = ["torch"]
    assert setting_label(compute_setting(d)) == "cpu AMD EPYC (AVX2), 2 threads"


def test_the_report_of_such_a_cell_is_written(tmp_path):
    spec, loaded = synthetic(tmp_path, {m: {"answer_match": [1.0, 0.0, 1.0]} for m in ("standard", "none")})
    for i, (_c, _k, d) in enumerate(loaded.values()):
        d["provenance"] = {"machine": {**MACHINE, **({"cpu_model": ["AMD", "EPYC"]} if i == 0 else {})},
                           "versions": dict(VERSIONS)}
    md = render_markdown(compute(spec, loaded, timings=False))
    assert ("| standard/toy_qa/seed1 | key-standard | None | None | None | None | None | cpu CPU model not recorded (AVX2), "
            "2 threads, torch 2.13.0+cpu |") in md.splitlines()
    assert "a field it could not read; they may be one setting" in md  # not called two settings
