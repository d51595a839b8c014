"""An output that is a symbolic link to a device, a named pipe or a socket is refused, never replaced (s53 r1, review of
f4's dfda533; /work/scratch/s53/r1/probe_devlink.py, probe_devlink.old.txt / probe_devlink.new.txt).

dfda533 made the atomic writer write through a link: it renames its temporary file over the link's target. A link to
``/dev/null`` (``ln -s /dev/null run.trec.meta.json``, to discard a file) then had ``/dev/null`` itself replaced by a
regular file, as root (it happened on the review machine and was restored with ``mknod``), and a link to a named pipe
had the pipe replaced. Before dfda533 only the link was replaced. The writer now refuses a target that is not a regular
file or a folder, and ``tokrag retrieve`` refuses such a ``.meta.json`` before the search (its ``--output`` and
``--output-ctxs`` were already refused by ``check_writable``). Here the device is a private one made with ``mknod`` in
a temporary folder (as root only); the named pipe is made with ``mkfifo``."""

from __future__ import annotations

import errno
import json
import os
import stat
import zlib
from pathlib import Path

import pytest

from retrieval.errors import ConfigError


def _kind(p: Path) -> str:
    mode = os.lstat(p).st_mode
    return ("link" if stat.S_ISLNK(mode) else "fifo" if stat.S_ISFIFO(mode) else "chardev" if stat.S_ISCHR(mode)
            else "regular" if stat.S_ISREG(mode) else "other")


def _specials(tmp_path: Path) -> list[Path]:
    """A named pipe, and as root a private character device (1, 3: what /dev/null is)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = [fifo]
    if os.geteuid() == 0:
        dev = tmp_path / "null"
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        out.append(dev)
    return out


def test_the_atomic_writer_refuses_a_device_or_a_pipe_and_replaces_nothing(tmp_path):
    from retrieval.io import atomic_write_bytes, atomic_write_json

    words = {"pipe": "a named pipe (FIFO)", "null": "a character device"}
    for special in _specials(tmp_path):
        kind = _kind(special)
        link = tmp_path / f"out-{special.name}.json"
        link.symlink_to(special)
        for target in (link, special):  # through a link, and the path itself
            with pytest.raises(OSError) as exc:
                atomic_write_json(target, {"a": 1})
            assert exc.value.errno == errno.EINVAL
            assert str(exc.value) == (f"[Errno 22] is {words[special.name]}, not a regular file; an atomic write renames "
                                      f"a new file over the path, which would replace it: '{special}'")
            assert (_kind(link), _kind(special)) == ("link", kind)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    # a link to a regular file is still written through (dfda533), and a plain path replaced
    (tmp_path / "real.json").write_text("OLD")
    (tmp_path / "ok.json").symlink_to("real.json")
    atomic_write_bytes(tmp_path / "ok.json", b"NEW")
    assert (_kind(tmp_path / "ok.json"), (tmp_path / "real.json").read_bytes()) == ("link", b"NEW")


def test_retrieve_refuses_a_metadata_file_linked_to_a_device_or_pipe_before_the_search(tmp_path, monkeypatch):
    import retrieval.cli as cli

    corpus, topics = tmp_path / "passages.jsonl", tmp_path / "topics.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"text {i} hamlet"}) + "\n"
                              for i in range(4)), encoding="utf-8")
    topics.write_text(json.dumps({"id": "q1", "question": "hamlet", "answers": ["x"]}) + "\n", encoding="utf-8")
    words = {"pipe": "a named pipe (FIFO)", "null": "a character device"}
    for special in _specials(tmp_path):
        kind = _kind(special)
        out = tmp_path / f"run-{special.name}.trec"
        meta = Path(f"{out}.meta.json")
        meta.symlink_to(special)
        with pytest.raises(ConfigError) as exc:
            cli.main(["retrieve", "--corpus", str(corpus), "--bm25", "--topics", str(topics), "--hits", "2",
                      "--cache-dir", str(tmp_path / "cache"), "--output", str(out)])
        assert str(exc.value) == (f"--output {out}: {meta}, where the run's metadata goes, is {words[special.name]} "
                                  "(through a link), not a regular file; it is written to a temporary file renamed over "
                                  "it, which would replace it: remove it or give another --output")
        assert (_kind(meta), _kind(special), out.exists()) == ("link", kind, False)  # refused before the search
        assert not (tmp_path / "cache").exists()


def test_a_checksum_record_linked_to_a_socket_goes_to_the_cache_folder(tmp_path, monkeypatch):
    """``ln -s <device or socket> .tokrag_checksums.json`` in an index folder: the record goes to the cache folder, as
    for a read-only folder (88aafa8); the socket is left as it is (a socket, not a pipe: reading a pipe would wait for
    a writer)."""
    import socket

    import retrieval.bm25 as bm25
    from retrieval.io import LUCENE_CHECKSUMS

    d = tmp_path / "idx"
    d.mkdir()
    for name, payload in (("_0.si", b"segment info " * 20), ("segments_1", b"commit point")):
        data = bm25.LUCENE_HEADER + payload + bm25.LUCENE_FOOTER
        (d / name).write_bytes(data + zlib.crc32(data).to_bytes(8, "big"))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    (d / LUCENE_CHECKSUMS).symlink_to(tmp_path / "sock")
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    read: list[str] = []
    monkeypatch.setattr(bm25, "lucene_crc", lambda p, bar=None, _f=bm25.lucene_crc: read.append(Path(p).name) or _f(p, bar))
    assert bm25.lucene_checksum_damage(d) is None
    assert bm25.lucene_checksum_damage(d) is None
    assert read == ["_0.si", "segments_1"]  # verified once: the second use read the cache folder's record
    assert (_kind(d / LUCENE_CHECKSUMS), stat.S_ISSOCK(os.lstat(tmp_path / "sock").st_mode)) == ("link", True)
    sock.close()
    side = json.loads(bm25.checksum_record_elsewhere(d.resolve()).read_text(encoding="utf-8"))
    assert (side["folder"], sorted(side["files"])) == (str(d.resolve()), ["_0.si", "segments_1"])


def test_retrieve_probes_the_folder_a_metadata_link_points_into_before_the_search(tmp_path):
    """The ``.meta.json`` is written through its link, beside the link's target: a target in a folder that cannot be
    written (``/proc``; root ignores permission bits) was a FileNotFoundError traceback after the search, the search
    lost (before dfda533 the link was replaced); a dangling link is refused as for ``--output``."""
    import retrieval.cli as cli

    corpus, topics = tmp_path / "passages.jsonl", tmp_path / "topics.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": f"text {i} hamlet"}) + "\n"
                              for i in range(4)), encoding="utf-8")
    topics.write_text(json.dumps({"id": "q1", "question": "hamlet", "answers": ["x"]}) + "\n", encoding="utf-8")
    args = ["retrieve", "--corpus", str(corpus), "--bm25", "--topics", str(topics), "--hits", "2",
            "--cache-dir", str(tmp_path / "cache")]
    out = tmp_path / "run.trec"
    meta = Path(f"{out}.meta.json")
    meta.symlink_to("/proc/version")
    with pytest.raises(ConfigError) as exc:
        cli.main([*args, "--output", str(out)])
    assert str(exc.value).startswith(f"--output {out}: the run's metadata file /proc/version: cannot create it (/proc "
                                     "is not writable")
    meta.unlink()
    meta.symlink_to(tmp_path / "gone" / "meta.json")
    with pytest.raises(ConfigError) as exc:
        cli.main([*args, "--output", str(out)])
    assert str(exc.value) == (f"--output {out}: the run's metadata file {meta}: {meta} is a symbolic link to "
                              f"{tmp_path / 'gone' / 'meta.json'}, which does not exist; create its target or give "
                              "another path")
    assert not out.exists() and not (tmp_path / "cache").exists()  # refused before the search
    meta.unlink()
    assert cli.main([*args, "--output", str(out)]) == 0  # no link: as before
    assert json.loads(meta.read_text(encoding="utf-8"))["output"]["run"] == "run.trec"
