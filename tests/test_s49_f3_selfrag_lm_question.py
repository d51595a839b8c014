"""rag-selfrag-filter's critic question on language-modelling requests whose doc has no ``query_field`` (s49 f3).

The critic judged each passage against ``doc[query_field]``, else the request's context. On a ``loglikelihood_rolling``
task of one's own (docs with ``ctxs`` and no ``question``, as ``tests/leaderboard_fixtures/tasks/toy_lm``) that context
is no question: the first window's is lm-eval's prefix token, ``<|im_start|>`` on SmolLM2, a later full window's the
one token before it (``.``), so the critic judged passages against garbage and the row became closed book or
arbitrary, silently. Such a doc is now refused before any forward pass, naming ``query_field`` and the task; a doc
with the field is judged as before (every window against ``doc[query_field]``). SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import re

import pytest
from lm_eval import utils
from lm_eval.api.instance import Instance

from retrieval.errors import ConfigError
from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

# two full 32-token windows at max_length 64 (SmolLM2): contexts [1] '<|im_start|>' (the prefix token) and [30] '.'
TEXT = ("The river runs to the sea. Mountains rise above the clouds in the north. A small town sits beside the lake. "
        "Trains cross the old stone bridge. Birds return to the marsh in spring. The library opens at nine. Children "
        "play in the park after school. Boats sail on the wide bay at dawn.")
P0 = {"docid": "d0", "title": "River", "text": "The river runs to the sea.", "rank": 1}
P1 = {"docid": "d1", "title": "Banana", "text": "The banana is an elongated edible fruit.", "rank": 2}
QUESTION = "Where does the river run?"
# SmolLM2's chat template around CRITIC_PROMPT, cut after the question and instruction (the prompts' shared prefix)
SYSTEM = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
INSTRUCTION = "\nDoes the passage below contain information that helps answer the question? Answer Yes or No.\n\nPassage:"


def spied(backbone, **kw) -> tuple[SelfRAGFilterLM, list[str], list[tuple[list[int], list[list[int]]]]]:
    """The filter at ``max_length=64`` (32-token windows), the list of the questions it judged each request or window
    against (:meth:`SelfRAGFilterLM.question_of`, once per window) and that of its critic prompts' ``(prefix ids,
    suffix ids)`` (once per question and passage list: cached)."""
    lm = SelfRAGFilterLM.with_backbone(backbone, device="cpu", **kw)
    lm.max_length = 64
    questions, prompts = [], []
    question_of, critic_prompts = lm.question_of, lm.critic_prompts

    def ask(*a, **k):
        questions.append(question_of(*a, **k))
        return questions[-1]

    def prompt(ctxs, question):
        prompts.append(critic_prompts(ctxs, question))
        return prompts[-1]

    lm.question_of, lm.critic_prompts = ask, prompt
    return lm, questions, prompts


def windows(lm) -> list[tuple[list[int], list[int]]]:
    return list(map(utils.make_disjoint_window, utils.get_rolling_token_windows(
        token_list=lm.prompts.encode(TEXT), prefix_token=lm.rolling_prefix_token_id, max_seq_len=32, context_len=1)))


def rolling(doc: dict) -> Instance:
    return Instance("loglikelihood_rolling", doc, (TEXT,), 0, metadata=("my_lm", 3, 1))


def test_a_rolling_doc_without_the_query_field_is_refused_before_any_forward_pass(backbone):
    lm, questions, prompts = spied(backbone)
    w = windows(lm)
    assert [c for c, _ in w] == [[1], [30]] and [lm.tokenizer.decode(c) for c, _ in w] == ["<|im_start|>", "."]
    doc = {"qid": "p0", "ctxs": [P0, P1]}
    msg = ("--model rag-selfrag-filter: the critic needs a question, but a language-modelling doc (task 'my_lm', "
           "doc_id 3, qid 'p0') has no 'question' field (model argument query_field='question'; doc keys: ['ctxs', "
           "'qid']) and its context '<|im_start|>' is the scored text's prefix token or preceding tokens, not a "
           "question; record in each doc the query its passages were retrieved with and pass query_field=<that field>")
    with pytest.raises(ConfigError, match=f"^{re.escape(msg)}$"):
        lm.loglikelihood_rolling([rolling(doc)], disable_tqdm=True)
    # the old code judged the passages of the two windows against '<|im_start|>' and '.' and scored the text
    assert questions == prompts == [] and lm.stats["forward_passes"] == 0
    with pytest.raises(ConfigError, match=r"has no 'query' field \(model argument query_field='query'; doc keys: "
                                          r"\['ctxs', 'qid', 'question'\]\)"):
        spied(backbone, query_field="query")[0].loglikelihood_rolling([rolling({**doc, "question": QUESTION})],
                                                                       disable_tqdm=True)
    with pytest.raises(ConfigError, match=r"has a blank 'question' field \(model argument query_field='question'"):
        lm.loglikelihood_rolling([rolling({**doc, "question": " "})], disable_tqdm=True)


@pytest.mark.parametrize("field", ["question", "query"])
def test_every_window_of_a_rolling_doc_is_judged_against_its_query_field(backbone, field):
    """Unchanged for a doc with the field (the tasks in tasks/ record their retrieval query in ``question``): both
    windows' critic prompts ask ``doc[query_field]`` (the prompt's exact text)."""
    lm, questions, prompts = spied(backbone, query_field=field)
    (ll,) = lm.loglikelihood_rolling([rolling({"qid": "p0", field: QUESTION, "ctxs": [P0, P1]})], disable_tqdm=True)
    assert ll < 0 and len(questions) >= 2 and set(questions) == {QUESTION}  # each window's (and the up-front check)
    (prefix, suffixes), = prompts  # the second window's ratios come from the cache: same question, same passages
    assert lm.tokenizer.decode(prefix) == f"{SYSTEM}<|im_start|>user\nQuestion: {QUESTION}{INSTRUCTION}"
    assert [lm.tokenizer.decode(x) for x in suffixes] == [
        " River\nThe river runs to the sea.<|im_end|>\n<|im_start|>assistant\n",
        " Banana\nThe banana is an elongated edible fruit.<|im_end|>\n<|im_start|>assistant\n"]


def test_an_empty_loglikelihood_context_without_the_field_is_refused_a_plain_one_is_the_question(backbone):
    """An empty ``loglikelihood`` context is the first window's (lm-eval's prefix token): refused as a rolling doc.
    A non-empty context stays the fallback question, as before (a task whose prompt is the question)."""
    lm, questions, prompts = spied(backbone)
    doc = {"qid": "p0", "ctxs": [P0, P1]}
    with pytest.raises(ConfigError, match=r"^--model rag-selfrag-filter: the critic needs a question, but a "
                                          r"language-modelling doc \(qid 'p0'\) has no 'question' field .* its context "
                                          r"'<\|im_start\|>' is the scored text's prefix token"):
        lm.loglikelihood([Instance("loglikelihood", doc, ("", "The river runs to the sea."), 0)], disable_tqdm=True)
    assert questions == prompts == [] and lm.stats["forward_passes"] == 0
    lm.loglikelihood([Instance("loglikelihood", doc, ("Where does the river run?", " To the sea."), 0)],
                     disable_tqdm=True)
    assert questions == [QUESTION, QUESTION] and len(prompts) == 1  # the check, then the request
