"""s61 r4 (review of d1's 5b9ae7b): a method's ``specific: {device: null}`` is no deviation. A device of None is "not
given" (``runner.cell_device`` and ``tokrag_model.args.merge_lm_eval_flags`` read it so), so the cells run on the
contract's device; ``specific_settings`` listed it as ``device=None`` and the report marked that contract row ``*``
under "Specific settings" (measured: a ToyLM spec, ``- none: device=None`` and ``| none * |``)."""

from __future__ import annotations

import json

from leaderboard_helpers import FIX, TOY, run_toy_spec


def test_a_specific_device_null_is_not_printed_as_a_deviation(tmp_path):
    from leaderboards.report import build_report
    from leaderboards.runner import cell_device

    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "specific": {"batch_size": 2}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}, "specific": {"device": None}}]
    shared = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
              "limit": 3, "device": "cpu"}
    spec, runs = run_toy_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods, extra={"shared": shared})
    assert spec.specific_settings() == {"standard": {"batch_size": 2}}
    assert {c.method.name: cell_device(c) for c in spec.cells()} == {"standard": "cpu", "none": "cpu"}
    devices = sorted(json.loads((d.parent / "results.json").read_text(encoding="utf-8"))["config"]["device"]
                     for d in runs.glob("*/DONE"))
    assert devices == ["cpu", "cpu"]  # the contract's device, for the row with device: null too
    md = (build_report(spec, runs, tmp_path / "report") / "leaderboard.md").read_text(encoding="utf-8")
    section = md.split("## Specific settings (explicit deviations from the contract, rows marked *)\n\n")[1]
    assert section.split("\n\n")[0].splitlines() == ["- standard: batch_size=2"]
    assert "| standard * | toy_qa |" in md and "| none | toy_qa |" in md and "| none * |" not in md
