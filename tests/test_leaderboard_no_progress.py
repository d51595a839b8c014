"""``tokrag leaderboard run --no-progress`` prints no progress bar (a new-user trial: one cell's log still held 8 bar
lines of lm-eval, transformers and the model: "Loading weights", "rag-none prompts", "generate_until")."""

from __future__ import annotations

import os
import subprocess
import sys

from leaderboard_fixtures.toy_lm import ToyLM
from leaderboard_helpers import REPO, write_spec

from leaderboards.runner import NO_PROGRESS_ENV, run_spec
from leaderboards.spec import load_spec

SEEN: list[dict] = []


class RecordingLM(ToyLM):
    """ToyLM that records, per generation call, its ``disable_tqdm`` and the progress-bar switches of the process."""

    def generate_until(self, requests, disable_tqdm: bool = False):
        import datasets
        from transformers.utils import logging as tlogging

        from huggingface_hub.utils import are_progress_bars_disabled

        SEEN.append({"disable_tqdm": disable_tqdm, "env": {k: os.environ.get(k) for k in NO_PROGRESS_ENV},
                     "transformers": tlogging.is_progress_bar_enabled(), "datasets": datasets.is_progress_bar_enabled(),
                     "hub": not are_progress_bars_disabled()})
        return super().generate_until(requests, disable_tqdm)


def test_no_progress_turns_every_bar_off_in_the_cell(tmp_path, monkeypatch):
    import datasets
    from transformers.utils import logging as tlogging

    for k in NO_PROGRESS_ENV:
        monkeypatch.delenv(k, raising=False)
    spec = load_spec(write_spec(tmp_path, limit=2, tasks=["toy_qa"], methods=[
        {"name": "standard", "model": "test_leaderboard_no_progress:RecordingLM", "model_args": {"mode": "first"}}]))
    SEEN.clear()
    run_spec(spec, tmp_path / "runs", progress=False)
    assert SEEN == [{"disable_tqdm": True, "env": NO_PROGRESS_ENV, "transformers": False, "datasets": False, "hub": False}]
    assert tlogging.is_progress_bar_enabled() and datasets.is_progress_bar_enabled()  # as they were, after the run
    assert all(k not in os.environ for k in NO_PROGRESS_ENV)
    SEEN.clear()
    run_spec(spec, tmp_path / "runs2", progress=True)  # with bars: the model is asked for its bars as lm-eval asks
    assert SEEN[0]["disable_tqdm"] is False and SEEN[0]["env"] == dict.fromkeys(NO_PROGRESS_ENV)


def test_cli_no_progress_writes_no_bar(tmp_path):
    """The command, with a helper process (--jobs 2): no tqdm bar ('%|') on stderr, the log lines still there."""
    path = write_spec(tmp_path, limit=3)
    env = {k: v for k, v in os.environ.items() if k not in NO_PROGRESS_ENV}
    proc = subprocess.run([sys.executable, "-m", "leaderboards.cli", "run", str(path), "--runs-dir", str(tmp_path / "runs"),
                           "--no-progress", "--jobs", "2"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "%|" not in proc.stderr, [line for line in proc.stderr.splitlines() if "%|" in line][:3]
    assert "INFO" in proc.stderr and '"ran"' in proc.stdout


def test_transformers_imported_in_the_block_is_quiet_then_back():
    """transformers imported inside the block (a run's first model load) starts without bars and has them after."""
    code = ("import sys\nfrom leaderboards.runner import no_progress_bars\nassert 'transformers' not in sys.modules\n"
            "with no_progress_bars():\n    from transformers.utils import logging as t\n    inside = t.is_progress_bar_enabled()\n"
            "print(inside, t.is_progress_bar_enabled())\n")
    env = {k: v for k, v in os.environ.items() if k not in NO_PROGRESS_ENV and k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-1500:]
    assert out.stdout.split() == ["False", "True"]
