"""A forced rebuild (``tokrag index build ... --force``) replaces the index folder so that at any instant it is the
complete old index or the complete new one, never a partly deleted folder.

Before the fix both builds ended ``shutil.rmtree(target); os.replace(new, target)``: a Ctrl-C during that
``rmtree`` left a partly deleted index in place (Lucene: "not a complete Lucene index"), and the new one sat in the
scratch folder that the build's ``finally`` then deleted. Now the old folder is first renamed aside into the build's
scratch folder (``retrieval.io.replace_folder``), the new one renamed in, and only then the old copy deleted; what an
interruption leaves beside the index is a scratch folder the next build removes (``remove_stale_scratch``).

A process killed (SIGKILL) between the two renames leaves no index folder and the scratch folder holding both
copies: the next build removes that scratch folder and builds the index again (it does not restore either copy).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrieval import Corpus, Passage
from retrieval.io import INDEX_META, read_index_meta

REPO = Path(__file__).resolve().parents[1]
CITIES = [("Paris", "France"), ("Berlin", "Germany"), ("Rome", "Italy"), ("Madrid", "Spain"), ("Lisbon", "Portugal"),
          ("Vienna", "Austria"), ("Athens", "Greece"), ("Oslo", "Norway"), ("Warsaw", "Poland"), ("Dublin", "Ireland")]


def _corpus(name: str, reverse: bool = False) -> Corpus:
    rows = CITIES[::-1] if reverse else CITIES
    return Corpus([Passage(f"d{i}", city, f"{city} is the capital of {country}.") for i, (city, country) in enumerate(rows)],
                  name=name)


def _leftovers(target: Path) -> list[str]:
    return sorted(p.name for p in target.parent.glob(f".{target.name}.*"))


def _interrupting_rmtree(monkeypatch) -> list[str]:
    """Make ``shutil.rmtree``, on its first call over an index folder (one holding tokrag_index.json), delete the
    files that make the folder an index (meta, Lucene's segments_N, FAISS's index) and raise KeyboardInterrupt, as
    Ctrl-C during the deletion; every later call does nothing (the process is going down: no clean-up finishes)."""
    hit: list[str] = []
    real = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        if hit:
            return None
        p = Path(path)
        if (p / INDEX_META).is_file():
            hit.append(str(p))
            for f in [p / INDEX_META, p / "index", *p.glob("segments_*")]:
                if f.is_file():
                    f.unlink()
            raise KeyboardInterrupt
        return real(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    return hit


def test_bm25_forced_rebuild_interrupted_while_deleting_the_old_index(tmp_path, monkeypatch, caplog):
    from retrieval.bm25 import Bm25Searcher, build_bm25_index

    old, new = _corpus("old"), _corpus("new", reverse=True)
    target = build_bm25_index(old, tmp_path / "idx")
    hit = _interrupting_rmtree(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        build_bm25_index(new, target, force=True)
    assert hit  # the deletion of the old index was interrupted
    monkeypatch.undo()
    # the folder is the complete new index (the old one was moved aside before it was deleted)
    assert read_index_meta(target)["corpus_fingerprint"] == new.fingerprint
    assert Bm25Searcher(target, corpus=new).search("capital of Germany", 1)[0][0] == "d8"
    assert _leftovers(target)  # the half-deleted old copy, in the build's scratch folder
    caplog.set_level("INFO", logger="retrieval")
    assert build_bm25_index(new, target) == target  # reused, and the leftover is removed
    assert not _leftovers(target) and "left by an interrupted BM25 index build" in caplog.text
    assert Bm25Searcher(target, corpus=new).search("capital of Germany", 1)[0][0] == "d8"


def test_bm25_build_killed_between_the_two_renames_is_rebuilt(tmp_path, caplog):
    from retrieval.bm25 import Bm25Searcher, build_bm25_index

    old, new = _corpus("old"), _corpus("new", reverse=True)
    target = build_bm25_index(old, tmp_path / "idx")
    child = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from retrieval import Corpus, Passage
        from retrieval.bm25 import build_bm25_index

        real = os.replace
        def replace(src, dst):
            if Path(dst) == Path({str(target)!r}):  # the new index is about to be renamed in: kill -9
                os.kill(os.getpid(), signal.SIGKILL)
            return real(src, dst)
        os.replace = replace
        passages = {[(p.docid, p.title, p.text) for p in new]!r}
        build_bm25_index(Corpus([Passage(*p) for p in passages], name="new"), {str(target)!r}, force=True)
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == -signal.SIGKILL, done.stderr
    (scratch,) = _leftovers(target)
    assert not target.exists() and {"old", "index"} <= {p.name for p in (target.parent / scratch).iterdir()}
    caplog.set_level("INFO", logger="retrieval")
    assert build_bm25_index(new, target) == target  # built again; the scratch folder with both copies removed
    assert not _leftovers(target) and "left by an interrupted BM25 index build" in caplog.text
    assert read_index_meta(target)["corpus_fingerprint"] == new.fingerprint
    assert Bm25Searcher(target, corpus=new).search("capital of Germany", 1)[0][0] == "d8"


def test_dense_forced_rebuild_interrupted_while_deleting_the_old_index(tmp_path, monkeypatch, caplog):
    from retrieval.dense import DENSE_PARAMS, DenseSearcher, build_dense_index

    corpus = _corpus("dense")
    target = build_dense_index(corpus, DENSE_PARAMS, index_dir=tmp_path / "idx", progress=False)
    before = (target / "index").stat().st_mtime_ns
    hit = _interrupting_rmtree(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        build_dense_index(corpus, DENSE_PARAMS, index_dir=target, force=True, progress=False)
    assert hit
    monkeypatch.undo()
    assert read_index_meta(target)["corpus_fingerprint"] == corpus.fingerprint
    assert (target / "index").stat().st_mtime_ns != before  # the new build's files, complete
    hits = DenseSearcher(target, DENSE_PARAMS, corpus=corpus).batch_search({"q": "capital of Germany"}, 1)
    assert [d for d, _ in hits["q"]] == ["d1"]
    assert _leftovers(target)
    caplog.set_level("INFO", logger="retrieval")
    assert build_dense_index(corpus, DENSE_PARAMS, index_dir=target, progress=False) == target
    assert not _leftovers(target) and "left by an interrupted dense index build" in caplog.text


def _folder(path: Path, text: str) -> Path:
    path.mkdir()
    (path / "f").write_text(text)
    return path


def test_replace_folder_puts_the_old_folder_back_when_interrupted_between_the_renames(tmp_path, monkeypatch):
    from retrieval.io import replace_folder

    target, new = _folder(tmp_path / "t", "old"), _folder(tmp_path / "n", "new")
    aside = tmp_path / "scratch" / "old"
    aside.parent.mkdir()
    real = os.replace

    def replace(src, dst):
        if Path(src) == new:  # Ctrl-C just before the new folder is renamed in
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        replace_folder(new, target, aside)
    monkeypatch.undo()
    assert (target / "f").read_text() == "old" and not aside.exists() and (new / "f").read_text() == "new"
    replace_folder(new, target, aside)
    assert (target / "f").read_text() == "new" and not aside.exists() and not new.exists()
    replace_folder(_folder(tmp_path / "n2", "newer"), tmp_path / "absent", aside)  # no old folder: renamed in
    assert (tmp_path / "absent" / "f").read_text() == "newer"
