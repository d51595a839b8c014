"""Per-token decoding cost of each method relative to rag-standard, in the same run.

20 NQ-oracle questions, k=5 BM25 passages from ``retrieval.retrieve`` over the ``nq-dpr-1k`` corpus
(gold passages of the first 200 NQ-oracle questions + 1,000 DPR passages), SmolLM2-135M-Instruct
(float32, CPU, one thread by default), greedy, chat-formatted question, ``max_gen_toks`` 16.

Per-token wall time = all wall time the method spends on the 20 requests (prefills, critic calls,
decode steps) / generated tokens. Every method generates exactly ``max_gen_toks`` tokens per request (no
stop strings, EOS ignored, as throughput benchmarks fix the output length): otherwise a method that
happens to emit EOS earlier would spread its prefill over fewer tokens and look slower per token for
a reason that is not its per-token cost (``--stop-at-eos`` measures with EOS honoured instead). Methods are interleaved per question (all methods on question 1,
then on question 2, ..., order rotated) so that load drift on a shared machine hits all alike; with
``--rounds`` > 1 the fastest sweep per method is kept. Targets (issue 3): tokrag ≤ 1.25×, rag-replug ≤ 2.0×,
rag-selfrag-filter ≤ 1.5× rag-standard. The last output line is one JSON object.

    python benchmarks/decoding.py [--n 20] [--k 5] [--max-gen-toks 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# `python benchmarks/decoding.py` puts benchmarks/ first on sys.path, where benchmarks/retrieval.py would
# shadow the retrieval package: use the repository root instead.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
if os.path.isdir(os.path.join(_HERE, "..", "..", "shared", "data")):
    os.environ.setdefault("TOKRAG_DATA_DIR", os.path.abspath(os.path.join(_HERE, "..", "..", "shared", "data")))


def _install_timers() -> dict[str, float]:
    """Accumulate wall time spent in the decoder's prefills and batched decode steps (benchmark only)."""
    from tokrag_model.decoder import MultiContextDecoder

    acc: dict[str, float] = {}
    for name in ("prefill", "step", "next_logprobs_shared_prefix"):
        orig = getattr(MultiContextDecoder, name)

        def timed(self, *a, _orig=orig, _name=name, **kw):
            t = time.perf_counter()
            try:
                return _orig(self, *a, **kw)
            finally:
                acc[_name] = acc.get(_name, 0.0) + time.perf_counter() - t

        setattr(MultiContextDecoder, name, timed)
    return acc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--max-gen-toks", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pretrained", default="smollm2-135m-instruct")
    ap.add_argument("--stop-at-eos", action="store_true", help="honour EOS (output lengths then differ per method)")
    args = ap.parse_args(argv)

    import torch
    from lm_eval.api.instance import Instance

    from retrieval import named_corpus, nq_oracle_questions, retrieve, score_label
    from tokrag_model.base import Backbone
    from tokrag_model.methods import MODELS

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    qs = nq_oracle_questions(limit=args.n)
    corpus = named_corpus("nq-dpr-1k")
    run = retrieve(corpus, {q["qid"]: q["question"] for q in qs}, "bm25", k=args.k)
    docs = [{"qid": q["qid"], "question": q["question"], "answers": q["answers"], "ctxs": run.ctxs[q["qid"]],
             "scored_by": score_label("bm25")} for q in qs]
    gold_at_k = sum(any(c["docid"] in q["gold_docids"] for c in run.ctxs[q["qid"]]) for q in qs) / len(qs)
    print(f"passages: BM25 top-{args.k} from retrieval.retrieve over nq-dpr-1k; gold@{args.k} = {gold_at_k:.2f}")

    bb = Backbone.load(args.pretrained)
    tok = bb.tokenizer
    contexts = [tok.apply_chat_template([{"role": "user", "content": f"Answer briefly. {d['question']}?"}],
                                        tokenize=False, add_generation_prompt=True) for d in docs]
    # no stop strings and (unless --stop-at-eos) no EOS: every method generates max_gen_toks tokens per
    # request, so the prefill cost is amortised over the same number of tokens for every method
    gen = {"until": [], "max_gen_toks": args.max_gen_toks, "do_sample": False}
    timers = _install_timers()
    methods = {
        "rag-standard": {}, "tokrag": {}, "tokrag-layer20of32": {"layer": 20 / 32},
        "rag-replug": {}, "rag-selfrag-filter": {}, "rag-none": {},
        "rag-cad": {}, "rag-adacad": {}, "rag-ensemble-entropy": {},
    }
    # Interleaved: for every question all methods run back to back (order rotated per question), so
    # load drift on a shared machine hits every method alike; --rounds repeats the whole sweep and
    # the fastest sweep per method is kept.
    names = list(methods)
    best: dict[str, dict] = {}
    for rnd in range(args.rounds):
        lms = {name: MODELS[name.split("-layer")[0]].with_backbone(bb, **kw) for name, kw in methods.items()}
        if not args.stop_at_eos:
            for lm in lms.values():
                lm.eos_ids = set()
        acc = {n: {"wall_s": 0.0, "prefill_s": 0.0, "decode_steps_s": 0.0, "pure_tokens": 0, "tested_tokens": 0}
               for n in names}
        for lm in lms.values():
            lm.reset_stats()
        for qi, (d, c) in enumerate(zip(docs, contexts)):
            shift = (qi + rnd) % len(names)
            for name in names[shift:] + names[:shift]:
                req = Instance("generate_until", d, (c, dict(gen)), qi)
                timers.clear()
                t0 = time.perf_counter()
                lms[name].generate_until([req], disable_tqdm=True)
                a = acc[name]
                a["wall_s"] += time.perf_counter() - t0
                a["prefill_s"] += timers.get("prefill", 0.0) + timers.get("next_logprobs_shared_prefix", 0.0)
                a["decode_steps_s"] += timers.get("step", 0.0)
                if name.startswith("tokrag"):
                    toks = req.args[-1]["tokrag_trace"]["tokens"]
                    a["pure_tokens"] += sum(t[0] == "L" for t in toks)
                    a["tested_tokens"] += sum(t[1] is not None for t in toks)
        for name in names:
            st = dict(lms[name].stats)
            a = acc[name]
            row = {"wall_s": round(a["wall_s"], 3),
                   "per_token_ms": round(1000 * a["wall_s"] / max(1, st["generated_tokens"]), 2), **st,
                   "prefill_s": round(a["prefill_s"], 3), "decode_steps_s": round(a["decode_steps_s"], 3),
                   "decode_ms_per_step": round(1000 * a["decode_steps_s"] / max(1, st["generated_tokens"]), 2)}
            if name.startswith("tokrag"):
                row["pure_tokens"], row["tested_tokens"] = a["pure_tokens"], a["tested_tokens"]
            print(f"round {rnd} {name:22s} {json.dumps(row)}", flush=True)
            if name not in best or row["per_token_ms"] < best[name]["per_token_ms"]:
                best[name] = row
    base = best["rag-standard"]["per_token_ms"]
    print("\nmethod                  per-token ms  ratio to rag-standard  forward passes/token")
    for name, row in best.items():
        print(f"{name:22s}  {row['per_token_ms']:12.2f}  {row['per_token_ms'] / base:21.3f}  "
              f"{row['forward_passes'] / max(1, row['generated_tokens']):8.2f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    result = {
        "ratio_tokrag": round(best["tokrag"]["per_token_ms"] / base, 3),
        "ratio_tokrag_fixed_layer": round(best["tokrag-layer20of32"]["per_token_ms"] / base, 3),
        "ratio_replug": round(best["rag-replug"]["per_token_ms"] / base, 3),
        "ratio_selfrag_filter": round(best["rag-selfrag-filter"]["per_token_ms"] / base, 3),
        "ratio_none": round(best["rag-none"]["per_token_ms"] / base, 3),
        "ratio_cad": round(best["rag-cad"]["per_token_ms"] / base, 3),
        "ratio_adacad": round(best["rag-adacad"]["per_token_ms"] / base, 3),
        "ratio_ensemble_entropy": round(best["rag-ensemble-entropy"]["per_token_ms"] / base, 3),
        "per_token_ms_standard": base,
        "peak_rss_mb": round(peak, 1),
        "n_questions": len(docs), "k": args.k, "gold_at_k": gold_at_k, "max_gen_toks": args.max_gen_toks,
        "stop_at_eos": args.stop_at_eos,
        "targets": {"ratio_tokrag": 1.25, "ratio_replug": 2.0, "ratio_selfrag_filter": 1.5},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
