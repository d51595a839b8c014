"""Run keys that a docstring or comment edit does not change (s57 g1).

The leaderboard run keys' code fields (:func:`leaderboards.keys.code_fingerprint`: ``model_code``, ``retrieval_code``)
and ``--use_cache``'s code key (:func:`tokrag_model.base.answer_code_fingerprint`) hashed every source file's bytes, as
did a task's key over its package (:func:`leaderboards.keys.task_fingerprint`, ``tasks/``), so a docstring or comment
edit re-keyed every cell and every cached response. Now a ``.py`` file is hashed by its code
(:func:`retrieval.io.normalised_source`, as the retrieval caches' :func:`retrieval.io.source_fingerprint`), a ``.py``
that does not parse by its bytes, the YAML/Jinja files by their bytes as before; the per-file hashes are memoised in
the memo file under a versioned kind (:data:`retrieval.io.PYTHON_CODE_KIND`), never read from a raw-bytes entry.

Edits are made on copies (of the ``retrieval`` package, or small packages written here) under ``tmp_path``, each
written as a new file with its own mtime (:func:`_rewrite`), so no two versions of a file share a stamp.
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
import shutil
from pathlib import Path

import pytest

import retrieval.io as rio
from leaderboards.keys import _HashMemo, code_fingerprint, task_fingerprint

REPO = Path(__file__).resolve().parents[1]
_MTIMES = itertools.count(1_700_000_000_000_000_000, 1_000_000_000)  # ns: a distinct mtime for every rewrite


@pytest.fixture(autouse=True)
def fresh_memo(tmp_path, monkeypatch):
    """A fresh memo file per test (``<cache_dir>/leaderboard-file-hashes.json``), and no per-process code hashes."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    _forget()
    yield
    _forget()


def _forget() -> None:
    at = getattr(rio, "_code_sha_at", None)
    if at is not None:
        at.cache_clear()


def _rewrite(path: Path, text: str | bytes) -> None:
    """``path`` replaced by a new file holding ``text``, with an mtime no other version had."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    os.replace(tmp, path)
    t = next(_MTIMES)
    os.utime(path, ns=(t, t))


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    _rewrite(path, text.replace(old, new))


def _package(root: Path, name: str, files: dict[str, str | bytes], monkeypatch) -> Path:
    """A package ``name`` under ``root`` (on ``sys.path``) holding ``files`` (relative path -> content)."""
    pkg = root / name
    for rel, text in {"__init__.py": "", **files}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        _rewrite(pkg / rel, text)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    return pkg


@pytest.fixture
def copy(tmp_path, monkeypatch) -> Path:
    """A copy of the ``retrieval`` package, importable (not imported) as ``s57g1_retrieval_copy``."""
    pkg = tmp_path / "pkgs" / "s57g1_retrieval_copy"
    shutil.copytree(REPO / "retrieval", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    monkeypatch.syspath_prepend(str(pkg.parent))
    importlib.invalidate_caches()
    return pkg


def _fp(module: str = "s57g1_retrieval_copy") -> str:
    """``code_fingerprint`` of ``module`` as a new key computation gives it (a new memo, read from the memo file)."""
    memo = _HashMemo()
    value = code_fingerprint(module, memo)
    memo.save()
    return value


def _raw(pkg: Path) -> str:
    """The fingerprint of ``pkg``'s files by their bytes (what the keys were before)."""
    return rio.tree_fingerprint(pkg, rio.HashMemo(), {".py", ".yaml", ".yml", ".jinja"})


def _docstring_lines(path: Path) -> list[tuple[int, int]]:
    """``(line index, column)`` where each docstring of ``path`` (module, classes, functions) opens."""
    import ast

    out = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(
                node, clean=False) is not None:
            out.append((node.body[0].lineno - 1, node.body[0].col_offset))
    return out


def _edit_docstrings(path: Path) -> int:
    """Every docstring of ``path`` gets words in front of its text, and the module's one more line; the count."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    places = _docstring_lines(path)
    for i, col in sorted(places, reverse=True):
        line = lines[i]
        at = col + next(k for k, c in enumerate(line[col:]) if c in "\"'")  # past a prefix (r, u)
        at += 3 if line[at:at + 3] in ('"""', "'''") else 1  # a plain "..." docstring too
        lines[i] = line[:at] + "Edited (s57 g1). " + line[at:]
    _rewrite(path, "".join(lines))
    compile(path.read_bytes(), str(path), "exec")  # still Python
    return len(places)


def _edit_comments_and_layout(path: Path) -> None:
    """Comment lines and blank lines added before every top-level definition, a comment after the first import."""
    text = path.read_text(encoding="utf-8")
    assert "\ndef " in text and "\nimport " in text
    text = text.replace("\ndef ", "\n# a comment added by s57 g1\n\n\ndef ")
    text = text.replace("\nimport ", "\n# a comment line\nimport ", 1)
    _rewrite(path, text + "\n# a last comment\n")


def test_a_docstring_only_edit_keeps_the_code_fingerprint(copy):
    before, raw = _fp(), _raw(copy)
    assert _edit_docstrings(copy / "io.py") > 10 and _edit_docstrings(copy / "cache.py") > 10
    assert _raw(copy) != raw  # the files' bytes did change
    assert _fp() == before  # was another fingerprint: every cell and cached response re-keyed


def test_a_comment_and_layout_only_edit_keeps_the_code_fingerprint(copy):
    before, raw = _fp(), _raw(copy)
    _edit_comments_and_layout(copy / "io.py")
    _edit_comments_and_layout(copy / "bm25.py")
    assert _raw(copy) != raw
    assert _fp() == before


def _append(path: Path, text: str) -> None:
    _rewrite(path, path.read_text(encoding="utf-8") + text)


def test_a_code_edit_changes_the_code_fingerprint(copy):
    before = _fp()
    _append(copy / "io.py", "\nS57G1 = 1\n")
    after = _fp()
    assert after != before
    _append(copy / "bm25.py", "\nS57G1 = 2\n")  # another file
    assert _fp() not in (before, after)


def test_a_string_used_as_a_value_changes_the_code_fingerprint(copy):
    _append(copy / "io.py", '\nS57G1_NAME = "leaderboard-file-hashes.json"\n\n\ndef s57g1():\n    """Doc."""\n    return "x"\n')
    before = _fp()
    _append(copy / "io.py", 'S57G1_NAME = "leaderboard-file-hashes-2.json"\n')  # a string assigned: a value
    after = _fp()
    assert after != before
    # a bare string statement (not first in its body) is left out as a docstring is (normalised_source, as in the
    # retrieval keys); a string returned is a value
    _append(copy / "io.py", '"""an attribute docstring under S57G1_NAME"""\n')
    assert _fp() == after
    text = (copy / "io.py").read_text(encoding="utf-8")
    assert text.count('    return "x"\n') == 1
    _rewrite(copy / "io.py", text.replace('    return "x"\n', '    return "y"\n'))
    assert _fp() != after


def test_yaml_and_jinja_files_are_keyed_by_their_bytes(tmp_path, monkeypatch):
    pkg = _package(tmp_path, "s57g1_yaml_pkg", {"m.py": "X = 1\n", "conf.yaml": "a: 1\n", "t.jinja": "{{ q }}\n"},
                   monkeypatch)
    before = _fp("s57g1_yaml_pkg")
    code = rio.sha256_bytes(rio.normalised_source("X = 1\n").encode("utf-8"))
    empty = rio.sha256_bytes(rio.normalised_source("").encode("utf-8"))
    assert before == rio.fingerprint([["__init__.py", empty], ["conf.yaml", rio.sha256_bytes(b"a: 1\n")],
                                      ["m.py", code], ["t.jinja", rio.sha256_bytes(b"{{ q }}\n")]])
    _rewrite(pkg / "conf.yaml", "a: 1  # a comment: data files are keyed by their bytes\n")
    after = _fp("s57g1_yaml_pkg")
    assert after != before
    _rewrite(pkg / "t.jinja", "{# a comment #}{{ q }}\n")
    assert _fp("s57g1_yaml_pkg") != after


@pytest.mark.parametrize("bad", [b"def f(:\n    return 1\n", b"x = 1\x00\n", b"x = '\xff'\n",
                                 b"# -*- coding: no-such-codec -*-\nx = 1\n", b"x = " + b"-" * 10000 + b"1\n"],
                         ids=["syntax", "null-byte", "not-utf8", "unknown-coding", "too-deep"])
def test_a_py_file_that_does_not_parse_is_keyed_by_its_bytes(tmp_path, monkeypatch, bad):
    pkg = _package(tmp_path, "s57g1_bad_pkg", {"bad.py": bad}, monkeypatch)
    empty = rio.sha256_bytes(rio.normalised_source("").encode("utf-8"))
    assert _fp("s57g1_bad_pkg") == rio.fingerprint([["__init__.py", empty], ["bad.py", rio.sha256_bytes(bad)]])
    _rewrite(pkg / "bad.py", b"# a comment changes a file that does not parse\n" + bad)
    assert _fp("s57g1_bad_pkg") == rio.fingerprint([["__init__.py", empty], ["bad.py", rio.sha256_bytes(
        b"# a comment changes a file that does not parse\n" + bad)]])


def test_an_old_format_memo_entry_is_not_served_as_a_code_hash(tmp_path, monkeypatch):
    """A memo written by the old code holds each source file's raw SHA-256 under its bare path (and another
    normalisation's or Python's entries could be there): none is read as the file's code hash."""
    from retrieval.paths import cache_dir

    pkg = _package(tmp_path, "s57g1_memo_pkg", {"m.py": '"""Doc."""\nX = 1\n'}, monkeypatch)
    files = {name: (pkg / name).resolve() for name in ("__init__.py", "m.py")}
    stale = {}
    for name, p in files.items():
        stamp = rio.file_stamp(p)
        stale[str(p)] = [*stamp, rio.sha256_file(p)]  # the old code's entry: the file's bytes
        stale[f"py-code-v0-3.11:{p}"] = [*stamp, "0" * 64]  # an older normalisation
        stale[f"py-code-v1-3.10:{p}"] = [*stamp, "1" * 64]  # another Python's ast
    memo_file = cache_dir() / rio.HASH_MEMO_FILE
    rio.atomic_write_json(memo_file, stale)

    code = {"__init__.py": rio.sha256_bytes(rio.normalised_source("").encode("utf-8")),
            "m.py": rio.sha256_bytes(rio.normalised_source("X = 1\n").encode("utf-8"))}
    expected = rio.fingerprint([[name, code[name]] for name in ("__init__.py", "m.py")])
    assert _fp("s57g1_memo_pkg") == expected  # the old code served the raw entries: the bytes' fingerprint

    saved = json.loads(memo_file.read_text(encoding="utf-8"))
    for name, p in files.items():
        assert saved[f"{rio.PYTHON_CODE_KIND}:{p}"] == [*rio.file_stamp(p), code[name]]
        assert saved[str(p)] == stale[str(p)]  # the raw entries stay for the readers of bytes (HashMemo.sha)
    assert rio.PYTHON_CODE_KIND.startswith("py-code-v2-")  # v2: s57 r6, MAX_CODE_DEPTH


def test_a_second_key_computation_reads_the_memo_file_and_parses_nothing(tmp_path, monkeypatch):
    pkg = _package(tmp_path, "s57g1_warm_pkg", {"m.py": '"""Doc."""\nX = 1\n', "sub/__init__.py": "Y = 2\n"},
                   monkeypatch)
    first = _fp("s57g1_warm_pkg")  # parses both files, saves their hashes
    _forget()  # a new process: only the memo file
    parsed = []
    real = rio.normalised_source
    monkeypatch.setattr(rio, "normalised_source", lambda *a, **k: parsed.append(a[1:]) or real(*a, **k))
    assert _fp("s57g1_warm_pkg") == first
    assert parsed == []  # a stat per file, no parse
    _edit(pkg / "m.py", "X = 1", "X = 3")
    assert _fp("s57g1_warm_pkg") != first
    assert parsed == [(str((pkg / "m.py").resolve()),)]  # only the edited file is parsed again


def test_a_task_package_docstring_edit_keeps_the_task_key(tmp_path, monkeypatch):
    """task_fingerprint hashes the package around a task's YAML (``tasks/`` for every built-in task) the same way."""
    pkg = _package(tmp_path, "s57g1_task_pkg", {
        "metrics.py": 'def em(a, b):\n    """Exact match."""\n    return a == b  # exact\n',
        "qa/base.yaml": "task: s57g1_base_t\ndoc_to_text: 'Q: {{question}}'\n",
    }, monkeypatch)

    def fp() -> str:
        return task_fingerprint("s57g1_base_t", [pkg], _HashMemo())

    before = fp()
    _rewrite(pkg / "metrics.py", 'def em(a, b):\n    """Exact match of two strings."""\n\n    return a == b  # same\n')
    assert fp() == before  # was another key: every built-in task's cells re-keyed by a tasks/ docstring
    _rewrite(pkg / "metrics.py", 'def em(a, b):\n    """Exact match."""\n    return a.lower() == b.lower()\n')
    after = fp()
    assert after != before
    _rewrite(pkg / "qa" / "base.yaml", "task: s57g1_base_t  # a comment\ndoc_to_text: 'Q: {{question}}'\n")
    assert fp() != after  # the YAML by its bytes
