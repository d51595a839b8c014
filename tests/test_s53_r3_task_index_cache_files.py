"""tokrag's disk cache of lm-eval's task index (tokrag_model/_task_index_cache.py) reads only a regular cache file of
at most MAX_BYTES: a cache file that is a named pipe (open waited for a writer forever: lm_eval hung at start-up), a
link to /dev/zero (the read never ended: memory ran out) or a huge sparse file (read whole into memory) gives
lm-eval's own build and one DEBUG line (s53 r3, review of 243a363). Run in a child process under a 3 GiB address-space
limit and a timeout, so that the old code's unbounded reads fail there instead of exhausting this machine."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("lm_eval")

CHILD = r"""
import json, logging, os, resource, shutil, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
os.umask(0o022)
from lm_eval.tasks import _index
from tokrag_model import _task_index_cache as tic

original = getattr(_index.TaskIndex.build, "__wrapped__", _index.TaskIndex.build)
tmp = Path(sys.argv[1])
root = tmp / "lm_tasks"
shutil.copytree(Path(_index.__file__).parent / "arc", root / "arc")
cache = tmp / "cache"
lines = []
handler = logging.Handler()
handler.emit = lambda record: lines.append(record.getMessage())
log = logging.getLogger("tokrag_model")
log.addHandler(handler)
log.setLevel(logging.DEBUG)
expected = {k: (e.name, e.kind.name, str(e.yaml_path), sorted(e.tags)) for k, e in original([root]).items()}

def case(label):
    lines.clear()
    index = tic.cached_folder_index(root, original, cache_dir=cache)
    got = {k: (e.name, e.kind.name, str(e.yaml_path), sorted(e.tags)) for k, e in index.items()}
    print(json.dumps({"case": label, "same": got == expected, "n": len(got), "log": list(lines)}), flush=True)

case("cold")
path = tic.cache_file(root, cache)
path.unlink()
path.symlink_to("/dev/zero")
case("link to /dev/zero")
path.unlink()
with open(path, "wb") as fh:
    fh.truncate(4 << 30)  # sparse: no disk used
case("4 GiB file")
path.unlink()
os.mkfifo(path)
case("named pipe")
"""


def test_a_cache_file_that_is_a_pipe_a_device_or_huge_is_not_read(tmp_path):
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"hung; printed so far: {exc.stdout!r}") from None
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["case"] for r in rows] == ["cold", "link to /dev/zero", "4 GiB file", "named pipe"], proc.stderr[-2000:]
    assert all(r["same"] and r["n"] == 5 for r in rows)  # arc's 5 entries: lm-eval's own build each time
    assert rows[0]["log"] == []
    cache = next((tmp_path / "cache" / "lmeval-task-index").glob("*.json"))
    for row, why in ((rows[1], "not a regular file (mode crw-rw-rw-)"), (rows[2], f"{4 << 30} bytes, more than {1 << 28}"),
                     (rows[3], "not a regular file (mode prw-r--r--)")):
        assert row["log"][0] == f"lm-eval task index cache {cache} not read ({why}): building the index again", row
    assert rows[1]["log"][1].startswith(f"lm-eval task index cache {cache} not written: [Errno 22] is a character device")


def test_an_include_paths_override_warning_names_lm_evals_line(tmp_path, monkeypatch, caplog):
    """lm-eval's log format prints '[tasks._index:70]': the patched build's merge wrote the same warning from its own
    line ('[tasks._index:281]', a line _index.py does not have); now file, line and function are lm-eval's."""
    import logging
    import shutil
    import types
    from pathlib import Path

    from lm_eval.tasks import _index

    from tokrag_model import _task_index_cache as tic

    original = getattr(_index.TaskIndex.build, "__wrapped__", _index.TaskIndex.build)
    default, mine = tmp_path / "lm_tasks", tmp_path / "mine"
    shutil.copytree(Path(_index.__file__).parent / "arc", default / "arc")
    mine.mkdir()
    (mine / "arc_easy.yaml").write_text("task: arc_easy\ndataset_path: my/arc\n", encoding="utf-8")
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(tic.DISABLE_ENV, raising=False)
    cls = type("TaskIndex", (), {"build": staticmethod(original)})
    tic.patch_task_index(types.SimpleNamespace(TaskIndex=cls, __file__=str(default / "_index.py")))

    def warnings(build):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="lm_eval.tasks._index"):
            build([default, mine])
        return [(r.getMessage(), r.pathname, r.lineno, r.funcName, r.module) for r in caplog.records]

    ref = warnings(original)
    assert [(p, f, m) for _, p, _, f, m in ref] == [(_index.__file__, "build", "_index")]
    assert ref[0][0] == (f"Task 'arc_easy' from {mine / 'arc_easy.yaml'} overrides existing task from "
                         f"{default / 'arc' / 'arc_easy.yaml'}")
    assert warnings(cls.build) == ref  # cold
    assert warnings(cls.build) == ref  # warm
