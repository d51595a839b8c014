"""Dense ``prefix_passage`` goes first: E5-style encoders get ``"passage: {title} {text}"``.

Pyserini's ``AutoDocumentEncoder.encode(texts, titles=...)`` prefixes the *text* and then puts the title in
front (``f'{title} {text}'``), so passages were encoded as ``"Paris passage: Paris is ..."``. The index and
:meth:`DenseSearcher.encode_passages` now build the string themselves; an index built with a passage prefix
before (no ``passage_format`` in its identity) is re-encoded with a warning, and nothing changes without a
prefix (same identity, same run keys, same vectors).
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import retrieval.dense as D
from retrieval import Corpus, Passage
from retrieval.dense import DENSE_PARAMS, DenseSearcher, build_dense_index, encoder_identity

E5 = {**DENSE_PARAMS, "prefix_passage": "passage:", "prefix_query": "query:"}


@pytest.fixture()
def corpus() -> Corpus:
    return Corpus([Passage("p1", "Paris", "Paris is the capital of France."),
                   Passage("p2", "Banana", "Bananas are an edible fruit.")], name="prefix")


@pytest.fixture()
def encoded(monkeypatch) -> list[str]:
    """Every string the passage encoder's tokenizer is given (``_doc_encoder`` spied on)."""
    seen: list[str] = []
    orig = D._doc_encoder

    def spied(p, device):
        enc = orig(p, device)
        tok = enc.tokenizer

        class Spy:
            def __getattr__(self, name):
                return getattr(tok, name)

            def __call__(self, *args, **kw):
                text = kw.get("text", args[0] if args else None)
                seen.extend([text] if isinstance(text, str) else text)
                return tok(*args, **kw)

        enc.tokenizer = Spy()
        return enc

    monkeypatch.setattr(D, "_doc_encoder", spied)
    return seen


def test_passage_prefix_comes_before_the_title(corpus, encoded, tmp_path):
    idx = build_dense_index(corpus, E5, cache_dir=tmp_path, progress=False)
    assert sorted(encoded) == ["passage: Banana Bananas are an edible fruit.", "passage: Paris Paris is the capital of France."]
    encoded.clear()
    s = DenseSearcher(idx, E5, corpus=corpus)
    fresh = s.encode_passages([("Rome", "Rome is the capital of Italy."), ("Paris", "Paris is the capital of France.")])
    assert encoded == ["passage: Rome Rome is the capital of Italy.", "passage: Paris Paris is the capital of France."]
    # the fresh vector of a stored passage is its stored vector (same string, same encoder)
    np.testing.assert_allclose(fresh[1], s.vectors(["p1"])[0], atol=1e-5)


def test_no_prefix_encodes_and_identifies_as_before(corpus, encoded, tmp_path):
    assert sorted(encoder_identity(DENSE_PARAMS)) == ["encoder", "encoder_sha256", "query_encoder", "query_encoder_sha256"]
    assert encoder_identity(E5)["passage_format"] == "prefix title text"
    # DPR ignores the prefix: its identity (and so its run keys and index) is unchanged
    assert "passage_format" not in encoder_identity({**E5, "encoder_class": "dpr"})
    build_dense_index(corpus, DENSE_PARAMS, cache_dir=tmp_path, progress=False)
    assert sorted(encoded) == ["Banana Bananas are an edible fruit.", "Paris Paris is the capital of France."]


def test_index_encoded_with_the_prefix_after_the_title_is_reencoded(corpus, encoded, tmp_path, caplog):
    idx = build_dense_index(corpus, E5, cache_dir=tmp_path, progress=False)
    meta_file = idx / "tokrag_index.json"
    meta = json.loads(meta_file.read_text())
    assert meta["encoder"]["passage_format"] == "prefix title text"
    del meta["encoder"]["passage_format"]  # as an index built before the fix records it
    meta_file.write_text(json.dumps(meta))
    encoded.clear()
    with caplog.at_level(logging.WARNING, logger="retrieval.dense"):
        assert build_dense_index(corpus, E5, index_dir=idx, progress=False) == idx
    assert "the passage prefix after the title" in caplog.text and len(encoded) == 2
    assert json.loads(meta_file.read_text())["encoder"]["passage_format"] == "prefix title text"
