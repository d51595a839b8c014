"""Generation kwargs a tokrag method does not honour are refused, and lm-eval's budget aliases are read (breaker b4,
stop 46). Every method decodes greedily and read only ``until`` and ``max_gen_toks``: ``--gen_kwargs num_beams=4`` or a
task's ``repetition_penalty: 1.5`` ran without a word (lm-eval recorded them; its ``hf`` applies them:
rag-standard answered "Pierre Curie" where hf with repetition_penalty=1.5 answered "Marie Curio Award"), and a task
YAML's ``do_sample: true`` only got a WARNING. ``max_new_tokens``/``max_tokens`` (lm-eval 0.4.13's
``normalize_gen_kwargs`` reads them as ``max_gen_toks``) were ignored: budget 256 where hf used 8. Now
``RAGMethodLM._gen_settings`` reads the kwargs through ``normalize_gen_kwargs`` and refuses the others
(:func:`tokrag_model.base.unhonoured_gen_kwargs`), and the pre-run check (``tasks.precheck.check_run_arguments``)
refuses them, from ``--gen_kwargs`` or a task YAML, before the model loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from lm_eval.models.utils import normalize_gen_kwargs

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tests.test_cli_early_checks import _refused, no_model  # noqa: F401 - the fixture

UNTIL = ["\n\n", "Question:"]
GREEDY = {"until": UNTIL, "max_gen_toks": 32, "do_sample": False, "temperature": 0.0}  # lm-eval's defaults and ours


def _stub():
    """A rag-standard instance with only what ``_gen_settings`` reads (no model load)."""
    from tokrag_model.methods import MODELS

    lm = object.__new__(MODELS["rag-standard"])
    lm.max_length, lm.resolved_config, lm.given_args = 2048, {"max_gen_toks": 256}, {}
    return lm


@pytest.mark.parametrize("alias", ["max_new_tokens", "max_tokens", "max_completion_tokens"])
def test_budget_aliases_are_read_as_lm_eval_reads_them(alias):
    gk = {"until": ["\n\n"], alias: 8}
    assert normalize_gen_kwargs(gk, 256)["max_gen_toks"] == 8  # what lm-eval's hf generates
    assert _stub()._gen_settings(gk, "<|im_end|>")[1:] == (8, 2040)
    both = {"until": ["\n\n"], "max_gen_toks": 5, alias: 8}
    assert _stub()._gen_settings(both, "<|im_end|>")[1] == 5  # lm-eval's order: max_gen_toks first


def test_an_alias_budget_against_an_explicit_model_argument_is_refused():
    lm = _stub()
    lm.resolved_config, lm.given_args = {"max_gen_toks": 4}, {"max_gen_toks": "4"}
    with pytest.raises(ConfigError, match=r"max_gen_toks=4 \(model argument\) has no effect.*max_gen_toks=8"):
        lm._gen_settings({"until": ["\n"], "max_new_tokens": 8}, "</s>")


@pytest.mark.parametrize("extra, named", [
    ({"num_beams": 3}, "num_beams=3"),
    ({"repetition_penalty": 1.5}, "repetition_penalty=1.5"),
    ({"no_repeat_ngram_size": 3, "top_k": 5, "do_sample": True},
     "do_sample=True, temperature=0.0, no_repeat_ngram_size=3, top_k=5"),  # top_k only acts when sampling
    ({"do_sample": None, "temperature": 0.7}, "temperature=0.7"),  # lm-eval's hf samples: temperature > 0
])
def test_settings_a_method_would_ignore_are_refused_at_generation(extra, named):
    gk = {**GREEDY, **extra}
    with pytest.raises(ConfigError) as exc:
        _stub()._gen_settings(gk, "<|im_end|>")
    msg = str(exc.value)
    assert msg.startswith(f"--model rag-standard: the request's generation kwargs set {named}, which it would not "
                          "honour: every tokrag method decodes greedily"), msg
    assert "\n" not in msg


@pytest.mark.parametrize("extra", [{}, {"num_beams": 1}, {"do_sample": False, "temperature": 0.7},
                                   {"top_p": 0.95, "top_k": 5}])  # inert under greedy decoding in hf too
def test_greedy_and_neutral_settings_are_accepted(extra):
    assert _stub()._gen_settings({**GREEDY, **extra}, "<|im_end|>")[1] == 32


def test_generate_until_names_the_task(backbone):
    """Through ``generate_until`` (a Python API user, no pre-run check): the refusal names the request's task; an
    accepted ``max_new_tokens`` budget bounds the answer."""
    from lm_eval.api.instance import Instance

    from tokrag_model.methods import MODELS

    lm = MODELS["rag-standard"].with_backbone(backbone, pretrained="smollm2-135m-instruct", trace=False)
    doc = {"id": "q0", "question": "Who wrote Hamlet", "answers": ["Shakespeare"], "ctxs": [], "retriever": "bm25"}
    ctx = "Question: Who wrote Hamlet? Answer with one long sentence.\nAnswer:"
    req = Instance("generate_until", doc, (ctx, {"until": ["\n\n"], "num_beams": 4}), 0, metadata=("nq_x", 0, 1))
    with pytest.raises(ConfigError, match=r"^--model rag-standard: task nq_x's generation kwargs set num_beams=4, "):
        lm.generate_until([req])
    short, = lm.generate_until([Instance("generate_until", doc, (ctx, {"until": ["\n\n"], "max_new_tokens": 2}), 0)])
    assert len(backbone.tokenizer(short, add_special_tokens=False).input_ids) <= 2, short


def test_cli_gen_kwargs_refused_before_the_model_load(no_model):  # noqa: F811
    msg = _refused(["--limit", "1", "--gen_kwargs", "num_beams=4"])
    assert msg.startswith("--gen_kwargs num_beams=4: --model rag-standard decodes greedily (every tokrag method "
                          "does) and reads only until and max_gen_toks"), msg
    assert msg.endswith("; drop num_beams"), msg


def test_a_task_yaml_setting_is_refused_before_the_model_load(tmp_path):
    """A task YAML's ``do_sample: true`` (it only got a WARNING at generation) or ``repetition_penalty``; the shipped
    tasks all pass, and lm-eval's ``hf`` model is left alone."""
    from lm_eval.tasks import TaskManager

    from tasks.precheck import check_run_arguments

    base = Path(TASK_DIR) / "qa" / "nq_oracle_bm25.yaml"
    for name, gen in [("nq_sampled", "{until: ['\\n'], do_sample: true, temperature: 0.9}"),
                      ("nq_penalty", "{until: ['\\n'], max_gen_toks: 8, repetition_penalty: 1.5}")]:
        (tmp_path / f"{name}.yaml").write_text(f"include: {base}\ntask: {name}\ngeneration_kwargs: {gen}\n",
                                               encoding="utf-8")
    manager = TaskManager(include_path=[str(TASK_DIR), str(tmp_path)], include_defaults=False)
    with pytest.raises(ConfigError, match=r"^--model rag-standard: task nq_sampled's generation_kwargs set "
                                          r"do_sample=True, temperature=0.9: --model rag-standard decodes greedily"):
        check_run_arguments(manager, ["nq_sampled"], model="rag-standard")
    with pytest.raises(ConfigError, match=r"task nq_penalty's generation_kwargs set repetition_penalty=1.5: .*"
                                          r"run the task with a model that honours them \(lm-eval's hf\), or a copy "
                                          r"of the task without repetition_penalty$"):
        check_run_arguments(manager, ["nq_penalty"], model="rag-standard", gen_kwargs={"max_gen_toks": 4})
    check_run_arguments(manager, ["nq_sampled", "nq_penalty"], model="hf")
    shipped = [n for n in TaskManager(include_path=str(TASK_DIR), include_defaults=False).all_tasks]
    check_run_arguments(TaskManager(include_path=str(TASK_DIR), include_defaults=False), shipped, model="rag-standard")


def test_an_alias_budget_against_the_model_argument_is_refused_before_the_model_load(tmp_path):
    """``--model_args max_gen_toks=4`` with a budget alias lm-eval's hf reads (``--gen_kwargs max_new_tokens=8``, or
    a task YAML's ``max_tokens: 8``) on a task without ``max_gen_toks``: the request's 8 wins, so the pre-run check
    refuses it as it refuses ``max_gen_toks=8`` (it read only ``max_gen_toks``, and the model refused after the
    load). On a task whose ``max_gen_toks: 32`` outranks the alias (lm-eval's order), the task's value is named."""
    from lm_eval.tasks import TaskManager

    from tasks.precheck import check_run_arguments

    base = Path(TASK_DIR) / "qa" / "nq_oracle_bm25.yaml"
    for name, gen in [("nq_nobudget", "{until: ['\\n']}"), ("nq_alias", "{until: ['\\n'], max_tokens: 8}")]:
        (tmp_path / f"{name}.yaml").write_text(f"include: {base}\ntask: {name}\ngeneration_kwargs: {gen}\n",
                                               encoding="utf-8")
    manager = TaskManager(include_path=[str(TASK_DIR), str(tmp_path)], include_defaults=False)
    with pytest.raises(ConfigError, match=r"^--model rag-standard: max_gen_toks=4 \(model argument\) has no effect: "
                                          r"--gen_kwargs set max_gen_toks=8"):
        check_run_arguments(manager, ["nq_nobudget"], model="rag-standard", model_args="max_gen_toks=4",
                            gen_kwargs={"max_new_tokens": 8})
    with pytest.raises(ConfigError, match=r"^--model rag-standard: max_gen_toks=4 \(model argument\) has no effect: "
                                          r"task nq_alias's generation_kwargs set max_gen_toks=8"):
        check_run_arguments(manager, ["nq_alias"], model="rag-standard", model_args="max_gen_toks=4")
    with pytest.raises(ConfigError, match=r"task nq_oracle_bm25's generation_kwargs set max_gen_toks=32"):
        check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard", model_args="max_gen_toks=4",
                            gen_kwargs={"max_new_tokens": 4})
    check_run_arguments(manager, ["nq_nobudget"], model="rag-standard", model_args="max_gen_toks=4",
                        gen_kwargs={"max_new_tokens": 4})
