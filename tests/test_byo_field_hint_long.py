"""A bring-your-own questions line of many fields without ``answers``: the error listed every field (200 fields gave
a 1,697-character message) with the did-you-mean at its end. It now gives the did-you-mean first and at most 20
fields (sorted), then ``… (N more)``; a line of up to 20 fields reads as before (tests/test_byo_field_hint.py)."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import DataError
from tasks.byo import load_questions


def _error(tmp_path, bad: dict) -> str:
    path = tmp_path / "q.jsonl"
    good = {"id": "a", "question": "Where is Berlin?", "answers": ["Germany"]}
    path.write_text("".join(json.dumps(r) + "\n" for r in [good, bad]), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        load_questions(str(path))
    assert "\n" not in str(exc.value)
    return str(exc.value).removeprefix(f"{path}:")


def test_a_line_of_200_fields_gives_the_hint_first_and_20_fields(tmp_path):
    bad = {"id": "c", "question": "Where is Paris?", "answer": "France", **{f"f{i:03d}": i for i in range(197)}}
    shown = sorted(bad)[:20]
    assert _error(tmp_path, bad) == (
        "2: missing field 'answers' (a list of gold answer strings, e.g. [\"Paris\"]) ('answer' is not read: did you "
        f"mean 'answers'?); the line has {shown} … (180 more)")


def test_a_line_of_21_fields_without_a_near_name(tmp_path):
    bad = {"question": "Where is Paris?", **{f"x{i:02d}": i for i in range(20)}}
    err = _error(tmp_path, bad)
    assert err == ("2: missing field 'answers' (a list of gold answer strings, e.g. [\"Paris\"]); the line has "
                   f"{sorted(bad)[:20]} … (1 more)")
    assert "did you mean" not in err and len(err) < 300


def test_a_line_of_20_fields_is_listed_whole(tmp_path):
    bad = {"question": "Where is Paris?", **{f"x{i:02d}": i for i in range(19)}}
    assert _error(tmp_path, bad).endswith(f"; the line has {sorted(bad)}")
