"""faiss-cpu logs each SIMD build it could not load at INFO (``Could not load library with AVX512 support due to:
ModuleNotFoundError(...)``), which read as an error in the terminal of any command that logs at INFO
(``tokrag leaderboard``, ``tokrag retrieve -v``). Where tokrag imports faiss (retrieval.dense, retrieval.prebuilt)
the ``faiss.loader`` logger is kept at WARNING, unless the user set its level."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import logging
logging.basicConfig(level=logging.INFO)
{user}
import {module}
import faiss
print("faiss", faiss.__version__)
"""


@pytest.mark.parametrize("module", ["retrieval.dense", "retrieval.prebuilt"])
def test_faiss_loader_info_lines_are_not_shown(module) -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(user="", module=module)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("faiss ")
    assert "faiss.loader" not in out.stderr, out.stderr


def test_a_user_set_faiss_loader_level_is_kept() -> None:
    user = 'logging.getLogger("faiss.loader").setLevel(logging.INFO)'
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(user=user, module="retrieval.dense")], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "INFO:faiss.loader:Successfully loaded faiss" in out.stderr
