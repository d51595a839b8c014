"""An input edited while ``tokrag leaderboard run`` goes (a breaker: a BYO task's passages file edited after the
first cell finished, restored after the run): the run keys were computed once at the start, so every later cell was
computed from the edited file and finished under the key of the original one, and ``report`` read them as the
original corpus's results. Now each cell's inputs are checked again before it starts (it runs under the key of the
current inputs) and before its ``DONE`` is written (a cell whose inputs changed while it ran is left unfinished).
Fast: toy model, toy task, a questions file the task's key holds."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import lm_eval
from leaderboard_helpers import FIX, write_spec

import leaderboards.runner
from leaderboards.keys import _HashMemo
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec

ORIGINAL = '{"id": "q1", "question": "capital of france", "answers": ["Paris"]}\n'
EDITED = '{"id": "q1", "question": "capital of france", "answers": ["Lyon"]}\n'


def _byo_toy(tmp_path: Path):
    """A copy of the toy task whose metadata names ``q.jsonl`` (its key holds that file's SHA-256); its spec: 2
    methods x 2 seeds on toy_qa. Returns ``(spec, q.jsonl)``."""
    tasks = tmp_path / "mytasks"
    shutil.copytree(FIX / "tasks" / "toy_qa", tasks / "toy_qa")
    q = tmp_path / "q.jsonl"
    q.write_text(ORIGINAL, encoding="utf-8")
    yml = tasks / "toy_qa" / "toy_qa.yaml"
    yml.write_text(yml.read_text().replace("metadata: {version: 1.0}", f"metadata: {{version: 1.0, questions: {q}}}"))
    return load_spec(write_spec(tmp_path / "spec", include=tasks, tasks=["toy_qa"], limit=3, seeds=(1, 2))), q


def _record_reads(monkeypatch, q: Path, edit_during: int | None = None) -> list[str]:
    """Wrap ``lm_eval.simple_evaluate``: the SHA-256 of ``q`` each cell's evaluation saw, in order; with
    ``edit_during``, that evaluation (0-based) ends by writing :data:`EDITED` into ``q``."""
    reads: list[str] = []
    real = lm_eval.simple_evaluate

    def evaluate(*a, **kw):
        reads.append(_HashMemo().sha(q))
        out = real(*a, **kw)
        if edit_during == len(reads) - 1:
            q.write_text(EDITED, encoding="utf-8")
        return out

    monkeypatch.setattr(lm_eval, "simple_evaluate", evaluate)
    return reads


def _done_reads(runs: Path, q: Path) -> dict[str, str]:
    """``{folder: the q.jsonl SHA-256 its key names}`` of every finished cell folder."""
    out = {}
    for done in sorted(runs.glob("*/DONE")):
        cfg = json.loads((done.parent / "config.json").read_text(encoding="utf-8"))
        out[done.parent.name] = cfg["task_data_files"][str(q.resolve())]
    return out


def _sha(text: str, tmp_path: Path) -> str:
    p = tmp_path / "sha.tmp"
    p.write_text(text, encoding="utf-8")
    return _HashMemo().sha(p)


def test_an_input_edited_between_cells_gives_the_later_cells_the_key_of_the_edited_input(tmp_path, monkeypatch, caplog):
    spec, q = _byo_toy(tmp_path)
    runs = tmp_path / "runs"
    reads: list[str] = []
    real_evaluate = lm_eval.simple_evaluate
    real_run_cell = leaderboards.runner.run_cell

    def evaluate(*a, **kw):
        reads.append(_HashMemo().sha(q))
        return real_evaluate(*a, **kw)

    def run_cell(*a, **kw):  # the edit lands after the first cell's DONE
        out = real_run_cell(*a, **kw)
        q.write_text(EDITED, encoding="utf-8")
        return out

    monkeypatch.setattr(lm_eval, "simple_evaluate", evaluate)
    monkeypatch.setattr(leaderboards.runner, "run_cell", run_cell)
    with caplog.at_level(logging.WARNING, logger="leaderboards.runner"):
        summary = run_spec(spec, runs, progress=False)
    old, new = _sha(ORIGINAL, tmp_path), _sha(EDITED, tmp_path)
    assert reads == [old, new, new, new]
    done = _done_reads(runs, q)
    assert sorted(done.values()) == sorted([new, new, new, old])  # each finished cell under the key of what it read
    assert len(summary.ran) == 4 and summary.changed == []
    warned = [r.getMessage() for r in caplog.records if "inputs changed since the run began" in r.getMessage()]
    assert len(warned) == 1  # once per change, not once per cell
    assert f"task_data_files[{q.resolve()}] " in warned[0] and ": a data file the task names changed" in warned[0]


def test_an_input_edited_while_a_cell_runs_leaves_that_cell_unfinished(tmp_path, monkeypatch, caplog):
    spec, q = _byo_toy(tmp_path)
    runs = tmp_path / "runs"
    reads = _record_reads(monkeypatch, q, edit_during=0)
    with caplog.at_level(logging.WARNING, logger="leaderboards.runner"):
        summary = run_spec(spec, runs, progress=False)
    old, new = _sha(ORIGINAL, tmp_path), _sha(EDITED, tmp_path)
    assert reads == [old, new, new, new]
    done = _done_reads(runs, q)
    assert sorted(done.values()) == [new, new, new]  # the first cell's results are not finished under either key
    first = summary.changed
    assert len(first) == 1 and len(summary.ran) == 3 and first[0] not in summary.ran
    line = [r.getMessage() for r in caplog.records if "its inputs changed while it ran" in r.getMessage()]
    assert len(line) == 1 and f"task_data_files[{q.resolve()}] " in line[0] and "run the spec again" in line[0]
    left = [d for d in runs.iterdir() if d.is_dir() and not (d / "DONE").exists()]
    assert len(left) == 1 and (left[0] / "journal.jsonl").is_file()  # unfinished, resumable under the old key

    # the input restored: the unfinished cell resumes under its (original) key from its journal, the other three
    # are computed under the original keys (they were finished only under the edited file's)
    q.write_text(ORIGINAL, encoding="utf-8")
    again = run_spec(spec, runs, progress=False)
    assert len(again.ran) == 4 and again.replayed_requests == 3 and again.changed == []
    assert sorted(_done_reads(runs, q).values()) == sorted([new] * 3 + [old] * 4)
    assert reads[4:] == [old] * 4


def _samples(texts: list[list[str]]) -> list[dict]:
    """Logged samples whose docs attach passages ``p<i>`` with the given texts (one list per question)."""
    return [{"doc_id": d, "doc": {"ctxs": [{"docid": f"p{i}", "text": t} for i, t in enumerate(ts)]}}
            for d, ts in enumerate(texts)]


def test_the_invariant_names_a_cell_whose_retrieval_differs_from_its_siblings():
    """What a report of the breaker's runs showed without a FAIL: cells of one task and seed over two corpora."""
    from leaderboards.invariants import sibling_violations

    paris, lyon = _samples([["Paris is the capital", "x"], ["y", "z"]]), _samples([["Lyon is the capital", "x"], ["y", "z"]])
    cells = {"rag-none/my_qa/seed1": lyon, "rag-standard/my_qa/seed1": paris, "rag-cad/my_qa/seed1": paris,
             "rag-none/my_qa/seed2": paris, "rag-standard/my_qa/seed2": paris}
    got = sibling_violations("my_qa", cells, {"rag-none/my_qa/seed1": "runs/abc"})
    assert [v.render() for v in got] == [
        "FAIL rag-none/my_qa/seed1 doc_id 0  invariant: the passages attached to 1 of 2 questions differ from its "
        "siblings' on my_qa seed1 (e.g. rag-standard/my_qa/seed1; first: doc id 0): every method must see the same "
        "retrieval; the cells were computed from different corpus or question files: re-run the cell (remove its run "
        "folder runs/abc and run the spec again)"]


def test_the_invariant_leaves_seeds_depths_and_passage_free_cells_alone():
    """A noise task draws its passages per seed; a method given another k under ``specific`` retrieves another depth;
    a task without passages (language modelling over none, a closed-book task) has nothing to compare."""
    from leaderboards.invariants import sibling_violations

    cells = {"a/t/seed1": _samples([["p", "q", "r"]]), "b/t/seed1": _samples([["p", "q", "r"]]),
             "a/t/seed2": _samples([["q", "noise", "r"]]), "b/t/seed2": _samples([["q", "noise", "r"]]),
             "deep/t/seed1": _samples([["p", "q", "r", "s", "t"]]), "deep/t/seed2": _samples([["q", "r", "p", "s", "u"]]),
             "none/t/seed1": [{"doc_id": 0, "doc": {"question": "?"}}]}
    assert sibling_violations("t", cells) == []
