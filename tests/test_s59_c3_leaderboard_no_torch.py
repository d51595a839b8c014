"""``tokrag leaderboard report|check|rescore`` read a spec, result files and (for the keys) task YAMLs: they need
neither torch nor a model. The spec's checks imported torch (~1.2 CPU-s of a ~2.7 CPU-s start) through
``tokrag_model.base`` (the generation kwargs checks, now :mod:`tokrag_model.gen_kwargs`) and, for a spec
check with no task, a method module (``tasks.precheck._check_first_line_vote``). s59 c3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "leaderboards" / "specs" / "ci.yaml"

PROBE = """
import json, sys
from tokrag_model.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "heavy": sorted(m for m in ("torch", "transformers") if m in sys.modules)}))
"""


def _run(args: list[str], cwd: Path) -> tuple[dict, str]:
    """``tokrag <args>`` in-process in a fresh interpreter: its rc and which of torch/transformers it imported."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, env=dict(os.environ), capture_output=True,
                          text=True, timeout=600)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.parametrize("sub", ["report", "rescore"])
def test_report_and_rescore_import_no_torch(tmp_path, sub):
    runs = tmp_path / "runs"
    runs.mkdir()
    out, err = _run(["leaderboard", sub, str(SPEC), "--runs-dir", str(runs), "--out", str(tmp_path / "r")], tmp_path)
    assert out == {"rc": 2, "heavy": []}, err
    # the same refusal as before: the spec was checked and its 10 cells keyed
    assert ("10 of 10 cells are not finished" if sub == "report" else "10 of 10 cells have no finished run") in err


def test_check_imports_no_torch(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    out, err = _run(["leaderboard", "check", str(SPEC), "--runs-dir", str(runs),
                     "--baseline", str(REPO / "leaderboards" / "baselines" / "ci.json")], tmp_path)
    assert out["heavy"] == [], err


def test_spec_gen_kwargs_check_still_refuses(tmp_path):
    """The moved check still runs on the spec: an empty stop string is one line naming the spec file and line."""
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.read_text(encoding="utf-8").replace("max_gen_toks: 16", "until: ['']\n    max_gen_toks: 16"),
                    encoding="utf-8")
    runs = tmp_path / "runs"
    runs.mkdir()
    out, err = _run(["leaderboard", "report", str(spec), "--runs-dir", str(runs)], tmp_path)
    assert out == {"rc": 2, "heavy": []}, err
    line = next(i for i, t in enumerate(spec.read_text().splitlines(), 1) if "until: ['']" in t)
    assert f"{spec}:{line}: shared.gen_kwargs: until=[''] holds an empty stop string" in err, err


def test_base_reexports_the_same_objects():
    """``tokrag_model.base`` names stay importable and are the very objects of ``tokrag_model.gen_kwargs``."""
    from tokrag_model import base, gen_kwargs

    for name in ("BUDGET_ALIASES", "GEN_KWARGS_READ", "GREEDY_GEN_KWARGS", "NEUTRAL_GEN_KWARGS",
                 "SAMPLING_ONLY_GEN_KWARGS", "GenKwargsValueError", "check_gen_kwarg_values", "unhonoured_gen_kwargs"):
        assert getattr(base, name) is getattr(gen_kwargs, name), name
    assert gen_kwargs.unhonoured_gen_kwargs({"until": ["\n"], "max_gen_toks": 8, "top_p": 0.9, "do_sample": True}) == [
        "do_sample", "top_p"]
    with pytest.raises(gen_kwargs.GenKwargsValueError, match="max_gen_toks=0 leaves no answer tokens"):
        gen_kwargs.check_gen_kwarg_values({"max_gen_toks": 0})
