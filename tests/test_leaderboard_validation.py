"""Bad spec values, arguments and baselines are one-line errors naming the file and the key, before any model loads;
``check --write`` never drops a baseline's cells (fast: toy spec, no model)."""

from __future__ import annotations

import pytest
from leaderboard_helpers import FIX, TOY, write_spec

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError


def _shared(**over):
    shared = {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
              "limit": 12}
    for key, value in over.items():
        if key in ("model_args", "gen_kwargs"):
            shared[key] = {**shared[key], **value}
        else:
            shared[key] = value
    return {"shared": shared}


@pytest.mark.parametrize(
    "change, message",
    [
        (_shared(model_args={"k": 0}), "shared.model_args.k must be an integer >= 1, got 0"),
        (_shared(model_args={"k": -1}), "shared.model_args.k must be an integer >= 1, got -1"),
        (_shared(model_args={"k": "5"}), "shared.model_args.k must be an integer >= 1, got '5'"),
        ({"methods": [{"name": "a", "model": TOY, "specific": {"k": 0}}]}, "methods[0].specific.k must be an integer >= 1"),
        (_shared(apply_chat_template="false"),
         "shared.apply_chat_template must be true or false (an unquoted YAML boolean), got 'false'"),
        (_shared(fewshot_as_multiturn="no"), "shared.fewshot_as_multiturn must be true or false"),
        (_shared(gen_kwargs={"do_sample": "false"}), "shared.gen_kwargs.do_sample must be true or false"),
        (_shared(gen_kwargs={"max_gen_toks": -3}), "shared.gen_kwargs.max_gen_toks must be an integer >= 1, got -3"),
        (_shared(gen_kwargs={"max_gen_toks": "abc"}), "shared.gen_kwargs.max_gen_toks must be an integer >= 1, got 'abc'"),
        ({"methods": [{"name": "a", "model": TOY, "specific_gen_kwargs": {"max_gen_toks": 0}}]},
         "methods[0].specific_gen_kwargs.max_gen_toks must be an integer >= 1"),
        (_shared(num_fewshot=-1), "shared.num_fewshot must be an integer >= 0 or null, got -1"),
        (_shared(batch_size=2.7), "shared.batch_size must be an integer >= 1, got 2.7"),
        (_shared(batch_size="abc"), "shared.batch_size must be an integer >= 1, got 'abc'"),
        (_shared(device="gpu9"), "shared.device 'gpu9' is not a device torch knows"),
        ({"bootstrap": {"iters": "abc"}}, "bootstrap.iters must be an integer >= 100, got 'abc'"),
        ({"bootstrap": {"confidence": "x"}}, "bootstrap.confidence must be a number in (0.5, 1), got 'x'"),
        ({"progress_chunk": "abc"}, "progress_chunk must be an integer >= 1, got 'abc'"),
        ({"primary_metric": "nosuchmetric"}, "primary_metric 'nosuchmetric' is not a metric of the spec's tasks"),
        ({"primary_metric": "answer_mach"}, "(did you mean 'answer_match'?)"),
    ],
)
def test_spec_rejects_bad_values_naming_the_key(tmp_path, change, message):
    p = write_spec(tmp_path, extra=change)
    with pytest.raises(ConfigError) as exc:
        load_spec(p)
    text = str(exc.value)
    assert message in text and str(p) in text and "\n" not in text


def test_spec_keeps_valid_values_as_given(tmp_path):
    p = write_spec(tmp_path, extra={**_shared(num_fewshot=0, batch_size=2, apply_chat_template=False, device="cuda:0",
                                              fewshot_as_multiturn=False), "primary_metric": "f1"})
    cell = load_spec(p).cells()[0]
    assert (cell.num_fewshot, cell.batch_size, cell.apply_chat_template, cell.device, cell.fewshot_as_multiturn) == \
        (0, 2, False, "cuda:0", False)
    assert load_spec(p).primary_metric == "f1"
