"""``tokrag calibrate``: a per-model Tok-RAG preset chosen on dev questions only (issue 11.2 (c)).

Uncalibrated, the dynamic (JS-gap) rule degenerates on small models: its threshold 5e-7 (the authors'
LLaMA-2-7B constant, on their vocabulary-averaged scale) never binds on SmolLM2-135M, so the rule
lands on its first eligible layer (tokrag_method.md §3.4). This command

1. collects teacher-forced records on the **dev** pools of ``tokrag analyze`` (wiki paragraphs
   disjoint from the held-out test paragraphs; QA dev questions, ``tasks.data.qa_split_of``) —
   never test questions;
2. picks the **best fixed layer**: the highest strict-label AUC of ``rate·S_R − S_L`` (the model's ``rate``),
   pooled over the data sets but comparing tokens within each data set only (:func:`strict_auc`; ties: the layer
   closest to the paper default ``round(0.625·depth)``) among the layers whose attention sees the whole
   retrieved span at every strict dev token (every layer of a full-attention model; on Gemma 3 with
   passage blocks longer than its 512-token window, the global layers only: a sliding-window layer
   there cannot attend to the top-ranked passages, ``tokrag_model.methods.tokrag.span_visible``);
3. picks the **threshold of the dynamic rule as a quantile of the gap distribution**: the gaps
   ``D_RAG(ℓ,ℓ+1) − D_pure(ℓ,ℓ+1)`` (``midpoint_kl``, the authors' "JS") of every generation-relevant dev
   token (greedy tokens differ, no bypass: where the decoder consults the rule) at every scanned layer
   pair whose layer ℓ−1 sees the whole span there (the pairs the decoder's rule considers) are pooled;
   each candidate quantile gives a threshold, the rule (the model's scan start ``js_min_layer``, by default the
   authors' 10/32 of the depth; fallback = the best fixed layer) is scored by its strict AUC, and the best quantile is kept (ties: the lower quantile);
4. writes a small JSON preset (``preset=PATH`` for ``--model tokrag``) whose ``params`` are the better of
   the two on dev (``--policy auto``; ties: the fixed layer) or the one asked for, plus the Tok-RAG settings they
   were chosen under (``rate``, ``n_anchors``, windows, tops, ``bypass``: a preset run applies them), with both
   candidates, their dev AUCs and the data recorded in ``calibration`` (per data set, ``tokrag_data``: the files read
   with their SHA-256, the corpus and run fingerprints and the split, as the results record theirs;
   :func:`data_lines` says them).
"""

from __future__ import annotations

import argparse
import logging
import math
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError

from .analyze import (
    MIN_STRICT_TOKENS,
    Policy,
    RecordsInterrupted,
    TokenRecord,
    add_common_args,
    auc,
    check_common_args,
    collect_all,
    comma_list,
    data_set_strata,
    interrupted_message,
    load_lm,
    nan_to_none,
    run_seconds,
    small_sample_note,
    token_counts,
)

QUANTILES = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.975, 0.99)
"""Candidate quantiles of the dev gap distribution for the dynamic rule's threshold."""


def gap_values(records: Sequence[TokenRecord], min_layer: int) -> list[float]:
    """Gaps of every generation-relevant record at the scanned pairs ``ℓ = min_layer+1 … L−1`` whose layer
    ℓ−1 sees the whole retrieved span at that token (the pairs the dynamic rule considers; nats / V).

    Raises:
        ConfigError: a record has no gap at a scanned pair (records scanned from a later layer).
    """
    out: list[float] = []
    for r in records:
        if not r.relevant:
            continue
        for ell in range(min_layer + 1, len(r.s_r)):
            if not r.sees_span(ell - 1):
                continue
            g = r.gaps[ell]
            if g is None:
                raise ConfigError(f"calibrate: the records have no gap at layer pair {ell}; they scan from a later layer")
            out.append(g)
    return out


def strict_auc(records: Sequence[TokenRecord], policy: Policy) -> float:
    """Strict-label AUC of ``policy`` on ``records``, within each data set when they hold several
    (:func:`tasks.analyze.auc` with strata; NaN when one class is missing)."""
    strict = [r for r in records if r.strict_label is not None]
    return auc([r.strict_label for r in strict], [policy.score(r) for r in strict], data_set_strata(strict))


def check_both_classes(records: Sequence[TokenRecord]) -> list[str]:
    """Refuse dev ``records`` of which no data set holds a strict token of each class (benefit and detriment); name
    the data sets that hold one class only.

    The AUCs that choose the preset compare tokens within each data set only (:func:`strict_auc`): with no data set
    holding both every AUC is NaN and the preset (the paper default layer) would be chosen on nothing; a data set
    with one class adds no pair, so the choice ignores it (at ``--n 20`` NQ's strict tokens, about 95% benefit, are
    often all benefit). Such a data set is returned, as one line each, for a WARNING and the preset's
    ``calibration.uncompared``.

    Returns:
        ``["the nq dev records hold 4 strict tokens, all benefit", ...]`` (empty: every data set holds both).
    Raises:
        ConfigError: ``calibrate: no data set's dev records hold strict tokens of both classes (the wiki dev records
            hold 4 strict tokens, all benefit; ...): ...; raise --n``.
    """
    names = list(dict.fromkeys(r.data_set for r in records))
    one_class: list[str] = []
    for name in names or [""]:
        labels = [r.strict_label for r in records if r.data_set == name and r.strict_label is not None]
        if len(set(labels)) == 2:
            continue
        what = ("no strict token (where exactly one branch's top-1 is the gold)" if not labels else
                f"{len(labels)} strict token{'' if len(labels) == 1 else 's'}, all {'benefit' if labels[0] else 'detriment'}")
        one_class.append(f"the {name} dev records hold {what}" if name else f"the dev records hold {what}")
    if len(one_class) == len(names or [""]):
        raise ConfigError(f"calibrate: no data set's dev records hold strict tokens of both classes ({'; '.join(one_class)}): "
                          "the AUCs that choose the preset compare benefit with detriment tokens within each data set, "
                          "so it would be chosen on nothing; raise --n")
    return one_class


def calibrate_records(records: Sequence[TokenRecord], n_layers: int, quantiles: Sequence[float] = QUANTILES,
                      policy: str = "auto", js_min_layer: int | float | None = None, rate: float = 1.0,
                      n_boot: int = 0, seed: int = 0) -> dict[str, Any]:
    """The preset ``params`` and ``calibration`` summary from dev ``records`` (module docstring).

    Args:
        records: dev records (:func:`tasks.analyze.collect_records`).
        n_layers: decoder layers of the model.
        policy: ``auto`` (the better on dev), ``fixed`` or ``dynamic``.
        js_min_layer: the dynamic rule's scan start (a layer or a fraction of the depth): the model's
            ``js_min_layer``, from which the records' gaps were recorded; None: the authors' 10/32.
        rate: the model's decision multiplier: every candidate is scored by ``rate·S_R − S_L``, as the decoder decides
            (:meth:`tasks.analyze.Policy.score`).
        n_boot, seed: with ``n_boot`` > 0, ``calibration.dev_ci_by_layer`` holds each fixed layer's 95% bootstrap CI
            ``[low, high]`` of its dev AUC (``tokrag calibrate --bootstrap``/``--seed``, as ``tokrag analyze`` computes
            its CIs: samples resampled within each data set, the same resamples for every layer; null where no
            resample has both classes); 0: no CIs (the key is absent). Before, calibrate accepted ``--bootstrap`` and
            ``--seed`` and ignored them, and printed every dev AUC as a bare number.
    Raises:
        ConfigError: no data set with strict tokens of both classes (:func:`check_both_classes`), no gap value
            (``auto`` / ``dynamic`` only: the fixed layer needs none; with ``fixed`` the ``dynamic`` summary then
            has ``n_gaps`` 0 and None values, ``dev_auc_by_quantile`` is empty), a bad ``policy``, or a
            ``js_min_layer`` outside the model.
    """
    import numpy as np

    from tokrag_model.methods.tokrag import TokRAGParams, resolve_layer

    if policy not in ("auto", "fixed", "dynamic"):
        raise ConfigError(f"--policy {policy!r}: expected auto, fixed or dynamic")
    strict = [r for r in records if r.strict_label is not None]
    uncompared = check_both_classes(records)
    for line in uncompared:
        logging.getLogger(__name__).warning("calibrate: %s: it adds no benefit/detriment pair, so the preset is chosen "
                                            "on the other data sets' tokens only (raise --n to include it)", line)
    d = TokRAGParams()
    default_layer = resolve_layer(d.layer, n_layers)
    by_layer = {i: strict_auc(strict, Policy(f"layer{i}", "fixed", i, rate=rate)) for i in range(n_layers)}
    ci_by_layer = layer_cis(strict, n_layers, rate, n_boot, seed) if n_boot > 0 else None
    eligible = [i for i in range(n_layers) if all(r.sees_span(i) for r in strict)]
    if not eligible:
        raise ConfigError("calibrate: no layer's attention sees the whole retrieved span at every strict dev token")
    best_layer = max(eligible, key=lambda i: (by_layer[i], -abs(i - default_layer)))
    try:
        min_layer = resolve_layer(d.js_min_layer if js_min_layer is None else js_min_layer, n_layers, "js_min_layer")
    except ValueError as exc:
        raise ConfigError(f"calibrate: {exc}; give --model-args js_min_layer= within the model") from None
    gaps = np.asarray(gap_values(records, min_layer))
    if not len(gaps) and policy != "fixed":  # only the dynamic rule's threshold is a quantile of the gaps
        raise ConfigError("calibrate: no generation-relevant dev token (no gap values) to choose the dynamic rule's "
                          "threshold on; raise --n, or give --policy fixed (the fixed layer needs no gap)")
    by_q = []
    for q in quantiles if len(gaps) else ():
        thr = float(np.quantile(gaps, q))
        pol = Policy("dynamic", "dynamic", best_layer, thr, min_layer, rate=rate)
        # the share of strict tokens where the rule found no pair above the threshold (not the share at the fallback
        # layer, which also counts scan hits at ℓ = fallback + 1)
        by_q.append({"quantile": q, "threshold": thr, "auc": strict_auc(strict, pol),
                     "fallback_rate": sum(pol.fell_back(r) for r in strict) / len(strict)})
    fixed = {"layer": best_layer}
    if by_q:
        best_q = max(by_q, key=lambda v: (v["auc"], -v["quantile"]))
        dynamic = {"layer": "dynamic", "js_threshold": best_q["threshold"], "js_min_layer": min_layer,
                   "layer_fallback": best_layer}
    else:  # --policy fixed without a gap value: no dynamic candidate (recorded as such)
        best_q = {"quantile": None, "threshold": None, "auc": None, "fallback_rate": None}
    if policy == "auto":
        policy = "dynamic" if best_q["auc"] > by_layer[best_layer] else "fixed"
    return {
        "params": dynamic if policy == "dynamic" else fixed,
        "calibration": {
            "policy": policy,
            "fixed": {"layer": best_layer, "dev_auc": by_layer[best_layer], "paper_default_layer": default_layer,
                      "paper_default_dev_auc": by_layer[default_layer], "eligible_layers": eligible,
                      "excluded_layers": [i for i in range(n_layers) if i not in eligible]},
            "dynamic": {**best_q, "min_layer": min_layer, "fallback": best_layer, "n_gaps": int(len(gaps)),
                        "uncalibrated_threshold": d.js_threshold,
                        "uncalibrated_quantile": float((gaps <= d.js_threshold).mean()) if len(gaps) else None},
            "dev_auc_by_layer": by_layer,
            **({"dev_ci_by_layer": ci_by_layer, "bootstrap": n_boot, "seed": seed} if ci_by_layer is not None else {}),
            "dev_auc_by_quantile": by_q,
            "dev_counts": token_counts(records),
            **({"uncompared": uncompared} if uncompared else {}),
        },
    }


def layer_cis(strict: Sequence[TokenRecord], n_layers: int, rate: float, n_boot: int, seed: int
              ) -> dict[int, list[float | None]]:
    """``{layer: [low, high]}``: the 95% percentile bootstrap CI of each fixed layer's strict dev AUC
    (:func:`tasks.analyze.summarize` over :func:`tasks.analyze.bootstrap_indices`: ``n_boot`` resamples of the
    samples, within each data set, numpy ``default_rng(seed)``; the same resamples for every layer, as ``tokrag
    analyze`` pairs its policies). ``[None, None]`` where no resample holds both classes. Raises nothing."""
    from .analyze import bootstrap_indices, summarize

    strata = data_set_strata(strict)
    boot = bootstrap_indices([r.sample for r in strict], n_boot, seed, strata)
    labels = [r.strict_label for r in strict]
    out: dict[int, list[float | None]] = {}
    for i in range(n_layers):
        pol = Policy(f"layer{i}", "fixed", i, rate=rate)
        res = summarize(labels, [pol.score(r) for r in strict], boot, strata=strata)
        out[i] = [None if math.isnan(res["ci_low"]) else res["ci_low"], None if math.isnan(res["ci_high"]) else res["ci_high"]]
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tokrag calibrate",
        description="Calibrate Tok-RAG for one model on dev questions only: the best fixed fusion layer and the "
                    "dynamic rule's threshold as a quantile of the dev gap distribution; writes a preset file "
                    "(use it with --model tokrag --model_args preset=PATH).",
    )
    add_common_args(p, "runs/calibrate", "dev")
    p.add_argument("--policy", default="auto", choices=("auto", "fixed", "dynamic"),
                   help="what the preset applies: auto (the better on dev) | fixed | dynamic")
    p.add_argument("--quantiles", default=",".join(str(q) for q in QUANTILES),
                   help="candidate quantiles of the dev gap distribution (comma list in (0, 1))")
    p.add_argument("--preset-out", default=None, help="preset file to write (default OUT/tokrag_preset.json)")
    return p


def _quantile(item: str) -> float:
    """One ``--quantiles`` item as a number strictly between 0 and 1 (ValueError saying why not, for
    :func:`tasks.analyze.comma_list`)."""
    try:
        q = float(item)
    except ValueError:
        raise ValueError("is not a number") from None
    if not math.isfinite(q):
        raise ValueError("is not a finite number")
    if not 0 < q < 1:
        raise ValueError("is not strictly between 0 and 1")
    return q


def _quantiles(spec: str) -> list[float]:
    """``--quantiles``: the candidate quantiles of the dev gap distribution, in the order given.

    Raises:
        ConfigError: an empty item (``0.5,,0.7``), an item that is not a finite number strictly between 0 and 1
            (``x``, ``nan``, ``inf``, ``0``, ``1``), or one equal to an earlier item (``0.5,0.50``); one line naming
            ``--quantiles``, the item and what to give (:func:`tasks.analyze.comma_list`). The repeated or empty item
            was silently dropped before.
    """
    return comma_list("--quantiles", spec, _quantile,
                      "a comma list of distinct numbers strictly between 0 and 1, e.g. --quantiles 0.5,0.7,0.9")


def main(argv: list[str] | None = None) -> int:
    """``tokrag calibrate``: collect dev records (resumable), calibrate, write the preset; returns 0, or 130 after
    Ctrl-C (one line saying what the records files kept, :func:`tasks.analyze.interrupted_message`)."""
    from retrieval.io import check_writable

    args = build_parser().parse_args(argv)
    if args.split != "dev":
        raise ConfigError(f"--split {args.split}: calibration uses the dev pools only (--split dev); "
                          "test questions are never used for tuning")
    quantiles = _quantiles(args.quantiles)
    check_common_args(args)
    if args.preset_out is not None and not args.preset_out.strip():  # '' silently meant --out's tokrag_preset.json
        raise ConfigError("--preset-out is empty (an unset shell variable?); give the path of a preset file, or leave "
                          "the option out for <--out>/tokrag_preset.json")
    path = Path(args.preset_out or Path(args.out) / "tokrag_preset.json")
    opt = "--preset-out" if args.preset_out else "--out"
    if args.preset_out and args.preset_out.endswith("/") and not path.is_dir():  # Path() drops the '/': the file
        raise ConfigError(f"--preset-out {args.preset_out}: ends with '/', so it names a folder; give the path of a "
                          f"preset file (e.g. {args.preset_out}tokrag_preset.json)")  # 'dir' was written, after the scoring
    if path.is_dir() or any(p.exists() and not p.is_dir() for p in path.parents):
        raise ConfigError(f"{opt} {args.preset_out or args.out}: the preset file {path} would be a folder, or under a "
                          "file; give the path of a preset file to write")
    check_writable(path, opt, folder=False)  # /proc/x: refused before the model loads, not after the scoring
    kept = None
    try:
        import torch

        torch.set_num_threads(max(1, args.threads))
        lm = load_lm(args)
        t0 = time.time()
        recs, cfgs = collect_all(lm, args, "dev")
        kept = [(Path(c["records_file"]), c["n"]) for c in cfgs.values()]
        preset = write_calibration(path, lm, recs, cfgs, quantiles, args.policy, run_seconds(cfgs.values(), time.time() - t0),
                                   n_boot=args.bootstrap, seed=args.seed)
        print_preset(preset)
        print(f"wrote {path}")
    except KeyboardInterrupt as exc:  # one line, not a traceback from the decoder or the tokenizer load
        print(interrupted_message("calibrate", exc.kept if isinstance(exc, RecordsInterrupted) else kept),
              file=sys.stderr)
        return 130
    return 0


def write_calibration(path: str | Path, lm: Any, recs: dict[str, list[TokenRecord]], cfgs: dict[str, dict],
                      quantiles: Sequence[float] = QUANTILES, policy: str = "auto",
                      seconds: float | dict | None = None, n_boot: int = 1000, seed: int = 0) -> dict:
    """Calibrate on the dev records of every data set, pooled with within-data-set AUCs
    (:func:`calibrate_records`), and write the preset for ``lm`` (the data configurations recorded);
    returns the preset as read back. Its ``params`` hold, beside the calibrated layer or threshold, every Tok-RAG
    setting ``lm`` scored the records and chose them under (:data:`tokrag_model.methods.tokrag.PRESET_SETTINGS`:
    ``rate``, ``n_anchors``, ``window_left``/``right``, ``rag_top``, ``pure_top``, ``bypass``, ``token_lists``), so a
    ``preset=`` run applies them and warns of other values given explicitly (before 2026-12-05 only the layer or
    threshold was written, and a preset run silently used the defaults: such a preset reads as calibrated with the
    defaults; ``token_lists`` is written since 2026-12-07, an older preset reads as ``generalised``).

    ``n_boot``, ``seed``: the bootstrap of each fixed layer's dev AUC CI (:func:`layer_cis`; ``calibration.dev_ci_by_layer``;
    0: none).

    ``seconds``: the time keys of ``calibration`` (:func:`tasks.analyze.run_seconds`: ``seconds`` = the total scoring
    time of the dev samples used, over every invocation that scored them, None where older records lack per-sample
    times; ``seconds_known``, ``samples_untimed``, ``wall_seconds`` = this invocation), or a plain number of seconds.

    Calibrated on few strict tokens (:func:`tasks.analyze.small_sample_note`: below
    :data:`~tasks.analyze.MIN_STRICT_TOKENS`, or without both classes), ``calibration.small_sample`` holds that note
    with the counts it is based on (``note``, ``samples``, ``strict``, ``strict_benefit``, ``min_strict_tokens``); a
    run that loads the preset logs it (:func:`tokrag_model.methods.tokrag.preset_small_sample_warning`). Before
    2026-12-06 only ``tokrag calibrate`` printed it, and the preset did not carry it.

    ``calibration.data.<data set>`` holds each data set's configuration (``data``, ``split``, ``n``, ``k``,
    ``max_tokens``, ``runs``, ``key``, the QA prompt format, ``bypass``) and ``tokrag_data``: what the samples were
    read from, the record :func:`tasks.analyze.collect_records` builds (:func:`tasks.provenance.qa_provenance` for
    ``nq``, :func:`tasks.provenance.wiki_lm_provenance` for ``wiki``; null where it built none), the shape of the
    results' ``configs.<task>.metadata.tokrag_data`` and of ``tokrag analyze``'s ``configs.<data set>.tokrag_data``:
    ``tokrag`` (version, commit), ``files`` (each file's absolute path and SHA-256), ``corpus`` (name, passages,
    fingerprint), ``run_fingerprint``, for ``nq`` ``retrieval`` and ``questions`` (the split and its size). Recorded,
    not used: the calibrated params and AUCs are the same with it. Presets written before 2026-12-07 lack it and load
    as before (:func:`data_lines` says so)."""
    from tokrag_model.methods.tokrag import PRESET_SETTINGS, write_preset

    if any(c["split"] != "dev" for c in cfgs.values()):
        raise ConfigError("calibrate: only dev records may be used (test questions are never used for tuning)")
    cal = calibrate_records([r for v in recs.values() for r in v], lm.decoder.n_layers, quantiles, policy,
                            lm.params.js_min_layer, lm.params.rate,  # the scan start the records' gaps were recorded from
                            n_boot=n_boot, seed=seed)
    keys = ("data", "split", "n", "k", "max_tokens", "runs", "key", "prompt", "apply_chat_template", "chat_template_sha256",
            "bypass", "tokrag_data")
    cal["calibration"]["data"] = {name: {k: c[k] for k in keys if k in c} for name, c in cfgs.items()}
    if isinstance(seconds, dict):
        cal["calibration"].update(seconds)
    elif seconds is not None:
        cal["calibration"]["seconds"] = round(seconds, 1)
    counts = cal["calibration"]["dev_counts"]
    note = small_sample_note(counts["strict"], counts.get("strict_benefit"))
    if note:  # carried by the preset: a run that loads it logs it (tokrag.preset_small_sample_warning)
        cal["calibration"]["small_sample"] = {"note": note, "samples": counts["samples"], "strict": counts["strict"],
                                              "strict_benefit": counts.get("strict_benefit"),
                                              "min_strict_tokens": MIN_STRICT_TOKENS}
    params = {**cal["params"], **{key: getattr(lm.params, key) for key in PRESET_SETTINGS}}
    return write_preset(path, lm, nan_to_none(params), nan_to_none(cal["calibration"]))


DATA_NOT_RECORDED = "its data files are not recorded (a preset written before 2026-12-07)"
"""What :func:`data_lines` says of a data set whose ``calibration.data`` entry has no ``tokrag_data``."""


def data_lines(calibration: Any) -> list[str]:
    """One line per data set of a preset's ``calibration.data`` (:func:`write_calibration`): what it was calibrated on,
    from its ``tokrag_data``: ``calibrated on nq dev (120 samples): nq_open/NQ-open.dev.jsonl (sha256 f15567f38099),
    ... in /data; corpus nq-wiki-12k (12633 passages, fingerprint 527e6ad92a74116b); run 6efb46ccdd1fd1d789fd; split
    dev (188 questions in it)`` (a SHA-256 as its first 12 hex; data-folder files by their path in the folder, then
    the folder; a file the task's metadata names by its role and absolute path; a hub split as ``ROLE hub ID split
    S``; the corpus record only where it adds to the corpus file's). A data set without ``tokrag_data`` (a preset
    written before it was recorded) gets ``calibrated on wiki dev (120 samples): ``:data:`DATA_NOT_RECORDED`, one whose
    loader built none (``tokrag_data`` null) ``...: its loader recorded no data files``. Empty
    when ``calibration`` records no data (a summary straight from :func:`calibrate_records`). Raises nothing: a
    damaged record shows what it holds."""
    from retrieval.io import TASK_DATA_ARGS

    data = calibration.get("data") if isinstance(calibration, dict) else None
    if not isinstance(data, dict):
        return []
    out = []
    for name, cfg in data.items():
        if not isinstance(cfg, dict):
            continue
        n = cfg.get("n")
        head = f"calibrated on {name} {cfg.get('split', '?')}" + (f" ({n} samples)" if isinstance(n, int) else "")
        td = cfg.get("tokrag_data")
        if not isinstance(td, dict):
            out.append(f"{head}: {DATA_NOT_RECORDED if 'tokrag_data' not in cfg else 'its loader recorded no data files'}")
            continue
        parts: list[str] = []
        in_folder: dict[str, list[str]] = {}  # data folder -> its files, by their path in it
        files = td.get("files") if isinstance(td.get("files"), dict) else {}
        for role, rec in files.items():
            if not isinstance(rec, dict):
                continue
            if rec.get("hub_id"):
                parts.append(f"{role} hub {rec['hub_id']}" + (f" ({rec['config']})" if rec.get("config") else "")
                             + f" split {rec.get('split')}")
                continue
            path = str(rec.get("path"))
            digest = (f"sha256 {rec['sha256'][:12]}" if isinstance(rec.get("sha256"), str)
                      else f"folder fingerprint {rec.get('fingerprint')}")
            if role not in TASK_DATA_ARGS and path.endswith("/" + role):  # a data-folder file, by its path in it
                in_folder.setdefault(path[:-len(role) - 1], []).append(f"{role} ({digest})")
            else:
                parts.append(f"{role} {path} ({digest})")
        parts[:0] = [f"{', '.join(names)} in {folder}" for folder, names in in_folder.items()]
        corpus = td.get("corpus") if isinstance(td.get("corpus"), dict) else {}
        if corpus.get("name") and (corpus.keys() - {"name"} or "corpus" not in files):  # not the corpus file again
            size = [f"{corpus['passages']} passages"] if isinstance(corpus.get("passages"), int) else []
            size += [f"fingerprint {corpus['fingerprint']}"] if corpus.get("fingerprint") else []
            parts.append(f"corpus {corpus['name']}" + (f" ({', '.join(size)})" if size else ""))
        if td.get("run_fingerprint"):
            parts.append(f"run {td['run_fingerprint']}")
        q = td.get("questions") if isinstance(td.get("questions"), dict) else {}
        if q.get("split"):
            parts.append(f"split {q['split']}" + (f" ({q['in_split']} questions in it)"
                                                   if isinstance(q.get("in_split"), int) else ""))
        out.append(f"{head}: " + ("; ".join(parts) if parts else "no files recorded"))
    return out


def _short_float(x: float) -> str:
    """``5e-7`` for 5e-07 (``:g`` without the exponent's leading zeros), ``0.001`` for 0.001."""
    return re.sub(r"e([+-])0+(\d)", r"e\1\2", f"{x:g}")


def print_preset(preset: dict) -> None:
    """Rich tables of a preset's dev AUCs per fixed layer and per threshold quantile, then its params and, per data set,
    what it was calibrated on (:func:`data_lines`)."""
    from rich.console import Console
    from rich.table import Table

    c = preset["calibration"]
    con = Console(width=140)
    n = c["dev_counts"]
    # each title on a line of its own: as a Table title it was wrapped to the narrow table's width, mid-phrase
    con.print(f"dev fixed layers: strict AUC ({n['strict']} strict tokens of {n['tokens']}, {n['samples']} samples)",
              style="italic", highlight=False)
    cis = c.get("dev_ci_by_layer") if isinstance(c.get("dev_ci_by_layer"), dict) else None  # absent: --bootstrap 0, older
    t = Table()
    t.add_column("layer", justify="right")
    t.add_column("dev AUC" + (" [95% CI]" if cis is not None else ""), justify="right")
    na = (lambda x: x is None or (isinstance(x, float) and math.isnan(x)))
    for layer, a in c["dev_auc_by_layer"].items():
        mark = " <- best" if int(layer) == c["fixed"]["layer"] else " (paper default)" if int(layer) == c["fixed"]["paper_default_layer"] else ""
        if int(layer) in c["fixed"].get("excluded_layers", []):
            mark += " (excluded: cannot see the whole span)"
        ci = ""
        if cis is not None:  # a preset read back from JSON has string keys
            lo, hi = (list(cis.get(str(layer), cis.get(layer)) or []) + [None, None])[:2]
            ci = f" [{'n/a' if na(lo) else f'{lo:.3f}'}, {'n/a' if na(hi) else f'{hi:.3f}'}]"
        t.add_row(str(layer), ("n/a" if na(a) else f"{a:.3f}") + ci + mark)
    con.print(t)
    if not c["dev_auc_by_quantile"]:  # --policy fixed with no gap value: no dynamic candidate
        con.print("dev dynamic rule: not calibrated (no generation-relevant dev token, so no gap value)",
                  style="italic", highlight=False)
    else:
        con.print(f"dev dynamic rule: threshold = quantile of {c['dynamic']['n_gaps']} gaps "
                  f"(uncalibrated {_short_float(c['dynamic']['uncalibrated_threshold'])} sits at quantile "
                  f"{c['dynamic']['uncalibrated_quantile']:.3f})", style="italic",
                  highlight=False)
        t = Table()
        for col in ("quantile", "threshold", "dev AUC", "fallback rate"):
            t.add_column(col, justify="right")
        for v in c["dev_auc_by_quantile"]:
            t.add_row(f"{v['quantile']:.3f}", f"{v['threshold']:.3g}", "n/a" if v["auc"] is None else f"{v['auc']:.3f}",
                      f"{v['fallback_rate']:.2f}")
        con.print(t)
    con.print(f"preset params ({c['policy']}): {preset['params']}")
    for line in data_lines(c):  # what it was calibrated on: the files and their SHA-256, as the preset records them
        con.print(line, highlight=False, soft_wrap=True, markup=False)  # a path's [brackets] as typed
    note = small_sample_note(n["strict"], n.get("strict_benefit"))
    if note:
        con.print(f"{note}: this preset was chosen on them")
