"""s57 r11: one ENOENT rule for tokrag's own writes.

r7 (50b19ac) unmarked ENOENT in ``leaderboards.runner.leaderboard_write`` by deleting the mark ``no_room_naming`` had
set; h4 (0c1a31b) then stopped ``retrieval.io`` marking ENOENT at all, so the two held the same rule twice. The rule
is now ``retrieval.io.mark_own_write``, which ``leaderboard_write`` calls for an error naming another file.
"""
from __future__ import annotations

import errno
import os

import pytest

from retrieval.errors import WRITE_MARK


def test_leaderboard_write_uses_retrieval_io_rule() -> None:
    import leaderboards.runner as runner
    from retrieval.io import mark_own_write  # ImportError before s57 r11 (it was the private retrieval.io._mark)

    assert runner.mark_own_write is mark_own_write
    gone = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), "made/by/us")
    assert mark_own_write(gone, "made/by/us") is gone
    assert not hasattr(gone, WRITE_MARK)
    denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES), "out/report.md")
    assert mark_own_write(denied, "out/report.md") is denied
    assert getattr(denied, WRITE_MARK) == "out/report.md"


@pytest.mark.parametrize(("err", "marked"), [
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "runs/cell/journal"), None),
    (PermissionError(errno.EACCES, "Permission denied", "runs/cell/journal"), "runs/cell/journal"),
    (OSError(errno.EIO, "Input/output error"), "runs/cell"),  # pathless: named by the block's path
])
def test_leaderboard_write_marks_all_but_enoent(err: OSError, marked: str | None) -> None:
    from leaderboards.runner import leaderboard_write

    with pytest.raises(OSError) as info:
        with leaderboard_write("runs/cell"):
            raise err
    exc = info.value
    assert exc.errno == err.errno
    assert getattr(exc, WRITE_MARK, None) == marked


def test_leaderboard_write_enoent_naming_its_own_path_is_unmarked() -> None:
    """no_room_naming marked an error naming the block's path whatever its errno; r7 deleted the mark afterwards.
    Now no_room_naming never sets it for ENOENT, and leaderboard_write leaves it so."""
    from leaderboards.runner import leaderboard_write

    with pytest.raises(FileNotFoundError) as info:
        with leaderboard_write("report/stage"):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", "report/stage")
    assert not hasattr(info.value, WRITE_MARK)
