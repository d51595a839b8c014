"""A leaderboard run collects garbage at a model switch only when the model it drops holds torch objects (s61 r3, the
item c1 left: leaderboards/runner.py ran ``gc.collect()`` at every switch, ~0.18 s of CPU each in a pytest process,
also for the tests' ToyLM, which holds no torch object). The collection is there for a tokrag method's packed Linear
forwards (reference cycles: 8c76f47; tests/test_leaderboard_backbone_reuse.py checks a tiny Llama is freed before the
next load); it stays for any model holding a ``torch.nn.Module`` or tensor (:func:`leaderboards.runner.holds_torch`)."""

from __future__ import annotations

import types

import torch

import leaderboards.runner as runner
from tests.leaderboard_fixtures.toy_lm import ToyLM
from tests.leaderboard_helpers import TOY, write_spec

TORCH_TOY = "tests.test_s61_r3_gc_switch:TorchToyLM"


class TorchToyLM(ToyLM):
    """ToyLM holding a torch module two levels down (as a tokrag method holds ``backbone.model``)."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.backbone = types.SimpleNamespace(model=torch.nn.Linear(2, 2))


def _run(tmp_path, monkeypatch, model: str) -> int:
    """Run a 2-method, 2-task spec of ``model`` (cells ordered by method: one switch at least); the collections made."""
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    calls: list[int] = []
    monkeypatch.setattr(runner, "gc", types.SimpleNamespace(collect=lambda *a: calls.append(1) or 0))
    loads: list[str] = []
    real = runner.make_model
    monkeypatch.setattr(runner, "make_model", lambda cell, *a, **k: loads.append(cell.method.name) or real(cell, *a, **k))
    methods = [{"name": "standard", "model": model, "model_args": {"mode": "first"}},
               {"name": "none", "model": model, "model_args": {"mode": "none"}}]
    spec = load_spec(write_spec(tmp_path / "s", methods=methods, limit=2))
    run_spec(spec, tmp_path / "runs", progress=False)
    assert sorted(set(loads)) == ["none", "standard"] and len(loads) >= 2
    assert len(list((tmp_path / "runs").glob("*/DONE"))) == 4
    return len(calls), len(loads)


def test_a_toy_model_switch_collects_nothing(tmp_path, monkeypatch):
    collections, loads = _run(tmp_path, monkeypatch, TOY)
    assert collections == 0  # the old runner collected at each switch: loads - 1 times


def test_a_model_of_torch_objects_is_collected_at_each_switch(tmp_path, monkeypatch):
    collections, loads = _run(tmp_path, monkeypatch, TORCH_TOY)
    assert collections == loads - 1  # each model dropped before the next load (as before)


def test_holds_torch_looks_through_attributes_containers_and_slots():
    class Slotted:
        __slots__ = ("inner",)

        def __init__(self, inner) -> None:
            self.inner = inner

    lin = torch.nn.Linear(2, 2)
    ns = types.SimpleNamespace
    assert runner.holds_torch(lin) and runner.holds_torch(torch.zeros(1))
    assert runner.holds_torch(ns(_model=lin))  # lm-eval's hf
    assert runner.holds_torch(ns(backbone=ns(model=lin)))  # a tokrag method
    assert runner.holds_torch(ns(parts={"a": (Slotted(lin),)}))  # dict -> tuple -> slots -> the module: level 4
    assert runner.holds_torch(ns(a=ns(b=ns(c=ns(d=ns(e=ns(f=lin)))))))  # level 6
    assert not runner.holds_torch(ns(a=ns(b=ns(c=ns(d=ns(e=ns(f=ns(g=lin))))))))  # level 7: past the default depth 6
    assert not runner.holds_torch(ns(a=ns(b=lin)), depth=1)
    toy = ToyLM(mode="first")
    assert not runner.holds_torch(toy)
    cyc = ns(name="x", items=[1, "a", None])
    cyc.me = cyc  # a cycle is walked once
    assert not runner.holds_torch(cyc) and not runner.holds_torch(None) and not runner.holds_torch({})
