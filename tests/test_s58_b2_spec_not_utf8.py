"""A leaderboard spec file that is not UTF-8 (a Latin-1 ``é`` in its description, a file saved as UTF-16) was a
``UnicodeDecodeError`` traceback (exit 1) from ``load_spec``'s ``read_text``, in ``run``, ``run --estimate``,
``report``, ``check`` and ``rescore``; it is now one line naming the file, the line and the byte, exit 2, as a
non-UTF-8 questions or corpus line is refused by ``tokrag retrieve`` (s58 b2). A UTF-8 file with a byte-order mark
still loads."""

from __future__ import annotations

import pytest

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import write_spec
from tokrag_model.cli import main


def _spec(tmp_path, encode):
    path = write_spec(tmp_path, limit=2)
    text = path.read_text(encoding="utf-8").replace("name: toy\n", "name: toy\ndescription: caf\u00e9 menu\n")
    path.write_bytes(encode(text))
    return path


def test_latin1_spec_is_one_line_naming_line_and_byte(tmp_path):
    path = _spec(tmp_path, lambda t: t.encode("latin-1"))
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == (f"{path}:2: not valid UTF-8 (byte 0xe9 at byte 17 of the line); re-encode the "
                              "leaderboard spec as UTF-8")


def test_utf16_spec_names_the_byte_order_mark(tmp_path):
    path = _spec(tmp_path, lambda t: t.encode("utf-16"))
    with pytest.raises(ConfigError) as exc:
        load_spec(path)
    assert str(exc.value) == (f"{path}:1: not valid UTF-8 (it starts with a UTF-16 byte-order mark) (byte 0xff at "
                              "byte 1 of the line); re-encode the leaderboard spec as UTF-8")


@pytest.mark.parametrize("command", [["run", "--estimate", "--fallback-s-per-question", "1"], ["report"],
                                     ["check", "--baseline", "b.json"], ["rescore"]])
def test_cli_exits_2_with_the_line(tmp_path, capsys, command):
    path = _spec(tmp_path, lambda t: t.encode("latin-1"))
    rc = main(["leaderboard", command[0], str(path), "--runs-dir", str(tmp_path / "runs"), *command[1:]])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"{path}:2: not valid UTF-8 (byte 0xe9 at byte 17 of the line)" in err
    assert "Traceback" not in err


def test_utf8_with_byte_order_mark_still_loads(tmp_path):
    path = _spec(tmp_path, lambda t: ("\ufeff" + t).encode("utf-8"))
    spec = load_spec(path)
    assert spec.name == "toy"
    assert spec.description == "caf\u00e9 menu"
