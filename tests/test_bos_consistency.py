"""One BOS convention for the RAG and the closed-book prompts of loglikelihood_rolling (Gemma and SmolLM2).

A later window's RAG prompt was ``BOS, passages block, window ids`` on Gemma while its closed-book prompt was the window
ids alone (lm-eval's ``hf``), so rag-none vs every passage method, and the RAG-vs-pure contrast inside CAD/AdaCAD/
Tok-RAG, measured the BOS (about 107 of a 118-nat "gain" on one window). The block is now encoded without a BOS, so
the two prompts differ by the block alone. Also: the ``add_bos_token=True`` model argument gave Gemma's first window
``[2, 2, ...]`` (lm-eval's ``tok_encode`` adds none to a text starting with the BOS text), and ``max_passage_tokens``
counted Gemma's BOS in later windows and QA prompts but not in the first window.
"""

from __future__ import annotations

import copy
import pickle

import pytest
from lm_eval.api.instance import Instance
from test_rolling_later_windows import window_plans

from tokrag_model.base import WindowContext
from tokrag_model.methods import load

DOC = {"question": "Where is the Eiffel Tower?", "answers": ["Paris"],
       "ctxs": [{"docid": "d1", "title": "Paris", "text": "Paris is the capital of France.", "rank": 1, "score": 2.0}]}
TEXT = ("The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named after the "
        "engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889. Locally nicknamed La "
        "dame de fer, it was constructed as the centrepiece of the 1889 World's Fair.")
BLOCK = "[Reference]: Paris\nParis is the capital of France.\n"
# the block's ids with no special token: SmolLM2-135M-Instruct, Gemma 3 270M
BLOCK_SMOLLM2 = [75, 23682, 7036, 7042, 198, 38634, 314, 260, 3575, 282, 4649, 30, 198]
BLOCK_GEMMA = [236840, 9313, 9414, 9079, 107, 50429, 563, 506, 5279, 529, 7001, 236761, 107]


def plans_of(lm, text=TEXT, doc=DOC, context=None, cont=None):
    """``[(context, plan)]`` of the windows of ``text`` (or of one loglikelihood request) as ``lm`` scores them."""
    return window_plans(lm, text, doc, context, cont)


def later_window_prompts(backbone, block):
    """Check that every later window's RAG prompt is ``block`` then its closed-book prompt, with no BOS first."""
    rag = plans_of(load("rag-standard").with_backbone(backbone, device="cpu", max_length=64))
    pure = plans_of(load("rag-none").with_backbone(backbone, device="cpu", max_length=64))
    assert len(rag) >= 3 and len(rag) == len(pure)
    bos = backbone.tokenizer.bos_token_id
    for (ctx, r), (_, p) in zip(rag[1:], pure[1:]):
        assert isinstance(ctx, WindowContext)
        (r_ids,), (p_ids,) = r.prompts, p.prompts
        assert p_ids == list(ctx.ids)
        assert r_ids == block + p_ids  # the pure ids are a suffix: the prompts differ by the block alone
        assert r_ids[0] != bos
        assert r.cont == p.cont


def test_smollm2_later_window_rag_prompt_is_block_then_pure_prompt(backbone):
    later_window_prompts(backbone, BLOCK_SMOLLM2)


@pytest.mark.slow
def test_gemma_later_window_rag_prompt_has_no_bos(gemma):
    assert gemma.tokenizer.encode(BLOCK, add_special_tokens=False) == BLOCK_GEMMA
    later_window_prompts(gemma, BLOCK_GEMMA)
    lm = load("tokrag").with_backbone(gemma, device="cpu", max_length=64)
    ctx = WindowContext("the window", [1437, 3606])
    enc = lm.encode_rag(DOC, ctx, None)
    assert (enc.ids, enc.span) == (BLOCK_GEMMA + [1437, 3606], (0, 13))
    assert lm.encode_pure(ctx, None).ids == [1437, 3606]


@pytest.mark.slow
def test_gemma_rag_none_multi_window_equals_lm_eval_hf(gemma):
    from lm_eval.models.huggingface import HFLM

    hf = HFLM(pretrained=gemma.model, tokenizer=gemma.tokenizer, batch_size=1, device="cpu", dtype="float32",
              max_length=32)  # hf's windows are max_length tokens, ours max_length // 2
    ours = load("rag-none").with_backbone(gemma, device="cpu", max_length=64)
    assert len(plans_of(ours)) >= 3
    req = lambda: [Instance("loglikelihood_rolling", DOC, (TEXT,), 0)]  # noqa: E731
    (ref,) = hf.loglikelihood_rolling(req(), disable_tqdm=True)
    (got,) = ours.loglikelihood_rolling(req(), disable_tqdm=True)
    assert got == pytest.approx(ref, abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("add_bos_token", [None, True])
def test_gemma_first_window_has_one_bos_with_add_bos_token(gemma, add_bos_token):
    kw = {} if add_bos_token is None else {"add_bos_token": add_bos_token}
    for name, head in (("rag-none", [2]), ("rag-standard", [2] + BLOCK_GEMMA)):
        lm = load(name).with_backbone(gemma, device="cpu", **kw)
        ((_, first), *_) = plans_of(lm, text="The Eiffel Tower is in Paris.")
        assert first.prompts == [head]
        assert first.cont == [2, 818, 94648, 25822, 563, 528, 9079, 236761]
        ((_, empty),) = plans_of(lm, context="", cont=" Paris")
        assert empty.prompts == [head]
    assert lm.prompts.encode("<bos>The") == [2, 818]  # lm-eval hf's tok_encode with add_bos_token=True


@pytest.mark.slow
@pytest.mark.parametrize("limit,cut", [(13, {"d1": [6, 7]}), (14, {})])
def test_gemma_max_passage_tokens_counts_the_bos_in_every_window(gemma, limit, cut):
    """The 13-token block counts 14 tokens (BOS + block) as in a QA prompt, in the first window and later ones: at 13
    the passage (7 tokens) does not fit whole and is cut to its first 6 (its final '.'), alike in every prompt."""
    lm = load("rag-standard").with_backbone(gemma, device="cpu", max_length=64, max_passage_tokens=limit)
    qa = lm.encode_rag(DOC, "Question: where?\nAnswer:", None)
    first = lm.encode_rag(DOC, lm.first_window_context(), None)
    later = lm.encode_rag(DOC, WindowContext("the window", [1437, 3606]), None)
    assert [(e.kept, e.cut) for e in (qa, first, later)] == [(["d1"], cut)] * 3
    assert first.ids == ([2] + BLOCK_GEMMA[:-2] + BLOCK_GEMMA[-1:] if cut else [2] + BLOCK_GEMMA)


def test_smollm2_max_passage_tokens_counts_the_block_alone(backbone):
    """SmolLM2 adds no BOS to a plain prompt: its 13-token block counts 13 everywhere (the prefix token not counted): at
    12 the passage is cut by its last token ('.'), alike in every prompt; at 6 not one token of it fits (closed-book)."""
    for limit, kept, cut in ((6, [], {}), (12, ["d1"], {"d1": [6, 7]}), (13, ["d1"], {})):
        lm = load("rag-standard").with_backbone(backbone, device="cpu", max_length=64, max_passage_tokens=limit)
        encs = [lm.encode_rag(DOC, c, None) for c in ("Question: where?\nAnswer:", lm.first_window_context(),
                                                       WindowContext("the window", [1437, 3606]))]
        assert [(e.kept, e.cut) for e in encs] == [(kept, cut)] * 3


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy, lambda w: pickle.loads(pickle.dumps(w)),
                                 lambda w: pickle.loads(pickle.dumps(w, protocol=0))])
def test_window_context_copies_keep_ids(how):
    w = WindowContext("the window", [1, 2, 3])
    r = how(w)
    assert type(r) is WindowContext and str(r) == "the window" and r.ids == (1, 2, 3)
