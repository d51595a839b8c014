"""A full disk (or a quota, or ``ulimit -f``) while a dense index is written is the commands' one line (s55 f1).

``tokrag index build --dense`` (and an ``lm_eval`` run whose task retrieves densely: the same
``retrieval.dense.build_dense_index``) ended in a traceback when the disk filled:

* at ``faiss.write_index``: FAISS raises a ``RuntimeError`` whose text holds the C error (``... write error in <path>:
  4051 != 16000 (No space left on device)``), no OSError, so ``retrieval.errors.no_room_line`` did not know it;
* at an encoded part's ``np.save``: an ``OSError(28)`` without a path (the line named no file), and the half-written
  ``.part-*.tmp.npy`` stayed in the ``.partial`` folder;
* worse, a write that failed only when stdio's last buffer was flushed at ``fclose`` was printed by FAISS on stderr and
  not raised: the build returned, and a truncated ``index`` file was renamed into place as a complete index.

The faults here are the real libraries' own: FAISS and numpy writing to ``/dev/full`` (opened for writing only), and a
child process under ``RLIMIT_FSIZE``. The encoder is replaced by fixed vectors (the writes are the subject).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import retrieval.dense as D

REPO = Path(__file__).resolve().parents[1]
TAIL = ("(a full disk, a disk quota or a file-size limit stopped a write); make room (or raise the limit: ulimit -f) "
        "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)")
DIM = 8


def _corpus(tmp_path: Path, n: int = 10) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "title": f"T{i}", "text": f"passage {i}"}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


def _vectors(passages) -> np.ndarray:
    """Fixed vectors (DIM floats) from the passages' numbers: the same on every call."""
    return np.asarray([[float(int(text.split()[-1]) + k) for k in range(DIM)] for _title, text in passages],
                      dtype="float32")


@pytest.fixture()
def fake_encoder(monkeypatch) -> list[int]:
    """No encoder model and no JVM: each batch is :func:`_vectors`; returns the sizes of the batches encoded."""
    calls: list[int] = []

    def encode(enc, p, passages):
        calls.append(len(passages))
        return _vectors(passages)

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
    monkeypatch.setattr(D, "PART_SIZE", 4)  # 10 passages: 3 parts
    return calls


def _build(tmp_path: Path, corpus: Path, capsys) -> tuple[int, str]:
    from tokrag_model.cli import main

    capsys.readouterr()
    rc = main(["index", "build", "--corpus", str(corpus), "--dense", "--cache-dir", str(tmp_path / "cache")])
    return rc, capsys.readouterr().err


def _dense_root(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "dense"


def _faiss_full_disk(monkeypatch) -> None:
    """Every FAISS index file, and the file the index is written through (``index``), is ``/dev/full``: FAISS's own
    error for a path (its C stdio writer), Python's for a file object (its callback writer)."""
    import faiss

    real_write, real_open = faiss.write_index, open

    def write_index(index, target, *args):
        if isinstance(target, str):  # FAISS opens the path itself: the real RuntimeError of a full disk
            return real_write(index, "/dev/full", *args)
        return real_write(index, target, *args)

    def fake_open(path, mode="r", *args, **kwargs):
        if Path(path).name == "index" and "w" in mode:
            return real_open("/dev/full", mode, *args, **kwargs)
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(faiss, "write_index", write_index)
    monkeypatch.setattr(D, "open", fake_open, raising=False)


def test_faiss_message_of_a_full_disk_is_a_runtime_error():
    """What the old code met: FAISS's text, no OSError (so no_room_line knew nothing of it)."""
    import faiss

    index = faiss.IndexFlatIP(DIM)
    index.add(np.ones((1000, DIM), dtype="float32"))
    with pytest.raises(RuntimeError, match=r"write error in /dev/full: .*\(No space left on device\)"):
        faiss.write_index(index, "/dev/full")


def test_full_disk_at_the_index_write_is_one_line_and_keeps_no_index(tmp_path, fake_encoder, monkeypatch, capsys):
    corpus = _corpus(tmp_path)
    with monkeypatch.context() as m:
        _faiss_full_disk(m)
        rc, err = _build(tmp_path, corpus, capsys)
    assert rc == 2, err  # the old build returned 0: FAISS printed 'close error' (a small index: its last buffer only)
    root = _dense_root(tmp_path)
    parts = next(root.glob("*.partial"))
    target = Path(str(parts)[: -len(".partial")])
    assert (rc, err) == (2, f"tokrag index: error: [Errno 28] No space left on device while writing the dense index of "
                            f"'corpus.jsonl' (10 passages, 320 bytes of vectors; nothing of it is kept, the encoded parts "
                            f"are, in {parts}): '{target}' {TAIL}\n")
    assert "Traceback" not in err
    # no index a later run could take as complete, no scratch folder; the 3 encoded parts are kept
    assert not target.exists()
    assert {p.name for p in root.iterdir()} - {target.name + ".lock"} == {parts.name}  # the lock file may stay
    assert sorted(p.name for p in parts.glob("part-*.npy")) == ["part-00000.npy", "part-00001.npy", "part-00002.npy"]
    assert fake_encoder == [4, 4, 2]
    # with room, the same command writes the index from the kept parts (nothing encoded again)
    rc, err = _build(tmp_path, corpus, capsys)
    assert rc == 0, err
    assert fake_encoder == [4, 4, 2]
    import faiss

    index = faiss.read_index(str(target / "index"))
    assert index.ntotal == 10 and index.d == DIM
    assert np.array_equal(index.reconstruct_n(0, 10), _vectors([("", f"passage {i}") for i in range(10)]))


def test_full_disk_at_an_encoded_part_is_one_line_naming_the_parts_folder(tmp_path, fake_encoder, monkeypatch, capsys):
    corpus = _corpus(tmp_path)
    real_save = np.save
    try:  # numpy's own error of a full disk (/dev/full opened for writing): OSError(28) without a path
        with open("/dev/full", "wb") as full:
            real_save(full, np.ones((4, DIM), dtype="float32"))
    except OSError as exc:
        numpy_error = exc
    assert numpy_error.errno == errno.ENOSPC and numpy_error.filename is None
    saved: list[str] = []

    def save(file, arr, *args, **kwargs):
        if len(saved) == 1:  # the second part: half of it written, then the disk is full
            Path(file).write_bytes(b"\x93NUMPY half")
            raise numpy_error
        saved.append(str(file))
        return real_save(file, arr, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(np, "save", save)
        rc, err = _build(tmp_path, corpus, capsys)
    parts = next(_dense_root(tmp_path).glob("*.partial"))
    assert (rc, err) == (2, f"tokrag index: error: [Errno 28] No space left on device while writing encoded part 2 of "
                            f"3 of the dense index of 'corpus.jsonl' (the finished parts are kept in this folder; the "
                            f"same command resumes from them): '{parts}' {TAIL}\n")
    assert sorted(p.name for p in parts.iterdir()) == ["identity.json", "part-00000.npy"]  # no half-written part
    rc, err = _build(tmp_path, corpus, capsys)
    assert rc == 0, err
    assert fake_encoder == [4, 4, 4, 2]  # part 1 encoded again, part 0 resumed


def test_a_write_failing_at_the_last_flush_is_not_a_truncated_index(tmp_path):
    """Under ``ulimit -f`` just below the index file's size, FAISS's own writer failed only at ``fclose`` (its last
    buffer), printed 'close error' and returned: the old build renamed the truncated file into place (rc 0)."""
    corpus = _corpus(tmp_path, n=200)
    script = f"""
        import resource, sys
        import faiss, numpy as np
        sys.path.insert(0, {str(REPO / 'tests')!r})
        import retrieval.dense as D
        from test_s55_f1_dense_no_room import _vectors
        D._doc_encoder = lambda p, device: object()
        D._encode_passages = lambda enc, p, passages: _vectors(passages)
        D.start_jvm = lambda *a, **k: None
        D.PART_SIZE = 64
        probe = faiss.IndexFlatIP({DIM})
        probe.add(np.zeros((200, {DIM}), dtype="float32"))
        size = len(faiss.serialize_index(probe))  # the index file's size
        resource.setrlimit(resource.RLIMIT_FSIZE, (size - 100, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        from tokrag_model.cli import main
        sys.exit(main(["index", "build", "--corpus", {str(corpus)!r}, "--dense", "--cache-dir", {str(tmp_path / 'cache')!r}]))
    """
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1", HF_HUB_OFFLINE="1", TQDM_DISABLE="1")
    env.pop("TOKRAG_TRACEBACK", None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    root = _dense_root(tmp_path)
    parts = next(root.glob("*.partial"))
    target = Path(str(parts)[: -len(".partial")])
    assert proc.stderr == (f"tokrag index: error: [Errno 27] File too large while writing the dense index of "
                           f"'corpus.jsonl' (200 passages, 6.2 KiB of vectors; nothing of it is kept, the encoded parts "
                           f"are, in {parts}): '{target}' {TAIL}\n")
    assert not target.exists()
    assert {p.name for p in root.iterdir()} - {target.name + ".lock"} == {parts.name}  # no scratch folder left


def test_a_run_building_the_index_gets_the_oserror_also_through_the_worker(tmp_path, fake_encoder, monkeypatch):
    """An lm_eval run (a task retrieving densely) builds the index in ``retrieval.retrieve``, in the retrieval worker
    process, which sends the exception back pickled: the OSError keeps its errno, text and path, so the run's entry
    point (``tokrag_model._lmeval_hook``, ``tokrag eval``) prints the same one line (``no_room_line``)."""
    import pickle

    from retrieval import Corpus, Passage, retrieve
    from retrieval.errors import no_room_line

    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")  # the fakes live in this process
    corpus = Corpus([Passage(f"p{i}", "T", f"passage {i}") for i in range(6)], name="run")
    _faiss_full_disk(monkeypatch)
    with pytest.raises(OSError) as info:
        retrieve(corpus, {"q1": "passage 3"}, "dense", k=2, cache_dir=tmp_path / "cache")
    parts = next(_dense_root(tmp_path).glob("*.partial"))
    target = Path(str(parts)[: -len(".partial")])
    line = (f"[Errno 28] No space left on device while writing the dense index of 'run' (6 passages, 192 bytes of "
            f"vectors; nothing of it is kept, the encoded parts are, in {parts}): '{target}' {TAIL}")
    assert no_room_line(info.value) == line
    assert no_room_line(pickle.loads(pickle.dumps(info.value))) == line
    assert not target.exists()
