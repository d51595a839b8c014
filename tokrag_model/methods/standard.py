"""``rag-standard``: standard RAG — one branch, the passages block followed by the task context, greedy.

Given the same context, its tokens equal lm-eval's ``hf`` model on ``passages_block + context``
(tests/test_model_smollm2.py); the reference row of every leaderboard.
"""

from __future__ import annotations

from typing import Any

from ..base import SingleBranchLM
from ..prompt import Encoded


class RagStandardLM(SingleBranchLM):
    """``rag-standard``: the RAG branch only (passages block + task context)."""

    METHOD = "rag-standard"

    def branch(self, doc: Any, context: str, budget: int, kind: str | None = None) -> Encoded:
        return self.encode_rag(doc, context, budget, kind=kind)
