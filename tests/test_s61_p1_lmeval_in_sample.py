"""s61 p1: ``lm_eval --model tokrag --model_args preset=P`` on the dev questions ``P`` was calibrated on logs one
WARNING naming the preset file and the shared samples, by the rule and in the words of ``tokrag analyze --preset``'s
in-sample note (``tasks.analyze.in_sample_check``, ``in_sample_sentence``).

Before, only ``tokrag analyze`` said so; an lm-eval run of ``wiki_lm_bm25`` with task metadata ``split: dev`` and a
preset calibrated on the first wiki dev paragraphs scored them without a word. A preset records per data set the
split, ``n`` (it calibrates on the first n of the dev pool) and, since 2026-12-07, the SHA-256 of the files its
questions came from (``tokrag_data``); no sample ids. So the shared samples are the run's pool positions below n,
where the question files' contents are the preset's (or, for a preset without SHA-256, the data set's own task on
dev: the rule before 2026-12-07). A tiny random Llama over a small wiki-vital folder stands in for the model and data
(the subject is the warning, not the scores)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from leaderboard_helpers import tiny_llama


@pytest.fixture(scope="module")
def setup(tmp_path_factory, data_dir):
    """A data folder of 4 dev, 4 test and 8 retrieval-only wiki-vital articles, a tiny Llama, and the dev
    ``tokrag_data`` record ``tokrag calibrate`` writes for the first 2 wiki dev paragraphs."""
    from tasks.utils import wiki_split_of

    root = tmp_path_factory.mktemp("p1ins")
    src = json.loads((data_dir / "wiki_vital_summaries" / "summaries_en-us.json").read_text(encoding="utf-8"))
    kept, counts = {}, {"dev": 0, "test": 0, None: 0}
    limits = {"dev": 4, "test": 4, None: 8}
    for title, rec in src.items():
        split = wiki_split_of(title)
        if counts[split] < limits[split] and len(rec["extract"].split()) > 40:
            kept[title] = rec
            counts[split] += 1
    (root / "data" / "wiki_vital_summaries").mkdir(parents=True)
    (root / "data" / "wiki_vital_summaries" / "summaries_en-us.json").write_text(json.dumps(kept), encoding="utf-8")
    return {"root": root, "data": root / "data", "model": tiny_llama(root / "m", layers=4)}


@pytest.fixture
def env(setup, monkeypatch):
    monkeypatch.setenv("TOKRAG_DATA_DIR", str(setup["data"]))
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(setup["root"] / "cache"))
    return setup


def _record(split: str = "dev") -> dict:
    from tasks.analyze import wiki_samples

    prov: dict = {}
    wiki_samples(2, split=split, provenance=prov)
    return json.loads(json.dumps(prov))


def _preset(env, tmp_path, data: dict) -> Path:
    from tokrag_model.methods import MODELS

    lm = MODELS["tokrag"](pretrained=str(env["model"]), device="cpu")
    p = {"format": "tokrag-preset/1", "method": "tokrag",
         "model": {"fingerprint": lm.fingerprint, "files_fingerprint": lm.files_fingerprint, "n_layers": 4},
         "params": {"layer": 2}, "calibration": {"data": data}}
    path = tmp_path / "cal" / "tokrag_preset.json"
    path.parent.mkdir()
    path.write_text(json.dumps(p))
    return path


def _warnings(env, preset: Path, caplog, split: str = "dev", limit: int = 3, samples=None) -> list[str]:
    import lm_eval
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR
    from tokrag_model.methods import MODELS

    lm = MODELS["tokrag"](pretrained=str(env["model"]), device="cpu", preset=str(preset))
    manager = TaskManager(include_path=str(TASK_DIR), include_defaults=False, metadata={"split": split})
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm_eval.simple_evaluate(model=lm, tasks=["wiki_lm_bm25"], task_manager=manager, limit=None if samples else limit,
                                samples=samples, bootstrap_iters=0)
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "in-sample" in r.getMessage()]


def test_a_dev_run_over_the_preset_questions_warns_with_the_file_and_the_count(env, tmp_path, caplog):
    preset = _preset(env, tmp_path, {"wiki": {"split": "dev", "n": 2, "tokrag_data": _record()}})
    assert _warnings(env, preset, caplog) == [
        f"preset={preset}: this run is in-sample: the preset was calibrated on these dev samples (wiki_lm_bm25 2 of 3: "
        "the same question files by SHA-256), so each of these scores is partly its dev fit, not a held-out estimate; "
        "evaluate the test split (task metadata split test, the default) for that"]


def test_lm_eval_samples_count_only_the_positions_the_preset_used(env, tmp_path, caplog):
    preset = _preset(env, tmp_path, {"wiki": {"split": "dev", "n": 2, "tokrag_data": _record()}})
    got = _warnings(env, preset, caplog, samples={"wiki_lm_bm25": [1, 3]})
    assert len(got) == 1 and "(wiki_lm_bm25 1 of 2: the same question files by SHA-256)" in got[0]
    assert _warnings(env, preset, caplog, samples={"wiki_lm_bm25": [2, 3]}) == []


def test_an_older_preset_is_judged_by_split_and_n(env, tmp_path, caplog):
    preset = _preset(env, tmp_path, {"wiki": {"split": "dev", "n": 5}})
    got = _warnings(env, preset, caplog, limit=2)
    assert len(got) == 1 and ("(wiki_lm_bm25 2 of 2: judged by split and n only: the preset records no SHA-256 of its "
                              "data (written before 2026-12-07))") in got[0]


def test_no_warning_on_test_or_on_other_question_files(env, tmp_path, caplog):
    """Guards: the test split, and a preset calibrated on other wiki files (another SHA-256), warn of nothing."""
    record = _record()
    preset = _preset(env, tmp_path, {"wiki": {"split": "dev", "n": 2, "tokrag_data": record}})
    assert _warnings(env, preset, caplog, split="test") == []
    other = json.loads(json.dumps(record))
    for rec in other["files"].values():
        rec["sha256"] = "0" * 64
    preset.write_text(json.dumps({**json.loads(preset.read_text()),
                                  "calibration": {"data": {"wiki": {"split": "dev", "n": 2, "tokrag_data": other}}}}))
    assert _warnings(env, preset, caplog) == []


def test_analyze_note_keeps_its_words():
    """Guard: ``tokrag analyze``'s in-sample note, now from the shared sentence, reads as before."""
    from tasks.analyze import in_sample_sentence

    assert ("note: the calibrated row is in-sample: " + in_sample_sentence("wiki 2 of 3", "its AUC",
                                                                           "run --split test for that")) == (
        "note: the calibrated row is in-sample: the preset was calibrated on these dev samples (wiki 2 of 3), so its "
        "AUC is its dev fit, not a held-out estimate; run --split test for that")
