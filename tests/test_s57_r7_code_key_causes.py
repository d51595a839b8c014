"""The cause named for a differing code field of a run key (s57 r7).

s57 g1 (c026632) hashes a ``.py`` file of the model's package, ``retrieval`` and the task folder by its code, so every
run finished before it has another ``model_code``, ``retrieval_code`` and ``task_fingerprint`` with no file edited;
``KEY_FIELD_CAUSES`` still said ``the model code changed`` / ``the retrieval code changed`` / ``a task YAML changed``
(the last one wrong anyway: the task key covers the task folder's code too). Now a code field's cause says ``(or is
keyed another way by this tokrag)`` wherever the two keys may hash the code differently: a ``schema`` of either side
older than 3 (the first schema hashing by code), or not known; with both keys of schema 3 or later the code did
change, and the plain words stay. ``KEY_SCHEMA`` is set in each test, so the tests do not depend on its value.
"""

from __future__ import annotations

import json
import shutil

import pytest
from leaderboard_helpers import FIX, TOY, write_spec

import leaderboards.keys as keys
import leaderboards.runner as runner

HEDGE = " (or is keyed another way by this tokrag)"


@pytest.mark.parametrize("schema, others, hedged", [
    (3, ["schema 2 -> 3"], True),  # a run keyed before the code hashing
    (3, ["schema (absent) -> 3"], True),
    (4, ["schema 3 -> 4"], False),  # both hash by code: the code changed
    (3, [], False),  # the same schema 3 on both sides
    (2, [], True),  # this tokrag's schema predates the bump: the record cannot tell
])
def test_key_field_cause_of_code_fields(monkeypatch, schema, others, hedged):
    monkeypatch.setattr(keys, "KEY_SCHEMA", schema)
    for field, words in [("model_code", "the model code changed"), ("retrieval_code", "the retrieval code changed"),
                         ("task_fingerprint", "a task's YAML or code changed")]:
        diff = f"{field} 0123abcd -> 4567ef01"
        assert runner.key_field_cause(diff, diffs=[diff, *others]) == words + (HEDGE if hedged else "")
    assert runner.key_field_cause("data_fingerprint a -> b", diffs=["schema 2 -> 3"]) == "the data folder changed"


def test_key_field_cause_without_the_other_differences_hedges(monkeypatch):
    monkeypatch.setattr(keys, "KEY_SCHEMA", 3)
    assert runner.key_field_cause("model_code a -> b") == "the model code changed" + HEDGE


def test_inputs_changed_mid_run_names_the_task_code_without_the_hedge():
    """The check before a cell's DONE compares two keys of this process: one hashing, so the plain words."""
    assert (runner.inputs_changed_line(["task_fingerprint aaaa -> bbbb"])
            == "task_fingerprint aaaa -> bbbb: a task's YAML or code changed")


@pytest.mark.parametrize("old_schema, hedged", [(2, True), (3, False)])
def test_run_estimate_line_for_a_cell_finished_under_other_code_keys(tmp_path, monkeypatch, capsys, old_schema,
                                                                     hedged):
    """Through ``tokrag leaderboard run --estimate``: a cell finished with other code fingerprints (simulated: another
    ``code_fingerprint``/``task_fingerprint`` while it ran) under schema 2 (before the code hashing) is told with the
    hedge; under schema 3, as this tokrag's, the code changed and the plain words stay."""
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec
    from tokrag_model.cli import main

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(FIX / "tasks", tmp_path / "tasks", ignore=shutil.ignore_patterns("__pycache__"))
    spec = write_spec(tmp_path / "s", include=tmp_path / "tasks", tasks=["toy_qa"], limit=3,
                      methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])
    runs = tmp_path / "runs"
    real_code, real_task = keys.code_fingerprint, keys.task_fingerprint
    with monkeypatch.context() as old:
        old.setattr(keys, "KEY_SCHEMA", old_schema)
        old.setattr(keys, "code_fingerprint", lambda module, memo: "old-" + real_code(module, memo)[:8])
        old.setattr(keys, "task_fingerprint", lambda *a, **k: "old-" + real_task(*a, **k)[:8])
        run_spec(load_spec(spec), runs, progress=False)
    (done,) = runs.glob("*/DONE")
    config = json.loads((done.parent / "config.json").read_text(encoding="utf-8"))
    assert config["schema"] == old_schema and config["model_code"].startswith("old-")
    monkeypatch.setattr(keys, "KEY_SCHEMA", 3)
    capsys.readouterr()

    assert main(["leaderboard", "run", str(spec), "--runs-dir", str(runs), "--estimate"]) == 0
    captured = capsys.readouterr()
    line = next(s for s in (captured.out + captured.err).splitlines() if "has a finished run with other inputs" in s)
    hedge = HEDGE if hedged else ""
    inner = line.split(f" in {runs} (", 1)[1].rsplit("); run computes it anew", 1)[0]
    assert inner.split("; ") == [f"model_code differs: the model code changed{hedge}",
                                 f"retrieval_code differs: the retrieval code changed{hedge}",
                                 *(["schema differs: the run key's definition changed"] if hedged else []),
                                 f"task_fingerprint differs: a task's YAML or code changed{hedge}"]
