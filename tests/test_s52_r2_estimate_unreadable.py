"""s52 r2, review of e9e7cc4: to tell whether a dense task's retrieval run is already cached, ``run --estimate`` now
reads the task's questions (``estimate._served_from_run_cache``), and a question file it could not read ended the
estimate in a traceback, where before it printed the estimate with the index build counted: a data folder whose
NQ-oracle file is a truncated .gz gave ``EOFError: Compressed file ended before the end-of-stream marker was
reached`` (corrupt inside: ``zlib.error``), as ``tasks.data`` opens that file without ``retrieval.io.gzip_errors``.
Such a task is now counted as one whose cells may need the index, as e9e7cc4 says of anything unreadable.

No encoding and no retrieval here: the index is not cached, so the estimate looks for the run and stops at the
question file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from leaderboards.estimate import index_builds
from leaderboards.keys import _HashMemo

REPO = Path(__file__).resolve().parents[1]
TASK = "nq_oracle_dense"


def _oracle_gz() -> bytes:
    rows = "".join(json.dumps({"question": f"who is number {i}", "answers": [f"N{i}"],
                               "ctxs": [{"title": f"T{i}", "text": f"number {i} is N{i}"}]}) + "\n" for i in range(30))
    return gzip.compress(rows.encode("utf-8"), mtime=0)


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_an_unreadable_question_file_counts_the_build(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "data" / "nq_open_oracle"
    data.mkdir(parents=True)
    gz = _oracle_gz()
    (data / "nq-open-oracle.jsonl.gz").write_bytes(gz[: len(gz) // 2] if damage == "truncated"
                                                   else gz[:10] + bytes(range(7, 200)) + gz[-8:])
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"passage {i}"}) + "\n"
                              for i in range(40)), encoding="utf-8")
    spec = SimpleNamespace(include_path=[REPO / "tasks"])
    cell = SimpleNamespace(task=SimpleNamespace(task=TASK),
                           task_metadata=lambda: {"corpus": str(corpus), "data_dir": str(tmp_path / "data")})
    (b,) = index_builds(spec, [cell], _HashMemo())
    assert (b["corpus"], b["passages"], b["tasks"], b["seconds"]) == (str(corpus), 40, [TASK], 2.0)
