"""Decoding cost of every method relative to rag-standard, lm-eval's ``hf`` model, and batching, in one run.

20 NQ-oracle questions, k=5 BM25 passages from ``retrieval.retrieve`` over the ``nq-dpr-1k`` corpus
(gold passages of the first 200 NQ-oracle questions + 1,000 DPR passages), SmolLM2-135M-Instruct
(float32, CPU, one thread by default), greedy, chat-formatted question, ``max_gen_toks`` 16. Figures
(targets from issue 13 in ``targets``; every figure is a ratio measured in this one run):

* ``ratio_<method>``: per-token time of the method ÷ rag-standard's, at batch 1. Per-token time = all
  time the method spends on the requests (prefills, critic calls, decode steps, decisions) / generated
  tokens. Every method generates exactly ``max_gen_toks`` tokens per request (no stop strings, EOS
  ignored, as throughput benchmarks fix the output length; ``--stop-at-eos`` honours EOS). Cost
  columns per method: forward passes per generated token, prefill tokens per question.
* ``decode_step_ratio_tokrag`` / ``_replug``: one batched decode step of the method (2 rows / k rows;
  2 or 3 rows are padded to 4 with batch invariance where ``decoder.packed_pad_rows`` finds that faster) ÷ rag-standard's one-row step
  (``MultiContextDecoder.step`` only, no decisions). ``min_gemm_rows`` records the probe's verdict for this run (4:
  padded, 0: not; on the AVX2 AMD EPYC of stop 49 it is 0, rightly: an unpadded 2-row step took 71.9 ms, a padded
  one 81.9, a one-row step 56.1), ``mkl_rows`` MKL's probed row-invariant row count (None: none).
* ``ratio_standard_vs_hf``: rag-standard ÷ lm-eval's own ``hf`` model (``HFLM``, loaded as it loads
  itself) on the same prompt strings (passages block + question), same greedy budget, batch 1; ``hf``
  generates ``max_gen_toks`` tokens too (``min_new_tokens``); on the first ``--hf-n`` questions (default all:
  ``hf_questions``). ``standard_vs_hf_outputs_match``: the
  same strings from both when both stop at EOS (an untimed second pass; with ``min_new_tokens`` ``hf``
  bans EOS, so forced-length outputs part wherever EOS is the greedy token, while ours, with EOS
  ignored, emits it and goes on). The exact-string test is tests/test_model_batching.py.
* ``speedup_batch8``: questions/s at ``--batch`` (default 8; the key keeps its name at any ``--batch``) ÷
  questions/s at batch 1, the smaller of rag-standard's and tokrag's (those of the two in ``--batch-methods``;
  null when neither is). ``speedup_batch8_by_method`` gives every method of ``--batch-methods`` (gpu_check.sh:
  ``all``), so other methods never set the headline. ``outputs_match_batch1``: the batched outputs equal the
  batch-1 ones, for every method of ``--batch-methods`` (``_by_method``: each). The batch line splits the
  time into prefills and decode steps, beside batch 1's: a CPU prefill is compute-bound, so batching can
  only shorten the decode steps.
* ``ll_speedup_batch8``: the same for ``loglikelihood_rolling`` of the ``wiki_lm_bm25`` paragraphs' full text
  (``doc["text"]``, as issue 13 defines it; the task itself, from version 3.0, scores only the continuation after
  the 32-word prefix with ``loglikelihood``) at ``--batch`` (``--ll-n`` docs, always rag-standard and tokrag; the headline is the smaller, ``_by_method`` each); ``ll_match_batch1``:
  sums equal to 1e-5 relative.
* ``peak_rss_mb``: peak resident memory before lm-eval's ``hf`` model is loaded (a second copy).

Timing: methods are interleaved per question (all methods on question 1, then on question 2, ...,
order rotated) so that load drift on a shared machine hits all alike. On CPU the clock is the
process's CPU time (``time.process_time``; one thread), which other processes' time slices do not
inflate; wall-clock ratios are printed too (``wall``). On CUDA the clock is wall time after
``torch.cuda.synchronize``. The load average is sampled at every question (``load``). With ``--rounds``
> 1 the fastest sweep per method is kept. The last output line is one JSON object.

Bad options (``--n``/``--k``/``--rounds``/``--batch`` below 1, ``--max-gen-toks`` below 2, ``--ll-n``/``--hf-n``
below 0, an unknown name in ``--batch-methods``) get one ``decoding.py: error: ...`` line and exit 2 before
anything loads. ``--max-gen-toks`` is at least 2: the first token comes from the prefill, so the decode-step
figures (``decode_step_ratio_*``, ``decode_ms_per_step``) need a second token.

    python benchmarks/decoding.py            # everything, defaults as above
    python benchmarks/decoding.py --device cuda --dtype bfloat16 --n 50 --batch-methods all   # gpu_check.sh
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
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# `python benchmarks/decoding.py` puts benchmarks/ first on sys.path, where benchmarks/retrieval.py would
# shadow the retrieval package: use the repository root instead.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
if os.path.isdir(os.path.join(_HERE, "..", "..", "shared", "data")):
    os.environ.setdefault("TOKRAG_DATA_DIR", os.path.abspath(os.path.join(_HERE, "..", "..", "shared", "data")))

METHODS = {  # row name -> (model name, model arguments)
    "rag-standard": ("rag-standard", {}), "tokrag": ("tokrag", {}), "tokrag-layer20of32": ("tokrag", {"layer": 20 / 32}),
    "rag-replug": ("rag-replug", {}), "rag-selfrag-filter": ("rag-selfrag-filter", {}), "rag-none": ("rag-none", {}),
    "rag-cad": ("rag-cad", {}), "rag-adacad": ("rag-adacad", {}), "rag-ensemble-entropy": ("rag-ensemble-entropy", {}),
}
TARGETS = {"ratio_standard_vs_hf": 1.0, "ratio_tokrag": 1.15, "ratio_replug": 1.6, "ratio_selfrag_filter": 1.3,
           "decode_step_ratio_tokrag": 1.2, "speedup_batch8": 1.3, "ll_speedup_batch8": 1.3}


class Clock:
    """CPU time of this process (CPU device) or wall time after a CUDA synchronize, plus wall time."""

    def __init__(self, device: str) -> None:
        import torch

        self.cuda = device.startswith("cuda")
        self.sync = torch.cuda.synchronize if self.cuda else (lambda: None)

    def now(self) -> tuple[float, float]:
        self.sync()
        wall = time.perf_counter()
        return (wall if self.cuda else time.process_time()), wall


def _install_timers(clock: Clock) -> dict[str, float]:
    """Accumulate the time spent in the decoder's prefills and batched decode steps (benchmark only)."""
    from tokrag_model.decoder import MultiContextDecoder

    acc: dict[str, float] = {}
    for name in ("prefill", "step", "next_logprobs_shared_prefix"):
        orig = getattr(MultiContextDecoder, name)

        def timed(self, *a, _orig=orig, _name=name, **kw):
            t, _ = clock.now()
            try:
                return _orig(self, *a, **kw)
            finally:
                acc[_name] = acc.get(_name, 0.0) + clock.now()[0] - t
                acc[_name + "_calls"] = acc.get(_name + "_calls", 0) + 1

        setattr(MultiContextDecoder, name, timed)
    return acc


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _nq_docs(n: int, k: int, fingerprints: dict | None = None) -> tuple[list[dict], float]:
    """The first ``n`` NQ-oracle questions with their BM25 top-``k`` passages of nq-dpr-1k as docs, and their gold@k
    (share of questions with a gold passage among them). ``fingerprints`` (when given) receives the corpus's
    (``corpus``) and the BM25 run's (``bm25_run``, its run-cache key) for the JSON line's provenance."""
    from retrieval import named_corpus, nq_oracle_questions, retrieve, score_label

    qs = nq_oracle_questions(limit=n)
    corpus = named_corpus("nq-dpr-1k")
    run = retrieve(corpus, {q["qid"]: q["question"] for q in qs}, "bm25", k=k)
    if fingerprints is not None:
        fingerprints.update({"corpus": corpus.fingerprint, "bm25_run": run.fingerprint})
    docs = [{"qid": q["qid"], "question": q["question"], "answers": q["answers"], "ctxs": run.ctxs[q["qid"]],
             "scored_by": score_label("bm25")} for q in qs]  # rag-replug takes its temperature from scored_by
    gold = sum(any(c["docid"] in q["gold_docids"] for c in run.ctxs[q["qid"]]) for q in qs) / len(qs)
    return docs, gold


HEADLINE_METHODS = ("rag-standard", "tokrag")
"""The methods whose batch speedups set ``speedup_batch8`` / ``ll_speedup_batch8`` (the smaller of the two)."""


def headline(by_method: dict[str, float]) -> float | None:
    """The smaller speedup of rag-standard and tokrag in ``by_method`` (other methods never count; None: neither)."""
    vals = [by_method[m] for m in HEADLINE_METHODS if m in by_method]
    return min(vals) if vals else None


def check_args(args: argparse.Namespace) -> list[str]:
    """Refuse bad options before anything loads (one line each); returns the ``--batch-methods`` rows (``all``:
    every row, narrowed to the registered models later).

    Raises:
        ConfigError: naming the option and the accepted values.
    """
    from benchmarks._cli import at_least
    from retrieval.errors import ConfigError, unknown_name

    at_least("--n", args.n, 1)
    at_least("--k", args.k, 1)
    at_least("--max-gen-toks", args.max_gen_toks, 2, "the first token comes from the prefill, and the decode-step "
             "figures (decode_step_ratio_*) need at least one decode step")
    at_least("--rounds", args.rounds, 1)
    at_least("--batch", args.batch, 1)
    at_least("--ll-n", args.ll_n, 0, "0 skips the loglikelihood_rolling comparison")
    at_least("--hf-n", args.hf_n, 0, "0 skips the hf comparison")
    if args.batch_methods.strip() == "all":
        args.batch_methods = "all"
        return list(METHODS)
    names = [m.strip() for m in args.batch_methods.split(",") if m.strip()]
    if not names:
        raise ConfigError(f"--batch-methods {args.batch_methods!r}: no method; give a comma list or 'all'")
    for m in names:
        if m not in METHODS:
            raise ConfigError("--batch-methods: " + unknown_name("method", m, METHODS, hint="or give 'all'", list_all=20))
    return list(dict.fromkeys(names))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20, help="NQ-oracle questions")
    ap.add_argument("--k", type=int, default=5, help="BM25 passages per question (default 5)")
    ap.add_argument("--max-gen-toks", type=int, default=16,
                    help="tokens generated per question, >= 2 (the first comes from the prefill; decode-step "
                         "figures need a second) (default 16)")
    ap.add_argument("--rounds", type=int, default=1, help="sweeps of the batch-1 comparison (fastest kept)")
    ap.add_argument("--pretrained", default="smollm2-135m-instruct",
                    help="the model: an embedded name or a local path (default smollm2-135m-instruct)")
    ap.add_argument("--device", default="cpu", help="torch device, e.g. cpu, cuda, cuda:1 (default cpu)")
    ap.add_argument("--dtype", default="float32", help="model dtype, e.g. float32, bfloat16 (default float32)")
    ap.add_argument("--batch", type=int, default=8,
                    help="the batch size compared with batch 1 (the *_batch8 keys are at this size)")
    ap.add_argument("--batch-methods", default="rag-standard,tokrag",
                    help="methods run at --batch too (comma list of " + ", ".join(METHODS) + "; or 'all' for "
                         "every method); speedup_batch8 is the smaller of rag-standard's and tokrag's")
    ap.add_argument("--ll-n", type=int, default=16, help="wiki_lm_bm25 docs for ll_speedup_batch8 (0: skip)")
    ap.add_argument("--no-hf", action="store_true", help="skip the comparison with lm-eval's hf model")
    ap.add_argument("--hf-n", type=int, default=None,
                    help="questions of the hf comparison: the first N (default: all --n; 0: skip, as --no-hf; "
                         "gpu_check.sh: 10)")
    ap.add_argument("--stop-at-eos", action="store_true", help="honour EOS (output lengths then differ per method)")
    args = ap.parse_args(argv)
    batch_methods = check_args(args)
    if args.hf_n == 0:
        args.no_hf = True
    from benchmarks._cli import checkout

    started = checkout()  # the code this run reads (the provenance's commit), before the model loads

    import torch
    from lm_eval.api.instance import Instance

    from tokrag_model.base import Backbone
    from tokrag_model.methods import MODELS

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    clock = Clock(args.device)
    loads = [_load()]
    fingerprints: dict = {}
    docs, gold_at_k = _nq_docs(args.n, args.k, fingerprints)
    print(f"passages: BM25 top-{args.k} from retrieval.retrieve over nq-dpr-1k; gold@{args.k} = {gold_at_k:.2f}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()}", flush=True)
    bb = Backbone.load(args.pretrained, dtype=args.dtype, device=args.device)
    tok = bb.tokenizer
    contexts = [tok.apply_chat_template([{"role": "user", "content": f"Answer briefly. {d['question']}?"}],
                                        tokenize=False, add_generation_prompt=True) for d in docs]
    gen = {"until": [], "max_gen_toks": args.max_gen_toks, "do_sample": False}
    timers = _install_timers(clock)
    names = list(METHODS)

    def build(name: str, **extra) -> object:
        model, kw = METHODS[name]
        lm = MODELS[model].with_backbone(bb, **kw, **extra)
        if not args.stop_at_eos:
            lm.eos_ids = set()  # exactly max_gen_toks tokens per request
        return lm

    def requests(idx: list[int]) -> list:
        return [Instance("generate_until", docs[i], (contexts[i], dict(gen)), i) for i in idx]

    # ---- batch 1, every method, interleaved per question -----------------------------------------
    best: dict[str, dict] = {}
    outputs1: dict[str, list[str]] = {}
    for rnd in range(args.rounds):
        lms = {name: build(name) for name in names}
        acc = {n: {"t": 0.0, "wall": 0.0, "prefill": 0.0, "steps": 0.0, "step_calls": 0, "pure_tokens": 0,
                   "tested_tokens": 0} for n in names}
        outs: dict[str, list[str]] = {n: [] for n in names}
        for qi in range(len(docs)):
            shift = (qi + rnd) % len(names)
            for name in names[shift:] + names[:shift]:
                (req,) = requests([qi])
                timers.clear()
                t0, w0 = clock.now()
                (text,) = lms[name].generate_until([req], disable_tqdm=True)
                t1, w1 = clock.now()
                a = acc[name]
                a["t"] += t1 - t0
                a["wall"] += w1 - w0
                a["prefill"] += timers.get("prefill", 0.0) + timers.get("next_logprobs_shared_prefix", 0.0)
                a["steps"] += timers.get("step", 0.0)
                a["step_calls"] += timers.get("step_calls", 0)
                outs[name].append(text)
                if name.startswith("tokrag"):
                    toks = req.args[-1]["tokrag_trace"]["tokens"]
                    a["pure_tokens"] += sum(t[0] == "L" for t in toks)
                    a["tested_tokens"] += sum(t[1] is not None for t in toks)
            loads.append(_load())
        for name in names:
            st, a = dict(lms[name].stats), acc[name]
            gen_toks = max(1, st["generated_tokens"])
            row = {"per_token_ms": round(1000 * a["t"] / gen_toks, 2), "wall_per_token_ms": round(1000 * a["wall"] / gen_toks, 2),
                   "forward_passes_per_token": round(st["forward_passes"] / gen_toks, 2),
                   "prefill_tokens_per_question": round(st["prompt_tokens"] / len(docs), 1),
                   "prefill_s": round(a["prefill"], 3), "decode_steps_s": round(a["steps"], 3),
                   "decode_ms_per_step": round(1000 * a["steps"] / max(1, a["step_calls"]), 2),
                   "total_s": round(a["t"], 3), **st}
            if name.startswith("tokrag"):
                row["pure_tokens"], row["tested_tokens"] = a["pure_tokens"], a["tested_tokens"]
            print(f"round {rnd} {name:20s} {json.dumps(row)}", flush=True)
            if name not in best or row["per_token_ms"] < best[name]["per_token_ms"]:
                best[name], outputs1[name] = row, outs[name]
        del lms
    base = best["rag-standard"]
    std = build("rag-standard")
    invariant = std.resolved_config["batch_invariant"]
    # the load-time verdicts that set a 2-row step's cost (tokrag_model.decoder): rows 2-3 padded to this many (0: no
    # padding; packed_pad_rows' timing probe), and MKL's probed row-invariant row count (None: none)
    gemm_rows = {"min_gemm_rows": std.decoder.min_gemm_rows, "mkl_rows": std.decoder.mkl_rows}
    del std
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    # ---- batch B vs batch 1 ----------------------------------------------------------------------
    if args.batch_methods == "all":
        batch_methods = [m for m in METHODS if m in MODELS]
    speedup, match = {}, {}
    for name in batch_methods:
        lm = build(name, batch_size=args.batch)
        timers.clear()
        t0, _ = clock.now()
        out = []
        for s in range(0, len(docs), args.batch):
            out += lm.generate_until(requests(list(range(s, min(len(docs), s + args.batch)))), disable_tqdm=True)
            loads.append(_load())
        t = clock.now()[0] - t0
        speedup[name] = round(best[name]["total_s"] / t, 3)
        match[name] = out == outputs1[name]
        parts = {"total_s": round(t, 3),
                 "prefill_s": round(timers.get("prefill", 0.0) + timers.get("next_logprobs_shared_prefix", 0.0), 3),
                 "decode_steps_s": round(timers.get("step", 0.0), 3), "decode_steps": int(timers.get("step_calls", 0)),
                 "batch1_prefill_s": best[name]["prefill_s"], "batch1_decode_steps_s": best[name]["decode_steps_s"],
                 "speedup": speedup[name], "outputs_match_batch1": match[name]}
        print(f"batch {args.batch} {name:20s} {json.dumps(parts)}", flush=True)

    # ---- loglikelihood_rolling of wiki_lm_bm25 paragraphs' full text, batch B vs batch 1 -----------------------------
    ll_speedup, ll_match = {}, {}
    if args.ll_n > 0:
        from tasks.utils import load_wiki_lm

        wdocs = list(load_wiki_lm()["test"])[:args.ll_n]
        for name in ("rag-standard", "tokrag"):
            lm1, lmb = build(name), build(name, batch_size=args.batch)
            tb = t1 = 0.0
            sums1, sumsb = [], []
            for s in range(0, len(wdocs), args.batch):  # interleaved: each chunk at batch B, then at batch 1
                chunk = wdocs[s:s + args.batch]
                reqs = [Instance("loglikelihood_rolling", d, (d["text"],), i) for i, d in enumerate(chunk)]
                t0, _ = clock.now()
                sumsb += lmb.loglikelihood_rolling(reqs, disable_tqdm=True)
                t_mid, _ = clock.now()
                sums1 += [lm1.loglikelihood_rolling([r], disable_tqdm=True)[0] for r in reqs]
                tb += t_mid - t0
                t1 += clock.now()[0] - t_mid
                loads.append(_load())
            ll_speedup[name] = round(t1 / tb, 3)
            ll_match[name] = all(abs(a - b) <= 1e-5 * max(1.0, abs(a)) for a, b in zip(sums1, sumsb))
            print(f"loglikelihood_rolling {name:20s} {json.dumps({'batch1_s': round(t1, 3), 'batch_s': round(tb, 3), 'speedup': ll_speedup[name], 'match': ll_match[name]})}",
                  flush=True)

    # ---- rag-standard vs lm-eval's hf, batch 1, interleaved ---------------------------------------
    ratio_hf, hf_match = None, None
    hf_n = None if args.no_hf else len(docs) if args.hf_n is None else min(args.hf_n, len(docs))
    if not args.no_hf:
        from lm_eval.models.huggingface import HFLM

        std = build("rag-standard")
        hf = HFLM(pretrained=str(bb.path), tokenizer=str(bb.path), batch_size=1, device=args.device, dtype=args.dtype,
                  max_length=std.max_length)
        t_std = t_hf = 0.0
        n_std = n_hf = 0
        hf_match = True
        prompts = [std.encode_rag(docs[qi], contexts[qi], std.max_length - args.max_gen_toks).text for qi in range(hf_n)]
        for qi, prompt in enumerate(prompts):
            hf_gen = dict(gen, min_new_tokens=args.max_gen_toks) if not args.stop_at_eos else dict(gen)
            pair = [("std", lambda: std.generate_until(requests([qi]), disable_tqdm=True)[0]),
                    ("hf", lambda: hf.generate_until([Instance("generate_until", docs[qi], (prompt, hf_gen), qi)],
                                                     disable_tqdm=True)[0])]
            texts = {}
            for who, fn in (pair if qi % 2 == 0 else pair[::-1]):
                before = std.stats["generated_tokens"]
                t0, _ = clock.now()
                texts[who] = fn()
                dt = clock.now()[0] - t0
                if who == "std":
                    t_std, n_std = t_std + dt, n_std + std.stats["generated_tokens"] - before
                else:
                    t_hf, n_hf = t_hf + dt, n_hf + len(tok.encode(texts[who], add_special_tokens=False))
            loads.append(_load())
        # output equality, untimed: both honour EOS (hf's min_new_tokens would ban it)
        std_eos = MODELS["rag-standard"].with_backbone(bb)
        for qi, prompt in enumerate(prompts):
            ours = std_eos.generate_until(requests([qi]), disable_tqdm=True)[0]
            theirs = hf.generate_until([Instance("generate_until", docs[qi], (prompt, dict(gen)), qi)], disable_tqdm=True)[0]
            if ours != theirs:
                hf_match = False
                print(f"hf differs on question {qi}: rag-standard {ours!r} vs hf {theirs!r}", flush=True)
        # per-token time; hf's token count from its text (equal to max_gen_toks unless it stopped early)
        ratio_hf = round((t_std / max(1, n_std)) / (t_hf / max(1, n_hf)), 3)
        print(f"hf vs rag-standard {json.dumps({'std_s': round(t_std, 3), 'hf_s': round(t_hf, 3), 'std_tokens': n_std, 'hf_tokens': n_hf})}",
              flush=True)

    print("\nmethod                per-token ms  ratio  wall ratio  fwd/token  prefill tok/q  decode ms/step")
    for name, row in best.items():
        print(f"{name:20s}  {row['per_token_ms']:12.2f}  {row['per_token_ms'] / base['per_token_ms']:5.3f}  "
              f"{row['wall_per_token_ms'] / base['wall_per_token_ms']:10.3f}  {row['forward_passes_per_token']:9.2f}  "
              f"{row['prefill_tokens_per_question']:13.1f}  {row['decode_ms_per_step']:14.2f}")

    def ratio(name: str, key: str = "per_token_ms") -> float | None:
        # None when rag-standard's figure is 0 (--stop-at-eos with every answer ended by the first token: no step)
        return round(best[name][key] / base[key], 3) if base[key] else None


    result = {
        "ratio_standard_vs_hf": ratio_hf,
        "standard_vs_hf_outputs_match": hf_match,
        "ratio_tokrag": ratio("tokrag"),
        "ratio_tokrag_fixed_layer": ratio("tokrag-layer20of32"),
        "ratio_replug": ratio("rag-replug"),
        "ratio_selfrag_filter": ratio("rag-selfrag-filter"),
        "ratio_none": ratio("rag-none"),
        "ratio_cad": ratio("rag-cad"),
        "ratio_adacad": ratio("rag-adacad"),
        "ratio_ensemble_entropy": ratio("rag-ensemble-entropy"),
        "decode_step_ratio_tokrag": ratio("tokrag", "decode_ms_per_step"),
        "decode_step_ratio_replug": ratio("rag-replug", "decode_ms_per_step"),
        "speedup_batch8": headline(speedup),  # rag-standard and tokrag only, as documented
        "speedup_batch8_by_method": speedup,
        "outputs_match_batch1": all(match.values()) if match else None,
        "outputs_match_batch1_by_method": match,
        "cuda_outputs_match_batch1": (all(match.values()) if match else None) if clock.cuda else None,
        "ll_speedup_batch8": headline(ll_speedup),
        "ll_speedup_batch8_by_method": ll_speedup,
        "ll_match_batch1": all(ll_match.values()) if ll_match else None,
        "cost": {name: {"forward_passes_per_token": row["forward_passes_per_token"],
                        "prefill_tokens_per_question": row["prefill_tokens_per_question"]} for name, row in best.items()},
        "wall": {f"ratio_{name}": ratio(name, "wall_per_token_ms") for name in best if name != "rag-standard"},
        "per_token_ms_standard": base["per_token_ms"],
        "peak_rss_mb": round(peak_rss, 1),
        "peak_rss_mb_with_hf": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "load": {"cpus": os.cpu_count(), "start": loads[0], "mean": round(sum(loads) / len(loads), 2), "max": max(loads)},
        "clock": "wall" if clock.cuda else "process_cpu",
        "device": args.device, "dtype": args.dtype, "batch_invariant": invariant, **gemm_rows,
        "n_questions": len(docs), "k": args.k, "gold_at_k": gold_at_k, "max_gen_toks": args.max_gen_toks,
        "batch": args.batch, "ll_docs": args.ll_n, "stop_at_eos": args.stop_at_eos,
        "hf_questions": hf_n,
        "targets": TARGETS,
    }
    from benchmarks._cli import provenance
    from tokrag_model.base import _backbone_files_fingerprint  # computed once per backbone, when its methods were built

    result["provenance"] = provenance(args.device, {"model": bb.fingerprint, "model_files": _backbone_files_fingerprint(bb),
                                                    **fingerprints}, started)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    from benchmarks._cli import run

    sys.exit(run(main))
