"""s59 f1: lm-eval reads the rows of a task's local data file as the file holds them now.

A task of lm-eval's standard form ``dataset_path: json`` + ``dataset_kwargs: {data_files: ...}`` is loaded by
``datasets.load_dataset``, whose cache knew a local data file by its mtime alone: after an edit with the mtime put back
(``cp -p``, ``rsync -a``, tar; here ``os.utime``) lm-eval read the old rows, in a plain ``simple_evaluate`` run and in a
leaderboard cell that re-ran because its key holds the file's SHA-256. While lm-eval's ``ConfigurableTask.download``
runs, a local data file is now known to ``datasets`` by its SHA-256 (:mod:`tokrag_model._local_data_files`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, TOY, write_spec

GOLD = ["red", "blue", "green", "amber"]
OTHER = ["xxx", "xxxx", "xxxxx", "xxxxx"]  # other answers: the top passage no longer gives them


def _write_rows(path: Path, answers: list[str]) -> None:
    rows = []
    for i, gold in enumerate(GOLD):
        ctxs = [{"docid": f"g{i}", "title": f"T{i}", "text": f"The colour of thing {i} is {gold}.", "score": 2.0,
                 "rank": 1}]
        rows.append({"qid": f"q{i}", "question": f"What is the colour of thing {i}?", "answers": [answers[i]],
                     "ctxs": ctxs, "gold_docids": [f"g{i}"]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _edit_keeping_stamp(path: Path, answers: list[str]) -> None:
    """Rewrite ``path`` with ``answers`` at the same size, its atime and mtime put back (as ``cp -p`` would). Rewritten
    until its ctime differs from the one before (a kernel with coarse timestamps gives a write within one clock tick
    of the last the same ctime, and the hash memo would then rightly serve the old hash: retrieval.io.HashMemo's
    documented residual, not what these tests are about)."""
    st = path.stat()
    _write_rows(path, answers)
    while path.stat().st_ctime_ns == st.st_ctime_ns:
        _write_rows(path, answers)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


YAML = """task: toy_json
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{% for c in ctxs %}}Passage {{{{loop.index}}}}: {{{{c.text}}}}\\n{{% endfor %}}Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answers[0]}}}}"
generation_kwargs: {{until: ["\\n"], max_gen_toks: 8, do_sample: false}}
process_results: !function utils.process_results
metric_list:
  - {{metric: em, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1.0}}
"""


@pytest.fixture
def task(tmp_path, monkeypatch):
    """``(tasks folder, data file)``: the toy_json task over a local JSON Lines file of GOLD answers."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", Path(tmp_path / "hf-datasets"))
    data = tmp_path / "q.jsonl"
    _write_rows(data, GOLD)
    folder = tmp_path / "tasks" / "toy_json"
    folder.mkdir(parents=True)
    shutil.copy(FIX / "tasks" / "toy_qa" / "utils.py", folder / "utils.py")
    (folder / "toy_json.yaml").write_text(YAML.format(data=data), encoding="utf-8")
    return tmp_path / "tasks", data


def _simple_em(tasks: Path) -> tuple[float, list[str]]:
    import lm_eval
    from lm_eval.tasks import TaskManager

    from tests.leaderboard_fixtures.toy_lm import ToyLM

    lm = ToyLM(pretrained=str(FIX / "toy_weights.bin"), mode="first", k=3)
    manager = TaskManager(include_path=str(tasks), include_defaults=False)
    out = lm_eval.simple_evaluate(model=lm, tasks=["toy_json"], task_manager=manager, limit=4, log_samples=True)
    targets = [s["target"] for s in out["samples"]["toy_json"]]
    return out["results"]["toy_json"]["em,none"], sorted(targets)


def test_simple_evaluate_reads_the_edited_rows(task):
    tasks, data = task
    assert _simple_em(tasks) == (1.0, sorted(GOLD))  # ToyLM 'first' answers the top passage: the gold answer
    _edit_keeping_stamp(data, OTHER)
    assert _simple_em(tasks) == (0.0, sorted(OTHER))  # was (1.0, GOLD): the old rows from datasets' cache


def test_leaderboard_cell_reruns_on_the_edited_rows(task, tmp_path):
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec

    tasks, data = task
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}]
    spec_path = write_spec(tmp_path / "spec", tasks=["toy_json"], include=tasks, limit=4, methods=methods)

    def em() -> dict[str, float]:
        return {p.parent.name: json.loads(p.read_text(encoding="utf-8"))["results"]["toy_json"]["em,none"]
                for p in (tmp_path / "runs").glob("*/results.json")}

    run_spec(load_spec(spec_path), tmp_path / "runs", progress=False)
    first = em()
    assert list(first.values()) == [1.0]
    _edit_keeping_stamp(data, OTHER)
    run_spec(load_spec(spec_path), tmp_path / "runs", progress=False)
    new = {k: v for k, v in em().items() if k not in first}
    assert list(new.values()) == [0.0]  # the re-run cell scored the edited rows (was 1.0: the old rows)


def test_content_identity_outside_and_inside_a_download(task, tmp_path):
    """datasets' own identity outside an lm-eval task download (mtime); inside it the file's SHA-256, so a touch alone
    keeps the built rows and a remote or missing file keeps datasets' answer."""
    import datasets.data_files
    from lm_eval.api.task import ConfigurableTask  # noqa: F401  (installs the patch)

    from retrieval.io import sha256_file
    from tokrag_model._local_data_files import content_keys

    _, data = task
    origin = datasets.data_files._get_single_origin_metadata
    assert getattr(origin, "_tokrag", False)
    assert origin(str(data)) == (str(data.stat().st_mtime),)  # no download running: datasets' mtime
    with content_keys():
        assert origin(str(data)) == ("sha256=" + sha256_file(data),)
        assert origin("file://" + str(data)) == ("sha256=" + sha256_file(data),)
        with pytest.raises(FileNotFoundError):  # not a file here: datasets' own lookup, which names it
            origin(str(tmp_path / "missing.jsonl"))
    _edit_keeping_stamp(data, OTHER)
    with content_keys():
        assert origin(str(data)) == ("sha256=" + sha256_file(data),)
    assert origin(str(data)) == (str(data.stat().st_mtime),)


def test_local_data_file():
    from tokrag_model._local_data_files import local_data_file

    here = str(Path(__file__).resolve())
    assert local_data_file(here) == here
    assert local_data_file("file://" + here) == here
    assert local_data_file("https://example.org/q.jsonl") is None
    assert local_data_file("hf://datasets/someone/qa@abc/test.jsonl") is None
    assert local_data_file(f"zip://q.jsonl::{here}") is None  # a member of an archive: datasets' identity
    assert local_data_file(here + ".missing") is None


def test_touch_alone_reuses_the_built_rows(task, tmp_path):
    """The rows are known by content: an mtime change alone builds nothing again (one cache folder), an edit does."""
    tasks, data = task
    _simple_em(tasks)
    built = sorted(p.name for p in (tmp_path / "hf-datasets" / "json").iterdir())
    assert len(built) == 1
    st = data.stat()
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns + 7_000_000_000))
    assert _simple_em(tasks) == (1.0, sorted(GOLD))
    assert sorted(p.name for p in (tmp_path / "hf-datasets" / "json").iterdir()) == built
    _edit_keeping_stamp(data, OTHER)
    assert _simple_em(tasks) == (0.0, sorted(OTHER))
    assert len(list((tmp_path / "hf-datasets" / "json").iterdir())) == 2
