"""Query ids of JSONL topics follow the rule of a ctxs run's ids (``retrieval.cache.json_id``): a string or an
integer, never a float. ``3.0`` was read as the qid ``"3.0"`` and silently matched no run, answers or qrels keyed
``"3"``; now it is a one-line DataError naming the file, the line, the field and how to write the id."""

from __future__ import annotations

import json
import re

import pytest

from retrieval.errors import DataError
from tokrag_model.cli import main as tokrag


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.parametrize("row, message", [
    ({"qid": 3.0, "question": "largest planet"}, "query id 'qid' is 3.0: an id must be a string or an integer, not a "
                                                 'float; write it as 3 or "3"'),
    ({"qid": None, "id": 3.0, "question": "largest planet"}, "query id 'id' is 3.0: an id must be a string or an "
                                                             'integer, not a float; write it as 3 or "3"'),
    ({"qId": 3.5, "qText": "largest planet"}, "query id 'qId' is 3.5: an id must be a string or an integer, not a "
                                              'float; write it as a string ("3.5")'),
    ({"qid": 12345678901234567.0, "question": "q"}, "query id 'qid' is 1.2345678901234568e+16: an id must be a string "
                                                     "or an integer, not a float; write it as a string or an integer, "
                                                     "as the source of the ids has it"),  # past 2**53: no digits guessed
], ids=["qid", "id-after-null-qid", "qId-not-integral", "qid-past-2**53"])
def test_a_float_qid_in_topics_is_refused_naming_file_and_line(tmp_path, row, message):
    from retrieval.cli import load_topics
    from retrieval.corpus import load_queries

    path = _jsonl(tmp_path / "t.jsonl", [{"qid": 1, "question": "who wrote hamlet"}, row])
    with pytest.raises(DataError) as exc:
        load_queries(path)
    assert str(exc.value) == f"{path}:2: {message}"
    with pytest.raises(DataError, match="^" + re.escape(str(exc.value)) + "$"):
        load_topics(path)


def test_integer_and_string_qids_are_read_as_before(tmp_path):
    from retrieval.cli import load_topics

    path = _jsonl(tmp_path / "t.jsonl", [
        {"qid": 3, "question": "largest planet", "answers": ["Jupiter"], "gold_docids": [30]},
        {"id": "p7", "question": "capital of france", "answers": ["Paris"]},
        {"qid": None, "question": "no id", "answers": ["x"]},  # null is no id: q<index> ("" is refused: below)
    ])
    queries, answers, gold = load_topics(path)
    assert queries == {"3": "largest planet", "p7": "capital of france", "q2": "no id"}
    assert answers == {"3": ["Jupiter"], "p7": ["Paris"], "q2": ["x"]}
    assert gold == {"3": ["30"]}


def test_retrieve_eval_with_a_float_qid_in_the_topics_is_a_one_line_error(tmp_path, capsys):
    # was rc 0: the topics' "3.0" matched none of the run's qids "3", so the run scored nothing (a note only)
    run = _jsonl(tmp_path / "run.jsonl", [{"id": 3, "ctxs": [{"id": 30, "title": "J", "text": "Jupiter is the largest"}]}])
    good = _jsonl(tmp_path / "good.jsonl", [{"qid": 3, "question": "largest planet", "answers": ["Jupiter"],
                                              "gold_docids": [30]}])
    assert tokrag(["retrieve", "eval", "--run", run, "--topics", good, "--k", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"num_queries": 1, "answer_recall@1": 1.0, "gold@1": 1.0, "mrr": 1.0}
    bad = _jsonl(tmp_path / "bad.jsonl", [{"qid": 3.0, "question": "largest planet", "answers": ["Jupiter"],
                                           "gold_docids": [30]}])
    code = tokrag(["retrieve", "eval", "--run", run, "--topics", bad, "--k", "1", "--json"])
    cap = capsys.readouterr()
    assert code == 2 and cap.out == ""
    assert cap.err.strip() == (f"tokrag retrieve: error: {bad}:1: query id 'qid' is 3.0: an id must be a string or an "
                               'integer, not a float; write it as 3 or "3"')


# ------------------------------------------------------------------ one rule for every id read from JSON (io.json_id)
FLOAT = 'an id must be a string or an integer, not a float; write it as 3 or "3"'
PAST_2_53 = ("an id must be a string or an integer, not a float; write it as a string or an integer, as the source "
             "of the ids has it")


@pytest.mark.parametrize("field, value, message", [
    ("id", 3.0, f"passage id 'id' is 3.0: {FLOAT}"),
    ("docid", 3.0, f"passage id 'docid' is 3.0: {FLOAT}"),
    ("_id", 12345678901234567.0, f"passage id '_id' is 1.2345678901234568e+16: {PAST_2_53}"),
    ("id", True, "passage id 'id' is true: an id must be a string or an integer"),
    ("id", "", 'passage id \'id\' is "": an id must not be empty; give the id, or remove the field'),
], ids=["float-id", "float-docid", "float-past-2**53", "bool", "empty"])
def test_a_corpus_passage_id_follows_the_id_rule(tmp_path, field, value, message):
    # 3.0 was read as the passage "3.0", which no gold id "3" (qrels, topics, questions) ever matched; true was
    # "field 'id' must be a string, got bool"; "" the corpus's "has an empty id or one with whitespace: ''"
    from retrieval import load_corpus

    path = _jsonl(tmp_path / "c.jsonl", [{"id": 1, "title": "H", "text": "Hamlet"},
                                         {field: value, "title": "J", "text": "Jupiter"}])
    with pytest.raises(DataError) as exc:
        load_corpus(path)
    assert str(exc.value) == f"{path}:2: {message}"


def test_integer_and_string_passage_ids_are_read_as_before(tmp_path):
    from retrieval import load_corpus

    corpus = load_corpus(_jsonl(tmp_path / "c.jsonl", [{"id": 3, "text": "Jupiter"}, {"docid": "p7", "text": "Paris"},
                                                       {"id": None, "_id": 0, "text": "zero"}]))
    assert [p.docid for p in corpus.passages] == ["3", "p7", "0"] and "3" in corpus


@pytest.mark.parametrize("passage, shown", [
    ({"id": 3.0, "text": "Jupiter"}, f"3.0: {FLOAT}"),
    ({"docid": True, "text": "Jupiter"}, "true: an id must be a string or an integer"),
], ids=["float", "bool"])
def test_a_ctxs_passage_id_follows_the_id_rule(tmp_path, capsys, passage, shown):
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": 1, "question": "largest planet", "answers": ["Jupiter"]}])
    run = _jsonl(tmp_path / "run.jsonl", [{"qid": 1, "ctxs": [passage]}])
    code = tokrag(["retrieve", "eval", "--run", run, "--topics", topics, "--k", "1"])
    field = next(iter(passage))
    assert code == 2 and capsys.readouterr().err.strip() == (
        f"tokrag retrieve: error: {run}:1: question '1', ctxs[0] {field!r} is {shown}")


@pytest.mark.parametrize("gold, shown", [([3.0], f"3.0: {FLOAT}"), ([3, True], None)], ids=["float", "bool"])
def test_topics_gold_ids_follow_the_id_rule(tmp_path, gold, shown):
    from retrieval.cli import load_topics

    path = _jsonl(tmp_path / "t.jsonl", [{"qid": 1, "question": "largest planet", "answers": ["x"], "gold_docids": gold}])
    with pytest.raises(DataError) as exc:
        load_topics(path)
    # a bool in the list: the field's type check (string_list) names it, as before
    assert str(exc.value) == (f"{path}:1: gold_docids[0] is {shown}" if shown else
                              f"{path}:1: field 'gold_docids' must be a string or a list of strings, got [3, True]")


@pytest.mark.parametrize("row, message", [
    ({"id": 3.0}, f"'id' is 3.0: {FLOAT}"),
    ({"id": False}, "'id' is false: an id must be a string or an integer"),
    ({"id": ""}, '\'id\' is "": an id must not be empty; give the id, or write "id": null or leave the field out '
                 "for the automatic id 'q0' (q<index of the question, from 0>)"),
    ({"id": "q", "gold_docids": ["p1", 3.0]}, f"gold_docids[1] is 3.0: {FLOAT}"),
    ({"id": "q", "gold_docids": [True]}, "gold_docids[0] is true: an id must be a string or an integer"),
], ids=["float-id", "bool-id", "empty-id", "float-gold", "bool-gold"])
def test_the_qa_tasks_questions_follow_the_id_rule(tmp_path, row, message):
    # "" was the id q<index> (as topics read it; a ctxs run skipped it), 3.0 was "'id' must be a string or an
    # integer, got 3.0" and a gold id 3.0 "'gold_docids' must be a list of passage ids, got [...]"
    from tasks.byo import load_questions

    path = _jsonl(tmp_path / "q.jsonl", [{"question": "q", "answers": ["x"], **row}])
    with pytest.raises(DataError) as exc:
        load_questions(path)
    assert str(exc.value) == f"{path}:1: {message}"
    ok = load_questions(_jsonl(tmp_path / "ok.jsonl", [{"question": "q", "answers": ["x"], "id": 7, "gold_docids": [3]},
                                                       {"question": "r", "answers": ["y"], "id": None}]))
    assert [(r["qid"], r["gold_docids"]) for r in ok] == [("7", ["3"]), ("q1", [])]


def test_an_empty_qid_is_refused_in_topics_and_in_ctxs_runs_alike(tmp_path, capsys):
    # topics read {"qid": ""} as q<index> (and {"qid": "", "id": 3} as q<index> too) while a ctxs run skipped the ""
    # field ({"qid": "", "id": 3} was question "3"; {"qid": ""} alone "expected {'qid' (or 'id'), 'ctxs': [...]}")
    from retrieval.cli import load_topics

    empty = 'is "": an id must not be empty; give the id, or remove the field'
    for row in ({"qid": ""}, {"qid": "", "id": 3}):
        topics = _jsonl(tmp_path / "t.jsonl", [{"qid": 1, "question": "q", "answers": ["x"]},
                                               {**row, "question": "largest planet", "answers": ["Jupiter"]}])
        with pytest.raises(DataError) as exc:
            load_topics(topics)
        assert str(exc.value) == f"{topics}:2: query id 'qid' {empty}"
        good = _jsonl(tmp_path / "good.jsonl", [{"qid": 3, "question": "largest planet", "answers": ["Jupiter"]}])
        run = _jsonl(tmp_path / "run.jsonl", [{"id": 1, "ctxs": []}, {**row, "ctxs": [{"id": 30, "text": "Jupiter"}]}])
        assert tokrag(["retrieve", "eval", "--run", run, "--topics", good, "--k", "1"]) == 2
        assert capsys.readouterr().err.strip() == f"tokrag retrieve: error: {run}:2: question 'qid' {empty}"


def test_a_passage_with_two_different_ids_is_refused_by_both_readers(tmp_path):
    """The corpus reader takes 'id' first, the ctxs reader 'docid' first: {"id": "p1", "docid": "X1"} was passage
    p1 in the corpus and X1 in a run (gold@k 0, silently). Now a one-line DataError in both, naming file, line and
    both fields; one id field, equal ids (12 and "12") or an empty/null second field read as before."""
    from retrieval import load_corpus
    from retrieval.cache import read_ctxs_jsonl

    two = {"id": "p1", "docid": "X1", "title": "Hamlet", "text": "Hamlet is a tragedy by Shakespeare."}
    corpus = _jsonl(tmp_path / "c.jsonl", [{"id": "p0", "title": "t", "text": "x"}, two])
    with pytest.raises(DataError) as e:
        load_corpus(corpus)
    assert str(e.value) == (f"{corpus}:2: passage id fields 'id' (\"p1\") and 'docid' (\"X1\") differ; keep one id "
                            "field (or give both the same id)")
    run = _jsonl(tmp_path / "r.jsonl", [{"qid": "a", "ctxs": [{"docid": "X1", "_id": 7, "text": "t"}]}])
    with pytest.raises(DataError) as e:
        read_ctxs_jsonl(run)
    assert str(e.value) == (f"{run}:1: question 'a', ctxs[0]: passage id fields 'docid' (\"X1\") and '_id' (7) "
                            "differ; keep one id field (or give both the same id)")
    same = [{"id": 12, "docid": "12", "title": "t", "text": "x"}, {"id": "p2", "docid": "", "_id": None, "text": "y"}]
    assert sorted(p.docid for p in load_corpus(_jsonl(tmp_path / "ok.jsonl", same))) == ["12", "p2"]
    ctxs, _ = read_ctxs_jsonl(_jsonl(tmp_path / "ok.ctxs.jsonl", [{"qid": "a", "ctxs": [dict(c) for c in same]}]))
    assert [c["docid"] for c in ctxs["a"]] == ["12", "p2"]
