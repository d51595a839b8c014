"""Bad inputs to ``lm_eval`` with a tokrag method that ran silently or failed late (s50 breaker b1):

* ``--model_args layer=5,layer=20`` ran with layer 20 (lm-eval keeps the last of a repeated key), and so did a key
  repeated in ``--metadata``'s JSON (``'{"hits": 2, "hits": 5}'`` gave hits 5);
* no ``--tasks`` or ``--tasks ''`` ended in lm-eval's ``ValueError: No tasks specified`` traceback, and ``--tasks ' '``
  in the line ``; 'lm_eval ls tasks' lists them all``;
* ``dtype=float64`` / ``bogus`` was refused only once the weights loaded; ``preset=`` (empty) ran without a preset
  and ``query_field=`` was accepted;
* ``--limit 1.5`` evaluated 1 document per task while the results recorded 1.5.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError


def _run_args(argv):
    """lm-eval's CLI parse of ``argv`` (through the start-up hook's patches), its ``run`` replaced by a recorder."""
    import tokrag_model._lmeval_hook  # noqa: F401  (patches lm-eval's CLI action and HarnessCLI.execute)
    from lm_eval._cli import HarnessCLI

    cli = HarnessCLI()
    args = cli._parser.parse_args(argv)
    ran = []
    args.func = ran.append  # the evaluation itself is not run
    return cli, args, ran


def _refused(argv) -> str:
    cli, args, ran = _run_args(argv)
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert not ran
    assert getattr(err.value, "_tokrag_before_load", False)  # exit 2 under lm_eval, as argparse's errors
    return str(err.value)


BASE = ["run", "--model", "tokrag", "--tasks", "wiki_lm_bm25", "--limit", "1"]


def test_repeated_model_argument_in_one_value_is_refused() -> None:
    line = _refused([*BASE, "--model_args", "pretrained=smollm2-135m-instruct,layer=5,layer=20"])
    assert line == ("--model_args: key 'layer' is given twice: layer=5, then layer=20; lm-eval would keep the last "
                    "one silently: give it once")


def test_repeated_key_across_values_and_flags_is_refused() -> None:
    line = _refused([*BASE, "--model_args", "pretrained=smollm2-135m-instruct", "k=2", "-a", "k=3"])
    assert line.startswith("-a: key 'k' is given twice (--model_args, then -a): k=2, then k=3;"), line


def test_repeated_key_in_metadata_json_is_refused() -> None:
    line = _refused([*BASE, "--model_args", "pretrained=smollm2-135m-instruct", "--metadata", '{"hits": 2, "hits": 5}'])
    assert line.startswith("--metadata: key 'hits' is given twice: hits=2, then hits=5;"), line


def test_distinct_keys_and_other_models_pass() -> None:
    cli, args, ran = _run_args([*BASE, "--model_args", "pretrained=smollm2-135m-instruct,layer=5", "--metadata",
                                '{"hits": 2, "noise": {"a": 1}}'])
    cli.execute(args)
    assert ran == [args] and args.model_args == {"pretrained": "smollm2-135m-instruct", "layer": 5}
    cli, args, ran = _run_args([*BASE, "--model_args", "pretrained=smollm2-135m-instruct", "-a", "k=2",
                                "pretrained=smollm2-135m-instruct"])
    cli.execute(args)  # the same value twice: nothing is lost
    assert ran == [args] and args.model_args == {"pretrained": "smollm2-135m-instruct", "k": 2}
    cli, args, ran = _run_args(["run", "--model", "hf", "--tasks", "wiki_lm_bm25", "--model_args", "a=1,a=2"])
    cli.execute(args)  # not a tokrag method: lm-eval's own rule (the last wins, with its warning)
    assert ran == [args] and args.model_args == {"a": 2}


def test_typed_pairs_reads_as_lm_eval_reads() -> None:
    from tokrag_model._lmeval_hook import typed_pairs

    assert typed_pairs(["a=1,b=[1,2]", "c=x"]) == [("a", "1"), ("b", "[1,2]"), ("c", "x")]
    assert typed_pairs(['{"a": {"x": 1, "x": 2}}', "ignored=1"]) == [("a.x", "1"), ("a.x", "2"), ("a", '{"x": 2}')]


@pytest.mark.parametrize("tasks", [[], ["--tasks", ""], ["--tasks", " "], ["--tasks", " , "]])
def test_no_task_is_tokrag_evals_line(tasks) -> None:
    line = _refused(["run", "--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", *tasks])
    assert line.startswith("--tasks: no task given; name one or more, e.g. --tasks wiki_lm_bm25"), line


def test_blank_task_name_under_another_model_is_the_no_task_line(monkeypatch) -> None:
    """``--tasks ' '`` reaches lm-eval's task lookup (``Tasks not found: `` with no name); the hook's unknown-task
    line had no name in it."""
    import lm_eval.api.registry  # noqa: F401  (the hook patches lm-eval's task lookup once the registry is imported)
    import tokrag_model._lmeval_hook  # noqa: F401
    from lm_eval.config.evaluate_config import EvaluatorConfig

    cfg = EvaluatorConfig(tasks=[" "], model="hf", model_args={})
    with pytest.raises(ConfigError) as err:
        cfg.process_tasks({})
    assert str(err.value).startswith("--tasks: no task given; name one or more"), str(err.value)


@pytest.mark.parametrize("value", ["float64", "bogus", ""])
def test_bad_dtype_is_refused_by_the_argument_parser(value) -> None:
    from tokrag_model.args import COMMON_ARGS, parse_args

    with pytest.raises(ConfigError) as err:
        parse_args("tokrag", COMMON_ARGS, {"dtype": value})
    assert f"model argument dtype={value!r} is invalid" in str(err.value), str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_good_dtypes_are_kept_as_given() -> None:
    from tokrag_model.args import COMMON_ARGS, parse_args

    for value in ("bf16", "float16", "auto", "torch.float32", "FP32"):
        assert parse_args("tokrag", COMMON_ARGS, {"dtype": value})["dtype"] == value


def test_empty_preset_query_field_and_revision_are_refused() -> None:
    from tokrag_model.args import COMMON_ARGS, parse_args
    from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM
    from tokrag_model.methods.tokrag import TokRAGLM

    cases = [("tokrag", {**COMMON_ARGS, **TokRAGLM.EXTRA_ARGS}, "preset"),
             ("rag-selfrag-filter", {**COMMON_ARGS, **SelfRAGFilterLM.EXTRA_ARGS}, "query_field"),
             ("tokrag", COMMON_ARGS, "revision")]
    for method, schema, key in cases:
        for value in ("", "  "):
            with pytest.raises(ConfigError) as err:
                parse_args(method, schema, {key: value})
            line = str(err.value)
            assert line.startswith(f"--model {method}: model argument {key}={value!r} is invalid: it is empty; give "
                                   "a value, or drop the argument for its default"), line
    schema = {**COMMON_ARGS, **SelfRAGFilterLM.EXTRA_ARGS}
    assert parse_args("rag-selfrag-filter", schema, {"query_field": "query"})["query_field"] == "query"
    assert parse_args("rag-selfrag-filter", schema, {})["query_field"] == "question"
    assert parse_args("tokrag", {**COMMON_ARGS, **TokRAGLM.EXTRA_ARGS}, {"preset": None})["preset"] is None


@pytest.mark.parametrize("limit,ok", [(1.5, False), (20.25, False), (2.0, True), (0.5, True), (3, True)])
def test_fractional_limit_above_one_is_refused(limit, ok) -> None:
    from tasks.precheck import check_run_arguments

    if ok:
        check_run_arguments(None, [], model="tokrag", limit=limit)
        return
    with pytest.raises(ConfigError) as err:
        check_run_arguments(None, [], model="tokrag", limit=limit)
    assert str(err.value).startswith(f"--limit {limit:g}: a number of documents must be whole (lm-eval would "
                                     f"evaluate {int(limit)} per task and record --limit {limit:g}); pass --limit "
                                     f"{int(limit)}"), str(err.value)


@pytest.mark.parametrize("margs,expected", [
    ("pretrained=smollm2-135m-instruct,dtype=float64", "--model tokrag: model argument dtype='float64' is invalid: "
     "expected one of ['auto', 'bf16', 'bfloat16', 'float', 'float16', 'float32', 'fp16', 'fp32', 'half']"),
    ("pretrained=smollm2-135m-instruct,preset=", "--model tokrag: model argument preset='' is invalid: it is empty"),
])
def test_model_arguments_are_checked_before_lm_eval_sets_up(margs, expected) -> None:
    """The model refused these only when lm-eval built it, after its task set-up (~30 s into the run)."""
    line = _refused([*BASE, "--model_args", margs])
    assert line.startswith(expected), line
