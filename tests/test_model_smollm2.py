"""Golden tests of the five methods with the real SmolLM2-135M-Instruct (loaded once per process: tests/conftest.py).

Docs are built by hand from ``nq_open_oracle`` (the gold passage, rank 1) plus one DPR-sample passage
as a distractor, the shape the retrieval tasks attach (``{docid, title, text, score, rank}``).
Deterministic settings: float32, greedy, one thread. The golden values were produced by this code
on CPU (torch 2.13.0, transformers 5.24.0); a change in them means the method's numbers moved.
"""

from __future__ import annotations

import gzip
import json

import pytest

pytestmark = pytest.mark.slow

N_Q = 5
MAX_TOKS = 5
GEN = {"until": ["\n", "<|im_end|>"], "max_gen_toks": MAX_TOKS, "do_sample": False}


def make_docs(data_dir, n=N_Q, n_distractors=1):
    """NQ-oracle questions with ctxs = [gold passage (rank 1), DPR-sample distractors (ranks 2..)]."""
    rows = []
    with gzip.open(data_dir / "nq_open_oracle" / "nq-open-oracle.jsonl.gz", "rt") as f:
        for line in f:
            rows.append(json.loads(line))
            if len(rows) == n:
                break
    dpr = []
    with open(data_dir / "dpr_wiki_sample1k" / "sample_data.jsonl") as f:
        for line in f:
            dpr.append(json.loads(line))
            if len(dpr) == 50:
                break
    docs = []
    for qi, r in enumerate(rows):
        g = r["ctxs"][0]
        ctxs = [{"docid": f"gold-{qi}", "title": g.get("title", ""), "text": g["text"], "score": 20.0, "rank": 1}]
        for j in range(n_distractors):
            d = dpr[(qi * n_distractors + j) % len(dpr)]
            title, text = d["contents"].split("\n", 1)
            ctxs.append({"docid": f"dpr-{d['id']}", "title": title.strip('"'), "text": text,
                         "score": 18.5 - j, "rank": j + 2})
        docs.append({"question": r["question"], "answers": r["answers"], "ctxs": ctxs, "scored_by": "bm25"})
    return docs


def context_of(tok, doc):
    """The task's rendered context: a chat-formatted question (what a chat-template task renders)."""
    return tok.apply_chat_template([{"role": "user", "content": f"Answer briefly. {doc['question']}?"}],
                                   tokenize=False, add_generation_prompt=True)


def gen_requests(tok, docs, prefix_builder=None):
    from lm_eval.api.instance import Instance

    reqs = []
    for i, d in enumerate(docs):
        ctx = context_of(tok, d)
        if prefix_builder is not None:
            ctx = prefix_builder.block(d["ctxs"]) + ctx
        reqs.append(Instance("generate_until", d, (ctx, dict(GEN)), i, metadata=("t", i, 1)))
    return reqs


@pytest.fixture(scope="session")
def docs(data_dir):
    return make_docs(data_dir)


METHOD_ARGS = {"tokrag": {"always_score": True}}


@pytest.fixture(scope="session")
def outputs(backbone, docs, smollm2_standard):
    """Generations + traces + stats of every method on the same requests (computed once; rag-standard's are the
    session's, tests/conftest.py, which other modules compare with too)."""
    from tokrag_model.methods import MODELS

    res = {}
    for name in GOLDEN_OUT:  # the methods with golden values (a new method's tests live in its own file)
        if name == "rag-standard":
            res[name] = smollm2_standard
            continue
        lm = MODELS[name].with_backbone(backbone, **METHOD_ARGS.get(name, {}))
        reqs = gen_requests(backbone.tokenizer, docs)
        out = lm.generate_until(reqs, disable_tqdm=True)
        res[name] = {"out": out, "traces": [r.args[-1]["tokrag_trace"] for r in reqs], "stats": dict(lm.stats), "lm": lm}
    return res


# ------------------------------------------------------------------------------------- golden values
GOLDEN_OUT = {
 "tokrag": [
  "The first Nobel Prize in",
  "The next deadpool movie",
  "The south west wind blows",
  "In World War II,",
  "The first declaration of human"
 ],
 "rag-standard": [
  "The first Nobel Prize in",
  "The next Deadpool movie",
  "The south west wind blows",
  "In World War II,",
  "The first declaration of human"
 ],
 "rag-replug": [
  "The first Nobel Prize in",
  "The next Deadpool movie",
  "The south west wind blows",
  "In World War II,",
  "The first declaration of human"
 ],
 "rag-selfrag-filter": [
  "The first Nobel Prize in",
  "The next deadpool movie",
  "The south west wind blows",
  "In World War II,",
  "The first declaration of human"
 ],
 "rag-none": [
  "The first Nobel Prize in",
  "The next deadpool movie",
  "The south west wind blows",
  "In World War II,",
  "The first declaration of human"
 ]
}
GOLDEN_TOKRAG = [[["R=", 0.2385, 0.9891, 19], ["R=", 0.2177, 0.9678, 19], ["R=", 0.4644, 0.9981, 19], ["R=", 0.9996, 0.9974, 19], ["R=", 0.9997, 1.0, 19]], [["R=", 0.5706, 0.9942, 19], ["R=", 0.1787, 0.8993, 19], ["L", 0.3699, 0.9413, 19], ["R=", 1.0, 1.0, 19], ["R=", 0.3622, 1.0, 19]], [["R=", 0.2699, 0.9918, 19], ["R=", 0.2588, 0.9969, 19], ["R=", 0.2336, 1.0, 19], ["R=", 0.207, 0.9996, 19], ["R=", 0.4052, 0.9944, 19]], [["R=", 0.5208, 0.9786, 19], ["R=", 0.2223, 0.8665, 19], ["R=", 0.1548, 1.0, 19], ["R=", 0.1795, 0.9627, 19], ["R=", 0.7128, 1.0, 19]], [["R=", 0.8168, 0.991, 19], ["R=", 0.2466, 0.8963, 19], ["R=", 0.5135, 0.9769, 19], ["R=", 1.0, 1.0, 19], ["R=", 0.1022, 1.0, 19]]]
GOLDEN_CRITIC = [{"gold-0": 0.3451, "dpr-0": 0.2822}, {"gold-1": 0.1694, "dpr-1": 0.3018}, {"gold-2": 0.177, "dpr-2": 0.2743}, {"gold-3": 0.3061, "dpr-3": 0.2054}, {"gold-4": 0.2982, "dpr-4": 0.1998}]
GOLDEN_LL = {"tokrag": -17.034, "rag-standard": -17.034, "rag-replug": -16.62, "rag-selfrag-filter": -24.658, "rag-none": -24.658}


def test_none_and_standard_match_lm_eval_hf(backbone, docs, outputs):
    """rag-none/rag-standard give lm-eval's ``hf`` model's exact strings for the same contexts."""
    from lm_eval.models.huggingface import HFLM

    hf = HFLM(pretrained=backbone.model, tokenizer=backbone.tokenizer, batch_size=1, device="cpu",
              max_length=outputs["rag-standard"]["lm"].max_length)
    pure = hf.generate_until(gen_requests(backbone.tokenizer, docs), disable_tqdm=True)
    rag = hf.generate_until(gen_requests(backbone.tokenizer, docs, outputs["rag-standard"]["lm"].prompts), disable_tqdm=True)
    assert outputs["rag-none"]["out"] == pure
    assert outputs["rag-standard"]["out"] == rag
    assert outputs["rag-none"]["out"] != outputs["rag-standard"]["out"]  # the passages matter
    # the golden strings were recorded with row-major weights; the CPU default is column-major
    assert backbone.weight_layout == "col" and outputs["rag-standard"]["lm"].resolved_config["weight_layout"] == "col"


def test_golden_outputs_and_decisions(outputs):
    got = {m: outputs[m]["out"] for m in outputs}
    assert got == GOLDEN_OUT, json.dumps(got, indent=1)
    tok = [t["tokens"] for t in outputs["tokrag"]["traces"]]
    # branch and layer exactly; cosines to 2e-3 (they are rounded to 4 digits in the trace)
    assert [[(b, layer) for b, _, _, layer, *_ in q] for q in tok] == \
        [[(b, layer) for b, _, _, layer, *_ in q] for q in GOLDEN_TOKRAG], json.dumps(tok)
    flat = [x for q in tok for t in q for x in t[1:3]]
    assert flat == pytest.approx([x for q in GOLDEN_TOKRAG for t in q for x in t[1:3]], abs=2e-3)
    critic = [t["critic"] for t in outputs["rag-selfrag-filter"]["traces"]]
    assert [list(c) for c in critic] == [list(c) for c in GOLDEN_CRITIC]
    assert [list(c.values()) for c in critic] == [pytest.approx(list(c.values()), abs=2e-3) for c in GOLDEN_CRITIC]
    for t in outputs["rag-replug"]["traces"]:  # softmax([20, 18.5] / 1.0)
        assert t["weights"] == [0.8176, 0.1824]
        # τ from the docs' scored_by (bm25: 1.0); -(p ln p + q ln q) with p = 1/(1+e^-1.5) = 0.475051 nats
        assert (t["tau"], t["top1_weight"], t["weight_entropy"]) == (1.0, 0.8176, 0.4751)


def test_decisions_are_consistent_with_outputs(outputs):
    """tokrag follows the pure branch exactly where it emitted a pure token; filter with none kept == rag-none."""
    for tr, out_tok, out_std, out_none in zip(outputs["tokrag"]["traces"], outputs["tokrag"]["out"],
                                              outputs["rag-standard"]["out"], outputs["rag-none"]["out"]):
        if tr["n_pure"] == 0:
            assert out_tok == out_std
        # trace entries [branch, S_R, S_L, layer, token_text]: the texts spell the generation
        assert out_tok.strip() and out_tok.strip() in "".join(t[4] for t in tr["tokens"])
        for b, s_r, s_l, layer, _ in tr["tokens"]:
            assert s_r is not None and 0 <= layer < 30  # always_score: every step scored
            if b == "L":
                assert not s_r > s_l
            elif b == "R":
                assert s_r > s_l
    for tr, out_f, out_none in zip(outputs["rag-selfrag-filter"]["traces"], outputs["rag-selfrag-filter"]["out"],
                                   outputs["rag-none"]["out"]):
        if tr["closed_book"]:
            assert out_f == out_none and all(r < 0.5 for r in tr["critic"].values())
    s, std = outputs["tokrag"]["stats"], outputs["rag-standard"]["stats"]
    assert s["forward_passes"] % 2 == 0  # two branches per request, one batched pass per step
    assert s["prompt_tokens"] > std["prompt_tokens"] and std["generated_tokens"] > 0


def test_selfrag_filter_threshold_zero_keeps_all_passages(backbone, docs, outputs):
    from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

    lm = SelfRAGFilterLM.with_backbone(backbone, relevance_threshold=0.0)
    reqs = gen_requests(backbone.tokenizer, docs[1:2])
    assert lm.generate_until(reqs, disable_tqdm=True) == outputs["rag-standard"]["out"][1:2]  # 'Deadpool' (RAG)
    assert reqs[0].args[-1]["tokrag_trace"]["closed_book"] is False


def test_batch_size_4_gives_the_same_tokens(backbone, docs, outputs):
    """Greedy decoding with 4 requests per batch (8 left-padded rows, one forward per step) gives the
    same tokens and decisions as one request at a time."""
    from tokrag_model.methods.tokrag import TokRAGLM

    lm = TokRAGLM.with_backbone(backbone, batch_size="4", **METHOD_ARGS["tokrag"])
    reqs = gen_requests(backbone.tokenizer, docs[:4])
    assert lm.generate_until(reqs, disable_tqdm=True) == outputs["tokrag"]["out"][:4]
    got = [[(b, layer, text) for b, _, _, layer, text in r.args[-1]["tokrag_trace"]["tokens"]] for r in reqs]
    assert got == [[(b, layer, text) for b, _, _, layer, text in t["tokens"]] for t in outputs["tokrag"]["traces"][:4]]


def test_loglikelihood_every_method(backbone, docs, outputs):
    from lm_eval.api.instance import Instance

    d = docs[0]
    got = {}
    for name, o in outputs.items():
        req = Instance("loglikelihood", d, (context_of(backbone.tokenizer, d), " " + d["answers"][0]), 0)
        (ll, greedy), = o["lm"].loglikelihood([req], disable_tqdm=True)
        got[name] = round(ll, 3)
        # the token count travels with the value (token perplexity of the LM tasks)
        assert ll.n_tokens == len(o["lm"].cont_ids(*o["lm"].split_context(req.args[0], req.args[1]))) > 0
    assert got == pytest.approx(GOLDEN_LL, abs=1e-2), got
    assert got["rag-standard"] > got["rag-none"]  # the gold passage makes the answer more likely


def test_tokrag_teacher_forced_token_scores(backbone, docs, outputs):
    lm = outputs["tokrag"]["lm"]
    d = docs[0]
    decs = lm.token_scores(d, context_of(backbone.tokenizer, d), " " + d["answers"][0])
    cont = lm.cont_ids(*lm.split_context(context_of(backbone.tokenizer, d), " " + d["answers"][0]))
    assert len(decs) == len(cont) > 0
    for dec in decs:
        assert dec.s_r is not None and dec.s_l is not None and 0 <= dec.layer < 30
        assert dec.logp_rag <= 0 and dec.logp_pure <= 0
    total_rag = sum(x.logp_rag for x in decs)
    assert total_rag == pytest.approx(GOLDEN_LL["rag-standard"], abs=2e-3)


def test_passages_over_budget_drop_lowest_ranked_first(backbone, docs):
    from retrieval.errors import ConfigError
    from tokrag_model.prompt import PromptBuilder

    pb = PromptBuilder(backbone.tokenizer, "[Reference]: {title}\n{text}\n")
    d = docs[0]
    ctx = context_of(backbone.tokenizer, d)
    full = pb.rag(d["ctxs"], ctx, None)
    n_q = len(pb.encode(ctx))
    one = pb.rag(d["ctxs"][:1], ctx, None)
    assert full.kept == ["gold-0", "dpr-0"] and full.text.endswith(ctx)
    # budget between the one-passage and two-passage prompts: the rank-2 passage is dropped
    cut = pb.rag(d["ctxs"], ctx, len(one.ids))
    assert cut.kept == ["gold-0"] and cut.dropped == ["dpr-0"] and cut.ids == one.ids
    # budget below one passage: closed-book prompt, the question intact
    none = pb.rag(d["ctxs"], ctx, n_q + 5)
    assert none.kept == [] and none.dropped == ["gold-0", "dpr-0"] and none.ids == pb.encode(ctx)
    with pytest.raises(ConfigError, match="the question is never cut"):
        pb.rag(d["ctxs"], ctx, n_q - 1)
    # an explicit passage budget (max_passage_tokens) drops the rank-2 passage the same way
    pb2 = PromptBuilder(backbone.tokenizer, "[Reference]: {title}\n{text}\n", max_passage_tokens=one.n_passage_tokens)
    assert pb2.rag(d["ctxs"], ctx, None).kept == ["gold-0"]
    # the retrieved span ends where the question starts
    assert backbone.tokenizer.decode(full.ids[full.span[1]:]) == ctx
    assert full.span[0] == one.span[0] == 0 and full.n_passage_tokens > one.n_passage_tokens  # plain: a prefix


def test_passages_dropped_for_the_budget_are_logged_once_per_call(backbone, docs, caplog):
    """Only the per-sample trace said that a passage was dropped for max_length: the run looked like top-k."""
    import logging

    from lm_eval.api.instance import Instance

    from tokrag_model.methods import MODELS
    from tokrag_model.prompt import PromptBuilder

    d = docs[0]
    ctx = context_of(backbone.tokenizer, d)
    one = PromptBuilder(backbone.tokenizer, "[Reference]: {title}\n{text}\n").rag(d["ctxs"][:1], ctx, None)
    lm = MODELS["rag-standard"].with_backbone(backbone, max_length=len(one.ids) + 1)  # room for one passage
    req = Instance("generate_until", d, (ctx, {"until": ["\n"], "max_gen_toks": 1, "do_sample": False}), 0)
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm.generate_until([req, req], disable_tqdm=True)
    msgs = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert msgs == [f"rag-standard: 2 passage(s) dropped from 2 prompt(s) to fit max_length={len(one.ids) + 1} "
                    "(dropped whole, lowest-ranked first, where the passages ranked above left no room; ranks dropped "
                    "(prompts): 2 (2); the trace's 'passages' lists those shown; answer_recall/gold_at_k still count "
                    "them): raise max_length"]
    assert req.args[-1]["tokrag_trace"]["dropped"] == ["dpr-0"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        MODELS["rag-standard"].with_backbone(backbone).generate_until([req], disable_tqdm=True)
        lm.encode_rag(d, ctx, len(one.ids))  # a drop outside generate_until/loglikelihood is not carried over
        lm.generate_until([], disable_tqdm=True)
        req1 = Instance("generate_until", d, (ctx, {"until": ["\n"], "max_gen_toks": 1, "do_sample": False}), 0)
        lm.generate_until([req1], disable_tqdm=True)
    assert [r.getMessage().split(" to fit")[0] for r in caplog.records if "dropped" in r.getMessage()] == [
        "rag-standard: 1 passage(s) dropped from 1 prompt(s)"]
    assert not [r for r in caplog.records if "keeps the top" in r.getMessage()]  # k not given: every passage attached
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):  # k below the passages the task attached
        MODELS["rag-standard"].with_backbone(backbone, k=1).generate_until([req1, req1], disable_tqdm=True)
    assert [r.getMessage() for r in caplog.records] == [
        "rag-standard: k=1 keeps the top 1 of up to 2 passages the task attached (its answer_recall/gold_at_k count all "
        "of them: tasks/README 'Metrics'); to score what the model sees, give the task --metadata '{\"hits\": 1}'"]


def test_trace_prompts_are_the_exact_branch_prompts(backbone, docs):
    """Logged samples showed the task context with the passages slot; trace_prompts=true adds every branch's
    prompt as the model saw it (decoded from its token ids)."""
    from lm_eval.api.instance import Instance

    from tokrag_model.methods import MODELS
    from tokrag_model.prompt import PromptBuilder

    d = docs[0]
    ctx = context_of(backbone.tokenizer, d)
    pb = PromptBuilder(backbone.tokenizer, "[Reference]: {title}\n{text}\n")
    rag, pure = pb.rag(d["ctxs"], ctx, None), pb.pure(ctx, None)
    dec = (lambda ids: backbone.tokenizer.decode(ids, skip_special_tokens=False))
    for name, want in (("rag-standard", [dec(rag.ids)]), ("tokrag", [dec(rag.ids), dec(pure.ids)]), ("rag-none", [dec(pure.ids)])):
        req = Instance("generate_until", d, (ctx, {"until": ["\n"], "max_gen_toks": 1, "do_sample": False}), 0)
        MODELS[name].with_backbone(backbone, trace_prompts=True).generate_until([req], disable_tqdm=True)
        assert req.args[-1]["tokrag_trace"]["prompts"] == want, name
    assert dec(rag.ids).startswith("[Reference]: ") and dec(rag.ids).endswith(ctx) and "[Reference]" not in dec(pure.ids)
    req = Instance("generate_until", d, (ctx, {"until": ["\n"], "max_gen_toks": 1, "do_sample": False}), 0)
    MODELS["rag-standard"].with_backbone(backbone).generate_until([req], disable_tqdm=True)
    assert "prompts" not in req.args[-1]["tokrag_trace"]  # off by default: samples stay small


def test_loglikelihood_rolling(backbone, docs, outputs):
    """rag-none's rolling log-likelihood equals lm-eval's ``hf``; passages change it for the RAG methods."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    d = docs[0]
    text = d["ctxs"][0]["text"][:200]
    hf = HFLM(pretrained=backbone.model, tokenizer=backbone.tokenizer, batch_size=1, device="cpu",
              max_length=outputs["rag-none"]["lm"].max_length)
    (ref,) = hf.loglikelihood_rolling([Instance("loglikelihood_rolling", d, (text,), 0)], disable_tqdm=True)
    got = {}
    for name in ("rag-none", "rag-standard", "tokrag"):
        req = Instance("loglikelihood_rolling", d, (text,), 0)
        (got[name],) = outputs[name]["lm"].loglikelihood_rolling([req], disable_tqdm=True)
        assert req.args[-1]["tokrag_trace"]["method"] == name
    assert got["rag-none"] == pytest.approx(ref, abs=1e-3)
    # the passage being scored is the gold passage itself: retrieval makes it far more likely
    assert got["rag-standard"] > got["rag-none"] + 20
    assert got["tokrag"] > got["rag-none"]  # tokrag follows the RAG branch on most tokens here


def test_passages_dropped_by_max_passage_tokens_name_it(backbone, docs, caplog):
    """The drop WARNING said "to fit max_length=8192 ...: raise max_length" when max_passage_tokens had dropped the
    passages (raising max_length changed nothing); with max_passage_tokens set it names both bounds."""
    import logging

    from lm_eval.api.instance import Instance

    from tokrag_model.methods import MODELS

    d = docs[0]
    ctx = context_of(backbone.tokenizer, d)
    lm = MODELS["rag-standard"].with_backbone(backbone, max_length=20000, max_passage_tokens=8)  # no passage fits
    req = Instance("generate_until", d, (ctx, {"until": ["\n"], "max_gen_toks": 1, "do_sample": False}), 0)
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        lm.generate_until([req], disable_tqdm=True)
    assert [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()] == [
        f"rag-standard: {len(d['ctxs'])} passage(s) dropped from 1 prompt(s) to fit max_length=20000 and "
        "max_passage_tokens=8 (dropped whole, lowest-ranked first, where the passages ranked above left no room, and "
        "every passage of 1 prompt(s) with no room for even the first token of the top passage (answered closed-book); "
        "ranks dropped (prompts): 1 (1), 2 (1); the trace's 'passages' lists those shown; answer_recall/gold_at_k "
        "still count them): raise max_passage_tokens or max_length"]
