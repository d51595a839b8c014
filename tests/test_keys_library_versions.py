"""The run key's library versions (leaderboards.keys.library_versions): the ``tokenizers`` version is keyed (a fast
tokenizer's ids, SmolLM2's, come from it and it can be upgraded without transformers: a review found a patched
0.19.0 giving the same key), and the versions are read once per key computation, not once per cell (99 metadata
reads for the v2 spec). Counted, not timed."""

from __future__ import annotations

import importlib.metadata as md

import pytest


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def _keys(spec_path):
    from leaderboards.keys import cell_keys
    from leaderboards.spec import load_spec

    return cell_keys(load_spec(spec_path))


def test_tokenizers_version_is_keyed(tmp_path, monkeypatch):
    from leaderboard_helpers import write_spec

    from leaderboards.keys import library_versions

    assert library_versions()["tokenizers"] == md.version("tokenizers")
    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3)
    before = _keys(spec)
    assert before[0][2]["library_versions"]["tokenizers"] == md.version("tokenizers")
    real = md.version
    monkeypatch.setattr(md, "version", lambda name: "0.19.0" if name == "tokenizers" else real(name))
    after = _keys(spec)
    assert after[0][2]["library_versions"]["tokenizers"] == "0.19.0"
    assert {k for _, k, _ in before}.isdisjoint(k for _, k, _ in after)


def test_tokenizers_not_installed_is_none(monkeypatch):
    from leaderboards.keys import library_versions

    real = md.version

    def version(name):
        if name == "tokenizers":
            raise md.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(md, "version", version)
    assert library_versions()["tokenizers"] is None


def test_library_versions_are_read_once_per_key_computation(tmp_path, monkeypatch):
    import leaderboards.keys as keys
    from leaderboard_helpers import write_spec

    calls = []
    real = keys.library_versions
    monkeypatch.setattr(keys, "library_versions", lambda: calls.append(1) or real())
    spec = write_spec(tmp_path / "spec", seeds=(1, 2))  # 2 methods x 2 tasks x 2 seeds
    got = _keys(spec)
    assert len(got) == 8 and len(calls) == 1
    assert all(mat["library_versions"] == real() for _, _, mat in got)
    _keys(spec)  # a new computation reads them again (an upgrade in a long-lived process is seen)
    assert len(calls) == 2


def test_each_tree_is_walked_once_per_key_computation(tmp_path, monkeypatch):
    """Every cell fingerprints the same model package, retrieval package, task package and data folder: each is walked
    once per key computation (473 walks for the 99 cells of nq-wiki-12k-v2 before), with the keys unchanged."""
    from collections import Counter

    import leaderboards.keys as keys
    from leaderboard_helpers import write_spec

    spec = write_spec(tmp_path / "spec", seeds=(1, 2))  # 8 cells
    plain = [k for _, k, _ in _keys(spec)]
    walks: Counter = Counter()
    real = keys.tree_fingerprint

    def counting(root, memo, suffixes=None, **kw):
        walks[(str(root), None if suffixes is None else tuple(sorted(suffixes)))] += 1
        return real(root, memo, suffixes, **kw)

    monkeypatch.setattr(keys, "tree_fingerprint", counting)
    assert [k for _, k, _ in _keys(spec)] == plain
    assert walks and max(walks.values()) == 1, [k for k, n in walks.items() if n > 1]
