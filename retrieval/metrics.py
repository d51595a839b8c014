"""Retrieval metrics: DPR answer match, answer recall@k, gold-passage@k, MRR, and a printed table.

* ``has_answer``: DPR's string match (Karpukhin et al. 2020, EMNLP, §5.1 "top-k retrieval accuracy";
  code ``dpr/data/qa_validation.py``): text and answers are NFD-normalised, tokenised with DPR's
  ``SimpleTokenizer`` (letters/numbers/marks runs, or single non-space characters), lower-cased, and an
  answer matches when its token sequence occurs contiguously in the passage. Pyserini's port
  (``pyserini.eval.evaluate_dpr_retrieval``) normalises and tokenises; each text is tokenised once (:func:`_words`)
  and the contiguous match is a substring test, the booleans of Pyserini's ``has_answers``; empty answers never match
  (Pyserini's would match every passage), and a question whose answers are all blank is refused (:func:`_scorable`).
* answer recall@k: the fraction of queries with at least one of the top-k passages containing an answer.
* gold-passage@k: the fraction of queries with a known gold docid among the top k.
* MRR: mean over queries of 1/rank of the first relevant passage (0 when none within the run depth).

Each figure is over the queries of the run that have at least one answer (answer recall) or gold id (gold@k, MRR):
a query whose list is empty is skipped, not counted a miss, as ``tokrag retrieve eval`` does (it reads such a
question as having none). An entry must be a list (or other sequence) of strings, not one string: ``{"q": "p1"}``
is refused (:func:`_scorable`), since its letters would be taken for the ids or answers.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from .errors import ConfigError, DataError, check_k

Ctxs = Mapping[str, Sequence[Mapping[str, Any]]]


@lru_cache(maxsize=1)
def _tokenizer():
    from pyserini.eval.evaluate_dpr_retrieval import SimpleTokenizer

    return SimpleTokenizer()


_SEP = "\0"
"""Between the tokens in :func:`_words`. No token holds it: a token is a run of letters, numbers and marks or one
character outside Unicode's separators and control characters (``SimpleTokenizer``), and NUL is a control character
that lower-casing never makes."""

WORDS_MEMO_BYTES = 64 << 20
"""How much :func:`has_answer` keeps tokenised, the most recently used texts (passages, titles, answers) first: 64 MiB,
counting each text and its tokens (``sys.getsizeof``), so the bound holds whatever the texts' length (a bound of
32,768 texts kept ~190 KiB per 100 kB passage: ~6 GiB at the bound). A text whose own entry is larger than
:data:`WORDS_MEMO_MAX_ENTRY` is tokenised on each call instead. A noise-task load (nq_oracle_bm25_noise60: 2,383
questions over nq-wiki-12k) tokenises 18,702 texts; the 31,248 texts of 13 NQ tasks' loads take 21 MiB as the memo
counts them, so it keeps them all."""

WORDS_MEMO_MAX_ENTRY = 1 << 20
"""The largest entry (a text and its tokens, in bytes) the memo of :func:`has_answer` keeps: 1 MiB, about a 500 kB
English text. A larger one would push out many passages, for a text that few questions share."""

_memo: OrderedDict[str, tuple[str, int]] = OrderedDict()  # text -> (its tokens (:func:`_tokens`), the bytes
# counted for it when it came in), least recently used first: a text's sys.getsizeof grows once some C or Rust
# code reads it as UTF-8 (a tokenizer: its cached UTF-8 copy), so it is not measured again when it leaves
_memo_bytes = 0
_memo_lock = threading.Lock()


def _tokens(text: str) -> str:
    """The tokens of ``text`` as DPR's match sees them (NFD, ``SimpleTokenizer``, lower-cased), each preceded and the
    last also followed by :data:`_SEP` (``"\\0a\\0b\\0"``; ``"\\0"`` for none), so that an answer's token sequence
    occurs contiguously in a passage's exactly when its string occurs in the passage's."""
    from pyserini.eval.evaluate_dpr_retrieval import _normalize

    return _SEP + "".join(w + _SEP for w in _tokenizer().tokenize(_normalize(text)).words(uncased=True))


def _words(text: str) -> str:
    """:func:`_tokens` of ``text``, memoised: a passage is tokenised once, not once per question that sees it (a noise
    draw tests each candidate against each question). The memo holds at most :data:`WORDS_MEMO_BYTES`, the least
    recently used texts leaving first; a text of a larger entry than :data:`WORDS_MEMO_MAX_ENTRY` is not kept."""
    global _memo_bytes
    entry = _memo.get(text)  # without the lock: one dict operation (the GIL's); a text then evicted is not an error
    if entry is not None:
        try:
            _memo.move_to_end(text)
        except KeyError:
            pass
        return entry[0]
    words = _tokens(text)  # TypeError for a text that is not a string, as before (nothing is kept)
    size = sys.getsizeof(text) + sys.getsizeof(words)
    if size > min(WORDS_MEMO_MAX_ENTRY, WORDS_MEMO_BYTES):
        return words
    with _memo_lock:
        if text not in _memo:
            _memo[text] = (words, size)
            _memo_bytes += size
            while _memo_bytes > WORDS_MEMO_BYTES:
                _memo_bytes -= _memo.popitem(last=False)[1][1]
    return words


def _clear_words() -> None:
    """Empty the memo of :func:`_words` (tests, a caller done with a corpus)."""
    global _memo_bytes
    with _memo_lock:
        _memo.clear()
        _memo_bytes = 0


def has_answer(text: str, answers: Iterable[str]) -> bool:
    """True when any non-empty answer occurs in ``text`` under DPR normalisation (module docstring); a string
    ``answers`` is one answer. Pyserini's ``has_answers`` (``regex=False``) gives the same booleans, but tokenises
    ``text`` and the answers again on each call; here each text is tokenised once (:func:`_words`)."""
    if isinstance(answers, str):  # one answer, not its characters
        answers = [answers]
    wanted = [w for w in (_words(a) for a in answers if isinstance(a, str)) if w != _SEP]  # blank answers never match
    if not wanted:
        return False
    words = _words(text)
    return any(w in words for w in wanted)


def answer_tokens(answer: str) -> list[str]:
    """An answer's tokens as DPR's match sees them (NFD, ``SimpleTokenizer``, lower-cased; module docstring). ``[]``
    for a blank answer: spaces, or only characters the tokenizer drops (a zero-width space ``"\\u200b"`` and other
    format or control characters), which Pyserini's ``has_answers`` would find in every passage."""
    from pyserini.eval.evaluate_dpr_retrieval import _normalize

    return _tokenizer().tokenize(_normalize(answer)).words(uncased=True)


def _ctxs(run: Any) -> Ctxs:
    return run.ctxs if hasattr(run, "ctxs") else run


def _scorable(entries: Mapping[str, Any] | None, what: str) -> dict[str, Any]:
    """The queries of ``entries`` (answers or gold ids per query) that can be scored: those with a non-empty list.

    Raises:
        ConfigError: an entry that is a string or bytes (its characters would be read as answers or ids; query named);
            an answer that is not a string (``1990``: :func:`has_answer` never matches it; query named);
            answers that are all blank (``[""]``, ``["\\u200b"]``: no tokens, :func:`answer_tokens`; no answer, yet the
            question was scored; DPR's own match, Pyserini's ``has_answers``, finds an empty answer in every passage;
            query named).
    """
    out: dict[str, Any] = {}
    for qid, v in (entries or {}).items():
        if isinstance(v, (str, bytes)):
            raise ConfigError(f"query {qid!r}: {what} is {v!r}, a single string; give a list, e.g. [{v!r}]")
        if what == "answers" and v is not None and any(not isinstance(a, str) for a in v):
            bad = next(a for a in v if not isinstance(a, str))
            raise ConfigError(f"query {qid!r}: answer {bad!r} is of type {type(bad).__name__}, not a string (it would never "
                              f"match); give it as text, e.g. {str(bad)!r}")
        if what == "answers" and v is not None and len(v) and all(isinstance(a, str) and not answer_tokens(a) for a in v):
            raise ConfigError(f"query {qid!r}: answers {list(v)!r} hold only blank strings; drop the question or give "
                              "its answers")
        if v is not None and len(v):
            out[qid] = v
    return out


def _passage_text(c: Mapping[str, Any], qid: str) -> str:
    """A passage's ``text``: DPR scores the text only, not the title (``dpr/data/qa_validation.py``,
    ``calculate_matches``).

    Raises:
        DataError: no text, or one that is not a string: whether it holds an answer cannot be decided (query named).
    """
    text = c.get("text")
    if not isinstance(text, str):
        got = "no 'text'" if text is None else f"a 'text' of type {type(text).__name__}"
        raise DataError(f"query {qid!r}: a passage has {got}, so answer recall cannot be computed; give each passage "
                        "its text as a string")
    return text


def answer_hits(run: Any, answers: Mapping[str, Sequence[str]], k: int) -> dict[str, bool]:
    """Per query: does the text of one of its top-``k`` passages contain an answer (DPR: the title is not searched)?
    Queries without answers (an empty list) are skipped.

    Raises:
        ConfigError: ``k`` is not an integer >= 1; an entry of ``answers`` that is a string, not a list (query named).
            DataError: a passage without a text (query named).
    """
    check_k(k)
    answers = _scorable(answers, "answers")
    ctxs = _ctxs(run)
    return {
        qid: any(has_answer(_passage_text(c, qid), answers[qid]) for c in ctxs.get(qid, [])[:k])
        for qid in answers
        if qid in ctxs
    }


def answer_recall_at_k(run: Any, answers: Mapping[str, Sequence[str]], k: int) -> float:
    """Answer recall@k (DPR "top-k accuracy") over the queries of ``answers`` present in the run with at least one
    answer (an empty list is skipped, not a miss; 0.0 when there is none).

    Raises:
        ConfigError: ``k`` is not an integer >= 1; an entry of ``answers`` that is a string (query named). DataError: a passage within the top ``k`` of a scored query without
            a text, or with one that is not a string (query named).
    """
    hits = answer_hits(run, answers, k)
    return sum(hits.values()) / len(hits) if hits else 0.0


def _docid(c: Mapping[str, Any], qid: str) -> str:
    """A passage's ``docid`` as a string (an integer 12 is ``"12"``, as gold ids are read from topics).

    Raises:
        DataError: the passage has no ``docid``: whether it is gold cannot be decided (query named).
    """
    d = c.get("docid")
    if d is None or d == "":
        raise DataError(f"query {qid!r}: a passage has no 'docid', so gold@k and MRR cannot be computed; "
                        "give each passage its corpus id")
    return str(d)


def gold_at_k(run: Any, gold: Mapping[str, Sequence[str]], k: int) -> float:
    """Gold-passage@k: fraction of queries (of ``gold``, present in the run, with at least one gold id: an empty list
    is skipped, not a miss) with a gold docid in the top ``k`` (ids compared as strings; 0.0 when no such query).

    Raises:
        ConfigError: ``k`` is not an integer >= 1; an entry of ``gold`` that is a string (query named). DataError: a passage within the top ``k`` of a scored query without
            a ``docid``, so whether it is gold cannot be decided (query named).
    """
    check_k(k)
    gold = _scorable(gold, "gold")
    ctxs = _ctxs(run)
    qids = [q for q in gold if q in ctxs]
    if not qids:
        return 0.0
    return sum(any(_docid(c, q) in {str(g) for g in gold[q]} for c in ctxs[q][:k]) for q in qids) / len(qids)


def mrr(run: Any, gold: Mapping[str, Sequence[str]], k: int | None = None) -> float:
    """Mean reciprocal rank of the first gold docid (within the top ``k`` when given, else the whole run; a query
    without one within it scores 0; a query with an empty gold list is skipped; 0.0 when no query of ``gold`` with
    a gold id is in the run).

    Raises:
        ConfigError: an entry of ``gold`` that is a string (query named); ``k`` given but not an integer >= 1 (as for recall@k and gold@k; ``k=0`` scored the whole
            ranking, ``k=-1`` all but its last passage). DataError: a passage of a scored query, ranked before its
            first gold passage (or with none, within the ranking), without a ``docid`` (query named).
    """
    if k is not None:
        check_k(k, " (or None: the whole ranking)")
    gold = _scorable(gold, "gold")
    ctxs = _ctxs(run)
    qids = [q for q in gold if q in ctxs]
    if not qids:
        return 0.0
    total = 0.0
    for q in qids:
        g = {str(x) for x in gold[q]}
        for i, c in enumerate(ctxs[q] if k is None else ctxs[q][:k], start=1):
            if _docid(c, q) in g:
                total += 1.0 / i
                break
    return total / len(qids)


def evaluate_run(
    run: Any,
    answers: Mapping[str, Sequence[str]] | None = None,
    gold: Mapping[str, Sequence[str]] | None = None,
    ks: Sequence[int] = (1, 5, 10, 20, 100),
) -> dict[str, float | int]:
    """All metrics as a flat dict: ``answer_recall@k``, ``gold@k`` for each k, ``mrr``, and ``num_queries``: the
    number of queries scored (an int), those of the run with answers or gold ids (a query of the run without
    either, one whose lists are empty, or one of ``answers``/``gold`` that the run lacks, is not scored; each figure
    is over the queries with its kind: answer recall over those with answers, gold@k and MRR over those with gold
    ids).

    Raises:
        ConfigError: a cut-off in ``ks`` that is not an integer >= 1; an entry of ``answers`` or ``gold`` that is a
            string, not a list (query named). DataError: with ``answers``, a passage without a
            text; with ``gold``, one without a ``docid`` (:func:`answer_recall_at_k`, :func:`gold_at_k`, :func:`mrr`;
            ``tokrag retrieve eval`` prints such figures unavailable instead, for a run where no passage has one).
    """
    answers, gold = _scorable(answers, "answers"), _scorable(gold, "gold")
    ctxs = _ctxs(run)
    scored = {q for q in (answers or {}) if q in ctxs} | {q for q in (gold or {}) if q in ctxs}
    out: dict[str, float | int] = {"num_queries": len(scored)}
    for k in ks:
        if answers:
            out[f"answer_recall@{k}"] = answer_recall_at_k(run, answers, k)
        if gold:
            out[f"gold@{k}"] = gold_at_k(run, gold, k)
    if gold:
        out["mrr"] = mrr(run, gold)
    return out


def format_table(metrics: Mapping[str, float | None], title: str = "retrieval") -> str:
    """A plain-text two-column table of ``metrics`` (4 decimals; None prints ``unavailable``)."""
    width = max([len(k) for k in metrics] + [6])
    lines = [f"{title}", f"{'metric':<{width}}  value", f"{'-' * width}  ------"]
    for k, v in metrics.items():
        value = "unavailable" if v is None else int(v) if k == "num_queries" else f"{v:.4f}"
        lines.append(f"{k:<{width}}  {value}")
    return "\n".join(lines)
