"""``--output_path`` with a name longer than the file system allows is refused before the model load (s58 p1).

``tasks.precheck.check_run_arguments`` took a name of 300 bytes (``os.path.exists`` says False for it) for a folder
that lm-eval would create: the model loaded and generated, and only lm-eval's final write of the results failed (one
line, exit 2, after all the work). Now the one name-length rule of ``tokrag retrieve`` and ``check_writable``
(``retrieval.io.name_too_long``) refuses it first, in their words: an over-long last name, an over-long folder name,
and a ``.json`` path whose results file (``<stem>_<date>.json``) would be over-long; a long but legal name (the file
system's most, 255 bytes on Linux) still runs. The end-to-end case runs ``python -m lm_eval`` with the tokrag model's
load (``tokrag_model.base.Backbone.load``) replaced by a marker that ends the process: the refused run never prints
it, the legal run does."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks.precheck import check_run_arguments
from tests.eval_helpers import stop_at_model_load

REPO = Path(__file__).resolve().parents[1]
TOO_LONG = "([Errno 36] File name too long); give a shorter path"


def _over(n: int, name_max: int) -> str:
    """check_writable's words for a name of ``n`` bytes on a file system of at most ``name_max``."""
    return f"a name of {n} bytes, more than the {name_max} its file system allows {TOO_LONG}"
MODEL_ARGS = "pretrained=smollm2-135m-instruct"


def _name_max(folder: Path) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


def _check(output_path: Path) -> None:
    check_run_arguments(None, [], model="rag-standard", output_path=str(output_path), model_args=MODEL_ARGS)


def _refused(output_path: Path) -> str:
    with pytest.raises(ConfigError) as exc:
        _check(output_path)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_an_over_long_last_name_is_refused(tmp_path):
    n = _name_max(tmp_path)
    out = tmp_path / ("a" * (n + 45))
    assert _refused(out) == f"--output_path {out}: {_over(n + 45, n)}"
    assert list(tmp_path.iterdir()) == []


def test_an_over_long_folder_name_is_refused(tmp_path):
    n = _name_max(tmp_path)
    out = tmp_path / "new" / ("a" * (n + 1)) / "x"
    assert _refused(out) == f"--output_path {out}: {_over(n + 1, n)}"
    out = tmp_path / ("a" * (n + 45)) / "results.json"
    assert _refused(out) == f"--output_path {out}: {_over(n + 45, n)}"
    assert list(tmp_path.iterdir()) == []


def test_a_json_path_whose_results_file_would_be_over_long_is_refused(tmp_path):
    """lm-eval writes ``<stem>_<date>.json`` beside a ``.json`` path (the date: 26 bytes,
    ``2026-12-07T13-05-00.123456``)."""
    n = _name_max(tmp_path)
    stem = "b" * (n - 5 - 10)  # the path's own name fits, with 10 bytes to spare; the results file's (+27) does not
    out = tmp_path / f"{stem}.json"
    assert _refused(out) == f"--output_path {out} ({stem}_<date>.json, which lm-eval writes): {_over(n - 15 + 32, n)}"
    _check(tmp_path / f"{'b' * (n - 32)}.json")  # the longest stem whose results file fits


def test_a_long_but_legal_name_passes(tmp_path):
    n = _name_max(tmp_path)
    _check(tmp_path / ("a" * n))
    _check(tmp_path / ("a" * n) / ("c" * n))
    assert list(tmp_path.iterdir()) == []  # checked, nothing made


def test_tokrag_eval_with_a_legal_255_byte_name_reaches_the_model_load(tmp_path, monkeypatch):
    """The CLI path (``tokrag eval``, lm-eval's CLI in-process) up to the model load: the longest legal name passes
    every pre-load check; one byte more is refused before it."""
    from tokrag_model.eval_cli import main

    class Reached(Exception):
        pass

    def reached(*args, **kwargs):
        raise Reached(kwargs.get("model"))

    stop_at_model_load(monkeypatch, reached)
    n = _name_max(tmp_path)
    base = ["--model", "rag-standard", "--model_args", MODEL_ARGS, "--device", "cpu", "--tasks", "wiki_lm_bm25",
            "--limit", "1", "--output_path"]
    with pytest.raises(Reached):
        main([*base, str(tmp_path / ("a" * n))])
    with pytest.raises(ConfigError) as exc:
        main([*base, str(tmp_path / ("a" * (n + 1)))])
    assert str(exc.value).endswith(_over(n + 1, n))
    assert getattr(exc.value, "_tokrag_before_load", False)  # lm_eval: one line, exit 2


CHILD = textwrap.dedent("""
    import runpy
    import lm_eval.tasks
    from tokrag_model.base import Backbone

    init = lm_eval.tasks.TaskManager.__init__

    def ours_only(self, *a, **k):  # lm-eval's own ~10k task files are not needed: a faster start
        k["include_defaults"] = False
        return init(self, *a, **k)

    def load(*a, **k):  # the tokrag model's load: says it was reached and ends the run
        print("TOKRAG MODEL LOAD", flush=True)
        raise SystemExit(97)

    lm_eval.tasks.TaskManager.__init__ = ours_only
    Backbone.load = staticmethod(load)
    runpy.run_module("lm_eval", run_name="__main__", alter_sys=True)
""")


def _lm_eval(tmp_path: Path, output_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    return subprocess.run([sys.executable, str(script), "run", "--model", "tokrag", "--tasks", "wiki_lm_bm25",
                           "--limit", "1", "--output_path", str(output_path)],
                          env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)


def test_lm_eval_refuses_an_over_long_name_before_the_model_load(tmp_path):
    """Was: the model loaded (here: the marker, exit 97), and the real run failed only at its final write."""
    pytest.importorskip("lm_eval")
    n = _name_max(tmp_path)
    out = tmp_path / ("a" * (n + 45)) / "x"
    proc = _lm_eval(tmp_path, out)
    assert "TOKRAG MODEL LOAD" not in proc.stdout, proc.stderr[-2000:]
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and " WARNING " not in ln and " INFO " not in ln]
    assert lines == [f"python -m lm_eval: error: --output_path {out}: {_over(n + 45, n)}",
                     "(set TOKRAG_TRACEBACK=1 for the stack trace)"]
    assert not any(p.name.startswith("aaa") for p in tmp_path.iterdir())

    legal = _lm_eval(tmp_path, tmp_path / ("a" * n))  # the same run with the longest legal name reaches the load
    assert legal.returncode == 97 and "TOKRAG MODEL LOAD" in legal.stdout, legal.stderr[-2000:]


def test_a_model_subfolder_name_over_long_is_refused_with_its_way_out(tmp_path):
    """lm-eval writes into ``<output_path>/<the model's path, "/" made "__">``: a model path of more than the file
    system's most bytes gives a folder name lm-eval cannot create. A ``.json`` path is written without that folder."""
    n = _name_max(tmp_path)
    model = "/models/" + "m" * (n - 5)  # sanitized: "__models__" + n - 5 bytes
    sub = "__models__" + "m" * (n - 5)
    out = tmp_path / "out"
    with pytest.raises(ConfigError) as exc:
        check_run_arguments(None, [], model="rag-standard", output_path=str(out), model_args=f"pretrained={model}")
    assert str(exc.value) == (f"--output_path {out} ({sub}, the folder lm-eval names after the model in --model_args): "
                              f"{_over(n + 5, n).removesuffix('; give a shorter path')}; give the model by a shorter "
                              "path (a link to its folder), or an --output_path ending in .json (lm-eval writes beside "
                              "it, without that folder)")
    check_run_arguments(None, [], model="rag-standard", output_path=str(tmp_path / "out.json"),
                        model_args=f"pretrained={model}")
