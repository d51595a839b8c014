"""A data file compressed with something other than gzip (bzip2, xz, zstd, zip) given to tokrag's readers (a corpus
for ``tokrag index build`` / ``retrieve``, a topics file, a bring-your-own questions file): one line saying the
file is compressed and what to do, told by its first bytes whatever its name (s58 f6, after f5's ``retrieve eval
--run``). Before, the bytes were read as text: ``<file>:1: invalid UTF-8 ...; re-encode the file as UTF-8``, advice
that is wrong for a compressed file. The one place is :func:`retrieval.io.open_data`."""

from __future__ import annotations

import bz2
import io
import json
import lzma
import zipfile

import pytest

from retrieval.errors import DataError
from tokrag_model.cli import main as tokrag

PASSAGES = [
    {"id": "p1", "title": "Paris", "text": "Paris is the capital of France, on the river Seine."},
    {"id": "p2", "title": "Numbers", "text": "The number 4 is even and comes after 3 in the list of numbers."},
]
QUESTIONS = [{"qid": "q1", "question": "where is paris", "answers": ["france"]}]


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _zip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("data.jsonl", data)
    return buf.getvalue()


# zstd: no compressor in this Python's standard library; a frame's magic number and header (the check reads the magic)
PACKERS = {
    "bzip2": (bz2.compress, "bunzip2"),
    "xz": (lzma.compress, "unxz"),
    "zstd": (lambda data: b"\x28\xb5\x2f\xfd\x24\x00" + data, "unzstd"),
    "zip": (_zip, "unzip"),
}


def _line(path, kind: str) -> str:
    article = "an" if kind == "xz" else "a"
    return (f"{path}: {article} {kind}-compressed file; tokrag reads plain text or gzip: decompress it "
            f"({PACKERS[kind][1]}) or gzip it")


def test_bzip2_corpus_for_index_build(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl.bz2"
    corpus.write_bytes(bz2.compress(_jsonl(PASSAGES)))
    assert tokrag(["index", "build", "--corpus", str(corpus), "--index", str(tmp_path / "idx")]) == 2
    err = capsys.readouterr().err
    assert _line(corpus, "bzip2") in err
    assert "re-encode" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "idx").exists()


@pytest.mark.parametrize("kind", sorted(PACKERS))
def test_compressed_corpus_reader(tmp_path, kind):
    from retrieval.corpus import check_corpus_files, load_corpus

    corpus = tmp_path / "corpus.jsonl"  # a plain name: told by content
    corpus.write_bytes(PACKERS[kind][0](_jsonl(PASSAGES)))
    with pytest.raises(DataError) as exc:
        check_corpus_files(corpus)
    assert str(exc.value) == _line(corpus, kind)
    with pytest.raises(DataError) as exc:
        load_corpus(corpus)
    assert str(exc.value) == _line(corpus, kind)
    tsv = tmp_path / "psgs.tsv"
    tsv.write_bytes(PACKERS[kind][0](b"id\ttext\ttitle\n1\thello there\tGreeting\n"))
    with pytest.raises(DataError) as exc:
        load_corpus(tsv)
    assert str(exc.value) == _line(tsv, kind)


@pytest.mark.parametrize("name,content", [
    ("topics.jsonl.bz2", _jsonl(QUESTIONS)),
    ("topics.tsv", b"q1\twhere is paris\n"),
])
def test_bzip2_topics_file(tmp_path, name, content):
    from retrieval.corpus import load_queries

    topics = tmp_path / name
    topics.write_bytes(bz2.compress(content))
    with pytest.raises(DataError) as exc:
        load_queries(topics)
    assert str(exc.value) == _line(topics, "bzip2")


def test_bzip2_topics_for_retrieve(tmp_path, capsys):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(_jsonl(PASSAGES))
    topics = tmp_path / "topics.jsonl"
    topics.write_bytes(bz2.compress(_jsonl(QUESTIONS)))
    rc = tokrag(["retrieve", "--corpus", str(corpus), "--topics", str(topics), "--output", str(tmp_path / "run.trec")])
    assert rc == 2
    err = capsys.readouterr().err
    assert _line(topics, "bzip2") in err
    assert "re-encode" not in err and "Traceback" not in err


@pytest.mark.parametrize("kind", sorted(PACKERS))
def test_compressed_byo_questions(tmp_path, kind):
    from tasks.byo import load_questions

    q = tmp_path / "questions.jsonl"
    q.write_bytes(PACKERS[kind][0](_jsonl(QUESTIONS)))
    with pytest.raises(DataError) as exc:
        load_questions(str(q))
    assert str(exc.value) == _line(q, kind)


def test_a_bzip2_file_named_gz_is_named_bzip2(tmp_path):
    """Its bytes are bzip2's, so it is named so rather than 'the gzip file is truncated or corrupt'."""
    from retrieval.io import open_data

    f = tmp_path / "questions.jsonl.gz"
    f.write_bytes(bz2.compress(_jsonl(QUESTIONS)))
    with pytest.raises(DataError) as exc, open_data(f):
        pass
    assert str(exc.value) == _line(f, "bzip2")


def test_text_starting_bzh_and_plain_and_gzip_still_read(tmp_path):
    """A text file whose first bytes are "BZh" (not bzip2's block magic after them) and a "PK" line read as before."""
    import gzip

    from retrieval.corpus import load_queries
    from retrieval.io import open_data
    from tasks.byo import load_questions

    tsv = tmp_path / "topics.tsv"
    tsv.write_bytes(b"BZh91\twhat is BZh9?\nPK\twhere\n")
    assert load_queries(tsv) == {"BZh91": "what is BZh9?", "PK": "where"}
    with open_data(tsv) as f:
        assert f.read() == b"BZh91\twhat is BZh9?\nPK\twhere\n"
    short = tmp_path / "short.tsv"  # shorter than the magic numbers
    short.write_bytes(b"BZh")
    with open_data(short) as f:
        assert f.read() == b"BZh"
    q = tmp_path / "questions.jsonl"
    q.write_bytes(gzip.compress(_jsonl(QUESTIONS)))
    assert [(r["qid"], r["question"], r["answers"]) for r in load_questions(str(q))] == [
        ("q1", "where is paris", ["france"])]
