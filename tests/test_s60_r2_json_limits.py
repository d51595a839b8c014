"""Valid JSON past Python's digit or recursion limit in the three JSON reads of b1's files that s60 r1 left
(s60 r2): they are now on ``retrieval.io.json_limit_error``'s rule. Before (462c2f7's tree):

* ``--metadata`` / ``--gen_kwargs`` / ``--model_args`` holding a JSON object nested 30,000 deep, or an integer of 5001
  digits, under ``lm_eval`` or ``tokrag eval``: lm-eval's ``try_parse_json`` (inside the hook's ``MergeDictAction``
  patch) raised a RecursionError or ``ValueError: Exceeds the limit (4300 digits) ...; use
  sys.set_int_max_str_digits() ...`` traceback, exit 1, for any model. Now json_limit_error's line naming the flag
  (exit 2 before anything loads; ``tokrag eval: error:`` under ``tokrag eval``).
* the hook's ``typed_pairs`` (the repeated-key check's reader of those flags) and the ``Invalid JSON`` line's second
  read of the value: a RecursionError where the value sits at the limit.
* ``tasks.precheck._run_cached`` (the run-cache look-up of a ``prebuilt:`` corpus' task before the load) over a
  cached run's ``meta.json`` nested too deep: a RecursionError traceback. Now no hit, as a malformed one.
"""

from __future__ import annotations

import json
import sys

import pytest
from json_limit_helpers import DIGITS, NESTED, limits  # noqa: F401 (limits: an autouse fixture)

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load

BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--tasks", "nq_oracle_bm25",
        "--limit", "1", "--device", "cpu"]
DEEP = '{"a": ' + "[" * 30_000 + "]" * 30_000 + "}"
BIG = '{"hits": 1' + "0" * 5000 + "}"


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)


@pytest.mark.parametrize("flag, value, why", [("--metadata", DEEP, NESTED), ("--gen_kwargs", DEEP, NESTED),
                                              ("--metadata", BIG, DIGITS)], ids=["metadata-deep", "gen-deep",
                                                                                 "metadata-digits"])
def test_tokrag_eval_flag_past_a_limit(no_model, flag, value, why):
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError) as exc:
        main([*BASE, flag, value])
    assert str(exc.value) == f"{flag}: {why}"


def test_lm_eval_cli_line(no_model, capsys, monkeypatch):
    """Under lm_eval (any model: the flag is parsed before the model is known): argparse's exit 2 with the line."""
    from lm_eval._cli.harness import HarnessCLI

    monkeypatch.setattr(sys, "argv", ["lm_eval", "run", "--model", "hf", "--tasks", "nq_oracle_bm25", "--metadata", BIG])
    with pytest.raises(SystemExit) as exc:
        HarnessCLI().parse_args()
    assert exc.value.code == 2
    assert capsys.readouterr().err == f"lm_eval: error: --metadata: {DIGITS}\n"


def test_a_refused_parse_leaves_no_values_behind(no_model, monkeypatch):
    """The values noted while lm-eval's parser ran (for the repeated-key check) are dropped when the parse is refused
    there: a later run in the same process (tokrag eval's main called again) matched the refused parse's entry (its
    --metadata None, as the later run's) and its repeated --model_args key went unchecked."""
    from lm_eval._cli.harness import HarnessCLI

    from tokrag_model.eval_cli import main

    monkeypatch.setattr(sys, "argv", ["lm_eval", "run", "--model", "hf", "--tasks", "nq_oracle_bm25", "--metadata", BIG])
    with pytest.raises((SystemExit, ValueError)):  # ValueError: the traceback of 462c2f7's tree
        HarnessCLI().parse_args()
    with pytest.raises(ConfigError) as exc:
        main(["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct,layer=5,layer=20",
              "--tasks", "nq_oracle_bm25", "--limit", "1"])
    assert str(exc.value) == ("--model_args: key 'layer' is given twice: layer=5, then layer=20; lm-eval would keep "
                              "the last one silently: give it once")


def test_invalid_json_reread_past_the_limit(no_model, monkeypatch):
    """lm-eval stopped at a syntax error (``Invalid JSON``) and the hook's second read, a few frames deeper, at the
    recursion limit: the limit's line, not a RecursionError."""
    import lm_eval._cli.utils as utils

    parse = utils.try_parse_json

    def invalid(value):
        if value == DEEP:
            raise ValueError(f"Invalid JSON: {value}. Hint: Use double quotes for JSON strings.")
        return parse(value)

    monkeypatch.setattr(utils, "try_parse_json", invalid)
    from tokrag_model.eval_cli import main

    with pytest.raises(ConfigError) as exc:
        main([*BASE, "--metadata", DEEP])
    assert str(exc.value) == f"--metadata: {NESTED}"


def test_typed_pairs_past_the_limit():
    from tokrag_model._lmeval_hook import typed_pairs

    assert typed_pairs([DEEP]) == []
    assert typed_pairs([BIG]) == []
    assert typed_pairs(['{"hits": 3, "k": 2}']) == [("hits", "3"), ("k", "2")]  # as before
    assert typed_pairs(["hits=3,k=2"]) == [("hits", "3"), ("k", "2")]


def _meta(tmp_path, name: str, text: str):
    folder = tmp_path / "runs" / name
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(text, encoding="utf-8")


def test_run_cached_deep_meta_is_no_hit(tmp_path):
    from tasks.precheck import _run_cached

    _meta(tmp_path, "bm25-deep", '{"config": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert _run_cached(tmp_path, "prebuilt:wikipedia-dpr-100w", "bm25", 5) is False


def test_run_cached_hit_as_before(tmp_path):
    from retrieval.cache import engine_versions, run_code
    from tasks.precheck import _run_cached

    config = {"retriever": "bm25", "corpus": {"name": "prebuilt:wikipedia-dpr-100w"}, "k": 5,
              "engine": engine_versions("bm25"), "code": run_code("bm25", prebuilt=True)}
    _meta(tmp_path, "bm25-good", json.dumps({"config": config}))
    assert _run_cached(tmp_path, "prebuilt:wikipedia-dpr-100w", "bm25", 5) is True
    assert _run_cached(tmp_path, "prebuilt:wikipedia-dpr-100w", "bm25", 6) is False
