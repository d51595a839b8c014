"""Every method leaves the model and tokenizer it is built over as it found them (README "Adding a method"):
`tokrag leaderboard run` builds the methods of one base model over one loaded model (leaderboards/runner.py
``backbone_key``), so a method that changed the shared model would change every later cell's numbers.

Each method is built over the session's SmolLM2 backbone (tests/conftest.py) with its default arguments, runs
one short generation and one loglikelihood request, and a snapshot of the model and tokenizer is compared
before and after; the last test calls the first method again and gets its first outputs back."""

from __future__ import annotations

import hashlib

import pytest
from test_model_smollm2 import GEN, context_of, docs  # noqa: F401  (docs: a fixture; backbone: tests/conftest.py)

from tokrag_model.methods import METHODS

pytestmark = pytest.mark.slow

N_SAMPLE = 4096  # elements hashed per tensor: a fixed, evenly strided sample (all bytes of 540 MB would take seconds)


def _tensor_digest(t) -> str:
    """sha256 of shape, dtype, storage address, the float64 sum of every element and a fixed sample's bytes."""
    import torch

    flat = t.detach().reshape(-1)
    step = max(1, flat.numel() // N_SAMPLE)
    sample = flat[::step][:N_SAMPLE].cpu()
    if sample.dtype.is_floating_point:
        sample = sample.float()  # exact for bfloat16/float16, which numpy cannot hold
    total = float(flat.sum(dtype=torch.float64)) if flat.numel() else 0.0
    h = hashlib.sha256(repr((tuple(t.shape), str(t.dtype), t.data_ptr(), total)).encode())
    h.update(sample.contiguous().numpy().tobytes())
    return h.hexdigest()


def snapshot(backbone) -> dict:
    """What a method must not change, by name (a difference names the attribute)."""
    import torch
    from torch.nn.modules import module as nn_module

    from tokrag_model.decoder import _ROWWISE_PREFIX

    model, tok = backbone.model, backbone.tokenizer
    kernels = getattr(model, "_tokrag_linear_kernels", None)
    snap = {
        "config": model.config.to_dict(),
        # The batch-invariant decoder's documented switch (tokrag_model/decoder.py enable_rowwise_attention,
        # idempotent): `tokrag_rows_<base>` is <base> for any caller that passes no `tokrag_rows`; the base is compared.
        "config._attn_implementation": model.config._attn_implementation.removeprefix(_ROWWISE_PREFIX),
        # ... and its packed Linear forwards (pack_linear_weights) must be switched off outside the decoder's calls
        "packed Linear forwards on": bool(kernels is not None and kernels.on),
        "generation_config": model.generation_config.to_dict(),
        "training": model.training,
        "training(modules)": sorted(n for n, m in model.named_modules() if m.training),
        "requires_grad": sorted(n for n, p in model.named_parameters() if p.requires_grad),
        "global hooks": {k: len(getattr(nn_module, k)) for k in dir(nn_module)
                         if k.startswith("_global_") and k.endswith("hooks")},
        # `_tokrag_linear_kernels`: set once by pack_linear_weights (the batch-invariant switch, above)
        "model attributes": sorted(k for k in vars(model) if not k.startswith("__") and k != "_tokrag_linear_kernels"),
        "tokenizer": {"padding_side": tok.padding_side, "truncation_side": tok.truncation_side,
                      "chat_template": tok.chat_template, "len": len(tok), "pad_token": tok.pad_token,
                      "eos_token": tok.eos_token, "bos_token": tok.bos_token,
                      "model_max_length": tok.model_max_length},
    }
    for name, mod in model.named_modules():
        hooks = {k: len(v) for k, v in vars(mod).items()
                 if k.endswith("hooks") or k.endswith("hooks_with_kwargs") or k.endswith("hooks_always_called")
                 if isinstance(v, dict) and v}
        if hooks:
            snap[f"hooks {name}"] = hooks
        if isinstance(mod, torch.nn.Linear):
            # an instance-level forward is allowed only as pack_linear_weights' (the batch-invariant switch: the
            # module's own F.linear while its kernels are off, checked above)
            fwd = vars(mod).get("forward")
            packed = fwd is not None and kernels is not None and getattr(fwd, "__module__", None) == "tokrag_model.decoder"
            snap[f"Linear.forward {name}"] = "own" if fwd is None or packed else repr(fwd)
    with torch.no_grad():
        for name, t in model.state_dict(keep_vars=False).items():
            snap[f"state_dict {name}"] = _tensor_digest(t)
    return snap


def diff(before: dict, after: dict) -> list[str]:
    out = []
    for k in sorted(set(before) | set(after)):
        b, a = before.get(k, "<absent>"), after.get(k, "<absent>")
        if b == a:
            continue
        if isinstance(b, dict) and isinstance(a, dict):
            out += [f"{k}[{kk!r}]: {b.get(kk, '<absent>')!r} -> {a.get(kk, '<absent>')!r}"
                    for kk in sorted(set(b) | set(a), key=str) if b.get(kk, "<absent>") != a.get(kk, "<absent>")]
        else:
            out.append(f"{k}: {b!r} -> {a!r}")
    return out


def requests(tok, doc):
    from lm_eval.api.instance import Instance

    gen = Instance("generate_until", doc, (context_of(tok, doc), dict(GEN, max_gen_toks=4)), 0, metadata=("t", 0, 1))
    ll = Instance("loglikelihood", doc, (context_of(tok, doc), " " + doc["answers"][0]), 0)
    return gen, ll


def run_once(lm, tok, doc):
    gen, ll = requests(tok, doc)
    (out,) = lm.generate_until([gen], disable_tqdm=True)
    ((score, greedy),) = lm.loglikelihood([ll], disable_tqdm=True)
    return out, score, greedy


FIRST = next(iter(METHODS))
RESULTS: dict[str, tuple] = {}
LMS: dict[str, object] = {}


@pytest.mark.parametrize("name", list(METHODS))
def test_method_leaves_the_shared_model_and_tokenizer_unchanged(backbone, docs, name):  # noqa: F811
    from tokrag_model.methods import MODELS

    # transformers installs inert output-capturing forward hooks on the decoder layers and attention modules the
    # first time anything asks the model for hidden states (transformers.utils.output_capturing, active only inside
    # such a call): installed here first, so that a method's own hooks are what the counts compare. They are installed
    # as that first call does, on the inner LlamaModel, whose forward asks for them and which keeps the installed flag;
    # on the outer *ForCausalLM, after a hidden-state forward earlier in the process, they were installed a second
    # time (its recursive install does not check the inner flag): every layer recorded twice, 61 hidden states, on
    # the session's shared backbone (s58 o1, 7a6360e)
    from transformers.utils.output_capturing import maybe_install_capturing_hooks

    maybe_install_capturing_hooks(backbone.model.model)
    before = snapshot(backbone)
    lm = MODELS[name].with_backbone(backbone)
    RESULTS[name] = run_once(lm, backbone.tokenizer, docs[0])
    LMS[name] = lm
    changed = diff(before, snapshot(backbone))
    assert not changed, f"{name} changed the shared model or tokenizer:\n" + "\n".join(changed)


def test_first_method_gives_its_first_outputs_after_every_method_ran(backbone, docs):  # noqa: F811
    from tokrag_model.methods import MODELS

    for name in METHODS:  # run alone (-k), or after a failure, the other methods still run first
        if name not in RESULTS:
            LMS[name] = MODELS[name].with_backbone(backbone)
            RESULTS[name] = run_once(LMS[name], backbone.tokenizer, docs[0])
    assert run_once(LMS[FIRST], backbone.tokenizer, docs[0]) == RESULTS[FIRST]
    assert run_once(MODELS[FIRST].with_backbone(backbone), backbone.tokenizer, docs[0]) == RESULTS[FIRST]
