""":class:`tokrag_model.base.GenKwargsValueError` survives a pickle round trip (s57 r10): c4dc654 gave it a required
``key`` argument, and an exception is unpickled by calling its class with its ``args`` (the message only), so a copy
sent between processes (multiprocessing, a --jobs worker's result) raised TypeError instead of the one line."""

from __future__ import annotations

import pickle

import pytest


def test_the_error_pickles_with_its_message():
    from tokrag_model.base import GenKwargsValueError, check_gen_kwarg_values

    with pytest.raises(GenKwargsValueError) as exc:
        check_gen_kwarg_values({"until": ["\n"], "top_p": float("inf")})
    assert exc.value.key == "top_p"
    copy = pickle.loads(pickle.dumps(exc.value))
    assert type(copy) is GenKwargsValueError
    assert str(copy) == "top_p=inf is not a finite number; give a number or drop top_p"
