"""A spec text field read as the text written (s57 h2's 7e9ff48) does not turn a YAML anchor's number into text where
it is used elsewhere (s57 r10, review): :func:`leaderboards.spec._text_as_written` retagged the text field's node
itself, and a YAML alias is the same node, so ``limit: &n 12`` with ``notes: *n`` made ``limit`` the text '12'
(refused: "shared.limit must be a positive number ..., got '12'"), and ``description: &n 12`` with ``limit: *n``
the same. The text field now gets a copy of the node; the other uses keep their number."""

from __future__ import annotations

from leaderboards.spec import load_spec
from tests.leaderboard_helpers import write_spec


def test_an_alias_in_a_text_field_leaves_the_anchored_number_a_number(tmp_path):
    path = write_spec(tmp_path, extra={"notes": "NOTES"})
    text = path.read_text(encoding="utf-8")
    assert "limit: 12\n" in text and "notes: NOTES\n" in text
    path.write_text(text.replace("limit: 12\n", "limit: &n 12\n").replace("notes: NOTES\n", "notes: *n\n"),
                    encoding="utf-8")
    spec = load_spec(path)
    assert (spec.shared["limit"], spec.notes) == (12, "12")


def test_an_anchor_on_a_text_field_leaves_its_alias_elsewhere_a_number(tmp_path):
    path = write_spec(tmp_path)
    text = path.read_text(encoding="utf-8")
    assert "limit: 12\n" in text
    path.write_text("description: &n 12\n" + text.replace("limit: 12\n", "limit: *n\n"), encoding="utf-8")
    spec = load_spec(path)
    assert (spec.shared["limit"], spec.description) == (12, "12")


def test_a_plain_text_field_is_still_read_as_written(tmp_path):
    path = write_spec(tmp_path, extra={"notes": "NOTES", "description": "DESC"})
    path.write_text(path.read_text(encoding="utf-8").replace("NOTES", "010").replace("DESC", "yes"), encoding="utf-8")
    spec = load_spec(path)
    assert (spec.notes, spec.description, spec.shared["limit"]) == ("010", "yes", 12)
