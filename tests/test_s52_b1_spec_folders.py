"""A spec's folder settings of a wrong type (s52 b1, /work/scratch/s52/b1/probe_spec.py, probe_spec.txt):
``include_path: 5``, ``[5]`` or ``[null]`` ended ``load_spec`` in a TypeError traceback (``'int' object is not
iterable``, ``unsupported operand type(s) for /: 'PosixPath' and 'int'``); ``include_path: ''`` read the spec's own
folder and ``[]`` no folder at all (then 'unknown task toy_qa; valid: ; no YAML under []'); ``runs_dir: [a]`` and
``runs_dir: true`` were the folders ``['a']`` and ``True`` beside the spec, ``runs_dir: ''`` the spec's own folder.
Each is now one line naming the key and the value; an unquoted number (``runs_dir: 2024``) is still a folder name."""

import pytest
from leaderboard_helpers import write_spec

from leaderboards.spec import load_spec
from retrieval.errors import ConfigError

INCLUDE = "include_path must be a folder of lm-eval task YAMLs or a non-empty list of them (relative to the spec's folder)"


@pytest.mark.parametrize("value, shown", [(5, "5"), ([["a"]], "[['a']]"), ([None], "[None]"), ("", "''"), ([], "[]"),
                                          ("  ", "'  '"), ({"a": 1}, "{'a': 1}"), (True, "True")])
def test_an_include_path_that_names_no_folder_is_one_line(tmp_path, value, shown):
    p = write_spec(tmp_path, extra={"include_path": value})
    with pytest.raises(ConfigError) as exc:
        load_spec(p)
    assert str(exc.value) == (f"leaderboard spec {p}: {INCLUDE}, got {shown}; leave it out for the package's tasks/")


@pytest.mark.parametrize("key", ["runs_dir", "report_dir"])
@pytest.mark.parametrize("value, shown", [(["a"], "['a']"), (True, "True"), ("", "''"), ({"a": 1}, "{'a': 1}")])
def test_a_runs_or_report_dir_that_is_not_a_folder_name_is_one_line(tmp_path, key, value, shown):
    p = write_spec(tmp_path, extra={key: value})
    with pytest.raises(ConfigError) as exc:
        load_spec(p)
    assert str(exc.value) == (f"leaderboard spec {p}: {key} must be a folder (text, relative to the spec's folder), "
                              f"got {shown}; leave it out for the default")


def test_folder_names_as_text_or_unquoted_numbers_still_load(tmp_path):
    p = write_spec(tmp_path, extra={"runs_dir": 2024, "report_dir": "out/r"})
    spec = load_spec(p)
    assert spec.runs_dir == (tmp_path / "2024").resolve()
    assert spec.report_dir == (tmp_path / "out" / "r").resolve()
    assert [x.name for x in spec.include_path] == ["tasks"]
