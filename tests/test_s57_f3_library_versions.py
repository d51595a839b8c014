"""The libraries that turn answers into numbers and load the data are recorded and keyed with the others (s57 f3):
numpy (every metric's mean, the bootstrap CIs), scipy (the paired tests), scikit-learn (``critic_auc``), rouge-score
and rouge (the long-form tasks' ROUGE-L) and datasets (the task data) were in no run key, in no results'
``config.tokrag_versions`` and not in ``tokrag --version``. Now :func:`leaderboards.keys.library_versions` names
them, so the leaderboard run keys (an upgrade re-keys every cell), the results, ``tokrag --version`` and the
benchmarks' provenance do. Versions read from package metadata; an upgrade is a patched ``importlib.metadata.version``.
``tokrag --version`` still imports none of them (nor torch)."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ADDED = ("numpy", "scipy", "scikit-learn", "rouge-score", "rouge", "datasets")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def _keys(spec_path):
    from leaderboards.keys import cell_keys
    from leaderboards.spec import load_spec

    return cell_keys(load_spec(spec_path))


def test_the_run_keys_name_the_metric_and_data_libraries(tmp_path, monkeypatch) -> None:
    from leaderboard_helpers import write_spec

    from leaderboards.keys import library_versions

    versions = library_versions()
    for name in ADDED:
        assert versions[name] == md.version(name), name
    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3)
    before = _keys(spec)
    assert {name: before[0][2]["library_versions"][name] for name in ADDED} == {name: md.version(name) for name in ADDED}
    real = md.version
    for name in ("numpy", "scipy", "datasets"):  # each upgrade alone gives every cell a new key
        monkeypatch.setattr(md, "version", lambda n, name=name: "99.0.0" if n == name else real(n))
        after = _keys(spec)
        assert after[0][2]["library_versions"][name] == "99.0.0"
        assert {k for _, k, _ in before}.isdisjoint(k for _, k, _ in after), name
    monkeypatch.setattr(md, "version", real)
    assert [k for _, k, _ in _keys(spec)] == [k for _, k, _ in before]


def test_a_library_not_installed_is_none(monkeypatch) -> None:
    from leaderboards.keys import library_versions

    real = md.version

    def version(name):
        if name in ("rouge", "scikit-learn"):
            raise md.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(md, "version", version)
    got = library_versions()
    assert got["rouge"] is None and got["scikit-learn"] is None and got["numpy"] == real("numpy")


def test_results_version_text_and_benchmarks_record_them() -> None:
    from benchmarks._cli import provenance
    from tokrag_model.base import RAGMethodLM
    from tokrag_model.eval_cli import version_text

    recorded = RAGMethodLM._library_versions.func(None)  # config.tokrag_versions, less tokrag's own
    lines = version_text().splitlines()
    bench = provenance(started={"tokrag_commit": None, "tokrag_changes": None})["versions"]
    for name in ADDED:
        assert recorded[name] == md.version(name), name
        assert f"{name} {md.version(name)}" in lines, (name, lines)
        assert bench[name] == md.version(name), name


def test_version_text_imports_no_numeric_library() -> None:
    """``tokrag --version`` reads package metadata only: torch, numpy, scipy, datasets, sklearn, rouge stay unimported
    (measured: 0.11-0.14 s before and after this change on the shared 2-core machine)."""
    code = ("import sys; from tokrag_model.eval_cli import version_text; text = version_text(); "
            "print(sorted(m for m in ('torch', 'numpy', 'scipy', 'datasets', 'sklearn', 'rouge', 'rouge_score') "
            "if m in sys.modules)); print('numpy ' in text and 'scipy ' in text)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "True"], out
