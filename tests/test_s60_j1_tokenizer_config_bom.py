"""A local model folder's ``tokenizer_config.json`` that transformers' tokenizer load cannot read (a UTF-8 byte order
mark above all: an editor's "UTF-8 with BOM", PowerShell's Set-Content) is one ConfigError line naming the file and
what to do, before the load (s60 j1; s59 r6's leftover 4). Before: check_pretrained passed it and the load failed
inside transformers, ``lm_eval --model tokrag --model_args "pretrained=./bom dir" ...``: ``pretrained='./bom dir':
cannot load a causal LM from .../bom dir: Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)``,
naming no file. The same rule as ``config.json``'s (``tokrag_model.loading._config_problem``)."""

from __future__ import annotations

import sys

import pytest

import tokrag_model.base as base
from retrieval.errors import ConfigError
from tokrag_model.loading import check_pretrained
from tokrag_model.methods.tokrag import TokRAGLM

BOM = "it starts with a UTF-8 byte order mark, which transformers' JSON reader refuses; save it without one"


@pytest.fixture(autouse=True)
def _default_limit():  # PYTHONINTMAXSTRDIGITS may set another limit: the line names this one
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    yield
    sys.set_int_max_str_digits(before)


def _folder(tmp_path, tokenizer_config: bytes):
    folder = tmp_path / "my model"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    (folder / "tokenizer_config.json").write_bytes(tokenizer_config)
    return folder


def _refusal(folder, why: str) -> str:
    return (f"pretrained={str(folder)!r}: {(folder / 'tokenizer_config.json').resolve()} is not a tokenizer config the "
            f"load can read ({why}); fix it or point pretrained= at a complete model folder")


def test_the_model_refuses_a_bom_before_the_tokenizer_loads(tmp_path, monkeypatch):
    """The real entry point: lm-eval builds the model from its ``--model_args``."""
    loads = []

    def no_load(*args, **kwargs):  # the load the check must come before
        loads.append(args)
        raise AssertionError("the tokenizer load was reached")

    monkeypatch.setattr(base, "_auto_tokenizer", no_load)
    folder = _folder(tmp_path, b'\xef\xbb\xbf{"tokenizer_class": "PreTrainedTokenizerFast"}')
    with pytest.raises(ConfigError) as err:
        TokRAGLM.create_from_arg_string(f"pretrained={folder}", {"batch_size": "1", "device": "cpu"})
    assert str(err.value) == _refusal(folder, BOM)
    assert loads == []


@pytest.mark.parametrize("data, why", [
    (b'["PreTrainedTokenizerFast"]', "a JSON list, not an object"),
    (b'{"tokenizer_class": "x",}', "not JSON, line 1: Expecting property name enclosed in double quotes"),
    (b'{"tokenizer_class": "\xe9"}', "not UTF-8 text"),
    (b'{"model_max_length": 1' + b"0" * 5000 + b"}",
     "it holds an integer of more than 4300 digits, more than Python's JSON reader converts"),
], ids=["list", "malformed", "latin1", "int"])
def test_what_transformers_refuses_is_refused_in_one_line(tmp_path, data, why):
    folder = _folder(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        check_pretrained(str(folder))
    assert str(err.value) == _refusal(folder, why)


def test_good_and_absent_tokenizer_configs_pass(tmp_path):
    folder = _folder(tmp_path, b'\r\n  {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 2048}\r\n')
    assert check_pretrained(str(folder)) is None
    (folder / "tokenizer_config.json").unlink()  # a vocabulary-only folder: nothing to read here
    assert check_pretrained(str(folder)) is None
