"""``tokrag retrieve eval --run <TREC run>`` without ``--corpus`` names what scores the run (s59 n3, new-user trial).

Following the README's "Retrieval on its own" (``tokrag retrieve --corpus passages.jsonl --bm25 --topics q.jsonl
--hits 5 --output myruns/bm25.trec``), the natural next step ``tokrag retrieve eval --run myruns/bm25.trec --topics
q.jsonl`` said only "a TREC run needs --corpus to score answer recall (passage texts)", though ``tokrag retrieve`` had
written, beside the run, the ctxs JSONL that carries the passages and a ``.meta.json`` naming the corpus. The line now
names the run, the corpus its metadata records (when the metadata describes this run) and the ctxs JSONL (when there).
"""

from __future__ import annotations

import json

import pytest

from tokrag_model.cli import main

HEAD = "tokrag retrieve: error: --run {run}: a TREC run needs --corpus to score answer recall (passage texts)"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A real ``tokrag retrieve`` run (BM25 over two passages) into ``myruns/bm25.trec``."""
    root = tmp_path_factory.mktemp("trec")
    (root / "passages.jsonl").write_text(
        json.dumps({"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}) + "\n"
        + json.dumps({"id": "p2", "title": "Hamlet", "text": "Hamlet was written by Shakespeare."}) + "\n")
    (root / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "what is the capital of france",
                                              "answers": ["Paris"], "gold_docids": ["p1"]}) + "\n")
    return root


@pytest.fixture
def files(made, tmp_path, monkeypatch):
    import shutil

    for name in ("passages.jsonl", "q.jsonl"):
        shutil.copy(made / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["retrieve", "--corpus", "passages.jsonl", "--bm25", "--topics", "q.jsonl", "--hits", "2",
                 "--output", "myruns/bm25.trec"]) == 0
    return tmp_path


def test_the_line_names_the_recorded_corpus_and_the_ctxs_beside(files, capsys):
    capsys.readouterr()
    assert main(["retrieve", "eval", "--run", "myruns/bm25.trec", "--topics", "q.jsonl", "--json"]) == 2
    assert capsys.readouterr().err == (
        HEAD.format(run="myruns/bm25.trec") + "; it was retrieved from corpus 'passages.jsonl' (bm25.trec.meta.json): "
        "pass that corpus as --corpus, or score the ctxs JSONL written with it (--run myruns/bm25.ctxs.jsonl), which "
        "carries the passages\n")
    # both ways it names score the run, with the same figures
    assert main(["retrieve", "eval", "--run", "myruns/bm25.ctxs.jsonl", "--topics", "q.jsonl", "--json"]) == 0
    by_ctxs = json.loads(capsys.readouterr().out)
    assert main(["retrieve", "eval", "--run", "myruns/bm25.trec", "--corpus", "passages.jsonl", "--topics", "q.jsonl",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_ctxs
    assert by_ctxs["answer_recall@1"] == 1.0 and by_ctxs["gold@1"] == 1.0 and by_ctxs["num_queries"] == 1


def test_an_edited_run_is_not_described_by_its_metadata(files, capsys):
    """The metadata's checksum no longer matches: its corpus is not named, nor the ctxs beside, which holds the
    rankings before the edit (s59 r4: it scores other rankings than the edited run's)."""
    run = files / "myruns" / "bm25.trec"
    run.write_text(run.read_text() + "q9 Q0 p2 1 1.0 edited\n")
    capsys.readouterr()
    assert main(["retrieve", "eval", "--run", "myruns/bm25.trec", "--topics", "q.jsonl", "--json"]) == 2
    assert capsys.readouterr().err == (
        HEAD.format(run="myruns/bm25.trec") + "; pass the corpus it was retrieved from as --corpus\n")


def test_a_lone_trec_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "x", "answers": ["y"]}) + "\n")
    (tmp_path / "run.trec").write_text("q1 Q0 p1 1 3.0 run\n")
    assert main(["retrieve", "eval", "--run", "run.trec", "--topics", "q.jsonl", "--json"]) == 2
    assert capsys.readouterr().err == (HEAD.format(run="run.trec")
                                       + "; pass the corpus it was retrieved from as --corpus\n")
