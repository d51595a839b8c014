"""``lm_eval.simple_evaluate`` / ``evaluate`` called from Python (a notebook, a script, ``tokrag leaderboard run``):

* the pre-load checks lm-eval's CLI runs (``tokrag_model._lmeval_hook.check_loaded_run``) ran only under the CLI:
  ``metadata={"k": 1}`` was ignored by the model while the results recorded it, ``apply_chat_template=True``
  chat-framed the plain-text ``wiki_lm_bm25`` (bits_per_byte 0.8535 -> 1.0882), ``num_fewshot=1`` drew its examples
  from the scored documents. ``simple_evaluate`` now runs them (once under the CLI); ``evaluate`` refuses a
  plain-text task chat-framed or with such few-shot examples (``check_evaluated_tasks``).
* a model object reused for several evaluations kept ``tokrag_chat_template_applied`` true after a chat run, and the
  ``CachingLM`` hook and summed ``tokrag_cached_responses`` of an earlier ``use_cache`` run (no ``tokrag_trace``
  logged without the cache): ``RAGMethodLM.start_evaluation`` resets them at each ``evaluate`` call.
"""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError


class _Reached(Exception):
    pass


@pytest.fixture
def no_model_load(monkeypatch):
    """lm-eval's registry ``get_model`` raises ``_Reached`` (a run past every pre-load check ends there); lm-eval's
    own ~10k task files are not indexed (none is used)."""
    import lm_eval.api.registry
    import lm_eval.tasks

    def reached(name):
        raise _Reached(name)

    monkeypatch.setattr(lm_eval.api.registry, "get_model", reached)
    init = lm_eval.tasks.TaskManager.__init__

    def ours_only(self, *args, **kwargs):
        kwargs["include_defaults"] = False
        return init(self, *args, **kwargs)

    monkeypatch.setattr(lm_eval.tasks.TaskManager, "__init__", ours_only)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _simple(**kw):
    import lm_eval

    return lm_eval.simple_evaluate(model_args="pretrained=smollm2-135m-instruct", device="cpu", limit=1, **kw)


def test_simple_evaluate_refuses_metadata_model_argument(no_model_load) -> None:
    with pytest.raises(ConfigError) as exc:
        _simple(model="rag-standard", tasks=["nq_oracle_bm25"], metadata={"k": 1})
    assert str(exc.value).startswith("--metadata: 'k' is a tokrag model argument, not task metadata"), exc.value
    with pytest.raises(_Reached):  # k as a model argument passes
        _simple(model="rag-standard", tasks=["nq_oracle_bm25"], metadata={"hits": 1})


def test_simple_evaluate_refuses_chat_template_and_fewshot_for_plain_text_task(no_model_load) -> None:
    with pytest.raises(ConfigError) as exc:
        _simple(model="rag-none", tasks=["wiki_lm_bm25"], apply_chat_template=True)
    assert str(exc.value).startswith("--apply_chat_template: task wiki_lm_bm25 scores plain text"), exc.value
    with pytest.raises(ConfigError) as exc:
        _simple(model="rag-none", tasks=["wiki_lm_bm25"], num_fewshot=1)
    assert str(exc.value).startswith("--num_fewshot 1: task wiki_lm_bm25 has no few-shot split of its own"), exc.value
    with pytest.raises(_Reached):
        _simple(model="rag-none", tasks=["wiki_lm_bm25"], num_fewshot=0)


def test_cli_runs_the_checks_once(no_model_load, monkeypatch) -> None:
    import tokrag_model._lmeval_hook as hook
    from tokrag_model.eval_cli import main

    calls = []
    original = hook.check_loaded_run

    def counted(*args, **kwargs):
        calls.append(kwargs.get("model"))
        return original(*args, **kwargs)

    monkeypatch.setattr(hook, "check_loaded_run", counted)
    with pytest.raises(_Reached):
        main(["--model", "rag-none", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
              "--tasks", "nq_oracle_bm25", "--limit", "1"])
    assert calls == ["rag-none"], calls


class _Task:
    """A stand-in for an lm-eval task object: only its ``config`` is read before the refusal."""

    def __init__(self, **config):
        from types import SimpleNamespace

        self.config = SimpleNamespace(**{"metadata": {"plain_text": True}, "num_fewshot": 0, **config})


def test_evaluate_refuses_plain_text_task_chat_framed_or_fewshot() -> None:
    from lm_eval.evaluator import evaluate
    from lm_eval.api.model import LM

    class Never(LM):
        def loglikelihood(self, requests):
            raise AssertionError("reached the model")

        loglikelihood_rolling = generate_until = loglikelihood

    with pytest.raises(ConfigError) as exc:
        evaluate(lm=Never(), task_dict={"tasks": {"wiki_lm_bm25": _Task()}}, apply_chat_template=True)
    assert str(exc.value).startswith("apply_chat_template: task wiki_lm_bm25 scores plain text"), exc.value
    with pytest.raises(ConfigError) as exc:
        evaluate(lm=Never(), task_dict={"tasks": {"wiki_lm_bm25": _Task(num_fewshot=2)}})
    assert str(exc.value).startswith("num_fewshot 2: task wiki_lm_bm25 has no few-shot split"), exc.value


def _run(lm, monkeypatch, **kw) -> tuple[dict, bool]:
    """One ``simple_evaluate`` of ``nq_oracle_bm25`` (1 question, 2 answer tokens) over ``lm``: the results ``config``
    and whether the sample logged a ``tokrag_trace``."""
    import lm_eval
    import lm_eval.tasks

    r = lm_eval.simple_evaluate(model=lm, tasks=["nq_oracle_bm25"], limit=1, gen_kwargs="max_gen_toks=2",
                                log_samples=True, bootstrap_iters=0,
                                task_manager=lm_eval.tasks.TaskManager(include_defaults=False), **kw)
    args = r["samples"]["nq_oracle_bm25"][0]["arguments"][0]
    return r["config"], any(isinstance(a, dict) and "tokrag_trace" in a for a in args)


def test_reused_model_records_its_chat_template_per_evaluation(backbone, monkeypatch, tmp_path) -> None:
    from tokrag_model.methods import load

    lm = load("rag-none").with_backbone(backbone, device="cpu")
    config, _ = _run(lm, monkeypatch, apply_chat_template=True)
    assert config["tokrag_chat_template_applied"] is True
    config, traced = _run(lm, monkeypatch)
    assert config["tokrag_chat_template_applied"] is False  # was True: the flag was never reset
    assert traced and config["tokrag_cached_responses"] is None


def test_reused_model_keeps_no_use_cache_state(backbone, monkeypatch, tmp_path) -> None:
    from tokrag_model.methods import load

    lm = load("rag-none").with_backbone(backbone, device="cpu")
    cache = str(tmp_path / "c")
    counts = [_run(lm, monkeypatch, use_cache=cache)[0]["tokrag_cached_responses"] for _ in range(3)]
    assert counts == [0, 1, 1], counts  # was [0, 1, 2]: summed over the calls
    config, traced = _run(lm, monkeypatch)
    assert config["tokrag_cached_responses"] is None, json.dumps(config, default=str)[:300]  # was 2
    assert traced  # was False: the old CachingLM's hook stayed on the model
