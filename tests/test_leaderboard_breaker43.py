"""Defects of the leaderboard workflow found by a read-only breaker (stop 43), each refused or reported now."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

from leaderboard_helpers import write_spec

REPO = Path(__file__).resolve().parents[1]


def _real_spec(tmp_path: Path, tasks: list, **extra) -> Path:
    """A spec over the repository's own tasks (tasks/qa); load_spec reads only their YAMLs."""
    spec = {"name": "b43", "reference": "rag-standard",
            "shared": {"model_args": {"pretrained": "smollm2-135m-instruct", "k": 3}, "gen_kwargs": {"max_gen_toks": 8},
                       "limit": 4},
            "tasks": tasks, "seeds": [1234],
            "methods": [{"name": "rag-none", "model": "rag-none"}, {"name": "rag-standard", "model": "rag-standard"}],
            **extra}
    path = tmp_path / "b43.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- 1. a task entry's noise label

@pytest.mark.parametrize("entry, given, want", [
    ({"task": "nq_oracle_gold", "noise": 0.5}, "0.5", "0"),
    ({"task": "nq_oracle_bm25_noise60", "noise": 0.2}, "0.2", "0.6"),
])
def test_a_noise_label_other_than_the_tasks_is_refused(tmp_path, entry, given, want):
    """The spec's noise filled the report's noise column and the robustness plot's x-axis unchecked: 0.50 printed for
    the clean nq_oracle_gold, 0.2 for a task that replaces 60% of the passages."""
    path = _real_spec(tmp_path, ["nq_oracle_bm25", entry])
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    msg = str(exc.value)
    assert "\n" not in msg and str(path) in msg and entry["task"] in msg
    assert f"noise {given} is not the noise the task draws, {want} " in msg
    assert f"{entry['task']}.yaml" in msg


def test_a_noise_label_that_is_not_a_number_is_refused(tmp_path):
    """``noise: true`` was read as 1.0 (bool is an int)."""
    with pytest.raises(ConfigError, match=r"tasks\[1\] \(nq_oracle_gold\): noise must be a ratio in \[0, 1\], got True"):
        load_spec(_real_spec(tmp_path, ["nq_oracle_bm25", {"task": "nq_oracle_gold", "noise": True}]))


def test_the_noise_comes_from_the_task(tmp_path):
    """The tasks' own noise (YAML metadata, else the name's _noiseNN: the toy fixture's), and a spec value equal to it."""
    spec = load_spec(_real_spec(tmp_path, ["nq_oracle_bm25", {"task": "nq_oracle_bm25_noise60", "noise": 0.6},
                                           "nq_oracle_bm25_noise20", {"task": "nq_oracle_gold", "noise": 0}]))
    assert [(t.task, t.noise, t.family) for t in spec.tasks] == [
        ("nq_oracle_bm25", 0.0, "nq_oracle_bm25"), ("nq_oracle_bm25_noise60", 0.6, "nq_oracle_bm25"),
        ("nq_oracle_bm25_noise20", 0.2, "nq_oracle_bm25"), ("nq_oracle_gold", 0.0, "nq_oracle_gold")]
    toy = load_spec(write_spec(tmp_path / "toy", tasks=["toy_qa", {"task": "toy_qa_noise67", "noise": 0.67}]))
    assert [(t.task, t.noise) for t in toy.tasks] == [("toy_qa", 0.0), ("toy_qa_noise67", 0.67)]
    with pytest.raises(ConfigError, match=r"noise 0.5 is not the noise the task draws, 0.67 "):
        load_spec(write_spec(tmp_path / "toy2", tasks=["toy_qa", {"task": "toy_qa_noise67", "noise": 0.5}]))


# --------------------------------------------------------------------------- 2. references that pair nothing

@pytest.mark.parametrize("reference, match", [
    ([], r"reference: \[\] names no method; .*or leave reference: out"),
    (["standard", "standard"], r"reference: \['standard'\] given more than once in \['standard', 'standard'\]"),
])
def test_an_empty_or_repeated_reference_list_is_refused(tmp_path, reference, match):
    """``reference: []`` gave a report without paired sections; a repeated reference printed its section twice."""
    with pytest.raises(ConfigError, match=match) as exc:
        load_spec(write_spec(tmp_path, tasks=["toy_qa"], extra={"reference": reference}))
    assert "\n" not in str(exc.value) and "toy.yaml" in str(exc.value)


def test_a_model_whose_methods_hold_no_reference_is_refused(tmp_path):
    """Such a model got no paired section and no word about it."""
    models = [{"name": "a"}, {"name": "b", "methods": ["none"]}]
    with pytest.raises(ConfigError) as exc:
        load_spec(write_spec(tmp_path, tasks=["toy_qa"], extra={"models": models}))
    msg = str(exc.value)
    assert "\n" not in msg and "toy.yaml" in msg
    assert "models[1] (b).methods ['none'] hold no reference method ['standard'], so its methods would have no paired " \
           "test; add a reference to its methods" in msg
    # one of two references is enough, and a model with all the methods
    spec = load_spec(write_spec(tmp_path / "ok", tasks=["toy_qa"],
                                extra={"models": models, "reference": ["standard", "none"], "closed_book": "none"}))
    assert [m.methods for m in spec.models] == [None, ("none",)]

