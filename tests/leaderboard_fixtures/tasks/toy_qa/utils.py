"""Toy QA task data and metrics for the leaderboard tests.

24 questions "What is the colour of thing N?" with a gold passage "The colour of thing N is C." and
distractor passages about other things; ``noise`` replaces that share of the 3 passages, starting
from the top, with distractors (``toy_qa_noise67``: 2 of 3).
"""

from __future__ import annotations

import datasets

from tasks.metrics import qa_scores

COLOURS = ["red", "green", "blue", "amber", "violet", "teal", "ochre", "white"]


def _rows(noise: float) -> list[dict]:
    rows = []
    n = 24
    for i in range(n):
        gold = COLOURS[(i * 5) % len(COLOURS)]
        gold_ctx = {"docid": f"g{i}", "title": f"thing {i}", "text": f"The colour of thing {i} is {gold}."}
        dis = []
        for j in (1, 2, 3):
            o = (i + 7 * j) % n
            dis.append({"docid": f"g{o}", "title": f"thing {o}",
                        "text": f"The colour of thing {o} is {COLOURS[(o * 5) % len(COLOURS)]}."})
        ctxs = [gold_ctx, dis[0], dis[1]] if i % 4 else [dis[0], gold_ctx, dis[1]]
        n_noise = round(noise * 3)
        if n_noise and i % 3:  # every third question keeps its clean ranking
            ctxs = dis[:n_noise] + [c for c in ctxs if c["docid"] == f"g{i}"] + dis[n_noise:]
            ctxs = ctxs[:3]
        for r, c in enumerate(ctxs):
            c["rank"], c["score"] = r + 1, round(10.0 - r, 3)
        rows.append({"qid": f"q{i}", "question": f"What is the colour of thing {i}?", "answers": [gold, gold.upper()],
                     "ctxs": ctxs, "gold_docids": [f"g{i}"], "corpus_fingerprint": "toycorpus01"})
    return rows


def load_clean(**kwargs) -> datasets.DatasetDict:
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(_rows(0.0))})


def load_noise67(**kwargs) -> datasets.DatasetDict:
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(_rows(2 / 3))})


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    scores = qa_scores(results[0], doc["answers"])
    scores["answer_recall"] = float(any(c["docid"] in doc["gold_docids"] for c in doc["ctxs"]))
    return scores
