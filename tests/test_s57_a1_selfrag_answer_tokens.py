"""The Self-RAG-style critic's Yes/No tokens (s57 a1 audit): the first token of " Yes" and of " No" was taken as is,
so a tokenizer that encodes them as a bare space piece then the word (SentencePiece's ``▁`` first, as a legacy
Llama/Mistral tokenizer does) put that one piece in both sums and pulled every ratio towards 0.5."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from retrieval.errors import ConfigError
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

SPACE, YES, NO, YES_LC, NO_LC, OTHER = 0, 1, 2, 3, 4, 5
PIECES = {SPACE: "\u2581", YES: "Yes", NO: "No", YES_LC: "yes", NO_LC: "no", OTHER: "Paris"}


class SpaceFirstTokenizer:
    """A toy SentencePiece-like tokenizer: a word with a leading space is the bare ``▁`` piece, then the word."""

    name_or_path = "toy-sp"

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        word = {v: k for k, v in PIECES.items()}[text.strip()]
        return [SPACE, word] if text.startswith(" ") else [word]

    def decode(self, ids: list[int]) -> str:
        return "".join(PIECES[i] for i in ids).replace("\u2581", " ")


class OneTokenTokenizer(SpaceFirstTokenizer):
    """Every word one token (SmolLM2 / Gemma 3 style: "Yes" and " Yes" are two tokens, neither blank)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [{v: k for k, v in PIECES.items()}[text.strip()]]


def test_a_bare_space_piece_is_in_neither_list():
    from tokrag_model.methods.selfrag_filter import answer_token_ids

    assert answer_token_ids(SpaceFirstTokenizer()) == ([YES, YES_LC], [NO, NO_LC])
    assert answer_token_ids(OneTokenTokenizer()) == ([YES, YES_LC], [NO, NO_LC])


def test_the_critic_ratio_by_hand():
    # next-token distribution after the critic prompt: P(▁) = .5, P(Yes) = .3, P(No) = .1, P(Paris) = .1
    lp = torch.log(torch.tensor([0.5, 0.3, 0.1, 0.0, 0.0, 0.1]))
    lm = SimpleNamespace(tokenizer=SpaceFirstTokenizer(),
                         decoder=SimpleNamespace(next_logprobs_shared_prefix=lambda prefix, sufs: lp.expand(len(sufs), -1)))
    SelfRAGFilterLM.setup(lm)
    (r,) = SelfRAGFilterLM._yes_no_ratios(lm, [7], [[8]])
    # by hand: r = P(Yes)/(P(Yes)+P(No)) = .3/.4 = .75 (with ▁ counted in both sums: .8/1.4 = .5714)
    assert not math.isclose(r, 0.8 / 1.4, abs_tol=1e-3)
    assert r == pytest.approx(0.75, abs=1e-6)
    assert (lm.yes_ids, lm.no_ids) == ([YES, YES_LC], [NO, NO_LC])


def test_a_tokenizer_that_cannot_tell_yes_from_no_is_refused():
    class Blind(SpaceFirstTokenizer):
        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            return [OTHER]  # every word starts with the same token

    from tokrag_model.methods.selfrag_filter import answer_token_ids

    with pytest.raises(ConfigError, match=r"tokenizer 'toy-sp' leaves the critic no Yes token .* encodes Yes and No "
                                          r"apart$"):
        answer_token_ids(Blind())
