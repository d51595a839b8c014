"""``--output_path`` with ``--log_samples``: the samples file's path counts too (s58 rt1, read-through of p1's c05df46
and r2's 74989bd, which check the results file only).

With ``--log_samples`` lm-eval also writes ``samples_<task>_<date>.jsonl`` beside ``results_<date>.json``: a name and
a path ``len(task) + 2`` bytes longer. An ``--output_path`` whose results file fits the system's ``PATH_MAX`` but whose
samples file does not passed the pre-load check; lm-eval then ran the whole evaluation, wrote the results, logged only
"Could not save sample results" and exited 0 without the samples asked for. Now the check names the samples file when
``--log_samples`` is given (and only then: the same path without it still runs). The boundary is the system's: the
longest path the check passes is written, one byte more is not."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks.precheck import LMEVAL_DATE_ID
from tests.eval_helpers import stop_at_model_load

SUB = "smollm2-135m-instruct"
MODEL_ARGS = f"pretrained={SUB}"
TASK = "wiki_lm_bm25"
SAMPLES = f"samples_{TASK}_{LMEVAL_DATE_ID}.jsonl"
TOO_LONG = "([Errno 36] File name too long); give a shorter path"


class Reached(Exception):
    """The model load was reached: every pre-load check passed."""


def _most(folder: Path) -> int:
    return os.pathconf(folder, "PC_PATH_MAX") - 1


def _output_of(folder: Path, total: int, tail: str) -> Path:
    """An ``--output_path`` under ``folder`` of 200-byte folder names and a last name, such that ``<it>/<tail>`` has
    ``total`` bytes (every name far below 255 bytes)."""
    left = total - len(os.fsencode(str(folder))) - len(os.fsencode("/" + tail))
    parts = []
    while left > 1 + 230:
        parts.append("p" * 199)
        left -= 200
    parts.append("q" * (left - 1))
    out = folder.joinpath(*parts)
    assert len(os.fsencode(f"{out}/{tail}")) == total
    return out


def _eval(monkeypatch, output_path: Path, *extra: str) -> None:
    """``tokrag eval`` (lm-eval's CLI in process) up to the model load: raises :class:`Reached` there."""
    from tokrag_model.eval_cli import main

    def reached(*args, **kwargs):
        raise Reached(kwargs.get("model"))

    stop_at_model_load(monkeypatch, reached)
    main(["--model", "rag-standard", "--model_args", MODEL_ARGS, "--device", "cpu", "--tasks", TASK, "--limit", "1",
          "--output_path", str(output_path), *extra])


def _writes(path: str) -> bool:
    """Whether the system makes ``path``'s folders and writes it, as lm-eval's samples save does."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("", encoding="utf-8")
    except OSError as exc:
        assert exc.errno == errno.ENAMETOOLONG
        return False
    return True


def test_log_samples_counts_the_samples_file_path(tmp_path, monkeypatch):
    most = _most(tmp_path)
    longest = _output_of(tmp_path, most, f"{SUB}/{SAMPLES}")
    over = _output_of(tmp_path, most + 1, f"{SUB}/{SAMPLES}")
    assert len(os.fsencode(f"{over}/{SUB}/results_{LMEVAL_DATE_ID}.json")) == most + 1 - len(TASK) - 2  # fits
    with pytest.raises(Reached):
        _eval(monkeypatch, over)  # without --log_samples: no samples file, the path is fine
    with pytest.raises(ConfigError) as exc:
        _eval(monkeypatch, over, "--log_samples")
    assert str(exc.value) == (f"--output_path {over} ({SUB}/samples_{TASK}_<date>.jsonl, which lm-eval writes with "
                              f"--log_samples): a path of {most + 1} bytes, more than the {most} its file system "
                              f"allows {TOO_LONG}")
    assert getattr(exc.value, "_tokrag_before_load", False)  # lm_eval: one line, exit 2
    with pytest.raises(Reached):
        _eval(monkeypatch, longest, "--log_samples")
    assert _writes(f"{longest}/{SUB}/{SAMPLES}")  # the boundary is the system's
    assert not _writes(f"{over}/{SUB}/{SAMPLES}")


def test_a_json_output_path_writes_its_samples_beside_it(tmp_path, monkeypatch):
    """For ``--output_path <folder>/r.json`` lm-eval writes the samples into ``<folder>``, without the model's
    folder."""
    most = _most(tmp_path)
    folder = _output_of(tmp_path, most + 1, SAMPLES)
    out = folder / "r.json"
    with pytest.raises(Reached):
        _eval(monkeypatch, out)
    with pytest.raises(ConfigError) as exc:
        _eval(monkeypatch, out, "--log_samples")
    assert str(exc.value) == (f"--output_path {out} (samples_{TASK}_<date>.jsonl, which lm-eval writes with "
                              f"--log_samples): a path of {most + 1} bytes, more than the {most} its file system "
                              f"allows {TOO_LONG}")
    assert not _writes(f"{folder}/{SAMPLES}")
    with pytest.raises(Reached):
        _eval(monkeypatch, _output_of(tmp_path, most, SAMPLES) / "r.json", "--log_samples")
