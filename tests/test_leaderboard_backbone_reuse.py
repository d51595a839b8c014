"""The leaderboard runner loads a base model once for the tokrag methods that run over it (``leaderboards/runner.py``,
``backbone_key``): a grid of methods on SmolLM2 makes one ``Backbone.load``, and every cell's files are the bytes
of the same cell run with its own load, as before the reuse.
"""

from __future__ import annotations

import gc
import json
import shutil
import weakref
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, REPO, TOY, tiny_llama, write_spec

from leaderboards.keys import cell_keys
from leaderboards.spec import load_spec

METHODS = [  # three tokrag methods over one base model: different rules, branches and (tokrag) hidden-state reads
    {"name": "rag-standard", "model": "rag-standard"},
    {"name": "tokrag", "model": "tokrag"},
    {"name": "rag-replug", "model": "rag-replug", "model_args": {"replug_mode": "uniform"}},
]


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    """Pin the provenance commit and the run keys (computed once per spec file, a selection's cells taken from
    them): other work may commit, or edit the source the keys hash, between the runs compared here."""
    import leaderboards.runner

    monkeypatch.setenv("TOKRAG_GIT_COMMIT", "test-commit")
    frozen: dict = {}

    def keys(spec, runs=None):
        whole = spec.whole or spec
        if whole.path not in frozen:
            frozen[whole.path] = {c.cell_id: (k, m) for c, k, m in cell_keys(whole)}
        return [(c, *frozen[whole.path][c.cell_id]) for c in spec.cells()]

    monkeypatch.setattr(leaderboards.runner, "cell_keys", keys)


class _Loads:
    """Counts ``Backbone.load`` calls and keeps a weak reference to each backbone it returned."""

    def __init__(self, monkeypatch) -> None:
        from tokrag_model.base import Backbone

        self.calls: list[tuple] = []
        self.alive_at_load: list[int] = []  # backbones of earlier loads still alive when the next load started
        self.refs: list[weakref.ref] = []
        orig = Backbone.load.__func__

        def load(cls, *args, **kw):  # no gc.collect() here: the runner must have freed the model before
            self.alive_at_load.append(sum(r() is not None for r in self.refs))
            self.calls.append((args, tuple(sorted(kw.items()))))
            bb = orig(cls, *args, **kw)
            self.refs.append(weakref.ref(bb))
            return bb

        monkeypatch.setattr(Backbone, "load", classmethod(load))


def _spec(root: Path, methods: list[dict], limit: int = 2, pretrained: str = "smollm2-135m-instruct"):
    """``methods`` on SmolLM2-135M-Instruct (or ``pretrained``) over tokrag_model_mini (``limit`` questions, 4 new
    tokens)."""
    tasks = root / "tasks"
    shutil.copytree(REPO / "tests" / "fixtures" / "tokrag_model_task", tasks / "mini")
    return load_spec(write_spec(root, name="reuse", include=tasks, tasks=["tokrag_model_mini"], limit=limit,
                                methods=methods,
                                extra={"reference": methods[0]["name"],
                                       "shared": {"model_args": {"pretrained": pretrained, "k": 2}, "limit": limit}}))


_TIMINGS = ("date", "start_time", "end_time", "total_evaluation_time_seconds")  # lm-eval's clock readings


def _files(cell_dir: Path) -> dict[str, object]:
    """What a cell records that does not depend on when it ran: config.json and the samples as bytes, results.json
    without lm-eval's clock readings, provenance.json without the attempts' start times."""
    out: dict[str, object] = {p.name: p.read_bytes() for p in sorted(cell_dir.glob("samples_*.jsonl"))}
    out["config.json"] = (cell_dir / "config.json").read_bytes()
    results = json.loads((cell_dir / "results.json").read_text())
    out["results.json"] = {k: v for k, v in results.items() if k not in _TIMINGS}
    prov = json.loads((cell_dir / "provenance.json").read_text())
    prov["attempts"] = [{k: v for k, v in a.items() if k != "started"} for a in prov["attempts"]]
    out["provenance.json"] = prov
    cost = json.loads((cell_dir / "cost.json").read_text())
    out["cost"] = {k: cost[k] for k in ("forward_passes", "generated_tokens", "prompt_tokens", "n_samples")}
    return out


@pytest.mark.slow
def test_three_methods_on_one_model_load_it_once_with_the_files_of_a_load_per_method(tmp_path, monkeypatch):
    from leaderboards.runner import run_spec

    spec = _spec(tmp_path, METHODS)
    loads = _Loads(monkeypatch)
    summary = run_spec(spec, tmp_path / "runs", progress=False)
    assert len(summary.ran) == 3
    assert len(loads.calls) == 1  # the runner before the reuse: 3, one per method

    # reference: each method in its own run_spec call (its own load, nothing run before it in its model)
    for m in METHODS:
        run_spec(spec.select(methods=[m["name"]]), tmp_path / "ref", progress=False)
    assert len(loads.calls) == 4
    assert len({c for c in loads.calls}) == 1  # one set of load arguments throughout

    import leaderboards.runner

    cells = leaderboards.runner.cell_keys(spec)
    assert [c.method.name for c, _, _ in cells] == [m["name"] for m in METHODS]
    for cell, key, _ in cells:
        got, ref = _files(tmp_path / "runs" / key), _files(tmp_path / "ref" / key)
        assert sorted(got) == sorted(ref) == ["config.json", "cost", "provenance.json", "results.json",
                                              "samples_tokrag_model_mini.jsonl"]
        for name in ref:
            assert got[name] == ref[name], (cell.cell_id, name)
        info = got["results.json"]["config"]
        assert info["tokrag_method"] == cell.method.name
        assert info["tokrag_resolved_config"]["pretrained"] == "smollm2-135m-instruct"  # as given, not the folder
        assert info["tokrag_model_source"].startswith("alias:smollm2-135m-instruct")
        assert info["tokrag_resolved_config"]["device"] == "cpu" and info["tokrag_resolved_config"]["batch_invariant"] is True
        samples = got["samples_tokrag_model_mini.jsonl"].decode().splitlines()
        assert len(samples) == 2
        assert json.loads(samples[0])["arguments"][0][2]["tokrag_trace"]["method"] == cell.method.name
        assert got["cost"]["forward_passes"] > 0 and got["cost"]["generated_tokens"] > 0
    # the methods differ where they should (a reuse that handed one method's state to the next would show here
    # only as a difference from the reference; this checks the three cells are not one cell three times)
    traces = {c.method.name: _files(tmp_path / "runs" / k)["samples_tokrag_model_mini.jsonl"] for c, k, _ in cells}
    assert len(set(traces.values())) == 3


@pytest.mark.slow
def test_a_model_with_other_load_arguments_or_batch_invariance_loads_after_the_previous_one_is_freed(tmp_path, monkeypatch):
    """A method whose ``batch_invariant`` differs gets its own load (a batch-invariant method switches the model it
    runs on to row-wise attention and packed weights, so that model is not handed to one that expects it
    unchanged), and the model before it is freed first: never two in memory. Back to the first key: a third load.
    The model is a tiny random Llama (``tiny_llama``): the loads are the subject, not SmolLM2's answers."""
    from leaderboards.runner import run_spec

    methods = [{"name": "rag-standard", "model": "rag-standard"},
               {"name": "rag-none", "model": "rag-none", "model_args": {"batch_invariant": False}},
               {"name": "tokrag", "model": "tokrag"},
               {"name": "tokrag-b", "model": "tokrag", "model_args": {"rag_top": 50}}]
    spec = _spec(tmp_path, methods, limit=1, pretrained=str(tiny_llama(tmp_path / "tiny", layers=2)))
    loads = _Loads(monkeypatch)
    gc.disable()  # a model is in reference cycles (decoder.pack_linear_weights): only a collection frees it, and the
    try:          # automatic one may or may not have run before the next load; the runner collects itself
        run_spec(spec, tmp_path / "runs", progress=False)
    finally:
        gc.enable()
    assert len(loads.calls) == 3  # standard; none (batch_invariant=false); tokrag and tokrag-b share the third
    assert loads.alive_at_load == [0, 0, 0]
    assert len(set(loads.calls)) == 1  # the same load arguments: batch_invariant alone tells the first two apart


@pytest.mark.slow
def test_two_bfloat16_cpu_methods_on_one_model_load_it_once(tmp_path, monkeypatch):
    """batch_invariant=auto resolves to false for bfloat16 weights on CPU; the key said true (device alone), the
    loaded model recorded false, so its backbone was never kept and each bfloat16 cell loaded the weights again. The
    model is a tiny random Llama (``tiny_llama``): the loads and the record are the subject, not SmolLM2's answers."""
    import leaderboards.runner
    from leaderboards.runner import run_spec

    methods = [{"name": "rag-standard", "model": "rag-standard", "model_args": {"dtype": "bfloat16"}},
               {"name": "rag-replug", "model": "rag-replug", "model_args": {"dtype": "bfloat16", "replug_mode": "uniform"}}]
    spec = _spec(tmp_path, methods, limit=1, pretrained=str(tiny_llama(tmp_path / "tiny")))
    loads = _Loads(monkeypatch)
    summary = run_spec(spec, tmp_path / "runs", progress=False)
    assert len(summary.ran) == 2
    assert len(loads.calls) == 1  # the old key: 2
    for _, key, _ in leaderboards.runner.cell_keys(spec):
        cfg = json.loads((tmp_path / "runs" / key / "results.json").read_text())["config"]["tokrag_resolved_config"]
        assert cfg["dtype"] == "bfloat16" and cfg["batch_invariant"] is False


def test_backbone_key_is_the_load_arguments_for_tokrag_methods_only(tmp_path):
    """Equal for two tokrag methods over one model, different for another ``dtype``/``batch_invariant``/``revision``;
    None for a model that is not a tokrag method (the toy LM here; lm-eval's ``hf`` likewise) or a user's subclass
    of one (its ``setup()`` may change the shared model), which keeps a load of its own per model."""
    from leaderboards.runner import backbone_key

    spec = load_spec(write_spec(tmp_path, name="keys", tasks=["toy_qa"], limit=1, methods=[
        {"name": "standard", "model": "rag-standard"},
        {"name": "tokrag", "model": "tokrag", "model_args": {"rag_top": 50}},
        {"name": "bf16", "model": "rag-standard", "model_args": {"dtype": "bfloat16"}},
        {"name": "variant", "model": "rag-standard", "model_args": {"batch_invariant": False}},
        {"name": "rev", "model": "rag-standard", "model_args": {"revision": "v1"}},
        {"name": "toy", "model": TOY, "model_args": {"mode": "first"}, "specific": {"pretrained": str(FIX / "toy_weights.bin")}},
        {"name": "user", "model": "tests.leaderboard_fixtures.user_method:PaddingLeftStandard"},
    ], extra={"shared": {"model_args": {"pretrained": "smollm2-135m-instruct"}, "limit": 1}}))
    keys = {c.method.name: backbone_key(c) for c in spec.cells()}
    assert keys["standard"] == {"pretrained": "smollm2-135m-instruct", "dtype": "float32", "device": "cpu",
                                "revision": None, "trust_remote_code": False, "weight_layout": "auto",
                                "batch_invariant": True}
    assert keys["tokrag"] == keys["standard"]
    # batch_invariant=auto is false for bfloat16 weights on CPU (decoder.auto_batch_invariant), as the model records
    assert keys["bf16"] == {**keys["standard"], "dtype": "bfloat16", "batch_invariant": False}
    assert keys["variant"] == {**keys["standard"], "batch_invariant": False}
    assert keys["rev"] == {**keys["standard"], "revision": "v1"}
    assert keys["toy"] is None
    assert keys["user"] is None  # a tokrag subclass outside tokrag_model.methods: its setup() may change the model
