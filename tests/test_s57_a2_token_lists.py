"""Tok-RAG's ``token_lists=authors``: the authors' own bypass and anchor-skip strings, as a labelled variant (s57 a2).

The default (``generalised``, every committed row) bypasses any token made only of punctuation or symbols and the
words the/a/an/query/for/in/on/at in any case, and skips any token of digits and punctuation
(tokrag_method.md §3.6, §3.8 row 6). ``authors`` compares the token's own text with the authors' LLaMA strings
(xsc1234/Tok-RAG f78f1b30 ``my_transformers/generation/utils.py``: ``filter_words`` in
``dola_greedy_decode_multi_ids``, ``skip_words`` in ``get_predict_emb_contrastive``; §3.3 steps 2-3), case-sensitive,
with only the space marker normalised: a comma, ``?`` and ``A`` are tested there, ``12`` can be an anchor.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from retrieval.errors import ConfigError
from tokrag_model.args import resolved_args
from tokrag_model.methods import MODELS
from tokrag_model.methods.tokrag import (
    TokenClasses,
    TokRAGParams,
    TokRAGScorer,
    is_function_token,
    is_skip_token,
)

# own text -> (bypassed, skipped) for each setting; ' the' is SentencePiece's '▁the' / byte-level BPE's 'Ġthe'
CLASSES = {
    #          generalised      authors
    ",":      ((True, True),   (False, False)),
    "?":      ((True, True),   (False, False)),
    "A":      ((True, False),  (False, False)),  # theirs is case-sensitive: 'a' but not 'A'
    "The":    ((True, False),  (True, False)),
    " the":   ((True, False),  (True, False)),
    "0":      ((False, True),  (False, True)),
    "12":     ((False, True),  (False, False)),  # their skip list has single digits only
    "]:":     ((True, True),   (True, True)),
    "\n":     ((True, True),   (False, False)),  # their decode of a newline is '\n', on neither list
    " [":     ((True, True),   (True, True)),    # '▁[' on both of theirs
    "[":      ((True, True),   (True, False)),   # '[' on their bypass list, only '▁[' on their skip list
    " \"":    ((True, True),   (False, False)),  # '▁"' decodes alone to '"', not on their bypass list (s57 r8)
    "\"":     ((True, True),   (False, False)),
    "For":    ((True, False),  (False, False)),
    " for":   ((True, False),  (True, False)),
    "  ":     ((True, True),   (True, False)),   # '▁▁' decodes alone to ' ', on their bypass list
    " ":      ((True, True),   (True, True)),
    " .":     ((True, True),   (True, False)),   # decodes to '.'; the piece '▁.' is not on their skip list
    "Paris":  ((False, False), (False, False)),
}


@pytest.mark.parametrize("text", list(CLASSES))
def test_the_class_of_each_token_text_under_each_setting(text):
    from tokrag_model.methods.tokrag import is_authors_bypass_token, is_authors_skip_token  # new (s57 a2)

    (g_bypass, g_skip), (a_bypass, a_skip) = CLASSES[text]
    assert (is_function_token(text), is_skip_token(text)) == (g_bypass, g_skip)
    assert (is_authors_bypass_token(text), is_authors_skip_token(text)) == (a_bypass, a_skip)


class _StubSentencePiece:
    """A LLaMA-like SentencePiece vocabulary: <s> BOS, </s> EOS, <unk> another special token."""

    pieces = ["<s>", "</s>", ",", "?", "A", "The", "\u2581the", "0", "12", "]:", "<0x0A>", "\u2581[", "<unk>", "Paris"]
    all_special_ids = [0, 1, 12]
    bos_token_id = 0
    eos_token_id = 1

    def convert_ids_to_tokens(self, tid):
        return self.pieces[tid]


def test_token_classes_of_a_sentencepiece_vocabulary():
    tok = _StubSentencePiece()
    gen, auth = TokenClasses(tok), TokenClasses(tok, "authors")
    assert TokenClasses(tok, "generalised").lists == gen.lists == "generalised" and auth.lists == "authors"
    ids = range(len(tok.pieces))
    # <s> (BOS): bypassed and skipped by both (their lists hold '<s>'); </s> (EOS): tested by both, skipped only by
    # ours; <unk>, another special token: ours bypasses and skips it, theirs tests it and can anchor on it
    assert [gen.is_function(i) for i in ids] == [True, False, True, True, True, True, True, False, False, True, True,
                                                 True, True, False]
    assert [auth.is_function(i) for i in ids] == [True, False, False, False, False, True, True, False, False, True,
                                                  False, True, False, False]
    assert [gen.is_skip(i) for i in ids] == [True, True, True, True, False, False, False, True, True, True, True,
                                             True, True, False]
    assert [auth.is_skip(i) for i in ids] == [True, False, False, False, False, False, False, True, False, True,
                                              False, True, False, False]


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    from transformers import AutoTokenizer

    from tokrag_model.loading import resolve_pretrained

    return AutoTokenizer.from_pretrained(resolve_pretrained("smollm2-135m-instruct").path)


def test_token_classes_of_smollm2(smollm2_tokenizer):
    tok = smollm2_tokenizer
    gen, auth = TokenClasses(tok, "generalised"), TokenClasses(tok, "authors")
    for text in [",", "?", "A", "The", " the", "0", "]:", "\n", " [", " \""]:
        (tid,) = tok.encode(text)  # each one token of SmolLM2's byte-level BPE (' the' is 'Ġthe')
        assert (gen.is_function(tid), gen.is_skip(tid)) == CLASSES[text][0], text
        assert (auth.is_function(tid), auth.is_skip(tid)) == CLASSES[text][1], text
    bos, eos, end = (tok.convert_tokens_to_ids(t) for t in ("<|im_start|>", "<|im_end|>", "<|endoftext|>"))
    assert tok.bos_token_id == bos
    assert (auth.is_function(bos), auth.is_skip(bos)) == (True, True)  # their '<s>'
    assert (auth.is_function(eos), auth.is_skip(eos)) == (False, False)  # their '</s>' is on neither list
    assert (auth.is_function(end), auth.is_skip(end)) == (False, False)
    assert (gen.is_function(eos), gen.is_skip(eos)) == (False, True)  # as before


def test_the_default_classes_of_smollm2s_vocabulary_are_unchanged_and_theirs_lie_inside(smollm2_tokenizer):
    """The default's classes of all 49,152 ids, by count and by a hash of the id lists (computed on the code before
    the argument, 8074950: the same), and the authors' 37 bypassed and 21 skipped ids, all inside ours."""
    import hashlib

    tok = smollm2_tokenizer
    ids = range(len(tok))
    digest = (lambda xs: hashlib.sha256(",".join(map(str, xs)).encode()).hexdigest()[:16])
    for tc in (TokenClasses(tok), TokenClasses(tok, "generalised")):
        bypass, skip = [t for t in ids if tc.is_function(t)], [t for t in ids if tc.is_skip(t)]
        assert (len(bypass), digest(bypass), len(skip), digest(skip)) == (1296, "62551ae7f88d6f86", 1268,
                                                                          "5ec259b73ba565df")
    auth = TokenClasses(tok, "authors")
    a_bypass, a_skip = {t for t in ids if auth.is_function(t)}, {t for t in ids if auth.is_skip(t)}
    assert (len(a_bypass), len(a_skip)) == (37, 21)  # 38 before s57 r8: ' "' (their '▁"' never matches a decode)
    assert a_bypass <= set(bypass) and a_skip <= set(skip)
    assert sorted(auth.text(t) for t in a_skip) == sorted(
        list("0123456789") + [".", "'", " ", ")", "-", "]", ":", "]:", "}:", " [", "<|im_start|>"])


def test_token_classes_refuse_other_lists(smollm2_tokenizer):
    with pytest.raises(ValueError, match=r"^token lists 'llama': expected one of \['generalised', 'authors'\]$"):
        TokenClasses(smollm2_tokenizer, "llama")


def test_a_comma_from_the_rag_branch_is_bypassed_by_ours_and_tested_by_theirs(smollm2_tokenizer):
    """RAG's top-1 is ',' (P 0.6; ' Paris' 0.3), the pure branch's ' France' (0.7). Embeddings on 4 axes: every token
    (1,0,0,0) but E[,] = (0,0,0,1), E[Paris] = (0,1,0,0), E[France] = (0,1,.1,0). e_R = (0,.3,0,.6), e_L = 0.7·E[France]
    + 0.2·E[Paris] + 0.05·E[,] = (0,.9,.07,.05): S_L = .30/(√.45·√.8174) = 0.49466; the passage ' Paris is the capital
    of France' puts Paris/France in every window: S_R = .3/√.45 = 0.44721 < S_L: theirs emits the pure ' France',
    ours the RAG ',' untested."""
    tok = smollm2_tokenizer
    V = len(tok)
    (comma,), (paris,), (france,) = tok.encode(","), tok.encode(" Paris"), tok.encode(" France")
    emb = torch.zeros(V, 4)
    emb[:, 0] = 1.0
    emb[comma], emb[paris], emb[france] = torch.tensor([0., 0, 0, 1]), torch.tensor([0., 1, 0, 0]), torch.tensor([0., 1, .1, 0])
    p_rag = torch.zeros(V)
    p_rag[comma], p_rag[paris] = 0.6, 0.3
    p_pure = torch.zeros(V)
    p_pure[france], p_pure[paris], p_pure[comma] = 0.7, 0.2, 0.05
    rag_ids = tok.encode(" Paris is the capital of France")
    attn = torch.linspace(1, 0, len(rag_ids))
    got = {}
    for lists in ("generalised", "authors"):
        tc = TokenClasses(tok, lists)
        sc = TokRAGScorer(SimpleNamespace(n_layers=4, embed=emb, windows=[None] * 4), TokRAGParams(layer=2),
                          tc.is_function, tc.is_skip)
        d = sc.decide(p_rag.clamp_min(1e-12).log(), p_pure.clamp_min(1e-12).log(), rag_ids, (0, len(rag_ids)),
                      lambda layer: attn, None, None, 0)
        got[lists] = d
    assert (got["generalised"].branch, got["generalised"].reason, got["generalised"].token) == ("rag", "bypass", comma)
    assert got["generalised"].s_r is None
    d = got["authors"]
    assert (d.branch, d.reason, d.token) == ("pure", "test", france)
    assert d.s_l == pytest.approx(0.3 / math.sqrt(0.45 * 0.8174), abs=1e-4)
    assert d.s_r == pytest.approx(0.3 / math.sqrt(0.45), abs=1e-4)


# ------------------------------------------------------------------------------------------- the model argument
def test_the_argument_defaults_to_generalised_and_is_resolved():
    cls = MODELS["tokrag"]
    assert resolved_args(cls, {})["token_lists"] == "generalised"
    assert resolved_args(cls, {"token_lists": " Authors "})["token_lists"] == "authors"
    assert resolved_args(cls, {"token_lists": "generalised"})["token_lists"] == "generalised"


@pytest.mark.parametrize("bad, hint", [("generalized", " (did you mean 'generalised'?)"),
                                       ("author", " (did you mean 'authors'?)"), ("llama", "")])
def test_a_bad_value_is_one_line_with_a_did_you_mean(bad, hint):
    with pytest.raises(ConfigError) as exc:
        resolved_args(MODELS["tokrag"], {"token_lists": bad})
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"--model tokrag: model argument token_lists={bad!r} is invalid: expected one of "
                          f"['generalised', 'authors'], got {bad!r}{hint} (bypass and anchor-skip lists: ")


def test_lm_eval_refuses_a_bad_value_before_the_model_loads(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}\n')
    (tmp_path / "q.jsonl").write_text('{"id": "q1", "question": "capital of france", "answers": ["Paris"]}\n')
    env = {**os.environ, "TOKRAG_TRACEBACK": "", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "tokrag", "--model_args",
         "pretrained=smollm2-135m-instruct,token_lists=author", "--tasks", "rag_qa_bm25", "--device", "cpu",
         "--limit", "1", "--metadata", '{"questions": "q.jsonl", "corpus": "p.jsonl", "hits": 1}'],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert ("lm_eval: error: --model tokrag: model argument token_lists='author' is invalid: expected one of "
            "['generalised', 'authors'], got 'author' (did you mean 'authors'?)") in proc.stderr


# ------------------------------------------------------------------------- SmolLM2 generations (golden values)
# test_model_smollm2's five questions and settings (always_score: S_R/S_L at every token); with the authors' lists the
# strings and branches stay, but the anchors move (their skip list lets ',' '?' or '12' be one, skips '▁[' not '['):
# S_R differs at 15 of the 25 tokens, never across S_L here
GOLDEN_AUTHORS = [
    [["R=", 0.226, 0.9891, 19], ["R=", 0.1954, 0.9678, 19], ["R=", 0.4644, 0.9981, 19], ["R=", 0.9996, 0.9974, 19],
     ["R=", 0.5933, 1.0, 19]],
    [["R=", 0.5706, 0.9942, 19], ["R=", 0.1787, 0.8993, 19], ["L", 0.264, 0.9413, 19], ["R=", 1.0, 1.0, 19],
     ["R=", 0.3151, 1.0, 19]],
    [["R=", 0.2234, 0.9918, 19], ["R=", 0.245, 0.9969, 19], ["R=", 0.2474, 1.0, 19], ["R=", 0.248, 0.9996, 19],
     ["R=", 0.4052, 0.9944, 19]],
    [["R=", 0.2266, 0.9786, 19], ["R=", 0.2223, 0.8665, 19], ["R=", 0.1626, 1.0, 19], ["R=", 0.0938, 0.9627, 19],
     ["R=", 0.7128, 1.0, 19]],
    [["R=", 0.3281, 0.991, 19], ["R=", 0.3243, 0.8963, 19], ["R=", 0.5135, 0.9769, 19], ["R=", 0.5797, 1.0, 19],
     ["R=", 0.1022, 1.0, 19]],
]


@pytest.mark.slow
def test_smollm2_golden_generations_under_each_setting(backbone, data_dir):
    """The three runs over the session's shared ``backbone``, in process. 3acba58 had moved them into a fresh
    interpreter: in one clean-clone CI (at cd4abcc) the default run's S_R differed from the goldens at 18 of 25 tokens
    (strings, branches, layers and S_L the same) when the test ran late in a worker. The cause was found in s58 (o1,
    7a6360e): tests/test_methods_leave_model_unchanged installed transformers' hidden-state recording hooks a second
    time on the shared SmolLM2, and the decoder read the 61 recorded states by position; the decoder now keeps one
    state per layer (``tokrag_model.decoder.layer_hidden_states``) and that test installs them once."""
    from test_model_smollm2 import GOLDEN_OUT, GOLDEN_TOKRAG, gen_requests, make_docs

    docs = make_docs(data_dir)
    runs = {}
    for args in ({}, {"token_lists": "generalised"}, {"token_lists": "authors"}):
        lm = MODELS["tokrag"].with_backbone(backbone, always_score=True, **args)
        reqs = gen_requests(backbone.tokenizer, docs)
        out = lm.generate_until(reqs, disable_tqdm=True)
        traces = [[t[:4] for t in r.args[-1]["tokrag_trace"]["tokens"]] for r in reqs]
        runs[args.get("token_lists", "default")] = (lm, out, traces)
    for name, golden in (("default", GOLDEN_TOKRAG), ("generalised", GOLDEN_TOKRAG), ("authors", GOLDEN_AUTHORS)):
        lm, out, traces = runs[name]
        assert out == GOLDEN_OUT["tokrag"], name  # the same strings under both lists
        assert [[(b, layer) for b, _, _, layer in q] for q in traces] == [[(b, layer) for b, _, _, layer in q]
                                                                          for q in golden], name
        assert [x for q in traces for t in q for x in t[1:3]] == pytest.approx(
            [x for q in golden for t in q for x in t[1:3]], abs=2e-3), name
        assert lm.resolved_config["token_lists"] == ("authors" if name == "authors" else "generalised")
        assert lm.token_classes.lists == lm.resolved_config["token_lists"]
    moved = sum(abs(a[1] - b[1]) > 2e-3 for qa, qb in zip(GOLDEN_AUTHORS, GOLDEN_TOKRAG) for a, b in zip(qa, qb))
    assert moved == 15
    # the setting is keyed: --use_cache keeps the two lists' answers apart, the default and its explicit name together
    keys = {name: runs[name][0]._response_cache_model for name in runs}
    assert keys["default"] == keys["generalised"] != keys["authors"]
