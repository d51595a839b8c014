"""``pretrained`` of another type than text was made text by ``str()`` (s52 b1, /work/scratch/s52/b1/specs/pre_*.yaml):
a spec's ``model_args: {pretrained: [x]}`` (or ``{a: 1}``, ``true``) passed ``tokrag leaderboard run --estimate`` and
every pre-run check as the hub id ``"['x']"``, and ``lm_eval --model_args '{"pretrained": ["x"]}'`` alike, failing
only at the model load. It is now refused with the model's other argument errors; a number (``pretrained: 2024``, a
folder's name that YAML and lm-eval read as a number) is still its text."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tokrag_model.args import resolved_args
from tokrag_model.methods import MODELS

WANT = "expected text (a hub id, a local folder or an alias), got "


@pytest.mark.parametrize("value, got", [(["x"], "a list"), ({"a": 1}, "a mapping"), (True, "true/false")])
def test_pretrained_that_is_not_text_is_refused(value, got):
    with pytest.raises(ConfigError) as exc:
        resolved_args(MODELS["rag-none"], {"pretrained": value})
    assert str(exc.value).startswith(f"--model rag-none: model argument pretrained={value!r} is invalid: {WANT}{got} (")


def test_a_spec_with_a_list_as_pretrained_is_refused_by_the_estimate(tmp_path, capsys):
    from leaderboards.cli import main

    spec = tmp_path / "pl.yaml"
    spec.write_text("name: pl\nreference: rag-none\nshared:\n  model_args: {pretrained: [x], k: 3}\n  limit: 2\n"
                    "tasks: [nq_oracle_bm25]\nseeds: [1]\nmethods:\n- {name: rag-none, model: rag-none}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        main(["run", str(spec), "--runs-dir", str(tmp_path / "runs"), "--estimate"])
    assert f"method rag-none: --model rag-none: model argument pretrained=['x'] is invalid: {WANT}a list" in str(exc.value)


@pytest.mark.parametrize("value, text", [("smollm2-135m-instruct", "smollm2-135m-instruct"), (2024, "2024")])
def test_text_and_numbers_still_pass(value, text):
    assert resolved_args(MODELS["rag-none"], {"pretrained": value})["pretrained"] == text


@pytest.mark.parametrize("model, key, value, got", [
    ("rag-standard", "passage_template", ["[Ref]: {text}"], "text with {text}, got a list"),
    ("rag-selfrag-filter", "query_field", ["question"], "text, got a list"),
    ("tokrag", "preset", {"path": "p.json"}, "text, got a mapping"),
    ("rag-none", "revision", True, "text, got true/false"),
])
def test_other_text_arguments_that_are_not_text_are_refused(model, key, value, got):
    """passage_template: [x] became the template "['[Ref]: {text}']", which has a {text}, so every passage was put
    in brackets and quotes, silently; query_field, preset and revision became "['question']" etc."""
    with pytest.raises(ConfigError) as exc:
        resolved_args(MODELS[model], {key: value})
    assert f"model argument {key}={value!r} is invalid: expected {got} (" in str(exc.value)
