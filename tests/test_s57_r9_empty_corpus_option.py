"""``--corpus ''`` of ``tokrag retrieve`` / ``tokrag index build`` / ``tokrag retrieve eval`` is one line naming the
option and what leaving it out does for that command (s57 r9, review of h1's 39ceffb). h1's library refusal names the
task key: ``tokrag retrieve --corpus ''`` said "corpus '' is empty ...; or leave corpus out for the task's default",
though the command has no task and without --corpus needs --index; ``retrieve eval --corpus ''`` read '' as no corpus
(a TREC run: "a TREC run needs --corpus", which was given)."""

from __future__ import annotations

import json

import pytest

from tokrag_model.cli import main

NAMES = "give a corpus name (nq-wiki-12k, nq-dpr-1k, wiki-vital), a corpus file or folder path"


@pytest.fixture
def files(tmp_path, monkeypatch):
    (tmp_path / "passages.jsonl").write_text(json.dumps({"id": "d1", "title": "Paris", "text": "Paris is in France."}) + "\n")
    (tmp_path / "topics.jsonl").write_text(json.dumps({"qid": "q1", "question": "where is Paris", "answers": ["France"],
                                                       "gold_docids": ["d1"]}) + "\n")
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 3.0 run\n")
    (tmp_path / "run.jsonl").write_text(json.dumps({"qid": "q1", "ctxs": [{"docid": "d1", "text": "Paris is in France."}]}) + "\n")
    monkeypatch.chdir(tmp_path)  # the working directory holds corpus-like files: '' must not read them
    return tmp_path


@pytest.mark.parametrize("value", ["", " "])
def test_retrieve(files, capsys, value):
    assert main(["retrieve", "--corpus", value, "--topics", "topics.jsonl", "--output", "out.trec"]) == 2
    assert capsys.readouterr().err == (f"tokrag retrieve: error: --corpus {value!r} is empty; {NAMES}, or "
                                       "prebuilt:<index>, or leave --corpus out and give --index (a BM25 index folder "
                                       "or a Pyserini prebuilt name)\n")
    assert not (files / "out.trec").exists()


def test_index_build(files, capsys):
    assert main(["index", "build", "--corpus", "", "--index", "idx"]) == 2
    assert capsys.readouterr().err == f"tokrag index: error: --corpus '' is empty; {NAMES}\n"
    assert not (files / "idx").exists()


@pytest.mark.parametrize("run", ["run.trec", "run.jsonl"])
def test_retrieve_eval(files, capsys, run):
    assert main(["retrieve", "eval", "--run", run, "--corpus", "", "--topics", "topics.jsonl", "--json"]) == 2
    assert capsys.readouterr().err == (f"tokrag retrieve: error: --corpus '' is empty; {NAMES}, or prebuilt:<index>, "
                                       "or leave --corpus out for a ctxs run (it carries its passages)\n")


def test_retrieve_eval_without_corpus_and_with_one_as_before(files, capsys):
    assert main(["retrieve", "eval", "--run", "run.jsonl", "--topics", "topics.jsonl", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"answer_recall@1": 1.0, "gold@1": 1.0, "mrr": 1.0, "num_queries": 1}
    assert main(["retrieve", "eval", "--run", "run.trec", "--corpus", "passages.jsonl", "--topics", "topics.jsonl",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"answer_recall@1": 1.0, "gold@1": 1.0, "mrr": 1.0, "num_queries": 1}
