"""s51 u2 M2: the DPR and hybrid Wikipedia tasks offline were refused with the generic encoder line of
:func:`retrieval.dense.resolve_encoder` ("... or use the offline default 'all-MiniLM-L6-v2'"), wrong advice (a 384-d
MiniLM cannot query the 768-d DPR FAISS index) that named one missing download of three. They now get one line naming
the question encoder and the prebuilt indexes that are not here, with the ``tokrag retrieve ... --dry-run`` command
(:func:`retrieval.prebuilt.query_encoder_missing_error`); the local dense tasks keep the generic line.

The download plan is Pyserini's real one (asked of the retrieval worker) over an empty ``$PYSERINI_CACHE`` and an
empty Hugging Face cache; nothing is downloaded (``HF_HUB_OFFLINE=1``; URL reachability answered False)."""

from __future__ import annotations

import pytest

from retrieval import prebuilt as pb
from retrieval.dense import resolve_encoder
from retrieval.errors import OfflineError
from tasks import TASK_DIR
from tasks.precheck import check_selected_tasks

ENC = "'facebook/dpr-question_encoder-multiset-base' (about 0.44 GB; HF_HUB_OFFLINE=1 forbids its download)"
INDEXES = "the Lucene index 'wikipedia-dpr-100w' (9.18 GB) and the FAISS index 'wikipedia-dpr-100w.dpr-multi' (59.84 GB)"
TAIL = ("lists what it needs and where each goes (a copy of the question encoder in a local folder can be named as the "
        "task's retriever_params query_encoder)")


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """Empty Pyserini, Hugging Face and run caches, the hub offline, no URL reachable."""
    import huggingface_hub.constants as hc

    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("TOKRAG_JVM_IN_PROCESS", raising=False)
    monkeypatch.setattr(pb, "url_reachable", lambda url, timeout=10.0: False)
    return {"cache_dir": str(tmp_path / "runs")}


@pytest.mark.parametrize("task, retriever, flags", [
    ("nq_open_dpr_wiki", "dpr", "--dpr"),
    ("webq_dpr_wiki", "dpr", "--dpr"),
    ("nq_open_hybrid_wiki", "hybrid", "--hybrid --alpha 1.3"),
])
def test_a_prebuilt_dpr_task_offline_names_all_that_is_missing_and_the_dry_run(manager, offline, task, retriever, flags):
    with pytest.raises(OfflineError) as err:
        check_selected_tasks(manager, [task], offline)
    msg = str(err.value)
    assert msg == (f"{retriever} retrieval over prebuilt:wikipedia-dpr-100w needs 3 downloads that are not here: the DPR "
                   f"question encoder {ENC}, {INDEXES}; `tokrag retrieve --corpus prebuilt:wikipedia-dpr-100w {flags} "
                   f"--dry-run` {TAIL}")
    assert "MiniLM" not in msg


def test_without_a_plan_only_the_encoder_is_named():
    p = {**pb.known_params("dpr"), "dense_index": "dpr-single-nq"}
    msg = str(pb.query_encoder_missing_error("wikipedia-dpr-100w", "dpr", p, None, None))
    assert msg.startswith("dpr retrieval over prebuilt:wikipedia-dpr-100w needs a download that is not here: the DPR "
                          "question encoder 'facebook/dpr-question_encoder-single-nq-base' (about 0.44 GB; "), msg
    assert "`tokrag retrieve --corpus prebuilt:wikipedia-dpr-100w --dpr --dense-index dpr-single-nq --dry-run`" in msg


def test_a_local_dense_encoder_keeps_the_generic_advice(offline):
    with pytest.raises(OfflineError, match=r"^encoder 'no-such/encoder' is neither a local folder nor reachable .* "
                                           r"or use the offline default 'all-MiniLM-L6-v2'"):
        resolve_encoder("no-such/encoder")


def test_the_retrieval_run_names_the_encoder_and_the_uncached_indexes_of_its_plan(offline):
    """``tokrag retrieve --dpr`` (retrieval.api._prebuilt_run) hashes the encoder with its download plan at hand."""
    p = pb.known_params("dpr")
    plan = {"corpus": "wikipedia-dpr-100w", "retriever": "dpr", "items": [
        {"what": "Lucene index (BM25 and the passage texts)", "name": "wikipedia-dpr-100w", "bytes": 9_177_000_000,
         "md5": "x", "cached": False},
        {"what": "FAISS flat index (DPR passage vectors)", "name": "wikipedia-dpr-100w.dpr-multi", "bytes": 1,
         "md5": "y", "cached": True}]}
    with pytest.raises(OfflineError) as err:
        pb.encoder_identity(p, plan)
    assert str(err.value).startswith(f"dpr retrieval over prebuilt:wikipedia-dpr-100w needs 2 downloads that are not "
                                     f"here: the DPR question encoder {ENC} and the Lucene index 'wikipedia-dpr-100w' "
                                     "(9.18 GB); `tokrag retrieve --corpus prebuilt:wikipedia-dpr-100w --dpr --dry-run`")
