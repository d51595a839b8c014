"""build_qa_docs refuses a k that is not a whole number (int(2.5) gave 2 passages per question, silently)."""
import json

import pytest

from retrieval.errors import ConfigError


def _files(tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"id": "a", "question": "capital of France", "answers": ["Paris"]}) + "\n")
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": "Paris", "text": f"Paris is the capital of France {i}."}) + "\n"
                              for i in range(4)))
    return qs, corpus


@pytest.mark.parametrize("k", [2.5, "2.5", float("nan"), float("inf"), "two"])
def test_the_qa_docs_refuse_a_non_integral_k(tmp_path, k):
    from tasks.rag import build_qa_docs

    qs, corpus = _files(tmp_path)
    msg = f"k={k!r}: the number of passages per question must be an integer >= 1"
    with pytest.raises(ConfigError) as e:
        build_qa_docs("byo", questions=str(qs), corpus=str(corpus), k=k, cache_dir=tmp_path / "cache")
    assert str(e.value) == msg


def test_the_qa_docs_take_a_whole_k_in_any_form(tmp_path):
    import numpy as np

    from tasks.rag import build_qa_docs

    qs, corpus = _files(tmp_path)
    for k in (2, 2.0, "2", np.int64(2)):
        docs = build_qa_docs("byo", questions=str(qs), corpus=str(corpus), k=k, cache_dir=tmp_path / "cache")
        assert [len(d["ctxs"]) for d in docs] == [2], k
