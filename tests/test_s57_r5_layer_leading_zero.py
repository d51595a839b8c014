"""``layer=01`` is layer index 1 again (s57 r5, review of b1's 718d8b8).

718d8b8 refused ``layer=1.0`` (a float read as layer index 1, where a fraction 1.0 would mean the top) by taking any
text that reads as 1 but is not ``1``/``+1`` for the float; ``01``, ``+01`` and ``001`` are integers, were layer 1
before (as ``02`` is layer 2, then and now), and were refused as "1.0 is no fraction of the depth". ``1.0``, ``1e0``
and the float 1.0 stay refused.
"""

from __future__ import annotations

import pytest

from tokrag_model.args import layer_spec


@pytest.mark.parametrize("text, layer", [("01", 1), ("+01", 1), ("001", 1), (" 01 ", 1), ("1", 1), ("02", 2),
                                         ("-01", -1)])
def test_integer_text_with_leading_zeros_is_that_layer(text, layer):
    got = layer_spec(text)
    assert got == layer and type(got) is int


@pytest.mark.parametrize("value", ["1.0", "1e0", "01.0", "+1.", 1.0])
def test_one_as_a_float_is_still_refused(value):
    with pytest.raises(ValueError, match=r"is no fraction of the depth .* write 1 for layer index 1, -1 for the top"):
        layer_spec(value)
