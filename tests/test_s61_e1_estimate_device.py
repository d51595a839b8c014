"""s61 e1: ``leaderboard run SPEC --estimate`` of a spec whose cells run on a device this machine may lack (``device:
cuda``) advises its ``--max-cells 1`` commands on a machine with that device: ``run`` refuses them here
(runner.check_cell_devices), so the bare advice of a command was one that fails on a CPU machine."""

from __future__ import annotations

import pytest
import yaml

from leaderboard_helpers import TOY, write_spec
from retrieval.errors import ConfigError


def _no_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _spec(tmp_path, device=None, methods=None):
    path = write_spec(tmp_path / "s", tasks=["toy_qa"], limit=3, methods=methods)
    if device is not None:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["shared"]["device"] = device
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _estimate_lines(spec, runs, capsys) -> list[str]:
    from leaderboards.cli import main as lb_main

    capsys.readouterr()
    assert lb_main(["run", str(spec), "--runs-dir", str(runs), "--estimate"]) == 0
    return capsys.readouterr().out.splitlines()


def test_a_cuda_spec_is_advised_to_run_its_first_cell_on_a_machine_with_cuda(tmp_path, monkeypatch, capsys):
    from leaderboards.cli import main as lb_main

    _no_cuda(monkeypatch)
    spec, runs = _spec(tmp_path, "cuda"), tmp_path / "runs"
    lines = _estimate_lines(spec, runs, capsys)
    cmd = f"tokrag leaderboard run {spec} --runs-dir {runs} --methods {{}} --tasks toy_qa --max-cells 1"
    total = next(line for line in lines if line.startswith("total: not estimated"))
    assert (f"run one cell of each such method first ({cmd.format('standard')}; {cmd.format('none')}) on a machine "
            f"with cuda (the device of those cells: run refuses it on a machine without it; copy the finished run "
            f"folders into {runs} to estimate here) and estimate again, or pass --fallback-s-per-question S") in total
    # the advice is needed: the bare command is refused on this machine
    with pytest.raises(ConfigError, match=r"shared.device 'cuda': .*; set device: cpu in the spec, or run it on a "
                                          r"machine with cuda$"):
        lb_main(["run", str(spec), "--runs-dir", str(runs), "--methods", "standard", "--tasks", "toy_qa",
                 "--max-cells", "1"])
    assert not runs.exists() or not list(runs.glob("*/DONE"))


def test_one_cell_to_run_is_named_in_the_singular(tmp_path, monkeypatch, capsys):
    _no_cuda(monkeypatch)
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    spec, runs = _spec(tmp_path, "cuda:0", methods=methods), tmp_path / "runs"
    total = next(line for line in _estimate_lines(spec, runs, capsys) if line.startswith("total: not estimated"))
    assert (f"--max-cells 1) on a machine with cuda (the device of that cell: run refuses it on a machine without it; "
            f"copy the finished run folder into {runs} to estimate here) and estimate again") in total


def test_a_model_args_device_counts_as_the_cells_device(tmp_path, monkeypatch, capsys):
    _no_cuda(monkeypatch)
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "specific": {"device": "cuda"}}]
    spec, runs = _spec(tmp_path, methods=methods), tmp_path / "runs"  # the spec's own device: cpu (the default)
    total = next(line for line in _estimate_lines(spec, runs, capsys) if line.startswith("total: not estimated"))
    assert "--max-cells 1) on a machine with cuda (the device of that cell:" in total


def test_a_cpu_spec_keeps_the_bare_advice(tmp_path, monkeypatch, capsys):
    from leaderboards.estimate import estimate

    _no_cuda(monkeypatch)
    spec, runs = _spec(tmp_path, "cpu"), tmp_path / "runs"
    text = "\n".join(_estimate_lines(spec, runs, capsys))
    assert "--tasks toy_qa --max-cells 1) and estimate again, or pass --fallback-s-per-question S" in text
    assert "on a machine with" not in text

    from leaderboards.spec import load_spec

    assert estimate(load_spec(spec), runs)["first_runs_devices"] == []
