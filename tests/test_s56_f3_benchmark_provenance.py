"""The benchmarks' last JSON line records its provenance (s56 f3; audit s56 a1, finding F5): every script in
``benchmarks/`` adds one ``provenance`` object (:func:`benchmarks._cli.provenance`): the tokrag commit and changes,
the library versions, the machine (threads, CPU kernels, cores), the device and the fingerprints of what it loaded.
Its other keys stay as they were. Each benchmark runs here on stubs or fakes (no model, no index build): only the
JSON line is under test; the values are checked against the real ones (``git rev-parse HEAD``, ``torch.__version__``,
``torch.get_num_threads()``, ...)."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]


def _head() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def heads(monkeypatch):
    """``git rev-parse HEAD`` before the test's run and after it (other work may commit meanwhile): the recorded
    commit must be one of them. Imports torch first, whatever ran before in this process: the provenance then
    gives torch's fields (the torch-free case: test_the_helper_does_not_import_torch)."""
    import torch  # noqa: F401

    monkeypatch.delenv("TOKRAG_GIT_COMMIT", raising=False)
    seen = {_head()}
    yield seen
    seen.add(_head())


@pytest.fixture
def torch_threads():
    """Restores torch's thread count after a benchmark that sets it (tokrag_analysis: --threads)."""
    import torch

    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def _check(prov: dict, heads: set[str], *, device: str | None, threads: int | None = None) -> None:
    """``prov`` holds the real commit, versions and machine of this process (torch imported)."""
    import torch
    import transformers

    from tokrag_model.provenance import cpu_model_name

    # tokrag_commit_at_end / tokrag_changes_at_end (s56 r3): only when the checkout changed between the script's
    # start and its line (here: other work committing to or editing this shared checkout meanwhile)
    assert set(prov) - {"tokrag_commit_at_end", "tokrag_changes_at_end"} == {
        "tokrag_commit", "tokrag_changes", "versions", "machine", "device", "fingerprints"}
    commit = prov["tokrag_commit"]
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", commit), commit
    assert commit.removesuffix("+dirty") in heads
    assert prov["tokrag_changes"] is None or re.fullmatch(r"[0-9a-f]{16}", prov["tokrag_changes"])
    v = prov["versions"]
    assert v["torch"] == torch.__version__ and v["transformers"] == transformers.__version__
    assert v["lm_eval"] == version("lm_eval") and v["tokrag"] == version("tokrag")
    assert v["python"] == platform.python_version() and v["tokenizers"] == version("tokenizers")
    m = prov["machine"]
    assert m["torch_num_threads"] == (torch.get_num_threads() if threads is None else threads)
    assert m["torch_num_interop_threads"] == torch.get_num_interop_threads()
    assert m["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert m["arch"] == platform.machine() and m["cpu_model"] == cpu_model_name()
    assert m["cpu_count"] == os.cpu_count() and m["cpus_usable"] == len(os.sched_getaffinity(0))
    assert m["env"] == {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                        "MKL_NUM_THREADS": os.environ.get("MKL_NUM_THREADS")}
    assert m["cuda_device"] is None
    assert prov["device"] == device


def test_the_helper_records_commit_versions_machine_device_and_fingerprints(heads) -> None:
    from benchmarks._cli import provenance

    prov = provenance("cpu", {"model": "w0", "corpus": "c0"})
    _check(prov, heads, device="cpu")
    assert prov["fingerprints"] == {"model": "w0", "corpus": "c0"}
    assert provenance()["device"] is None and provenance()["fingerprints"] == {}


def test_the_helper_takes_the_commit_override(monkeypatch) -> None:
    """``$TOKRAG_GIT_COMMIT`` (CI without .git) is the recorded commit, as in results JSON and provenance.json."""
    from benchmarks._cli import provenance

    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "0123abcd")
    prov = provenance()
    assert prov["tokrag_commit"] == "0123abcd" and prov["tokrag_changes"] is None


def test_the_helper_does_not_import_torch(heads) -> None:
    """A benchmark that never imported torch (lmeval_startup: its figures are child processes') gets its versions
    and CPU, and None for the torch fields, without the seconds of importing torch."""
    import torch

    code = ("import json, sys; from benchmarks._cli import provenance; p = provenance(); "
            "print(json.dumps({'p': p, 'torch': 'torch' in sys.modules}))")
    env = {k: v for k, v in os.environ.items() if k != "TOKRAG_GIT_COMMIT"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, check=True)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["torch"] is False
    m = got["p"]["machine"]
    assert [m[k] for k in ("torch_num_threads", "torch_num_interop_threads", "cpu_capability", "cuda_device")] == [None] * 4
    assert m["arch"] == platform.machine() and m["cpu_count"] == os.cpu_count()
    assert got["p"]["versions"]["torch"] == torch.__version__
    assert got["p"]["tokrag_commit"].removesuffix("+dirty") in heads | {_head()}


ANALYSIS_KEYS = {
    "auc_strict_default", "auc_strict_dynamic", "auc_strict_calibrated", "ci_low_calibrated", "ci_high_calibrated",
    "n_strict", "auc_strict_by_data", "ci_low_default", "ci_low_dynamic", "auc_strict_analysis", "auc_strict_confidence",
    "auc_relevant_default", "auc_relevant_dynamic", "auc_relevant_calibrated", "n_relevant", "calibrated_params",
    "preset_sha256", "apply_chat_template", "prompt", "preset_prompt", "preset_warnings", "dev_n_strict", "n_layers",
    "goal_met", "seconds"}


def test_tokrag_analysis_line(monkeypatch, capsys, tmp_path, heads, torch_threads) -> None:
    """On the fake model of tests.analyze_fakes (as test_analyze_review_fixes): the model's fingerprints, its device,
    the test samples' retrieval runs and the --threads it set."""
    from benchmarks import tokrag_analysis
    from tests.test_analyze_review_fixes import _record
    from tests.analyze_fakes import install_fake

    fake = install_fake(monkeypatch, _record, device="cpu")
    fake.lm.resolved_config["device"] = "cpu"
    fake.lm.files_fingerprint = "files0"
    assert tokrag_analysis.main(["--data", "wiki", "--n", "4", "--bootstrap", "5", "--threads", "1",
                                 "--out", str(tmp_path / "bm")]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(out) == ANALYSIS_KEYS | {"provenance"}
    prov = out["provenance"]
    _check(prov, heads, device="cpu", threads=1)
    assert prov["fingerprints"] == {"model": "fp0", "model_files": "files0", "runs": {"wiki": ["run0"]}}


def _ref_row(method, task):
    m = {"answer_match": {"mean": 0.5, "lo": 0.25, "hi": 0.75, "n": 2},
         "empty_pred": {"mean": 0.0, "n": 2}, "overlong_pred": {"mean": 0.0, "n": 2}}
    paired = {"rag-none": {"answer_match": {"lo": 0.1, "hi": 0.4, "p": 0.01}}} if method == "rag-standard" else {}
    return {"method": method, "task": task, "n": 2, "metrics": m, "paired": paired, "cost": {"wall_s": 2.0}}


def test_reference_cells_line(monkeypatch, capsys, tmp_path, heads) -> None:
    """The leaderboard calls stubbed (as test_s51/test_s54): each cell's key as the report's collect gave it; no
    model in this process (device None); the figures as before."""
    sys.path.insert(0, str(REPO))
    import benchmarks.reference_cells as rc
    import leaderboards.report as report
    import leaderboards.runner as runner
    import leaderboards.spec as spec

    rows = [_ref_row(m, t) for m in ("rag-standard", "rag-none") for t in ("nq_oracle_gold", "nq_oracle_bm25")]
    collected = {"rag-standard | nq_oracle_gold | seed 0": (None, "k-gold", None),
                 "rag-none | nq_oracle_gold | seed 0": (None, "k-none", None)}
    monkeypatch.setattr(spec, "load_spec", lambda path: object())
    monkeypatch.setattr(runner, "resolve_runs_dir", lambda s, d: tmp_path)
    monkeypatch.setattr(report, "collect", lambda s, runs: collected)
    monkeypatch.setattr(report, "compute", lambda s, cells, timings=True: {"rows": rows} if cells is collected else None)
    assert rc.main(["--no-run", "--runs-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert out["gold_standard"] == 0.5 and out["ci_low_gold_minus_none"] == 0.1 and out["p_bm25_minus_none"] == 0.01
    _check(out["provenance"], heads, device=None)
    assert out["provenance"]["fingerprints"] == {"cells": {"rag-standard | nq_oracle_gold | seed 0": "k-gold",
                                                           "rag-none | nq_oracle_gold | seed 0": "k-none"}}


def test_replug_weights_line(monkeypatch, capsys, heads) -> None:
    """The task's docs stubbed: the noisy and the clean docs' retrieval runs; no model (device None)."""
    import benchmarks.replug_weights as rw

    def docs(task, n, **override):
        noise = override.get("noise") != 0.0
        ctxs = [{"docid": "a", "rank": 1, "score": 20.0, "source": "retrieved"},
                {"docid": "b", "rank": 2, "score": 18.0, "source": "noise" if noise else "retrieved"}]
        return [{"qid": "q1", "ctxs": ctxs, "scored_by": "bm25", "run_fingerprint": "noisy0" if noise else "clean0"}]

    monkeypatch.setattr(rw, "task_docs", docs)
    assert rw.main(["--questions", "1"]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert out["noise_passages"] == 1 and out["questions"] == 1 and out["scored_by"] == "bm25"
    _check(out["provenance"], heads, device=None)
    assert out["provenance"]["fingerprints"] == {"run": "noisy0", "run_clean": "clean0"}


def test_lmeval_startup_line(monkeypatch, capsys, heads) -> None:
    """Its child processes stubbed (--no-main-job): the figures as they were, then the provenance (device None:
    no model ran)."""
    import benchmarks.lmeval_startup as ls

    calls = []
    monkeypatch.setattr(ls, "_task_manager", lambda env: calls.append(1) or {"build_cpu_s": 1.5, "process_cpu_s": 2.0,
                                                                              "entries": 7})
    assert ls.main(["--no-main-job"]) == 0
    lines = capsys.readouterr().out.splitlines()
    out = json.loads(lines[-1])
    figure = {"build_cpu_s": 1.5, "process_cpu_s": 2.0, "entries": 7}
    assert json.loads(lines[0]) == {"task_manager_off": figure, "task_manager_cold": figure, "task_manager_warm": figure}
    assert {k: v for k, v in out.items() if k != "provenance"} == json.loads(lines[0])
    _check(out["provenance"], heads, device=None)
    assert out["provenance"]["fingerprints"] == {}


def test_retrieval_line(monkeypatch, capsys, tmp_path, heads) -> None:
    """Index build, search and runs stubbed (--no-dense): the corpus's and the BM25 run's fingerprints."""
    import benchmarks.retrieval as br

    corpus = type("C", (), {"name": "nq-wiki-12k", "fingerprint": "corpus0", "__len__": lambda self: 3})()
    qs = [{"qid": "q1", "question": "who", "gold_docids": ["d1"], "answers": ["x"]}]
    run = SimpleNamespace(fingerprint="bm25run0", ctxs={"q1": [{"docid": "d1", "title": "", "text": "x", "score": 1.0,
                                                                 "rank": 1}]})

    class Searcher:
        def __init__(self, *a, **k): pass
        def batch_search(self, *a, **k): return {}
        def close(self): pass

    monkeypatch.setattr(br.signal, "signal", lambda *a: None)
    monkeypatch.setattr(br, "named_corpus", lambda name, data_dir=None: corpus)
    monkeypatch.setattr(br, "nq_oracle_questions", lambda data_dir=None, limit=None: qs)
    monkeypatch.setattr(br, "build_bm25_index", lambda *a, **k: tmp_path)
    monkeypatch.setattr(br, "Bm25Searcher", Searcher)
    monkeypatch.setattr(br, "retrieve", lambda *a, **k: run)
    assert br.main(["--no-dense", "--threads", "1"]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert out["num_passages"] == 3 and out["num_questions"] == 1 and out["bm25_gold_at_5"] == 1.0
    _check(out["provenance"], heads, device=None)
    assert out["provenance"]["fingerprints"] == {"corpus": "corpus0", "bm25_run": "bm25run0"}


def test_decoding_passages_name_their_corpus_and_run(monkeypatch) -> None:
    """decoding.py's passages (retrieval stubbed): the corpus's and the BM25 run's fingerprints, for its line's
    provenance (with the model's weights and files fingerprints, not run here: a model load); the docs as before."""
    import retrieval

    from benchmarks import decoding

    corpus = SimpleNamespace(fingerprint="corpus1")
    qs = [{"qid": "q1", "question": "who", "answers": ["x"], "gold_docids": ["d1"]}]
    ctxs = {"q1": [{"docid": "d1", "title": "", "text": "x", "score": 1.0, "rank": 1}]}
    monkeypatch.setattr(retrieval, "named_corpus", lambda name: corpus if name == "nq-dpr-1k" else None)
    monkeypatch.setattr(retrieval, "nq_oracle_questions", lambda limit=None: qs)
    monkeypatch.setattr(retrieval, "retrieve", lambda c, q, r, k: SimpleNamespace(fingerprint="run1", ctxs=ctxs))
    fps: dict = {}
    docs, gold = decoding._nq_docs(1, 1, fps)
    assert fps == {"corpus": "corpus1", "bm25_run": "run1"}
    assert gold == 1.0 and docs[0]["ctxs"] == ctxs["q1"] and docs[0]["qid"] == "q1"
    assert decoding._nq_docs(1, 1)[1] == 1.0  # without the dict, as gpu_bundle.sh calls it


def test_leaderboard_line(monkeypatch, capsys, tmp_path, heads) -> None:
    """The runner, its second process and the report stubbed: each cell's key by its label (the cells record their
    own device and machine in provenance.json: device None here); the figures as before."""
    import leaderboards.keys as keys
    import leaderboards.report as report
    import leaderboards.runner as runner
    import leaderboards.spec as spec_mod

    import benchmarks.leaderboard as bl

    spec_file = tmp_path / "toy.yaml"
    spec_file.write_text("name: toy\n")
    spec = SimpleNamespace(name="toy", path=spec_file)
    cells = [(SimpleNamespace(label="standard | toy_qa | seed 0"), "key-a", {}),
             (SimpleNamespace(label="none | toy_qa | seed 0"), "key-b", {})]
    runs = tmp_path / "runs"
    for i, (_cell, key, _mat) in enumerate(cells):
        (runs / key).mkdir(parents=True)
        (runs / key / "cost.json").write_text(json.dumps({"peak_rss_mib": 100.0 + i, "wall_s": 2.0, "forward_passes": 3,
                                                          "generated_tokens": 4}))
    real_run = subprocess.run

    def fake_run(cmd, *a, **k):
        if cmd[:3] == [sys.executable, "-m", "leaderboards.cli"]:
            return SimpleNamespace(returncode=0, stdout=json.dumps({"forward_passes": 0, "ran": []}) + "\n", stderr="")
        return real_run(cmd, *a, **k)

    monkeypatch.setattr(spec_mod, "load_spec", lambda path: spec)
    monkeypatch.setattr(keys, "cell_keys", lambda s: cells)
    monkeypatch.setattr(runner, "run_spec", lambda s, r, progress, jobs: SimpleNamespace(ran=["key-a", "key-b"]))
    monkeypatch.setattr(report, "build_report", lambda s, r, out: out)
    monkeypatch.setattr(bl.subprocess, "run", fake_run)
    for name, default in (("OMP_NUM_THREADS", "1"), ("OMP_WAIT_POLICY", "PASSIVE")):  # the script sets them when unset
        monkeypatch.setenv(name, os.environ.get(name, default))
    assert bl.main(["--spec", str(spec_file), "--runs-dir", str(runs)]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert {k: out[k] for k in ("cells", "cells_run", "forward_passes", "generated_tokens", "peak_rss_mib_max_cell",
                                "second_run_forward_passes", "second_run_cells_run", "rerun_ok")} == {
        "cells": 2, "cells_run": 2, "forward_passes": 6, "generated_tokens": 8, "peak_rss_mib_max_cell": 101.0,
        "second_run_forward_passes": 0, "second_run_cells_run": 0, "rerun_ok": True}
    _check(out["provenance"], heads, device=None)
    assert out["provenance"]["fingerprints"] == {"cells": {"standard | toy_qa | seed 0": "key-a",
                                                           "none | toy_qa | seed 0": "key-b"}}
