"""Tok-RAG specifics: layer arguments, the named divergence, token classes from the token's own bytes,
the analysis constants, presets (hand-computed where possible; the real tokenizer for token classes)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from retrieval.errors import ConfigError
from tokrag_model.methods.tokrag import (
    ANALYSIS_PARAMS,
    TokenClasses,
    TokRAGScorer,
    dynamic_layer,
    layer_or_fraction,
    midpoint_kl,
    read_preset,
    resolve_layer,
    span_visible,
    tokrag_scores,
)


def test_layer_or_fraction_is_unambiguous():
    assert layer_or_fraction(10) == 10 and isinstance(layer_or_fraction(10), int)
    assert layer_or_fraction("10") == 10 and layer_or_fraction(10.0) == 10 and layer_or_fraction(0) == 0
    assert layer_or_fraction(0.3125) == 0.3125 and isinstance(layer_or_fraction("0.5"), float)
    for bad in (1.5, -2, "ten", True, 1e9 + 0.5):
        with pytest.raises(ValueError, match="integer layer"):
            layer_or_fraction(bad)
    # js_min_layer=10 is layer 10, not 10 x depth (the old reading gave layer 300)
    assert resolve_layer(layer_or_fraction(10), 30, "js_min_layer") == 10
    assert resolve_layer(10 / 32, 30, "js_min_layer") == 9 and resolve_layer(0.625, 30) == 19 and resolve_layer(0.625, 32) == 20
    with pytest.raises(ValueError, match="js_min_layer=40 is outside the model's 30 layers"):
        resolve_layer(40, 30, "js_min_layer")
    with pytest.raises(ValueError, match="must be an integer"):
        resolve_layer(2.5, 30)


def test_model_args_layer_errors_are_one_line():
    from tokrag_model.methods.tokrag import TokRAGLM

    for kwargs, match in (({"js_min_layer": 1.5}, "js_min_layer=1.5 is invalid"),
                          ({"layer": "dynamic", "layer_fallback": 40}, "layer_fallback=40 is outside"),
                          ({"layer": "dynamic", "js_min_layer": 30}, "js_min_layer=30 is outside"),
                          ({"rag_top": 49153}, r"^--model tokrag: rag_top=49153 exceeds the model's vocabulary of 49152 tokens$"),
                          ({"pure_top": 10**6}, "pure_top=1000000 exceeds")):
        with pytest.raises(ConfigError, match=match) as exc:
            TokRAGLM(pretrained="smollm2-135m-instruct", **kwargs)
        assert "\n" not in str(exc.value)


def test_dynamic_layer_arguments_with_a_fixed_layer_are_refused_not_ignored(tmp_path):
    """``js_threshold``/``js_min_layer``/``layer_fallback`` act only with ``layer=dynamic``; with the default fixed
    layer they used to be accepted and ignored. Refused before the weights load; a preset's ``layer`` counts."""
    import json

    from tokrag_model.args import COMMON_ARGS, parse_args
    from tokrag_model.methods.tokrag import TokRAGLM

    with pytest.raises(ConfigError, match=r"^--model tokrag: model argument\(s\) js_threshold has no effect with "
                                          r"layer=0.625 \(a fixed fusion layer\); add layer=dynamic to use it, or drop it$"):
        TokRAGLM(pretrained="no-such-model", js_threshold=1e-6)  # raised before the (missing) weights are looked up
    with pytest.raises(ConfigError, match=r"js_min_layer, layer_fallback have no effect with layer=14 "):
        TokRAGLM(pretrained="no-such-model", layer=14, js_min_layer=5, layer_fallback=20)

    def resolve(given):
        return TokRAGLM.resolve_args(parse_args("tokrag", {**COMMON_ARGS, **TokRAGLM.EXTRA_ARGS}, given), given)

    assert resolve({"layer": "dynamic", "js_threshold": 1e-6})["js_threshold"] == 1e-6
    assert resolve({"js_threshold": None})["layer"] == 0.625  # an explicit None (YAML null) is "not given"
    assert resolve({"layer": "dynamic", "js_threshold": None})["js_threshold"] == 5e-7  # the default, never None
    for layer, ok in (("dynamic", True), (14, False)):
        preset = tmp_path / f"preset-{layer}.json"
        preset.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag", "model": {}, "params": {"layer": layer}}))
        assert resolve({"preset": str(preset), "layer": None})["layer"] == layer  # a null layer is not given: the preset's
        if ok:  # the preset makes the layer dynamic: an explicit threshold applies
            got = resolve({"preset": str(preset), "js_threshold": 1e-6})
            assert (got["layer"], got["js_threshold"]) == ("dynamic", 1e-6)
        else:
            with pytest.raises(ConfigError, match=r"js_threshold has no effect with layer=14 \(from the preset\)"):
                resolve({"preset": str(preset), "js_threshold": 1e-6})
            assert resolve({"preset": str(preset), "layer": "dynamic", "js_threshold": 1e-6})["layer"] == "dynamic"


def test_analyze_takes_dynamic_policy_arguments_with_any_decoding_layer():
    """In ``tokrag analyze`` ``js_min_layer`` sets the first gap recorded and the scored dynamic policy, so the
    fixed-layer refusal of the decoding model does not apply there."""
    import argparse

    from tasks.analyze import load_lm

    lm = load_lm(argparse.Namespace(model_args="pretrained=smollm2-135m-instruct,js_min_layer=2", model=None))
    assert lm.METHOD == "tokrag" and lm.resolved_config["layer"] == 0.625 and lm.scorer.min_layer == 2


def test_preset_read_errors_are_one_line(tmp_path, monkeypatch):
    from tokrag_model.methods.tokrag import read_preset

    bad = tmp_path / "latin1.json"
    bad.write_bytes(b"\x80\x81{}")
    with pytest.raises(ConfigError, match=r"^preset=.*latin1.json: not JSON \(not UTF-8 text\)"):
        read_preset(bad)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^preset=presets/p.json: cannot read it \(No such file or directory\) \(a relative "
                                          r"path is read from the current directory: .*/presets/p.json\); give the preset's path"):
        read_preset("presets/p.json")


def test_midpoint_kl_is_the_authors_reverse_form_averaged_over_v():
    p, q = torch.tensor([0.5, 0.5]), torch.tensor([0.9, 0.1])
    m = (p + q) / 2
    kl_mp = float((m * (m / p).log()).sum())
    kl_mq = float((m * (m / q).log()).sum())
    got = float(midpoint_kl(p.log(), q.log()))
    assert got == pytest.approx(0.5 * (kl_mp + kl_mq) / 2, abs=1e-7)  # / V = 2
    js = 0.5 * float((p * (p / m).log()).sum() + (q * (q / m).log()).sum())
    assert abs(got * 2 - js) > 1e-3  # not the Jensen–Shannon divergence
    # unbounded, unlike JS (<= ln 2): nearly disjoint distributions
    a, b = torch.tensor([1 - 1e-12, 1e-12]), torch.tensor([1e-12, 1 - 1e-12])
    assert float(midpoint_kl(a.log(), b.log())) * 2 > math.log(2) * 5


class _StubSentencePiece:
    """convert_ids_to_tokens of a SentencePiece tokenizer with byte fallback (LLaMA / Gemma style)."""

    pieces = ["<s>", "\u2581the", "<0xE2>", "<0x2E>", ",", "\u2581Paris", "\u2581", "\u2581[", "\u25811947", "\u00e9t\u00e9"]
    all_special_ids = [0]

    def convert_ids_to_tokens(self, tid):
        return self.pieces[tid]


def test_token_classes_sentencepiece_byte_fallback():
    tc = TokenClasses(_StubSentencePiece())
    assert tc.inverse_bytes is None
    assert [tc.text(i) for i in range(1, 10)] == [" the", None, ".", ",", " Paris", " ", " [", " 1947", "\u00e9t\u00e9"]
    assert [tc.is_function(i) for i in range(10)] == [True, True, False, True, True, False, True, True, False, False]
    assert [tc.is_skip(i) for i in range(10)] == [True, False, False, True, True, False, True, True, True, False]


def test_token_classes_byte_level_fragments_are_not_punctuation():
    from tokrag_model.loading import resolve_pretrained
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(resolve_pretrained("smollm2-135m-instruct").path)
    tc = TokenClasses(tok)
    assert tc.inverse_bytes is not None
    enc = tok.encode(" the Paris, 1947 \u2014 caf\u00e9", add_special_tokens=False)
    texts = [tc.text(t) for t in enc]
    assert "".join(texts) == " the Paris, 1947 \u2014 caf\u00e9"
    assert [tc.is_function(t) for t in enc[:3]] == [True, False, True]
    frags = [t for t in range(len(tok)) if tc.text(t) is None]
    assert len(frags) == 313  # byte fragments of multi-byte characters
    assert all("\ufffd" in tok.decode([t]) for t in frags)  # what decoding a lone fragment shows
    assert not any(tc.is_function(t) or tc.is_skip(t) for t in frags)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    # the authors' bypass list holds <s> but not </s> (tokrag_method.md §3.3 step 2): tokens ending a generation are
    # tested, other special tokens (BOS <|im_start|>) bypass; all stay off the anchor list
    assert not tc.is_function(eos) and tc.is_skip(eos) and tc.end == {0, 2}
    bos = tok.convert_tokens_to_ids("<|im_start|>")
    assert tc.is_function(bos) and tc.is_skip(bos) and not tc.is_function(tok.convert_tokens_to_ids("<|endoftext|>"))


def test_an_end_of_turn_token_is_tested_not_bypassed():
    """RAG's top-1 is <|im_end|> (P 0.6; " Paris" 0.3), the pure branch's " France" (0.7). Embeddings on 4 axes: every
    token (1,0,0,0) but E[EOS] = (0,0,0,1), E[Paris] = (0,1,0,0), E[France] = (0,1,.1,0). e_R = 0.6·E[EOS] + 0.3·E[Paris]
    = (0,.3,0,.6), |e_R| = √.45; e_L = 0.7·E[France] + 0.2·E[Paris] + 0.05·E[EOS] = (0,.9,.07,.05): S_L = (.27+.03) /
    (√.45·√.8174) = 0.49466; the passage " Paris is the capital of France" has Paris/France in every window:
    S_R = max(cos(e_R, E[Paris]) = .3/√.45 = 0.44721, cos(e_R, E[France]) = .3/(√.45·√1.01) = 0.44499) = 0.44721 < S_L:
    the pure branch's " France" is emitted (it was bypassed: the answer ended)."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from tokrag_model.loading import resolve_pretrained
    from tokrag_model.methods.tokrag import TokRAGParams

    tok = AutoTokenizer.from_pretrained(resolve_pretrained("smollm2-135m-instruct").path)
    tc = TokenClasses(tok)
    V = len(tok)
    eos, paris, france = tok.eos_token_id, tok.encode(" Paris")[0], tok.encode(" France")[0]
    emb = torch.zeros(V, 4)
    emb[:, 0] = 1.0
    emb[eos], emb[paris], emb[france] = torch.tensor([0., 0, 0, 1]), torch.tensor([0., 1, 0, 0]), torch.tensor([0., 1, .1, 0])
    sc = TokRAGScorer(SimpleNamespace(n_layers=4, embed=emb, windows=[None] * 4), TokRAGParams(layer=2), tc.is_function,
                      tc.is_skip)
    p_rag = torch.zeros(V)
    p_rag[eos], p_rag[paris] = 0.6, 0.3
    p_pure = torch.zeros(V)
    p_pure[france], p_pure[paris], p_pure[eos] = 0.7, 0.2, 0.05
    rag_ids = tok.encode(" Paris is the capital of France")
    attn = torch.linspace(1, 0, len(rag_ids))
    d = sc.decide(p_rag.clamp_min(1e-12).log(), p_pure.clamp_min(1e-12).log(), rag_ids, (0, len(rag_ids)),
                  lambda layer: attn, None, None, 0)
    assert (d.branch, d.reason, d.token) == ("pure", "test", france)
    assert d.s_l == pytest.approx(0.3 / math.sqrt(0.45 * 0.8174), abs=1e-4)
    assert d.s_r == pytest.approx(0.3 / math.sqrt(0.45), abs=1e-4)


def test_analysis_constants_rank_3_to_7_no_window_unfloored():
    class Dec:
        n_layers = 32
        embed = torch.eye(8)

    sc = TokRAGScorer(Dec(), ANALYSIS_PARAMS, lambda t: False, lambda t: True)  # skip list ignored
    assert sc.fixed_layer == 16  # half of 32, the analysis script's layer
    attn = torch.tensor([0.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1])
    rag_ids = [7, 7, 1, 2, 3, 4, 5, 6, 0, 0]  # span [1, 9): ranks 1..8 = positions 1..8
    # ranking over the span: positions 1,2,3,...; ranks 3-7 = positions 3..7 -> ids 2..6, no window
    assert sc.window_ids(attn, rag_ids, (1, 9)) == [2, 3, 4, 5, 6]
    # e_R from the top-3 tokens; S_R is the plain max (negative stays negative)
    p = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    s_r, _ = tokrag_scores(p, p, Dec.embed, [2, 3], rag_top=3, pure_top=3, floor=False)
    assert s_r == 0.0
    s_r, _ = tokrag_scores(p, p, -Dec.embed, [7], rag_top=3, pure_top=3, floor=False)
    assert s_r == pytest.approx(1.0)
    e = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
    s_r, _ = tokrag_scores(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 0.0]), e, [1], rag_top=1, pure_top=1, floor=False)
    assert s_r == pytest.approx(-1.0)
    assert math.isnan(tokrag_scores(p, p, Dec.embed, [], floor=False)[0])


def test_read_preset_errors(tmp_path):
    good = {"format": "tokrag-preset/1", "method": "tokrag", "model": {"pretrained": "m", "fingerprint": "abc", "n_layers": 30},
            "params": {"layer": 12}, "calibration": {}}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(good))
    got = read_preset(path, "abc", 30)
    assert got["params"] == {"layer": 12} and len(got["sha256"]) == 64 and got["path"] == str(path)
    with pytest.raises(ConfigError, match="other weights"):
        read_preset(path, "zzz", 30)
    with pytest.raises(ConfigError, match="made for 30 layers"):
        read_preset(path, "abc", 32)
    with pytest.raises(ConfigError, match="cannot read"):
        read_preset(tmp_path / "missing.json")
    for params, match in (({"layr": 3}, "unknown params"), ({"js_min_layer": 1.5}, "js_min_layer=1.5 is invalid")):
        path.write_text(json.dumps({**good, "params": params}))
        with pytest.raises(ConfigError, match=match):
            read_preset(path)
    path.write_text("{")
    with pytest.raises(ConfigError, match="not JSON"):
        read_preset(path)
    # a hand-edited model or calibration record that is not an object: one line (model "x" was an AttributeError
    # traceback; calibration [] passed, and the run's first request raised it, after the load)
    for key, value in (("model", "x"), ("model", [30]), ("calibration", []), ("calibration", "x")):
        path.write_text(json.dumps({**good, key: value}))
        with pytest.raises(ConfigError) as exc:
            read_preset(path, "abc", 30)
        assert str(exc.value) == (f"preset={path}: {key!r} is {value!r}, not an object; write the preset with "
                                  "'tokrag calibrate --split dev'")
    path.write_text(json.dumps({**good, "calibration": None}))
    assert read_preset(path, "abc", 30)["calibration"] is None
    # a preset may carry the dynamic rule's params beside a fixed layer: they apply under an explicit layer=dynamic
    # (tests/test_model_lmeval.py); a preset of another method is refused (it was read for --model tokrag)
    path.write_text(json.dumps({**good, "params": {"layer": 14, "js_threshold": 1e-5}}))
    assert read_preset(path, "abc", 30)["params"] == {"layer": 14, "js_threshold": 1e-5}
    path.write_text(json.dumps({**good, "method": None}))  # null, as absent: an older preset
    assert read_preset(path, "abc", 30)["params"] == {"layer": 12}
    path.write_text(json.dumps({**good, "method": "rag-cad"}))
    with pytest.raises(ConfigError) as exc:
        read_preset(path, "abc", 30)
    assert str(exc.value) == (f"preset={path}: a preset for method 'rag-cad'; tokrag presets are for --model tokrag "
                              "(method 'tokrag'); write one with 'tokrag calibrate --split dev'")


def test_a_preset_path_with_a_tilde_is_expanded(tmp_path, monkeypatch):
    """``preset=~/p.json`` was read from ``./~/p.json`` (cannot read it, naming a path under the current folder)."""
    good = {"format": "tokrag-preset/1", "method": "tokrag", "model": {"n_layers": 30}, "params": {"layer": 12}}
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "p.json").write_text(json.dumps(good))
    got = read_preset("~/p.json")
    assert got["params"] == {"layer": 12} and got["path"] == str(tmp_path / "p.json")
    with pytest.raises(ConfigError, match=r"^preset '~nosuchuser_tokrag/p.json': cannot expand '~'"):
        read_preset("~nosuchuser_tokrag/p.json")


HINT = r"use a preset calibrated for this model \(tokrag calibrate --model {model} --split dev\)"


@pytest.mark.parametrize("n_layers, message", [
    (30, r"made for 30 layers, this model has 32; " + HINT.format(model="smollm2-135m-instruct")),
    ("30", r"model.n_layers is '30' \(str\), not a number of layers \(an integer\), this model has 32; "
           + HINT.format(model="smollm2-135m-instruct")),
    (None, r"does not record the number of layers it was made for \(model.n_layers\), this model has 32; "
           + HINT.format(model="smollm2-135m-instruct")),
])
def test_a_preset_of_another_or_no_recorded_depth_says_what_it_has_and_what_to_do(tmp_path, n_layers, message):
    """A preset with n_layers "30" said "made for 30 layers, this model has 30", one without n_layers "made for None
    layers", and neither said what to do."""
    model = {"pretrained": "m", "fingerprint": "abc"} | ({} if n_layers is None else {"n_layers": n_layers})
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag", "model": model, "params": {"layer": 12},
                                "calibration": {}}))
    with pytest.raises(ConfigError, match=rf"^preset={path}: {message}$"):
        read_preset(path, "abc", 32, "smollm2-135m-instruct")
    with pytest.raises(ConfigError, match=HINT.format(model="MODEL")):  # the model not known: a placeholder
        read_preset(path, n_layers=32)
    if n_layers == "30":
        with pytest.raises(ConfigError, match=r"model.n_layers is '30' \(str\), not a number of layers"):
            read_preset(path, n_layers=30)  # not "made for 30 layers, this model has 30"


def test_a_layer_outside_the_model_that_a_preset_set_names_the_preset(tmp_path):
    """A preset's own layer outside the model read as if it had been given ("layer=45 is outside ..."): it names the
    preset file, the param and what to do; a layer given explicitly over the preset does not."""
    from tokrag_model.args import COMMON_ARGS, parse_args
    from tokrag_model.methods.tokrag import TokRAGLM

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag",
                                "model": {"pretrained": "m", "fingerprint": "abc", "n_layers": 30},
                                "params": {"layer": 45, "rag_top": 60000}, "calibration": {}}))

    def check(given, vocab_size=None):
        given = {"pretrained": "smollm2-135m-instruct", "preset": str(path), **given}
        cfg = TokRAGLM.resolve_args(parse_args("tokrag", {**COMMON_ARGS, **TokRAGLM.EXTRA_ARGS}, given), given)
        TokRAGLM.check_shape(cfg, 30, vocab_size)

    with pytest.raises(ConfigError, match=rf"^--model tokrag: layer=45 is outside the model's 30 layers \(0..29\); it "
                                          rf"comes from preset={path} \(params.layer\): "
                                          + HINT.format(model="smollm2-135m-instruct") + r", or give layer= explicitly$"):
        check({})
    with pytest.raises(ConfigError, match=rf"^--model tokrag: rag_top=60000 exceeds the model's vocabulary of 49152 "
                                          rf"tokens; it comes from preset={path} \(params.rag_top\)"):
        check({"layer": 12}, 49152)
    with pytest.raises(ConfigError, match=r"^--model tokrag: layer=40 is outside the model's 30 layers \(0..29\)$"):
        check({"layer": 40})  # given explicitly: no preset note
    check({"layer": 12, "rag_top": 2}, 49152)


def test_span_visible_follows_the_sliding_window_mask():
    # the decoder's mask: a window-w layer hides keys j with query - j >= w; window 4 at query 10 sees keys 7..10
    assert span_visible(None, 10_000, (0, 5))  # full attention
    assert span_visible(4, 10, (7, 9)) and not span_visible(4, 10, (6, 9))
    assert span_visible(4, 10, (3, 3))  # an empty span


def test_dynamic_rule_skips_layers_that_cannot_see_the_span():
    calls = []
    gaps = {3: 0.5, 4: 0.5, 6: 0.5}

    def gap(ell):
        calls.append(ell)
        return gaps.get(ell, 0.0)

    # unrestricted: the first pair above min_layer 2 with gap > 0.1 is 3 -> layer 2
    assert dynamic_layer(gap, 8, 2, 7, 0.1) == (2, True)
    calls.clear()
    # layers 2 and 3 cannot see the span: pairs 3 and 4 are skipped without asking for their gap; pair 6 -> layer 5
    assert dynamic_layer(gap, 8, 2, 7, 0.1, eligible=lambda layer: layer not in (2, 3)) == (5, True)
    assert calls == [5, 6]
    assert dynamic_layer(gap, 8, 2, 7, 0.1, eligible=lambda layer: False) == (7, False)  # the fallback


def test_scorer_dynamic_layer_on_a_sliding_window_model(caplog):
    """A toy 6-layer model whose layers 0-3 have a window of 8: from query position 20, a span starting at
    2 is out of their reach, so the dynamic rule only considers layers 4 and 5 (the decoder's rule)."""

    class Dec:
        n_layers = 6
        embed = torch.eye(4)
        windows = [8, 8, 8, 8, None, None]

    from dataclasses import replace

    from tokrag_model.methods import tokrag as T

    seen = []

    def fake_gaps(dec, h_r, h_p, layers, chunk=16):
        seen.extend(layers)
        return torch.tensor([[1.0 if ell == 5 else 0.0 for ell in layers]])

    orig = T.layer_gaps
    T.layer_gaps = fake_gaps
    try:
        sc = TokRAGScorer(Dec(), replace(T.TokRAGParams(), layer="dynamic", js_min_layer=1, layer_fallback=5,
                                         js_threshold=0.5), lambda t: False, lambda t: False)
        h = torch.zeros(7, 4)
        assert sc.layer_for(h, h, query_pos=20, span=(2, 12)) == (4, True)  # pair 5 -> layer 4; pairs 2-4 skipped
        assert seen == [5]
        seen.clear()
        assert sc.layer_for(h, h, query_pos=9, span=(2, 12)) == (4, True)  # 9 - 2 < 8: every layer sees the span
        assert seen == [2, 3, 4, 5]
    finally:
        T.layer_gaps = orig
    with caplog.at_level("WARNING"):
        TokRAGScorer(Dec(), replace(T.TokRAGParams(), layer=2), lambda t: False, lambda t: False)
    assert "layer 2 is a sliding-window layer" in caplog.text and "[4, 5]" in caplog.text


def _agree_case(always_score: bool = False):
    """Both branches' greedy token is 1 (" Paris"); the passage holds only token 4. Embeddings: E[1..3] one-hot on
    axes 1..3, E[0] and E[4] on axis 0. e_R = 0.6·E1 + 0.3·E2 = (0, .6, .3, 0); e_L = 0.5·E1 + 0.3·E3 + 0.15·E4 =
    (.15, .5, 0, .3): S_L = 0.3 / (√0.45 · √0.3625) = 0.74278; S_R = max(0, cos(e_R, E4)) = 0, so the test picks pure."""
    from dataclasses import replace

    import tokrag_model.methods.tokrag as T

    class Dec:
        n_layers = 4
        embed = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0], [1.0, 0, 0, 0]])
        windows = [None] * 4

    params = replace(T.TokRAGParams(), layer=2, always_score=always_score)
    sc = TokRAGScorer(Dec(), params, lambda t: t == 0, lambda t: False)
    lp_rag = torch.tensor([0.05, 0.6, 0.3, 0.0, 0.05]).clamp_min(1e-9).log()
    lp_pure = torch.tensor([0.05, 0.5, 0.0, 0.3, 0.15]).clamp_min(1e-9).log()
    rag_ids = [4, 4, 4, 4]
    return sc, lp_rag, lp_pure, rag_ids, (lambda layer: torch.tensor([0.4, 0.3, 0.2, 0.1]))


def test_teacher_forced_rule_tests_agreeing_positions():
    """tokrag_method.md §3.3 has no agree shortcut: a teacher-forced score (force_score) picks the branch by the test
    where both greedy tokens agree, since whose log-prob of the gold token is summed depends on it (a review: the
    RAG branch's was always summed, 2-6 nats per NQ passage on SmolLM2). Generation keeps the shortcut (either branch
    emits the token), with or without always_score."""
    sc, lp_rag, lp_pure, ids, att = _agree_case()
    d = sc.decide(lp_rag, lp_pure, ids, (0, 4), att, None, None, 0, force_score=True)
    assert (d.branch, d.reason, d.token) == ("pure", "agree", 1)
    assert d.s_r == pytest.approx(0.0) and d.s_l == pytest.approx(0.3 / math.sqrt(0.45 * 0.3625), abs=1e-5)
    d = sc.decide(lp_rag, lp_pure, ids, (0, 4), att, None, None, 0)
    assert (d.branch, d.reason, d.s_r) == ("rag", "agree", None)  # generation: untested
    sc, *_ = _agree_case(always_score=True)
    d = sc.decide(lp_rag, lp_pure, ids, (0, 4), att, None, None, 0)
    assert (d.branch, d.reason) == ("rag", "agree") and d.s_l == pytest.approx(0.74278, abs=1e-4)  # traced only
    # a function token (the bypass list, §3.3 step 2) is RAG's untested, teacher-forced too
    lp_fn = torch.tensor([0.6, 0.3, 0.05, 0.0, 0.05]).clamp_min(1e-9).log()
    d = sc.decide(lp_fn, lp_fn, ids, (0, 4), att, None, None, 0, force_score=True)
    assert (d.branch, d.reason) == ("rag", "bypass")
