"""s57 r6 (review of g1's c026632): ``retrieval.io.python_code_sha`` of one file gave its code hash or its bytes hash
by the caller's stack depth. ``ast.dump`` recurses per level of the tree, and its RecursionError fell back to the
bytes, so a generated file with a long expression chain (700 terms of ``1 + 1 + ...``) was keyed by its code from a
shallow caller and by its bytes from one 400 frames deeper: two keys for one file, which the memo file then served to
every later process. A tree deeper than ``MAX_CODE_DEPTH`` is now keyed by its bytes from any depth; tokrag's own files
keep their code hash.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import retrieval.io as rio


def _at_depth(k: int, fn):
    """``fn()`` called ``k`` frames deeper than here."""
    return fn() if k == 0 else _at_depth(k - 1, fn)


@pytest.mark.parametrize("terms", [700, 950])
def test_a_deep_file_gets_one_hash_whatever_the_callers_stack_depth(tmp_path, terms) -> None:
    f = tmp_path / "generated.py"
    f.write_text("x = " + " + ".join(["1"] * terms) + "\n", encoding="utf-8")
    shallow = _at_depth(0, lambda: rio.python_code_sha(f))
    deep = _at_depth(400, lambda: rio.python_code_sha(f))
    assert shallow == deep == rio.sha256_file(f)  # was: the code hash from the shallow caller


def test_tokrag_files_keep_their_code_hash(tmp_path) -> None:
    repo = Path(rio.__file__).resolve().parents[1]
    for p in [repo / "retrieval" / "io.py", repo / "leaderboards" / "report.py", repo / "tasks" / "precheck.py"]:
        want = rio.sha256_bytes(rio.normalised_source(p.read_bytes(), str(p)).encode("utf-8"))
        assert rio.python_code_sha(p) == want != rio.sha256_file(p)
    f = tmp_path / "nested.py"  # at the bound: still its code
    f.write_text("x = " + " + ".join(["1"] * (rio.MAX_CODE_DEPTH - 3)) + "\n", encoding="utf-8")
    assert rio.python_code_sha(f) == rio.sha256_bytes(rio.normalised_source(f.read_bytes()).encode("utf-8"))
    assert _at_depth(400, lambda: rio.python_code_sha(f)) == rio.python_code_sha(f)


def test_an_entry_of_the_older_code_kind_is_not_served(tmp_path, monkeypatch) -> None:
    """The memo entries of ``py-code-v1`` may hold a deep file's code hash: v2 computes them again."""
    f = tmp_path / "generated.py"
    f.write_text("x = " + " + ".join(["1"] * 700) + "\n", encoding="utf-8")
    memo = rio.HashMemo(tmp_path / "memo.json")
    v1 = rio.PYTHON_CODE_KIND.replace("-v2-", "-v1-")
    assert v1 != rio.PYTHON_CODE_KIND
    memo.table[f"{v1}:{f.resolve()}"] = [*rio.file_stamp(f), "0" * 64]
    assert memo.code_sha(f) == rio.sha256_file(f)
