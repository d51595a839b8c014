"""Review of s55 f1 (75a90f0): a full disk at the first write of a dense index build, the ``.partial`` folder's record
``identity.json``, is the one line naming that folder and what was written (s55 r1).

75a90f0 named the folder and the write for an encoded part and for the index, but the record that the parts folder
starts with (``retrieval.io.atomic_write_json``) was left bare: its write fails at the buffered file's flush, an
``OSError(28)`` without a path, so a disk filled nearly to the brim before the build (a folder could still be made, a
file's block not) gave ``tokrag index: error: [Errno 28] No space left on device (a full disk, ...)``, naming no file
and no disk. The fault is the real one: ``retrieval.io``'s own atomic write, its file object opened on ``/dev/full``
(opened for writing only). The encoder is replaced by fixed vectors.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import retrieval.dense as D
import retrieval.io as rio

TAIL = ("(a full disk, a disk quota or a file-size limit stopped a write); make room (or raise the limit: ulimit -f) "
        "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)")
DIM = 4


class _FullDiskOs:
    """``os`` for :mod:`retrieval.io`, except that a file object opened on a new descriptor writes to ``/dev/full``."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def fdopen(fd, mode="r", *args, **kwargs):
        os.close(fd)
        return open("/dev/full", mode, *args, **kwargs)


@pytest.fixture()
def encoded(monkeypatch) -> list[int]:
    """No encoder model and no JVM: fixed vectors; returns the sizes of the batches encoded."""
    calls: list[int] = []

    def encode(enc, p, passages):
        calls.append(len(passages))
        return np.asarray([[float(text.split()[-1]) + k for k in range(DIM)] for _t, text in passages], dtype="float32")

    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    # no progress bar on stderr: tqdm reads TQDM_DISABLE when it is first imported, so the variable does nothing
    # where an earlier test of the same worker imported it (the bar then came first in stderr); the class is
    # replaced with a disabled one instead (build_dense_index imports it at its call)
    import functools

    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", functools.partial(tqdm.auto.tqdm, disable=True))
    monkeypatch.setattr(D, "_doc_encoder", lambda p, device: object())
    monkeypatch.setattr(D, "_encode_passages", encode)
    monkeypatch.setattr(D, "start_jvm", lambda *a, **k: None)
    return calls


def test_a_full_disk_at_the_parts_record_names_the_parts_folder(tmp_path, encoded, monkeypatch, capsys):
    from tokrag_model.cli import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "title": "T", "text": f"passage {i}"}) + "\n"
                              for i in range(5)), encoding="utf-8")
    real_write_json = D.atomic_write_json

    def write_json(path, obj, *args, **kwargs):
        if Path(path).name != "identity.json":
            return real_write_json(path, obj, *args, **kwargs)
        with monkeypatch.context() as m:  # this write only: retrieval.io's own code, its file on a full disk
            m.setattr(rio, "os", _FullDiskOs())
            return real_write_json(path, obj, *args, **kwargs)

    argv = ["index", "build", "--corpus", str(corpus), "--dense", "--cache-dir", str(tmp_path / "cache")]
    with monkeypatch.context() as m:
        m.setattr(D, "atomic_write_json", write_json)
        capsys.readouterr()
        rc = main(argv)
        err = capsys.readouterr().err
    root = tmp_path / "cache" / "dense"
    parts = next(root.glob("*.partial"))
    assert (rc, err) == (2, f"tokrag index: error: [Errno 28] No space left on device while starting the encoded parts "
                            f"of the dense index of 'corpus.jsonl' (nothing was encoded yet): '{parts}' {TAIL}\n")
    assert encoded == []
    assert list(parts.iterdir()) == []  # the record's temporary file is removed
    target = Path(str(parts)[: -len(".partial")])
    assert not target.exists()
    # with room, the same command builds the index
    rc = main(argv)
    assert rc == 0, capsys.readouterr().err
    assert encoded == [5]
    import faiss

    assert faiss.read_index(str(target / "index")).ntotal == 5
