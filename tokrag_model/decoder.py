"""The one multi-context decoder shared by every method.

A *branch* is one token sequence (pure context, RAG context, or one passage + context for REPLUG)
with its own KV cache. All branches of all requests in a batch are decoded in lock-step: each branch
is prefilled on its own (no padding waste: a 50-token pure prompt is not padded to a 700-token RAG
prompt), then the caches are left-padded and stacked so that every decode step is **one** batched
forward pass over all rows, with an attention mask and explicit position ids. When the caller knows how
many tokens will be appended (``reserve``, the generation budget), the stacked cache is a preallocated
``transformers.StaticCache``: a decode step writes one slot in place instead of re-concatenating every
layer's keys and values (``DynamicCache`` grows by ``torch.cat``, O(T) copying per step and per row). Its layers
hand attention, and the mask builder, only the filled slots (:func:`filled_static_cache`), so a step runs the same
attention calls on the same keys as on a ``DynamicCache`` (no SDPA mask for one unpadded row, as there) and the
reserve changes no number (the same calls on the same key values and lengths; checked bitwise on an AMD EPYC (AVX2),
where it mattered); a plain ``StaticCache`` hands over every slot, the reserved ones masked, and
on an AMD EPYC (AVX2) the longer key axis moved log-probs by up to 9.5e-7.

Per step the decoder exposes, for every row:
* ``logprobs`` (B, V) float32: log-softmax of the last position's logits (nats);
* ``hidden`` (L+1, B, d): the last position's hidden states (index 0 = embeddings, index l = input
  of decoder layer l, index L = final normed output), only when requested (the dynamic-layer rule);
* :meth:`last_query_attention`: the head-averaged attention row of the last query at one layer,
  recomputed from that layer's query (from the hidden state, input norm, q-projection, RoPE) and the
  post-RoPE keys already in the KV cache. This is exact for Llama/Mistral/Qwen2-style attention and
  for Gemma 3 (QK-norm, ``query_pre_attn_scalar`` scaling, a RoPE base per layer type, sliding-window
  local layers; tested against eager attention) and avoids eager attention in every layer at every
  step (tokrag_method.md §3.6).

Sliding-window layers (Gemma 3's local layers, Mistral): the caches here keep **every** layer's keys in
full (``cache_config``: all layers full-attention cache layers), because transformers' sliding cache
layers keep only each row's last ``sliding_window`` keys, which cannot be left-padded and stacked across
rows of different lengths, nor indexed by position. The window itself still holds: the model builds its
sliding-window attention mask from its own config whatever the cache layer type, and the recomputed
attention row gives keys outside the window probability 0, as the model's attention does. Cost: a local
layer's cache grows with the sequence (Gemma 3 270M: 18 layers x 1 KV head x 256 dims, 37 MB per
1,000 tokens in float32). Layer kinds other than full and sliding-window attention (chunked, linear or
shared-KV layers) and bidirectional attention are rejected with a one-line :class:`ConfigError`.

Teacher forcing (``loglikelihood``): :meth:`MultiContextDecoder.teacher_force` runs many
``prompt + continuation`` sequences in one right-padded forward pass and returns, per sequence, the
log-probs (and on request hidden states and keys) at the continuation positions only; the LM head is
applied to those positions alone.

Batch invariance (``batch_invariant``, default on CPU): a row's numbers do not depend on the other rows
of its batch, so traces and outputs are the same at every ``--batch_size``. Two things would otherwise
make them depend on it: (1) attention over a left-padded stack (softmax and its sums run over padded
lengths, so the rounding depends on the longest row): with batch invariance every row attends over
exactly its own keys, in its own call (:func:`rowwise_attention`), as a lone row does; (2) the matrix
products: a BLAS picks its kernel (and, with several threads, how it splits the product) by the number of
rows, so MKL's sgemm gives a row other bits at 1, 2-3, 4-15 or 17-128 rows than inside a larger product,
depending on the CPU, the weight layout and the thread count. Every ``nn.Linear`` of a float32 CPU model
therefore also gets a oneDNN copy of its weight prepacked for its ISA (:func:`pack_linear_weights`, ``torch.ops.mkldnn``;
layers that read one input, q/k/v and gate/up, share one packed product where a probe finds it bitwise the same,
:class:`FusedLinears`: fewer, larger calls, ~3-4% less linear time a step); with it each row's product
is bitwise the same for any number of rows from 2 on, and from 1 on for the products whose input is the
hidden state (checked on this machine, on the model's own weight shapes, by a probe when the weights are
packed, and by ``tests/test_model_decoder.py``; on an AVX-512 AMD EPYC a lone row of a 1536-input product is
not, which is why decode steps use the packed products only with 2 or more rows). The packed products serve
the small products whose row count depends on the batch: decode steps of two or more rows, the LM head and
the recomputed queries (:class:`LinearKernels`, switched on only inside those calls, so a model shared with
lm-eval's ``hf`` is unchanged). Long products stay on the dense weights, where MKL is ~10% faster: a row's
prefill (always alone) and the body of a teacher-forced pass. What that needs from MKL is probed at load, on
the model's own weight shapes and layout at the current thread count (:func:`mkl_min_rows`): the row count
from which a row's bits no longer depend on the number of rows (up to ``max_batch_tokens``), or None. With a
row count a teacher-forced pass has at least that many positions; with None (an Intel Xeon at two threads)
every teacher-forced item gets a pass of its own, the pass it gets at batch 1. Both probes check float32 products
only: a model whose linear weights are another dtype gets None (:func:`non_float32_linear_dtype`), since a
bfloat16 product's rows on an Intel Xeon (one thread) had other bits at 2, 3, 4, 8, 16 and 32 rows than inside 515
(teacher-forced SmolLM2-135M log-probs moved by up to 0.65 between batch 1 and 8), so ``batch_invariant=auto`` is
false for such a CPU model and ``batch_invariant=true`` is refused (``dtype=float32``, the default, gives both).
The verdict holds for the thread count at load: set the threads (``OMP_NUM_THREADS``) before, not after. Decode
steps with 2 or 3 rows (Tok-RAG, CAD and AdaCAD at batch 1) run with empty rows added up to :data:`MIN_GEMM_ROWS` with packing where a
timing probe at load finds the padded products clearly cheaper on this CPU (:func:`packed_pad_rows`), for speed;
without packing, steps of fewer rows than MKL's probed row count are padded to it, and where MKL has
none, ``batch_invariant=true`` is refused with a one-line :class:`ConfigError`. oneDNN's 2- and 3-row products cost more
than its 4-row one on the AVX-512 AMD EPYC measured (unfused, before the fused q/k/v and gate/up products):
SmolLM2-135M's 211 linear layers took 64, 47-51 and 40-42 ms at 2, 3 and 4 rows, and a padded Tok-RAG step costs 1.01
one-row steps instead of 1.32
(``benchmarks/decoding.py``, ``decode_step_ratio_tokrag``); on an AVX2 AMD EPYC (fused products, one thread) 2 rows
cost less than 4 (the step's products without the LM head: 35.9 against 45.0 ms; one row on MKL: 29.9), so the probe
pads nothing there (a 2-row step 71.9 ms unpadded, 81.9 padded; a one-row step 56.1); on an Intel Xeon (AVX-512/AMX, one thread) they cost
the same at 2 and 4 rows (53-55 and 54.5-57 ms) and padding only added the empty rows' own work (~3 ms a step), so
there 2-row steps are not padded. The bits do not change either way, since the packed rows do not depend on the
row count. Where packing is unavailable (no oneDNN, or the probe fails),
LM-head products are padded to MKL's probed row count as well. Either way a decode step of a single row
(``rag-none``, ``rag-standard``, the filter's generation, at batch 1) keeps MKL's one-row kernel, as
lm-eval's ``hf`` does (the packed one-row product is ~15% slower): its greedy tokens equal those of a batch
unless two logits tie to within float32 rounding, and these rules' traces hold no decode-step numbers. A rule
that records its picked tokens' log-probs in the trace (``records_logprobs``, :class:`Rule`: REPLUG
``answer_vote``'s and Self-RAG filter ``selection=rank``'s per-passage answers, whose mean log-prob also decides the
answer) has a lone row decoded like a step of two or more rows: with empty rows added (at least one, up to
``min_gemm_rows``, :meth:`MultiContextDecoder.prefill`) and on the row-invariant products, so its numbers are the
same at every batch size. On
CUDA, cuBLAS picks kernels by shape, so batch invariance is off by default there
(``benchmarks/gpu_check.sh`` reports ``cuda_outputs_match_batch1``).

The generation loop :func:`generate` honours lm-eval's ``until`` (stop strings), ``max_gen_toks`` and
EOS, and asks a *rule* (one per method, in its module of ``tokrag_model.methods``) for each request's next token.
"""

from __future__ import annotations

import functools
import sys
import weakref
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple, Protocol

import torch
import torch.nn.functional as F

from retrieval.errors import ConfigError

# Decode steps of 2 or 3 rows are padded to this many rows with packed weights where the packed products of that many
# rows cost clearly less than those of 2 rows on this CPU (speed only: the packed rows' bits do not depend on the row
# count; packed_pad_rows, module docstring). For
# MKL's dense products the row count from which each row's result is bitwise independent of the number of rows
# and of the row's position is not assumed: _mkl_min_rows probes it at load (the model's shapes, weight layout
# and thread count) among MKL_MIN_ROWS_CANDIDATES; an Intel Xeon (AVX-512, MKL 2024.2, one thread) needs 5 rows
# for a 96-input product and 16 for SmolLM2's row-major weights, and with two threads no row count holds. Also
# the row count taken off CPU (no MKL probe there), and the floor on a teacher-forced pass's positions where MKL
# has no row count (each item then gets a pass of its own; MultiContextDecoder.min_force_rows).
MIN_GEMM_ROWS = 4
MKL_MIN_ROWS_CANDIDATES = (4, 8, 16, 32)
# Row counts the MKL probe checks (those up to the largest product it must cover), each against the same rows of
# one larger product: every count up to 40, then counts around MKL's and the thread split's usual thresholds.
MKL_PROBE_ROWS = tuple(range(1, 41)) + (47, 48, 49, 63, 64, 65, 96, 100, 127, 128, 129, 192, 200, 255, 256, 257,
                                        333, 384, 511, 512, 513, 700, 1000, 1024, 2048, 4096, 8192)
# Teacher forcing on CPU: a pass ends before its padding exceeds this fraction of its real tokens (a long
# CPU forward pass is compute-bound: batching saves nothing and padded positions cost as much as real ones;
# 8 loglikelihood_rolling windows of 308-672 tokens, whole wiki_lm_bm25 2.0 paragraphs, in one pass took 1.39x
# their one-by-one time).
CPU_MAX_PAD_FRACTION = 0.1
# Teacher forcing on CPU: at most this many padded tokens per pass (one longer item still gets a pass of
# its own). Merging short items saves the per-pass cost (about 90 ms for SmolLM2-135M, one thread: 4 items
# of 32-64 tokens in one pass ran 1.7-1.8x faster than alone), but a long pass is slower per token than
# its items alone (4 equal items of 512 tokens: 0.9x, no padding; 16 loglikelihood_rolling windows of 308-672
# tokens, wiki_lm_bm25 2.0 paragraphs, at batch 8 ran 0.86x their batch-1 time with the padding rule alone).
# Other devices: DEFAULT_MAX_BATCH_TOKENS.
CPU_MAX_BATCH_TOKENS = 512
DEFAULT_MAX_BATCH_TOKENS = 8192
# oneDNN's expected row count for the packed weights (a layout hint); every row count from 2 on, and 1 for the
# products that take lone rows (LM head, queries), gives the same per-row bits (checked at load on the model's
# own weight shapes by _onednn_linear_ok). Lone decode rows use MKL's dense one-row kernel (MultiContextDecoder.step).
PACK_BATCH_HINT = 16
# Packed linear layers fused into one product (FusedLinears): each group reads one input tensor, in this order, in the
# attention and MLP modules of these model types (transformers 5: q_proj, k_proj, v_proj on the layer's normed hidden
# state; gate_proj, up_proj on the MLP's input). Other model types keep one packed product per layer.
FUSED_GROUPS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))
FUSED_MODEL_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3", "gemma3", "gemma3_text"})
# packed_pad_rows: 2-row decode steps are padded to MIN_GEMM_ROWS rows only where the packed products of the model's
# decoder layers take at most this fraction of their 2-row time at MIN_GEMM_ROWS rows (padding also costs per-row work
# outside the products: cache copies, norms, the LM head). Measured unfused (before the fused q/k/v and gate/up
# products): the AMD EPYC 0.63-0.66 (pad); the Intel Xeon 0.93-1.0 (under load; there padding cost ~5 ms a Tok-RAG
# step): 0.8 keeps load noise from flipping the choice.
# Sweeps per row count (interleaved, the fastest kept).
PAD_SPEEDUP = 0.8
PAD_PROBE_SWEEPS = 2
# Both probes (_onednn_linear_ok, _mkl_min_rows) check outputs up to this many columns per weight shape. The probe
# of the packed products checks these (row count, first row) slices of a 24-row product, plus lone rows where asked.
PROBE_MAX_OUT = 8192
PROBE_ROWS = ((2, 3), (3, 20), (4, 11), (5, 9), (17, 6))
PROBE_LONE_ROWS = ((1, 0), (1, 7))
# Keyword argument that carries the per-row key spans from the decoder down to rowwise_attention.
ROWS_KWARG = "tokrag_rows"
_ROWWISE_PREFIX = "tokrag_rows_"


def _sdpa_row(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None, causal: bool,
              window: int | None) -> torch.Tensor:
    """Attention of one row: q (1, H, n_q, hd) over k, v (1, kv_heads, n_k, hd) -> (H, n_q, hd).

    ``causal`` (n_q == n_k): query i sees keys ≤ i (and > i − window with a sliding window). Otherwise every
    query sees every key (a decode step: the caller already cut the keys to the row's span and window).
    """
    heads, kv_heads = q.shape[1], k.shape[1]
    groups = heads // kv_heads
    if not causal:
        if groups > 1 and q.shape[2] == 1:  # transformers' pack_gqa: the group's heads become query rows
            out = F.scaled_dot_product_attention(q.reshape(1, kv_heads, groups, q.shape[-1]), k, v, scale=scale)
            return out.reshape(heads, 1, v.shape[-1])
        return F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=groups > 1)[0]
    if groups > 1:
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    n = q.shape[2]
    if window is not None and n > window:
        i = torch.arange(n, device=q.device)
        band = (i.view(-1, 1) >= i.view(1, -1)) & (i.view(-1, 1) - i.view(1, -1) < window)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=band, scale=scale)[0]
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)[0]


def rowwise_attention(fallback: Callable[..., Any]) -> Callable[..., Any]:
    """An attention function (transformers ``AttentionInterface``) that attends row by row when the caller
    passes ``tokrag_rows`` and is ``fallback`` (the model's own implementation) otherwise.

    ``tokrag_rows``: one ``(start, end)`` per batch row, the row's keys on the key axis (after the cache
    update). With one query per row (a decode step) the query attends to keys ``[start, end)`` (the last
    ``sliding_window`` of them on a sliding-window layer); with n queries (teacher forcing, right padding,
    ``start`` = 0) query i attends causally to keys ``[0, i]``. An empty span gives zeros (an added row).
    Each row is one ``scaled_dot_product_attention`` call on exactly its own keys, the same call whatever
    the batch, so a row's output does not depend on the other rows (module docstring).

    Raises:
        NotImplementedError: attention logit soft-capping (not expressible with SDPA).
    """

    def attend(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attention_mask: Any,
               dropout: float = 0.0, scaling: float | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
        rows = kwargs.pop(ROWS_KWARG, None)
        if rows is None:
            return fallback(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
        if kwargs.get("softcap") is not None:
            raise NotImplementedError(f"{type(module).__name__}: batch-invariant attention does not support "
                                      "logit soft-capping; pass batch_invariant=false")
        window = kwargs.get("sliding_window")
        b, heads, n_q, _ = query.shape
        out = query.new_zeros(b, heads, n_q, value.shape[-1])
        for i, (start, end) in enumerate(rows):
            if end <= start:
                continue
            if n_q == 1:
                lo = start if window is None else max(start, end - window)
                out[i] = _sdpa_row(query[i:i + 1], key[i:i + 1, :, lo:end], value[i:i + 1, :, lo:end], scaling, False, None)
            else:
                n = end - start
                out[i, :, :n] = _sdpa_row(query[i:i + 1, :, :n], key[i:i + 1, :, start:end], value[i:i + 1, :, start:end],
                                          scaling, True, window)
        return out.transpose(1, 2).contiguous(), None

    return attend


def enable_rowwise_attention(model: Any) -> None:
    """Register :func:`rowwise_attention` over the model's attention implementation and switch the model to it.

    Without ``tokrag_rows`` the model behaves exactly as before (its own attention and mask functions), so
    the model can be shared with lm-eval's ``hf`` or anything else. Idempotent.
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    base = model.config._attn_implementation or "eager"
    if base.startswith(_ROWWISE_PREFIX):
        return
    name = _ROWWISE_PREFIX + base
    if name not in ALL_ATTENTION_FUNCTIONS:
        if base in ALL_ATTENTION_FUNCTIONS:
            fallback = ALL_ATTENTION_FUNCTIONS[base]
        else:  # eager: the model's own module-level function
            attn_module = type(model.get_decoder().layers[0].self_attn).__module__
            fallback = getattr(sys.modules[attn_module], "eager_attention_forward")
        AttentionInterface.register(name, rowwise_attention(fallback))
        ALL_MASK_ATTENTION_FUNCTIONS.register(name, ALL_MASK_ATTENTION_FUNCTIONS[base])
    model.set_attn_implementation(name)


class LinearKernels:
    """oneDNN-prepacked copies of a model's ``nn.Linear`` weights and the switch that routes the model's
    linear layers to them (batch invariance, module docstring).

    ``on`` (bool): while True, every patched ``nn.Linear`` computes ``x @ W.T + b`` with
    ``torch.ops.mkldnn._linear_pointwise`` on its packed weight (a fused member takes its columns of its group's
    one product, :class:`FusedLinears`), whose per-row results do not depend on the number of rows; while False
    (the default) it is the model's own ``F.linear``. Use
    :meth:`MultiContextDecoder.invariant_products` rather than setting it. ``n_linear``: patched layers
    (the dense weights are kept, for prefill and for others sharing the model). ``n_fused``: groups of them
    that share one packed product (:class:`FusedLinears`; 0 where the probe or the model type rules it out).
    """

    def __init__(self) -> None:
        self.on = False
        self.n_linear = 0
        self.n_fused = 0


class FusedLinears:
    """One oneDNN-packed product for linear layers that read the same input: a Llama-style attention's
    ``q_proj``, ``k_proj``, ``v_proj`` or its MLP's ``gate_proj``, ``up_proj`` (:data:`FUSED_GROUPS`).

    Why: a decode step of SmolLM2-135M makes 211 small packed products (30 layers x 7, and the LM head), whose
    fixed cost per call is a real part of the step on CPU; fused, they are 121. Per row, a fused product's
    columns are bitwise the member's own packed product (checked at load on the model's group shapes by
    :func:`_fused_linear_ok`; the members keep no packed copy of their own, so memory is unchanged), so fusing
    changes no number. Measured on an Intel Xeon (AVX-512/AMX, one thread, SmolLM2-135M, 2 rows, under load): the
    step's linear products took 53.5-58.4 ms fused against 55.2-60.2 ms (3-4% less); a Tok-RAG-shaped 2-row decode
    step (50- and 800-token rows) 86.1 against 90.2 ms (median of 144, interleaved), 1.31 instead of 1.37 one-row
    steps.

    Shapes: the packed weight is the members' weights stacked, (sum of out_features, in_features); a member's
    output is its columns of ``x @ W.T + b``, (..., out_features), made contiguous (the layout of its own
    product, so what follows runs the same kernels). The first member's call computes the product and keeps the
    others' columns with its input and the input's version counter (``x._version``, which every in-place op on it
    or a view of it bumps); a later member called on that same tensor object (``is``) at that same version takes its
    columns, called on any other input, or on that one changed in place (``x.mul_(2)`` between ``q_proj(x)`` and
    ``k_proj(x)``), it computes the product again and takes its own. An inference-mode tensor (the decoder's own
    steps) has no version counter: there the object alone is compared, so an in-place edit of it between two
    members' calls is not seen (the modules of :data:`FUSED_MODEL_TYPES` make none). So a group is correct whatever
    the call order; it saves calls only where the module calls its members in order on one tensor
    (:data:`FUSED_MODEL_TYPES`).
    """

    def __init__(self, mods: list[torch.nn.Linear]) -> None:
        weight = torch.cat([m.weight.detach() for m in mods]).contiguous()
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, PACK_BATCH_HINT)
        self.bias = torch.cat([m.bias.detach() for m in mods]) if mods[0].bias is not None else None
        ends = torch.tensor([m.out_features for m in mods]).cumsum(0).tolist()
        self.bounds = list(zip([0] + ends[:-1], ends))
        self._input: torch.Tensor | None = None  # the input of the last product while some of its columns are kept
        self._version: int | None = None  # its version counter then (None: an inference tensor, which has none)
        self._kept: dict[int, torch.Tensor] = {}  # member index -> its output from that product

    def __call__(self, member: int, x: torch.Tensor) -> torch.Tensor:
        """Member ``member``'s output for input ``x`` (..., in_features) -> (..., its out_features)."""
        version = None if x.is_inference() else x._version
        if self._input is x and self._version == version and member in self._kept:
            out = self._kept.pop(member)
            if not self._kept:
                self._input = None
            return out
        y = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
        parts = {i: y[..., lo:hi].contiguous() for i, (lo, hi) in enumerate(self.bounds)}
        out = parts.pop(member)
        self._input, self._version, self._kept = x, version, parts
        return out


class LinearSpec(NamedTuple):
    """What the probes need of one float32 ``nn.Linear`` (:func:`_linear_specs`): its weight's ``out_features`` and
    ``in_features``; ``column_major``: strides (1, out) (:func:`tokrag_model.loading.set_linear_weight_layout`);
    ``bias``: it has one; ``lone_rows``: its input is the hidden state (``config.hidden_size``; every layer when
    unknown), so it takes lone rows with packed weights (the LM head, the recomputed queries)."""

    out_features: int
    in_features: int
    column_major: bool
    bias: bool
    lone_rows: bool


def _float32_linears(model: Any) -> Iterator[torch.nn.Linear]:
    """The model's ``nn.Linear`` modules with a 2-D float32 weight (those the probes check and packing patches)."""
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear) and mod.weight.dim() == 2 and mod.weight.dtype == torch.float32:
            yield mod


def non_float32_linear_dtype(model: Any) -> str | None:
    """The dtype (``"bfloat16"``) of the first ``nn.Linear`` weight of ``model`` that is not float32, or None where all
    are float32: a row's bits from such products are not probed (:func:`mkl_min_rows`, :func:`_onednn_linear_ok`), so
    batch invariance is not claimed for them (module docstring)."""
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear) and mod.weight.dtype != torch.float32:
            return str(mod.weight.dtype).replace("torch.", "")
    return None


def auto_batch_invariant(device: Any, linear_dtype: str | None) -> bool:
    """What ``batch_invariant=auto`` resolves to on ``device`` for a model whose ``nn.Linear`` weights are
    ``linear_dtype`` (``"bfloat16"``; None or ``"float32"``: all float32, :func:`non_float32_linear_dtype`'s None):
    True on CPU in float32 only (the products whose rows are probed, module docstring), False elsewhere. The one
    rule for both ``RAGMethodLM`` (after the load, from the weights) and ``leaderboards.runner.backbone_key``
    (before it, from the ``dtype`` argument)."""
    return str(device).startswith("cpu") and linear_dtype in (None, "float32")


def _linear_specs(model: Any) -> list[LinearSpec]:
    """The distinct :class:`LinearSpec` of a model's float32 ``nn.Linear`` layers, sorted."""
    config = getattr(model, "config", None)
    hidden = getattr(config, "hidden_size", None)
    if hidden is None:
        hidden = getattr(getattr(config, "text_config", None), "hidden_size", None)
    out = set()
    for mod in _float32_linears(model):
        n_out, n_in = mod.weight.shape
        out.add(LinearSpec(int(n_out), int(n_in), bool(n_out > 1 and mod.weight.stride() == (1, n_out)),
                           mod.bias is not None, hidden is None or int(n_in) == int(hidden)))
    return sorted(out)


def _linear_layouts(model: Any) -> list[tuple[int, int, bool, bool]]:
    """The distinct ``(out_features, in_features, column_major, bias)`` of a model's float32 ``nn.Linear`` layers
    (:class:`LinearSpec`), what the MKL probe checks."""
    return sorted({s[:4] for s in _linear_specs(model)})


def _linear_shapes(model: Any) -> list[tuple[int, int, bool]]:
    """The distinct ``(out_features, in_features, lone_rows)`` of a model's float32 ``nn.Linear`` layers
    (:class:`LinearSpec`), what the oneDNN probe checks."""
    return sorted({(s.out_features, s.in_features, s.lone_rows) for s in _linear_specs(model)})


def _row_mismatches(product: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, full: torch.Tensor,
                    slices: Any) -> Iterator[tuple[int, int]]:
    """The ``(rows, first_row)`` of ``slices``, in order, for which ``product`` of those rows of ``x`` alone
    differs in any bit from the same rows of ``full`` (``product(x)``, the caller's); lazy, so a probe stops
    computing at the first mismatch it cares about. ``x`` (N, in) contiguous."""
    for m, start in slices:
        if not torch.equal(product(x[start:start + m].contiguous()), full[start:start + m]):
            yield m, start


def _onednn_linear_ok(hint: int = PACK_BATCH_HINT, shapes: Any = ((200, 96, True),)) -> bool:
    """Probe: do oneDNN's packed products give each row the same bits for 2, 3, 4, 5 and 17 rows (and for a lone
    row where asked) as inside 24 rows, at any position, for every weight shape given?

    ``shapes``: ``(out_features, in_features, lone_rows)`` triples (:func:`_linear_shapes`); random weights of each
    shape are packed and checked, a lone row only where ``lone_rows`` (the products that take one row: the LM head
    and the recomputed queries, whose input is the hidden state; decode steps use the packed products only with two
    or more rows, :meth:`MultiContextDecoder.step`). The shapes matter: on an AVX-512 AMD EPYC a lone row
    of a 1536-input product (SmolLM2's ``down_proj``) differs in the last bits from the same row inside a
    larger product, while 96- and 576-input products do not. The kernel is chosen by the row count and the
    input size; outputs beyond :data:`PROBE_MAX_OUT` are probed at that size (a 262k-row LM head would take
    1 GB to probe). False where the op is missing or the property fails on this CPU for any shape.
    """
    def check(g: torch.Generator) -> bool:
        for n_out, n_in, lone_rows in sorted({(min(n_out, PROBE_MAX_OUT), n_in, lone) for n_out, n_in, lone in shapes}):
            w = torch.randn(n_out, n_in, generator=g) * 0.1
            x = torch.randn(24, n_in, generator=g)
            packed = torch.ops.mkldnn._reorder_linear_weight(w, hint)

            def product(rows: torch.Tensor, _packed: torch.Tensor = packed) -> torch.Tensor:
                return torch.ops.mkldnn._linear_pointwise(rows, _packed, None, "none", [], "")

            full = product(x)
            slices = (PROBE_LONE_ROWS if lone_rows else ()) + PROBE_ROWS
            if next(_row_mismatches(product, x, full, slices), None) is not None:
                return False
            if not torch.allclose(full, x @ w.T, atol=1e-5 * max(1.0, (n_in / 96) ** 0.5)):
                return False
        return True

    return _packed_probe(0, check)


def _packed_probe(seed: int, check: Callable[[torch.Generator], bool]) -> bool:
    """``check(g)`` with ``g`` a ``torch.Generator`` seeded ``seed`` (the probe's random weights and inputs), or False
    where torch has no oneDNN packing op or ``check`` raises ``RuntimeError``/``NotImplementedError`` (the op
    unsupported on this CPU): the setup :func:`_onednn_linear_ok` and :func:`_fused_linear_ok` share."""
    if not torch.backends.mkldnn.is_available() or not hasattr(torch.ops.mkldnn, "_reorder_linear_weight"):
        return False
    try:
        return check(torch.Generator().manual_seed(seed))
    except (RuntimeError, NotImplementedError):
        return False


def _fused_groups(model: Any) -> list[list[torch.nn.Linear]]:
    """The model's groups of linear layers to fuse (:class:`FusedLinears`): for a model whose ``config.model_type``
    is in :data:`FUSED_MODEL_TYPES`, every module's :data:`FUSED_GROUPS` whose members are all float32
    ``nn.Linear`` layers with one ``in_features`` and either all or none with a bias; [] for other model types."""
    if getattr(getattr(model, "config", None), "model_type", None) not in FUSED_MODEL_TYPES:
        return []
    linears = {id(m) for m in _float32_linears(model)}
    groups = []
    for mod in model.modules():
        for names in FUSED_GROUPS:
            mods = [getattr(mod, n, None) for n in names]
            if (all(id(m) in linears for m in mods) and len({m.in_features for m in mods}) == 1
                    and len({m.bias is None for m in mods}) == 1):
                groups.append(mods)
    return groups


def _fused_shapes(groups: list[list[torch.nn.Linear]]) -> list[tuple[int, tuple[int, ...], bool]]:
    """The distinct ``(in_features, out_features per member, bias)`` of fused groups (:func:`_fused_groups`)."""
    return sorted({(int(g[0].in_features), tuple(int(m.out_features) for m in g), g[0].bias is not None)
                   for g in groups})


def _fused_linear_ok(shapes: Any, hint: int = PACK_BATCH_HINT) -> bool:
    """Probe: is each member's column slice of a fused packed product (:class:`FusedLinears`) bitwise its own packed
    product, for 1, 2, 3, 4, 5 and 17 rows at several positions (:data:`PROBE_LONE_ROWS`, :data:`PROBE_ROWS`), for
    every group shape given?

    ``shapes``: ``(in_features, out_features per member, bias)`` (:func:`_fused_shapes`); random weights (and biases)
    of each shape are packed fused and one by one (members wider than :data:`PROBE_MAX_OUT` at that size). With
    :func:`_onednn_linear_ok`'s verdict on the members' own shapes, a fused row then has the same bits at every row
    count too. Measured true on an Intel Xeon (AVX-512/AMX, one thread) on SmolLM2-135M's real weights as well.
    False where the op is missing or any slice differs (then nothing is fused: one packed product per layer).
    """
    def check(g: torch.Generator) -> bool:
        product = torch.ops.mkldnn._linear_pointwise
        for n_in, outs, bias in shapes:
            ws = [torch.randn(min(n, PROBE_MAX_OUT), n_in, generator=g) * 0.1 for n in outs]
            bs = [torch.randn(w.shape[0], generator=g) if bias else None for w in ws]
            fused = torch.ops.mkldnn._reorder_linear_weight(torch.cat(ws), hint)
            fused_bias = torch.cat(bs) if bias else None
            alone = [torch.ops.mkldnn._reorder_linear_weight(w, hint) for w in ws]
            x = torch.randn(24, n_in, generator=g)
            for m, start in PROBE_LONE_ROWS + PROBE_ROWS:
                rows = x[start:start + m].contiguous()
                y = product(rows, fused, fused_bias, "none", [], "")
                lo = 0
                for w, b, p in zip(ws, bs, alone):
                    if not torch.equal(y[:, lo:lo + w.shape[0]], product(rows, p, b, "none", [], "")):
                        return False
                    lo += w.shape[0]
        return True

    return _packed_probe(1, check)


_MKL_VERDICTS: dict[tuple, int | None] = {}
""":func:`_mkl_min_rows`' verdicts in this process, by thread count, ``max_rows`` and the distinct layouts."""


def _mkl_min_rows(layouts: Any, max_rows: int) -> int | None:
    """:func:`_probe_mkl_min_rows`, remembered for the process (:data:`_MKL_VERDICTS`) by ``torch.get_num_threads()``,
    ``max_rows`` and the set of layouts: the probe reads nothing else (random weights of those shapes, from a fixed
    seed), so a second model of the same shapes (SmolLM2 loaded again: another dtype, device or revision, a
    leaderboard cell with other load arguments, a test's own load) gets the same verdict without the probe's ~1 s of
    CPU. Returns what the probe returns."""
    key = (torch.get_num_threads(), int(max_rows), tuple(sorted(set(layouts))))
    if key not in _MKL_VERDICTS:
        _MKL_VERDICTS[key] = _probe_mkl_min_rows(layouts, max_rows)
    return _MKL_VERDICTS[key]


def _probe_mkl_min_rows(layouts: Any, max_rows: int) -> int | None:
    """Probe: from how many rows on does each row of MKL's dense ``F.linear`` give the same bits whatever the
    number of rows (up to ``max_rows``) and the row's position, on these weights, at this thread count?

    ``layouts``: ``(out_features, in_features, column_major, bias)`` tuples (:func:`_linear_layouts`); random
    weights of each shape and stride order are checked (outputs beyond :data:`PROBE_MAX_OUT` at that size).
    Each row count of :data:`MKL_PROBE_ROWS` up to ``max_rows`` (and ``max_rows`` itself) is compared with the
    same rows of one product of ``max_rows + 3`` rows. Returns the smallest of :data:`MKL_MIN_ROWS_CANDIDATES`
    from which every checked count matches for every shape, or None where none does (MKL splits a product
    between threads by its row count: with two threads on an Intel Xeon, 17-128 rows of a 1536-input product
    differ from the same rows inside 1,024). The verdict holds for ``torch.get_num_threads()`` at the call.
    """
    counts = sorted({m for m in MKL_PROBE_ROWS if m <= max_rows} | {max_rows})
    g = torch.Generator().manual_seed(0)
    fail = 0  # the largest failing row count
    with torch.inference_mode():
        for n_out, n_in, col, bias in sorted({(min(o, PROBE_MAX_OUT), i, c, b) for o, i, c, b in layouts}):
            w = torch.randn(n_out, n_in, generator=g) * 0.05
            w = w.t().contiguous().t() if col else w
            b = torch.randn(n_out, generator=g) if bias else None
            x = torch.randn(max_rows + 3, n_in, generator=g)

            def product(rows: torch.Tensor, _w: torch.Tensor = w, _b: torch.Tensor | None = b) -> torch.Tensor:
                return F.linear(rows, _w, _b)

            # counts ascending: only those above the largest failure so far can raise it
            slices = [(m, 3 if m < max_rows else 0) for m in counts if m > fail]
            for m, _ in _row_mismatches(product, x, product(x), slices):
                fail = m
                if fail >= MKL_MIN_ROWS_CANDIDATES[-1]:
                    return None
    return next((r for r in MKL_MIN_ROWS_CANDIDATES if r > fail), None)


_MKL_MIN_ROWS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
""":func:`mkl_min_rows`' verdicts per model, kept beside the model, not on it (methods share one model and must
leave it as loaded: tests/test_methods_leave_model_unchanged.py)."""


def mkl_min_rows(model: Any, max_rows: int) -> int | None:
    """:func:`_mkl_min_rows` on the model's own linear layers (:func:`_linear_layouts`) at the current thread count,
    remembered per model (:data:`_MKL_MIN_ROWS`), thread count, ``max_rows`` and layouts (a later weight-layout
    change is probed again). None where no candidate holds (module docstring); always None where a linear weight is
    not float32 (:func:`non_float32_linear_dtype`: the probe checks float32 products only, and bfloat16 ones were seen
    to depend on the row count at every candidate; with none of the model's layers probed it returned 4 for a bfloat16
    model, and teacher-forced log-probs then differed by up to 0.65 between batch 1 and 8); and always None at more
    than one thread: there the probe's verdict was seen not to hold. In the clean-clone CI (two pytest-xdist
    workers), batch 8 at two threads shared teacher-forced passes and gave other bits than batch 1
    (-36.15979091823101 against -36.159771755337715), although the probe, run alone, finds no row count at two threads on that Intel Xeon; how
    MKL splits a product between threads is not something a probe at load can vouch for. Every teacher-forced item
    then gets its own pass (the pass it gets at batch 1): long CPU passes are compute-bound, so batching them gained
    little (benchmarks/decoding.py, ``ll_speedup_batch8``)."""
    if torch.get_num_threads() > 1 or non_float32_linear_dtype(model) is not None:
        return None
    seen = _MKL_MIN_ROWS.setdefault(model, {})
    layouts = _linear_layouts(model)
    key = (torch.get_num_threads(), int(max_rows), tuple(layouts))
    if key not in seen:
        seen[key] = _mkl_min_rows(layouts, int(max_rows))
    return seen[key]


_PACKED_PAD_ROWS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
""":func:`packed_pad_rows`' verdicts per model and thread count (kept beside the model, as :data:`_MKL_MIN_ROWS`)."""


def packed_pad_rows(model: Any, kernels: LinearKernels) -> int:
    """Timing probe: the row count 2- and 3-row decode steps are padded to with packed weights, :data:`MIN_GEMM_ROWS`
    or 0 (no padding), remembered per model and thread count.

    The model's packed ``nn.Linear`` products (the LM head excepted: the largest output) are timed at 2 and at
    :data:`MIN_GEMM_ROWS` rows (process CPU time, :data:`PAD_PROBE_SWEEPS` interleaved sweeps, the fastest kept;
    ~0.2 s for SmolLM2-135M at one thread);
    padding is chosen where the padded products take at most :data:`PAD_SPEEDUP` (0.8) of the 2-row time. Speed only:
    the packed products give each row the same bits at any row count from 2 on (:func:`_onednn_linear_ok`), so
    the choice never changes a number. Measured unfused (before the fused q/k/v and gate/up products): on an AVX-512
    AMD EPYC SmolLM2-135M's 211 linear layers took
    64 ms at 2 rows and 40-42 ms at 4 (padding: Tok-RAG's step 1.32 -> 1.01 one-row steps); on an Intel Xeon
    (AVX-512/AMX, one thread) 53-55 ms and 54.5-57 ms, and a padded Tok-RAG step cost ~3 ms more than an
    unpadded one (the added rows' cache copies, norms and LM-head rows), its prefill ~35 ms more.
    """
    import time

    seen = _PACKED_PAD_ROWS.setdefault(model, {})
    key = torch.get_num_threads()
    if key not in seen:
        mods = list(_float32_linears(model))
        widest = max((m.out_features for m in mods), default=0)
        mods = [m for m in mods if m.out_features < widest] or mods
        g = torch.Generator().manual_seed(0)
        # one input per input size, so the members of a fused group take one product, as in a decode step
        sizes = sorted({m.in_features for m in mods})
        inputs = {n: dict(zip(sizes, (torch.randn(n, d, generator=g) for d in sizes))) for n in (2, MIN_GEMM_ROWS)}
        best = {n: float("inf") for n in inputs}
        was, kernels.on = kernels.on, True
        try:
            with torch.inference_mode():
                for _ in range(PAD_PROBE_SWEEPS):
                    for n, xs in inputs.items():
                        t = time.process_time()
                        for m in mods:
                            m(xs[m.in_features])
                        best[n] = min(best[n], time.process_time() - t)
        finally:
            kernels.on = was
        seen[key] = MIN_GEMM_ROWS if best[MIN_GEMM_ROWS] <= PAD_SPEEDUP * best[2] else 0
    return seen[key]


def packing_unavailable_reason(model: Any) -> str | None:
    """Why :func:`pack_linear_weights` leaves ``model`` unpacked, as a phrase for an error message, or None where it
    packs: weights not on the CPU, not float32 (``oneDNN packing needs float32 weights, these are bfloat16:
    dtype=float32, the default, packs``), torch without oneDNN's packing op, or the row-invariance probe
    (:func:`_onednn_linear_ok`, on the model's own weight shapes) failing on this CPU. The dtype is that of the
    ``nn.Linear`` weights (:func:`non_float32_linear_dtype`), not of the first parameter: a float32 embedding before
    bfloat16 linears packed nothing and was not refused."""
    p = next(model.parameters())
    if p.device.type != "cpu":
        return f"oneDNN packing is for CPU weights, these are on {p.device.type}"
    other_dtype = non_float32_linear_dtype(model)
    if other_dtype is not None:
        return f"oneDNN packing needs float32 weights, these are {other_dtype}: dtype=float32, the default, packs"
    if not torch.backends.mkldnn.is_available() or not hasattr(torch.ops.mkldnn, "_reorder_linear_weight"):
        return "this torch has no oneDNN packing"
    if not _onednn_linear_ok(shapes=_linear_shapes(model)):
        return "oneDNN's packed products failed the row-invariance probe on this CPU"
    return None


def pack_linear_weights(model: Any) -> LinearKernels | None:
    """Give every ``nn.Linear`` of a float32 CPU model a oneDNN-prepacked copy of its weight and a forward
    that uses it while the returned :class:`LinearKernels` is ``on``; idempotent (one per model).

    Returns None (nothing changed) when the model is not float32 on CPU, torch has no oneDNN, or the
    probe (:func:`_onednn_linear_ok`, run on the model's own weight shapes) finds per-row results that
    depend on the row count (:func:`packing_unavailable_reason` says which); the decoder then pads small products to MKL's probed row count
    (:func:`mkl_min_rows`) or refuses batch invariance where MKL has none. Memory: one
    more copy of the linear weights (SmolLM2-135M: +0.5 GB, the tied LM head included).

    Layers that read one input (q/k/v, gate/up: :func:`_fused_groups`) share one packed product
    (:class:`FusedLinears`: 211 -> 121 products a decode step for SmolLM2-135M) where a second probe
    (:func:`_fused_linear_ok`, on the model's group shapes) finds each member's columns bitwise its own packed
    product; otherwise each layer gets its own. Either way the numbers are the same.
    """
    kernels = getattr(model, "_tokrag_linear_kernels", None)
    if kernels is not None:
        return kernels
    if packing_unavailable_reason(model) is not None:
        return None
    kernels = LinearKernels()
    linear_pointwise = torch.ops.mkldnn._linear_pointwise
    groups = _fused_groups(model)
    if groups and not _fused_linear_ok(_fused_shapes(groups)):
        groups = []
    with torch.no_grad():
        fused = {}  # id(member) -> (its FusedLinears, its index there)
        for mods in groups:
            group = FusedLinears(mods)
            fused.update({id(m): (group, i) for i, m in enumerate(mods)})
        kernels.n_fused = len(groups)
        for mod in _float32_linears(model):
            dense = mod.forward
            if id(mod) in fused:
                group, member = fused[id(mod)]

                def forward(x: torch.Tensor, _group: FusedLinears = group, _member: int = member,
                            _dense: Any = dense) -> torch.Tensor:
                    return _group(_member, x) if kernels.on else _dense(x)
            else:
                packed = torch.ops.mkldnn._reorder_linear_weight(mod.weight.detach().contiguous(), PACK_BATCH_HINT)

                def forward(x: torch.Tensor, _mod: Any = mod, _packed: torch.Tensor = packed,
                            _dense: Any = dense) -> torch.Tensor:
                    if kernels.on:
                        return linear_pointwise(x, _packed, _mod.bias, "none", [], "")
                    return _dense(x)

            mod.forward = forward
            kernels.n_linear += 1
    model._tokrag_linear_kernels = kernels
    return kernels


@dataclass
class Batch:
    """State of a batch of rows being decoded.

    ``cache``: a ``DynamicCache`` whose tensors are (B + extra, kv_heads, T, head_dim), or a ``StaticCache``
    (:func:`filled_static_cache`) whose tensors are (B + extra, kv_heads, T + reserve, head_dim) with slots ≥ T still
    empty, of which attention sees slots < T only; rows
    left-padded; ``mask``: (B + extra, T) long, 0 on padding; ``pads``: left padding per row; ``lengths``:
    real tokens per row; ``logprobs``: (B, V); ``hidden``: (L+1, B, d) or None; ``ids``: the real token ids
    per row; ``extra``: empty rows after the B real ones (batch invariance, ``MultiContextDecoder.min_gemm_rows``);
    ``rowwise``: attend row by row (:func:`rowwise_attention`).
    """

    cache: Any
    mask: torch.Tensor
    pads: list[int]
    lengths: list[int]
    logprobs: torch.Tensor
    hidden: torch.Tensor | None
    ids: list[list[int]] = field(default_factory=list)
    extra: int = 0
    rowwise: bool = False

    def spans(self) -> list[tuple[int, int]]:
        """Each row's keys ``[pad, T)`` on the key axis (empty for the added rows)."""
        t = self.mask.shape[1]
        return [(p, t) for p in self.pads] + [(t, t)] * self.extra


@dataclass
class Forcing:
    """One teacher-forced sequence: ``prompt`` then ``cont`` (≥ 1 prompt token). ``hidden``/``keys``: also
    return the hidden states at the continuation's query positions / every layer's keys."""

    prompt: list[int]
    cont: list[int]
    hidden: bool = False
    keys: bool = False


@dataclass
class Forced:
    """Teacher-forced outputs of one :class:`Forcing`.

    ``logprobs`` (C, V) float32: ``logprobs[i]`` is the next-token distribution (nats) that predicts
    ``cont[i]`` (query position ``len(prompt) − 1 + i``); ``hidden`` (L+1, C, d) at the same positions or
    None; ``keys``: per layer the post-RoPE keys (kv_heads, len(prompt) + C, head_dim), or None.
    """

    logprobs: torch.Tensor
    hidden: torch.Tensor | None = None
    keys: list[torch.Tensor] | None = None


@functools.cache
def _filled_static_cache_class() -> type:
    """The class of :func:`filled_static_cache`, defined on first use (transformers is imported lazily here)."""
    from transformers import StaticCache
    from transformers.cache_utils import StaticLayer

    class FilledStaticLayer(StaticLayer):
        """A ``StaticLayer`` that hands attention, and the mask builder, only its filled slots.

        ``keys``/``values`` stay the preallocated (B, kv_heads, max_cache_len, head_dim) buffers (written in place);
        :meth:`update` returns views of slots ``[0, filled)`` and :meth:`get_mask_sizes` gives ``(filled + queries,
        0)``, what a ``DynamicCache`` layer holding the same keys returns. ``filled`` is a Python int (no device sync
        per layer and step); ``is_compileable`` is False (this cache is not compiled), so transformers builds the
        masks as for a ``DynamicCache``: it skips the SDPA mask of an unpadded one-row step as there."""

        is_compileable = False

        def __init__(self, max_cache_len: int, **kwargs: Any) -> None:
            super().__init__(max_cache_len=max_cache_len, **kwargs)
            self.filled = 0

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
                   **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
            keys, values = super().update(key_states, value_states, *args, **kwargs)
            self.filled += key_states.shape[-2]
            return keys[:, :, :self.filled], values[:, :, :self.filled]

        def advance(self, n: int) -> None:
            """Count ``n`` slots after the filled ones as filled (the caller wrote them into ``keys``/``values``)."""
            self.cumulative_length.add_(n)
            self.filled += n

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return self.filled + query_length, 0

        def get_seq_length(self) -> int:
            return self.filled

        def crop(self, tokens_to_remove: int) -> None:
            super().crop(tokens_to_remove)
            self.filled -= abs(tokens_to_remove)

        def reset(self) -> None:
            super().reset()
            self.filled = 0

    class FilledStaticCache(StaticCache):
        """A ``transformers.StaticCache`` (preallocated buffers, one slot written in place per decode step) whose
        layers hand attention only their filled key slots, as a ``DynamicCache`` holding the same keys does.

        A plain ``StaticCache`` hands attention all ``max_cache_len`` slots (the unfilled ones masked) and the mask
        builder ``max_cache_len`` as the key length (so a mask even for an unpadded one-row step, where a
        ``DynamicCache`` step gets none under SDPA): the attention products run over a longer key axis, with other
        kernels. On an AMD EPYC (AVX2) decode steps so gave log-probs up to 9.5e-7 away from the same steps on the
        ``DynamicCache``, eager and SDPA alike, although both caches held bitwise the same keys. With the filled
        slots only, the same attention calls run on the same keys, so the reserve changes no number
        (``tests/test_model_decoder.py``, ``tests/test_s48_f4_static_trim.py``). Every layer is a full-attention
        cache layer (the decoder's ``cache_config``); the model's masks still apply the sliding windows."""

        def __init__(self, config: Any, max_cache_len: int) -> None:
            super().__init__(config=config, max_cache_len=max_cache_len)
            self.layers = [FilledStaticLayer(max_cache_len=max_cache_len) for _ in self.layers]

    return FilledStaticCache


def filled_static_cache(config: Any, max_cache_len: int) -> Any:
    """A ``StaticCache`` of ``max_cache_len`` slots per layer for ``config`` (the decoder's ``cache_config``: every
    layer a full-attention cache layer) whose layers hand attention only their filled key slots, as a ``DynamicCache``
    holding the same keys does (``FilledStaticCache``, defined in :func:`_filled_static_cache_class`)."""
    return _filled_static_cache_class()(config, max_cache_len)


def layer_hidden_states(states: Any, n_layers: int) -> Any:
    """The ``n_layers + 1`` hidden states of one forward pass from transformers' ``output.hidden_states`` (index 0 =
    embeddings, index l = input of decoder layer l, index ``n_layers`` = the final normed output), whatever number of
    times transformers' recording hooks were installed on the model's layers.

    transformers records hidden states with forward hooks that it installs on the decoder layers once per model, the
    first time they are asked for (``transformers.utils.output_capturing``, 5.24): each hook call appends its layer's
    output, and the last entry is then replaced by the final normed output. Installed twice, every layer's output is
    appended twice, so ``states[l]`` was the input of layer ``(l + 1) // 2`` (61 entries for SmolLM2's 30 layers): the
    output, the logits and S_L stay the same, but Tok-RAG's attention query at the fusion layer came from the wrong
    layer. ``maybe_install_capturing_hooks`` called on the ``*ForCausalLM`` after its inner model had its hooks does
    that (its recursive install does not check the inner model's flag): tests/test_methods_leave_model_unchanged did it
    on the session's shared SmolLM2, and Tok-RAG's S_R later in that process differed from the golden at 18 of 25
    tokens (0.9972 for 0.4644), the strings, branches, layers and S_L equal; its teacher-forced scores, whose branch
    per position follows S_R, moved too (test_model_smollm2's first answer: -20.94 nats for -17.03), and so did
    ``layer=dynamic``'s gaps, read from the same states. With the hooks installed k times there are ``1 + k *
    n_layers`` entries: the embeddings, then k copies of each layer's output (each copy of a hook appends the same
    tensor object), the last layer's last copy replaced by the final normed output. The first copy of each layer's
    output is kept, by position, after checking that the others are that same object; the last layer's un-normed copies
    are dropped. By position, not by dropping consecutive repeats: a layer that returns its input tensor itself (a
    pass-through layer) records the same object as the layer before it, and dropping it as a repeat shifted every
    later layer by one (s58 r3).

    Args:
        states: ``output.hidden_states`` (a tuple of tensors) of a forward pass with ``output_hidden_states=True``.
        n_layers: the model's decoder layers.
    Returns:
        ``states`` itself when it has at most ``n_layers + 1`` entries (one hook per layer: nothing changes), else the
        list of ``n_layers + 1`` tensors without the copies.
    Raises:
        RuntimeError: more than ``n_layers + 1`` entries that are not k copies of that kind (a recording this decoder
            does not know): the hidden states cannot be told apart.
    """
    n = len(states)
    if n <= n_layers + 1:
        return states
    k, rest = divmod(n - 1, n_layers)
    # layer j's copies are states[1 + j * k : 1 + (j + 1) * k]; the last one of the last layer is the normed output
    if not rest and all(states[1 + j * k + c] is states[1 + j * k]
                        for j in range(n_layers) for c in range(1, k - (j == n_layers - 1))):
        return [states[0], *(states[1 + j * k] for j in range(n_layers - 1)), states[-1]]
    distinct = 1 + sum(states[i] is not states[i - 1] for i in range(1, n))
    raise RuntimeError(f"the model returned {n} hidden states for its {n_layers} layers ({distinct} after dropping "
                       f"repeated entries), not {n_layers + 1}: its hidden-state recording hooks are not transformers' "
                       "own, once per layer; load the model again")


def _left_pad(t: torch.Tensor, n: int) -> torch.Tensor:
    """Zero-pad ``n`` positions on the left of the sequence axis of (B, heads, T, head_dim) ``t`` (no copy for 0)."""
    return F.pad(t, (0, 0, n, 0)) if n else t


class MultiContextDecoder:
    """Batched multi-branch greedy decoding and teacher forcing over one Hugging Face causal LM.

    Args:
        model: a ``*ForCausalLM`` in eval mode (any attention implementation; sdpa by default).
        stats: dict updated in place: ``forward_passes`` (+B per batched call over B rows),
            ``prompt_tokens`` (prefilled/teacher-forced tokens); :func:`generate` adds ``generated_tokens`` (the
            tokens of the answers requests return) and ``branch_tokens`` (every rule's tokens: a candidate rule's
            too, :class:`Rule`), set to 0 here when absent.
        batch_invariant: a row's numbers independent of the other rows (module docstring); switches the
            model to :func:`rowwise_attention` (unchanged for callers that do not pass row spans).
        max_batch_tokens: teacher forcing runs at most this many (padded) tokens per forward pass; None:
            :data:`CPU_MAX_BATCH_TOKENS` on CPU, :data:`DEFAULT_MAX_BATCH_TOKENS` elsewhere.
        packed_weights: with batch invariance, use oneDNN-prepacked weights where available
            (:func:`pack_linear_weights`); False keeps MKL, padded to its probed row count (the fallback).
    Raises:
        ConfigError: the model has layers other than full or sliding-window attention, or bidirectional
            attention (see the module docstring); ``batch_invariant`` on a CPU where neither the packed
            products nor MKL's (:func:`mkl_min_rows`, at the current thread count) are row-invariant, which
            includes every CPU model whose linear weights are not float32 (:func:`non_float32_linear_dtype`).
    """

    def __init__(self, model: Any, stats: dict[str, int], batch_invariant: bool = False,
                 max_batch_tokens: int | None = None, packed_weights: bool = True) -> None:
        self.model = model
        self.stats = stats
        stats.setdefault("generated_tokens", 0)
        stats.setdefault("branch_tokens", 0)
        self.device = next(model.parameters()).device
        cfg = model.config
        self.config = cfg
        self.n_layers = int(cfg.num_hidden_layers)
        self.input_embeddings = model.get_input_embeddings()  # the module: :attr:`embed` reads its weight
        self.lm_head = model.get_output_embeddings()
        base = getattr(model, "model", None)
        self.base = base if base is not None else model.get_decoder()
        self.final_norm = getattr(base, "norm", None)
        self.layers = getattr(base, "layers", None)
        self.rotary = getattr(base, "rotary_emb", None)
        self.layer_types, self.windows = _attention_layout(model)
        # every layer a full-attention cache layer (module docstring: sliding windows are applied by the masks)
        from transformers import PreTrainedConfig

        self.cache_config = PreTrainedConfig(num_hidden_layers=self.n_layers)
        self.batch_invariant = bool(batch_invariant)
        cpu = self.device.type == "cpu"
        if max_batch_tokens is None:
            max_batch_tokens = CPU_MAX_BATCH_TOKENS if cpu else DEFAULT_MAX_BATCH_TOKENS
        self.max_batch_tokens = int(max_batch_tokens)
        self.max_pad_fraction = CPU_MAX_PAD_FRACTION if cpu else float("inf")
        self.kernels: LinearKernels | None = None
        # min_gemm_rows: decode steps of fewer rows (2 or more) get empty rows up to this many (MKL: row invariance;
        # packed: speed where the probe finds it, else 0, packed_pad_rows). min_force_rows: a teacher-forced pass has at least this many positions
        # (its body runs on MKL's dense weights, faster than oneDNN's for long sequences); force_alone: one item per
        # pass, where MKL's rows depend on the row count at every count (then an item's pass is the one it gets at
        # batch 1). min_head_rows: LM-head products are padded to this many rows only without packed weights.
        self.min_gemm_rows = self.min_force_rows = self.min_head_rows = 0
        self.force_alone = False
        self.mkl_rows: int | None = None
        if self.batch_invariant:
            enable_rowwise_attention(model)
            self.kernels = pack_linear_weights(model) if packed_weights else None
            self.mkl_rows = mkl_min_rows(model, self.max_batch_tokens) if cpu else MIN_GEMM_ROWS
            if self.mkl_rows is None and self.kernels is None:
                threads = torch.get_num_threads()
                reason = packing_unavailable_reason(model)
                why = f" ({reason})" if reason else ""
                raise ConfigError(f"batch_invariant=true: on this CPU at {threads} thread(s) neither oneDNN's packed "
                                  f"products nor MKL's dense ones give a row the same bits at every batch size{why}; pass "
                                  "batch_invariant=false" + (" or run with OMP_NUM_THREADS=1"
                                                            if threads > 1 and not non_float32_linear_dtype(model)
                                                            else ""))
            packed = self.kernels is not None
            self.min_gemm_rows = packed_pad_rows(model, self.kernels) if packed else self.mkl_rows
            self.min_force_rows = self.mkl_rows or MIN_GEMM_ROWS
            self.force_alone = self.mkl_rows is None
            self.min_head_rows = 0 if self.kernels is not None else self.mkl_rows

    @property
    def embed(self) -> torch.Tensor:
        """(V, d) the model's input embedding table, read as data: detached (the same storage, no copy), so that the
        Tok-RAG scores taken from it outside inference mode (TokRAGScorer.decide/scores_at called directly) build no
        autograd graph and turn into floats without torch's requires_grad warning. Taken from the module's weight on
        every read, so that it is the model's current table: a view kept from the build went stale when the model was
        converted after it (``model.to(torch.bfloat16)`` replaces the Parameter's data; the view stayed float32, with
        the old values) or given new Parameters (``load_state_dict(..., assign=True)``)."""
        return self.input_embeddings.weight.detach()

    @contextmanager
    def invariant_products(self) -> Iterator[None]:
        """Within this block the model's linear layers use the packed, row-invariant products (when
        :attr:`kernels` exists; otherwise a no-op). Nestable."""
        k = self.kernels
        if k is None or k.on:
            yield
            return
        k.on = True
        try:
            yield
        finally:
            k.on = False

    def _rows_kw(self, spans: list[tuple[int, int]]) -> dict[str, Any]:
        return {ROWS_KWARG: spans} if self.batch_invariant else {}

    # ------------------------------------------------------------------ forward passes
    @torch.inference_mode()
    def forward_full(self, ids: list[int], hidden: bool = False) -> tuple[torch.Tensor, torch.Tensor | None, Any]:
        """Teacher-forced forward of one sequence (every position; :meth:`teacher_force` is the batched form).

        Returns:
            logprobs (T, V) float32 next-token log-probs at every position; hidden (L+1, T, d) or None;
            the ``DynamicCache`` (keys (1, kv_heads, T, head_dim) per layer).
        """
        from transformers import DynamicCache

        cache = DynamicCache(config=self.cache_config)
        x = torch.tensor([ids], device=self.device)
        out = self.model(input_ids=x, cache=cache, use_cache=True, output_hidden_states=hidden)
        self.stats["forward_passes"] += 1
        self.stats["prompt_tokens"] += len(ids)
        lp = torch.log_softmax(out.logits[0].float(), dim=-1)
        hs = torch.stack([h[0] for h in layer_hidden_states(out.hidden_states, self.n_layers)]) if hidden else None
        return lp, hs, cache

    @torch.inference_mode()
    def teacher_force(self, items: list[Forcing]) -> list[Forced]:
        """Teacher-forced forward of many sequences, batched (right padding, at most ``max_batch_tokens``
        padded tokens per pass, consecutive items together: give them sorted by length to pad little).
        A pass also ends before padding would exceed ``max_pad_fraction`` of its real tokens (on CPU, where
        a long forward pass is compute-bound and padded positions cost as much as real ones).

        The LM head runs on the continuation positions only. With batch invariance each item's outputs
        are bitwise those it gets alone (module docstring). Counts one forward pass per item.

        Raises:
            ValueError: an item without prompt tokens.
        """
        out: list[Forced] = []
        start = 0
        while start < len(items):
            end, width, real = start, 0, 0
            while end < len(items):
                n = len(items[end].prompt) + len(items[end].cont)
                w = max(width, n, self.min_force_rows)
                padded = w * (end - start + 1)
                if end > start and (self.force_alone or padded > self.max_batch_tokens
                                    or padded > (1 + self.max_pad_fraction) * (real + n)):
                    break
                width, real, end = w, real + n, end + 1
            out.extend(self._force(items[start:end], width))
            start = end
        return out

    def _force(self, items: list[Forcing], width: int) -> list[Forced]:
        from transformers import DynamicCache

        for it in items:
            if not it.prompt:
                raise ValueError("teacher forcing needs at least one prompt token (lm-eval passes the EOT token for an empty context)")
        seqs = [it.prompt + it.cont for it in items]
        ids = torch.zeros(len(items), width, dtype=torch.long, device=self.device)
        mask = torch.zeros(len(items), width, dtype=torch.long, device=self.device)
        for i, s in enumerate(seqs):
            ids[i, :len(s)] = torch.tensor(s, device=self.device)
            mask[i, :len(s)] = 1
        keys = any(it.keys for it in items)
        hidden = any(it.hidden for it in items)
        cache = DynamicCache(config=self.cache_config) if keys else None
        pos = torch.arange(width, device=self.device).view(1, -1).expand(len(items), -1)
        # dense weights: with ≥ min_force_rows positions MKL's rows are row-invariant (probed), or the item is alone
        res = self.base(input_ids=ids, attention_mask=None if self.batch_invariant else mask, position_ids=pos,
                        cache=cache, use_cache=keys, output_hidden_states=hidden,
                        **self._rows_kw([(0, len(s)) for s in seqs]))
        self.stats["forward_passes"] += len(items)
        self.stats["prompt_tokens"] += sum(map(len, seqs))
        last = res.last_hidden_state  # (B, width, d), final norm applied
        where = [(i, len(it.prompt) - 1, len(it.cont)) for i, it in enumerate(items)]
        h = torch.cat([last[i, p:p + c] for i, p, c in where])  # (ΣC, d)
        lp = torch.log_softmax(self.logits(h), dim=-1).split([c for _, _, c in where])
        states = layer_hidden_states(res.hidden_states, self.n_layers) if hidden else ()
        out = []
        for (i, p, c), it, s, row_lp in zip(where, items, seqs, lp):
            hs = torch.stack([x[i, p:p + c] for x in states]) if it.hidden else None
            ks = [layer.keys[i, :, :len(s)] for layer in cache.layers] if it.keys else None
            out.append(Forced(row_lp, hs, ks))
        return out

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The LM head on (n, d) final hidden states -> (n, V) float32 (with the model's final logit
        soft-capping, if any). Row-invariant products (batch invariance: packed weights, or at least
        ``min_head_rows`` rows, MKL's probed row count, without them)."""
        n = hidden.shape[0]
        if 0 < n < self.min_head_rows:
            hidden = torch.cat([hidden, hidden.new_zeros(self.min_head_rows - n, hidden.shape[1])])
        return self._head(hidden)[:n]

    def _head(self, hidden: torch.Tensor) -> torch.Tensor:
        """LM head (row-invariant products) and final logit soft-capping on (..., d) -> (..., V) float32."""
        with self.invariant_products():
            z = self.lm_head(hidden).float()
        cap = getattr(self.config, "final_logit_softcapping", None)
        return torch.tanh(z / cap) * cap if cap else z

    @torch.inference_mode()
    def prefill(self, rows: list[list[int]], hidden: bool = False, reserve: int = 0, pad_lone: bool = False) -> Batch:
        """Prefill each row on its own, then stack the caches left-padded into one batch.

        Args:
            rows: token ids per row (each ≥ 1 token).
            hidden: keep the last position's hidden states (``Batch.hidden``, (L+1, B, d)).
            reserve: decode steps the caller will run; > 0 preallocates a ``StaticCache`` of
                ``max(len(rows)) + reserve`` slots (no per-step concatenation); 0 keeps a ``DynamicCache``. The
                reserve changes no number: attention sees the filled slots only (:func:`filled_static_cache`), so
                decode steps give bitwise the log-probs and hidden states of the same steps on a ``DynamicCache``.
            pad_lone: with batch invariance, a lone row also gets empty rows, up to ``max(min_gemm_rows, 2)``, so
                that its decode steps run on the row-invariant products as a step of 2 or more rows does (a rule
                that records its log-probs, :class:`Rule`); otherwise a lone row keeps MKL's one-row kernel.
        Each row is prefilled alone, on the dense weights. With batch invariance, 2 or more rows get empty rows
        up to ``min_gemm_rows`` (``Batch.extra``; with packed weights :data:`MIN_GEMM_ROWS` where that is faster on
        this CPU, else none, :func:`packed_pad_rows`; MKL's probed row count without; module docstring).
        Raises:
            ValueError: an empty row.
        """
        from transformers import DynamicCache

        caches, lps, hss = [], [], []
        for ids in rows:
            if not ids:
                raise ValueError("cannot decode an empty prompt (no tokens)")
            cache = DynamicCache(config=self.cache_config)
            out = self.model(input_ids=torch.tensor([ids], device=self.device), cache=cache, use_cache=True,
                             output_hidden_states=hidden, logits_to_keep=1)
            self.stats["forward_passes"] += 1
            self.stats["prompt_tokens"] += len(ids)
            caches.append(cache)
            lps.append(torch.log_softmax(out.logits[0, -1].float(), dim=-1))
            if hidden:
                hss.append(torch.stack([h[0, -1] for h in layer_hidden_states(out.hidden_states, self.n_layers)]))
        lengths = [len(r) for r in rows]
        tmax = max(lengths)
        pads = [tmax - n for n in lengths]
        extra = self.min_gemm_rows - len(rows) if 1 < len(rows) < self.min_gemm_rows else 0
        if len(rows) == 1 and pad_lone and self.batch_invariant:
            extra = max(self.min_gemm_rows, 2) - 1
        if reserve <= 0 and len(rows) == 1 and not extra:
            merged = caches[0]
        elif reserve > 0:  # each row's keys written once, in place, into the zeroed static buffers
            merged = filled_static_cache(self.cache_config, tmax + reserve)
            n = len(rows) + extra
            for li in range(len(caches[0].layers)):
                k0, v0 = caches[0].layers[li].keys, caches[0].layers[li].values
                # an empty update allocates the layer's zeroed (n, kv_heads, tmax + reserve, head_dim) buffers
                merged.update(k0.new_zeros(n, k0.shape[1], 0, k0.shape[3]),
                              v0.new_zeros(n, v0.shape[1], 0, v0.shape[3]), li)
                layer = merged.layers[li]
                for i, (c, p) in enumerate(zip(caches, pads)):
                    layer.keys[i, :, p:tmax] = c.layers[li].keys[0]
                    layer.values[i, :, p:tmax] = c.layers[li].values[0]
                layer.advance(tmax)  # what the update of the stacked keys sets
        else:
            merged = DynamicCache(config=self.cache_config)
            for li in range(len(caches[0].layers)):
                ks = [_left_pad(c.layers[li].keys, p) for c, p in zip(caches, pads)]
                vs = [_left_pad(c.layers[li].values, p) for c, p in zip(caches, pads)]
                if extra:
                    ks.append(ks[0].new_zeros(extra, *ks[0].shape[1:]))
                    vs.append(vs[0].new_zeros(extra, *vs[0].shape[1:]))
                merged.update(torch.cat(ks), torch.cat(vs), li)
        mask = torch.zeros(len(rows) + extra, tmax, dtype=torch.long, device=self.device)
        for i, p in enumerate(pads):
            mask[i, p:] = 1
        return Batch(merged, mask, pads, lengths, torch.stack(lps), torch.stack(hss, dim=1) if hidden else None,
                     [list(r) for r in rows], extra, self.batch_invariant)

    @torch.inference_mode()
    def next_logprobs_shared_prefix(self, prefix: list[int], suffixes: list[list[int]]) -> torch.Tensor:
        """Next-token log-probs after ``prefix + suffix`` for each suffix, prefilling ``prefix`` once.

        The prefix's KV cache is computed once and copied for each suffix (a critic prompt that starts
        with the same instruction and question for every passage). Returns (n, V) float32 (nats).
        """
        import copy

        from transformers import DynamicCache

        base = DynamicCache(config=self.cache_config)
        if prefix:
            self.model(input_ids=torch.tensor([prefix], device=self.device), cache=base, use_cache=True, logits_to_keep=1)
            self.stats["forward_passes"] += 1
            self.stats["prompt_tokens"] += len(prefix)
        out = []
        for suf in suffixes:
            cache = copy.deepcopy(base) if prefix else DynamicCache(config=self.cache_config)
            pos = torch.arange(len(prefix), len(prefix) + len(suf), device=self.device).view(1, -1)
            o = self.model(input_ids=torch.tensor([suf], device=self.device), cache=cache, use_cache=True,
                           position_ids=pos, logits_to_keep=1)
            self.stats["forward_passes"] += 1
            self.stats["prompt_tokens"] += len(suf)
            out.append(torch.log_softmax(o.logits[0, -1].float(), dim=-1))
        return torch.stack(out)

    @torch.inference_mode()
    def step(self, batch: Batch, tokens: list[int], hidden: bool = False) -> None:
        """Append one token per row (B,) and run one batched forward pass; updates ``batch`` in place."""
        b = len(tokens)
        n = b + batch.extra
        x = torch.tensor(list(tokens) + [0] * batch.extra, device=self.device).view(n, 1)
        batch.mask = torch.cat([batch.mask, torch.ones(n, 1, dtype=batch.mask.dtype, device=self.device)], dim=1)
        if batch.extra:
            batch.mask[b:, -1] = 0
        pos = torch.tensor(batch.lengths + [0] * batch.extra, device=self.device).view(n, 1)
        single = n == 1 and batch.pads[0] == 0
        kw = {ROWS_KWARG: batch.spans()} if batch.rowwise else {}
        # a lone row keeps MKL's one-row kernel (as lm-eval's hf; ~15% faster than the packed one-row product); one
        # prefilled with pad_lone has empty rows (n > 1) and takes the row-invariant products
        with self.invariant_products() if n > 1 else nullcontext():
            out = self.model(input_ids=x, attention_mask=None if single or batch.rowwise else batch.mask, position_ids=pos,
                             cache=batch.cache, use_cache=True, output_hidden_states=hidden, **kw)
        self.stats["forward_passes"] += b
        batch.lengths = [length + 1 for length in batch.lengths]
        for r, t in zip(batch.ids, tokens):
            r.append(int(t))
        batch.logprobs = torch.log_softmax(out.logits[:b, -1].float(), dim=-1)
        # one stack of the (n, 1, d) states, then the real rows: 31 slices cost ~0.12 ms a step more (SmolLM2)
        batch.hidden = (torch.stack(layer_hidden_states(out.hidden_states, self.n_layers))[:, :b, -1].contiguous()
                        if hidden else None)

    # ------------------------------------------------------------------ internals on request
    def check_attention_rows(self) -> None:
        """Raise a one-line :class:`ConfigError` when attention rows cannot be recomputed for this model.

        Needed by Tok-RAG only: the model must expose its decoder layers (``model.model.layers``) with a
        ``self_attn`` that has ``q_proj``/``head_dim``, and a rotary embedding (``model.model.rotary_emb``).
        """
        name = type(self.model).__name__
        if self.layers is None or self.rotary is None:
            raise ConfigError(f"{name}: Tok-RAG recomputes attention rows from the decoder layers and RoPE "
                              "(model.model.layers, model.model.rotary_emb), which this model does not have")
        attn = self.layers[0].self_attn
        if not all(hasattr(attn, a) for a in ("q_proj", "head_dim")):
            raise ConfigError(f"{name}: Tok-RAG recomputes attention rows from self_attn.q_proj, which "
                              f"{type(attn).__name__} does not have (fused or absent query projection)")

    def _queries(self, layer: int, h_in: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Post-RoPE queries of ``layer`` for hidden inputs ``h_in`` (n, d) at ``positions`` (n,) -> (heads, n, head_dim).

        Input norm, q-projection, QK-norm on the query (``q_norm``, Gemma 3 / Qwen3) and RoPE with the
        layer's own base (Gemma 3: local layers 10k, global layers 1M, selected by ``layer_type``).
        """
        block = self.layers[layer]
        attn = block.self_attn
        x = block.input_layernorm(h_in.unsqueeze(0))  # (1, n, d)
        q = attn.q_proj(x).view(1, x.shape[1], -1, attn.head_dim)
        if hasattr(attn, "q_norm"):
            q = attn.q_norm(q)
        q = q.transpose(1, 2)  # (1, H, n, hd)
        per_type = getattr(self.rotary, "layer_types", None) is not None  # a RoPE table per layer type (Gemma 3)
        kw = {"layer_type": self.layer_types[layer]} if per_type else {}
        cos, sin = self.rotary(x, position_ids=positions.view(1, -1), **kw)
        rope = getattr(sys.modules[type(attn).__module__], "apply_rotary_pos_emb")
        q, _ = rope(q, q, cos, sin)
        return q[0]

    @torch.inference_mode()
    def attention_probs(self, layer: int, h_in: torch.Tensor, positions: torch.Tensor, keys: torch.Tensor,
                        key_valid: torch.Tensor | None = None, causal_limit: torch.Tensor | None = None) -> torch.Tensor:
        """Head-averaged attention probabilities of ``layer`` recomputed from its queries and cached keys.

        Args:
            h_in: (n, d) hidden states entering ``layer`` (``hidden_states[layer]``) for n queries.
            positions: (n,) position ids of the queries (RoPE).
            keys: (kv_heads, T, head_dim) post-RoPE keys of ``layer`` from the KV cache.
            key_valid: (T,) bool, False on padding.
            causal_limit: (n,) long, query i sees keys [0, causal_limit[i]] (inclusive); None = all.
        Returns:
            (n, T) float32, each row sums to 1 over the visible keys (softmax over the whole context,
            not only the passages, as in the authors' code), averaged over heads. Key j is taken to be
            at position j. On a sliding-window layer, keys with ``position − j ≥ sliding_window`` are
            not visible (probability 0), as in the model's own mask. Scores are ``q·k`` times the
            layer's ``scaling`` (Gemma 3: ``query_pre_attn_scalar**-0.5``).
        """
        self.check_attention_rows()
        attn = self.layers[layer].self_attn
        with self.invariant_products():
            q = self._queries(layer, h_in, positions).float()  # (H, n, hd)
        k = keys.float()
        groups = q.shape[0] // k.shape[0]
        if groups > 1:
            k = k.repeat_interleave(groups, dim=0)
        scores = torch.matmul(q, k.transpose(-1, -2)) * float(getattr(attn, "scaling", attn.head_dim ** -0.5))
        T = k.shape[1]
        neg = torch.finfo(scores.dtype).min
        if key_valid is not None:
            scores = scores.masked_fill(~key_valid.view(1, 1, T), neg)
        idx = torch.arange(T, device=scores.device).view(1, T)
        if causal_limit is not None:
            scores = scores.masked_fill((idx > causal_limit.view(-1, 1)).unsqueeze(0), neg)
        window = self.windows[layer]
        if window is not None:
            scores = scores.masked_fill((idx <= positions.to(scores.device).view(-1, 1) - window).unsqueeze(0), neg)
        return torch.softmax(scores, dim=-1).mean(0)

    @torch.inference_mode()
    def last_query_attention(self, batch: Batch, row: int, layer: int) -> torch.Tensor:
        """Attention row (head mean) of ``row``'s last query at ``layer`` over its real tokens -> (length,).

        Needs ``batch.hidden`` (call :meth:`prefill`/:meth:`step` with ``hidden=True``). The query is the
        *last* position also at the prefill step (fixes the authors' prefill bug, tokrag_method.md §3.9.1).
        """
        if batch.hidden is None:
            raise RuntimeError("last_query_attention needs hidden states: decode with hidden=True")
        pad = batch.pads[row]
        keys = batch.cache.layers[layer].keys[row, :, pad:pad + batch.lengths[row]]
        pos = torch.tensor([batch.lengths[row] - 1], device=self.device)
        return self.attention_probs(layer, batch.hidden[layer, row].unsqueeze(0), pos, keys)[0]

    @torch.inference_mode()
    def logit_lens(self, hidden: torch.Tensor, final_index: int | None = None) -> torch.Tensor:
        """LM head applied to hidden states (..., d) -> logits (..., V) float32.

        As in the authors' ``dola`` code (tokrag_method.md §3.4 (i)), intermediate states are *not*
        passed through the final norm; ``hidden_states[L]`` from transformers is already normed. The
        model's final logit soft-capping (``final_logit_softcapping``, Gemma 2) is applied as in its forward.
        """
        return self._head(hidden)


def _attention_layout(model: Any) -> tuple[list[str], list[int | None]]:
    """Per layer: its attention kind and sliding window (None for full attention), as transformers' caches
    read them from the config (``cache_utils.get_layer_types_and_kwargs``: ``layer_types``, else a
    ``sliding_window`` in the config means every layer is a sliding-window layer, as for Mistral).

    Raises:
        ConfigError: a layer kind other than full or sliding-window attention, or bidirectional attention.
    """
    from transformers.cache_utils import get_layer_types_and_kwargs

    cfg = model.config.get_text_config(decoder=True)
    types, kwargs = get_layer_types_and_kwargs(cfg)
    name = type(model).__name__
    other = sorted(set(types) - {"full_attention", "sliding_attention"})
    if other:
        raise ConfigError(f"{name}: layer kinds {other} are not supported by tokrag's multi-context decoder "
                          "(it supports full and sliding-window attention layers)")
    if getattr(cfg, "use_bidirectional_attention", False):
        raise ConfigError(f"{name}: use_bidirectional_attention=True (an embedding model) is not supported: "
                          "tokrag decodes causal language models")
    return list(types), [int(kw["sliding_window"]) if t == "sliding_attention" else None for t, kw in zip(types, kwargs)]


class Rule(Protocol):
    """A method's decision rule over the shared decoder (one instance per request, or per candidate answer: below).

    A rule may set ``candidate = True``: its generation is one of several candidate answers of its request, of which
    the method returns one (REPLUG ``answer_vote``, Self-RAG filter ``selection=rank``). :func:`generate` counts a
    candidate's tokens in ``branch_tokens`` only; the method adds the returned candidate's to ``generated_tokens``.
    A rule may set ``records_logprobs = True``: it keeps decode-step log-probs (its trace and its method's choice
    use them), so with batch invariance a lone row of it is decoded with empty rows added, on the row-invariant
    products, rather than on MKL's one-row kernel (``pad_lone`` of :meth:`MultiContextDecoder.prefill`; module
    docstring).
    """

    needs_hidden: bool

    def rows(self) -> list[list[int]]:
        """Token ids of this request's branches (prompts)."""

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        """Return the next token id given the branches' rows ``rows`` in ``batch``."""


STOP_REASONS = ("stop", "eos", "budget")
"""Why a generation ended (:func:`generate`'s ``reasons``, each trace's ``stop_reason``): a stop string of ``until``
is in its text (it is cut there), the model's EOS token, or ``max_gen_toks`` tokens reached without either (the
answer may be cut by the budget)."""


@torch.inference_mode()
def generate(dec: MultiContextDecoder, tokenizer: Any, rules: list[Any], until: list[str], max_gen_toks: int,
             eos_ids: set[int], reasons: list[str] | None = None) -> list[list[int]]:
    """Greedy lock-step decoding of several requests; returns the generated token ids per request.

    Each request's branches are rows of one batch. A request stops at an EOS token (not included), when
    its decoded continuation contains one of ``until`` (:func:`has_stop`: decoded with special tokens, as lm-eval's
    ``hf`` stop criterion decodes, so a stop that is a special token's text, e.g. ``<|endoftext|>``, is seen; or
    without them; the caller decodes the tokens without special tokens and cuts the text at the first stop
    string, as lm-eval's ``hf`` model does), or after ``max_gen_toks`` tokens. The emitted token extends every
    branch of its request.

    Counts each emitted token (EOS not) in ``dec.stats["branch_tokens"]``, and in ``dec.stats["generated_tokens"]``
    unless its rule is a ``candidate`` (:class:`Rule`: the method counts the candidate it returns), so that
    ``generated_tokens`` counts the tokens of the answers returned, one per request.

    ``reasons``, when given (a list, emptied first), gets per request why it stopped (:data:`STOP_REASONS`):
    ``"eos"``, ``"stop"`` (a stop string, also one that the ``max_gen_toks``-th token completes) or ``"budget"``
    (``max_gen_toks`` tokens, no stop string among them; a ``max_gen_toks`` of 0 or less too). What is decoded does
    not depend on it.
    """
    rows: list[list[int]] = []
    owner: list[list[int]] = []
    for rule in rules:
        ids = rule.rows()
        owner.append(list(range(len(rows), len(rows) + len(ids))))
        rows.extend(ids)
    hidden = any(r.needs_hidden for r in rules)
    pad_lone = any(getattr(r, "records_logprobs", False) for r in rules)  # Rule: its log-probs are batch-invariant
    batch = dec.prefill(rows, hidden=hidden, reserve=max(0, max_gen_toks), pad_lone=pad_lone)
    out: list[list[int]] = [[] for _ in rules]
    done = [max_gen_toks <= 0 for _ in rules]
    why = ["budget" if d else "" for d in done]
    returned = [not getattr(rule, "candidate", False) for rule in rules]  # counted in generated_tokens here
    stops = [s for s in until if s]
    special = set(tokenizer.all_special_ids) if stops else set()  # once per call, not per token (has_stop)
    step = 0
    while not all(done):
        feed = [0] * len(rows)
        for i, rule in enumerate(rules):
            if done[i]:
                for r in owner[i]:
                    feed[r] = batch.ids[r][-1]
                continue
            tok = int(rule.choose(dec, batch, owner[i], step))
            for r in owner[i]:
                feed[r] = tok
            if tok in eos_ids:
                done[i], why[i] = True, "eos"
                continue
            out[i].append(tok)
            dec.stats["branch_tokens"] += 1
            if returned[i]:
                dec.stats["generated_tokens"] += 1
            if len(out[i]) >= max_gen_toks:
                done[i] = True
                if reasons is not None:  # the last token may complete a stop string: then not cut by the budget
                    why[i] = "stop" if stops and has_stop(tokenizer, out[i], stops, special) else "budget"
            elif stops:
                done[i] = has_stop(tokenizer, out[i], stops, special)
                why[i] = "stop" if done[i] else why[i]
        if all(done):
            break
        dec.step(batch, feed, hidden=hidden)
        step += 1
    if reasons is not None:
        reasons[:] = why
    return out


def has_stop(tokenizer: Any, toks: list[int], stops: list[str], special: set[int] | None = None) -> bool:
    """Whether generated token ids ``toks`` contain one of the (non-empty) stop strings ``stops``, in their text
    decoded with special tokens (lm-eval's ``hf`` stop criterion, ``MultiTokenEOSCriteria``, decodes so: a stop that
    is a special token's text, ``until=["<|endoftext|>"]``, is seen) or without them (the text the answer is cut
    from: a stop whose characters a special token separates, ``"\\n<|im_start|>\\n"`` for ``"\\n\\n"``, still stops
    as before; the answer is cut there either way). The last 16 tokens are checked first (short decodes per step),
    and without special tokens only where the tail holds one (else both decodes of the tail are the same text)."""
    tail_ids = toks[-16:]
    special = set(tokenizer.all_special_ids) if special is None else special  # the caller's, read once per generate
    for skip in (False, True) if any(t in special for t in tail_ids) else (False,):
        tail = tokenizer.decode(tail_ids, skip_special_tokens=skip)
        if any(s in tail for s in stops) and any(s in tokenizer.decode(toks, skip_special_tokens=skip) for s in stops):
            return True
    return False
