"""A leaderboard spec's ``device:`` is checked where it matters (s60 f3): ``load_spec`` checks only what does not depend
on the machine (a name torch knows; ``meta`` refused), so ``report``, ``rescore``, ``check`` and ``run --estimate`` of a
spec written for an xpu or CUDA machine work on a laptop that reads its copied runs (since ef912b5/18eeb74 an xpu spec
was refused at every load); ``tokrag leaderboard run`` refuses, before any model loads or cell starts, a device this
machine cannot run (``device: cuda:0`` without CUDA ran its cells on CPU without a word). Availability is
monkeypatched (torch.cuda / torch.xpu / torch.backends.mps ``is_available``)."""

from __future__ import annotations

import pytest
import yaml
from leaderboard_helpers import TOY, run_toy_spec, runs_without, write_spec

from retrieval.errors import ConfigError

METHODS = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
           {"name": "none", "model": TOY, "model_args": {"mode": "none"}}]


def _spec(tmp_path, device: str | None = None, **kw):
    spec = write_spec(tmp_path / "s", tasks=["toy_qa"], limit=3, methods=METHODS, **kw)
    if device is not None:
        data = yaml.safe_load(spec.read_text(encoding="utf-8"))
        data["shared"]["device"] = device
        spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return spec


def _line(spec, text: str) -> int:
    """The 1-based line of the spec file that holds ``text``."""
    lines = spec.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _no_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _xpu(monkeypatch, there: bool):
    import torch

    monkeypatch.setattr(torch.xpu, "is_available", lambda: there)


def _refused_run(spec, runs, **kw) -> str:
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    loaded = load_spec(spec)  # accepted at load, whatever this machine has
    with pytest.raises(ConfigError) as exc:
        run_spec(loaded, runs, progress=False, **kw)
    assert not list(runs.glob("*/config.json")), "a cell started before the refusal"
    return str(exc.value)


@pytest.fixture(scope="module")
def xpu_runs(tmp_path_factory):
    """The toy spec with ``device: xpu`` run to the end on a machine that has one (faked), as copied to a laptop."""
    import torch

    mp = pytest.MonkeyPatch()
    mp.setattr(torch.xpu, "is_available", lambda: True)
    try:
        root = tmp_path_factory.mktemp("xpu")
        spec = _spec(root, "xpu")
        from leaderboards.spec import load_spec
        from leaderboards.runner import run_spec

        run_spec(load_spec(spec), root / "runs", progress=False)
    finally:
        mp.undo()
    return spec, root / "runs"


def test_report_rescore_check_estimate_of_an_xpu_spec_here(xpu_runs, tmp_path, monkeypatch):
    from leaderboards.cli import main as lb_main

    _xpu(monkeypatch, False)
    spec, runs = xpu_runs
    assert lb_main(["report", str(spec), "--runs-dir", str(runs), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "leaderboard.md").is_file()
    assert lb_main(["rescore", str(spec), "--runs-dir", str(runs), "--out", str(tmp_path / "rescored")]) == 0
    assert lb_main(["run", str(spec), "--runs-dir", str(runs), "--estimate"]) == 0
    base = tmp_path / "baseline.json"
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(base), "--write"]) == 0
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(base)]) == 0


def test_run_of_the_finished_xpu_spec_here_has_nothing_to_run(xpu_runs, monkeypatch):
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    _xpu(monkeypatch, False)
    spec, runs = xpu_runs
    summary = run_spec(load_spec(spec), runs, progress=False)
    assert len(summary.skipped) == 2 and not summary.ran


def test_resumed_xpu_run_here_refused_before_its_cell(xpu_runs, tmp_path, monkeypatch):
    """A grid continued here (one cell left) is refused, not started on CPU or at its load."""
    _xpu(monkeypatch, False)
    spec, runs = xpu_runs
    partial = runs_without(runs, tmp_path / "runs", "none/toy_qa/seed1")
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    with pytest.raises(ConfigError) as exc:
        run_spec(load_spec(spec), partial, progress=False)
    assert str(exc.value) == (
        f"leaderboard spec {spec}:{_line(spec, 'device: xpu')}: shared.device 'xpu': torch.xpu is not available on "
        "this machine (the weights would load and then fail to move there); set device: cpu in the spec, or run it "
        "on a machine with xpu")


def test_report_of_a_cuda_spec_here(tmp_path, monkeypatch):
    """Guard (passes on the old code too): a spec with device: cuda run on a CUDA machine (faked) reports here."""
    import torch

    from leaderboards.cli import main as lb_main
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    spec = _spec(tmp_path, "cuda")
    with monkeypatch.context() as mp:
        mp.setattr(torch.cuda, "is_available", lambda: True)
        mp.setattr(torch.cuda, "device_count", lambda: 1)
        mp.setattr(torch.cuda, "get_device_name", lambda i=0: "Fake GPU")
        run_spec(load_spec(spec), tmp_path / "runs", progress=False)
    _no_cuda(monkeypatch)
    assert lb_main(["report", str(spec), "--runs-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "leaderboard.md").is_file()


@pytest.mark.parametrize("device", ["cuda:0", "cuda"])
def test_run_without_cuda_refused(tmp_path, monkeypatch, device):
    _no_cuda(monkeypatch)
    spec = _spec(tmp_path, device)
    assert _refused_run(spec, tmp_path / "runs") == (
        f"leaderboard spec {spec}:{_line(spec, 'device: ')}: shared.device {device!r}: torch.cuda.is_available() is "
        "False on this machine (CPU build of torch?); set device: cpu in the spec, or run it on a machine with cuda")


def test_run_of_a_cuda_index_beyond_the_count_refused(tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    spec = _spec(tmp_path, "cuda:1")
    assert _refused_run(spec, tmp_path / "runs") == (
        f"leaderboard spec {spec}:{_line(spec, 'device: ')}: shared.device 'cuda:1': this machine has 1 CUDA device "
        "(cuda:0), no cuda:1; set device: cpu in the spec, or run it on a machine with cuda")


def test_run_without_mps_refused(tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    spec = _spec(tmp_path, "mps")
    assert _refused_run(spec, tmp_path / "runs") == (
        f"leaderboard spec {spec}:{_line(spec, 'device: ')}: shared.device 'mps': torch.backends.mps.is_available() "
        "is False on this machine; set device: cpu in the spec, or run it on a machine with mps")


def test_jobs_helper_refused_too(tmp_path, monkeypatch):
    """A helper of run --jobs N (--jobs-helper) gets the same check (it runs the same pre-run checks)."""
    _xpu(monkeypatch, False)
    spec = _spec(tmp_path, "xpu")
    assert _refused_run(spec, tmp_path / "runs", jobs_helper=True).endswith(
        "shared.device 'xpu': torch.xpu is not available on this machine (the weights would load and then fail to move "
        "there); set device: cpu in the spec, or run it on a machine with xpu")


def test_a_models_own_device_named_with_its_line(tmp_path, monkeypatch):
    _no_cuda(monkeypatch)
    spec = _spec(tmp_path)
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    data["models"] = [{"name": "a", "shared": {"model_args": {"k": 3}}},
                      {"name": "b", "shared": {"model_args": {"k": 3}, "device": "cuda:0"}}]
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    assert _refused_run(spec, tmp_path / "runs") == (
        f"leaderboard spec {spec}:{_line(spec, 'device: cuda:0')}: models[1].shared.device 'cuda:0': "
        "torch.cuda.is_available() is False on this machine (CPU build of torch?); set device: cpu in the spec, or run "
        "it on a machine with cuda")


def test_a_model_args_device_wins_and_is_checked(tmp_path, monkeypatch):
    """Since s61 d1 a method's own device is written under its ``specific`` (the load refuses it in ``model_args``);
    it still wins, and the refusal names it there, at its line."""
    _no_cuda(monkeypatch)
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "specific": {"device": "cuda:0"}}]
    spec = write_spec(tmp_path / "s", tasks=["toy_qa"], limit=3, methods=methods)
    assert _refused_run(spec, tmp_path / "runs") == (
        f"leaderboard spec {spec}:{_line(spec, 'device: cuda:0')}: methods[0].specific.device 'cuda:0': "
        "torch.cuda.is_available() is False on this machine (CPU build of torch?); set device: cpu in its specific "
        "(or drop it there for the contract's device), or run it on a machine with cuda")


def test_cpu_spec_runs(tmp_path, monkeypatch):
    """Guard: the committed specs' device: cpu runs on a machine without CUDA, as before."""
    _no_cuda(monkeypatch)
    spec, runs = run_toy_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=METHODS, extra={})
    assert len(list(runs.glob("*/DONE"))) == 2


def test_committed_specs_load_and_pass_the_device_check(monkeypatch):
    from pathlib import Path

    from leaderboards.runner import check_cell_devices
    from leaderboards.spec import load_spec

    _no_cuda(monkeypatch)
    for path in sorted((Path(__file__).resolve().parents[1] / "leaderboards" / "specs").glob("*.yaml")):
        spec = load_spec(path)
        check_cell_devices(spec, spec.cells())
