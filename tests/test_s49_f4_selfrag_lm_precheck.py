"""rag-selfrag-filter on a ``loglikelihood_rolling`` task whose docs carry passages but no ``query_field`` is refused
before the model loads (s49 f4, after a80a23c and 010a860).

Since a80a23c the filter refuses such a doc (the critic would judge its passages against lm-eval's prefix token), but
only when the requests reach the model: ``lm_eval --model rag-selfrag-filter --include_path ... --tasks toy_lm`` loaded
SmolLM2 first, and a leaderboard spec running the filter on toy_lm loaded it after the cells before that one. The
start-up hook (``tasks.precheck.check_selfrag_lm_questions``) and the leaderboard's pre-run checks
(``leaderboards.runner.check_lm_questions``) now build the task's first docs and refuse it in the model's own line.
toy_lm (``tests/leaderboard_fixtures/tasks/toy_lm``): rolling, docs ``{qid, text, ctxs}``, no ``question``.
"""

from __future__ import annotations

import re

import pytest
from lm_eval.api.instance import Instance

from leaderboards.runner import check_cell_args, run_spec
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load
from tests.leaderboard_helpers import FIX, write_spec
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

SMOL = "smollm2-135m-instruct"
# what the model says at toy_lm's first request (SmolLM2's prefix token is <|im_start|>)
REFUSAL = ("--model rag-selfrag-filter: the critic needs a question, but a language-modelling doc (task 'toy_lm', "
           "doc_id 0, qid 'p0') has no 'question' field (model argument query_field='question'; doc keys: ['ctxs', "
           "'qid', 'text']) and its context '<|im_start|>' is the scored text's prefix token or preceding tokens, not a "
           "question; record in each doc the query its passages were retrieved with and pass query_field=<that field>")


class _Reached(Exception):
    """The run got past every pre-load check to lm-eval's ``simple_evaluate`` (where the model loads)."""


@pytest.fixture
def no_model(monkeypatch):
    def reached(*args, **kwargs):
        raise _Reached(kwargs.get("model_args"))

    stop_at_model_load(monkeypatch, reached)


def _eval(model_args: str) -> None:
    from tokrag_model.eval_cli import main

    main(["--model", "rag-selfrag-filter", "--model_args", model_args, "--device", "cpu", "--limit", "2",
          "--include_path", str(FIX / "tasks"), "--tasks", "toy_lm"])


def test_the_cli_refuses_toy_lm_before_the_model_loads_in_the_models_line(no_model):
    with pytest.raises(ConfigError, match=f"^{re.escape(REFUSAL)}$"):  # the old code reached the load
        _eval(f"pretrained={SMOL}")
    with pytest.raises(ConfigError, match=r"has no 'query' field \(model argument query_field='query'; doc keys"):
        _eval(f"pretrained={SMOL},query_field=query")
    with pytest.raises(_Reached):  # the doc's own text as the critic's question: it runs
        _eval(f"pretrained={SMOL},query_field=text")


def test_the_precheck_line_is_the_models_own(backbone):
    """The same first doc given to the model (as lm-eval gives it: task toy_lm, doc_id 0) is refused in that line."""
    from lm_eval.tasks import TaskManager

    task = TaskManager(include_path=str(FIX / "tasks"), include_defaults=False).load(["toy_lm"])["tasks"]["toy_lm"]
    doc = task.eval_docs[0]
    lm = SelfRAGFilterLM.with_backbone(backbone, device="cpu")
    req = Instance("loglikelihood_rolling", doc, (doc["text"],), 0, metadata=("toy_lm", 0, 1))
    with pytest.raises(ConfigError, match=f"^{re.escape(REFUSAL)}$"):
        lm.loglikelihood_rolling([req], disable_tqdm=True)
    assert lm.stats["forward_passes"] == 0


def test_a_misspelt_model_argument_is_left_to_the_models_own_refusal(no_model):
    """``--model_args query_feild=text``: the model refuses the unknown key before its weights load (did you mean
    'query_field'?). The pre-load check read query_field from the raw model arguments (so 'question') and refused the
    run for a doc without 'question', telling the user to pass query_field=<that field>, which they had; it resolves
    the arguments as the model does now (tokrag_model.args.resolved_args, the leaderboard's too) and leaves a refused
    argument to the model (s49 m2)."""
    with pytest.raises(ConfigError, match=r"^--model rag-selfrag-filter: unknown model argument\(s\) 'query_feild' "
                                          r"\(did you mean 'query_field'\?\)"):
        SelfRAGFilterLM(pretrained=SMOL, query_feild="text")  # the model's own line, before its weights load
    with pytest.raises(ConfigError, match=r"^--model rag-selfrag-filter: unknown model argument\(s\) 'query_feild' "):
        _eval(f"pretrained={SMOL},query_feild=text")  # the model's own line, before lm-eval's set-up (s50 f6)


def test_selection_rank_is_left_to_the_models_own_refusal_of_scoring(no_model):
    """``selection=rank`` generates only: the model refuses a ``loglikelihood_rolling`` request for that, at its first
    request, before it would ask any question. The pre-load check gave the question refusal instead (s49, m2's
    finding), so fixing the field would only have led to the other refusal; it now leaves such a config alone."""
    with pytest.raises(_Reached):  # the old code: REFUSAL
        _eval(f"pretrained={SMOL},selection=rank")


def test_a_limit_of_zero_reads_no_doc(monkeypatch):
    """lm-eval evaluates no document at ``limit`` 0 (``task.build_requests() did not find any docs!``): the check reads
    none (it read the first LM_DOCS_CHECKED and refused doc 0; s49 m2). At limit 1 doc 0 is refused."""
    from lm_eval.tasks import TaskManager

    import tasks.precheck as precheck

    tm = TaskManager(include_path=str(FIX / "tasks"), include_defaults=False)
    selected = precheck._expand_selected(tm, ["toy_lm"])
    cfg = {"query_field": "question", "pretrained": SMOL, "revision": None, "trust_remote_code": False}
    assert precheck.selfrag_lm_question_refusal(tm, selected, "rag-selfrag-filter", cfg, 1) == REFUSAL
    built = []
    monkeypatch.setattr(precheck, "_built_task", lambda *a: built.append(a))
    for limit in (0, 0.0):
        assert precheck.selfrag_lm_question_refusal(tm, selected, "rag-selfrag-filter", cfg, limit) is None
    assert built == []  # no task built, no doc read


def _spec(tmp_path, filter_args: dict):
    methods = [{"name": "standard", "model": "rag-standard"},
               {"name": "filter", "model": "rag-selfrag-filter", "model_args": filter_args}]
    shared = {"model_args": {"pretrained": SMOL, "k": 1}, "limit": 2}
    return load_spec(write_spec(tmp_path, methods=methods, tasks=["toy_lm"], extra={"shared": shared}))


def test_a_leaderboard_spec_running_the_filter_on_toy_lm_stops_before_any_cell(tmp_path, monkeypatch):
    import leaderboards.runner as runner

    loads = []
    monkeypatch.setattr(runner, "make_model", lambda cell: loads.append(cell.cell_id))
    spec = _spec(tmp_path, {})
    want = f"^leaderboard spec {re.escape(str(spec.path))}: method filter: {re.escape(REFUSAL)}$"
    with pytest.raises(ConfigError, match=want):
        check_cell_args(spec, spec.cells())
    with pytest.raises(ConfigError, match=want):  # the old code ran rag-standard's cell, then loaded the filter
        run_spec(spec, tmp_path / "runs", progress=False)
    assert loads == [] and not any((tmp_path / "runs").rglob("*.json"))
    ok = _spec(tmp_path / "text", {"query_field": "text"})
    check_cell_args(ok, ok.cells())  # runs with the doc's own text as the question
