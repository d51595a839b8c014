"""An offline alias's conversion whose write fails is the one line of a failed write, not a traceback (s57 r2).

f2 (b908462) made a failed write of any errno one line for every command; it left the model conversion's writes
unmarked (``tokrag_model.loading``: the models folder's ``mkdir``, ``save_pretrained`` into the scratch folder, the
rename of the scratch folder into place), so an EIO, EACCES or a refused rename there ended ``lm_eval``, ``tokrag
eval``, ``tokrag analyze`` or a leaderboard cell in a traceback, exit 1, after the model's GGUF was read. Now
``resolve_alias`` marks an OSError naming the models folder or a path in it; one naming no file (it may be a read
of the installed GGUF) or another file (the package's GGUF) is left as it was, as the guard test checks.

The conversion is the real ``_convert_gguf`` with transformers' loaders replaced by small fakes (no GGUF is read, no
model built); the failures are a real kernel error (a rename over a folder that is not empty) or monkeypatched ones
raising the errno as the kernel does (naming the file). Nothing outside the test's folder is written: the converted
folder goes to ``models_dir``.
"""

from __future__ import annotations

import errno
import os
import pathlib
from types import SimpleNamespace

import pytest

from retrieval.errors import print_no_room
from tokrag_model import loading

ALIAS = "smollm2-135m-instruct"
TAIL = "and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)"
WHERE = "--out / TOKRAG_CACHE_DIR"


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("TOKRAG_TRACEBACK", raising=False)
    try:
        loading._alias_folder(ALIAS)
    except Exception as exc:  # noqa: BLE001 - the alias package is not installed here
        pytest.skip(f"{ALIAS} not installed: {exc}")


class _Saved:
    """A model or tokenizer whose ``save_pretrained`` writes one small file, or raises ``fail(folder)``."""

    def __init__(self, name: str, fail=None) -> None:
        self.name, self.fail = name, fail
        self.config = SimpleNamespace()

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state, strict=True):
        return [], []

    def save_pretrained(self, folder) -> None:
        if self.fail is not None:
            raise self.fail(pathlib.Path(folder))
        (pathlib.Path(folder) / self.name).write_text("{}", encoding="utf-8")


def _fake_transformers(monkeypatch, *, save_fail=None, read_fail=None) -> None:
    import transformers

    def model_from_pretrained(*args, **kwargs):
        if read_fail is not None:
            raise read_fail
        return _Saved("model.safetensors")

    monkeypatch.setattr(transformers, "AutoModelForCausalLM", SimpleNamespace(
        from_pretrained=model_from_pretrained, from_config=lambda cfg, **kw: _Saved("model.safetensors", save_fail)))
    monkeypatch.setattr(transformers, "AutoTokenizer", SimpleNamespace(
        from_pretrained=lambda *a, **k: _Saved("tokenizer.json")))


def _line(exc) -> str | None:
    import io
    from contextlib import redirect_stderr

    buf = io.StringIO()
    with redirect_stderr(buf):
        printed = print_no_room(exc, "tokrag analyze")
    return buf.getvalue() if printed else None


def test_the_fakes_convert(tmp_path, monkeypatch):
    """The fakes let the real conversion run to its end: the converted folder, its record, no scratch folder."""
    _fake_transformers(monkeypatch)
    got = loading.resolve_alias(ALIAS, tmp_path / "models")
    assert sorted(p.name for p in got.path.iterdir()) == ["model.safetensors", "tokenizer.json", "tokrag_source.json"]
    assert [p.name for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")] == [got.path.name]


def test_a_rename_over_a_folder_left_there_is_one_line(tmp_path, monkeypatch):
    """A converted folder without ``config.json`` but not empty (a copy cut short, files removed by hand): the rename
    of the scratch folder over it is refused by the kernel (ENOTEMPTY). Was: the OSError's traceback."""
    from tokrag_model.cli import main
    import tasks.analyze

    _fake_transformers(monkeypatch)
    _, out = loading._alias_folder(ALIAS, tmp_path / "models")
    out.mkdir(parents=True)
    (out / "tokenizer.json").write_text("{}", encoding="utf-8")
    monkeypatch.setattr(tasks.analyze, "main", lambda argv: loading.resolve_alias(ALIAS, tmp_path / "models") and 0)
    with pytest.raises(OSError) as caught:
        loading.resolve_alias(ALIAS, tmp_path / "models")
    assert caught.value.errno in (errno.ENOTEMPTY, errno.EEXIST) and caught.value.filename2 == str(out)
    line = _line(caught.value)
    assert line is not None and line.startswith(f"tokrag analyze: error: [Errno {caught.value.errno}] ")
    assert line.endswith(f" -> '{out}' (a write failed); check the folder and the disk or choose another {WHERE} "
                         f"{TAIL}\n")
    assert sorted(p.name for p in out.parent.iterdir() if not p.name.endswith(".lock")) == [out.name]  # no scratch
    assert main(["analyze"]) == 2  # the command: exit 2, the one line (printed as above)


def test_a_failed_save_into_the_scratch_folder_is_one_line(tmp_path, monkeypatch, capsys):
    """``save_pretrained`` meets EIO writing its file (named, as an ``open`` of it reports). Was: a traceback."""
    from tokrag_model.cli import main
    import tasks.analyze

    seen = []

    def eio(folder):
        seen.append(folder / "model.safetensors")
        return OSError(errno.EIO, os.strerror(errno.EIO), str(folder / "model.safetensors"))

    _fake_transformers(monkeypatch, save_fail=eio)
    monkeypatch.setattr(tasks.analyze, "main", lambda argv: loading.resolve_alias(ALIAS, tmp_path / "models") and 0)
    capsys.readouterr()
    assert main(["analyze"]) == 2
    assert capsys.readouterr().err == (
        f"tokrag analyze: error: [Errno 5] Input/output error: '{seen[0]}' (a write failed: the disk or its connection "
        "failed); check the disk (dmesg; a network or removable disk: its connection) or choose another "
        f"{WHERE} on another disk {TAIL}\n")
    assert [p.name for p in (tmp_path / "models").iterdir() if not p.name.endswith(".lock")] == []  # scratch removed


def test_the_models_folders_creation_is_one_line(tmp_path, monkeypatch):
    root = tmp_path / "models"
    real = pathlib.Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self == root:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
    with pytest.raises(PermissionError) as caught:
        loading.resolve_alias(ALIAS, root)
    assert _line(caught.value) == (
        f"tokrag analyze: error: [Errno 13] Permission denied: '{root}' (a write failed); make the folder writable for "
        f"this user or choose another {WHERE} {TAIL}\n")


@pytest.mark.parametrize("read_fail", [
    PermissionError(errno.EACCES, os.strerror(errno.EACCES), "/pkg/model.gguf"),  # the installed GGUF, not writable
    OSError(errno.EIO, os.strerror(errno.EIO)),  # no file named: maybe the GGUF's read
], ids=["another-file", "no-file"])
def test_the_conversions_reads_keep_their_traceback(tmp_path, monkeypatch, read_fail):
    _fake_transformers(monkeypatch, read_fail=read_fail)
    with pytest.raises(OSError) as caught:
        loading.resolve_alias(ALIAS, tmp_path / "models")
    assert caught.value is read_fail and not hasattr(read_fail, "tokrag_write")
    assert _line(caught.value) is None
