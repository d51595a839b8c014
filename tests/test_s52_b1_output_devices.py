"""An output file path that names a device or a named pipe was written by renaming a temporary file over it (s52 b1,
/work/scratch/s52/b1/probe_retrieve.sh, probe_retrieve.txt): ``tokrag retrieve ... --output /dev/null`` (the usual
"throw the output away") exited 0 and, run as root, replaced the device /dev/null by a regular file holding the TREC
run, and wrote /dev/null.ctxs.jsonl and /dev/null.meta.json into /dev; ``check --write --baseline`` and ``tokrag
calibrate``'s output go through the same check (:func:`retrieval.io.check_writable`). Such a path is now refused before
any work, in one line saying what it is. The tests use a FIFO in a temporary folder (and only ask the check about
/dev/null, which writes nothing there)."""

import os
import threading

import pytest
from retrieval_helpers import write_jsonl

from retrieval.errors import ConfigError
from retrieval.io import check_writable

REPLACE = ("not a regular file; the output is written to a temporary file and renamed over the path, which would "
           "replace it: give a file path")


class _Unblock:
    """While active, keeps opening ``fifo`` for writing and closing it, so that a reader the old code opened on it
    (it hashed an earlier output) reads an empty file instead of waiting forever for a writer."""

    def __init__(self, fifo):
        self.fifo, self.stop = fifo, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.wait(0.2):
            try:
                os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))  # ENXIO while nobody reads it
            except OSError:
                pass

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def test_the_check_refuses_a_character_device():
    with pytest.raises(ConfigError) as exc:
        check_writable("/dev/null", "--output", folder=False)
    assert str(exc.value) == f"--output /dev/null: is a character device, {REPLACE}"


def test_retrieve_refuses_a_fifo_as_its_output_and_leaves_it_a_fifo(tmp_path, capsys):
    from retrieval.cli import main

    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": "p1", "title": "A", "contents": "The sky is blue."},
                                                     {"id": "p2", "title": "B", "contents": "Grass is green."}])
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\twhat colour is the sky\n", encoding="utf-8")
    fifo = tmp_path / "run.trec"
    os.mkfifo(fifo)
    with _Unblock(fifo), pytest.raises(ConfigError) as exc:
        main(["retrieve", "--corpus", str(corpus), "--topics", str(topics), "--hits", "1", "--output", str(fifo)])
    assert str(exc.value) == f"--output {fifo}: is a named pipe (FIFO), {REPLACE}"
    assert fifo.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "run.trec", "topics.tsv"]


def test_check_write_refuses_a_fifo_as_its_baseline(tmp_path):
    from leaderboards.cli import main

    fifo = tmp_path / "ci.json"
    os.mkfifo(fifo)
    with _Unblock(fifo), pytest.raises(ConfigError) as exc:  # the old code read the FIFO as an earlier baseline
        main(["check", "leaderboards/specs/ci.yaml", "--baseline", str(fifo), "--write"])
    assert str(exc.value) == f"check --write --baseline {fifo}: is a named pipe (FIFO), {REPLACE}"
    assert fifo.is_fifo()


def test_a_regular_file_and_a_new_path_still_pass(tmp_path):
    old = tmp_path / "old.trec"
    old.write_text("x", encoding="utf-8")
    assert check_writable(old, "--output", folder=False) == old.resolve()
    assert check_writable(tmp_path / "new" / "run.trec", "--output", folder=False) == (tmp_path / "new" / "run.trec").resolve()
