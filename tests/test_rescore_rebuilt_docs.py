"""leaderboards.rescore checks the docs of a cell read from the folder of earlier task code. A breaker edited the code
that BUILDS the requests, not the YAML: the toy loader (``utils.py``) ranking a distractor first for every question,
and ``tasks.utils.QA_PROMPTS`` (the instruction line of the built-in QA tasks). The task fingerprint changed, rescore
read the earlier folder, said only "task folder changed since the run" and kept the old numbers (toy em 0.75; a fresh
run gives 0.0). Now such a cell's docs are rebuilt with the task's current loader and the cell's metadata and compared
with the logged ones; a difference refuses the cell (naming the doc and field), a loader that fails refuses it too,
and a metric-only change of ``utils.py`` is still re-scored."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
from leaderboard_helpers import (FIX, REPO, TOY, copy_toy_runs, edit, finished_toy_runs, pin_cell_keys, rescore_cli,
                                 reverse_fewshot_pool, write_spec)

import leaderboards.rescore
import tasks.utils
from leaderboards.rescore import StaleGenerationsError, refiltered_samples
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec

_ONE = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
_SHARED = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
           "limit": 2}
RANKING = 'ctxs = [gold_ctx, dis[0], dis[1]] if i % 4 else [dis[0], gold_ctx, dis[1]]'


@pytest.fixture(autouse=True)
def _pinned(monkeypatch):
    pin_cell_keys(monkeypatch)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """toy_qa (one method, 4 questions) from a copy of the fixture tasks, and the built-in nq_oracle_gold (2 questions)
    from a copy of tokrag's tasks/qa (its own task folder: a changed file there changes the task fingerprint)."""
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    root = finished_toy_runs(tmp_path_factory.mktemp("rescore_docs"), tasks=["toy_qa"], limit=4, methods=methods)
    shutil.copytree(REPO / "tasks" / "qa", root / "qa", ignore=shutil.ignore_patterns("__pycache__"))
    run_spec(load_spec(write_spec(root / "b", include=root / "qa", tasks=["nq_oracle_gold"], limit=2, methods=methods)),
             root / "bruns", progress=False)
    run_spec(load_spec(write_spec(root / "f", include=root / "qa", tasks=["nq_oracle_gold"], limit=2, methods=methods,
                                  extra={"shared": {**_SHARED, "num_fewshot": 1}})), root / "fruns", progress=False)
    return root


def _toy(finished, tmp_path):
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    spec, runs = copy_toy_runs(finished, tmp_path, tasks=["toy_qa"], limit=4, methods=methods)
    return spec, runs, tmp_path / "tasks" / "toy_qa" / "utils.py"


def _em(out):
    return {r["method"]: r["metrics"]["em"]["mean"] for r in json.loads((out / "leaderboard.json").read_text())["rows"]}


def test_a_loader_change_of_the_passages_is_refused_naming_doc_and_field(finished, tmp_path, capsys):
    spec, runs, utils = _toy(finished, tmp_path)
    edit(utils, RANKING, "ctxs = [dis[0], dis[1], gold_ctx]")  # a distractor first for every question
    capsys.readouterr()
    with pytest.raises(StaleGenerationsError) as exc:  # the old code re-scored it: em 0.75 kept (a fresh run: 0.0)
        rescore_cli(spec, runs, tmp_path / "r")
    (line,) = str(exc.value).splitlines()
    assert line.startswith("standard/toy_qa/seed1: the samples in ")
    assert '(doc 0: ctxs[1].docid "g0" in the run -> "g14" now)' in line
    assert f"re-run it: tokrag leaderboard run {spec} --runs-dir {runs}" in line
    assert not (tmp_path / "r").exists()
    assert "task folder changed" not in capsys.readouterr().out


def test_allow_missing_reports_a_cell_with_other_docs_missing(finished, tmp_path, capsys):
    spec, runs, utils = _toy(finished, tmp_path)
    edit(utils, RANKING, "ctxs = [dis[0], dis[1], gold_ctx]")
    capsys.readouterr()
    assert rescore_cli(spec, runs, tmp_path / "r", "--allow-missing") == 0
    cap = capsys.readouterr()
    missing = [line for line in cap.err.splitlines() if line.startswith("note: missing ")]
    assert len(missing) == 1 and "standard/toy_qa/seed1" in missing[0] and "doc 0: ctxs[1].docid" in missing[0]
    assert "task folder changed" not in cap.out


def test_a_metric_only_change_of_utils_is_still_rescored(finished, tmp_path, capsys):
    spec, runs, utils = _toy(finished, tmp_path)
    edit(utils, 'scores = qa_scores(results[0], doc["answers"])',
          'scores = qa_scores(results[0], doc["answers"])\n    scores["em"] = 0.0')
    capsys.readouterr()
    assert rescore_cli(spec, runs, tmp_path / "r") == 0
    assert "note: standard/toy_qa/seed1: task folder changed since the run" in capsys.readouterr().out
    assert _em(tmp_path / "r") == {"standard": 0.0}  # logged: 0.75


def test_a_loader_that_fails_now_refuses_the_cell(finished, tmp_path):
    spec, runs, utils = _toy(finished, tmp_path)
    edit(utils, "def load_clean(**kwargs) -> datasets.DatasetDict:\n",
          "def load_clean(**kwargs) -> datasets.DatasetDict:\n    raise FileNotFoundError('no /data/toy.jsonl')\n")
    with pytest.raises(StaleGenerationsError) as exc:
        rescore_cli(spec, runs, tmp_path / "r")
    (line,) = str(exc.value).splitlines()
    assert line.startswith("standard/toy_qa/seed1: the code of task 'toy_qa' changed since the run in ")
    assert "its docs could not be rebuilt" in line and "FileNotFoundError: no /data/toy.jsonl" in line
    assert "TOKRAG_DATA_DIR" in line and f"re-run it: tokrag leaderboard run {spec} --runs-dir {runs}" in line


def test_a_loader_failure_logs_its_traceback_and_a_compare_bug_is_not_called_a_data_problem(finished, tmp_path,
                                                                                           caplog, monkeypatch):
    spec, runs, utils = _toy(finished, tmp_path)
    text = utils.read_text()
    edit(utils, "def load_clean(**kwargs) -> datasets.DatasetDict:\n",
          "def load_clean(**kwargs) -> datasets.DatasetDict:\n    raise FileNotFoundError('no /data/toy.jsonl')\n")
    with caplog.at_level(logging.DEBUG, logger="leaderboards.rescore"), pytest.raises(StaleGenerationsError):
        rescore_cli(spec, runs, tmp_path / "r")
    (record,) = [r for r in caplog.records if "could not be rebuilt" in r.getMessage()]
    assert record.getMessage() == "rescore: the docs of standard/toy_qa/seed1 could not be rebuilt"
    assert record.levelno == logging.DEBUG and record.exc_info[0] is FileNotFoundError
    utils.write_text(text + "EDITED = 1\n")  # the docs rebuild; an error comparing them is rescore's own, raised as is

    def broken(*_):
        raise KeyError("internal")

    monkeypatch.setattr(leaderboards.rescore, "doc_difference", broken)
    with pytest.raises(KeyError, match="internal"):
        rescore_cli(spec, runs, tmp_path / "r2")


def test_a_built_in_task_whose_instruction_line_changed_is_refused(finished, tmp_path, monkeypatch):
    shutil.copytree(finished / "qa", tmp_path / "qa")
    shutil.copytree(finished / "bruns", tmp_path / "runs")
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    spec = write_spec(tmp_path / "b", include=tmp_path / "qa", tasks=["nq_oracle_gold"], limit=2, methods=methods)
    (tmp_path / "qa" / "utils.py").write_text((tmp_path / "qa" / "utils.py").read_text() + "EDITED = 1\n")
    assert rescore_cli(spec, tmp_path / "runs", tmp_path / "r0") == 0  # the docs are the current ones: re-scored
    old = tasks.utils.QA_PROMPTS["instruct"]
    monkeypatch.setitem(tasks.utils.QA_PROMPTS, "instruct", "Answer in one word.\n")  # the breaker's QA_PROMPTS edit
    with pytest.raises(StaleGenerationsError) as exc:
        rescore_cli(spec, tmp_path / "runs", tmp_path / "r")
    (line,) = str(exc.value).splitlines()
    assert line.startswith("standard/nq_oracle_gold/seed1: ")
    assert f"(doc 0: instruction {json.dumps(old)} in the run -> \"Answer in one word.\\n\" now)" in line


def test_a_changed_few_shot_pool_is_refused_by_the_prompt(finished, tmp_path, monkeypatch):
    """The test docs are unchanged, the few-shot examples (tasks/data.py's pool) are not: the logged prompt differs."""
    shutil.copytree(finished / "qa", tmp_path / "qa")
    shutil.copytree(finished / "fruns", tmp_path / "runs")
    spec = write_spec(tmp_path / "f", include=tmp_path / "qa", tasks=["nq_oracle_gold"], limit=2, methods=_ONE,
                      extra={"shared": {**_SHARED, "num_fewshot": 1}})
    (tmp_path / "qa" / "utils.py").write_text((tmp_path / "qa" / "utils.py").read_text() + "EDITED = 1\n")
    assert rescore_cli(spec, tmp_path / "runs", tmp_path / "r0") == 0  # the requests are the current ones: re-scored
    reverse_fewshot_pool(monkeypatch)
    with pytest.raises(StaleGenerationsError) as exc:
        rescore_cli(spec, tmp_path / "runs", tmp_path / "r")
    (line,) = str(exc.value).splitlines()
    assert line.startswith("standard/nq_oracle_gold/seed1: ") and "(doc 0: arguments[0][0] " in line


def test_unchanged_task_code_reads_no_data(finished, tmp_path, monkeypatch):
    """A cell read from its own folder is not rebuilt: the check stays data-free."""
    spec, runs, _ = _toy(finished, tmp_path)
    import leaderboards.rescore as rescore_mod

    def no(*_a, **_k):
        raise AssertionError("rebuilt the docs of a cell whose task code is unchanged")

    monkeypatch.setattr(rescore_mod, "rebuilt_requests", no, raising=False)
    assert rescore_cli(spec, runs, tmp_path / "r") == 0


def test_doc_difference_names_the_first_differing_field():
    from leaderboards.rescore import doc_difference

    logged = [{"doc_id": 3, "doc": {"q": "a", "ctxs": [{"id": "x", "s": 1.0}]}, "arguments": [["Q: a\nA:", {}]]}]

    def now(doc, args=None):
        return {3: {"doc": doc, "arguments": args}}

    assert doc_difference(logged, now({"q": "a", "ctxs": [{"id": "x", "s": 1.0}]})) is None
    assert doc_difference(logged, now({"q": "a", "ctxs": [{"id": "y", "s": 1.0}]})) == \
        'doc 3: ctxs[0].id "x" in the run -> "y" now'
    assert doc_difference(logged, now({"q": "a", "ctxs": [{"id": "x", "s": 1.0}, {"id": "z"}]})) == \
        'doc 3: ctxs[1] null in the run -> {"id": "z"} now'
    assert doc_difference(logged, now({"q": "a", "ctxs": [{"id": "x", "s": 1.0}]}, [["Q: b\nA:", {}]])) == \
        'doc 3: arguments[0][0] "Q: a\\nA:" in the run -> "Q: b\\nA:" now'
    long_run, long_now = "x" * 100 + "Paris" + "y" * 100, "x" * 100 + "Rome" + "y" * 100
    assert doc_difference(logged, now(logged[0]["doc"], [[long_now, {}]])) is not None
    logged[0]["arguments"] = [[long_run, {}]]
    assert doc_difference(logged, now(logged[0]["doc"], [[long_now, {}]])) == \
        f'doc 3: arguments[0][0] "...{"x" * 20}Paris{"y" * 35}..." in the run -> "...{"x" * 20}Rome{"y" * 36}..." now'
    assert doc_difference(logged, {}) == "doc 3: not built now (the task builds 0 docs for the 1 logged doc ids)"


def test_refiltered_samples_keep_the_logged_order_with_several_filters():
    """The runner writes a task's samples by doc id, each doc's filters in the task's order; with unchanged filters
    the re-filtered samples are those, in that order."""
    from leaderboards.rescore import task_for_docs

    class _Spec:
        include_path = [FIX / "tasks"]

    docs = [{"qid": f"q{i}", "question": "?", "answers": ["red"], "ctxs": [], "gold_docids": []} for i in range(3)]
    task = task_for_docs(_Spec(), "toy_qa", docs)

    class _Take:
        def __init__(self, name):
            self.name = name

        def apply(self, instances):
            for inst in instances:
                inst.filtered_resps[self.name] = inst.resps[0] if self.name == "first" else inst.resps[0].upper()

    task._filters = [_Take("first"), _Take("upper")]
    samples = [{"doc_id": i, "doc": docs[i], "arguments": [["p", {}]], "resps": [["red"]], "filter": f,
                "filtered_resps": ["red" if f == "first" else "RED"]} for i in range(3) for f in ("first", "upper")]
    assert refiltered_samples(task, samples) == samples



def test_a_models_appended_trace_is_not_compared_with_the_rebuilt_requests(tmp_path, capsys):
    """A tokrag model appends ``{"tokrag_trace": ...}`` to each request's logged arguments (``trace=true``, the
    default); the task never built it, so the old check refused every traced cell of earlier task code
    (``arguments[0][2] {"tokrag_trace": ...} in the run -> null now``)."""
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first", "trace": "tokens"}}]
    finished = finished_toy_runs(tmp_path / "f", tasks=["toy_qa"], limit=2, methods=methods)
    spec, runs = copy_toy_runs(finished, tmp_path / "c", tasks=["toy_qa"], limit=2, methods=methods)
    sample = json.loads(next(runs.glob("*/samples_toy_qa.jsonl")).read_text().splitlines()[0])
    assert "tokrag_trace" in sample["arguments"][0][-1]  # the logged request carries the trace
    utils = tmp_path / "c" / "tasks" / "toy_qa" / "utils.py"
    utils.write_text(utils.read_text() + "EDITED = 1\n")
    capsys.readouterr()
    assert rescore_cli(spec, runs, tmp_path / "r") == 0
    assert "note: standard/toy_qa/seed1: task folder changed since the run" in capsys.readouterr().out
