"""Long-form generation metrics of the KILT ELI5 and Wizard-of-Wikipedia tasks: ROUGE-L and token F1.

* ``rougeL``: ROUGE-L F-measure (longest common subsequence; Lin 2004) of the generation against the
  references, the best over references, computed with Google's ``rouge_score`` package exactly as Hugging
  Face ``evaluate``'s ``rouge`` metric does for several references per prediction (``RougeScorer(["rougeL"],
  use_stemmer=False).score_multi``). ``evaluate.load("rouge")`` itself fetches its metric script from the
  Hugging Face hub, so it does not work offline; ``rouge_score`` is the package it wraps.
* ``f1``: SQuAD token F1 (:func:`tasks.metrics.f1_score`), the best over references (KILT's F1).

KILT (Petroni et al., NAACL 2021) reports both for ELI5 and WoW; the Tok-RAG paper lists ROUGE-L/F1 for these
tasks (../shared/docs/tokrag_method.md §5.1; unverified which). All scores are floats in [0, 1].
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .metrics import f1_score


@lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def rouge_l(prediction: str, references: list[str]) -> float:
    """ROUGE-L F-measure of ``prediction``, best over ``references`` (module docstring); 0.0 for an empty prediction."""
    refs = [r for r in references if isinstance(r, str) and r.strip()]
    if not refs or not prediction.strip():
        return 0.0
    return float(_scorer().score_multi(refs, prediction)["rougeL"].fmeasure)


def longform_text(generation: str | None) -> str:
    """The generation with surrounding whitespace removed (ELI5: every line is scored)."""
    return (generation or "").strip()


def process_results_longform(doc: dict, results: list[str]) -> dict[str, float]:
    """Per-sample ``rougeL`` and ``f1``, each the best over ``doc["answers"]`` (the references)."""
    return _scores(doc, longform_text(results[0] if results else ""))


def process_results_dialogue(doc: dict, results: list[str]) -> dict[str, float]:
    """Like :func:`process_results_longform` over the first non-empty line (WoW: one reply)."""
    from .utils import answer_line

    return _scores(doc, answer_line(results[0] if results else ""))


def _scores(doc: dict[str, Any], pred: str) -> dict[str, float]:
    refs = list(doc["answers"])
    return {"rougeL": rouge_l(pred, refs), "f1": f1_score(pred, refs)}
