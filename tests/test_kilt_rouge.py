"""KILT's ROUGE-L (``rougeL_kilt_downstream``, :func:`tasks.longform.kilt_rouge_l`) beside evaluate's (``rougeL``).

KILT's official scorer (``kilt/eval_downstream.py``, ``_rougel_score``) calls the ``rouge`` package on the raw
texts; the ELI5 card claimed "KILT's metrics for ELI5" while only evaluate's ROUGE-L (lower-cased, punctuation
dropped) was computed: 1.000 where KILT gives 0.667."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tasks import TASK_DIR
from tasks.longform import kilt_rouge_l, process_results_dialogue, process_results_longform, rouge_l


def _kilt_reference(prediction: str, golds: list[str]) -> float:
    """KILT's eval_downstream rule, called on the package as KILT does (``Rouge()``, all default metrics)."""
    from rouge import Rouge

    scores = [Rouge().get_scores(prediction.strip(), g.strip(), avg=True)["rouge-l"]["f"] for g in golds if g.strip()]
    return max(scores)


def test_kilt_rouge_l_is_kilts_definition_not_evaluates():
    pred, ref = "Sunlight is scattered by air. Blue light scatters more.", "sunlight is scattered by air, blue light scatters more"
    assert rouge_l(pred, [ref]) == pytest.approx(1.0)  # evaluate's: lower-cased, punctuation dropped
    # KILT's: "Sunlight" != "sunlight", "Blue" != "blue", "air," != "air"; two sentences against one: the union
    # LCS is "is scattered by" + "light scatters more", 6 of 9 tokens each side
    assert kilt_rouge_l(pred, [ref]) == pytest.approx(2 / 3, abs=1e-6)
    pred2 = "The sky is blue because of Rayleigh scattering. Short wavelengths scatter more."
    ref2 = "Because of Rayleigh scattering, short wavelengths (blue) scatter more than long ones."
    assert kilt_rouge_l(pred2, [ref2]) == pytest.approx(0.4167, abs=1e-4)
    assert rouge_l(pred2, [ref2]) == pytest.approx(0.6667, abs=1e-4)


def test_kilt_rouge_l_matches_the_package_as_kilt_calls_it():
    rng = random.Random(3)
    words = ["the", "The", "sky", "blue", "air,", "light.", "is", "Because", "scatter", "(red)", "of", "more"]
    for _ in range(40):
        pred = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
        golds = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(rng.randint(1, 3))]
        if not any(re.sub(r"[.\s]", "", g) for g in golds) or not re.sub(r"[.\s]", "", pred):
            continue
        assert kilt_rouge_l(pred, golds) == _kilt_reference(pred, golds), (pred, golds)


def test_kilt_rouge_l_edges():
    assert kilt_rouge_l("", ["a b"]) == 0.0 and kilt_rouge_l("  ", ["a b"]) == 0.0  # KILT refuses an empty answer
    assert kilt_rouge_l("...", ["a b"]) == 0.0  # no sentence left: KILT's script stops; 0.0 here
    assert kilt_rouge_l("a b", ["...", "", "a b c"]) == pytest.approx(0.8)  # unscorable / empty references skipped
    rng = random.Random(1)
    long_ref = " ".join(f"w{rng.randrange(300)}" for _ in range(2500))  # one 2,500-word sentence: deep recursion
    pred = " ".join(f"w{rng.randrange(300)}" for _ in range(100))
    assert 0.0 < kilt_rouge_l(pred, [long_ref]) < 1.0


def test_long_form_tasks_log_both_rouge_definitions():
    doc = {"answers": ["sunlight is scattered by air, blue light scatters more"]}
    out = process_results_longform(doc, [" Sunlight is scattered by air. Blue light scatters more.\n"])
    assert out["rougeL"] == pytest.approx(1.0) and out["rougeL_kilt_downstream"] == pytest.approx(0.6667, abs=1e-4)
    wow = process_results_dialogue(doc, ["\nSunlight is scattered by air. Blue light scatters more.\nMore"])
    assert set(wow) == {"rougeL", "rougeL_kilt_downstream", "f1"}
    assert wow["rougeL_kilt_downstream"] == pytest.approx(0.6667, abs=1e-4)
    for card in ("eli5_bm25_wiki.yaml", "wow_bm25_wiki.yaml"):
        text = (Path(TASK_DIR) / "qa" / card).read_text(encoding="utf-8")
        metrics = re.findall(r"^  - \{metric: (\w+),", text, re.M)
        assert sorted(metrics) == ["f1", "rougeL", "rougeL_kilt_downstream"], card
        flat = text.replace("\n#   ", " ")
        assert "rougeL_kilt_downstream (KILT's downstream ROUGE-L F (eval_downstream's `downstream.rougel`), not KILT-RL" in flat
        assert "ROUGE-L F" in flat and "not comparable to KILT's" in flat, card
