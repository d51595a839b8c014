"""A hub cache snapshot of a data set as ``huggingface_hub`` lays one out (``refs/main`` -> ``snapshots/<commit>/``), and
the ``offline`` fixture (no hub, empty caches and data folder) of the offline data checks' tests."""

from __future__ import annotations

from pathlib import Path

import pytest


def hub_snapshot(hub_cache: Path, repo_id: str, files: dict[str, str], commit: str = "c" * 40) -> Path:
    """Write ``files`` (path in the repository -> text) into ``<hub_cache>/datasets--<owner>--<name>/snapshots/<commit>/``
    and point ``refs/main`` at it; returns the snapshot folder."""
    repo = hub_cache / f"datasets--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / commit
    for name, text in files.items():
        (snap / name).parent.mkdir(parents=True, exist_ok=True)
        (snap / name).write_text(text, encoding="utf-8")
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snap


@pytest.fixture()
def offline(tmp_path, monkeypatch):
    """HF_HUB_OFFLINE=1, an empty data folder, and empty hub and datasets caches."""
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(data))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    return data
