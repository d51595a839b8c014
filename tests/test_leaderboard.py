"""Leaderboard spec, runner, report and check on a deterministic toy model and task (fast).

The toy model (tests/leaderboard_fixtures/toy_lm.py) answers with the first passage's answer phrase
(``standard``) or a fixed wrong guess (``none``); on ``toy_qa`` (limit 12) the gold passage is first
for 9 of 12 questions, on ``toy_qa_noise67`` for 3 of 12, which gives the hand-computed numbers below.
"""

from __future__ import annotations

import html.parser
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, TOY, report_bytes, write_spec

from leaderboards.check import check_against_baseline, write_baseline
from leaderboards.cli import main as lb_main
from leaderboards.keys import cell_keys
from leaderboards.report import build_report
from leaderboards.runner import IncompleteRunError, run_spec, verify_cell_dir
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tokrag_model import MODEL_CLASSES


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory):
    """One run of the toy spec (2 methods x 2 tasks x 1 seed), shared by the fast tests (read-only)."""
    root = tmp_path_factory.mktemp("lb")
    spec_path = write_spec(root)
    spec = load_spec(spec_path)
    summary = run_spec(spec, root / "runs", progress=False)
    return spec, root / "runs", summary


@pytest.fixture()
def toy_copy(toy_run, tmp_path):
    """A private copy of the toy run folder (for tests that modify it)."""
    spec, runs, _ = toy_run
    dst = tmp_path / "runs"
    shutil.copytree(runs, dst, ignore=shutil.ignore_patterns("reports"))
    return spec, dst


# --------------------------------------------------------------------------- spec

def test_spec_contract_and_specific_settings(tmp_path):
    p = write_spec(tmp_path, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "wide", "model": TOY, "model_args": {"mode": "vote"}, "specific": {"k": 5}},
    ])
    spec = load_spec(p)
    assert "model_args.k: 3" in spec.contract_lines()
    assert spec.specific_settings() == {"wide": {"model_args.k": 5}}
    cells = spec.cells()
    assert [c.cell_id for c in cells][:2] == ["standard/toy_qa/seed1", "standard/toy_qa_noise67/seed1"]
    assert {c.model_args["k"] for c in cells if c.method.name == "wide"} == {5}
    assert [t.noise for t in spec.tasks] == [0.0, pytest.approx(0.67)]
    assert {t.family for t in spec.tasks} == {"toy_qa"}


def test_spec_prompt_settings_reach_the_cell_and_its_key(tmp_path):
    """apply_chat_template / system_instruction / fewshot_as_multiturn / prompt are contract settings of the
    cell and of its run key; left unset they add nothing to the key (older run folders keep their keys)."""
    plain = load_spec(write_spec(tmp_path / "a"))
    cell = plain.cells()[0]
    assert set(cell.config()) == {"method", "model", "model_args", "gen_kwargs", "task", "seed", "limit", "batch_size",
                                  "device", "num_fewshot", "apply_chat_template"}
    assert cell.task_metadata() == {} and cell.fewshot_as_multiturn is True
    chat = load_spec(write_spec(tmp_path / "b", extra={"shared": {
        **yaml_shared(plain), "apply_chat_template": True, "system_instruction": "Be brief.",
        "fewshot_as_multiturn": False, "num_fewshot": 2, "prompt": "base"}}))
    c2 = chat.cells()[0]
    assert (c2.apply_chat_template, c2.system_instruction, c2.fewshot_as_multiturn, c2.num_fewshot, c2.prompt) == \
        (True, "Be brief.", False, 2, "base")
    # base stops at a newline, added to tasks with the short-answer stop (tests/test_leaderboard_base_stop.py); toy_qa
    # stops at its own ["\n"] already: nothing added, as lm_eval's prompt=base keeps it
    assert c2.task_metadata() == {"prompt": "base"} and "until" not in c2.gen_kwargs
    assert not [x for x in chat.contract_lines() if x.startswith("gen_kwargs.until")]
    assert {k: c2.config()[k] for k in ("system_instruction", "fewshot_as_multiturn", "prompt")} == \
        {"system_instruction": "Be brief.", "fewshot_as_multiturn": False, "prompt": "base"}
    assert "prompt: base" in chat.contract_lines() and "system_instruction: Be brief." in chat.contract_lines()
    assert len({k for _, k, _ in cell_keys(plain)} | {k for _, k, _ in cell_keys(chat)}) == 8
    with pytest.raises(ConfigError, match="shared.prompt 'chat' is not one of"):
        load_spec(write_spec(tmp_path / "c", extra={"shared": {**yaml_shared(plain), "prompt": "chat"}}))


def test_contract_k_is_the_number_of_passages_the_qa_tasks_retrieve(tmp_path):
    """The model argument k takes the top k of the attached passages: a contract k: 3 on a task that retrieves 5
    showed the model 3 passages while recall@k, gold@k, the noise share and the question pages counted 5. The
    cell now tells a QA task to retrieve k (task metadata hits); LM tasks keep their depth unless k is smaller;
    gold-only tasks and contracts equal to the task's own number change nothing (run keys stay as they were)."""
    from leaderboards.spec import REPO_ROOT

    def cells(k, name):
        p = tmp_path / f"{name}.yaml"
        p.write_text(yaml_dump({"name": name, "shared": {"model_args": {"pretrained": "smollm2-135m-instruct", "k": k}, "limit": 4},
                                "tasks": ["nq_oracle_bm25", "nq_oracle_bm25_noise60", "nq_oracle_gold", "wiki_lm_bm25"],
                                "seeds": [1], "methods": [{"name": "rag-standard", "model": "rag-standard"}]}))
        spec = load_spec(p)
        return spec, {c.task.task: (c.hits, c.task_metadata(), c.config().get("hits")) for c in spec.cells()}

    spec, got = cells(3, "k3")
    assert got == {"nq_oracle_bm25": (3, {"hits": 3}, 3), "nq_oracle_bm25_noise60": (3, {"hits": 3}, 3),
                   "nq_oracle_gold": (None, {}, None), "wiki_lm_bm25": (None, {}, None)}
    assert "hits.nq_oracle_bm25: 3 (passages the task retrieves, = what the model is given)" in spec.contract_lines()
    assert cells(2, "k2")[1]["wiki_lm_bm25"][0] == 2 and cells(10, "k10")[1]["nq_oracle_bm25"][0] == 10
    assert {v[0] for v in cells(5, "k5")[1].values()} == {None}
    for committed in ("ci", "nq-wiki-12k", "nq-wiki-12k-v2"):
        assert {c.hits for c in load_spec(REPO_ROOT / "leaderboards" / "specs" / f"{committed}.yaml").cells()} == {None}


def test_contract_k_reaches_the_task(tmp_path):
    """End to end: the runner passes hits to the task, whose docs then carry exactly k passages."""
    inc = tmp_path / "tasks" / "toy_hits"
    shutil.copytree(FIX / "tasks" / "toy_qa", inc)
    (inc / "toy_qa_noise67.yaml").unlink()
    (inc / "utils.py").write_text((inc / "utils.py").read_text() + (
        "\n\ndef load_hits(**kwargs):\n"
        "    rows = [dict(r, ctxs=r['ctxs'][: int(kwargs['hits'])]) for r in _rows(0.0)]\n"
        "    return datasets.DatasetDict({'test': datasets.Dataset.from_list(rows)})\n"))
    text = (inc / "toy_qa.yaml").read_text().replace("task: toy_qa", "task: toy_hits").replace("utils.load_clean", "utils.load_hits")
    (inc / "toy_qa.yaml").write_text(text.replace("metadata: {version: 1.0}", "metadata: {version: 1.0, dataset: toy, hits: 3}"))
    spec = load_spec(write_spec(tmp_path, tasks=["toy_hits"], include=tmp_path / "tasks", limit=4,
                                methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}],
                                extra={"shared": {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 2},
                                                  "gen_kwargs": {"max_gen_toks": 8}, "limit": 4}}))
    assert [c.hits for c in spec.cells()] == [2]
    run_spec(spec, tmp_path / "runs", progress=False)
    samples = [json.loads(line) for d in (tmp_path / "runs").iterdir() if d.is_dir()
               for f in d.glob("samples_*.jsonl") for line in f.read_text().splitlines()]
    assert len(samples) == 4 and {len(s["doc"]["ctxs"]) for s in samples} == {2}


def yaml_dump(obj) -> str:
    import yaml

    return yaml.safe_dump(obj, sort_keys=False)


def test_a_selection_runs_only_its_cells_into_the_whole_specs_run_folders(tmp_path, monkeypatch):
    """``run --methods/--tasks``: a grid in parts. The selected cells run (here with a helper process, which must
    get the selection too) into the folders the whole spec keys them by; the whole spec's run then runs only
    the rest, and its report has all cells."""
    from leaderboard_helpers import subprocess_env

    path = write_spec(tmp_path, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "none", "model": TOY, "model_args": {"mode": "none"}},
        {"name": "vote", "model": TOY, "model_args": {"mode": "vote"}},
    ])
    whole = load_spec(path)
    keys = {c.cell_id: k for c, k, _ in cell_keys(whole)}
    part = whole.select(methods=["vote", "none"], tasks=["toy_qa"])
    assert part.selection == {"methods": ("none", "vote"), "tasks": ("toy_qa",)}  # spec order
    assert [c.cell_id for c in part.cells()] == ["none/toy_qa/seed1", "vote/toy_qa/seed1"]  # spec order
    assert {c.cell_id: k for c, k, _ in cell_keys(part)} == {c: keys[c] for c in ("none/toy_qa/seed1", "vote/toy_qa/seed1")}
    monkeypatch.setenv("PYTHONPATH", subprocess_env(tmp_path / "cache")["PYTHONPATH"])
    run_spec(part, tmp_path / "runs", progress=False, jobs=2)
    done = {p.parent.name for p in (tmp_path / "runs").glob("*/DONE")}
    assert done == {keys["none/toy_qa/seed1"], keys["vote/toy_qa/seed1"]}  # the helper ran nothing else
    rest = run_spec(whole, tmp_path / "runs", progress=False)
    assert sorted(rest.skipped) == ["none/toy_qa/seed1", "vote/toy_qa/seed1"] and len(rest.ran) == 4
    # the CLI: comma-separated names, the whole spec's report after a selected run
    assert lb_main(["run", str(path), "--runs-dir", str(tmp_path / "runs"), "--no-progress", "--methods", "standard",
                    "--report"]) == 0
    rows = json.loads((tmp_path / "runs" / "reports" / "toy" / "leaderboard.json").read_text())["rows"]
    assert len(rows) == 6 and not any(r["missing"] for r in rows)


@pytest.mark.parametrize("select, message", [
    ({"methods": ["non"]}, r"leaderboard run --methods: 'non' is not in the spec .*toy.yaml \(did you mean 'none'\?\); "
                           r"have \['standard', 'none'\]"),
    ({"tasks": ["toy_qa_noise"]}, r"--tasks: 'toy_qa_noise' is not in the spec .*\(did you mean 'toy_qa_noise67'\?\)"),
    ({"models": ["smollm2"]}, r"--models: the spec .*toy.yaml has no models: list \(one implicit model\); drop --models"),
    ({"methods": ["NONE"]}, r"--methods: 'NONE' is not in the spec .*\(did you mean 'none'\?\)"),  # case: no suggestion
    ({"methods": ["Standrd"]}, r"--methods: 'Standrd' is not in the spec .*\(did you mean 'standard'\?\)"),
])
def test_a_selection_of_names_not_in_the_spec_is_refused(tmp_path, select, message):
    spec = load_spec(write_spec(tmp_path))
    with pytest.raises(ConfigError, match=message):
        spec.select(**select)


def test_a_selection_without_cells_is_refused(tmp_path):
    """A model limited to some tasks, selected with another task only: no cell, a one-line error (not a run of 0 cells)."""
    spec = load_spec(write_spec(tmp_path, extra={"models": [
        {"name": "a", "shared": {"model_args": {"pretrained": str(FIX / "toy_weights.bin")}}, "tasks": ["toy_qa"]},
        {"name": "b", "shared": {"model_args": {"pretrained": str(FIX / "toy_weights.bin")}}},
    ]}))
    assert len(spec.select(models=["a"]).cells()) == 2
    with pytest.raises(ConfigError, match=r"--models a --tasks toy_qa_noise67: selects no cell of the spec"):
        spec.select(models=["a"], tasks=["toy_qa_noise67"])


def test_a_selections_report_lists_the_cells_outside_it_as_missing_and_the_summary_stays_last(tmp_path, capsys):
    """``run --methods X --report`` with the other methods' cells unfinished used to run X's cells, then stop on the
    whole spec's report ("4 of 6 cells are not finished", exit 2) without the run summary. The report is the whole
    spec's with the unfinished cells missing (as ``report --allow-missing``); the summary JSON is the last line."""
    path = write_spec(tmp_path, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "none", "model": TOY, "model_args": {"mode": "none"}},
        {"name": "vote", "model": TOY, "model_args": {"mode": "vote"}},
    ])
    runs = tmp_path / "runs"
    capsys.readouterr()
    assert lb_main(["run", str(path), "--runs-dir", str(runs), "--no-progress", "--methods", "standard", "--report"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-5:-1] == [f"report: {runs / 'reports' / 'toy'}",
                            "Cells with results: 2 of 6; 4 missing (not finished in the run folders when this report was "
                            "built; their values show as -):", "  toy_qa: none, vote", "  toy_qa_noise67: none, vote"]
    summary = json.loads(lines[-1])
    assert summary["ran"] == ["standard/toy_qa/seed1", "standard/toy_qa_noise67/seed1"]
    assert summary["selection"] == {"methods": ["standard"]}
    rows = json.loads((runs / "reports" / "toy" / "leaderboard.json").read_text())["rows"]
    assert sorted((r["method"], r["task"]) for r in rows if r["missing"]) == [
        ("none", "toy_qa"), ("none", "toy_qa_noise67"), ("vote", "toy_qa"), ("vote", "toy_qa_noise67")]
    # without a selection an unfinished cell still stops the report (run --report promises the whole grid)
    with pytest.raises(IncompleteRunError, match="3 of 6 cells are not finished"):
        lb_main(["run", str(path), "--runs-dir", str(runs), "--no-progress", "--max-cells", "1", "--report"])


def test_a_selection_option_given_twice_adds_up(tmp_path, capsys):
    """``--tasks toy_qa --tasks toy_qa_noise67`` kept only the last (one task); repeats add up, in spec order."""
    from leaderboards.cli import _parser

    args = _parser().parse_args(["run", "s.yaml", "--tasks", "toy_qa_noise67", "--tasks", "toy_qa,toy_qa_noise67",
                                 "--methods", "none"])
    assert args.tasks == ["toy_qa_noise67", "toy_qa", "toy_qa_noise67"] and args.methods == ["none"]
    spec = load_spec(write_spec(tmp_path))
    part = spec.select(tasks=args.tasks, methods=args.methods)
    assert part.selection == {"methods": ("none",), "tasks": ("toy_qa", "toy_qa_noise67")}
    assert [c.cell_id for c in part.cells()] == ["none/toy_qa/seed1", "none/toy_qa_noise67/seed1"]
    capsys.readouterr()
    assert lb_main(["run", str(spec.path), "--runs-dir", str(tmp_path / "runs"), "--estimate",
                    "--tasks", "toy_qa_noise67", "--tasks", "toy_qa", "--methods", "none"]) == 0
    est = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert est["cells_total"] == 2 and est["selection"] == {"methods": ["none"], "tasks": ["toy_qa", "toy_qa_noise67"]}


def test_the_estimate_and_the_run_summary_name_the_selection(toy_copy, capsys, caplog):
    """A selection's estimate said "leaderboard toy: 2 of 2 cells done" and ``complete: true``, and its run "all 2
    cells done", as if the whole spec were; they name the selection (and only then: whole-spec output unchanged)."""
    import logging

    spec, runs = toy_copy
    capsys.readouterr()
    assert lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--estimate", "--methods", "standard"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("leaderboard toy (selection: --methods standard): 2 of 2 cells done; ")
    est = json.loads(lines[-1])
    assert est["selection"] == {"methods": ["standard"]} and est["cells_total"] == 2 and est["complete"] is True
    with caplog.at_level(logging.INFO, logger="leaderboards.runner"):
        assert lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--no-progress", "--methods", "standard",
                        "--tasks", "toy_qa"]) == 0
    assert f"leaderboard toy (selection: --methods standard --tasks toy_qa): all 1 cells done in {runs}" in caplog.text
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["selection"] == {"methods": ["standard"], "tasks": ["toy_qa"]} and summary["skipped"] == [
        "standard/toy_qa/seed1"]
    # the whole spec: the output it always had
    assert lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--estimate"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("leaderboard toy: 4 of 4 cells done; ") and "selection" not in json.loads(lines[-1])
    assert lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--no-progress"]) == 0
    assert "selection" not in json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_selection_is_refused_when_the_whole_spec_has_two_methods_of_one_configuration(tmp_path):
    """Methods A and B run the same configuration: ``--methods B`` used to run B's cells (the whole spec refused them
    only later). The whole spec's methods are checked before a selection runs or is estimated."""
    path = write_spec(tmp_path, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "A", "model": TOY, "model_args": {"mode": "vote"}},
        {"name": "B", "model": TOY, "model_args": {"mode": "vote"}},
    ])
    part = load_spec(path).select(methods=["B"])
    message = r"leaderboard spec .*toy.yaml: methods 'A' and 'B' run the same configuration"
    with pytest.raises(ConfigError, match=message):
        run_spec(part, tmp_path / "runs", progress=False)
    assert not any((tmp_path / "runs").glob("*/DONE"))
    with pytest.raises(ConfigError, match=message):
        lb_main(["run", str(path), "--runs-dir", str(tmp_path / "runs"), "--estimate", "--methods", "B"])


def test_a_selection_logs_the_models_it_leaves_without_a_cell(tmp_path, caplog):
    """``--tasks nq_oracle_gold`` on the v2 spec selects only SmolLM2's cells (Gemma's tasks: list excludes it): one
    INFO line names the models without a cell."""
    import logging

    weights = str(FIX / "toy_weights.bin")
    spec = load_spec(write_spec(tmp_path, extra={"models": [
        {"name": "a", "shared": {"model_args": {"pretrained": weights}}, "tasks": ["toy_qa"]},
        {"name": "b", "shared": {"model_args": {"pretrained": weights}}},
    ]}))
    with caplog.at_level(logging.INFO, logger="leaderboards.spec"):
        part = spec.select(tasks=["toy_qa_noise67"])
        assert {c.model_name for c in part.cells()} == {"b"}
        assert [r.getMessage() for r in caplog.records] == [
            "leaderboard toy --tasks toy_qa_noise67: no cell for model(s) a (their own tasks:/methods: lists exclude "
            "the selection)"]
        caplog.clear()
        spec.select(tasks=["toy_qa"])  # both models have cells: nothing logged
        assert not caplog.records


def test_run_checks_every_methods_arguments_before_the_first_cell(tmp_path):
    """A typo in the model arguments of the last method stops the run before any cell runs (it used to surface
    when that method's first cell was built, after every cell before it)."""
    spec = load_spec(write_spec(tmp_path, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "tokrag", "model": "tokrag", "model_args": {"rat": 2.0}},
    ]))
    with pytest.raises(ConfigError, match=r"leaderboard spec .*toy.yaml: method tokrag: --model tokrag: unknown model "
                                          r"argument\(s\) 'rat' \(did you mean 'rate'\?\)"):
        run_spec(spec, tmp_path / "runs", progress=False)
    assert not any((tmp_path / "runs").glob("*/DONE"))  # the toy cells before it did not run


def _toy_then_tokrag_on_smollm2(folder: Path, model_args: dict):
    """A toy spec whose second method is tokrag on SmolLM2 (30 layers, 49152 tokens) with ``model_args``."""
    return load_spec(write_spec(folder, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "tokrag", "model": "tokrag", "model_args": model_args, "specific": {"pretrained": "smollm2-135m-instruct"}},
    ]))


@pytest.mark.parametrize("model_args, message", [
    ({"layer": 99}, r"layer=99 is outside the model's 30 layers \(0..29\)"),
    ({"layer": "dynamic", "js_min_layer": 30}, r"js_min_layer=30 is outside the model's 30 layers \(0..29\)"),
    ({"layer": "dynamic", "layer_fallback": 45}, r"layer_fallback=45 is outside the model's 30 layers \(0..29\)"),
])
def test_a_layer_outside_the_model_is_refused_before_the_first_cell(tmp_path, model_args, message):
    """SmolLM2 has 30 layers: layer=99 used to pass the pre-run check and fail only when its cell loaded the model,
    after the cells before it. The depth comes from the model's config; no weights are loaded."""
    spec = _toy_then_tokrag_on_smollm2(tmp_path, model_args)
    with pytest.raises(ConfigError, match=rf"^leaderboard spec .*toy.yaml: method tokrag: --model tokrag: {message}$"):
        run_spec(spec, tmp_path / "runs", progress=False)
    assert not any((tmp_path / "runs").glob("*/DONE"))  # the toy cells before it did not run
    # a layer inside the model passes (the last one, and from the top)
    from leaderboards.runner import check_cell_args

    for ok in ({"layer": 29}, {"layer": -30}, {"layer": "dynamic", "js_min_layer": 29, "layer_fallback": 29}):
        ok_spec = _toy_then_tokrag_on_smollm2(tmp_path / "ok", ok)
        check_cell_args(ok_spec, ok_spec.cells())


GEMMA_PRESET = Path(__file__).resolve().parents[1] / "leaderboards" / "presets" / "tokrag-gemma-3-270m.json"


@pytest.mark.parametrize("model_args, message", [
    ({"rag_top": 60000}, r"--model tokrag: rag_top=60000 exceeds the model's vocabulary of 49152 tokens"),
    ({"pure_top": 49153}, r"--model tokrag: pure_top=49153 exceeds the model's vocabulary of 49152 tokens"),
    ({"preset": str(GEMMA_PRESET)}, rf"preset={re.escape(str(GEMMA_PRESET))}: made for 18 layers, this model has 30; "
                                    r"use a preset calibrated for this model \(tokrag calibrate --model "
                                    r"smollm2-135m-instruct --split dev\)"),
])
def test_a_top_above_the_vocabulary_or_a_preset_of_another_depth_is_refused_before_the_first_cell(
        tmp_path, model_args, message):
    """SmolLM2 has 49152 tokens and 30 layers: rag_top=60000, or the Gemma 3 preset (18 layers), used to pass the
    pre-run check and fail only when its cell loaded the model, after the cells before it. The vocabulary size
    and the depth come from the model's config; no weights are loaded."""
    spec = _toy_then_tokrag_on_smollm2(tmp_path, model_args)
    with pytest.raises(ConfigError, match=rf"^leaderboard spec .*toy.yaml: method tokrag: {message}$"):
        run_spec(spec, tmp_path / "runs", progress=False)
    assert not any((tmp_path / "runs").glob("*/DONE"))  # the toy cells before it did not run
    # the whole vocabulary and the model's own preset pass
    from leaderboards.runner import check_cell_args

    own = GEMMA_PRESET.with_name("tokrag-smollm2-135m-instruct.json")
    for ok in ({"rag_top": 49152, "pure_top": 49152}, {"preset": str(own)}):
        ok_spec = _toy_then_tokrag_on_smollm2(tmp_path / "ok", ok)
        check_cell_args(ok_spec, ok_spec.cells())


@pytest.mark.parametrize("pretrained, message", [
    ("/nonexistent/model", r"pretrained='/nonexistent/model': folder /nonexistent/model does not exist; pass a local folder"),
    ("./nonexistent", r"pretrained='./nonexistent': folder {tmp}/nonexistent does not exist; pass a local folder"),
    ("", r"model argument pretrained= is required: pass a local folder"),
    ("./empty", r"pretrained='./empty': folder {tmp}/empty has no config.json \(not a Hugging Face model folder\)"),
    ("./broken", r"pretrained='./broken': {tmp}/broken/config.json is not a model config \(not JSON, line 1: "
                 r"Expecting property name enclosed in double quotes\); fix it or point pretrained= at a complete "
                 r"model folder"),
    ("./listed", r"pretrained='./listed': {tmp}/listed/config.json is not a model config \(a JSON list, not an object\)"),
    ("./listed/config.json", r"pretrained='./listed/config.json': {tmp}/listed/config.json is a file, not a model folder"),
])
def test_a_pretrained_the_load_would_refuse_is_refused_before_the_first_cell(tmp_path, monkeypatch, pretrained, message):
    """A path that does not exist, an empty name, a folder without config.json or with a malformed one passed the
    pre-run check: the run finished the cells before it and failed at its load. The load's own message, prefixed by
    the spec and method; nothing is loaded or downloaded."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{num_hidden_layers: 30}")
    (tmp_path / "listed").mkdir()
    (tmp_path / "listed" / "config.json").write_text("[]")
    spec = load_spec(write_spec(tmp_path, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "tokrag", "model": "tokrag", "specific": {"pretrained": pretrained}},
    ]))
    pattern = message.replace("{tmp}", re.escape(str(tmp_path)))
    with pytest.raises(ConfigError, match=rf"^leaderboard spec .*toy.yaml: method tokrag: {pattern}[^\n]*$"):
        run_spec(spec, tmp_path / "runs", progress=False)
    assert not any((tmp_path / "runs").glob("*/DONE"))  # the toy cells before it did not run


def test_a_hub_id_or_a_name_without_a_path_shape_passes_the_pre_run_check(tmp_path, monkeypatch):
    """Online, hub ids (downloaded at run time) and other names without a path shape are left to the load; offline,
    one not in the local Hugging Face cache is refused before any cell (870d2ba, s53 u2 F1: the load refuses it)."""
    from leaderboards.runner import check_cell_args
    from retrieval.errors import OfflineError

    for pretrained in ("tokrag-test/not-cached-anywhere", "not-cached-anywhere"):
        spec = load_spec(write_spec(tmp_path / pretrained.replace("/", "_"), methods=[
            {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
            {"name": "tokrag", "model": "tokrag", "specific": {"pretrained": pretrained}}]))
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        check_cell_args(spec, spec.cells())
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        with pytest.raises(OfflineError, match=rf"pretrained='{pretrained}' is a hub id, but HF_HUB_OFFLINE=1 is set "
                                               r"and the model is not in the local Hugging Face cache"):
            check_cell_args(spec, spec.cells())


@pytest.mark.parametrize("model_args, message", [
    ({"batch_size": 0}, r"methods\[1\]\.specific\.batch_size must be an integer >= 1, got 0"),  # used to pass
    ({"device": "7"}, r"methods\[1\]\.specific\.device '7' is not a device torch knows"),  # a traceback at load
])
def test_batch_size_and_device_in_a_methods_model_args_are_checked_before_the_first_cell(tmp_path, model_args, message):
    """A method's own batch_size/device, which wins over the spec's shared ones: since s61 d1 they are contract keys,
    written under the method's ``specific`` (its ``model_args`` refuse them) and checked as the contract's when the
    spec is read (before: at the run's pre-checks, ``method tokrag: --model tokrag: model argument batch_size=0 is
    invalid``)."""
    with pytest.raises(ConfigError, match=rf"leaderboard spec .*toy.yaml: {message}"):
        spec = load_spec(write_spec(tmp_path, methods=[
            {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
            {"name": "tokrag", "model": "tokrag", "specific": model_args},
        ]))
        run_spec(spec, tmp_path / "runs", progress=False)
    assert not any((tmp_path / "runs").glob("*/DONE"))


def yaml_shared(spec) -> dict:
    """The ``shared`` block of a parsed spec, as written in its YAML."""
    import yaml

    return yaml.safe_load(spec.path.read_text())["shared"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"methods": [{"name": "a", "model": TOY, "model_args": {"k": 5}}]}, "must be written under 'specific:'"),
        ({"methods": [{"name": "a", "model": TOY}, {"name": "a", "model": TOY}]}, "duplicate method names"),
        ({"reference": "nope"}, "reference 'nope' is not one of the methods"),
        ({"seeds": ["x"]}, "seeds must be a non-empty list of integers"),
        ({"tokens": 3}, "top level: unknown key(s) 'tokens'"),
        ({"bootstrp": {"iters": 10}}, "top level: unknown key(s) 'bootstrp' (did you mean 'bootstrap'?)"),
        ({"tasks": [{"task": "toy_qa", "noise": 1.5}]}, "noise must be a ratio in [0, 1]"),
        ({"bootstrap": {"iter": 1000}}, "bootstrap: unknown key(s) 'iter' (did you mean 'iters'?)"),
        ({"shared": {"gen_kwargs": {"max_gen_tok": 16}}},
         "shared.gen_kwargs: unknown key(s) 'max_gen_tok' (did you mean 'max_gen_toks'?)"),
        ({"methods": [{"name": "a", "modle": TOY}]}, "methods[0]: unknown key(s) 'modle' (did you mean 'model'?)"),
        ({"methods": [{"name": "a", "model": TOY, "gen_kwargs": {"temprature": 0.5}}]},
         "methods[0].gen_kwargs: unknown key(s) 'temprature' (did you mean 'temperature'?)"),
    ],
)
def test_spec_rejects_bad_input(tmp_path, change, message):
    p = write_spec(tmp_path, extra=change)
    with pytest.raises(ConfigError) as exc:
        load_spec(p)
    assert message in str(exc.value) and str(p) in str(exc.value)


# --------------------------------------------------------------------------- cache keys

def test_two_methods_on_the_same_prompts_never_share_a_run_folder(toy_run):
    spec, runs, _ = toy_run
    keys = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    assert len(set(keys.values())) == len(keys) == 4
    a = (runs / keys["standard/toy_qa/seed1"] / "samples_toy_qa.jsonl").read_text().splitlines()
    b = (runs / keys["none/toy_qa/seed1"] / "samples_toy_qa.jsonl").read_text().splitlines()
    ja, jb = json.loads(a[1]), json.loads(b[1])
    assert ja["arguments"] == jb["arguments"]  # same prompt ...
    assert ja["resps"] == [["teal"]] and jb["resps"] == [["I do not know"]]  # ... each method's own answer


def test_key_changes_with_weights_task_settings_and_seed(tmp_path):
    w = tmp_path / "w.bin"
    w.write_bytes(b"weights A")
    inc = tmp_path / "tasks"
    shutil.copytree(FIX / "tasks", inc, ignore=shutil.ignore_patterns("__pycache__"))

    def key(**kw) -> str:
        spec = load_spec(write_spec(tmp_path / "s", weights=w, include=inc, tasks=["toy_qa"], **kw))
        return cell_keys(spec)[0][1]

    k0 = key()
    assert key() == k0
    assert key(seeds=(2,)) != k0
    assert key(limit=11) != k0
    w.write_bytes(b"weights B")  # same path, new content
    k1 = key()
    assert k1 != k0
    yml = inc / "toy_qa" / "toy_qa.yaml"
    yml.write_text(yml.read_text().replace("Answer:", "Answer briefly:"))  # a prompt change
    assert key() != k1


# --------------------------------------------------------------------------- run, resume, report

def test_run_records_results_samples_and_cost(toy_run):
    spec, runs, summary = toy_run
    assert sorted(summary.ran) == sorted(c.cell_id for c in spec.cells())
    keys = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    d = runs / keys["standard/toy_qa/seed1"]
    assert sorted(p.name for p in d.iterdir()) == ["DONE", "config.json", "cost.json", "provenance.json", "results.json", "samples_toy_qa.jsonl"]
    cost = json.loads((d / "cost.json").read_text())
    # one-word answers: prompt pass + 1 step each; 12 questions
    assert (cost["forward_passes"], cost["generated_tokens"], cost["n_samples"]) == (24, 12, 12)
    assert cost["wall_s"] > 0 and cost["peak_rss_mib"] > 50
    res = json.loads((d / "results.json").read_text())["results"]["toy_qa"]
    assert res["em,none"] == 0.75
    cost_none = json.loads((runs / keys["none/toy_qa/seed1"] / "cost.json").read_text())
    assert cost_none["forward_passes"] == 12 * 5  # "I do not know": 4 words
    prov = json.loads((d / "provenance.json").read_text())
    assert prov["retrieval"]["corpus_fingerprint"] == "toycorpus01" and prov["versions"]["lm_eval"] == "0.4.13"


def test_every_cell_records_torchs_environment_report_collected_once(toy_run):
    """lm-eval's ``pretty_env_info`` (torch's collect_env report) is in every cell's results.json; the runner
    collects it once per process (a dozen subprocesses each time) and puts torch's function back afterwards."""
    import torch.utils.collect_env as collect_env

    from leaderboards import runner

    spec, runs, _ = toy_run
    infos = {json.loads((runs / k / "results.json").read_text())["pretty_env_info"] for _, k, _ in cell_keys(spec)}
    assert len(infos) == 1 and "PyTorch version: 2.13.0" in infos.pop()
    assert runner._ENV_INFO and collect_env.get_pretty_env_info.__name__ == "get_pretty_env_info"


def test_second_run_does_nothing_and_report_is_byte_identical(toy_copy, tmp_path):
    spec, runs = toy_copy
    again = run_spec(spec, runs, progress=False)
    assert again.ran == [] and again.forward_passes == 0 and len(again.skipped) == 4
    a = report_bytes(build_report(spec, runs, tmp_path / "r1"))
    b = report_bytes(build_report(spec, runs, tmp_path / "r2"))
    assert a == b
    assert {"leaderboard.md", "leaderboard.csv", "leaderboard.json", "index.html", "robustness_toy_qa.png",
            "answer_match_per_task.png"} <= set(a)


def test_report_numbers_are_hand_computed(toy_run, tmp_path):
    spec, runs, _ = toy_run
    out = build_report(spec, runs, tmp_path / "r")
    data = json.loads((out / "leaderboard.json").read_text())
    rows = {(r["method"], r["task"]): r for r in data["rows"]}
    assert rows[("standard", "toy_qa")]["metrics"]["em"]["mean"] == 0.75
    assert rows[("standard", "toy_qa_noise67")]["metrics"]["answer_match"]["mean"] == 0.25
    assert rows[("none", "toy_qa")]["metrics"]["em"]["mean"] == 0.0
    lo, hi = rows[("standard", "toy_qa")]["metrics"]["em"]["lo"], rows[("standard", "toy_qa")]["metrics"]["em"]["hi"]
    assert 0.4 < lo < 0.75 < hi <= 1.0
    paired = rows[("none", "toy_qa")]["paired"]["standard"]["em"]
    assert paired["diff"] == -0.75 and paired["hi"] < 0 and paired["p"] < 0.01 and paired["n"] == 12
    assert paired["p_holm"] == paired["p"] and paired["family"] == 1  # one pair of methods: Holm changes nothing
    assert rows[("none", "toy_qa")]["cost"]["forward_passes"] == 60
    md = (out / "leaderboard.md").read_text()
    assert "## Fairness contract" in md and "- model_args.k: 3" in md
    assert "| standard | toy_qa | 0.00 | 12 | 0.750 [" in md
    # the header names the test each p comes from: EM's 9 discordant questions are McNemar's exact test
    assert paired["p"] == pytest.approx(2 * 0.5 ** 9)
    assert ("exact where every differing question differs by the same amount (a 0/1 metric such as EM or answer "
            "match: McNemar's test on the discordant questions) or at most 16 questions differ, Monte Carlo otherwise"
            in md)
    csv_head = (out / "leaderboard.csv").read_text().splitlines()[0].split(",")
    assert csv_head[:5] == ["method", "task", "noise", "n", "specific_settings"] and "delta_em_vs_standard_p_holm" in csv_head


def test_unfinished_or_corrupted_cells_are_never_read_and_are_redone(toy_copy, tmp_path):
    spec, runs = toy_copy
    keys = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    (runs / keys["none/toy_qa/seed1"] / "DONE").unlink()  # as if killed before the marker
    samples = runs / keys["standard/toy_qa_noise67/seed1"] / "samples_toy_qa_noise67.jsonl"
    samples.write_bytes(samples.read_bytes()[:-40])  # truncated after the run
    with pytest.raises(IncompleteRunError) as exc:
        build_report(spec, runs, tmp_path / "r")
    msg = str(exc.value)
    assert "2 of 4 cells are not finished" in msg and "no DONE marker" in msg and "checksum mismatch" in msg
    assert "tokrag leaderboard run" in msg
    shutil.rmtree(runs / keys["standard/toy_qa/seed1"])  # never run: said so, not "did not finish"
    with pytest.raises(IncompleteRunError) as exc:
        build_report(spec, runs, tmp_path / "r")
    assert "3 of 4 cells are not finished" in str(exc.value)
    assert f"{keys['standard/toy_qa/seed1']}: not run yet (no run folder)" in str(exc.value)
    again = run_spec(spec, runs, progress=False)
    assert sorted(again.ran) == ["none/toy_qa/seed1", "standard/toy_qa/seed1", "standard/toy_qa_noise67/seed1"]
    build_report(spec, runs, tmp_path / "r")


@pytest.mark.parametrize("files, why", [
    (None, r"'files' must map each file of the cell to its SHA-256, got a JSON null"),  # was AttributeError
    ([], r"'files' must map each file of the cell to its SHA-256, got a JSON list"),  # was AttributeError
    ({"config.json": 1}, r"'files' must map each file of the cell to its SHA-256, got 'config.json': a JSON number"),
    ({}, r"does not list config.json, results.json, cost.json, provenance.json"),  # passed; load_cell: FileNotFoundError
])
def test_a_done_manifest_of_the_wrong_shape_is_unreadable_not_a_traceback(files, why, toy_copy):
    spec, runs = toy_copy
    cell = runs / {c.cell_id: k for c, k, _ in cell_keys(spec)}["none/toy_qa/seed1"]
    done = json.loads((cell / "DONE").read_text())
    (cell / "DONE").write_text(json.dumps({**done, "files": files}))
    with pytest.raises(IncompleteRunError, match=rf"DONE: unreadable manifest \({why}\); re-run the cell$"):
        verify_cell_dir(cell)
    listed = {k: v for k, v in done["files"].items() if k != "results.json"}  # and results.json deleted
    (cell / "DONE").write_text(json.dumps({**done, "files": listed}))
    (cell / "results.json").unlink()
    with pytest.raises(IncompleteRunError, match=r"DONE: unreadable manifest \(does not list results.json\); re-run"):
        verify_cell_dir(cell)


def test_failing_cell_leaves_no_done_marker(tmp_path):
    p = write_spec(tmp_path, tasks=["toy_qa"], methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first", "fail_on": "q5"}}])
    spec = load_spec(p)
    with pytest.raises(RuntimeError, match="asked to fail on q5"):
        run_spec(spec, tmp_path / "runs", progress=False)
    (key,) = [k for _, k, _ in cell_keys(spec)]
    assert not (tmp_path / "runs" / key / "DONE").exists()
    with pytest.raises(IncompleteRunError):
        build_report(spec, tmp_path / "runs", tmp_path / "r")


# --------------------------------------------------------------------------- check

def test_check_passes_then_fails_beyond_tolerance(toy_run, tmp_path, capsys):
    spec, runs, _ = toy_run
    base = tmp_path / "baseline.json"
    write_baseline(spec, runs, base)
    b = json.loads(base.read_text())
    assert b["cells"]["standard/toy_qa/seed1"]["em"] == 0.75 and b["tolerances"]["em"]["abs"] == 0.083334  # 1/12
    lines = check_against_baseline(spec, runs, base)
    assert lines and all(x.ok for x in lines)
    assert lb_main(["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs)]) == 0
    # within tolerance: still OK
    b["cells"]["standard/toy_qa/seed1"]["em"] = 0.75 + 0.08
    base.write_text(json.dumps(b))
    assert lb_main(["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs)]) == 0
    # beyond tolerance: FAIL and exit 1
    b["cells"]["standard/toy_qa/seed1"]["em"] = 0.75 + 0.09
    base.write_text(json.dumps(b))
    capsys.readouterr()
    assert lb_main(["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs)]) == 1
    out = capsys.readouterr().out
    assert "FAIL standard/toy_qa/seed1  em = 0.7500 (baseline 0.8400, |Δ| 0.0900 > 0.0833 fraction of questions)" in out
    assert "OK   standard/toy_qa/seed1  f1 = 0.7500" in out
    # a cell the runs lack is a failure too
    b["cells"]["tokrag/toy_qa/seed1"] = {"em": 0.5}
    base.write_text(json.dumps(b))
    assert not all(x.ok for x in check_against_baseline(spec, runs, base))
    # a cell of the spec that the baseline lacks (a method added to the spec) is named, not silently skipped
    del b["cells"]["tokrag/toy_qa/seed1"], b["cells"]["none/toy_qa_noise67/seed1"]
    b["cells"]["standard/toy_qa/seed1"]["em"] = 0.75
    base.write_text(json.dumps(b))
    capsys.readouterr()
    assert lb_main(["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "NEW  none/toy_qa_noise67/seed1  not in the baseline: not checked (accept its values with --write)" in out
    assert out.strip().splitlines()[-1].endswith(" 0 FAIL, 1 cells not in the baseline (not checked)")


def test_check_says_when_the_runs_scored_other_questions_than_the_baseline(toy_run3, tmp_path, capsys):
    """A baseline records each cell's number of questions (``n``); runs of the spec at another limit were compared
    metric by metric and failed as score regressions without a word about the questions (a new-user trial: the ci
    spec at limit 4 against the limit-20 baseline). Now one FAIL line says so and the metrics are not compared."""
    spec, runs = toy_run3
    base = tmp_path / "baseline.json"
    args = ["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs)]
    assert lb_main([*args, "--write"]) == 0
    b = json.loads(base.read_text())
    assert b["n"] == {"standard/toy_qa/seed1": 3}
    b["n"]["standard/toy_qa/seed1"] = 20
    base.write_text(json.dumps(b))
    capsys.readouterr()
    assert lb_main(args) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0] == ("FAIL standard/toy_qa/seed1  n = 3 questions (baseline 20): the runs scored other questions than "
                      "the baseline (another limit or question set), so its values are not compared; run the spec as "
                      "the baseline was written (its limit), or write a baseline for these runs with --write")
    assert out[-1] == "1 checks: 0 OK, 1 FAIL"
    del b["n"]  # a baseline written before n was recorded: compared as before
    base.write_text(json.dumps(b))
    assert lb_main(args) == 0
    for n, want in [({"standard/toy_qa/seed1": 0}, r"n\.standard/toy_qa/seed1 must be a number of questions >= 1, got the number 0; edit the file"),
                    ([3], r"'n' must be a mapping \{cell id: number of questions >= 1\}, got a list; edit the file")]:
        b["n"] = n
        base.write_text(json.dumps(b))
        with pytest.raises(ConfigError, match=want):
            check_against_baseline(spec, runs, base)


def test_check_rejects_a_malformed_baseline(toy_run, tmp_path):
    spec, runs, _ = toy_run
    bad = tmp_path / "b.json"
    bad.write_text('{"cells": {}}')
    with pytest.raises(ConfigError, match="expected keys 'cells' and 'tolerances'"):
        check_against_baseline(spec, runs, bad)



@pytest.fixture(scope="module")
def toy_run3(tmp_path_factory):
    """One cell, ``standard`` on ``toy_qa`` at limit 3: 2 of 3 answers right, means of 0.6666... (not exact at
    the 6 decimals a baseline stores)."""
    root = tmp_path_factory.mktemp("lb3")
    spec = load_spec(write_spec(root, tasks=["toy_qa"], limit=3,
                                methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]))
    run_spec(spec, root / "runs", progress=False)
    return spec, root / "runs"


def test_a_baseline_written_from_runs_passes_against_them_at_tolerance_0(toy_run3, tmp_path, capsys):
    """--write stores 0.666667; the check compared the full 0.6666... with it and failed at tolerance 0
    (``|Δ| 0.0000 > 0.0000``). Both sides are now rounded as written. The file gets the umask's mode (was 0600)."""
    spec, runs = toy_run3
    old_umask = os.umask(0o022)  # per process: restored below
    try:
        base = tmp_path / "baseline.json"
        args = ["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs)]
        assert lb_main([*args, "--write"]) == 0
        assert base.stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old_umask)
    b = json.loads(base.read_text())
    assert b["cells"] == {"standard/toy_qa/seed1": {"answer_match": 0.666667, "answer_recall": 1.0, "em": 0.666667, "f1": 0.666667}}
    b["tolerances"] = {m: {**t, "abs": 0} for m, t in b["tolerances"].items()}  # every metric at tolerance 0
    base.write_text(json.dumps(b))
    assert lb_main([*args, "--write"]) == 0 and json.loads(base.read_text())["tolerances"]["em"]["abs"] == 0  # kept
    capsys.readouterr()
    assert lb_main(args) == 0
    out = capsys.readouterr().out
    assert "OK   standard/toy_qa/seed1  em = 0.6667 (baseline 0.6667, |Δ| 0.0000 <= 0.0000 fraction of questions)" in out
    assert out.strip().splitlines()[-1] == "4 checks: 4 OK, 0 FAIL"
    # a hand-written baseline at full precision passes too; a difference of 1e-6 fails, and is shown
    b["cells"]["standard/toy_qa/seed1"]["em"] = 2 / 3
    b["cells"]["standard/toy_qa/seed1"]["f1"] = 0.666668
    base.write_text(json.dumps(b))
    lines = {x.metric: x for x in check_against_baseline(spec, runs, base)}
    assert lines["em"].ok and lines["em"].delta == 0.0 and not lines["f1"].ok
    assert lines["f1"].render() == ("FAIL standard/toy_qa/seed1  f1 = 0.666667 (baseline 0.666668, |Δ| 0.000001 > "
                                    "0.000000 mean token F1 (0-1))")


def test_the_average_column_of_one_task_says_1_task(toy_run3, tmp_path):
    spec, runs = toy_run3
    md = (build_report(spec, runs, tmp_path / "r") / "leaderboard.md").read_text()
    assert "| method | toy_qa (answer match) | average (answer match, 1 task) |" in md


# --------------------------------------------------------------------------- HTML

class _Checker(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.imgs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.imgs.append(dict(attrs)["src"])
        elif tag not in {"meta", "br", "link"}:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}> (open: {self.stack[-3:]})"
        self.stack.pop()


def test_html_is_well_formed_and_its_images_exist(toy_run, tmp_path):
    spec, runs, _ = toy_run
    out = build_report(spec, runs, tmp_path / "r")
    c = _Checker()
    c.feed((out / "index.html").read_text())
    assert c.stack == [] and len(c.imgs) >= 4
    for src in c.imgs:
        assert (out / src).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# the page in a real browser: tests/test_leaderboard_browser.py


# --------------------------------------------------------------------------- the committed specs

@pytest.mark.parametrize("name, n_cells", [("ci", 10), ("nq-wiki-12k", 35)])
def test_committed_specs_resolve_every_model_and_task(name, n_cells):
    spec = load_spec(Path(__file__).resolve().parents[1] / "leaderboards" / "specs" / f"{name}.yaml")
    keyed = cell_keys(spec)  # resolves every model in lm-eval's registry and every task YAML
    assert len(keyed) == n_cells and len({k for _, k, _ in keyed}) == n_cells
    assert {m.name for m in spec.methods} == {"rag-none", "rag-standard", "tokrag", "rag-replug", "rag-selfrag-filter"}
    assert spec.reference == "rag-standard" and spec.shared["model_args"]["pretrained"] == "smollm2-135m-instruct"
    assert {mat["model_target"] for _, _, mat in keyed} == {MODEL_CLASSES[m.model] for m in spec.methods}
    assert all(mat["model_target"].startswith("tokrag_model.methods.") for _, _, mat in keyed)


def test_ci_baseline_covers_every_ci_cell():
    root = Path(__file__).resolve().parents[1] / "leaderboards"
    spec = load_spec(root / "specs" / "ci.yaml")
    base = json.loads((root / "baselines" / "ci.json").read_text())
    assert set(base["cells"]) == {c.cell_id for c in spec.cells()}
    for cid, vals in base["cells"].items():
        assert {"em", "f1", "answer_match", "answer_recall"} <= set(vals), cid
        assert all(0.0 <= v <= 1.0 for v in vals.values()), cid
    # retrieval is shared: the recall of every method on a task is the same number
    for t in spec.tasks:
        recalls = {base["cells"][f"{m.name}/{t.task}/seed1234"]["answer_recall"] for m in spec.methods}
        assert len(recalls) == 1, (t.task, recalls)


def test_language_modelling_rows_use_lm_eval_aggregates(tmp_path):
    """toy_lm: -2 nats per word (standard) and -3 (none): word perplexity e^2 and e^3. The CI and the paired test
    resample / swap whole documents and recompute lm-eval's ratio: every document has the same per-word rate, so the
    CI is the point; none - standard loses on all 6 documents, so only 2 of the 2^6 swaps are as extreme."""
    import math

    spec = load_spec(write_spec(tmp_path, tasks=["toy_lm"]))
    run_spec(spec, tmp_path / "runs", progress=False)
    data = json.loads((build_report(spec, tmp_path / "runs", tmp_path / "r") / "leaderboard.json").read_text())
    rows = {r["method"]: r for r in data["rows"]}
    assert rows["standard"]["metrics"]["word_perplexity"]["mean"] == pytest.approx(math.exp(2.0))
    assert rows["none"]["metrics"]["word_perplexity"]["mean"] == pytest.approx(math.exp(3.0))
    wp = rows["standard"]["metrics"]["word_perplexity"]
    assert wp["lo"] == pytest.approx(math.exp(2.0)) and wp["hi"] == pytest.approx(math.exp(2.0)) and wp["n"] == 6
    assert rows["standard"]["n"] == 6
    n_words = sum(len(t.split()) for t in __import__("tests.leaderboard_fixtures.tasks.toy_lm.utils", fromlist=["TEXTS"]).TEXTS)
    n_bytes = sum(len(t.encode()) for t in __import__("tests.leaderboard_fixtures.tasks.toy_lm.utils", fromlist=["TEXTS"]).TEXTS)
    assert rows["standard"]["metrics"]["bits_per_byte"]["mean"] == pytest.approx(2.0 * n_words / (n_bytes * math.log(2)))
    p = rows["none"]["paired"]["standard"]["word_perplexity"]
    assert p["diff"] == pytest.approx(math.exp(3.0) - math.exp(2.0))
    assert (p["lo"], p["hi"]) == (pytest.approx(p["diff"]), pytest.approx(p["diff"]))
    assert p["p"] == pytest.approx(2 / 2**6) and p["p_holm"] == pytest.approx(2 / 2**6) and p["n"] == 6
    b = rows["none"]["paired"]["standard"]["bits_per_byte"]
    assert b["diff"] == pytest.approx(1.0 * n_words / (n_bytes * math.log(2))) and b["p"] == pytest.approx(2 / 2**6)
    assert b["lo"] < b["diff"] < b["hi"]  # words per byte differ between documents: resamples differ
    md = (tmp_path / "r" / "leaderboard.md").read_text()
    assert "Δ word ppl" in md and "Δ bits/byte" in md
    assert "## Results: mean [95% percentile bootstrap CI over questions (paragraphs for word ppl and bits/byte), " in md
    assert "against standard on the same questions (paragraphs for word ppl and bits/byte)" in md
    assert "None" not in md  # e.g. forward passes per generated token of an LM task (no generated tokens) reads "-"


def test_ratio_metric_documents_and_edge_cases():
    """Per-document (loglik, length) pairs as lm-eval logs them; a document of length 0 (an empty target: 0 bytes)
    is left out instead of making a resample 0/0; a single document gives its own ratio and p = 1."""
    import math

    import numpy as np

    from leaderboards.report import _per_document_ratio
    from leaderboards.stats import paired_ratio_test, ratio_ci

    samples = [{"doc_id": 0, "bits_per_byte": [-10.0, 5]}, {"doc_id": 1, "bits_per_byte": [-20.0, 8]},
               {"doc_id": 2, "bits_per_byte": [0.0, 0]}]
    docs = _per_document_ratio(samples, "bits_per_byte")
    assert docs == {0: (-10.0, 5.0), 1: (-20.0, 8.0)}
    ll, n = np.array([-10.0, -20.0]), np.array([5.0, 8.0])
    lo, hi = ratio_ci("bits_per_byte", ll, n, 200, 0.95, 0)
    assert math.isfinite(lo) and math.isfinite(hi) and lo <= 30 / 13 / math.log(2) <= hi
    assert _per_document_ratio([{"doc_id": 0, "bits_per_byte": 0.5}], "bits_per_byte") is None  # not a pair
    assert _per_document_ratio(samples, "answer_match") is None  # not a corpus ratio
    r = paired_ratio_test("word_perplexity", [-2.0], [1.0], [-3.0], [1.0], 200, 0.95, 0)
    assert r["diff"] == pytest.approx(math.exp(2) - math.exp(3)) and r["p"] == 1.0 and r["n"] == 1


def test_paired_test_is_exact_for_few_discordant_questions():
    import numpy as np

    from leaderboards.report import paired_test

    # 9 questions lost, 3 ties: only 2 of the 2^9 sign patterns are as extreme -> p = 2/512
    r = paired_test(np.array([-1.0] * 9 + [0.0] * 3), 500, 0.95, 3)
    assert r["diff"] == -0.75 and r["p"] == pytest.approx(2 / 512) and r["hi"] < 0
    # a single discordant question can never be significant
    assert paired_test(np.array([1.0] + [0.0] * 19), 500, 0.95, 3)["p"] == 1.0
    assert paired_test(np.zeros(10), 500, 0.95, 3) == {"diff": 0.0, "lo": 0.0, "hi": 0.0, "p": 1.0, "n": 10, "sd": 0.0,
                                                       "n_plus": 0, "n_minus": 0}


def test_paired_test_of_a_0_1_metric_is_exact_mcnemar_at_any_count():
    """Over 16 discordant questions the sign-flip test was Monte Carlo: 25 won vs 12 lost of 287 gave p from
    0.037 to 0.059 with the seed (exact 0.0470), and 60 lost of 60 gave the floor 2/1001 (exact 2/2^60), so
    Holm over 26 such pairs could never reach 0.05. Two-sided binomial: p = sum of C(m, j)/2^m over the j as
    far from m/2 as k or farther."""
    import numpy as np
    from math import comb

    from leaderboards.report import paired_test

    d = np.array([1.0] * 25 + [-1.0] * 12 + [0.0] * 250)
    by_hand = sum(comb(37, j) for j in range(38) if abs(j - 18.5) >= 6.5) / 2**37
    assert by_hand == pytest.approx(0.04703, abs=1e-5)
    assert [paired_test(d, 1000, 0.95, seed)["p"] for seed in (0, 1, 2, 3)] == [pytest.approx(by_hand, rel=1e-12)] * 4
    assert paired_test(np.array([-1.0] * 60 + [0.0] * 240), 1000, 0.95, 0)["p"] == pytest.approx(2 / 2**60, rel=1e-9)
    from leaderboards.report import _cell_paired  # a Holm p under 0.001 read "holm=0.000"

    assert _cell_paired({"diff": 0.05, "lo": 0.03, "hi": 0.08, "p": 3e-5, "p_holm": 4.6e-4}, 2000).endswith(
        " p<0.001 holm<0.001")
    # F1-like differences of several sizes stay a permutation test (Monte Carlo over 16: p >= the floor)
    f1 = np.array([0.5, 1.0, 0.25] * 10)
    assert paired_test(f1, 1000, 0.95, 0)["p"] == pytest.approx(2 / 1001)


def test_cli_report_without_timings_and_dispatch(toy_run, tmp_path, capsys):
    spec, runs, _ = toy_run
    from tokrag_model.cli import main as tokrag_main

    assert tokrag_main(["leaderboard", "report", str(spec.path), "--runs-dir", str(runs), "--out", str(tmp_path / "r"),
                        "--no-timings"]) == 0
    md = (tmp_path / "r" / "leaderboard.md").read_text()
    assert "| forward passes | generated tokens | prompt tokens |" in md and "wall time" not in md and "peak RSS" not in md
    assert tokrag_main(["leaderboard", "run", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml does not exist" in capsys.readouterr().err


def test_task_key_covers_included_templates_and_the_task_package(tmp_path):
    """The prompt lives in an extensionless include (``_qa_template``) and the loaders/metrics in the package
    around the task folder (``tasks/utils.py``): editing either gives a new task fingerprint (a new run folder)."""
    from leaderboards.keys import _HashMemo, task_fingerprint

    pkg = tmp_path / "mytasks"
    (pkg / "qa").mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "metrics.py").write_text("def em(a, b):\n    return a == b\n", encoding="utf-8")
    (pkg / "qa" / "_tmpl").write_text('doc_to_text: "Question: {{question}}\\nAnswer:"\n', encoding="utf-8")
    (pkg / "qa" / "t.yaml").write_text("include: _tmpl\ntask: toy_t\n", encoding="utf-8")
    (pkg / "README.md").write_text("docs\n", encoding="utf-8")

    def fp() -> str:
        return task_fingerprint("toy_t", [pkg], _HashMemo())

    seen = [fp()]
    (pkg / "README.md").write_text("other docs\n", encoding="utf-8")
    assert fp() == seen[0]  # documentation is not part of the key
    (pkg / "qa" / "_tmpl").write_text('doc_to_text: "Q: {{question}}\\nA:"\n', encoding="utf-8")
    seen.append(fp())
    (pkg / "metrics.py").write_text("def em(a, b):\n    return a.lower() == b.lower()\n", encoding="utf-8")
    seen.append(fp())
    assert len(set(seen)) == 3


def test_key_covers_the_data_files_a_task_yaml_names(tmp_path, monkeypatch):
    """A bring-your-own task (a YAML in the spec's include_path that includes ``rag_qa_bm25.yaml`` and names the
    user's questions and corpus in its metadata): editing the questions file gave the same run folder, so the
    leaderboard reused the cells scored on the old answers. Now each named file's content is in the key, read
    as the loader reads it (a relative path from the working directory)."""
    from leaderboards.keys import _HashMemo, task_data_files

    repo_tasks = Path(__file__).resolve().parents[1] / "tasks"
    mine, work = tmp_path / "mytasks", tmp_path / "work"
    mine.mkdir()
    work.mkdir()
    (work / "q.jsonl").write_text('{"id": "q1", "question": "capital of australia", "answers": ["Canberra"]}\n')
    (mine / "q.jsonl").write_text("a decoy beside the YAML: the loader does not read it\n")
    (tmp_path / "p.jsonl").write_text('{"id": "p1", "title": "Australia", "text": "Canberra is the capital."}\n')
    (mine / "my_qa.yaml").write_text(
        f"include: {repo_tasks / 'qa' / 'rag_qa_bm25.yaml'}\ntask: my_qa_bm25\nmetadata:\n  version: 2.0\n"
        "  dataset: byo\n  questions: q.jsonl\n" f"  corpus: {tmp_path / 'p.jsonl'}\n", encoding="utf-8")
    monkeypatch.chdir(work)

    def files() -> dict:
        return task_data_files("my_qa_bm25", [mine, repo_tasks], _HashMemo())

    q, p = str((work / "q.jsonl").resolve()), str((tmp_path / "p.jsonl").resolve())
    first = files()
    assert sorted(first) == sorted([p, q])
    (work / "q.jsonl").write_text('{"id": "q1", "question": "capital of australia", "answers": ["Sydney"]}\n')
    second = files()
    assert second[q] != first[q] and second[p] == first[p]

    # a built-in task names a corpus by name: a folder of that name in the working directory is not its data
    (work / "nq-wiki-12k").mkdir()
    (work / "nq-wiki-12k" / "x.txt").write_text("a report folder\n")
    assert task_data_files("nq_oracle_bm25", [repo_tasks], _HashMemo()) == {}

    # the whole cell key: a copy of the toy task whose metadata names a data file
    tasks = tmp_path / "toytasks"
    shutil.copytree(FIX / "tasks" / "toy_qa", tasks / "toy_qa")
    yml = tasks / "toy_qa" / "toy_qa.yaml"
    yml.write_text(yml.read_text().replace("metadata: {version: 1.0}", "metadata: {version: 1.0, questions: q.jsonl}"))
    spec = load_spec(write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"]))
    keys = [key for _, key, _ in cell_keys(spec)]
    (work / "q.jsonl").write_text('{"id": "q1", "question": "capital of australia", "answers": ["Perth"]}\n')
    assert all(a != b for a, b in zip(keys, [key for _, key, _ in cell_keys(spec)]))
    run_spec(spec, tmp_path / "runs", progress=False)  # the report's provenance names the file and its hash
    md = (build_report(spec, tmp_path / "runs", tmp_path / "r", questions=False) / "leaderboard.md").read_text()
    sha = task_data_files("toy_qa", [tasks], _HashMemo())[q]
    assert f"; q.jsonl {sha[:12]} |" in md


def test_task_key_covers_the_task_code_a_yaml_includes_from_elsewhere(tmp_path):
    """Your own YAML in your own folder over ``tasks/qa/rag_qa_bm25.yaml``: its key hashed only your folder, so a
    change to the included task's package (prompts, noise, metrics) kept the old run folders."""
    from leaderboards.keys import _HashMemo, task_fingerprint, tree_fingerprint

    pkg = tmp_path / "pkg"
    (pkg / "qa").mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "metrics.py").write_text("def em(a, b):\n    return a == b\n", encoding="utf-8")
    (pkg / "qa" / "base.yaml").write_text("task: base_t\ndoc_to_text: 'Q: {{question}}'\n", encoding="utf-8")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "t.yaml").write_text(f"include: {pkg / 'qa' / 'base.yaml'}\ntask: my_t\n", encoding="utf-8")

    def fp() -> str:
        return task_fingerprint("my_t", [mine], _HashMemo())

    before = fp()
    assert before != tree_fingerprint(mine, _HashMemo(), {".py", ".yaml", ".yml", ".jinja", ".j2", ""})
    (pkg / "metrics.py").write_text("def em(a, b):\n    return a.lower() == b.lower()\n", encoding="utf-8")
    assert fp() != before
    # a task whose includes stay in its own package keeps the key it had (one folder's fingerprint; its .py files
    # by their code since s57 g1: tree_fingerprint's code)
    assert task_fingerprint("base_t", [pkg], _HashMemo()) == tree_fingerprint(pkg, _HashMemo(), {".py", ".yaml", ".yml",
                                                                                               ".jinja", ".j2", ""},
                                                                              code=True)


def test_question_pages_without_a_closed_book_row_do_not_compare_against_none(tmp_path):
    """A spec without rag-none: the per-question page said "helped/hurt against None"."""
    spec = load_spec(write_spec(tmp_path, methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}],
                                tasks=["toy_qa"], limit=3))
    assert spec.closed_book is None
    run_spec(spec, tmp_path / "runs", progress=False)
    html = (build_report(spec, tmp_path / "runs", tmp_path / "r") / "questions" / "toy_qa.html").read_text()
    assert "against None" not in html and "helped/hurt" not in html
    assert "hover a token for S_R, S_L and the layer.</p>" in html
