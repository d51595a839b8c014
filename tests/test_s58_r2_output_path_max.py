"""``--output_path`` whose results file would have a path longer than the system allows (``PATH_MAX``, 4096 bytes on
Linux with the closing NUL) is refused before the model load (s58 r2, review of p1's c05df46, which checks each name
against 255 bytes only).

A real ``lm_eval --model rag-standard ... --output_path <a 4047-byte path of 200-byte names>`` loaded SmolLM2, ran the
task, made the folders, then failed at the results file (``<path>/smollm2-135m-instruct/results_<date>.json``, 4109
bytes): ``[Errno 36] File name too long``, exit 2, after all the work. The boundary is the system's: each test writes
the longest results path the check passes, and fails to write one byte more. The path counts as given (a relative one
as it is): the system measures the text lm-eval hands it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks.precheck import LMEVAL_DATE_ID, check_run_arguments

SUB = "smollm2-135m-instruct"
MODEL_ARGS = f"pretrained={SUB}"
RESULTS = f"results_{LMEVAL_DATE_ID}.json"
TOO_LONG = "([Errno 36] File name too long); give a shorter path"


def _most(folder: Path) -> int:
    return os.pathconf(folder, "PC_PATH_MAX") - 1


def _output_of(folder: Path, total: int, tail: str) -> Path:
    """An ``--output_path`` under ``folder`` of 200-byte folder names and a last name, such that
    ``<it>/<tail>`` has ``total`` bytes (every name far below 255 bytes)."""
    left = total - len(os.fsencode(str(folder))) - len(os.fsencode("/" + tail))
    parts = []
    while left > 1 + 230:
        parts.append("p" * 199)
        left -= 200
    parts.append("q" * (left - 1))
    out = folder.joinpath(*parts)
    assert len(os.fsencode(f"{out}/{tail}")) == total
    return out


def _check(output_path: Path) -> None:
    check_run_arguments(None, [], model="rag-standard", output_path=str(output_path), model_args=MODEL_ARGS)


def _refused(output_path: Path) -> str:
    with pytest.raises(ConfigError) as exc:
        _check(output_path)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def _writes(path: str) -> bool:
    """Whether the system makes ``path``'s folders and writes it, as lm-eval's results save does."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("{}", encoding="utf-8")
    except OSError as exc:
        assert exc.errno == errno.ENAMETOOLONG
        return False
    return True


def test_a_results_path_over_path_max_is_refused(tmp_path):
    most = _most(tmp_path)
    longest = _output_of(tmp_path, most, f"{SUB}/{RESULTS}")
    over = _output_of(tmp_path, most + 1, f"{SUB}/{RESULTS}")
    _check(longest)
    assert _refused(over) == (f"--output_path {over} ({SUB}/results_<date>.json, which lm-eval writes): a path of "
                              f"{most + 1} bytes, more than the {most} its file system allows {TOO_LONG}")
    assert list(tmp_path.iterdir()) == []  # checked, nothing made
    assert _writes(f"{longest}/{SUB}/{RESULTS}")  # the boundary is the system's
    assert not _writes(f"{over}/{SUB}/{RESULTS}")


def test_a_json_path_counts_its_results_file(tmp_path):
    """``<stem>_<date>.json`` beside a ``.json`` path: 27 bytes more than the path itself."""
    most = _most(tmp_path)
    folder = _output_of(tmp_path, most, "r" * 100 + f"_{LMEVAL_DATE_ID}.json")
    out = folder / ("r" * 100 + ".json")
    assert len(os.fsencode(str(out))) == most - 27
    _check(out)
    out = folder / ("r" * 101 + ".json")
    assert _refused(out) == (f"--output_path {out} ({'r' * 101}_<date>.json, which lm-eval writes): a path of "
                             f"{most + 1} bytes, more than the {most} its file system allows {TOO_LONG}")


def test_a_relative_path_counts_as_given(tmp_path, monkeypatch):
    """The system measures the text it is handed: from the working folder, a relative path has room for more."""
    most = _most(tmp_path)
    monkeypatch.chdir(tmp_path)
    over = _output_of(tmp_path, most + 1, f"{SUB}/{RESULTS}").relative_to(tmp_path)
    _check(over)  # relative: far below
    assert _writes(f"{over}/{SUB}/{RESULTS}")
    nested = _output_of(Path("rel"), most + 1, f"{SUB}/{RESULTS}")
    assert _refused(nested).endswith(f"a path of {most + 1} bytes, more than the {most} its file system allows "
                                     f"{TOO_LONG}")
