"""``ResolvedArgs.from_preset`` (which Tok-RAG arguments a preset set, not given explicitly) is never lost silently.

It survives ``.copy()``, ``copy.copy``/``deepcopy`` and pickling; ``dict(...)``/``{**...}`` make a plain dict, and a
plain dict with a preset is refused where the record is needed (``check_shape``, ``preset_note``) instead of being
guessed from the values: ``dict(resolved)`` of ``layer=45`` given with a preset whose layer is 45 was reported as
'; it comes from preset=PATH (params.layer): ..., or give layer= explicitly'.
"""

from __future__ import annotations

import copy
import json
import pickle
import re

import pytest

from retrieval.errors import ConfigError
from tokrag_model import base
from tokrag_model.args import COMMON_ARGS, parse_args
from tokrag_model.methods.tokrag import ResolvedArgs, TokRAGLM, preset_note

OUTSIDE = r"--model tokrag: layer=45 is outside the model's 30 layers \(0..29\)"


@pytest.fixture
def preset(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "tokrag-preset/1", "method": "tokrag",
                                "model": {"pretrained": "m", "fingerprint": "abc", "n_layers": 30},
                                "params": {"layer": 45, "rate": 1.5}, "calibration": {}}))
    return str(path)


def _resolve(given):
    given = {"pretrained": "smollm2-135m-instruct", **given}
    return TokRAGLM.resolve_args(parse_args("tokrag", {**COMMON_ARGS, **TokRAGLM.EXTRA_ARGS}, given), given)


def _note(path):
    return rf"; it comes from preset={re.escape(path)} \(params.layer\): "


@pytest.mark.parametrize("keep", [ResolvedArgs.copy, copy.copy, copy.deepcopy, lambda a: pickle.loads(pickle.dumps(a))],
                         ids=["copy-method", "copy.copy", "copy.deepcopy", "pickle"])
def test_the_record_survives_copies(preset, keep):
    given = _resolve({"preset": preset, "layer": 45})  # given explicitly, with the preset's value
    kept = keep(given)
    assert type(kept) is ResolvedArgs and kept == given and kept.from_preset == {"rate"}
    with pytest.raises(ConfigError, match=rf"^{OUTSIDE}$"):  # .copy() was a plain dict: '; it comes from preset='
        TokRAGLM.check_shape(kept, 30, None)
    with pytest.raises(ConfigError, match=rf"^{OUTSIDE}{_note(preset)}"):  # set by the preset: named as its
        TokRAGLM.check_shape(keep(_resolve({"preset": preset})), 30, None)


@pytest.mark.parametrize("lose", [dict, lambda a: {**a}, lambda a: a | {}], ids=["dict", "unpack", "or"])
def test_a_plain_dict_with_a_preset_is_refused_where_the_record_is_needed(preset, lose):
    plain = lose(_resolve({"preset": preset, "layer": 45}))
    assert type(plain) is dict and plain["layer"] == 45
    # was: the value rule named the explicit layer=45 as the preset's
    with pytest.raises(TypeError, match=r"^TokRAGLM.check_shape: the config sets preset=.* but is a dict without the "
                                        r"record of which arguments the preset set"):
        TokRAGLM.check_shape(plain, 30, None)
    with pytest.raises(TypeError, match=r"^preset_note: the config sets preset="):
        preset_note("layer=45 is outside the model's 30 layers (0..29)", plain, {"params": {"layer": 45}, "path": preset})
    with pytest.raises(TypeError, match="without the record"):  # refused even where the arguments fit
        TokRAGLM.check_shape(lose(_resolve({"preset": preset, "layer": 12})), 30, 49152)


def test_a_plain_dict_without_a_preset_needs_no_record():
    plain = dict(_resolve({"layer": 45}))
    with pytest.raises(ConfigError, match=rf"^{OUTSIDE}$"):
        TokRAGLM.check_shape(plain, 30, None)
    TokRAGLM.check_shape(dict(_resolve({"layer": 12})), 30, 49152)
    assert preset_note("layer=45 is outside the model's 30 layers (0..29)", plain, None) == ""


def test_the_constructors_check_before_the_load_reads_the_record(preset, monkeypatch):
    """The constructor's pre-load check (``RAGMethodLM.check_model_shape``) gets the resolved arguments with their
    record: an explicit layer equal to the preset's is reported as given, the preset's own as the preset's."""
    monkeypatch.setattr(base.Backbone, "load", classmethod(lambda *a, **k: pytest.fail("weights loaded")))
    with pytest.raises(ConfigError, match=rf"^{OUTSIDE}$"):
        TokRAGLM(pretrained="smollm2-135m-instruct", preset=preset, layer=45)
    with pytest.raises(ConfigError, match=rf"^{OUTSIDE}{_note(preset)}"):
        TokRAGLM(pretrained="smollm2-135m-instruct", preset=preset)
