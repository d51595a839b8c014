"""lm-eval models: ``tokrag``, ``rag-standard``, ``rag-replug``, ``rag-selfrag-filter``, ``rag-none``.

All five share :class:`RAGMethodLM` (model loading, prompts, budget, batching, traces, stats); a method
only says how a request becomes branches and how the next token / the continuation score is chosen.
The base model, prompt, passages, truncation and generation budget are identical for all methods.

Traces (``trace=true``, the default): each request's decisions are appended to ``Instance.arguments``
as one extra element ``{"tokrag_trace": {...}}``; lm-eval 0.4.13 writes the arguments of every request
into the ``--log_samples`` JSONL (``arguments.gen_args_<i>.arg_<n>``), so the decisions travel with the
sample. They are not attached when lm-eval's ``--use_cache`` is on (the response cache keys on the
arguments).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from lm_eval.api.instance import Instance  # noqa: E402
from lm_eval.api.model import LM  # noqa: E402
from lm_eval.models.utils import handle_stop_sequences, postprocess_generated_text  # noqa: E402
from tqdm import tqdm  # noqa: E402

from retrieval.errors import ConfigError  # noqa: E402

from .args import COMMON_ARGS, Arg, choice, layer_spec, parse_args, to_bool, to_opt_float  # noqa: E402
from .decoder import MultiContextDecoder, generate  # noqa: E402
from .loading import resolve_device, resolve_pretrained, set_linear_weight_layout, torch_dtype, weights_fingerprint  # noqa: E402
from .distributed import DataParallel  # noqa: E402
from .methods import (  # noqa: E402
    ReplugRule,
    SingleBranch,
    TokenDecision,
    TokRAGParams,
    TokRAGRule,
    TokRAGScorer,
    branch_logprobs,
    tokrag_token_scores,
)
from .prompt import Encoded, PromptBuilder, get_ctxs  # noqa: E402
from .rules import filter_by_relevance, is_function_token, is_skip_token, mixture_logprobs, relevance_ratio, replug_weights  # noqa: E402

log = logging.getLogger(__name__)


@dataclass
class Backbone:
    """A loaded causal LM shared by method instances: model, tokenizer, local folder, weights fingerprint."""

    model: Any
    tokenizer: Any
    path: Path
    source: str
    fingerprint: str
    dtype: str
    device: str
    weight_layout: str = "row"

    @classmethod
    def load(cls, pretrained: str, dtype: str = "float32", device: str = "cpu", revision: str | None = None,
             trust_remote_code: bool = False, weight_layout: str = "auto") -> "Backbone":
        """Resolve ``pretrained`` (see :mod:`tokrag_model.loading`) and load it in eval mode.

        ``weight_layout``: see :func:`tokrag_model.loading.set_linear_weight_layout` (``auto``: column-major
        Linear weights on CPU in float32, faster decode steps; as loaded elsewhere).

        Raises:
            ConfigError, OfflineError: see :func:`tokrag_model.loading.resolve_pretrained`; an unknown
            ``weight_layout``.
        """
        from transformers import AutoModelForCausalLM, AutoTokenizer

        res = resolve_pretrained(pretrained)
        dev = resolve_device(device)
        td = torch_dtype(dtype)
        try:
            tok = AutoTokenizer.from_pretrained(res.path, revision=revision, trust_remote_code=trust_remote_code)
            model = AutoModelForCausalLM.from_pretrained(res.path, dtype=td, revision=revision,
                                                         trust_remote_code=trust_remote_code).to(dev).eval()
        except (OSError, ValueError) as exc:
            raise ConfigError(f"pretrained={pretrained!r}: cannot load a causal LM from {res.path}: {exc}") from None
        layout = set_linear_weight_layout(model, weight_layout, dev)
        return cls(model, tok, res.path, res.source, weights_fingerprint(res.path), str(model.dtype).replace("torch.", ""),
                   dev, layout)


# Default REPLUG temperature per retriever (scores live on different scales): BM25 scores differ by a few
# points between ranks (τ=1 keeps the top passage dominant but not one-hot); MiniLM/DPR-style cosine or
# inner products differ by ~0.01–0.1 (τ=0.05); reciprocal-rank-fusion scores by ~0.001 (τ=0.005).
REPLUG_TAU = {"bm25": 1.0, "dense": 0.05, "hybrid": 0.005, "oracle": 1.0}


class RAGMethodLM(LM):
    """Base of the five methods (an lm-eval ``LM``).

    Model arguments: :data:`tokrag_model.args.COMMON_ARGS` plus the method's ``EXTRA_ARGS``; unknown
    keys raise :class:`ConfigError` listing the valid ones.

    Attributes:
        stats: ``forward_passes`` (sequence forwards; a batched call over B rows counts B),
            ``generated_tokens``, ``prompt_tokens`` (prefilled/teacher-forced tokens).
        fingerprint: weights hash (SHA-256 prefix over the safetensors files).
        resolved_config: every model argument after defaults and casting.
    """

    METHOD = "base"
    USES_PASSAGES = True
    EXTRA_ARGS: dict[str, Arg] = {}

    def __init__(self, backbone: Backbone | None = None, **kwargs: Any) -> None:
        super().__init__()
        cfg = parse_args(self.METHOD, {**COMMON_ARGS, **self.EXTRA_ARGS}, kwargs)
        self.resolved_config = cfg
        # Data parallel under `accelerate launch` / torchrun (lm-eval shards requests by rank).
        self.dp = DataParallel(resolve_device(cfg["device"]) if backbone is None else backbone.device)
        self._rank, self._world_size = self.dp.rank, self.dp.world_size
        if backbone is None:
            backbone = Backbone.load(cfg["pretrained"], cfg["dtype"], self.dp.device, cfg["revision"], cfg["trust_remote_code"],
                                     cfg["weight_layout"])
        self.backbone = backbone
        self.model, self.tokenizer = backbone.model, backbone.tokenizer
        self.fingerprint = backbone.fingerprint
        cfg["device"] = backbone.device
        cfg["weight_layout"] = backbone.weight_layout
        mcfg = self.model.config
        native = getattr(mcfg, "max_position_embeddings", None) or 2048
        self.max_length = int(cfg["max_length"] or min(int(native), 8192))
        cfg["max_length"] = self.max_length
        self.batch_size = cfg["batch_size"]
        self.stats: dict[str, int] = {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0}
        self.decoder = MultiContextDecoder(self.model, self.stats)
        self.prompts = PromptBuilder(self.tokenizer, cfg["passage_template"], cfg["add_bos_token"], cfg["max_passage_tokens"])
        eos = {self.tokenizer.eos_token_id}
        gen_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        eos |= set(gen_eos) if isinstance(gen_eos, (list, tuple)) else {gen_eos}
        self.eos_ids = {int(e) for e in eos if e is not None}
        self._special = set(self.tokenizer.all_special_ids)
        self._tok_cache: dict[int, tuple[str, bool]] = {}
        self._func_cache: dict[int, bool] = {}
        self._skip_cache: dict[int, bool] = {}
        self.setup()

    @classmethod
    def with_backbone(cls, backbone: Backbone, **kwargs: Any) -> "RAGMethodLM":
        """Build the method over an already loaded model (tests, benchmarks, sweeps: load once)."""
        kwargs.pop("pretrained", None)
        return cls(backbone=backbone, pretrained=str(backbone.path), **kwargs)

    def setup(self) -> None:
        """Hook for per-method state built from ``resolved_config``."""

    # ------------------------------------------------------------------ bookkeeping
    def reset_stats(self) -> None:
        for key in self.stats:
            self.stats[key] = 0

    @property
    def device(self) -> str:
        return self.backbone.device

    # lm-eval's collectives for data-parallel runs (identity with one process); see tokrag_model.distributed
    def all_gather(self, tensor):
        return self.dp.all_gather(tensor)

    def gather_object(self, obj, dst=0):
        return self.dp.gather_object(obj, dst=dst)

    def barrier(self) -> None:
        self.dp.barrier()

    @property
    def eot_token_id(self) -> int:
        return int(self.tokenizer.eos_token_id)

    @property
    def tokenizer_name(self) -> str:
        return str(self.backbone.path).replace("/", "__")

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        if not chat_template:
            return None
        return getattr(self.tokenizer, "chat_template", None)

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(chat_history, tokenize=False, add_generation_prompt=add_generation_prompt,
                                                  continue_final_message=not add_generation_prompt)

    def get_model_info(self) -> dict:
        """Recorded by lm-eval in the results JSON ``config``: method, resolved config, weights fingerprint."""
        import lm_eval
        import transformers

        return {
            "model_num_parameters": sum(p.numel() for p in self.model.parameters()),
            "model_dtype": self.backbone.dtype,
            "tokrag_method": self.METHOD,
            "tokrag_model_fingerprint": self.fingerprint,
            "tokrag_model_source": self.backbone.source,
            "tokrag_resolved_config": {k: v for k, v in self.resolved_config.items()},
            "tokrag_versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                                "lm_eval": getattr(lm_eval, "__version__", "?")},
        }

    def token_text(self, tid: int) -> tuple[str, bool]:
        if tid not in self._tok_cache:
            self._tok_cache[tid] = (self.tokenizer.decode([tid]), tid in self._special)
        return self._tok_cache[tid]

    def is_function(self, tid: int) -> bool:
        if tid not in self._func_cache:
            self._func_cache[tid] = is_function_token(*self.token_text(tid))
        return self._func_cache[tid]

    def is_skip(self, tid: int) -> bool:
        if tid not in self._skip_cache:
            self._skip_cache[tid] = is_skip_token(*self.token_text(tid))
        return self._skip_cache[tid]

    def _attach_trace(self, req: Instance, trace: dict | None) -> None:
        if trace is None or not self.resolved_config["trace"]:
            return
        if getattr(getattr(self, "cache_hook", None), "dbdict", None) is not None:
            return  # lm-eval's response cache keys on the arguments: leave them untouched
        args = tuple(a for a in req.args if not (isinstance(a, dict) and "tokrag_trace" in a))
        req.arguments = (*args, {"tokrag_trace": {"method": self.METHOD, **trace}})

    # ------------------------------------------------------------------ prompts
    def ctxs(self, doc: Any) -> list[dict]:
        return get_ctxs(doc, self.METHOD, self.resolved_config["k"])

    def encode_rag(self, doc: Any, context: str, budget: int | None, ctxs: list[dict] | None = None) -> Encoded:
        ctxs = self.ctxs(doc) if ctxs is None else ctxs
        return self.prompts.rag(ctxs, context, budget, self.METHOD)

    def encode_pure(self, context: str, budget: int | None) -> Encoded:
        return self.prompts.pure(context, budget, self.METHOD)

    # ------------------------------------------------------------------ method hooks
    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        """Return ``(rule, trace)`` for one generation request."""
        raise NotImplementedError

    def finish_trace(self, rule: Any, trace: dict) -> dict:
        return trace

    def score(self, doc: Any, context: str, cont_text: str, budget: int) -> tuple[float, bool, dict]:
        """Teacher-forced ``(log-likelihood in nats, is_greedy, trace)`` of ``cont_text`` after ``context``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ lm-eval API
    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """Greedy generation for each request (``until``, ``max_gen_toks``, EOS honoured)."""
        results: list[str | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, req in enumerate(requests):
            groups.setdefault(json.dumps(req.args[1], sort_keys=True, default=str), []).append(i)
        eos_text = self.tokenizer.decode([self.eot_token_id], skip_special_tokens=False)
        pbar = tqdm(total=len(requests), disable=disable_tqdm, desc=f"{self.METHOD} generate_until")
        for key, idxs in groups.items():
            gen_kwargs = dict(requests[idxs[0]].args[1])
            if gen_kwargs.get("do_sample") or float(gen_kwargs.get("temperature", 0.0) or 0.0) > 0:
                log.warning("%s decodes greedily; do_sample/temperature in the task's generation_kwargs are ignored", self.METHOD)
            until = handle_stop_sequences(gen_kwargs.get("until"), eos=eos_text)
            max_gen = int(gen_kwargs.get("max_gen_toks", self.resolved_config["max_gen_toks"]))
            budget = self.max_length - max_gen
            if budget <= 0:
                raise ConfigError(f"--model {self.METHOD}: max_gen_toks={max_gen} leaves no room in max_length={self.max_length}")
            for start in range(0, len(idxs), self.batch_size):
                chunk = idxs[start:start + self.batch_size]
                made = [self.make_rule(requests[i].doc, requests[i].args[0], budget) for i in chunk]
                rules = [m[0] for m in made]
                outs = generate(self.decoder, self.tokenizer, rules, until, max_gen, self.eos_ids)
                for i, rule, (_, trace), toks in zip(chunk, rules, made, outs):
                    text = postprocess_generated_text(self.tokenizer.decode(toks, skip_special_tokens=True), until, None)
                    results[i] = text
                    self._attach_trace(requests[i], self.finish_trace(rule, trace))
                    self.cache_hook.add_partial("generate_until", requests[i].args[:2], text)
                    pbar.update(1)
        pbar.close()
        return results  # type: ignore[return-value]

    def split_context(self, context: str, continuation: str) -> tuple[str, str]:
        """lm-eval's scoring convention: an empty context becomes the EOT token's text, and the context's
        trailing whitespace moves to the front of the continuation (``hf``'s ``_encode_pair``)."""
        if not context:
            context = self.tokenizer.decode([self.eot_token_id], skip_special_tokens=False)
        n = len(context) - len(context.rstrip())
        if n:
            continuation = context[-n:] + continuation
            context = context[:-n]
        return context, continuation

    def cont_ids(self, context: str, continuation: str) -> list[int]:
        """Continuation tokens as lm-eval's TemplateLM splits them (whole string minus context tokens)."""
        whole = self.prompts.encode(context + continuation)
        ctx = self.prompts.encode(context)
        return whole[len(ctx):]

    def loglikelihood(self, requests: list[Instance], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        """``(sum of log-probs in nats, is_greedy)`` of each continuation, teacher-forced per method."""
        out = []
        for req in tqdm(requests, disable=disable_tqdm, desc=f"{self.METHOD} loglikelihood"):
            context, continuation = req.args[0], req.args[1]
            context, continuation = self.split_context(context, continuation)
            ll, greedy, trace = self.score(req.doc, context, continuation, self.max_length)
            out.append((ll, greedy))
            self._attach_trace(req, trace)
            self.cache_hook.add_partial("loglikelihood", req.args[:2], (ll, greedy))
        return out

    def loglikelihood_rolling(self, requests: list[Instance], disable_tqdm: bool = False) -> list[float]:
        """Sum of log-probs (nats) of a whole string, scored in disjoint windows (lm-eval's rolling scheme).

        Each window is scored like a ``loglikelihood`` continuation after its preceding text, so the
        method's passages precede every window; the window length leaves room for the passages
        (``max_length // 2`` tokens of text per window).
        """
        from lm_eval import utils

        out = []
        for req in tqdm(requests, disable=disable_tqdm, desc=f"{self.METHOD} loglikelihood_rolling"):
            (string,) = req.args[:1]
            toks = self.prompts.encode(string)
            prefix = self.eot_token_id if getattr(self.tokenizer, "bos_token_id", None) is None else self.tokenizer.bos_token_id
            windows = list(map(utils.make_disjoint_window, utils.get_rolling_token_windows(
                token_list=toks, prefix_token=prefix, max_seq_len=max(16, self.max_length // 2), context_len=1)))
            total, traces = 0.0, []
            for ctx_toks, pred_toks in windows:
                ll, _, tr = self.score_tokens(req.doc, ctx_toks, pred_toks, self.max_length)
                total += ll
                traces.append(tr)
            out.append(total)
            self._attach_trace(req, {"windows": traces})
            self.cache_hook.add_partial("loglikelihood_rolling", req.args[:1], total)
        return out

    def score_tokens(self, doc: Any, ctx_toks: list[int], pred_toks: list[int], budget: int) -> tuple[float, bool, dict]:
        """Score token ids ``pred_toks`` after token ids ``ctx_toks`` (rolling windows): decoded to text and
        scored with :meth:`score` so every method builds its prompts the same way."""
        context = self.tokenizer.decode(ctx_toks, skip_special_tokens=False)
        return self.score(doc, context, "", budget, cont_override=pred_toks)

    # shared scoring helpers
    def _sum_ll(self, lp: torch.Tensor, cont: list[int]) -> tuple[float, bool]:
        idx = torch.tensor(cont)
        ll = float(lp[torch.arange(len(cont)), idx].double().sum())
        greedy = bool((lp.argmax(-1) == idx).all())
        return ll, greedy


def _budget_check(cont: list[int], budget: int, method: str) -> int:
    if len(cont) >= budget:
        raise ConfigError(f"--model {method}: the continuation is {len(cont)} tokens, max_length={budget}: raise max_length=")
    return budget - len(cont)


class SingleBranchLM(RAGMethodLM):
    """Shared code of ``rag-none`` and ``rag-standard``: one branch, plain greedy decoding / scoring."""

    def branch(self, doc: Any, context: str, budget: int) -> Encoded:
        raise NotImplementedError

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        enc = self.branch(doc, context, budget)
        return SingleBranch(enc.ids), self._enc_trace(enc)

    def _enc_trace(self, enc: Encoded) -> dict:
        return {"passages": enc.kept, "dropped": enc.dropped} if self.USES_PASSAGES else {}

    def score(self, doc: Any, context: str, cont_text: str, budget: int, cont_override: list[int] | None = None
              ) -> tuple[float, bool, dict]:
        cont = cont_override if cont_override is not None else self.cont_ids(context, cont_text)
        enc = self.branch(doc, context, _budget_check(cont, budget, self.METHOD))
        lp, _, _ = branch_logprobs(self.decoder, enc.ids, cont)
        ll, greedy = self._sum_ll(lp, cont)
        return ll, greedy, self._enc_trace(enc)


class RagNoneLM(SingleBranchLM):
    """``rag-none``: closed-book; the pure branch only (passages, if any, are ignored)."""

    METHOD = "rag-none"
    USES_PASSAGES = False

    def branch(self, doc: Any, context: str, budget: int) -> Encoded:
        return self.encode_pure(context, budget)


class RagStandardLM(SingleBranchLM):
    """``rag-standard``: the RAG branch only (passages block + task context)."""

    METHOD = "rag-standard"

    def branch(self, doc: Any, context: str, budget: int) -> Encoded:
        return self.encode_rag(doc, context, budget)


class TokRAGLM(RAGMethodLM):
    """``tokrag``: Tok-RAG (Xu et al., ICLR 2025) token-level collaboration of the pure and RAG branches.

    At each step both branches are decoded in one batched forward pass; the RAG branch's greedy token
    is emitted iff ``rate·S_R > S_L`` (tokrag_method.md §3.3), the emitted token extends both.
    Function tokens bypass the test; when both branches agree no test is needed (the emitted token is
    the same). See :class:`tokrag_model.methods.TokRAGParams` for every constant.
    """

    METHOD = "tokrag"
    EXTRA_ARGS = {
        "layer": Arg("dynamic", layer_spec, "fusion layer: dynamic (JS-gap rule) | int index | fraction of depth"),
        "rate": Arg(1.0, float, "decision multiplier: RAG iff rate*S_R > S_L"),
        "n_anchors": Arg(3, int, "attended passage positions kept"),
        "window_left": Arg(2, int, "window tokens left of an anchor"),
        "window_right": Arg(1, int, "window tokens right of an anchor"),
        "rag_top": Arg(2, int, "RAG top tokens in e_R"),
        "pure_top": Arg(3, int, "pure top tokens in e_L"),
        "js_threshold": Arg(5e-7, float, "JS-gap threshold (vocabulary-averaged JS, nats/V)"),
        "js_min_layer": Arg(10 / 32, float, "JS scan starts above this fraction of depth"),
        "layer_fallback": Arg(20 / 32, float, "layer when the JS rule finds none (fraction of depth or int)"),
        "bypass": Arg(True, to_bool, "accept function tokens from the RAG branch without a test"),
        "always_score": Arg(False, to_bool, "compute S_R/S_L also when both branches agree (trace only)"),
    }

    def setup(self) -> None:
        c = self.resolved_config
        fb = c["layer_fallback"]
        params = TokRAGParams(layer=c["layer"], rate=c["rate"], n_anchors=c["n_anchors"], window_left=c["window_left"],
                              window_right=c["window_right"], rag_top=c["rag_top"], pure_top=c["pure_top"],
                              js_threshold=c["js_threshold"], js_min_layer=c["js_min_layer"],
                              layer_fallback=int(fb) if float(fb).is_integer() and fb >= 1 else float(fb),
                              bypass=c["bypass"], always_score=c["always_score"])
        try:
            self.scorer = TokRAGScorer(self.decoder, params, self.token_text, self.is_function, self.is_skip)
        except ValueError as exc:
            raise ConfigError(f"--model tokrag: {exc}") from None
        self.params = params

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        rag = self.encode_rag(doc, context, budget)
        pure = self.encode_pure(context, budget)
        return TokRAGRule(self.scorer, rag.ids, rag.n_ctx_tokens, pure.ids), {"passages": rag.kept, "dropped": rag.dropped}

    def finish_trace(self, rule: TokRAGRule, trace: dict) -> dict:
        trace["tokens"] = [d.compact() for d in rule.decisions]
        trace["n_rag"] = sum(d.branch == "rag" for d in rule.decisions)
        trace["n_pure"] = sum(d.branch == "pure" for d in rule.decisions)
        return trace

    def token_scores(self, doc: Any, context: str, continuation: str) -> list[TokenDecision]:
        """Teacher-forced per-position Tok-RAG decisions for ``continuation`` (see
        :func:`tokrag_model.methods.tokrag_token_scores`); S_R/S_L computed at every position."""
        context, continuation = self.split_context(context, continuation)
        cont = self.cont_ids(context, continuation)
        b = _budget_check(cont, self.max_length, self.METHOD)
        rag = self.encode_rag(doc, context, b)
        pure = self.encode_pure(context, b)
        return tokrag_token_scores(self.decoder, self.scorer, rag.ids, rag.n_ctx_tokens, pure.ids, cont, score_all=True)

    def score(self, doc: Any, context: str, cont_text: str, budget: int, cont_override: list[int] | None = None
              ) -> tuple[float, bool, dict]:
        cont = cont_override if cont_override is not None else self.cont_ids(context, cont_text)
        b = _budget_check(cont, budget, self.METHOD)
        rag = self.encode_rag(doc, context, b)
        pure = self.encode_pure(context, b)
        decs = tokrag_token_scores(self.decoder, self.scorer, rag.ids, rag.n_ctx_tokens, pure.ids, cont,
                                   score_all=self.params.always_score)
        ll = sum(d.logp_rag if d.branch == "rag" else d.logp_pure for d in decs)
        greedy = all(d.token == g for d, g in zip(decs, cont))
        return float(ll), greedy, {"passages": rag.kept, "dropped": rag.dropped, "tokens": [d.compact() for d in decs]}


class ReplugLM(RAGMethodLM):
    """``rag-replug``: REPLUG (Shi et al. 2024) — one branch per passage (passage + task context); the
    next-token distribution is the probability mixture ``Σ_i w_i p_i`` with ``w = softmax(score/τ)``
    (``replug_mode=mixture``) or ``w = 1/k`` (``uniform``). ``replug_temperature`` defaults per
    ``retriever`` (:data:`REPLUG_TAU`: bm25 1.0, dense 0.05, hybrid 0.005)."""

    METHOD = "rag-replug"
    EXTRA_ARGS = {
        "replug_temperature": Arg(None, to_opt_float, "τ in softmax(score/τ) (default per retriever)"),
        "replug_mode": Arg("mixture", choice("mixture", "uniform"), "mixture | uniform"),
        "retriever": Arg("bm25", choice(*REPLUG_TAU), f"retriever whose scores are mixed: {sorted(REPLUG_TAU)}"),
    }

    def setup(self) -> None:
        c = self.resolved_config
        if c["replug_temperature"] is None:
            c["replug_temperature"] = REPLUG_TAU[c["retriever"]]
        if c["replug_temperature"] <= 0:
            raise ConfigError(f"--model rag-replug: replug_temperature must be > 0, got {c['replug_temperature']}")

    def _branches(self, doc: Any, context: str, budget: int) -> tuple[list[Encoded], torch.Tensor, dict]:
        ctxs = self.ctxs(doc)
        encs = [self.prompts.rag([c], context, budget, self.METHOD) for c in ctxs]
        keep = [i for i, e in enumerate(encs) if e.kept]
        if not keep:
            pure = self.encode_pure(context, budget)
            return [pure], torch.ones(1, dtype=torch.float64), {"passages": [], "weights": [1.0], "closed_book": True}
        scores = [float(ctxs[i].get("score", 0.0) or 0.0) for i in keep]
        w = replug_weights(scores, self.resolved_config["replug_temperature"], self.resolved_config["replug_mode"])
        trace = {"passages": [encs[i].kept[0] for i in keep], "weights": [round(float(x), 4) for x in w]}
        return [encs[i] for i in keep], w, trace

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        encs, w, trace = self._branches(doc, context, budget)
        return ReplugRule([e.ids for e in encs], w), trace

    def score(self, doc: Any, context: str, cont_text: str, budget: int, cont_override: list[int] | None = None
              ) -> tuple[float, bool, dict]:
        cont = cont_override if cont_override is not None else self.cont_ids(context, cont_text)
        encs, w, trace = self._branches(doc, context, _budget_check(cont, budget, self.METHOD))
        lps = torch.stack([branch_logprobs(self.decoder, e.ids, cont)[0] for e in encs])  # (k, C, V)
        mix = torch.stack([mixture_logprobs(lps[:, i], w) for i in range(len(cont))])
        ll, greedy = self._sum_ll(mix, cont)
        return ll, greedy, trace


CRITIC_PROMPT = ("Question: {question}\n"
                 "Does the passage below contain information that helps answer the question? Answer Yes or No.\n\n"
                 "Passage: {title}\n{text}")


class SelfRAGFilterLM(RAGMethodLM):
    """``rag-selfrag-filter``: Self-RAG-*style* relevance filtering with the base LLM as critic.

    This is explicitly **not** the fine-tuned Self-RAG model (Asai et al. 2024) and uses no reflection
    tokens: the same base LLM as every other method judges each passage with a fixed yes/no prompt
    (:data:`CRITIC_PROMPT`, in the tokenizer's chat template when it has one), ``r = P(Yes)/(P(Yes)+P(No))``
    from the next-token probabilities (summed over the variants "Yes"/" Yes"/"yes"/" yes" and likewise
    for No). Passages with ``r ≥ relevance_threshold`` (default 0.5) are kept in their original order;
    if none is kept the model answers closed-book (pure context). Then one greedy generation.
    """

    METHOD = "rag-selfrag-filter"
    EXTRA_ARGS = {
        "relevance_threshold": Arg(0.5, float, "keep passages with P(Yes)/(P(Yes)+P(No)) >= threshold"),
        "critic_chat_template": Arg(True, to_bool, "wrap the critic prompt in the tokenizer's chat template"),
        "query_field": Arg("question", str, "doc field holding the question for the critic (fallback: task context)"),
    }

    def setup(self) -> None:
        tok = self.tokenizer

        def first_ids(words: list[str]) -> list[int]:
            ids = set()
            for w in words:
                enc = tok.encode(w, add_special_tokens=False)
                if enc:
                    ids.add(enc[0])
            return sorted(ids)

        self.yes_ids = first_ids(["Yes", " Yes", "yes", " yes"])
        self.no_ids = first_ids(["No", " No", "no", " no"])
        self._critic_cache: dict[tuple, float] = {}

    def critic_prompts(self, ctxs: list[dict], question: str) -> tuple[list[int], list[list[int]]]:
        """Token ids of the critic prompts as (shared prefix, one suffix per passage).

        The prompt is :data:`CRITIC_PROMPT` (question and instruction first, then the passage), wrapped in
        the tokenizer's chat template when it has one (``critic_chat_template``), else followed by
        ``"\nAnswer:"``. The common prefix of all prompts (chat header, question, instruction) is
        prefilled once and its KV cache reused for every passage.
        """
        texts = [CRITIC_PROMPT.format(title=c.get("title") or "", text=c["text"], question=question) for c in ctxs]
        if self.resolved_config["critic_chat_template"] and getattr(self.tokenizer, "chat_template", None):
            texts = [self.tokenizer.apply_chat_template([{"role": "user", "content": t}], tokenize=False,
                                                        add_generation_prompt=True) for t in texts]
        else:
            texts = [t + "\nAnswer:" for t in texts]
        ids = [self.prompts.encode(t) for t in texts]
        n = min(len(x) for x in ids) - 1  # keep ≥ 1 suffix token per passage
        common = 0
        while common < n and all(x[common] == ids[0][common] for x in ids):
            common += 1
        return ids[0][:common], [x[common:] for x in ids]

    def relevance(self, doc: Any, context: str) -> tuple[list[dict], list[float]]:
        """Critic ratios ``r_i`` for the doc's passages (cached per passage and question)."""
        ctxs = self.ctxs(doc)
        q = doc.get(self.resolved_config["query_field"]) if isinstance(doc, dict) else None
        question = q if isinstance(q, str) and q.strip() else context
        todo = [c for c in ctxs if (question, c.get("docid"), c["text"]) not in self._critic_cache]
        if todo:
            prefix, suffixes = self.critic_prompts(todo, question)
            lps = self.decoder.next_logprobs_shared_prefix(prefix, suffixes)
            for c, lp in zip(todo, lps):
                ly = float(torch.logsumexp(lp[self.yes_ids], 0))
                ln = float(torch.logsumexp(lp[self.no_ids], 0))
                self._critic_cache[(question, c.get("docid"), c["text"])] = relevance_ratio(ly, ln)
        return ctxs, [self._critic_cache[(question, c.get("docid"), c["text"])] for c in ctxs]

    def _encode(self, doc: Any, context: str, budget: int) -> tuple[Encoded, dict]:
        ctxs, ratios = self.relevance(doc, context)
        kept = [ctxs[i] for i in filter_by_relevance(ratios, self.resolved_config["relevance_threshold"])]
        trace = {"critic": {str(c.get("docid", i)): round(r, 4) for i, (c, r) in enumerate(zip(ctxs, ratios))}}
        if kept:
            enc = self.prompts.rag(kept, context, budget, self.METHOD)
        else:
            enc = self.encode_pure(context, budget)
        trace.update({"passages": enc.kept, "dropped": enc.dropped, "closed_book": not enc.kept})
        return enc, trace

    def make_rule(self, doc: Any, context: str, budget: int) -> tuple[Any, dict]:
        enc, trace = self._encode(doc, context, budget)
        return SingleBranch(enc.ids), trace

    def score(self, doc: Any, context: str, cont_text: str, budget: int, cont_override: list[int] | None = None
              ) -> tuple[float, bool, dict]:
        cont = cont_override if cont_override is not None else self.cont_ids(context, cont_text)
        enc, trace = self._encode(doc, context, _budget_check(cont, budget, self.METHOD))
        lp, _, _ = branch_logprobs(self.decoder, enc.ids, cont)
        ll, greedy = self._sum_ll(lp, cont)
        return ll, greedy, trace


MODELS: dict[str, type[RAGMethodLM]] = {
    "tokrag": TokRAGLM,
    "rag-standard": RagStandardLM,
    "rag-replug": ReplugLM,
    "rag-selfrag-filter": SelfRAGFilterLM,
    "rag-none": RagNoneLM,
}
