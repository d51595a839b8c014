"""Prompts shared by every method: the passages block, the task context, and the token budget.

RAG context = the task context with the passages block in it; pure context = the task context without
it. Where the block goes:

* plain prompts (no chat template): in front of the whole context (passages first, as in Xu et al.
  2025 §3.2 / the authors' code), so ``rag-standard`` sees the same tokens as lm-eval's ``hf`` given
  ``passages_block + context``;
* chat prompts (lm-eval's ``--apply_chat_template``): the model's ``apply_chat_template`` puts
  :data:`PASSAGES_SLOT` at the start of the first user turn's content, and :class:`PromptBuilder`
  replaces that slot by the block (RAG branches) or by nothing (pure branches), so the passages sit
  inside the first user turn, before the task's text (few-shot examples, question), for every method
  and branch.

Both are tokenised as whole strings exactly as lm-eval's ``hf`` model tokenises a context. The
retrieved span ``[start, end)`` of the RAG token sequence (:attr:`Encoded.span`) is found from the
tokenizer's character offsets, not by re-tokenising pieces: the tokens lying wholly inside the block
(and, for a block at the very start, a BOS token in front of it: the plain prompt's span is
``[0, n_R)``, BOS included, as in the authors' code).

Budget: when the RAG prompt is longer than the budget (``max_length`` minus the generation budget), or
the passages take more than ``max_passage_tokens`` tokens (counted as a plain prompt's span: with the BOS the
tokenizer puts in front of a plain prompt, also for a rolling text's windows; :meth:`PromptBuilder.passage_tokens`),
the lowest-ranked passages are dropped first, one at a time, whole; when not even the top passage fits alone, it is
cut token-wise from its end to the longest head that fits (as the Tok-RAG authors' WikiText script cuts the passages
from their end, and BERGEN crops each passage) and the later passages are dropped, so the prompt answers closed-book
only when no token of a passage fits (:meth:`PromptBuilder.fit`: one rule for every method and branch). The task
context (the question) is never cut. A task context that alone exceeds the budget is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from retrieval.errors import ConfigError, DataError


def no_passages_message(method: str, doc: Any, kind: str | None = None) -> str:
    """The refusal of a ``doc`` without passages (no ``ctxs`` list) for ``--model method``, whose example task fits the
    request type ``kind``: a language-modelling retrieval task for ``loglikelihood_rolling`` (lm-eval's ``wikitext``
    was told to use the QA task ``nq_open_bm25``); both kinds for ``loglikelihood``, which a multiple-choice QA task
    (lm-eval's ``arc_easy``, ``mmlu``, ``hellaswag``: one request per choice) sends as well as a language-modelling one
    (``wiki_lm_bm25``); a QA one for ``generate_until`` or an unknown kind."""
    keys = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
    if kind == "loglikelihood_rolling":
        use = ("a language-modelling retrieval task (for instance wiki_lm_bm25, or wikitext103_bm25_wiki for "
               "WikiText-103, from tasks/)")
    elif kind == "loglikelihood":
        use = ("a retrieval task from tasks/ (a QA one such as nq_open_bm25, or a language-modelling one such as "
               "wiki_lm_bm25)")
    else:
        use = "a retrieval task (for instance nq_open_bm25 from tasks/)"
    return (f"--model {method} needs retrieved passages in doc['ctxs'], but this task's docs have none (doc keys: {keys}); "
            f"use {use}, or --model rag-none for closed-book")


def get_ctxs(doc: Any, method: str, k: int | None, kind: str | None = None) -> list[dict]:
    """The passages attached to ``doc`` by a retrieval task, best first: in their list order (the top ``k``; all when
    ``k`` is None). ``kind``: the request type being served (``generate_until``, ``loglikelihood``,
    ``loglikelihood_rolling``), which sets the example task of the refusal (:func:`no_passages_message`).

    The list order is the ranking, as ``tokrag retrieve eval`` scores a ctxs run
    (:func:`retrieval.cache.read_ctxs_jsonl`): the tasks write ``rank`` = position (noise and counterfactual passages
    included), and a ``rank`` field only has to agree with it. Equal ranks (a ``0`` placeholder), gaps and passages
    without a rank agree with any order; a rank below an earlier passage's contradicts the list, and either order could
    be the one meant, so it is refused rather than sorted (the passages were sorted by rank here before s57 r9): a
    ctxs run's rule, :func:`retrieval.cache.check_rank`. A passage (by its ``docid``) listed twice in one doc is
    refused too, as in a ctxs run (:func:`retrieval.cache.check_listed_once`): each copy would be given to the method
    (REPLUG weighed it twice, Tok-RAG's passages block repeated it; s57 h4). Passages without a ``docid`` (or with
    ``""``) are not compared; the shipped tasks never list a docid twice (noise passages are drawn from the others:
    checked on 300 docs of every nq_oracle / nq_open noise and counterfactual task).

    Raises:
        DataError: one line each: ``doc`` has no ``ctxs`` list; a passage has no ``text``; a passage's ``rank`` is
            not a finite number; a rank smaller than that of a passage listed before it (the doc, both positions and
            ranks named); a ``docid`` listed twice (the doc, both positions and the docid named), in the whole list,
            not only its top ``k``.
    """
    # the rank and the listed-twice rules are a ctxs run's (retrieval.cache.check_rank, check_listed_once: one rule,
    # one line); what differs is said here: the list order is what the methods are given, and a copy would be a
    # passage of its own; the id is the docid a task wrote (a run file's id, _id or docid is read by the run reader)
    from retrieval.cache import check_listed_once, check_rank

    ctxs = doc.get("ctxs") if isinstance(doc, dict) else None
    if not isinstance(ctxs, list):
        raise DataError(no_passages_message(method, doc, kind))
    ranked: tuple[int, float] | None = None  # (position, rank) of the last passage with a rank
    listed: dict[str, int] = {}  # docid -> its first position
    for i, c in enumerate(ctxs):
        if not isinstance(c, dict) or not isinstance(c.get("text"), str):
            raise DataError(f"--model {method}: doc['ctxs'][{i}] must be a dict with a 'text' string, got {str(c)[:80]!r}")
        docid = c.get("docid")
        has_id = docid is not None and str(docid) != ""

        def at(i: int = i, docid: Any = docid, has_id: bool = has_id) -> str:  # the doc named only in a refusal
            return (f"--model {method}: doc {doc_name(doc)}, doc['ctxs'][{i}]"
                    + (f" (passage {docid!r})" if has_id else ""))

        if has_id:  # each copy would be a passage of its own (REPLUG's weights, the passages block)
            check_listed_once(listed, str(docid), i, at, listed_as="doc['ctxs']", copies=PASSAGE_COPIES)
        ranked = check_rank(c, i, ranked, at, listed_as="doc['ctxs']", order=PASSAGES_ORDER)
    return ctxs[:k] if k is not None else list(ctxs)


PASSAGES_ORDER = "the order the passages are given in"
"""What a doc's list order is, in :func:`get_ctxs`' rank line (:func:`retrieval.cache.check_rank`)."""
PASSAGE_COPIES = "each copy would be given to the method as a passage of its own"
"""What a passage listed twice in a doc would do, in :func:`get_ctxs`' line
(:func:`retrieval.cache.check_listed_once`)."""


def doc_name(doc: Any) -> str:
    """How the refusals of a doc name it (:func:`get_ctxs`; REPLUG's ``passage_scores``, ``doc_temperature``): its
    id quoted (the first not-null field of :data:`retrieval.corpus.QID_FIELDS`: ``qid``, as the tasks' docs hold it,
    then ``id``, ``qId``, ``_id``, as a task's own docs file may: tasks/README.md's example), else ``(question
    '...')`` with its ``question`` or ``query`` (first 60 characters), else ``'?'``. A doc keyed by ``id`` was named
    ``'?'``. (Moved here from ``methods/replug.py``, which get_ctxs had imported it from, s57 read-through.)"""
    from retrieval.corpus import QID_FIELDS

    if not isinstance(doc, dict):
        return "'?'"
    field = next((n for n in QID_FIELDS if doc.get(n) is not None), None)
    if field is not None:
        return repr(doc[field] if isinstance(doc[field], str) else str(doc[field]))
    question = next((doc[n] for n in ("question", "query") if isinstance(doc.get(n), str) and doc[n].strip()), None)
    if question is not None:
        q = " ".join(question.split())
        return f"(question {(q[:60] + '...' if len(q) > 60 else q)!r})"
    return "'?'"


PASSAGE_FIELDS = ("title", "text", "rank", "docid")
"""The fields :func:`format_passage` gives a ``passage_template`` (checked by :func:`tokrag_model.args.passage_template`
when the model arguments are read, before the weights load)."""


CUT_KEY = "tokrag_cut"
"""The key of a passage copy cut token-wise to the budget (:meth:`PromptBuilder.cut_top`): ``[tokens kept, tokens]`` of
its text tokenised alone. The copy is what the methods that pick among passages get (:meth:`tokrag_model.base.RAGMethodLM.
fitting_passages`), so their prompts and traces show the cut passage as the block does."""


def cuts_of(ctxs: list[dict], docids: list[str] | None = None) -> dict[str, list[int]]:
    """``{docid: [tokens kept, tokens]}`` of the passages of ``ctxs`` cut to the budget (:data:`CUT_KEY`); ``docids``:
    their docids (default: ``docid``, else the position)."""
    ids = docids or [str(c.get("docid", i)) for i, c in enumerate(ctxs)]
    return {ids[i]: list(c[CUT_KEY]) for i, c in enumerate(ctxs) if CUT_KEY in c}


def format_passage(ctx: dict, template: str, position: int) -> str:
    """One passage rendered with ``template`` (fields :data:`PASSAGE_FIELDS`)."""
    return template.format(title=ctx.get("title") or "", text=ctx["text"], rank=ctx.get("rank", position + 1),
                           docid=ctx.get("docid", ""))


PASSAGES_SLOT = "\u27e6tokrag:passages\u27e7"
"""Where the passages block goes in a chat-rendered context (``⟦tokrag:passages⟧``): put at the start of
the first user turn by :meth:`tokrag_model.base.RAGMethodLM.apply_chat_template`, replaced by
:meth:`PromptBuilder.rag` (the block) and :meth:`PromptBuilder.pure` (nothing). Never tokenised. In lm-eval's
``evaluate`` only the model puts it in a prompt: a task text (question, few-shot example, description,
``--system_instruction``) holding it is refused (:func:`check_slot`). A context given to a method's
``generate_until`` / ``loglikelihood`` directly in Python, outside an evaluation, may hold it once, where the passages
then go (the chat of any model object's ``apply_chat_template``, or a caller placing them;
:meth:`tokrag_model.base.RAGMethodLM._check_slot`); twice is refused."""


def _around_slot(text: str) -> str:
    """The marker in ``text`` with up to 40 characters in front of it (for an error line)."""
    at = text.find(PASSAGES_SLOT)
    return ("..." if at > 40 else "") + text[max(0, at - 40):at + len(PASSAGES_SLOT)]


def check_slot(context: str, plain: bool, method: str, where: str = "") -> None:
    """Refuse a task context holding :data:`PASSAGES_SLOT` where the model did not put it: more than once (the model
    puts one, at the start of a chat's first user turn or after a rolling text's prefix token), or at all when
    ``plain`` (a plain-prompt context, in which the model puts none). :func:`fill_slot` and :func:`without_slot` take
    the first marker for the model's: the passages would land inside the task's text (a question, a
    ``--system_instruction``) and the pure prompt would lose that text. ``where`` names the doc in the error.

    Raises:
        ConfigError: one line naming the method, ``where`` and the text around the marker.
    """
    n = context.count(PASSAGES_SLOT)
    if n > (0 if plain else 1):
        raise ConfigError(
            f"--model {method}: the task context{' (' + where + ')' if where else ''} holds the passages marker "
            f"{PASSAGES_SLOT} in its own text ({_around_slot(context)!r}), which only the model puts in a prompt "
            "(where the passages go): remove it from the task's questions, few-shot examples, description or "
            "--system_instruction"
        )


@dataclass
class Encoded:
    """A tokenised prompt.

    ``ids``: token ids (BOS included when the tokenizer adds one); ``span``: the retrieved span
    ``[start, end)`` of ``ids``, the passages block's tokens wherever the block sits (``(0, n_R)`` for a
    plain prompt, after the chat header for a chat prompt; empty, ``(0, 0)``, for a pure prompt);
    ``kept``/``dropped``: docids of the passages in the block and of those dropped for the budget;
    ``text``: the prompt string that was tokenised; ``dropped_ranks``: the 1-based positions, in the ranked passages
    given, of those dropped by this prompt's budget rule (:meth:`PromptBuilder.fit`); ``cut``: ``{docid: [tokens kept,
    tokens]}`` of a passage in the block cut token-wise to the budget (its text's tokens alone), whether cut here
    (``cut_here``) or given already cut (the one-passage prompts of a cut kept set); ``shown``: the passages in the
    block, best first (a cut one as its cut copy).
    """

    ids: list[int]
    span: tuple[int, int] = (0, 0)
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    text: str = ""
    dropped_ranks: list[int] = field(default_factory=list)
    cut: dict[str, list[int]] = field(default_factory=dict)
    cut_here: bool = False
    shown: list[dict] = field(default_factory=list, repr=False)

    @property
    def n_passage_tokens(self) -> int:
        """Length of the retrieved span in tokens (``end - start``)."""
        return self.span[1] - self.span[0]


def fill_slot(context: str, block: str) -> tuple[str, int]:
    """``(prompt text, character offset of the block)``: the block in place of :data:`PASSAGES_SLOT` when
    ``context`` has it (chat prompts), else in front of ``context`` (plain prompts). The first marker is taken for the
    model's: a context holding another is refused before (:func:`check_slot`)."""
    at = context.find(PASSAGES_SLOT)
    if at < 0:
        return block + context, 0
    return context[:at] + block + context[at + len(PASSAGES_SLOT):], at


def without_slot(context: str) -> str:
    """The task context with the passages slot (if any) removed: the pure prompt's text (the first marker: as
    :func:`fill_slot`, after :func:`check_slot`)."""
    return context.replace(PASSAGES_SLOT, "", 1)


class PromptBuilder:
    """Tokenises pure and RAG prompts for one tokenizer, with the budget rule above."""

    def __init__(self, tokenizer: Any, template: str, add_bos_token: bool | None = None,
                 max_passage_tokens: int | None = None) -> None:
        self.tok = tokenizer
        self.max_passage_tokens = max_passage_tokens
        self.template = template
        self.special = {} if add_bos_token is None else {"add_special_tokens": bool(add_bos_token)}

    def _special_for(self, text: str) -> dict[str, bool]:
        """The ``add_special_tokens`` keyword for ``text``: none added when it already starts with the BOS text
        (lm-eval's ``has_bos_prefix``: one BOS, also under the ``add_bos_token=True`` model argument), else the
        ``add_bos_token`` model argument's choice, else the tokenizer's default."""
        special = dict(self.special)
        bos = getattr(self.tok, "bos_token", None)
        if bos and text.startswith(bos):
            special["add_special_tokens"] = False
        return special

    def encode(self, text: str) -> list[int]:
        """Token ids of a whole string, as lm-eval's ``hf`` ``tok_encode`` (BOS per the tokenizer's default or the
        ``add_bos_token`` model argument; none added to a text that already starts with the BOS text)."""
        return list(self.tok.encode(text, **self._special_for(text)))

    def encode_bare(self, text: str) -> list[int]:
        """Token ids of ``text`` with no special token added (no BOS), e.g. a passages block put in front of a
        rolling text's later window (:meth:`tokrag_model.base.RAGMethodLM.encode_rag`)."""
        return list(self.tok.encode(text, add_special_tokens=False))

    @property
    def adds_bos(self) -> bool:
        """True when :meth:`encode` puts a BOS in front of a plain text (Gemma; not SmolLM2, whose template adds
        none): a plain prompt's retrieved span then includes that BOS, and :meth:`passage_tokens` counts it."""
        if "_adds_bos" not in self.__dict__:
            bos_id = getattr(self.tok, "bos_token_id", None)
            self.__dict__["_adds_bos"] = bos_id is not None and self.encode("a")[:1] == [bos_id]
        return self.__dict__["_adds_bos"]

    def passage_tokens(self, n_block: int) -> int:
        """Tokens a passages block of ``n_block`` tokens (no BOS among them) at the start of a plain text counts
        against ``max_passage_tokens``: as a plain QA prompt's span ``[0, n_R)`` counts it, the block plus the BOS the
        tokenizer puts in front of a plain prompt (:attr:`adds_bos`), in a rolling text's first window and later
        windows alike."""
        return n_block + (1 if self.adds_bos else 0)

    def block(self, ctxs: list[dict]) -> str:
        return "".join(format_passage(c, self.template, i) for i, c in enumerate(ctxs))

    def _span(self, text: str, start_char: int, end_char: int) -> tuple[list[int], tuple[int, int]]:
        """Token ids of ``text`` and the token span of its characters ``[start_char, end_char)``: the
        tokens wholly inside them (plus a BOS in front when ``start_char == 0``)."""
        enc = self.tok(text, return_offsets_mapping=True, **self._special_for(text))
        ids = list(enc["input_ids"])
        offsets = [tuple(o) for o in enc["offset_mapping"]]
        start = 0
        if start_char > 0:
            while start < len(ids) and (offsets[start][0] < start_char or offsets[start][1] <= offsets[start][0]):
                start += 1
        end = start
        while end < len(ids) and (offsets[end][1] <= end_char or (offsets[end] == (0, 0) and end == 0)):
            end += 1
        return ids, (start, end)

    def pure(self, context: str, budget: int | None, method: str = "") -> Encoded:
        """Pure prompt (the context without passages). Raises ConfigError when it alone exceeds ``budget`` tokens."""
        text = without_slot(context)
        ids = self.encode(text)
        if budget is not None and len(ids) > budget:
            raise ConfigError(
                f"--model {method}: the task context is {len(ids)} tokens but only {budget} fit "
                "(max_length minus the generation budget); the question is never cut: raise max_length= or shorten the prompt"
            )
        return Encoded(ids, (0, 0), text=text)

    def rag(self, ctxs: list[dict], context: str, budget: int | None, method: str = "") -> Encoded:
        """RAG prompt: the passages block in the context (:func:`fill_slot`), within ``budget`` tokens and
        ``max_passage_tokens`` by :meth:`fit`'s rule. With no passage left it is the pure prompt."""

        def attempt(kept: list[dict]) -> Encoded | None:
            block = self.block(kept)
            text, at = fill_slot(context, block)
            ids, span = self._span(text, at, at + len(block))
            if ids != self.encode(text):
                ids = self.encode(text)
            fits = budget is None or len(ids) <= budget
            if self.max_passage_tokens is not None:
                n = span[1] - span[0]
                bos = getattr(self.tok, "bos_token", None)
                if span[0] == 1 and bos and text[:at] == bos:
                    n = self.passage_tokens(n)  # the block after a leading BOS (a rolling first window): as a QA prompt
                fits = fits and n <= self.max_passage_tokens
            return Encoded(ids, span, text=text) if fits else None

        enc = self.fit(ctxs, attempt)
        if enc is None:
            enc = self.pure(context, budget, method)  # raises when even the question does not fit
            enc.dropped = [str(c.get("docid", i)) for i, c in enumerate(ctxs)]
            enc.dropped_ranks = list(range(1, len(ctxs) + 1))
        return enc

    def fit(self, ctxs: list[dict], attempt: Callable[[list[dict]], Encoded | None]) -> Encoded | None:
        """The budget rule of every method's RAG prompt (:meth:`rag`; a rolling text's later windows:
        :meth:`tokrag_model.base.RAGMethodLM.encode_rag`): the longest head of the ranked passages ``ctxs`` whose prompt
        fits (``attempt(passages)``: the prompt, or None when it does not fit), the lowest-ranked dropped first, whole;
        when not even the top passage fits alone, the longest token-wise head of the top passage that fits
        (:meth:`cut_top`), the others dropped. None when no token of a passage fits (the caller answers closed-book).
        The returned prompt has ``kept``, ``dropped``, ``dropped_ranks``, ``cut``, ``cut_here`` and ``shown`` set."""
        docids = [str(c.get("docid", i)) for i, c in enumerate(ctxs)]
        for n in range(len(ctxs), 0, -1):
            enc = attempt(ctxs[:n])
            if enc is not None:
                return self._chosen(enc, ctxs[:n], docids, n)
        if ctxs:
            got = self.cut_top(ctxs[0], attempt)
            if got is not None:
                enc = self._chosen(got[0], [got[1]], docids, 1)
                enc.cut_here = True
                return enc
        return None

    @staticmethod
    def _chosen(enc: Encoded, shown: list[dict], docids: list[str], n: int) -> Encoded:
        """``enc`` with the passages it shows (the first ``n`` of the ranked passages, docids ``docids``) recorded."""
        enc.kept, enc.dropped = docids[:n], docids[n:]
        enc.dropped_ranks = list(range(n + 1, len(docids) + 1))
        enc.shown = list(shown)
        enc.cut = cuts_of(shown, docids)
        return enc

    def cut_top(self, ctx: dict, attempt: Callable[[list[dict]], Encoded | None]) -> tuple[Encoded, dict] | None:
        """``(prompt, cut passage)``: the passage ``ctx`` with its text cut after the most of its tokens (its text
        tokenised alone, no special token) whose one-passage prompt fits (``attempt``: binary search over the token
        count; the cut falls on a token's end), the copy marked with :data:`CUT_KEY` ``[tokens kept, tokens]``; None
        when not even its first token fits."""
        text = ctx["text"]
        ends = [e for _, e in self.tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]]
        best = None
        lo, hi = 1, len(ends) - 1  # all of its tokens did not fit
        while lo <= hi:
            m = (lo + hi) // 2
            cut = dict(ctx, text=text[:ends[m - 1]], **{CUT_KEY: [m, len(ends)]})
            enc = attempt([cut])
            if enc is None:
                hi = m - 1
            else:
                best, lo = (enc, cut), m + 1
        return best
