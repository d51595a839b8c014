"""The request type reaches a doc's passages refusal as an argument, not as model state (s50 f1).

The refusal of a doc without passages names an example task of the request type
(:func:`tokrag_model.prompt.no_passages_message`). The type was the model's ``request_kind``, set when
``generate_until`` / ``loglikelihood`` / ``loglikelihood_rolling`` started: lm-eval's ``--use_cache`` keys every
request (``response_cache_args``, where rag-replug notes the doc's τ and so reads its passages) before it calls the
model, so ``lm_eval --model rag-replug --tasks wikitext --use_cache C`` was told to use the QA task nq_open_bm25 (the
type unset on a fresh model, or the type of the model's previous call). Each entry point passes its type down now.
SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import re

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import CachingLM

from retrieval.errors import DataError
from tokrag_model.methods.replug import ReplugLM

TEXT = "The river runs to the sea. Mountains rise above the clouds in the north."
USE = {"loglikelihood_rolling": "use a language-modelling retrieval task (for instance wiki_lm_bm25, or "
                                "wikitext103_bm25_wiki for WikiText-103, from tasks/)",
       "loglikelihood": "use a retrieval task from tasks/ (a QA one such as nq_open_bm25, or a language-modelling one "
                        "such as wiki_lm_bm25)",
       "generate_until": "use a retrieval task (for instance nq_open_bm25 from tasks/)"}
ARGS = {"loglikelihood_rolling": (TEXT,), "loglikelihood": ("The river", " runs to the sea."),
        "generate_until": ("Q: who?\nA:", {"until": ["\n"], "max_gen_toks": 4})}


def _refusal(kind: str) -> str:
    return ("--model rag-replug needs retrieved passages in doc['ctxs'], but this task's docs have none (doc keys: "
            f"['page']); {USE[kind]}, or --model rag-none for closed-book")


def test_use_cache_keys_a_request_with_the_example_of_its_own_type(backbone, tmp_path):
    """Through lm-eval's ``CachingLM`` (``--use_cache``), on a fresh model, then after the model's own call of another
    type: the old code named nq_open_bm25 for the rolling and loglikelihood requests (``request_kind`` unset, or left
    by the model's last call: a generation's)."""
    lm = ReplugLM.with_backbone(backbone, device="cpu")
    lm.start_evaluation(use_cache=True)
    cached = CachingLM(lm, str(tmp_path / "cache"))
    try:
        for kind in ("loglikelihood_rolling", "loglikelihood", "generate_until", "loglikelihood_rolling",
                     "loglikelihood"):
            req = Instance(kind, {"page": TEXT}, ARGS[kind], 0, metadata=("wikitext", 0, 1))
            with pytest.raises(DataError, match=f"^{re.escape(_refusal(kind))}$"):
                getattr(cached, kind)([req])  # keyed (and refused) before the model is called
            with pytest.raises(DataError, match=f"^{re.escape(_refusal(kind))}$"):
                getattr(lm, kind)([req])  # the model's own call (the old code recorded its type)
    finally:
        cached.dbdict.close()
    assert lm.stats["forward_passes"] == 0
