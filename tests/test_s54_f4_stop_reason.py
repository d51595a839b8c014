"""Why each generation stopped (u3's F12: 14 of 16 Tok-RAG answers ran into the 16-token budget, which no record said;
the report's "overlong" is "more than 10 words"). :func:`tokrag_model.decoder.generate` tells per request ``eos``,
``stop`` (a stop string, also one the ``max_gen_toks``-th token completes) or ``budget``, and every method's trace
records the returned answer's ``stop_reason`` (REPLUG ``answer_vote`` / Self-RAG ``selection=rank``: each candidate's
too). The old ``generate`` took no ``reasons`` and the traces had no ``stop_reason``. What is decoded is unchanged."""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from tokrag_model.decoder import MultiContextDecoder, generate
from tokrag_model.methods import MODELS


class Scripted:
    """A rule that emits ``script`` (then the EOS ``eos``), whatever the model predicts."""

    needs_hidden = False

    def __init__(self, prompt: list[int], script: list[int], eos: int) -> None:
        self.prompt, self.script, self.eos = prompt, script, eos

    def rows(self) -> list[list[int]]:
        return [self.prompt]

    def choose(self, dec, batch, rows, step) -> int:
        return self.script[step] if step < len(self.script) else self.eos


def test_generate_tells_eos_stop_string_and_budget(backbone) -> None:
    tok = backbone.tokenizer
    eos = int(tok.eos_token_id)
    prompt = tok("Question: who wrote Hamlet?\nAnswer:")["input_ids"]
    three = tok(" Shakespeare wrote it")["input_ids"]
    nl = tok("\n")["input_ids"]
    long = tok(" William Shakespeare wrote it in London around 1600")["input_ids"]
    assert len(nl) == 1 and len(long) > 4 and eos not in three + long
    first = tok(" William")["input_ids"]
    rules = [Scripted(prompt, three[:2], eos),            # EOS after 2 tokens
             Scripted(prompt, three[:1] + nl + long, eos),  # "\n" as the 2nd token
             Scripted(prompt, long, eos),                  # runs to the budget of 4
             Scripted(prompt, long[:3] + nl, eos),         # the 4th (last allowed) token is the stop string
             Scripted(prompt, first, eos)]                 # EOS as the 2nd token: not the budget
    dec = MultiContextDecoder(backbone.model, {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0})
    reasons: list[str] = ["left over"]
    out = generate(dec, tok, rules, ["\n"], 4, {eos}, reasons=reasons)
    assert reasons == ["eos", "stop", "budget", "stop", "eos"]
    assert out == [three[:2], three[:1] + nl, long[:4], long[:3] + nl, first]
    # without reasons: the same tokens (nothing decoded differently), and no stop strings: the 4th ends at the budget
    dec2 = MultiContextDecoder(backbone.model, {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0})
    assert generate(dec2, tok, rules, ["\n"], 4, {eos}) == out
    why: list[str] = []
    generate(MultiContextDecoder(backbone.model, {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0}),
             tok, rules, [], 4, {eos}, reasons=why)
    assert why == ["eos", "budget", "budget", "budget", "eos"]
    generate(MultiContextDecoder(backbone.model, {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0}),
             tok, rules[:1], [], 0, {eos}, reasons=why)
    assert why == ["budget"]  # a budget of 0: nothing generated


CONTEXT = "Question: who wrote the play Hamlet?\nAnswer:"


def _doc() -> dict:
    return {"question": "who wrote the play Hamlet?", "answers": ["William Shakespeare"],
            "ctxs": [{"docid": "d1", "title": "Hamlet", "text": "Hamlet is a tragedy written by William Shakespeare.",
                      "score": 20.0, "rank": 1},
                     {"docid": "d2", "title": "Macbeth", "text": "Macbeth is a tragedy by William Shakespeare.",
                      "score": 18.5, "rank": 2}]}


@pytest.mark.parametrize("method,args", [("rag-none", {}), ("rag-standard", {}), ("tokrag", {}),
                                         ("rag-replug", {"replug_mode": "answer_vote", "replug_temperature": 1.0})],
                         ids=["rag-none", "rag-standard", "tokrag", "replug-answer_vote"])
def test_every_method_traces_the_stop_reason_and_records_the_budget_used(backbone, method, args) -> None:
    """Two budgets: 2 tokens (the answer is longer: ``budget``) and 48 with "\\n" and "." (``stop`` or ``eos``). The
    results' ``tokrag_resolved_config`` named the model's unused default ``max_gen_toks: 256`` as if the budget; now
    ``max_gen_toks_default``, and ``tokrag_generation`` lists the settings each group was decoded with."""
    lm = MODELS[method].with_backbone(backbone, **({} if method == "rag-none" else {"k": 2}), **args)
    lm.start_evaluation(False)
    short = {"until": ["\n\n"], "max_gen_toks": 2, "do_sample": False}
    line = {"until": ["\n", "."], "max_gen_toks": 48, "do_sample": False}
    reqs = [Instance("generate_until", _doc(), (CONTEXT, dict(gen)), i) for i, gen in enumerate([short, line])]
    for r in reqs:
        r.task_name = "mini"
    texts = lm.generate_until(reqs, disable_tqdm=True)
    traces = [r.args[-1]["tokrag_trace"] for r in reqs]
    assert traces[0]["stop_reason"] == "budget"
    assert len(lm.tokenizer(texts[0], add_special_tokens=False)["input_ids"]) == 2
    assert traces[1]["stop_reason"] in ("stop", "eos") and len(texts[1]) > 0
    if method == "rag-replug":
        assert [v["stop_reason"] for v in traces[0]["votes"]] == ["budget"] * len(traces[0]["votes"]) != []
    info = lm.get_model_info()
    rc = info["tokrag_resolved_config"]
    assert rc["max_gen_toks_default"] == 256 and "max_gen_toks" not in rc
    assert lm.resolved_config["max_gen_toks"] == 256  # the model's own config (cache and journal keys) unchanged
    eos = lm.tokenizer.decode([lm.eot_token_id])
    assert info["tokrag_generation"] == [
        {"task": "mini", "gen_kwargs": short, "until": ["\n\n", eos], "max_gen_toks": 2, "do_sample": False},
        {"task": "mini", "gen_kwargs": line, "until": ["\n", ".", eos], "max_gen_toks": 48, "do_sample": False}]
    lm.start_evaluation(False)  # a model object reused for the next evaluation records that one's groups only
    assert lm.get_model_info()["tokrag_generation"] == []
