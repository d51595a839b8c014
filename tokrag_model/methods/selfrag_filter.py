"""``rag-selfrag-filter``: Self-RAG-*style* relevance filtering with the base LLM as critic
(../shared/docs/baselines.md) — the lm-eval class, the critic prompt and the filter formulas.

Not the fine-tuned Self-RAG model (Asai et al., ICLR 2024) and no reflection tokens: the same base LLM as
every other method judges each passage with a fixed yes/no prompt, ``r = P(Yes)/(P(Yes)+P(No))``;
passages with ``r ≥ relevance_threshold`` are kept, then one greedy generation (a single branch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ..args import Arg, to_bool
from ..base import RAGMethodLM, SingleBranch, branch_logprobs, budget_check
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


# ---------------------------------------------------------------------------------------- lm-eval model
class SelfRAGFilterLM(RAGMethodLM):
    """``rag-selfrag-filter``: Self-RAG-*style* relevance filtering with the base LLM as critic.

    This is explicitly **not** the fine-tuned Self-RAG model (Asai et al. 2024) and uses no reflection
    tokens: the same base LLM as every other method judges each passage with a fixed yes/no prompt
    (:data:`CRITIC_PROMPT`, in the tokenizer's chat template when it has one), ``r = P(Yes)/(P(Yes)+P(No))``
    from the next-token probabilities (summed over the variants "Yes"/" Yes"/"yes"/" yes" and likewise
    for No). Passages with ``r ≥ relevance_threshold`` (default 0.5) are kept in their original order;
    if none is kept the model answers closed-book (pure context). Then one greedy generation.
    """

    METHOD = "rag-selfrag-filter"
    EXTRA_ARGS = {
        "relevance_threshold": Arg(0.5, float, "keep passages with P(Yes)/(P(Yes)+P(No)) >= threshold"),
        "critic_chat_template": Arg(True, to_bool, "wrap the critic prompt in the tokenizer's chat template"),
        "query_field": Arg("question", str, "doc field holding the question for the critic (fallback: task context)"),
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
        self._critic_cache: dict[tuple, float] = {}

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
        """Critic ratios ``r_i`` for the doc's passages (cached per passage and question)."""
        ctxs = self.ctxs(doc)
        q = doc.get(self.resolved_config["query_field"]) if isinstance(doc, dict) else None
        question = q if isinstance(q, str) and q.strip() else without_slot(context)
        todo = [c for c in ctxs if (question, c.get("docid"), c["text"]) not in self._critic_cache]
        if todo:
            prefix, suffixes = self.critic_prompts(todo, question)
            lps = self.decoder.next_logprobs_shared_prefix(prefix, suffixes)
            for c, lp in zip(todo, lps):
                ly = float(torch.logsumexp(lp[self.yes_ids], 0))
                ln = float(torch.logsumexp(lp[self.no_ids], 0))
                self._critic_cache[(question, c.get("docid"), c["text"])] = relevance_ratio(ly, ln)
        return ctxs, [self._critic_cache[(question, c.get("docid"), c["text"])] for c in ctxs]

    def _encode(self, doc: Any, context: str, budget: int) -> tuple[Encoded, dict]:
        ctxs, ratios = self.relevance(doc, context)
        kept = [ctxs[i] for i in filter_by_relevance(ratios, self.resolved_config["relevance_threshold"])]
        trace = {"critic": {str(c.get("docid", i)): round(r, 4) for i, (c, r) in enumerate(zip(ctxs, ratios))}}
        if kept:
            enc = self.encode_rag(doc, context, budget, ctxs=kept)
        else:
            enc = self.encode_pure(context, budget)
        trace.update({"passages": enc.kept, "dropped": enc.dropped, "closed_book": not enc.kept})
        return enc, trace

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        enc, trace = self._encode(doc, context, budget)
        return SingleBranch(enc.ids), trace

    def score(self, doc: Any, context: str, cont_text: str, budget: int, cont_override: list[int] | None = None
              ) -> tuple[float, bool, dict]:
        cont = cont_override if cont_override is not None else self.cont_ids(context, cont_text)
        enc, trace = self._encode(doc, context, budget_check(cont, budget, self.METHOD))
        lp, _, _ = branch_logprobs(self.decoder, enc.ids, cont)
        ll, greedy = self._sum_ll(lp, cont)
        return ll, greedy, trace
