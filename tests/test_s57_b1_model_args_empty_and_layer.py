"""Two ``--model_args`` values that ran silently with another meaning (s57 b1).

* ``k=`` (lm-eval reads ``key=`` as empty text, e.g. ``k=$K`` with K unset) meant the default, every attached passage;
  ``max_length=``, ``max_passage_tokens=`` and ``replug_temperature=`` likewise. ``query_field=`` and ``preset=``
  were already refused so (:func:`tokrag_model.args.nonempty_str`). ``none``/``null`` still mean the default.
* ``layer=1.0`` (a float, or text with a point) ran Tok-RAG at layer index 1, near the bottom, where a fraction
  1.0 of the depth means its top; ``layer=1`` (index 1), ``-1`` (the top) and fractions in (0, 1) are unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tokrag_model.args import COMMON_ARGS, layer_spec, parse_args, resolved_args, to_opt_float
from tokrag_model.methods import MODELS

EMPTY = ("it is empty (lm-eval reads key= as empty text, e.g. from an unset shell variable); give a number, "
         "or none or drop the argument for its default")


@pytest.mark.parametrize("key", ["k", "max_length", "max_passage_tokens", "max_batch_size"])
@pytest.mark.parametrize("value", ["", "  "])
def test_empty_optional_int_is_refused(key, value):
    with pytest.raises(ConfigError) as exc:
        parse_args("rag-standard", COMMON_ARGS, {key: value})
    assert str(exc.value) == (f"--model rag-standard: model argument {key}={value!r} is invalid: {EMPTY} "
                              f"({COMMON_ARGS[key].help})")


@pytest.mark.parametrize("value", ["none", "null", "None", None])
def test_none_still_means_the_default(value):
    assert parse_args("rag-standard", COMMON_ARGS, {"k": value, "max_length": value})["k"] is None
    assert to_opt_float(value) is None


def test_empty_replug_temperature_is_refused():
    with pytest.raises(ConfigError) as exc:
        resolved_args(MODELS["rag-replug"], {"replug_temperature": ""})
    assert f"model argument replug_temperature='' is invalid: {EMPTY}" in str(exc.value)
    assert resolved_args(MODELS["rag-replug"], {"replug_temperature": "0.5"})["replug_temperature"] == 0.5
    with pytest.raises(ValueError, match="it is empty"):
        to_opt_float("")


@pytest.mark.parametrize("value", [1.0, "1.0", "1.", "1e0", "+1.0"])
def test_layer_one_point_zero_is_refused(value):
    with pytest.raises(ValueError) as exc:
        layer_spec(value)
    assert str(exc.value) == ("1.0 is no fraction of the depth (those lie in (0, 1)) and was read as layer index 1, "
                              "near the bottom; write 1 for layer index 1, -1 for the top layer, or a fraction below 1")


@pytest.mark.parametrize("value, expected", [(1, 1), ("1", 1), ("+1", 1), (-1, -1), (-1.0, -1), (12.0, 12), ("12", 12),
                                             (0.5, 0.5), ("0.625", 0.625), (0, 0), ("dynamic", "dynamic")])
def test_other_layers_unchanged(value, expected):
    got = layer_spec(value)
    assert got == expected and type(got) is type(expected)


def test_layer_one_point_zero_through_tokrag_schema():
    with pytest.raises(ConfigError) as exc:
        resolved_args(MODELS["tokrag"], {"layer": 1.0})
    assert str(exc.value).startswith("--model tokrag: model argument layer=1.0 is invalid: 1.0 is no fraction")


def test_lm_eval_k_empty_stops_before_the_model_loads(tmp_path):
    """The command line: one line, exit 2, no traceback (it ran every attached passage with exit 0)."""
    (tmp_path / "p.jsonl").write_text('{"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}\n')
    (tmp_path / "q.jsonl").write_text('{"id": "q1", "question": "capital of france", "answers": ["Paris"]}\n')
    env = {**os.environ, "TOKRAG_TRACEBACK": "", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "tokrag", "--model_args", "pretrained=smollm2-135m-instruct,k=",
         "--tasks", "rag_qa_bm25", "--device", "cpu", "--limit", "1",
         "--metadata", '{"questions": "q.jsonl", "corpus": "p.jsonl", "hits": 1}'],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert f"lm_eval: error: --model tokrag: model argument k='' is invalid: {EMPTY}" in proc.stderr
