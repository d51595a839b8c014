"""Two ``models:`` entries with the same weights and contract (an entry copied and renamed, its ``pretrained`` left as
it was) shared their run folders: ``run`` served the second model's cells from the first one's runs (``by_other``) and
the report printed a second model section with the first model's numbers under the other name. ``run`` and
``run --estimate`` now refuse the spec before any cell starts, naming both models, a pair of cells and the run key, as
two methods running the same configuration are refused (s58 b2). Models that share only some cells (a chat and a plain
contract over one model's weights share the cells of a ``loglikelihood_rolling`` task, which runs without the chat
template) still run. No model is loaded (ToyLM)."""

from __future__ import annotations

import pytest

from leaderboards.keys import cell_keys
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import write_spec
from tokrag_model.cli import main


def _spec(tmp_path, second_weights=None):
    b = {"name": "toy-b"}
    if second_weights is not None:
        second_weights.write_bytes(b"another toy model")
        b["shared"] = {"model_args": {"pretrained": str(second_weights)}}
    return write_spec(tmp_path, tasks=["toy_qa"], limit=2, extra={"models": [{"name": "toy-a"}, b]})


def _expected(spec):
    key = {c.cell_id: k for c, k, _ in cell_keys(spec)}["toy-a/standard/toy_qa/seed1"]
    return (f"leaderboard spec {spec.path}: models 'toy-a' and 'toy-b' run the same configuration (every cell of "
            "'toy-b' has the run key of a cell of 'toy-a': toy-a/standard/toy_qa/seed1 and toy-b/standard/toy_qa/seed1 "
            f"have {key}; the same weights, contract and method arguments), so 'toy-b''s section would be 'toy-a''s "
            "numbers under another name; give 'toy-b' its own shared.model_args.pretrained (or another contract), or "
            "drop one of the two models")


def test_run_refuses_two_models_with_one_configuration(tmp_path):
    spec = load_spec(_spec(tmp_path))
    with pytest.raises(ConfigError) as exc:
        run_spec(spec, tmp_path / "runs", progress=False)
    assert str(exc.value) == _expected(spec)
    assert not list((tmp_path / "runs").glob("*/DONE"))  # refused before any cell


def test_a_selection_of_the_second_model_is_refused_too(tmp_path):
    spec = load_spec(_spec(tmp_path))
    with pytest.raises(ConfigError) as exc:
        run_spec(spec.select(models=["toy-b"]), tmp_path / "runs", progress=False)
    assert str(exc.value) == _expected(spec)


def test_estimate_exits_2_with_the_line(tmp_path, capsys):
    path = _spec(tmp_path)
    rc = main(["leaderboard", "run", str(path), "--runs-dir", str(tmp_path / "runs"), "--estimate",
               "--fallback-s-per-question", "1"])
    assert rc == 2
    assert _expected(load_spec(path)) in capsys.readouterr().err


def test_two_models_with_other_weights_still_run(tmp_path):
    spec = load_spec(_spec(tmp_path, second_weights=tmp_path / "w2.bin"))
    summary = run_spec(spec, tmp_path / "runs", progress=False)
    assert sorted(summary.ran) == sorted(c.cell_id for c in spec.cells()) and len(summary.ran) == 4
    assert summary.by_other == []


def test_models_sharing_only_their_rolling_cells_still_run(tmp_path):
    """A chat and a plain contract over the same weights: their toy_qa cells differ, their toy_lm cells (rolling,
    run without the chat template) share a run folder, which is right: both sections show that cell's numbers."""
    path = write_spec(tmp_path, tasks=["toy_qa", "toy_lm"], limit=2,
                      extra={"models": [{"name": "chat", "shared": {"apply_chat_template": True}}, {"name": "plain"}]})
    spec = load_spec(path)
    keys = {c.cell_id: k for c, k, _ in cell_keys(spec)}
    assert keys["chat/standard/toy_lm/seed1"] == keys["plain/standard/toy_lm/seed1"]
    assert keys["chat/standard/toy_qa/seed1"] != keys["plain/standard/toy_qa/seed1"]
    from leaderboards.runner import check_distinct_models

    check_distinct_models(spec, cell_keys(spec))  # no refusal


def test_a_copy_limited_to_some_tasks_is_refused_too(tmp_path):
    """The first model, the same weights, runs toy_qa only: all its cells are the second model's."""
    path = write_spec(tmp_path, tasks=["toy_qa", "toy_qa_noise67"], limit=2,
                      extra={"models": [{"name": "toy-a", "tasks": ["toy_qa"]}, {"name": "toy-b"}]})
    spec = load_spec(path)
    with pytest.raises(ConfigError, match=r"models 'toy-b' and 'toy-a' run the same configuration \(every cell of "
                                          r"'toy-a' has the run key of a cell of 'toy-b'"):
        run_spec(spec, tmp_path / "runs", progress=False)
