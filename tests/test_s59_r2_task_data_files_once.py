"""s59 r2 (review of a1's c1742b5): a task's data files are listed and stamped once per key computation, not once per
cell.

a1's :func:`leaderboards.keys.task_folder_data_files` lists the folder of a task YAML that runs its own code and
:func:`leaderboards.keys.task_data_files` stamps (``stat`` + ``realpath``) every data file there, for every cell: a
10-cell ToyLM spec whose task folder holds 5000 small ``.json`` files took 2.3-2.7 s a key computation (0.1-0.17 s on
c9e4cc4's tree) on a busy 2-core machine. The result is memoised per (task, include_path, working directory) in the
key computation's :class:`leaderboards.keys._HashMemo`, as the task chains and folder trees are. Counted, not timed.
"""

from __future__ import annotations

import hashlib
import shutil

from leaderboard_helpers import FIX, TOY, write_spec

from leaderboards import keys
from leaderboards.spec import load_spec


def test_one_listing_per_task_for_all_its_cells(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    own = tmp_path / "own"
    own.mkdir()
    for f in ("utils.py", "toy_qa.yaml", "toy_qa_noise67.yaml"):
        shutil.copy(FIX / "tasks" / "toy_qa" / f, own / f)
    for i in range(3):
        (own / f"r{i}.json").write_text(f'{{"i": {i}}}\n', encoding="utf-8")
    methods = [{"name": f"m{i}", "model": TOY, "model_args": {"mode": "first", "delay": i / 1000}} for i in range(3)]
    spec = load_spec(write_spec(tmp_path / "s", include=own, methods=methods, limit=4, extra={"reference": "m0"}))
    calls: list[int] = []
    listing = keys.task_folder_data_files
    monkeypatch.setattr(keys, "task_folder_data_files", lambda chain: calls.append(1) or listing(chain))
    got = keys.cell_keys(spec)
    assert len(got) == 6  # 3 methods x (toy_qa, toy_qa_noise67)
    assert len(calls) == 2  # was 6: once per cell
    want = {str((own / f"r{i}.json").resolve()): hashlib.sha256(f'{{"i": {i}}}\n'.encode()).hexdigest() for i in range(3)}
    assert [m["task_data_files"] for _, _, m in got] == [want] * 6
    got[0][2]["task_data_files"].clear()  # a caller's edit of one cell's material does not reach the others
    assert [m["task_data_files"] for _, _, m in got[1:]] == [want] * 5


def test_a_fresh_memo_sees_an_edit(tmp_path):
    """The memo lives for one key computation (:func:`leaderboards.runner.inputs_now` takes a fresh one per check)."""
    own = tmp_path / "own"
    own.mkdir()
    for f in ("utils.py", "toy_qa.yaml"):
        shutil.copy(FIX / "tasks" / "toy_qa" / f, own / f)
    q = own / "q.jsonl"
    q.write_bytes(b"a\n")
    before = keys.task_data_files("toy_qa", [own], keys._HashMemo())
    q.write_bytes(b"b\n")
    assert keys.task_data_files("toy_qa", [own], keys._HashMemo()) == {str(q.resolve()): hashlib.sha256(b"b\n").hexdigest()}
    assert before == {str(q.resolve()): hashlib.sha256(b"a\n").hexdigest()}
