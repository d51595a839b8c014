"""Exceptions shared by every part of tokrag.

Every error a user can cause is a :class:`TokragError`; its message names the file, line or argument
at fault and says what to do. Code that catches a library exception (Java, transformers, datasets)
re-raises one of these with ``from exc`` so that the user never sees a bare stack trace first.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import sys
from collections.abc import Iterable


class TokragError(Exception):
    """Base class of all user-facing tokrag errors."""


class DataError(TokragError, ValueError):
    """Bad input data: a malformed corpus or query file, missing fields, duplicate ids, bad UTF-8."""


class ConfigError(TokragError, ValueError):
    """A bad argument: an unknown or mistyped model argument, an invalid k, an unknown name."""


class IndexNotFoundError(TokragError, FileNotFoundError):
    """An index folder that does not exist, is incomplete, or does not match its corpus."""


class JavaSetupError(TokragError, RuntimeError):
    """Java for Pyserini cannot be set up (for instance a user's JAVA_HOME older than Java 21)."""


class OfflineError(TokragError, OSError):
    """A hub id was asked for but the hub cannot be reached; the message says how to use a local path."""


def die_by(signum: int) -> None:
    """End this process by ``signum`` with the signal's default action (after the one-line message), so that its
    parent sees a death by SIGINT/SIGTERM and not an exit status: bash stops a ``for`` loop of commands only when
    the child died of SIGINT (an exit status 130 lets the loop go on). For the commands (``tokrag ...``, ``lm_eval``,
    ``python -m ...``), never for an in-process caller (a test, a script), which gets the exit code instead. No
    interpreter shutdown runs (a Java call may still run on a helper thread). Returns only when the signal did not end
    the process (blocked): the caller exits."""
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


NO_ROOM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""A full disk, a disk quota, a file-size limit (``ulimit -f``, or a file system's largest file): :func:`no_room_line`."""


_RUST_IO_ERRNO = re.compile(r"\(os error (\d+)\)")
"""How Rust's ``std::io::Error`` ends its text (``I/O error: File too large (os error 27)``): what a library written in
Rust raises as its own exception type, not an OSError (safetensors' ``SafetensorError`` when it writes the weights of a
model conversion; tokenizers' ``Exception`` when it writes ``tokenizer.json``)."""

_CHAIN_LIMIT = 32
"""How many exceptions of a cause/context chain :func:`no_room_error` looks at (a chain may be a cycle)."""


def no_room_error(exc: BaseException) -> tuple[BaseException, int] | None:
    """The exception of ``exc``'s chain that a full disk (``ENOSPC``), a disk quota (``EDQUOT``) or a file-size limit
    (``EFBIG``) raised, with that errno, or None. The chain is ``exc``, then what it was raised ``from``
    (``__cause__``) or while handling (``__context__``, unless ``from None`` hid it), and so on (at most
    :data:`_CHAIN_LIMIT`, each once): a library that wraps the write's OSError in its own type (``datasets``'
    ``DatasetGenerationError(...) from e``, a ``RuntimeError`` raised in an ``except OSError``) is found by the
    OSError it wraps. An exception that is not an OSError counts by its text when it ends as Rust's I/O errors do,
    ``(os error 28)`` (:data:`_RUST_IO_ERRNO`: safetensors' ``SafetensorError``, which has no errno)."""
    seen: set[int] = set()
    todo = [exc]
    while todo and len(seen) < _CHAIN_LIMIT:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError):
            if e.errno in NO_ROOM_ERRNOS:
                return e, e.errno
        else:
            try:
                m = _RUST_IO_ERRNO.search(str(e))
            except Exception:  # noqa: BLE001 - a __str__ that fails: not ours to tell
                m = None
            if m is not None and int(m.group(1)) in NO_ROOM_ERRNOS:
                return e, int(m.group(1))
        todo += [c for c in (e.__cause__, None if e.__suppress_context__ else e.__context__) if c is not None]
    return None


WRITE_MARK = "tokrag_write"
"""The attribute :func:`mark_write` sets on an OSError that a tokrag write raised: the file being written."""

_WRITE_REASONS = {
    errno.EROFS: ("", "choose another {where} on a writable disk"),
    errno.EACCES: ("", "make the folder writable for this user or choose another {where}"),
    errno.EPERM: ("", "make the folder writable for this user or choose another {where}"),
    errno.EIO: ("the disk or its connection failed", "check the disk (dmesg; a network or removable disk: its "
                "connection) or choose another {where} on another disk"),
    errno.ENAMETOOLONG: ("", "choose another, shorter {where}"),
    errno.EISDIR: ("a folder is where the file is written", "move the folder away or choose another {where}"),
    errno.ENOTDIR: ("a file is where a folder of the path should be", "move the file away or choose another {where}"),
}
"""Per errno of a failed write (not the no-room ones, :data:`NO_ROOM_ERRNOS`): what it means, where the errno's own
text does not say it, and what to do; ``{where}`` is the command's output options (:func:`no_room_line`). Any other
errno: :data:`_OTHER_WRITE_REASON`."""

_OTHER_WRITE_REASON = ("", "check the folder and the disk or choose another {where}")

WHERE = "output path (lm_eval: --output_path) or TOKRAG_CACHE_DIR (tokrag's caches)"
"""The output options a write error's line names when its command gives none (:func:`no_room_line`; ``lm_eval`` with a
tokrag method): ``choose another output path (lm_eval: --output_path) or TOKRAG_CACHE_DIR (tokrag's caches) on a
writable disk``."""


def mark_write(exc: OSError, path: str | os.PathLike) -> OSError:
    """Mark ``exc`` as raised by a tokrag write of ``path`` (a file or folder being created, written, renamed or
    locked: :mod:`retrieval.io`'s atomic writes, :func:`retrieval.io.no_room_naming`'s blocks, the folder locks), so
    that the commands print it as one line whatever its errno (:func:`write_error`); an OSError raised elsewhere (a
    read, a library's own call) is not marked and keeps its message or traceback. An ``ENOENT``
    (``FileNotFoundError``) is not marked either: every tokrag write creates the folders it writes into first, so no
    disk and no path a user named refuses it that way; a folder or temporary file the write made itself is gone (a
    bug, or a removal by hand meanwhile), and its traceback shows where (s57 r7, h4, r11; one rule for every
    caller). -> ``exc`` itself (raise it)."""
    if exc.errno != errno.ENOENT:
        setattr(exc, WRITE_MARK, os.fspath(path))
    return exc


def write_error(exc: BaseException) -> tuple[BaseException, int] | None:
    """The exception of ``exc``'s chain that stopped a write, with its errno, or None: a full disk, a quota or a
    file-size limit anywhere in the chain (:func:`no_room_error`, which also follows ``__context__`` and reads Rust's
    I/O errors); else ``exc`` or an exception it was raised ``from`` (``__cause__`` only: an OSError handled and
    followed by another error is no cause of it, and the other error, maybe a bug, keeps its traceback) that is an
    OSError with an errno and either ``EROFS`` (a read-only file system: only a write meets it) or marked by a tokrag
    write (:func:`mark_write`: ``EIO``, ``EACCES``, ``EPERM``, ``ENAMETOOLONG``, ``EISDIR``, any errno)."""
    found = no_room_error(exc)
    if found is not None:
        return found
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen and len(seen) < _CHAIN_LIMIT:
        seen.add(id(e))
        if isinstance(e, OSError) and isinstance(e.errno, int) and (e.errno == errno.EROFS or hasattr(e, WRITE_MARK)):
            return e, e.errno
        e = e.__cause__
    return None


def no_room_line(exc: BaseException, where: str = WHERE) -> str | None:
    """The one line for a write that failed (:func:`write_error`), or None for any other exception (and with
    ``TOKRAG_TRACEBACK=1``: the caller re-raises). Any command can meet one while it writes a TREC run, a cell's
    journal, a report or a model conversion, and it was a traceback of 60-80 lines ending ``OSError: [Errno 28] No
    space left on device`` (or ``[Errno 30] Read-only file system``, ``[Errno 13] Permission denied``, ``[Errno 5]
    Input/output error``); the writes are atomic or journaled, so the command only needs a disk it can write and the
    same command again.

    * A full disk (``ENOSPC``), a disk quota (``EDQUOT``) or a file-size limit (``EFBIG``): ``<error> (a full disk, a
      disk quota or a file-size limit stopped a write); make room (or raise the limit: ulimit -f) and run the same
      command again (...)``.
    * Any other errno (s57 f2): the error's own text (errno, reason, the file: ``[Errno 30] Read-only file system:
      '<file>'``), what it means where that text does not say it, and what to do (:data:`_WRITE_REASONS`; ``where``:
      the command's output options, e.g. ``--output / --output-ctxs / --cache-dir (TOKRAG_CACHE_DIR)``, named as
      ``choose another <where> on a writable disk``). An ``EROFS`` that no tokrag write marked may be a library's
      write: the advice adds pointing that library elsewhere (:data:`_OTHER_WRITER`).

    The line of every command entry point (:func:`print_no_room`): ``tokrag ...`` (:mod:`tokrag_model.cli`), ``python
    -m retrieval.cli`` and ``python -m leaderboards.cli`` (which ``leaderboard run --jobs N`` starts as its helper
    runners), and ``lm_eval`` with a tokrag method (:mod:`tokrag_model._lmeval_hook`, with the default ``where``).
    (The name is from its first rule, the no-room errnos only, s53; it stays, as renaming it would edit
    :mod:`tokrag_model._lmeval_hook`, whose code keys every ``tokrag analyze`` records file.)"""
    found = write_error(exc)
    if found is None or os.environ.get("TOKRAG_TRACEBACK", "") not in ("", "0"):
        return None
    err, code = found
    if code in NO_ROOM_ERRNOS:
        text = str(err) if isinstance(err, OSError) else f"[Errno {code}] {os.strerror(code)} ({type(err).__name__}: {err})"
        return (f"{text} (a full disk, a disk quota or a file-size limit stopped a write); make room (or raise the "
                "limit: ulimit -f) and run the same command again (set TOKRAG_TRACEBACK=1 for the stack trace)")
    meaning, todo = _WRITE_REASONS.get(code, _OTHER_WRITE_REASON)
    todo = todo.format(where=where)
    if not hasattr(err, WRITE_MARK):  # EROFS from a write tokrag did not mark: maybe a library's cache (s57 r2)
        todo += _OTHER_WRITER
    return (f"{err} (a write failed{': ' + meaning if meaning else ''}); {todo} and run the same command again (set "
            "TOKRAG_TRACEBACK=1 for the stack trace)")


_OTHER_WRITER = (", or, if that file is none of tokrag's outputs (a library's cache, such as Hugging Face's: HF_HOME), "
                 "point that library to a writable folder")
"""Added to the advice for a read-only file system (``EROFS``) met by a write no tokrag write marked
(:func:`mark_write`): it may be a library's own (``datasets`` writing its cache, a lock file in the hub cache), which
no tokrag option moves."""


WRITE_OPTIONS = {
    "tokrag index": "--index / --cache-dir (TOKRAG_CACHE_DIR)",
    "tokrag retrieve": "--output / --output-ctxs / --cache-dir (TOKRAG_CACHE_DIR)",
    "tokrag eval": "--output_path / TOKRAG_CACHE_DIR",
    "tokrag analyze": "--out / TOKRAG_CACHE_DIR",
    "tokrag calibrate": "--out / --preset-out / TOKRAG_CACHE_DIR",
    "tokrag leaderboard": "--runs-dir / --out / --baseline / TOKRAG_CACHE_DIR",
}
"""The options naming what each command writes, for its failed write's line (:func:`print_no_room`); another program:
:data:`WHERE`."""


def print_no_room(exc: BaseException, program: str, where: str | None = None) -> bool:
    """Print ``<program>: error: <line>`` on stderr when ``exc`` is a failed write (:func:`no_room_line`: a full
    disk, a quota or a file-size limit anywhere; a read-only file system; any errno of a tokrag write, e.g. ``EIO``,
    ``EACCES``, ``ENAMETOOLONG``, ``EISDIR``) and return True (the command then exits 2); False (nothing printed, the
    caller re-raises) for any other exception or with ``TOKRAG_TRACEBACK=1``. ``where``: the command's output options,
    named in the line's advice (default: ``program``'s in :data:`WRITE_OPTIONS`, else :data:`WHERE`). The ``except``
    of every command entry point (``tokrag ...``, ``python -m retrieval.cli``, ``python -m leaderboards.cli``). (The
    name is from its first rule, the no-room errnos only.)"""
    line = no_room_line(exc, WRITE_OPTIONS.get(program, WHERE) if where is None else where)
    if line is None:
        return False
    print(f"{program}: error: {line}", file=sys.stderr)
    return True


def command_status(rc: int) -> int:
    """The exit status of a command (a console script, ``python -m ...``) whose in-process ``main`` returned ``rc``:
    130 (Ctrl-C, its one line printed) ends the process by SIGINT instead (:func:`die_by`), so that a shell loop or
    script stops too; any other ``rc`` (and 130 when SIGINT is blocked) is returned."""
    if rc == 130:
        die_by(signal.SIGINT)
    return rc


def closest(name: str, choices: Iterable[str], n: int = 4, cutoff: float = 0.6, spread: float = 0.1) -> list[str]:
    """The valid names closest to a mistyped ``name``, best first (``difflib`` similarity ratio).

    Keeps at most ``n`` names whose ratio is at least ``cutoff`` and within ``spread`` of the best
    one, so ``nq_oracle_bm25_noise30`` gives the four noise levels 20/40/60/80 and nothing further away.
    """
    import difflib

    pool = sorted({str(c) for c in choices})
    scored = sorted(((difflib.SequenceMatcher(None, str(name), c).ratio(), c) for c in pool), key=lambda x: (-x[0], x[1]))
    scored = [(r, c) for r, c in scored if r >= cutoff]
    if not scored:
        return []
    best = scored[0][0]
    return [c for r, c in scored if r >= best - spread][:n]


def unknown_name(what: str, name: str, choices: Iterable[str], *, hint: str = "", list_all: int = 12) -> str:
    """One-line message for an unknown name: ``unknown <what> 'x' (did you mean 'y'?)``, then the valid
    names when there are at most ``list_all`` of them, then ``hint`` (what else may be given).

    The suggestion ignores case (the name is still refused: lm-eval's registries are case-sensitive): a name that
    differs from valid ones only in case (``RAG-CAD``) gets them, with "names are case-sensitive"; otherwise the
    :func:`closest` names by their case-folded spelling (``NQ_ORACLE_BM25_NOISE30`` gets the noise levels)."""
    pool = sorted({str(c) for c in choices})
    folded: dict[str, list[str]] = {}
    for c in pool:
        folded.setdefault(c.casefold(), []).append(c)
    same = folded.get(str(name).casefold(), [])
    if same:
        names = " or ".join(repr(c) for c in same)
        msg = f"unknown {what} {name!r} (did you mean {names}? names are case-sensitive)"
        if len(pool) <= list_all:
            msg += f"; valid: {', '.join(pool)}"
        return msg + (f"; {hint}" if hint else "")
    near = [c for f in closest(str(name).casefold(), folded) for c in folded[f]][:4]
    msg = f"unknown {what} {name!r}"
    if len(near) == 1:
        msg += f" (did you mean {near[0]!r}?)"
    elif near:
        msg += f" (closest: {', '.join(near)})"
    if len(pool) <= list_all:
        msg += f"; valid: {', '.join(pool)}"
    return msg + (f"; {hint}" if hint else "")


def check_k(k: object, other: str = "", *, java: bool = False) -> int:
    """A cut-off or depth ``k`` (passages per query) as an ``int``: an integer >= 1, numpy's included; a bool is
    none (``True`` is an ``int`` and read as the top passage only). ``other``: what else may be given, for the
    message. ``java``: a hit count Lucene/Pyserini take, at most :data:`JAVA_INT_MAX` (:func:`check_java_int`).

    Raises:
        ConfigError: ``k={k!r}: k must be an integer >= 1{other}``, or above the Java int limit.
    """
    import numbers

    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ConfigError(f"k={k!r}: k must be an integer >= 1{other}")
    if java:
        check_java_int(k, f"k={int(k)!r}")
    return int(k)


JAVA_INT_MAX = 2**31 - 1  # Lucene's and Pyserini's hit counts, fusion depths and search threads are Java ints


def check_java_int(value: int, label: str) -> None:
    """Refuse a count that Lucene/Pyserini take as a Java ``int`` (hits k, fusion depth, search threads) above
    ``2**31 - 1``, which pyjnius cannot pass (a raw "No methods called batch_search ... matching" error). ``label``
    names the value (``k=...`` in Python, ``--hits ...`` in the CLI). Lucene caps a larger hit count at the
    index size anyway, so ``2**31 - 1`` asks for every passage.

    Raises:
        ConfigError: ``{label}: must be at most 2147483647 (Lucene and Pyserini take it as a Java int)``.
    """
    if value > JAVA_INT_MAX:
        raise ConfigError(f"{label}: must be at most {JAVA_INT_MAX} (Lucene and Pyserini take it as a Java int)")
