"""Leaderboard spec messages (breaker b4, stop 47).

A task YAML under ``include_path`` whose ``include:`` target does not exist: lm-eval's index skips it, and the run key
(:func:`leaderboards.keys.task_fingerprint`) said "unknown task 'badinc' (did you mean 'badinc'?); no YAML under [...]
defines it", although the YAML defines it; now the line names the YAML and the missing include, as the CLI's
``--include_path`` check (:func:`tasks.precheck.check_include_path_tasks`) does.

A key that is valid one level elsewhere (``shared: {k: 5}``: ``k`` is a model argument of the contract,
``shared.model_args``) got "unknown key(s) 'k'" with no hint; now the hint names the place it belongs."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError

BADINC = """include: {include}
task: badinc
metadata:
  version: 1.0
"""


def _fingerprint(task: str, folder: Path) -> str:
    from leaderboards.keys import _HashMemo, task_fingerprint

    return task_fingerprint(task, [folder], _HashMemo())


def test_a_missing_include_is_named_not_an_unknown_task(tmp_path):
    folder = tmp_path / "mytasks"
    folder.mkdir()
    missing = tmp_path / "nonexistent" / "rag_qa_bm25.yaml"
    (folder / "badinc.yaml").write_text(BADINC.format(include=missing), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        _fingerprint("badinc", folder)
    msg = str(err.value)
    assert "unknown task" not in msg  # old: unknown task 'badinc' (did you mean 'badinc'?)
    assert str(folder / "badinc.yaml") in msg and f"'include: {missing}'" in msg and "there is no such file" in msg
    assert "\n" not in msg


def test_a_relative_missing_include_is_named(tmp_path):
    folder = tmp_path / "mytasks"
    folder.mkdir()
    (folder / "badinc.yaml").write_text(BADINC.format(include="my_template"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"badinc\.yaml needs .*my_template for its 'include: my_template'"):
        _fingerprint("badinc", folder)


def test_a_task_no_yaml_declares_is_still_unknown(tmp_path):
    folder = tmp_path / "mytasks"
    folder.mkdir()
    (folder / "mine.yaml").write_text("task: mine_task\ndataset_path: json\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown task 'mine_tsak' \(did you mean 'mine_task'\?\); no YAML under"):
        _fingerprint("mine_tsak", folder)


# ----------------------------------------------------------------------------------- keys valid elsewhere
SPEC = """name: t
reference: rag-standard
tasks: [nq_oracle_bm25]
seeds: [1234]
{top}
shared:
  model_args: {{pretrained: smollm2-135m-instruct}}
{shared}
methods:
  - name: rag-standard
    model: rag-standard
{method}
"""


def _load(tmp_path, top: str = "", shared: str = "", method: str = "") -> None:
    from leaderboards.spec import load_spec

    path = tmp_path / "s.yaml"
    path.write_text(SPEC.format(top=top, shared=shared, method=method), encoding="utf-8")
    load_spec(path)


def _refusal(tmp_path, **kw) -> str:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, **kw)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_k_in_shared_is_pointed_to_the_contract_model_args(tmp_path):
    msg = _refusal(tmp_path, shared="  k: 5")
    assert "shared: unknown key(s) 'k' (a model argument: put it under shared.model_args)" in msg  # old: no hint


@pytest.mark.parametrize(("where", "line", "hint"), [
    ("shared", "  max_gen_toks: 8", "'max_gen_toks' (a generation setting: put it under shared.gen_kwargs)"),
    ("shared", "  seeds: [1]", "'seeds' (a top-level key: move it to the spec's top level)"),
    ("shared", "  iters: 200", "'iters' (a bootstrap setting: put it under bootstrap)"),
    ("shared", "  relevance_threshold: 0.3", "'relevance_threshold' (a model argument of rag-selfrag-filter: put it "
                                             "under that method's methods[].model_args)"),
    ("top", "k: 5", "top level: unknown key(s) 'k' (a model argument: put it under shared.model_args)"),
    ("top", "limit: 4", "'limit' (a contract key: put it under shared)"),
    ("top", "max_gen_toks: 8", "'max_gen_toks' (a generation setting: put it under shared.gen_kwargs)"),
    ("method", "    limit: 4", "methods[0]: unknown key(s) 'limit' (a contract key: put it under shared)"),
    ("method", "    k: 3", "methods[0]: unknown key(s) 'k' (a model argument: put it under shared.model_args, the "
                           "contract, or methods[0].specific for this method's own value)"),
    ("method", "    relevance_threshold: 0.3", "'relevance_threshold' (a model argument of rag-selfrag-filter, "
                                               "not of rag-standard: put it under the model_args of a methods "
                                               "entry with model: rag-selfrag-filter)"),
    ("top", "method_args: {}", "'method_args' (a key of a models entry: models: [{name: ..., method_args: ...}])"),
    ("method", "    max_gen_toks: 8", "'max_gen_toks' (a generation setting: put it under methods[0].gen_kwargs)"),
])
def test_a_key_valid_elsewhere_names_its_place(tmp_path, where, line, hint):
    msg = _refusal(tmp_path, **{where: line})
    assert hint in msg


def test_another_methods_own_argument_in_a_method_entry_names_that_method(tmp_path):
    """``{model: rag-standard, alpha: 0.5}``: alpha is rag-cad's argument only, so ``methods[0].model_args`` (the old
    hint) would be refused next as an argument rag-standard does not take (reviewer r1, stop 47)."""
    msg = _refusal(tmp_path, method="    alpha: 0.5")
    assert ("methods[0]: unknown key(s) 'alpha' (a model argument of rag-cad, not of rag-standard: put it under the "
            "model_args of a methods entry with model: rag-cad)") in msg  # old: put it under methods[0].model_args


def test_a_methods_own_argument_in_its_own_entry_points_to_its_model_args(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SPEC.format(top="", shared="", method="    alpha: 0.5").replace("model: rag-standard",
                                                                                     "model: rag-cad"),
                    encoding="utf-8")
    from leaderboards.spec import load_spec

    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert "methods[0]: unknown key(s) 'alpha' (a model argument: put it under methods[0].model_args)" in str(err.value)


def test_gen_kwargs_keys_of_the_contract_are_pointed_back(tmp_path):
    msg = _refusal(tmp_path, shared="  gen_kwargs: {limit: 4, k: 3}")
    assert ("shared.gen_kwargs: unknown key(s) 'k' (a model argument: put it under shared.model_args), 'limit' "
            "(a contract key: put it under shared)") in msg


def test_a_typo_still_gets_did_you_mean(tmp_path):
    msg = _refusal(tmp_path, shared="  limt: 4")
    assert "'limt' (did you mean 'limit'?)" in msg
