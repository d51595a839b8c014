"""``--cache_requests true`` with a tokrag task is refused before the model loads (found by a provenance review):
lm-eval keys its request cache by task name only, so running ``rag_qa_bm25`` with ``questions=qA.jsonl`` and then
``questions=qB.jsonl``, both with ``--cache_requests true``, scored A's prompts against B's documents (the question
"what is the capital of france" got the prompt "...Question: who wrote hamlet...") while the results recorded qB's
hash. ``refresh`` rebuilds the prompts and passes the check. Runs ``tokrag eval``'s entry in-process with
``lm_eval.simple_evaluate`` (which builds the model) replaced by a function that fails if called."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load


class _ModelWouldLoad(Exception):
    pass


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise _ModelWouldLoad(kwargs.get("cache_requests"), kwargs.get("rewrite_requests_cache"))

    stop_at_model_load(monkeypatch, refuse)


def _files(tmp_path):
    rows = [{"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]},
            {"id": "q2", "question": "what is the capital of france", "answers": ["Paris"]}]
    (tmp_path / "qA.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    passages = [{"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare."},
                {"id": "p2", "title": "Paris", "text": "Paris is the capital of France."}]
    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in passages), encoding="utf-8")
    return ["--model", "rag-none", "--model_args", "pretrained=smollm2-135m-instruct", "--tasks", "rag_qa_bm25",
            "--device", "cpu", "--apply_chat_template", "--gen_kwargs", "max_gen_toks=8",
            "--metadata", json.dumps({"questions": str(tmp_path / "qA.jsonl"),
                                      "corpus": str(tmp_path / "passages.jsonl"), "hits": 2})]


def test_cache_requests_true_is_refused_before_the_model_loads(no_model, tmp_path):
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError) as exc:
        main([*_files(tmp_path), "--cache_requests", "true"])
    msg = str(exc.value)
    assert "\n" not in msg, msg
    assert msg.startswith("--cache_requests true: lm-eval keys its request cache by task name only"), msg
    assert "--cache_requests refresh" in msg and "leave it off" in msg, msg
    assert getattr(exc.value, "_tokrag_before_load", False) is True


def test_cache_requests_refresh_and_off_pass_the_check(no_model, tmp_path):
    from tokrag_model.eval_cli import main

    with pytest.raises(_ModelWouldLoad) as exc:
        main([*_files(tmp_path), "--cache_requests", "refresh"])
    assert exc.value.args == (True, True)
    with pytest.raises(_ModelWouldLoad) as exc:
        main(_files(tmp_path))
    assert exc.value.args == (False, False)


def test_reads_the_config_file_forms():
    from tokrag_model._lmeval_hook import _reuses_request_cache

    assert _reuses_request_cache({"cache_requests": True, "rewrite_requests_cache": False,
                                  "delete_requests_cache": False}) is True
    assert _reuses_request_cache({"cache_requests": True, "rewrite_requests_cache": True}) is False
    assert _reuses_request_cache({"delete_requests_cache": True}) is False
    assert _reuses_request_cache("true") is True and _reuses_request_cache(True) is True
    assert _reuses_request_cache("refresh") is False and _reuses_request_cache({}) is False
    assert _reuses_request_cache(None) is False


def test_other_tasks_are_left_to_lm_eval():
    from tokrag_model._lmeval_hook import check_cache_requests

    class Manager:
        task_index = {}

    check_cache_requests(Manager(), ["hellaswag"], {"cache_requests": True})  # no error
