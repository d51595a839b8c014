"""s61 d1: ``device`` and ``batch_size`` are contract keys (the lead's decision on s61 r2's review of e1's ea77ed4). Since
ea77ed4 a ``device`` or ``batch_size`` in a method entry's ``model_args`` won over the spec's ``device:`` /
``batch_size:`` for that cell, unprinted: one row could run at another batch size or device than the contract. Now any
``model_args`` holding one is refused at load (one line naming the file, its line and where to put it), and a method's
own value goes under ``methods[i].specific``: the cell runs at it, ``results.json`` records it, the report prints it
under "Specific settings" (row marked *), and ``run``'s device check names it there."""

from __future__ import annotations

import json

import pytest
import yaml
from leaderboard_helpers import FIX, TOY, run_toy_spec, write_spec

from retrieval.errors import ConfigError

FIX_TEXT = ("a contract key: put it under shared (or models[j].shared, a model's own contract) for every row, or "
            "under methods[0].specific as this method's printed deviation")


def _line(spec, text: str) -> int:
    """The 1-based line of the spec file that holds ``text``."""
    lines = spec.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _refusal(spec) -> str:
    from leaderboards.spec import load_spec

    with pytest.raises(ConfigError) as exc:
        load_spec(spec)
    return str(exc.value)


@pytest.mark.parametrize(("key", "value", "written"), [("device", "cuda", "device: cuda"),
                                                       ("batch_size", 2, "batch_size: 2")])
def test_a_method_model_args_device_or_batch_size_is_refused_at_load(tmp_path, key, value, written):
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first", key: value}}]
    spec = write_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods)
    assert _refusal(spec) == (f"leaderboard spec {spec}:{_line(spec, written)}: methods[0].model_args.{key} {value!r}: "
                              + FIX_TEXT)


def test_a_model_method_args_or_contract_model_args_device_is_refused_too(tmp_path):
    """The other model_args a cell's model gets: a model's per-method arguments and a contract's model arguments."""
    spec = write_spec(tmp_path / "a", tasks=["toy_qa"], limit=3,
                      extra={"models": [{"name": "m", "method_args": {"standard": {"device": "cpu"}}}]})
    assert _refusal(spec) == (f"leaderboard spec {spec}:{_line(spec, 'device: cpu')}: "
                              "models[0].method_args.standard.device 'cpu': a contract key: put it under models[0].shared")
    spec = write_spec(tmp_path / "b", tasks=["toy_qa"], limit=3)
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    data["shared"]["model_args"]["batch_size"] = 4
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    assert _refusal(spec) == (f"leaderboard spec {spec}:{_line(spec, 'batch_size: 4')}: shared.model_args.batch_size 4: "
                              "a contract key: put it under shared")


def test_a_method_entry_device_names_specific_too(tmp_path):
    """``methods: [{..., device: cuda}]`` (a key of no method entry): the hint names specific beside shared."""
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "device": "cuda"}]
    msg = _refusal(write_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods))
    assert f"methods[0]: unknown key(s) 'device' ({FIX_TEXT})" in msg


def test_specific_is_checked_as_the_contract_and_printed_as_its_key(tmp_path):
    from leaderboards.spec import load_spec

    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"},
                "specific": {"batch_size": "2", "device": "cpu", "k": 2}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}}]
    spec = load_spec(write_spec(tmp_path / "a", tasks=["toy_qa"], limit=3, methods=methods))
    # '2' is the whole number 2, as the contract's batch_size (one cell and run folder for 2, '2', 2.0)
    assert spec.specific_settings() == {"standard": {"batch_size": 2, "device": "cpu", "model_args.k": 2}}
    assert {c.method.name: (c.model_args.get("batch_size"), c.model_args.get("device")) for c in spec.cells()} == {
        "standard": (2, "cpu"), "none": (None, None)}
    bad = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "specific": {"batch_size": 0}}]
    assert "methods[0].specific.batch_size must be an integer >= 1, got 0" in _refusal(
        write_spec(tmp_path / "b", tasks=["toy_qa"], limit=3, methods=bad))
    bad = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "specific": {"device": "gpu0"}}]
    assert _refusal(write_spec(tmp_path / "c", tasks=["toy_qa"], limit=3, methods=bad)).endswith(
        "methods[0].specific.device 'gpu0' is not a device torch knows; use cpu, cuda or cuda:N")


def test_a_specific_device_and_batch_size_run_are_recorded_and_reported(tmp_path):
    from leaderboards.report import build_report
    from leaderboards.runner import model_flags

    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"},
                "specific": {"device": "cpu", "batch_size": 2}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}, "specific": {"device": "cpu"}}]
    shared = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
              "limit": 3, "device": "cuda", "batch_size": 4}  # cuda: on this CPU machine only the deviation runs
    spec, runs = run_toy_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods, extra={"shared": shared})
    assert {c.method.name: model_flags(c) for c in spec.cells()} == {
        "standard": {"batch_size": 2, "device": "cpu"}, "none": {"batch_size": 4, "device": "cpu"}}
    got = {}
    for done in runs.glob("*/DONE"):
        config = json.loads((done.parent / "results.json").read_text(encoding="utf-8"))["config"]
        got["first" if "mode=first" in config["model_args"] else "none"] = (config["device"], config["batch_size"])
    assert got == {"first": ("cpu", 2), "none": ("cpu", 4)}
    md = (build_report(spec, runs, tmp_path / "report") / "leaderboard.md").read_text(encoding="utf-8")
    section = md.split("## Specific settings (explicit deviations from the contract, rows marked *)\n\n")[1]
    assert section.split("\n\n")[0].splitlines() == ["- standard: batch_size=2, device=cpu", "- none: device=cpu"]
    assert "- device: cuda" in md and "- batch_size: 4" in md  # the contract, beside them
    assert "| standard * | toy_qa |" in md and "| none * | toy_qa |" in md


def test_the_device_check_names_a_specific_device_at_its_line(tmp_path, monkeypatch):
    import torch

    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    methods = [{"name": "none", "model": TOY, "model_args": {"mode": "none"}},
               {"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "specific": {"device": "cuda:0"}}]
    spec = write_spec(tmp_path / "s", tasks=["toy_qa"], limit=3, methods=methods)
    with pytest.raises(ConfigError) as exc:
        run_spec(load_spec(spec), tmp_path / "runs", progress=False)
    assert not list((tmp_path / "runs").glob("*/config.json"))
    assert str(exc.value) == (
        f"leaderboard spec {spec}:{_line(spec, 'device: cuda:0')}: methods[1].specific.device 'cuda:0': "
        "torch.cuda.is_available() is False on this machine (CPU build of torch?); set device: cpu in its specific (or "
        "drop it there for the contract's device), or run it on a machine with cuda")
