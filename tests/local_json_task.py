"""A user task of lm-eval's own form over a local JSON Lines file (``dataset_path: json`` + ``data_files``), run with
ToyLM: the shared set-up of the s59 r5 tests of tokrag_model._local_data_files (the request cache, the hash memo)."""

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
