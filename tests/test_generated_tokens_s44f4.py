"""``generated_tokens`` (the denominator of the leaderboard's ``forward passes / generated token``) counts the tokens of
the answer each request returned; ``branch_tokens`` counts every decoded branch's tokens. REPLUG ``answer_vote`` and
the Self-RAG filter's ``selection=rank`` decode one candidate answer per passage and return one: only the returned
one counts in ``generated_tokens`` (all k counted before, so a k-branch vote read k times cheaper per token than the
REPLUG mixture with the same forward passes). By hand on scripted rules, then the real SmolLM2-135M-Instruct
(tests/conftest.py) on two ``nq_oracle_bm25`` questions (k=3): every other method's counters are unchanged."""

from __future__ import annotations

import pytest
import torch
from lm_eval.models.utils import postprocess_generated_text

import tokrag_model.base as base_mod
from tokrag_model.decoder import MultiContextDecoder, generate
from tokrag_model.methods import MODELS

GEN = {"until": ["\n\n", "Question:"], "max_gen_toks": 32, "do_sample": False, "temperature": 0.0}


class Scripted:
    """A rule that emits ``script`` (then the EOS ``eos``), whatever the model predicts."""

    needs_hidden = False

    def __init__(self, prompt: list[int], script: list[int], eos: int, candidate: bool = False) -> None:
        self.prompt, self.script, self.eos = prompt, script, eos
        if candidate:
            self.candidate = True

    def rows(self) -> list[list[int]]:
        return [self.prompt]

    def choose(self, dec, batch, rows, step) -> int:
        return self.script[step] if step < len(self.script) else self.eos


def test_candidate_rules_count_in_branch_tokens_only(backbone) -> None:
    tok = backbone.tokenizer
    eos = int(tok.eos_token_id)
    prompt = tok("Question: who wrote Hamlet?\nAnswer:")["input_ids"]
    words = tok(" Shakespeare wrote it, not Marlowe or Ben Jonson")["input_ids"]
    a, b, c = words[:3], words[3:5], words[5:]  # 3, 2 and at least 4 tokens, none an EOS
    assert len(c) >= 4 and eos not in words

    def run(candidates: bool) -> tuple[dict, list[list[int]]]:
        stats = {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0}
        dec = MultiContextDecoder(backbone.model, stats)
        rules = [Scripted(prompt, a, eos), Scripted(prompt, b, eos, candidates), Scripted(prompt, c, eos, candidates)]
        out = generate(dec, tok, rules, [], 4, {eos})
        return stats, out

    stats, out = run(candidates=True)
    assert out == [a, b, c[:4]]  # a and b end at EOS (not counted), c at max_gen_toks=4
    # the returned rule's 3 tokens; the candidates' tokens in branch_tokens only (their method adds the chosen one)
    assert stats["generated_tokens"] == 3
    assert stats["branch_tokens"] == 3 + 2 + 4
    plain, out2 = run(candidates=False)
    assert out2 == out
    assert plain["generated_tokens"] == plain["branch_tokens"] == 3 + 2 + 4
    # forward passes and prompt tokens do not depend on the counting: 3 rows prefilled + 3 steps x 3 rows
    assert stats["forward_passes"] == plain["forward_passes"] == 3 + 3 * 3
    assert stats["prompt_tokens"] == plain["prompt_tokens"] == 3 * len(prompt)


@pytest.fixture(scope="module")
def samples():
    from tasks.analyze import nq_samples

    return nq_samples(2, k=3)  # lm-eval's nq_oracle_bm25 docs and zero-shot contexts


def requests(samples):
    from lm_eval.api.instance import Instance

    return [Instance("generate_until", d, (c, dict(GEN)), i) for i, (d, c, _) in enumerate(samples)]


def run_capturing(monkeypatch, lm, reqs) -> tuple[list[str], list[list[list[int]]]]:
    """``lm.generate_until`` on each request of ``reqs`` alone, and per request its rules' generated tokens."""
    outs: list[list[list[int]]] = []

    def spy(*args, **kwargs):
        got = generate(*args, **kwargs)
        outs[-1].extend(got)
        return got

    monkeypatch.setattr(base_mod, "generate", spy)
    texts = []
    for req in reqs:
        outs.append([])
        texts += lm.generate_until([req], disable_tqdm=True)
    return texts, outs


# (method, label) -> (model args, forward passes, prompt tokens, branch tokens): the old code's counts (its
# generated_tokens then counted every branch: the branch tokens now)
CANDIDATE_MODES = {
    ("rag-replug", "replug_mode=answer_vote"): ({"replug_mode": "answer_vote"}, 192, 1130, 160),
    ("rag-selfrag-filter", "selection=rank"): ({"selection": "rank", "k": 3, "relevance_threshold": 0.3},
                                               175, 3422, 160),
}


@pytest.mark.slow
@pytest.mark.parametrize("key", list(CANDIDATE_MODES), ids=lambda k: k[1])
def test_candidate_modes_count_the_returned_answer_tokens(backbone, samples, monkeypatch, key) -> None:
    args, passes, prompt_tokens, branch_tokens = CANDIDATE_MODES[key]
    lm = MODELS[key[0]].with_backbone(backbone, **args)
    reqs = requests(samples)
    texts, outs = run_capturing(monkeypatch, lm, reqs)
    tok = lm.tokenizer
    returned = 0
    for req, text, mine in zip(reqs, texts, outs):
        tr = req.args[-1]["tokrag_trace"]
        docids = ([v["docid"] for v in tr["votes"]] if key[0] == "rag-replug"
                  else [c["docid"] for c in tr["candidates"]] or [None])
        assert len(mine) == len(docids) > 1
        best = docids.index(tr["chosen"]["docid"] if key[0] == "rag-replug" else tr["chosen"])
        # the chosen branch's tokens are the returned answer's (decoded and cut at the stop strings)
        assert postprocess_generated_text(tok.decode(mine[best], skip_special_tokens=True), GEN["until"], None) == text
        returned += len(mine[best])
    assert lm.stats["generated_tokens"] == returned
    assert lm.stats["branch_tokens"] == sum(len(t) for mine in outs for t in mine) > returned  # k branches a request
    assert (lm.stats["forward_passes"], lm.stats["prompt_tokens"], lm.stats["branch_tokens"]) == (
            passes, prompt_tokens, branch_tokens)


# the old code's counters (forward_passes, generated_tokens, prompt_tokens) on these two requests
ONE_ANSWER_METHODS = {
    "rag-none": {}, "rag-standard": {}, "tokrag": {}, "rag-replug": {}, "rag-cad": {}, "rag-adacad": {},
    "rag-ensemble-entropy": {}, "rag-selfrag-filter": {},
}
OLD_COUNTS = {
    "rag-none": (48, 47, 46), "rag-standard": (43, 43, 1038), "tokrag": (54, 26, 1084), "rag-replug": (99, 32, 1130),
    "rag-cad": (128, 64, 1084), "rag-adacad": (128, 64, 1084), "rag-ensemble-entropy": (177, 58, 1130),
    "rag-selfrag-filter": (72, 64, 1514),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ONE_ANSWER_METHODS))
def test_one_answer_methods_counters_are_unchanged(backbone, samples, monkeypatch, name) -> None:
    lm = MODELS[name].with_backbone(backbone, **ONE_ANSWER_METHODS[name])
    texts, outs = run_capturing(monkeypatch, lm, requests(samples))
    st = lm.stats
    assert [len(mine) for mine in outs] == [1, 1]  # one rule per request
    assert st["generated_tokens"] == st["branch_tokens"] == sum(len(mine[0]) for mine in outs)
    assert (st["forward_passes"], st["generated_tokens"], st["prompt_tokens"]) == OLD_COUNTS[name]
