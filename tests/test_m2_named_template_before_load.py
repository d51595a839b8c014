"""``lm_eval --apply_chat_template tools`` on a model folder whose named templates are ``default`` and ``rag`` was
refused only after the weights had loaded (``RAGMethodLM.selected_chat_template``), though the names are in the
folder's files, as the no-template case already read them before the load. The start-up hook now refuses an unknown
name (and a bare flag where there is no ``"default"``) before the model is built, in the same one line
(``tokrag_model.base.check_chat_template_before_load``, reading the files as the leaderboard key does). Found by
reviewer r1 (stop 47). No weights load here."""

from __future__ import annotations

import json

import pytest

from retrieval.errors import ConfigError
from tests.test_chat_template_early_s45 import TEMPLATE, _Reached, _run, _tiny_folder, no_weights  # noqa: F401 (a fixture)
from tokrag_model.base import check_chat_template_before_load

RAG = TEMPLATE.replace("<assistant>", "<rag-assistant>")
NOT_TOOLS = "The specified chat template 'tools' is not available. Available template names are ['default', 'rag']."


def _named_folder(path, names=("default", "rag")):
    """A tiny model folder whose ``tokenizer_config.json`` names templates (transformers loads them as a dict)."""
    _tiny_folder(path, None)
    config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = [{"name": n, "template": TEMPLATE if n == "default" else RAG} for n in names]
    (path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def test_an_unknown_template_name_is_refused_before_the_weights_load(tmp_path, no_weights):
    folder = _named_folder(tmp_path / "named")
    with pytest.raises(ConfigError) as exc:  # old: _Reached (the model build; the weights loaded, then the refusal)
        _run(folder, "--apply_chat_template", "tools")
    assert str(exc.value) == (f"--model rag-standard: --apply_chat_template 'tools' with pretrained={str(folder)!r}: "
                              f"{NOT_TOOLS}")
    assert getattr(exc.value, "_tokrag_before_load", False) is True  # exit 2, one line, under lm_eval
    for flags in (("--apply_chat_template", "rag"), ("--apply_chat_template",), ()):  # names it has: go on
        with pytest.raises(_Reached):
            _run(folder, *flags)


def test_a_bare_flag_without_a_default_template_is_refused_before_the_load(tmp_path, no_weights):
    folder = _named_folder(tmp_path / "named", names=("rag", "tools"))
    with pytest.raises(ConfigError, match=r"--apply_chat_template True with pretrained=.*no default specified"):
        _run(folder, "--apply_chat_template")
    with pytest.raises(_Reached):
        _run(folder, "--apply_chat_template", "tools")


def test_the_line_is_the_one_the_loaded_model_gives(tmp_path):
    from transformers import AutoTokenizer

    from tokrag_model.base import unknown_chat_template_message
    from tokrag_model.methods.standard import RagStandardLM

    folder = str(_named_folder(tmp_path / "named"))
    lm = RagStandardLM.chat_renderer(AutoTokenizer.from_pretrained(folder), folder).__self__
    with pytest.raises(ConfigError) as loaded:
        lm.chat_template("tools")
    with pytest.raises(ConfigError) as early:
        check_chat_template_before_load("rag-standard", {"pretrained": folder}, "tools")
    assert str(early.value) == str(loaded.value) == unknown_chat_template_message("rag-standard", "tools", folder,
                                                                                  NOT_TOOLS)


def test_a_single_template_takes_any_name_as_lm_eval_does(tmp_path, caplog):
    """One template string: lm-eval ignores a name (and warns, once, after the load); nothing refused or warned here."""
    from tokrag_model.base import chat_template_before_load

    folder = str(_tiny_folder(tmp_path / "one", TEMPLATE))
    with caplog.at_level("WARNING"):
        check_chat_template_before_load("rag-standard", {"pretrained": folder}, "tools")
    assert "Chat template name provided" not in caplog.text
    assert chat_template_before_load(folder) == TEMPLATE


def test_an_alias_is_read_from_its_converted_folder_once_converted(tmp_path, monkeypatch):
    import tokrag_model.loading as loading
    from tokrag_model.base import chat_template_before_load

    converted = tmp_path / "converted"
    monkeypatch.setattr(loading, "converted_folder", lambda name, models_dir=None: converted)
    assert chat_template_before_load("smollm2-135m-instruct") is None  # not converted yet: the load tells it
    _named_folder(converted)
    assert chat_template_before_load("SmolLM2-135M-Instruct") == {"default": TEMPLATE, "rag": RAG}
    with pytest.raises(ConfigError, match=r"--apply_chat_template 'tools' with pretrained='smollm2-135m-instruct'"):
        check_chat_template_before_load("rag-cad", "pretrained=smollm2-135m-instruct", "tools")
    assert chat_template_before_load(str(tmp_path / "missing")) is None  # a missing folder: the load says it
