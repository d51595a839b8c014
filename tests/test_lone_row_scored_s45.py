"""A lone row of a rule that records its log-probs (:class:`tokrag_model.base.ScoredBranch`: REPLUG ``answer_vote``'s
and Self-RAG filter ``selection=rank``'s per-passage answers) gives bitwise the numbers it gets inside a batch, with
batch invariance; any other lone row (``rag-none``, ``rag-standard``, the filter's generation) keeps MKL's one-row
kernel. The old code decoded every lone row on the one-row kernel: ``rag-selfrag-filter selection=rank`` on
``nq_oracle_bm25`` (limit 4, k=5, max_gen_toks 12), whose 4th question keeps one passage, logged seq_prob 0.369653 and
score 1.530279 at batch 1 against 0.369654 / 1.53028 at batch 4. Real SmolLM2-135M-Instruct (tests/conftest.py)."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from tokrag_model.base import ScoredBranch, SingleBranch
from tokrag_model.decoder import generate
from tokrag_model.methods.standard import RagStandardLM

MAX_TOKS = 12
TEXTS = ["Question: what does hp mean in war and order?\nAnswer:",
         "Passage: Paris is the capital and largest city of France.\nQuestion: what is the capital of France?\nAnswer:",
         "Question: who wrote the novel Moby-Dick?\nAnswer:",
         "Passage: The Nile is a major north-flowing river in northeastern Africa.\nQuestion: where is the Nile?\n"
         "Answer:"]


@pytest.fixture(scope="module")
def lm(backbone):
    lm = RagStandardLM.with_backbone(backbone)
    assert lm.decoder.batch_invariant  # the CPU default
    return lm


def _rows(lm):
    return [lm.tokenizer.encode(t) for t in TEXTS]


def _counting(dec):
    """Wrap ``dec.invariant_products`` to count the decode steps that enter it (``calls``)."""
    calls = []
    inner = dec.invariant_products

    @contextmanager
    def counted():
        calls.append(1)
        with inner():
            yield

    return counted, calls


def test_a_lone_scored_row_records_the_log_probs_it_records_inside_a_batch(lm, monkeypatch):
    rows = _rows(lm)
    dec = lm.decoder
    batched = [ScoredBranch(r) for r in rows]
    out4 = generate(dec, lm.tokenizer, batched, [], MAX_TOKS, lm.eos_ids)
    counted, calls = _counting(dec)
    monkeypatch.setattr(dec, "invariant_products", counted)
    for i, row in enumerate(rows):
        lone = ScoredBranch(row)
        calls.clear()
        (out1,) = generate(dec, lm.tokenizer, [lone], [], MAX_TOKS, lm.eos_ids)
        assert out1 == out4[i]
        assert lone.logprobs == batched[i].logprobs, i  # bitwise (old: the one-row kernel, last bits differ)
        assert len(calls) == len(out1) - (len(out1) == MAX_TOKS)  # every decode step on the invariant products


def test_other_lone_rows_keep_the_one_row_kernel(lm, monkeypatch):
    """``rag-standard`` and the filter's generation (SingleBranch) at batch 1: no empty rows and no packed products,
    as before (speed; their traces hold no decode-step numbers)."""
    dec = lm.decoder
    assert not SingleBranch.records_logprobs and ScoredBranch.records_logprobs
    counted, calls = _counting(dec)
    monkeypatch.setattr(dec, "invariant_products", counted)
    extras = []
    step = dec.step
    monkeypatch.setattr(dec, "step", lambda batch, *a, **kw: extras.append(batch.extra) or step(batch, *a, **kw))
    row = _rows(lm)[1]
    out = generate(dec, lm.tokenizer, [SingleBranch(row)], [], MAX_TOKS, lm.eos_ids)
    assert len(out[0]) > 1 and extras and set(extras) == {0} and calls == []
    assert dec.prefill([row]).extra == 0 and dec.prefill([row], pad_lone=True).extra == max(dec.min_gemm_rows, 2) - 1


def test_without_batch_invariance_a_lone_scored_row_is_not_padded(backbone):
    plain = RagStandardLM.with_backbone(backbone, batch_invariant=False)
    row = _rows(plain)[0]
    assert plain.decoder.prefill([row], pad_lone=True).extra == 0
    lone = ScoredBranch(row)
    (out,) = generate(plain.decoder, plain.tokenizer, [lone], [], MAX_TOKS, plain.eos_ids)
    assert len(lone.logprobs) == len(out) + (len(out) < MAX_TOKS)
