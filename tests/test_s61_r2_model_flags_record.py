"""s61 r2 (review of e1's ea77ed4): a cell's ``model_args`` ``device``/``batch_size`` win over the spec's
``device:``/``batch_size:`` for every model class, so the run's record must name the ones the model got. The runner
handed lm-eval's ``simple_evaluate`` the spec's, which it records in ``results.json``'s ``config``: a ToyLM cell with
``model_args: {device: cpu, batch_size: 2}`` under ``device: cuda`` and ``batch_size: 4`` ran on CPU at 2 and was
recorded as ``cuda`` at 4, and its compute setting read ``cuda GPU not recorded``.

Since s61 d1 ``device`` and ``batch_size`` are contract keys: the spec's load refuses them in a method's ``model_args``,
and a method's own value is written under its ``specific`` (a printed deviation), merged into the cell's ``model_args``;
these tests give it there, with the same assertions."""

from __future__ import annotations

import json

from leaderboard_helpers import FIX, TOY, run_toy_spec


def test_results_config_records_the_device_and_batch_size_the_model_got(tmp_path):
    from leaderboards.provenance_view import compute_setting, setting_label
    from leaderboards.runner import load_cell

    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"},
                "specific": {"device": "cpu", "batch_size": 2}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}, "specific": {"device": "cpu"}}]
    shared = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
              "limit": 3, "device": "cuda", "batch_size": 4}
    _, runs = run_toy_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods, extra={"shared": shared})
    got = {}
    for done in runs.glob("*/DONE"):
        folder = done.parent
        config = json.loads((folder / "results.json").read_text(encoding="utf-8"))["config"]
        mode = "first" if "mode=first" in config["model_args"] else "none"
        setting = compute_setting(load_cell(folder))
        got[mode] = (config["device"], config["batch_size"], setting["device"], setting_label(setting).split(" ")[0])
    # specific (merged into the cells' model_args) wins where it gives one; the spec's batch_size: where it gives none
    assert got == {"first": ("cpu", 2, "cpu", "cpu"), "none": ("cpu", 4, "cpu", "cpu")}


def test_model_flags_is_the_merge_make_model_gives(tmp_path):
    from leaderboards.runner import model_flags
    from leaderboards.spec import load_spec
    from leaderboard_helpers import write_spec

    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"},
                "specific": {"device": "cpu", "batch_size": 2}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}, "specific": {"device": None}}]
    shared = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "limit": 3, "device": "cuda:0",
              "batch_size": 4}
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods, extra={"shared": shared}))
    flags = {cell.method.name: model_flags(cell) for cell in spec.cells()}
    assert flags == {"standard": {"batch_size": 2, "device": "cpu"}, "none": {"batch_size": 4, "device": "cuda:0"}}


def test_the_journal_chunk_is_whole_batches_of_the_model_args_batch_size(tmp_path, monkeypatch):
    """A chunk is progress_chunk x the batch size the model runs at (leaderboards/README.md): a model_args batch_size
    (now a specific one) over the spec's default 1 was handed one request a call at progress_chunk: 1, never a batch
    of 4."""
    from tests.leaderboard_fixtures.toy_lm import ToyLM

    calls: list[tuple[str, int]] = []
    original = ToyLM.generate_until

    def recording(self, requests, disable_tqdm: bool = False):
        calls.append((self.mode, len(requests)))
        return original(self, requests, disable_tqdm)

    monkeypatch.setattr(ToyLM, "generate_until", recording)
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "specific": {"batch_size": 4}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}}]
    run_toy_spec(tmp_path, tasks=["toy_qa"], limit=8, methods=methods, extra={"progress_chunk": 1})
    assert sorted(calls) == [("first", 4), ("first", 4)] + [("none", 1)] * 8
