"""A nan or infinite ``alpha``, ``k1`` or ``b`` is a ConfigError naming the option. --alpha nan with weighted hybrid
fusion scored every passage nan and crashed with a traceback writing the TREC run (retrieval/cache.py)."""

from __future__ import annotations

import pytest

from retrieval.api import _resolve_params
from retrieval.errors import ConfigError


@pytest.mark.parametrize("retriever, name", [("bm25", "k1"), ("bm25", "b"), ("hybrid", "alpha"), ("hybrid", "k1")])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), "nan"])
def test_a_non_finite_param_is_refused_naming_it(retriever, name, value):
    params = {name: value, **({"fusion": "weighted", "alpha": 0.5} if retriever == "hybrid" and name != "alpha" else
                              {"fusion": "weighted"} if retriever == "hybrid" else {})}
    with pytest.raises(ConfigError, match=rf"^{name}=.* \(--{name}\): {name} must be a finite number$"):
        _resolve_params(retriever, params)


def test_finite_params_are_kept():
    p, _ = _resolve_params("bm25", {"k1": 1.2, "b": 0})
    assert (p["k1"], p["b"]) == (1.2, 0)
