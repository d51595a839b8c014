"""A passage ``rank`` that is an integer too large for a float (s59 r1, review of d1's 388b2c3): a ctxs run file can
hold ``"rank": 1000...0`` (401 digits, which Python's JSON reader reads as an int), and ``retrieval.cache.check_rank``
(the one rank rule of a ctxs run and of a doc's passages) called ``math.isfinite`` on it, which raises OverflowError:
``tokrag retrieve eval --run run.jsonl`` ended in a traceback instead of the one-line refusal of any other bad rank.
Now it is that refusal, the value named by its size."""

from __future__ import annotations

import json

import pytest

from retrieval.cache import check_rank, read_ctxs_jsonl
from retrieval.errors import DataError
from tokrag_model.cli import main as tokrag
from tokrag_model.prompt import get_ctxs

BIG = 10 ** 400  # 1329 bits
TAIL = "'rank' is an integer of 1329 bits, too large for a float: a rank must be a number (its position, 1 for the " \
       "best passage) or absent"


def _run(path, rank) -> str:
    row = {"id": "q1", "question": "where is paris", "answers": ["paris"],
           "ctxs": [{"id": "p1", "title": "Paris", "text": "Paris is in France.", "rank": 1},
                    {"id": "p2", "title": "Seine", "text": "The Seine flows.", "rank": rank}]}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return str(path)


def test_a_ctxs_run_with_a_rank_too_large_for_a_float_is_one_line(tmp_path, capsys):
    run = _run(tmp_path / "run.jsonl", BIG)
    assert json.loads(open(run, encoding="utf-8").read())["ctxs"][1]["rank"] == BIG  # JSON reads it as an int
    with pytest.raises(DataError) as e:
        read_ctxs_jsonl(run)
    assert str(e.value) == f"{run}:1: question 'q1', ctxs[1] (passage 'p2') {TAIL}"
    # the command a user runs: exit 2 and that one line, no traceback
    topics = tmp_path / "topics.jsonl"
    topics.write_text(json.dumps({"qid": "q1", "question": "where is paris", "answers": ["paris"]}) + "\n")
    assert tokrag(["retrieve", "eval", "--run", run, "--topics", str(topics)]) == 2
    err = capsys.readouterr().err
    assert f"{run}:1: question 'q1', ctxs[1] (passage 'p2') {TAIL}" in err
    assert "Traceback" not in err and "OverflowError" not in err and len(err.strip().splitlines()) == 1


def test_a_doc_with_a_rank_too_large_for_a_float_is_one_line():
    doc = {"id": "q7", "ctxs": [{"text": "a", "docid": "d1", "rank": 1}, {"text": "b", "docid": "d2", "rank": -BIG}]}
    with pytest.raises(DataError) as e:
        get_ctxs(doc, "rag-standard", None)
    assert str(e.value) == f"--model rag-standard: doc 'q7', doc['ctxs'][1] (passage 'd2') {TAIL}"
    # past Python's 4300-digit limit (a doc built in Python, not read from JSON): still the one line
    doc["ctxs"][1]["rank"] = 10 ** 5000
    with pytest.raises(DataError, match=r"'rank' is an integer of 16610 bits, too large for a float: a rank must be"):
        get_ctxs(doc, "rag-standard", None)


def test_large_ranks_a_float_holds_are_still_accepted_and_shown_short():
    # 10**300 fits a float: a rank, accepted as before; in a contradiction it is shown in 40 characters
    assert check_rank({"rank": 10 ** 300}, 0, None, "here") == (0, 10 ** 300)
    assert check_rank({"rank": 2}, 3, (1, 2.0), "here") == (3, 2)
    with pytest.raises(DataError) as e:
        check_rank({"rank": 1}, 1, (0, 10 ** 300), "run.jsonl:1: question 'q1', ctxs[1] (passage 'p2')")
    assert str(e.value) == ("run.jsonl:1: question 'q1', ctxs[1] (passage 'p2') has rank 1 but is listed after ctxs[0] "
                            f"of rank {'1' + '0' * 39}...: the ranks contradict the list order, which is the ranking "
                            "scored (best first); sort the list by rank, or drop the 'rank' fields")
    # the usual lines are unchanged: a small contradiction, a text rank
    with pytest.raises(DataError) as e:
        check_rank({"rank": 1.5}, 2, (0, 2), "at")
    assert str(e.value).startswith("at has rank 1.5 but is listed after ctxs[0] of rank 2: ")
    with pytest.raises(DataError) as e:
        check_rank({"rank": "2"}, 0, None, "at")
    assert str(e.value) == ("at 'rank' is \"2\": a rank must be a number (its position, 1 for the best passage) or "
                            "absent")
