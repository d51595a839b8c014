"""The lm-eval task-index cache (tokrag_model/_task_index_cache.py) where it cannot be written (s53 f7, r3's review of
243a363): with a cache folder that cannot be made or written and no cache of this key in it, every lm_eval process
recorded, encoded and tried to write the 17.5 MB index (14.6 s CPU under load against about 10 s for lm-eval's own
build, /work/scratch/s53/r3/probe_readonly.sh); it now goes to lm-eval's build at once. The cache logic is pointed at
a copy of a few of lm-eval's task folders, never the venv's own folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

from lm_eval.tasks import _index  # noqa: E402

from tokrag_model import _task_index_cache as tic  # noqa: E402

LM_TASKS = Path(_index.__file__).parent
ORIGINAL = getattr(_index.TaskIndex.build, "__wrapped__", _index.TaskIndex.build)  # lm-eval's own build
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "lm_tasks"
    for name in ("arc", "hellaswag"):
        shutil.copytree(LM_TASKS / name, root / name)
    return root


def _digest(index: dict) -> list:
    return [[k, e.name, e.kind.name, str(e.yaml_path), json.dumps(e.cfg, sort_keys=True, default=repr), sorted(e.tags)]
            for k, e in index.items()]


class _Spy:
    """Counts the calls of a module function and still calls it."""

    def __init__(self, monkeypatch, name):
        self.calls, original = 0, getattr(tic, name)

        def spy(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(tic, name, spy)


def test_a_cache_folder_that_cannot_be_made_goes_straight_to_lm_evals_build(folder, tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    key, recorded, builds = _Spy(monkeypatch, "_key"), _Spy(monkeypatch, "_recorded_build"), []
    got = tic.cached_folder_index(folder, lambda paths: builds.append(paths) or ORIGINAL(paths),
                                  cache_dir=blocker / "cache")  # its parent is a file: nothing can be kept
    assert _digest(got) == _digest(ORIGINAL([folder]))
    assert (builds, key.calls, recorded.calls) == ([[folder]], 0, 0)  # was: the folder stamped (_key) first


CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from lm_eval.tasks import _index
    from tokrag_model import _task_index_cache as tic
    original = getattr(_index.TaskIndex.build, "__wrapped__", _index.TaskIndex.build)
    calls = {"build": 0, "_recorded_build": 0, "_encode": 0}
    for name in ("_recorded_build", "_encode"):
        def spy(*a, _name=name, _f=getattr(tic, name), **k):
            calls[_name] += 1
            return _f(*a, **k)
        setattr(tic, name, spy)
    def build(paths):
        calls["build"] += 1
        return original(paths)
    folder, cache = Path(sys.argv[1]), sys.argv[2]
    got = tic.cached_folder_index(folder, build, cache_dir=cache)
    same = [[k, e.name, str(e.yaml_path), sorted(e.tags)] for k, e in got.items()] == \\
        [[k, e.name, str(e.yaml_path), sorted(e.tags)] for k, e in original([folder]).items()]
    print(json.dumps(dict(calls, same=same)))
""")


def test_a_read_only_cache_folder_goes_straight_to_lm_evals_build(folder, tmp_path):
    """A real read-only file system (a read-only bind mount in a mount namespace of the child's own)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    ro = tmp_path / "ro"
    for name in ("empty", "other_key", "warm"):
        (ro / name).mkdir(parents=True)
    (ro / "empty_sub" / tic.CACHE_SUBDIR).mkdir(parents=True)  # the cache's own folder, empty
    tic.cached_folder_index(folder, ORIGINAL, cache_dir=ro / "warm")
    (warm,) = (ro / "warm" / tic.CACHE_SUBDIR).glob("*.json")
    data = json.loads(warm.read_text(encoding="utf-8"))
    data["key"] = "0" * 64
    (ro / "other_key" / tic.CACHE_SUBDIR).mkdir()
    (ro / "other_key" / tic.CACHE_SUBDIR / warm.name).write_text(json.dumps(data), encoding="utf-8")
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               PYTHONDONTWRITEBYTECODE="1")
    mount = f"mount --bind {ro} {ro} && mount -o remount,bind,ro {ro} && ! touch {ro}/x 2>/dev/null"
    if subprocess.run(["unshare", "-m", "sh", "-c", mount], capture_output=True, timeout=60).returncode != 0:
        pytest.skip("no read-only bind mount here (unshare -m needs CAP_SYS_ADMIN)")
    runs = " && ".join(f"{sys.executable} {script} {folder} {ro / name}"
                       for name in ("empty", "empty_sub", "other_key", "warm"))
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"{mount} && {runs}"], env=env, capture_output=True,
                           text=True, timeout=600)
    assert probe.returncode == 0, probe.stderr[-3000:]
    got = [json.loads(line) for line in probe.stdout.splitlines()]
    build_at_once = {"build": 1, "_recorded_build": 0, "_encode": 0, "same": True}
    assert got == [build_at_once, build_at_once, build_at_once,  # was: recorded and encoded, then not written
                   {"build": 0, "_recorded_build": 0, "_encode": 0, "same": True}]  # a warm read-only cache is read
    assert sorted(p.name for p in (ro / "empty").iterdir()) == []


KILLED = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from lm_eval.tasks import _index
    from tokrag_model import _task_index_cache as tic
    original = getattr(_index.TaskIndex.build, "__wrapped__", _index.TaskIndex.build)
    os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)  # kill -9 after the bytes, before the rename
    tic.cached_folder_index(Path(sys.argv[1]), original, cache_dir=sys.argv[2])
""")


def test_a_temporary_file_a_killed_write_left_is_removed_at_the_next_write(folder, tmp_path):
    """s53 r3: kill -9 during the first cache write left the 17.5 MB ``.<hex>.json.<8 hex>.tmp``; nothing removed it."""
    cache = tmp_path / "cache"
    script = tmp_path / "killed.py"
    script.write_text(KILLED, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, str(script), str(folder), str(cache)], env=env, capture_output=True,
                          timeout=600)
    assert proc.returncode == -9, proc.stderr[-2000:]
    sub = cache / tic.CACHE_SUBDIR
    (left,) = [p for p in sub.iterdir()]  # the killed write's temporary file, whole, never renamed
    assert re.fullmatch(r"\.[0-9a-f]{16}\.json\.[0-9a-f]{8}\.tmp", left.name) and left.stat().st_size > 1000
    old = left.stat().st_mtime - 2 * 3600
    os.utime(left, (old, old))  # as if the kill was two hours ago
    fresh = sub / (left.name[:-12] + "0123abcd.tmp")  # a write going on now in another process
    fresh.write_bytes(b"{")
    other = sub / ".notes.json.0123abcd.tmp"  # not a name of the cache's temporary files
    other.write_bytes(b"x")
    os.utime(other, (old, old))
    link = sub / (left.name[:-12] + "89abcdef.tmp")  # a link is never removed
    link.symlink_to(other)
    os.utime(link, (old, old), follow_symlinks=False)
    tic.cached_folder_index(folder, ORIGINAL, cache_dir=cache)
    assert sorted(p.name for p in sub.iterdir()) == sorted([fresh.name, other.name, link.name,  # was: left kept too
                                                           left.name[1:].split(".json")[0] + ".json"])
