"""s57 r6 (review of g1's c026632): ``tasks.analyze.records_code_fingerprint`` (part of every ``tokrag analyze``
records key) hashed ``tasks/analyze.py`` with ``sha256_file``: a docstring or comment edit of analyze.py renamed every
records file and rescored every sample, while ``tokrag_model`` beside it was already hashed by its code (g1). It now
hashes the file as ``leaderboards.keys.code_fingerprint`` hashes a ``.py`` file (``HashMemo.code_sha``:
``retrieval.io.normalised_source``).

The edits are made by position (``ast``), not by matching lines of the live file, so another edit of it cannot break
the tests. The edit helpers are shared with tests/test_s57_r6_converter_code_key.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from retrieval.io import fingerprint, normalised_source, python_code_sha, sha256_bytes, sha256_file


def _insert(source: str, line: int, col: int, text: str) -> str:
    """``source`` with ``text`` inserted at 1-based ``line``, 0-based ``col``."""
    lines = source.splitlines(keepends=True)
    lines[line - 1] = lines[line - 1][:col] + text + lines[line - 1][col:]
    return "".join(lines)


def _docstring_edit(source: str) -> str:
    """Every docstring of ``source`` (module, classes, functions) with a sentence prepended after its quotes."""
    tree = ast.parse(source)
    spots = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                quote = source.splitlines()[first.lineno - 1][first.col_offset:first.col_offset + 3]
                assert quote in ('"""', "'''"), quote
                spots.append((first.lineno, first.col_offset + 3))
    assert spots
    for line, col in sorted(spots, reverse=True):
        source = _insert(source, line, col, "An edited docstring (s57 r6). ")
    return source


def _comment_edit(source: str) -> str:
    """``source`` with a comment line and a blank line before each top-level function and class."""
    tree = ast.parse(source)
    lines = sorted({(n.decorator_list[0].lineno if n.decorator_list else n.lineno) for n in tree.body
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef))}, reverse=True)
    assert lines
    out = source.splitlines(keepends=True)
    for line in lines:
        out.insert(line - 1, "# a comment added by s57 r6\n\n")
    return "".join(out)


# --- tasks/analyze.py: records_code_fingerprint ---------------------------------------------------------------


@pytest.fixture
def analyze_copies(tmp_path, monkeypatch):
    """A function giving ``records_code_fingerprint()`` (not memoised) with ``tasks/analyze.py`` replaced by a copy
    holding the given text; ``tokrag_model``'s code fingerprint is a fixed stand-in (not the subject here)."""
    import leaderboards.keys as keys
    from tasks import analyze

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(keys, "code_fingerprint", lambda module, memo: f"fp-{module}")
    made = []

    def key_of(text: str) -> tuple[str, Path]:
        copy = tmp_path / f"copy{len(made)}" / "analyze.py"
        copy.parent.mkdir()
        copy.write_text(text, encoding="utf-8")
        made.append(copy)
        monkeypatch.setattr(analyze, "__file__", str(copy))
        return analyze.records_code_fingerprint.__wrapped__(), copy

    return key_of, Path(analyze.__file__).read_text(encoding="utf-8")


def test_a_docstring_edit_of_analyze_keeps_the_records_key(analyze_copies) -> None:
    key_of, source = analyze_copies
    base, copy = key_of(source)
    assert base == fingerprint([["tokrag_model", "fp-tokrag_model"], ["tasks/analyze.py", python_code_sha(copy)]])
    assert python_code_sha(copy) == sha256_bytes(normalised_source(source).encode("utf-8"))
    edited, edited_copy = key_of(_docstring_edit(source))
    assert sha256_file(edited_copy) != sha256_file(copy)  # other bytes ...
    assert edited == base  # ... same code: every records file kept (was a new key: every sample rescored)


def test_a_comment_edit_of_analyze_keeps_the_records_key(analyze_copies) -> None:
    key_of, source = analyze_copies
    base, _ = key_of(source)
    assert key_of(_comment_edit(source))[0] == base


def test_a_code_edit_of_analyze_changes_the_records_key(analyze_copies) -> None:
    key_of, source = analyze_copies
    base, _ = key_of(source)
    changed, copy = key_of(source + "\nRECORDS_CODE_EDITED = 1\n")
    assert changed != base
    assert changed == fingerprint([["tokrag_model", "fp-tokrag_model"], ["tasks/analyze.py", python_code_sha(copy)]])


def test_the_records_key_of_analyze_is_memoised_in_the_memo_file_under_the_code_kind(analyze_copies, tmp_path) -> None:
    import json

    from retrieval.io import HASH_MEMO_FILE, PYTHON_CODE_KIND

    key_of, source = analyze_copies
    _, copy = key_of(source)
    table = json.loads((tmp_path / "cache" / HASH_MEMO_FILE).read_text(encoding="utf-8"))
    assert table[f"{PYTHON_CODE_KIND}:{copy.resolve()}"][-1] == python_code_sha(copy)
    assert str(copy.resolve()) not in table  # no raw-bytes entry for it
