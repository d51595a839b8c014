"""BM25 queries are searched as bags of words, as Pyserini's ``LuceneSearcher.search`` searches them (no query parser):
each Lucene syntax character tokrag replaces by a space must leave the analysed terms as they are. ':' did not: the
analyzer keeps ``pavia:cathedral`` one term (UAX#29), tokrag searched ``pavia`` and ``cathedral`` (7.5444 where
Pyserini gives 2.9658). ':' is now kept, and only run-cache keys of query sets holding a ':' changed. Toy corpus,
real Lucene index, Pyserini's own searcher as the reference."""

from __future__ import annotations

import pytest

from retrieval import Corpus, Passage
from retrieval.api import _local_config, _resolve_params
from retrieval.bm25 import _LUCENE_SPECIAL, Bm25Searcher, build_bm25_index, sanitize_query

TEXTS = ["The dome of Pavia Cathedral was designed by Carlo Maciachini.", "Pavia is a town in Lombardy.",
         "The cathedral of Milan is the largest in Italy.", "Pavia:cathedral is written as one word here.",
         "Domes of 1488 and 1489 built in stone.", "Nothing about the question."]
SYNTAX = '+-&|!(){}[]^"~*?:\\/'
FORMS = ["pavia{c}cathedral dome", "1488{c}1489 cathedral", "pavia{c}1488 dome", "dome{c}", "{c}dome cathedral"]


@pytest.fixture(scope="module")
def searchers(tmp_path_factory):
    corpus = Corpus([Passage(f"d{i}", "", t) for i, t in enumerate(TEXTS)], name="toy-query-syntax")
    index = build_bm25_index(corpus, cache_dir=tmp_path_factory.mktemp("cache"))
    from pyserini.search.lucene import LuceneSearcher

    return Bm25Searcher(index, corpus=corpus), LuceneSearcher(str(index))


@pytest.mark.parametrize("c", list(SYNTAX))
def test_every_syntax_character_searches_as_pyserini_does(searchers, c) -> None:
    ours, pyserini = searchers
    assert _LUCENE_SPECIAL.fullmatch(c) or c == ":"
    for form in FORMS:
        q = form.format(c=c)
        want = [(h.docid, round(h.score, 4)) for h in pyserini.search(q, k=6)]
        assert [(d, round(s, 4)) for d, s in ours.search(q, k=6)] == want, q
        assert [(d, round(s, 4)) for d, s in ours.batch_search({"q": q}, k=6)["q"]] == want, q


def test_colon_is_one_term_in_search_and_in_passage_scores(searchers) -> None:
    ours, pyserini = searchers
    q = "Pavia:Cathedral dome"
    assert sanitize_query(q) == q and sanitize_query("a (b) [c]? d") == "a b c d"
    hits = ours.search(q, k=6)
    assert hits[0][0] == "d3"  # the passage holding the term pavia:cathedral, not those with pavia and cathedral
    assert [(d, round(s, 4)) for d, s in hits] == [(h.docid, round(h.score, 4)) for h in pyserini.search(q, k=6)]
    by_id = dict(hits)
    listed = ours.score_passages(q, [("", TEXTS[0]), ("", TEXTS[3])], ["d0", "d3"])
    fresh = ours.score_passages(q, [("", TEXTS[0]), ("", TEXTS[3])], [None, None])
    assert listed == pytest.approx([by_id["d0"], by_id["d3"]], abs=1.01e-4) and fresh == pytest.approx(listed, abs=1.01e-4)
    assert ours.search(":", k=3) == [] and ours.search("::", k=3) == []  # no terms: no hits


def test_only_query_sets_with_a_colon_change_their_run_key() -> None:
    corpus = Corpus([Passage("d0", "", "x")], name="toy-key")

    def config(retriever: str, query: str) -> dict:
        return _local_config(retriever, _resolve_params(retriever, None)[0], corpus, 3, {"q": query}, {})

    plain = config("bm25", "who designed the dome")
    assert "rule" not in plain["queries"]  # the keys of the shipped question sets (no ':') are those of before
    for retriever in ("bm25", "hybrid"):
        assert config(retriever, "pavia:cathedral dome")["queries"]["rule"] == 2
    assert "rule" not in config("dense", "pavia:cathedral dome")["queries"]
