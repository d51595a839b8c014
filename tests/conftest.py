"""Shared pytest set-up: the data folder (../shared/data), thread settings, and a shared cache.

Tests read real data from ``../shared/data`` (override with ``TOKRAG_DATA_DIR``). Model conversions
and indexes go to ``$TOKRAG_CACHE_DIR`` (default ``~/.cache/tokrag``): they are keyed by fingerprint,
so sharing them between test runs is safe and keeps the suite fast.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO.parent / "shared" / "data").resolve()
os.environ.setdefault("TOKRAG_DATA_DIR", str(SHARED_DATA))
# A relative TOKRAG_DATA_DIR (the README's `TOKRAG_DATA_DIR=../shared/data pytest`) must survive tests that
# start lm_eval in another working directory.
os.environ["TOKRAG_DATA_DIR"] = str(Path(os.environ["TOKRAG_DATA_DIR"]).resolve())

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder laid out like ``../shared/data``."""
    path = Path(os.environ["TOKRAG_DATA_DIR"])
    if not path.is_dir():
        pytest.fail(f"data folder {path} missing: put ../shared beside the repository or set TOKRAG_DATA_DIR")
    return path
