"""The report says what computed each cell, how the methods resolved their settings, and how often an answer copies
the passage marker (s51 u2 H1, L1, L2; a1 item 1).

u2 H1: a report whose cells ran at 1 and 2 threads said "Fairness contract (identical for every row)" and nowhere named
a thread count or CPU (grep thread / AVX2 / torch_num_threads: 0 in md, csv, json and html), although on CPU a forward
pass's bits depend on both. L1: "Library versions" lacked tokenizers and the Anserini jar, which the run key holds.
L2: no format gave the resolved method settings (layer_resolved 19) or the chat template's hash. a1 item 1: 39% of
SmolLM2 rag-cad's committed nq_oracle_bm25 answers began with the passage marker "[Reference]:", nowhere in the report.

Synthetic finished cells (tests/s51_f4_synthetic.py) with provenance.json / config.json / results.json fields shaped as
the runner writes them (values from a real SmolLM2 cell): no model runs.
"""

from __future__ import annotations

import copy
import csv
import inspect
import io

from leaderboards.page import render_html
from leaderboards.provenance_view import passage_marker
from leaderboards.report import compute, render_csv, render_markdown, versions
from tasks.utils import process_results_qa
from tests.s51_f4_synthetic import synthetic

HASH = "872be49dbb638044ad01b60388f48d469ff2980e5f0dccdc22ec907db54d0788"
MACHINE = {"arch": "x86_64", "cpu_capability": "AVX2", "cpu_model": "AMD EPYC", "cuda_device": None,
           "env": {"MKL_NUM_THREADS": None, "OMP_NUM_THREADS": "1"}, "torch_num_interop_threads": 1,
           "torch_num_threads": 1}
BASE = {"add_bos_token": None, "batch_size": 1, "chat_template_sha256": HASH, "device": "cpu", "dtype": "float32",
        "k": 3, "max_gen_toks": 256, "max_length": 2048, "passage_template": "[Reference]: {title}\n{text}\n",
        "pretrained": "smollm2-135m-instruct", "requested_auto": {"weight_layout": "auto"}, "trace": True}
TOKRAG = {"layer": 0.625, "layer_resolved": 19, "rate": 1.0, "js_threshold": 5e-07, "layer_fallback": 0.625,
          "unused_args": ["js_threshold", "layer_fallback"]}
ANSWERS = {"standard": ["Marie Curie", "Paris", "1912", "no"],
           "none": ["Curie", "London", "[Reference]: 1912", "yes"],
           "other": ["[Reference]: Marie Curie", "Paris", "The [Reference]: x", "y"]}
PROV_VERSIONS = {"datasets": "5.2.0", "lm_eval": "0.4.13", "torch": "2.13.0+cpu", "transformers": "5.24.0"}
LIB = {"anserini": "anserini-1.7.1-fatjar.jar", "tokenizers": "0.23.3", "torch": "2.13.0+cpu", "transformers": "5.24.0"}


def _report(tmp_path, threads: dict[str, int], templates: dict[str, str] | None = None, chat: bool = True):
    """The toy spec's three methods on toy_qa (one seed) as finished cells computed at ``threads`` (method -> torch's
    thread count), with the answers of :data:`ANSWERS`; ``other`` resolved as Tok-RAG; ``templates``: a method's own
    passage_template; ``chat``: the chat template applied (as results.json's tokrag_prompt says)."""
    spec, loaded = synthetic(tmp_path, {m: {"answer_match": [1.0, 0.0, 1.0, 0.0]} for m in ANSWERS})
    for cell, _key, d in loaded.values():
        m = cell.method.name
        machine = copy.deepcopy(MACHINE)
        machine["torch_num_threads"] = threads[m]
        machine["env"]["OMP_NUM_THREADS"] = str(threads[m])
        rc = {**BASE, **(TOKRAG if m == "other" else {})}
        if templates and m in templates:
            rc["passage_template"] = templates[m]
        d["provenance"] = {"machine": machine, "versions": dict(PROV_VERSIONS), "model_resolved_config": rc}
        d["config"] = {"library_versions": dict(LIB)}
        # lm-eval records process_results as its source text (the QA tasks': the first non-empty line is scored)
        d["results"]["configs"]["toy_qa"]["process_results"] = inspect.getsource(process_results_qa)
        d["results"]["config"] = {"tokrag_resolved_config": rc, "tokrag_machine": machine,
                                  "tokrag_prompt": {"apply_chat_template": chat, "chat_template_sha256": HASH if chat else None}}
        for s, a in zip(d["samples"]["toy_qa"], ANSWERS[m]):
            s["resps"], s["filtered_resps"] = [[a]], [a]
    return compute(spec, loaded, timings=False)


ONE = "cpu AMD EPYC (AVX2), 1 thread, torch 2.13.0+cpu"
TWO = "cpu AMD EPYC (AVX2), 2 threads, torch 2.13.0+cpu"


def test_cells_computed_at_two_thread_counts_are_named_in_every_format(tmp_path):
    data = _report(tmp_path, {"standard": 1, "none": 1, "other": 2})
    line = (f"computed under 2 settings (from provenance.json machine): {ONE} (2 cells: the others); {TWO} (1 cell: "
            "other/toy_qa/seed1); greedy answers may differ between them: on CPU a forward pass's bits depend on the "
            "CPU's kernels and the thread count, and hardware is not part of the run key")
    assert data["models"][0]["as_run"][0] == line
    assert data["compute_settings"] == [{"setting": ONE, "cells": ["standard/toy_qa/seed1", "none/toy_qa/seed1"]},
                                        {"setting": TWO, "cells": ["other/toy_qa/seed1"]}]
    prov = {p["cell"]: p for p in data["provenance"]}
    assert prov["other/toy_qa/seed1"]["machine"]["torch_num_threads"] == 2
    assert prov["other/toy_qa/seed1"]["compute"] == TWO
    md = render_markdown(data)
    assert "## Fairness contract (identical for every row except the compute setting: see its line)" in md
    assert f"- {line}\n" in md
    prov_md = md.split("## Provenance")[1]
    assert "| git commit | computed on |" in prov_md and f"| {TWO} |" in prov_md and prov_md.count(f"| {ONE} |") == 2
    rows = list(csv.DictReader(io.StringIO(render_csv(data))))
    assert [(r["method"], r["compute"]) for r in rows] == [("standard", ONE), ("none", ONE), ("other", TWO)]
    html = render_html(data, [], [])
    assert line.replace("'", "&#x27;") in html and "<th>computed on</th>" in html.replace(' class="sortable"', "")


def test_cells_that_share_one_setting_show_it_once(tmp_path):
    data = _report(tmp_path, {"standard": 1, "none": 1, "other": 1})
    line = f"computed on: {ONE} (every cell with results, from provenance.json machine)"
    assert data["models"][0]["as_run"][0] == line
    md = render_markdown(data)
    assert "## Fairness contract (identical for every row)\n" in md and md.count(ONE) == 1
    assert "computed on |" not in md
    assert "compute" not in next(csv.reader(io.StringIO(render_csv(data))))


def test_versions_chat_template_hash_and_resolved_method_settings(tmp_path):
    data = _report(tmp_path, {"standard": 1, "none": 1, "other": 1})
    assert versions(data) == ["anserini anserini-1.7.1-fatjar.jar", "datasets 5.2.0", "lm_eval 0.4.13",
                              "tokenizers 0.23.3", "torch 2.13.0+cpu", "transformers 5.24.0"]
    assert data["models"][0]["as_run"][1] == f"chat template SHA-256 (as run, from the results): {HASH}"
    shared, own = data["models"][0]["method_resolved"]
    assert shared == ("resolved settings shared by every method (from the results): add_bos_token=None, batch_size=1, "
                      "device='cpu', dtype='float32', k=3, max_length=2048, passage_template='[Reference]: "
                      "{title}\\n{text}\\n', pretrained='smollm2-135m-instruct'")
    assert own == "other: layer=0.625, layer_resolved=19, rate=1.0"  # its unused js_threshold, layer_fallback left out
    md = render_markdown(data)
    assert f"- {own}\n" in md and HASH in md and "tokenizers 0.23.3" in md
    assert "other: layer=0.625, layer_resolved=19, rate=1.0" in render_html(data, [], [])
    plain = _report(tmp_path / "plain", {"standard": 1, "none": 1, "other": 1}, chat=False)
    assert len(plain["models"][0]["as_run"]) == 1  # the compute line; no template hash (the resolved config has one)


def test_the_share_of_answers_that_copy_the_passage_marker_is_a_diagnostic_column(tmp_path):
    assert passage_marker("[Reference]: {title}\n{text}\n") == "[Reference]:"
    assert passage_marker("{title}\n{text}\n") is None
    data = _report(tmp_path, {"standard": 1, "none": 1, "other": 1}, templates={"standard": "{title}\n{text}\n"})
    pm = {r["method"]: r.get("passage_marker") for r in data["rows"]}
    assert pm["standard"] is None  # its template has no marker
    assert pm["none"] == {"marker": "[Reference]:", "answers": 1, "n": 4, "rate": 0.25}
    assert pm["other"] == {"marker": "[Reference]:", "answers": 2, "n": 4, "rate": 0.5}
    md = render_markdown(data)
    diag = md.split("## Per-question diagnostics")[1].split("## Cost")[0]
    assert "| passage marker in answer |" in diag
    assert "| standard | toy_qa |" in diag and diag.split("| standard | toy_qa |")[1].split("\n")[0].endswith("| - |")
    assert diag.split("| none | toy_qa |")[1].split("\n")[0].endswith("| 0.250 |")
    assert diag.split("| other | toy_qa |")[1].split("\n")[0].endswith("| 0.500 |")
    assert "its text before the first placeholder ('[Reference]:')" in diag
    rows = {r["method"]: r["passage_marker_rate"] for r in csv.DictReader(io.StringIO(render_csv(data)))}
    assert rows == {"standard": "", "none": "0.250000", "other": "0.500000"}


def test_a_multi_model_report_on_one_setting_says_it_once_and_names_a_model_whose_cells_differ(tmp_path):
    from tests.test_s48_f2_contract import _loaded, _spec

    spec = _spec(tmp_path)
    loaded = _loaded(spec)
    for cell, _key, d in loaded.values():
        d["provenance"] = {"machine": copy.deepcopy(MACHINE), "versions": dict(PROV_VERSIONS)}
    data = compute(spec, loaded, timings=False)
    chat, plain = (m["as_run"] for m in data["models"])
    assert chat == [f"computed on: {ONE} (every cell of the report, from provenance.json machine)"] and plain == []
    assert render_markdown(data).count(ONE) == 1
    loaded["plain/none/toy_qa/seed1"][2]["provenance"]["machine"]["torch_num_threads"] = 2
    data = compute(spec, loaded, timings=False)
    chat, plain = (m["as_run"] for m in data["models"])
    assert chat == [f"computed on: {ONE} (every cell with results, from provenance.json machine)"]
    assert plain[0].startswith(f"computed under 2 settings (from provenance.json machine): {ONE} (1 cell: the other); "
                               f"{TWO} (1 cell: plain/none/toy_qa/seed1); greedy answers may differ")
