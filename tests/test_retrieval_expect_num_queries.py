"""``tokrag retrieve eval --expect``: ``num_queries`` is the number of questions the measured figures are over, the
same with and without ``--run``, and a condition passes only when they are every question of its topics that has
answers or gold ids (the expected figures are documented over the whole topic set: a run of some of them
reproduces nothing, even within tolerance)."""

from __future__ import annotations

import json

from tokrag_model.cli import main as tokrag

TOPICS = [
    {"qid": "1", "question": "who wrote hamlet", "answers": ["Shakespeare"], "gold_docids": ["12"]},
    {"qid": "2", "question": "capital of france", "answers": ["Paris"], "gold_docids": ["p7"]},
    {"qid": "3", "question": "largest planet", "answers": ["Jupiter"], "gold_docids": ["30"]},
]
HAMLET = {"id": 12, "title": "Hamlet", "text": "Hamlet is a tragedy by Shakespeare"}
PARIS = {"id": "p7", "title": "France", "text": "Paris is the capital"}
JUPITER = {"id": 30, "title": "J", "text": "Jupiter is the largest"}


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _expectation(tmp_path, topics, corpus="prebuilt:wikipedia-dpr-100w") -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: t\ncorpus: {corpus}\ntopics: {topics}\nconditions:\n"
                    "  - name: c1\n    retriever: bm25\n    expected: {answer_recall@1: 1.0, gold@1: 1.0}\n")
    return str(path)


def test_a_run_of_only_some_of_the_topics_misses_the_expectation(tmp_path, capsys):
    # was rc 0, "all figures within tolerance": two of the three questions, both answered at rank 1
    topics = _jsonl(tmp_path / "t.jsonl", TOPICS)
    expect = _expectation(tmp_path, topics)
    part = _jsonl(tmp_path / "part.jsonl", [{"id": 1, "ctxs": [HAMLET]}, {"id": 2, "ctxs": [PARIS]}])
    assert tokrag(["retrieve", "eval", "--expect", expect, "--run", part, "--json"]) == 1
    cap = capsys.readouterr()
    res = json.loads(cap.out)
    (cond,) = res["conditions"]
    assert not res["ok"] and not cond["ok"] and cond["num_queries"] == 2 and cond["topics_queries"] == 3
    assert all(v["ok"] for v in cond["metrics"].values())  # the figures themselves land on the expectation
    assert "c1               num_queries                 3        2       -1  MISS" in cap.err
    assert "1 figure(s) outside tolerance" in cap.err
    # the whole topic set: passes, and the table has no num_queries line
    full = _jsonl(tmp_path / "full.jsonl", [{"id": 1, "ctxs": [HAMLET]}, {"id": 2, "ctxs": [PARIS]},
                                            {"id": 3, "ctxs": [JUPITER]}])
    assert tokrag(["retrieve", "eval", "--expect", expect, "--run", full]) == 0
    out = capsys.readouterr().out
    assert "num_queries" not in out and out.rstrip().endswith("all figures within tolerance")
    # a topics question without answers or gold ids is not one the figures are over
    bare = _jsonl(tmp_path / "t2.jsonl", [*TOPICS, {"qid": "9", "question": "which planet"}])
    assert tokrag(["retrieve", "eval", "--expect", _expectation(tmp_path, bare), "--run", full, "--json"]) == 0
    cond = json.loads(capsys.readouterr().out)["conditions"][0]
    assert cond["ok"] and cond["num_queries"] == cond["topics_queries"] == 3


def test_num_queries_is_the_number_scored_when_retrieving_too(tmp_path, capsys):
    # expect.check reported len(topics) (4) where --expect --run and plain eval report the questions scored (3)
    corpus = _jsonl(tmp_path / "c.jsonl", [HAMLET, PARIS, JUPITER])
    topics = _jsonl(tmp_path / "t.jsonl", [*TOPICS, {"qid": "9", "question": "which planet is red"}])
    expect = _expectation(tmp_path, topics, corpus)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert tokrag(["retrieve", "eval", "--expect", expect, "--json", *cache]) == 0
    cond = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["conditions"][0]
    assert cond["ok"] and cond["num_queries"] == cond["topics_queries"] == 3
    assert all(v["measured"] == 1.0 for v in cond["metrics"].values())
    # the run it retrieved, scored with --run, gives the same num_queries
    assert tokrag(["retrieve", "eval", "--expect", expect, "--run", cond["run"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["conditions"][0]["num_queries"] == 3
