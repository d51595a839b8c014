"""The decoder's hidden states do not depend on how many times transformers installed its recording hooks (s58 o1).

transformers (5.24) records ``output_hidden_states`` with forward hooks it installs on the decoder layers once per
model (``transformers.utils.output_capturing``). ``maybe_install_capturing_hooks`` called on a ``*ForCausalLM`` after
its inner model already had its hooks installs them a second time (the recursive install does not check the inner
model's flag): every layer's output is then recorded twice, 61 hidden states for SmolLM2's 30 layers, and the decoder
took ``hidden_states[l]`` as the input of layer l where it was that of layer (l + 1) // 2. That call is made by
tests/test_methods_leave_model_unchanged on the session's shared SmolLM2; after a hidden-state forward had installed
the hooks in the same process, Tok-RAG's S_R later differed from the golden at 18 of 25 tokens (the clean-clone CI at
cd4abcc: tests/test_s57_a2_token_lists in the same xdist worker), its strings, branches, layers and S_L equal, and
its teacher-forced scores moved too. Now :func:`tokrag_model.decoder.layer_hidden_states` drops the repeated entries.

Each test makes the second install itself (not relying on which tests ran before) and leaves the model's hooks as it
found them.
"""

from __future__ import annotations

import pytest
import torch

from tokrag_model.decoder import Forcing, MultiContextDecoder, layer_hidden_states

_HOOK_DICTS = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")
_FLAG = "_output_capturing_hooks_installed"


def _hooks_of(model) -> dict:
    """Every module's forward-hook dicts and the models' install flags, to put back (:func:`_restore`)."""
    return {mod: ({k: dict(getattr(mod, k)) for k in _HOOK_DICTS}, vars(mod).get(_FLAG, _FLAG))
            for mod in model.modules()}


def _restore(saved: dict) -> None:
    for mod, (dicts, flag) in saved.items():
        for k, v in dicts.items():
            getattr(mod, k).clear()
            getattr(mod, k).update(v)
        if flag is _FLAG:
            vars(mod).pop(_FLAG, None)
        else:
            setattr(mod, _FLAG, flag)


def _install_twice(model) -> None:
    """The inner model's recording hooks (as a first hidden-state forward installs them), then
    ``install_all_output_capturing_hooks`` on the outer model: what ``maybe_install_capturing_hooks(model)`` does when
    the outer model has no flag yet (called directly, so that the hooks are doubled whatever ran before)."""
    from transformers.utils.output_capturing import install_all_output_capturing_hooks, maybe_install_capturing_hooks

    maybe_install_capturing_hooks(model.model)
    install_all_output_capturing_hooks(model)
    with torch.inference_mode():
        n = len(model(input_ids=torch.tensor([[1, 2, 3]]), output_hidden_states=True).hidden_states)
    assert n == 2 * model.config.num_hidden_layers + 1  # the state the CI's worker was in


def _decoder_hidden(model) -> dict[str, torch.Tensor]:
    """Hidden states from each of the decoder's four forward kinds (prefill, decode step, forward_full, teacher
    forcing), batch-invariant as on CPU by default."""
    dec = MultiContextDecoder(model, {"forward_passes": 0, "prompt_tokens": 0}, batch_invariant=True)
    rows = [[5, 9, 14, 3, 22, 41, 7], [8, 30, 2]]
    batch = dec.prefill(rows, hidden=True, reserve=2)
    got = {"prefill": batch.hidden.clone()}
    dec.step(batch, [11, 11], hidden=True)
    got["step"] = batch.hidden.clone()
    got["forward_full"] = dec.forward_full(rows[0], hidden=True)[1]
    got["teacher_force"] = dec.teacher_force([Forcing(rows[0], [11, 12], hidden=True),
                                              Forcing(rows[1], [13], hidden=True)])[0].hidden
    return got


def test_layer_hidden_states_keeps_one_recording_and_drops_repeats():
    emb, outs, normed = torch.zeros(1), [torch.full((1,), float(i + 1)) for i in range(3)], torch.full((1,), 9.0)
    once = (emb, outs[0], outs[1], normed)  # transformers: the last layer's output replaced by the normed one
    assert layer_hidden_states(once, 3) is once
    twice = (emb, outs[0], outs[0], outs[1], outs[1], outs[2], normed)
    assert [float(h) for h in layer_hidden_states(twice, 3)] == [0.0, 1.0, 2.0, 9.0]
    thrice = (emb, *[o for o in outs for _ in range(3)][:-1], normed)
    assert [float(h) for h in layer_hidden_states(thrice, 3)] == [0.0, 1.0, 2.0, 9.0]
    with pytest.raises(RuntimeError, match=r"^the model returned 6 hidden states for its 3 layers \(6 after dropping "
                                           r"repeated entries\), not 4: .*load the model again$"):
        layer_hidden_states((emb, *outs, torch.ones(1), normed), 3)


def test_decoder_hidden_states_are_the_same_with_the_recording_hooks_installed_twice(one_thread):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=256)
    model = LlamaForCausalLM(cfg).eval()
    before = _decoder_hidden(model)
    assert all(h.shape[0] == 4 for h in before.values())  # L + 1
    _install_twice(model)
    after = _decoder_hidden(model)
    for kind in before:
        assert torch.equal(after[kind], before[kind]), kind


@pytest.mark.slow
def test_tokrag_golden_scores_after_a_second_install_on_the_shared_backbone(backbone, data_dir):
    """test_model_smollm2's first question under Tok-RAG (always_score): the golden S_R, S_L, branches, layers and
    string also after the recording hooks were installed twice on the session's SmolLM2 (the old decoder gave S_R
    [0.2233, 0.2177, 0.9972, 0.6037, 0.9997] for [0.2385, 0.2177, 0.4644, 0.9996, 0.9997]); a teacher-forced score
    of the gold answer is the same before and after."""
    from lm_eval.api.instance import Instance
    from test_model_smollm2 import GOLDEN_OUT, GOLDEN_TOKRAG, context_of, gen_requests, make_docs

    from tokrag_model.methods import MODELS

    docs = make_docs(data_dir, n=1)
    ctx = context_of(backbone.tokenizer, docs[0])
    ll_req = Instance("loglikelihood", docs[0], (ctx, " " + docs[0]["answers"][0]), 0)
    saved = _hooks_of(backbone.model)
    try:
        ll_before = MODELS["tokrag"].with_backbone(backbone).loglikelihood([ll_req], disable_tqdm=True)
        _install_twice(backbone.model)
        lm = MODELS["tokrag"].with_backbone(backbone, always_score=True)
        reqs = gen_requests(backbone.tokenizer, docs)
        out = lm.generate_until(reqs, disable_tqdm=True)
        trace = [t[:4] for t in reqs[0].args[-1]["tokrag_trace"]["tokens"]]
        ll_after = MODELS["tokrag"].with_backbone(backbone).loglikelihood([ll_req], disable_tqdm=True)
    finally:
        _restore(saved)
    golden = GOLDEN_TOKRAG[0]
    assert out == GOLDEN_OUT["tokrag"][:1]
    assert [(b, layer) for b, _, _, layer in trace] == [(b, layer) for b, _, _, layer in golden]
    assert [t[1] for t in trace] == pytest.approx([t[1] for t in golden], abs=2e-3)  # S_R
    assert [t[2] for t in trace] == pytest.approx([t[2] for t in golden], abs=2e-3)  # S_L
    assert ll_after == ll_before
