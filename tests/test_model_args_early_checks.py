"""Model arguments refused with a one-line ConfigError when they are read, before the weights load:

* ``passage_template`` without ``{text}`` (it ran with one constant line per passage and no passage text, exit 0), with a
  field the prompt builder does not give (a KeyError traceback at the first request, after the load) or that does not
  format (an unmatched brace);
* ``replug_temperature`` <= 0 (refused in ``setup``, after the load);
* a CUDA device (other than lm-eval's default ``cuda:0``, which falls back to cpu) or ``mps`` on a machine without one
  (it ran on CPU silently while the recorded model_args said cuda).
"""

from __future__ import annotations

import pytest
import torch

from retrieval.errors import ConfigError
from tokrag_model import base
from tokrag_model.methods.replug import ReplugLM
from tokrag_model.methods.standard import RagStandardLM
from tokrag_model.prompt import format_passage


class Loaded(Exception):
    """Backbone.load was reached (the arguments passed every check before it)."""


@pytest.fixture
def no_load(monkeypatch):
    """Backbone.load and transformers' from_pretrained fail loudly: any weights load is seen."""
    import transformers

    def load(cls, *args, **kwargs):
        raise Loaded(args, kwargs)

    def from_pretrained(*args, **kwargs):
        raise AssertionError("weights loaded")

    monkeypatch.setattr(base.Backbone, "load", classmethod(load))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", from_pretrained)


def refused(cls, **kwargs) -> str:
    """The ConfigError message of ``cls(**kwargs)`` (one line), raised before the weights load."""
    with pytest.raises(ConfigError) as info:
        cls(pretrained="smollm2-135m-instruct", device="cpu", **kwargs)
    message = str(info.value)
    assert "\n" not in message, message
    return message


TEMPLATES = [
    ("[Reference]\n", "has no {text}"),
    ("{title}\n", "has no {text}"),
    ("{bogus} {text}", "unknown field(s) {bogus}"),
    ("{0} {text}", "unknown field(s) {0}"),
    ("{} {text}", "unknown field(s) {}"),
    ("{text.upper}", "attribute or index access {text.upper} is not supported"),  # it said 'has no {text}'
    ("{text[0]} {text}", "attribute or index access {text[0]} is not supported"),
    ("{text", "cannot be formatted"),
    ("{text:{bogus}}", "cannot be formatted"),
]


@pytest.mark.parametrize("template,why", TEMPLATES, ids=[t for t, _ in TEMPLATES])
def test_a_bad_passage_template_is_refused_before_the_weights_load(no_load, template, why):
    message = refused(RagStandardLM, passage_template=template)
    assert message.startswith("--model rag-standard: model argument passage_template=")
    assert why in message
    assert "{title}, {text}, {rank}, {docid}" in message  # the allowed fields


@pytest.mark.parametrize("template", ["[Reference]: {title}\n{text}\n", "{rank}. {text!r} ({docid})", "{{literal}} {text}",
                                      "{rank:>3} {text}"])
def test_a_good_passage_template_reaches_the_load_and_formats(no_load, template):
    with pytest.raises(Loaded):
        RagStandardLM(pretrained="smollm2-135m-instruct", device="cpu", passage_template=template)
    assert "Passage text." in format_passage({"title": "T", "text": "Passage text.", "rank": 1, "docid": "d"}, template, 0)


def test_the_allowed_fields_are_the_ones_format_passage_gives():
    from tokrag_model.prompt import PASSAGE_FIELDS

    ctx = {"title": "T", "text": "X", "rank": 3, "docid": "d7"}
    assert format_passage(ctx, " ".join("{" + f + "}" for f in PASSAGE_FIELDS), 0) == "T X 3 d7"


@pytest.mark.parametrize("tau", [0, -1, "0.0"])
def test_a_replug_temperature_not_above_zero_is_refused_before_the_weights_load(no_load, tau):
    message = refused(ReplugLM, replug_temperature=tau)
    assert message.startswith("--model rag-replug: model argument replug_temperature=")
    assert "replug_temperature must be > 0" in message


def test_a_positive_replug_temperature_reaches_the_load(no_load):
    with pytest.raises(Loaded):
        ReplugLM(pretrained="smollm2-135m-instruct", device="cpu", replug_temperature=0.5)


def test_max_gen_toks_and_max_length_reach_the_load(no_load):
    """The generation budget is checked at the first generation request, not when the arguments are read: the
    ``max_gen_toks`` model argument is only the default of tasks that give none, and a loglikelihood-only run
    (``max_length=128,max_gen_toks=128`` on ``wiki_lm_bm25``) never uses it (an early refusal of that valid run was
    found by a review and taken back)."""
    for kwargs in ({"max_length": 10}, {"max_length": 64, "max_gen_toks": 32}, {"max_length": 128, "max_gen_toks": 128}):
        with pytest.raises(Loaded):
            RagStandardLM(pretrained="smollm2-135m-instruct", device="cpu", **kwargs)


@pytest.fixture
def no_accelerator(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.mark.parametrize("device", ["cuda", "cuda:1", "mps"])
def test_a_device_this_machine_lacks_is_refused_before_the_weights_load(no_load, no_accelerator, device):
    with pytest.raises(ConfigError) as info:
        RagStandardLM(pretrained="smollm2-135m-instruct", device=device)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"--device {device} (or device={device} in --model_args): ")
    assert "is_available() is False on this machine" in message and message.endswith("use --device cpu")


def test_lm_evals_device_flag_is_refused_too(no_load, no_accelerator):
    with pytest.raises(ConfigError, match=r"^--device cuda .*torch\.cuda\.is_available\(\) is False"):
        RagStandardLM.create_from_arg_obj({"pretrained": "smollm2-135m-instruct"}, {"device": "cuda", "batch_size": "1"})


def test_lm_evals_default_cuda0_still_falls_back_to_cpu(no_load, no_accelerator):
    # lm-eval hands every model device='cuda:0' when --device is not given (documented fallback, kept)
    with pytest.raises(Loaded) as info:
        RagStandardLM.create_from_arg_obj({"pretrained": "smollm2-135m-instruct"}, {"device": "cuda:0", "batch_size": "1"})
    args, _ = info.value.args
    assert args[2] == "cpu"  # Backbone.load(pretrained, dtype, device, ...)


def test_the_cuda0_fallback_reads_the_stripped_name(no_accelerator):
    """resolve_device tested the raw string for lm-eval's default: ' cuda:0' was refused while 'cuda:0' fell back
    (found by a review; runner.backbone_key and direct callers pass it unstripped)."""
    from tokrag_model.loading import resolve_device

    assert resolve_device(" cuda:0") == resolve_device("cuda:0") == "cpu"
