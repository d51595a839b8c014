"""The report's statistics and diagnostics (s52 u1 findings P2, P4, P3; /work/scratch/s52/u1/findings.md).

P2: ``passage marker in answer`` counted the marker anywhere in ``filtered_resps[0]``, which for the tokrag tasks is the
whole generation (no task has a ``filter_list``), while the QA tasks score only its first non-empty line
(``tasks.utils.answer_line``): u1's rag-standard and tokrag showed 0.125 from one answer whose marker is on the unscored
second line ('South Korea has held the Winter Olympics twice:\\n[Reference]: Skiing').

Synthetic finished cells (tests/s51_f4_synthetic.py): no model runs.
"""

from __future__ import annotations

import inspect

from leaderboards.provenance_view import marker_notes
from leaderboards.report import compute
from tasks.longform import process_results_longform
from tasks.utils import process_results_qa
from tests.s51_f4_synthetic import synthetic

TEMPLATE = "[Reference]: {title}\n{text}\n"


def _marker_rows(tmp_path, answers: dict[str, list[str]], process_results=process_results_qa):
    spec, loaded = synthetic(tmp_path, {m: {"answer_match": [0.0] * len(a)} for m, a in answers.items()})
    for cell, _key, d in loaded.values():
        d["results"]["config"] = {"tokrag_resolved_config": {"passage_template": TEMPLATE}}
        if process_results is not None:
            d["results"]["configs"]["toy_qa"]["process_results"] = inspect.getsource(process_results)
        for s, a in zip(d["samples"]["toy_qa"], answers[cell.method.name]):
            s["resps"], s["filtered_resps"] = [[a]], [a]
    data = compute(spec, loaded, timings=False)
    return data, {r["method"]: r.get("passage_marker") for r in data["rows"]}


ANSWERS = {"standard": ["South Korea has held the Winter Olympics twice:\n[Reference]: Skiing", "Paris", "1912", "no"],
           "other": ["\n[Reference]: Marie Curie\nMarie Curie", "Paris", "The [Reference]: x", "y\n[Reference]: y"]}


def test_the_passage_marker_is_counted_in_the_scored_first_line_only(tmp_path):
    data, pm = _marker_rows(tmp_path, ANSWERS)
    # standard's one marker is on the unscored second line (the old code counted it: 1 of 4)
    assert pm["standard"] == {"marker": "[Reference]:", "answers": 0, "n": 4, "rate": 0.0}
    # other: the first non-empty line of answer 0 and answer 2 hold it; answer 3's is on its second line (old: 3 of 4)
    assert pm["other"] == {"marker": "[Reference]:", "answers": 2, "n": 4, "rate": 0.5}
    note = marker_notes(data)[0]
    assert note.startswith("passage marker in answer = fraction of the answers whose scored text (the first non-empty "
                           "line of the generation for the QA tasks, tasks.utils.answer_line; the whole generation for "
                           "long-form ones; text after the scored line is not counted) contains the passage template's "
                           "marker")


def test_a_long_form_task_counts_the_whole_generation_and_an_unknown_scoring_rule_none(tmp_path):
    _data, pm = _marker_rows(tmp_path / "long", ANSWERS, process_results_longform)
    assert pm["standard"]["answers"] == 1 and pm["other"]["answers"] == 3
    _data, pm = _marker_rows(tmp_path / "unknown", ANSWERS, None)  # no process_results recorded: not known what is scored
    assert pm == {"standard": None, "other": None}


# --------------------------------------------------------------------------- P4: the minimum detectable difference at small n
# u1: "my_qa_bm25: n = 8 questions; a true difference in answer match under 20.2 points is detected less than 80% of
# the time" with no word that the exact McNemar test needs at least 6 of the 8 questions discordant, all one way (75
# points): the normal approximation understates it (leaderboards/README).

def _mde(tmp_path, values: dict[str, list]):
    from leaderboards.report import mde_lines

    spec, loaded = synthetic(tmp_path, {m: {"answer_match": v} for m, v in values.items()})
    data = compute(spec, loaded, timings=False)
    (x,) = data["mde"]
    return x, mde_lines(data, x["model"])[0]


def test_exact_minimum_of_one_way_differing_questions():
    from leaderboards.stats import exact_min_one_way

    assert exact_min_one_way(0.05) == 6  # 2/2^6 = 0.031 < 0.05 <= 2/2^5
    assert exact_min_one_way(0.05 / 2) == 7 and exact_min_one_way(0.05 / 7) == 9  # 2/2^8 = 0.0078 >= 0.00714


def test_the_line_at_n_8_says_what_the_exact_test_needs(tmp_path):
    x, line = _mde(tmp_path, {"standard": [1, 1, 0, 0, 0, 0, 0, 0], "none": [0] * 8, "other": [1, 0, 0, 0, 0, 0, 0, 1]})
    assert (x["n"], x["mde"], x["comparisons"]) == (8, 0.4953, 2)  # 2.8016 * 0.5 / sqrt(8)
    assert (x["exact_min_questions"], x["exact_min_questions_holm"], x["exact_min_diff"], x["normal_understates"]) == (6, 7, 0.75, True)
    assert line.endswith("the root mean square of the sds of the 2 comparisons); a normal approximation, which understates what the exact test needs here: "
                         "the exact McNemar test reaches p < 0.05 only with at least 6 of the 8 questions discordant, all "
                         "one way, a difference of at least 75.0 points (7, 87.5 points, at alpha 0.05/2)")


def test_fewer_questions_than_the_exact_minimum_and_a_graded_metric(tmp_path):
    _x, line = _mde(tmp_path / "four", {"standard": [1, 1, 0, 0], "none": [0] * 4, "other": [1, 0, 0, 1]})
    assert line.endswith("; a normal approximation: with 4 questions the exact test cannot reach p < 0.05 at all (it "
                         "needs at least 6 questions differing, all one way)")
    x, line = _mde(tmp_path / "graded", {"standard": [1, 0.5, 0, 0, 0, 0, 0, 0], "none": [0] * 8, "other": [1, 0, 0, 0, 0, 0, 0, 1]})
    assert "exact_min_diff" not in x and x["normal_understates"] is True  # not 0/1: below 30 questions
    assert line.endswith("; a normal approximation, which understates what the exact test needs below 30 questions: "
                         "the exact sign-flip test reaches p < 0.05 only with at least 6 of the 8 questions differing, "
                         "all one way (7 at alpha 0.05/2)")


def test_no_caveat_where_the_normal_figure_exceeds_the_exact_minimum(tmp_path):
    x, line = _mde(tmp_path, {"standard": [1] * 20 + [0] * 280, "none": [0] * 300, "other": [1] * 10 + [0] * 290})
    assert (x["mde"], x["exact_min_diff"], x["normal_understates"]) == (0.0352, 0.02, False)
    assert line.endswith("the root mean square of the sds of the 2 comparisons)")


# --------------------------------------------------------------------------- P3: identical values, identical intervals
# u1: tokrag and tokrag-l14 had the same per-question F1 on 8 questions ([0.4286, 0.1667, 0, 0, 0, 0, 0, 0.2]) and the
# report printed 0.099 [0.021, 0.214] and 0.099 [0.000, 0.223]: each row's resamples were seeded by its runs' config
# hashes. They are now seeded by the spec's seed, the metric and the values in question order.

U1_F1 = [0.4286, 0.1667, 0, 0, 0, 0, 0, 0.2]


def test_rows_with_identical_values_get_identical_intervals(tmp_path):
    spec, loaded = synthetic(tmp_path, {"standard": {"f1": U1_F1}, "none": {"f1": [0.0] * 8}, "other": {"f1": list(U1_F1)}},
                             extra={"bootstrap": {"iters": 1000, "seed": 1234}})
    data = compute(spec, loaded, timings=False)
    rows = {r["method"]: r for r in data["rows"]}
    std, other = rows["standard"]["metrics"]["f1"], rows["other"]["metrics"]["f1"]
    # the old code gave [0.021, 0.207] and [0.020, 0.214] here (seeds from 'key-standard' and 'key-other')
    assert (round(std["lo"], 3), round(std["hi"], 3)) == (0.0, 0.224)
    assert (std["lo"], std["hi"]) == (other["lo"], other["hi"])
    # the paired differences against rag-none-like 'none' are identical too (the old code: other run ids, other seeds)
    p_std = rows["none"]["paired"]["standard"]["f1"]
    p_other = rows["other"]["paired"]["standard"]["f1"]
    assert p_other["diff"] == 0.0
    spec2, loaded2 = synthetic(tmp_path / "b", {"standard": {"f1": [0.0] * 8}, "none": {"f1": list(U1_F1)}},
                               extra={"bootstrap": {"iters": 1000, "seed": 1234}})
    # the same difference with the rows the other way round: the interval mirrored, the same p
    q = {r["method"]: r for r in compute(spec2, loaded2, timings=False)["rows"]}["none"]["paired"]["standard"]["f1"]
    assert (q["diff"], q["lo"], q["hi"], q["p"]) == (-p_std["diff"] + 0.0, -p_std["hi"] + 0.0, -p_std["lo"] + 0.0, p_std["p"])


# --------------------------------------------------------------------------- P5: what answer recall@k / gold@k count
# u1: closed book (rag-none, shown no passages) showed answer recall@k 1.000 and gold@k 1.000, while the Units line said
# "answer recall@k = fraction of questions with a gold answer in the top-k passages", read as the passages given to the
# model. It is the task's retrieval, the same for every method, rag-none included.

def test_the_units_line_says_recall_and_gold_at_k_are_the_tasks_retrieval(tmp_path):
    from leaderboards.report import render_markdown

    spec, loaded = synthetic(tmp_path, {m: {"answer_match": [1.0, 0.0], "answer_recall": [1.0, 1.0], "gold_at_k": [1.0, 1.0]}
                                        for m in ("standard", "none")})
    md = render_markdown(compute(spec, loaded, timings=False))
    units = next(line for line in md.splitlines() if line.startswith("Units: "))
    assert ("answer recall@k = fraction of questions with a gold answer in the top-k passages of the task's retrieval "
            "(the same for every method of a task, including methods shown no passages, such as rag-none)") in units
    assert ("gold@k = fraction of the questions with a known gold passage that have it in the task's top k retrieved "
            "passages (the same for every method of a task, including methods shown no passages; its own n where only "
            "some questions have one)") in units
