"""tasks.byo.load_questions: a present, non-null ``gold_docids`` that is not a list is refused (file, line, field),
whatever its truth value. 0, false, "" and {} were read as "no gold ids" (``r.get(...) or []``) while 3 was refused."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import DataError


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.parametrize("value", [0, False, "", {}, 3, "p1", {"a": 1}])
def test_a_non_list_gold_docids_is_refused(tmp_path, value):
    from tasks.byo import load_questions

    path = _jsonl(tmp_path / "q.jsonl", [{"question": "q", "answers": ["x"]},
                                         {"question": "r", "answers": ["y"], "gold_docids": value}])
    with pytest.raises(DataError) as exc:
        load_questions(path)
    assert str(exc.value) == (f"{path}:2: 'gold_docids' must be a list of passage ids, "
                              f"got {value!r}")


def test_missing_null_and_empty_list_mean_no_gold_ids(tmp_path):
    from tasks.byo import load_questions

    rows = load_questions(_jsonl(tmp_path / "q.jsonl", [{"question": "q", "answers": ["x"]},
                                                        {"question": "r", "answers": ["y"], "gold_docids": None},
                                                        {"question": "s", "answers": ["z"], "gold_docids": []},
                                                        {"question": "t", "answers": ["w"], "gold_docids": ["p1", 2]}]))
    assert [r["gold_docids"] for r in rows] == [[], [], [], ["p1", "2"]]
