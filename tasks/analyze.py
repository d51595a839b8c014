"""``tokrag analyze``: the token-level benefit/detriment experiment (Xu et al. 2025, §5.3 of
docs' tokrag_method.md; the authors' ``comparing_benefit_and_detriment.py``).

For each sample the gold text is teacher-forced twice through the same LM: a *pure* run (task
context only) and a *RAG* run (passages block + the same context). At each gold token ``x_i``:

* label: **benefit** (1) if ``p_RAG(x_i) > p_pure(x_i)`` else **detriment** (0);
* score: ``S_R − S_L`` of Tok-RAG (``tokrag_model``'s scorer: ``S_R`` = similarity of the RAG
  prediction to the matching information of the passages at the chosen layer, ``S_L`` = similarity
  of the RAG prediction to the pure prediction); the rule predicts benefit iff ``S_R > S_L``.

Per layer policy (``dynamic`` = the JS-gap rule, and fixed layers) it reports the rule's accuracy,
the ROC AUC of the score (``sklearn.metrics.roc_auc_score``) and the counts (tokens, benefit,
detriment, TP/FP/TN/FN with benefit as the positive class), on all tokens and on the paper's
*strict* subset (benefit: RAG top-1 = gold ≠ pure top-1; detriment: pure top-1 = gold ≠ RAG top-1;
other tokens dropped). Data: ``wiki_lm_bm25`` paragraphs (gold = the paragraph) and NQ-oracle
questions with BM25 passages (gold = the first gold answer after the QA prompt).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class TokenRecord:
    """One teacher-forced gold token.

    ``logp_rag`` / ``logp_pure``: log-probability (nats) of the gold token under each run;
    ``top1_rag`` / ``top1_pure`` / ``gold``: token ids; ``scores``: policy name -> ``(S_R, S_L)``
    (unitless cosines); ``layers``: policy name -> the decoder layer used (the dynamic policy varies);
    ``conf_rag`` / ``conf_pure``: log-probability (nats) of each run's own top-1 token (the
    confidence baseline of the authors' QA script: benefit iff ``conf_rag > conf_pure``).
    """

    sample: str
    position: int
    gold: int
    logp_rag: float
    logp_pure: float
    top1_rag: int
    top1_pure: int
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)
    layers: dict[str, int] = field(default_factory=dict)
    conf_rag: float = 0.0
    conf_pure: float = 0.0

    @property
    def label(self) -> int:
        """1 = benefit (``p_RAG(gold) > p_pure(gold)``), 0 = detriment."""
        return int(self.logp_rag > self.logp_pure)

    @property
    def strict_label(self) -> int | None:
        """Paper's filtered label: 1 if RAG top-1 = gold ≠ pure top-1, 0 if pure top-1 = gold ≠ RAG top-1, else None."""
        if self.top1_rag == self.gold and self.top1_pure != self.gold:
            return 1
        if self.top1_pure == self.gold and self.top1_rag != self.gold:
            return 0
        return None


def summarize(labels: Sequence[int], scores: Sequence[float]) -> dict[str, Any]:
    """Accuracy of ``score > 0`` against ``labels`` (1 = benefit), ROC AUC of ``scores``, and counts.

    AUC is ``sklearn.metrics.roc_auc_score(labels, scores)``; it is NaN when only one class occurs.
    ``accuracy`` is NaN on an empty input.
    """
    from sklearn.metrics import roc_auc_score

    n = len(labels)
    if n != len(scores):
        raise ValueError(f"{n} labels but {len(scores)} scores")
    preds = [int(s > 0) for s in scores]
    tp = sum(1 for y, p in zip(labels, preds) if y == 1 and p == 1)
    tn = sum(1 for y, p in zip(labels, preds) if y == 0 and p == 0)
    fp = sum(1 for y, p in zip(labels, preds) if y == 0 and p == 1)
    fn = sum(1 for y, p in zip(labels, preds) if y == 1 and p == 0)
    n_pos = sum(1 for y in labels if y == 1)
    auc = float(roc_auc_score(list(labels), list(scores))) if 0 < n_pos < n else math.nan
    return {
        "n": n, "benefit": n_pos, "detriment": n - n_pos, "tp": tp, "tn": tn, "fp": fp, "fn": fn,
        "accuracy": (tp + tn) / n if n else math.nan, "auc": auc,
    }


def summarize_records(records: Sequence[TokenRecord], policies: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{policy: {"all": summarize(...), "strict": summarize(...), "mean_layer": float}}``, plus the
    ``confidence`` baseline (score = top-1 log-prob of RAG minus that of the pure run)."""
    out: dict[str, dict[str, Any]] = {}
    for pol in policies:
        recs = [r for r in records if pol in r.scores]
        scores = [r.scores[pol][0] - r.scores[pol][1] for r in recs]
        strict = [(r.strict_label, s) for r, s in zip(recs, scores) if r.strict_label is not None]
        layers = [r.layers[pol] for r in recs if pol in r.layers]
        out[pol] = {
            "all": summarize([r.label for r in recs], scores),
            "strict": summarize([y for y, _ in strict], [s for _, s in strict]),
            "mean_layer": sum(layers) / len(layers) if layers else math.nan,
        }
    if records:
        conf = [r.conf_rag - r.conf_pure for r in records]
        strict = [(r.strict_label, c) for r, c in zip(records, conf) if r.strict_label is not None]
        out["confidence"] = {
            "all": summarize([r.label for r in records], conf),
            "strict": summarize([y for y, _ in strict], [c for _, c in strict]),
            "mean_layer": math.nan,
        }
    return out


# ------------------------------------------------------------------------------------------ data
QA_PROMPT = "Answer the question with a short answer.\nQuestion: {question}\nAnswer:"
"""The QA tasks' ``doc_to_text`` (tasks/qa/_qa_template), rendered the same way."""


def wiki_samples(n: int, k: int = 3, data_dir: Any = None) -> list[tuple[dict, str, str]]:
    """``(doc, context, continuation)`` for the first ``n`` ``wiki_lm_bm25`` docs: the gold text is the
    paragraph, the context is empty (the model's BOS/EOT, as lm-eval's empty-context scoring)."""
    from .utils import build_wiki_lm_docs

    docs = build_wiki_lm_docs(k=k, data_dir=data_dir, max_docs=n)
    return [(d, "", d["text"]) for d in docs]


def nq_samples(n: int, k: int = 5, corpus: str = "nq-wiki-12k", data_dir: Any = None) -> list[tuple[dict, str, str]]:
    """``(doc, context, continuation)`` for the first ``n`` NQ-oracle questions with BM25 passages: the
    context is the QA prompt, the gold text is ``" " + first gold answer``."""
    from .rag import build_qa_docs

    docs = build_qa_docs("nq_oracle", retriever="bm25", corpus=corpus, k=k, data_dir=data_dir, max_docs=n)
    return [(d, QA_PROMPT.format(question=d["question"]), " " + d["answers"][0]) for d in docs]


# ------------------------------------------------------------------------------------------ scoring
def parse_policies(spec: str, n_layers: int) -> list[str]:
    """``"dynamic,4,8"`` -> ``["dynamic", "layer4", "layer8"]``; ``"dynamic,every:4"`` adds layers 4, 8, ...

    Raises:
        ConfigError: an unknown item or a layer outside ``[0, n_layers)``.
    """
    out: list[str] = []
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        if item == "dynamic":
            out.append("dynamic")
        elif item.startswith("every:"):
            step = int(item.split(":", 1)[1])
            if step < 1:
                raise ConfigError(f"--layers {item}: the step must be >= 1")
            out += [f"layer{i}" for i in range(step, n_layers, step)]
        else:
            try:
                layer = int(item)
            except ValueError:
                raise ConfigError(f"--layers: {item!r} is not 'dynamic', 'every:N' or a layer index") from None
            if not 0 <= layer < n_layers:
                raise ConfigError(f"--layers: layer {layer} is outside the model's {n_layers} layers (0..{n_layers - 1})")
            out.append(f"layer{layer}")
    if not out:
        raise ConfigError("--layers: no layer policy given")
    return list(dict.fromkeys(out))


def build_scorers(lm: Any, policies: Sequence[str]) -> dict[str, Any]:
    """One ``tokrag_model.methods.tokrag.TokRAGScorer`` per policy over ``lm``'s decoder (``lm`` a ``TokRAGLM``),
    with every other Tok-RAG constant as in ``lm.params``."""
    from dataclasses import replace

    from tokrag_model.methods.tokrag import TokRAGScorer

    out = {}
    for pol in policies:
        layer: str | int = "dynamic" if pol == "dynamic" else int(pol.removeprefix("layer"))
        params = replace(lm.params, layer=layer)
        out[pol] = TokRAGScorer(lm.decoder, params, lm.token_text, lm.is_function, lm.is_skip)
    return out


def score_sample(lm: Any, scorers: dict[str, Any], doc: dict, context: str, continuation: str, sample_id: str,
                 max_tokens: int | None = None, dynamic_stride: int = 1) -> list[TokenRecord]:
    """Teacher-force ``continuation`` after ``context`` with and without ``doc["ctxs"]``; one record per token.

    The two branches are run once (``tokrag_model.methods.tokrag.TeacherForced``) and every policy's rule is
    applied to the same distributions with S_R/S_L at every token (``force_score``), as
    ``tokrag_model.methods.tokrag.tokrag_token_scores`` does for one policy. ``max_tokens`` keeps the first N
    gold tokens; ``dynamic_stride`` > 1 scores the dynamic policy (whose JS-gap layer search costs a
    logit lens per layer and token) only at every N-th token.
    """
    from tokrag_model.methods.tokrag import TeacherForced

    context, continuation = lm.split_context(context, continuation)
    cont = lm.cont_ids(context, continuation)
    if max_tokens:
        cont = cont[:max_tokens]
    if not cont:
        return []
    budget = lm.max_length - len(cont)
    rag = lm.encode_rag(doc, context, budget)
    pure = lm.encode_pure(context, budget)
    need_h = any(s.fixed_layer is None for s in scorers.values())
    tf = TeacherForced.run(lm.decoder, rag.ids, pure.ids, cont, hidden_pure=need_h)
    records = []
    for i, gold in enumerate(cont):
        rec = TokenRecord(sample_id, i, int(gold), float(tf.lp_rag[i, gold]), float(tf.lp_pure[i, gold]),
                          int(tf.lp_rag[i].argmax()), int(tf.lp_pure[i].argmax()),
                          conf_rag=float(tf.lp_rag[i].max()), conf_pure=float(tf.lp_pure[i].max()))
        for pol, scorer in scorers.items():
            if scorer.fixed_layer is None and dynamic_stride > 1 and i % dynamic_stride:
                continue
            d = tf.decide(scorer, i, rag.span, force_score=True)
            rec.scores[pol] = (float(d.s_r), float(d.s_l))
            rec.layers[pol] = int(d.layer)
        records.append(rec)
    return records


# ------------------------------------------------------------------------------------------ CLI
def _record_to_json(r: TokenRecord) -> dict:
    return {"s": r.sample, "i": r.position, "g": r.gold, "lr": r.logp_rag, "lp": r.logp_pure, "tr": r.top1_rag,
            "tp": r.top1_pure, "cr": r.conf_rag, "cp": r.conf_pure,
            "sc": {k: list(v) for k, v in r.scores.items()}, "ly": r.layers}


def _record_from_json(o: dict) -> TokenRecord:
    return TokenRecord(o["s"], o["i"], o["g"], o["lr"], o["lp"], o["tr"], o["tp"],
                       {k: (v[0], v[1]) for k, v in o["sc"].items()}, dict(o["ly"]), o["cr"], o["cp"])


def _load_done(path: Path) -> dict[str, list[TokenRecord]]:
    """Records of finished samples from an earlier (possibly killed) run; a torn last line is ignored."""
    done: dict[str, list[TokenRecord]] = {}
    if not path.is_file():
        return done
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                break  # a line cut by a kill: that sample is recomputed
            done[obj["sample"]] = [_record_from_json(r) for r in obj["records"]]
    return done


def _plot(results: dict[str, dict], path: Path, n_layers: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, res in results.items():
        pols = res["policies"]
        fixed = sorted((int(p.removeprefix("layer")), v["all"]["auc"]) for p, v in pols.items() if p.startswith("layer"))
        if fixed:
            line, = ax.plot([x for x, _ in fixed], [y for _, y in fixed], marker="o", label=f"{name}: fixed layer")
            if "dynamic" in pols:
                ax.axhline(pols["dynamic"]["all"]["auc"], linestyle="--", color=line.get_color(),
                           label=f"{name}: dynamic (mean layer {pols['dynamic']['mean_layer']:.1f})")
    ax.axhline(0.5, color="grey", linewidth=0.8)
    ax.set_xlabel(f"layer (of {n_layers})")
    ax.set_ylabel("ROC AUC of S_R - S_L")
    ax.set_title("Token-level benefit vs detriment (teacher forcing)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _print_table(name: str, res: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{name}: {res['samples']} samples, {res['tokens']} gold tokens ({res['seconds']:.0f} s)")
    for col in ("policy", "layer", "tokens", "benefit", "detriment", "accuracy", "AUC", "strict n", "strict acc", "strict AUC"):
        t.add_column(col, justify="right")
    for pol, v in res["policies"].items():
        a, s = v["all"], v["strict"]
        f = (lambda x: "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}")
        layer = "" if math.isnan(v["mean_layer"]) else f"{v['mean_layer']:.1f}"
        t.add_row(pol, layer, str(a["n"]), str(a["benefit"]), str(a["detriment"]), f(a["accuracy"]), f(a["auc"]),
                  str(s["n"]), f(s["accuracy"]), f(s["auc"]))
    Console(width=160).print(t)


def _nan_to_none(obj: Any) -> Any:
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_nan_to_none(v) for v in obj]
    return obj


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tokrag analyze",
        description="Token-level benefit/detriment experiment: teacher-force gold text with and without the "
                    "retrieved passages; label = benefit iff p_RAG(gold) > p_pure(gold); score = S_R - S_L; "
                    "accuracy, ROC AUC and counts per layer policy.",
    )
    p.add_argument("--data", default="wiki,nq", help="comma list of: wiki (wiki_lm_bm25 paragraphs), nq (NQ-oracle answers, BM25)")
    p.add_argument("--n", type=int, default=200, help="samples per data set (default 200)")
    p.add_argument("--layers", default="dynamic,every:4",
                   help="layer policies: 'dynamic', layer indices, 'every:N' (default dynamic,every:4)")
    p.add_argument("--max-tokens", type=int, default=32, help="gold tokens scored per sample (default 32; 0 = all)")
    p.add_argument("--dynamic-stride", type=int, default=4,
                   help="score the dynamic policy at every N-th gold token only (its layer search is costly; default 4)")
    p.add_argument("--wiki-k", type=int, default=3, help="passages per wiki paragraph (default 3, as the paper's WikiText-103 study)")
    p.add_argument("--nq-k", type=int, default=5, help="passages per NQ question (default 5)")
    p.add_argument("--nq-corpus", default="nq-wiki-12k", help="corpus for NQ retrieval (nq-wiki-12k; nq-dpr-1k for a quick check)")
    p.add_argument("--data-dir", default=None, help="data folder for NQ (default $TOKRAG_DATA_DIR)")
    p.add_argument("--model-args", default="pretrained=smollm2-135m-instruct",
                   help="tokrag model arguments, k=v comma list as for lm_eval --model_args (default pretrained=smollm2-135m-instruct)")
    p.add_argument("--out", default="runs/analyze", help="output folder: results.json, records_<data>.jsonl (resumable), auc_by_layer.png")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    return p


def main(argv: list[str] | None = None) -> int:
    """``tokrag analyze``: run the experiment, print one table per data set, write results + plot; returns 0."""
    args = build_parser().parse_args(argv)
    if args.n < 1:
        raise ConfigError(f"--n {args.n}: need at least one sample")
    datas = [d.strip() for d in args.data.split(",") if d.strip()]
    bad = [d for d in datas if d not in ("wiki", "nq")]
    if bad or not datas:
        raise ConfigError(f"--data {args.data!r}: use a comma list of 'wiki' and 'nq'")
    if args.dynamic_stride < 1:
        raise ConfigError("--dynamic-stride must be >= 1")

    import torch
    from lm_eval.utils import simple_parse_args_string
    from tqdm import tqdm

    from retrieval.io import atomic_write_json, fingerprint
    from tokrag_model.methods.tokrag import TokRAGLM

    torch.set_num_threads(max(1, args.threads))
    model_args = simple_parse_args_string(args.model_args)
    lm = TokRAGLM(**model_args)
    n_layers = lm.decoder.n_layers
    policies = parse_policies(args.layers, n_layers)
    scorers = build_scorers(lm, policies)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    for name in datas:
        t0 = time.time()
        if name == "wiki":
            samples = wiki_samples(args.n, k=args.wiki_k)
        else:
            samples = nq_samples(args.n, k=args.nq_k, corpus=args.nq_corpus, data_dir=args.data_dir)
        run_fps = sorted({d["run_fingerprint"] for d, _, _ in samples})
        config = {"data": name, "n": args.n, "policies": policies, "max_tokens": args.max_tokens,
                  "dynamic_stride": args.dynamic_stride, "k": args.wiki_k if name == "wiki" else args.nq_k,
                  "model": lm.resolved_config, "model_fingerprint": lm.fingerprint, "runs": run_fps}
        key = fingerprint(config)
        rec_path = out_dir / f"records_{name}_{key}.jsonl"
        done = _load_done(rec_path)
        records: list[TokenRecord] = []
        with open(rec_path, "a", encoding="utf-8") as f:
            for doc, context, cont in tqdm(samples, desc=f"analyze {name}"):
                sid = doc["qid"]
                if sid in done:
                    recs = done[sid]
                else:
                    recs = score_sample(lm, scorers, doc, context, cont, sid, args.max_tokens or None, args.dynamic_stride)
                    f.write(json.dumps({"sample": sid, "records": [_record_to_json(r) for r in recs]}) + "\n")
                    f.flush()
                records += recs
        res = {"config": config, "config_key": key, "samples": len(samples), "tokens": len(records),
               "seconds": time.time() - t0, "policies": summarize_records(records, policies)}
        results[name] = res
        _print_table(name, res)
    atomic_write_json(out_dir / "results.json", _nan_to_none(results))
    _plot(results, out_dir / "auc_by_layer.png", n_layers)
    print(f"wrote {out_dir / 'results.json'} and {out_dir / 'auc_by_layer.png'}")
    return 0
