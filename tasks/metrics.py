"""Short-answer QA metrics: exact match, token F1 and answer match, each the max over gold answers.

Normalisation is SQuAD v1.1's ``normalize_answer`` (Rajpurkar et al. 2016, the official evaluation
script): lower-case, drop ASCII/Unicode punctuation, drop the articles ``a``/``an``/``the``, collapse
whitespace. With several gold answers each metric is the maximum over the golds (SQuAD script,
``metric_max_over_ground_truths``), computed per sample here because lm-eval's own multi-target
path binarises F1.

* ``em``: 1.0 if the normalised prediction equals a normalised gold answer.
* ``f1``: bag-of-tokens F1 between normalised prediction and gold (SQuAD ``f1_score``).
* ``answer_match``: 1.0 if the token sequence of a normalised gold answer occurs contiguously in the
  normalised prediction ("the answer is contained in the output", the accuracy of Tok-RAG's QA
  experiments, Xu et al. 2025, and of Self-RAG/INFO-RAG). Containment is token-aligned, so the gold
  ``"1"`` does not match the prediction ``"10"``.

All scores are floats in [0, 1]. An empty gold list raises :class:`retrieval.errors.DataError`.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

from retrieval.errors import DataError

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def _is_punct(ch: str) -> bool:
    return ch in _PUNCT or unicodedata.category(ch).startswith("P")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower-case, remove punctuation, articles and extra whitespace.

    Example: ``"The  U.S.!"`` -> ``"us"``; ``"1.5"`` -> ``"15"`` (punctuation inside numbers is
    removed on both sides, so ``"1.5"`` still matches ``"1.5"``).
    """
    text = str(text).lower()
    text = "".join(ch for ch in text if not _is_punct(ch))
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(answers: Sequence[str] | str) -> list[str]:
    if isinstance(answers, str):
        answers = [answers]
    golds = [str(a) for a in answers if a is not None]
    if not golds:
        raise DataError("a QA sample has no gold answers: every sample needs at least one answer string")
    return golds


def exact_match(prediction: str, answers: Sequence[str] | str) -> float:
    """Max over gold answers of ``normalize(prediction) == normalize(gold)`` (1.0 or 0.0)."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(answers)))


def _f1_one(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    if not pred_tokens or not gold_tokens:
        # SQuAD v2 convention: both empty -> 1, one empty -> 0.
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, answers: Sequence[str] | str) -> float:
    """Max over gold answers of the SQuAD bag-of-tokens F1 (harmonic mean of token precision/recall)."""
    pred_tokens = normalize_answer(prediction).split()
    return max(_f1_one(pred_tokens, normalize_answer(g).split()) for g in _golds(answers))


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    if n == 0:
        return False
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def answer_match(prediction: str, answers: Sequence[str] | str) -> float:
    """1.0 if some normalised gold answer occurs, token-aligned, inside the normalised prediction.

    A gold answer that normalises to nothing (e.g. ``"."``) never matches.
    """
    pred_tokens = normalize_answer(prediction).split()
    return float(any(_contains(pred_tokens, normalize_answer(g).split()) for g in _golds(answers)))


def qa_scores(prediction: str, answers: Sequence[str] | str) -> dict[str, float]:
    """``{"em", "f1", "answer_match"}`` for one prediction, each the max over ``answers``."""
    return {
        "em": exact_match(prediction, answers),
        "f1": f1_score(prediction, answers),
        "answer_match": answer_match(prediction, answers),
    }


def mean_and_stderr(values: Iterable[float]) -> tuple[float, float]:
    """Sample mean and its standard error ``s / sqrt(n)`` (``s`` with Bessel's correction), as lm-eval's
    ``mean_stderr``; the stderr of fewer than two values is 0.0."""
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        raise DataError("mean_and_stderr of an empty list")
    mean = sum(vals) / n
    if n < 2:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in vals) / (n - 1)
    return mean, (var / n) ** 0.5
