"""A query of more than Lucene's default 1024 distinct terms is searched and scored, alone and in a batch
(retrieval/bm25.py MAX_CLAUSES): it used to fail with TooManyClauses, a batch with an opaque
"queryCount = 1 is not equal to completedTaskCount = 0". Toy corpus, real Lucene index."""

from __future__ import annotations

import itertools
import string

import pytest

from retrieval import Corpus, Passage
from retrieval.bm25 import Bm25Searcher, build_bm25_index

# 1,500 distinct three-letter words (none in the corpus; more than 1,024 analysed terms after stop words and stemming)
FILLER = " ".join("".join(t) for t in itertools.islice(itertools.product(string.ascii_lowercase, repeat=3), 1500))


@pytest.fixture(scope="module")
def searcher(tmp_path_factory) -> Bm25Searcher:
    corpus = Corpus([Passage(f"d{i}", "", f"word{i} everest mountain" + " high" * (i % 3)) for i in range(12)],
                    name="toy-long-query")
    return Bm25Searcher(build_bm25_index(corpus, cache_dir=tmp_path_factory.mktemp("cache")), corpus=corpus)


def test_long_query_is_searched_like_its_matching_terms(searcher) -> None:
    short = searcher.search("everest", k=3)
    assert short and searcher.search(f"{FILLER} everest", k=3) == short  # absent terms add nothing
    assert searcher.batch_search({"long": f"{FILLER} everest", "short": "everest"}, k=3) == {"long": short, "short": short}


def test_long_query_scores_passages(searcher) -> None:
    passages = [("", "word0 everest mountain"), ("", "nothing here")]
    assert searcher.score_passages(f"{FILLER} everest", passages, ["d0", None]) == \
        searcher.score_passages("everest", passages, ["d0", None])
