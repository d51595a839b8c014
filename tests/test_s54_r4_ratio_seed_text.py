"""The report's seed recipe (JSON ``bootstrap.seed_derivation``, the Markdown / HTML footer) for a corpus ratio (s54 r4,
review of b132d08, u3 F1). It ended "then scipy.stats.bootstrap((v,), numpy.mean, ...)" for every row, v being a
ratio row's [loglik, length] pairs: followed as written, a word-perplexity or bits-per-byte bound is a mean of pairs,
not the ratio the report resamples. The text now says that a ratio's bootstrap resamples document indices with the
ratio of the resampled sums as its statistic; a bits-per-byte bound recomputed from that text (hashlib, numpy, scipy;
no tokrag) equals the report's. ToyLM on toy_lm (6 documents, -2 nats per word)."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
from scipy import stats

from leaderboards.report import compute, collect, render_markdown
from tests.leaderboard_helpers import run_toy_spec


def _h(x) -> str:
    return hashlib.sha256(json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def test_a_ratio_bound_is_recomputed_from_the_reports_text(tmp_path):
    spec, runs = run_toy_spec(tmp_path, tasks=["toy_lm"])
    data = compute(spec, collect(spec, runs), timings=False)
    b = data["bootstrap"]
    text = b["seed_derivation"]
    assert ("a corpus ratio's bootstrap resamples the document indices i instead, its statistic the ratio of the "
            "resampled documents' sums") in text
    assert "bits per byte -sum(loglik[i]) / sum(length[i]) / ln 2" in text
    assert text in render_markdown(data)
    row = next(r for r in data["rows"] if r["method"] == "standard")
    samples = [json.loads(line) for d in runs.iterdir() if (d / "DONE").is_file()
               and json.loads((d / "config.json").read_text())["method"] == "standard"
               for line in (d / "samples_toy_lm.jsonl").read_text().splitlines()]
    v = [[float(x) for x in s["bits_per_byte"]] for s in sorted(samples, key=lambda s: s["doc_id"])]
    ll, n = np.array([p[0] for p in v]), np.array([p[1] for p in v])
    rng = np.random.default_rng((b["seed"] + int(_h(["bits_per_byte", _h(v)[:16]])[:8], 16)) % 2**32)
    res = stats.bootstrap((np.arange(len(v)),), lambda i, axis=-1: -ll[i].sum(axis=-1) / n[i].sum(axis=-1) / math.log(2),
                          n_resamples=b["iters"], confidence_level=b["confidence"], method="percentile", vectorized=True, rng=rng)
    got = row["metrics"]["bits_per_byte"]
    assert (got["lo"], got["hi"]) == (float(res.confidence_interval.low), float(res.confidence_interval.high))
    assert got["lo"] < got["mean"] < got["hi"]  # bytes per word differ between documents: a real interval
