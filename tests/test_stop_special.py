"""A stop string that is a special token's text (``until=["<|endoftext|>"]``) stops generation, as in lm-eval's ``hf``.

The stop check decoded the generated tokens with ``skip_special_tokens=True``, so ``<|endoftext|>`` (id 0 on
SmolLM2, not an EOS) never appeared in the text it searched: decoding ran on to ``max_gen_toks`` and the answer kept
what followed (``' Paris garbage after the stop stop ...'``), where lm-eval's ``hf`` stop criterion decodes with
special tokens and stops there (``' Paris'``). The answer is still the text without special tokens, cut at the stops.
"""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from tokrag_model.decoder import MultiContextDecoder, generate, has_stop
from tokrag_model.methods import load


class Scripted:
    """A rule that emits a fixed token sequence (stands in for a model that emits ``<|endoftext|>``)."""

    needs_hidden = False

    def __init__(self, prompt: list[int], script: list[int]) -> None:
        self.prompt, self.script = prompt, script

    def rows(self) -> list[list[int]]:
        return [self.prompt]

    def choose(self, dec, batch, rows, step):
        return self.script[min(step, len(self.script) - 1)]


@pytest.fixture(scope="module")
def script(backbone):
    tok = backbone.tokenizer
    eot = tok.convert_tokens_to_ids("<|endoftext|>")
    assert eot == 0 and eot not in {tok.eos_token_id}
    return tok.encode(" Paris") + [eot] + tok.encode(" garbage after the stop")


def test_generate_stops_at_a_special_token_stop(backbone, script):
    tok = backbone.tokenizer
    dec = MultiContextDecoder(backbone.model, {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0})
    rule = Scripted(tok.encode("The capital of France is"), script)
    (out,) = generate(dec, tok, [rule], ["<|endoftext|>"], 10, {tok.eos_token_id})
    assert out == script[:2]  # " Paris", <|endoftext|>: nothing after the stop


def test_generate_until_answer_is_cut_at_a_special_token_stop(backbone, script):
    tok = backbone.tokenizer
    lm = load("rag-none").with_backbone(backbone, device="cpu")
    lm.make_rule = lambda doc, ctx, budget: (Scripted(lm.encode_pure(ctx, budget).ids, script), {})
    reqs = [Instance("generate_until", {}, ("The capital of France is", {"until": ["<|endoftext|>"], "max_gen_toks": 10}), 0),
            Instance("generate_until", {}, ("The capital of France is", {"until": ["\n"], "max_gen_toks": 6}), 1)]
    assert lm.generate_until(reqs, disable_tqdm=True) == [" Paris", tok.decode(script[:6], skip_special_tokens=True)]


def test_has_stop_reads_both_decodings(backbone):
    tok = backbone.tokenizer
    ids = tok.encode("a\n") + [1] + tok.encode("\nb")  # "a\n<|im_start|>\nb": "\n\n" only without special tokens
    assert has_stop(tok, ids, ["\n\n"]) and has_stop(tok, ids, ["<|im_start|>"])
    assert not has_stop(tok, tok.encode("Paris is"), ["\n", "<|endoftext|>"])
