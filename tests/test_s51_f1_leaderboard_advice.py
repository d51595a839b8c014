"""Two messages whose advice or count did not hold (s50 u1 L5, s50 b2 N1; fast: toy model, no real weights).

1. A spec whose task names its data by a relative path (``questions: data/q.jsonl``), checked or reported from
   another directory: the cells are rightly said to be missing the file, but the commands suggested after them
   (``run: tokrag leaderboard run SPEC --runs-dir RUNS``, ``report ... --allow-missing``, check's ``run the cell
   with ...``) failed the same way from there. Now they start with ``cd DIR &&``, DIR the directory the data are
   found from (where the finished run read them, else the spec's folder), and work pasted anywhere; the per-cell fix
   names DIR instead of "the directory that holds 'data/q.jsonl'".
2. The journal's checksum WARNING said ``(3 chunk(s), 6 request(s); 1 of them unverified)``: "them" read as the
   requests, the 1 counted lines. It now says on how many of the dropped lines the checksum is wrong or missing.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import FIX, write_spec

from leaderboards.check import check_against_baseline, write_baseline
from leaderboards.cli import main as lb_main
from leaderboards.report import build_report, collect
from leaderboards.rescore import collect_for_rescore
from leaderboards.runner import IncompleteRunError, _entry_checksum, _unverified_message, run_spec
from leaderboards.spec import load_spec
from retrieval.errors import ConfigError


def _byo_toy(tmp_path: Path, data_dir: Path):
    """The toy task with ``questions: data/q.jsonl`` (relative), ``data_dir/data/q.jsonl`` holding it; the spec in
    ``tmp_path/spec``."""
    tasks = tmp_path / "mytasks"
    shutil.copytree(FIX / "tasks" / "toy_qa", tasks / "toy_qa")
    yml = tasks / "toy_qa" / "toy_qa.yaml"
    yml.write_text(yml.read_text().replace("metadata: {version: 1.0}",
                                           "metadata: {version: 1.0, questions: data/q.jsonl}"))
    (data_dir / "data").mkdir(parents=True, exist_ok=True)
    (data_dir / "data" / "q.jsonl").write_text(
        '{"id": "q1", "question": "capital of australia", "answers": ["Canberra"]}\n')
    return load_spec(write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3))


def _follow(command: str, monkeypatch) -> int:
    """Do what a pasted ``[cd DIR && ]tokrag leaderboard ...`` line does, in this process: cd, then the CLI."""
    if command.startswith("cd "):
        cd, command = command.split(" && ", 1)
        monkeypatch.chdir(shlex.split(cd)[1])
    words = shlex.split(command)
    assert words[:2] == ["tokrag", "leaderboard"]
    return lb_main(words[2:])


def test_report_check_and_rescore_suggest_commands_that_work_from_the_wrong_directory(tmp_path, monkeypatch):
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    elsewhere.mkdir()
    spec = _byo_toy(tmp_path, work)
    runs, base = tmp_path / "runs", tmp_path / "base.json"
    monkeypatch.chdir(work)
    run_spec(spec, runs, progress=False)
    write_baseline(spec, runs, base)

    monkeypatch.chdir(elsewhere)  # data/q.jsonl does not resolve from here: every cell is missing it
    cd = f"cd {work} && "
    with pytest.raises(IncompleteRunError) as exc:
        collect(spec, runs)
    lines = str(exc.value).splitlines()
    assert lines[-2] == f"run: {cd}tokrag leaderboard run {spec.path} --runs-dir {runs}"
    assert lines[-1] == (f"or report the finished ones: {cd}tokrag leaderboard report {spec.path} --runs-dir {runs} "
                         "--allow-missing")
    assert (f"from {work} this path names the file that run read, unchanged: run this command from {work} (or give an "
            "absolute path") in lines[1]  # and nothing needs re-running (s52 f6, u1 P16)
    with pytest.raises(IncompleteRunError) as exc:
        collect_for_rescore(spec, runs)
    assert str(exc.value).splitlines()[-1] == (f"or re-score the finished ones: {cd}tokrag leaderboard rescore "
                                                f"{spec.path} --runs-dir {runs} --allow-missing")
    fails = [x.render() for x in check_against_baseline(spec, runs, base) if not x.ok]
    assert len(fails) == 2 and all(f.split("; check from there: ")[1].startswith(cd) for f in fails)  # not a run
    with pytest.raises(ConfigError, match=rf"; finish them with {cd}tokrag leaderboard run "):
        write_baseline(spec, runs, tmp_path / "new_base.json")

    # the suggested report, pasted here, reports both finished cells (from here, without the cd: 0 of 2)
    assert [data for _c, _k, data in collect(spec, runs, allow_missing=True).values()] == [None, None]
    assert _follow(lines[-1].split(": ", 1)[1] + f" --out {tmp_path / 'rep'}", monkeypatch) == 0
    assert Path.cwd() == work
    assert all(data is not None for _c, _k, data in collect(spec, runs, allow_missing=True).values())
    # the suggested check of a cell's line, pasted from elsewhere: it passes from work/
    monkeypatch.chdir(elsewhere)
    assert _follow(fails[0].split("; check from there: ")[1], monkeypatch) == 0


def test_without_a_finished_run_the_specs_folder_that_holds_the_data_is_suggested(tmp_path, monkeypatch):
    """The s50 u1 layout: the data beside the spec (``spec/data/q.jsonl``), no run yet, report from elsewhere."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    spec = _byo_toy(tmp_path, tmp_path / "spec")
    runs = tmp_path / "runs"
    monkeypatch.chdir(elsewhere)
    with pytest.raises(IncompleteRunError) as exc:
        collect(spec, runs)
    run = str(exc.value).splitlines()[-2]
    assert run == f"run: cd {spec.path.parent} && tokrag leaderboard run {spec.path} --runs-dir {runs}"
    with pytest.raises(ConfigError, match=rf"; run from {spec.path.parent}, which holds 'data/q.jsonl', or give "):
        run_spec(spec, runs, progress=False)  # run's own refusal names the folder too
    assert _follow(run.removeprefix("run: "), monkeypatch) == 0  # the suggestion runs both cells
    assert len(list(runs.glob("*/DONE"))) == 2
    build_report(spec, runs, tmp_path / "rep")  # and from there the report finds them (no IncompleteRunError)

    # no folder holds the data any more: no cd is suggested (the generic advice stays)
    (spec.path.parent / "data" / "q.jsonl").unlink()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(IncompleteRunError) as exc:
        collect(spec, runs)
    text = str(exc.value)
    assert "cd " not in text and "run from the directory that holds 'data/q.jsonl', or give" in text
    # the last line (s60 n1: no cell loads from anywhere, so no 'report ... --allow-missing' follows it)
    assert text.splitlines()[-1] == f"run: tokrag leaderboard run {spec.path} --runs-dir {runs}"


def _lines(sizes: list[int], bad: set[int]) -> list[dict]:
    """Journal chunk lines of ``sizes`` requests each, the ``bad`` ones (0-based) with a wrong checksum."""
    out = []
    for i, n in enumerate(sizes):
        e = {"type": "generate_until", "fingerprints": [f"fp{i}-{j}" for j in range(n)]}
        e["sha256"] = "0" * 64 if i in bad else _entry_checksum(e)
        out.append(e)
    return out


def test_the_journal_warning_counts_lines_as_lines():
    entries = _lines([4, 2, 3, 1], {1})
    assert _unverified_message(entries, 1) == (
        "the journal's line 3 fails its checksum (edited or damaged after it was written): it and the 2 line(s) "
        "after it (3 chunk(s), 6 request(s); checksum wrong or missing on 1 of these 3 lines) are dropped and "
        "computed again")
    entries = _lines([2, 2, 5], {0, 2})
    del entries[0]["sha256"]
    assert _unverified_message(entries, 0) == (
        "the journal's line 2 has no checksum (written by an older runner: not verified): it and the 2 line(s) "
        "after it (3 chunk(s), 9 request(s); checksum wrong or missing on 2 of these 3 lines) are dropped and "
        "computed again")
    assert _unverified_message(_lines([4, 3], {1}), 1) == (
        "the journal's line 3 fails its checksum (edited or damaged after it was written): it (1 chunk(s), "
        "3 request(s)) is dropped and computed again")
