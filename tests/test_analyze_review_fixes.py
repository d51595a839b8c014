"""Findings of a review of ``tokrag analyze`` / ``tokrag calibrate`` / ``benchmarks/tokrag_analysis.py`` (on a fake
model, :mod:`tests.analyze_fakes`): the benchmark's ``--preset`` path warns of a preset of another prompt format as
``tokrag analyze`` does; the ``dynamic`` row follows the model's dynamic-rule arguments; ``bypass=false`` makes
every differing token generation-relevant; a preset's own dev data is flagged in-sample."""

from __future__ import annotations

import json
import logging

import pytest


def _record(i, sid):
    """One strict token per sample (even samples benefit, odd ones detriment), 4 layers, gaps at pairs 2 and 3;
    odd samples' RAG top-1 (2) is a function token (``bypass``)."""
    from tasks import analyze

    tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
    s_r = [0.1 * (j + 1) + 0.05 * i for j in range(4)]
    return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, tr == 2, 0.2, s_r,
                                [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]


@pytest.fixture
def fake(monkeypatch):
    from tests.analyze_fakes import install_fake

    return install_fake(monkeypatch, _record, device="cpu")


def _chat_preset(fake, tmp_path):
    """A preset calibrated (on the fake's dev records) as if with ``--apply-chat-template``: its path and contents."""
    from tasks import calibrate

    out = tmp_path / "cal"
    assert calibrate.main(["--out", str(out), "--n", "4", "--bootstrap", "5"]) == 0
    path = out / "tokrag_preset.json"
    preset = json.loads(path.read_text())
    preset["calibration"]["data"]["nq"]["apply_chat_template"] = True
    path.write_text(json.dumps(preset))
    return path


def test_benchmark_preset_of_another_prompt_format_is_warned_and_recorded(fake, tmp_path, caplog, capsys) -> None:
    """``benchmarks/tokrag_analysis.py --preset P`` (no --apply-chat-template) with a preset calibrated on chat
    prompts printed no warning, while ``tokrag analyze --preset P`` logs one; now it logs the same line and the
    JSON records it and the preset's prompt format."""
    from benchmarks import tokrag_analysis
    from tokrag_model.methods.tokrag import preset_prompt_mismatch, preset_small_sample_warning, read_preset

    path = _chat_preset(fake, tmp_path)
    capsys.readouterr()
    with caplog.at_level(logging.WARNING):
        assert tokrag_analysis.main(["--n", "2", "--bootstrap", "5", "--preset", str(path),
                                     "--out", str(tmp_path / "bm")]) == 0
    # in the benchmark's own flags (--apply-chat-template), and the 4-sample preset's small-sample note (s51 f8)
    want = [preset_prompt_mismatch(read_preset(path), False, ["instruct"], "fake-lm", cli="analyze"),
            preset_small_sample_warning(read_preset(path))]
    assert all(want) and [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == want
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["preset_warnings"] == want
    assert out["preset_prompt"] == {"prompt": "instruct", "apply_chat_template": True}
    assert out["prompt"] == "instruct" and out["apply_chat_template"] is False


def test_the_dynamic_row_follows_the_models_dynamic_args(fake, tmp_path) -> None:
    """``tokrag analyze --model-args ...,js_threshold=..,js_min_layer=..,layer_fallback=..`` scored the ``dynamic`` row
    with the authors' constants (``JS-gap > 5e-07 above layer 1, else 2`` on 4 layers); now with the model's."""
    from tasks import analyze
    from tokrag_model.methods.tokrag import TokRAGParams

    fake.lm.params = TokRAGParams(js_threshold=1.5e-6, js_min_layer=2, layer_fallback=1)
    out = tmp_path / "an"
    assert analyze.main(["--data", "wiki", "--split", "dev", "--out", str(out), "--n", "4", "--bootstrap", "5"]) == 0
    dyn = json.loads((out / "results.json").read_text())["results"]["wiki"]["policies"]["dynamic"]
    assert dyn["describe"] == "JS-gap > 1.5e-06 above layer 2, else 1"
    # scan pair 3 only: every gap 2e-6*(i+1) > 1.5e-6 -> layer 2 (the defaults: pair 2's 1e-6*(i+1) > 5e-7 -> layer 1)
    assert dyn["mean_layer"] == 2.0


def test_calibrate_scans_from_the_models_js_min_layer(fake, tmp_path) -> None:
    """``tokrag calibrate --model-args js_min_layer=2`` records gaps from pair 3 but scanned (and wrote in the preset)
    the default js_min_layer round(10/32*4) = 1; now the model's."""
    from tasks import calibrate
    from tokrag_model.methods.tokrag import TokRAGParams

    fake.lm.params = TokRAGParams(js_min_layer=2)
    cal = tmp_path / "cal"
    assert calibrate.main(["--data", "wiki", "--out", str(cal), "--n", "4", "--policy", "dynamic"]) == 0
    preset = json.loads((cal / "tokrag_preset.json").read_text())
    assert preset["params"]["js_min_layer"] == 2 and preset["calibration"]["dynamic"]["min_layer"] == 2
    assert preset["calibration"]["dynamic"]["n_gaps"] == 2  # pair 3 of the 2 relevant (even, not bypassed) samples


def test_bypass_false_makes_every_differing_strict_token_generation_relevant(fake, tmp_path) -> None:
    """With ``--model-args bypass=false`` the decoder tests every token, but the records' ``bypass`` flag (the RAG
    top-1 is a function token) still left those tokens out of the generation-relevant subset (2 of 4 here); now
    that subset honours the run's bypass, while the records file, which does not depend on it, is reused."""
    from tasks import analyze
    from tokrag_model.methods.tokrag import TokRAGParams

    out = tmp_path / "an"
    argv = ["--data", "wiki", "--split", "dev", "--out", str(out), "--n", "4", "--bootstrap", "5"]
    fake.lm.params = TokRAGParams(bypass=False)
    assert analyze.main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["results"]["wiki"]["counts"]["relevant"] == 4
    assert res["results"]["wiki"]["policies"]["layer1"]["relevant"]["n"] == 4
    assert res["configs"]["wiki"]["bypass"] is False
    fake.lm.params = TokRAGParams()  # bypass on: the odd samples' function tokens are accepted untested
    assert analyze.main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["results"]["wiki"]["counts"]["relevant"] == 2 and res["configs"]["wiki"]["bypass"] is True
    assert len(fake.scored) == 4  # the same records file, not rescored


def test_calibrate_with_bypass_false_pools_the_gaps_of_every_differing_token(fake, tmp_path) -> None:
    """The threshold's gap distribution is over the tokens where the decoder consults the rule: with bypass=false
    all 4 differing tokens (8 gaps at pairs 2, 3), not only the 2 that are not function tokens; the preset records
    the bypass setting of its data."""
    from tasks import calibrate
    from tokrag_model.methods.tokrag import TokRAGParams

    fake.lm.params = TokRAGParams(bypass=False)
    assert calibrate.main(["--data", "wiki", "--out", str(tmp_path / "cal"), "--n", "4"]) == 0
    cal = json.loads((tmp_path / "cal" / "tokrag_preset.json").read_text())["calibration"]
    assert cal["dynamic"]["n_gaps"] == 8 and cal["data"]["wiki"]["bypass"] is False


def test_the_calibrated_row_is_flagged_in_sample_on_the_presets_own_dev_data(fake, tmp_path, capsys) -> None:
    """``tokrag analyze --split dev --preset P`` scored P on the dev samples it was calibrated on and printed its
    AUC like any other row; now the row, a note and results.json say it is in-sample (not on --split test)."""
    from tasks import analyze, calibrate

    cal = tmp_path / "cal"
    assert calibrate.main(["--data", "wiki", "--out", str(cal), "--n", "4"]) == 0
    preset = str(cal / "tokrag_preset.json")
    out = tmp_path / "an"
    capsys.readouterr()
    assert analyze.main(["--data", "wiki", "--split", "dev", "--out", str(out), "--n", "6", "--bootstrap", "5",
                         "--preset", preset]) == 0
    printed = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    assert res["preset_in_sample"] == {"wiki": 4}
    assert res["results"]["wiki"]["policies"]["calibrated"]["describe"].endswith(
        "(IN-SAMPLE: calibrated on these dev samples)")
    assert ("note: the calibrated row is in-sample: the preset was calibrated on these dev samples (wiki 4 of 6), so "
            "its AUC is partly its dev fit, not a held-out estimate; run --split test for that") in printed
    assert analyze.main(["--data", "wiki", "--split", "test", "--out", str(out), "--n", "4", "--bootstrap", "5",
                         "--preset", preset]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["preset_in_sample"] == {} and "IN-SAMPLE" not in res["results"]["wiki"]["policies"]["calibrated"]["describe"]
    assert "in-sample" not in capsys.readouterr().out
