"""A true/false retriever parameter given as text (``--metadata '{"retriever_params": {"l2_norm": "false"}}'``)
was passed on as given and read as ``bool("false")``, i.e. True: the dense run encoded with L2 normalisation (the
index folder and run key of ``l2_norm`` True, ``scored_by`` ``dense``) and a hybrid ``normalization="false"``
normalised. :func:`retrieval.api._resolve_params` now reads every parameter whose default is a bool by
:func:`retrieval.api.read_bool` (the reader of the tasks' flags too) and refuses anything else in one line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from retrieval import dense
from retrieval.api import _resolve_params, _run_config, score_label
from retrieval.errors import ConfigError
from retrieval.io import fingerprint


def _run_key(retriever, p):
    config = _run_config(retriever, p, {"name": "c", "fingerprint": "f", "size": 1}, 5, {"q1": "who"}, {}, None)
    return fingerprint(config, 20)


def _index_folder(p, monkeypatch):
    monkeypatch.setattr(dense, "resolve_encoder", lambda name: name)
    monkeypatch.setattr(dense, "weights_hash", lambda folder: f"hash-of-{folder}")
    return dense.dense_index_dir(SimpleNamespace(fingerprint="corpus"), p, "/nonexistent-cache").name


@pytest.mark.parametrize("text, value", [("false", False), ("False", False), ("FALSE", False), ("true", True), ("True", True)])
def test_l2_norm_text_resolves_as_the_bool(text, value, monkeypatch):
    p_text, _ = _resolve_params("dense", {"l2_norm": text})
    p_bool, _ = _resolve_params("dense", {"l2_norm": value})
    p_other, _ = _resolve_params("dense", {"l2_norm": not value})
    assert p_text == p_bool and p_text["l2_norm"] is value
    assert _run_key("dense", p_text) == _run_key("dense", p_bool) != _run_key("dense", p_other)
    assert _index_folder(p_text, monkeypatch) == _index_folder(p_bool, monkeypatch) != _index_folder(p_other, monkeypatch)


def test_l2_norm_false_text_is_scored_as_inner_products():
    assert score_label("dense", {"l2_norm": "false"}) == score_label("dense", {"l2_norm": False}) == "dense-ip"
    assert score_label("dense", {"l2_norm": "true"}) == "dense"


@pytest.mark.parametrize("name", ["normalization", "weight_on_dense"])
@pytest.mark.parametrize("prebuilt", [False, True])
def test_hybrid_flags_text_resolve_as_the_bool(name, prebuilt):
    base = {"fusion": "weighted", "alpha": 0.5} if not prebuilt else {"alpha": 0.5}
    p_text, _ = _resolve_params("hybrid", {**base, name: "false"}, prebuilt)
    p_bool, _ = _resolve_params("hybrid", {**base, name: False}, prebuilt)
    p_true, _ = _resolve_params("hybrid", {**base, name: "TRUE"}, prebuilt)
    assert p_text == p_bool and p_text[name] is False and p_true[name] is True
    assert _run_key("hybrid", p_text) == _run_key("hybrid", p_bool) != _run_key("hybrid", p_true)


@pytest.mark.parametrize("retriever, name, extra", [("dense", "l2_norm", {}),
                                                    ("hybrid", "normalization", {"fusion": "weighted", "alpha": 0.5}),
                                                    ("hybrid", "weight_on_dense", {"fusion": "weighted", "alpha": 0.5}),
                                                    ("hybrid", "l2_norm", {})])
@pytest.mark.parametrize("value", ["flase", "no", "", 0.5, 2, None, [True]])
def test_other_values_are_refused_in_one_line(retriever, name, extra, value):
    with pytest.raises(ConfigError) as e:
        _resolve_params(retriever, {**extra, name: value})
    assert str(e.value) == f"retriever_params {name}={value!r}: expected true or false"


def test_tasks_flags_keep_their_message():
    from tasks.utils import _as_bool

    assert _as_bool("False", "gold_only") is False and _as_bool(1, "gold_only") is True
    with pytest.raises(ConfigError, match=r"^task metadata gold_only='no': expected true or false$"):
        _as_bool("no", "gold_only")


@pytest.mark.parametrize("given, want", [("false", False), ("True", True), (0, False), (True, True)])
def test_runtime_progress_is_read_as_the_bool(given, want):
    """``progress`` is a runtime option the searchers read with ``bool()``: "false" showed the progress bar and any
    other word ("maybe") was taken (fixer fi, stop 47)."""
    _, runtime = _resolve_params("bm25", {"progress": given})
    assert runtime["progress"] is want


def test_runtime_progress_other_values_are_refused():
    with pytest.raises(ConfigError, match=r"^retriever_params progress='maybe': expected true or false$"):
        _resolve_params("bm25", {"progress": "maybe"})
