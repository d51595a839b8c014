"""What ``tokrag calibrate`` / ``tokrag analyze`` report about a resumed run (a new-user trial's findings), on a fake
model: the progress bar of a resumed run, the scoring time recorded over several invocations, the records files named
on Ctrl-C, a preset of another prompt format or dtype, and the preset's path as recorded."""

from __future__ import annotations

import json
import logging
import re

import pytest


@pytest.fixture
def fake(monkeypatch):
    """A fake 4-layer TokRAGLM and data: ``pool`` samples ``q0…`` per data set, each scored (``scored``) in
    ``delay`` seconds into one strict token (even samples benefit, odd ones detriment) with S_R per layer, gaps and
    analysis scores, so that analyze and calibrate run to the end; ``interrupt_at``: KeyboardInterrupt when that
    many samples were scored."""
    from tasks import analyze

    from tests.analyze_fakes import install_fake

    def record(i, sid):  # even samples benefit (RAG top-1 gold), odd ones detriment
        tr, tp = (1, 2) if i % 2 == 0 else (2, 1)
        s_r = [0.1 * (j + 1) + 0.05 * i for j in range(4)]
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, tr, tp, -0.5, -0.6, False, 0.2, s_r,
                                    [None, None, 1e-6 * (i + 1), 2e-6 * (i + 1)], (0.3, 0.2 + 0.01 * i))]

    return install_fake(monkeypatch, record, device="cpu")


def _bars(err: str, desc: str) -> list[str]:
    """The renderings of progress bar ``desc`` in stderr text (tqdm redraws with carriage returns)."""
    return [x.strip() for x in re.split(r"[\r\n]", err) if x.startswith(f"{desc}:") and "|" in x]


def test_a_resumed_bar_starts_at_the_reused_samples_and_one_line_names_the_file(fake, tmp_path, capsys) -> None:
    """A resumed run counted the reused samples as just done (``39/238 [00:13<01:41, 1.97it/s]`` promising 1m41s
    for 199 samples at ~5 s each); now the bar starts at them, so its rate is over the new samples, and one line
    says how many samples were reused from which records file."""
    from tasks.analyze import collect_records

    out = tmp_path / "out"
    _, cfg = collect_records(fake.lm, "wiki", "dev", 3, out, progress=True)
    assert cfg["reused"] == 0
    assert "reused" not in capsys.readouterr().err  # a fresh run: no line about reuse
    _, cfg = collect_records(fake.lm, "wiki", "dev", 5, out, progress=True)
    err = capsys.readouterr().err
    assert err.endswith(f"\nwiki dev: 3 of 5 samples reused from {cfg['records_file']}\n")  # after the bar
    bars = _bars(err, "wiki dev")
    assert bars and " 3/5 " in bars[0] and " 5/5 " in bars[-1], bars
    assert cfg["reused"] == 3 and fake.scored[-2:] == ["wiki:q3", "wiki:q4"]


def test_seconds_are_the_scoring_time_of_every_sample_used_over_invocations(fake, tmp_path) -> None:
    """``calibration.seconds`` and analyze's ``seconds`` covered only the last invocation (a 72-sample preset built
    over six invocations said 41.6 s); now each records line holds its sample's scoring time and ``seconds`` is
    their sum over the samples used, resumed or not (``wall_seconds``: this invocation); a records line written
    before the per-sample times makes ``seconds`` None (``samples_untimed``), not a smaller number."""
    from tasks import analyze, calibrate

    out = tmp_path / "out"
    argv = ["--data", "wiki", "--split", "dev", "--out", str(out), "--bootstrap", "5"]
    fake.delay = 0.15
    assert calibrate.main(argv + ["--n", "3"]) == 0
    assert calibrate.main(argv + ["--n", "6"]) == 0  # 3 reused, 3 scored
    assert len(fake.scored) == 6
    records = next(out.glob("records_wiki_dev_*.jsonl"))
    lines = [json.loads(x) for x in records.read_text(encoding="utf-8").splitlines()]
    assert all(x["seconds"] >= 0.15 for x in lines)
    total = round(sum(x["seconds"] for x in lines), 1)
    cal = json.loads((out / "tokrag_preset.json").read_text())["calibration"]
    assert cal["seconds"] == total >= 0.9 and cal["samples_untimed"] == 0
    # wall_seconds against the fake's real sleeps: on a virtual clock in test_s55_t1_calibrate_seconds_clock (s55 t1)
    assert analyze.main(argv + ["--n", "6"]) == 0  # every sample reused
    res = json.loads((out / "results.json").read_text())
    assert res["seconds"] == total and res["configs"]["wiki"]["reused"] == 6 and len(fake.scored) == 6
    # a records line written before the per-sample times: the total is not known, and says so
    del lines[0]["seconds"]
    records.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert analyze.main(argv + ["--n", "6"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["seconds"] is None and res["samples_untimed"] == 1
    assert res["seconds_known"] == round(sum(x["seconds"] for x in lines[1:]), 1)


def test_ctrl_c_names_every_records_file_of_the_run_with_its_count(fake, tmp_path, capsys) -> None:
    """Ctrl-C during the wiki samples named only the wiki file (``39 samples kept in ...wiki...jsonl``), not the nq
    file of the same run that held 36 records; now every records file of the run is named with its count."""
    from tasks import analyze

    out = tmp_path / "out"
    argv = ["--data", "wiki,nq", "--split", "dev", "--out", str(out), "--bootstrap", "5"]
    assert analyze.main(argv + ["--n", "2"]) == 0
    capsys.readouterr()
    fake.scored.clear()
    fake.interrupt_at = 1
    assert analyze.main(argv + ["--n", "5"]) == 130
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("tokrag analyze:")]
    wiki, nq = next(out.glob("records_wiki_dev_*.jsonl")), next(out.glob("records_nq_dev_*.jsonl"))
    assert err == [f"tokrag analyze: interrupted; 3 samples kept in {wiki}; 2 samples kept in {nq}: "
                   "run the same command to resume"]


def test_analyze_warns_of_a_preset_of_another_prompt_format_or_dtype_as_lm_eval_does(fake, tmp_path, caplog) -> None:
    """A preset calibrated with --apply-chat-template used by analyze on plain prompts (or in another dtype) gave no
    warning, while lm_eval with it warns; now analyze logs lm_eval's message, in its own flags (--apply-chat-template)."""
    from tasks import analyze
    from tokrag_model.methods.tokrag import preset_dtype_mismatch, preset_prompt_mismatch, read_preset, write_preset

    path = tmp_path / "chat.json"
    write_preset(path, fake.lm, {"layer": 2},
                 {"data": {"nq": {"data": "nq", "prompt": "instruct", "apply_chat_template": True}}})
    preset = read_preset(path)
    argv = ["--split", "dev", "--out", str(tmp_path / "o"), "--n", "2", "--bootstrap", "5", "--preset", str(path)]
    with caplog.at_level(logging.WARNING):
        assert analyze.main(argv + ["--data", "nq"]) == 0
    want = preset_prompt_mismatch(preset, False, ["instruct"], "fake-lm", cli="analyze")  # analyze's flags (s51 f8)
    assert want and "--apply-chat-template" in want and "--apply_chat_template" not in want and [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [want]
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # wiki continuations are plain text either way: nothing to say
        assert analyze.main(argv + ["--data", "wiki"]) == 0
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    fake.lm.backbone.dtype = "bfloat16"
    with caplog.at_level(logging.WARNING):
        assert analyze.main(argv + ["--data", "wiki"]) == 0
    want = preset_dtype_mismatch(preset, "bfloat16", "cpu", "fake-lm")
    assert want and [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [want]


def test_the_preset_path_is_recorded_absolute(fake, tmp_path, monkeypatch) -> None:
    """``config.tokrag_preset.path`` (lm_eval's results) and analyze's ``preset.path`` were the path as typed
    (``preset.json``, relative to a folder no longer known); now the absolute path."""
    from tasks import analyze
    from tokrag_model.base import RAGMethodLM
    from tokrag_model.methods.tokrag import TokRAGLM, read_preset, write_preset

    monkeypatch.chdir(tmp_path)
    write_preset(tmp_path / "preset.json", fake.lm, {"layer": 2}, {})
    assert analyze.main(["--data", "wiki", "--split", "dev", "--out", "o", "--n", "2", "--bootstrap", "5",
                         "--preset", "preset.json"]) == 0
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["preset"]["path"] == str(tmp_path / "preset.json")
    monkeypatch.setattr(RAGMethodLM, "get_model_info", lambda self: {"model_dtype": "float32"})
    lm = TokRAGLM.__new__(TokRAGLM)  # only what get_model_info reads
    lm.preset = read_preset("preset.json")
    info = lm.get_model_info()
    assert info["tokrag_preset"]["path"] == str(tmp_path / "preset.json")
    assert info["tokrag_preset"]["sha256"] == lm.preset["sha256"] and info["model_dtype"] == "float32"
