"""Ctrl-C of plain ``lm_eval --model <tokrag method> ...`` (the README's main command): one line, then death by SIGINT
(not exit status 130, after which bash went on with a loop of commands: s44 f7), as ``tokrag eval``
(tokrag_model.eval_cli). Before the fix lm-eval's CLI printed a ~125-line KeyboardInterrupt
traceback through torch (exit 130); the start-up hook's ``HarnessCLI.execute`` wrapper now prints the line."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tokrag_model import _lmeval_hook


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"model": None, "config": None, "use_cache": None, **kw})


def test_the_line_is_for_tokrag_models_only(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    monkeypatch.setattr(_lmeval_hook, "_program", lambda: "lm_eval")
    assert _lmeval_hook._interrupted_line(_args(model="hf")) is None  # other models: lm-eval's own traceback
    assert _lmeval_hook._interrupted_line(_args()) is None  # lm-eval's default model (hf)
    assert _lmeval_hook._interrupted_line(_args(model="rag-standard", use_cache="/c/run")) == (
        "lm_eval: interrupted; the requests finished so far are kept in the --use_cache /c/run files: rerun the same "
        "command to resume from them")
    assert _lmeval_hook._interrupted_line(_args(model="tokrag")).startswith(
        "lm_eval: interrupted; lm-eval writes results only when a run ends, so this one saved nothing. To keep "
        "finished requests across a rerun, pass --use_cache PATH")
    config = tmp_path / "run.yaml"
    config.write_text("model: rag-cad\nuse_cache: /y/run\n", encoding="utf-8")
    assert "--use_cache /y/run files" in _lmeval_hook._interrupted_line(_args(config=str(config)))
    assert "--use_cache /c/run files" in _lmeval_hook._interrupted_line(_args(config=str(config), use_cache="/c/run"))
    assert _lmeval_hook._interrupted_line(_args(config=str(config), model="hf")) is None  # the command line wins
    monkeypatch.setenv("TOKRAG_TRACEBACK", "1")
    assert _lmeval_hook._interrupted_line(_args(model="tokrag")) is None


def test_ctrl_c_of_plain_lm_eval_is_one_line_and_death_by_sigint(tmp_path):
    cache = tmp_path / "cache" / "run"
    cmd = [sys.executable, "-m", "lm_eval", "--model", "tokrag", "--model_args", "pretrained=smollm2-135m-instruct",
           "--gen_kwargs", "max_gen_toks=16", "--tasks", "nq_oracle_gold", "--limit", "40", "--device", "cpu",
           "--use_cache", str(cache)]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    log = tmp_path / "stderr.txt"
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 900  # lm-eval indexes its ~10k task files, the model loads: slow on 2 busy cores
        # the model is generating: tokrag's progress bar counts a finished request
        while not re.search(r"generate_until:[^\n\r]*\|\s*[1-9][0-9]*/", log.read_text(errors="replace")):
            if proc.poll() is not None:
                pytest.fail(f"lm_eval ended (exit {proc.returncode}) before generating: "
                            f"{log.read_text(errors='replace')[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no generation within 900 s: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = log.read_text(errors="replace")
    assert rc == -signal.SIGINT, err[-3000:]  # died of SIGINT: a shell loop or script stops too
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    line = (f"python -m lm_eval: interrupted; the requests finished so far are kept in the --use_cache {cache} files: "
            "rerun the same command to resume from them")
    assert line in err.splitlines(), err[-3000:]
