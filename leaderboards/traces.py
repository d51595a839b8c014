"""Read the method traces that the tokrag models log with every sample (``--log_samples``).

A trace is the dict ``{"tokrag_trace": {...}}`` appended to a request's arguments, logged by lm-eval
0.4.13 as ``arguments.gen_args_0.arg_2`` (generation) or ``arg_1`` (rolling log-likelihood). The
fields read here are the helpers' contract (see the README of ``leaderboards``):

* ``tokrag``: ``tokens`` = ``[branch, S_R, S_L, layer, token_text]`` per generated token (the older
  4-element form without the text is accepted); branch ``R``/``L`` (RAG / pure LM), ``=`` appended
  when both branches agreed, ``b`` when a function token bypassed the test. ``rag_token_share`` counts every
  ``R…`` label (agreed and bypassed tokens too: the test never ran on them, tokrag_method.md §3.3), so it is
  mostly the agreement rate; ``rag_win_rate`` is the test's own decisions, ``R`` / (``R`` + ``L``) pooled over the
  cell's tested tokens (a mean of per-question rates would weigh a question with one tested token like one with
  twenty);
* ``rag-replug`` / ``rag-ensemble-entropy``: ``top1_weight`` (float), ``weight_entropy`` (nats); when
  a trace has only ``weights``, both are computed from them (normalised to sum 1);
* ``rag-selfrag-filter``: ``kept_rate`` (kept / shown passages), ``critic_auc`` (null when undefined);
* every method: ``stop_reason`` (why the returned answer's generation stopped: ``stop``, ``eos`` or ``budget``,
  :data:`tokrag_model.decoder.STOP_REASONS`) gives ``budget_hit``, the share of questions whose generation ran into
  ``max_gen_toks`` (answers the budget may have cut; the hygiene column ``overlong answer`` counts words instead).

A question that was shown no passage (none retrieved, or all dropped for the length budget: the trace's
``closed_book`` is true or its ``passages`` list is empty) has no passage weights and no RAG branch to choose: it adds
nothing to ``top1_weight``, ``weight_entropy``, ``rag_token_share`` and ``rag_win_rate`` (REPLUG logged
``weights: [1.0]`` for it, which counted as a certain top passage; Tok-RAG labelled its tokens ``R=``).

Absent fields are simply absent columns: a method that does not log them shows ``-``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

TRACE_COLUMNS = {
    "top1_weight": "mean weight of the top passage (REPLUG / ensemble)",
    "weight_entropy": "mean entropy of the passage weights (nats)",
    "kept_rate": "mean share of shown passages the critic kept (filter)",
    "critic_auc": "mean AUC of the critic's scores against the gold passages (filter; questions where defined)",
    "rag_token_share": "share of generated tokens labelled with the RAG branch, tokens where both branches agreed (R=) "
                       "and bypassed function tokens (Rb) included: mostly the agreement rate (Tok-RAG; mean over "
                       "questions)",
    "rag_win_rate": "share of tested tokens (branches disagreed, no bypass) where the test chose the RAG token "
                    "(Tok-RAG; pooled over every tested token of the cell)",
    "budget_hit": "share of questions whose generation stopped at the max_gen_toks budget, no stop string or EOS "
                  "before it (the answer may be cut; every tokrag method; questions whose trace says why it stopped)",
}
"""Each trace column's machine key (the CSV's column, the JSON's ``rows[].trace`` key) and what it is."""

TRACE_LABELS = {"budget_hit": "stopped at budget"}
"""The heading of a trace column in the report's Markdown and HTML tables where it is not the key itself: the
method-specific columns keep their keys (``top1_weight``, ``kept_rate``, ...; the README names them so), while
``budget_hit``, every method's column, sits between ``noise flips`` and the hygiene rates ``empty answer`` /
``overlong answer`` and is headed in their words. The CSV and JSON keep the key."""


def trace_label(key: str) -> str:
    """The Markdown / HTML heading of trace column ``key`` (:data:`TRACE_LABELS`, else the key)."""
    return TRACE_LABELS.get(key, key)


def request_arguments(sample: dict) -> list[list[Any]]:
    """The positional arguments of each request of a logged sample, in order, from any layout lm-eval gives
    (``[[arg_0, arg_1, ...], ...]`` in a samples file, ``[(arg_0, arg_1, ...), ...]`` in the samples of
    ``simple_evaluate(..., log_samples=True)`` in memory, or ``{"gen_args_0": {"arg_0": ..., "arg_1": ...}, ...}``);
    [] when absent."""
    args = sample.get("arguments")
    if isinstance(args, dict):
        groups = [args[k] for k in sorted(args)]
    elif isinstance(args, (list, tuple)):
        groups = args
    else:
        return []
    return [[g[k] for k in sorted(g)] if isinstance(g, dict) else (list(g) if isinstance(g, (list, tuple)) else [])
            for g in groups]


def sample_trace(sample: dict) -> dict[str, Any] | None:
    """The ``tokrag_trace`` dict of a logged sample (first request that has one), else None."""
    for values in request_arguments(sample):
        for v in values:
            if isinstance(v, dict) and isinstance(v.get("tokrag_trace"), dict):
                return v["tokrag_trace"]
    return None


def sample_gen_kwargs(sample: dict) -> dict[str, Any] | None:
    """The generation kwargs of a logged ``generate_until`` sample (its first request's second argument), else
    None: a log-likelihood request's second argument is the continuation string, or (``loglikelihood_rolling``)
    the method's trace dict."""
    first = next(iter(request_arguments(sample)), [])
    gen = first[1] if len(first) > 1 else None
    return gen if isinstance(gen, dict) and {"until", "max_gen_toks"} & set(gen) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _from_weights(weights: Any) -> dict[str, float]:
    """``top1_weight`` and ``weight_entropy`` (nats) of a passage-weight list, for traces that log only
    ``weights`` (REPLUG before the contract's fields); empty when there is no usable list."""
    if not isinstance(weights, list) or not weights or not all(_num(w) is not None for w in weights):
        return {}
    w = np.asarray(weights, dtype=float)
    if w.sum() <= 0:
        return {}
    w = w / w.sum()
    nz = w[w > 0]
    return {"top1_weight": float(w.max()), "weight_entropy": float(-(nz * np.log(nz)).sum())}


def trace_columns(samples: list[dict]) -> dict[str, dict[str, float]]:
    """Means of the trace fields over a cell's samples: ``{column: {"mean": m, "n": questions}}``; a
    column is present only when at least one sample has a number for it."""
    vals: dict[str, list[float]] = {}
    won = tested_n = asked = 0  # rag_win_rate: RAG wins and tested tokens over the cell, questions with a test
    for s in samples:
        tr = sample_trace(s)
        if not tr:
            continue
        why = tr.get("stop_reason")
        if why in ("stop", "eos", "budget"):  # a trace written before stop_reason: no budget_hit for it
            vals.setdefault("budget_hit", []).append(float(why == "budget"))
        shown = not (tr.get("closed_book") is True or tr.get("passages") == [])  # no passage: no weights, no branch
        derived = _from_weights(tr.get("weights"))
        for key in ("top1_weight", "weight_entropy", "kept_rate", "critic_auc") if shown else ("kept_rate", "critic_auc"):
            v = _num(tr.get(key))
            v = derived.get(key) if v is None else v
            if v is not None:
                vals.setdefault(key, []).append(v)
        toks = tr.get("tokens")
        if shown and isinstance(toks, list) and toks:
            branches = [t[0] for t in toks if isinstance(t, list) and t and isinstance(t[0], str)]
            if branches:
                vals.setdefault("rag_token_share", []).append(sum(b.startswith("R") for b in branches) / len(branches))
                tested = [b for b in branches if b in ("R", "L")]  # "R="/"L=": agreed, "Rb"/"Lb": bypassed, untested
                won, tested_n, asked = won + tested.count("R"), tested_n + len(tested), asked + bool(tested)
    out = {k: {"mean": float(np.mean(v)), "n": len(v)} for k, v in vals.items()}
    if tested_n:
        out["rag_win_rate"] = {"mean": won / tested_n, "n": asked, "tokens": tested_n}
    return out


def token_rows(trace: dict | None) -> list[dict[str, Any]] | None:
    """Tok-RAG's generated tokens as ``[{"branch", "s_r", "s_l", "layer", "text"}]`` (``text`` None for the
    older 4-element trace); None when the trace has no ``tokens``."""
    if not trace or not isinstance(trace.get("tokens"), list):
        return None
    out = []
    for t in trace["tokens"]:
        if not isinstance(t, list) or len(t) < 4:
            continue
        out.append({"branch": str(t[0]), "s_r": _num(t[1]), "s_l": _num(t[2]), "layer": t[3],
                    "text": t[4] if len(t) > 4 and isinstance(t[4], str) else None})
    return out


__all__ = ["TRACE_COLUMNS", "TRACE_LABELS", "request_arguments", "sample_gen_kwargs", "sample_trace", "trace_columns", "token_rows", "trace_label"]
