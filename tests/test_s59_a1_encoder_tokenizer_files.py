"""s59 a1: a dense encoder's sentencepiece / tiktoken tokenizer file is part of its identity.

``retrieval.dense.weights_hash`` (the ``encoder_sha256`` of the dense index folder and of the run-cache key) hashed
only ``.safetensors/.bin/.pt/.json/.txt`` files. An encoder folder tokenized by a sentencepiece ``spiece.model``
(no ``tokenizer.json``: transformers builds the tokenizer from the ``.model`` file) whose tokenizer was replaced at
the same path kept its key: ``retrieve`` returned the old tokenizer's cached run (0 searches) although the same
request computed afresh ranks the passages with other scores.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import pytest

spm = pytest.importorskip("sentencepiece")

from retrieval.dense import DENSE_PARAMS, dense_index_dir, encoder_identity, weights_hash  # noqa: E402


def _spm_model(lines: list[str]) -> bytes:
    """A small unigram sentencepiece model trained on ``lines`` (deterministic for the same lines)."""
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buf, vocab_size=60, model_type="unigram",
                                   pad_id=0, unk_id=1, bos_id=2, eos_id=3, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
                                   minloglevel=2, num_threads=1)
    return buf.getvalue()


TEXT_A = [f"alpha{i} beta{i % 7} gamma{i % 5} city river mountain paris london rome" for i in range(400)]
TEXT_B = [f"zeta{i} omega{i % 3} delta{i % 11} ocean desert forest tokyo berlin oslo" for i in range(400)]


def _replace_keeping_mtime(path: Path, data: bytes) -> None:
    st = path.stat()
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as cp -p / rsync -a leave it


def _albert_encoder(folder: Path) -> Path:
    """A tiny random ALBERT encoder tokenized by ``spiece.model`` alone (no ``tokenizer.json``)."""
    import torch
    from transformers import AlbertConfig, AlbertModel

    folder.mkdir()
    (folder / "spiece.model").write_bytes(_spm_model(TEXT_A))
    torch.manual_seed(0)
    AlbertModel(AlbertConfig(vocab_size=200, embedding_size=16, hidden_size=32, num_hidden_layers=1,
                             num_attention_heads=2, intermediate_size=32)).save_pretrained(folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "AlbertTokenizer", "do_lower_case": True}))
    return folder


@pytest.mark.parametrize("name", ["spiece.model", "sentencepiece.bpe.model", "tokenizer.tiktoken"])
def test_weights_hash_follows_a_tokenizer_file_replaced_in_place(tmp_path, name):
    enc = tmp_path / "enc"
    enc.mkdir()
    (enc / "config.json").write_text('{"model_type": "albert"}')
    (enc / name).write_bytes(b"A" * 64)
    before = weights_hash(enc)
    params = {**DENSE_PARAMS, "encoder": str(enc)}
    ident, index = encoder_identity(params), dense_index_dir(_corpus(), params, tmp_path / "cache")
    _replace_keeping_mtime(enc / name, b"B" * 64)  # same size, same mtime
    assert weights_hash(enc) != before
    assert encoder_identity(params)["encoder_sha256"] != ident["encoder_sha256"]
    assert encoder_identity(params)["query_encoder_sha256"] != ident["query_encoder_sha256"]
    assert dense_index_dir(_corpus(), params, tmp_path / "cache") != index


def test_folder_without_tokenizer_model_keys_as_before():
    """The packaged MiniLM encoder (vocab.txt, tokenizer.json, no .model file): the same hash as before s59."""
    from retrieval.dense import resolve_encoder

    enc = resolve_encoder("all-MiniLM-L6-v2")
    h = hashlib.sha256()
    for f in sorted(enc.iterdir()):
        if f.suffix in (".safetensors", ".bin", ".pt", ".json", ".txt") and f.is_file():
            h.update(f.name.encode())
            h.update(f.read_bytes())
    assert weights_hash(enc) == h.hexdigest()[:16]


def _corpus():
    from retrieval.corpus import Corpus, Passage

    texts = ["paris city river", "london mountain", "rome alpha3 beta2", "tokyo ocean", "berlin forest", "oslo desert"]
    return Corpus([Passage(f"d{i}", f"T{i}", t) for i, t in enumerate(texts)], name="c")


def test_cached_run_not_reused_after_the_tokenizer_is_replaced(tmp_path, one_thread):
    from transformers import AutoTokenizer

    from retrieval import retrieve

    enc = _albert_encoder(tmp_path / "enc")
    queries = {"q1": "paris river", "q2": "tokyo ocean"}
    params = {"encoder": str(enc), "pooling": "mean", "max_length": 32}
    old_tokens = AutoTokenizer.from_pretrained(enc).tokenize("tokyo ocean")
    first = retrieve(_corpus(), queries, "dense", k=3, params=params, cache_dir=tmp_path / "cache")
    assert first.searches == 2

    _replace_keeping_mtime(enc / "spiece.model", _spm_model(TEXT_B))
    assert AutoTokenizer.from_pretrained(enc).tokenize("tokyo ocean") != old_tokens  # the premise: other tokens

    again = retrieve(_corpus(), queries, "dense", k=3, params=params, cache_dir=tmp_path / "cache")
    fresh = retrieve(_corpus(), queries, "dense", k=3, params=params, cache_dir=tmp_path / "fresh-cache")
    assert again.searches == 2  # recomputed, not the old tokenizer's run (was 0)
    assert again.fingerprint != first.fingerprint
    assert again.ctxs == fresh.ctxs
    assert [c["score"] for c in again.ctxs["q2"]] != [c["score"] for c in first.ctxs["q2"]]
