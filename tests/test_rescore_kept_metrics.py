"""leaderboards.rescore: a per-sample metric the logged sample lists but ``process_results`` cannot re-derive from
the log is kept as logged and re-aggregated, and the summary says so. ``token_perplexity`` of
``wikitext103_bm25_wiki`` needs the ``n_tokens`` attribute of the live log-likelihood float, which the samples JSON
loses: rescore dropped it from every sample and left results.json's old ``token_perplexity,none`` in the report,
stale and not listed in ``changes``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

from leaderboards.rescore import rescore_loaded

TASK = "wikitext103_bm25_wiki"
ROOT = Path(__file__).resolve().parents[1]
METRICS = ["word_perplexity", "byte_perplexity", "bits_per_byte", "token_perplexity"]


def _sample(doc_id: int, ll: float, n_tokens: int, target: str) -> dict:
    doc = {"qid": f"wt103-000-000{doc_id}", "title": "", "question": "x", "context": "x", "target": target,
           "ctxs": [], "run_fingerprint": "f", "scored_by": "bm25"}
    # as lm-eval writes it: the float lost its n_tokens attribute, the logged metric value is a list
    return {"doc_id": doc_id, "doc": doc, "filtered_resps": [[ll, False]], "filter": "none", "metrics": list(METRICS),
            "word_perplexity": [ll, len(target.split())], "token_perplexity": [ll, n_tokens]}


def test_a_logged_metric_that_cannot_be_recomputed_is_kept_and_reaggregated():
    samples = [_sample(0, -12.0, 5, " alpha beta gamma"), _sample(1, -6.0, 3, " delta epsilon")]
    data = {"samples": {TASK: json.loads(json.dumps(samples))},
            "results": {"results": {TASK: {"token_perplexity,none": 99.0, "word_perplexity,none": 1.0}}}}
    spec = SimpleNamespace(include_path=[ROOT / "tasks"])
    cell = SimpleNamespace(task=SimpleNamespace(task=TASK))
    out, changes = rescore_loaded(spec, {"c": (cell, "k", data)})

    new = out["c"][2]
    for s, (ll, n) in zip(new["samples"][TASK], [(-12.0, 5), (-6.0, 3)]):
        assert "token_perplexity" in s["metrics"] and s["token_perplexity"] == [ll, n]  # kept as logged
    # weighted perplexity exp(-sum ll / sum tokens) = exp(18 / 8), not the stale 99.0
    assert math.isclose(new["results"]["results"][TASK]["token_perplexity,none"], math.exp(18 / 8))
    assert changes["kept"] == {"token_perplexity": 2}
    old, now = changes["changed"]["c"]["token_perplexity"]
    assert old == 99.0 and math.isclose(now, math.exp(18 / 8))
    # the recomputed ones are recomputed: 5 words, ll -18 -> exp(18 / 5)
    assert math.isclose(new["results"]["results"][TASK]["word_perplexity,none"], math.exp(18 / 5))
    assert data["samples"][TASK][0]["token_perplexity"] == [-12.0, 5]  # the loaded data is not modified

