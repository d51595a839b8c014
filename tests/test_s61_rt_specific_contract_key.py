"""s61 rt (read-through of the day's changes): a method's ``specific`` holds model arguments (and, since d1's 5b9ae7b,
the contract keys ``device`` / ``batch_size`` as its printed deviation); another contract key there, ``specific:
{limit: 2}``, was handed to the model as a model argument. Measured on fea74b6's tree with the ToyLM spec: accepted at
load, the report's deviation read ``model_args.limit=2`` while both cells scored the contract's 4 questions (ToyLM
takes ``**kwargs``); a ``rag-cad`` method was refused only by ``run``'s argument check (``unknown model argument(s)
'limit'``). Now the spec's load refuses it in one line with the file, the line and where the key goes."""

from __future__ import annotations

import pytest
import yaml

from leaderboard_helpers import TOY, write_spec
from retrieval.errors import ConfigError


def _spec(tmp_path, specific):
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}, "specific": specific}]
    return write_spec(tmp_path, methods=methods, tasks=["toy_qa"], limit=4)


def _line(path, key):
    """The line of ``key:`` within the (one) ``specific:`` mapping of the spec file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "specific:")
    return next(i for i, line in enumerate(lines[start + 1:], start + 2) if line.strip().startswith(f"{key}:"))


def test_a_specific_limit_is_refused_at_load(tmp_path):
    from leaderboards.spec import load_spec

    path = _spec(tmp_path, {"limit": 2})
    line = _line(path, "limit")
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == (
        f"leaderboard spec {path}:{line}: methods[1].specific.limit 2: a contract key, the same for every method, not "
        "a model argument: put it under shared (or models[j].shared, a model's own contract); a task entry's limit "
        "sets one task's")


@pytest.mark.parametrize("key,value,fix", [
    ("num_fewshot", 2, "a contract key, the same for every method, not a model argument: put it under shared (or "
                       "models[j].shared, a model's own contract)"),
    ("model_args", {"k": 2}, "methods[1].specific holds the method's own model arguments themselves "
                             "(specific: {k: 3})"),
    ("gen_kwargs", {"max_gen_toks": 4}, "a method's own generation settings go under methods[1].specific_gen_kwargs"),
])
def test_other_contract_keys_in_specific_are_refused(tmp_path, key, value, fix):
    from leaderboards.spec import load_spec

    path = _spec(tmp_path, {key: value})
    line = _line(path, key)
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == f"leaderboard spec {path}:{line}: methods[1].specific.{key} {value!r}: {fix}"


def test_model_arguments_and_the_model_flags_stay_allowed_in_specific(tmp_path):
    from leaderboards.spec import load_spec

    spec = load_spec(_spec(tmp_path, {"k": 2, "batch_size": "2", "device": "cpu"}))
    assert spec.specific_settings() == {"none": {"model_args.k": 2, "batch_size": 2, "device": "cpu"}}
    assert yaml.safe_load(spec.path.read_text(encoding="utf-8"))["shared"]["limit"] == 4
    assert {c.method.name: c.limit for c in spec.cells()} == {"standard": 4, "none": 4}


@pytest.mark.parametrize("place,key,value,where,fix", [
    ("method", "limit", 2, "methods[1].model_args.limit", "put it under shared"),
    ("method_args", "num_fewshot", 2, "models[0].method_args.none.num_fewshot", "put it under models[0].shared"),
    ("shared", "prompt", "base", "shared.model_args.prompt", "put it under shared"),
])
def test_a_contract_key_in_any_model_args_is_refused_at_load(tmp_path, place, key, value, where, fix):
    """The same key in a ``model_args`` was handed to the model unprinted (ToyLM ignored it; measured on 107193b's
    tree: all three specs loaded)."""
    from leaderboard_helpers import FIX
    from leaderboards.spec import load_spec

    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}}]
    extra = None
    if place == "method":
        methods[1]["model_args"][key] = value
    elif place == "method_args":
        extra = {"models": [{"name": "m", "method_args": {"none": {key: value}}}]}
    else:
        extra = {"shared": {"model_args": {"pretrained": str(FIX / "toy_weights.bin"), key: value}, "limit": 4}}
    path = write_spec(tmp_path, methods=methods, tasks=["toy_qa"], limit=4, extra=extra)
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip() == f"{key}: {value}")
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == f"leaderboard spec {path}:{line}: {where} {value!r}: a contract key: {fix}"
