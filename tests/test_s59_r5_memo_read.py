"""s59 r5, review of f1's dbbf3c0 (lm-eval reads a task's local data file by its content): every lm-eval task download
without its own ``custom_dataset`` (lm-eval's hub tasks: each of mmlu's 57) read the whole hash memo file of
``$TOKRAG_CACHE_DIR`` (megabytes: ~0.1 s a task on a used cache) though it hashed no local data file; the memo is now
read at the first local data file only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX

GOLD = ["red", "blue"]


def _write_rows(path: Path, colours: list[str]) -> None:
    rows = [{"qid": f"q{i}", "question": f"What is the colour of thing {i}?", "answers": [c],
             "ctxs": [{"docid": f"g{i}", "title": f"T{i}", "text": f"The colour of thing {i} is {c}.", "score": 2.0,
                       "rank": 1}], "gold_docids": [f"g{i}"]} for i, c in enumerate(colours)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


YAML = """task: {name}
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
def env(tmp_path, monkeypatch):
    """A fresh TOKRAG_CACHE_DIR, datasets cache and lm-eval request cache under ``tmp_path``; offline."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    import datasets.config
    import lm_eval.caching.cache

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", Path(tmp_path / "hf-datasets"))
    monkeypatch.setattr(lm_eval.caching.cache, "PATH", str(tmp_path / "lm-eval-requests"))  # never the venv's
    return tmp_path


def _task(root: Path, name: str, data: str) -> Path:
    folder = root / "tasks" / name
    folder.mkdir(parents=True)
    shutil.copy(FIX / "tasks" / "toy_qa" / "utils.py", folder / "utils.py")
    (folder / f"{name}.yaml").write_text(YAML.format(name=name, data=data), encoding="utf-8")
    return root / "tasks"


def _evaluate(tasks: Path, names: list[str], **kwargs):
    import lm_eval
    from lm_eval.tasks import TaskManager

    from tests.leaderboard_fixtures.toy_lm import ToyLM

    lm = ToyLM(pretrained=str(FIX / "toy_weights.bin"), mode="first", k=3)
    manager = TaskManager(include_path=str(tasks), include_defaults=False)
    return lm_eval.simple_evaluate(model=lm, tasks=names, task_manager=manager, limit=2, log_samples=True, **kwargs)


class _Counting:
    """Counts the HashMemo objects made (each reads the whole memo file)."""

    def __init__(self, monkeypatch):
        import retrieval.io

        self.made = 0
        real = retrieval.io.HashMemo
        counter = self

        class HashMemo(real):
            def __init__(self, *args, **kwargs):
                counter.made += 1
                super().__init__(*args, **kwargs)

        monkeypatch.setattr(retrieval.io, "HashMemo", HashMemo)


def test_the_hash_memo_is_read_only_for_a_local_data_file(env, monkeypatch):
    from retrieval.io import HASH_MEMO_FILE, sha256_file
    from tokrag_model._local_data_files import content_keys, content_origin

    counting = _Counting(monkeypatch)
    with content_keys():  # hub, remote, archive and missing files: datasets' own identity, no memo read
        assert content_origin("hf://datasets/someone/qa@abc/test.jsonl") is None
        assert content_origin("https://example.org/q.jsonl") is None
        assert content_origin(str(env / "missing.jsonl")) is None
    assert counting.made == 0  # was 1: every download read the memo file
    assert not (env / "cache" / HASH_MEMO_FILE).exists()
    data = env / "q.jsonl"
    _write_rows(data, GOLD)
    with content_keys():
        assert content_origin(str(data)) == ("sha256=" + sha256_file(data),)
        assert content_origin(str(data)) == ("sha256=" + sha256_file(data),)
    assert counting.made == 1  # one memo for the download, saved at its end
    saved = json.loads((env / "cache" / HASH_MEMO_FILE).read_text(encoding="utf-8"))
    assert saved[str(data.resolve())][-1] == sha256_file(data)


def test_a_real_download_reads_the_memo_once_and_only_for_a_local_file(env, monkeypatch):
    from retrieval.io import HASH_MEMO_FILE, sha256_file

    data = env / "q.jsonl"
    _write_rows(data, GOLD)
    tasks = _task(env, "toy_json", str(data))
    counting = _Counting(monkeypatch)
    out = _evaluate(tasks, ["toy_json"])
    assert out["results"]["toy_json"]["em,none"] == 1.0
    assert counting.made == 1
    saved = json.loads((env / "cache" / HASH_MEMO_FILE).read_text(encoding="utf-8"))
    assert saved[str(data.resolve())][-1] == sha256_file(data)
    out = _evaluate(FIX / "tasks", ["toy_qa"])  # its own custom_dataset loader: no download hook, no memo read
    assert "em,none" in out["results"]["toy_qa"]
    assert counting.made == 1


def test_one_memo_read_for_the_downloads_of_a_process(env, monkeypatch):
    """Each download read the memo file again (a group of 20 local json tasks, warm: ~1 s, ~0.1 s without the memo);
    the process now keeps one memo per memo file (its entries are checked against each file's stamp when served)."""
    from retrieval.io import HASH_MEMO_FILE, sha256_file

    files = []
    for i, colours in enumerate([GOLD, ["tan", "gold"]]):
        files.append(env / f"q{i}.jsonl")
        _write_rows(files[-1], colours)
        _task(env, f"toy_json{i}", str(files[-1]))
    counting = _Counting(monkeypatch)
    out = _evaluate(env / "tasks", ["toy_json0", "toy_json1"])
    assert [out["results"][f"toy_json{i}"]["em,none"] for i in range(2)] == [1.0, 1.0]
    assert counting.made == 1  # was 2: one memo read per download
    saved = json.loads((env / "cache" / HASH_MEMO_FILE).read_text(encoding="utf-8"))
    assert [saved[str(f.resolve())][-1] for f in files] == [sha256_file(f) for f in files]
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(env / "other cache"))  # another memo file: read and saved there
    out = _evaluate(env / "tasks", ["toy_json1"])
    assert [s["target"] for s in out["samples"]["toy_json1"]] == ["tan", "gold"]
    assert counting.made == 2
    other = json.loads((env / "other cache" / HASH_MEMO_FILE).read_text(encoding="utf-8"))
    assert list(other) == [str(files[1].resolve())] and other[str(files[1].resolve())][-1] == sha256_file(files[1])
