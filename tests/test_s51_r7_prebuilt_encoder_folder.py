"""s51 r7, review of 857dcd3: a dpr/hybrid request whose ``query_encoder`` names a local folder that is not there
was told it "needs a download that is not here: the DPR question encoder '/models/dpr-q' (about 0.44 GB;
HF_HUB_OFFLINE=1 forbids its download)": a path is no hub id and cannot be downloaded. The line now says that the
folder does not exist, and still names the prebuilt indexes of the plan that are not cached."""

from __future__ import annotations

from retrieval import prebuilt as pb

PLAN = {"corpus": "wikipedia-dpr-100w", "retriever": "dpr", "items": [
    {"what": "Lucene index (BM25 and the passage texts)", "name": "wikipedia-dpr-100w", "bytes": 9_177_000_000,
     "md5": "x", "cached": False},
    {"what": "FAISS flat index (DPR passage vectors)", "name": "wikipedia-dpr-100w.dpr-multi", "bytes": 59_840_000_000,
     "md5": "y", "cached": True}]}
TAIL = ("lists what it needs and where each goes (a copy of the question encoder in a local folder can be named as the "
        "task's retriever_params query_encoder)")


def test_a_missing_encoder_folder_is_not_called_a_download(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    p = {**pb.known_params("dpr"), "query_encoder": "/models/dpr-q"}
    cmd = "`tokrag retrieve --corpus prebuilt:wikipedia-dpr-100w --dpr --query-encoder /models/dpr-q --dry-run`"
    assert str(pb.query_encoder_missing_error("wikipedia-dpr-100w", "dpr", p, PLAN)) == (
        "dpr retrieval over prebuilt:wikipedia-dpr-100w: its DPR question encoder folder '/models/dpr-q' (the "
        "query_encoder given) does not exist; it also needs a download that is not here: the Lucene index "
        f"'wikipedia-dpr-100w' (9.18 GB); {cmd} {TAIL}")
    assert str(pb.query_encoder_missing_error("wikipedia-dpr-100w", "dpr", p, None)) == (
        "dpr retrieval over prebuilt:wikipedia-dpr-100w: its DPR question encoder folder '/models/dpr-q' (the "
        f"query_encoder given) does not exist; {cmd} {TAIL}")
    # a hub id keeps the download line
    hub = str(pb.query_encoder_missing_error("wikipedia-dpr-100w", "dpr", pb.known_params("dpr"), PLAN))
    assert hub.startswith("dpr retrieval over prebuilt:wikipedia-dpr-100w needs 2 downloads that are not here: the DPR "
                          "question encoder 'facebook/dpr-question_encoder-multiset-base' (about 0.44 GB; HF_HUB_OFFLINE=1 "
                          "forbids its download) and the Lucene index 'wikipedia-dpr-100w' (9.18 GB); "), hub
