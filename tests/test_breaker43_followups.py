"""Follow-ups of a breaker's check of stop 43's commits: each test failed on the code before its fix.

* ``retrieve eval`` refused a run retrieved with rewritten queries under the topics' own ids (f1110f7): scored now,
  with one WARNING line; texts that differ under automatic ids ``q<index>`` are still refused.
* a spec's ``noise:`` for a user task that draws noise in its own loader and declares none (ec35610) was refused with
  advice to give 0 (the plot wrong); the committed clean tasks declare no ``noise: 0``, so it is still refused, naming
  the declaration that fixes it (``metadata: {noise: 0.67}`` or an ``_noiseNN`` name), which is then accepted.
* the leaderboard lacked the CLI's pre-load check of ``model_args.max_gen_toks`` against the task's generation
  kwargs (19e647c): a spec passed load_spec and --estimate and failed at the first generate_until, after the load.
* retriever params ``rrf_k=np.int64(60)``, ``depth=np.int64(200)`` were refused as not whole numbers (c09ccd9); a task
  YAML's ``alpha: 1e-1`` (a string to PyYAML) was refused without saying why.
* a fused q/k/v group (29cfc68) kept a member's output by input identity only: ``q_proj(x); x.mul_(2); k_proj(x)``
  gave k of the old x. It now keys on the tensor's version counter too.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from retrieval.errors import ConfigError, DataError
from tests.retrieval_helpers import ctxs_run as _run
from tests.retrieval_helpers import eval_json as _eval
from tests.retrieval_helpers import write_jsonl as _jsonl


# ------------------------------------------------------------------------------------------- eval: rewritten queries
QS = [{"qid": "Q0", "question": "who wrote hamlet", "answers": ["Shakespeare"], "gold_docids": ["p1"]},
      {"qid": "Q1", "question": "what is the capital of france", "answers": ["Paris"], "gold_docids": ["p2"]}]


def test_eval_scores_a_run_of_rewritten_queries_under_the_topics_own_ids_with_one_warning(tmp_path, capsys, caplog):
    run = _run(tmp_path / "rw.ctxs.jsonl", ["Q0", "Q1"], ["who wrote hamlet wikipedia", "capital city france"])
    topics = _jsonl(tmp_path / "orig.jsonl", QS)
    with caplog.at_level(logging.WARNING, logger="retrieval.cli"):
        res = _eval(capsys, "--run", str(run), "--topics", str(topics))
    assert res["gold@1"] == 1.0 and res["answer_recall@1"] == 1.0 and res["num_queries"] == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"run {run}: 2 of the 2 questions it shares with topics '{topics}' were retrieved for other texts than the "
        "topics give under the same ids (first: 'Q0' retrieved for 'who wrote hamlet wikipedia', topics give 'who "
        "wrote hamlet'); scored by id against the topics' answers, as for rewritten queries: if these ids do not name "
        "the same questions, the figures are wrong"]


def test_eval_still_refuses_differing_texts_under_automatic_ids(tmp_path, capsys, caplog):
    no_ids = [{k: v for k, v in q.items() if k != "qid"} for q in QS]
    run = _run(tmp_path / "rw.ctxs.jsonl", ["q0", "q1"], ["who wrote hamlet wikipedia", QS[1]["question"]])
    topics = _jsonl(tmp_path / "orig.jsonl", no_ids)
    with pytest.raises(DataError, match=r"^run .*: question 'q0' was retrieved for 'who wrote hamlet wikipedia' but "
                                        r"topics .* give 'who wrote hamlet' under that id \(1 of the 2 ids they share"):
        _eval(capsys, "--run", str(run), "--topics", str(topics))
    # the same texts: scored, no warning
    same = _run(tmp_path / "same.ctxs.jsonl", ["Q0", "Q1"], [q["question"] for q in QS])
    with caplog.at_level(logging.WARNING, logger="retrieval.cli"):
        assert _eval(capsys, "--run", str(same), "--topics", str(_jsonl(tmp_path / "t.jsonl", QS)))["gold@1"] == 1.0
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


# ------------------------------------------------------------------------------------------- spec: a user task's noise
FIX = Path(__file__).resolve().parent / "leaderboard_fixtures" / "tasks"


def _distract_task(tmp_path, metadata):
    """The fixture's toy_qa_noise67 (its loader draws 2/3 noise) under a name without _noiseNN."""
    tasks = tmp_path / "tasks"
    shutil.copytree(FIX, tasks, ignore=shutil.ignore_patterns("__pycache__"))
    src = tasks / "toy_qa" / "toy_qa_noise67.yaml"
    text = src.read_text(encoding="utf-8").replace("task: toy_qa_noise67", "task: toy_qa_distract67")
    (tasks / "toy_qa" / "toy_qa_distract67.yaml").write_text(
        text.replace("metadata: {version: 1.0}", f"metadata: {metadata}"), encoding="utf-8")
    src.unlink()
    return tasks


def test_a_user_task_drawing_its_own_noise_is_told_to_declare_it(tmp_path):
    from leaderboard_helpers import write_spec
    from leaderboards.spec import load_spec

    tasks = _distract_task(tmp_path, "{version: 1.0}")
    entry = {"task": "toy_qa_distract67", "noise": 0.67}
    with pytest.raises(ConfigError) as exc:
        load_spec(write_spec(tmp_path / "a", tasks=["toy_qa", entry], include=tasks))
    y = tasks / "toy_qa" / "toy_qa_distract67.yaml"
    assert str(exc.value).endswith(
        "tasks[1] (toy_qa_distract67): noise 0.67 is not the noise the task draws, 0 (" + str(y) + " declares none: no "
        "metadata noise, no _noiseNN in its name); if its loader draws noise itself, declare it in the task YAML: "
        "metadata: {noise: 0.67} (or an _noiseNN name), else drop noise: from the entry")
    # the declaration it names is accepted, and labels the task
    tasks = _distract_task(tmp_path / "b", "{version: 1.0, noise: 0.67}")
    spec = load_spec(write_spec(tmp_path / "b", tasks=["toy_qa", entry], include=tasks))
    assert [(t.task, t.noise) for t in spec.tasks if t.task == "toy_qa_distract67"] == [("toy_qa_distract67", 0.67)]
    # a declared noise still refuses another value, with the old advice
    with pytest.raises(ConfigError, match=r"noise 0.5 is not the noise the task draws, 0.67 \(metadata noise of .*\); "
                                          r"drop noise: from the entry or give 0.67$"):
        load_spec(write_spec(tmp_path / "c", tasks=[{"task": "toy_qa_distract67", "noise": 0.5}], include=tasks))


# ------------------------------------------------------------------------------------------- spec: model_args max_gen_toks
def _qa_spec(tmp_path, model_args, gen_kwargs=None):
    """A spec over the repository's nq_oracle_bm25 (generation_kwargs max_gen_toks 32) and rag-standard."""
    shared = {"model_args": {"pretrained": "smollm2-135m-instruct", "k": 5, **model_args}, "limit": 4}
    if gen_kwargs:
        shared["gen_kwargs"] = gen_kwargs
    spec = {"name": "mg", "reference": "rag-standard", "shared": shared, "tasks": ["nq_oracle_bm25"], "seeds": [1234],
            "methods": [{"name": "rag-standard", "model": "rag-standard"}]}
    path = tmp_path / "mg.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def test_the_leaderboard_refuses_a_model_max_gen_toks_the_task_overrides_before_any_load(tmp_path, monkeypatch):
    from leaderboards import runner
    from leaderboards.spec import load_spec

    path = _qa_spec(tmp_path, {"max_gen_toks": 64})
    spec = load_spec(path)
    loads = []
    monkeypatch.setattr(runner, "make_model", lambda *a, **k: loads.append(a), raising=False)
    with pytest.raises(ConfigError) as exc:
        runner.check_cell_args(spec, spec.cells())  # what run and run --estimate check before the first cell
    assert str(exc.value) == (
        f"leaderboard spec {path}: method rag-standard: model_args max_gen_toks 64 has no effect on task "
        "nq_oracle_bm25: its generation_kwargs set max_gen_toks 32, which wins as in lm-eval's hf (the model would "
        "refuse it at its first generate_until, after the load); set gen_kwargs: {max_gen_toks: 64} in the spec "
        "(shared or the method's) instead of model_args max_gen_toks")
    assert loads == []
    # the same value as the task's, or the spec's gen_kwargs: nothing to refuse
    for model_args, gen in (({"max_gen_toks": 32}, None), ({"max_gen_toks": 64}, {"max_gen_toks": 64}), ({}, None)):
        spec = load_spec(_qa_spec(tmp_path, model_args, gen))
        runner.check_model_max_gen_toks(spec, spec.cells())


# ------------------------------------------------------------------------------------------- retriever params: numbers
def test_numpy_numbers_are_taken_as_the_python_numbers_they_are():
    import numpy as np

    from retrieval.api import _resolve_params, check_numbers

    check_numbers({"rrf_k": np.int64(60), "depth": np.int32(200), "max_length": np.int64(64), "k1": np.float32(0.9)})
    plain, _ = _resolve_params("hybrid", {"rrf_k": 60, "depth": 200, "fusion": "weighted", "alpha": 0.5, "k1": 1})
    got, _ = _resolve_params("hybrid", {"rrf_k": np.int64(60), "depth": np.int64(200), "fusion": "weighted",
                                        "alpha": np.float32(0.5), "k1": np.int64(1)})
    # k1 1 is the float setting 1.0 (s50 f4: one run key for 1 and 1.0)
    assert got == plain and [type(got[k]) for k in ("rrf_k", "depth", "alpha", "k1")] == [int, int, float, float]
    for bad, message in (({"rrf_k": True}, r"^rrf_k=True: must be a whole number >= 1"),
                         ({"depth": np.int64(0)}, r"^depth=0: must be a whole number >= 1"),
                         ({"rrf_k": 60.0}, r"^rrf_k=60.0: must be a whole number >= 1"),
                         ({"alpha": np.bool_(True), "fusion": "weighted"}, r"^alpha=np.True_ \(--alpha\): alpha must be")):
        with pytest.raises(ConfigError, match=message):
            _resolve_params("hybrid", bad)


@pytest.mark.parametrize("text, write", [("1e-1", "1.0e-1"), ("5E-2", "5.0e-2"), ("1.5e2", "1.5e+2"), ("2e5", "2.0e+5")])
def test_a_yaml_exponent_read_as_a_string_is_named(text, write):
    from retrieval.api import _resolve_params

    params = yaml.safe_load(f"{{fusion: weighted, alpha: {text}}}")  # as a task YAML's retriever_params
    assert params["alpha"] == text
    with pytest.raises(ConfigError) as exc:
        _resolve_params("hybrid", params)
    assert str(exc.value) == (f"alpha={text!r} (--alpha): alpha must be a finite number; YAML reads {text} as a "
                              f"string: write {write}")
    assert yaml.safe_load(f"alpha: {write}")["alpha"] == float(text)  # the advice reads as the number
    with pytest.raises(ConfigError, match=r"^alpha='abc' \(--alpha\): alpha must be a finite number$"):
        _resolve_params("hybrid", {"fusion": "weighted", "alpha": "abc"})


# ------------------------------------------------------------------------------------------- fused products: in-place input
def _own_products(mods):
    import tokrag_model.decoder as dec_mod

    alone = [torch.ops.mkldnn._reorder_linear_weight(m.weight.detach(), dec_mod.PACK_BATCH_HINT) for m in mods]
    return lambda i, x: torch.ops.mkldnn._linear_pointwise(x, alone[i], None, "none", [], "")


def test_a_fused_group_recomputes_for_an_input_changed_in_place():
    import tokrag_model.decoder as dec_mod

    if not dec_mod._onednn_linear_ok():
        pytest.skip("no row-invariant oneDNN packed products here")
    g = torch.Generator().manual_seed(0)
    mods = [torch.nn.Linear(64, n, bias=False) for n in (64, 16, 16)]
    for m in mods:
        torch.nn.init.normal_(m.weight, generator=g)
    group, own = dec_mod.FusedLinears(mods), _own_products(mods)
    with torch.no_grad():
        x = torch.randn(2, 64, generator=g)
        assert torch.equal(group(0, x), own(0, x))
        x.mul_(2.0)  # the same tensor object, other values
        assert torch.equal(group(1, x), own(1, x))
        x[:, :8].add_(1.0)  # through a view: the same version counter
        assert torch.equal(group(2, x), own(2, x))
        # unchanged between calls: the kept columns are taken (no new product), and released once all are taken
        y = torch.randn(2, 64, generator=g)
        outs = [group(0, y)]
        kept = dict(group._kept)
        outs += [group(1, y), group(2, y)]
        assert outs[1] is kept[1] and outs[2] is kept[2] and group._input is None and not group._kept
        assert all(torch.equal(o, own(i, y)) for i, o in enumerate(outs))
        # changed in place after the first member: the others computed again, not the kept columns
        outs = [group(0, y)]
        kept = dict(group._kept)
        y.sub_(1.0)
        outs += [group(1, y)]
        assert outs[1] is not kept[1] and torch.equal(outs[1], own(1, y)) and not torch.equal(kept[1], outs[1])
    with torch.inference_mode():  # the decoder's steps: inference tensors have no version counter; identity as before
        z = torch.randn(2, 64, generator=g)
        assert [torch.equal(group(i, z), own(i, z)) for i in (0, 1, 2)] == [True] * 3 and not group._kept
