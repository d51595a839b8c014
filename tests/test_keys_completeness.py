"""Inputs that change a leaderboard cell's numbers change its key (a review found some that did not: a
``trust_remote_code`` model's own ``*.py`` files, the dense encoder a task's ``retriever_params`` names, the
torch / transformers / retrieval-engine versions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaderboards.keys import _HashMemo, weights_fingerprint


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """A fresh hash memo per test (``<cache_dir>/leaderboard-file-hashes.json``)."""
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))


def _model(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "custom", "auto_map": {"AutoModel": "modeling_custom.M"}}')
    (folder / "model.safetensors").write_bytes(b"weights")
    return folder


@pytest.mark.parametrize("trust", [True, "true", "1"])
def test_remote_code_files_are_keyed_when_trusted(tmp_path, trust):
    d = _model(tmp_path / "m")
    py = d / "modeling_custom.py"
    keys = []
    for body in ("SCALE = 1.0\n", "SCALE = 2.0\n"):
        py.write_text(body)
        keys.append(weights_fingerprint({"pretrained": str(d), "trust_remote_code": trust}, _HashMemo()))
    assert keys[0] != keys[1]


def test_remote_code_files_are_not_keyed_when_not_run(tmp_path):
    """Without trust_remote_code the folder's code never runs: its key is that of the folder without it."""
    d = _model(tmp_path / "m")
    before = weights_fingerprint({"pretrained": str(d)}, _HashMemo())
    (d / "modeling_custom.py").write_text("SCALE = 2.0\n")
    assert weights_fingerprint({"pretrained": str(d)}, _HashMemo()) == before
    assert weights_fingerprint({"pretrained": str(d), "trust_remote_code": False}, _HashMemo()) == before
    (d / "modeling_custom.py").unlink()  # a trusted folder without code keys as it did before
    assert weights_fingerprint({"pretrained": str(d), "trust_remote_code": True}, _HashMemo()) == before


def _dense_task(tmp_path: Path, params: str, retriever: str = "dense") -> Path:
    """A copy of the toy task whose metadata retrieves with ``retriever`` and ``retriever_params`` ``params``."""
    import shutil

    from leaderboard_helpers import FIX

    tasks = tmp_path / "mytasks"
    shutil.copytree(FIX / "tasks" / "toy_qa", tasks / "toy_qa")
    yml = tasks / "toy_qa" / "toy_qa.yaml"
    yml.write_text(yml.read_text().replace(
        "metadata: {version: 1.0}", f"metadata: {{version: 1.0, retriever: {retriever}, retriever_params: {params}}}"))
    return tasks


def _encoder(folder: Path, weights: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "model.safetensors").write_bytes(weights)
    return folder


def _materials(spec_path: Path) -> list[tuple[str, dict]]:
    from leaderboards.keys import cell_keys
    from leaderboards.spec import load_spec

    return [(key, mat) for _cell, key, mat in cell_keys(load_spec(spec_path))]


@pytest.mark.parametrize("retriever", ["dense", "hybrid"])
def test_the_dense_encoder_a_task_names_is_keyed_by_its_weights(tmp_path, retriever):
    from leaderboard_helpers import write_spec

    enc = _encoder(tmp_path / "enc", b"v1 weights")
    tasks = _dense_task(tmp_path, f"{{encoder: {enc}}}", retriever)
    spec = write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3)
    before = _materials(spec)
    assert len(before) == 2 and all(list(m["dense_encoders"]) == [str(enc)] for _k, m in before)
    (enc / "model.safetensors").write_bytes(b"v2 weights")  # re-saved encoder: another retrieval
    after = _materials(spec)
    assert {k for k, _ in before}.isdisjoint(k for k, _ in after)


def test_a_separate_query_encoder_is_keyed_too(tmp_path):
    from leaderboard_helpers import write_spec

    enc, qenc = _encoder(tmp_path / "enc", b"passages"), _encoder(tmp_path / "qenc", b"q1")
    tasks = _dense_task(tmp_path, f"{{encoder: {enc}, query_encoder: {qenc}}}")
    spec = write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3)
    before = _materials(spec)
    assert sorted(before[0][1]["dense_encoders"]) == sorted([str(enc), str(qenc)])
    (qenc / "model.safetensors").write_bytes(b"q2")
    assert {k for k, _ in before}.isdisjoint(k for k, _ in _materials(spec))


def test_bm25_and_prebuilt_tasks_carry_no_encoder(tmp_path):
    from leaderboard_helpers import write_spec

    from leaderboards.keys import _HashMemo, dense_encoders

    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3)
    assert all("dense_encoders" not in m for _k, m in _materials(spec))
    assert dense_encoders("nq_open_dpr_wiki", [Path("tasks")], _HashMemo()) is None  # Pyserini's prebuilt index


def test_a_hub_encoder_is_keyed_by_its_cached_commit(tmp_path, monkeypatch):
    from leaderboards.keys import encoder_fingerprint
    from retrieval.io import fingerprint

    cache = tmp_path / "hub"
    repo = cache / "models--org--enc"
    for c in ("a" * 40, "b" * 40):
        _encoder(repo / "snapshots" / c, c.encode())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert encoder_fingerprint("org/enc", _HashMemo()) == fingerprint(["hub-commit", "org/enc", "a" * 40])
    (repo / "refs" / "main").write_text("b" * 40)
    assert encoder_fingerprint("org/enc", _HashMemo()) == fingerprint(["hub-commit", "org/enc", "b" * 40])
    assert encoder_fingerprint("org/absent", _HashMemo()) == fingerprint(["unresolved", "org/absent"])


@pytest.mark.parametrize("library", ["torch", "transformers", "pyserini"])
def test_library_versions_are_keyed(tmp_path, monkeypatch, library):
    import importlib.metadata as md

    from leaderboard_helpers import write_spec

    spec = write_spec(tmp_path / "spec", tasks=["toy_qa"], limit=3)
    before = _materials(spec)
    assert before[0][1]["library_versions"]["torch"] == md.version("torch")
    assert before[0][1]["library_versions"]["transformers"] == md.version("transformers")
    real = md.version
    monkeypatch.setattr(md, "version", lambda name: "99.0.0" if name == library else real(name))
    after = _materials(spec)
    assert after[0][1]["library_versions"][library] == "99.0.0"
    assert {k for k, _ in before}.isdisjoint(k for k, _ in after)
