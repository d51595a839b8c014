"""``tokrag retrieve eval`` of a ctxs run without ``--corpus`` did not check the topics' gold ids (only ids missing from
the run are checked, and only against a corpus given): topics whose ids name another corpus or namespace
(``wiki:p1`` against the run's ``p1``) printed gold@k 0 and MRR 0 without a word, as a retrieval that found no gold
passage would. When no question's gold id is among the run's passages (two or more questions), one stderr note now
says so and to pass ``--corpus`` to check the ids; the figures are printed as before (s58 b2)."""

from __future__ import annotations

from tests.retrieval_helpers import ctxs_run, eval_json, write_jsonl

QIDS, TEXTS = ["q1", "q2"], ["who wrote hamlet", "capital of france"]


def _topics(tmp_path, gold):
    return write_jsonl(tmp_path / "topics.jsonl", [
        {"id": q, "question": t, "answers": [a], "gold_docids": [g]}
        for q, t, a, g in zip(QIDS, TEXTS, ["Shakespeare", "Paris"], gold)])


def test_no_gold_id_among_the_passages_is_noted(tmp_path, capsys):
    run = ctxs_run(tmp_path / "run.ctxs.jsonl", QIDS, TEXTS)
    topics = _topics(tmp_path, ["wiki:p1", "wiki:p2"])
    from retrieval.cli import main

    assert main(["retrieve", "eval", "--run", str(run), "--topics", str(topics), "--k", "1", "--json"]) == 0
    out, err = capsys.readouterr()
    assert (f"note: none of the gold ids of the 2 questions of topics {str(topics)!r} with passages is among {run}'s "
            "passages (first: question 'q1', gold ['wiki:p1'], run's top passage 'p1'), so gold@k and MRR are 0; "
            "without --corpus the ids are not checked: pass --corpus (the run's corpus) to check that they name its "
            "passages") in err
    assert '"gold@1": 0.0' in out and '"answer_recall@1": 1.0' in out


def test_one_gold_id_found_gives_no_note(tmp_path, capsys):
    run = ctxs_run(tmp_path / "run.ctxs.jsonl", QIDS, TEXTS)
    m = eval_json(capsys, "--run", str(run), "--topics", str(_topics(tmp_path, ["p1", "wiki:p2"])))
    assert m["gold@1"] == 0.5 and m["mrr"] == 0.5
    assert "none of the gold ids" not in capsys.readouterr().err
