"""``rag-selfrag-filter``: Self-RAG-*style* relevance filtering with the base LLM as critic
(../shared/docs/baselines.md) — the lm-eval class, the critic prompt and the filter formulas.

Not the fine-tuned Self-RAG model (Asai et al., ICLR 2024) and no reflection tokens: the same base LLM as
every other method judges each passage with a fixed yes/no prompt, ``r = P(Yes)/(P(Yes)+P(No))``;
passages with ``r ≥ relevance_threshold`` are kept (``selection=threshold``, the default row), or the
``top_m`` passages with the largest ``r`` (``selection=top_m``, the labelled variant row
``rag-selfrag-filter-top2`` with ``top_m=2``), then one greedy generation (a single branch).

``selection=rank`` (closer to Self-RAG's short-form inference, ``retrieval_lm/run_short_form.py``): one greedy
answer per passage kept by the threshold, a support critic ``s = P(Yes)/(P(Yes)+P(No))`` for "is the answer
supported by the passage?" (normalised over its own two answers, as Self-RAG normalises its support score over
its three support tokens), and the answer of the passage with the largest
``exp(mean log-prob) + w_rel·r + w_sup·s`` (:func:`rank_score`, :func:`pick_ranked`); generation only. The answer
judged, voted on and averaged is the one the tasks score: the generation's first non-empty line
(:func:`tasks.utils.answer_line`; Self-RAG scores the whole output because its whole output is the prediction
evaluated); refused on a long-form task that scores the whole generation (ELI5).

Made readable in the trace: ``kept_rate`` (passages kept / passages judged) and ``critic_auc`` (how well
``r`` ranks this question's gold passages above the others; null without gold passages or without both
classes among the judged passages), for every request type: a ``loglikelihood_rolling`` text's trace carries
them at its top level too (:meth:`SelfRAGFilterLM.rolling_trace`), so the leaderboard's ``kept_rate`` column is
shown on language-modelling tasks as on QA tasks.

On language-modelling tasks there is no question: the critic's ``question`` is the doc's ``query_field``
(``question``), which these tasks set to their retrieval query: on ``wiki_lm_bm25`` (``loglikelihood`` of a
paragraph's continuation) the paragraph's first 32 words, the prefix the continuation is scored after, so the
critic judges each passage against the text just before the scored words; on ``wikitext103_bm25_wiki`` the last
32 words of the context before the scored chunk. A language-modelling doc with passages but without that field (a
``loglikelihood_rolling`` task of one's own, or a ``loglikelihood`` request with an empty context) is refused
(:class:`~retrieval.errors.ConfigError` naming ``query_field`` and the task, before any forward pass): the context
there is no question (a rolling window's is lm-eval's prefix token, e.g. ``<|im_start|>``, or the token(s) before the
window), a question cut from the text would be the scored words themselves on the first window (the bias
``wiki_lm_bm25`` 3.0 removed) and on later windows a query the doc's passages were not retrieved with, and
baselines.md takes the query from ``doc[query_field]``, never from the prompt (:meth:`SelfRAGFilterLM.question_of`).
A doc whose passage list is empty (``ctxs: []``) has nothing to judge: the critic is not asked, no question is needed,
and it is scored closed book, as ``rag-standard`` and every other method score it.
baselines.md prescribes no other critic prompt for such tasks;
with this one the default threshold can keep few or no passages (the row is then closed book on those texts: 0 of
60 passages on the first 20 paragraphs of ``wiki_lm_bm25`` 2.0, whose critic question was the same 32 words, with
SmolLM2-135M), which the ``kept_rate`` column shows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from lm_eval.api.instance import Instance

from retrieval.errors import ConfigError, DataError
from tasks.utils import answer_line

from ..args import Arg, choice, int_at_least, nonempty_str, number_in, to_bool, to_finite
from ..base import RAGMethodLM, ScoredBranch, ScorePlan, SingleBranch, WindowContext, budget_check, passages_trace
from ..decoder import Forced
from ..prompt import Encoded, cuts_of, get_ctxs, without_slot
from .replug import answer_token_span, refuse_long_form

# The critic's yes/no question (``question`` first, then the passage).
CRITIC_PROMPT = ("Question: {question}\n"
                 "Does the passage below contain information that helps answer the question? Answer Yes or No.\n\n"
                 "Passage: {title}\n{text}")

# selection=rank: the support critic's yes/no question (question and answer first, then the passage).
SUPPORT_PROMPT = ("Question: {question}\nAnswer: {answer}\n"
                  "Is the answer supported by the passage below? Answer Yes or No.\n\n"
                  "Passage: {title}\n{text}")


# ------------------------------------------------------------------------------------------ formulas
def relevance_ratio(logp_yes: float, logp_no: float) -> float:
    """``r = P(Yes)/(P(Yes)+P(No))`` from the two log-probs (nats); 0.5 when both are -inf."""
    if logp_yes == -math.inf and logp_no == -math.inf:
        return 0.5
    m = max(logp_yes, logp_no)
    a, b = math.exp(logp_yes - m), math.exp(logp_no - m)
    return a / (a + b)


def filter_by_relevance(ratios: Sequence[float], threshold: float = 0.5) -> list[int]:
    """Indices of the passages kept: ``r ≥ threshold`` (inclusive); empty list = answer closed-book."""
    return [i for i, r in enumerate(ratios) if r >= threshold]


def top_m_by_relevance(ratios: Sequence[float], m: int) -> list[int]:
    """Indices of the ``m`` passages with the largest ``r`` (ties: the better-ranked passage, i.e. the lower
    index), returned in their original (rank) order; all of them when there are at most ``m``."""
    best = sorted(range(len(ratios)), key=lambda i: (-ratios[i], i))[:m]
    return sorted(best)


def sequence_prob(logprobs: Sequence[float]) -> float:
    """``exp(mean log-prob)`` of a generated answer's tokens (nats in, a probability out): Self-RAG's sequence score
    (``cumulative_logprob / max(n_tokens, 1)``, exponentiated); 1.0 for no token. ``selection=rank`` passes the
    log-probs of the scored answer line's tokens (:meth:`SelfRAGFilterLM.answer_prob`)."""
    return math.exp(math.fsum(logprobs) / max(len(logprobs), 1))


def rank_score(seq_prob: float, relevance: float, support: float, w_rel: float = 1.0, w_sup: float = 1.0) -> float:
    """Self-RAG's final score of one passage's answer without the utility term:
    ``seq_prob + w_rel·relevance + w_sup·support`` (``seq_prob`` from :func:`sequence_prob`, the two critic ratios
    in [0, 1]; unitless)."""
    return seq_prob + w_rel * relevance + w_sup * support


def pick_ranked(answers: Sequence[str], scores: Sequence[float],
                vote: bool = False) -> tuple[int, dict[str, float] | None]:
    """Index of the candidate answer to return, by score.

    ``vote=False`` (open-set tasks, e.g. NQ, WebQ): the candidate with the largest score (Self-RAG's path argmax).
    ``vote=True`` (closed-set tasks, Self-RAG's FEVER/ARC-Challenge rule): the scores summed per identical answer,
    an answer being the generation's scored line (:func:`tasks.utils.answer_line`: the first
    non-empty line, stripped, as every task extracts it) after SQuAD normalisation
    (:func:`tasks.metrics.normalize_answer`), and the best-scoring candidate of the answer with the largest sum. Ties: the better-ranked passage (the lower index), as Self-RAG's stable sort.

    Returns:
        ``(index, sums)``: ``sums`` maps each normalised answer to its summed score (None when ``vote`` is False).

    Raises:
        ValueError: no candidates, or ``answers`` and ``scores`` of different lengths.
    """
    if not answers or len(answers) != len(scores):
        raise ValueError(f"pick_ranked: {len(answers)} answers and {len(scores)} scores; need as many, at least one")
    if not vote:
        return max(range(len(scores)), key=lambda i: (scores[i], -i)), None
    from tasks.metrics import normalize_answer

    keys = [normalize_answer(answer_line(a)) for a in answers]
    sums: dict[str, float] = {}
    for key, sc in zip(keys, scores):
        sums[key] = sums.get(key, 0.0) + sc
    order = list(sums)
    best = max(range(len(order)), key=lambda j: (sums[order[j]], -j))
    members = [i for i, key in enumerate(keys) if key == order[best]]
    return max(members, key=lambda i: (scores[i], -i)), sums


def passage_keys(ctxs: Sequence[dict]) -> list[str]:
    """One distinct key per passage, in order, for the trace's per-passage dicts (``critic``, ``support``): the
    passage's docid (its index when it has none), and ``docid#n`` for its n-th occurrence from the second on (a
    retriever or a noise task can attach one passage twice; keyed by docid alone, the two entries collapsed into
    one), skipping a key another passage already has."""
    keys: list[str] = []
    seen: set[str] = set()
    for i, c in enumerate(ctxs):
        base = str(c.get("docid", i))
        key, n = base, 1
        while key in seen:
            n += 1
            key = f"{base}#{n}"
        keys.append(key)
        seen.add(key)
    return keys


YES_WORDS = ("Yes", " Yes", "yes", " yes")
NO_WORDS = ("No", " No", "no", " no")


def answer_token_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """``(yes_ids, no_ids)``: the token ids whose next-token probabilities the critics sum for Yes and for No in
    ``r = P(Yes)/(P(Yes)+P(No))`` (:func:`relevance_ratio`), sorted.

    Each word of :data:`YES_WORDS` / :data:`NO_WORDS` gives the first token of its encoding that holds a character of
    the word (decoded text not blank): a SentencePiece tokenizer can encode " Yes" as a bare space piece ``▁`` then
    ``Yes``, and the bare piece, the first token of " Yes" and of " No" alike, counted in both sums pulled every ratio
    towards 0.5 (with P(▁) = .5, P(Yes) = .3, P(No) = .1: r = .8/1.4 = .571 instead of .75). A token in both lists
    is left out of both, for the same reason.

    Raises:
        ConfigError: the Yes or the No list is empty (then every ratio would be 0.5 or 0/1 whatever the critic
            answers), naming the tokenizer.
    """
    def first_ids(words: Sequence[str]) -> set[int]:
        ids = set()
        for w in words:
            for t in tokenizer.encode(w, add_special_tokens=False):
                if tokenizer.decode([t]).strip():
                    ids.add(int(t))
                    break
        return ids

    yes, no = first_ids(YES_WORDS), first_ids(NO_WORDS)
    both = yes & no
    yes, no = sorted(yes - both), sorted(no - both)
    if not yes or not no:
        raise ConfigError(f"--model rag-selfrag-filter: tokenizer {getattr(tokenizer, 'name_or_path', '?')!r} leaves the "
                          f"critic no {'Yes' if not yes else 'No'} token (the first tokens of "
                          f"{', '.join(map(repr, YES_WORDS + NO_WORDS))} are blank or shared by Yes and No), so "
                          "P(Yes)/(P(Yes)+P(No)) cannot be read; use a model whose tokenizer encodes Yes and No apart")
    return yes, no


def critic_auc(ratios: Sequence[float], is_gold: Sequence[bool]) -> float | None:
    """ROC AUC of the critic ratios ``r`` against the gold labels of the same passages: the probability that
    a gold passage gets a larger ``r`` than a non-gold one, ties counting ½ (Mann–Whitney U / (n_gold·n_other);
    ``sklearn.metrics.roc_auc_score``). None when the passages are all gold or all non-gold."""
    labels = [bool(g) for g in is_gold]
    if len(set(labels)) < 2:
        return None
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, list(ratios)))


def doc_query(doc: Any, field: str) -> str | None:
    """``doc[field]`` when it is a non-blank string (the critic's question), else None."""
    q = doc.get(field) if isinstance(doc, dict) else None
    return q if isinstance(q, str) and q.strip() else None


def no_question_message(method: str, field: str, doc: Any, context: str, task: Any = None, doc_id: Any = None) -> str:
    """The one-line refusal of a language-modelling doc without a non-blank ``doc[field]`` whose context (``context``,
    without the passages slot) is no question: :meth:`SelfRAGFilterLM.question_of` raises it after the load, and
    :func:`tasks.precheck.selfrag_lm_question_refusal` before it (a ``loglikelihood_rolling`` task's first such doc)."""
    d = doc if isinstance(doc, dict) else {}
    where = ", ".join(f"{k} {v!r}" for k, v in (("task", task), ("doc_id", doc_id), ("qid", d.get("qid")))
                      if v is not None)
    keys = sorted(d) if isinstance(doc, dict) else type(doc).__name__
    has = f"a blank {field!r} field" if field in d else f"no {field!r} field"
    return (f"--model {method}: the critic needs a question, but a language-modelling doc"
            f"{' (' + where + ')' if where else ''} has {has} (model argument query_field={field!r}; "
            f"doc keys: {keys}) and its context {context[-40:]!r} is the scored text's prefix token or preceding "
            "tokens, not a question; record in each doc the query its passages were retrieved with and pass "
            "query_field=<that field>")


def first_doc_without_query(docs: Iterable[Any], field: str, method: str) -> tuple[int, Any] | None:
    """``(doc_id, doc)`` of the first of a ``loglikelihood_rolling`` task's ``docs`` (in lm-eval's order) that
    :meth:`SelfRAGFilterLM.loglikelihood_rolling` refuses for want of a question: one with passages and
    :func:`doc_query` of ``field`` None (a doc with an empty passage list needs none: it is scored closed book); None
    when there is none, or when a doc without passages comes first (the method refuses that one for its passages:
    :func:`~tokrag_model.prompt.get_ctxs`)."""
    for i, doc in enumerate(docs):
        try:
            ctxs = get_ctxs(doc, method, None)
        except DataError:
            return None
        if ctxs and doc_query(doc, field) is None:
            return i, doc
    return None


# ---------------------------------------------------------------------------------------- lm-eval model
class SelfRAGFilterLM(RAGMethodLM):
    """``rag-selfrag-filter``: Self-RAG-*style* relevance filtering with the base LLM as critic.

    This is explicitly **not** the fine-tuned Self-RAG model (Asai et al. 2024) and uses no reflection
    tokens: the same base LLM as every other method judges each passage with a fixed yes/no prompt
    (:data:`CRITIC_PROMPT`, in the tokenizer's chat template when it has one), ``r = P(Yes)/(P(Yes)+P(No))``
    from the next-token probabilities (summed over the first non-blank token of each variant "Yes"/" Yes"/"yes"/" yes"
    and likewise for No, a token of both left out: :func:`answer_token_ids`). Passages with ``r ≥ relevance_threshold`` (default 0.5) are kept in their original order
    (``selection=threshold``), or the ``top_m`` passages with the largest ``r`` (``selection=top_m``); if none
    is kept the model answers closed-book (pure context). Then one greedy generation.

    The critic judges the passages ``rag-standard``'s prompt would show within the budget (``max_length`` less the
    generation or continuation tokens, ``max_passage_tokens``; lowest-ranked dropped first, the trace's ``dropped``),
    never one the budget drops: every method picks among the same passages.

    Trace: ``critic`` {docid: r} (one entry per judged passage, in passage order; a docid's second occurrence is
    keyed ``docid#2``: :func:`passage_keys`), ``selection``, ``kept_rate`` (kept / judged passages; null when none is judged:
    the doc has none, or the budget drops them all), ``critic_auc`` (:func:`critic_auc` against the doc's ``gold_docids``; null when the doc has
    no gold ids or the judged passages are all gold or all non-gold), ``passages``, ``dropped``,
    ``closed_book``; a rolling text's trace has ``windows`` (one such trace each) and their ``kept_rate`` and
    ``critic_auc`` at its top level (:meth:`rolling_trace`).

    The critic's question is ``doc[query_field]``, else the task context (:meth:`question_of`). On a
    language-modelling task that field is the retrieval query, not a question: on ``wiki_lm_bm25`` the paragraph's
    first 32 words, the prefix before the scored continuation, so the critic judges each passage against the text just
    before the scored words (module docstring); a language-modelling doc with passages without it
    (``loglikelihood_rolling``, or an empty ``loglikelihood`` context) is refused, naming ``query_field`` and the task
    (one with an empty passage list, ``ctxs: []``, is scored closed book, as ``rag-standard`` scores it).

    ``selection=rank`` (generation only; :meth:`generate_until`): one greedy answer per passage with
    ``r ≥ relevance_threshold`` (each prompt that passage alone, :meth:`~tokrag_model.base.RAGMethodLM.encode_rag`),
    a support critic ``s = P(Yes)/(P(Yes)+P(No))`` per answer (:data:`SUPPORT_PROMPT`, the same yes/no tokens and
    chat rendering as the relevance critic), and the answer of the passage with the largest
    :func:`rank_score` ``exp(mean log-prob) + w_rel·r + w_sup·s`` (:func:`pick_ranked`; ``rank_aggregate=answer``
    sums the scores per normalised answer, for closed-set tasks; QA tasks such as NQ and WebQ are open-set: the
    default ``passage`` takes the argmax per passage, no summing). The support prompt's answer, the vote's key and
    the log-probs averaged are those of the scored answer, the generation's first non-empty line
    (:func:`tasks.utils.answer_line`, :meth:`answer_prob`), as REPLUG's ``answer_vote``.
    No passage kept: closed-book, as the filter.
    Its trace adds ``candidates`` (per answered passage: ``docid``, ``relevance``, ``support``, ``answer`` (the
    generation), ``seq_prob``, ``n_tokens`` (the answer line's tokens averaged), ``score``), ``support`` {docid: s} (keyed as ``critic``), ``chosen`` (the docid whose answer is
    returned; null closed-book) and, with ``rank_aggregate=answer``, ``answer_scores``; ``passages`` is the chosen
    passage. ``loglikelihood`` / ``loglikelihood_rolling`` raise :class:`ConfigError` (use the filter);
    :meth:`generation_only` declares it, so ``tokrag leaderboard run`` refuses such a cell before any model loads.
    """

    METHOD = "rag-selfrag-filter"
    # the critic cache is keyed on the question and the doc's whole passage list (a passage's ratio differs in its
    # last bits with the passages judged together with it: the shared prefix is cut elsewhere), so a doc's ratios
    # never depend on which docs or cells the process judged before, and a journal replay gives the same cell
    EXTRA_ARGS = {
        "relevance_threshold": Arg(0.5, number_in(0.0, 1.0),
                                   "keep passages with P(Yes)/(P(Yes)+P(No)) >= threshold; the ratio lies in [0, 1] "
                                   "(selection=threshold or rank; resolve_args refuses it with top_m)"),
        "critic_chat_template": Arg(True, to_bool, "wrap the critic prompt in the tokenizer's chat template"),
        "query_field": Arg("question", nonempty_str, "doc field holding the question for the critic (fallback: "
                           "the task context; required on loglikelihood_rolling tasks)"),
        "selection": Arg("threshold", choice("threshold", "top_m", "rank"),
                         "threshold: keep r >= relevance_threshold | top_m: keep the top_m passages by r | rank: one "
                         "answer per passage with r >= relevance_threshold, the best by exp(mean log-prob) + w_rel*r "
                         "+ w_sup*s (generation only)"),
        "top_m": Arg(2, int_at_least(1), "passages kept with selection=top_m (>= 1)", only_with=("selection", "top_m")),
        "w_rel": Arg(1.0, to_finite, "selection=rank: weight of the relevance ratio r in "
                     "exp(mean log-prob) + w_rel*r + w_sup*s", only_with=("selection", "rank")),
        "w_sup": Arg(1.0, to_finite, "selection=rank: weight of the support ratio s in "
                     "exp(mean log-prob) + w_rel*r + w_sup*s", only_with=("selection", "rank")),
        "rank_aggregate": Arg("passage", choice("passage", "answer"),
                              "selection=rank: passage: the best passage's answer (open-set tasks: NQ, WebQ) | answer: "
                              "scores summed per normalised answer (closed-set tasks)",
                              only_with=("selection", "rank")),
    }

    @classmethod
    def resolve_args(cls, cfg: dict[str, Any], given: dict[str, Any], preset: dict | None = None) -> dict[str, Any]:
        """``cfg`` unchanged, once ``relevance_threshold`` is checked: it acts with ``selection=threshold`` and
        ``selection=rank`` (the passages answered), not with ``top_m`` (:attr:`tokrag_model.args.Arg.only_with` names
        one value only, so the check is here; the same message). Called before the weights load and by the
        leaderboard's pre-run check.

        Raises:
            ConfigError: ``relevance_threshold`` given explicitly with ``selection=top_m``.
        """
        if given.get("relevance_threshold") is not None and cfg["selection"] == "top_m":
            raise ConfigError(
                f"--model {cls.METHOD}: model argument relevance_threshold={given['relevance_threshold']!r} has no "
                f"effect with selection={cfg['selection']!r}; add selection=threshold to use it, or drop "
                "relevance_threshold")
        return cfg

    @classmethod
    def generation_only(cls, cfg: dict[str, Any]) -> str | None:
        """``"selection=rank"`` when ``cfg`` ranks answers (generation only: ``loglikelihood`` and
        ``loglikelihood_rolling`` are refused), else None (:meth:`tokrag_model.base.RAGMethodLM.generation_only`)."""
        return "selection=rank" if cfg.get("selection") == "rank" else None

    def setup(self) -> None:
        """The critics' answer tokens: ``yes_ids`` / ``no_ids``, the first token of each of "Yes", " Yes", "yes",
        " yes" (likewise No) that holds a character of the word (:func:`answer_token_ids`), and an empty critic cache.

        Raises:
            ConfigError: no token of the tokenizer tells Yes from No (:func:`answer_token_ids`).
        """
        self.yes_ids, self.no_ids = answer_token_ids(self.tokenizer)
        self._critic_cache: dict[tuple, list[float]] = {}

    def critic_prompts(self, ctxs: list[dict], question: str) -> tuple[list[int], list[list[int]]]:
        """Token ids of the critic prompts as (shared prefix, one suffix per passage).

        The prompt is :data:`CRITIC_PROMPT` (question and instruction first, then the passage), wrapped in
        the tokenizer's chat template when it has one (``critic_chat_template``; the same renderer and template as the
        task's chat, :meth:`~tokrag_model.base.RAGMethodLM.render_chat`, :meth:`critic_template`), else followed by
        ``"\nAnswer:"``. The common prefix of all prompts (chat header, question, instruction) is
        prefilled once and its KV cache reused for every passage.
        """
        texts = [CRITIC_PROMPT.format(title=c.get("title") or "", text=c["text"], question=question) for c in ctxs]
        return self._yes_no_prompts(texts)

    def _yes_no_prompts(self, texts: list[str]) -> tuple[list[int], list[list[int]]]:
        """Token ids of yes/no critic prompts ``texts`` as (shared prefix, one suffix each): chat-rendered or
        followed by ``"\nAnswer:"`` (:meth:`critic_prompts`), the common prefix cut off (≥ 1 suffix token each)."""
        if self.critic_template() is not None:
            texts = [self.render_chat([{"role": "user", "content": t}]) for t in texts]  # the model's one chat renderer
        else:
            texts = [t + "\nAnswer:" for t in texts]
        ids = [self.prompts.encode(t) for t in texts]
        n = min(len(x) for x in ids) - 1  # keep ≥ 1 suffix token per passage
        common = 0
        while common < n and all(x[common] == ids[0][common] for x in ids):
            common += 1
        return ids[0][:common], [x[common:] for x in ids]

    def critic_template(self) -> str | None:
        """The chat template the critic prompts are rendered with (:meth:`_yes_no_prompts`): this evaluation's
        (:meth:`~tokrag_model.base.RAGMethodLM.selected_chat_template`: under ``--apply_chat_template rag`` the
        tokenizer's ``rag`` template, as the answer prompts), None when the critic prompt is plain
        (``critic_chat_template=false`` or no chat template).

        Raises:
            ConfigError: a template name the tokenizer does not have (:meth:`selected_chat_template`).
        """
        if self.renders_own_chat():
            return self.selected_chat_template()
        return None

    def renders_own_chat(self) -> bool:
        """True when the critic prompts are chat-rendered (:meth:`critic_template` not None: ``critic_chat_template``
        and a chat template), with this evaluation's template whatever the task: under ``--apply_chat_template rag``
        the ``rag`` template reaches the model through the critic on a ``loglikelihood_rolling`` task too, whose own
        chat lm-eval drops, so the results' ``chat_template_sha256`` is the ``rag`` one's
        (:meth:`~tokrag_model.base.RAGMethodLM.get_model_info`; ``tokrag_chat_template_applied`` stays false there: it
        tells the tasks' contexts)."""
        return bool(self.resolved_config["critic_chat_template"] and getattr(self.tokenizer, "chat_template", None))

    def relevance(self, doc: Any, context: str, ctxs: list[dict] | None = None, kind: str | None = None
                  ) -> tuple[list[dict], list[float]]:
        """Critic ratios ``r_i`` (unitless, in [0, 1]) for ``ctxs`` (default: the doc's passages; ``kind``: the request
        type, :meth:`~tokrag_model.base.RAGMethodLM.ctxs`), judged together; ``([], [])`` for no passage, without asking
        for a question (:meth:`question_of`): the critic judges nothing.

        Cached per critic template (:meth:`critic_template`: a model object reused for an evaluation under another
        ``--apply_chat_template`` name judges again), question and whole passage list (title, text, docid of each, in
        order): the several requests of one doc (a multiple-choice task's choices) judge once, and a doc's ratios are
        the same whatever the process judged before. A per-passage cache made them depend on it: the prompts' shared
        prefix is cut where the passages judged together first differ, which moves a ratio in its last bits (about
        1e-6 on SmolLM2).
        """
        ctxs = self.ctxs(doc, kind) if ctxs is None else ctxs
        if not ctxs:
            return [], []
        question = self.question_of(doc, context)
        key = (self.critic_template(), question, tuple((c.get("docid"), c.get("title") or "", c["text"]) for c in ctxs))
        if key not in self._critic_cache:
            self._critic_cache[key] = self._yes_no_ratios(*self.critic_prompts(ctxs, question))
        return ctxs, list(self._critic_cache[key])

    def _yes_no_ratios(self, prefix: list[int], suffixes: list[list[int]]) -> list[float]:
        """``P(Yes)/(P(Yes)+P(No))`` (:func:`relevance_ratio`; the yes/no token variants summed) after each
        ``prefix + suffix``, the prefix prefilled once (one forward pass per suffix, counted in ``stats``)."""
        out = []
        for lp in self.decoder.next_logprobs_shared_prefix(prefix, suffixes):
            ly = float(torch.logsumexp(lp[self.yes_ids], 0))
            ln = float(torch.logsumexp(lp[self.no_ids], 0))
            out.append(relevance_ratio(ly, ln))
        return out

    def question_of(self, doc: Any, context: str, req: Instance | None = None) -> str:
        """The critics' question: ``doc[query_field]`` when a non-blank string, else the task context without the
        passages slot (a task whose prompt is the question).

        A language-modelling request has no question in its context: a ``loglikelihood_rolling`` window's context is
        the text's own tokens before the window (:class:`~tokrag_model.base.WindowContext`: one token in a full window)
        or, on the first window, lm-eval's prefix token (:meth:`~tokrag_model.base.RAGMethodLM.first_window_context`,
        ``<|im_start|>`` on SmolLM2), as is an empty ``loglikelihood`` context. Such a doc without ``query_field`` is
        refused rather than judged against its context (the critic judged passages against ``<|im_start|>`` or ``.``;
        the question is asked only for a doc with passages: :meth:`relevance`, :meth:`_check_questions`),
        and no question is cut from the text: on the first window nothing precedes the scored words, so it could only
        be those words (the passages picked knowing what is scored: the bias ``wiki_lm_bm25`` 3.0 removed), and on
        a later one it would judge the doc's passages, attached once per doc, against a query they were not retrieved
        with (baselines.md: the query is ``doc[query_field]``, never the prompt). The tasks in tasks/ record theirs
        in ``question``; a task of one's own records the query its passages were retrieved with and names its field.
        A ``loglikelihood_rolling`` task's first such doc is refused before the load too, in this line
        (:func:`no_question_message`; :func:`tasks.precheck.check_selfrag_lm_questions`, the leaderboard's
        :func:`leaderboards.runner.check_lm_questions`).

        Raises:
            ConfigError: no non-blank ``doc[query_field]`` and the context is a rolling window's, the first window's
                (an empty ``loglikelihood`` context) or blank; one line naming ``query_field``, the doc and, given
                ``req``, its task.
        """
        field = self.resolved_config["query_field"]
        q = doc_query(doc, field)
        if q is not None:
            return q
        text = without_slot(context)
        if isinstance(context, WindowContext) or context == self.first_window_context() or not text.strip():
            raise ConfigError(no_question_message(self.METHOD, field, doc, text, getattr(req, "task_name", None),
                                                  getattr(req, "doc_id", None)))
        return text

    def _check_questions(self, requests: list[Instance], kind: str) -> None:
        """:meth:`question_of` for each request before any forward pass (a rolling text: its first window stands for
        every window, all refused alike without ``query_field``), so a task without the field is refused naming it
        and the task. A doc without passages (lm-eval's ``wikitext``: no ``ctxs``) is refused for those first
        (:func:`~tokrag_model.prompt.get_ctxs`'s DataError, with the example task of ``kind``, as every request's
        scoring would), not told to record a query its passages were retrieved with; a doc with an empty passage list
        (``ctxs: []``) needs no question (the critic judges nothing: :meth:`relevance`) and is scored closed book, as
        ``rag-standard`` scores it."""
        for req in requests:
            if not get_ctxs(req.doc, self.METHOD, None, kind):
                continue
            if kind == "loglikelihood_rolling":
                ctx = self.first_window_context()
            else:
                ctx, _ = self.split_context(req.args[0], req.args[1])
            self.question_of(req.doc, ctx, req)

    def support(self, question: str, passages: list[dict], answers: list[str]) -> list[float]:
        """Support ratios ``s_i = P(Yes)/(P(Yes)+P(No))`` (unitless, in [0, 1]) of the scored answer of
        ``answers[i]`` (:func:`tasks.utils.answer_line`: its first non-empty line, the part the tasks
        score) given ``passages[i]`` (:data:`SUPPORT_PROMPT`, rendered as the relevance critic's prompts), judged together
        (the shared prefix prefilled once); [] for no passages. Self-RAG normalises its support score over its own
        support tokens likewise (``run_short_form.py``: ``P(Fully)/Σ + 0.5·P(Partially)/Σ``)."""
        if not passages:
            return []
        texts = [SUPPORT_PROMPT.format(question=question, answer=answer_line(a), title=c.get("title") or "", text=c["text"])
                 for c, a in zip(passages, answers)]
        return self._yes_no_ratios(*self._yes_no_prompts(texts))

    def select(self, ratios: Sequence[float]) -> list[int]:
        """Indices of the passages kept, by ``selection`` (top-m; else the threshold, also rank's passages)."""
        c = self.resolved_config
        if c["selection"] == "top_m":
            return top_m_by_relevance(ratios, c["top_m"])
        return filter_by_relevance(ratios, c["relevance_threshold"])

    def _judge(self, doc: Any, context: str, budget: int, kind: str | None
               ) -> tuple[list[dict], list[float], list[int], list[str], dict]:
        """``(passages judged, their ratios r, indices kept, docids dropped for the budget, trace)``: the budget first
        (:meth:`~tokrag_model.base.RAGMethodLM.fitting_passages`: the passages ``rag-standard``'s prompt shows within
        ``budget`` tokens), then the relevance critic on those and :meth:`select`: the filter never shows a passage
        another method dropped for length (it judged every passage and applied the budget to the kept ones, so it
        could show one ``rag-standard`` dropped). ``kind``: the request type (a doc without passages is refused with
        its example task: :meth:`~tokrag_model.base.RAGMethodLM.ctxs`)."""
        pool, dropped = self.fitting_passages(doc, context, budget, kind)
        ctxs, ratios = self.relevance(doc, context, pool)
        idx = self.select(ratios)
        gold = doc.get("gold_docids") if isinstance(doc, dict) else None
        auc = critic_auc(ratios, [str(c.get("docid")) in {str(g) for g in gold} for c in ctxs]) if gold else None
        trace = {"critic": dict(zip(passage_keys(ctxs), (round(r, 4) for r in ratios))),
                 "selection": self.resolved_config["selection"],
                 "kept_rate": round(len(idx) / len(ctxs), 4) if ctxs else None,
                 "critic_auc": None if auc is None else round(auc, 4)}
        return ctxs, ratios, idx, dropped, trace

    def _encode(self, doc: Any, context: str, budget: int, kind: str | None) -> tuple[Encoded, dict]:
        ctxs, _, idx, dropped, trace = self._judge(doc, context, budget, kind)
        kept = [ctxs[i] for i in idx]
        if kept:
            enc = self.encode_rag(doc, context, budget, ctxs=kept)  # a subset of a block that fits: fits
        else:
            enc = self.encode_pure(context, budget)
        trace.update({**passages_trace(enc, dropped), "closed_book": not enc.kept})
        return enc, trace

    def make_rule(self, doc: Any, context: str, budget: int, kind: str = "generate_until") -> tuple[Any, dict]:
        enc, trace = self._encode(doc, context, budget, kind)
        return SingleBranch(enc.ids), trace

    def rolling_trace(self, windows: list[dict]) -> dict:
        """``{"windows": [...]}`` plus the text's ``kept_rate`` and ``critic_auc`` (means over its windows, rounded to
        4 decimals; each window's passages are judged within that window's budget, so the values can differ between
        windows; null when no window has one): the fields the leaderboard's trace columns read
        (:func:`leaderboards.traces.trace_columns`)."""
        out = super().rolling_trace(windows)
        for key in ("kept_rate", "critic_auc"):
            vals = [w[key] for w in windows if isinstance(w.get(key), (int, float))]
            out[key] = round(sum(vals) / len(vals), 4) if vals else None
        return out

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int, kind: str | None = None) -> ScorePlan:
        self._refuse_rank_scoring("loglikelihood")  # also where a tool calls score() directly
        enc, trace = self._encode(doc, context, budget_check(cont, budget, self.METHOD), kind)

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            ll, greedy = self._sum_ll(forced[0].logprobs, cont)
            return ll, greedy, trace

        return ScorePlan([enc.ids], cont, finish)

    # ------------------------------------------------------------------ selection=rank
    def _refuse_rank_scoring(self, kind: str) -> None:
        self.refuse_if_generation_only(
            f"--model {self.METHOD}: selection=rank answers each passage by generation and cannot score {kind} "
            "requests; use selection=threshold (the filter) or top_m for scoring tasks")

    def loglikelihood(self, requests: list[Instance], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        """As :meth:`RAGMethodLM.loglikelihood`; refused with ``selection=rank`` and for an empty context whose doc has
        no ``query_field`` (:meth:`question_of`; ConfigError, before any work)."""
        self._refuse_rank_scoring("loglikelihood")
        self._check_questions(requests, "loglikelihood")
        return super().loglikelihood(requests, disable_tqdm)

    def loglikelihood_rolling(self, requests: list[Instance], disable_tqdm: bool = False) -> list[float]:
        """As :meth:`RAGMethodLM.loglikelihood_rolling`; refused with ``selection=rank`` and for a doc without
        ``query_field`` (:meth:`question_of`; ConfigError, before any work)."""
        self._refuse_rank_scoring("loglikelihood_rolling")
        self._check_questions(requests, "loglikelihood_rolling")
        return super().loglikelihood_rolling(requests, disable_tqdm)

    def _rank_branches(self, doc: Any, context: str,
                       budget: int) -> tuple[list[Encoded], list[dict], list[float], dict]:
        """The prompts answered for one request: one per passage kept by the threshold (that passage alone, within
        ``budget`` tokens: :meth:`~tokrag_model.base.RAGMethodLM.encode_each`; a judged passage always fits alone),
        or the closed-book prompt alone when none is kept; the passages judged are those the budget keeps
        (:meth:`_judge`), whose docids dropped are the trace's ``dropped``. Returns ``(prompts, their passages
        (empty closed-book), their ratios r, trace)``."""
        ctxs, ratios, idx, dropped, trace = self._judge(doc, context, budget, "generate_until")
        encs, passages = self.encode_each(doc, context, budget, [ctxs[i] for i in idx])  # judged passages fit: all kept
        rel = [ratios[i] for i in idx]
        if not encs:
            encs = [self.encode_pure(context, budget)]
        trace["dropped"] = dropped
        return encs, passages, rel, trace

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """As :meth:`RAGMethodLM.generate_until` (one branch: the kept passages); with ``selection=rank``, one greedy
        answer per kept passage and the best by :func:`rank_score`:
        requests grouped by generation kwargs (lm-eval's ``Collator``, longest prompt first),
        ``batch_size`` requests decoded together with every answer branch of each its own row (one greedy answer
        per kept passage, :class:`ScoredBranch` keeping each picked token's log-prob), then per request the support
        critic on its answers and :func:`pick_ranked` over :func:`rank_score`. Outputs in the original order; the
        support critic's passes count in ``stats`` as the relevance critic's; every answer's tokens count in
        ``branch_tokens``, the returned answer's only in ``generated_tokens`` (each branch is a ``candidate`` rule,
        :class:`tokrag_model.decoder.Rule`). The loop is :meth:`RAGMethodLM._generate_batched`'s. ``selection=rank``
        is refused on a task that scores the whole generation (:func:`~tokrag_model.methods.replug.refuse_long_form`:
        the answers are judged by their first line)."""
        if self.resolved_config["selection"] != "rank":
            return super().generate_until(requests, disable_tqdm)
        refuse_long_form(self.METHOD, "selection=rank", requests)

        def make(req: Instance, budget: int
                 ) -> tuple[list[ScoredBranch], tuple[list[Encoded], list[dict], list[float], dict]]:
            made = self._rank_branches(req.doc, req.args[0], budget)
            return [ScoredBranch(e.ids) for e in made[0]], made  # candidates: generated_tokens counts the chosen (finish)

        def finish(req: Instance, made: tuple[list[Encoded], list[dict], list[float], dict], rules: list[ScoredBranch],
                   toks: list[list[int]], texts: list[str], reasons: list[str]) -> tuple[str, dict]:
            _, passages, rel, trace = made
            probs = [self.answer_prob(t, r.logprobs, text) for t, r, text in zip(toks, rules, texts)]
            best = self._rank_choose(req, passages, rel, texts, probs, trace)
            self.stats["generated_tokens"] += len(toks[best])  # the answer returned (candidates: decoder.generate)
            for cand, why in zip(trace.get("candidates") or [], reasons):  # why each answer stopped (stop/eos/budget)
                cand["stop_reason"] = why
            trace["stop_reason"] = reasons[best]  # the returned answer's
            return texts[best], trace

        return self._generate_batched(requests, disable_tqdm, make, finish)

    def answer_prob(self, toks: Sequence[int], logprobs: Sequence[float], text: str) -> tuple[float, int]:
        """``(exp(mean log-prob), tokens averaged)`` of one greedy answer's scored line: :func:`sequence_prob` over the
        tokens of the first non-empty line of ``text`` (the generation cut at the stop strings), the tokens
        :func:`~tokrag_model.methods.replug.answer_mean_logprob` averages for REPLUG's ``answer_vote`` (one rule,
        :func:`~tokrag_model.methods.replug.answer_token_span`: the whitespace-only tokens before that line (a leading
        newline), the newline, any later line, the stop string and the EOS after it left out), ``logprobs`` the
        log-prob (nats) of each token of ``toks``. ``(0.0, 0)`` for a generation without a line (nothing to average:
        it adds nothing to its score, where Self-RAG's ``max(n, 1)`` gives an empty output 1.0)."""
        start, end = answer_token_span(self.tokenizer, toks, text)  # the answer line's tokens
        end = min(end, len(logprobs))
        return (sequence_prob(logprobs[start:end]), end - start) if end > start else (0.0, 0)

    def _rank_choose(self, req: Instance, passages: list[dict], rel: list[float], texts: list[str],
                     probs: list[tuple[float, int]], trace: dict) -> int:
        """The index in ``texts`` of the answer returned for one request from its branches' answers ``texts`` (the
        passages' order; one closed-book text when ``passages`` is empty) and their :meth:`answer_prob` ``probs``,
        with the support critic run here; fills ``trace``."""
        c = self.resolved_config
        if not passages:
            trace.update({"passages": [], "closed_book": True, "support": {}, "candidates": [], "chosen": None})
            return 0
        sup = self.support(self.question_of(req.doc, req.args[0]), passages, texts)
        seq = [q for q, _ in probs]
        scores = [rank_score(q, r, s, c["w_rel"], c["w_sup"]) for q, r, s in zip(seq, rel, sup)]
        best, sums = pick_ranked(texts, scores, vote=c["rank_aggregate"] == "answer")
        ids = [str(p.get("docid", j)) for j, p in enumerate(passages)]
        trace.update({
            "passages": [ids[best]], "closed_book": False,
            "support": dict(zip(passage_keys(passages), (round(s, 4) for s in sup))),
            "candidates": [{"docid": d, "relevance": round(r, 6), "support": round(s, 6), "answer": t,
                            "seq_prob": round(q, 6), "n_tokens": n, "score": round(sc, 6)}
                           for d, r, s, t, q, (_, n), sc in zip(ids, rel, sup, texts, seq, probs, scores)],
            "chosen": ids[best]})
        cut = cuts_of([passages[best]], [ids[best]])  # the top passage cut to the budget: as every method's trace
        if cut:
            trace["cut"] = cut
        if sums is not None:
            trace["answer_scores"] = {k: round(v, 6) for k, v in sums.items()}
        return best
