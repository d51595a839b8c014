"""Long-form generation metrics of the KILT ELI5 and Wizard-of-Wikipedia tasks: ROUGE-L (two definitions) and token F1.

* ``rougeL``: Hugging Face ``evaluate``'s ROUGE-L: the F-measure of the longest common subsequence (Lin 2004) of
  the generation and the references, the best over references, computed with Google's ``rouge_score`` package
  exactly as ``evaluate``'s ``rouge`` metric does for several references per prediction (``RougeScorer(["rougeL"],
  use_stemmer=False).score_multi``): the texts are lower-cased and cut into tokens of letters and digits
  (punctuation dropped), one LCS over the whole text. ``evaluate.load("rouge")`` itself fetches its metric script
  from the Hugging Face hub, so it does not work offline; ``rouge_score`` is the package it wraps. Not KILT's figure.
* ``rougeL_kilt_downstream``: KILT's downstream ROUGE-L (``eval_downstream``'s ``downstream.rougel``), not KILT-RL
  (KILT's headline ``kilt.KILT-rl``, which counts a sample only when its provenance R-precision is 1), as the
  official scorer computes it (``kilt/eval_downstream.py``, ``_rougel_score``: the ``rouge`` package's
  ``Rouge().get_scores(prediction, reference, avg=True)["rouge-l"]["f"]``, "no normalization", the best over the
  references): the same package (pltrdy ``rouge``, pinned at 1.0.0, the release of KILT's time; its ROUGE-L is
  unchanged in 1.0.1) cuts each text into sentences at ".", keeps case and all other punctuation (tokens split at
  spaces, ``"air,"`` is not ``"air"``), and scores the summary-level union LCS (Lin 2004 §3.2). ``"Sunlight is
  scattered by air. Blue light scatters more."`` against ``"sunlight is scattered by air, blue light scatters
  more"``: ``rougeL`` 1.0, ``rougeL_kilt_downstream`` 0.667. Where KILT's script stops with an error (a prediction
  or reference with no sentence left, e.g. ``"..."``) the pair scores 0.0.
* ``f1``: SQuAD token F1 (:func:`tasks.metrics.f1_score`), the best over references (KILT's F1 normalises as
  SQuAD; :mod:`tasks.metrics` adds a rule for answers that normalisation empties).

KILT (Petroni et al., NAACL 2021) reports ROUGE-L and F1 for ELI5 and WoW; the Tok-RAG paper lists ROUGE-L/F1 for
these tasks (../shared/docs/tokrag_method.md §5.1; unverified which). All scores are floats in [0, 1].
"""

from __future__ import annotations

import sys
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


@lru_cache(maxsize=1)
def _kilt_rouge():
    from rouge import Rouge

    return Rouge(metrics=["rouge-l"])  # KILT's Rouge() also computes rouge-1/2: same ROUGE-L, same errors


def kilt_rouge_l(prediction: str, references: list[str]) -> float:
    """KILT's ROUGE-L F of ``prediction``, best over ``references`` (module docstring, ``rougeL_kilt_downstream``).

    The prediction and the references are stripped and empty ones dropped, as KILT's scorer does (it refuses an
    empty prediction: 0.0 here). A pair the ``rouge`` package cannot score (no sentence after its split at ".")
    scores 0.0. The package reconstructs each LCS recursively (one call per word of a sentence pair), so the
    recursion limit is raised for the call to the words of the two texts.
    """
    pred = prediction.strip()
    refs = [r.strip() for r in references if isinstance(r, str) and r.strip()]
    if not refs or not pred:
        return 0.0
    best, old = 0.0, sys.getrecursionlimit()
    try:
        for ref in refs:
            sys.setrecursionlimit(max(old, old + len(pred.split()) + len(ref.split())))
            try:
                best = max(best, float(_kilt_rouge().get_scores(pred, ref, avg=True)["rouge-l"]["f"]))
            except ValueError:  # "Collections must contain at least 1 sentence." (KILT's script stops here)
                pass
    finally:
        sys.setrecursionlimit(old)
    return best


def longform_text(generation: str | None) -> str:
    """The generation with surrounding whitespace removed (ELI5: every line is scored)."""
    return (generation or "").strip()


def scores_whole_generation(task: str | None) -> bool:
    """Whether the lm-eval task named ``task`` scores the whole generation: its ``process_results`` is
    :func:`process_results_longform` (``eli5_bm25_wiki``), as the index of the last lm-eval ``TaskManager`` built in
    this process (the one that resolved ``--tasks``: :func:`tasks.indexed_task_names`'s) registers it. False when
    that is not known: no manager, or a task its index lacks (a ``--tasks`` YAML file). Used by the methods that
    vote on a generation's first line (``rag-replug replug_mode=answer_vote``, ``rag-selfrag-filter selection=rank``).
    """
    from . import last_task_manager

    manager = last_task_manager()
    entry = (getattr(manager, "task_index", None) or {}).get(task) if manager is not None and task else None
    cfg = getattr(entry, "cfg", None)
    return isinstance(cfg, dict) and cfg_scores_whole_generation(cfg)


def cfg_scores_whole_generation(cfg: dict) -> bool:
    """Whether a task config (its index entry's, or the one lm-eval builds) scores the whole generation: its
    ``process_results`` is :func:`process_results_longform` (a ``!function`` path in the index text, or the resolved
    function). The rule of :func:`scores_whole_generation` and of the pre-run check
    (``tasks.precheck._check_first_line_vote``)."""
    fn = cfg.get("process_results")
    name = fn.rsplit(".", 1)[-1] if isinstance(fn, str) else getattr(fn, "__name__", None)
    return name == process_results_longform.__name__


def process_results_longform(doc: dict, results: list[str]) -> dict[str, float]:
    """Per-sample ``rougeL``, ``rougeL_kilt_downstream`` and ``f1``, each the best over ``doc["answers"]`` (references)."""
    return _scores(doc, longform_text(results[0] if results else ""))


def process_results_dialogue(doc: dict, results: list[str]) -> dict[str, float]:
    """Like :func:`process_results_longform` over the first non-empty line (WoW: one reply)."""
    from .utils import answer_line

    return _scores(doc, answer_line(results[0] if results else ""))


def _scores(doc: dict[str, Any], pred: str) -> dict[str, float]:
    refs = list(doc["answers"])
    return {
        "rougeL": rouge_l(pred, refs),
        "rougeL_kilt_downstream": kilt_rouge_l(pred, refs),
        "f1": f1_score(pred, refs),
    }
