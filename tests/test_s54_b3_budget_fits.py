"""``lm_eval --model rag-standard --tasks nq_oracle_gold --limit 1 --gen_kwargs max_gen_toks=100000000`` was refused
by the method only in its first ``generate_until``, after the model load (35 s for SmolLM2-135M here, exit 1; s54 b3
logs/mgt_huge.log): ``max_gen_toks=100000000 leaves no room in max_length=8192``. A tokrag method's ``max_length`` is
the model argument, else the model's context capped at 8192, so a budget of 8192 or more (or of ``max_length=`` or
more) can never fit: the start-up hook's pre-load check (``check_run_arguments``) now refuses it in one line."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager()


def _check(manager, model_args, gen_kwargs, tasks=("nq_oracle_gold",)):
    from tasks.precheck import check_run_arguments

    check_run_arguments(manager, list(tasks), model="rag-standard", model_args=model_args, gen_kwargs=gen_kwargs)


@pytest.mark.parametrize("model_args, gen_kwargs, line", [
    ("pretrained=smollm2-135m-instruct", {"max_gen_toks": 100000000},
     "--model rag-standard: max_gen_toks=100000000 (task nq_oracle_gold) leaves the prompt no room in max_length (the "
     "model's context, at most 8192 tokens); pass --gen_kwargs max_gen_toks below 8192 (the most tokens of each "
     "answer, e.g. 32)"),
    ("pretrained=smollm2-135m-instruct", {"max_gen_toks": 8192},
     "--model rag-standard: max_gen_toks=8192 (task nq_oracle_gold) leaves the prompt no room in max_length (the "
     "model's context, at most 8192 tokens); pass --gen_kwargs max_gen_toks below 8192 (the most tokens of each "
     "answer, e.g. 32)"),
    ("pretrained=smollm2-135m-instruct,max_length=512", {"max_gen_toks": 512},
     "--model rag-standard: max_gen_toks=512 (task nq_oracle_gold) leaves the prompt no room in max_length=512; pass "
     "--gen_kwargs max_gen_toks below 512 (the most tokens of each answer, e.g. 32) or a larger max_length= in "
     "--model_args"),
    ("pretrained=smollm2-135m-instruct,max_length=16", {},  # the task YAML's max_gen_toks: 32
     "--model rag-standard: max_gen_toks=32 (task nq_oracle_gold) leaves the prompt no room in max_length=16; pass "
     "--gen_kwargs max_gen_toks below 16 (the most tokens of each answer) or a larger max_length= in --model_args"),
])
def test_a_budget_that_leaves_no_room_for_the_prompt_is_refused_before_the_load(manager, model_args, gen_kwargs, line):
    with pytest.raises(ConfigError) as err:
        _check(manager, model_args, gen_kwargs)
    assert str(err.value) == line


def test_budgets_that_may_fit_pass(manager):
    _check(manager, "pretrained=smollm2-135m-instruct", {"max_gen_toks": 8191})  # fits a context of 8192
    _check(manager, "pretrained=smollm2-135m-instruct,max_length=33", {})  # 32 + one prompt token
    _check(manager, "pretrained=smollm2-135m-instruct,max_length=16", {}, tasks=("wiki_lm_bm25",))  # no generation
