"""An integer too large for a float (``k1: 1000...0``, 400 digits, as PyYAML reads it from a task YAML) given as a
BM25/hybrid parameter or a QA option is one ConfigError line naming the argument by its size, not an OverflowError
traceback (s59 f3; the rank rule of retrieval.cache.check_rank, 95f5003)."""
from __future__ import annotations

import pytest
import yaml

from retrieval.api import _resolve_params
from retrieval.errors import ConfigError
from tasks.rag import check_qa_options
from tasks.utils import qa_arguments

BIG = int("1" + "0" * 400)  # what `k1: 1000...0` (400 digits) in a task YAML reads as


def test_yaml_gives_an_int():
    assert yaml.safe_load("k1: 1" + "0" * 400) == {"k1": BIG}


@pytest.mark.parametrize("retriever,name", [("bm25", "k1"), ("bm25", "b"), ("hybrid", "alpha")])
@pytest.mark.parametrize("value", [BIG, -BIG], ids=["plus", "minus"])
def test_retriever_param_too_large_for_a_float(retriever, name, value):
    params = {name: value, **({"fusion": "weighted"} if name == "alpha" else {})}
    with pytest.raises(ConfigError) as info:
        _resolve_params(retriever, params)
    msg = str(info.value)
    assert msg == f"{name}=an integer of 1329 bits, too large for a float (--{name}): {name} must be a finite number"
    assert "\n" not in msg


def test_task_metadata_retriever_params():
    with pytest.raises(ConfigError) as info:
        qa_arguments({"dataset": "nq_open", "retriever_params": {"k1": BIG}}, "nq_open_bm25")
    assert str(info.value) == ("nq_open_bm25: task metadata retriever_params k1=an integer of 1329 bits, too large "
                               "for a float: k1 must be a finite number")


def test_a_float_sized_value_is_as_before():
    p, _ = _resolve_params("bm25", {"k1": 10**300, "b": 1})
    assert p["k1"] == 1e300 and p["b"] == 1.0
    with pytest.raises(ConfigError, match=r"^k1=inf \(--k1\): k1 must be a finite number$"):
        _resolve_params("bm25", {"k1": float("inf")})


def test_qa_options_noise_and_k():
    with pytest.raises(ConfigError) as info:
        check_qa_options("nq_open", noise=BIG)
    assert str(info.value) == ("noise=an integer of 1329 bits, too large for a float: the noise fraction must be a "
                               "number in [0, 1] (e.g. 0.2 for *_noise20)")
    with pytest.raises(ConfigError) as info:
        check_qa_options("nq_open", k=BIG)
    assert str(info.value) == ("k=an integer of 1329 bits, too large for a float: the number of passages per question "
                               "must be an integer >= 1 and at most 2147483647 (Lucene and Pyserini take it as a Java int)")
    assert check_qa_options("nq_open", k=5, noise=0.2) == 5
