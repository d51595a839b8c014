"""A key given twice with the same value, written two ways, must pass the lm_eval hook's repeated-key check (s50 r4,
review of f996f5a): the check compared the values as typed, so ``add_bos_token=True,add_bos_token=true``, a JSON
``{"pretrained": "x"}`` then ``-a pretrained=x``, and ``--metadata`` given twice with the same object in another key
order were refused ("key 'add_bos_token' is given twice: add_bos_token=True, then add_bos_token=true; lm-eval would
keep the last one silently"), though lm-eval's dict is the same whichever it keeps. It now compares the values as
lm-eval reads them; two values that differ (also only in type: ``3`` and ``3.0``, ``1`` and ``True``) are refused.
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError

BASE = ["run", "--model", "tokrag", "--tasks", "wiki_lm_bm25", "--limit", "1"]
P = "pretrained=smollm2-135m-instruct"


def _run_args(argv):
    """lm-eval's CLI parse of ``argv`` through the start-up hook's patches, its ``run`` replaced by a recorder."""
    import importlib

    importlib.import_module("tokrag_model._lmeval_hook")  # patches lm-eval's CLI action and HarnessCLI.execute
    from lm_eval._cli import HarnessCLI

    cli = HarnessCLI()
    args = cli._parser.parse_args(argv)
    ran = []
    args.func = ran.append  # the evaluation itself is not run
    return cli, args, ran


@pytest.mark.parametrize("extra,dest,expected", [
    (["--model_args", P + ",add_bos_token=True,add_bos_token=true"], "model_args",
     {"pretrained": "smollm2-135m-instruct", "add_bos_token": True}),
    (["--model_args", '{"pretrained": "smollm2-135m-instruct"}', "-a", P], "model_args",
     {"pretrained": "smollm2-135m-instruct"}),
    (["--model_args", P, "--metadata", '{"retriever_params": {"k1": 0.9, "b": 0.4}}', "--metadata",
      '{"retriever_params": {"b": 0.4, "k1": 0.9}}'], "metadata", {"retriever_params": {"b": 0.4, "k1": 0.9}}),
    (["--model_args", P, "--gen_kwargs", 'until=["\\n\\n","Question:"]', "--gen_kwargs",
      '{"until": ["\\n\\n", "Question:"]}'], "gen_kwargs", {"until": ["\n\n", "Question:"]}),
    (["--model_args", P, "--metadata", "hits=3", "--metadata", '{"hits": 3}'], "metadata", {"hits": 3}),
])
def test_the_same_value_written_two_ways_passes(extra, dest, expected) -> None:
    cli, args, ran = _run_args([*BASE, *extra])
    cli.execute(args)
    assert ran == [args]
    assert getattr(args, dest) == expected


@pytest.mark.parametrize("extra,line", [
    (["--model_args", P + ",k=3", "-a", "k=3.0"],
     "-a: key 'k' is given twice (--model_args, then -a): k=3, then k=3.0; lm-eval would keep the last one silently"),
    (["--model_args", P + ",add_bos_token=1,add_bos_token=True"],
     "--model_args: key 'add_bos_token' is given twice: add_bos_token=1, then add_bos_token=True;"),
    (["--model_args", P, "--metadata", '{"retriever_params": {"k1": 0.9, "b": 0.4}}', "--metadata",
      '{"retriever_params": {"k1": 0.9}}'],
     "--metadata: key 'retriever_params' is given twice: retriever_params={\"k1\": 0.9, \"b\": 0.4}, then "
     "retriever_params={\"k1\": 0.9};"),
])
def test_two_values_are_still_refused(extra, line) -> None:
    cli, args, ran = _run_args([*BASE, *extra])
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert not ran
    assert str(err.value).startswith(line), str(err.value)
