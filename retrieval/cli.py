"""``tokrag index ...`` and ``tokrag retrieve ...``: Pyserini-like command lines over :mod:`retrieval`.

    tokrag index build --corpus nq-wiki-12k [--bm25 | --dense --encoder all-MiniLM-L6-v2] [--index DIR]
    tokrag retrieve --corpus nq-wiki-12k --topics nq-oracle --output run.trec --bm25 --k1 0.9 --b 0.4 --hits 100
    tokrag retrieve --index wikipedia-dpr-100w --topics q.tsv --output run.trec      # prebuilt index (internet)
    tokrag retrieve --corpus prebuilt:wikipedia-dpr-100w --dpr --topics q.tsv --output run.trec --dry-run
    tokrag retrieve eval --run run.ctxs.jsonl --topics nq-oracle --k 1 5 20 100
    tokrag retrieve eval --expect docs/expected/webq-dpr.yaml [--condition dpr] [--dry-run]

Topics: a file (TSV ``qid<TAB>query`` as Pyserini topics, or JSONL with ``qid``/``question`` and
optional ``answers``/``gold_docids``), or a named set: ``nq-oracle`` (2,655 NQ-open questions with gold
passages), ``nq-open`` (NQ-open dev, 3,610), ``pyserini:<name>`` (a Pyserini QA topic set with answers, e.g.
``pyserini:dpr-wq-test``; downloaded by Anserini, needs the internet); append ``:N`` for the first N
(``nq-oracle:200``).

A question retrieved without passages has a row in ``run.ctxs.jsonl`` but no line in ``run.trec`` (TREC has no way to
write one). ``retrieve eval`` of the TREC file reads the run's questions from the ctxs JSONL written beside it when
that file holds the same rankings, so both files give the same figures: over all the run's questions, one without
passages a miss (DPR's top-k accuracy, Karpukhin et al. 2020, section 5.1; trec_eval -c). Without it, the questions of
the topics that have no line are left out, and a WARNING line says how many.

Beside ``--output run.trec`` goes ``run.trec.meta.json`` (:func:`_meta_beside`): how the run was made (the run
cache's ``meta.json``: retriever, parameters with their defaults, corpus fingerprint, encoder, k, query set, the
versions installed, the cache key) and the SHA-256 of the two files written. The TREC run tag (last column) is
``tokrag-<retriever>-<8 hex>`` (:func:`_run_tag`): the hex is a fingerprint of the retriever's parameters (and
encoder), so runs with other parameters (``--k1 0.9 --b 0.4`` vs ``--k1 1.5 --b 0.9``) carry other tags. The run
cache's own ``run.trec`` keeps the tag ``tokrag-<retriever>``; trec_eval and ``retrieve eval`` ignore the tag.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError, DataError, check_java_int, unknown_name
from .io import _file_kind, check_writable

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------- topics
def load_topics(spec: str, data_dir: str | None = None, *, corpus: Any = None, only: Any = None,
                present: Collection[str] = (), also: str = "", texts: Mapping[str, Any] | None = None, run: Any = None,
                ) -> tuple[dict[str, str], dict[str, list[str]], dict[str, list[str]]]:
    """-> (queries, answers, gold docids) for a topics file or named set (module docstring).

    Args:
        spec: a topics file or named set, optionally ``:N`` (the first N queries). An existing file is read as a file,
            also when its path holds ':' (``run 10:00/q.jsonl``).
        data_dir: data folder of the named sets.
        corpus: a local :class:`retrieval.Corpus` the topics are retrieved from or scored against, or a function
            that loads it (called only when some gold id is left to check; it may return None: no check): the gold
            ids of the queries (of those in ``only`` when given, e.g. a run's qids) must be passages of it
            (:func:`retrieval.corpus.check_gold_ids`).
        present: ids known to be passages of the corpus (those of a run's ctxs): not checked.
        also: another way out, added to the message of a gold id the corpus lacks.
        texts: the question texts a run stored (``{qid: text}``, a ctxs JSONL's ``query``/``question``), named
            ``run`` in messages: under an automatic id of the topics (``q<index>`` of a JSONL record without one, the
            named sets' line indices) each must be the topics' text, or the run would be scored against other
            questions' answers (such ids move when a line of the topics is added or removed); under the topics' own
            ids a differing text is one WARNING (a run retrieved with rewritten queries) (:func:`_same_questions`).

    Raises:
        ConfigError: unknown name / missing file (a relative path names the working directory). DataError:
        malformed lines (file and line named), a gold id that is a float or holds whitespace
        (:func:`retrieval.io.json_id`); with ``corpus``, a gold id that is not in it (file, line and id named); with
        ``texts``, a question whose text differs from the topics' under an automatic id (:func:`_same_questions`).
    """
    from .corpus import (QUESTION_FIELDS, check_gold_ids, jsonl_qid, load_queries, nq_oracle_questions, qid_field, record_field,
                         relative_note, string_list, tsv_topics_file)
    from .io import json_id, read_jsonl
    from .paths import data_dir as _data_dir

    def checked(queries: dict, answers: dict, gold: dict, where: dict | None = None,
                alts: dict | None = None, auto: Collection[str] = ()) -> tuple[dict, dict, dict]:
        if texts:
            _same_questions(texts, queries, alts or {}, spec, run, auto)
        if corpus is not None:
            todo = {q: [g for g in v if g not in present] for q, v in gold.items()
                    if q in queries and (only is None or q in only)}
            todo = {q: v for q, v in todo.items() if v}
            local = (corpus() if callable(corpus) else corpus) if todo else None
            if local is not None:
                check_gold_ids(todo, local, where or {q: f"--topics {spec} question {q!r}" for q in gold}, also=also)
        return queries, answers, gold

    name, has_n, n = spec.partition(":")
    if has_n and Path(spec).expanduser().is_file():  # an existing file is read as a file ('run 10:00/q.jsonl')
        name, has_n, n = spec, "", ""
    if name in ("nq-oracle", "nq-open") and has_n and not (n.isdigit() and int(n) >= 1):
        raise ConfigError(f"--topics {spec!r}: the part after ':' must be a number of questions >= 1 (e.g. {name}:200)")
    limit = int(n) if n.isdigit() else None
    if name == "nq-oracle":
        qs = nq_oracle_questions(data_dir, limit=limit)
        return checked({q["qid"]: q["question"] for q in qs}, {q["qid"]: q["answers"] for q in qs},
                       {q["qid"]: q["gold_docids"] for q in qs}, auto={q["qid"] for q in qs})  # nq-oracle-<line index>
    if name == "pyserini":
        from .worker import call_java

        tname, n = _pyserini_topics_name(spec)
        topics = call_java("pyserini_topics", tname)
        items = list(topics.items())[: int(n) if n else None]
        return checked({q: t["question"] for q, t in items}, {q: t["answers"] for q, t in items}, {})
    if n and not n.isdigit() and "/" not in spec:  # with '/': a path that names no file ('run 10:00/q.jsonl'), below
        raise ConfigError(f"--topics {spec!r}: the part after ':' must be a number of questions")
    if name == "nq-open":
        path = _data_dir(data_dir) / "nq_open" / "NQ-open.dev.jsonl"
        if not path.is_file():
            raise ConfigError(f"{path} not found: the data folder must contain nq_open/NQ-open.dev.jsonl")
        queries, answers = {}, {}
        for i, (lineno, obj) in enumerate(read_jsonl(path)):
            if limit is not None and i >= limit:
                break
            qid = f"nq-open-{i}"
            queries[qid] = record_field(obj, ("question",), f"{path}:{lineno}")
            answers[qid] = string_list(obj, ("answer", "answers"), f"{path}:{lineno}")
        if not queries:  # an empty file said only 'no queries given: the query set is empty'
            raise DataError(f"{path}: holds no questions (an empty file: a download or copy that did not finish?); "
                            "copy nq_open/NQ-open.dev.jsonl of the data folder (../shared/data) again")
        return checked(queries, answers, {}, auto=set(queries))  # nq-open-<line index>
    p = Path(spec).expanduser()
    if not p.is_file():
        if "/" in spec or p.suffix:
            raise ConfigError(f"--topics {spec!r}: not a file{relative_note(p)} and not a named topic set (nq-oracle, nq-open)")
        raise ConfigError("--topics: " + unknown_name("topic set", name, ("nq-oracle", "nq-open"),
                                                      hint="or give a topics file (TSV qid<TAB>query, or JSONL)"))
    queries = load_queries(p)
    answers: dict[str, list[str]] = {}
    gold: dict[str, list[str]] = {}
    places: dict[str, str] = {}
    alts: dict[str, list[str]] = {}  # every text field of a record: a run may have been retrieved with its 'query'
    auto: set[str] = set()  # ids q<index> of records without one (TSV topics always give theirs)
    if not tsv_topics_file(p):
        for i, (lineno, obj) in enumerate(read_jsonl(p)):
            where = f"{p}:{lineno}"
            qid = jsonl_qid(obj, i, where)  # the ids load_queries gave (a qid 0 is "0", not "q0")
            if texts and qid in texts:
                alts[qid] = [v for f in QUESTION_FIELDS if isinstance(v := obj.get(f), str)]
                if qid_field(obj) is None:
                    auto.add(qid)
            if ans := string_list(obj, ("answers", "answer"), where):
                answers[qid] = ans
            if string_list(obj, ("gold_docids",), where):  # its type checked; each id as a run's passage id is read
                raw = obj["gold_docids"] if isinstance(obj["gold_docids"], list) else [obj["gold_docids"]]
                gold[qid] = [json_id(g, f"{where}: gold_docids[{j}]") for j, g in enumerate(raw)]
                places[qid] = where
    if limit is not None:
        keep = list(queries)[:limit]
        queries = {q: queries[q] for q in keep}
    return checked(queries, answers, gold, places, alts, auto)


def _question_key(text: str) -> str:
    """A question's text as :func:`_same_questions` compares it: whitespace runs as one space, ends stripped, Unicode
    NFC (the same words typed otherwise; no retriever reads them differently). Case and punctuation are kept."""
    import unicodedata

    return unicodedata.normalize("NFC", " ".join(text.split()))


def _shown(text: str, width: int = 60) -> str:
    """``text`` for a one-line message: whitespace runs as one space, cut to ``width`` characters with an ellipsis."""
    text = " ".join(text.split())
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def _same_questions(texts: Mapping[str, Any], queries: Mapping[str, str], alts: Mapping[str, list[str]], topics: str,
                    run: Any, auto: Collection[str] = ()) -> None:
    """Refuse to score a run against topics whose question under one of the run's automatic ids is another question;
    warn once when texts differ under the topics' own ids.

    ``tokrag retrieve`` stores each question's text, as the topics gave it, in the ctxs JSONL (``query``; FiD-style
    files: ``question``), and ``retrieve eval`` matches the run to the topics by id. Topics without ids get
    ``q<index>``, so one question inserted at the top of the file gave each old ranking another question's answers
    and gold ids (the figures silently wrong): a differing text under such an id (``auto``: the JSONL records without
    an id, the named sets' line indices) is refused. Under ids the topics give themselves (TSV topics, JSONL ``qid``)
    the user matched the questions: a run retrieved with rewritten or expanded queries is scored against the original
    questions, with one WARNING line (how many differ, the first). The texts are compared by :func:`_question_key`; a
    JSONL topics record matches on any of its text fields (``alts``: ``question``, ``query``, ...), as the QA tasks
    retrieve with a record's ``query`` when it has one. Ids of the run that the topics lack, and stored texts that
    are not strings, are not compared.

    Raises:
        DataError: a differing text under an automatic id: one line naming the run, the first such id, both texts
            (shortened), how many of the shared ids differ, and what to do.
    """
    shared = [q for q, t in texts.items() if q in queries and isinstance(t, str)]
    differ = [q for q in shared if _question_key(texts[q]) not in
              {_question_key(t) for t in (queries[q], *alts.get(q, ()))}]
    moved = [q for q in differ if q in auto]
    if moved:
        q = moved[0]
        raise DataError(
            f"run {run}: question {q!r} was retrieved for {_shown(texts[q])} but topics {topics!r} give "
            f"{_shown(queries[q])} under that id ({len(differ)} of the {len(shared)} ids they share differ), so it would "
            "be scored against another question's answers (ids q<index> move when a line is added or removed); score "
            "the run with the topics it was retrieved with, or retrieve again with these topics")
    if differ:
        q = differ[0]
        logger.warning(
            "run %s: %d of the %d questions it shares with topics %r were retrieved for other texts than the topics "
            "give under the same ids (first: %r retrieved for %s, topics give %s); scored by id against the topics' "
            "answers, as for rewritten queries: if these ids do not name the same questions, the figures are wrong",
            run, len(differ), len(shared), topics, q, _shown(texts[q]), _shown(queries[q]))


# ----------------------------------------------------------------------------------------------- parsers
def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=None, help="data folder for named corpora/topics (default $TOKRAG_DATA_DIR)")
    p.add_argument("--cache-dir", default=None, help="tokrag cache folder (default $TOKRAG_CACHE_DIR or ~/.cache/tokrag)")
    p.add_argument("--threads", type=int, default=None, help="search/index threads (default: min(2, cpus))")
    p.add_argument("--batch-size", type=int, default=None, help="encoder batch size (dense)")
    p.add_argument("--device", default="cpu", help="torch device for dense encoders (default cpu)")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")


def _add_retriever(p: argparse.ArgumentParser, hybrid: bool = True) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--bm25", dest="retriever", action="store_const", const="bm25", help="BM25 (default)")
    g.add_argument("--dense", dest="retriever", action="store_const", const="dense", help="dense retrieval (FAISS inner product)")
    if hybrid:
        g.add_argument("--hybrid", dest="retriever", action="store_const", const="hybrid", help="BM25 + dense fusion")
        g.add_argument("--dpr", dest="retriever", action="store_const", const="dpr",
                       help="Pyserini's prebuilt DPR FAISS index (with --corpus prebuilt:wikipedia-dpr-100w)")
    p.set_defaults(retriever="bm25")
    p.add_argument("--k1", type=float, default=None, help="BM25 k1 (default 0.9)")
    p.add_argument("--b", type=float, default=None, help="BM25 b (default 0.4)")
    p.add_argument("--encoder", default=None, help="passage encoder: hub id or local folder (default all-MiniLM-L6-v2, offline wheel)")
    p.add_argument("--query-encoder", default=None,
                   help="query encoder if different. DPR: --encoder-class dpr --encoder facebook/dpr-ctx_encoder-single-nq-base "
                        "--query-encoder facebook/dpr-question_encoder-single-nq-base (hub ids need the internet; local folders work offline)")
    p.add_argument("--encoder-class", choices=("auto", "dpr"), default=None, help="'auto' (any HF encoder) or 'dpr'")
    p.add_argument("--pooling", choices=("mean", "cls"), default=None, help="pooling for 'auto' encoders (default mean)")
    p.add_argument("--no-l2-norm", action="store_true", help="do not L2-normalise 'auto' embeddings")
    p.add_argument("--max-length", type=int, default=None, help="encoder max tokens (default 256)")
    if hybrid:
        p.add_argument("--fusion", choices=("rrf", "weighted"), default=None, help="hybrid fusion (default rrf)")
        p.add_argument("--alpha", type=float, default=None,
                       help="weighted fusion: fused = alpha * BM25 + dense; required for weighted and prebuilt hybrid "
                            "(Pyserini's DPR page: 1.3 NQ, 0.95 WebQ/TriviaQA)")
        p.add_argument("--dense-index", default=None,
                       help="prebuilt DPR index: dpr-multi (default) or dpr-single-nq, or a full Pyserini FAISS index name")
        p.add_argument("--depth", type=int, default=None, help="hybrid: hits per retriever before fusion (local 100, prebuilt 1000)")
        p.add_argument("--dry-run", action="store_true", help="print what a prebuilt corpus and Pyserini topics would download (and sizes) and stop")
        p.add_argument("--rrf-k", type=int, default=None, help="RRF constant (default 60)")
        p.add_argument("--normalization", action="store_true", help="weighted fusion: normalise scores (Pyserini)")
        p.add_argument("--weight-on-dense", action="store_true", help="weighted fusion: alpha weighs the dense score")


def _params(a: argparse.Namespace) -> dict[str, Any]:
    p: dict[str, Any] = {}
    mapping = {"k1": "k1", "b": "b", "encoder": "encoder", "query_encoder": "query_encoder", "encoder_class": "encoder_class",
               "pooling": "pooling", "max_length": "max_length", "fusion": "fusion", "alpha": "alpha", "rrf_k": "rrf_k",
               "dense_index": "dense_index", "depth": "depth"}
    for attr, key in mapping.items():
        v = getattr(a, attr, None)
        if v is not None:
            p[key] = v
    if a.no_l2_norm:
        p["l2_norm"] = False
    if getattr(a, "normalization", False):
        p["normalization"] = True
    if getattr(a, "weight_on_dense", False):
        p["weight_on_dense"] = True
    if a.retriever == "bm25":
        stray = sorted(k for k in p if k not in ("k1", "b"))
        if stray:
            raise ConfigError(f"options {stray} need --dense or --hybrid")
    elif a.retriever in ("dense", "dpr"):
        p = {k: v for k, v in p.items() if k not in ("k1", "b")}
    return p


def _index_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tokrag index", description="Build a BM25 (Lucene) or dense (FAISS) index of a corpus.")
    sub = ap.add_subparsers(dest="action", required=True)
    b = sub.add_parser("build", help="build an index (reused when it already exists for this corpus)",
                       description="Build a BM25 (Lucene, raw stored) or dense (FAISS IndexFlatIP, Pyserini layout) index.")
    b.add_argument("--corpus", required=True, help="corpus file/folder (jsonc, jsonl, dpr-tsv, wiki summaries) or name: nq-wiki-12k, nq-dpr-1k, wiki-vital")
    b.add_argument("--format", default="auto", choices=("auto", "jsonc", "jsonl", "dpr-tsv", "wiki-summaries"), help="corpus format")
    b.add_argument("--index", default=None, help="index folder (default: under the cache, keyed by corpus fingerprint)")
    b.add_argument("--force", action="store_true", help="rebuild even if a matching index exists")
    _add_retriever(b, hybrid=False)
    _add_common(b)
    return ap


def _retrieve_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="tokrag retrieve",
        description="Retrieve passages for a topic set and write a TREC run plus a ctxs JSONL (cached by fingerprint). "
        "'tokrag retrieve eval --help' scores a run.",
    )
    ap.add_argument("--corpus", default=None, help="corpus file/folder or name (nq-wiki-12k, nq-dpr-1k, wiki-vital)")
    ap.add_argument("--index", default=None, help="BM25 index folder, or a Pyserini prebuilt index name when --corpus is not given")
    ap.add_argument("--topics", default=None, help="topics file (TSV/JSONL) or nq-oracle[:N], nq-open[:N], pyserini:NAME (required unless --dry-run)")
    ap.add_argument("--output", default=None, help="TREC run file to write (required unless --dry-run); the ctxs JSONL goes to --output-ctxs, "
                    "how the run was made to OUTPUT.meta.json")
    ap.add_argument("--output-ctxs", default=None, help="ctxs JSONL path (default: OUTPUT with suffix .ctxs.jsonl)")
    ap.add_argument("--hits", type=int, default=100, help="passages per query (k, default 100)")
    ap.add_argument("--exclude-gold", action="store_true", help="never return the topics' gold passages (distractor-only runs)")
    _add_retriever(ap)
    _add_common(ap)
    return ap


EVAL_KS = (1, 5, 20, 100)  # retrieve eval's cut-offs when --k is not given


def _eval_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="tokrag retrieve eval",
        description="Answer recall@k (DPR match), gold-passage@k and MRR of a run; with --expect, retrieve and check "
        "the expected figures of an expectation file (docs/expected/*.yaml, exit status 1 when one is missed).",
    )
    ap.add_argument("--run", default=None, help="ctxs JSONL, also .gz (or a TREC run together with --corpus); with --expect: score this run "
                    "against one --condition instead of retrieving")
    ap.add_argument("--topics", default=None, help="topics with answers/gold ids: nq-oracle[:N], nq-open[:N], pyserini:NAME or a JSONL file "
                    "(not with --expect, whose conditions name theirs)")
    ap.add_argument("--corpus", default=None, help="corpus of the run: needed for a TREC run (passage texts); the topics' "
                    "gold ids are checked against a local one (for a ctxs JSONL run, read only when a gold id is not "
                    "among the run's passages; not with --expect, whose conditions name theirs); a TREC run's "
                    "RUN.meta.json, when tokrag retrieve wrote it with that file, must name the same corpus")
    ap.add_argument("--k", type=int, nargs="+", default=None, help=f"cut-offs (default {' '.join(map(str, EVAL_KS))}; not with --expect, "
                    "whose expected figures name theirs)")
    ap.add_argument("--expect", default=None, help="expectation file: corpus, topics, conditions with expected figures (YAML)")
    ap.add_argument("--condition", action="append", default=None, help="with --expect: check only this condition (repeatable)")
    ap.add_argument("--dry-run", action="store_true", help="with --expect: print what each condition would download and stop")
    ap.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--cache-dir", default=None, help="tokrag cache folder (default $TOKRAG_CACHE_DIR or ~/.cache/tokrag)")
    ap.add_argument("--threads", type=int, default=None, help="search threads (default: min(2, cpus))")
    ap.add_argument("--batch-size", type=int, default=None, help="query encoder batch size (dpr/dense)")
    ap.add_argument("--device", default=None, help="torch device of the query encoder (dpr/dense; default cpu)")
    return ap


# ----------------------------------------------------------------------------------------------- commands
def _check_numbers(a: argparse.Namespace) -> None:
    """Refuse out-of-range numeric options before any work (argparse only checks their type).

    Raises:
        ConfigError: naming the option: --threads, --batch-size, --max-length, --depth or --rrf-k below 1,
            --k1 below 0, --b outside [0, 1] (:func:`retrieval.api.check_numbers`, the check of ``retrieve``'s params).
    """
    from .api import WHOLE_PARAMS, check_numbers  # the library's own check (retrieve, tasks), run before any work

    check_numbers({name: getattr(a, name, None) for name in ("k1", "b", "threads", *WHOLE_PARAMS)},
                  label=lambda name, value: f"--{name.replace('_', '-')} {value}", index=getattr(a, "action", None) == "build")


def _check_corpus_arg(a: argparse.Namespace, leave_out: str | None, prebuilt: bool = True) -> None:
    """Refuse an empty or blank ``--corpus`` (``--corpus ''``, an unset shell variable) before any work, naming the
    option: the library's refusal (:func:`retrieval.corpus.check_corpus_path`) names the task key ``corpus`` and a
    task's default, and ``retrieve eval`` read ``''`` as no corpus given. ``leave_out``: what leaving the option out
    does for this command (None: the option is required); ``prebuilt``: whether ``prebuilt:<index>`` is a
    value to offer (not for ``index build``).

    Raises:
        ConfigError: one line naming ``--corpus`` and what to give.
    """
    from .corpus import NAMED_CORPORA

    corpus = getattr(a, "corpus", None)
    if corpus is not None and not corpus.strip():
        raise ConfigError(f"--corpus {corpus!r} is empty; give a corpus name ({', '.join(NAMED_CORPORA)}), a corpus "
                          f"file or folder path{', or prebuilt:<index>' if prebuilt else ''}"
                          f"{f', or leave --corpus out {leave_out}' if leave_out else ''}")


def _coverage_note(ctxs: dict, queries: dict, topics: str, run: Any, scored: int) -> None:
    """Print a one-line note on stderr when the run and the topics do not hold the same queries: both counts and
    ``scored``, the number of queries the metrics are over (the run's queries with answers or gold ids, the
    ``num_queries`` printed with them). Unknown qids holding a character that does not print (a byte order mark
    in mid-file, a zero-width space) are named with repr(), which shows it."""
    covered = sum(1 for q in ctxs if q in queries)
    extra = len(ctxs) - covered
    if covered < len(queries) or extra:
        msg = f"note: run {run} has {covered} of the {len(queries)} queries of topics {topics!r}"
        if extra:
            msg += f", and {extra} qids that are not in them"
            unknown = [q for q in ctxs if q not in queries]
            odd = [q for q in unknown if not q.isprintable()]  # a byte order mark, a zero-width space: invisible
            if odd:
                msg += f" (with characters that do not print: {_some_qids(odd)})"
        over = "it has" if scored == covered else "of them with answers or gold ids"
        print(msg + f"; the metrics are over the {scored} {over}", file=sys.stderr)


def _some_qids(qids: list[str], shown: int = 3) -> str:
    """The first ``shown`` of ``qids`` as repr()s (a stray byte order mark or space is then visible), and how many
    more: ``"'\\ufeffq1', 'q7' and 4 more"``."""
    head = ", ".join(repr(q) for q in qids[:shown])
    return head + (f" and {len(qids) - shown} more" if len(qids) > shown else "")


def _short_note(ctxs: dict, queries: dict, k: int, retriever: str, source: str, size: int | None = None) -> None:
    """Print one line on stderr when some questions got fewer than ``k`` (``--hits``) passages: how many, and the
    fewest any got (0 for a question with none), in the words of the tasks' warning (``tasks.rag._warn_short``; both count with
    :func:`retrieval.api.short_hits`).

    Args:
        ctxs: the run, ``{qid: [passage, ...]}``; queries: every question searched (``{qid: text}``).
        source: what was searched, as printed (``corpus passages.jsonl``, ``index runs/idx``).
        size: the number of passages searched, when known (a cause when below ``k``).
    """
    from .api import short_hits

    found = short_hits(ctxs, list(queries), k, retriever, size)
    if found is None:
        return
    n_short, total, fewest, cause = found
    print(f"note: {n_short} of {total} questions got fewer than --hits {k} passages from {retriever} over "
          f"{source} (fewest: {fewest}; {cause}); the run holds the passages they have (tasks/README.md, "
          '"Passages per question")', file=sys.stderr)


def _index_build(a: argparse.Namespace) -> int:
    from .corpus import NAMED_CORPORA, load_corpus, named_corpus

    _check_numbers(a)
    _check_corpus_arg(a, None, prebuilt=False)
    corpus = named_corpus(a.corpus, a.data_dir) if a.corpus in NAMED_CORPORA else load_corpus(a.corpus, a.format)
    t0 = time.time()
    if a.retriever == "bm25":
        from .bm25 import build_bm25_index

        if any(getattr(a, x) is not None for x in ("encoder", "query_encoder", "encoder_class", "pooling")):
            raise ConfigError("encoder options need --dense")
        running = []  # whether the Lucene indexing had begun on the helper thread when Ctrl-C came

        def on_helper_thread(call):  # only the indexing step: reuse and folder checks come first, without Java
            running.append(call)
            return _in_helper_thread(call)

        try:
            path = build_bm25_index(corpus, a.index, cache_dir=a.cache_dir, threads=a.threads, force=a.force,
                                    run_java=on_helper_thread)
        except KeyboardInterrupt:
            print("tokrag index build: interrupted; a BM25 index is kept only when complete, so nothing was kept: "
                  "run the same command again", file=sys.stderr, flush=True)
            if not running:
                return 130
            from .errors import die_by

            die_by(signal.SIGINT)  # Lucene may still be indexing on the helper thread: no interpreter shutdown under it
            os._exit(130)  # SIGINT blocked
    else:
        from .dense import DENSE_PARAMS, PART_SIZE, build_dense_index, dense_index_dir

        p = {**DENSE_PARAMS, **{k: v for k, v in _params(a).items() if k in DENSE_PARAMS}}
        try:
            path = build_dense_index(corpus, p, index_dir=a.index, cache_dir=a.cache_dir,
                                     batch_size=a.batch_size or 32, device=a.device, force=a.force)
        except KeyboardInterrupt:
            total = (len(corpus) + PART_SIZE - 1) // PART_SIZE
            try:  # the folder build_dense_index encodes into (its name hashes the encoder weights: memoised)
                target = Path(a.index).expanduser().resolve() if a.index else dense_index_dir(corpus, p, a.cache_dir)
                parts = Path(str(target) + ".partial")
                done = len(list(parts.glob("part-*.npy")))
            except Exception:  # noqa: BLE001 - interrupted before the folder was known: nothing encoded
                done = 0
            kept = (f"{done} of {total} encoded {PART_SIZE:,}-passage parts are kept in {parts}; run the same command "
                    "again to resume from them") if done else (f"no {PART_SIZE:,}-passage part was finished, so "
                                                               "nothing was kept: run the same command again")
            print(f"tokrag index build: interrupted; {kept}", file=sys.stderr)
            return 130
    print(_index_summary(path, t0), file=sys.stderr)
    print(path)
    return 0


def _in_helper_thread(fn, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` run on a helper thread while the main thread waits; returns its value or raises its
    exception. For a long Java call (Lucene indexing): the JVM, started before in the main thread
    (:func:`retrieval.bm25.build_bm25_index`), runs with ``-Xrs`` (``java.py``), so Ctrl-C is Python's
    ``KeyboardInterrupt``, which only the main thread raises, and only between Python steps; pyjnius releases the GIL
    during Java calls, so the waiting main thread raises it at once.

    Raises:
        KeyboardInterrupt: Ctrl-C while waiting; the helper thread may still be running then (end the process:
            :func:`retrieval.errors.die_by`).
    """
    import threading

    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            out["error"] = exc
        finally:
            try:
                import jnius

                jnius.detach()  # a thread that ends attached to the JVM is left dangling there
            except Exception:  # noqa: BLE001 - never attached, or no pyjnius
                pass

    t = threading.Thread(target=run, name="tokrag-index-build", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.2)
    if "error" in out:
        raise out["error"]
    return out["value"]


def _index_summary(path: str | Path, started: float) -> str:
    """One line for ``tokrag index build`` (stderr; the index path alone goes to stdout, for scripts): what the
    folder's ``tokrag_index.json`` says the index holds, and whether this call built it (the time it took) or found
    it built (that file is older than ``started``, this call's start in seconds since the epoch)."""
    from .io import INDEX_META

    meta_file = Path(path) / INDEX_META
    try:
        meta, written = json.loads(meta_file.read_text(encoding="utf-8")), meta_file.stat().st_mtime
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's limit, read as malformed
        meta, written = {}, None
    n = meta.get("num_docs")
    what = f"{meta.get('kind', 'index')} index of {meta.get('corpus_name', '?')}: {n if n is not None else '?'} passages"
    encoder = meta.get("encoder")
    if isinstance(encoder, dict) and encoder.get("encoder"):
        what += f", encoder {encoder['encoder']}"
    if written is not None and written < started:
        return f"{what}; already built, reused (--force rebuilds it)"
    return f"{what}; built in {time.time() - started:.0f} s"


def _same_file(p: Path, q: Path) -> bool:
    """Whether two paths name one file (after resolving links; hard links too when both exist)."""
    if p.resolve() == q.resolve():
        return True
    try:
        return p.exists() and q.exists() and os.path.samefile(p, q)
    except OSError:
        return False


def _meta_beside(trec: Path) -> Path:
    """The metadata file ``tokrag retrieve`` writes beside its TREC run ``trec`` (``run.trec`` ->
    ``run.trec.meta.json``): how the run was made (:func:`_write_outputs`)."""
    return trec.with_name(trec.name + ".meta.json")


def _run_tag(retriever: str, params: Mapping[str, Any] | None, encoder: Mapping[str, Any] | None = None) -> str:
    """The TREC run tag of ``retrieve --output``: ``tokrag-<retriever>-<8 hex>``, the hex a fingerprint of the
    retriever's parameters (defaults filled in, as the run cache keys them) and, for dense retrieval, the encoder's
    identity (name and weights hash); ``--k1 0.9 --b 0.4`` and ``--k1 1.5 --b 0.9`` give other tags, the same
    parameters the same tag whatever the corpus or topics (those are in the ``.meta.json`` beside the run)."""
    from .io import fingerprint

    return f"tokrag-{retriever}-{fingerprint({'params': dict(params or {}), 'encoder': encoder}, 8)}"


def _check_lookup(opt: str, given: Path, path: Path) -> None:
    """Refuse an output ``path`` (``given`` by ``opt``, or a file written beside it) that cannot be created for its
    name: a file or folder name longer than the file system allows (``ENAMETOOLONG``: ``--output`` of 250 characters
    gives a ctxs and a metadata file name over 255; a file name over 241 bytes, a temporary file name
    ``.<name>.<8 hex>.tmp`` over 255, :func:`retrieval.io.write_beside`), also in folders not yet created (their names are checked against
    the nearest existing folder's file system), or a path the system cannot look up for another reason than its
    absence (a folder of it that cannot be searched: ``EACCES``). The checks that follow (``Path.is_dir``) and the
    writes raised them as a traceback, a name too long in a new folder only after the search.

    Raises:
        ConfigError: ``{opt} {given}: a name of 257 bytes, more than the 255 its file system allows ([Errno 36] File
            name too long); give a shorter path`` (naming ``path`` too when it is a file written beside ``given``).
    """
    from .io import name_too_long

    beside = "" if path == given else f" ({path.name}, written beside it)"
    told = name_too_long(path)
    if told is not None:
        raise ConfigError(f"{opt} {given}{beside}: {told}; give a shorter path")
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # absent (created by the write), or below a file (checked later)
        pass
    except OSError as exc:
        raise ConfigError(f"{opt} {given}{beside}: cannot be written ([Errno {exc.errno}] {exc.strerror}); give "
                          "another path") from None


_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zip")
"""Name endings of compressed files: ``retrieve`` writes plain text; ``retrieve eval`` reads a ``.gz`` name as gzip
and decompresses no other of them."""


def _check_output_kinds(out: Path, ctxs_out: Path, ctxs_given: bool) -> None:
    """Refuse output names that ``retrieve eval`` (:func:`retrieval.cache.is_ctxs_file`, :func:`retrieval.io.open_data`)
    would read as another kind of file than ``retrieve`` writes there: a compressed name (``run.trec.gz``: the plain
    text written was then refused as "the gzip file is truncated or corrupt"; ``.bz2``/``.xz``/``.zst``/``.zip``,
    which eval reads as plain text but tokrag decompresses nowhere, so the name only misleads), a TREC run named
    ``.jsonl``/``.json`` (read as a ctxs run: "malformed JSON") and a ctxs JSONL named ``.trec``/``.txt`` (read as a
    TREC run: "rank ... is not an integer"). Without ``--output-ctxs`` the ctxs name is derived from ``--output``, so
    only ``--output`` is named.

    Raises:
        ConfigError: one line naming the option, the path and a name to give instead.
    """
    from .cache import CTXS_RUN_ENDINGS, TREC_RUN_ENDINGS

    for opt, path, kind, wrong, example in (
            ("--output", out, "the TREC run", CTXS_RUN_ENDINGS, ".trec"),  # the endings eval reads as the other kind
            ("--output-ctxs", ctxs_out, "the ctxs JSON Lines", TREC_RUN_ENDINGS, ".ctxs.jsonl")):
        if opt == "--output-ctxs" and not ctxs_given:
            continue
        name = path.name.lower()
        packed = next((z for z in _COMPRESSED if name.endswith(z)), None)
        if packed:
            plain = path.with_name(path.name[:-len(packed)] or "run" + example)
            if packed == ".gz":
                raise ConfigError(f"{opt} {path}: a .gz name, but tokrag retrieve writes {kind} as plain text "
                                  f"(retrieve eval would read it as compressed and refuse it); give a name without "
                                  f".gz (e.g. {plain}) and compress the file afterwards if needed")
            raise ConfigError(f"{opt} {path}: a {packed} name, but tokrag retrieve writes {kind} as plain text, and "
                              f"retrieve eval reads gzip (.gz) but no {packed} compression; give a name without "
                              f"{packed} (e.g. {plain}) and gzip the file afterwards if needed")
        if name.endswith(wrong):
            stem = path.name[:path.name.rindex(".")]
            stem = stem[:-len(".ctxs")] if stem.lower().endswith(".ctxs") else stem
            instead = path.with_name(stem + example)
            raise ConfigError(f"{opt} {path}: names {kind}, but retrieve eval reads a name ending in "
                              f"{name[name.rindex('.'):]} as {'a ctxs JSON run' if opt == '--output' else 'a TREC run'}; "
                              f"give it a name such as {instead}"
                              + (f" (the ctxs JSONL goes beside it, {_ctxs_beside(instead)})" if opt == "--output" else ""))


def _output_paths(a: argparse.Namespace, *, create: bool = False) -> tuple[Path, Path]:
    """The TREC run and ctxs JSONL paths of ``retrieve``, checked before any search: each must be a file path
    (not a folder), neither the input topics or corpus file nor the other output (nor the run's metadata file,
    :func:`_meta_beside`), in a folder that exists or can be created, and that can be written. The check creates
    nothing (a failed search leaves no folder); ``create`` makes the missing folders, when the outputs are written.

    Raises:
        ConfigError: naming the option and the path.
    """
    for opt, given in (("--output", a.output), ("--output-ctxs", a.output_ctxs)):
        if given and str(given).endswith(("/", os.sep)) and not Path(given).expanduser().is_dir():
            example = "run.trec" if opt == "--output" else "run.ctxs.jsonl"  # Path() drops the '/': 'out/' was the file out
            raise ConfigError(f"{opt} {given}: ends with '/', so it names a folder; give a file path (e.g. {given}{example})")
    out = Path(a.output).expanduser()
    ctxs_out = (Path(a.output_ctxs).expanduser() if a.output_ctxs
                else _ctxs_beside(out))
    meta = _meta_beside(out)
    for opt, given, path in (("--output", out, out), ("--output-ctxs", ctxs_out, ctxs_out) if a.output_ctxs
                             else ("--output", out, ctxs_out), ("--output", out, meta)):
        _check_lookup(opt, given, path)
    if _same_file(out, ctxs_out):
        raise ConfigError(f"--output-ctxs {ctxs_out}: is the same file as --output (the ctxs would overwrite the run); give two different paths")
    if _same_file(ctxs_out, meta):
        raise ConfigError(f"--output-ctxs {ctxs_out}: is the file the run's metadata goes to (--output with suffix .meta.json); give another path")
    if _same_file(out, meta):  # a link: the outputs are written through links (retrieval.io.write_target)
        raise ConfigError(f"--output {out}: {meta}, where the run's metadata goes, is a link to the --output file (the "
                          "metadata would overwrite the run); remove the link or give another --output")
    if meta.is_dir():
        raise ConfigError(f"--output {out}: {meta}, where the run's metadata goes, is a folder; remove it or give another --output")
    if meta.exists() and not meta.is_file():  # a link to /dev/null: the rename would replace the device (write_beside)
        raise ConfigError(f"--output {out}: {meta}, where the run's metadata goes, is {_file_kind(meta)}"
                          f"{' (through a link)' if meta.is_symlink() else ''}, not a regular file; it is written to a "
                          "temporary file renamed over it, which would replace it: remove it or give another --output")
    inputs = [(opt, Path(v).expanduser()) for opt, v in (("--topics", getattr(a, "topics", None)), ("--corpus", getattr(a, "corpus", None)))
              if v and Path(v).expanduser().is_file()]
    for in_opt, q in inputs:
        if _same_file(meta, q):
            raise ConfigError(f"--output {out}: the run's metadata would go to {meta}, the {in_opt} file, which writing would destroy; give another --output")
    for opt, p in (("--output", out), ("--output-ctxs", ctxs_out)):
        if p.is_dir():
            example = p / ("run.trec" if opt == "--output" else "run.ctxs.jsonl")
            raise ConfigError(f"{opt} {p}: is a folder; give a file path (e.g. {example})")
        for in_opt, q in inputs:
            if _same_file(p, q):
                raise ConfigError(f"{opt} {p}: is the {in_opt} file, which writing would destroy; give another path")
        if create:
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"{opt} {p}: cannot create its folder {p.parent} ({exc.strerror or exc}); give a path you can write to") from None
        else:
            check_writable(p, opt, folder=False)
    if not create:  # written through a link (retrieval.io.write_target): its target's folder, probed before the search
        check_writable(meta, f"--output {out}: the run's metadata file", folder=False)
    return out, ctxs_out


def _write_run_files(out: Path, ctxs_out: Path, tag: str, run_bytes: bytes, ctxs_bytes: bytes,
                     meta: dict[str, Any]) -> None:
    """Write the TREC run ``run_bytes`` to ``out``, the ctxs JSONL ``ctxs_bytes`` to ``ctxs_out`` and ``meta`` (its
    ``output`` entry set here: the files, paths relative to the TREC run's folder, so the record holds when the folder
    is shared, the run tag, their SHA-256 of the bytes written, not read back, and the tokrag commit and changes
    fingerprint of this process, :func:`tokrag_model.provenance.tokrag_tree`, which wrote them) to the ``.meta.json`` beside
    ``out`` (:func:`_meta_beside`).

    The three files cannot be replaced together in one step: all three are first written to temporary files beside
    them (:func:`retrieval.io.write_beside`), so a run stopped or failing while it writes (Ctrl-C, a kill, a full
    disk) leaves the earlier output complete; then an earlier ``.meta.json`` and ctxs JSONL are removed and the three
    renamed in, the metadata last, so a stop between those renames leaves the files of one run only, never the new
    TREC file beside the earlier ctxs or a ``.meta.json`` that describes other files (s50 b2 N3). An output path that
    is a symbolic link is written through, the link kept (:func:`retrieval.io.write_target`); the records name the
    paths as given."""
    from tokrag_model.provenance import tokrag_tree  # the tree this process imported, read once

    from .errors import mark_write
    from .io import sha256_bytes, write_beside, write_target

    meta["output"] = {"run": out.name, "ctxs": os.path.relpath(ctxs_out, out.parent), "tag": tag,
                      "sha256": {"run": sha256_bytes(run_bytes), "ctxs": sha256_bytes(ctxs_bytes)},
                      **tokrag_tree()}
    meta_bytes = (json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in ((out, run_bytes), (ctxs_out, ctxs_bytes), (_meta_beside(out), meta_bytes)):
            staged.append((write_beside(path, data), write_target(path)))
        for old in (_meta_beside(out), ctxs_out):
            try:
                write_target(old).unlink(missing_ok=True)  # a link's target: the link stays, valid again once renamed in
            except OSError as exc:  # a read-only or failing disk, no permission: the commands' one line (s57 f2)
                raise mark_write(exc, old)
        while staged:
            tmp, path = staged[0]
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise mark_write(exc, path)
            staged.pop(0)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)


def _write_outputs(run, a: argparse.Namespace) -> tuple[Path, Path]:
    """Write ``retrieve``'s outputs of the cached ``run`` (all three written before any replaces an earlier one, the
    metadata renamed in last: :func:`_write_run_files`): the TREC run with
    the tag :func:`_run_tag` (the cached file's lines but for the tag), the ctxs JSONL (a copy of the cached one), and
    beside the TREC run its ``.meta.json`` (:func:`_meta_beside`): the run cache's ``meta.json`` (config: this
    request's, ``run.config``, whose corpus file name and encoder names may differ from those of the request that
    computed the cached run; versions, cache key, the ``tokrag_commit`` / ``tokrag_changes`` of the process that computed the run: absent in a run
    cached before they were recorded), its checksums of the cached files moved under ``cache`` (with the cache folder), and ``output``
    (:func:`_write_run_files`). -> (TREC path, ctxs path)."""
    from .cache import trec_lines

    out, ctxs_out = _output_paths(a, create=True)
    try:
        meta = json.loads((Path(run.trec_path).parent / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past Python's limit, read as malformed
        meta = {}
    if not isinstance(meta, dict):
        meta = {}
    config = run.config or meta.get("config") or {}  # this request's names: the cached meta.json may hold those of
    meta["config"] = config  # another request of the same run (a copy of the corpus under another file name)
    meta.setdefault("key", run.fingerprint)
    tag = _run_tag(config.get("retriever", a.retriever), config.get("params"), config.get("encoder"))
    meta["cache"] = {"folder": str(Path(run.trec_path).parent), "sha256": meta.pop("sha256", None)}
    _write_run_files(out, ctxs_out, tag, trec_lines(run.ctxs, tag).encode("utf-8"), Path(run.jsonl_path).read_bytes(),
                     meta)
    return out, ctxs_out


def _retrieve(a: argparse.Namespace) -> int:
    if a.hits < 1:
        raise ConfigError(f"--hits {a.hits}: must be >= 1")
    check_java_int(a.hits, f"--hits {a.hits}")
    _check_numbers(a)
    _check_corpus_arg(a, "and give --index (a BM25 index folder or a Pyserini prebuilt name)")
    params = _params(a)
    prebuilt = a.corpus is not None and a.corpus.startswith("prebuilt:")
    if a.dry_run:  # the run's checks of the options first (its lines, exit 2), then the plan
        _check_index_args(a, prebuilt)
        return _dry_run(a.corpus, a.retriever, params, a.topics)
    if not a.topics or not a.output:
        raise ConfigError("--topics and --output are required (only --dry-run works without them)")
    out, ctxs_out = _output_paths(a)  # a bad --output fails now, not after the search
    from .corpus import resolve_corpus

    local = resolve_corpus(a.corpus, a.data_dir) if a.corpus is not None and not prebuilt else None
    # the gold ids only say what --exclude-gold leaves out: checked against a local corpus then only (topics of
    # another corpus, nq-oracle over wiki-vital, are retrieved as any question set)
    queries, _, gold = load_topics(a.topics, a.data_dir, corpus=local if a.exclude_gold else None)
    _check_output_kinds(out, ctxs_out, bool(a.output_ctxs))  # still before the search; after the inputs' own lines
    _check_index_args(a, prebuilt)
    if a.corpus is None:
        return _retrieve_index_only(a, queries)
    from .api import retrieve

    corpus = a.corpus if prebuilt else local
    runtime = {"progress": True}
    if a.threads:
        runtime["threads"] = a.threads
    if a.batch_size:
        runtime["batch_size"] = a.batch_size
    if a.index:  # with a prebuilt corpus or another retriever: refused by _check_index_args
        runtime["index"] = a.index
    if a.retriever != "bm25":
        runtime["device"] = a.device
    exclude = gold if a.exclude_gold else None
    if a.exclude_gold and not gold:
        raise ConfigError("--exclude-gold needs topics with gold passage ids (e.g. nq-oracle)")
    run = retrieve(corpus, queries, a.retriever, k=a.hits, params={**params, **runtime}, exclude=exclude, cache_dir=a.cache_dir)
    out, ctxs_out = _write_outputs(run, a)
    state = "cache hit" if run.searches == 0 else f"{run.searches} queries searched"
    print(f"{len(queries)} queries, k={a.hits}, {a.retriever} ({state}); run {out}, ctxs {ctxs_out}; fingerprint {run.fingerprint}", file=sys.stderr)
    _short_note(run.ctxs, queries, a.hits, a.retriever, f"corpus {a.corpus}", None if local is None else len(local))
    return 0


def _pyserini_topics_name(spec: str) -> tuple[str, str]:
    """``pyserini:NAME[:N]`` -> ``(NAME, N or "")``.

    Raises:
        ConfigError: an empty NAME (``pyserini`` or ``pyserini:``), or an N that is not a number of questions.
    """
    tname, _, n = spec.partition(":")[2].partition(":")
    if not tname:
        raise ConfigError(f"--topics {spec!r}: name a Pyserini topic set after 'pyserini:' (e.g. pyserini:dpr-wq-test)")
    if n and not n.isdigit():
        raise ConfigError(f"--topics {spec!r}: the part after the topic name must be a number of questions")
    return tname, n


def _check_index_args(a: argparse.Namespace, prebuilt: bool) -> None:
    """``retrieve``'s refusals of ``--corpus`` / ``--index`` / the retriever together, which read no file: the run's
    (after its topics) and the dry run's (first) lines. ``prebuilt``: ``--corpus`` is a ``prebuilt:`` name.

    Raises:
        ConfigError: no ``--corpus`` with ``--dense``/``--hybrid``/``--dpr`` (only BM25 over ``--index`` is possible
            then), neither ``--corpus`` nor ``--index``, or ``--index`` with a prebuilt corpus or another retriever
            than BM25.
    """
    if a.corpus is None:
        if a.retriever != "bm25":
            raise ConfigError("without --corpus only BM25 over --index is possible; give --corpus for dense/hybrid")
        if not a.index:
            raise ConfigError("give --corpus (a corpus file or name) or --index (an index folder or Pyserini prebuilt name)")
    elif a.index:
        if prebuilt:
            raise ConfigError("--index names a local BM25 index folder; with --corpus prebuilt:NAME Pyserini's own indexes are used")
        if a.retriever != "bm25":
            raise ConfigError("--index names a BM25 (Lucene) index folder; dense indexes live in the cache, keyed by corpus and encoder")


def _check_run_params(corpus: str | None, retriever: str, params: dict[str, Any]) -> None:
    """The checks :func:`retrieval.api.retrieve` makes of ``retriever`` and ``params`` over ``corpus`` (a
    ``prebuilt:`` name, a local corpus name or path, None: ``--index``) before it opens the run cache or starts a
    search, with its lines: the dry run's, which reads no corpus (s60 f2: ``--hybrid --alpha 0.95`` over a local
    corpus, ``--fusion``/``--rrf-k`` over a prebuilt one printed a plan, exit 0, for a run that is refused).

    Raises:
        ConfigError: an unknown retriever; ``dpr`` over a local corpus; any refusal of
            :func:`retrieval.api._resolve_params` (unknown parameters, over a prebuilt corpus ``fusion`` and
            ``rrf_k`` too; a ``k1``/``b``/``alpha`` that is no finite number; a true/false setting it cannot read;
            the ranges; a local weighted hybrid without ``alpha``; a local hybrid's ``fusion`` other than ``rrf`` /
            ``weighted`` or a setting its fusion ignores: :func:`retrieval.hybrid.check_fusion_settings`); and over a
            prebuilt corpus :func:`retrieval.prebuilt.check_params` (a hybrid without ``alpha``).
    """
    from .api import PREBUILT, RETRIEVERS, _resolve_params, check_retriever
    from .errors import unknown_name

    if retriever not in RETRIEVERS:  # an expectation file's condition; the CLI's flags give a known one
        raise ConfigError(unknown_name("retriever", retriever, RETRIEVERS))
    prebuilt = corpus is not None and corpus.startswith(PREBUILT)
    if corpus is None:  # BM25 over --index (_check_index_args): k1 and b, read by Bm25Searcher
        return
    check_retriever(retriever, prebuilt)  # retrieve()'s lines
    p = _resolve_params(retriever, params, prebuilt)[0]
    if prebuilt:
        from .prebuilt import check_params

        check_params(corpus[len(PREBUILT):], retriever, p)  # a hybrid without alpha


def _dry_run(corpus: str | None, retriever: str, params: dict[str, Any], topics: str | None = None,
             expect: bool = False) -> int:
    """Print what retrieval over ``corpus`` with ``topics`` would download (a prebuilt corpus; Pyserini's topic
    sets) and return 0; ``expect``: the topics come from an expectation file (``--topics`` is refused there).
    Nothing is downloaded, no index built, no model loaded.

    Raises:
        ConfigError: what the run would refuse, with its line (exit 2): a malformed ``pyserini:`` topics name, then
            the retriever and its parameters (:func:`_check_run_params`: a local hybrid's ``--alpha`` with RRF
            fusion, ``--fusion``/``--rrf-k`` over a prebuilt corpus, a hybrid without alpha, ...).
    """
    if topics is not None and topics.partition(":")[0] == "pyserini":
        # the topic file is the first download of a real run: offline, its failure is the first error
        _pyserini_topics_name(topics)
    _check_run_params(corpus, retriever, params)  # before any line of the plan: the run refuses it
    if topics is not None and topics.partition(":")[0] == "pyserini":
        local = "in a copy of the expectation file, topics: PATH" if expect else "give a local topics file"
        print(f"topics {topics}: Anserini downloads the topic file on first use (small; needs the internet unless "
              f"downloaded before); offline, {local} (TSV or JSONL with answers)")
    if corpus is None or not corpus.startswith("prebuilt:"):
        print(f"{corpus or '--index'}: a local corpus or index folder: nothing to download")
        return 0
    from .prebuilt import format_plan, known_params
    from .worker import call_java

    p = {**known_params(retriever), **params}
    print(format_plan(call_java("prebuilt_plan", corpus[len("prebuilt:"):], retriever, p)))
    return 0


def _retrieve_index_only(a: argparse.Namespace, queries: dict[str, str]) -> int:
    """BM25 over an index folder or a Pyserini prebuilt index, passages read from the stored raw JSON (not cached); the
    ``.meta.json`` beside the run (:func:`_meta_beside`) records k1, b, the index (and its ``tokrag_index.json``), k,
    the query set, the versions installed and the tokrag tree that computed it (:func:`tokrag_model.provenance.tokrag_tree`)."""
    from .bm25 import Bm25Searcher
    from tokrag_model.provenance import tokrag_tree  # the tree this process imported, read once

    from .cache import _versions, jsonl_lines, trec_lines
    from .io import fingerprint, read_index_meta

    _check_index_args(a, False)  # checked by _retrieve already: another caller gets the same lines
    kw = {"k1": a.k1 if a.k1 is not None else 0.9, "b": a.b if a.b is not None else 0.4}
    looks_like_path = Path(a.index).expanduser().exists() or os.sep in a.index or a.index.startswith(".")
    s = Bm25Searcher(a.index, **kw) if looks_like_path else Bm25Searcher.from_prebuilt(a.index, **kw)
    hits = s.batch_search(queries, k=a.hits, threads=a.threads, progress=True)
    ctxs = {}
    for qid, hs in hits.items():
        rows = []
        for rank, (docid, score) in enumerate(hs, start=1):
            psg = s.passage(docid)
            rows.append({"docid": docid, "title": psg.title, "text": psg.text, "score": float(score), "rank": rank})
        ctxs[qid] = rows
    out, ctxs_out = _output_paths(a, create=True)
    tag = _run_tag("bm25", kw)
    index = {"path": str(s.index_dir), "given": a.index}
    index_meta = read_index_meta(s.index_dir)  # what a tokrag-built index says it holds (a foreign one has none)
    if isinstance(index_meta, dict):
        index["meta"] = index_meta
    config = {"retriever": "bm25", "params": kw, "index": index, "k": a.hits,
              "queries": {"n": len(queries), "fingerprint": fingerprint(list(queries.items()))}}
    fp = fingerprint(ctxs)
    _write_run_files(out, ctxs_out, tag, trec_lines(ctxs, tag).encode("utf-8"), jsonl_lines(ctxs, queries).encode("utf-8"),
                     {"config": config, "versions": _versions(), **tokrag_tree(), "num_queries": len(ctxs),
                      "fingerprint": fp})
    print(f"{len(queries)} queries, k={a.hits}, bm25 over {s.index_dir}; run {out}, ctxs {ctxs_out}; fingerprint {fp}", file=sys.stderr)
    _short_note(ctxs, queries, a.hits, "bm25", f"index {a.index}")
    return 0


def _read_trec(path: Path, corpus) -> dict[str, list[dict]]:
    """A TREC run file (``qid Q0 docid rank score tag`` lines; ``.gz`` decompressed) as ctxs with the corpus's
    passage texts, each question's passages in trec_eval's order: score descending, ties by docid descending (the
    rank column is ignored, as trec_eval ignores it; ``rank`` becomes the position). When the rank column orders a
    question otherwise, one stderr warning says the scores were used.

    A UTF-8 byte order mark at the start of the file (Windows editors write one) is skipped, as the corpus and
    topics readers skip it: it would otherwise be part of the first qid. The rank may be written as a number
    such as ``1.0`` (one stderr warning when a rank is not a whole number: it is ignored anyway).

    Raises:
        DataError: a short line, a rank that is not a number, a score that is not a number (or holds ``_``,
            which Python's float skips but trec_eval's atof stops at: ``1_0`` would be 10 here, 1 there), a
            docid listed twice for one question (both lines named: each copy would count as a rank; trec_eval
            refuses such a run, "duplicate docs", as :func:`retrieval.cache.read_ctxs_jsonl` refuses a ctxs run
            listing a passage twice), a docid not in the corpus, or invalid UTF-8 (file and line named).
    """
    import math

    from .io import BOM, open_data

    ctxs: dict[str, list[dict]] = {}
    listed: dict[tuple[str, str], int] = {}  # (qid, docid) -> its line
    fractional = None  # (line, rank) of the first rank that is not a whole number
    with open_data(path) as f:
        for lineno, raw in enumerate(f, start=1):
            if lineno == 1:
                raw = raw.removeprefix(BOM)
            try:
                parts = raw.decode("utf-8").split()
            except UnicodeDecodeError:
                raise DataError(f"{path}:{lineno}: invalid UTF-8; re-encode the file as UTF-8") from None
            if not parts:
                continue
            if len(parts) < 6:
                raise DataError(f"{path}:{lineno}: expected 'qid Q0 docid rank score tag'")
            qid, _, docid, rank_s, score_s = parts[:5]
            try:  # "1.0" is read too: trec_eval ignores the rank column, and the ranks are renumbered below
                rank = float(rank_s) if "_" not in rank_s else math.nan  # "1_0": see the score
            except ValueError:
                rank = math.nan
            if not math.isfinite(rank):
                raise DataError(f"{path}:{lineno}: rank {rank_s!r} is not an integer (expected 'qid Q0 docid rank score tag')")
            if not rank.is_integer() and fractional is None:
                fractional = (lineno, rank_s)
            if "_" in score_s:  # Python's float reads "1_0" as 10, trec_eval's atof as 1: neither is a guess to make
                raise DataError(f"{path}:{lineno}: score {score_s!r} holds '_', which trec_eval does not read as part "
                                "of a number; write the score without '_' (e.g. 10 or 1.0)")
            try:
                score = float(score_s)
            except ValueError:
                score = math.nan
            if math.isnan(score):
                raise DataError(f"{path}:{lineno}: score {score_s!r} is not a number (expected 'qid Q0 docid rank score tag')")
            if (qid, docid) in listed:  # each copy would count as a rank, as in a ctxs run listing it twice
                raise DataError(f"{path}:{lineno}: question {qid!r} lists docid {docid!r} twice (also line "
                                f"{listed[qid, docid]}); each copy would count as a rank (trec_eval refuses such a run: "
                                "duplicate docs): keep one line, the better-scored")
            listed[qid, docid] = lineno
            if docid not in corpus:
                raise DataError(f"{path}:{lineno}: docid {docid!r} is not in corpus {corpus.name!r}")
            psg = corpus.get(docid)
            ctxs.setdefault(qid, []).append({"docid": docid, "title": psg.title, "text": psg.text, "score": score, "rank": rank})
    if fractional is not None:
        print(f"warning: {path}:{fractional[0]}: rank {fractional[1]!r} is not a whole number; the rank column is "
              "ignored (as trec_eval ignores it), the ranks are numbered from the scores", file=sys.stderr)
    # trec_eval's order: the rank column is ignored, lines are sorted by score descending, ties by docid descending
    reordered = []
    for qid, rows in ctxs.items():
        rows.sort(key=lambda r: (r["score"], r["docid"]), reverse=True)
        if _rank_order_broken([r["rank"] for r in rows]):
            reordered.append(qid)
        for pos, r in enumerate(rows, start=1):
            r["rank"] = pos
    if reordered:
        print(f"warning: {path}: the rank column orders {len(reordered)} of the {len(ctxs)} questions otherwise than the "
              f"scores (first: {reordered[0]!r}); the scores were used, as trec_eval does (score descending, ties by "
              "docid descending)", file=sys.stderr)
    return ctxs


def _rank_order_broken(ranks: list[float]) -> bool:
    """True when ``ranks``, listed in score order, put a strictly larger rank before a smaller one."""
    return any(a > b for a, b in zip(ranks, ranks[1:]))


def _expect(a: argparse.Namespace) -> int:
    """``retrieve eval --expect FILE``: retrieve and check each condition (or --dry-run: print the downloads)."""
    from . import expect
    from .cache import is_ctxs_file, read_ctxs_jsonl
    from .corpus import resolve_corpus

    given = [opt for opt, v in (("--topics", a.topics), ("--k", a.k), ("--corpus", a.corpus)) if v is not None]
    if given:  # each condition names its corpus and topics, its expected figures the cut-offs
        raise ConfigError(f"{', '.join(given)} with --expect: the expectation file sets the corpus, topics and cut-offs "
                          "of each condition; drop them, or score the run without --expect")
    run_path = _run_file(a.run) if a.run else None
    spec = expect.load(a.expect)
    conds = expect.select(spec, a.condition)
    if a.dry_run:
        for c in conds:
            print(f"condition {c['name']}: {c['retriever']} over {c['corpus']}, topics {c['topics']}, k={c['k']}")
            _dry_run(c["corpus"], c["retriever"], c["params"], c["topics"], expect=True)
        return 0
    if a.run:
        if len(conds) != 1:
            raise ConfigError(f"--run with --expect needs one --condition (conditions: {', '.join(c['name'] for c in spec['conditions'])})")
        (c,) = conds
        if not is_ctxs_file(run_path):
            raise ConfigError(f"--run {run_path}: with --expect, give the run's ctxs JSONL (a TREC run holds no passage "
                              "texts; tokrag retrieve writes the ctxs JSONL beside it)")
        _check_ctxs_lines(run_path)
        ctxs, texts = read_ctxs_jsonl(run_path)
        local = None if c["corpus"].startswith("prebuilt:") else (lambda: resolve_corpus(c["corpus"], a.data_dir))
        queries, answers, gold = load_topics(c["topics"], a.data_dir, corpus=local, only=ctxs, present=_run_docids(ctxs),
                                             texts=texts, run=run_path)
        usable = _usable(ctxs, answers, gold, run_path, c["topics"])  # the rule of plain eval
        _coverage_note(ctxs, queries, c["topics"], run_path, _scored(ctxs, *usable))
        _ranking_notes(ctxs, *usable, run_path)
        ks = sorted({int(m.split("@")[1]) for m in c["expected"] if "@" in m}) or [c["k"]]
        answers, gold = expect.figures_over(c, answers, gold)  # the kinds the condition's figures are over
        usable = (usable[0] if answers else {}), (usable[1] if gold else {})
        measured = _metrics(ctxs, answers, gold, usable, ks)
        results = [expect.result(c, measured, len(expect.scorable(queries, answers, gold)), a.run)]
    else:
        runtime: dict[str, Any] = {"progress": True}
        for key in ("threads", "batch_size", "device"):
            if getattr(a, key):
                runtime[key] = getattr(a, key)
        results = expect.check(spec, a.condition, runtime=runtime, data_dir=a.data_dir, cache_dir=a.cache_dir, load_topics=load_topics)
    ok = all(r["ok"] for r in results)
    print(expect.format_results(spec, results), file=sys.stderr if a.json else sys.stdout)
    if a.json:
        print(json.dumps({"expect": spec["path"], "ok": ok, "conditions": results}, sort_keys=True))
    return 0 if ok else 1


NO_GOLD = "or use topics without gold_docids (answer recall only)"  # retrieve eval's other way out of the gold-id check


def _usable(ctxs: dict[str, list[dict]], answers: dict, gold: dict, run: Any, topics: str) -> tuple[dict, dict]:
    """-> (answers, gold ids) that the run's passages let be scored: retrieve eval's one rule, with or without
    --expect. No passage of the run with an id (a ctxs JSONL of another tool holding texts only): gold@k and MRR
    cannot be computed, so no gold ids, and a one-line note on stderr; no passage with a text: the same for answer
    recall. They then print unavailable (:func:`_metrics`), not a false 0. A run in which only some passages have an
    id (or a text) is refused by :func:`retrieval.cache.read_ctxs_jsonl`.

    Raises:
        DataError: neither kind of figure can be scored (run and topics named).
    """
    from .cache import PASSAGE_ID_NAMES

    passages = [c for rows in ctxs.values() for c in rows]
    no_ids = bool(gold) and bool(passages) and not _run_docids(ctxs)
    no_text = bool(answers) and bool(passages) and not any(isinstance(c.get("text"), str) for c in passages)
    if (no_ids or no_text) and (no_ids or not gold) and (no_text or not answers):
        need = [what for what, missing in (("gold@k and MRR need passage ids", no_ids),
                                           ("answer recall needs passage texts", no_text)) if missing]
        raise DataError(f"nothing in {run} can be scored on topics {topics!r}: {' and '.join(need)}, which its passages "
                        "do not have; give each passage its corpus id and text, or score the run's TREC file with --corpus")
    if no_ids:
        print(f"note: no passage in {run} has an id ({PASSAGE_ID_NAMES}), so gold@k and MRR are unavailable; "
              "give each passage its corpus id, or score the run's TREC file with --corpus", file=sys.stderr)
    if no_text:
        print(f"note: no passage in {run} has a 'text', so answer recall is unavailable; give each passage its text, "
              "or score the run's TREC file with --corpus", file=sys.stderr)
    return ({} if no_text else answers), ({} if no_ids else gold)


def _metrics(ctxs: dict, answers: dict, gold: dict, usable: tuple[dict, dict], ks: list[int]) -> dict[str, Any]:
    """:func:`retrieval.metrics.evaluate_run` over the ``usable`` answers and gold ids (:func:`_usable`), in its
    order, with the figures that topics ask for but the run cannot give as None (printed ``unavailable``)."""
    from .metrics import evaluate_run

    m = evaluate_run(ctxs, usable[0] or None, usable[1] or None, ks=ks)
    out: dict[str, Any] = {"num_queries": m["num_queries"]}
    for k in ks:
        for name, asked in ((f"answer_recall@{k}", answers), (f"gold@{k}", gold)):
            if asked:
                out[name] = m.get(name)
    if gold:
        out["mrr"] = m.get("mrr")
    return out


PYSERINI_DPR_JQ = "to_entries[] | {qid: .key, question: .value.question, ctxs: .value.contexts}"
"""The jq program that turns Pyserini's DPR-style run (``convert_trec_run_to_dpr_retrieval_run``: one JSON object
keyed by question id, each ``{question, answers, contexts: [{docid, score, text, has_answer}]}``, pretty-printed) into
the ctxs JSON Lines :func:`retrieval.cache.read_ctxs_jsonl` reads (the list order kept: the ranking)."""


def _check_ctxs_lines(run: Path) -> None:
    """Refuse a ctxs run that is one pretty-printed JSON object (its first non-blank line a lone ``{``), which
    :func:`retrieval.cache.read_ctxs_jsonl` would call "malformed JSON" at line 1 ("fix or remove the line"): Pyserini's
    DPR-style run (its first bytes hold ``"contexts"``) with the jq command that converts it (:data:`PYSERINI_DPR_JQ`),
    any other with ``jq -c .``. Reads the first 4 KiB only.

    Raises:
        DataError: one line naming the file and the command that converts it.
    """
    from .cache import _head
    from .io import jsonl_conversion_command

    head = _head(run)
    if head.split(b"\n", 1)[0].strip() != b"{":
        return
    if b'"contexts"' in head:
        raise DataError(f"{run}: one JSON object keyed by question id (Pyserini's DPR-style run, 'contexts' per "
                        "question), not JSON Lines; convert it to one {qid, question, ctxs} per line: "
                        f"{jsonl_conversion_command(run, program=PYSERINI_DPR_JQ)}")
    raise DataError(f"{run}: a pretty-printed JSON object, not JSON Lines; write one {{qid, ctxs}} object per line "
                    f"(for instance: {jsonl_conversion_command(run, array=False)})")


def _ranking_notes(ctxs: dict[str, list[dict]], answers: dict, gold: dict, run: Any) -> None:
    """One stderr note for the scored questions of the run (those in ``answers`` or ``gold``) with an empty ranking
    (they count as misses at every cut-off). A ranking listing a passage id twice never reaches here: both readers
    refuse it, as trec_eval does (``trec_eval.form_res_rels: duplicate docs``): :func:`_read_trec` and
    :func:`retrieval.cache.read_ctxs_jsonl` (s57; it was a note here, each copy counted as a rank as DPR's
    ``qa_validation`` counts it).

    Raises:
        DataError: every scored question has an empty ranking: nothing to score (the run and the questions named).
    """
    qids = [q for q in ctxs if q in answers or q in gold]
    empty = [q for q in qids if not ctxs[q]]
    if empty:
        named = ", ".join(repr(q) for q in empty[:5]) + (", ..." if len(empty) > 5 else "")
        if len(empty) == len(qids):
            raise DataError(f"every question of {run} has an empty 'ctxs' list ({named}), so there is nothing to score; "
                            "give the questions their passages")
        print(f"note: {len(empty)} of the {len(qids)} questions of {run} have no passages ({named}); they count as "
              "misses at every cut-off", file=sys.stderr)


def _unseen_gold_note(ctxs: dict[str, list[dict]], gold: dict[str, list[str]], run: Any, topics: str) -> None:
    """One stderr note when a ctxs run scored without ``--corpus`` has none of its questions' gold ids among its
    passages (two or more questions with gold ids and a non-empty ranking): gold@k and MRR then print 0 for every
    question, which ids of another corpus or namespace (``wiki:123`` against ``123``) give as well as a bad
    retrieval, and without ``--corpus`` the ids are not checked (:func:`load_topics` checks only ids missing from the
    run, against a corpus given). The figures are printed as computed; the note says how to tell the two apart."""
    scored = [q for q, ids in gold.items() if ids and ctxs.get(q)]
    if len(scored) < 2:
        return
    if any(str(c.get("docid")) in set(map(str, gold[q])) for q in scored for c in ctxs[q] if isinstance(c, dict)):
        return
    first = scored[0]
    print(f"note: none of the gold ids of the {len(scored)} questions of topics {topics!r} with passages is among "
          f"{run}'s passages (first: question {first!r}, gold {gold[first][:3]}, run's top passage "
          f"{ctxs[first][0].get('docid')!r}), so gold@k and MRR are 0; without --corpus the ids are not checked: pass "
          "--corpus (the run's corpus) to check that they name its passages", file=sys.stderr)


def _scored(ctxs: dict, answers: dict, gold: dict) -> int:
    """How many queries of the run the metrics are over: those with answers or gold ids (``num_queries``)."""
    return sum(1 for q in ctxs if q in answers or q in gold)


def _run_docids(ctxs: dict[str, list[dict]]) -> set[str]:
    """The passage ids of a run's ctxs: passages of the corpus the run was retrieved from. A null or empty ``""``
    docid is no id, as :func:`retrieval.cache.read_ctxs_jsonl` reads a passage's id fields."""
    return {str(c["docid"]) for rows in ctxs.values() for c in rows
            if isinstance(c, dict) and c.get("docid") is not None and c["docid"] != ""}


def _run_file(run: str) -> Path:
    """The ``--run`` path of ``retrieve eval`` (with or without --expect), which must be a file of plain text or gzip.

    Raises:
        ConfigError: no such file (a relative path names the working directory).
        DataError: the file is compressed otherwise (bzip2, xz, zstd or zip, told by its first bytes:
            :func:`retrieval.io.other_compression`), e.g. ``run.trec.bz2: a bzip2-compressed file; retrieve eval reads
            plain text or gzip: decompress it (bunzip2) or gzip it``; before, its bytes were read as a run and refused
            as ``run.trec.bz2:1: invalid UTF-8; re-encode the file as UTF-8`` (or a TREC run without --corpus).
    """
    from .corpus import relative_note
    from .io import compressed_file_message, other_compression

    p = Path(run).expanduser()
    if not p.is_file():
        raise ConfigError(f"--run {p}: no such file{relative_note(p)}")
    packed = other_compression(p)
    if packed is not None:
        raise DataError(compressed_file_message(p, *packed, reader="retrieve eval"))
    return p


def _ctxs_beside(trec: Path) -> Path:
    """The ctxs JSONL that ``tokrag retrieve`` writes beside a TREC run ``trec`` by default (:func:`_output_paths`:
    ``run.trec`` -> ``run.ctxs.jsonl``)."""
    return trec.with_name(trec.name.removesuffix(".trec").removesuffix(".txt") + ".ctxs.jsonl")


def _trec_questions(trec: Path, ctxs: dict[str, list[dict]]) -> tuple[dict[str, list[dict]], bool, dict[str, Any]]:
    """-> (ctxs, whether the run's question set is known, the question texts the ctxs JSONL beside it stored). A TREC run has no line for a question without passages,
    so its file alone does not say which questions the run was made for; DPR's top-k accuracy (Karpukhin et al.
    2020, section 5.1) and trec_eval -c count such a question as a miss. ``tokrag retrieve`` writes a row for every
    question, passages or not, in the ctxs JSONL beside the TREC file (:func:`_ctxs_beside`): when that file holds
    the same rankings (the same questions with passages, the same passage ids in the same order), its questions are
    the run's, and those without a TREC line are added with an empty ranking (misses at every cut-off; a stderr note
    says how many). Otherwise (no such file, unreadable, or other rankings) the question set is unknown: ``ctxs``
    unchanged and ``False`` (:func:`_trec_unknown_warning` then says which questions of the topics are left out), and no
    texts (a TREC run holds none: the texts of a file with other rankings say nothing of this run)."""
    from .cache import read_ctxs_jsonl

    beside = _ctxs_beside(trec)
    if not beside.is_file():
        return ctxs, False, {}
    try:
        rows, texts = read_ctxs_jsonl(beside)
    except (DataError, OSError, UnicodeDecodeError):
        return ctxs, False, {}
    same = set(ctxs) <= set(rows) and all(
        [str(c.get("docid")) for c in hits] == [c["docid"] for c in ctxs.get(q, [])] for q, hits in rows.items())
    if not same:
        return ctxs, False, {}
    empty = [q for q in rows if q not in ctxs]
    if empty:
        print(f"note: the run's questions are those of {beside} (written beside {trec.name} by tokrag retrieve, the same "
              f"rankings): {len(empty)} of them have no TREC line ({_some_qids(empty)}), as a question without passages "
              "has none; DPR's top-k accuracy counts them as misses", file=sys.stderr)
    return {q: ctxs.get(q, []) for q in rows}, True, texts


def _trec_unknown_warning(trec: Path, ctxs: dict, answers: dict, gold: dict, topics: str) -> None:
    """One stderr line when a TREC run's question set is unknown (:func:`_trec_questions`) and some questions of
    ``topics`` with answers or gold ids have no line in it: how many, and that the metrics leave them out (the
    same run's ctxs JSONL would count a question retrieved without passages as a miss)."""
    absent = [q for q in {**answers, **gold} if q not in ctxs]
    if absent:
        print(f"WARNING: {len(absent)} of the {len(set(answers) | set(gold))} questions of topics {topics!r} with answers "
              f"or gold ids have no line in {trec} and are excluded from the metrics: a TREC run has no line for a "
              f"question retrieved without passages, and no ctxs JSONL with the same rankings is beside it "
              f"({_ctxs_beside(trec).name}) to tell those from questions the run was not made for; score the ctxs "
              "JSONL that tokrag retrieve wrote with it, which counts them as misses", file=sys.stderr)


def _check_run_corpus(trec: Path, corpus, corpus_arg: str) -> None:
    """Refuse a ``--corpus`` other than the one the TREC run ``trec`` was retrieved from: its passage texts would
    not be the run's, so answer recall would be scored on other texts. The run's corpus is known when ``tokrag
    retrieve`` wrote ``trec``: its ``.meta.json`` (:func:`_meta_beside`) records the corpus fingerprint and the
    SHA-256 of the TREC file it describes. Without that file, with another checksum (the file was changed since)
    or without a corpus fingerprint (a run over a prebuilt index), nothing is checked.

    Raises:
        DataError: the recorded corpus fingerprint differs from ``corpus``'s (both files named).
    """
    from .io import sha256_file

    meta_path = _meta_beside(trec)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        made_from = meta["config"]["corpus"]
        if meta["output"]["sha256"]["run"] != sha256_file(trec):
            return
        fp = made_from["fingerprint"]
        ctxs_name = meta["output"].get("ctxs") or _ctxs_beside(trec).name
    except (OSError, ValueError, RecursionError, KeyError, TypeError, AttributeError):  # RecursionError: as malformed
        return
    if isinstance(fp, str) and fp != corpus.fingerprint:
        raise DataError(f"--run {trec} was retrieved from corpus {made_from.get('name')!r} (fingerprint {fp}, recorded in "
                        f"{meta_path.name}) but --corpus {corpus_arg} has fingerprint {corpus.fingerprint}, so its passage "
                        "texts are not the run's; pass the corpus the run was made from, or score the ctxs JSONL written "
                        f"with the run ({ctxs_name}) instead")


def _trec_needs_corpus(trec: Path) -> str:
    """The one line for a TREC run ``trec`` given to ``retrieve eval`` without ``--corpus``: a TREC run holds passage
    ids, not texts, so answer recall needs the corpus. It names what scores the run, only where the ``.meta.json``
    beside it (:func:`_meta_beside`) describes this run (the run's SHA-256 matches, as :func:`_check_run_corpus`
    checks): the corpus it records (a prebuilt one is named as not local: ``--corpus prebuilt:...`` is refused for a
    TREC run), and the ctxs JSONL it records (``output.ctxs``, relative to the run's folder), which carries the
    passages, when that file still holds the recorded SHA-256. A ctxs file that is not the run's (another run's
    left beside it, a run written with ``--output-ctxs`` elsewhere, or a TREC file edited since) scores other
    rankings, so it is not named. It said only "a TREC run needs --corpus to score answer recall (passage texts)"
    after ``tokrag retrieve ... --output myruns/bm25.trec`` had written ``myruns/bm25.ctxs.jsonl`` beside it."""
    import shlex

    from .io import sha256_file

    line = f"--run {trec}: a TREC run needs --corpus to score answer recall (passage texts)"
    meta_path = _meta_beside(trec)
    name = ctxs = None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta["output"]["sha256"]["run"] == sha256_file(trec):  # the metadata describes this run
            name = meta["config"]["corpus"]["name"]
            ctxs = trec.parent / meta["output"]["ctxs"]
            if not (ctxs.is_file() and sha256_file(ctxs) == meta["output"]["sha256"]["ctxs"]):
                ctxs = None
    except (OSError, ValueError, RecursionError, KeyError, TypeError, AttributeError):  # RecursionError: as malformed
        pass
    ctxs_way = f"score the ctxs JSONL written with it (--run {shlex.quote(str(ctxs))}), which carries the passages" if ctxs else ""
    if isinstance(name, str) and name.startswith("prebuilt:"):
        line += (f"; it was retrieved from the prebuilt corpus {name!r} ({meta_path.name}), whose passage texts are not "
                 "local: " + (ctxs_way or "score the ctxs JSONL tokrag retrieve wrote with it, which carries the passages"))
        return line
    if isinstance(name, str) and name.strip():
        line += f"; it was retrieved from corpus {name!r} ({meta_path.name}): pass that corpus as --corpus"
    else:
        line += "; pass the corpus it was retrieved from as --corpus"
    return line + (f", or {ctxs_way}" if ctxs_way else "")


def _eval(a: argparse.Namespace) -> int:
    from .cache import is_ctxs_file, read_ctxs_jsonl
    from .metrics import format_table

    _check_numbers(a)
    _check_corpus_arg(a, "for a ctxs run (it carries its passages)")
    if a.expect:
        return _expect(a)
    if a.condition or a.dry_run:
        raise ConfigError(f"{'--condition' if a.condition else '--dry-run'} needs --expect FILE")
    if not a.run or not a.topics:
        raise ConfigError("--run and --topics are required (or give --expect FILE)")
    from .corpus import NAMED_CORPORA, resolve_corpus, tsv_topics_file

    a.k = a.k or list(EVAL_KS)
    run_path = _run_file(a.run)
    prebuilt = bool(a.corpus) and a.corpus.startswith("prebuilt:")  # its ids cannot be listed: no gold-id check
    if not is_ctxs_file(run_path):
        if not a.corpus:
            raise ConfigError(_trec_needs_corpus(run_path))
        if prebuilt:
            raise ConfigError(f"--corpus {a.corpus}: the passage texts of a TREC run over a prebuilt corpus are not "
                              "local; score the run's ctxs JSONL (written beside it by tokrag retrieve) instead")
        corpus: Any = resolve_corpus(a.corpus, a.data_dir)
        _check_run_corpus(run_path, corpus, a.corpus)
        ctxs, questions_known, texts = _trec_questions(run_path, _read_trec(run_path, corpus))
        present: set[str] = set()
    else:
        questions_known = True  # a ctxs JSONL has a row for every question, one without passages included
        _check_ctxs_lines(run_path)
        ctxs, texts = read_ctxs_jsonl(run_path)
        # the run carries its passages: a gold id among them is a passage; the corpus is read only for the others
        corpus = (lambda: resolve_corpus(a.corpus, a.data_dir)) if a.corpus and not prebuilt else None
        present = _run_docids(ctxs)
        if corpus is not None and a.corpus not in NAMED_CORPORA and not Path(a.corpus).expanduser().exists():
            corpus()  # a --corpus that names nothing is an error even when no gold id needs it (cheap: nothing is read)
    # with --corpus, the gold ids of the run's queries must be passages of it
    queries, answers, gold = load_topics(a.topics, a.data_dir, corpus=corpus, only=ctxs, present=present, also=NO_GOLD,
                                         texts=texts, run=run_path)
    if not answers and not gold:
        if Path(a.topics).expanduser().is_file() and tsv_topics_file(a.topics):
            raise ConfigError(f"--topics {a.topics}: TSV topics (qid<TAB>query) carry no answers or gold ids, so a run "
                              "cannot be scored on them; give the topics as JSONL with 'answers' (and/or 'gold_docids')")
        raise DataError(f"--topics {a.topics}: no query has 'answers' or 'gold_docids', so a run cannot be scored on them; "
                        "give topics with answers (JSONL 'answers', or nq-oracle, nq-open, pyserini:NAME)")
    if not questions_known:
        _trec_unknown_warning(run_path, ctxs, answers, gold, a.topics)
    answers = {q: v for q, v in answers.items() if q in ctxs}
    gold = {q: v for q, v in gold.items() if q in ctxs}
    usable = _usable(ctxs, answers, gold, run_path, a.topics)  # without ids or texts: unavailable, not a false 0
    _coverage_note(ctxs, queries, a.topics, run_path, _scored(ctxs, *usable))
    if not answers and not gold:
        raise DataError(f"no qid of {run_path} ({_some_qids(list(ctxs))}) has answers or gold ids in topics {a.topics!r}; "
                        "are these the topics the run was made for?")
    if any(k < 1 for k in a.k):
        raise ConfigError(f"--k {a.k}: cut-offs must be >= 1")
    _ranking_notes(ctxs, *usable, run_path)
    if corpus is None and not prebuilt:
        _unseen_gold_note(ctxs, usable[1], run_path, a.topics)
    depth = max((len(v) for v in ctxs.values()), default=0)
    ks = sorted({k for k in a.k if k <= depth} | ({depth} if any(k > depth for k in a.k) and depth else set()))
    if ks != sorted(set(a.k)):
        print(f"note: the run has at most {depth} passages per query; cut-offs above it are reported at @{depth}",
              file=sys.stderr)
    metrics = _metrics(ctxs, answers, gold, usable, ks)
    print(json.dumps(metrics, sort_keys=True) if a.json else format_table(metrics, title=f"{run_path.name} on {a.topics}"))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``tokrag index ...`` / ``tokrag retrieve ...``; ``argv[0]`` is ``index`` or ``retrieve``.
    Ctrl-C is one line on stderr saying what was kept (finished dense-encoding parts, a finished search; nothing
    else) and exit status 130, which the commands (``tokrag``, ``python -m retrieval.cli``) turn into a death by
    SIGINT (:func:`retrieval.errors.die_by`); Ctrl-C during the Lucene indexing of a BM25 build ends the process by
    SIGINT at once (the indexing may still run on its helper thread), even for an in-process caller."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("index", "retrieve"):
        print("usage: tokrag index build ... | tokrag retrieve ... | tokrag retrieve eval ...", file=sys.stderr)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "index":
        a = _index_parser().parse_args(rest)
        logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING)
        try:  # the build's own message for an interrupted BM25 / dense build is in _index_build
            return _index_build(a)
        except KeyboardInterrupt:
            print("tokrag index build: interrupted before the index build began; nothing was kept: run the same "
                  "command again", file=sys.stderr)
            return 130
    if rest and rest[0] == "eval":
        try:
            return _eval(_eval_parser().parse_args(rest[1:]))
        except KeyboardInterrupt:
            print("tokrag retrieve eval: interrupted; nothing was written: run the same command again", file=sys.stderr)
            return 130
    a = _retrieve_parser().parse_args(rest)
    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING)
    try:
        return _retrieve(a)
    except KeyboardInterrupt:  # the retrieval worker process, if started, was killed (worker.JavaWorker.call)
        print("tokrag retrieve: interrupted; a run is cached only when its search is complete (a finished search is "
              "kept, and the same command writes the outputs from it): run the same command again", file=sys.stderr)
        return 130


def _module_main(argv: list[str]) -> int:
    """``python -m retrieval.cli [index|retrieve] ...`` (``retrieve`` when neither is named), as the console entry
    point ``tokrag`` runs it (``tokrag_model.cli:main``): a :class:`TokragError`, or a failed write (a full disk, a
    quota, a file-size limit, a read-only or failing disk, no permission: :func:`retrieval.errors.no_room_line`), is
    one line on stderr, exit status 2."""
    from .errors import TokragError, print_no_room

    cmd = argv[0] if argv and argv[0] in ("index", "retrieve") else "retrieve"
    try:
        return int(main(argv if argv and argv[0] == cmd else [cmd, *argv]) or 0)
    except TokragError as exc:
        print(f"tokrag {cmd}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a failed write (a full disk, read-only, EIO, ...; wrapped or not): the line tokrag prints
        if not print_no_room(exc, f"tokrag {cmd}"):
            raise
        return 2


if __name__ == "__main__":
    from retrieval.errors import command_status

    sys.exit(command_status(_module_main(sys.argv[1:])))
