"""Build the docs of the retrieval-augmented QA tasks: question rows + ``ctxs`` from the run cache.

Every model on a task sees the same passages because retrieval happens here, once, through
:func:`retrieval.retrieve` (a cached TREC run keyed by corpus, queries, retriever and parameters), and
the passages travel inside the doc as ``doc["ctxs"]``. Each doc carries::

    qid, question, answers, gold_docids, ctxs=[{docid, title, text, score, rank, source}],
    run_fingerprint, counterfactual_answer, scored_by

``source`` is ``"retrieved"``, ``"gold"``, ``"noise"`` or ``"counterfactual"``; ``score`` is the
retriever's score of that passage for that question, for every passage: the run's score for retrieved
passages, and for the inserted ones (gold, noise, counterfactual) the score the same retriever, index and
parameters give them (:func:`retrieval.score_passages`; hybrid: the fused score), so no score tells an
inserted passage from a retrieved one (issue 11.1). ``scored_by`` names the scale
(:func:`retrieval.score_label`: ``bm25``, ``dense`` (cosines), ``dense-ip`` (raw inner products), ``dpr``, ``hybrid-rrf``,
``hybrid-weighted``); REPLUG reads its temperature from it. Gold-only tasks score their passage with
``retriever`` too (default bm25).
``rank`` is the 1-based position shown to the model.

Noise (``noise=f``): :func:`n_noise` of the m passages the question has (m = k unless retrieval
returned fewer): ``round(f * m)`` (half up), but at most ``m - 1`` when ``f < 1``, so a fraction below
1 never replaces every passage a question has (noise 0.5 on a one-passage question replaces none).
They are replaced by passages drawn uniformly from the corpus, excluding the retrieved ones, the gold
passages and any passage whose title or text contains a gold answer (DPR ``has_answer`` over each; the
model is shown both, e.g. ``[Reference]: <title>\n<text>``, so a passage titled "Paris" for the answer
"Paris" is not noise; and, since version 7.0, SQuAD-normalised containment over both, the rule of the QA
metrics: "2.4 million" holds the gold "24"), so the added passages are pure noise. Positions and passages come from ``random.Random`` seeded by SHA-256 of ``(seed, draw id)``
(:func:`draw_id`: the qid; on NQ-oracle the question text, since its qid depends on whether the data folder holds
NQ-open; from version 8.0 of the noise tasks, 9.0 of the counterfactual ones):
the result does not depend on Python's hash seed, the process or where NQ-open comes from, and the levels are nested
(the passages replaced at 20% are also replaced at 40%).

Counterfactual: the gold passage with every occurrence of a gold answer (case-insensitive, whole
words; then every remaining occurrence under SQuAD normalisation, the rule of the QA metrics:
:func:`swap_answer`) replaced by the first gold answer of another question of the same *kind*
(:func:`answer_kind`: ``date`` if the whole answer is a date (a year 1000–2099, a year range, a month with an
optional day and year, after an optional short prefix such as "in" or "mid"), else ``numeric`` if it
is a number (digits or a number word, optionally with a scale word/unit), else ``other``). The
substitute is drawn with the same seeded RNG among questions whose answers do not overlap this
question's answers. Every gold passage in the list is swapped: the gold passage and, from version 9.0, its
whitespace twins (another oracle question's gold passage with the same title and text up to whitespace, a
separate passage of ``nq-wiki-12k``: :func:`tasks.data.load_nq_oracle`; 21 test questions had one left with
the true answer, e.g. nq-dev-1608 "Rio Bravo (film)"). Questions whose gold passage does not literally contain any gold answer cannot
be swapped and are left out of counterfactual tasks (logged with their count; :func:`counterfactual_kept`, which
``tasks.precheck`` also counts for ``--samples``): the question set is the same as before the normalised swap
(version 7.0). A question whose swapped passage still holds a normalised gold answer
(the title's end and the text's start together, or a substitute that forms one) is kept as it is and logged
with its count (one on NQ-oracle with the default seed: nq-dev-3047, "album Ringo. Starr co-wrote").
With ``counterfactual_scope="all"`` (``nq_oracle_bm25_counterfactual_all``) every other attached passage that holds a
gold answer (:func:`holds_gold`: DPR ``has_answer`` over the title or the text, or the metrics' rule over both) is
swapped too, with the same substitute, so no attached passage keeps the true answer (those that still hold one by that
rule are counted in the same WARNING); such docs carry ``cf_swapped``, the number of their swapped passages.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import re
from collections.abc import Iterator, Sequence
from typing import Any

from retrieval.errors import ConfigError, DataError
from retrieval.hybrid import CF_SUFFIX, replaced_docid

from .metrics import normalize_answer

log = logging.getLogger(__name__)

def is_gold_docid(docid: Any, gold: Any) -> bool:
    """Whether a passage's ``docid`` is one of the ``gold`` ids once the counterfactual suffix :data:`CF_SUFFIX` is
    removed (only that suffix: bring-your-own ids may hold '#'): the rule of the ``gold_at_k`` metric
    (:func:`tasks.utils.process_results_qa`) and of the question pages' gold tag (:mod:`leaderboards.page`)."""
    return replaced_docid(str(docid)) in gold

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december")
_YEAR = r"(?:1[0-9]{3}|20[0-9]{2})s?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_ONE_DATE = (rf"(?:(?:{_DAY}\s+)?(?:{_MONTHS})(?:\s+{_DAY})?(?:,?\s+{_YEAR})?"  # June 1, 1969 | 1 June 1969 | June
             rf"|{_YEAR}(?:\s*[-\u2013\u2014/]\s*(?:\d{{2}}|{_YEAR}))?)")  # 1969 | 1990s | 1993-94 | 1780-1830 | 1979/80
_DATE_RE = re.compile(
    r"^(?:(?:in|on|by|since|from|until|till|to|after|before|around|about|circa|c\.|ca\.|early|late|mid-?|the)\s*)*"
    rf"{_ONE_DATE}(?:\s*[-\u2013\u2014]\s*(?:{_ONE_DATE}|present))?[.,;]?$",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    "zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred"
)
_NUMERIC_RE = re.compile(
    rf"^(about |approximately |over |around )?[$£€]?(\d[\d,.\s]*|({_NUMBER_WORDS})([\s-]({_NUMBER_WORDS}))*)"
    r"(\s*(%|percent|thousand|million|billion|trillion|[a-z]{1,12}))?$",
    re.IGNORECASE,
)


def answer_kind(answer: str) -> str:
    """``"date"``, ``"numeric"`` or ``"other"``: the coarse type used to pick counterfactual answers.

    ``date`` only when the whole answer is a date, after an optional short prefix (``in``, ``on``, ``by``, ``since``,
    ``until``, ``till``, ``around``, ``circa``, ``early``, ``late``, ``mid``, ``the``, ...): a year 1000-2099 or its
    decade (``"1990s"``), a year range (``"1993-94"``, ``"1780-1830"``, ``"1979/80"``), a month with an optional day
    and year (``"June 1, 1969"``, ``"1 June 1969"``, ``"mid November"``), or two of these joined by a dash (the
    second may be ``present``). ``"1.5"``, ``"3,000"``, ``"12 million"``, ``"seven"``, ``"30 km"`` -> numeric;
    ``"Paris"``, ``"June Gable"``, ``"The Data Protection Act 1998"`` -> other (until version 6.0 of the
    counterfactual tasks any month word or year anywhere made a date).
    """
    text = answer.strip()
    if _DATE_RE.match(text):
        return "date"
    if _NUMERIC_RE.match(text):
        return "numeric"
    return "other"


def _rng(seed: int, *parts: Any) -> random.Random:
    key = ":".join(str(p) for p in (seed, *parts)).encode("utf-8")
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def n_noise(fraction: float, k: int) -> int:
    """How many of a question's ``k`` passages a noise fraction replaces.

    ``floor(fraction * k + 0.5)`` (round half up), capped at ``k - 1`` when ``fraction < 1``: a fraction below 1
    always leaves at least one of the question's own passages, and only ``fraction = 1`` replaces all of them.
    ``k`` is the number of passages the question actually has (fewer than the task's ``hits`` when BM25 finds
    fewer): ``n_noise(0.5, 1) == 0`` (not 1: 100% noise), ``n_noise(0.5, 2) == 1``, ``n_noise(0.4, 5) == 2``,
    ``n_noise(0.9, 5) == 4``, ``n_noise(1.0, 1) == 1``. The count never decreases with ``fraction``, so levels
    stay nested.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ConfigError(f"noise={fraction!r}: the noise fraction must be in [0, 1] (e.g. 0.2 for *_noise20)")
    n = int(fraction * k + 0.5 + 1e-9)
    return n if fraction >= 1.0 else min(n, max(k - 1, 0))


def _ctx(p: Any, *, rank: int, source: str, score: float | None = None) -> dict:
    return {"docid": str(p.docid), "title": str(p.title), "text": str(p.text), "score": score,
            "rank": rank, "source": source}


def draw_id(dataset: str, row: dict) -> str:
    """The id that seeds a question's noise and counterfactual draws (:func:`add_noise`, :func:`pick_substitute`).

    ``nq_oracle``: ``"nq-oracle-question:" + question.strip()``. The oracle row's qid is its NQ-open index only when
    the data folder holds ``nq_open/NQ-open.dev.jsonl`` (else ``nq-oracle-<row>``, :func:`tasks.data.load_nq_oracle`),
    and NQ-open may come from the hub; the question text is in the oracle file of every setup (its 2,655 questions are
    distinct), and like the splits (:func:`tasks.data.qa_split_of`) it stays the same in a reordered or cut copy of the
    file. Every other data set: the qid, which is the same with the local file and from the hub.
    """
    if dataset == "nq_oracle":
        return "nq-oracle-question:" + str(row["question"]).strip()
    return str(row["qid"])


def add_noise(ctxs: list[dict], corpus: Any, qid: str, answers: Sequence[str], gold_docids: Sequence[str],
              fraction: float, seed: int, *, draw_key: str | None = None) -> list[dict]:
    """Replace ``n_noise(fraction, len(ctxs))`` passages of ``ctxs`` by random passages of ``corpus``: the count
    follows the passages the question has, not the task's ``hits`` (a one-passage question keeps its passage
    at any fraction below 1).

    Args:
        ctxs: the retrieved passages (list of ctx dicts, rank order); not modified.
        corpus: a :class:`retrieval.Corpus` (ordered; indexable via ``corpus.passages`` or iteration).
        qid, seed: seed the RNG (SHA-256 of ``(seed, "noise", qid)``); same inputs give the same output.
        draw_key: seeds the RNG in place of ``qid`` when given (:func:`build_qa_docs` passes :func:`draw_id`);
            ``qid`` still names the question in errors.
    Returns:
        a new list, same length; replaced entries have ``source="noise"`` and ``score=None`` (filled in
        by :func:`build_qa_docs` with the retriever's score).
    Raises:
        ConfigError: fraction outside [0, 1], or a corpus too small to draw the noise passages from.
    """
    n = n_noise(fraction, len(ctxs))
    if n == 0:
        return [dict(c) for c in ctxs]
    rng = _rng(seed, "noise", qid if draw_key is None else draw_key)
    order = list(range(len(ctxs)))
    rng.shuffle(order)
    passages = _passages(corpus)
    banned = {c["docid"] for c in ctxs} | set(gold_docids)
    picked: list[Any] = []
    attempts = 0
    while len(picked) < len(ctxs):  # draw a fixed-length sequence so levels are nested
        attempts += 1
        if attempts > 200 * len(ctxs) + 1000:
            raise ConfigError(f"corpus {getattr(corpus, 'source', None) or getattr(corpus, 'name', None) or '(unnamed)'} has too few passages "
                              f"({len(passages)}) to draw {len(ctxs)} noise passages for question {qid} (none retrieved for "
                              "it, none gold, none whose title or text contains a gold answer): use a larger corpus or a task without noise")
        p = passages[rng.randrange(len(passages))]
        if p.docid in banned or holds_gold(p.title, p.text, answers):
            continue
        banned.add(p.docid)
        picked.append(p)
    out = [dict(c) for c in ctxs]
    for j, pos in enumerate(order[:n]):
        out[pos] = _ctx(picked[j], rank=pos + 1, source="noise")
    return out


def _cf_ctx(docid: str, title: str, text: str) -> dict:
    return {"docid": docid + CF_SUFFIX, "title": title, "text": text, "score": None, "rank": 1, "source": "counterfactual"}


def _passages(corpus: Any) -> list[Any]:
    cached = getattr(corpus, "_tokrag_passage_list", None)
    if cached is not None:
        return cached
    plist = list(getattr(corpus, "passages", None) or corpus)
    try:
        corpus._tokrag_passage_list = plist
    except AttributeError:
        pass
    return plist


def _answer_pattern(answers: Sequence[str]) -> re.Pattern | None:
    alts = sorted({a.strip() for a in answers if a.strip()}, key=len, reverse=True)
    if not alts:
        return None
    body = "|".join(r"\s+".join(re.escape(w) for w in a.split()) for a in alts)
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)


SENTENCE_STOP = frozenset(".!?")
"""Sentence-ending punctuation: a normalised match (:func:`_normalised_spans`) does not run past a piece ending in it."""


def _ends_sentence(piece: str) -> bool:
    """Whether a whitespace-separated piece ends in sentence punctuation (``"Ringo."``, ``'D.C."'``, ``"it)?"``)."""
    from .metrics import _is_punct

    tail = len(piece)
    while tail > 0 and _is_punct(piece[tail - 1]):
        tail -= 1
    return any(ch in SENTENCE_STOP for ch in piece[tail:])


def _stops_inside(answer: str) -> set[int]:
    """Token counts of ``answer``'s normalised words after which one of its own pieces ends a sentence
    (``"Mr. Smith"`` -> ``{1}``): a text may cross such a stop where the answer as written does."""
    stops: set[int] = set()
    count = 0
    pieces = answer.split()
    for k, piece in enumerate(pieces):
        count += len(normalize_answer(piece).split())
        if k < len(pieces) - 1 and _ends_sentence(piece):
            stops.add(count)
    return stops


def _normalised_spans(text: str, golds: Sequence[Sequence[str]],
                      answers: Sequence[str] = ()) -> list[tuple[int, int]]:
    """Character spans of ``text`` whose SQuAD-normalised words (:func:`tasks.metrics.normalize_answer`) are one of
    ``golds`` (each a normalised answer's words), longest first, left to right, without overlaps; a span runs
    from its first to its last whitespace-separated piece, less the punctuation at its two ends.

    A span never runs past a piece that ends in sentence punctuation (:data:`SENTENCE_STOP`), so "album Ringo.
    Starr co-wrote" holds no "Ringo Starr", unless an answer of ``answers`` that normalises to it crosses a stop at
    the same word ("Mr. Smith"). The punctuation ending the last piece is kept in the text (the sentence's own),
    unless such an answer ends with it: the gold "Washington, D.C." takes the whole "D.C." of "Washington D.C. then".
    """
    from .metrics import _is_punct

    toks = [(t, m.start(), m.end(), k, _ends_sentence(m.group()))
            for k, m in enumerate(re.finditer(r"\S+", text)) for t in normalize_answer(m.group()).split()]
    seqs = sorted({tuple(g) for g in golds if g}, key=len, reverse=True)
    written = {g: [a.strip() for a in answers if tuple(normalize_answer(a).split()) == g] for g in seqs}
    allowed = {g: set().union(*(_stops_inside(a) for a in written[g])) for g in seqs}

    def crosses_stop(i: int, g: tuple[str, ...]) -> bool:
        for j in range(i, i + len(g) - 1):  # a stop after the piece of token j, before the piece of the next token
            if toks[j][4] and toks[j][3] != toks[j + 1][3] and (j - i + 1) not in allowed[g]:
                return True
        return False

    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(toks):
        g = next((g for g in seqs if tuple(t[0] for t in toks[i:i + len(g)]) == g and not crosses_stop(i, g)), None)
        if g is None:
            i += 1
            continue
        start, end = toks[i][1], toks[i + len(g) - 1][2]
        piece_end = end
        while start < end and _is_punct(text[start]):
            start += 1
        while end > start and _is_punct(text[end - 1]):
            end -= 1
        tail = text[end:piece_end]
        if tail and any(a.endswith(tail) for a in written[g]):  # the answer's own final punctuation ("D.C.")
            end = piece_end
        if spans and start < spans[-1][1]:  # two matches inside one piece
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        elif start < end:
            spans.append((start, end))
        i += len(g)
    return spans


def holds_normalised_gold(text: str, answers: Sequence[str]) -> bool:
    """Whether ``text`` holds a gold answer under SQuAD normalisation of the whole text, the rule of the QA metrics: the
    normalised answer's words appear as consecutive words of the normalised text (``"A vanishing point"`` in
    "Vanishing point is ...", ``"24"`` in "2.4 million", ``"Ringo Starr"`` in "album Ringo. Starr co-wrote"). Noise
    passages are drawn by this rule (a model that copies "Ringo. Starr" scores EM 1)."""
    words = f" {normalize_answer(text)} "
    return any(g and f" {g} " in words for g in (normalize_answer(a) for a in answers))


def holds_gold(title: str, text: str, answers: Sequence[str]) -> bool:
    """Whether a passage shown to the model as ``title`` and ``text`` holds a gold answer: DPR ``has_answer`` over the
    title or over the text (:func:`retrieval.has_answer`), or the metrics' rule over both together
    (:func:`holds_normalised_gold` of ``title + "\\n" + text``). Noise passages are drawn among passages without one
    (:func:`add_noise`), and ``counterfactual_scope="all"`` swaps every attached passage with one
    (:func:`build_qa_docs`); tasks/README.md, "Noise and counterfactual definitions"."""
    from retrieval import has_answer

    return (has_answer(text, list(answers)) or has_answer(title, list(answers))
            or holds_normalised_gold(f"{title}\n{text}", answers))


def contains_normalised(text: str, answers: Sequence[str]) -> bool:
    """Whether ``text`` holds a gold answer that :func:`swap_answer` replaces: as written (whole word, case ignored), or
    under SQuAD normalisation within a sentence (:func:`_normalised_spans`: ``"A vanishing point"`` in "Vanishing point
    is ...", ``"24"`` in "2.4 million", not ``"Ringo Starr"`` in "album Ringo. Starr co-wrote"). After a swap it is
    False unless the substitute brings an answer back; :func:`holds_normalised_gold` is the metrics' wider rule."""
    pat = _answer_pattern(answers)
    if pat is None:
        return False
    return bool(pat.search(text)) or bool(_normalised_spans(text, [normalize_answer(a).split() for a in answers], answers))


def swap_answer(title: str, text: str, answers: Sequence[str], substitute: str) -> tuple[str, str, int]:
    """Replace every occurrence of any gold answer in ``title`` and ``text`` by ``substitute``.

    First every whole-word, case-insensitive occurrence of an answer as written (longer answers first), then every
    remaining occurrence under SQuAD normalisation (:func:`_normalised_spans`: case, punctuation and articles
    ignored, so ``"A vanishing point"`` replaces "Vanishing point" and ``"The House of Representatives"`` the
    "House of Representatives" of "United States House of Representatives"; the punctuation around it is kept,
    and no occurrence runs past a sentence stop: "album Ringo. Starr co-wrote" keeps its "Ringo. Starr").
    Returns ``(title, text, n_replaced)``.
    """
    pat = _answer_pattern(answers)
    if pat is None:
        return title, text, 0
    golds = [normalize_answer(a).split() for a in answers]
    n = 0
    out = []
    for part in (title, text):
        part, k = pat.subn(lambda _m: substitute, part)
        n += k
        spans = _normalised_spans(part, golds, answers)
        for start, end in reversed(spans):
            part = part[:start] + substitute + part[end:]
        out.append(part)
        n += len(spans)
    return out[0], out[1], n


def substitute_pool(pool: Sequence[tuple[str, str]]) -> dict[str, list[tuple[str, str, str]]]:
    """Bucket ``[(qid, first_answer), ...]`` by :func:`answer_kind`: kind -> sorted unique
    ``(answer, normalised answer, qid of its first question)``."""
    out: dict[str, dict[str, tuple[str, str, str]]] = {}
    for q, a in pool:
        out.setdefault(answer_kind(a), {}).setdefault(a, (a, normalize_answer(a), q))
    return {kind: sorted(d.values()) for kind, d in out.items()}


def pick_substitute(qid: str, answers: Sequence[str], pool: dict[str, list[tuple[str, str, str]]], seed: int, *,
                    draw_key: str | None = None) -> str | None:
    """A counterfactual answer for ``qid``: the first gold answer of another question of the same kind.

    ``pool`` comes from :func:`substitute_pool` over the whole question set (so ``--limit``/``max_docs``
    do not change it). Candidates whose normalised form overlaps (equal, or one contains the other)
    any of ``answers`` are skipped, and so is this question's own answer (by ``qid``): :func:`substitute_candidates`.
    The pick is seeded by SHA-256 of ``(seed, qid)``, or of ``(seed, draw_key)`` when given (:func:`build_qa_docs`
    passes :func:`draw_id`). Returns None when no candidate exists, whatever the seed.
    """
    cands = list(substitute_candidates(qid, answers, pool))
    if not cands:
        return None
    return cands[_rng(seed, "counterfactual", qid if draw_key is None else draw_key).randrange(len(cands))]


def substitute_candidates(qid: str, answers: Sequence[str],
                          pool: dict[str, list[tuple[str, str, str]]]) -> Iterator[str]:
    """The answers :func:`pick_substitute` draws from, lazily, in ``pool`` order: those of the kind of ``answers[0]``
    (:func:`answer_kind`) whose normalised form is not empty and overlaps (equals, contains or is contained in) none of
    ``answers``' normalised forms, from another question than ``qid``. Lazy so that :func:`counterfactual_kept` stops
    at the first (one candidate is enough to keep a question; the seed only chooses among them)."""
    golds = [g for g in (normalize_answer(a) for a in answers) if g]
    for a, na, q in pool.get(answer_kind(answers[0]), []):
        if q == qid or not na:
            continue
        for g in golds:
            if g in na or na in g:  # (na == g implies both)
                break
        else:
            yield a


def counterfactual_pool(data_dir: Any = None, oracle_file: Any = None) -> dict[str, list[tuple[str, str, str]]]:
    """The substitutes of a counterfactual task: :func:`substitute_pool` over every NQ-oracle question
    (:func:`tasks.data.load_nq_oracle` of ``data_dir`` / ``oracle_file``), whatever the task's split and ``max_docs``.

    Raises:
        DataError / ConfigError: :func:`tasks.data.load_nq_oracle`'s, for a missing or damaged oracle file.
    """
    from .data import load_nq_oracle

    return substitute_pool([(r["qid"], r["answers"][0]) for r in load_nq_oracle(data_dir, oracle_file)])


def counterfactual_kept(row: dict, pool: dict[str, list[tuple[str, str, str]]]) -> bool:
    """Whether a counterfactual task keeps the question ``row``: the one keep/skip rule of counterfactual tasks
    (:func:`build_qa_docs` builds a doc for each question it keeps, after it; ``tasks.precheck`` counts them for
    ``--samples`` before the model load).

    Kept when the gold passage (``row["gold"]``: ``title``, ``text``) holds one of ``row["answers"]`` as written (whole
    word, case ignored: :func:`_answer_pattern`, the pattern :func:`swap_answer` replaces first, so at least one
    occurrence is swapped) and ``pool`` (:func:`counterfactual_pool`) holds a substitute for it
    (:func:`substitute_candidates`, then :func:`pick_substitute` returns one). The seed only chooses among the
    substitutes, so the kept questions are the same for every seed. Reads no retrieval and no corpus: the 2,383
    NQ-oracle test questions in 0.2 to 0.3 s on a 2-core machine at load 5 (stopping at the first substitute;
    :func:`pick_substitute` lists them all).
    """
    answers = row["answers"]
    pat = _answer_pattern(answers)
    gold = row["gold"]
    if pat is None or not (pat.search(gold["title"]) or pat.search(gold["text"])):
        return False
    return next(substitute_candidates(row["qid"], answers, pool), None) is not None


QA_DATASETS = ("nq_open", "nq_oracle", "webq")  # plus the families of tasks.sources.FAMILIES and "byo"
CF_SCOPES = ("gold", "all")
"""Values of ``counterfactual_scope`` (:func:`build_qa_docs`): which attached passages a counterfactual task swaps."""


def _load_rows(dataset: str, data_dir: Any, oracle_file: Any, split: str, hub_id: str | None = None,
               hub_split: str | None = None, questions: Any = None) -> list[dict]:
    from . import data
    from .sources import FAMILIES

    if dataset not in QA_DATASETS + tuple(FAMILIES) + ("byo",):
        raise ConfigError(f"dataset={dataset!r}: expected one of {', '.join(QA_DATASETS + tuple(FAMILIES) + ('byo',))}")
    rows = data.load_qa_split(dataset, split, data_dir, oracle_file, hub_id, hub_split=hub_split, questions=questions)
    if dataset == "nq_open":
        gold = data.nq_gold_ids_by_question(data_dir)
        for r in rows:
            r["gold_docids"] = list(gold.get(r["question"], []))
    elif dataset == "webq":
        for r in rows:
            r["gold_docids"] = []
    return rows


def _byo_note(questions: Any, hub_split: str | None, split: str, max_docs: int | None = None) -> list[dict]:
    """Every bring-your-own question (all splits), after one INFO line saying how many went to the dev/few-shot pool
    (and their ids: :func:`_name_ids`) and how many are in the evaluated split (of which ``max_docs`` keeps the first
    N; lm-eval's limit, which the task does not see, scores the first N of the docs). With ``split`` ``all``
    (:data:`tasks.data.ALL_SPLIT`) the line says every question is scored, the pool's too."""
    from .byo import load_questions
    from .data import ALL_SPLIT, qa_split_of

    rows = load_questions(questions, split=hub_split)
    parts = [qa_split_of(r["question"]) for r in rows]
    n_dev, n_shot = parts.count("dev"), parts.count("fewshot")
    n_split = len(rows) if split == ALL_SPLIT else parts.count(split)
    kept = (f", of which max_docs keeps the first {min(int(max_docs), n_split)}" if max_docs not in (None, "", 0)
            else "")
    held = held_out_ids(rows, parts)
    if split == ALL_SPLIT:
        log.info("questions %s: all %d are in split 'all' and scored in file order%s (a limit scores the first N of "
                 "them), the %d of the dev/few-shot pool (%s) too: none is held out (tasks/README.md, \"Splits\")",
                 questions, n_split, kept, n_dev + n_shot, _name_ids(held))
        return rows
    log.info("questions %s: %d of %d held out as the dev/few-shot pool (%s): one question in ten, by hash of its "
             "text, as for every QA task (tasks/README.md, \"Splits\"; the results record their ids: "
             "tokrag_data.questions.held_out); %d are in split %r%s (a limit scores the first N of them)", questions,
             n_dev + n_shot, len(rows), _name_ids(held), n_split, split, kept)
    return rows


HELD_OUT_NAMED = 10
"""How many held-out question ids are named per part (dev, few-shot), in file order, by the INFO line of
:func:`_byo_note` and by a leaderboard report's ``questions.<task>`` contract line
(:func:`leaderboards.report.questions_text`, which imports it: the two name the same ids); more are counted (``and 3
more``). The results record them all (:func:`split_record`), and the report's JSON lists them all."""


def held_out_ids(rows: list[dict], parts: list[str]) -> dict[str, list[str]]:
    """``{"dev": [...], "fewshot": [...]}``: the ids (``qid``) of the bring-your-own questions that
    :func:`tasks.data.qa_split_of` holds out of the test split (by hash of the question text), in file order.
    ``parts``: each row's :func:`tasks.data.qa_split_of`, which both callers have already computed."""
    out: dict[str, list[str]] = {"dev": [], "fewshot": []}
    for r, part in zip(rows, parts, strict=True):
        if part in out:
            out[part].append(str(r["qid"]))
    return out


def _name_ids(held: dict[str, list[str]]) -> str:
    """``1 dev: q06; 2 few-shot: q03, q10`` for the INFO line of :func:`_byo_note`: each part's count and its ids (at
    most :data:`HELD_OUT_NAMED`, then ``and N more``); ``0 few-shot`` when a part has none."""
    parts = []
    for part, label in (("dev", "dev"), ("fewshot", "few-shot")):
        ids = held.get(part) or []
        more = len(ids) - HELD_OUT_NAMED
        parts.append(f"{len(ids)} {label}" + (f": {', '.join(ids[:HELD_OUT_NAMED])}" if ids else "")
                     + (f" and {more} more" if more > 0 else ""))
    return "; ".join(parts)


def split_record(split: str, in_split: int, max_docs: Any, byo_rows: list[dict] | None) -> dict[str, Any]:
    """The results' record of which questions a QA task evaluated (``tokrag_data.questions``, :mod:`tasks.provenance`):
    ``split``, ``in_split`` (its questions, before ``max_docs``), ``max_docs`` (when set) and, for bring-your-own
    questions (``byo_rows``: the file's every question), ``total``, ``dev`` and ``fewshot`` (held out by hash,
    :func:`tasks.data.qa_split_of`) and ``held_out``, their ids (:func:`held_out_ids`: ``{"dev": ["q06"],
    "fewshot": []}``). With ``split`` ``all`` ``in_split`` is ``total``, and ``dev``, ``fewshot`` and ``held_out``
    name the hash pool, scored too. The report's contract says it (``questions.<task>``)."""
    from .data import qa_split_of

    out: dict[str, Any] = {"split": split, "in_split": in_split}
    if max_docs not in (None, "", 0):
        out["max_docs"] = int(max_docs)
    if byo_rows is not None:
        parts = [qa_split_of(r["question"]) for r in byo_rows]
        out.update(total=len(byo_rows), dev=parts.count("dev"), fewshot=parts.count("fewshot"),
                   held_out=held_out_ids(byo_rows, parts))
    return out


def _byo_empty(questions: Any, rows: list[dict], split: str) -> str:
    """The one-line error of a bring-your-own split without questions: where they went and what to do."""
    from .data import qa_split_of

    parts = [qa_split_of(r["question"]) for r in rows]
    n_test, n_dev, n_shot = parts.count("test"), parts.count("dev"), parts.count("fewshot")
    plural = "s" if len(rows) != 1 else ""
    why = (f"dataset 'byo', split {split!r}: no questions: of the {len(rows)} question{plural} in {questions}, "
           f"{n_test} are test, {n_dev} dev and {n_shot} few-shot (one question in ten, by hash of its text, goes to the "
           "dev/few-shot pool; tasks/README.md, 'Splits')")
    if split == "test":
        return (f"{why}, so every one went to the pool; score every question of the file with --metadata "
                "'{\"split\": \"all\"}', or add questions (about nine in ten are scored)"
                + (", or evaluate the dev ones with --metadata '{\"split\": \"dev\"}'" if n_dev else ""))
    return f"{why}; add questions, or evaluate the test ones (drop 'split')"


def _warn_short(ctxs: dict[str, list], rows: list[dict], k: int, retriever: str, corpus: Any, corpus_obj: Any,
                noise: float, label: str) -> None:
    """One WARNING when some questions got fewer than ``k`` (``hits``) passages: how many, and the smallest count."""
    from retrieval.api import short_hits

    found = short_hits(ctxs, [r["qid"] for r in rows], k, retriever, len(corpus_obj) if corpus_obj is not None else None)
    if found is None:
        return
    n_short, total, fewest, cause = found
    log.warning("%s: %d of %d questions got fewer than hits=%d passages from %s over corpus %s (fewest: %d; %s); they are "
                "shown and scored with the passages they have%s (tasks/README.md, \"Passages per question\")",
                label, n_short, total, k, retriever, corpus, fewest, cause,
                ", and noise replaces a share of those" if noise > 0 else "")


def _integral(k: Any) -> bool:
    """Whether ``k`` is a whole number: an integer (numpy's too), or a float or numeric string with no fraction
    (``5.0``, ``"5"``); ``2.5``, ``"2.5"``, nan or inf are not (``int()`` would truncate or fail)."""
    import numbers

    if isinstance(k, numbers.Integral):
        return True
    try:
        return float(k).is_integer()
    except (TypeError, ValueError):
        return False


def check_qa_options(dataset: str, *, retriever: str | None = "bm25", corpus: Any = "nq-wiki-12k", k: Any = 5,
                     noise: Any = 0.0, counterfactual: bool = False, gold_only: bool = False, questions: Any = None,
                     counterfactual_scope: Any = "gold") -> int:
    """The checks of :func:`build_qa_docs` that read no data (also run before the model loads:
    :mod:`tasks.precheck`); returns ``k`` as an int.

    Raises:
        ConfigError: an unknown ``dataset`` or ``retriever`` (:data:`retrieval.api.RETRIEVERS`), ``k`` not an
        integer >= 1, above :data:`retrieval.errors.JAVA_INT_MAX` where the task retrieves (not ``gold_only``; the
        refusal of :func:`retrieval.retrieve`, before the model load) or too large for a float (``10**400``; such a
        ``k`` or a ``noise`` is named by its size, :func:`retrieval.cache._shown_rank`), ``noise`` not a number in
        [0, 1], ``corpus``
        (unless a :class:`retrieval.Corpus`) or ``questions`` not a string (a name or a path),
        counterfactual / gold-only on a data set without gold passages, noise, counterfactual or gold-only over a
        ``prebuilt:`` corpus (the gold passage's id is one of the local corpora's, not of Pyserini's index),
        ``counterfactual_scope`` not one of :data:`CF_SCOPES`, or ``"all"`` without ``counterfactual``.
    """
    from retrieval.api import RETRIEVERS
    from retrieval.errors import JAVA_INT_MAX, unknown_name

    from .sources import FAMILIES

    if dataset not in QA_DATASETS + tuple(FAMILIES) + ("byo",):
        raise ConfigError(f"dataset={dataset!r}: expected one of {', '.join(QA_DATASETS + tuple(FAMILIES) + ('byo',))}")
    if isinstance(k, bool) or not _integral(k):  # True is an int subclass (1 passage); int(2.5) was 2 passages
        raise ConfigError(f"k={k!r}: the number of passages per question must be an integer >= 1")
    k = int(float(k)) if isinstance(k, (str, float)) else int(k)
    from retrieval.cache import _finite, _shown_rank

    if k < 1:  # shown as the rank rule shows it: -10**5000 was a ValueError (Python writes no int past 4300 digits)
        raise ConfigError(f"k={_shown_rank(k)}: the number of passages per question must be >= 1")
    # k: 1000...0 (400 digits) was an OverflowError in n_noise (k * noise); a k the retrieval takes (all but gold-only)
    # above the Java int limit was retrieve's own refusal (retrieval.errors.check_k), after the model load
    if not gold_only and k > JAVA_INT_MAX:
        raise ConfigError(f"k={_shown_rank(k)}: the number of passages per question must be an integer >= 1 and at "
                          f"most {JAVA_INT_MAX} (Lucene and Pyserini take it as a Java int)")
    if not _finite(k):
        raise ConfigError(f"k={_shown_rank(k)}: the number of passages per question must be an integer >= 1 that a "
                          "float holds")
    if (retriever or "bm25") not in RETRIEVERS:
        raise ConfigError(unknown_name("retriever", str(retriever), RETRIEVERS))
    from retrieval.corpus import Corpus

    for name, value in (("corpus", corpus), ("questions", questions)):
        if value is not None and not isinstance(value, (str, os.PathLike)) and not (name == "corpus" and isinstance(value, Corpus)):
            raise ConfigError(f"task metadata {name}={value!r}: expected one {'corpus name or path' if name == 'corpus' else 'file path or hub id'} "
                              "(a string)")
    try:
        noise = float(noise)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int too large for a float (noise: 1000...0)
        shown = _shown_rank(noise) if isinstance(noise, int) and not isinstance(noise, bool) else repr(noise)
        raise ConfigError(f"noise={shown}: the noise fraction must be a number in [0, 1] (e.g. 0.2 for *_noise20)") from None
    n_noise(noise, k)
    if counterfactual_scope not in CF_SCOPES:
        raise ConfigError(f"task metadata counterfactual_scope={counterfactual_scope!r}: expected 'gold' (default: the gold "
                          "passage and its whitespace twins are swapped) or 'all' (every attached passage that holds a gold answer)")
    if counterfactual_scope != "gold" and not counterfactual:
        raise ConfigError(f"task metadata counterfactual_scope={counterfactual_scope!r} needs counterfactual: true "
                          "(e.g. the task nq_oracle_bm25_counterfactual_all)")
    if (counterfactual or gold_only) and dataset != "nq_oracle":
        raise ConfigError(f"dataset={dataset!r}: counterfactual/gold-only tasks need gold passages (dataset nq_oracle)")
    if isinstance(corpus, str) and corpus.startswith("prebuilt:") and (noise > 0 or gold_only or counterfactual):
        raise ConfigError(f"corpus={corpus!r}: noise, counterfactual and gold-only variants draw passages from a local "
                          "corpus (the gold passage is one of its passages); use one")
    return k


def build_qa_docs(
    dataset: str,
    *,
    retriever: str | None = "bm25",
    corpus: str = "nq-wiki-12k",
    k: int = 5,
    noise: float = 0.0,
    counterfactual: bool = False,
    gold_only: bool = False,
    counterfactual_scope: str = "gold",
    seed: int = 1234,
    data_dir: Any = None,
    oracle_file: Any = None,
    split: str = "test",
    max_docs: int | None = None,
    retriever_params: dict | None = None,
    cache_dir: Any = None,
    hub_id: str | None = None,
    hub_split: str | None = None,
    questions: Any = None,
    stats: dict | None = None,
) -> list[dict]:
    """Docs of one QA task: question rows with ``ctxs`` (see the module docstring for the fields).

    Args:
        dataset: ``nq_open`` | ``nq_oracle`` | ``webq``, a family of :data:`tasks.sources.FAMILIES`
            (``triviaqa``, ``squad_open``, ``popqa``, ``kilt_trex``, ...) or ``byo`` (``questions``, :mod:`tasks.byo`).
        retriever: ``bm25`` | ``dense`` | ``hybrid`` | ``dpr``; with ``gold_only`` it only scores the passages.
        corpus: a :func:`retrieval.named_corpus` name (``nq-wiki-12k``; ``nq-dpr-1k`` for tests), a
            corpus file path (any format of :func:`retrieval.load_corpus`) or ``prebuilt:wikipedia-dpr-100w``
            (Pyserini's prebuilt indexes: :mod:`retrieval.prebuilt`; no noise variants).
        k: passages per question (>= 1).
        noise: fraction of the k passages replaced by random corpus passages (0, 0.2, ..., 1).
        counterfactual: put the answer-swapped gold passage in place of the gold passage (at rank 1
            when it was not retrieved); needs gold passages (``nq_oracle``).
        gold_only: ctxs = the gold passage alone (``nq_oracle_gold``); with ``counterfactual`` the
            swapped gold passage alone.
        counterfactual_scope: with ``counterfactual``, which passages are swapped: ``"gold"`` (default) the gold
            passage and its whitespace twins; ``"all"`` also every other attached passage that holds a gold answer
            (:func:`holds_gold`), with the same substitute (:func:`swap_answer`; ``source="counterfactual"``, docid +
            ``#cf``, scored by the retriever like the other inserted passages), and each doc gets ``cf_swapped``: how
            many of its passages are swapped ones (``source="counterfactual"``), the gold one included
            (``nq_oracle_bm25_counterfactual_all``).
        seed: seeds noise and counterfactual draws.
        split: ``test`` (default) | ``dev`` | ``fewshot``: which part of the data set
            (:func:`tasks.data.qa_split_of`; ``dev`` is for tuning and calibration); ``all`` (``byo`` only): every
            question of the file, in file order (:data:`tasks.data.ALL_SPLIT`).
        max_docs: keep only the first N questions of the split (file order) before retrieval.
        hub_id: the data set to read: a local folder in the hub's layout, or a hub dataset id (default
            ``google-research-datasets/nq_open`` / ``stanfordnlp/web_questions`` / the family's). The data folder's
            copy is read only for the default id (or none); another id (a mirror) or a local folder is read as given
            (:func:`tasks.data.explicit_hub_id`, :func:`tasks.sources.own_hub_id`).
        hub_split: the hub split of a family / of ``byo`` questions from the hub (default: the family's).
        questions: ``byo`` only: the questions JSONL file or hub id.
        stats: a dict to fill with what the docs were built from, for the results' provenance (``retrieval``: the
            run's ``retriever``, resolved ``params`` and, for dense retrieval, ``encoder`` names and weights hashes;
            None for gold passages)
            (:mod:`tasks.provenance`): ``corpus`` (the :class:`retrieval.Corpus`; None for ``prebuilt:`` corpora) and
            ``run_fingerprint`` (as every doc's), ``questions`` (:func:`split_record`: the split, its size, the
            held-out counts and ids of bring-your-own questions).
    Raises:
        ConfigError: bad arguments; DataError: degenerate retrieval (``retrieval.check_run_sanity``).
    """
    k = check_qa_options(dataset, retriever=retriever, corpus=corpus, k=k, noise=noise, counterfactual=counterfactual,
                         gold_only=gold_only, questions=questions, counterfactual_scope=counterfactual_scope)
    swap_all = counterfactual_scope == "all"
    retriever = retriever or "bm25"
    noise = float(noise)
    rows = _load_rows(dataset, data_dir, oracle_file, split, hub_id, hub_split, questions)
    byo_rows = _byo_note(questions, hub_split, split, max_docs) if dataset == "byo" else None
    questions_rec = split_record(split, len(rows), max_docs, byo_rows)
    pool = counterfactual_pool(data_dir, oracle_file) if counterfactual else {}
    if max_docs not in (None, "", 0):
        rows = rows[: int(max_docs)]
    if not rows and byo_rows is not None:
        raise DataError(_byo_empty(questions, byo_rows, split))
    if not rows:
        raise DataError(f"dataset {dataset!r}, split {split!r}: no questions (check the data, the split and max_docs)")

    run_fp, retrieval_cfg = "gold", None
    ctxs_of: dict[str, list[dict]] = {}
    from retrieval import check_run_sanity, retrieve, score_label, score_passages

    corpus_obj = None
    prebuilt = isinstance(corpus, str) and corpus.startswith("prebuilt:")
    if prebuilt and dataset != "byo":  # the known gold ids are passages of the local corpora, not of Pyserini's
        for r in rows:
            r["gold_docids"] = []
    if not prebuilt:  # also for gold-only tasks: their passage is scored with this corpus's index
        from retrieval.corpus import resolve_corpus

        corpus_obj = resolve_corpus(corpus, data_dir=data_dir)
        if dataset == "byo":  # every question of the file, whatever the split
            from .byo import check_gold_ids

            check_gold_ids(byo_rows, corpus_obj)
    queries = {r["qid"]: r.get("query") or r["question"] for r in rows}  # "query": a shorter retrieval query (WoW)
    if len(queries) != len(rows):
        raise ConfigError(f"dataset {dataset}: duplicate qids in the question set")
    if not gold_only:
        run = retrieve(corpus if prebuilt else corpus_obj, queries, retriever=retriever, k=k, params=retriever_params,
                       cache_dir=cache_dir)
        if dataset == "byo":  # a user's question that finds nothing: name its line (the guard below names only qids)
            empty = [r for r in rows if not run.ctxs.get(r["qid"])]
            if empty:
                raise DataError(
                    f"{empty[0].get('where', empty[0]['qid'])}: question {empty[0]['question']!r} got no passages from {retriever} "
                    f"over corpus {corpus} ({len(empty)} of {len(rows)} questions got none); BM25 needs a word shared with a "
                    "passage that is not a stop word: rephrase or remove the question, or use rag_qa_dense"
                )
        check_run_sanity(run)
        _warn_short(run.ctxs, rows, k, retriever, corpus, corpus_obj, noise,
                    f"questions {questions}" if dataset == "byo" else f"dataset {dataset!r}")
        run_fp = str(run.fingerprint)
        retrieval_cfg = {key: run.config[key] for key in ("retriever", "params", "encoder") if key in run.config}
        for qid, hits in run.ctxs.items():
            ctxs_of[qid] = [
                {"docid": str(h["docid"]), "title": str(h["title"]), "text": str(h["text"]),
                 "score": None if h.get("score") is None else float(h["score"]), "rank": int(h["rank"]),
                 "source": "retrieved"}
                for h in hits
            ]

    docs: list[dict] = []
    skipped = 0
    cf_left: list[str] = []
    for r in rows:
        qid = r["qid"]
        if gold_only:
            g = r["gold"]
            ctxs = [{"docid": r["gold_docids"][0], "title": g["title"], "text": g["text"], "score": None,
                     "rank": 1, "source": "gold"}]
        else:
            ctxs = list(ctxs_of.get(qid, []))
        cf_answer = None
        key = draw_id(dataset, r)
        if counterfactual:
            if not counterfactual_kept(r, pool):  # the question set (tasks.precheck counts it with the same rule)
                skipped += 1
                continue
            cf_answer = pick_substitute(qid, r["answers"], pool, seed, draw_key=key)
            g = r["gold"]
            new_title, new_text, _ = swap_answer(g["title"], g["text"], r["answers"], cf_answer)
            cf_ctx = _cf_ctx(r["gold_docids"][0], new_title, new_text)
            if not any(c["docid"] in r["gold_docids"] for c in ctxs):
                ctxs = [cf_ctx] + ctxs[: max(0, k - 1)]
            else:  # every gold passage shown is swapped: the gold and its whitespace twins (tasks.data.load_nq_oracle)
                for i, c in enumerate(ctxs):
                    if c["docid"] == r["gold_docids"][0]:
                        ctxs[i] = cf_ctx
                    elif c["docid"] in r["gold_docids"]:
                        ctxs[i] = _cf_ctx(c["docid"], *swap_answer(c["title"], c["text"], r["answers"], cf_answer)[:2])
            if swap_all:  # then every other passage holding a gold answer, with the same substitute
                for i, c in enumerate(ctxs):
                    if c["source"] != "counterfactual" and holds_gold(c["title"], c["text"], r["answers"]):
                        new_title, new_text, n = swap_answer(c["title"], c["text"], r["answers"], cf_answer)
                        if n:  # none replaced (a gold only across a sentence stop): kept, and counted below
                            ctxs[i] = _cf_ctx(c["docid"], new_title, new_text)
            # kept, so every seed has the same questions; the metrics' wider rule also sees a gold across a sentence stop
            if any(contains_normalised(f"{c['title']}\n{c['text']}", r["answers"])
                   or holds_normalised_gold(f"{c['title']}\n{c['text']}", r["answers"])
                   for c in ctxs if c["source"] == "counterfactual") or (
                    swap_all and any(holds_gold(c["title"], c["text"], r["answers"]) for c in ctxs)):
                cf_left.append(qid)
            ctxs = [dict(c, rank=i + 1) for i, c in enumerate(ctxs)]
        if noise > 0:
            ctxs = add_noise(ctxs, corpus_obj, qid, r["answers"], r.get("gold_docids", []), noise, seed, draw_key=key)
        docs.append({
            "qid": qid,
            "question": r["question"],
            "answers": list(r["answers"]),
            "gold_docids": list(r.get("gold_docids", [])),
            "ctxs": ctxs,
            "run_fingerprint": run_fp,
            "counterfactual_answer": cf_answer,
            "scored_by": score_label(retriever, retriever_params, corpus),
            **({"cf_swapped": sum(c["source"] == "counterfactual" for c in ctxs)} if counterfactual and swap_all
               else {}),
        })
    # every attached passage carries the retriever's score for its question (issue 11.1): the inserted
    # ones (gold, noise, counterfactual) are scored by the same retriever, index and parameters
    unscored = {d["qid"]: [c for c in d["ctxs"] if c["score"] is None] for d in docs}
    unscored = {q: v for q, v in unscored.items() if v}
    if unscored:
        scores = score_passages(corpus if prebuilt else corpus_obj, queries, unscored, retriever=retriever, k=k,
                                params=retriever_params, cache_dir=cache_dir)
        for qid, ctxs in unscored.items():
            for c, score in zip(ctxs, scores[qid]):
                c["score"] = float(score)
    if stats is not None:
        stats.update(corpus=corpus_obj, run_fingerprint=run_fp, retrieval=retrieval_cfg, questions=questions_rec)
    if skipped:
        log.warning("%s counterfactual: %d of %d questions left out (no literal gold answer in the gold passage "
                    "or no substitute of the same kind)", dataset, skipped, len(rows))
    if cf_left:
        log.warning("%s counterfactual: %d of %d questions keep a gold answer (SQuAD-normalised) in %s, "
                    "e.g. where the title and text meet, across a sentence stop ('album Ringo. Starr co-wrote') or inside the "
                    "substitute; they are kept, not rebuilt, so every "
                    "method sees the same passages: %s", dataset, len(cf_left), len(rows),
                    "an attached passage" if swap_all else "the swapped passage", ", ".join(cf_left[:10]))
    return docs
