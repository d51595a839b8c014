"""``tokrag_changes`` (:func:`tokrag_model.provenance.git_changes_fingerprint`) hashed git's patch text, which follows
the user's git configuration: a review found one one-line edit giving f15d178cd175bf21 with git's defaults and
bff28020c9d7220c with ``diff.context=10``, though the docstring promised otherwise. It now hashes the changed files'
contents: the same edit gives the same value under any configuration, different edits different values. Checked on a
clone of this repository in ``tmp_path``, the configuration given as ``$GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n``."""

from __future__ import annotations

import subprocess

import pytest

from tests.eval_helpers import clone_checkout
from tokrag_model import provenance

CONFIGS = [
    {},
    {"diff.context": "10"},
    {"diff.algorithm": "histogram"},
    {"diff.algorithm": "patience", "diff.indentHeuristic": "false"},
    {"diff.indentHeuristic": "false"},
    {"core.autocrlf": "true"},
    {"core.autocrlf": "input", "diff.noprefix": "true", "diff.mnemonicPrefix": "true"},
    {"diff.relative": "true", "diff.renames": "copies", "diff.interHunkContext": "50", "diff.orderFile": "/dev/null"},
    {"diff.autoRefreshIndex": "false", "core.quotePath": "false", "diff.suppressBlankEmpty": "true"},
]


@pytest.fixture
def clone(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKRAG_GIT_COMMIT", raising=False)
    for k in ("GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_DIFF_OPTS", "GIT_EXTERNAL_DIFF"):
        monkeypatch.delenv(k, raising=False)
    return clone_checkout(tmp_path)


def _with_config(monkeypatch, repo, config: dict[str, str]) -> str | None:
    monkeypatch.setenv("GIT_CONFIG_COUNT", str(len(config)))
    for i, (k, v) in enumerate(config.items()):
        monkeypatch.setenv(f"GIT_CONFIG_KEY_{i}", k)
        monkeypatch.setenv(f"GIT_CONFIG_VALUE_{i}", v)
    try:
        return provenance.git_changes_fingerprint(repo)
    finally:
        for i in range(len(config)):
            monkeypatch.delenv(f"GIT_CONFIG_KEY_{i}")
            monkeypatch.delenv(f"GIT_CONFIG_VALUE_{i}")
        monkeypatch.delenv("GIT_CONFIG_COUNT")


def _edit(clone, which: str) -> None:
    """Two edits of ``tokrag_model/methods/cad.py`` 8 lines apart (so the context settings change git's patch), a
    deleted tracked file and a new module."""
    f = clone / "tokrag_model" / "methods" / "cad.py"
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(20, f"# edit {which}\n")
    lines.insert(12, "\n")
    f.write_text("".join(lines), encoding="utf-8")
    (clone / "tokrag_model" / "methods" / "__init__.py").unlink()
    (clone / "tokrag_model" / "methods" / "mine.py").write_text("X = 1\n", encoding="utf-8")


def test_the_same_edit_gives_the_same_value_under_any_git_config(clone, monkeypatch):
    assert _with_config(monkeypatch, clone, {"diff.context": "10"}) is None  # a clean checkout stays clean
    _edit(clone, "A")
    seen = {}
    for config in CONFIGS:
        seen[repr(config)] = _with_config(monkeypatch, clone, config)
    assert len(set(seen.values())) == 1, seen
    value = next(iter(seen.values()))
    assert isinstance(value, str) and len(value) == 16


def test_different_edits_give_different_values(clone, monkeypatch):
    f = clone / "tokrag_model" / "methods" / "cad.py"
    orig = f.read_bytes()
    values = []
    for which in ("A", "B"):
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", "--", "."], check=True, timeout=60)
        subprocess.run(["git", "-C", str(clone), "clean", "-qfd", "tokrag_model"], check=True, timeout=60)
        _edit(clone, which)
        values.append(_with_config(monkeypatch, clone, {}))
    assert None not in values and values[0] != values[1]
    # a deleted file counts as deleted: putting it back changes the value, and the untracked module counts too
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "--", "tokrag_model/methods/__init__.py"], check=True)
    restored = _with_config(monkeypatch, clone, {})
    assert restored not in (None, values[1])
    (clone / "tokrag_model" / "methods" / "mine.py").unlink()
    only_cad = _with_config(monkeypatch, clone, {"diff.context": "0"})
    assert only_cad not in (None, restored)
    f.write_bytes(orig)
    assert _with_config(monkeypatch, clone, {"core.autocrlf": "true"}) is None
