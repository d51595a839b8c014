"""WikiText-103 language modelling with retrieval (``wikitext103_bm25_wiki``): chunks, prefixes, passages.

Windowing (In-Context RALM style: Ram et al., TACL 2023, retrieval every ``s`` tokens with the recent prefix as
query): each article of the WikiText-103 test set (``EleutherAI/wikitext_document_level``,
``wikitext-103-raw-v1``, split ``test``; the raw text with its `` = Heading = `` lines) is cut at word
boundaries into consecutive chunks of ``chunk_words`` (128) whitespace-separated words. A chunk is one doc
scored with ``loglikelihood``: the continuation is the chunk's exact text, from the end of the previous chunk's
last word (the whitespace and newlines before its own first word included) to the end of its own last word (the
last chunk: to the end of the article); the context is the exact text of the ``context_words`` (128) words before
it, up to the end of the last one (at the article start: the article's title line without its trailing
whitespace, which is itself not scored). No context ends in whitespace, so lm-eval's convention of moving a
context's trailing whitespace into the continuation (``hf``'s ``_encode_pair``) moves nothing: each character is
scored once and counted once in the byte and word totals (until version 2.0, the whitespace between two chunks
ended one chunk's target and was scored again at the front of the next, ~1% bits/byte on SmolLM2-135M). The retrieval query is the last
``query_words`` (32) words of the context with the ``=`` heading marks removed, and the top ``k`` (3, the
paper's WikiText depth) passages come from the DPR Wikipedia with BM25; passages whose title is the article's
own title are dropped (the article is in the corpus: leaving it would leak the text), searching ``k + 20`` deep.
Titles are compared by :func:`title_key`: the WikiText title detokenised (lm-eval's ``wikitext_detokenizer``) and
both compared without case, spaces or punctuation, so ``"Meridian , Mississippi"`` drops the passages of
"Meridian, Mississippi" (until version 4.0 only lower-cased titles were compared and the article's own passages
stayed for every title with punctuation).

So the numbers are chunk-level perplexities with a 128-word prefix, not lm-eval's ``wikitext`` (whole
documents with rolling windows over WikiText-2): the two are not comparable.

Metrics (per chunk, aggregated over all chunks as ``exp(-sum ll / sum units)``): ``word_perplexity`` (units:
whitespace-separated words of the chunk), ``byte_perplexity`` (UTF-8 bytes), ``bits_per_byte``
(``-sum ll / sum bytes / ln 2``), and ``token_perplexity`` (units: the model's tokens of the chunk) when the
model reports the token count with the log-likelihood (an ``n_tokens`` attribute on the returned float).
"""

from __future__ import annotations

import re
from typing import Any

from retrieval.errors import ConfigError, DataError

HUB_ID = "EleutherAI/wikitext_document_level"
HUB_CONFIG = "wikitext-103-raw-v1"
HUB_SPLIT = "test"
LOCAL_NAME = "wikitext_document_level"  # a copy in the hub's layout under the data folder
OWN_TITLE_MARGIN = 20
"""Passages retrieved beyond ``k`` per chunk, so that ``k`` remain after the article's own passages are dropped (the
run is cached at depth ``k + OWN_TITLE_MARGIN``)."""
_WORD = re.compile(r"\S+")
_TITLE = re.compile(r"^\s*=\s*([^=\n].*?)\s*=\s*$")


def article_title(page: str) -> str:
    """The title of a raw WikiText article (its first line `` = Title = ``), or "" when it has none."""
    first = page.lstrip("\n").split("\n", 1)[0]
    m = _TITLE.match(first)
    return m.group(1).strip() if m else ""


def title_key(title: str, *, wikitext: bool = False) -> str:
    """A title compared without case, spaces or punctuation: the NFKC case-folded letters and digits of ``title``.

    ``wikitext=True`` first undoes WikiText's tokenisation with lm-eval's own detokeniser
    (``lm_eval.tasks.wikitext.preprocess_wikitext.wikitext_detokenizer``) when it can be imported (the key drops
    punctuation and spaces anyway, so the result is the same without it for titles). So
    ``"Kiss You ( One Direction song )"`` and ``"Kiss You (One Direction song)"``, ``"Ise @-@ class battleship"`` and
    ``"Ise-class battleship"``, ``"2011 – 12 Michigan Wolverines men 's basketball team"`` and
    ``"2011–12 Michigan Wolverines men's basketball team"`` have the same key.
    """
    import unicodedata

    if wikitext:
        try:
            from lm_eval.tasks.wikitext.preprocess_wikitext import wikitext_detokenizer
        except ImportError:  # the key below is punctuation- and space-insensitive without it
            pass
        else:
            title = wikitext_detokenizer({"page": title})
    return "".join(ch for ch in unicodedata.normalize("NFKC", title).casefold() if ch.isalnum())


def chunk_article(page: str, chunk_words: int = 128, context_words: int = 128) -> list[dict[str, str]]:
    """Cut one raw article into ``[{"context", "target"}]`` (module docstring). ``context + target`` is always
    an exact substring of ``page``, no context ends in whitespace, and the targets tile the article from the end of
    its title line's text (the first target starts with the whitespace after the title), so every character after
    the title is scored exactly once.

    Raises:
        ConfigError: chunk_words or context_words < 1.
    """
    if chunk_words < 1 or context_words < 1:
        raise ConfigError(f"chunk_words={chunk_words}, context_words={context_words}: both must be >= 1")
    title = article_title(page)
    body_start = 0
    if title:
        first_nl = page.find("\n", len(page) - len(page.lstrip("\n")))
        body_start = len(page) if first_nl < 0 else first_nl + 1
    words = list(_WORD.finditer(page, body_start))
    starts = [m.start() for m in words]
    # chunk boundaries at word ends: a context never ends in whitespace, which lm-eval's convention (hf's
    # _encode_pair, tokrag_model.base.split_context) would move into the continuation and score a second time
    # (the previous chunk's target already ends with it); the whitespace before a chunk's first word is its own
    first_end = len(page[: starts[0]].rstrip()) if starts else len(page[:body_start].rstrip())
    out = []
    for i in range(0, len(starts), chunk_words):
        begin = words[i - 1].end() if i else first_end
        end = words[i + chunk_words - 1].end() if i + chunk_words < len(starts) else len(page)
        ctx_from = starts[i - context_words] if i - context_words >= 0 else 0
        out.append({"context": page[ctx_from:begin], "target": page[begin:end]})
    return out


def build_wikitext_docs(*, k: int = 3, retriever: str = "bm25", corpus: str = "prebuilt:wikipedia-dpr-100w",
                        chunk_words: int = 128, context_words: int = 128, query_words: int = 32, data_dir: Any = None,
                        hub_id: str | None = None, max_docs: int | None = None, cache_dir: Any = None,
                        retriever_params: dict | None = None, stats: dict | None = None) -> list[dict]:
    """Docs of ``wikitext103_bm25_wiki``: ``{qid, title, context, target, question, ctxs, run_fingerprint, scored_by}``.

    ``qid`` is ``wt103-<article index>-<chunk index>``; ``question`` is the retrieval query. ``max_docs`` keeps
    the first N chunks (article order) before retrieval. ``stats``: a dict to fill with ``corpus`` (the spec) and
    ``run_fingerprint`` (for :mod:`tasks.provenance`).

    Raises:
        DataError: an article title among its own passages after the filter, or degenerate retrieval.
        OfflineError: no local copy of the data set and no hub (:func:`tasks.sources.hub_rows`).
    """
    from retrieval import check_run_sanity, retrieve, score_label

    from .sources import hub_rows

    rows, source = hub_rows(hub_id or HUB_ID, HUB_CONFIG, HUB_SPLIT, data_dir=data_dir, local_name=LOCAL_NAME)
    docs: list[dict] = []
    for a, row in enumerate(rows):
        page = row.get("page")
        if not isinstance(page, str):
            raise DataError(f"{source} row {a}: missing text field 'page'")
        title = article_title(page)
        for c, ch in enumerate(chunk_article(page, int(chunk_words), int(context_words))):
            words = ch["context"].replace("=", " ").split()[-int(query_words):]
            query = " ".join(words) or title or ch["target"].split("\n", 1)[0]
            docs.append({"qid": f"wt103-{a:03d}-{c:04d}", "title": title, "context": ch["context"], "target": ch["target"],
                         "question": query})
    if max_docs not in (None, "", 0):
        docs = docs[: int(max_docs)]
    if not docs:
        raise DataError(f"{source}: no text to score")
    run = retrieve(corpus, {d["qid"]: d["question"] for d in docs}, retriever=retriever, k=int(k) + OWN_TITLE_MARGIN,
                   params=retriever_params, cache_dir=cache_dir, data_dir=data_dir)
    check_run_sanity(run)
    for d in docs:
        own = title_key(d["title"], wikitext=True)
        hits = [h for h in run.ctxs.get(d["qid"], []) if not own or title_key(str(h["title"])) != own][: int(k)]
        d["ctxs"] = [{"docid": str(h["docid"]), "title": str(h["title"]), "text": str(h["text"]),
                      "score": None if h.get("score") is None else float(h["score"]), "rank": i + 1, "source": "retrieved"}
                     for i, h in enumerate(hits)]
        d["run_fingerprint"] = str(run.fingerprint)
        d["scored_by"] = score_label(retriever, retriever_params, corpus)
    if stats is not None:
        stats.update(corpus=str(corpus), run_fingerprint=str(run.fingerprint))
    return docs


WIKITEXT_KEYS = {"hits", "retriever", "corpus", "chunk_words", "context_words", "query_words", "data_dir", "hub_id",
                 "max_docs", "cache_dir", "retriever_params"}


def wikitext_arguments(metadata: dict[str, Any]) -> dict[str, Any]:
    """The checks of :func:`load_wikitext103` that read no data (also run by ``tasks.precheck.check_selected_tasks``
    before the model load): ``metadata`` (the task's, ``--metadata`` merged in) as the keyword arguments of
    :func:`build_wikitext_docs` (``hits`` renamed ``k``, numbers cast).

    Raises:
        ConfigError: a near-miss key, ``questions``, a key that only other tokrag tasks read
            (:func:`tasks.utils.check_task_keys`: ``split``, ``noise``, ...; ``seed`` excepted), or a bad number (one
            line naming the task and key).
    """
    from .utils import check_metadata_keys, check_metadata_numbers, check_no_questions, check_task_keys

    check_metadata_keys(metadata, WIKITEXT_KEYS, "wikitext103_bm25_wiki")
    check_no_questions(metadata, "wikitext103_bm25_wiki")
    check_task_keys(metadata, "tasks.wikitext.load_wikitext103", "wikitext103_bm25_wiki")
    metadata = check_metadata_numbers(metadata, "wikitext103_bm25_wiki")
    kw = {key: metadata[key] for key in WIKITEXT_KEYS if key in metadata and metadata[key] is not None}
    if "hits" in kw:
        kw["k"] = kw.pop("hits")
    return kw


def load_wikitext103(**metadata: Any) -> dict[str, Any]:
    """``custom_dataset`` of ``wikitext103_bm25_wiki``. Metadata keys: ``hits`` (passages per chunk, 3), ``retriever`` (bm25),
    ``corpus`` (prebuilt:wikipedia-dpr-100w), ``chunk_words`` (128), ``context_words`` (128), ``query_words``
    (32), ``data_dir``, ``hub_id`` (a hub id or a local folder in the hub's layout), ``max_docs``, ``cache_dir``,
    ``retriever_params``. A key that only other tokrag tasks read (``split``: WikiText-103 has only its test split,
    ``noise``, ...) is refused (:func:`wikitext_arguments`)."""
    import datasets

    kw = wikitext_arguments(metadata)
    from .provenance import TaskData, wikitext_provenance

    stats: dict[str, Any] = {}
    docs = build_wikitext_docs(**kw, stats=stats)
    return TaskData({"test": datasets.Dataset.from_list(docs)}, wikitext_provenance(kw, stats))


def process_results_wikitext(doc: dict, results: list) -> dict[str, tuple[float, int]]:
    """Per-chunk ``(log-likelihood in nats, units)`` pairs for the weighted perplexities (module docstring)."""
    first = results[0]
    ll = first[0] if isinstance(first, (tuple, list)) else first
    target = doc["target"]
    n_words = len(target.split())
    n_bytes = len(target.encode("utf-8"))
    out: dict[str, tuple[float, int]] = {"word_perplexity": (float(ll), n_words), "byte_perplexity": (float(ll), n_bytes),
                                         "bits_per_byte": (float(ll), n_bytes)}
    n_tokens = getattr(ll, "n_tokens", None)
    if n_tokens:
        out["token_perplexity"] = (float(ll), int(n_tokens))
    return out
