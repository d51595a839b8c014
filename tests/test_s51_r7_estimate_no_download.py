"""s51 r7, review of 232e4db: ``run --estimate`` found the dense index folder of a task by resolving its passage
encoder (:func:`retrieval.dense.dense_index_dir` hashes its weights), and :func:`retrieval.dense.resolve_encoder`
downloads a hub encoder that is not in the local Hugging Face cache unless HF_HUB_OFFLINE is set: the estimate,
which runs nothing, downloaded the encoder (or waited on the network without one). It now resolves only encoders
that are here; a hub encoder not downloaded yet is counted as an index to build (folder None), as the first cell
downloads it and then encodes the corpus.

huggingface_hub.snapshot_download is replaced by a stub that records its calls and has nothing cached: nothing is
fetched either way."""

from __future__ import annotations

import json
import shutil

import huggingface_hub
from huggingface_hub.errors import LocalEntryNotFoundError

from leaderboards.estimate import estimate, render
from leaderboards.spec import load_spec
from tests.leaderboard_helpers import FIX, write_spec

ENC = "sentence-transformers/paraphrase-MiniLM-L3-v2"


def test_an_encoder_not_downloaded_is_not_downloaded_by_the_estimate(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    calls = []

    def snapshot_download(repo_id, *args, local_files_only=False, **kwargs):
        calls.append((repo_id, local_files_only))
        if local_files_only:
            raise LocalEntryNotFoundError(f"{repo_id} is not in the cache")
        raise AssertionError(f"downloads {repo_id}")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"passage {i}"}) + "\n"
                              for i in range(40)), encoding="utf-8")
    tasks = tmp_path / "tasks"
    shutil.copytree(FIX / "tasks", tasks, ignore=shutil.ignore_patterns("__pycache__"))
    y = tasks / "toy_qa" / "toy_qa.yaml"
    y.write_text(y.read_text().replace("metadata: {version: 1.0}", "metadata: {version: 1.0, retriever: dense, corpus: "
                                       f"{corpus}, retriever_params: {{encoder: {ENC}}}}}"))
    spec = load_spec(write_spec(tmp_path / "s", include=tasks, tasks=["toy_qa"], limit=3))
    est = estimate(spec, tmp_path / "runs", fallback=100.0)
    assert calls and all(local for _, local in calls), calls
    (b,) = est["index_builds"]
    assert (b["corpus"], b["passages"], b["encoder"], b["folder"], b["tasks"], b["seconds"]) == (
        str(corpus), 40, ENC, None, ["toy_qa"], None)
    assert b["command"] == f"tokrag index build --corpus {corpus} --dense --encoder {ENC}"
    assert (f"the first cell over it encodes the corpus before its questions (the encoder is not downloaded yet: that "
            f"cell downloads it first); or build it first: tokrag index build --corpus {corpus} --dense --encoder {ENC}"
            ) in render(est)
