"""Numbers a leaderboard spec's YAML reads as another value than written (s57 b1).

PyYAML reads YAML 1.1: a leading zero is octal (``k: 010`` ran k=8, ``seeds: [0042]`` seed 34, ``max_gen_toks: 010``
8 tokens) and colons are base 60 (``limit: 1:30`` scored 90 documents; ``label: 10:30`` printed 630), all without a
word. YAML 1.2 reads ``010`` as 10 and ``1:30`` as text. Now such a number is one line naming the spec file, line and
column and the number to write; hex, binary, ``0`` and ``1_000`` are read as before.
"""

from __future__ import annotations

import pytest

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

BASE = """name: t
shared:
  model_args: {{pretrained: smollm2-135m-instruct, k: {k}}}
  gen_kwargs: {{max_gen_toks: {toks}}}
  limit: {limit}
tasks: [nq_oracle_bm25]
seeds: [{seed}]
methods:
  - {{name: rag-standard, model: rag-standard, label: {label}}}
"""
PLAIN = {"k": "3", "toks": "16", "limit": "4", "seed": "1", "label": "std"}


def _spec(tmp_path, **kw):
    path = tmp_path / "s.yaml"
    path.write_text(BASE.format(**{**PLAIN, **kw}))
    return path


@pytest.mark.parametrize("key, text, line, col, problem", [
    ("k", "010", 3, 54, "010 is read by YAML 1.1 as octal (a leading zero), the number 8: write 8 for that number, 10 "
                        "for the decimal one, or quote it as text"),
    ("seed", "0042", 7, 9, "0042 is read by YAML 1.1 as octal (a leading zero), the number 34: write 34 for that number, "
                           "42 for the decimal one, or quote it as text"),
    ("toks", "010", 4, 30, "010 is read by YAML 1.1 as octal (a leading zero), the number 8: write 8 for that number, 10 "
                           "for the decimal one, or quote it as text"),
    ("limit", "1:30", 5, 10, "1:30 is read by YAML 1.1 as base 60 (each ':' part a sexagesimal digit), the number 90: "
                             "write 90 for that number, or quote it as text"),
    ("limit", "1:30.5", 5, 10, "1:30.5 is read by YAML 1.1 as base 60 (each ':' part a sexagesimal digit), the number "
                               "90.5: write 90.5 for that number, or quote it as text"),
])
def test_octal_and_base_60_numbers_are_refused(tmp_path, key, text, line, col, problem):
    path = _spec(tmp_path, **{key: text})
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == f"{path}:{line}:{col}: {problem}; fix the leaderboard spec"


def test_plain_hex_binary_and_underscored_numbers_unchanged(tmp_path):
    spec = load_spec(_spec(tmp_path, k="0x3", toks="0b10000", seed="1_000", limit="4"))
    assert spec.shared["model_args"]["k"] == 3 and spec.shared["gen_kwargs"]["max_gen_toks"] == 16
    assert spec.seeds == [1000] and spec.shared["limit"] == 4


def test_quoted_label_keeps_its_text(tmp_path):
    spec = load_spec(_spec(tmp_path, label='"10:30"', seed="0"))
    assert spec.methods[0].label == "10:30" and spec.seeds == [0]


def test_unquoted_label_is_read_as_its_text(tmp_path):
    """A text field is read as written (s57 h2, tests/test_s57_h2_spec_text_fields.py): ``label: 10:30`` was refused
    here as base 60 (the case moved out of the refusals above); a label has no number to mean, so it is the text."""
    spec = load_spec(_spec(tmp_path, label="10:30", seed="0"))
    assert spec.methods[0].label == "10:30"
