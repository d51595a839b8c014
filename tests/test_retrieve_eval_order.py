"""``tokrag retrieve eval --run X.trec`` reads a TREC run in trec_eval's order: score descending, ties by docid
descending; the rank column is ignored (as trec_eval ignores it), with one warning when it disagrees.

Before, the rows were sorted by the rank column, so a run whose ranks are all 0 (or wrong) was scored in file order.
"""

from __future__ import annotations

import json

import pytest

from retrieval.cli import main

CORPUS = [("d1", "Paris", "Paris is the capital of France."), ("d2", "Berlin", "Berlin is the capital of Germany."),
          ("d3", "Rome", "Rome is the capital of Italy.")]


def _files(tmp_path, trec: str, gold=("d1",)):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS), encoding="utf-8")
    topics = tmp_path / "topics.jsonl"
    topics.write_text(json.dumps({"qid": "q1", "question": "capital of France", "answers": ["Paris"],
                                  "gold_docids": list(gold)}) + "\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text(trec, encoding="utf-8")
    return ["retrieve", "eval", "--run", str(run), "--corpus", str(corpus), "--topics", str(topics), "--json"]


def test_trec_run_is_ordered_by_score_not_rank(tmp_path, capsys):
    argv = _files(tmp_path, "q1 Q0 d3 0 1.0 other\nq1 Q0 d2 0 2.0 other\nq1 Q0 d1 0 9.0 other\n")
    assert main([*argv, "--k", "1", "3"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["gold@1"] == 1.0 and m["mrr"] == 1.0 and m["answer_recall@1"] == 1.0


def test_rank_column_against_the_scores_warns_once(tmp_path, capsys):
    # ranks say d3, d2, d1; scores say d1, d2, d3: the scores win (trec_eval), one warning says so
    argv = _files(tmp_path, "q1 Q0 d3 1 1.0 other\nq1 Q0 d2 2 2.0 other\nq1 Q0 d1 3 9.0 other\n")
    assert main([*argv, "--k", "1"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["gold@1"] == 1.0
    warnings = [line for line in out.err.splitlines() if "rank column" in line]
    assert len(warnings) == 1 and "the scores were used" in warnings[0] and "'q1'" in warnings[0]


def test_score_ties_break_by_docid_descending_and_agreeing_ranks_are_quiet(tmp_path, capsys):
    # equal scores: trec_eval puts d3 before d2 before d1; the rank column agrees, so no warning
    argv = _files(tmp_path, "q1 Q0 d3 1 5.0 t\nq1 Q0 d2 2 5.0 t\nq1 Q0 d1 3 5.0 t\n")
    assert main([*argv, "--k", "1", "3"]) == 0
    out = capsys.readouterr()
    m = json.loads(out.out)
    assert m["gold@1"] == 0.0 and m["gold@3"] == 1.0 and m["mrr"] == pytest.approx(1 / 3)
    assert "rank column" not in out.err


def test_numeric_rank_column_is_accepted(tmp_path, capsys):
    # trec_eval ignores the rank column: '1.0' and '2.0' were refused ("rank '1.0' is not an integer"); they are
    # read, and whole numbers give no warning
    argv = _files(tmp_path, "q1 Q0 d2 1.0 2.0 t\nq1 Q0 d1 2.0 9.0 t\n")
    assert main([*argv, "--k", "1"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["gold@1"] == 1.0
    assert "whole number" not in out.err


def test_fractional_rank_warns_once(tmp_path, capsys):
    argv = _files(tmp_path, "q1 Q0 d1 0.5 9.0 t\nq1 Q0 d2 1.5 2.0 t\nq1 Q0 d3 2.5 1.0 t\n")
    assert main([*argv, "--k", "1"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["mrr"] == 1.0
    warnings = [line for line in out.err.splitlines() if "whole number" in line]
    assert len(warnings) == 1 and "run.trec:1: rank '0.5'" in warnings[0]


@pytest.mark.parametrize("line, expected", [("q1 Q0 d1 1 1_0 t", "score '1_0' holds '_'"),
                                            ("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0_5 t", "run.trec:2: score '0_5' holds '_'"),
                                            ("q1 Q0 d1 inf 1.0 t", "rank 'inf' is not an integer"),
                                            ("q1 Q0 d1 1_0 1.0 t", "rank '1_0' is not an integer")])
def test_underscore_score_and_odd_rank_are_refused(tmp_path, line, expected):
    # Python's float reads '1_0' as 10, trec_eval's atof as 1: refused, naming file and line
    from retrieval.errors import DataError

    argv = _files(tmp_path, line + "\n")
    with pytest.raises(DataError, match=expected.replace("(", r"\(")) as exc:
        main([*argv, "--k", "1"])
    assert str(tmp_path / "run.trec") + ":" in str(exc.value)
