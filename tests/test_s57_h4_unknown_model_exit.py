"""An unknown ``--model`` name is refused before any model is built: ``lm_eval`` exits 2 with the one line
(did-you-mean included), as every other pre-load refusal does and as ``tokrag eval`` already did (s57 h4;
it exited 1 under ``lm_eval``: the registry's ConfigError was not marked ``_tokrag_before_load``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

WANT = ("error: unknown --model 'RAG-None' (did you mean 'rag-none'? names are case-sensitive); the tokrag methods "
        "are tokrag, rag-standard, rag-replug, rag-selfrag-filter, rag-none, rag-cad, rag-adacad, "
        "rag-ensemble-entropy; a method of your own: add its line to METHODS in tokrag_model/methods/__init__.py")


@pytest.mark.parametrize("cmd", [["lm_eval"], ["tokrag", "eval"]])
def test_an_unknown_model_name_is_one_line_and_exit_2(cmd: list[str]) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    exe = os.path.join(os.path.dirname(sys.executable), cmd[0])
    proc = subprocess.run([exe, *cmd[1:], "--model", "RAG-None", "--tasks", "nq_open_bm25", "--limit", "1"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(lines) == 1 and lines[0] == f"{' '.join(cmd)}: {WANT}", proc.stderr[-2000:]


def test_the_library_call_still_raises_the_value_error() -> None:
    import lm_eval.api.registry as registry

    import tokrag_model._lmeval_hook  # noqa: F401 - installs the patches when the .pth hook did not
    from retrieval.errors import ConfigError

    with pytest.raises(ConfigError) as exc:
        registry.get_model("RAG-None")
    assert isinstance(exc.value, ValueError) and str(exc.value) == WANT[len("error: "):]
