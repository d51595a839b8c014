"""s59 a1: a leaderboard cell is keyed by the local files lm-eval's own loader reads for its task, and by the data
files beside its YAML.

A user task of lm-eval's standard form ``dataset_path: json`` + ``dataset_kwargs: {data_files: ...}`` (its questions
in a local JSON Lines file) was keyed by its YAML (the path string), the data folder and the code, never by the file's
content: after an edit of the file (here the answers, at the same size and mtime) ``leaderboard run`` found the cell
finished and kept its old EM (1.0) where the same spec on a fresh runs folder scores 0.0.
:func:`leaderboards.keys.lm_eval_dataset_paths` names those files; :func:`leaderboards.keys.task_data_files` keys them.
Likewise a user task whose own loader (``custom_dataset: !function utils.load_file``) reads ``questions.jsonl`` beside
its YAML was keyed by the YAML and code alone; the folder's data files are keyed now
(:func:`leaderboards.keys.task_folder_data_files`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, TOY, write_spec

from leaderboards import keys
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec

GOLD = ["red", "blue", "green", "amber"]


def _rows(answers: list[str]) -> list[dict]:
    rows = []
    for i, gold in enumerate(GOLD):
        ctxs = [{"docid": f"g{i}", "title": f"T{i}", "text": f"The colour of thing {i} is {gold}.", "score": 2.0, "rank": 1},
                {"docid": f"d{i}", "title": f"D{i}", "text": "filler", "score": 1.0, "rank": 2}]
        rows.append({"qid": f"q{i}", "question": f"What is the colour of thing {i}?", "answers": [answers[i]], "ctxs": ctxs,
                     "gold_docids": [f"g{i}"]})
    return rows


def _write_rows(path: Path, answers: list[str]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows(answers)), encoding="utf-8")


YAML = """task: {task}
dataset_path: {dataset_path}
{kwargs}test_split: test
output_type: generate_until
doc_to_text: "{{% for c in ctxs %}}Passage {{{{loop.index}}}}: {{{{c.text}}}}\\n{{% endfor %}}Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answers[0]}}}}"
generation_kwargs: {{until: ["\\n"], max_gen_toks: 8, do_sample: false}}
process_results: !function utils.process_results
metric_list:
  - {{metric: em, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1.0}}
"""


def _task_folder(tmp_path: Path, task: str, dataset_path: str, kwargs: str) -> Path:
    tasks = tmp_path / "tasks" / task
    tasks.mkdir(parents=True)
    shutil.copy(FIX / "tasks" / "toy_qa" / "utils.py", tasks / "utils.py")
    (tasks / f"{task}.yaml").write_text(YAML.format(task=task, dataset_path=dataset_path, kwargs=kwargs), encoding="utf-8")
    return tmp_path / "tasks"


def _em(runs: Path, task: str) -> dict[str, float]:
    out = {}
    for p in runs.glob("*/results*.json"):
        d = json.loads(p.read_text(encoding="utf-8"))
        if "results" in d:
            out[p.parent.name] = d["results"][task]["em,none"]
    return out


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))


def test_edited_data_files_file_is_not_reused(tmp_path, cache):
    data = tmp_path / "q.jsonl"
    _write_rows(data, GOLD)
    tasks = _task_folder(tmp_path, "toy_json", "json", f"dataset_kwargs:\n  data_files:\n    test: {data}\n")
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    spec_path = write_spec(tmp_path / "spec", tasks=["toy_json"], include=tasks, limit=4, methods=methods)

    run_spec(load_spec(spec_path), tmp_path / "runs", progress=False)
    first = _em(tmp_path / "runs", "toy_json")
    assert list(first.values()) == [1.0]  # ToyLM 'first' answers the top passage: the gold answer

    st = data.stat()
    _write_rows(data, ["xxx", "xxxx", "xxxxx", "xxxxx"])  # other answers, same size
    # the mtime one second on: HF datasets' own cache of a local data file is keyed by its mtime alone (the report of
    # s59 a1), so with the mtime put back lm-eval would read the old rows whatever tokrag's key says
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert data.stat().st_size == st.st_size

    run_spec(load_spec(spec_path), tmp_path / "runs", progress=False)
    again = _em(tmp_path / "runs", "toy_json")
    run_spec(load_spec(spec_path), tmp_path / "fresh", progress=False)
    fresh = _em(tmp_path / "fresh", "toy_json")
    assert list(fresh.values()) == [0.0]
    new = {k: v for k, v in again.items() if k not in first}
    assert new == fresh  # a new run folder with the fresh numbers (was: none, the old EM 1.0 kept)


def test_key_follows_the_file_at_same_size_and_mtime(tmp_path, cache):
    data = tmp_path / "q.jsonl"
    _write_rows(data, GOLD)
    tasks = _task_folder(tmp_path, "toy_json", "json", f"dataset_kwargs:\n  data_files:\n    test: {data}\n")
    spec = load_spec(write_spec(tmp_path / "spec", tasks=["toy_json"], include=tasks, limit=4))
    before = keys.cell_keys(spec)
    assert before[0][2]["task_data_files"] == {str(data.resolve()): keys._HashMemo().sha(data)}
    st = data.stat()
    _write_rows(data, ["xxx", "xxxx", "xxxxx", "xxxxx"])
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = keys.cell_keys(spec)
    assert (data.stat().st_size, data.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert [k for _, k, _ in after] != [k for _, k, _ in before]
    assert all(a != b for (_, a, _), (_, b, _) in zip(after, before))


def test_data_files_forms(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "parts").mkdir()
    for n in ("p2.jsonl", "p1.jsonl"):
        (tmp_path / "parts" / n).write_text("{}\n")
    chain = [(tmp_path / "t.yaml", {"dataset_path": "json", "dataset_kwargs": {
        "data_files": {"test": "a.jsonl", "validation": ["parts/*.jsonl", "https://example.org/x.jsonl"],
                       "train": "missing.jsonl"}}})]
    assert keys.lm_eval_dataset_paths(chain) == [tmp_path / "a.jsonl", tmp_path / "parts" / "p1.jsonl",
                                                 tmp_path / "parts" / "p2.jsonl"]


def test_local_dataset_folder_and_data_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ds = tmp_path / "ds"
    (ds / "sub").mkdir(parents=True)
    (ds / "sub" / "test.jsonl").write_text("{}\n")
    (tmp_path / "test.jsonl").write_text("{}\n")  # the working directory's: not what datasets reads here
    chain = [(tmp_path / "t.yaml", {"dataset_path": str(ds), "dataset_kwargs": {"data_dir": "sub",
                                                                                "data_files": {"test": "test.jsonl"}}})]
    assert keys.lm_eval_dataset_paths(chain) == [ds, ds / "sub", ds / "sub" / "test.jsonl"]


def test_hub_dataset_relative_paths_are_the_hubs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.jsonl").write_text("{}\n")
    chain = [(tmp_path / "t.yaml", {"dataset_path": "someone/qa", "dataset_kwargs": {"data_files": "data/test.jsonl"}})]
    assert keys.lm_eval_dataset_paths(chain) == []
    chain = [(tmp_path / "t.yaml", {"dataset_path": "someone/qa",
                                    "dataset_kwargs": {"data_files": str(tmp_path / "data" / "test.jsonl")}})]
    assert keys.lm_eval_dataset_paths(chain) == [tmp_path / "data" / "test.jsonl"]


def test_included_dataset_kwargs_and_own_override(tmp_path):
    (tmp_path / "base.jsonl").write_text("{}\n")
    (tmp_path / "own.jsonl").write_text("{}\n")
    base = (tmp_path / "_base", {"dataset_path": "json", "dataset_kwargs": {"data_files": str(tmp_path / "base.jsonl")}})
    assert keys.lm_eval_dataset_paths([(tmp_path / "t.yaml", {"task": "t"}), base]) == [tmp_path / "base.jsonl"]
    own = (tmp_path / "t.yaml", {"dataset_kwargs": {"data_files": str(tmp_path / "own.jsonl")}})
    assert keys.lm_eval_dataset_paths([own, base]) == [tmp_path / "own.jsonl"]


def test_tasks_without_dataset_files_key_as_before():
    """The toy fixture tasks (custom_dataset) and the built-in tasks name no such file: no task_data_files."""
    memo = keys._HashMemo()
    assert keys.task_data_files("toy_qa", [FIX / "tasks"], memo) == {}
    assert keys.task_data_files("nq_oracle_bm25", [], memo) == {}


LOAD_FILE = """

def load_file(**kwargs) -> datasets.DatasetDict:
    import json
    from pathlib import Path
    rows = [json.loads(line) for line in (Path(__file__).parent / "questions.jsonl").read_text().splitlines()]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})
"""


def test_data_file_beside_the_task_yaml_is_keyed(tmp_path, cache):
    folder = tmp_path / "tasks" / "toy_file"
    folder.mkdir(parents=True)
    (folder / "utils.py").write_text((FIX / "tasks" / "toy_qa" / "utils.py").read_text() + LOAD_FILE)
    (folder / "toy_file.yaml").write_text((FIX / "tasks" / "toy_qa" / "toy_qa.yaml").read_text()
                                          .replace("task: toy_qa", "task: toy_file").replace("utils.load_clean", "utils.load_file"))
    data = folder / "questions.jsonl"
    _write_rows(data, GOLD)
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    spec_path = write_spec(tmp_path / "spec", tasks=["toy_file"], include=tmp_path / "tasks", limit=4, methods=methods)
    mat = keys.cell_keys(load_spec(spec_path))[0][2]
    assert mat["task_data_files"] == {str(data.resolve()): keys._HashMemo().sha(data)}

    run_spec(load_spec(spec_path), tmp_path / "runs", progress=False)
    first = _em(tmp_path / "runs", "toy_file")
    assert list(first.values()) == [1.0]
    st = data.stat()
    _write_rows(data, ["xxx", "xxxx", "xxxxx", "xxxxx"])  # same size, mtime put back
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    run_spec(load_spec(spec_path), tmp_path / "runs", progress=False)
    again = _em(tmp_path / "runs", "toy_file")
    new = {k: v for k, v in again.items() if k not in first}
    assert list(new.values()) == [0.0]  # a new run folder with the edited answers' EM (was: none, 1.0 kept)

