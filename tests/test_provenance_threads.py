"""Results did not record what computed them: on CPU a forward pass's bits depend on torch's thread count (even a
batch-1 product differs at 1 vs 2 threads with column-major weights) and on the CPU's kernels (MKL's differ between an
AVX2 EPYC and an AVX-512/AMX Xeon; 0870fe6), and cell timings on the machine's load, but neither lm-eval's results
JSON (``config``) nor a leaderboard cell's ``provenance.json`` / ``cost.json`` said which (lm-eval's
``pretty_env_info`` is free text). Now the results' ``config.tokrag_machine`` (at model load) and ``provenance.json``'s
``machine`` hold torch's thread counts, ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` as given, the CPU capability and
model name and the CUDA device (:func:`tokrag_model.provenance.compute_environment`), and ``cost.json`` the load
averages at the cell's start and end. None of it is in a run key."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from leaderboard_helpers import write_spec

TASK = Path(__file__).parent / "fixtures" / "tokrag_model_task"


def _cpuinfo_model() -> str | None:
    """The first ``model name`` of /proc/cpuinfo, read here independently of the code under test."""
    try:
        lines = Path("/proc/cpuinfo").read_text(errors="replace").splitlines()
    except OSError:
        return None
    names = [ln.split(":", 1)[1].strip() for ln in lines if ln.split(":", 1)[0].strip() == "model name"]
    return names[0] if names else None


def test_compute_environment_records_the_threads_the_thread_variables_and_the_cpu(monkeypatch):
    from tokrag_model.provenance import compute_environment

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    env = compute_environment("cpu")
    assert env["torch_num_threads"] == torch.get_num_threads()
    assert env["torch_num_interop_threads"] == torch.get_num_interop_threads()
    assert env["env"] == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": None}  # as given (a string), None when unset
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability() and env["cpu_capability"]
    assert env["arch"] == platform.machine()
    expected = _cpuinfo_model() or platform.processor() or None
    assert env["cpu_model"] == expected
    if Path("/proc/cpuinfo").exists() and platform.machine() in ("x86_64", "AMD64"):
        assert env["cpu_model"] and env["cpu_model"] == _cpuinfo_model()
    assert env["cuda_device"] is None
    json.dumps(env)  # recorded in JSON files as is


def test_without_proc_cpuinfo_the_cpu_model_comes_from_platform(monkeypatch):
    import tokrag_model.provenance as prov

    def no_file(*a, **k):
        raise OSError("no /proc/cpuinfo")

    monkeypatch.setattr(prov, "open", no_file, raising=False)
    monkeypatch.setattr(platform, "processor", lambda: "Test CPU 9000 ")
    assert prov.cpu_model_name() == "Test CPU 9000"
    monkeypatch.setattr(platform, "processor", lambda: "")
    assert prov.cpu_model_name() is None


def test_a_cuda_device_records_its_name():
    from tokrag_model.provenance import compute_environment

    env = compute_environment("cuda:0")
    if torch.cuda.is_available():
        assert env["cuda_device"] == torch.cuda.get_device_name(0)
    else:
        assert env["cuda_device"] is None  # no CUDA in this process: not recorded, nothing raised


def test_the_model_records_the_threads_at_load_in_its_results_config(backbone, monkeypatch):
    from tokrag_model.methods import MODELS

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MKL_NUM_THREADS", "7")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        lm = MODELS["rag-standard"].with_backbone(backbone)
        torch.set_num_threads(2)  # after the load: the record says what the model was loaded (and probed) under
        info = lm.get_model_info()
    finally:
        torch.set_num_threads(threads)
    m = info["tokrag_machine"]
    assert m["torch_num_threads"] == 1 and m["torch_num_interop_threads"] == torch.get_num_interop_threads()
    assert m["env"] == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "7"}
    assert m["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert m["cpu_model"] == (_cpuinfo_model() or platform.processor() or None) and m["cuda_device"] is None
    assert "tokrag_machine" not in lm.resolved_config  # not key material


def test_a_leaderboard_cell_records_the_machine_and_the_load(tmp_path, monkeypatch):
    from leaderboards.keys import cell_keys
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    spec = load_spec(write_spec(tmp_path))
    cells = cell_keys(spec)
    keys_before = [k for _, k, _ in cells]
    run_spec(spec, tmp_path / "runs", progress=False)
    assert [k for _, k, _ in cell_keys(spec)] == keys_before
    for _, key, _ in cells:
        d = tmp_path / "runs" / key
        cost = json.loads((d / "cost.json").read_text())
        for name in ("loadavg_start", "loadavg_end"):
            load = cost[name]
            assert isinstance(load, list) and len(load) == 3 and all(isinstance(x, float) and x >= 0 for x in load)
        now = os.getloadavg()
        assert cost["loadavg_end"][2] <= now[2] + 5  # a load average of this machine, not some other number
        m = json.loads((d / "provenance.json").read_text())["machine"]
        assert m["torch_num_threads"] == torch.get_num_threads()
        assert m["env"] == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": None}
        assert m["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
        assert m["cpu_model"] == (_cpuinfo_model() or platform.processor() or None)
        assert "machine" not in json.loads((d / "config.json").read_text())  # hardware is not keyed


@pytest.mark.slow
def test_plain_lm_eval_results_record_the_thread_variables_and_threads(tmp_path):
    """A fresh ``lm_eval`` process under OMP_NUM_THREADS=2 MKL_NUM_THREADS=1: the results JSON records both variables
    as given and the thread count torch started with, the one a fresh ``python -c`` under the same variables gets
    (1 with torch 2.13's MKL build: MKL_NUM_THREADS wins over OMP_NUM_THREADS, hence both are recorded), and this
    machine's CPU."""
    lm_eval = Path(sys.executable).parent / "lm_eval"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "1"}
    cmd = [str(lm_eval), "--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct,k=1",
           "--tasks", "tokrag_model_mini", "--include_path", str(TASK), "--limit", "1",
           "--output_path", str(tmp_path / "out")]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    [results] = list((tmp_path / "out").rglob("results_*.json"))
    m = json.loads(results.read_text())["config"]["tokrag_machine"]
    fresh = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert m["torch_num_threads"] == int(fresh) and m["env"] == {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "1"}
    assert m["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert m["cpu_model"] == (_cpuinfo_model() or platform.processor() or None) and m["cuda_device"] is None
