"""s61 e1: a leaderboard cell's ``device`` in its ``model_args`` wins over the spec's ``device:`` for every model class
alike (leaderboards.runner.make_model merges them as tokrag_model.args.merge_lm_eval_flags does). The tokrag methods
merged so already; ToyLM and lm-eval's ``hf`` got the key twice from lm-eval's ``LM.create_from_arg_obj`` and the
cell failed with ``TypeError: ... got multiple values for keyword argument 'device'``.

Since s61 d1 ``device`` and ``batch_size`` are contract keys: the spec's load refuses them in a method's ``model_args``,
and a method's own value is written under its ``specific`` (a printed deviation), which the cell's ``model_args`` merge
(:meth:`leaderboards.spec.LeaderboardSpec.cell_model_args`); these tests give it there, with the same assertions."""

from __future__ import annotations

import pytest

from leaderboard_helpers import TOY, run_toy_spec, write_spec


def test_toy_cell_with_a_model_args_device_runs(tmp_path):
    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first"}, "specific": {"device": "cpu"}}]
    spec, runs = run_toy_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods)
    assert len(list(runs.glob("*/DONE"))) == 1


def _recorder(base):
    """A subclass of ``base`` whose constructor only records its keyword arguments (no weights are loaded); its
    ``create_from_arg_obj`` is ``base``'s."""
    class Recorder(base):
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    return Recorder


def _lm_eval_hf():
    from lm_eval.api.registry import get_model

    return get_model("hf")


def _rag_standard():
    from tokrag_model.methods.standard import RagStandardLM

    return RagStandardLM


def _toy():
    from tests.leaderboard_fixtures.toy_lm import ToyLM

    return ToyLM


@pytest.mark.parametrize("base", [_toy, _lm_eval_hf, _rag_standard], ids=["ToyLM", "hf", "rag-standard"])
def test_the_model_args_device_wins_for_every_model_class(tmp_path, monkeypatch, base):
    import leaderboards.runner as runner
    from leaderboards.spec import load_spec

    cls = _recorder(base())
    methods = [{"name": "standard", "model": "hf", "specific": {"device": "cpu"}}]
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods,
                                extra={"shared": {"model_args": {"pretrained": "some/model"}, "device": "cuda", "limit": 3,
                                                  "batch_size": 2}}))
    monkeypatch.setattr(runner, "_model_class", lambda model: cls)
    (cell,) = spec.cells()
    lm = runner.make_model(cell)
    assert lm.kwargs == {"pretrained": "some/model", "device": "cpu", "batch_size": 2}


@pytest.mark.parametrize("base", [_toy, _lm_eval_hf, _rag_standard], ids=["ToyLM", "hf", "rag-standard"])
def test_the_spec_device_is_given_where_model_args_have_none(tmp_path, monkeypatch, base):
    import leaderboards.runner as runner
    from leaderboards.spec import load_spec

    cls = _recorder(base())
    methods = [{"name": "standard", "model": "hf", "specific": {"device": None}}]  # None: not given, as lm-eval reads it
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods,
                                extra={"shared": {"model_args": {"pretrained": "some/model"}, "device": "cuda:0", "limit": 3}}))
    monkeypatch.setattr(runner, "_model_class", lambda model: cls)
    (cell,) = spec.cells()
    assert runner.make_model(cell).kwargs == {"pretrained": "some/model", "device": "cuda:0", "batch_size": 1}


@pytest.mark.parametrize("base", [_toy, _lm_eval_hf, _rag_standard], ids=["ToyLM", "hf", "rag-standard"])
def test_a_model_args_batch_size_wins_too(tmp_path, monkeypatch, base):
    import leaderboards.runner as runner
    from leaderboards.spec import load_spec

    cls = _recorder(base())
    methods = [{"name": "standard", "model": "hf", "specific": {"batch_size": 3}}]
    spec = load_spec(write_spec(tmp_path, tasks=["toy_qa"], limit=3, methods=methods,
                                extra={"shared": {"model_args": {"pretrained": "some/model"}, "limit": 3,
                                                  "batch_size": 2}}))
    monkeypatch.setattr(runner, "_model_class", lambda model: cls)
    (cell,) = spec.cells()
    assert runner.make_model(cell).kwargs == {"pretrained": "some/model", "device": "cpu", "batch_size": 3}
