"""``--use_cache`` between a one-process run and a data-parallel (``torchrun``) run (review s46 b5, defect 1).

Under ``torchrun``/``accelerate`` a process computes on ``cpu:0`` (``cuda:<rank>`` on GPUs), one process on ``cpu``
(``cuda``/``cuda:0``); the response key hashed the resolved configuration with that device, so a cache built by one
process was never read by a 2-process run of the same command (0 of 4 answers read back) and the reverse. The key
now holds the device's type; the results still record the device itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json


def _method(backbone):
    from tokrag_model.methods import MODELS

    return MODELS["rag-none"].with_backbone(backbone)


def test_a_one_process_cpu_key_is_unchanged(backbone):
    """The key of a ``device=cpu`` run is the one it had before the fix: existing caches are still read back."""
    from leaderboards.keys import MODEL_LIBRARIES
    from tokrag_model.base import answer_code_fingerprint

    lm = _method(backbone)
    assert lm.resolved_config["device"] == "cpu"
    # s60 r3: with_backbone's pretrained is the backbone's local folder, keyed as "local" (its files' fingerprints are
    # in the key; tests/test_s60_r3_use_cache_local.py), not as its path
    old = json.dumps({"method": lm.METHOD, "weights": lm.fingerprint, "files": lm.files_fingerprint,
                      "config": {**lm.resolved_config, "pretrained": "local"}, "code": answer_code_fingerprint(),
                      "libraries": {n: lm._library_versions.get(n) for n in MODEL_LIBRARIES}},
                     sort_keys=True, default=str)
    assert lm._response_cache_model == hashlib.sha256(old.encode("utf-8")).hexdigest()


def test_a_rank_device_reads_the_one_process_cache(backbone):
    one = _method(backbone)
    ranked = _method(dataclasses.replace(backbone, device="cpu:0"))
    assert ranked.resolved_config["device"] == "cpu:0"  # recorded as run
    assert ranked.get_model_info()["tokrag_resolved_config"]["device"] == "cpu:0"
    assert ranked._response_cache_model == one._response_cache_model


def test_the_key_holds_the_device_type():
    from tokrag_model.base import _device_type

    assert [_device_type(d) for d in ("cpu", "cpu:0", "cuda", "cuda:0", "cuda:3", "mps", None)] == \
        ["cpu", "cpu", "cuda", "cuda", "cuda", "mps", None]
