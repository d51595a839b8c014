"""A hub cache snapshot of a data set as ``huggingface_hub`` lays one out (``refs/main`` -> ``snapshots/<commit>/``)."""

from __future__ import annotations

from pathlib import Path


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
