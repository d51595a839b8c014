"""``prompt: base`` in a leaderboard adds the newline stop only where ``lm_eval --metadata '{"prompt": "base"}'``
would want it: tasks whose stop is the short-answer one (:data:`tasks.precheck.INSTRUCT_STOP`, the rule of
``tasks.precheck.check_selected_tasks``'s warning). It was added to every task, so ``eli5_bm25_wiki`` (stops at a
new "Question:", the whole generation scored) was cut at its first newline in a leaderboard only (ROUGE-L 0.545
where lm_eval gave 0.881)."""

from __future__ import annotations

import yaml

from leaderboards.spec import load_spec, task_until
from tasks import TASK_DIR
from tasks.precheck import INSTRUCT_STOP


def _spec(tmp_path, **shared_extra):
    shared = {"model_args": {"pretrained": "smollm2-135m-instruct", "k": 5}, "gen_kwargs": {"max_gen_toks": 128},
              "limit": 2, "device": "cpu", "prompt": "base", **shared_extra}
    path = tmp_path / "base.yaml"
    path.write_text(yaml.safe_dump({
        "name": "base-stop", "reference": "rag-standard", "shared": shared, "seeds": [1234],
        "tasks": ["nq_oracle_bm25", "eli5_bm25_wiki", "wow_bm25_wiki"],
        "methods": [{"name": "rag-standard", "model": "rag-standard"}]}), encoding="utf-8")
    return load_spec(path)


def test_base_prompt_newline_only_for_short_answer_tasks(tmp_path):
    spec = _spec(tmp_path)
    inc = [TASK_DIR]
    assert task_until("nq_oracle_bm25", inc) == INSTRUCT_STOP  # from the included _qa_template
    assert task_until("eli5_bm25_wiki", inc) == ["Question:"] and task_until("wow_bm25_wiki", inc) == ["\n\n"]
    got = {c.task.task: c.gen_kwargs for c in spec.cells()}
    assert got["nq_oracle_bm25"] == {"max_gen_toks": 128, "until": ["\n"]}  # as before: the base prompt's stop
    assert got["eli5_bm25_wiki"] == {"max_gen_toks": 128}  # its YAML's until ["Question:"] stays, as with lm_eval
    assert got["wow_bm25_wiki"] == {"max_gen_toks": 128}
    lines = spec.contract_lines()
    assert "gen_kwargs.until: ['\\n']" in lines
    assert "gen_kwargs.until.eli5_bm25_wiki: ['Question:'] (the task's own stop, as with lm_eval's prompt=base)" in lines


def test_a_contract_until_still_applies_to_every_task(tmp_path):
    spec = _spec(tmp_path, gen_kwargs={"max_gen_toks": 128, "until": ["\n"]})
    assert {c.task.task: c.gen_kwargs["until"] for c in spec.cells()} == {
        "nq_oracle_bm25": ["\n"], "eli5_bm25_wiki": ["\n"], "wow_bm25_wiki": ["\n"]}
    assert not [x for x in spec.contract_lines() if x.startswith("gen_kwargs.until.")]
