"""``rag-none``: closed book — the pure branch only (task context without passages), greedy decoding.

The lower reference of every leaderboard: the same base model, prompt, budget and generation settings
as the RAG methods, with the retrieved passages (if the doc has any) ignored.
"""

from __future__ import annotations

from typing import Any

from ..base import SingleBranchLM
from ..prompt import Encoded


class RagNoneLM(SingleBranchLM):
    """``rag-none``: closed-book; the pure branch only (passages, if any, are ignored)."""

    METHOD = "rag-none"
    USES_PASSAGES = False

    def branch(self, doc: Any, context: str, budget: int, kind: str | None = None) -> Encoded:
        return self.encode_pure(context, budget)
