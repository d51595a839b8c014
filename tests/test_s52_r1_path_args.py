"""A path object as a model's ``pretrained=`` or ``preset=`` (s52 r1, review of s52 b1's 0a3717c/bde4fdd;
/work/scratch/s52/r1/probe5.py, probe5.txt): the new text cast (:func:`tokrag_model.args.text_of`) refused a Python
caller's ``pretrained=Path('/x/model')`` as "expected text (a hub id, a local folder or an alias), got a PosixPath",
where ``str()`` had made it the folder's path. A path object is its path again; a list, a mapping or a bool is still
refused."""

from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tokrag_model.args import COMMON_ARGS, parse_args, text_of


def test_a_path_object_as_pretrained_is_its_path(tmp_path):
    got = parse_args("rag-standard", COMMON_ARGS, {"pretrained": tmp_path / "model"})
    assert got["pretrained"] == str(tmp_path / "model")


def test_a_path_object_is_its_path_for_every_text_argument(tmp_path):
    assert text_of(Path("presets/p.json")) == "presets/p.json"
    assert text_of(tmp_path / "p.json", "a preset file") == str(tmp_path / "p.json")


def test_a_list_as_pretrained_is_still_refused():
    with pytest.raises(ConfigError, match=r"pretrained=\['x'\] is invalid: expected text \(a hub id, a local folder or "
                                          r"an alias\), got a list"):
        parse_args("rag-standard", COMMON_ARGS, {"pretrained": ["x"]})
