"""``--apply_chat_template`` with a tokrag method whose tokenizer has no chat template (a base model such as the
``gemma-3-270m`` alias) was refused only when lm-eval first called the model's ``apply_chat_template``, after the weights
had loaded (about a minute). lm-eval tells the model nothing of the flag before that call, so the start-up hook, which
sees the run's arguments, now refuses it with the same one line before the model is built, where the model's files tell
it (``tokrag_model.base.check_chat_template_before_load``). Found by breaker b4 (stop 45). No weights load here."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load
from tokrag_model.base import check_chat_template_before_load, no_chat_template_message

TEMPLATE = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"


def _tiny_folder(path, template: str | None):
    """A tiny model folder: a Llama config and a word-level tokenizer, with or without a chat template, no weights."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<unk>", "<s>", "</s>", "who", "wrote", "hamlet", "?", "shakespeare"])}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    if template:
        tok.chat_template = template
    tok.save_pretrained(path)
    LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=2, max_position_embeddings=64).save_pretrained(path)
    return path


class _Reached(Exception):
    pass


@pytest.fixture
def no_weights(monkeypatch):
    """lm-eval's model build (``simple_evaluate``) raises ``_Reached``; a weights load raises AssertionError."""
    def reached(*args, **kwargs):
        raise _Reached()

    stop_at_model_load(monkeypatch, reached)
    from tokrag_model.base import Backbone

    def load(*args, **kwargs):
        raise AssertionError("the weights were loaded")

    monkeypatch.setattr(Backbone, "load", load)


def _run(folder, *flags):
    from tokrag_model.eval_cli import main

    main(["--model", "rag-standard", "--model_args", f"pretrained={folder}", "--device", "cpu", "--limit", "1",
          "--tasks", "nq_oracle_bm25", *flags])


def test_a_base_model_is_refused_before_the_weights_load(tmp_path, no_weights):
    base = _tiny_folder(tmp_path / "base", None)
    with pytest.raises(ConfigError) as exc:
        _run(base, "--apply_chat_template")
    assert str(exc.value) == no_chat_template_message("rag-standard", str(base))
    assert str(exc.value).startswith(f"--model rag-standard: --apply_chat_template was given but the tokenizer of "
                                     f"pretrained={str(base)!r} has no chat template (a base model?); run without")
    assert getattr(exc.value, "_tokrag_before_load", False) is True  # exit 2, one line, under lm_eval
    with pytest.raises(_Reached):  # without the flag the run goes on to the model build
        _run(base)


def test_a_model_with_a_chat_template_goes_on_to_the_model_build(tmp_path, no_weights):
    with pytest.raises(_Reached):
        _run(_tiny_folder(tmp_path / "chat", TEMPLATE), "--apply_chat_template")


def test_the_message_is_the_one_the_loaded_model_gives(tmp_path):
    """Where the files cannot tell it (an alias not converted yet), the loaded model refuses it with the same line."""
    from transformers import AutoTokenizer

    from tokrag_model.methods.standard import RagStandardLM

    base = str(_tiny_folder(tmp_path / "base", None))
    render = RagStandardLM.chat_renderer(AutoTokenizer.from_pretrained(base), base)
    with pytest.raises(ConfigError) as exc:
        render([{"role": "user", "content": "who wrote hamlet ?"}])
    assert str(exc.value) == no_chat_template_message("rag-standard", base)


def test_the_check_reads_the_flag_the_method_and_the_model_args(tmp_path):
    base = str(_tiny_folder(tmp_path / "base", None))
    for off in (None, False, ""):
        check_chat_template_before_load("rag-standard", {"pretrained": base}, off)
    check_chat_template_before_load("hf", {"pretrained": base}, True)  # not a tokrag method: left to lm-eval
    check_chat_template_before_load("rag-standard", {"pretrained": str(tmp_path / "missing")}, True)  # the load says it
    for args in ({"pretrained": base}, f"pretrained={base},k=2"):
        with pytest.raises(ConfigError, match="has no chat template"):
            check_chat_template_before_load("rag-replug", args, "default")  # a template name is on too
    check_chat_template_before_load("rag-standard", {"pretrained": str(_tiny_folder(tmp_path / "c", TEMPLATE))}, True)
