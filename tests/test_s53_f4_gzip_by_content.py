"""A gzipped data file under a plain name (``questions.jsonl``, ``NQ-open.dev.jsonl``, ``corpus.tsv``: ``gzip -k`` then
a rename, or a download saved under the plain name) is read as its ``.gz`` twin, told by its content, as ``datasets``
tells it (s53 f4; s52 r1's note; /work/scratch/s53/f4/repro1.old.txt, repro1.new.txt).

Every reader of user data files opened by the name: such a file was read as text, so the BYO questions, the corpus, the
topics, NQ-open, a local copy's JSONL and a TREC run said ``<file>:1: invalid UTF-8 at byte 1 of the line; re-encode the
file as UTF-8`` (the wrong fix), a local copy's ``.json`` / ``.csv`` and WebQuestions said "not valid JSON ('utf-8'
codec can't decode byte 0x8b ...)", and the NQ oracle file (``oracle_file=my-oracle.jsonl``) was a bare
UnicodeDecodeError traceback. They now share one opener, :func:`retrieval.io.open_data`."""

from __future__ import annotations

import gzip
import json

import pytest

from retrieval.errors import DataError

QUESTIONS = [{"qid": f"q{i}", "question": f"who is {i}?", "answers": [f"a{i}"]} for i in range(3)]


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_open_data_reads_gzip_by_content_and_keeps_the_damaged_gz_refusal(tmp_path):
    from retrieval.io import open_data

    plain = _jsonl(QUESTIONS)
    hidden = tmp_path / "questions.jsonl"
    hidden.write_bytes(gzip.compress(plain))
    with open_data(hidden) as f:
        assert f.read() == plain
    named = tmp_path / "plain.jsonl"
    named.write_bytes(plain)
    with open_data(named) as f:
        assert f.read() == plain
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with open_data(empty) as f:
        assert f.read() == b""
    # a .gz name whose bytes are not gzip (an HTML error page saved as the download) is still named as damaged
    fake = tmp_path / "questions.jsonl.gz"
    fake.write_bytes(plain)
    with pytest.raises(DataError) as exc, open_data(fake) as f:
        f.read()
    assert str(exc.value) == (f"{fake}: the gzip file is truncated or corrupt (Not a gzipped file (b'{{\"')); "
                              "download or compress it again")


def test_byo_questions_topics_and_read_jsonl(tmp_path):
    from retrieval.corpus import load_queries
    from retrieval.io import read_jsonl
    from tasks.byo import load_questions

    q = tmp_path / "questions.jsonl"
    q.write_bytes(gzip.compress(_jsonl(QUESTIONS)))
    assert [obj for _, obj in read_jsonl(q)] == QUESTIONS
    rows = load_questions(str(q))
    assert [(r["qid"], r["question"], r["answers"], r["where"]) for r in rows] == [
        ("q0", "who is 0?", ["a0"], f"{q}:1"), ("q1", "who is 1?", ["a1"], f"{q}:2"), ("q2", "who is 2?", ["a2"], f"{q}:3")]
    assert load_queries(q) == {"q0": "who is 0?", "q1": "who is 1?", "q2": "who is 2?"}
    tsv = tmp_path / "topics.tsv"
    tsv.write_bytes(gzip.compress(b"7\twhere is it?\n8\twhen?\n"))
    assert load_queries(tsv) == {"7": "where is it?", "8": "when?"}


def test_corpus_files_jsonl_jsonc_and_dpr_tsv(tmp_path):
    from retrieval.corpus import check_corpus_files, load_corpus

    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_bytes(gzip.compress(b'{"id": "p1", "title": "T1", "text": "one"}\n{"id": "p2", "title": "T2", "text": "two"}\n'))
    check_corpus_files(jsonl)
    assert [(p.docid, p.title, p.text) for p in load_corpus(jsonl).passages] == [("p1", "T1", "one"), ("p2", "T2", "two")]
    jsonc = tmp_path / "c.jsonl"
    jsonc.write_bytes(gzip.compress(b'{"id": "d1", "contents": "Title\\nbody"}\n'))
    assert [(p.docid, p.title, p.text) for p in load_corpus(jsonc).passages] == [("d1", "Title", "body")]
    tsv = tmp_path / "psgs.tsv"
    tsv.write_bytes(gzip.compress(b"id\ttext\ttitle\n1\thello there\tGreeting\n"))
    assert [(p.title, p.text) for p in load_corpus(tsv).passages] == [("Greeting", "hello there")]


def test_nq_open_oracle_file_and_webq_of_a_data_folder(tmp_path):
    from tasks.data import load_nq_oracle, load_nq_open, load_webq

    data = tmp_path / "data"
    (data / "nq_open").mkdir(parents=True)
    (data / "nq_open_oracle").mkdir()
    (data / "webquestions").mkdir()
    nq = [{"question": "who wrote hamlet", "answer": ["Shakespeare"]}, {"question": "capital of france", "answer": ["Paris"]}]
    (data / "nq_open" / "NQ-open.dev.jsonl").write_bytes(gzip.compress(_jsonl(nq)))
    oracle = [{"question": "who wrote hamlet", "answers": ["Shakespeare"],
               "ctxs": [{"title": "Hamlet", "text": "Hamlet is a tragedy by Shakespeare."}]}]
    (data / "nq_open_oracle" / "nq-open-oracle.jsonl.gz").write_bytes(gzip.compress(_jsonl(oracle)))
    mine = tmp_path / "my-oracle.jsonl"  # the user's oracle_file: gzip under a plain name (was a UnicodeDecodeError)
    mine.write_bytes(gzip.compress(_jsonl(oracle)))
    (data / "webquestions" / "test.json").write_bytes(gzip.compress(json.dumps(
        [{"qId": "wq1", "qText": "what is up?", "answers": ["sky"]}]).encode()))

    assert [(r["question"], r["answers"]) for r in load_nq_open(data)] == [
        ("who wrote hamlet", ["Shakespeare"]), ("capital of france", ["Paris"])]
    rows = load_nq_oracle(data, oracle_file=mine)
    assert [(r["question"], r["answers"], r["gold"]) for r in rows] == [
        ("who wrote hamlet", ["Shakespeare"], {"title": "Hamlet", "text": "Hamlet is a tragedy by Shakespeare."})]
    assert load_webq(data) == [{"qid": "wq1", "question": "what is up?", "answers": ["sky"]}]


def test_an_oracle_file_that_is_not_utf8_is_one_line(tmp_path):
    from tasks.data import load_nq_oracle

    data = tmp_path / "data"
    (data / "nq_open").mkdir(parents=True)
    (data / "nq_open" / "NQ-open.dev.jsonl").write_bytes(b'{"question": "q", "answer": ["a"]}\n')
    bad = tmp_path / "oracle.jsonl"
    bad.write_bytes(b'{"question": "caf\xe9"}\n')
    with pytest.raises(DataError) as exc:
        load_nq_oracle(data, oracle_file=bad)
    assert str(exc.value) == f"{bad}:1: invalid UTF-8 at byte 17 of the line; re-encode the file as UTF-8"


@pytest.mark.parametrize("name,content,rows", [
    ("test.jsonl", b'{"question": "q0", "answer": ["a0"]}\n', [{"question": "q0", "answer": ["a0"]}]),
    ("test.json", b'[{"question": "q0", "answer": ["a0"]}]', [{"question": "q0", "answer": ["a0"]}]),
    ("test.csv", b"question,answer\nq0,a0\n", [{"question": "q0", "answer": "a0"}]),
])
def test_a_local_copy_file_gzipped_under_its_plain_name(tmp_path, name, content, rows):
    from tasks.sources import hub_rows

    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / name).write_bytes(gzip.compress(content))
    assert hub_rows(str(folder), None, "test") == (rows, str(folder))


def test_a_trec_run_and_a_ctxs_run_gzipped_under_plain_names(tmp_path):
    from retrieval.cache import is_ctxs_file, read_ctxs_jsonl
    from retrieval.cli import _read_trec
    from retrieval.corpus import load_corpus

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b'{"id": "p1", "title": "T1", "text": "one"}\n{"id": "p2", "title": "T2", "text": "two"}\n')
    trec = tmp_path / "run.trec"
    trec.write_bytes(gzip.compress(b"1 Q0 p2 1 3.0 bm25\n1 Q0 p1 2 2.0 bm25\n"))
    ctxs = _read_trec(trec, load_corpus(corpus))
    assert [(c["docid"], c["score"]) for c in ctxs["1"]] == [("p2", 3.0), ("p1", 2.0)]
    run = tmp_path / "ctxs.jsonl"
    run.write_bytes(gzip.compress(b'{"qid": "1", "question": "q?", "ctxs": [{"docid": "p1", "text": "one"}]}\n'))
    assert is_ctxs_file(run)
    got, queries = read_ctxs_jsonl(run)
    assert queries == {"1": "q?"} and [c["docid"] for c in got["1"]] == ["p1"]
