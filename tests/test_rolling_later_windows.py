"""loglikelihood_rolling's later windows carry their context's token ids (the passages block's ids in front).

A later window's context used to be its ids decoded to text and encoded again, which changed the ids where a window
boundary split a multi-byte character (below: the window that starts inside "東京" began with byte token 126 and was
re-encoded as 24211) and added a BOS to every later window on Gemma, where lm-eval's ``hf`` scores the window's ids as
they are. rag-none now equals ``hf``'s loglikelihood_rolling on a multi-window text.
"""

from __future__ import annotations

import pytest
from lm_eval import utils
from lm_eval.api.instance import Instance

from tokrag_model.base import WindowContext
from tokrag_model.methods import load

TEXT = ("The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen, \"in recognition of the "
        "extraordinary services he has rendered by the discovery of the remarkable rays subsequently named after him\". "
        "Naïve café owners in São Paulo—and 東京—celebrated; résumé   spacing  and\ttabs\nnew lines, emoji 🎉🎉 too.")
DOC = {"question": "Who won the first Nobel Prize in Physics?", "answers": ["Röntgen"],
       "ctxs": [{"docid": "d1", "title": "Röntgen", "text": "Wilhelm Röntgen discovered X-rays.", "rank": 1, "score": 2.0}]}


def window_plans(lm, text=TEXT, doc=DOC, context=None, cont=None):
    """``[(context, plan)]`` of every window of ``text`` as ``lm`` scores it (its score_plan spied on), or, with
    ``context``, of one loglikelihood request ``(context, cont)``."""
    seen = []
    real = lm.score_plan

    def spy(d, c, k, b):
        seen.append((c, real(d, c, k, b)))
        return seen[-1][1]

    lm.score_plan = spy
    try:
        if context is None:
            lm.loglikelihood_rolling([Instance("loglikelihood_rolling", doc, (text,), 0)], disable_tqdm=True)
        else:
            lm.loglikelihood([Instance("loglikelihood", doc, (context, cont), 0)], disable_tqdm=True)
    finally:
        del lm.score_plan
    return seen


def reference_windows(lm, text=TEXT):
    return list(map(utils.make_disjoint_window, utils.get_rolling_token_windows(
        token_list=lm.prompts.encode(text), prefix_token=lm.rolling_prefix_token_id, max_seq_len=lm.max_length // 2,
        context_len=1)))


@pytest.fixture(scope="module")
def none64(backbone):
    return load("rag-none").with_backbone(backbone, device="cpu", max_length=64)  # 32-token windows


def test_rag_none_multi_window_equals_lm_eval_hf(backbone, none64):
    from lm_eval.models.huggingface import HFLM

    hf = HFLM(pretrained=backbone.model, tokenizer=backbone.tokenizer, batch_size=1, device="cpu", dtype="float32",
              max_length=32)  # hf's windows are max_length tokens, ours max_length // 2
    req = lambda: [Instance("loglikelihood_rolling", DOC, (TEXT,), 0)]  # noqa: E731
    (ref,) = hf.loglikelihood_rolling(req(), disable_tqdm=True)
    (ours,) = none64.loglikelihood_rolling(req(), disable_tqdm=True)
    assert len(reference_windows(none64)) >= 3
    assert ours == pytest.approx(ref, abs=1e-3)


def test_pure_prompt_of_a_later_window_is_its_context_ids(none64):
    wins = reference_windows(none64)
    seen = window_plans(none64)
    assert [p.prompts for _, p in seen[1:]] == [[list(c)] for c, _ in wins[1:]]
    assert [p.cont for _, p in seen] == [list(t) for _, t in wins]
    split = [list(c) for c, _ in wins[1:] if none64.prompts.encode(none64.tokenizer.decode(c)) != list(c)]
    assert split, "the text must have a window whose context does not survive decode/encode"
    assert all(isinstance(c, WindowContext) for c, _ in seen[1:])


def test_rag_prompt_of_a_later_window_is_block_ids_then_context_ids(backbone):
    lm = load("rag-standard").with_backbone(backbone, device="cpu", max_length=64)
    block = lm.prompts.encode("[Reference]: Röntgen\nWilhelm Röntgen discovered X-rays.\n")
    wins = reference_windows(lm)
    seen = window_plans(lm)
    assert [p.prompts for _, p in seen[1:]] == [[block + list(c)] for c, _ in wins[1:]]
    enc = lm.encode_rag(DOC, seen[1][0], None)
    assert enc.span == (0, len(block)) and enc.kept == ["d1"]


def test_a_later_window_drops_passages_by_the_budget(backbone):
    lm = load("rag-standard").with_backbone(backbone, device="cpu")
    ctx = WindowContext("the window", lm.prompts.encode("the window"))
    enc = lm.encode_rag(DOC, ctx, len(ctx.ids) + 3)
    assert (enc.ids, enc.kept, enc.dropped) == (list(ctx.ids), [], ["d1"])
