"""A spec with ``revision:`` on an offline alias, run before s53 (870d2ba) refused it (the run took it with only a
WARNING: the alias's package pins its weights, so it did not act), keeps its finished runs: ``report`` and ``check``
read them and ``run`` of the finished spec skips them, as before; ``rescore`` of a cell of earlier task code under the
chat template renders its prompts with the alias's tokenizer and says in one WARNING that the revision did not act
(it refused: ``... could not be rebuilt ... (ConfigError: pretrained='smollm2-135m-instruct' is an offline alias
...)``, /work/scratch/s54/f2/repro4.*.txt). Only a new cell of such a spec is refused. Real SmolLM2-135M-Instruct,
2 questions, 2 generated tokens."""

from __future__ import annotations

import json
import logging
import re
import shutil

import pytest
from leaderboard_helpers import REPO, pin_cell_keys, rescore_cli, write_spec

from leaderboards.cli import main as lb_main
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

pytestmark = pytest.mark.slow

ALIAS = "smollm2-135m-instruct"
CID = "none/nq_oracle_gold/seed1"


def _spec(folder, include, limit=2):
    shared = {"model_args": {"pretrained": ALIAS, "revision": "v0.2", "dtype": "float32", "max_length": 2048},
              "device": "cpu", "gen_kwargs": {"max_gen_toks": 2}, "limit": limit, "num_fewshot": 1, "batch_size": 1,
              "apply_chat_template": True}
    return write_spec(folder, include=include, tasks=["nq_oracle_gold"], limit=limit,
                      methods=[{"name": "none", "model": "rag-none"}], extra={"shared": shared, "reference": "none"})


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The spec run as before 870d2ba: check_revision let the revision through (the load only WARNed)."""
    import leaderboards.keys
    import tokrag_model.loading

    root = tmp_path_factory.mktemp("alias_revision")
    shutil.copytree(REPO / "tasks" / "qa", root / "qa", ignore=shutil.ignore_patterns("__pycache__"))
    real, seen = leaderboards.keys.code_fingerprint, {}

    def once(module, memo):  # the code fingerprints read once: other work may edit that code meanwhile
        if module not in seen:
            seen[module] = real(module, memo)
        return seen[module]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(leaderboards.keys, "code_fingerprint", once)
        mp.setattr(tokrag_model.loading, "check_revision", lambda pretrained, revision: None)
        pin_cell_keys(mp)
        spec = _spec(root / "s", root / "qa")
        run_spec(load_spec(spec), root / "runs", progress=False)
    return root, spec, once  # the tests run with check_revision as it is


@pytest.fixture
def pinned(finished, monkeypatch):
    import leaderboards.keys

    monkeypatch.setattr(leaderboards.keys, "code_fingerprint", finished[2])
    pin_cell_keys(monkeypatch)
    return finished[:2]


def test_report_check_and_run_keep_the_finished_runs(pinned, tmp_path, capsys):
    root, spec = pinned
    runs = root / "runs"
    assert lb_main(["report", str(spec), "--runs-dir", str(runs), "--out", str(tmp_path / "r")]) == 0
    rows = json.loads((tmp_path / "r" / "leaderboard.json").read_text())["rows"]
    assert [(r["method"], r["task"], r["n"], r["missing"]) for r in rows] == [("none", "nq_oracle_gold", 2, False)]
    assert "Cells with results: 1 of 1 (all finished)" in capsys.readouterr().out
    base = tmp_path / "b.json"
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(base), "--write"]) == 0
    assert json.loads(base.read_text())["configs"][CID]["model_args"]["revision"] == "v0.2"
    capsys.readouterr()
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(base)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"(\d+) checks: \1 OK, 0 FAIL", last), last
    summary = run_spec(load_spec(spec), runs, progress=False)  # finished: nothing to start, nothing refused
    assert summary.skipped == [CID] and not summary.ran
    with pytest.raises(ConfigError, match=r"pretrained='smollm2-135m-instruct' is an offline alias.*revision='v0.2' "
                                          r"has no effect"):  # a new cell (3 questions: another key) is refused
        run_spec(load_spec(_spec(tmp_path / "s3", root / "qa", limit=3)), tmp_path / "runs3", progress=False)


def test_rescore_of_earlier_task_code_renders_with_the_aliass_tokenizer(pinned, tmp_path, capsys, caplog):
    root, _spec_file = pinned
    shutil.copytree(root / "qa", tmp_path / "qa")
    shutil.copytree(root / "runs", tmp_path / "runs")
    spec = _spec(tmp_path / "s", tmp_path / "qa")
    (tmp_path / "qa" / "utils.py").write_text((tmp_path / "qa" / "utils.py").read_text() + "EDITED = 1\n")
    with caplog.at_level(logging.WARNING, logger="leaderboards.rescore"):
        assert rescore_cli(spec, tmp_path / "runs", tmp_path / "r") == 0
    assert f"note: {CID}: task folder changed since the run" in capsys.readouterr().out
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "leaderboards.rescore"
                  and r.levelno == logging.WARNING]
    assert warning == (f"rescore: {CID}: revision='v0.2' did not act in its run (pretrained='{ALIAS}' is an offline "
                       "alias, whose package pins its weights), so its prompts are rendered with the alias's own "
                       "tokenizer; a new cell with this revision is refused: drop it from the spec (that changes the run "
                       "key)")
