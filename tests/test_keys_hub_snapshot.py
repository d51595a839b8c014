"""A hub-id model is keyed by the commit its revision resolves to (a review: ``pretrained=org/name`` was keyed by
its name only, ``["unresolved", id, revision]``, with chat template ``"unresolved"``, even when it sat in the local
Hugging Face cache; moving ``refs/main`` from snapshot aaaa to bbbb, a model updated on the hub, kept the key and a
finished cell of the old weights was served). A fake cache in huggingface_hub's layout:
``models--org--name/refs/<revision>`` -> ``snapshots/<commit>/``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from leaderboards.keys import _HashMemo, chat_template_sha256, weights_fingerprint
from retrieval.io import fingerprint

REPO = "fakeorg/tiny"
A, B, C = "a" * 40, "b" * 40, "c" * 40


@pytest.fixture()
def hub(tmp_path, monkeypatch) -> Path:
    """An offline HF cache with ``fakeorg/tiny`` snapshots A and B (other chat templates), ``refs/main`` -> A."""
    cache = tmp_path / "hf-hub"
    repo = cache / "models--fakeorg--tiny"
    for commit, template in ((A, "{{ 'A' }}"), (B, "{{ 'B' }}")):
        d = repo / "snapshots" / commit
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps({"model_type": "llama"}))
        (d / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(A)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    return repo


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_cached_hub_id_is_keyed_by_its_snapshot_commit_and_template(hub):
    args = {"pretrained": REPO}
    assert weights_fingerprint(args, _HashMemo()) == fingerprint(["hub-commit", REPO, A])
    assert chat_template_sha256(args, _HashMemo()) == _sha("{{ 'A' }}")
    (hub / "refs" / "main").write_text(B)  # the model was updated on the hub and downloaded again
    assert weights_fingerprint(args, _HashMemo()) == fingerprint(["hub-commit", REPO, B])
    assert chat_template_sha256(args, _HashMemo()) == _sha("{{ 'B' }}")


def test_revision_branch_and_commit(hub):
    (hub / "refs" / "v1").write_text(B)
    assert weights_fingerprint({"pretrained": REPO, "revision": "v1"}, _HashMemo()) == fingerprint(["hub-commit", REPO, B])
    assert chat_template_sha256({"pretrained": REPO, "revision": A}, _HashMemo()) == _sha("{{ 'A' }}")
    # a full commit hash needs no cache: it is the key, the template is not here
    assert weights_fingerprint({"pretrained": REPO, "revision": C}, _HashMemo()) == fingerprint(["hub-commit", REPO, C])
    assert chat_template_sha256({"pretrained": REPO, "revision": C}, _HashMemo()) == "unresolved"


def test_uncached_offline_hub_id_keeps_the_old_unresolved_key(hub):
    args = {"pretrained": "otherorg/absent", "revision": "main"}
    assert weights_fingerprint(args, _HashMemo()) == fingerprint(["unresolved", "otherorg/absent", "main"])
    assert chat_template_sha256(args, _HashMemo()) == "unresolved"


def test_online_asks_the_hub_once_and_falls_back_to_the_cache(hub, monkeypatch):
    import huggingface_hub

    from leaderboards.keys import hub_snapshot

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    asked = []

    def model_info(self, repo_id, revision=None, timeout=None, **kw):
        asked.append((repo_id, revision, timeout))
        return SimpleNamespace(sha=C)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", model_info)
    memo = _HashMemo()
    # the run would download the hub's main (C), not the cached A: the key follows the hub
    assert weights_fingerprint({"pretrained": REPO}, memo) == fingerprint(["hub-commit", REPO, C])
    assert chat_template_sha256({"pretrained": REPO}, memo) == "unresolved"  # C is not downloaded yet
    assert len(asked) == 1 and asked[0][0] == REPO and 0 < asked[0][2] <= 10  # one question, short timeout

    def unreachable(self, *a, **kw):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", unreachable)
    assert hub_snapshot(REPO, None).commit == A  # the hub cannot be reached: what the cache has
    assert weights_fingerprint({"pretrained": "otherorg/absent"}, _HashMemo()) == fingerprint(
        ["unresolved", "otherorg/absent", None])


def test_local_folder_and_invalid_id_unchanged(hub, tmp_path):
    from leaderboards.keys import hub_snapshot

    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text("{}")
    assert weights_fingerprint({"pretrained": str(d)}, _HashMemo()) != fingerprint(["unresolved", str(d), None])
    bad = str(tmp_path / "no" / "such" / "folder")
    assert hub_snapshot(bad, None) is None
    assert weights_fingerprint({"pretrained": bad}, _HashMemo()) == fingerprint(["unresolved", bad, None])
