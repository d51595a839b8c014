"""``report`` / ``rescore`` of a spec with no finished cell do not offer ``--allow-missing`` (s60 n1, new-user trial).

After an edit of a bring-your-own questions file, ``tokrag leaderboard report research.yaml`` listed its 4 cells as
not finished (each "a finished run of this cell with other inputs exists") and ended "or report the finished ones:
tokrag leaderboard report ... --allow-missing". There were none: the command wrote a report of "-" only
("Cells with results: 0 of 4"). The line is now left out when no cell is finished and no other directory or data folder
would find one (where the refusal names one, ``cd DIR && ...``, the line stays: test_s51_f1_leaderboard_advice).
With some cells finished it is as before.
"""

from __future__ import annotations

import pytest
from leaderboard_helpers import run_toy_spec, runs_without, write_spec

from leaderboards.report import collect
from leaderboards.rescore import collect_for_rescore
from leaderboards.runner import IncompleteRunError
from leaderboards.spec import load_spec


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy spec (2 ToyLM methods x toy_qa + its noise twin, 4 cells, limit 12) run once."""
    return run_toy_spec(tmp_path_factory.mktemp("nfa"))


def _lines(fn, spec, runs) -> list[str]:
    with pytest.raises(IncompleteRunError) as exc:
        fn(spec, runs)
    return str(exc.value).splitlines()


@pytest.mark.parametrize("fn, verb", [(collect, "report"), (collect_for_rescore, "rescore")])
def test_other_inputs_only_ends_with_the_run_command(toy, tmp_path, fn, verb):
    spec, runs = toy
    other = load_spec(write_spec(tmp_path / "s", limit=11))  # every cell keyed anew; its limit-12 runs are "other inputs"
    lines = _lines(fn, other, runs)
    assert lines[0].startswith(f"4 of 4 cells ") and len(lines) == 6
    assert all("finished run of this cell with other inputs exists" in line for line in lines[1:5])
    assert lines[-1] == f"run: tokrag leaderboard run {other.path} --runs-dir {runs}"
    assert "--allow-missing" not in "\n".join(lines)


@pytest.mark.parametrize("fn", [collect, collect_for_rescore])
def test_an_empty_runs_folder_ends_with_the_run_command(toy, tmp_path, fn):
    spec, _ = toy
    empty = tmp_path / "empty"
    empty.mkdir()
    lines = _lines(fn, spec, empty)
    assert lines[-1] == f"run: tokrag leaderboard run {spec.path} --runs-dir {empty}" and len(lines) == 6


@pytest.mark.parametrize("fn, what, verb", [(collect, "report", "report"), (collect_for_rescore, "re-score", "rescore")])
def test_with_a_finished_cell_the_allow_missing_line_stays(toy, tmp_path, fn, what, verb):
    spec, runs = toy
    part = runs_without(runs, tmp_path / "part", "none/toy_qa/seed1")
    lines = _lines(fn, spec, part)
    assert lines[0].startswith("1 of 4 cells ")
    assert lines[-1] == (f"or {what} the finished ones: tokrag leaderboard {verb} {spec.path} --runs-dir {part} "
                         "--allow-missing")
    # and what it offers is real: 3 of the 4 cells load (rescore's collect returns (loaded, notes))
    got = fn(spec, part, allow_missing=True)
    loaded = got[0] if isinstance(got, tuple) else got
    assert sum(data is not None for _c, _k, data in loaded.values()) == 3
