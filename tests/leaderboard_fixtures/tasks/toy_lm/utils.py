"""Toy language-modelling task for the leaderboard tests: 6 short paragraphs."""

from __future__ import annotations

import datasets

TEXTS = [
    "The river runs to the sea.",
    "Mountains rise above the clouds in the north.",
    "A small town sits beside the lake.",
    "Trains cross the bridge every hour.",
    "The library opens at nine.",
    "Birds return to the marsh in spring.",
]


def load(**kwargs) -> datasets.DatasetDict:
    rows = [{"qid": f"p{i}", "text": t, "ctxs": [{"docid": f"d{i}", "title": "t", "text": t, "score": 1.0, "rank": 1}]}
            for i, t in enumerate(TEXTS)]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})
