"""s60 r3 (k1's leftover): :func:`leaderboards.keys.recorded_data_folder` reads a finished run's ``results.json``
nested past Python's recursion limit as a malformed one (None: no recorded data folder), the rule of
:func:`retrieval.io.json_limit_error`'s tolerant reads (tests/test_s60_j1_json_limits.py). Before, a RecursionError
traceback."""

from __future__ import annotations

import json

import pytest
from json_limit_helpers import DEEP, limits  # noqa: F401 (limits: an autouse fixture)


@pytest.mark.parametrize("text", [DEEP, '{"passage_identity": '], ids=["deep", "malformed"])
def test_recorded_data_folder_reads_a_deep_results_file_as_malformed(tmp_path, text):
    from leaderboards.keys import recorded_data_folder

    (tmp_path / "results.json").write_text(text, encoding="utf-8")
    assert recorded_data_folder(tmp_path, "toy_qa") is None


def test_recorded_data_folder_still_reads_a_record(tmp_path):
    from leaderboards.keys import recorded_data_folder

    data = tmp_path / "data"
    rec = {"files": {"nq_open/q.jsonl": {"path": f"{data}/nq_open/q.jsonl"}}}
    (tmp_path / "results.json").write_text(json.dumps({"configs": {"toy_qa": {"metadata": {"tokrag_data": rec}}}}),
                                           encoding="utf-8")
    assert recorded_data_folder(tmp_path, "toy_qa") == data
