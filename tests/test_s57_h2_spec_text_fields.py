"""A leaderboard spec's text fields are read as the text written (s57 h2): YAML 1.1 reads ``yes``/``no``/``on``/
``off``/``true`` as booleans and ``1e3``/``010`` as numbers, so ``label: yes`` printed "True", ``label: no`` (False)
printed the method's name, ``description: 1e3`` "1000.0", and ``notes: 010`` was refused as an octal number. A text
field has no other meaning to give them, so :func:`leaderboards.spec.load_spec` reads the plain scalar of each text
field (top level: name, description, notes, subset; each ``models``/``methods`` entry: name, label, notes) as written;
a list or mapping there is refused in one line naming the file and line."""

from __future__ import annotations

import pytest

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import TOY, write_spec


def _spec(tmp_path, replace: dict[str, str]):
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "label": "LABEL_A"},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}, "label": "LABEL_B", "notes": "NOTES_B"}]
    path = write_spec(tmp_path, methods=methods, extra={
        "description": "DESC", "notes": "TOPNOTES", "subset": "SUBSET",
        "models": [{"name": "toy1", "label": "MLABEL", "notes": "MNOTES"}]})
    text = path.read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_1_1_booleans_and_numbers_in_text_fields_are_read_as_written(tmp_path):
    spec = load_spec(_spec(tmp_path, {"LABEL_A": "yes", "LABEL_B": "no", "NOTES_B": "off", "DESC": "1e3",
                                      "TOPNOTES": "010", "SUBSET": "True", "MLABEL": "On", "MNOTES": "0x1f"}))
    assert [(m.name, m.label) for m in spec.methods] == [("standard", "yes"), ("none", "no")]
    # (a method's notes: accepted, not kept in MethodSpec; "off" read as text is not refused either)
    assert (spec.description, spec.notes, spec.subset) == ("1e3", "010", "True")
    assert [(m.name, m.label, m.notes) for m in spec.models] == [("toy1", "On", "0x1f")]


def test_a_name_written_as_a_number_is_its_text(tmp_path):
    spec = load_spec(_spec(tmp_path, {"name: toy1": "name: 7", "name: none": "name: 1e3"}))
    assert [m.name for m in spec.models] == ["7"]
    assert [m.name for m in spec.methods] == ["standard", "1e3"]


def test_quoted_null_and_empty_values_are_as_before(tmp_path):
    spec = load_spec(_spec(tmp_path, {"LABEL_A": "'yes'", "label: LABEL_B": "label: null", "MLABEL": "''"}))
    assert [m.label for m in spec.methods] == ["yes", "none"]  # null: not given, the method's name
    assert [m.label for m in spec.models] == ["toy1"]


def test_numbers_elsewhere_are_still_numbers(tmp_path):
    spec = load_spec(_spec(tmp_path, {"LABEL_A": "yes"}))
    assert spec.seeds == [1] and spec.shared["limit"] == 12 and spec.shared["model_args"]["k"] == 3
    with pytest.raises(ConfigError, match=r"010 is read by YAML 1\.1 as octal"):
        load_spec(_spec(tmp_path, {"limit: 12": "limit: 010"}))


def test_a_list_in_a_text_field_is_refused_naming_the_line(tmp_path):
    path = _spec(tmp_path, {"LABEL_B": "[a, b]"})
    line = next(i for i, t in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "label: [a, b]" in t)
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == (f"{path}:{line}: methods[1].label is a list; write it as text (quote it if it holds "
                              "':' or starts with '[' or '{')")
