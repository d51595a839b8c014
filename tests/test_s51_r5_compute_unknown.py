"""What a report says when a cell's compute setting is only partly known, and which passage templates give a marker
(s51 r5, review of bfb37f9).

bfb37f9 counted a cell whose run folder records no machine (run before the runner recorded one) or a field it could not
read as another compute setting: a report of two cells at 1 thread and one from an older run folder said "## Fairness
contract (identical for every row except the compute setting: see its line)" and "computed under 2 settings ...;
greedy answers may differ between them", though nothing recorded differs. And its marker rule took punctuation alone as
the passage marker: with ``passage_template: "- {title}: {text}"`` the answers "1914-1918" and "Jean-Paul Sartre" were
counted as copying the prompt's format (rate 0.5), and ``"{{Doc}}: {text}"`` (a literal brace) gave no marker.

Synthetic finished cells (tests/s51_f4_synthetic.py via tests/test_s51_f6_compute_settings.py's shapes): no model runs.
"""

from __future__ import annotations

import copy
import csv
import io

from leaderboards.provenance_view import passage_marker
from leaderboards.report import compute, render_csv, render_markdown
from tests.s51_f4_synthetic import synthetic
from tests.test_s51_f6_compute_settings import ANSWERS, BASE, LIB, MACHINE, ONE, PROV_VERSIONS

IDENTICAL = "## Fairness contract (identical for every row)\n"
EXCEPT = "## Fairness contract (identical for every row except the compute setting: see its line)\n"


def _report(tmp_path, machines: dict, answers: dict | None = None, template: str | None = None,
            device: dict | None = None):
    """The toy spec's three methods on toy_qa as finished cells whose provenance.json ``machine`` is ``machines[m]``
    (None: no machine record), answering ``answers``; ``template``: the passage_template of every cell; ``device``: a
    method's resolved device (else cpu)."""
    answers = answers or ANSWERS
    spec, loaded = synthetic(tmp_path, {m: {"answer_match": [1.0, 0.0, 1.0, 0.0]} for m in answers})
    for cell, _key, d in loaded.values():
        m = cell.method.name
        rc = {**BASE, **({"passage_template": template} if template else {}), "device": (device or {}).get(m, "cpu")}
        d["provenance"] = {"versions": dict(PROV_VERSIONS), "model_resolved_config": rc}
        if machines[m] is not None:
            d["provenance"]["machine"] = machines[m]
        d["config"] = {"library_versions": dict(LIB)}
        d["results"]["config"] = {"tokrag_resolved_config": rc}
        for s, a in zip(d["samples"]["toy_qa"], answers[m]):
            s["resps"], s["filtered_resps"] = [[a]], [a]
    return compute(spec, loaded, timings=False)


def _machine(**kw):
    m = copy.deepcopy(MACHINE)
    m.update(kw)
    return m


def test_a_cell_without_a_machine_record_is_not_called_another_setting(tmp_path):
    data = _report(tmp_path, {"standard": _machine(), "none": _machine(), "other": None})
    line = data["models"][0]["as_run"][0]
    assert line == (f"computed on: {ONE} (2 cells: the others); not recorded (the run folder has no machine record) "
                    "(1 cell: other/toy_qa/seed1) (from provenance.json machine; these differ only in what a run folder "
                    "did not record: a cell run before the runner recorded its machine, or a field it could not read; "
                    "they may be one setting)")
    assert data["compute_settings_differ"] is False
    md = render_markdown(data)
    assert IDENTICAL in md and EXCEPT not in md and "greedy answers may differ" not in md
    # the provenance table and the CSV still say which cell has no record
    rows = {r["method"]: r["compute"] for r in csv.DictReader(io.StringIO(render_csv(data)))}
    assert rows["other"] == "not recorded (the run folder has no machine record)" and rows["none"] == ONE


def test_a_thread_count_not_recorded_is_not_a_difference_but_a_recorded_one_is(tmp_path):
    data = _report(tmp_path / "a", {"standard": _machine(), "none": _machine(), "other": _machine(torch_num_threads=None)})
    assert data["compute_settings_differ"] is False and IDENTICAL in render_markdown(data)
    # one cell unknown, two recorded ones that differ: they differ
    data = _report(tmp_path / "b", {"standard": _machine(), "none": None, "other": _machine(torch_num_threads=2)})
    assert data["compute_settings_differ"] is True
    assert data["models"][0]["as_run"][0].startswith("computed under 3 settings (from provenance.json machine): ")
    assert EXCEPT in render_markdown(data)


def test_a_cuda_cell_beside_cpu_cells_is_another_setting(tmp_path):
    data = _report(tmp_path, {"standard": _machine(), "none": _machine(),
                              "other": _machine(cuda_device="NVIDIA H100 80GB HBM3")}, device={"other": "cuda:0"})
    assert data["models"][0]["as_run"][0].startswith(
        f"computed under 2 settings (from provenance.json machine): {ONE} (2 cells: the others); cuda:0 NVIDIA H100 "
        "80GB HBM3, torch 2.13.0+cpu (1 cell: other/toy_qa/seed1); greedy answers may differ between them")
    assert EXCEPT in render_markdown(data)


def test_a_marker_must_have_a_letter_or_digit_and_reads_literal_braces(tmp_path):
    assert passage_marker("[Reference]: {title}\n{text}\n") == "[Reference]:"
    assert passage_marker("- {title}: {text}\n") is None
    assert passage_marker("[{rank}] {title}\n{text}") is None
    assert passage_marker("\n{text}") is None
    assert passage_marker("{{Doc}}: {text}") == "{Doc}:"
    answers = {"standard": ["1914-1918", "Jean-Paul Sartre", "Paris", "no"], "none": ["a", "b", "c", "d"],
               "other": ["a", "b", "c", "d"]}
    data = _report(tmp_path, {m: _machine() for m in answers}, answers, template="- {title}: {text}\n")
    assert all(r.get("passage_marker") is None for r in data["rows"])
    assert "passage marker in answer" not in render_markdown(data)
