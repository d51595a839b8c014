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
        {"qid": "", "question": "no id", "answers": ["x"]},  # "" is no id: q<index>
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
