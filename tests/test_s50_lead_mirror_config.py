"""An NQ-open mirror hub id's config comes from where its rows are read (s50 r1's concern about e2db871): online the
hub's card (``datasets.get_dataset_config_names``), offline the hub cache snapshot's card. e2db871 read only the
snapshot's card, so online the same mirror read ``nq_open`` after an ``hf download`` (which leaves a snapshot) and its
default config without one: the rows depended on the cache's state, under one run key."""

from __future__ import annotations

import datasets
import pytest

from tasks.data import _nq_open_config
from tests.hub_cache_helpers import hub_snapshot, offline  # noqa: F401 (offline: a fixture)


def _asked(monkeypatch, configs):
    asked = []

    def names(hub_id, *a, **k):
        asked.append(hub_id)
        if isinstance(configs, Exception):
            raise configs
        return configs

    monkeypatch.setattr(datasets, "get_dataset_config_names", names)
    return asked


@pytest.mark.parametrize("configs, want", [(["other", "nq_open"], "nq_open"), (["default"], None)])
def test_online_a_mirror_takes_the_hubs_card_with_no_snapshot_cached(tmp_path, monkeypatch, configs, want):
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))  # no snapshot: e2db871 gave
    # None whatever the card
    asked = _asked(monkeypatch, configs)
    assert _nq_open_config("me/nq-mirror") == want
    assert asked == ["me/nq-mirror"]


def test_online_the_hubs_card_wins_over_a_stale_snapshot(offline, monkeypatch):
    hub_snapshot(offline.parent / "hub", "me/nq-mirror", {"README.md": "---\nconfigs:\n- config_name: nq_open\n"
                                                          "  data_files: nq.jsonl\n---\n", "nq.jsonl": ""})
    assert _nq_open_config("me/nq-mirror") == "nq_open"  # offline: the snapshot's card
    monkeypatch.delenv("HF_HUB_OFFLINE")
    _asked(monkeypatch, ["default"])  # the hub's card today: load_dataset(mirror) reads its default config online
    assert _nq_open_config("me/nq-mirror") is None


def test_online_an_unreachable_hub_falls_back_to_the_snapshot(offline, monkeypatch):
    hub_snapshot(offline.parent / "hub", "me/nq-mirror", {"README.md": "---\nconfigs:\n- config_name: nq_open\n"
                                                          "  data_files: nq.jsonl\n---\n", "nq.jsonl": ""})
    monkeypatch.delenv("HF_HUB_OFFLINE")
    asked = _asked(monkeypatch, ConnectionError("no route"))
    assert _nq_open_config("me/nq-mirror") == "nq_open"
    assert asked == ["me/nq-mirror"]
