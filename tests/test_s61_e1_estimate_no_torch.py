"""s61 e1: ``leaderboard run SPEC --estimate`` of a spec whose models are no tokrag method (here the test ToyLM, an
lm-eval ``LM`` without torch) imports no torch: the runner's chat-template check asked ``issubclass(cls,
RAGMethodLM)`` after importing tokrag_model.base, which imports torch (~2.4 -> ~1.1 CPU-s for this spec on the
project's machine). A spec of tokrag methods still imports it: their argument check needs their classes."""

from __future__ import annotations

import json
import subprocess
import sys

from leaderboard_helpers import subprocess_env, write_spec

_PROBE = """
import json, sys
from leaderboards.cli import main
code = main(["run", sys.argv[1], "--runs-dir", sys.argv[2], "--estimate"])
print(json.dumps({"code": code, "loaded": sorted(m for m in ("torch", "transformers", "tokrag_model.base")
                                                   if m in sys.modules)}))
"""


def test_estimate_of_a_toy_spec_imports_no_torch(tmp_path):
    spec = write_spec(tmp_path / "s", tasks=["toy_qa"], limit=3)
    out = subprocess.run([sys.executable, "-c", _PROBE, str(spec), str(tmp_path / "runs")], capture_output=True,
                         text=True, env=subprocess_env(tmp_path / "cache"), check=True).stdout.splitlines()
    assert out[0].startswith("leaderboard toy: 0 of 2 cells done; estimating 2 from 0 finished cells in ")
    assert json.loads(out[-1]) == {"code": 0, "loaded": []}


def test_the_rag_method_check_without_the_import():
    """The runner's check gives the same answers as issubclass(cls, RAGMethodLM) once tokrag_model.base is loaded."""
    from leaderboards.runner import is_rag_method
    from tests.leaderboard_fixtures.toy_lm import ToyLM
    from tokrag_model.methods.standard import RagStandardLM

    assert is_rag_method(RagStandardLM)
    assert not is_rag_method(ToyLM) and not is_rag_method(None) and not is_rag_method("rag-standard")
