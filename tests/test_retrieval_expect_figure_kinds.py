"""``tokrag retrieve eval --expect``: num_queries is checked over the questions the condition's figures are computed
over (gold@k / MRR: those with gold ids; answer recall: those with answers; both: either). A gold@k-only condition
missed when some topics questions had answers but no gold ids, though the run held every gold question. And
``expected: {num_queries: N}`` says num_queries is checked automatically, not "unknown metric"."""

from __future__ import annotations

import json

import pytest

from retrieval import expect
from retrieval.errors import ConfigError
from tokrag_model.cli import main as tokrag

TOPICS = [
    {"qid": "1", "question": "who wrote hamlet", "answers": ["Shakespeare"], "gold_docids": ["12"]},
    {"qid": "2", "question": "capital of france", "answers": ["Paris"], "gold_docids": ["p7"]},
    {"qid": "3", "question": "largest planet", "answers": ["Jupiter"]},
]
HAMLET = {"id": 12, "title": "Hamlet", "text": "Hamlet is a tragedy by Shakespeare"}
PARIS = {"id": "p7", "title": "France", "text": "Paris is the capital"}


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _expectation(tmp_path, topics, expected) -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: t\ncorpus: prebuilt:wikipedia-dpr-100w\ntopics: {topics}\nconditions:\n"
                    f"  - name: c1\n    retriever: bm25\n    expected: {expected}\n")
    return str(path)


@pytest.mark.parametrize("expected, rc, n, want", [
    ("{gold@1: 1.0, mrr: 1.0}", 0, 2, 2),          # was 2 of 3: a MISS
    ("{answer_recall@1: 1.0}", 1, 2, 3),           # question 3 has answers and is not in the run
    ("{answer_recall@1: 1.0, gold@1: 1.0}", 1, 2, 3),
])
def test_num_queries_is_over_the_kinds_of_the_listed_figures(tmp_path, capsys, expected, rc, n, want):
    topics = _jsonl(tmp_path / "t.jsonl", TOPICS)
    run = _jsonl(tmp_path / "run.jsonl", [{"id": 1, "ctxs": [HAMLET]}, {"id": 2, "ctxs": [PARIS]}])
    assert tokrag(["retrieve", "eval", "--expect", _expectation(tmp_path, topics, expected), "--run", run, "--json"]) == rc
    (cond,) = json.loads(capsys.readouterr().out)["conditions"]
    assert (cond["num_queries"], cond["topics_queries"]) == (n, want)
    assert all(v["ok"] for v in cond["metrics"].values())


def test_figures_over_keeps_the_kinds_listed():
    a, g = {"1": ["x"]}, {"2": ["p"]}
    assert expect.figures_over({"expected": {"gold@5": 1.0}}, a, g) == ({}, g)
    assert expect.figures_over({"expected": {"mrr": 1.0}}, a, g) == ({}, g)
    assert expect.figures_over({"expected": {"answer_recall@5": 1.0}}, a, g) == (a, {})
    assert expect.figures_over({"expected": {"answer_recall@5": 1.0, "mrr": 0.5}}, a, g) == (a, g)


def test_num_queries_under_expected_is_refused_as_automatic(tmp_path):
    path = _expectation(tmp_path, "t.jsonl", "{gold@1: 1.0, num_queries: 3}")
    with pytest.raises(ConfigError) as exc:
        expect.load(path)
    msg = str(exc.value)
    assert "unknown metric" not in msg
    assert "num_queries is not an expected figure: it is checked automatically against the topics" in msg


def test_an_empty_gold_or_answers_list_is_no_question_to_expect_as_in_evaluate_run():
    """A question whose gold list is empty is skipped by evaluate_run; the expectation's count skips it too (it
    counted it, and a run holding every question missed on num_queries)."""
    from retrieval.metrics import evaluate_run

    run = {"a": [{"docid": "p1", "text": "x"}], "b": [{"docid": "p2", "text": "y"}]}
    gold = {"a": ["p1"], "b": []}
    assert evaluate_run(run, {}, gold, ks=(1,))["num_queries"] == 1
    assert expect.scorable({"a": 1, "b": 2}, {}, gold) == {"a"}
    assert expect.scorable({"a": 1, "b": 2}, {"b": ["y"]}, gold) == {"a", "b"}
