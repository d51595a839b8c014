"""s57 r6 (review of g1's c026632): the one-time re-key of every cell by the code hashing is named as a change of the
run key's definition.

c026632 hashes a ``.py`` file of the model's package, the task folder and ``retrieval`` by its code, so every cell
finished before it has another ``model_code``, ``retrieval_code`` and ``task_fingerprint``, with no file edited. Without
a ``KEY_SCHEMA`` bump, ``tokrag leaderboard run --estimate`` said of such a cell only ``model_code differs: the model
code changed; ... task_fingerprint differs: a task YAML changed`` (and ``check`` the same fields): a user looked for
an edit nobody made. With schema 3 the line also says ``schema differs: the run key's definition changed``.

The finished run is made by the real runner with the key as c026632's parent made it (``KEY_SCHEMA`` 2, every file
hashed by its bytes: ``HashMemo.code_sha`` as ``HashMemo.sha``); toy model, toy task, 3 questions.
"""

from __future__ import annotations

import json
import shutil

from leaderboard_helpers import FIX, TOY, write_spec


def test_a_cell_keyed_before_the_code_hashing_is_named_as_an_older_key_definition(tmp_path, monkeypatch,
                                                                                   capsys) -> None:
    import leaderboards.keys as keys
    import retrieval.io as rio
    from leaderboards.runner import run_spec
    from leaderboards.spec import load_spec
    from tokrag_model.cli import main

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(FIX / "tasks", tmp_path / "tasks", ignore=shutil.ignore_patterns("__pycache__"))
    spec = write_spec(tmp_path / "s", include=tmp_path / "tasks", tasks=["toy_qa"], limit=3,
                      methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}])
    runs = tmp_path / "runs"
    with monkeypatch.context() as old:  # the key as the tokrag before c026632 computed it
        old.setattr(keys, "KEY_SCHEMA", 2)
        old.setattr(rio.HashMemo, "code_sha", rio.HashMemo.sha)
        run_spec(load_spec(spec), runs, progress=False)
    (done,) = runs.glob("*/DONE")
    assert json.loads((done.parent / "config.json").read_text(encoding="utf-8"))["schema"] == 2
    capsys.readouterr()

    assert main(["leaderboard", "run", str(spec), "--runs-dir", str(runs), "--estimate"]) == 0
    captured = capsys.readouterr()
    text = captured.out + captured.err
    line = next(s for s in text.splitlines() if "has a finished run with other inputs" in s)
    assert line.startswith(f"1 of the 1 cells to do has a finished run with other inputs in {runs} (")
    assert "schema differs: the run key's definition changed" in line
    for field in ("model_code", "retrieval_code", "task_fingerprint"):  # moved by the hashing alone
        assert f"{field} differs" in line
    assert keys.KEY_SCHEMA == 3
