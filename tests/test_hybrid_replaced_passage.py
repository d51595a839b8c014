"""A passage that is not the corpus passage of its docid (a counterfactual ``X#cf``, an edited one keeping ``X``)
replaces ``X`` in what the model sees, so hybrid ranks it in ``X``'s place in the component lists, not against
``X`` (s46 b7 proof 1: the gold text as ``X#cf`` lost the tie to ``X`` and got RRF ranks (5, 1) instead of (4, 1))."""

from __future__ import annotations

import pytest

from retrieval import score_passages
from retrieval.hybrid import CF_SUFFIX, fuse_passage, replaced_docid, rrf_score

from test_retrieval_dense import mini  # noqa: F401 - the fixture: 20 NQ-oracle questions, gold + 20 DPR passages

RRF = {"fusion": "rrf", "rrf_k": 60}
WEIGHTED = {"fusion": "weighted", "alpha": 0.1, "normalization": True, "weight_on_dense": False}
SPARSE = [("a", 9.0), ("b", 8.0), ("c", 7.0), ("X", 6.0), ("d", 5.0)]
DENSE = [("X", 0.9), ("a", 0.5)]


def test_the_suffix_is_the_tasks_one() -> None:
    from tasks.rag import CF_SUFFIX as TASKS_CF_SUFFIX

    assert CF_SUFFIX == TASKS_CF_SUFFIX
    assert replaced_docid("X#cf") == replaced_docid("X") == "X"
    assert replaced_docid("a#b") == "a#b"  # only the counterfactual suffix (bring-your-own ids may hold '#')


@pytest.mark.parametrize("p", [RRF, WEIGHTED])
def test_the_originals_text_as_its_counterfactual_gets_the_originals_score(p) -> None:
    own = fuse_passage(p, "X", SPARSE, DENSE, 6.0, 0.9)
    assert fuse_passage(p, "X#cf", SPARSE, DENSE, 6.0, 0.9, in_index=False) == own
    assert fuse_passage(p, "X", SPARSE, DENSE, 6.0, 0.9, in_index=False) == own  # an edited one keeping X
    if p is RRF:
        assert own == rrf_score([4, 1])  # not rrf_score([5, 2]): ranked below the X it replaces


def test_a_counterfactual_of_the_last_listed_passage_keeps_its_slot() -> None:
    sparse = [("a", 9.0), ("X", 6.0)]
    # same score as X: X's slot (2), not beyond the list
    assert fuse_passage(RRF, "X#cf", sparse, DENSE, 6.0, 0.9, in_index=False) == rrf_score([2, 1])
    # higher than X: still within the list
    assert fuse_passage(RRF, "X#cf", sparse, DENSE, 7.0, 0.9, in_index=False) == rrf_score([2, 1])
    # below X and below every other entry: whether the corpus passage after the list outranks it is unknown, so
    # no term, as for any passage beyond a list's reach
    assert fuse_passage(RRF, "X#cf", sparse, DENSE, 1.0, 0.9, in_index=False) == rrf_score([None, 1])


def test_a_counterfactual_ranks_among_the_other_entries_without_the_original() -> None:
    # 5.5: after a, b, c and before d; without X it is 4th (a new passage of that score would be 5th, after X)
    # (dense 0.1: below X and a, no term)
    assert fuse_passage(RRF, "X#cf", SPARSE, DENSE, 5.5, 0.1, in_index=False) == rrf_score([4, None])
    assert fuse_passage(RRF, "X#cf", SPARSE, DENSE, 5.5, 0.6, in_index=False) == rrf_score([4, 1])  # dense: X's slot
    assert fuse_passage(RRF, "new", SPARSE, DENSE, 5.5, 0.1, in_index=False) == rrf_score([5, None])
    # 1.0: below X and every other entry: no sparse term; 0.95 in dense: above X, so X's slot, 1st
    assert fuse_passage(RRF, "X#cf", SPARSE, DENSE, 1.0, 0.95, in_index=False) == rrf_score([None, 1])


def test_weighted_fusion_takes_the_span_of_the_list_it_stands_in() -> None:
    # X (the list's maximum dense score) replaced by 0.7: the dense span is (0.5, 0.7), so the normalised dense
    # score is (0.7 - 0.6) / 0.2 = 0.5; sparse: 6.0 in span (5, 9): (6 - 7) / 4 = -0.25
    got = fuse_passage(WEIGHTED, "X#cf", SPARSE, DENSE, 6.0, 0.7, in_index=False)
    assert got == pytest.approx(0.1 * -0.25 + 0.5)


@pytest.mark.parametrize("params", [{"fusion": "rrf"}, {"fusion": "weighted", "alpha": 0.1}])
def test_score_passages_gives_the_gold_text_one_score_under_both_docids(mini, tmp_path, params) -> None:
    """The proof's case through :func:`retrieval.score_passages`: the corpus passage and its counterfactual with
    the same text (BM25 and dense equal) get the same hybrid score."""
    corpus, queries, _ = mini
    from retrieval import retrieve

    passages = {}
    for q in sorted(queries)[:5]:
        run = retrieve(corpus, queries, "hybrid", k=5, params=params, cache_dir=tmp_path).ctxs[q]
        same = [{"docid": h["docid"], "title": h["title"], "text": h["text"]} for h in run]
        passages[q] = same + [dict(c, docid=c["docid"] + "#cf") for c in same]
    got = score_passages(corpus, queries, passages, "hybrid", k=5, params=params, cache_dir=tmp_path)
    for q, v in passages.items():
        n = len(v) // 2
        assert n > 1
        if params["fusion"] == "rrf":
            assert got[q][n:] == got[q][:n], q  # same ranks
        else:  # BM25 of a passage by Lucene's search vs its one-document scoring: one 1e-4 step (x alpha) apart
            assert got[q][n:] == pytest.approx(got[q][:n], abs=1.01e-5), q
