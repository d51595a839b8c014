"""A gold answer in decomposed Unicode (NFD, as macOS writes it) scores like the same text composed (NFC).

Found by breaker b4 (stop 45): the gold "São Paulo" in NFD against the prediction "São Paulo" in NFC gave em 0,
f1 0.5, answer_match 0 while answer_recall (DPR has_answer) gave 1.
"""

from __future__ import annotations

import unicodedata

import pytest

from tasks.metrics import light_tokens, normalize_answer, qa_scores
from tasks.utils import process_results_qa

NFC = "São Paulo"
NFD = unicodedata.normalize("NFD", NFC)


def test_spellings_differ() -> None:
    assert NFC != NFD and len(NFD) == len(NFC) + 1


@pytest.mark.parametrize(("pred", "gold"), [(NFC, NFD), (NFD, NFC), (NFD, NFD)])
def test_nfd_and_nfc_spellings_score_alike(pred: str, gold: str) -> None:
    assert normalize_answer(pred) == normalize_answer(gold) == "são paulo"
    assert qa_scores(pred, [gold]) == {"em": 1.0, "f1": 1.0, "answer_match": 1.0}
    assert qa_scores(f"It is {pred}.", [gold]) == {"em": 0.0, "f1": pytest.approx(2 / 3), "answer_match": 1.0}


def test_light_tokens_are_nfc_too() -> None:
    # the light normalisation (golds SQuAD normalisation empties) composes too: NFD "Ñ" is one word token, not "n" + mark
    assert light_tokens(unicodedata.normalize("NFD", "Ñ+")) == ["ñ", "+"] == light_tokens("Ñ+")


def test_process_results_qa_agrees_with_answer_recall() -> None:
    doc = {"answers": [NFD], "ctxs": [{"docid": "p4", "text": "São Paulo is the most populous city in Brazil."}]}
    out = process_results_qa(doc, [NFC])
    assert out["answer_recall"] == 1.0
    assert (out["em"], out["f1"], out["answer_match"]) == (1.0, 1.0, 1.0)
