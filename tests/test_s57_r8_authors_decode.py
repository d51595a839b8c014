"""``token_lists=authors`` compares what the authors' decoder compares (s57 r8, review of a2's 4fdb755).

Their bypass tests ``tokenizer.decode(g_R)`` against ``filter_words`` and their anchor skip
``tokenizer.convert_ids_to_tokens`` against ``skip_words`` (xsc1234/Tok-RAG f78f1b30
``my_transformers/generation/utils.py``, ``dola_greedy_decode_multi_ids`` / ``get_predict_emb_contrastive``;
tokrag_method.md §3.3 steps 2-3). A LLaMA ``decode`` of one token writes no ``▁``: the piece ``▁"`` decodes to ``"``,
which is not on their list, so their decoder tests it. 4fdb755 also compared the piece and bypassed ``' "'``.
Checked here on a LLaMA-like fast tokenizer (SentencePiece pieces, byte fallback, LLaMA's decoder pipeline) token
by token against the literal lists, and on SmolLM2's ``Ġ"``. (Left out: the byte piece ``<0x20>``, which LLaMA's
encoder never emits, as it writes a space ``▁``; ours reads it as a space and skips it, their piece compare would not.)
"""

from __future__ import annotations

import pytest

from tokrag_model.methods.tokrag import AUTHORS_BYPASS, AUTHORS_SKIP, TokenClasses, is_authors_bypass_token

# their two lists as written (duplicates included)
FILTER_WORDS = [" ", ")", "-", "]:", "]", "}:", ":", "\u2581", "\u2581[", "\u2581", "\u2581the", "the", "a", "an",
                "The", ".", "[", "'", "Query", "", " ", "\u2581\"", ".", "<s>", "'", " ", ")", "-", "]:", "]", "}:",
                ":", "", "\u2581", "\u2581[", "\u2581", "for", "in", "on", "at"]
SKIP_WORDS = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "0", ".", "<s>", "'", " ", ")", "-", "]:", "]", "}:",
              ":", "", "\u2581", "\u2581[", "\u2581"]

PIECES = ["<unk>", "<s>", "</s>", "<0x0A>", "\u2581\"", "\"", "\u2581the", "the", "The", "\u2581The",
          "\u2581\u2581", "\u2581", "\u2581[", "[", "]", "\u2581]", "]:", "}:", ":", "\u2581:", ",", "\u2581,", "?",
          "A", "\u2581a", "a", "\u2581an", "Query", "\u2581Query", "For", "\u2581for", "\u2581in", "\u2581on",
          "\u2581at", "'", "\u2581'", ".", "\u2581.", "-", ")", "0", "1", "12", "\u25810", "Paris", "\u2581Paris"]


@pytest.fixture(scope="module")
def llama_like():
    """A fast tokenizer with LLaMA's pieces and decoder (``▁`` -> space, byte fallback, one leading space dropped)."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE(vocab={p: i for i, p in enumerate(PIECES)}, merges=[], unk_token="<unk>",
                               byte_fallback=True))
    raw.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    return PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


def test_the_lists_are_theirs():
    assert AUTHORS_BYPASS == set(FILTER_WORDS) and len(AUTHORS_BYPASS) == 25
    assert AUTHORS_SKIP == set(SKIP_WORDS) and len(AUTHORS_SKIP) == 23


def test_the_decoder_pipeline_decodes_as_llamas(llama_like):
    tok = llama_like
    ids = {p: tok.convert_tokens_to_ids(p) for p in PIECES}
    assert [tok.decode([ids[p]]) for p in ("\u2581\"", "\u2581the", "\u2581\u2581", "\u2581", "\u2581[", "<0x0A>", "<s>")] == [
        "\"", "the", " ", "", "[", "\n", "<s>"]


def test_each_token_is_bypassed_and_skipped_exactly_as_their_decoder_does(llama_like):
    tok = llama_like
    auth = TokenClasses(tok, "authors")
    ids = range(len(PIECES))
    bypassed = [PIECES[i] for i in ids if auth.is_function(i)]
    assert bypassed == [PIECES[i] for i in ids if tok.decode([i]) in FILTER_WORDS]
    assert bypassed == ["<s>", "\u2581the", "the", "The", "\u2581The", "\u2581\u2581", "\u2581", "\u2581[", "[", "]",
                        "\u2581]", "]:", "}:", ":", "\u2581:", "\u2581a", "a", "\u2581an", "Query", "\u2581Query",
                        "\u2581for", "\u2581in", "\u2581on", "\u2581at", "'", "\u2581'", ".", "\u2581.", "-", ")"]
    assert "\u2581\"" not in bypassed  # decoded '"': tested, as in their decoder (4fdb755 bypassed it)
    skipped = [PIECES[i] for i in ids if auth.is_skip(i)]
    assert skipped == [PIECES[i] for i in ids if tok.convert_ids_to_tokens(i) in SKIP_WORDS]
    assert skipped == ["<s>", "\u2581", "\u2581[", "]", "]:", "}:", ":", "'", ".", "-", ")", "0", "1"]


def test_a_quote_after_a_space_is_tested_on_smollm2():
    from transformers import AutoTokenizer

    from tokrag_model.loading import resolve_pretrained

    tok = AutoTokenizer.from_pretrained(resolve_pretrained("smollm2-135m-instruct").path)
    (quote,) = tok.encode(" \"")
    assert tok.convert_ids_to_tokens(quote) == "\u0120\""
    assert not is_authors_bypass_token(" \"") and not is_authors_bypass_token("\"")
    assert TokenClasses(tok, "authors").is_function(quote) is False
    assert TokenClasses(tok, "generalised").is_function(quote) is True  # the default unchanged
