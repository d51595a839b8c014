"""Prompts shared by every method: the passages block, the task context, and the token budget.

RAG context = passages block + task context (passages first, as in Xu et al. 2025 §3.2 / the authors'
code), pure context = task context. Both are tokenised as whole strings exactly as lm-eval's ``hf``
model tokenises a context, so ``rag-standard`` sees the same tokens as ``hf`` given
``passages_block + context``. The retrieved span ``[0, n_R)`` of the RAG sequence (BOS included) is
found from the tokenizer's character offsets, not by re-tokenising pieces.

Budget: when the RAG prompt is longer than the budget (``max_length`` minus the generation budget), or
the passages take more than ``max_passage_tokens`` tokens,
the lowest-ranked passages are dropped first, one at a time; the task context (the question) is never
cut. A task context that alone exceeds the budget is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from retrieval.errors import ConfigError, DataError


def get_ctxs(doc: Any, method: str, k: int | None) -> list[dict]:
    """The passages attached to ``doc`` by a retrieval task, best first (by ``rank``, then list order).

    Raises:
        DataError: ``doc`` has no ``ctxs`` list, or a passage has no ``text``.
    """
    ctxs = doc.get("ctxs") if isinstance(doc, dict) else None
    if not isinstance(ctxs, list):
        keys = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
        raise DataError(
            f"--model {method} needs retrieved passages in doc['ctxs'], but this task's docs have none (doc keys: {keys}); "
            "use a retrieval task (for instance nq_open_bm25 from tasks/), or --model rag-none for closed-book"
        )
    out = []
    for i, c in enumerate(ctxs):
        if not isinstance(c, dict) or not isinstance(c.get("text"), str):
            raise DataError(f"--model {method}: doc['ctxs'][{i}] must be a dict with a 'text' string, got {str(c)[:80]!r}")
        out.append(c)
    order = sorted(range(len(out)), key=lambda i: (out[i].get("rank") if isinstance(out[i].get("rank"), (int, float)) else i + 1, i))
    out = [out[i] for i in order]
    return out[:k] if k is not None else out


def format_passage(ctx: dict, template: str, position: int) -> str:
    """One passage rendered with ``template`` (fields ``title``, ``text``, ``rank``, ``docid``)."""
    return template.format(title=ctx.get("title") or "", text=ctx["text"], rank=ctx.get("rank", position + 1),
                           docid=ctx.get("docid", ""))


@dataclass
class Encoded:
    """A tokenised prompt.

    ``ids``: token ids (BOS included when the tokenizer adds one); ``n_ctx_tokens``: the length of the
    retrieved span ``[0, n_ctx_tokens)`` (0 for a pure prompt); ``kept``/``dropped``: docids of the
    passages in the block and of those dropped for the budget.
    """

    ids: list[int]
    n_ctx_tokens: int = 0
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    text: str = ""


class PromptBuilder:
    """Tokenises pure and RAG prompts for one tokenizer, with the budget rule above."""

    def __init__(self, tokenizer: Any, template: str, add_bos_token: bool | None = None,
                 max_passage_tokens: int | None = None) -> None:
        self.tok = tokenizer
        self.max_passage_tokens = max_passage_tokens
        self.template = template
        self.special = {} if add_bos_token is None else {"add_special_tokens": bool(add_bos_token)}

    def encode(self, text: str) -> list[int]:
        """Token ids of a whole string, as lm-eval's ``hf`` ``tok_encode`` (BOS per the tokenizer's default)."""
        special = dict(self.special)
        bos = getattr(self.tok, "bos_token", None)
        if not special and bos and text.startswith(bos):
            special["add_special_tokens"] = False
        return list(self.tok.encode(text, **special))

    def block(self, ctxs: list[dict]) -> str:
        return "".join(format_passage(c, self.template, i) for i, c in enumerate(ctxs))

    def _span(self, text: str, n_chars: int) -> tuple[list[int], int]:
        enc = self.tok(text, return_offsets_mapping=True, **self.special)
        ids = list(enc["input_ids"])
        n = 0
        for (start, end), tid in zip(enc["offset_mapping"], ids):
            if end <= n_chars or (start == end == 0 and n == 0):
                n += 1
            else:
                break
        return ids, n

    def pure(self, context: str, budget: int | None, method: str = "") -> Encoded:
        """Pure prompt. Raises ConfigError when ``context`` alone exceeds ``budget`` tokens."""
        ids = self.encode(context)
        if budget is not None and len(ids) > budget:
            raise ConfigError(
                f"--model {method}: the task context is {len(ids)} tokens but only {budget} fit "
                "(max_length minus the generation budget); the question is never cut: raise max_length= or shorten the prompt"
            )
        return Encoded(ids, 0, text=context)

    def rag(self, ctxs: list[dict], context: str, budget: int | None, method: str = "") -> Encoded:
        """RAG prompt = passages block + context; drops the lowest-ranked passages until it fits ``budget``."""
        kept = list(ctxs)
        dropped: list[str] = []
        while True:
            block = self.block(kept)
            text = block + context
            if kept:
                ids, n_ctx = self._span(text, len(block))
                ids = ids if ids == self.encode(text) else self.encode(text)
            else:
                ids, n_ctx = self.encode(text), 0
            fits = budget is None or len(ids) <= budget
            if self.max_passage_tokens is not None and kept:
                fits = fits and n_ctx <= self.max_passage_tokens
            if fits:
                return Encoded(ids, n_ctx, [str(c.get("docid", i)) for i, c in enumerate(kept)], dropped, text)
            if not kept:
                self.pure(context, budget, method)  # raises with the message above
            dropped.insert(0, str(kept[-1].get("docid", len(kept) - 1)))
            kept = kept[:-1]
