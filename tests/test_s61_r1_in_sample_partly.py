"""s61 r1 (review of p1's 49fd9fc): ``lm_eval ... preset=P``'s in-sample WARNING says a score is *partly* the preset's
dev fit when only some of the docs scored are the ones the preset was calibrated on.

49fd9fc's line read ``(wiki_lm_bm25 1 of 3: ...), so each of these scores is its dev fit, not a held-out estimate``
for a run whose 3 dev docs held 1 calibration doc (measured: lm_eval --samples '{"wiki_lm_bm25": [79, 80, 81]}' with a
preset calibrated on the first 80 wiki dev paragraphs): two of the three were held out, so the score is not wholly a
dev fit. Now ``... so each of these scores is partly its dev fit, ...``; a run whose docs are all the preset's keeps
the words (and ``tokrag analyze``'s note, from the same sentence, is unchanged)."""

from __future__ import annotations

from tasks.analyze import in_sample_sentence, lm_eval_in_sample_warning

FILES = {"files": {"wiki_vital_summaries/summaries_en-us.json": {"sha256": "a" * 64}}}
PRESET = {"path": "cal/p.json", "calibration": {"data": {"wiki": {"split": "dev", "n": 2, "tokrag_data": FILES}}}}
FIX = "evaluate the test split (task metadata split test, the default) for that"


def test_some_docs_not_the_presets_is_partly_its_dev_fit():
    assert lm_eval_in_sample_warning(PRESET, [("wiki_lm_bm25", "dev", FILES, 3)]) == (
        "preset=cal/p.json: this run is in-sample: the preset was calibrated on these dev samples (wiki_lm_bm25 2 of 3: "
        f"the same question files by SHA-256), so each of these scores is partly its dev fit, not a held-out estimate; {FIX}")
    got = lm_eval_in_sample_warning(PRESET, [("wiki_lm_bm25", "dev", FILES, [1, 5, 9])])  # --samples positions
    assert "(wiki_lm_bm25 1 of 3: the same question files by SHA-256), so each of these scores is partly its dev" in got


def test_all_docs_the_presets_is_its_dev_fit():
    """Guard: every doc scored is a calibration doc: the words as before."""
    assert lm_eval_in_sample_warning(PRESET, [("wiki_lm_bm25", "dev", FILES, 2)]) == (
        "preset=cal/p.json: this run is in-sample: the preset was calibrated on these dev samples (wiki_lm_bm25 2 of 2: "
        f"the same question files by SHA-256), so each of these scores is its dev fit, not a held-out estimate; {FIX}")
    assert in_sample_sentence("wiki 2 of 3", "its AUC", "run --split test for that") == (
        "the preset was calibrated on these dev samples (wiki 2 of 3), so its AUC is its dev fit, not a held-out "
        "estimate; run --split test for that")
