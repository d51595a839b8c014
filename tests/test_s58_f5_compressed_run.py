"""``tokrag retrieve eval --run`` on a run file compressed afterwards with something other than gzip (bzip2, xz,
zstd, zip): one line saying the file is compressed and what to do, told by the file's first bytes whatever its
name (s58 f5, from n2's finding 6). Before, the bytes were read as a TREC run: ``run.trec.bz2:1: invalid UTF-8;
re-encode the file as UTF-8``, advice that is wrong for a compressed file."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import zipfile

import pytest

from tokrag_model.cli import main as tokrag

PASSAGES = [
    {"id": "p1", "title": "Paris", "text": "Paris is the capital of France, on the river Seine."},
    {"id": "p2", "title": "Numbers", "text": "The number 4 is even and comes after 3 in the list of numbers."},
]
RUN = b"a Q0 p1 1 2.0 tag\na Q0 p2 2 1.0 tag\n"


def _zip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("run.trec", data)
    return buf.getvalue()


# zstd: no compressor in the standard library of this Python; a frame's magic number and a frame header (the check
# reads the magic only)
PACKERS = {
    "bzip2": (bz2.compress, "bunzip2", ".bz2"),
    "xz": (lzma.compress, "unxz", ".xz"),
    "zstd": (lambda data: b"\x28\xb5\x2f\xfd\x24\x00" + data, "unzstd", ".zst"),
    "zip": (_zip, "unzip", ".zip"),
}


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture()
def files(tmp_path):
    corpus = _jsonl(tmp_path / "corpus.jsonl", PASSAGES)
    topics = _jsonl(tmp_path / "t.jsonl", [{"qid": "a", "question": "where is paris", "answers": ["paris"]}])
    return corpus, topics


@pytest.mark.parametrize("kind", sorted(PACKERS))
def test_compressed_trec_run_is_named_as_compressed(tmp_path, files, capsys, kind):
    pack, tool, suffix = PACKERS[kind]
    corpus, topics = files
    run = tmp_path / f"run.trec{suffix}"
    run.write_bytes(pack(RUN))
    assert tokrag(["retrieve", "eval", "--run", str(run), "--corpus", corpus, "--topics", topics]) == 2
    err = capsys.readouterr().err
    article = "an" if kind == "xz" else "a"
    assert (f"{run}: {article} {kind}-compressed file; retrieve eval reads plain text or gzip: decompress it ({tool}) "
            "or gzip it") in err
    assert "re-encode" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", sorted(PACKERS))
def test_told_by_content_not_name(tmp_path, files, capsys, kind):
    """A compressed ctxs run under a plain name, without --corpus: the same line (before: 'a TREC run needs
    --corpus', as its first byte is not '{')."""
    from retrieval.io import other_compression

    pack, tool, _ = PACKERS[kind]
    _, topics = files
    run = tmp_path / "run.ctxs.jsonl"
    run.write_bytes(pack(b'{"qid": "a", "ctxs": []}\n'))
    assert tokrag(["retrieve", "eval", "--run", str(run), "--topics", topics]) == 2
    err = capsys.readouterr().err
    assert f"{run}: {'an' if kind == 'xz' else 'a'} {kind}-compressed file; retrieve eval reads plain text or gzip: decompress it ({tool})" in err
    assert other_compression(run) == (kind, tool)


def test_plain_and_gzip_runs_still_read(tmp_path, files, capsys):
    from retrieval.io import other_compression

    corpus, topics = files
    for name, data in (("run.trec", RUN), ("run.trec.gz", gzip.compress(RUN)), ("gz-under-plain.trec", gzip.compress(RUN))):
        run = tmp_path / name
        run.write_bytes(data)
        assert other_compression(run) is None
        assert tokrag(["retrieve", "eval", "--run", str(run), "--corpus", corpus, "--topics", topics, "--k", "1",
                       "--json"]) == 0
        assert json.loads(capsys.readouterr().out)  # scored


def test_text_that_starts_like_a_magic_is_text(tmp_path, files, capsys):
    """A qid starting 'BZh9' is no bzip2 file: bzip2's magic is checked with its block magic."""
    from retrieval.io import other_compression

    corpus, _ = files
    topics = _jsonl(tmp_path / "t2.jsonl", [{"qid": "BZh91AY", "question": "where is paris", "answers": ["paris"]}])
    run = tmp_path / "bzh.trec"
    run.write_bytes(b"BZh91AY Q0 p1 1 2.0 tag\n")
    assert other_compression(run) is None
    assert tokrag(["retrieve", "eval", "--run", str(run), "--corpus", corpus, "--topics", topics, "--k", "1",
                   "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    empty_bz2 = tmp_path / "empty.bz2"
    empty_bz2.write_bytes(bz2.compress(b""))  # the end-of-stream magic after 'BZh9'
    assert other_compression(empty_bz2) == ("bzip2", "bunzip2")
