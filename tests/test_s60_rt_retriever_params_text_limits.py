"""s60 rt (read-through of the JSON-limit rule, retrieval.io.json_limit_error, across the leaderboard's readers): a
task's ``retriever_params`` given as JSON text (``--metadata`` style) that is valid JSON past Python's recursion or
digit limit is read as malformed text by the leaderboard's key (``leaderboards.keys.dense_encoders``) and by ``run
--estimate``'s index plan (``leaderboards.estimate.index_builds``), as the other tolerant reads of s60 j1/r1/r3 do.
Before, both caught ValueError only: nesting past the recursion limit was a RecursionError traceback out of every
leaderboard command that computes a dense cell's key (run, report, check, --estimate); the run's own check of the
task's metadata is where such a value is named."""

from __future__ import annotations

import pytest

from json_limit_helpers import BIG, DEEP, limits  # noqa: F401 (limits: an autouse fixture)
from leaderboards.keys import _HashMemo, dense_encoders

YAML = """task: rt_dense
dataset_path: json
dataset_kwargs:
  data_files:
    test: q.jsonl
output_type: generate_until
doc_to_text: "{{question}}"
doc_to_target: "{{answers[0]}}"
metadata:
  version: 1
  retriever: dense
  corpus: passages.jsonl
"""


@pytest.mark.parametrize("text", [DEEP, '{"encoder": %s}' % BIG], ids=["deep", "digits"])
def test_retriever_params_text_past_the_limits_reads_as_malformed(tmp_path, text):
    (tmp_path / "rt_dense.yaml").write_text(YAML, encoding="utf-8")
    malformed = dense_encoders("rt_dense", [tmp_path], _HashMemo(), {"retriever_params": "{"})
    assert list(malformed) == ["all-MiniLM-L6-v2"]  # the defaults, as for malformed text
    assert dense_encoders("rt_dense", [tmp_path], _HashMemo(), {"retriever_params": text}) == malformed


def test_run_estimate_plans_no_index_for_retriever_params_text_past_the_limit(tmp_path):
    import json

    from leaderboard_helpers import TOY, write_spec

    from leaderboards.estimate import estimate
    from leaderboards.spec import load_spec

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "rt_dense.yaml").write_text(YAML + f"  retriever_params: {json.dumps(DEEP)}\n", encoding="utf-8")
    spec = load_spec(write_spec(tmp_path / "s", tasks=["rt_dense"], limit=2, include=tasks,
                                methods=[{"name": "standard", "model": TOY}]))
    est = estimate(spec, tmp_path / "runs")
    assert est["index_builds"] == [] and est["cells"] == []  # nothing measured, no index planned: no traceback
