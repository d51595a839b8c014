"""Expected retrieval figures as data: ``tokrag retrieve eval --expect docs/expected/webq-dpr.yaml``.

Pyserini's two-click reproductions (2CR) keep each condition's command and expected scores in YAML and a
small runner checks them; this is the same idea for tokrag's retrieval. An expectation file::

    name: webq-dpr
    source: https://github.com/castorini/pyserini/blob/master/docs/experiments-dpr.md
    corpus: prebuilt:wikipedia-dpr-100w      # any corpus retrieve() takes
    topics: pyserini:dpr-wq-test              # a topics file, nq-oracle[:N], nq-open[:N] or pyserini:<name>
    tolerance: 0.005                          # absolute, per metric (default 0.005)
    conditions:
      - name: bm25
        retriever: bm25
        params: {k1: 0.9, b: 0.4}
        expected: {answer_recall@20: 0.6240, answer_recall@100: 0.7549}

A condition may override ``corpus``, ``topics`` and ``tolerance``. Metric names are those of
:func:`retrieval.metrics.evaluate_run` (``answer_recall@k``, ``gold@k``, ``mrr``); the run is retrieved at the
largest cut-off named. Relative file paths are read from the expectation file's folder first.

:func:`check` retrieves each condition through :func:`retrieval.retrieve` (cached runs; for a prebuilt corpus
the download plan is printed before anything is downloaded), scores it and compares: a metric passes when
``|measured - expected| <= tolerance``, and a condition passes when every metric does and its figures are over
every question of its topics that its figures are computed over (``num_queries``: for gold@k and MRR the questions
with gold ids, for answer recall those with answers, for both kinds those with either; ``--run`` a run of only some
of them misses). ``num_queries`` is checked so, automatically: it is not listed under ``expected``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import ConfigError

DEFAULT_TOLERANCE = 0.005
_METRIC = re.compile(r"^(answer_recall@[1-9]\d*|gold@[1-9]\d*|mrr)$")
_TOP_KEYS = {"name", "source", "description", "corpus", "topics", "tolerance", "conditions"}
_COND_KEYS = {"name", "description", "retriever", "params", "expected", "corpus", "topics", "tolerance"}


def _check_keys(obj: Mapping[str, Any], allowed: set[str], where: str) -> None:
    import difflib

    for key in obj:
        if key not in allowed:
            near = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ConfigError(f"{where}: unknown key {key!r}{hint}; allowed: {', '.join(sorted(allowed))}")


def _local(value: str, base: Path) -> str:
    """A relative path that exists next to the expectation file is read from there."""
    if value.startswith(("prebuilt:", "pyserini:")) or os.path.isabs(value):
        return value
    candidate = base / value
    return str(candidate) if candidate.exists() else value


def load(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check an expectation file.

    Returns:
        ``{"path", "name", "source", "conditions": [{"name", "corpus", "topics", "retriever", "params",
        "expected": {metric: value}, "tolerance", "k"}]}`` with file-level defaults filled in.

    Raises:
        ConfigError: a missing file, malformed YAML, unknown keys (with a did-you-mean), missing fields,
        metric names or values that are not finite numbers, a tolerance that is not a finite number >= 0; the file
        and the condition are named.
    """
    import yaml

    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"--expect {p}: no such file")
    try:
        spec = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: malformed YAML ({exc})") from None
    if not isinstance(spec, dict):
        raise ConfigError(f"{p}: expected a mapping with 'conditions'")
    _check_keys(spec, _TOP_KEYS, str(p))
    conds = spec.get("conditions")
    if not isinstance(conds, list) or not conds:
        raise ConfigError(f"{p}: 'conditions' must be a non-empty list")
    out = []
    names: set[str] = set()
    for i, c in enumerate(conds):
        where = f"{p}: conditions[{i}]"
        if not isinstance(c, dict):
            raise ConfigError(f"{where}: expected a mapping")
        _check_keys(c, _COND_KEYS, where)
        name = str(c.get("name") or "")
        if not name:
            raise ConfigError(f"{where}: missing 'name'")
        if name in names:
            raise ConfigError(f"{where}: duplicate condition name {name!r}")
        names.add(name)
        where = f"{p}: condition {name!r}"
        merged = {key: c.get(key, spec.get(key)) for key in ("corpus", "topics", "tolerance")}
        for key in ("corpus", "topics"):
            if not merged[key]:
                raise ConfigError(f"{where}: no '{key}' (give it in the condition or at the top of the file)")
            merged[key] = _local(str(merged[key]), p.parent)
        tol = merged["tolerance"] if merged["tolerance"] is not None else DEFAULT_TOLERANCE
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
            raise ConfigError(f"{where}: tolerance={tol!r} must be a finite number >= 0")  # inf passed every figure
        expected = c.get("expected")
        if not isinstance(expected, dict) or not expected:
            raise ConfigError(f"{where}: 'expected' must map metric names to figures, e.g. {{answer_recall@20: 0.75}}")
        for m, v in expected.items():
            if str(m) == "num_queries":
                raise ConfigError(f"{where}: num_queries is not an expected figure: it is checked automatically against "
                                  "the topics (every question the listed figures are over must be in the run); remove it")
            if not _METRIC.match(str(m)):
                raise ConfigError(f"{where}: unknown metric {m!r}; use answer_recall@K, gold@K (K an integer >= 1) or mrr")
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f"{where}: expected {m} = {v!r} is not a number")
            if not math.isfinite(v):  # nan or inf: missed whatever was measured
                raise ConfigError(f"{where}: expected {m} = {v!r} is not a finite number")
        params = c.get("params") or {}
        if not isinstance(params, dict):
            raise ConfigError(f"{where}: 'params' must be a mapping")
        ks = [int(str(m).split("@")[1]) for m in expected if "@" in str(m)]
        out.append({"name": name, "retriever": str(c.get("retriever") or "bm25"), "params": dict(params),
                    "expected": {str(m): float(v) for m, v in expected.items()}, "tolerance": float(tol),
                    "k": max(ks + [100 if "mrr" in expected else 1]), **{k: merged[k] for k in ("corpus", "topics")}})
    return {"path": str(p), "name": str(spec.get("name") or p.stem), "source": spec.get("source"), "conditions": out}


def select(spec: Mapping[str, Any], names: Sequence[str] | None) -> list[dict[str, Any]]:
    """The conditions named (all when ``names`` is empty). Raises ConfigError for an unknown name."""
    conds = list(spec["conditions"])
    if not names:
        return conds
    known = {c["name"]: c for c in conds}
    missing = [n for n in names if n not in known]
    if missing:
        raise ConfigError(f"{spec['path']}: no condition {missing[0]!r}; conditions: {', '.join(known)}")
    return [known[n] for n in names]


def compare(cond: Mapping[str, Any], measured: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """``{metric: {"expected", "measured", "diff", "ok"}}`` for every expected metric of ``cond``."""
    out = {}
    for m, exp in cond["expected"].items():
        got = measured.get(m)
        ok = got is not None and abs(got - exp) <= cond["tolerance"] + 1e-12
        out[m] = {"expected": exp, "measured": None if got is None else round(float(got), 6),
                  "diff": None if got is None else round(float(got) - exp, 6), "ok": bool(ok)}
    return out


def result(cond: Mapping[str, Any], measured: Mapping[str, Any], topics_queries: int, run: str) -> dict[str, Any]:
    """One condition's outcome: ``{"name", "corpus", "topics", "retriever", "k", "num_queries", "topics_queries",
    "run", "metrics": compare(...), "ok"}``.

    ``num_queries`` is the number of questions the measured figures are over (the run's with answers or gold ids,
    of the kinds the condition lists, :func:`figures_over`), ``topics_queries`` the number of the topics' questions
    with them: the set the expected figures are documented over. A run that lacks some of them (``--run`` a run of
    200 of the 3,610 NQ questions) reproduces nothing even when its figures land within tolerance, so the condition
    is then not ok (printed as a ``num_queries`` MISS by :func:`format_results`).
    """
    cmp_ = compare(cond, measured)
    n = int(measured["num_queries"])
    return {"name": cond["name"], "corpus": cond["corpus"], "topics": cond["topics"], "retriever": cond["retriever"],
            "k": cond["k"], "num_queries": n, "topics_queries": int(topics_queries), "run": run, "metrics": cmp_,
            "ok": n == topics_queries and all(v["ok"] for v in cmp_.values())}


def check(spec: Mapping[str, Any], conditions: Sequence[str] | None = None, *, runtime: Mapping[str, Any] | None = None,
          data_dir: str | None = None, cache_dir: str | None = None,
          load_topics: Callable[..., tuple] | None = None) -> list[dict[str, Any]]:
    """Retrieve, score and compare every selected condition (module docstring).

    Returns:
        one :func:`result` per condition.

    Raises:
        ConfigError / DataError / OfflineError from retrieval (e.g. a prebuilt index that cannot be downloaded);
        DataError: a gold id of the topics that a local corpus lacks (file, line and id named).
    """
    from .api import PREBUILT, retrieve
    from .corpus import resolve_corpus
    from .metrics import evaluate_run

    if load_topics is None:
        from .cli import load_topics
    results = []
    for cond in select(spec, conditions):
        local = None if cond["corpus"].startswith(PREBUILT) else resolve_corpus(cond["corpus"], data_dir)
        queries, answers, gold = load_topics(cond["topics"], data_dir, corpus=local)  # gold ids checked against a local corpus
        run = retrieve(cond["corpus"] if local is None else local, queries, cond["retriever"], k=cond["k"],
                       params={**cond["params"], **(runtime or {})}, cache_dir=cache_dir, data_dir=data_dir)
        ks = sorted({int(m.split("@")[1]) for m in cond["expected"] if "@" in m})
        answers, gold = figures_over(cond, answers, gold)
        measured = evaluate_run(run, answers or None, gold or None, ks=ks or (cond["k"],))
        results.append(result(cond, measured, len(scorable(queries, answers, gold)), str(run.jsonl_path)))
    return results


def figures_over(cond: Mapping[str, Any], answers: Mapping[str, Any], gold: Mapping[str, Any]) -> tuple[dict, dict]:
    """-> (answers, gold ids) of the kinds ``cond``'s expected figures are computed over: the answers when it lists an
    ``answer_recall@k``, the gold ids when it lists a ``gold@k`` or ``mrr`` (the other kind ``{}``). A condition that
    expects gold@k only is then not over the questions that have answers but no gold ids."""
    names = list(cond["expected"])
    use_answers = any(m.startswith("answer_recall@") for m in names)
    use_gold = any(m.startswith("gold@") or m == "mrr" for m in names)
    return (dict(answers) if use_answers else {}), (dict(gold) if use_gold else {})


def scorable(queries: Mapping[str, Any], answers: Mapping[str, Any], gold: Mapping[str, Any]) -> set[str]:
    """The qids of ``queries`` with answers or gold ids: the questions an expectation's figures are over (pass the
    kinds :func:`figures_over` keeps). An empty answers or gold list counts as none, as
    :func:`retrieval.metrics.evaluate_run` skips such a question (a run holding every question missed on
    ``num_queries``)."""
    return {q for q in queries if answers.get(q) or gold.get(q)}


def format_results(spec: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> str:
    """A plain-text table: condition, metric, expected, measured, difference, ok/MISS."""
    lines = [f"{spec['name']}" + (f" ({spec['source']})" if spec.get("source") else ""),
             f"{'condition':<16} {'metric':<20} {'expected':>8} {'measured':>8} {'diff':>8}  status"]
    for r in results:
        for m, v in r["metrics"].items():
            got = "-" if v["measured"] is None else f"{v['measured']:.4f}"
            diff = "-" if v["diff"] is None else f"{v['diff']:+.4f}"
            lines.append(f"{r['name']:<16} {m:<20} {v['expected']:>8.4f} {got:>8} {diff:>8}  {'ok' if v['ok'] else 'MISS'}")
        if r["num_queries"] != r["topics_queries"]:  # the figures are not over the questions they are expected over
            n, want = r["num_queries"], r["topics_queries"]
            lines.append(f"{r['name']:<16} {'num_queries':<20} {want:>8} {n:>8} {n - want:>+8}  MISS")
    n_bad = sum(not v["ok"] for r in results for v in r["metrics"].values())
    n_bad += sum(r["num_queries"] != r["topics_queries"] for r in results)
    lines.append("all figures within tolerance" if not n_bad else f"{n_bad} figure(s) outside tolerance")
    return "\n".join(lines)
