"""A TREC run listing a docid twice for one question is one line naming both lines, as a ctxs run listing a passage
twice is since h1's c59b374 (s57 r9, h1's "noticed and left" 2). ``retrieval.cli._read_trec`` read it and
``_ranking_notes`` printed a note, each copy counted as a rank (run.trec with d2 at lines 1 and 3 over gold d1 scored
gold@2 1.0 and MRR 0.5, exit 0); trec_eval refuses such a run ("duplicate docs"), and the two kinds of run of one
``tokrag retrieve eval`` now follow one rule. The same docid under two questions is not a duplicate."""

from __future__ import annotations

import gzip
import json

import pytest

from tokrag_model.cli import main

CORPUS = [("d1", "Paris", "Paris is the capital of France."), ("d2", "Berlin", "Berlin is the capital of Germany.")]
TOPICS = [{"qid": "q1", "question": "capital of France", "answers": ["Paris"], "gold_docids": ["d1"]},
          {"qid": "q2", "question": "capital of Germany", "answers": ["Berlin"], "gold_docids": ["d2"]}]


def _eval(tmp_path, capsys, run):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS), encoding="utf-8")
    topics = tmp_path / "topics.jsonl"
    topics.write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    code = main(["retrieve", "eval", "--run", str(run), "--corpus", str(corpus), "--topics", str(topics),
                 "--k", "1", "2", "--json"])
    cap = capsys.readouterr()
    return code, (json.loads(cap.out) if code == 0 else None), cap.err


@pytest.mark.parametrize("name", ["my run.trec", "run.trec.gz"])
def test_a_docid_twice_for_one_question_is_one_line_naming_both_lines(tmp_path, capsys, name):
    run = tmp_path / name
    data = b"q1 Q0 d2 1 3.0 run\nq1 Q0 d1 2 2.0 run\nq2 Q0 d2 1 3.0 run\nq1 Q0 d2 3 1.0 run\n"
    run.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    code, m, err = _eval(tmp_path, capsys, run)
    assert (code, m) == (2, None)
    assert err == (f"tokrag retrieve: error: {run}:4: question 'q1' lists docid 'd2' twice (also line 1); each copy "
                   "would count as a rank (trec_eval refuses such a run: duplicate docs): keep one line, the "
                   "better-scored\n")


def test_the_same_docid_under_two_questions_scores_as_before(tmp_path, capsys):
    run = tmp_path / "run.trec"
    run.write_bytes(b"q1 Q0 d2 1 3.0 run\nq1 Q0 d1 2 2.0 run\nq2 Q0 d2 1 3.0 run\nq2 Q0 d1 2 1.0 run\n")
    code, m, err = _eval(tmp_path, capsys, run)
    assert code == 0 and err == ""
    assert m == {"answer_recall@1": 0.5, "answer_recall@2": 1.0, "gold@1": 0.5, "gold@2": 1.0, "mrr": 0.75,
                 "num_queries": 2}
