"""``rag-selfrag-filter``: Self-RAG-*style* relevance filtering with the base LLM as critic
(../shared/docs/baselines.md) — the lm-eval class, the critic prompt and the filter formulas.

Not the fine-tuned Self-RAG model (Asai et al., ICLR 2024) and no reflection tokens: the same base LLM as
every other method judges each passage with a fixed yes/no prompt, ``r = P(Yes)/(P(Yes)+P(No))``;
passages with ``r ≥ relevance_threshold`` are kept (``selection=threshold``, the default row), or the
``top_m`` passages with the largest ``r`` (``selection=top_m``, the labelled variant row
``rag-selfrag-filter-top2`` with ``top_m=2``), then one greedy generation (a single branch).

Made readable in the trace: ``kept_rate`` (passages kept / passages judged) and ``critic_auc`` (how well
``r`` ranks this question's gold passages above the others; null without gold passages or without both
classes among the judged passages), for every request type: a ``loglikelihood_rolling`` text's trace carries
them at its top level too (:meth:`SelfRAGFilterLM.rolling_trace`), so the leaderboard's ``kept_rate`` column is
shown on language-modelling tasks as on QA tasks.

On language-modelling tasks there is no question: the critic's ``question`` is the doc's ``query_field``
(``question``), which these tasks set to their retrieval query: on ``wiki_lm_bm25`` (rolling texts) the scored
paragraph's first 32 words, so the critic judges each passage against the start of the text being scored; on
``wikitext103_bm25_wiki`` the last 32 words of the context before the scored chunk. baselines.md prescribes no
other critic prompt for such tasks; with this one the default threshold can keep few or no passages (the row is
then closed book on those texts: 0 of 60 on the first 20 ``wiki_lm_bm25`` paragraphs with SmolLM2-135M), which the
``kept_rate`` column shows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ..args import Arg, choice, int_at_least, number_in, to_bool
from ..base import RAGMethodLM, ScorePlan, SingleBranch, budget_check
from ..decoder import Forced
from ..prompt import Encoded, without_slot

# The critic's yes/no question (``question`` first, then the passage).
CRITIC_PROMPT = ("Question: {question}\n"
                 "Does the passage below contain information that helps answer the question? Answer Yes or No.\n\n"
                 "Passage: {title}\n{text}")


# ------------------------------------------------------------------------------------------ formulas
def relevance_ratio(logp_yes: float, logp_no: float) -> float:
    """``r = P(Yes)/(P(Yes)+P(No))`` from the two log-probs (nats); 0.5 when both are -inf."""
    if logp_yes == -math.inf and logp_no == -math.inf:
        return 0.5
    m = max(logp_yes, logp_no)
    a, b = math.exp(logp_yes - m), math.exp(logp_no - m)
    return a / (a + b)


def filter_by_relevance(ratios: Sequence[float], threshold: float = 0.5) -> list[int]:
    """Indices of the passages kept: ``r ≥ threshold`` (inclusive); empty list = answer closed-book."""
    return [i for i, r in enumerate(ratios) if r >= threshold]


def top_m_by_relevance(ratios: Sequence[float], m: int) -> list[int]:
    """Indices of the ``m`` passages with the largest ``r`` (ties: the better-ranked passage, i.e. the lower
    index), returned in their original (rank) order; all of them when there are at most ``m``."""
    best = sorted(range(len(ratios)), key=lambda i: (-ratios[i], i))[:m]
    return sorted(best)


def critic_auc(ratios: Sequence[float], is_gold: Sequence[bool]) -> float | None:
    """ROC AUC of the critic ratios ``r`` against the gold labels of the same passages: the probability that
    a gold passage gets a larger ``r`` than a non-gold one, ties counting ½ (Mann–Whitney U / (n_gold·n_other);
    ``sklearn.metrics.roc_auc_score``). None when the passages are all gold or all non-gold."""
    labels = [bool(g) for g in is_gold]
    if len(set(labels)) < 2:
        return None
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, list(ratios)))


# ---------------------------------------------------------------------------------------- lm-eval model
class SelfRAGFilterLM(RAGMethodLM):
    """``rag-selfrag-filter``: Self-RAG-*style* relevance filtering with the base LLM as critic.

    This is explicitly **not** the fine-tuned Self-RAG model (Asai et al. 2024) and uses no reflection
    tokens: the same base LLM as every other method judges each passage with a fixed yes/no prompt
    (:data:`CRITIC_PROMPT`, in the tokenizer's chat template when it has one), ``r = P(Yes)/(P(Yes)+P(No))``
    from the next-token probabilities (summed over the variants "Yes"/" Yes"/"yes"/" yes" and likewise
    for No). Passages with ``r ≥ relevance_threshold`` (default 0.5) are kept in their original order
    (``selection=threshold``), or the ``top_m`` passages with the largest ``r`` (``selection=top_m``); if none
    is kept the model answers closed-book (pure context). Then one greedy generation.

    Trace: ``critic`` {docid: r}, ``selection``, ``kept_rate`` (kept / judged passages; null when the doc
    has none), ``critic_auc`` (:func:`critic_auc` against the doc's ``gold_docids``; null when the doc has
    no gold ids or the judged passages are all gold or all non-gold), ``passages``, ``dropped``,
    ``closed_book``; a rolling text's trace has ``windows`` (one such trace each) and their ``kept_rate`` and
    ``critic_auc`` at its top level (:meth:`rolling_trace`).

    The critic's question is ``doc[query_field]``, else the task context. On a language-modelling task that field
    is the retrieval query, not a question: on ``wiki_lm_bm25`` the scored text's first words, so the critic judges
    each passage against the start of the text being scored (module docstring).
    """

    METHOD = "rag-selfrag-filter"
    # the critic cache is keyed on the question and the doc's whole passage list (a passage's ratio differs in its
    # last bits with the passages judged together with it: the shared prefix is cut elsewhere), so a doc's ratios
    # never depend on which docs or cells the process judged before, and a journal replay gives the same cell
    EXTRA_ARGS = {
        "relevance_threshold": Arg(0.5, number_in(0.0, 1.0),
                                   "keep passages with P(Yes)/(P(Yes)+P(No)) >= threshold; the ratio lies in [0, 1]",
                                   only_with=("selection", "threshold")),
        "critic_chat_template": Arg(True, to_bool, "wrap the critic prompt in the tokenizer's chat template"),
        "query_field": Arg("question", str, "doc field holding the question for the critic (fallback: task context)"),
        "selection": Arg("threshold", choice("threshold", "top_m"),
                         "threshold: keep r >= relevance_threshold | top_m: keep the top_m passages by r"),
        "top_m": Arg(2, int_at_least(1), "passages kept with selection=top_m (>= 1)", only_with=("selection", "top_m")),
    }

    def setup(self) -> None:
        tok = self.tokenizer

        def first_ids(words: list[str]) -> list[int]:
            ids = set()
            for w in words:
                enc = tok.encode(w, add_special_tokens=False)
                if enc:
                    ids.add(enc[0])
            return sorted(ids)

        self.yes_ids = first_ids(["Yes", " Yes", "yes", " yes"])
        self.no_ids = first_ids(["No", " No", "no", " no"])
        self._critic_cache: dict[tuple, list[float]] = {}

    def critic_prompts(self, ctxs: list[dict], question: str) -> tuple[list[int], list[list[int]]]:
        """Token ids of the critic prompts as (shared prefix, one suffix per passage).

        The prompt is :data:`CRITIC_PROMPT` (question and instruction first, then the passage), wrapped in
        the tokenizer's chat template when it has one (``critic_chat_template``; the same renderer as the
        task's chat, :meth:`~tokrag_model.base.RAGMethodLM.render_chat`), else followed by
        ``"\nAnswer:"``. The common prefix of all prompts (chat header, question, instruction) is
        prefilled once and its KV cache reused for every passage.
        """
        texts = [CRITIC_PROMPT.format(title=c.get("title") or "", text=c["text"], question=question) for c in ctxs]
        if self.resolved_config["critic_chat_template"] and getattr(self.tokenizer, "chat_template", None):
            texts = [self.render_chat([{"role": "user", "content": t}]) for t in texts]  # the model's one chat renderer
        else:
            texts = [t + "\nAnswer:" for t in texts]
        ids = [self.prompts.encode(t) for t in texts]
        n = min(len(x) for x in ids) - 1  # keep ≥ 1 suffix token per passage
        common = 0
        while common < n and all(x[common] == ids[0][common] for x in ids):
            common += 1
        return ids[0][:common], [x[common:] for x in ids]

    def relevance(self, doc: Any, context: str) -> tuple[list[dict], list[float]]:
        """Critic ratios ``r_i`` (unitless, in [0, 1]) for the doc's passages, judged together.

        Cached per question and whole passage list (title, text, docid of each, in order): the several requests of
        one doc (a multiple-choice task's choices) judge once, and a doc's ratios are the same whatever the process
        judged before. A per-passage cache made them depend on it: the prompts' shared prefix is cut where the
        passages judged together first differ, which moves a ratio in its last bits (about 1e-6 on SmolLM2).
        """
        ctxs = self.ctxs(doc)
        q = doc.get(self.resolved_config["query_field"]) if isinstance(doc, dict) else None
        question = q if isinstance(q, str) and q.strip() else without_slot(context)
        key = (question, tuple((c.get("docid"), c.get("title") or "", c["text"]) for c in ctxs))
        if key not in self._critic_cache:
            ratios: list[float] = []
            if ctxs:
                prefix, suffixes = self.critic_prompts(ctxs, question)
                for lp in self.decoder.next_logprobs_shared_prefix(prefix, suffixes):
                    ly = float(torch.logsumexp(lp[self.yes_ids], 0))
                    ln = float(torch.logsumexp(lp[self.no_ids], 0))
                    ratios.append(relevance_ratio(ly, ln))
            self._critic_cache[key] = ratios
        return ctxs, list(self._critic_cache[key])

    def select(self, ratios: Sequence[float]) -> list[int]:
        """Indices of the passages kept, by ``selection`` (threshold or top-m)."""
        c = self.resolved_config
        if c["selection"] == "top_m":
            return top_m_by_relevance(ratios, c["top_m"])
        return filter_by_relevance(ratios, c["relevance_threshold"])

    def _encode(self, doc: Any, context: str, budget: int) -> tuple[Encoded, dict]:
        ctxs, ratios = self.relevance(doc, context)
        idx = self.select(ratios)
        kept = [ctxs[i] for i in idx]
        gold = doc.get("gold_docids") if isinstance(doc, dict) else None
        auc = critic_auc(ratios, [str(c.get("docid")) in {str(g) for g in gold} for c in ctxs]) if gold else None
        trace = {"critic": {str(c.get("docid", i)): round(r, 4) for i, (c, r) in enumerate(zip(ctxs, ratios))},
                 "selection": self.resolved_config["selection"],
                 "kept_rate": round(len(idx) / len(ctxs), 4) if ctxs else None,
                 "critic_auc": None if auc is None else round(auc, 4)}
        if kept:
            enc = self.encode_rag(doc, context, budget, ctxs=kept)
        else:
            enc = self.encode_pure(context, budget)
        trace.update({"passages": enc.kept, "dropped": enc.dropped, "closed_book": not enc.kept})
        return enc, trace

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        enc, trace = self._encode(doc, context, budget)
        return SingleBranch(enc.ids), trace

    def rolling_trace(self, windows: list[dict]) -> dict:
        """``{"windows": [...]}`` plus the text's ``kept_rate`` and ``critic_auc`` (means over its windows, rounded to
        4 decimals; the critic judges a doc once, so every window has the same values; null when no window has
        one): the fields the leaderboard's trace columns read (:func:`leaderboards.traces.trace_columns`)."""
        out = super().rolling_trace(windows)
        for key in ("kept_rate", "critic_auc"):
            vals = [w[key] for w in windows if isinstance(w.get(key), (int, float))]
            out[key] = round(sum(vals) / len(vals), 4) if vals else None
        return out

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int) -> ScorePlan:
        enc, trace = self._encode(doc, context, budget_check(cont, budget, self.METHOD))

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            ll, greedy = self._sum_ll(forced[0].logprobs, cont)
            return ll, greedy, trace

        return ScorePlan([enc.ids], cont, finish)
