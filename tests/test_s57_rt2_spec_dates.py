"""A leaderboard spec's YAML 1.1 dates (s57 rt2, read-through of h2's 7e9ff48): PyYAML's safe loader reads a plain
``2026-12-7 9:30:00`` as a datetime and ``2026-12-07`` as a date, which h2's text fields (read as written) missed, so
``label: 2026-12-7 9:30:00`` printed "2026-12-07 09:30:00" and ``label: 2001-12-14t21:59:43.10-05:00``
"2001-12-14 21:59:43.100000-05:00"; and a date that is none (``2026-02-30``) raised the constructor's ValueError, a
traceback from ``tokrag leaderboard``, in a text field or anywhere else. Now a text field holds the text written and
any other such value is one line naming the spec's line and column."""

from __future__ import annotations

import pytest

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import TOY, write_spec


def _spec(tmp_path, replace: dict[str, str]):
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "label": "LABEL_A"},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}, "label": "LABEL_B"}]
    path = write_spec(tmp_path, methods=methods, extra={"description": "DESC", "notes": "TOPNOTES",
                                                        "models": [{"name": "toy1", "label": "MLABEL"}]})
    text = path.read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return path


def test_dates_in_text_fields_are_read_as_written(tmp_path):
    spec = load_spec(_spec(tmp_path, {"LABEL_A": "2026-12-7 9:30:00", "LABEL_B": "2001-12-14t21:59:43.10-05:00",
                                      "DESC": "2026-12-07", "TOPNOTES": "2026-02-30", "MLABEL": "2026-12-07"}))
    assert [m.label for m in spec.methods] == ["2026-12-7 9:30:00", "2001-12-14t21:59:43.10-05:00"]
    assert (spec.description, spec.notes) == ("2026-12-07", "2026-02-30")
    assert [m.label for m in spec.models] == ["2026-12-07"]


def test_a_date_that_is_none_elsewhere_is_one_line_at_its_line(tmp_path):
    path = _spec(tmp_path, {"TOPNOTES": "plain"})
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "primary_metric: 2026-02-30\n", encoding="utf-8")
    line = len(text.splitlines()) + 1
    with pytest.raises(ConfigError) as e:
        load_spec(path)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}:{line}:17: not valid YAML (2026-02-30 is read by YAML 1.1 as a date, and it is none ")
    assert "quote it as text" in msg


def test_plain_text_fields_are_unchanged(tmp_path):
    spec = load_spec(_spec(tmp_path, {}))
    assert [m.label for m in spec.methods] == ["LABEL_A", "LABEL_B"]
    assert (spec.description, spec.notes) == ("DESC", "TOPNOTES")
