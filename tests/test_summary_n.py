"""Issue 12.6: the number of documents evaluated per task is printed with the results (``lm_eval`` /
``tokrag eval`` summary table, ``tokrag leaderboard report``), not only written into the results JSON."""

from __future__ import annotations

RESULTS = {
    "results": {"nq_oracle_bm25": {"alias": "nq_oracle_bm25", "em,none": 0.5, "em_stderr,none": 0.2, "f1,none": 0.6,
                                   "f1_stderr,none": 0.2},
                "wiki_lm_bm25": {"alias": "wiki_lm_bm25", "bits_per_byte,none": 0.93, "bits_per_byte_stderr,none": "N/A"}},
    "versions": {"nq_oracle_bm25": 3.0, "wiki_lm_bm25": 2.0},
    "n-shot": {"nq_oracle_bm25": 0, "wiki_lm_bm25": 0},
    "higher_is_better": {"nq_oracle_bm25": {"em": True, "f1": True}, "wiki_lm_bm25": {"bits_per_byte": False}},
    "n-samples": {"nq_oracle_bm25": {"original": 2383, "effective": 6}, "wiki_lm_bm25": {"original": 253, "effective": 12}},
}


def test_lm_eval_results_table_has_an_n_column() -> None:
    import lm_eval.api.registry  # noqa: F401
    import lm_eval.utils

    import tokrag_model._lmeval_hook  # noqa: F401 - installs the patches when the .pth hook did not

    lines = lm_eval.utils.make_table(RESULTS).splitlines()
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in lines]
    assert cells[0][:3] == ["Tasks", "n", "Version"]
    assert [(c[0], c[1], c[5]) for c in cells[2:]] == [
        ("nq_oracle_bm25", "6", "em"), ("", "", "f1"), ("wiki_lm_bm25", "12", "bits_per_byte")]
    assert lines[1].split("|")[2] == "--:"


def test_add_n_column_leaves_other_text_alone() -> None:
    from tokrag_model._lmeval_hook import add_n_column

    assert add_n_column("no table here", RESULTS) == "no table here"
    assert add_n_column("|Tasks|Version|\n|-----|------:|\n|x|1|", {"results": {}}) == "|Tasks|Version|\n|-----|------:|\n|x|1|"


def test_leaderboard_report_prints_n_per_task() -> None:
    from leaderboards.cli import n_per_task

    rows = [{"task": "a", "n": 30}, {"task": "a", "n": 30}, {"task": "b", "n": 20}, {"task": "b", "n": 30}, {"task": "c"}]
    assert n_per_task(rows) == "n per task: a 30, b 20-30 (differs between methods), c -"
