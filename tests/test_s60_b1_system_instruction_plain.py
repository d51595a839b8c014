"""``--system_instruction`` with a plain-text task (``wiki_lm_bm25``) is refused before the model load (s60 b1,
breaker): lm-eval glued the instruction onto the front of the scored paragraph's context with no separator
(``--write_out``: ``'You are a pirate.The Adventures of Tintin is a series ...'``), so rag-standard's word perplexity
on the first paragraph went from 18.4481 to 19.2457 while the task measures language modelling of raw paragraphs (as
``--apply_chat_template`` is refused for such a task). Now ``tasks.precheck.check_system_instruction``'s one line,
under the CLI and for ``lm_eval.simple_evaluate``; a QA task keeps the flag."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load

LINE = ("--system_instruction: task wiki_lm_bm25 scores plain text (task metadata plain_text: true), and lm-eval would "
        "glue the instruction onto the front of its scored text's context, changing the numbers: run it in a separate "
        "lm_eval call without --system_instruction (the other tasks keep it)")


class Reached(Exception):
    pass


@pytest.fixture
def stop(monkeypatch):
    def reached(*args, **kwargs):
        raise Reached()

    stop_at_model_load(monkeypatch, reached)


def _run(tasks: str, *extra: str) -> None:
    from tokrag_model.eval_cli import main

    main(["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
          "--tasks", tasks, "--limit", "1", *extra])


def test_cli_plain_text_task_refused(stop):
    with pytest.raises(ConfigError) as exc:
        _run("nq_oracle_bm25,wiki_lm_bm25", "--system_instruction", "You are a pirate.")
    assert str(exc.value) == LINE


def test_cli_qa_task_and_no_instruction_pass(stop):
    with pytest.raises(Reached):
        _run("nq_oracle_bm25", "--system_instruction", "You are a pirate.", "--apply_chat_template")
    with pytest.raises(Reached):
        _run("wiki_lm_bm25")


def test_simple_evaluate_refused_before_the_load(monkeypatch):
    import lm_eval
    import lm_eval.api.registry as registry

    import tokrag_model  # noqa: F401  (the start-up hook's patches)

    def no_build(name):
        raise AssertionError(f"get_model({name!r}) was called: the model would have been built")

    monkeypatch.setattr(registry, "get_model", no_build)
    with pytest.raises(ConfigError) as exc:
        lm_eval.simple_evaluate(model="rag-standard", model_args="pretrained=smollm2-135m-instruct,device=cpu",
                                tasks=["wiki_lm_bm25"], limit=1, system_instruction="You are a pirate.")
    assert str(exc.value) == LINE
