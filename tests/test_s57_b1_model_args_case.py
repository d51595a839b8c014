"""A model argument in other case (``K=3``, ``ALPHA=2``, ``PRETRAINED=...``) was refused without a suggestion:
difflib's ratio between 'K' and 'k' is 0, so the line listed the valid keys but named none (s57 b1). Now the case
variant is the did-you-mean; a typo keeps its closest match, a name like none gets none."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tokrag_model.args import resolved_args
from tokrag_model.methods import MODELS


@pytest.mark.parametrize("method, key, meant", [("tokrag", "K", "k"), ("rag-cad", "ALPHA", "alpha"),
                                                ("rag-standard", "PRETRAINED", "pretrained"),
                                                ("rag-standard", "Max_Gen_Toks", "max_gen_toks"),
                                                ("tokrag", "layr", "layer"), ("tokrag", " k", "k")])
def test_case_variant_is_suggested(method, key, meant):
    with pytest.raises(ConfigError) as exc:
        resolved_args(MODELS[method], {key: 3})
    assert str(exc.value).startswith(f"--model {method}: unknown model argument(s) {key!r} (did you mean {meant!r}?); "
                                     "valid keys: add_bos_token, ")


def test_no_suggestion_for_a_name_like_none():
    with pytest.raises(ConfigError) as exc:
        resolved_args(MODELS["tokrag"], {"zzz": 3})
    assert str(exc.value).startswith("--model tokrag: unknown model argument(s) 'zzz'; valid keys: ")
