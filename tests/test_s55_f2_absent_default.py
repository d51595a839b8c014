"""``tokrag leaderboard check``'s run-key NOTE for a model argument one side does not give (s55 f2 D).

Where the method's default is None because the method sets the value at its run (``max_length``: the model's
context, capped at 8192; ``replug_temperature``: from the docs), the NOTE read ``model_args[max_length] (absent:
default null) -> 1024``: ``null`` reads like the value used. It now says what the default is, from the argument's help
(``(absent: default the model's, capped at 8192)``), and, where that side's run folder records the value the run used
(results.json ``config.tokrag_resolved_config``: the argument itself or its ``<argument>_resolved`` key), that value:
``(absent: default the model's, capped at 8192; 8192 in this run)``. Defaults that are values keep ``(absent: default
1.0)``."""

from __future__ import annotations

import json
import shutil

import pytest

from leaderboard_helpers import REPO, tiny_llama, write_spec

from leaderboards.cli import main as lb_main
from leaderboards.runner import config_differences

SMOL = {"pretrained": "smollm2-135m-instruct"}


def test_a_default_the_method_sets_at_its_run_is_not_written_null():
    a, b = {"model": "rag-standard", "model_args": SMOL}, {"model": "rag-standard", "model_args": {**SMOL, "max_length": 1024, "k": 2}}
    assert config_differences(a, b) == ["model_args[k] (absent: default all attached) -> 2",  # was default null
                                        "model_args[max_length] (absent: default the model's, capped at 8192) -> 1024"]
    # with the run's record: the value it used (the argument's own key, or its <argument>_resolved key)
    assert config_differences(b, a, (None, {"max_length": 2048, "k": None})) == [
        "model_args[k] 2 -> (absent: default all attached)",
        "model_args[max_length] 1024 -> (absent: default the model's, capped at 8192; 2048 in this run)"]
    r, r2 = {"model": "rag-replug", "model_args": SMOL}, {"model": "rag-replug", "model_args": {**SMOL, "replug_temperature": 0.5}}
    assert config_differences(r, r2, ({"replug_temperature": None, "replug_temperature_resolved": 1.0}, None)) == [
        "model_args[replug_temperature] (absent: default from the doc's scored_by; 1.0 in this run) -> 0.5"]
    # a default that is a value is unchanged
    cad = {"model": "rag-cad", "model_args": SMOL}
    assert config_differences(cad, {**cad, "model_args": {**SMOL, "alpha": 2.0}}) == [
        "model_args[alpha] (absent: default 1.0) -> 2.0"]


@pytest.mark.slow
def test_the_check_note_names_the_max_length_a_real_cell_ran_with(tmp_path, capsys):
    """Two real rag-standard cells (2 questions, 4 tokens each) on a tiny random Llama whose context is SmolLM2's
    8192 (the NOTE's subject is the run's record, not the model's answers; SmolLM2 made it 15 CPU-s): the baseline's
    run without max_length, the runs now with max_length=1024 (another run key), the baseline's mean edited so that
    the cell FAILs."""
    from leaderboards.runner import cell_keys, run_spec
    from leaderboards.spec import load_spec

    tasks = tmp_path / "tasks"
    shutil.copytree(REPO / "tests" / "fixtures" / "tokrag_model_task", tasks / "mini",
                    ignore=shutil.ignore_patterns("__pycache__"))
    model = tiny_llama(tmp_path / "tiny model", context=8192)

    def spec(folder, args):
        return load_spec(write_spec(tmp_path / folder, name="f2", include=tasks, tasks=["tokrag_model_mini"], limit=2,
                                    methods=[{"name": "rag-standard", "model": "rag-standard"}],
                                    extra={"reference": "rag-standard",
                                           "shared": {"model_args": {"pretrained": str(model), "k": 2, **args},
                                                      "limit": 2}}))

    before, after = spec("a", {}), spec("b", {"max_length": 1024})
    runs = tmp_path / "runs"
    run_spec(before, runs, progress=False)
    run_spec(after, runs, progress=False)
    [(_, was, _)], [(cell, key, _)] = cell_keys(before), cell_keys(after)
    cid = cell.cell_id
    assert was != key
    base = tmp_path / "base.json"
    capsys.readouterr()
    assert lb_main(["check", str(before.path), "--baseline", str(base), "--runs-dir", str(runs), "--write"]) == 0
    b = json.loads(base.read_text())
    metric = sorted(b["cells"][cid])[0]
    b["cells"][cid][metric] = b["cells"][cid][metric] + 1.0  # a mean the runs do not have (1 flip of 2 is allowed): a FAIL, then the NOTE
    base.write_text(json.dumps(b))
    capsys.readouterr()
    rc = lb_main(["check", str(after.path), "--baseline", str(base), "--runs-dir", str(runs)])
    out = capsys.readouterr().out
    notes = [x for x in out.splitlines() if x.startswith(f"NOTE {cid}")]
    assert rc == 1 and len(notes) == 1, (b["cells"], out)
    assert ("its config differs in model_args[max_length] (absent: default the model's, capped at 8192; 8192 in this "
            "run) -> 1024 (a setting of the spec)") in notes[0]  # was (absent: default null) -> 1024
    assert "null" not in notes[0]
    from leaderboards.runner import recorded_model_settings

    # the records the NOTE read: the model's context as run (8192, SmolLM2's and the cap), and 1024 as given
    assert (recorded_model_settings(runs / was)["max_length"], recorded_model_settings(runs / key)["max_length"]) == (8192, 1024)
    # the baseline's run folder gone: the default as the help says it, without a value
    shutil.rmtree(runs / was)
    capsys.readouterr()
    assert lb_main(["check", str(after.path), "--baseline", str(base), "--runs-dir", str(runs)]) == 1
    (note,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith(f"NOTE {cid}")]
    assert "model_args[max_length] (absent: default the model's, capped at 8192) -> 1024 (a setting of the spec)" in note
