"""``retrieval.io.check_writable`` refuses a name too long for the file system in one line, before any work (s57 h4,
g2's noticed-and-left): ``Path.is_symlink`` / ``Path.exists`` raise ``ENAMETOOLONG``, so ``tokrag leaderboard report
--out <300-byte name>`` and ``check --write --baseline <long>`` ended in a traceback. The line is ``tokrag
retrieve``'s (``retrieval.cli._check_lookup``, f2/r2): ``a name of 300 bytes, more than the 255 its file system
allows ([Errno 36] File name too long); give a shorter path``; a folder not yet created is measured too, and a file's
temporary file ``.<name>.<8 hex>.tmp``. A path over ``PATH_MAX`` is ``cannot be looked up ([Errno 36] ...)``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from retrieval.io import check_writable

SPEC = str(Path(__file__).resolve().parents[1] / "leaderboards" / "specs" / "ci.yaml")
TOO_LONG = "([Errno 36] File name too long); give a shorter path"


def _max(folder: Path) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


@pytest.mark.parametrize("folder", [True, False])
def test_a_long_name_is_one_line(tmp_path, folder):
    n = _max(tmp_path)
    for path in (tmp_path / ("x" * (n + 45)), tmp_path / ("x" * (n + 45)) / "out.md",
                 tmp_path / "new" / ("y" * (n + 45)) / "z"):  # the last: under a folder not yet created (no lookup fails)
        with pytest.raises(ConfigError) as exc:
            check_writable(path, "report --out", folder=folder)
        assert str(exc.value) == (f"report --out {path}: a name of {n + 45} bytes, more than the {n} its file system "
                                  f"allows {TOO_LONG}")
    assert sorted(os.listdir(tmp_path)) == []  # nothing created


def test_a_file_whose_temporary_file_name_is_too_long(tmp_path):
    n = _max(tmp_path)
    path = tmp_path / ("b" * (n - 10))
    with pytest.raises(ConfigError) as exc:
        check_writable(path, "check --write --baseline", folder=False)
    assert str(exc.value) == (f"check --write --baseline {path}: a name of {n - 10} bytes, whose temporary file "
                              f"(.<name>.<8 hex>.tmp, renamed over it once written) has {n + 4}, more than the {n} its "
                              f"file system allows {TOO_LONG}")
    assert check_writable(path, "--out", folder=True) == path.resolve()  # a folder: no temporary file
    assert check_writable(tmp_path / ("c" * (n - 14)), "--out", folder=False) == (tmp_path / ("c" * (n - 14))).resolve()
    with pytest.raises(ConfigError, match=r": a name of \d+ bytes, whose temporary file .* has \d+, more than "):
        check_writable(tmp_path / ("c" * (n - 13)), "--out", folder=False)  # .<name>.<8 hex>.tmp: 14 bytes more


def test_a_path_over_path_max_is_one_line(tmp_path):
    path = tmp_path.joinpath(*(["ok"] * 2100), "f")
    with pytest.raises(ConfigError) as exc:
        check_writable(path, "report --out", folder=True)
    assert str(exc.value) == f"report --out {path}: cannot be looked up {TOO_LONG}"


@pytest.mark.parametrize("argv", [["report", SPEC, "--out"], ["check", SPEC, "--write", "--baseline"]])
def test_the_leaderboard_commands_print_the_line(tmp_path, capsys, argv):
    from tokrag_model.cli import main

    n = _max(tmp_path)
    long = tmp_path / ("r" * (n + 45))
    capsys.readouterr()
    assert main(["leaderboard", *argv, str(long)]) == 2
    what = "report --out" if argv[0] == "report" else "check --write --baseline"
    assert capsys.readouterr().err == (f"tokrag leaderboard: error: {what} {long}: a name of {n + 45} bytes, more than "
                                       f"the {n} its file system allows {TOO_LONG}\n")


def test_a_lookup_refused_by_the_system_is_one_line(tmp_path, monkeypatch):
    """A folder above the path this user may not search (EACCES; simulated: the tests may run as root, whom the
    kernel lets search anything): Path.exists raises it, and it was a traceback."""
    from pathlib import Path as P

    path = tmp_path.resolve() / "locked" / "out"  # resolved: check_writable looks the resolved path up
    real = P.exists

    def exists(self, *a, **k):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(P, "exists", exists)
    with pytest.raises(ConfigError) as exc:
        check_writable(path, "report --out", folder=True)
    assert str(exc.value) == (f"report --out {path}: cannot be looked up ([Errno 13] Permission denied); give a path "
                              "this user can reach")
