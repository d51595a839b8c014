"""A plain-text task (task metadata ``plain_text: true``: ``wiki_lm_bm25``, the continuation of a paragraph given its
first 32 words) is never chat-framed. Under lm-eval's ``--apply_chat_template`` its prefix went into a user turn and the
continuation was scored after ``<|im_end|>\\n<|im_start|>assistant\\n``, with the prefix's trailing newline moved into
the scored continuation (49 tokens scored, words and bytes counted on 48), and lm-eval has no per-task opt-out. The
leaderboard's cells of such a task run without the contract's chat template (``leaderboards.spec``), and ``lm_eval`` /
``tokrag eval`` refuse ``--apply_chat_template`` with it before the model loads (``tasks.precheck``). No model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboards.spec import REPO_ROOT, load_spec, task_plain_text
from retrieval.errors import ConfigError
from tasks import TASK_DIR, add_include_path
from tasks.precheck import check_run_arguments, plain_text_tasks
from tests.eval_helpers import stop_at_model_load

V2 = REPO_ROOT / "leaderboards" / "specs" / "nq-wiki-12k-v2.yaml"
WIKI = Path(TASK_DIR) / "wiki_lm" / "wiki_lm_bm25.yaml"
REFUSAL = ("--apply_chat_template: task wiki_lm_bm25 scores plain text (task metadata plain_text: true), but lm-eval "
           "would put its context in a chat user turn and score the continuation after the assistant header, and it "
           "has no per-task opt-out: run it in a separate lm_eval call without --apply_chat_template (the other tasks "
           "keep it)")


def test_the_wiki_task_declares_plain_text_and_the_qa_tasks_do_not():
    inc = [Path(TASK_DIR)]
    assert task_plain_text("wiki_lm_bm25", inc) is True
    assert task_plain_text("nq_oracle_bm25", inc) is False
    assert task_plain_text("no_such_task", inc) is False


def test_v2_smollm2_wiki_cells_run_without_the_chat_template():
    spec = load_spec(V2)
    smol = [c for c in spec.cells() if c.model_name == "smollm2-135m-instruct"]
    wiki = [c for c in smol if c.task.task == "wiki_lm_bm25"]
    qa = [c for c in smol if c.task.task != "wiki_lm_bm25"]
    assert len(wiki) == 11 and len(qa) == 66
    assert {(c.apply_chat_template, c.system_instruction, c.fewshot_as_multiturn) for c in wiki} == {(False, None, True)}
    assert {c.apply_chat_template for c in qa} == {True}
    assert all("chat_template_sha256" not in c.config() and c.config()["apply_chat_template"] is False for c in wiki)
    gemma = [c for c in spec.cells() if c.model_name == "gemma-3-270m"]
    assert gemma and {c.apply_chat_template for c in gemma} == {False}


def test_v2_contract_says_so():
    spec = load_spec(V2)
    smol, gemma = spec.model_list()
    lines = spec.contract_lines(smol)
    assert "apply_chat_template: True" in lines
    assert "apply_chat_template.wiki_lm_bm25: false (plain-text language-modelling task)" in lines
    assert not [ln for ln in spec.contract_lines(gemma) if ln.startswith("apply_chat_template.")]  # no chat, no wiki


def test_a_system_instruction_and_fewshot_setting_do_not_reach_a_plain_text_task(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(json.dumps({
        "name": "plain", "description": "d", "reference": "rag-standard", "seeds": [1],
        "shared": {"model_args": {"pretrained": "smollm2-135m-instruct", "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
                   "limit": 2, "apply_chat_template": True, "system_instruction": "Be brief.",
                   "fewshot_as_multiturn": False},
        "tasks": ["nq_oracle_bm25", {"task": "wiki_lm_bm25", "limit": 2}],
        "methods": [{"name": "rag-standard", "model": "rag-standard"}]}), encoding="utf-8")
    spec = load_spec(path)
    cells = {c.task.task: c for c in spec.cells()}
    qa, wiki = cells["nq_oracle_bm25"], cells["wiki_lm_bm25"]
    assert (qa.apply_chat_template, qa.system_instruction, qa.fewshot_as_multiturn) == (True, "Be brief.", False)
    assert (wiki.apply_chat_template, wiki.system_instruction, wiki.fewshot_as_multiturn) == (False, None, True)
    assert not {"system_instruction", "fewshot_as_multiturn"} & set(wiki.config())
    lines = spec.contract_lines()
    assert "apply_chat_template.wiki_lm_bm25: false (plain-text language-modelling task)" in lines
    assert "system_instruction.wiki_lm_bm25: null (plain-text language-modelling task)" in lines


@pytest.fixture
def no_model(monkeypatch):
    """``lm_eval.simple_evaluate`` (where lm-eval's CLI builds the model) raises ``_Reached`` with its ``tasks``."""
    def reached(*args, **kwargs):
        raise _Reached(kwargs.get("tasks"))

    stop_at_model_load(monkeypatch, reached)


class _Reached(Exception):
    pass


BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
        "--limit", "1"]


def test_the_cli_refuses_the_chat_template_with_the_wiki_task_before_the_model_loads(no_model):
    from tokrag_model.eval_cli import main

    for tasks in ("wiki_lm_bm25", "nq_oracle_bm25,wiki_lm_bm25"):
        with pytest.raises(ConfigError) as exc:
            main([*BASE, "--apply_chat_template", "--tasks", tasks])
        assert str(exc.value) == REFUSAL
        assert getattr(exc.value, "_tokrag_before_load", False) is True
    with pytest.raises(_Reached):  # without the flag the run goes on to the model load
        main([*BASE, "--tasks", "wiki_lm_bm25"])
    with pytest.raises(_Reached):  # the chat tasks alone keep the flag
        main([*BASE, "--apply_chat_template", "--tasks", "nq_oracle_bm25"])


def test_groups_tags_and_includes_of_the_wiki_task_are_refused_too(tmp_path):
    from lm_eval.tasks import TaskManager

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "my_group.yaml").write_text(
        "group: my_lm_group\ntask:\n  - wiki_lm_bm25\n  - task: nq_oracle_bm25\naggregate_metric_list:\n"
        "  - metric: bits_per_byte\n    aggregation: mean\nmetadata:\n  version: 1.0\n", encoding="utf-8")
    (mine / "my_entry_group.yaml").write_text(  # an entry's metadata replaces the task's whole block: still plain
        "group: my_entry_group\ntask:\n  - task: wiki_lm_bm25\n    metadata:\n      hits: 2\nmetadata:\n"
        "  version: 1.0\n", encoding="utf-8")
    (mine / "my_wiki.yaml").write_text(  # its own metadata block replaces the included one's in lm-eval
        f"include: {WIKI}\ntask: my_wiki\ntag: my_lm_tag\nmetadata:\n  hits: 2\n", encoding="utf-8")
    tm = TaskManager(include_path=add_include_path([str(mine)]), include_defaults=False)
    assert plain_text_tasks(tm, ["nq_oracle_bm25"]) == []
    assert plain_text_tasks(tm, ["my_lm_group"]) == ["wiki_lm_bm25"]
    assert plain_text_tasks(tm, ["my_entry_group"]) == ["wiki_lm_bm25"]
    assert plain_text_tasks(tm, ["my_lm_tag"]) == ["my_wiki"]
    for names, want in ((["my_lm_group"], REFUSAL), (["my_lm_tag", "wiki_lm_bm25"], REFUSAL.replace(
            "task wiki_lm_bm25 scores", "tasks my_wiki, wiki_lm_bm25 score").replace("put its", "put their").replace(
            "run it in", "run them in"))):
        for flag in (True, "chatml"):
            with pytest.raises(ConfigError) as exc:
                check_run_arguments(tm, names, model="hf", apply_chat_template=flag)
            assert str(exc.value) == want
        for flag in (None, False, ""):
            check_run_arguments(tm, names, model="hf", apply_chat_template=flag)
