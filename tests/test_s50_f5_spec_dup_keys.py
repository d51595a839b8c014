"""A leaderboard spec with a mapping key given twice is refused (PyYAML's safe loader kept the last silently: a row
named ``tokrag`` with ``model: tokrag, model: rag-cad`` ran CAD, ``k: 5`` then ``k: 3`` ran k=3); merge keys still
work. ``check --baseline <folder>`` gives one line, not an IsADirectoryError traceback. A tokrag method's ``dtype``
is checked before the first cell with the load's own rule (``dtype: float64`` passed ``run --estimate`` and failed at
its cell's load, in a line naming neither the spec nor the method). Found by s50 b1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, TOY, write_spec

from leaderboards.check import load_baseline
from leaderboards.runner import check_cell_args
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

HEAD = f"""name: toy
include_path: {FIX / 'tasks'}
reference: standard
shared:
  model_args: {{pretrained: {FIX / 'toy_weights.bin'}, k: 3}}
  gen_kwargs: {{max_gen_toks: 8}}
  limit: 12
tasks: [toy_qa]
seeds: [1]
"""  # 9 lines


def _spec(tmp_path: Path, methods: str, head: str = HEAD) -> Path:
    path = tmp_path / "toy.yaml"
    path.write_text(head + "methods:\n" + methods, encoding="utf-8")
    return path


def test_the_toy_spec_without_a_repeat_loads(tmp_path):
    spec = load_spec(_spec(tmp_path, f"  - {{name: standard, model: '{TOY}', model_args: {{mode: first}}}}\n"))
    assert [(m.name, m.model, m.model_args) for m in spec.methods] == [("standard", TOY, {"mode": "first"})]


@pytest.mark.parametrize("methods, where, key, first", [
    # a flow mapping: the row named 'tokrag' ran the second model
    ("  - {name: standard, model: '%s', model: rag-cad}\n" % TOY, "11:72", "model", "line 11, column 22"),
    # a block mapping, nested
    (f"  - name: standard\n    model: '{TOY}'\n    model_args:\n      mode: first\n      mode: none\n",
     "15:7", "mode", "line 14, column 7"),
])
def test_a_repeated_key_in_a_method_is_refused(tmp_path, methods, where, key, first):
    path = _spec(tmp_path, methods)
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == (f"{path}:{where}: not valid YAML (duplicate key '{key}', first at {first}); "
                              "fix the leaderboard spec")


def test_a_repeated_top_level_or_contract_key_is_refused(tmp_path):
    method = f"  - {{name: standard, model: '{TOY}'}}\n"
    path = _spec(tmp_path, method, HEAD.replace("name: toy\n", "name: toy\nname: toy2\n"))
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}:2:1: not valid YAML \(duplicate key 'name', "
                                          r"first at line 1, column 1\)"):
        load_spec(path)
    path = _spec(tmp_path, method, HEAD.replace("k: 3}", "k: 5, k: 3}"))
    with pytest.raises(ConfigError, match=r":5:\d+: not valid YAML \(duplicate key 'k', first at line 5, column \d+\)"):
        load_spec(path)


def test_merge_keys_and_aliases_still_work(tmp_path):
    """A key a ``<<:`` merge brings in may be overridden by the mapping's own (not a repeat); an alias used twice is
    read as before; a mapping that merges is merged again (its keys are checked as written, not as merged); a repeat
    inside the anchored mapping is refused."""
    methods = (f"  - {{name: standard, model: '{TOY}', model_args: &m {{mode: first, delay: 0.0}}}}\n"
               f"  - {{name: none, model: '{TOY}', model_args: &n {{<<: *m, mode: none}}}}\n"
               f"  - {{name: third, model: '{TOY}', model_args: {{<<: *n}}}}\n"
               f"  - {{name: fourth, model: '{TOY}', model_args: *m}}\n")
    spec = load_spec(_spec(tmp_path, methods))
    assert [(m.name, m.model_args) for m in spec.methods] == [
        ("standard", {"mode": "first", "delay": 0.0}), ("none", {"mode": "none", "delay": 0.0}),
        ("third", {"mode": "none", "delay": 0.0}), ("fourth", {"mode": "first", "delay": 0.0})]
    path = _spec(tmp_path, methods.replace("delay: 0.0}", "delay: 0.0, mode: none}", 1))
    with pytest.raises(ConfigError, match=r":11:\d+: not valid YAML \(duplicate key 'mode', first at line 11"):
        load_spec(path)


def test_a_baseline_folder_is_one_line(tmp_path):
    with pytest.raises(ConfigError) as exc:
        load_baseline(tmp_path)
    assert str(exc.value) == (f"baseline {tmp_path} is a folder; give the baseline's JSON file "
                              "(e.g. leaderboards/baselines/ci.json)")


@pytest.mark.parametrize("dtype", ["float64", "bogus"])
def test_a_bad_dtype_is_refused_before_the_first_cell(tmp_path, dtype):
    """The model's own rule (tokrag_model.loading.torch_dtype), named with the spec and the method; no weights load."""
    spec = load_spec(write_spec(tmp_path, methods=[
        {"name": "standard", "model": TOY, "model_args": {"mode": "first"}},
        {"name": "none", "model": "rag-none", "specific": {"pretrained": "smollm2-135m-instruct", "dtype": dtype}},
    ]))
    with pytest.raises(ConfigError) as exc:
        check_cell_args(spec, spec.cells())
    # the load's line (torch_dtype), or the schema's where tokrag_model.args checks dtype when it parses the arguments
    assert re.fullmatch(rf"leaderboard spec {re.escape(str(spec.path))}: method none: (--model rag-none: model argument )?"
                        rf"dtype='{dtype}' .*\['auto', 'bf16', 'bfloat16', 'float', 'float16', 'float32', 'fp16', 'fp32', "
                        r"'half'\].*", str(exc.value)), str(exc.value)
    for ok in ("bf16", "float32"):  # the names the load takes pass
        ok_spec = load_spec(write_spec(tmp_path / ok, methods=[
            {"name": "none", "model": "rag-none", "specific": {"pretrained": "smollm2-135m-instruct", "dtype": ok}}],
            extra={"reference": "none"}))
        check_cell_args(ok_spec, ok_spec.cells())
