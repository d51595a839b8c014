"""``tokrag retrieve --topics q.csv`` says that topics are not read from CSV (s60 n1, new-user trial).

A rag_qa_* task reads a questions file in CSV (answers and gold ids as JSON lists in their cells; tasks/README.md,
"Bring your own data"). The same file given to ``tokrag retrieve --topics`` (or ``retrieve eval --topics``), which the
README shows for "your own questions file as topics", was read as JSON Lines: ``q.csv:1: malformed JSON (Expecting
value at column 1); fix or remove the line``, which names no cause and asks for a fix of a valid CSV line. A ``.csv``
(``.csv.gz``) or ``.parquet`` topics file is now one line saying what topics are and what to write; the corpus reader
already refuses such names the same way. Following it (the rows as JSON Lines) retrieves and scores.
"""

from __future__ import annotations

import csv
import json

import pytest

from retrieval.corpus import load_queries
from retrieval.errors import DataError
from tokrag_model.cli import main

ROWS = [{"id": "q1", "question": "what is the capital of france", "answers": ["Paris"], "gold_docids": ["p1"]},
        {"id": "q2", "question": "who wrote hamlet", "answers": ["Shakespeare"], "gold_docids": ["p2"]}]


def _line(path, kind: str) -> str:
    return (f"{path}: a {kind} file; topics are JSON Lines ({{\"qid\", \"question\", \"answers\", \"gold_docids\"}}) or "
            f"TSV qid<TAB>query: write its rows as JSON Lines, answers and gold_docids as lists (a rag_qa_* task reads "
            f"a {kind} questions file; tokrag retrieve reads no {kind} topics)")


def _csv(path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "question", "answers", "gold_docids"])
        for r in ROWS:
            w.writerow([r["id"], r["question"], json.dumps(r["answers"]), json.dumps(r["gold_docids"])])


@pytest.mark.parametrize("name, kind", [("q.csv", "CSV"), ("q.CSV.gz", "CSV"), ("q.parquet", "Parquet")])
def test_a_table_file_is_named_as_such(tmp_path, name, kind):
    path = tmp_path / name
    path.write_bytes(b"id,question\nq1,who wrote hamlet\n")  # the content is not read: the name says what it is
    with pytest.raises(DataError) as err:
        load_queries(path)
    assert str(err.value) == _line(path, kind)


def test_jsonl_and_tsv_topics_are_read_as_before(tmp_path):
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "q.tsv").write_text("q1\twhat is the capital of france\n")
    assert load_queries(tmp_path / "q.jsonl") == {"q1": ROWS[0]["question"], "q2": ROWS[1]["question"]}
    assert load_queries(tmp_path / "q.tsv") == {"q1": ROWS[0]["question"]}


def test_the_cli_refuses_and_the_advice_works(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "passages.jsonl").write_text(
        json.dumps({"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}) + "\n"
        + json.dumps({"id": "p2", "title": "Hamlet", "text": "Hamlet was written by Shakespeare."}) + "\n")
    _csv(tmp_path / "q.csv")
    capsys.readouterr()
    assert main(["retrieve", "--corpus", "passages.jsonl", "--bm25", "--topics", "q.csv", "--hits", "1",
                 "--output", "myruns/bm25.trec"]) == 2
    err = capsys.readouterr().err
    assert err == f"tokrag retrieve: error: {_line('q.csv', 'CSV')}\n" and not (tmp_path / "myruns").exists()

    # the advice: the rows as JSON Lines, answers and gold ids as lists
    with open(tmp_path / "q.csv", newline="", encoding="utf-8") as f, open(tmp_path / "q.jsonl", "w") as out:
        for r in csv.DictReader(f):
            out.write(json.dumps({**r, "answers": json.loads(r["answers"]),
                                  "gold_docids": json.loads(r["gold_docids"])}) + "\n")
    assert main(["retrieve", "--corpus", "passages.jsonl", "--bm25", "--topics", "q.jsonl", "--hits", "1",
                 "--output", "myruns/bm25.trec"]) == 0
    capsys.readouterr()
    assert main(["retrieve", "eval", "--run", "myruns/bm25.ctxs.jsonl", "--topics", "q.csv", "--json"]) == 2
    assert capsys.readouterr().err == f"tokrag retrieve: error: {_line('q.csv', 'CSV')}\n"
    assert main(["retrieve", "eval", "--run", "myruns/bm25.ctxs.jsonl", "--topics", "q.jsonl", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["num_queries"], got["answer_recall@1"], got["gold@1"], got["mrr"]) == (2, 1.0, 1.0, 1.0)
