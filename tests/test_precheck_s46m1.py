"""Pre-run checks (``tasks.precheck.check_run_arguments``, run by the start-up hook before the model loads) that a
review (s46 r1) found incomplete:

* the answer budget was checked only under ``max_gen_toks``, while lm-eval (and the tokrag models since 0d24a09) read
  ``max_new_tokens``/``max_tokens``/``max_completion_tokens`` as it: ``--gen_kwargs max_new_tokens=0`` passed (empty
  answers), ``max_tokens=2.5`` passed (cut to 2); and on a shipped task the YAML's ``max_gen_toks: 32`` outranks a
  ``--gen_kwargs`` alias (lm-eval's order), so the run used 32 while the results recorded ``max_new_tokens=8``;
* an older do_sample/temperature refusal ran before the full one and named only those keys
  (``do_sample=true,num_beams=4`` named only do_sample);
* ``rag-replug replug_mode=answer_vote`` / ``rag-selfrag-filter selection=rank`` on a whole-generation task (ELI5)
  was refused only at the first ``generate_until``, after the model load.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.mark.parametrize("model", ["rag-standard", "hf"])
@pytest.mark.parametrize("gen,shown", [({"max_new_tokens": 0}, "max_new_tokens=0"), ({"max_tokens": 2.5}, "max_tokens=2.5"),
                                       ({"max_completion_tokens": -1}, "max_completion_tokens=-1"),
                                       ({"max_gen_toks": 0}, "max_gen_toks=0")])
def test_every_budget_alias_must_be_an_integer_of_at_least_1(manager, model, gen, shown) -> None:
    from tasks.precheck import check_run_arguments

    with pytest.raises(ConfigError) as exc:
        check_run_arguments(manager, ["nq_oracle_bm25"], model=model, gen_kwargs=gen)
    assert str(exc.value).startswith(f"--gen_kwargs {shown}: expected an integer >= 1 (the most tokens of each "
                                     "answer; "), exc.value


def test_an_alias_the_tasks_max_gen_toks_outranks_is_refused(manager) -> None:
    """lm-eval 0.4.13 merges ``--gen_kwargs`` over the YAML's ``generation_kwargs`` and reads ``max_gen_toks`` first
    (verified: nq_oracle_bm25 with ``max_new_tokens=8`` -> budget 32; with ``max_gen_toks=8`` -> 8)."""
    from tasks.precheck import check_run_arguments

    for model in ("rag-standard", "hf"):
        with pytest.raises(ConfigError) as exc:
            check_run_arguments(manager, ["nq_oracle_bm25"], model=model, gen_kwargs={"max_new_tokens": 8})
        assert str(exc.value) == (
            "--gen_kwargs max_new_tokens=8: task nq_oracle_bm25's generation_kwargs set max_gen_toks=32, which lm-eval "
            "reads first (max_gen_toks > max_new_tokens > max_tokens > max_completion_tokens), so the run would use 32 "
            "while the results record max_new_tokens=8; pass --gen_kwargs max_gen_toks=8 instead (it replaces the "
            "task's)")
    check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard", gen_kwargs={"max_gen_toks": 8})
    check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard", gen_kwargs={"max_gen_toks": 8,
                                                                                       "max_new_tokens": 8})
    check_run_arguments(manager, ["wiki_lm_bm25"], model="rag-standard", gen_kwargs={"max_new_tokens": 8})  # no generation


def test_every_unhonoured_key_is_named_with_do_sample(manager) -> None:
    from tasks.precheck import check_run_arguments

    with pytest.raises(ConfigError) as exc:
        check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard",
                            gen_kwargs={"do_sample": True, "num_beams": 4})
    assert str(exc.value).startswith("--gen_kwargs do_sample=True, num_beams=4: --model rag-standard decodes greedily"
                                     ), exc.value
    assert str(exc.value).endswith("; drop do_sample/num_beams"), exc.value


def _evaluated(cfg: dict) -> dict:
    """An ``evaluate`` task_dict of one task built from ``cfg`` (lm-eval's ``TaskConfig`` fields it is read by)."""
    from types import SimpleNamespace

    fields = ("custom_dataset", "metadata", "num_fewshot", "fewshot_config", "fewshot_split", "training_split",
              "validation_split")
    return {"tasks": {cfg["task"]: SimpleNamespace(config=SimpleNamespace(**{k: cfg.get(k) for k in fields}))}}


def test_evaluate_refuses_few_shot_from_the_scored_docs_of_every_task_of_ours_as_the_cli() -> None:
    """``evaluate`` called from Python refused few-shot examples without a pool only for a plain-text task, the CLI
    for every task of this package: a wikitext103-like task (our loader, no plain_text) passed ``evaluate``. Both
    now apply ``draws_fewshot_from_scored_docs``."""
    from tasks.precheck import draws_fewshot_from_scored_docs
    from tasks.wikitext import load_wikitext103
    from tokrag_model._lmeval_hook import check_evaluated_tasks

    cfg = {"task": "wt", "custom_dataset": load_wikitext103, "metadata": {"version": 4.0}, "num_fewshot": 1}
    assert draws_fewshot_from_scored_docs(cfg)
    with pytest.raises(ConfigError, match=r"^num_fewshot 1: task wt has no few-shot split of its own"):
        check_evaluated_tasks(_evaluated(cfg), False)
    check_evaluated_tasks(_evaluated({**cfg, "num_fewshot": 0}), False)
    check_evaluated_tasks(_evaluated({**cfg, "validation_split": "validation"}), False)  # a pool of its own
    check_evaluated_tasks(_evaluated({**cfg, "custom_dataset": len}), False)  # not ours: left to lm-eval


def test_wikitext103_is_plain_text_so_never_chat_framed(manager, tmp_path) -> None:
    """wikitext103_bm25_wiki scores raw text (a chunk's loglikelihood after the text before it) like wiki_lm_bm25 but
    lacked ``plain_text: true``: ``--apply_chat_template`` chat-framed it unrefused, and a leaderboard contract's chat
    template reached its cells. Now it declares it: refused by the CLI check, and its cells run without the chat
    template (and system instruction), as the contract lines say."""
    import json
    from pathlib import Path

    from leaderboards.spec import load_spec, task_plain_text
    from tasks.precheck import check_run_arguments, plain_text_tasks

    assert task_plain_text("wikitext103_bm25_wiki", [Path(TASK_DIR)]) is True
    assert plain_text_tasks(manager, ["wikitext103_bm25_wiki"]) == ["wikitext103_bm25_wiki"]
    with pytest.raises(ConfigError, match=r"^--apply_chat_template: task wikitext103_bm25_wiki scores plain text"):
        check_run_arguments(manager, ["wikitext103_bm25_wiki"], model="rag-none", apply_chat_template=True)
    path = tmp_path / "spec.yaml"
    path.write_text(json.dumps({
        "name": "plain", "description": "d", "reference": "rag-standard", "seeds": [1],
        "shared": {"model_args": {"pretrained": "smollm2-135m-instruct", "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
                   "limit": 2, "apply_chat_template": True, "system_instruction": "Be brief."},
        "tasks": ["nq_oracle_bm25", "wikitext103_bm25_wiki"],
        "methods": [{"name": "rag-standard", "model": "rag-standard"}]}), encoding="utf-8")
    spec = load_spec(path)
    cells = {c.task.task: c for c in spec.cells()}
    assert (cells["nq_oracle_bm25"].apply_chat_template, cells["nq_oracle_bm25"].system_instruction) == (True, "Be brief.")
    assert (cells["wikitext103_bm25_wiki"].apply_chat_template, cells["wikitext103_bm25_wiki"].system_instruction) == (
        False, None)
    assert "apply_chat_template.wikitext103_bm25_wiki: false (plain-text language-modelling task)" in spec.contract_lines()


@pytest.mark.parametrize("model, model_args, setting", [
    ("rag-replug", "replug_mode=answer_vote", "replug_mode=answer_vote"),
    ("rag-selfrag-filter", {"selection": "Rank"}, "selection=rank"),
])
def test_a_first_line_vote_on_a_long_form_task_is_refused_before_the_model_load(manager, model, model_args, setting):
    """Refused before only at the first ``generate_until``, after the model load (``refuse_long_form``); now by the
    pre-run check, in the model's own line. WoW (its first line scored) and the default modes pass."""
    from tasks.precheck import check_run_arguments
    from tokrag_model.methods.replug import long_form_refusal

    with pytest.raises(ConfigError) as exc:
        check_run_arguments(manager, ["nq_oracle_bm25", "eli5_bm25_wiki"], model=model, model_args=model_args)
    assert str(exc.value) == long_form_refusal(model, setting, "eli5_bm25_wiki") == (
        f"--model {model}: {setting} judges each generation by its first non-empty line, but task 'eli5_bm25_wiki' "
        f"scores the whole generation (long-form, tasks/longform.py); run that task without {setting}")
    check_run_arguments(manager, ["nq_oracle_bm25", "wow_bm25_wiki"], model=model, model_args=model_args)
    check_run_arguments(manager, ["eli5_bm25_wiki"], model=model)
    check_run_arguments(manager, ["eli5_bm25_wiki"], model="hf", model_args=model_args)  # not a tokrag method


def test_a_tokrag_model_class_brings_the_evaluate_patch_without_the_pth_hook() -> None:
    """``tokrag leaderboard run`` relies on lm-eval's ``evaluate`` resetting a reused model's per-evaluation state
    (``RAGMethodLM.start_evaluation``, :func:`tokrag_model._lmeval_hook.patch_evaluator`) and no longer calls it
    itself: importing ``tokrag_model.base`` (where every tokrag model's class lives) installs the patch, also
    without the start-up ``.pth`` (``python -S``) and after ``lm_eval.evaluator`` was imported."""
    import subprocess
    import sys
    import sysconfig
    from pathlib import Path

    root, site = str(Path(TASK_DIR).parent), sysconfig.get_paths()["purelib"]
    code = (f"import sys; sys.path[:0] = [{root!r}, {site!r}]; import lm_eval.evaluator as e; "
            "print('tokrag_model._lmeval_hook' in sys.modules, getattr(e.evaluate, '_tokrag', False)); "
            "import tokrag_model.base; print(getattr(e.evaluate, '_tokrag', False))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120, cwd="/")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "False", "True"], out.stdout
