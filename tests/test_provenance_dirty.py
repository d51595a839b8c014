"""A modified checkout recorded ``tokrag_commit`` = ``<HEAD>+dirty`` and nothing else, so two different edits of
``tokrag_model/methods/cad.py`` gave the same provenance (found by a provenance review). ``tokrag_changes``
(:func:`tokrag_model.provenance.git_changes_fingerprint`) now fingerprints the changes: tracked edits and new untracked
files under the package folders. Checked on a clone of this repository in ``tmp_path``."""

from __future__ import annotations

import pytest

from tests.eval_helpers import clone_checkout
from tokrag_model import provenance


@pytest.fixture
def clone(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKRAG_GIT_COMMIT", raising=False)
    return clone_checkout(tmp_path)


def test_two_edits_of_a_method_record_different_changes(clone, monkeypatch):
    f = clone / "tokrag_model" / "methods" / "cad.py"
    orig = f.read_text(encoding="utf-8")
    assert provenance.git_changes_fingerprint(clone) is None  # a clean checkout
    seen = []
    for edit in ("ALPHA_A = 1", "ALPHA_B = 2", "ALPHA_A = 1"):
        f.write_text(orig + f"\n{edit}\n", encoding="utf-8")
        assert provenance.git_commit(clone).endswith("+dirty")
        seen.append(provenance.git_changes_fingerprint(clone))
    assert all(isinstance(v, str) and len(v) == 16 for v in seen), seen
    assert seen[0] != seen[1] and seen[0] == seen[2], seen
    f.write_text(orig, encoding="utf-8")
    assert provenance.git_changes_fingerprint(clone) is None
    # a new module under the package folders counts (git_commit ignores untracked files), a file elsewhere does not
    (clone / "scratch.txt").write_text("notes", encoding="utf-8")
    assert provenance.git_changes_fingerprint(clone) is None
    (clone / "tokrag_model" / "methods" / "mine.py").write_text("X = 1\n", encoding="utf-8")
    first = provenance.git_changes_fingerprint(clone)
    (clone / "tokrag_model" / "methods" / "mine.py").write_text("X = 2\n", encoding="utf-8")
    assert first is not None and provenance.git_changes_fingerprint(clone) not in (None, first)
    # tokrag_changes() is the source tree's; the override of the commit switches it off
    monkeypatch.setattr(provenance, "SOURCE_ROOT", clone)
    assert provenance.tokrag_changes() == provenance.git_changes_fingerprint(clone)
    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "ci-build-7")
    assert provenance.tokrag_changes() is None


def test_outside_a_checkout_there_are_no_changes(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKRAG_GIT_COMMIT", raising=False)
    monkeypatch.setattr(provenance, "SOURCE_ROOT", tmp_path)
    assert provenance.tokrag_changes() is None
    assert provenance.git_changes_fingerprint(tmp_path) is None


def test_the_results_record_the_changes(backbone, monkeypatch):
    from tokrag_model.methods import MODELS

    monkeypatch.setattr(provenance, "tokrag_changes", lambda: "0123456789abcdef")
    info = MODELS["rag-none"].with_backbone(backbone).get_model_info()
    assert info["tokrag_versions"]["tokrag_changes"] == "0123456789abcdef"
