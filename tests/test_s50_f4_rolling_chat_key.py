"""A ``loglikelihood_rolling`` cell of a spec whose contract applies the chat template kept ``apply_chat_template:
true`` (and the system instruction, the template's hash) in its run key, so it got a folder of its own apart from the
same cell of a plain contract, while lm-eval scores a rolling request's text alone: the request is
``(doc_to_target(doc),)``, the chat lm-eval renders for it is dropped (lm-eval 0.4.13
``ConfigurableTask.construct_requests``). Measured with lm_eval on a two-document rolling task (SmolLM2-135M-Instruct,
CPU): word perplexity 8.833726841236558 (rag-standard), 10.082782413398789 (tokrag), 138.66713009053495
(rag-selfrag-filter, its critic chat-rendered either way) with and without ``--apply_chat_template``, equal to the last
bit (/work/scratch/s50/f4/d/run.sh). Such a cell now runs without the contract's chat template and system instruction,
as a plain-text task's does (:func:`leaderboards.spec.task_unchatted`); the committed specs' keys are unchanged (no
rolling task: wiki_lm_bm25 is a loglikelihood task, plain text already)."""
from __future__ import annotations

import yaml
from leaderboard_helpers import FIX, write_spec

from leaderboards.keys import cell_keys
from leaderboards.spec import load_spec

CHAT = {"apply_chat_template": True, "system_instruction": "Be brief."}


def _spec(tmp_path, name: str, chat: bool):
    path = write_spec(tmp_path / name, name=name, tasks=["toy_lm", "toy_qa"], limit=2)
    if chat:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        doc["shared"].update(CHAT)
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return load_spec(path)


def test_a_rolling_cell_of_a_chat_contract_has_the_plain_cells_key(tmp_path):
    chat, plain = _spec(tmp_path, "chat", True), _spec(tmp_path, "plain", False)
    keys = {n: {c.cell_id: k for c, k, _ in cell_keys(s)} for n, s in (("chat", chat), ("plain", plain))}
    assert keys["chat"]["standard/toy_lm/seed1"] == keys["plain"]["standard/toy_lm/seed1"]  # was another folder
    assert keys["chat"]["standard/toy_qa/seed1"] != keys["plain"]["standard/toy_qa/seed1"]  # a QA task's chat counts
    cells = {c.cell_id: c for c in chat.cells()}
    lm, qa = cells["standard/toy_lm/seed1"], cells["standard/toy_qa/seed1"]
    assert (lm.apply_chat_template, lm.system_instruction) == (False, None)  # what lm_eval is called with
    assert (qa.apply_chat_template, qa.system_instruction) == (True, "Be brief.")
    assert [line for line in chat.contract_lines() if line.split(":")[0].endswith(".toy_lm")] == [
        "apply_chat_template.toy_lm: false (loglikelihood_rolling: lm-eval scores the text alone)",
        "system_instruction.toy_lm: null (loglikelihood_rolling: lm-eval scores the text alone)"]


def test_which_tasks_run_without_the_chat_template():
    from leaderboards.spec import DEFAULT_INCLUDE, task_unchatted

    ours = [DEFAULT_INCLUDE]
    assert [task_unchatted(t, [FIX / "tasks"]) for t in ("toy_lm", "toy_qa")] == [
        "loglikelihood_rolling: lm-eval scores the text alone", None]
    assert [task_unchatted(t, ours) for t in ("wiki_lm_bm25", "nq_oracle_bm25")] == [
        "plain-text language-modelling task", None]


def test_lm_eval_gives_a_rolling_request_the_text_alone_under_a_chat_template():
    """The fact the key relies on: the same request arguments with and without the chat template (a lm-eval that
    framed a rolling request in the chat would fail this)."""
    from lm_eval.tasks import TaskManager

    task = TaskManager(include_path=str(FIX / "tasks")).load(["toy_lm"])["tasks"]["toy_lm"]
    args = {}
    for chat in (False, True):
        task.build_all_requests(limit=2, rank=0, world_size=1, apply_chat_template=chat, system_instruction="Be brief."
                                if chat else None, chat_template=(lambda history, add_generation_prompt=True:
                                                                  "<chat>" + repr(history)) if chat else None)
        args[chat] = [inst.args for inst in task.instances]
    assert args[True] == args[False] and len(args[False]) == 2 and all(len(a) == 1 for a in args[False])
