"""``rag-replug``: REPLUG (Shi et al., NAACL 2024, arXiv 2301.12652, §3) — one branch per passage
(passage + task context), decoded in one batch; the next-token distribution is the probability mixture

    p(y | x) = Σ_i w_i · p(y | d_i, x),   w = softmax(s / τ)   (``uniform``: w_i = 1/k)

with ``s`` the retriever's scores of the k passages — a mixture of probabilities (log-sum-exp of
log-probs), not logit pooling. The lm-eval class, its per-step rule and the two formulas live here.

``replug_mode=answer_vote`` is the official code's QA path instead (``swj0419/REPLUG``,
``downstream_eval/qa_final.py``; docs/baselines.md Appendix A), generation only: one greedy answer per passage
(the same per-passage prompts as the mixture's branches, decoded as independent rows of one batch), each weighted

    v_i = softmax(s / τ)_i · exp(mean log-prob of answer i's tokens)

the weights of answers with the same first non-empty line summed, and the answer with the largest sum returned
(:func:`answer_vote`, :func:`answer_mean_logprob`). Refused on a long-form task that scores the whole generation
(ELI5: :func:`refuse_long_form`).

Scores and temperature come from the doc (issue 11.1): the tasks give every attached passage — noise and
counterfactual ones included — the score their retriever gives it for the question, and record the score
scale in ``doc["scored_by"]`` (:func:`retrieval.score_label`); τ is :data:`REPLUG_TAU` of that scale unless
the model argument ``replug_temperature`` sets it. In ``mixture`` mode a passage without a score is an
error naming the doc and the passage (never a silent 0, which gave inserted passages a weight of ~1e-5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from retrieval.errors import ConfigError, DataError
from tasks.utils import answer_line

from ..args import Arg, choice, to_opt_float
from ..base import RAGMethodLM, ScoredBranch, ScorePlan, budget_check
from ..decoder import Batch, Forced, MultiContextDecoder
from ..prompt import Encoded, doc_name, get_ctxs

REPLUG_MODES = ("mixture", "uniform", "answer_vote")
"""``replug_mode`` values: the score-weighted token mixture, the uniform one, the official QA path's answer vote."""

# Default REPLUG temperature per score scale (doc["scored_by"]; scores live on different scales): BM25
# scores differ by a few points between ranks (τ=1 keeps the top passage dominant but not one-hot), and so do
# DPR inner products; MiniLM-style cosines differ by ~0.01–0.1 (τ=0.05); reciprocal-rank-fusion scores by
# ~0.001 (τ=0.005). No default where the scale is not known in advance (pass replug_temperature): weighted hybrid
# fusion (scales mixed by alpha) and un-normalised dense inner products (``dense-ip``: l2_norm false or a non-DPR
# checkpoint under encoder_class dpr; ``dense`` is cosines only, retrieval.score_label). τ=0.05 on inner products
# of ~22 gave one passage all the weight on every question.
REPLUG_TAU = {"bm25": 1.0, "dpr": 1.0, "dense": 0.05, "hybrid-rrf": 0.005}
NO_DEFAULT_TAU = {
    "hybrid-weighted": "weighted hybrid fusion (alpha * BM25 + dense)",
    "dense-ip": "the dense retriever's raw inner products (l2_norm false, or an encoder_class=dpr checkpoint other "
                "than DPR's own)",
}


# ------------------------------------------------------------------------------------------ formulas
def positive_temperature(value: Any) -> float | None:
    """The ``replug_temperature`` caster: a finite number > 0, or None (the doc's default). Checked when the model
    arguments are read, before the weights load (it was checked in ``setup``, after the load)."""
    tau = to_opt_float(value)
    if tau is not None and tau <= 0:
        raise ValueError(f"replug_temperature must be > 0, got {tau:g}")
    return tau


def replug_weights(scores: Sequence[float], tau: float | None, mode: str = "mixture") -> torch.Tensor:
    """REPLUG passage weights: ``softmax(s/τ)`` (``mixture``, and the retriever factor of ``answer_vote``) or ``1/k``
    (``uniform``) -> (k,) float64.

    Computed as ``softmax((s − max s)/τ)`` (the same weights: softmax is shift-invariant), so they are finite for every
    finite τ > 0: the top score's logit is exactly 0, and a τ so small that ``s/τ`` overflows (scores ~10 with
    ``τ=1e-308``) gives the other passages weight 0 instead of ``inf − inf`` = NaN weights, which made the mixture NaN
    and its argmax token 0 at every step (as :func:`~tokrag_model.methods.ensemble_entropy.entropy_weights`).

    Raises:
        ValueError: ``tau <= 0`` in mixture / answer_vote mode, a score that is NaN or infinite (its weight would be
            NaN: :func:`passage_scores` refuses such a doc first, naming it), or an unknown mode.
    """
    k = len(scores)
    if mode == "uniform":
        return torch.full((k,), 1.0 / k, dtype=torch.float64)
    if mode not in REPLUG_MODES:
        raise ValueError(f"replug_mode must be one of {', '.join(REPLUG_MODES)}, got {mode!r}")
    if tau is None or tau <= 0:
        raise ValueError(f"replug temperature must be > 0, got {tau}")
    s = torch.tensor([float(x) for x in scores], dtype=torch.float64)
    if not bool(torch.isfinite(s).all()):
        raise ValueError(f"replug scores must be finite numbers, got {[float(x) for x in scores]}")
    return torch.softmax((s - s.max()) / tau, dim=0)


def _finite(x: float) -> bool:
    """``x`` is a finite float (an int too large for a float, ``10**400``, is not): the rank rule's
    :func:`retrieval.cache._finite`, one rule for a score and a rank."""
    from retrieval.cache import _finite as finite

    return finite(x)


def _shown(score: Any) -> str:
    """``score`` as the messages show it: its ``repr``, except an int too large for a float, shown by its size (its
    digits could fill the line, and Python 3.11+ refuses to write one of over 4300 digits: ValueError)."""
    if isinstance(score, int) and not isinstance(score, bool) and not _finite(score):
        return f"an integer of {score.bit_length()} bits, too large for a float"
    return repr(score)


def passage_scores(doc: Any, ctxs: Sequence[dict], mode: str = "mixture") -> list[float]:
    """The retriever scores of ``ctxs`` (``score`` of each passage); ``mode`` (the ``replug_mode`` that needs them:
    ``mixture`` or ``answer_vote``) is named in the error.

    Raises:
        DataError: a passage without a numeric score, or with a NaN or infinite one (JSON docs may hold ``NaN`` and
            ``Infinity``, which Python's json reads as floats; its weight would be NaN, and every mixture token with
            it: the argmax then emitted token 0 at every step), naming the doc (:func:`doc_name`: its ``qid`` or ``id``)
            and the passage (docid, rank).
    """
    out = []
    for i, c in enumerate(ctxs):
        score = c.get("score")
        number = not isinstance(score, bool) and isinstance(score, (int, float))
        if not number or not _finite(score):
            what = (f"a score that is not a finite number ({_shown(score)})" if number
                    else f"no retriever score ({score!r})")
            raise DataError(
                f"--model rag-replug (replug_mode={mode}): doc {doc_name(doc)}, passage {c.get('docid', '?')!r} (rank "
                f"{c.get('rank', i + 1)}) has {what}; the weights softmax(score/τ) need a finite one for every "
                "passage: give it its retriever's score in the docs, rebuild them with a tokrag retrieval task (it "
                "scores every attached passage), or use replug_mode=uniform"
            )
        out.append(float(score))
    return out


def doc_temperature(doc: Any, override: float | None) -> float:
    """τ for ``doc``: ``override`` (the ``replug_temperature`` model argument) when given, else
    :data:`REPLUG_TAU` of the doc's ``scored_by``.

    Raises:
        ConfigError: the doc records no ``scored_by``, or a scale without a default (:data:`NO_DEFAULT_TAU`:
            ``hybrid-weighted``, ``dense-ip``; or an unknown one) (one line, what to pass).
    """
    if override is not None:
        return float(override)
    scale = doc.get("scored_by") if isinstance(doc, dict) else None
    if scale is None:
        raise ConfigError(f"--model rag-replug: doc {doc_name(doc)} does not record which retriever scored its "
                          "passages (doc['scored_by']); pass replug_temperature=τ explicitly")
    if scale in NO_DEFAULT_TAU:
        raise ConfigError(f"--model rag-replug: no default temperature for scores from {scale!r} (doc {doc_name(doc)}; "
                          f"{NO_DEFAULT_TAU[scale]}: their scale depends on the settings); pass replug_temperature=τ "
                          "chosen for these scores, or replug_mode=uniform")
    if scale not in REPLUG_TAU:
        raise ConfigError(f"--model rag-replug: no default temperature for scores from {scale!r} (doc {doc_name(doc)}; "
                          f"defaults: {', '.join(f'{k}={v}' for k, v in REPLUG_TAU.items())}); pass replug_temperature=τ")
    return REPLUG_TAU[scale]


def mixture_logprobs(logprobs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """``log Σ_i w_i·p_i`` for (k, V) log-probs and (k,) weights -> (V,) log-probs (nats)."""
    lw = torch.log(weights.to(logprobs.device, torch.float64)).unsqueeze(-1)
    return torch.logsumexp(lw + logprobs.double(), dim=0).float()


def weight_summary(weights: torch.Tensor) -> tuple[float, float]:
    """``(max_i w_i, −Σ_i w_i·ln w_i)`` of (k,) mixture weights: the top-1 weight and the weight entropy in
    nats (0 = one passage takes all the mass, ln k = uniform); the trace fields ``top1_weight`` and
    ``weight_entropy`` of the per-passage methods."""
    w = weights.double()
    ent = -float(torch.where(w > 0, w * torch.log(w), torch.zeros_like(w)).sum())
    return float(w.max()), max(0.0, ent)




def answer_token_span(tokenizer: Any, toks: Sequence[int], text: str) -> tuple[int, int]:
    """``(start, end)``: the slice of ``toks`` (one greedy answer's token ids) that holds its scored line,
    :func:`tasks.utils.answer_line` of ``text`` (``text``: the generation cut at the stop strings). ``end`` is the
    shortest prefix of ``toks`` whose text (decoded without special tokens, leading whitespace removed) starts with
    that line, so the newline, any later line, the stop string and the EOS after it are left out; ``start`` is the
    first token whose prefix text is not whitespace-only, so the newline / space tokens before the line are left out
    too (the official ``qa_final.py`` ``call_api`` skips every ``"\n"`` token; its API's ``stop="\n"`` left none
    after the answer). ``(0, 0)`` for a generation without a line; ``end = len(toks)`` if no prefix decodes to the
    line."""
    key = answer_line(text)
    if not key:
        return 0, 0
    start = None
    for m in range(1, len(toks) + 1):
        head = tokenizer.decode(list(toks[:m]), skip_special_tokens=True)
        if start is None and head.strip():
            start = m - 1  # the first token that adds a non-whitespace character
        if head.lstrip().startswith(key):
            return start, m
    return (start or 0), len(toks)


def answer_mean_logprob(tokenizer: Any, toks: Sequence[int], chosen: Sequence[float], text: str) -> tuple[float, int]:
    """``(mean log-prob in nats, tokens averaged)`` of one greedy answer: the mean of ``chosen`` (the log-prob of
    each token the decoder chose, in order, from the first of ``toks`` on) over the answer's tokens,
    :func:`answer_token_span` of ``toks`` and ``text`` (``text``: the generation cut at the stop strings): the tokens
    of the scored line (:func:`tasks.utils.answer_line`), without the whitespace-only tokens before it (a leading
    ``"\n"``) or the newline, stop string or EOS after it (the official code averages the answer's tokens, leaving
    out newlines and the end-of-text token).

    An answer without a line (nothing but whitespace generated, an EOS first, ``max_gen_toks=0``) has no tokens to
    average: ``(-inf, 0)``, so its vote weight ``exp(-inf) = 0`` never outvotes an answer (:func:`answer_vote`). The
    official code's mean of no log-probs is NaN, which its ``max`` ranks by position (a NaN weight wins only as the
    first answer seen), so it is not followed there.
    """
    start, end = answer_token_span(tokenizer, toks, text)
    end = min(end, len(chosen))
    if end <= start:
        return -math.inf, 0
    return math.fsum(float(x) for x in chosen[start:end]) / (end - start), end - start


def answer_vote(answers: Sequence[str], weights: Sequence[float], mean_logprobs: Sequence[float]
                ) -> tuple[int, str, float, list[float]]:
    """REPLUG's answer-level vote (official ``downstream_eval/qa_final.py``): answer ``i`` gets
    ``v_i = weights[i] · exp(mean_logprobs[i])`` (retriever weight ``softmax(s/τ)_i`` times the answer's
    per-token probability, geometric mean; 0 for an empty answer, whose mean is ``-inf``: :func:`answer_mean_logprob`),
    the ``v`` of answers with the same scored line (:func:`tasks.utils.answer_line`) are summed, and the key with
    the largest sum wins (a tie, e.g. every answer empty: the key first seen in passage order, as the official
    ``max`` over an insertion-ordered dict).

    Returns:
        ``(i, key, total, v)``: the passage whose generation is returned (the winning key's largest ``v_i``, the
        first on a tie), the winning key, its summed weight, and every ``v_i``.

    Raises:
        ValueError: empty inputs or inputs of different lengths.
    """
    if not answers or not (len(answers) == len(weights) == len(mean_logprobs)):
        raise ValueError(f"answer_vote needs one weight and one mean log-prob per answer, got {len(answers)} answers, "
                         f"{len(weights)} weights, {len(mean_logprobs)} mean log-probs")
    v = [float(w) * math.exp(float(lp)) for w, lp in zip(weights, mean_logprobs)]
    totals: dict[str, float] = {}
    best: dict[str, int] = {}
    # Answers vote by their scored line (tasks.utils.answer_line: the first non-empty line, stripped), the extraction
    # rule of every QA task of this project (rag-selfrag-filter's selection=rank uses it too). The official code
    # compares the raw .strip()-ed strings, which its API's stop="\n" made one line; the tasks' stop strings here
    # ("\n\n", "Question:") let a generation run past its first line, and two generations with the same first line
    # are the same prediction for every metric, so they vote together. Not the SQuAD normalisation of EM: the model
    # does not know the task's metric, and that would merge answers some metrics tell apart ("1.5" and "15").
    for i, a in enumerate(answers):
        key = answer_line(a)
        totals[key] = totals.get(key, 0.0) + v[i]
        if key not in best or v[i] > v[best[key]]:
            best[key] = i
    win = max(totals, key=lambda k: totals[k])  # the first maximal key in insertion order
    return best[win], win, totals[win], v


def refuse_long_form(method: str, setting: str, requests: Sequence[Any]) -> None:
    """Refuse ``setting`` of ``method`` (it judges or votes on the generations' first non-empty line,
    :func:`tasks.utils.answer_line`) on a request whose task scores the whole generation
    (:func:`tasks.longform.scores_whole_generation`: ELI5), where different answers sharing a first line ("Good
    question!") would count as one. Checked at the first ``generate_until``, before any decoding.

    Raises:
        ConfigError: one line naming the method, the setting, the task and what to use instead.
    """
    from tasks.longform import scores_whole_generation

    for task in dict.fromkeys(getattr(r, "task_name", None) for r in requests):
        if scores_whole_generation(task):
            raise ConfigError(long_form_refusal(method, setting, task))


def long_form_refusal(method: str, setting: str, task: str) -> str:
    """The one-line refusal of ``setting`` of ``method`` on ``task``, a task that scores the whole generation: raised
    by :func:`refuse_long_form` (first ``generate_until``) and, before the model loads, by
    :func:`tasks.precheck.check_run_arguments`."""
    return (f"--model {method}: {setting} judges each generation by its first non-empty line, but task {task!r} "
            f"scores the whole generation (long-form, tasks/longform.py); run that task without {setting}")


# ---------------------------------------------------------------------------------------- generation
class ReplugRule:
    """REPLUG: rows = one (passage + context) prompt per passage; greedy on ``log Σ_i w_i p_i``."""

    needs_hidden = False

    def __init__(self, prompts: list[list[int]], weights: torch.Tensor) -> None:
        self.prompts = prompts
        self.weights = weights

    def rows(self) -> list[list[int]]:
        return self.prompts

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        return int(mixture_logprobs(batch.logprobs[rows], self.weights).argmax())


# ---------------------------------------------------------------------------------------- lm-eval model
class ReplugLM(RAGMethodLM):
    """``rag-replug``: REPLUG (Shi et al. 2024) — one branch per passage (passage + task context); the
    next-token distribution is the probability mixture ``Σ_i w_i p_i`` with ``w = softmax(score/τ)``
    (``replug_mode=mixture``) or ``w = 1/k`` (``uniform``). τ: ``replug_temperature`` when given, else the
    default of the doc's score scale (:func:`doc_temperature`, :data:`REPLUG_TAU`: bm25 1.0, dpr 1.0,
    dense 0.05, hybrid-rrf 0.005). The passages are those every method shows (the block rule of
    :meth:`~tokrag_model.base.RAGMethodLM.encode_per_passage`), one branch each. Trace: ``passages``, ``dropped``
    (docids dropped for the budget), ``weights``, ``top1_weight``, ``weight_entropy``
    (nats), ``tau``; no passage shown (none retrieved, or all dropped for the budget): the closed-book prompt alone,
    ``closed_book`` true, ``weights`` [] and ``top1_weight`` / ``weight_entropy`` null (no passage was weighted).

    ``replug_mode=answer_vote`` (generation only; the official QA path): each branch is decoded greedily on its own
    (independent rows of one batch, ``batch_size`` questions at a time), answers are voted by :func:`answer_vote`
    with ``weights`` = ``softmax(score/τ)`` (τ as above) and the winning answer's generation returned.
    Its trace adds ``mode``, ``votes`` (per passage: ``docid``, ``answer`` (the generation), ``mean_logprob``
    (nats, :func:`answer_mean_logprob`; null for an empty answer), ``weight`` = ``v_i``) and ``chosen``
    (``answer``: the key voted on, ``weight``: its summed ``v``, ``docid``: the passage whose generation is
    returned). ``loglikelihood`` and ``loglikelihood_rolling`` are refused (:class:`ConfigError`: use mixture or
    uniform for scoring tasks); :meth:`generation_only` declares it, so ``tokrag leaderboard run`` refuses such a
    cell before any model loads."""

    METHOD = "rag-replug"
    # replug_temperature acts with mixture and answer_vote: its "no effect with uniform" check is resolve_args'
    # (Arg.only_with names one value)
    EXTRA_ARGS = {
        "replug_temperature": Arg(None, positive_temperature, "τ in softmax(score/τ) (default: from the doc's "
                                  "scored_by; replug_mode mixture or answer_vote)"),
        "replug_mode": Arg("mixture", choice(*REPLUG_MODES), "mixture | uniform | answer_vote (generation only: one "
                           "answer per passage, softmax(score/τ)·exp(mean log-prob) summed per answer)"),
    }

    @classmethod
    def resolve_args(cls, cfg: dict[str, Any], given: dict[str, Any], preset: dict | None = None) -> dict[str, Any]:
        """``cfg`` unchanged, after the check that ``replug_temperature`` acts: it sets τ of ``mixture`` and
        ``answer_vote``, so with ``uniform`` weights it is refused (it would have no effect).

        Raises:
            ConfigError: ``replug_temperature`` given with ``replug_mode=uniform`` (one line, the message of
            :func:`tokrag_model.args.parse_args` for an argument without effect).
        """
        if cfg.get("replug_temperature") is not None and cfg.get("replug_mode") == "uniform":
            raise ConfigError(f"--model {cls.METHOD}: model argument replug_temperature="
                              f"{given.get('replug_temperature', cfg['replug_temperature'])!r} has no effect with "
                              "replug_mode='uniform'; add replug_mode=mixture or "
                              "replug_mode=answer_vote to use it, or drop replug_temperature")
        return super().resolve_args(cfg, given, preset)

    @classmethod
    def generation_only(cls, cfg: dict[str, Any]) -> str | None:
        """``"replug_mode=answer_vote"`` when ``cfg`` votes answers (generation only: :meth:`score_plan` refuses
        scoring requests), else None (:meth:`tokrag_model.base.RAGMethodLM.generation_only`)."""
        return "replug_mode=answer_vote" if cfg.get("replug_mode") == "answer_vote" else None

    def _note_tau(self, doc: Any, kind: str | None) -> None:
        """Record (for :meth:`resolved_values`) the τ that weights ``doc``'s passages: :func:`doc_temperature` of the
        doc and ``replug_temperature``, for a doc with passages under ``mixture`` / ``answer_vote``; ``kind``: the
        request type, whose example task a doc without passages is refused with.

        Raises:
            ConfigError, DataError: as :func:`doc_temperature` and :func:`tokrag_model.prompt.get_ctxs`.
        """
        c = self.resolved_config
        if c["replug_mode"] != "uniform" and get_ctxs(doc, self.METHOD, c["k"], kind):
            self.__dict__.setdefault("_taus_used", set()).add(doc_temperature(doc, c["replug_temperature"]))

    def start_evaluation(self, apply_chat_template: Any = False, use_cache: bool = False) -> None:
        """:meth:`tokrag_model.base.RAGMethodLM.start_evaluation`, and forget the τs of earlier evaluations: a model
        object reused for several (a notebook, a leaderboard's cells) recorded them all in
        ``replug_temperature_resolved`` (a dense run after a BM25 one: ``[0.05, 1.0]``)."""
        super().start_evaluation(apply_chat_template, use_cache)
        self.__dict__.pop("_taus_used", None)

    def response_cache_args(self, attr: str, req: Any) -> list:
        """:meth:`tokrag_model.base.RAGMethodLM.response_cache_args`, after recording ``req``'s τ
        (:meth:`_note_tau`): lm-eval's ``--use_cache`` keys every request it reads by it, also those it answers
        from the cache, which never reach :meth:`_branches` (their τ was left out of the results). ``attr`` is the
        request type: lm-eval keys a request before it calls the model, so a doc without passages is refused here
        first, with the example task of ``attr``."""
        self._note_tau(req.doc, attr)
        return super().response_cache_args(attr, req)

    def _branches(self, doc: Any, context: str, budget: int, kind: str | None = None
                  ) -> tuple[list[Encoded], torch.Tensor, dict]:
        self._note_tau(doc, kind)  # also when no passage fits the budget: the rule of a request read from the cache
        encs, ctxs, trace = self.per_passage_branches(doc, context, budget, kind)
        if not ctxs:
            # closed-book: no passage weighted, so no weights and no top1_weight / weight_entropy (null, as the
            # filter's kept_rate with no passage): the leaderboard's means leave the question out
            closed = trace.pop("closed_book")  # kept last, as before
            return encs, torch.ones(1, dtype=torch.float64), {**trace, "weights": [], "top1_weight": None,
                                                              "weight_entropy": None, "tau": None, "closed_book": closed}
        c = self.resolved_config
        if c["replug_mode"] == "uniform":
            tau = None
            w = replug_weights([0.0] * len(ctxs), None, "uniform")
        else:  # mixture, answer_vote: softmax(s/τ)
            tau = doc_temperature(doc, c["replug_temperature"])
            w = replug_weights(passage_scores(doc, ctxs, c["replug_mode"]), tau, c["replug_mode"])
        top1, ent = weight_summary(w)
        trace.update({"weights": [round(float(x), 4) for x in w], "top1_weight": round(top1, 4),
                      "weight_entropy": round(ent, 4), "tau": tau})
        return encs, w, trace

    def resolved_values(self) -> dict[str, Any]:
        """``replug_temperature_resolved``: the τ the mixture weights used (``replug_temperature`` when given, else the
        default of the docs' ``scored_by``: :func:`doc_temperature`, e.g. 1.0 for BM25), a sorted list when docs of
        several score scales used several, None when no doc was weighted (``replug_mode=uniform``, or no request
        with passages yet). Resolved as requests are read (:meth:`_note_tau`), whether answered or read back by
        ``--use_cache``; a doc with passages answered closed-book because none fit the budget counts too. Under
        data parallelism, the τs this rank's docs used."""
        taus = sorted(self.__dict__.get("_taus_used", ()))
        return {"replug_temperature_resolved": None if not taus else taus[0] if len(taus) == 1 else taus}

    def make_rule(self, doc: Any, context: str, budget: int, kind: str = "generate_until") -> tuple[Any, dict]:
        """The mixture's rule (``mixture``, ``uniform``).

        Raises:
            ConfigError: ``replug_mode=answer_vote``, whose branches are decoded each on its own
            (:meth:`generate_until`), not by one rule.
        """
        if self.resolved_config["replug_mode"] == "answer_vote":
            raise ConfigError(f"--model {self.METHOD}: replug_mode=answer_vote decodes one answer per passage in "
                              "generate_until, not one mixture rule; use replug_mode=mixture or uniform for a rule")
        encs, w, trace = self._branches(doc, context, budget, kind)
        return ReplugRule([e.ids for e in encs], w), trace

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int, kind: str | None = None) -> ScorePlan:
        """The mixture's teacher-forced plan: per continuation token ``log Σ_i w_i p_i``, summed.

        Raises:
            ConfigError: ``replug_mode=answer_vote`` (generation only), at the first ``loglikelihood`` /
            ``loglikelihood_rolling`` request, before any forward pass.
        """
        self.refuse_if_generation_only(
            f"--model {self.METHOD}: replug_mode=answer_vote only generates (one answer per passage, then a vote) and "
            "cannot score loglikelihood / loglikelihood_rolling requests (multiple-choice, perplexity tasks): use "
            "replug_mode=mixture or replug_mode=uniform for scoring tasks")
        encs, w, trace = self._branches(doc, context, budget_check(cont, budget, self.METHOD), kind)

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            lps = torch.stack([f.logprobs for f in forced])  # (k, C, V)
            mix = torch.stack([mixture_logprobs(lps[:, i], w) for i in range(len(cont))])
            ll, greedy = self._sum_ll(mix, cont)
            return ll, greedy, trace

        return ScorePlan([e.ids for e in encs], cont, finish)

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        """:meth:`RAGMethodLM.generate_until` (``mixture``, ``uniform``), or the answer vote (``answer_vote``).

        ``answer_vote``: each request's branches (:meth:`_branches`: one prompt per shown passage, the closed-book
        prompt when none fits) are decoded greedily as independent rows, ``batch_size`` requests per
        :func:`tokrag_model.decoder.generate` call (grouped by generation kwargs and sorted by longest prompt as the
        base does: :meth:`RAGMethodLM._generate_batched`); each generation is cut at the stop strings as the base cuts
        it, and :func:`answer_vote` picks the generation returned; refused on a task that scores the whole
        generation (:func:`refuse_long_form`: the vote is by first line). Stats count every branch's prefill and steps, and
        its tokens in ``branch_tokens``; ``generated_tokens`` counts the tokens of the generation returned only (each
        branch is a ``candidate`` rule, :class:`tokrag_model.decoder.Rule`). Outputs in the original order; with
        ``batch_invariant`` the same at every batch size.
        """
        if self.resolved_config["replug_mode"] != "answer_vote":
            return super().generate_until(requests, disable_tqdm)
        refuse_long_form(self.METHOD, "replug_mode=answer_vote", requests)

        def make(req: Any, budget: int) -> tuple[list[ScoredBranch], tuple[list[Encoded], torch.Tensor, dict]]:
            made = self._branches(req.doc, req.args[0], budget, "generate_until")
            # every branch an independent rule, its own candidate answer: generated_tokens counts the voted one (_vote)
            return [ScoredBranch(e.ids) for e in made[0]], made

        def finish(req: Any, made: tuple[list[Encoded], torch.Tensor, dict], branches: list[ScoredBranch],
                   toks: list[list[int]], texts: list[str], reasons: list[str]) -> tuple[str, dict]:
            return self._vote(made, branches, toks, texts, reasons)

        return self._generate_batched(requests, disable_tqdm, make, finish)

    def _vote(self, made: tuple[list[Encoded], torch.Tensor, dict], branches: list[ScoredBranch], toks: list[list[int]],
              texts: list[str], reasons: list[str] | None = None) -> tuple[str, dict]:
        """``(generation returned, trace)`` of one ``answer_vote`` request from its branches' tokens ``toks`` and
        texts (cut at the stop strings: :meth:`~tokrag_model.base.RAGMethodLM._generate_batched`); the returned
        branch's tokens are added to ``stats["generated_tokens"]``. With ``reasons`` (why each branch stopped:
        ``stop``, ``eos``, ``budget``) each vote and the trace (the returned branch's) get ``stop_reason``."""
        encs, w, trace = made
        means = [answer_mean_logprob(self.tokenizer, t, b.logprobs, text)[0]
                 for t, b, text in zip(toks, branches, texts)]
        best, key, total, v = answer_vote(texts, [float(x) for x in w], means)
        self.stats["generated_tokens"] += len(toks[best])  # the answer returned (candidates: decoder.generate)
        docids = [e.kept[0] if e.kept else None for e in encs]
        votes = [{"docid": d, "answer": a, "mean_logprob": round(m, 4) if math.isfinite(m) else None,
                  "weight": round(x, 6)} for d, a, m, x in zip(docids, texts, means, v)]
        stopped = {}
        if reasons is not None:
            votes = [{**vote, "stop_reason": r} for vote, r in zip(votes, reasons)]
            stopped = {"stop_reason": reasons[best]}
        return texts[best], {**trace, "mode": "answer_vote", "votes": votes,
                             "chosen": {"answer": key, "weight": round(total, 6), "docid": docids[best]}, **stopped}
