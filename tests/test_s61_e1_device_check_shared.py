"""s61 e1: one availability check for CUDA/MPS (tokrag_model.loading.backend_unavailable), shared by the model's
load (resolve_device), lm_eval's typed --device cuda:0 check (check_explicit_cuda0) and the leaderboard runner's
device check (device_unavailable). Each caller keeps its own line; the clause comes from the one function."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError

CLAUSE = "torch.cuda.is_available() is False on this machine (CPU build of torch?)"


def _cuda(monkeypatch, there: bool, count: int = 1):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: there)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count if there else 0)


def _mps(monkeypatch, there: bool):
    import torch

    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: there)


def test_the_shared_function_says_which_backend_is_missing(monkeypatch):
    from tokrag_model.loading import CUDA_UNAVAILABLE, backend_unavailable

    _cuda(monkeypatch, False)
    _mps(monkeypatch, False)
    assert CUDA_UNAVAILABLE == CLAUSE
    assert backend_unavailable("cuda") == CLAUSE
    assert backend_unavailable("mps") == "torch.backends.mps.is_available() is False on this machine"
    assert backend_unavailable("cpu") is None
    _cuda(monkeypatch, True)
    _mps(monkeypatch, True)
    assert backend_unavailable("cuda") is None and backend_unavailable("mps") is None


def test_the_three_callers_keep_their_lines_without_cuda(monkeypatch):
    from leaderboards.runner import device_unavailable
    from tokrag_model._lmeval_hook import check_explicit_cuda0
    from tokrag_model.loading import resolve_device

    _cuda(monkeypatch, False)
    with pytest.raises(ConfigError) as exc:
        resolve_device("cuda:1")
    assert str(exc.value) == f"--device cuda:1 (or device=cuda:1 in --model_args): {CLAUSE}; use --device cpu"
    assert resolve_device(" cuda:0") == "cpu"  # lm-eval's default falls back, as before
    with pytest.raises(ConfigError) as exc:
        check_explicit_cuda0("cuda:0")
    assert str(exc.value) == (f"--device cuda:0 (or device=cuda:0 in --model_args): {CLAUSE}; use --device cpu, or "
                              "leave --device out to run on CPU")
    assert device_unavailable("cuda:0") == CLAUSE
    _mps(monkeypatch, False)
    assert device_unavailable("mps") == "torch.backends.mps.is_available() is False on this machine"
    with pytest.raises(ConfigError) as exc:
        resolve_device("mps")
    assert str(exc.value) == ("--device mps (or device=mps in --model_args): torch.backends.mps.is_available() is "
                              "False on this machine; use --device cpu")


def test_the_three_callers_ask_the_one_function(monkeypatch):
    """A changed availability rule (here: a stand-in clause) reaches all three callers: none has its own copy."""
    import tokrag_model.loading as loading
    from leaderboards.runner import device_unavailable
    from tokrag_model._lmeval_hook import check_explicit_cuda0

    _cuda(monkeypatch, True, count=2)  # torch itself says CUDA is there: only the shared function says otherwise
    _mps(monkeypatch, True)
    monkeypatch.setattr(loading, "backend_unavailable", lambda kind: f"no {kind} (stand-in)")
    with pytest.raises(ConfigError, match=r"^--device cuda:1 \(or device=cuda:1 in --model_args\): no cuda \(stand-in\); "):
        loading.resolve_device("cuda:1")
    with pytest.raises(ConfigError, match=r"^--device mps .*: no mps \(stand-in\); use --device cpu$"):
        loading.resolve_device("mps")
    with pytest.raises(ConfigError, match=r"^--device cuda:0 .*: no cuda \(stand-in\); use --device cpu, or leave"):
        check_explicit_cuda0("cuda:0")
    assert device_unavailable("cuda:0") == "no cuda (stand-in)"
    assert device_unavailable("mps") == "no mps (stand-in)"


def test_the_device_count_is_still_checked_with_cuda(monkeypatch):
    from leaderboards.runner import device_unavailable

    _cuda(monkeypatch, True, count=1)
    assert device_unavailable("cuda:0") is None and device_unavailable("cuda") is None
    assert device_unavailable("cuda:1") == "this machine has 1 CUDA device (cuda:0), no cuda:1"
