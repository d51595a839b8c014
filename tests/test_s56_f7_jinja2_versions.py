"""jinja2, which renders every prompt (lm-eval's task templates) and chat template (transformers), is recorded and
keyed with the other libraries (s56 f7, audit a1 F6): the leaderboard run keys' ``library_versions`` (so a jinja2
upgrade re-keys every cell), a cell's ``provenance.json`` versions, the results' ``config.tokrag_versions``,
``tokrag --version`` and the benchmarks' provenance line. Versions read from package metadata; the upgrade is a
patched ``importlib.metadata.version``."""

from __future__ import annotations

import importlib.metadata as md

import pytest

JINJA2 = md.version("jinja2")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def _keys(spec_path):
    from leaderboards.keys import cell_keys
    from leaderboards.spec import load_spec

    return cell_keys(load_spec(spec_path))


def test_jinja2_is_in_the_run_keys_library_versions(tmp_path, monkeypatch) -> None:
    from leaderboard_helpers import write_spec

    from leaderboards.keys import library_versions

    assert library_versions()["jinja2"] == JINJA2
    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3)
    before = _keys(spec)
    assert before[0][2]["library_versions"]["jinja2"] == JINJA2
    real = md.version
    monkeypatch.setattr(md, "version", lambda name: "99.0.0" if name == "jinja2" else real(name))
    after = _keys(spec)
    assert after[0][2]["library_versions"]["jinja2"] == "99.0.0"
    assert {k for _, k, _ in before}.isdisjoint(k for _, k, _ in after)


def test_jinja2_not_installed_is_none(monkeypatch) -> None:
    from leaderboards.keys import library_versions

    real = md.version

    def version(name):
        if name == "jinja2":
            raise md.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(md, "version", version)
    assert library_versions()["jinja2"] is None


def test_provenance_json_versions_hold_jinja2() -> None:
    from leaderboards.runner import library_versions

    assert library_versions()["jinja2"] == JINJA2


def test_results_version_text_and_benchmarks_record_jinja2() -> None:
    from benchmarks._cli import provenance
    from tokrag_model.base import RAGMethodLM
    from tokrag_model.eval_cli import version_text

    assert RAGMethodLM._library_versions.func(None)["jinja2"] == JINJA2  # config.tokrag_versions
    assert f"jinja2 {JINJA2}" in version_text().splitlines()
    assert provenance(started={"tokrag_commit": None, "tokrag_changes": None})["versions"]["jinja2"] == JINJA2
