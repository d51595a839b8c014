"""A model folder's ``config.json`` that Python's JSON reader cannot read although it is valid JSON (an integer of
more than 4300 digits, nesting past the recursion limit) or that transformers refuses (a UTF-8 byte order mark) is
one ConfigError line naming the file, before any load (s59 f3, r4's leftover of 4186778). Before: a ValueError or
RecursionError traceback from tokrag_model.loading._config_problem, and the BOM passed the check (``json.loads`` of
bytes skips it) to fail in transformers' load; lm-eval's own ``hf`` shows a traceback for all three."""

from __future__ import annotations

import sys

import pytest

from retrieval.errors import ConfigError
from tokrag_model.loading import check_pretrained, resolve_pretrained

LIMIT = 4300


@pytest.fixture(autouse=True)
def _default_limit():  # PYTHONINTMAXSTRDIGITS may set another limit: the line names this one
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(LIMIT)
    yield
    sys.set_int_max_str_digits(before)


def _folder(tmp_path, text: str):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(text, encoding="utf-8")
    return folder


def _refusal(folder, why: str) -> str:
    return (f"pretrained={str(folder)!r}: {(folder / 'config.json').resolve()} is not a model config ({why}); fix it "
            "or point pretrained= at a complete model folder")


CASES = {
    "int": ('{"model_type": "llama", "vocab_size": 1%s}' % ("0" * 5000),
            f"it holds an integer of more than {LIMIT} digits, more than Python's JSON reader converts"),
    "deep": ('{"model_type": "llama", "x": %s}' % ("[" * 100_000 + "]" * 100_000), None),
    "bom": ('\ufeff{"model_type": "llama"}',
            "it starts with a UTF-8 byte order mark, which transformers' JSON reader refuses; save it without one"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("check", [check_pretrained, resolve_pretrained], ids=["check", "resolve"])
def test_one_line_naming_the_file(tmp_path, case, check):
    text, why = CASES[case]
    why = why or ("it holds JSON nested too deep for Python's JSON reader, past its recursion limit of "
                  f"{sys.getrecursionlimit()}")
    folder = _folder(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        check(str(folder))
    assert str(err.value) == _refusal(folder, why)


def test_transformers_refuses_the_bom(tmp_path):
    from transformers import AutoConfig

    folder = _folder(tmp_path, CASES["bom"][0])
    with pytest.raises(OSError, match="is not a valid JSON file"):
        AutoConfig.from_pretrained(str(folder))


def test_malformed_and_good_configs_as_before(tmp_path):
    folder = _folder(tmp_path, '{"model_type": "llama",}')
    with pytest.raises(ConfigError) as err:
        check_pretrained(str(folder))
    assert str(err.value) == _refusal(folder, "not JSON, line 1: Expecting property name enclosed in double quotes")
    (folder / "config.json").write_text('{"model_type": "llama", "vocab_size": %s}' % ("9" * LIMIT))
    assert check_pretrained(str(folder)) is None


def test_tolerant_reads_of_the_other_json_files(tmp_path):
    """The reads that skip an unreadable file (the weight index, tokenizer_config.json) skip one nested too deep as
    they skip malformed JSON, instead of a RecursionError traceback in the pre-run check."""
    from tokrag_model.loading import _folder_chat_template, missing_model_files

    deep = "[" * 100_000 + "]" * 100_000
    folder = _folder(tmp_path, '{"model_type": "llama"}')
    (folder / "model.safetensors.index.json").write_text('{"weight_map": %s}' % deep)
    (folder / "tokenizer_config.json").write_text('{"chat_template": %s}' % deep)
    assert missing_model_files(folder) == [
        "the weight shards its model.safetensors.index.json names (none named)",
        "tokenizer files (tokenizer.json, or a vocabulary such as tokenizer.model or vocab.json)"]
    assert _folder_chat_template(folder) is None
