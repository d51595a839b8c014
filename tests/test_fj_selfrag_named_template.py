"""``rag-selfrag-filter``'s critic under a named chat template (``--apply_chat_template rag`` over a tokenizer whose
``tokenizer_config.json`` names ``default`` and ``rag``: tests/test_ff_multi_chat_template.py's folder). The critic
prompt is rendered with the template of the evaluation, as the answer prompts are; and its ratios are cached per
template: before the fix a model object reused for a second evaluation under another template returned the first
evaluation's ratios (rendered with the other template) for the same question and passages. SmolLM2's weights."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_ff_multi_chat_template import RAG_SYSTEM, SYSTEM, folders, multi_tok  # noqa: F401 - fixtures
from test_ff_multi_chat_template import pytestmark as _needs_smollm2

pytestmark = [_needs_smollm2, pytest.mark.slow]

P1 = {"docid": "p1", "title": "Nobel Prize in Physics",
      "text": "The first prize was awarded in 1901 to Wilhelm Röntgen."}
P2 = {"docid": "p2", "title": "Paris", "text": "Paris is the capital of France."}
DOC = {"question": "who got the first nobel prize in physics", "answers": ["Wilhelm Conrad Röntgen"], "ctxs": [P1, P2]}


@pytest.fixture
def critic(backbone, multi_tok):  # noqa: F811 - the imported fixture
    from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

    return lambda: SelfRAGFilterLM.with_backbone(replace(backbone, tokenizer=multi_tok))


def _critic_text(lm) -> str:
    prefix, suffixes = lm.critic_prompts([P1, P2], DOC["question"])
    return lm.tokenizer.decode(prefix + suffixes[0])


def test_the_critic_prompt_is_rendered_with_the_named_template(critic):
    lm = critic()
    lm.start_evaluation(apply_chat_template="rag")
    lm.chat_template("rag")
    assert RAG_SYSTEM in _critic_text(lm) and SYSTEM not in _critic_text(lm)
    lm.start_evaluation(apply_chat_template=True)
    assert SYSTEM in _critic_text(lm) and RAG_SYSTEM not in _critic_text(lm)
    lm.start_evaluation(apply_chat_template=False)  # plain answer prompts: the critic keeps the default template
    assert SYSTEM in _critic_text(lm)


def test_the_critic_judges_again_under_another_template(critic):
    """One model object, two evaluations (``rag`` then the default): the second's ratios are those a fresh model
    computes under the default template, not the ``rag`` ones cached by the first (old code)."""
    fresh = critic()
    fresh.start_evaluation(apply_chat_template=True)
    _, want_default = fresh.relevance(DOC, DOC["question"])
    fresh = critic()
    fresh.start_evaluation(apply_chat_template="rag")
    _, want_rag = fresh.relevance(DOC, DOC["question"])
    assert want_rag != want_default  # the two system prompts move the ratios

    lm = critic()
    lm.start_evaluation(apply_chat_template="rag")
    assert lm.relevance(DOC, DOC["question"])[1] == want_rag
    lm.start_evaluation(apply_chat_template=True)
    assert lm.relevance(DOC, DOC["question"])[1] == want_default  # old: want_rag, from the cache
    lm.start_evaluation(apply_chat_template="rag")
    assert lm.relevance(DOC, DOC["question"])[1] == want_rag
