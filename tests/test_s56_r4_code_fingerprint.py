"""Review of f4's code fingerprints (s56 r4; :func:`retrieval.io.source_fingerprint`, :func:`retrieval.cache.run_code`).

* A run over a Pyserini prebuilt corpus records in its ctxs rows the title and text that
  ``retrieval.corpus._split_contents`` cuts from the index's stored raw document (``Bm25Searcher.passage``), and its
  corpus key is the index's name and checksum, not the parsed passages: an edit of that split must re-key prebuilt
  runs (it kept them: ``retrieval.corpus`` was not in their code), and it must not re-key local-corpus runs.
* A module without a ``.py`` file (bytecode-only install, a built-in) gave a UnicodeDecodeError or FileNotFoundError
  traceback; now one ConfigError line naming the module and what to do. A source file with a PEP 263 coding line is
  read as Python reads it (``read_text(encoding="utf-8")`` failed on it).

Edits are simulated as in tests/test_s56_f4_retrieval_code_key.py: the fingerprint reads an edited copy of the file
(``retrieval.io._module_file`` patched)."""

from __future__ import annotations

import importlib
import py_compile
import sys
from pathlib import Path

import pytest

import retrieval.io
from retrieval.errors import ConfigError


@pytest.fixture(autouse=True)
def forget():
    """The per-process fingerprints forgotten before and after each test."""
    def clear() -> None:
        for name in ("source_fingerprint", "_module_code"):
            if hasattr(retrieval.io, name):
                getattr(retrieval.io, name).cache_clear()
    clear()
    yield
    clear()


def test_an_edit_of_the_raw_document_split_rekeys_prebuilt_runs_only(monkeypatch, tmp_path):
    from retrieval.cache import run_code

    before = {(r, p): run_code(r, prebuilt=p) for r in ("bm25", "dense", "hybrid") for p in (False, True)}
    real = retrieval.io._module_file
    source = real("retrieval.corpus").read_text(encoding="utf-8")
    old = "        head = head[1:-1]\n"
    assert source.count(old) == 1  # _split_contents drops one pair of quotes around the title
    copy = tmp_path / "corpus.py"
    copy.write_text(source.replace(old, "        head = head.strip('\"')\n"), encoding="utf-8")
    monkeypatch.setattr(retrieval.io, "_module_file", lambda m: copy if m == "retrieval.corpus" else real(m))
    retrieval.io.source_fingerprint.cache_clear()
    retrieval.io._module_code.cache_clear()
    after = {(r, p): run_code(r, prebuilt=p) for r in ("bm25", "dense", "hybrid") for p in (False, True)}
    assert [k for k in before if before[k] != after[k]] == [("bm25", True), ("dense", True), ("hybrid", True)]


def _sourceless_package(root: Path) -> str:
    """A package ``s56r4_sourceless`` under ``root``: ``m`` as bytecode only (``m.pyc`` beside, no ``m.py``), and
    ``latin`` a source file with a latin-1 coding line."""
    pkg = root / "s56r4_sourceless"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "m.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    py_compile.compile(str(pkg / "m.py"), cfile=str(pkg / "m.pyc"), doraise=True)
    (pkg / "m.py").unlink()
    (pkg / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n")
    return pkg.name


def test_a_module_without_source_is_one_clear_line(monkeypatch, tmp_path):
    name = _sourceless_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        importlib.import_module(f"{name}.m")
        with pytest.raises(ConfigError) as err:
            retrieval.io.source_fingerprint((f"{name}.m",))
        msg = str(err.value)
        assert "\n" not in msg
        assert msg == (f"code fingerprint: module '{name}.m' has no Python source file ({tmp_path / name / 'm.pyc'}); "
                       "the run cache and indexes are keyed by the retrieval code's source: install tokrag with its "
                       ".py files (pip install -e . from a checkout, or its wheel)")
        with pytest.raises(ConfigError, match=r"^code fingerprint: module 'sys' has no Python source file \(built-in\)"):
            retrieval.io.source_fingerprint(("sys",))
        with pytest.raises(ConfigError, match=rf"^code fingerprint: module '{name}.nope' has no Python source file "
                                              r"\(not found\)"):
            retrieval.io.source_fingerprint((f"{name}.nope",))
        # a coding line is honoured as by the import: the same code as the UTF-8 spelling of the same source
        latin = retrieval.io.source_fingerprint((f"{name}.latin",))
        assert len(latin) == 16
        assert retrieval.io.normalised_source((tmp_path / name / "latin.py").read_bytes()) == \
            retrieval.io.normalised_source("NAME = 'caf\u00e9'\n")
    finally:
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[mod]


def test_a_docstring_edit_keeps_the_bm25_index_on_a_cache_miss(monkeypatch, tmp_path):
    """tests/test_s56_f4_retrieval_code_key.py's docstring test asks the cached query again: the run is served and the
    index is never opened, so its 'not rebuilt' held whatever the index check did. Here a new query misses the run
    cache, so build_bm25_index decides: a docstring edit of bm25.py reuses the index, a code edit rebuilds it."""
    import retrieval.bm25
    from retrieval import Corpus, Passage, retrieve

    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")  # the build runs here, where the counter is
    builds: list[str] = []
    real_scratch = retrieval.bm25.scratch_dir
    monkeypatch.setattr(retrieval.bm25, "scratch_dir", lambda *a, **k: builds.append("build") or real_scratch(*a, **k))
    toy = Corpus([Passage("t1", "Zebra", "a striped animal"), Passage("t2", "Horse", "the capital city")],
                 name="toy-r4-docstring")
    cache = tmp_path / "cache"
    assert retrieve(toy, {"q1": "zebra"}, k=1, cache_dir=cache).searches == 1 and builds == ["build"]
    real = retrieval.io._module_file
    source = real("retrieval.bm25").read_text(encoding="utf-8")
    doc = "The ``contents`` field of a passage in tokrag's Lucene indexes"
    assert source.count(doc) == 1
    copy = tmp_path / "bm25.py"
    copy.write_text(source.replace(doc, "What Lucene indexes of a passage\n    # a comment\n   "), encoding="utf-8")
    monkeypatch.setattr(retrieval.io, "_module_file", lambda m: copy if m == "retrieval.bm25" else real(m))
    retrieval.io.source_fingerprint.cache_clear()
    retrieval.io._module_code.cache_clear()
    second = retrieve(toy, {"q2": "capital"}, k=1, cache_dir=cache)
    assert second.searches == 1 and second.docids("q2") == ["t2"]  # a miss: the index was opened
    assert builds == ["build"]  # and reused
    copy.write_text(source + "\n_R4_CODE_EDIT = 1\n", encoding="utf-8")  # a code edit: the index code changes
    retrieval.io.source_fingerprint.cache_clear()
    retrieval.io._module_code.cache_clear()
    assert retrieve(toy, {"q3": "striped"}, k=1, cache_dir=cache).searches == 1
    assert builds == ["build", "build"]  # rebuilt under the new index code
