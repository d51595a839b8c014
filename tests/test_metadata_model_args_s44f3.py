"""A ``--metadata`` key that is a tokrag model argument (``k``) is refused before the model loads: lm-eval builds the
model from ``--model_args`` alone and no tokrag task reads a model argument, so ``--metadata '{"k": 2}'`` ran with
the default ``hits`` (5 passages per question), exit 0 (``tasks.utils.check_metadata_model_args``, run by the start-up
hook after lm-eval resolves ``--tasks``). Each CLI case runs ``tokrag eval``'s entry in-process with
``lm_eval.simple_evaluate`` (which builds the model) replaced."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load


class _Reached(Exception):
    pass


@pytest.fixture
def reached(monkeypatch):
    """``lm_eval.simple_evaluate`` records its keyword arguments and stops the run (the model is never built)."""
    seen: dict = {}

    def stop(*args, **kwargs):
        seen.update(kwargs)
        raise _Reached

    stop_at_model_load(monkeypatch, stop)
    return seen


def _argv(model: str, model_args: str, metadata: str) -> list[str]:
    return ["--model", model, "--model_args", model_args, "--device", "cpu", "--tasks", "nq_oracle_bm25",
            "--limit", "1", "--metadata", metadata]


def _refused(argv: list[str]) -> str:
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError) as exc:
        main(argv)
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


def test_metadata_k_is_refused_naming_hits_and_model_args(reached) -> None:
    msg = _refused(_argv("rag-none", "pretrained=smollm2-135m-instruct", '{"k": 2}'))
    assert msg == ("--metadata: 'k' is a tokrag model argument, not task metadata: lm-eval does not hand --metadata to "
                   "the model and nq_oracle_bm25 does not read it; pass --metadata '{\"hits\": 2}' for the passages "
                   "each question retrieves, or --model_args k=2 for the passages the model shows of them"), msg
    assert not reached
    # --model_args gives k=3, --metadata overrides the task metadata's k with 2 (the model still gets 3)
    msg = _refused(_argv("rag-none", "pretrained=smollm2-135m-instruct,k=3", '{"k": 2}'))
    assert msg.startswith("--metadata: 'k' is a tokrag model argument"), msg


def test_metadata_method_argument_is_refused(reached) -> None:
    msg = _refused(_argv("rag-cad", "pretrained=smollm2-135m-instruct", '{"alpha": 0.5, "hits": 3}'))
    assert msg.startswith("--metadata: 'alpha' is a tokrag model argument, not task metadata"), msg
    assert msg.endswith("; pass it as --model_args alpha=0.5"), msg
    assert not reached


def test_model_args_k_and_task_hits_still_run(reached) -> None:
    from tokrag_model.eval_cli import main

    with pytest.raises(_Reached):
        main(_argv("rag-none", "pretrained=smollm2-135m-instruct,k=2", '{"hits": 3}'))
    assert str(reached["model_args"]["k"]) == "2" and reached["metadata"]["hits"] == 3
    reached.clear()
    with pytest.raises(_Reached):  # the same k in both reaches the model: nothing is lost
        main(_argv("rag-none", "pretrained=smollm2-135m-instruct,k=2", '{"k": 2}'))
    assert str(reached["model_args"]["k"]) == "2"


def test_check_metadata_model_args_unit() -> None:
    from tasks.utils import check_metadata_model_args

    check_metadata_model_args({"hits": 2, "k": 3, "pretrained": "x"}, {"k": 3, "pretrained": "x"}, "rag-none", "t")
    check_metadata_model_args({"hits": 2, "my_own_key": 1, "version": 1}, None, "hf", "t")  # unknown: not refused here
    with pytest.raises(ConfigError) as exc:  # another model: no tokrag model argument to point to
        check_metadata_model_args({"max_passage_tokens": 64}, {}, "hf", "nq_open_bm25")
    assert str(exc.value) == ("--metadata: 'max_passage_tokens' is no task key of nq_open_bm25 (a tokrag model "
                              "argument): lm-eval does not hand --metadata to the model and nq_open_bm25 does not read "
                              "it; remove it")
    with pytest.raises(ConfigError) as exc:  # hf has no k: only the task's hits is pointed to
        check_metadata_model_args({"k": 2}, {}, "hf", "nq_open_bm25")
    assert str(exc.value).endswith("""does not read it; pass --metadata '{"hits": 2}' for the passages each question """
                                   "retrieves")
    with pytest.raises(ConfigError) as exc:  # a QA task sets max_gen_toks: the model refuses it as a model argument
        check_metadata_model_args({"max_gen_toks": 64}, {}, "tokrag", "nq_open_bm25")
    assert str(exc.value).endswith("does not read it; pass --gen_kwargs max_gen_toks=64 for the generation budget")
