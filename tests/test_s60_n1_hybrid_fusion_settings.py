"""A local hybrid's setting that its fusion ignores is refused (s60 n1, new-user trial).

The README's retrieval example is ``tokrag retrieve --corpus prebuilt:wikipedia-dpr-100w --hybrid --alpha 0.95``
(the prebuilt hybrid is always weighted). The same ``--hybrid --alpha 0.95`` over one's own corpus fused by reciprocal
rank (the local default, ``fusion: rrf``), which reads no alpha: exit 0, the 0.95 recorded in the run's ``params``
and run key, and a TREC run byte-identical to the one without ``--alpha`` under a second cache key. Likewise
``--normalization`` / ``--weight-on-dense`` with RRF and ``--rrf-k`` with weighted fusion, through the CLI and a
task's ``retriever_params`` alike. Such a setting is now one line naming it, the fusion in use and the two fixes.
"""

from __future__ import annotations

import json

import pytest

from retrieval.api import _resolve_params
from retrieval.errors import ConfigError
from tasks.utils import check_retriever_params
from tokrag_model.cli import main

RRF_ALPHA = ("alpha=0.95 (--alpha): a setting of weighted fusion, but this hybrid fuses by reciprocal rank fusion "
             "(fusion rrf, the default over a local corpus), which ignores it; set fusion weighted (--fusion weighted; "
             "task metadata retriever_params fusion: weighted) to use it, or leave it out")


def test_alpha_with_the_default_rrf_is_refused():
    with pytest.raises(ConfigError) as exc:
        _resolve_params("hybrid", {"alpha": 0.95})
    assert str(exc.value) == RRF_ALPHA


def test_every_ignored_setting_is_named():
    with pytest.raises(ConfigError) as exc:
        _resolve_params("hybrid", {"fusion": "rrf", "alpha": 1, "normalization": "true", "weight_on_dense": True})
    assert str(exc.value) == (
        "alpha=1.0 (--alpha), normalization=True (--normalization), weight_on_dense=True (--weight-on-dense): settings "
        "of weighted fusion, but this hybrid fuses by reciprocal rank fusion (fusion rrf, the default over a local "
        "corpus), which ignores them; set fusion weighted (--fusion weighted; task metadata retriever_params fusion: "
        "weighted) to use them, or leave them out")


def test_rrf_k_with_weighted_fusion_is_refused():
    with pytest.raises(ConfigError) as exc:
        _resolve_params("hybrid", {"fusion": "weighted", "alpha": 0.5, "rrf_k": 10})
    assert str(exc.value) == (
        "rrf_k=10 (--rrf-k): a setting of reciprocal rank fusion, but this hybrid fuses by weighted fusion (fusion "
        "weighted), which ignores it; set fusion rrf (--fusion rrf; task metadata retriever_params fusion: rrf) to use "
        "it, or leave it out")


@pytest.mark.parametrize("params, prebuilt, fusion", [
    ({}, False, "rrf"),
    ({"rrf_k": 30, "depth": 50}, False, "rrf"),
    ({"normalization": False, "weight_on_dense": "false", "alpha": 0.1}, False, "rrf"),  # the defaults change nothing
    ({"fusion": "weighted", "alpha": 0.5, "rrf_k": 60}, False, "weighted"),
    ({"fusion": "weighted", "alpha": 0.5, "normalization": True, "weight_on_dense": True}, False, "weighted"),
])
def test_settings_the_fusion_reads_pass(params, prebuilt, fusion):
    p, _ = _resolve_params("hybrid", params, prebuilt)
    assert p["fusion"] == fusion and p["rrf_k"] == params.get("rrf_k", 60)
    assert p["alpha"] == float(params.get("alpha", 0.1))


def test_a_setting_at_its_default_is_the_setting_left_out():
    """The other fusion's setting at its default passes: the resolved parameters (the run key's) are those without it."""
    assert _resolve_params("hybrid", {"alpha": 0.1, "normalization": False})[0] == _resolve_params("hybrid", {})[0]
    assert (_resolve_params("hybrid", {"fusion": "weighted", "alpha": 0.5, "rrf_k": 60})[0]
            == _resolve_params("hybrid", {"fusion": "weighted", "alpha": 0.5})[0])


def test_the_prebuilt_hybrid_keeps_its_alpha():
    """The prebuilt hybrid is always weighted: its required alpha is not a stray setting."""
    p, _ = _resolve_params("hybrid", {"alpha": 0.95}, True)
    assert p["alpha"] == 0.95 and "fusion" not in p


def test_a_task_line_names_the_task():
    with pytest.raises(ConfigError) as exc:
        check_retriever_params({"alpha": 0.95}, "hybrid", "passages.jsonl", task="rag_qa_hybrid")
    assert str(exc.value) == "rag_qa_hybrid: task metadata retriever_params " + RRF_ALPHA.replace(" (--alpha): ", ": ", 1).replace(
        "(--fusion weighted; task metadata ", "(task metadata ", 1)  # lm_eval has no --fusion (s60 f2)
    assert check_retriever_params({"alpha": 0.95, "fusion": "weighted"}, "hybrid", "passages.jsonl",
                                  task="rag_qa_hybrid") == {"alpha": 0.95, "fusion": "weighted"}


def test_the_cli_refuses_before_the_search(tmp_path, monkeypatch, capsys):
    (tmp_path / "passages.jsonl").write_text(
        json.dumps({"id": "p1", "title": "Paris", "text": "Paris is the capital of France."}) + "\n"
        + json.dumps({"id": "p2", "title": "Hamlet", "text": "Hamlet was written by Shakespeare."}) + "\n")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": "what is the capital of france",
                                                  "answers": ["Paris"]}) + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    capsys.readouterr()
    assert main(["retrieve", "--corpus", "passages.jsonl", "--hybrid", "--alpha", "0.95", "--topics", "q.jsonl",
                 "--hits", "2", "--output", "myruns/hybrid.trec"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(RRF_ALPHA + "\n") and err.count("\n") == 1
    assert not (tmp_path / "myruns").exists() and not (tmp_path / "cache" / "runs").exists()
