"""One BOS convention for the RAG and the closed-book prompts of loglikelihood_rolling (Gemma and SmolLM2).

A later window's RAG prompt was ``BOS, passages block, window ids`` on Gemma while its closed-book prompt was the window
ids alone (lm-eval's ``hf``), so rag-none vs every passage method, and the RAG-vs-pure contrast inside CAD/AdaCAD/
Tok-RAG, measured the BOS (about 107 of a 118-nat "gain" on one window). The block is now encoded without a BOS, so
the two prompts differ by the block alone. Also: the ``add_bos_token=True`` model argument gave Gemma's first window
``[2, 2, ...]`` (lm-eval's ``tok_encode`` adds none to a text starting with the BOS text), and ``max_passage_tokens``
counted Gemma's BOS in later windows and QA prompts but not in the first window.
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

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


@pytest.fixture(scope="module")
def gemma():
    from tokrag_model.base import Backbone

    return Backbone.load("gemma-3-270m")


def plans_of(lm, text=TEXT, doc=DOC, context=None, cont=None):
    """``[(context, plan)]`` of the windows of ``text`` (or of one loglikelihood request) as ``lm`` scores them."""
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
@pytest.mark.parametrize("limit,kept", [(13, []), (14, ["d1"])])
def test_gemma_max_passage_tokens_counts_the_bos_in_every_window(gemma, limit, kept):
    """The 13-token block counts 14 tokens (BOS + block) as in a QA prompt, in the first window and later ones."""
    lm = load("rag-standard").with_backbone(gemma, device="cpu", max_length=64, max_passage_tokens=limit)
    qa = lm.encode_rag(DOC, "Question: where?\nAnswer:", None)
    assert qa.kept == kept
    first = lm.encode_rag(DOC, lm.first_window_context(), None)
    later = lm.encode_rag(DOC, WindowContext("the window", [1437, 3606]), None)
    assert (first.kept, later.kept) == (kept, kept)
    assert first.ids == ([2] + BLOCK_GEMMA if kept else [2])


def test_smollm2_max_passage_tokens_counts_the_block_alone(backbone):
    """SmolLM2 adds no BOS to a plain prompt: its 13-token block counts 13 everywhere (the prefix token not counted)."""
    for limit, kept in ((12, []), (13, ["d1"])):
        lm = load("rag-standard").with_backbone(backbone, device="cpu", max_length=64, max_passage_tokens=limit)
        encs = [lm.encode_rag(DOC, c, None) for c in ("Question: where?\nAnswer:", lm.first_window_context(),
                                                       WindowContext("the window", [1437, 3606]))]
        assert [e.kept for e in encs] == [kept] * 3
