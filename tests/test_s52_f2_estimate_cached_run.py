"""s51 r7 left it (review of 232e4db): ``run --estimate`` counted the one-time dense index build for cells that need
no index: a cell whose retrieval run is already in the run cache reads its passages from there
(:func:`retrieval.retrieve` looks the run up before it opens any index), but with the cache's dense/ folder deleted
the estimate still said 'one-time index build (not in the cache) ...' for its task. Now a task whose run is in the
run cache, as the task would look it up, and that attaches no passage to score (noise, counterfactual, gold: those
are scored with the index) adds no build; one whose run is not cached, or that scores passages, still does.

Real retrieval, kept small: nq_open_dense (tokrag's QA loader, the data folder's NQ-open) with ``max_docs`` 4 over
a corpus of 30 passages, dense with the packaged all-MiniLM-L6-v2, computed in this process (TOKRAG_JVM_IN_PROCESS)
into an empty $TOKRAG_CACHE_DIR by the task's own loader (tasks.utils.load_qa)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

from leaderboards.estimate import index_builds
from leaderboards.keys import _HashMemo, _task_metadata

REPO = Path(__file__).resolve().parents[1]
TASK = "nq_open_dense"


def _cell(extra):
    return SimpleNamespace(task=SimpleNamespace(task=TASK), task_metadata=lambda: dict(extra))


def test_a_task_whose_run_is_cached_needs_no_index(tmp_path, monkeypatch):
    from tasks.utils import load_qa

    cache = tmp_path / "cache"
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(cache))
    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")  # dense needs no Java: no worker process
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"passage number {i} about {w}"})
                              + "\n" for i, w in enumerate(["the moon", "music", "a war", "a river", "a king"] * 6)),
                      encoding="utf-8")
    spec = SimpleNamespace(include_path=[REPO / "tasks"])
    extra = {"corpus": str(corpus), "max_docs": 4}
    plain, noisy = _cell(extra), _cell({**extra, "noise": 0.2})
    assert [b["tasks"] for b in index_builds(spec, [plain], _HashMemo())] == [[TASK]]  # nothing cached yet
    docs = load_qa(**_task_metadata(TASK, spec.include_path, _HashMemo(), extra))["test"]  # the cell's own build
    assert len(docs) == 4 and all(len(d["ctxs"]) == 5 for d in docs)
    assert (cache / "dense").is_dir() and len(list((cache / "runs").glob("dense-*/meta.json"))) == 1
    assert index_builds(spec, [plain, noisy], _HashMemo()) == []  # the index is cached

    shutil.rmtree(cache / "dense")  # the index gone, the run still cached
    assert index_builds(spec, [plain], _HashMemo()) == []
    (b,) = index_builds(spec, [plain, noisy], _HashMemo())  # noise passages are scored with the index
    assert (b["corpus"], b["passages"], b["tasks"], b["seconds"]) == (str(corpus), 30, [TASK], 1.5)

    shutil.rmtree(cache / "runs")  # nor the run: the build is counted again
    (b,) = index_builds(spec, [plain], _HashMemo())
    assert (b["corpus"], b["tasks"]) == (str(corpus), [TASK])
