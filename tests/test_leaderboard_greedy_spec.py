"""A spec asking a tokrag method to sample (``do_sample: true, temperature: 0.9``) was accepted: the run only warned
(the methods decode greedily) and the report said ``generation as run: do_sample=True, temperature=0.9`` beside
"greedy decoding". The lm-eval CLI refuses the same ``--gen_kwargs``; ``load_spec`` now refuses it by the CLI's rule
(:func:`tasks.precheck.check_run_arguments`), in one line naming the spec, the keys and the method."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from leaderboard_helpers import TOY, write_spec

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError


def _spec(tmp_path: Path, shared_gen: dict, method: dict | None = None) -> Path:
    methods = [{"name": "none", "model": "rag-none"}, method or {"name": "std", "model": "rag-standard"}]
    path = write_spec(tmp_path, methods=methods, extra={"reference": "none"})
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw["shared"]["gen_kwargs"].update(shared_gen)
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def test_sampling_asked_of_a_tokrag_method_is_refused_like_the_cli(tmp_path):
    path = _spec(tmp_path, {"do_sample": True, "temperature": 0.9})
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == (
        f"leaderboard spec {path.resolve()}: shared.gen_kwargs.do_sample True, shared.gen_kwargs.temperature 0.9 "
        "(method none): rag-none decodes greedily (every tokrag method does) and reads only until and max_gen_toks (or "
        "max_new_tokens, max_tokens, max_completion_tokens), with do_sample false or temperature 0, so the results "
        "would record settings that did not act; drop do_sample/temperature")


def test_a_method_s_own_temperature_is_named_by_its_key(tmp_path):
    path = _spec(tmp_path, {}, {"name": "std", "model": "rag-standard", "specific_gen_kwargs": {"temperature": 0.7}})
    with pytest.raises(ConfigError, match=r": methods\[1\]\.specific_gen_kwargs\.temperature 0\.7 \(method std\): "
                                          r"rag-standard decodes greedily \(every tokrag method does\)"):
        load_spec(path)


@pytest.mark.parametrize("shared_gen,method", [
    ({"do_sample": False, "temperature": 0.7}, None),  # do_sample false: greedy, as recorded (the CLI takes it too)
    ({"temperature": 0.0}, None),
    ({}, {"name": "toy", "model": TOY, "gen_kwargs": {"do_sample": True, "temperature": 0.9}}),  # not a tokrag method
])
def test_greedy_settings_and_other_models_pass(tmp_path, shared_gen, method):
    load_spec(_spec(tmp_path, shared_gen, method))
