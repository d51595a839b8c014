"""Shared helpers of the tests that run ``tokrag eval`` / lm-eval's CLI in-process up to the model load, write
bring-your-own data, give a fresh cache folder the converted model, or need a git clone of this checkout."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Callable


def stop_at_model_load(monkeypatch, reached: Callable[..., Any]) -> None:
    """Replace ``lm_eval.simple_evaluate`` (where lm-eval's CLI builds the model) by ``reached`` (called with its
    arguments: it raises, so a run that got past every pre-load check ends there), index only our tasks (lm-eval's
    own ~10k task files cost ~10 s a run and none is used), show tokrag's one-line errors (no traceback) and stay
    offline."""
    import lm_eval
    import lm_eval.tasks

    monkeypatch.setattr(lm_eval, "simple_evaluate", reached)
    init = lm_eval.tasks.TaskManager.__init__

    def ours_only(self, *args, **kwargs):
        kwargs["include_defaults"] = False
        return init(self, *args, **kwargs)

    monkeypatch.setattr(lm_eval.tasks.TaskManager, "__init__", ours_only)
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def byo_data(folder: Path) -> tuple[Path, Path]:
    """A bring-your-own questions file (30 questions: some in every split) and a 3-passage corpus in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    q, c = folder / "q.jsonl", folder / "passages.jsonl"
    q.write_text("".join(json.dumps({"id": f"q{i}", "question": f"who wrote book number {i}", "answers": [f"A{i}"]}) + "\n"
                         for i in range(30)), encoding="utf-8")
    c.write_text("".join(json.dumps({"id": f"d{i}", "title": f"T{i}", "text": f"book {i} was written by A{i}"}) + "\n"
                         for i in range(3)), encoding="utf-8")
    return q, c


def copy_converted_model(cache: Path, name: str = "smollm2-135m-instruct") -> Path:
    """Copy alias ``name``'s converted folder from the default cache (converted there on first use) into the cache folder
    ``cache`` (a test's ``TOKRAG_CACHE_DIR``), where a load of ``name`` finds it; returns the copy.

    For a test whose point is not the conversion but that runs a process with a fresh cache folder: the GGUF's
    conversion costs ~20 s of CPU per run and writes the same bytes (the folder is named by the GGUF's sha256 and the
    converter's key). A copy, not a hard link: what the test's process writes into its cache stays there."""
    import shutil

    from tokrag_model.loading import converted_folder, resolve_pretrained

    dst = converted_folder(name, Path(cache) / "models")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(resolve_pretrained(name).path, dst)
    return dst


def clone_checkout(tmp_path: Path) -> Path:
    """A ``git clone`` of this checkout in ``tmp_path/clone`` (the test is skipped when git cannot clone it)."""
    import pytest

    from tokrag_model import provenance

    dst = tmp_path / "clone"
    done = subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(provenance.SOURCE_ROOT), str(dst)],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.skip(f"git clone failed: {done.stderr.strip()}")
    return dst
