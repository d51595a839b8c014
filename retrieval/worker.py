"""A child process that runs the Java (Lucene/Pyserini) part of :func:`retrieval.retrieve`.

Why: Pyserini reaches Lucene through pyjnius, which starts a HotSpot JVM *inside* the calling Python
process. The JVM then owns that process's SIGSEGV/SIGBUS/SIGFPE handlers (it uses them internally),
registers the Python main thread as its ``main`` JavaThread, reserves ``-Xmx`` of address space for its
heap and runs GC and compiler threads. A process that also runs torch (an lm-eval run that retrieves,
then decodes with the model) thereby mixes two native runtimes; a JVM crash log with a fault inside
``libtorch_python.so`` on the main thread was observed in this project (see ``retrieval/README.md``,
"Java in a separate process"). So, unless the JVM already runs in the calling process, ``retrieve``
hands a cache miss to this worker (``python -c`` running :func:`main`) and the JVM never starts in the caller.

Protocol: the parent writes pickled requests ``(function name, args, kwargs, environment)`` to the
worker's stdin and reads pickled replies ``("ok", value)`` or ``("err", exception, traceback text)``
from a copy of its original stdout. The worker points its file descriptor 1 at stderr before anything
else runs, so Java's ``System.out`` and stray prints cannot corrupt the reply stream. One worker per
parent process, started on first need, reused (its JVM stays warm), stopped at exit or when its stdin
closes. A worker that dies is reported as :class:`~retrieval.errors.TokragError` and replaced on the
next call.

Environment: ``TOKRAG_JVM_IN_PROCESS=1`` makes ``retrieve`` run Java in the calling process (the
worker sets it for itself; users may set it to debug or profile).
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from .errors import TokragError

logger = logging.getLogger(__name__)

IN_PROCESS_ENV = "TOKRAG_JVM_IN_PROCESS"
LOG_LEVEL_ENV = "TOKRAG_WORKER_LOG_LEVEL"  # the parent's level for `retrieval` (INFO under lm_eval: index builds show)


def java_in_process() -> bool:
    """True when Java work should run in this process: ``TOKRAG_JVM_IN_PROCESS=1``, or the JVM is already running here."""
    if os.environ.get(IN_PROCESS_ENV, "").strip().lower() in ("1", "true", "yes"):
        return True
    jc = sys.modules.get("jnius_config")
    return bool(jc is not None and getattr(jc, "vm_running", False))


class JavaWorker:
    """Handle on one worker process (see the module docstring). Thread-safe: one request at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env[IN_PROCESS_ENV] = "1"
        env[LOG_LEVEL_ENV] = str(min(logging.WARNING, logging.getLogger("retrieval").getEffectiveLevel()))
        # this very `retrieval` package, first on sys.path (not a `retrieval/` folder in the working directory)
        root = str(Path(__file__).resolve().parent.parent)
        # SIGINT ignored from the first line (main() says why): a Ctrl-C during its imports printed a traceback too
        boot = (f"import signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); sys.path.insert(0, {root!r}); "
                "from retrieval.worker import main; main()")
        proc = subprocess.Popen([sys.executable, "-c", boot], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        logger.debug("started the retrieval Java worker, pid %d", proc.pid)
        return proc

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def call(self, function: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``function`` (a name in :data:`FUNCTIONS`) in the worker and return its value.

        Raises:
            The exception the function raised in the worker, same type and message (its traceback text
            is added as a note when it is not a TokragError). TokragError: the worker died.
        """
        env = {k: v for k, v in os.environ.items() if k != IN_PROCESS_ENV}
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            proc = self._proc
            try:
                pickle.dump((function, args, kwargs, env), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                proc.stdin.flush()
                reply = pickle.load(proc.stdout)
            except (EOFError, OSError, pickle.UnpicklingError) as exc:
                self._proc = None
                try:
                    code = proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    code = proc.wait()
                raise TokragError(
                    f"the retrieval worker process (pid {proc.pid}, running Lucene/Java for retrieve) died with exit "
                    f"status {code} during {function}; its messages are above on stderr (a JVM crash leaves an "
                    f"hs_err_pid{proc.pid}.log file). Retry, or set {IN_PROCESS_ENV}=1 to run Java in this process"
                ) from exc
            except BaseException:  # e.g. KeyboardInterrupt mid-request: the reply stream is out of step
                self._proc = None
                proc.kill()  # the worker ignores SIGINT: it never outlives an interrupted caller
                proc.wait()
                raise
        if reply[0] == "ok":
            return reply[1]
        _, exc, tb = reply
        if not isinstance(exc, TokragError):
            exc.add_note(f"raised in the retrieval worker process:\n{tb}")
        raise exc

    def close(self) -> None:
        """Stop the worker (closing its stdin ends it)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - best effort at exit
            proc.kill()


_WORKER: JavaWorker | None = None  # one per process


def java_worker() -> JavaWorker:
    """The process's worker handle (created on first use; the process itself starts on the first call)."""
    global _WORKER
    if _WORKER is None:
        _WORKER = JavaWorker()
        atexit.register(_WORKER.close)
    return _WORKER


# ----------------------------------------------------------------------------------------------- child side
def _retrieve(*args: Any, **kwargs: Any):
    from .api import retrieve

    return retrieve(*args, **kwargs)


def _score_passages(*args: Any, **kwargs: Any):
    from .api import score_passages

    return score_passages(*args, **kwargs)


def _prebuilt_plan(corpus: str, retriever: str, params: dict | None = None) -> dict[str, Any]:
    from .prebuilt import download_plan

    return download_plan(corpus, retriever, params)


def _pyserini_topics(name: str) -> dict[str, dict[str, Any]]:
    from .prebuilt import pyserini_topics

    return pyserini_topics(name)


def _jvm_status() -> dict[str, Any]:
    """For tests: is the JVM running in the worker, and is torch loaded there."""
    import jnius_config

    return {"vm_running": bool(jnius_config.vm_running), "torch": "torch" in sys.modules, "pid": os.getpid()}


FUNCTIONS = {"retrieve": _retrieve, "score_passages": _score_passages, "jvm_status": _jvm_status,
             "prebuilt_plan": _prebuilt_plan, "pyserini_topics": _pyserini_topics}


def call_java(function: str, *args: Any, **kwargs: Any) -> Any:
    """Run ``FUNCTIONS[function]`` here when Java may run in this process (:func:`java_in_process`), else in
    the worker; same value and errors either way."""
    if java_in_process():
        return FUNCTIONS[function](*args, **kwargs)
    return java_worker().call(function, *args, **kwargs)


def main() -> None:
    """Serve requests from stdin until it closes (see the module docstring). SIGINT is ignored: a terminal's Ctrl-C
    reaches the whole process group, and the parent, interrupted, kills this worker (:meth:`JavaWorker.call`); before,
    an idle worker printed a ``KeyboardInterrupt`` traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # everything printed (Python or Java) goes to stderr, never into the reply stream
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    level = os.environ.get(LOG_LEVEL_ENV, "")
    logging.basicConfig(level=int(level) if level.isdigit() else logging.WARNING,
                        format="%(levelname)s [retrieval worker] %(name)s: %(message)s")
    while True:
        try:
            function, args, kwargs, env = pickle.load(requests)
        except EOFError:
            return
        os.environ.clear()
        os.environ.update(env)
        os.environ[IN_PROCESS_ENV] = "1"
        try:
            reply: tuple = ("ok", FUNCTIONS[function](*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - every error goes back to the parent
            reply = ("err", exc, traceback.format_exc())
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an exception that does not pickle: send its type name and text
            err = reply[1] if reply[0] == "err" else None
            text = f"{type(err).__module__}.{type(err).__qualname__}: {err}" if err is not None else "unpicklable result"
            data = pickle.dumps(("err", TokragError(f"retrieval worker: {text}"), reply[-1] if err is not None else ""))
        replies.write(data)
        replies.flush()


if __name__ == "__main__":
    main()
