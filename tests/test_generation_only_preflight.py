"""What a task's ``output_type`` decides before a leaderboard runs: the estimate's kind of task
(``leaderboards.estimate.task_kind``: generation vs scoring) and the pre-run refusal of a generation-only method
configuration on a scoring task (``leaderboards.runner.check_cell_args`` asking the class's ``generation_only``).
Nothing is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest
from leaderboard_helpers import FIX, TOY, write_spec

from leaderboards.estimate import task_kind
from leaderboards.runner import check_cell_args
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tokrag_model.base import RAGMethodLM
from tokrag_model.methods.replug import ReplugLM
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM
from tokrag_model.methods.standard import RagStandardLM

SMOL = {"pretrained": "smollm2-135m-instruct"}  # an alias: check_pretrained passes it without a download


# ------------------------------------------------------------------------------------------- task kind
def test_the_wiki_lm_tasks_score_and_are_of_the_lm_kind():
    """wiki_lm_bm25 3.0 and wikitext103_bm25_wiki score a continuation (output_type: loglikelihood): the estimate
    classed them "qa" (it looked for loglikelihood_rolling only) and matched their cost to generation cells."""
    from leaderboards.spec import task_output_type

    tasks = [Path(TASK_DIR)]
    assert task_output_type("wiki_lm_bm25", tasks) == "loglikelihood"
    assert task_output_type("wikitext103_bm25_wiki", tasks) == "loglikelihood"
    assert task_kind("wiki_lm_bm25", tasks) == "lm"
    assert task_kind("wikitext103_bm25_wiki", tasks) == "lm"
    assert task_output_type("nq_oracle_bm25", tasks) == "generate_until"  # from its include, _qa_template
    assert task_kind("nq_oracle_bm25", tasks) == "qa"
    fixtures = [FIX / "tasks"]
    assert (task_kind("toy_lm", fixtures), task_kind("toy_qa", fixtures)) == ("lm", "qa")  # loglikelihood_rolling


def _task(folder: Path, name: str, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(body, encoding="utf-8")


def test_every_output_type_but_generate_until_is_scoring_and_the_own_file_wins(tmp_path):
    """One rule: ``generate_until`` (also lm-eval's default when no file names one) is "qa", any other type "lm";
    the task's own output_type wins over the one of a file it includes, as lm-eval merges them."""
    from leaderboards.spec import task_output_type

    d = tmp_path / "tasks"
    _task(d, "mc", "task: mc\noutput_type: multiple_choice\n")
    _task(d, "ll", "task: ll\noutput_type: loglikelihood\n")
    _task(d, "unset", "task: unset\n")
    (d / "_scoring").write_text("output_type: loglikelihood_rolling\n", encoding="utf-8")
    _task(d, "gen_over_scoring", "include: _scoring\ntask: gen_over_scoring\noutput_type: generate_until\n")
    _task(d, "scoring_inherited", "include: _scoring\ntask: scoring_inherited\n")
    kinds = {t: task_kind(t, [d]) for t in ("mc", "ll", "unset", "gen_over_scoring", "scoring_inherited")}
    assert kinds == {"mc": "lm", "ll": "lm", "unset": "qa", "gen_over_scoring": "qa", "scoring_inherited": "lm"}
    assert task_output_type("unset", [d]) == "generate_until"
    assert task_output_type("not_a_task", [d]) == "generate_until"
    # spec.task_generates (the prompt-room check's) is the same rule: a task naming no output type generates (was False)
    from leaderboards.spec import task_generates
    assert [task_generates(t, [d]) for t in ("unset", "mc", "gen_over_scoring", "scoring_inherited")] == [True, False, True, False]


# ------------------------------------------------------------------------------------------- declaration
def test_the_methods_declare_their_generation_only_argument():
    assert RAGMethodLM.generation_only({}) is None
    assert RagStandardLM.generation_only({"selection": "rank", "replug_mode": "answer_vote"}) is None
    assert ReplugLM.generation_only({"replug_mode": "answer_vote"}) == "replug_mode=answer_vote"
    assert ReplugLM.generation_only({"replug_mode": "mixture"}) is None
    assert ReplugLM.generation_only({"replug_mode": "uniform"}) is None
    assert SelfRAGFilterLM.generation_only({"selection": "rank"}) == "selection=rank"
    assert SelfRAGFilterLM.generation_only({"selection": "threshold"}) is None
    assert SelfRAGFilterLM.generation_only({"selection": "top_m"}) is None


# ------------------------------------------------------------------------------------------- preflight
def _spec(tmp_path: Path, folder: str, methods: list[dict], tasks: list[str], include: Path | None = None):
    return load_spec(write_spec(tmp_path / folder, tasks=tasks, include=include, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}}, *methods]))


VOTE = {"name": "rag-replug-vote", "model": "rag-replug", "model_args": {"replug_mode": "answer_vote"}, "specific": SMOL}
RANK = {"name": "rag-selfrag-rank", "model": "rag-selfrag-filter", "model_args": {"selection": "rank"}, "specific": SMOL}


@pytest.mark.parametrize("method, arg", [(VOTE, "replug_mode=answer_vote"), (RANK, "selection=rank")])
def test_a_generation_only_method_on_a_scoring_task_is_refused_before_any_cell(tmp_path, method, arg):
    """It failed only at the cell's first request, after the weights loaded. The toy_lm cell follows a toy_qa cell
    with the same model arguments (checked once: only the task is new)."""
    spec = _spec(tmp_path, "s", [method], ["toy_qa", "toy_lm"])
    name = method["name"]
    with pytest.raises(ConfigError) as err:
        check_cell_args(spec, spec.cells())
    msg = str(err.value)
    assert "\n" not in msg
    assert msg == (
        f"leaderboard spec {spec.path}: cell {name}/toy_lm/seed1: model argument {arg} of method {name} only "
        "generates (generate_until requests), but task toy_lm has output_type loglikelihood_rolling (it scores, it "
        f"does not generate), so the cell would fail at its first request after the model load; drop {arg} for this "
        f"task (the default {arg.partition('=')[0]} scores), or leave toy_lm out of this method's cells (a models: "
        "entry with its own tasks: or methods: list)")


def test_wiki_lm_bm25_is_refused_to_answer_vote(tmp_path):
    """The case of the report: wiki_lm_bm25 (output_type loglikelihood), the first cell checked."""
    spec = _spec(tmp_path, "w", [VOTE], ["wiki_lm_bm25"], include=Path(TASK_DIR))
    with pytest.raises(ConfigError, match=r"cell rag-replug-vote/wiki_lm_bm25/seed1: model argument "
                                          r"replug_mode=answer_vote .* task wiki_lm_bm25 has output_type loglikelihood "):
        check_cell_args(spec, spec.cells())


def test_generating_tasks_and_scoring_modes_pass(tmp_path):
    """answer_vote and rank on a generating task, mixture and threshold on a scoring one, and a model class
    without a declaration (ToyLM) on a scoring task are all accepted."""
    ok = _spec(tmp_path, "gen", [VOTE, RANK], ["toy_qa"])
    check_cell_args(ok, ok.cells())
    scoring = _spec(tmp_path, "lm", [{**VOTE, "name": "rag-replug", "model_args": {"replug_mode": "mixture"}},
                                     # toy_lm records no query: its text is the critic's (s49 f4 refuses the default)
                                     {**RANK, "name": "rag-selfrag-filter", "model_args": {"query_field": "text"}}],
                     ["toy_qa", "toy_lm"])
    check_cell_args(scoring, scoring.cells())
