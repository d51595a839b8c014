"""The results' ``config.tokrag_generation`` (d6e8c73) names one entry per task and generation-kwargs group decoded.
lm-eval sends every task's ``generate_until`` requests in ONE call, and the entries were keyed by the kwargs alone,
named after the first request's task: two tasks with the same ``generation_kwargs`` (a group such as ``rag_qa``,
whose eight tasks share theirs, or ``--tasks a,b``) gave one entry naming the first task only; the other task's
generation settings were not recorded (/work/scratch/s54/r5/mt_old.log)."""

from __future__ import annotations

import shutil

import pytest

from leaderboard_helpers import REPO


@pytest.mark.slow
def test_every_task_of_a_shared_generation_kwargs_group_is_listed(tmp_path, backbone):
    import lm_eval
    from lm_eval.tasks import TaskManager

    from tokrag_model.methods import MODELS

    src = REPO / "tests" / "fixtures" / "tokrag_model_task"
    shutil.copy(src / "utils.py", tmp_path / "utils.py")
    text = (src / "tokrag_model_mini.yaml").read_text()
    for name, budget in (("r5_a", 4), ("r5_b", 4), ("r5_c", 2)):  # a and b share their kwargs, c has its own
        (tmp_path / f"{name}.yaml").write_text(text.replace("task: tokrag_model_mini", f"task: {name}")
                                               .replace("max_gen_toks: 4", f"max_gen_toks: {budget}"))
    lm = MODELS["rag-none"].with_backbone(backbone)
    res = lm_eval.simple_evaluate(model=lm, tasks=["r5_a", "r5_b", "r5_c"], limit=1,
                                  task_manager=TaskManager(include_path=str(tmp_path)))
    assert sorted(res["results"]) == ["r5_a", "r5_b", "r5_c"]
    eos = lm.tokenizer.decode([lm.eot_token_id])
    entry = {"until": ["\n", eos], "do_sample": False}
    assert sorted(res["config"]["tokrag_generation"], key=lambda g: g["task"]) == [
        {"task": task, "gen_kwargs": {"until": ["\n"], "max_gen_toks": budget, "do_sample": False}, **entry,
         "max_gen_toks": budget}
        for task, budget in (("r5_a", 4), ("r5_b", 4), ("r5_c", 2))]  # old: r5_a and r5_c only
