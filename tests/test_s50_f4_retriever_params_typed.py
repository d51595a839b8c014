"""A retrieval parameter given as a whole number (``retriever_params: {k1: 1, b: 1}``, ``alpha: 1``) was kept as the
int: the run's cache key, its recorded ``params`` and so the docs' ``run_fingerprint`` (and with them ``--use_cache``'s
response keys, which hash the doc) differed from those of ``k1: 1.0`` for the same retrieval (the searchers compute with
``float(k1)``): over nq-dpr-1k, fingerprints fab5b3eaf94dcd222c2f and 19280e7a776eb9fbe8ea, the same hits and scores
(/work/scratch/s50/f4/e_repro.py). :func:`retrieval.api._resolve_params` now returns ``k1``, ``b`` and ``alpha`` as
floats; its messages still show the value as given."""
from __future__ import annotations

import json

import pytest

from retrieval.api import _resolve_params, _run_config
from retrieval.errors import ConfigError
from retrieval.io import fingerprint


def _run_key(retriever, p):
    config = _run_config(retriever, p, {"name": "c", "fingerprint": "f", "size": 1}, 5, {"q1": "who"}, {}, None)
    return fingerprint(config, 20)


@pytest.mark.parametrize("retriever, whole, real, prebuilt", [
    ("bm25", {"k1": 1, "b": 1}, {"k1": 1.0, "b": 1.0}, False),
    ("bm25", {"k1": 2, "b": 0}, {"k1": 2.0, "b": 0.0}, True),
    ("hybrid", {"fusion": "weighted", "alpha": 1, "k1": 1}, {"fusion": "weighted", "alpha": 1.0, "k1": 1.0}, False),
    ("hybrid", {"alpha": 2}, {"alpha": 2.0}, True),
])
def test_a_whole_number_parameter_is_the_float_setting(retriever, whole, real, prebuilt):
    p_whole, _ = _resolve_params(retriever, whole, prebuilt)
    p_real, _ = _resolve_params(retriever, real, prebuilt)
    assert json.dumps(p_whole, sort_keys=True) == json.dumps(p_real, sort_keys=True)  # 1 and 1.0 print apart
    assert all(type(p_whole[k]) is float for k in ("k1", "b", "alpha") if p_whole.get(k) is not None)
    assert _run_key(retriever, p_whole) == _run_key(retriever, p_real)


def test_the_defaults_and_whole_parameters_keep_their_keys():
    """The defaults (floats) and the whole-number parameters (``rrf_k``, ``depth``, ``max_length``) are as before."""
    p, _ = _resolve_params("hybrid", {"rrf_k": 30, "depth": 50})
    assert (p["k1"], p["b"], p["alpha"], p["rrf_k"], p["depth"], p["max_length"]) == (0.9, 0.4, 0.1, 30, 50, 256)
    assert [type(p[k]) for k in ("rrf_k", "depth", "max_length")] == [int, int, int]


def test_a_refused_value_is_named_as_given():
    with pytest.raises(ConfigError, match=r"^k1=-1: BM25 k1 must be >= 0 \(default 0\.9\)$"):
        _resolve_params("bm25", {"k1": -1})
