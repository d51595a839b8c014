"""Hit counts have an upper bound: Lucene and Pyserini take them as a Java int, so anything above 2**31 - 1 is
refused in one line naming the argument before Java starts (the CLI's --hits and --depth, the api's k)."""

from __future__ import annotations

import pytest

from retrieval import Corpus, Passage
from retrieval.errors import JAVA_INT_MAX, ConfigError

CORPUS = Corpus([Passage("d1", "Paris", "Paris is the capital of France."),
                 Passage("d2", "Berlin", "Berlin is the capital of Germany.")], name="two")
PASSAGES = {"q": [{"docid": "d1", "title": "Paris", "text": "Paris is the capital of France."}]}


@pytest.fixture
def no_java(monkeypatch):
    """Fail the test if a search or a scoring would start (in this process or in the Java worker)."""
    import retrieval.api as api

    def reached(*a, **kw):
        raise AssertionError("reached the search: the bad k was not refused first")

    monkeypatch.setattr(api, "java_worker", reached)
    monkeypatch.setattr(api, "_bm25_passage_scores", reached)
    monkeypatch.setattr(api, "_bm25_hits", reached)


@pytest.mark.parametrize("retriever", ["bm25", "dense", "hybrid"])
@pytest.mark.parametrize(("k", "message"), [
    (JAVA_INT_MAX + 1, r"^k=2147483648: must be at most 2147483647 \(Lucene and Pyserini take it as a Java int\)$"),
    (0, r"^k=0: k must be an integer >= 1 \(the number of passages per query\)$"),
    (True, r"^k=True: k must be an integer >= 1 \(the number of passages per query\)$"),
])
def test_score_passages_refuses_the_k_retrieve_refuses(no_java, tmp_path, retriever, k, message):
    """score_passages said 'ConfigError: as retrieve' but took any k (k=2**31 scored over BM25, the hybrid
    failed inside the fusion's component search)."""
    from retrieval.api import retrieve, score_passages

    with pytest.raises(ConfigError, match=message):
        score_passages(CORPUS, {"q": "capital of France"}, PASSAGES, retriever, k=k, cache_dir=tmp_path)
    with pytest.raises(ConfigError, match=message):  # the same line as retrieve's
        retrieve(CORPUS, {"q": "capital of France"}, retriever, k=k, cache_dir=tmp_path)


@pytest.mark.parametrize("flag", ["--hits", "--depth"])
@pytest.mark.parametrize("value", [str(JAVA_INT_MAX + 1), "99999999999999999999"])
def test_cli_refuses_hits_above_the_java_int(no_java, tmp_path, capsys, flag, value):
    from tokrag_model.cli import main as tokrag

    argv = ["retrieve", "--corpus", "nq-dpr-1k", "--topics", "nq-oracle:2", "--output", str(tmp_path / "o.trec"),
            "--hybrid" if flag == "--depth" else "--bm25", flag, value, "--cache-dir", str(tmp_path)]
    assert tokrag(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tokrag retrieve: error: {flag} {value}: must be at most 2147483647 "
                   "(Lucene and Pyserini take it as a Java int)"]
