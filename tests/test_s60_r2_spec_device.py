"""A leaderboard spec's ``device:`` that torch knows but that cannot run here (``xpu`` on a machine without one,
``meta``) is refused with its reason (s60 r2, review of b1's ef912b5): b1's ``to_device`` now refuses such a device,
and ``leaderboards.spec._check_device`` turned every refusal of it into ``shared.device 'xpu' is not a device torch
knows; use cpu, cuda or cuda:N``, which is not why (torch knows xpu; this machine has none). A name torch does not
know keeps that line. Since s60 f3 the xpu refusal is ``tokrag leaderboard run``'s, not the spec load's."""

from __future__ import annotations

import pytest
import yaml
from leaderboard_helpers import TOY, write_spec

from retrieval.errors import ConfigError


def _refused(tmp_path, device: str) -> str:
    from leaderboards.spec import load_spec

    spec = write_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=[{"name": "standard", "model": TOY}])
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    data["shared"]["device"] = device
    spec.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_spec(spec)
    prefix = f"leaderboard spec {spec}: "
    assert str(exc.value).startswith(prefix), str(exc.value)
    return str(exc.value)[len(prefix):]


def test_xpu_without_one(tmp_path, monkeypatch):
    """Since s60 f3 the spec loads (report, rescore, check and run --estimate of an xpu spec work on a machine without
    one) and ``tokrag leaderboard run`` refuses it before any cell, with the same reason, the spec's line and the
    spec's own fix (tests/test_s60_f3_spec_device_run.py)."""
    import torch

    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    monkeypatch.setattr(torch.xpu, "is_available", lambda: False)
    spec = write_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=[{"name": "standard", "model": TOY}])
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    data["shared"]["device"] = "xpu"
    spec.write_text(yaml.safe_dump(data), encoding="utf-8")
    loaded = load_spec(spec)
    with pytest.raises(ConfigError) as exc:
        run_spec(loaded, tmp_path / "runs", progress=False)
    line = next(i for i, text in enumerate(spec.read_text(encoding="utf-8").splitlines(), 1) if "device: xpu" in text)
    assert str(exc.value) == (f"leaderboard spec {spec}:{line}: shared.device 'xpu': torch.xpu is not available on this "
                              "machine (the weights would load and then fail to move there); set device: cpu in the "
                              "spec, or run it on a machine with xpu")


def test_meta(tmp_path):
    assert _refused(tmp_path, "meta") == ("shared.device 'meta': the meta device holds tensors without data, so the "
                                          "model could not compute anything; use cpu")


def test_unknown_name_as_before(tmp_path):
    assert _refused(tmp_path, "gpu9") == "shared.device 'gpu9' is not a device torch knows; use cpu, cuda or cuda:N"
