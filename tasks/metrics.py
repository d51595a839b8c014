"""Short-answer QA metrics: exact match, token F1 and answer match, each the max over gold answers.

Normalisation is SQuAD v1.1's ``normalize_answer`` (Rajpurkar et al. 2016, the official evaluation
script): lower-case, drop ASCII/Unicode punctuation, drop the articles ``a``/``an``/``the``, collapse
whitespace. Both sides are first put in Unicode NFC (composed) form, which the SQuAD script does not do, so a
gold typed decomposed (NFD, as macOS writes ``"São Paulo"``) matches the same text composed, as ``answer_recall``
(DPR ``has_answer``, which normalises both sides too) already finds. With several gold answers each metric is the maximum over the golds (SQuAD script,
``metric_max_over_ground_truths``), computed per sample here because lm-eval's own multi-target
path binarises F1.

* ``em``: 1.0 if the normalised prediction equals a normalised gold answer.
* ``f1``: bag-of-tokens F1 between normalised prediction and gold (SQuAD ``f1_score``).
* ``answer_match``: 1.0 if the token sequence of a normalised gold answer occurs contiguously in the
  normalised prediction ("the answer is contained in the output", the accuracy of Tok-RAG's QA
  experiments, Xu et al. 2025, and of Self-RAG/INFO-RAG). Containment is token-aligned, so the gold
  ``"1"`` does not match the prediction ``"10"``.

Two rules close the SQuAD script's edge cases (issue 12.1):

1. **An empty prediction never scores.** A prediction that is empty or whitespace only gets 0 on all
   three metrics (the SQuAD script gives EM = F1 = 1 when prediction and gold both normalise to "").
2. **A gold answer that SQuAD normalisation maps to nothing** (``"A+"``, ``"*"``, ``")"``, ``"---"``,
   ``"The The"``) is compared with the *light* normalisation instead, on both sides: lower-case, then
   tokens are runs of word characters and single punctuation characters (:func:`light_tokens`:
   ``"A+"`` -> ``["a", "+"]``); articles are kept. EM is equality of the token lists, F1 the same
   bag-of-tokens F1, answer match token-aligned containment. So ``"A+"`` scores EM 1 against the gold
   ``"A+"`` and ``"The answer is A+."`` matches it, while ``"A"`` or ``"AB+"`` do not. As SQuAD
   normalisation does for ``"Paris."`` against ``"Paris"`` and for ``"Paris"`` against ``"Paris."``,
   sentence punctuation (``. , ; : ! ?``) that ends one side beyond what the other side ends with costs
   nothing for EM and F1, whichever side it is on (:func:`_cut_sentence_end`, applied both ways):
   ``"A+."`` and ``"the the."`` score EM 1 against ``"A+"`` and ``"The The"``, ``"---."`` against
   ``"---"``, ``"A+"`` against the gold ``"A+."``, and ``"?"`` still scores EM 1 against the gold
   ``"?"`` (a gold is never cut to nothing). A gold made only of sentence punctuation (``"!!!"``, the band) is
   not cut at all, and answer match needs its whole run: ``"!"`` and ``"I have no idea!"`` do not score against
   it (the prediction side is cut as before, so ``"?."`` still scores EM 1 against the gold ``"?"`` but ``"?"``
   scores EM 0 against ``"?."``: here the rule is one-sided). Punctuation that differs is kept: ``"A+."`` against
   ``"A+!"`` scores EM 0. Answer match applies the same rule where the gold occurs in the prediction
   (:func:`_occurs`): the prediction's punctuation after the occurrence and the gold's final punctuation
   must agree as far as the shorter goes, so ``"A+ is the answer."`` matches the gold ``"A+."``.
   A gold with no light tokens either (empty or whitespace only) can never be matched:
   :func:`unscorable_golds` finds them. No gold of the shipped data sets is unscorable; four NQ-open
   questions have golds that need the light rule (listed in ``tasks/README.md``, checked by ``tests/test_metrics.py``).

Both rules keep the per-sample invariants EM = 1 ⇒ F1 = 1 and EM = 1 ⇒ answer match = 1 (F1 = 1 does not give
answer match = 1: ``"Paris, France"`` against ``"France Paris"`` has F1 1, as in the SQuAD script, and no match).
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
_LIGHT_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def _is_punct(ch: str) -> bool:
    return ch in _PUNCT or unicodedata.category(ch).startswith("P")


class _DropPunct(dict):
    """``str.translate`` table that deletes the characters :func:`_is_punct` calls punctuation, filled per code point on
    first sight: the same text as joining the non-punctuation characters, without a Python call per character
    (drawing a noise task's passages normalises ~12k passages: 2.2 s of its 5.5 s load went to that join)."""

    def __missing__(self, code: int) -> int | None:
        value = None if _is_punct(chr(code)) else code
        self[code] = value
        return value


_DROP_PUNCT = _DropPunct()


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower-case, remove punctuation, articles and extra whitespace.

    Example: ``"The  U.S.!"`` -> ``"us"``; ``"1.5"`` -> ``"15"`` (punctuation inside numbers is
    removed on both sides, so ``"1.5"`` still matches ``"1.5"``). Unlike the official script, which removes
    only ASCII ``string.punctuation``, Unicode punctuation (category P*) is removed too, so ``"Destiny’s Child"``
    and ``"Destiny's Child"`` both give ``"destinys child"``. The text is first put in Unicode NFC form (also not in
    the official script), so decomposed (NFD) and composed spellings of ``"São Paulo"`` both give ``"são paulo"``.
    """
    text = unicodedata.normalize("NFC", str(text)).lower()
    text = text.translate(_DROP_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def light_tokens(text: str) -> list[str]:
    """The light normalisation of golds that SQuAD normalisation empties: lower-case word runs and single
    non-space symbols, articles kept. ``"A+"`` -> ``["a", "+"]``; ``"---"`` -> ``["-", "-", "-"]``;
    ``"The The"`` -> ``["the", "the"]``. The text is first put in Unicode NFC form, as in :func:`normalize_answer`."""
    return _LIGHT_TOKEN.findall(unicodedata.normalize("NFC", str(text)).lower())


def _golds(answers: Sequence[str] | str) -> list[str]:
    if isinstance(answers, str):
        answers = [answers]
    golds = [str(a) for a in answers if a is not None]
    if not golds:
        raise DataError("a QA sample has no gold answers: every sample needs at least one answer string")
    return golds


def _f1_one(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    if not pred_tokens or not gold_tokens:
        return 0.0  # an empty side never scores (rule 1; empty golds go through the light rule)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    if n == 0:
        return False
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


SENTENCE_END = frozenset(".,;:!?")
"""The sentence punctuation a light-rule prediction may end with at no cost (module rule 2)."""


def _trailing_run(tokens: list[str]) -> int:
    """Length of the run of :data:`SENTENCE_END` tokens that ends ``tokens``."""
    n = 0
    while n < len(tokens) and tokens[-1 - n] in SENTENCE_END:
        n += 1
    return n


def _cut_sentence_end(pred_tokens: list[str], gold_tokens: list[str]) -> list[str]:
    """The light tokens of one side without the sentence punctuation it ends with beyond the other side's own.

    When ``pred_tokens``' final run of :data:`SENTENCE_END` tokens starts with ``gold_tokens``' final run,
    the run is cut to the latter (``"A+."`` vs ``"A+"`` -> ``a +``; ``"?."`` vs ``"?"`` -> ``?``); otherwise
    the tokens are returned as they are (``"A+."`` vs ``"A+!"`` keeps its ``.``). SQuAD normalisation drops
    this punctuation on the usual path, so ``"Paris."`` == ``"Paris"`` there too. :func:`_score_one` calls
    it both ways (prediction against gold, gold against prediction), so the rule is symmetric.
    """
    p, g = _trailing_run(pred_tokens), _trailing_run(gold_tokens)
    if p <= g:
        return pred_tokens
    run_start = len(pred_tokens) - p
    if pred_tokens[run_start:run_start + g] != gold_tokens[len(gold_tokens) - g:]:
        return pred_tokens
    return pred_tokens[:run_start + g]


def _occurs(pred_tokens: list[str], gold_tokens: list[str]) -> bool:
    """Whether the gold occurs, token-aligned, in the prediction, with module rule 2's sentence punctuation.

    At an occurrence of the gold's tokens before its final :data:`SENTENCE_END` run, the run of sentence
    punctuation that follows in the prediction and the gold's run must agree as far as the shorter goes
    (one starts with the other), and at least one token must be matched. For a gold that does not end
    with sentence punctuation this is plain containment; ``"A+ is the answer."`` contains the gold
    ``"A+."`` (nothing follows ``a +`` but ``is``), ``"A+."`` does not contain ``"A+!"``. A gold made only of
    sentence punctuation must occur whole (plain containment): ``"I have no idea!"`` does not contain ``"!!!"``.
    """
    g = _trailing_run(gold_tokens)
    if g == len(gold_tokens):  # a gold made only of sentence punctuation ("!!!", the band) is all answer
        return _contains(pred_tokens, gold_tokens)
    core, run = gold_tokens[:len(gold_tokens) - g], gold_tokens[len(gold_tokens) - g:]
    c = len(core)
    for i in range(len(pred_tokens) - c + 1):
        if pred_tokens[i:i + c] != core:
            continue
        j = i + c
        while j < len(pred_tokens) and pred_tokens[j] in SENTENCE_END:
            j += 1
        n = min(j - (i + c), g)
        if c + n > 0 and pred_tokens[i + c:i + c + n] == run[:n]:
            return True
    return False


def _score_one(prediction: str, gold: str) -> tuple[float, float, float]:
    """(em, f1, answer_match) of one prediction against one gold, with the module's two rules."""
    if not prediction.strip():
        return 0.0, 0.0, 0.0
    gold_tokens = normalize_answer(gold).split()
    if gold_tokens:
        pred_tokens = normalize_answer(prediction).split()
        if not pred_tokens:
            return 0.0, 0.0, 0.0
        return (float(pred_tokens == gold_tokens), _f1_one(pred_tokens, gold_tokens),
                float(_contains(pred_tokens, gold_tokens)))
    gold_tokens, match_tokens = light_tokens(gold), light_tokens(prediction)
    if not gold_tokens:
        return 0.0, 0.0, 0.0
    pred_tokens = _cut_sentence_end(match_tokens, gold_tokens)
    # the same cut the other way (rule 2 is symmetric), but a gold is never cut to nothing ("?" vs "what"), and one
    # made only of sentence punctuation is not cut at all: its punctuation is the answer ("!" vs the band "!!!")
    gold_only_punct = _trailing_run(gold_tokens) == len(gold_tokens)
    gold_cut = gold_tokens if gold_only_punct else (_cut_sentence_end(gold_tokens, match_tokens) or gold_tokens)
    if not pred_tokens:
        return 0.0, 0.0, 0.0
    return (float(pred_tokens == gold_cut), _f1_one(pred_tokens, gold_cut),
            float(_occurs(match_tokens, gold_tokens)))


def exact_match(prediction: str, answers: Sequence[str] | str) -> float:
    """Max over gold answers of ``normalize(prediction) == normalize(gold)`` (1.0 or 0.0; module rules)."""
    return max(_score_one(str(prediction), g)[0] for g in _golds(answers))


def f1_score(prediction: str, answers: Sequence[str] | str) -> float:
    """Max over gold answers of the SQuAD bag-of-tokens F1 (harmonic mean of token precision/recall)."""
    return max(_score_one(str(prediction), g)[1] for g in _golds(answers))


def answer_match(prediction: str, answers: Sequence[str] | str) -> float:
    """1.0 if some normalised gold answer occurs, token-aligned, inside the normalised prediction.

    A gold answer that SQuAD normalisation empties is matched with :func:`light_tokens` (module rule 2);
    one that is empty either way (e.g. ``""``) never matches.
    """
    return max(_score_one(str(prediction), g)[2] for g in _golds(answers))


def qa_scores(prediction: str, answers: Sequence[str] | str) -> dict[str, float]:
    """``{"em", "f1", "answer_match"}`` for one prediction, each the max over ``answers``.

    ``qa_scores("", ["A+", "AB+"])`` -> all 0.0; ``qa_scores("A+", ["A+", "AB+"])`` -> all 1.0.
    """
    scores = [_score_one(str(prediction), g) for g in _golds(answers)]
    return {"em": max(s[0] for s in scores), "f1": max(s[1] for s in scores), "answer_match": max(s[2] for s in scores)}


def light_rule_golds(answers: Iterable[str]) -> list[str]:
    """The gold answers scored with the light normalisation (SQuAD normalisation empties them)."""
    return [str(a) for a in answers if a is not None and not normalize_answer(a) and light_tokens(a)]


def unscorable_golds(answers: Iterable[str]) -> list[str]:
    """The gold answers no prediction can match under the module's rules (empty under both normalisations)."""
    return [str(a) for a in answers if a is not None and not light_tokens(a)]


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
