"""Which tokrag produced a result: its installed version and the git commit of its source tree.

Recorded by the models in the results JSON's ``config.tokrag_versions`` (``tokrag``, ``tokrag_commit``, and
``tokrag_changes``: a fingerprint of a modified checkout's changes; beside the library versions,
:attr:`tokrag_model.base.RAGMethodLM._library_versions`) and by the
tasks in ``configs.<task>.metadata.tokrag_data.tokrag`` (:mod:`tasks.provenance`), so a plain ``lm_eval`` run
says which code produced it, as a leaderboard's ``provenance.json`` does. lm-eval's own top-level ``git_hash`` is
the commit of the *working directory*, which is usually not tokrag's. :func:`compute_environment` records the
threads and hardware that computed a result (``config.tokrag_machine``). Cheap to import (no torch, no lm-eval:
:func:`compute_environment` imports torch when called).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

SOURCE_ROOT: Path = Path(__file__).resolve().parents[1]
"""The folder that holds the ``tokrag_model``, ``tasks`` and ``leaderboards`` packages (a checkout's root)."""


def tokrag_version() -> str | None:
    """The installed distribution's version (``importlib.metadata``), or None when tokrag is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tokrag")
    except PackageNotFoundError:
        return None


_IMPORTED_TREE: dict[str, tuple[str, str | None]] = {}
"""Per source root (:data:`SOURCE_ROOT`): its git commit (:func:`git_commit`'s form) and changes fingerprint
(:func:`git_changes_fingerprint`) as first read in this process (:func:`imported_tree`), never read again."""


def imported_tree() -> tuple[str, str | None]:
    """``(commit, changes)`` of the tokrag source tree this process imported: :data:`SOURCE_ROOT`'s git commit
    (``<40 hex>``, ``+dirty`` when tracked files differ, ``unknown`` when git cannot tell) and the fingerprint of its
    changes (None for a clean checkout), read from git once per process, at the first call, and kept: every record
    of a process (the results' ``tokrag_versions`` and ``tokrag_data.tokrag``, a leaderboard cell's
    ``provenance.json``) names the same tree, also when the checkout moves (a pull, a commit, an edit) while it
    runs. Called early: when lm-eval's model registry is imported (the start-up hook) and when
    :mod:`tokrag_model.base` is. ``$TOKRAG_GIT_COMMIT`` is not read here (:func:`git_commit` applies it). Raises
    nothing."""
    root = str(SOURCE_ROOT)
    if root not in _IMPORTED_TREE:
        _IMPORTED_TREE[root] = (_git_head(SOURCE_ROOT), _git_changes(SOURCE_ROOT))
    return _IMPORTED_TREE[root]


def _is_source_root(repo: Path | None) -> bool:
    if repo is None:
        return True
    try:
        return Path(repo).resolve() == Path(SOURCE_ROOT).resolve()
    except OSError:
        return False


def git_commit(repo: Path | None = None) -> str:
    """``git rev-parse HEAD`` of the repository ``repo`` (default :data:`SOURCE_ROOT`), with ``+dirty`` when tracked
    files differ, or ``unknown`` (no git, not a checkout, git timed out after 10 s). For :data:`SOURCE_ROOT` the
    commit this process imported (:func:`imported_tree`: read once), so a run's records agree; another ``repo`` is
    read now.

    ``$TOKRAG_GIT_COMMIT`` overrides it (for CI systems that check out without ``.git``, and for tests that compare
    provenance across runs while the repository moves). What a leaderboard cell's ``provenance.json`` records
    (re-exported as ``leaderboards.runner.git_commit``)."""
    if os.environ.get("TOKRAG_GIT_COMMIT"):
        return os.environ["TOKRAG_GIT_COMMIT"]
    if _is_source_root(repo):
        return imported_tree()[0]
    return _git_head(Path(repo))


def _git_head(repo: Path) -> str:
    """:func:`git_commit` of ``repo`` read from git now (no override)."""
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def tokrag_commit() -> str | None:
    """The git commit of the tokrag source tree (``<40 hex>``, ``+dirty`` when tracked files differ), or None
    when the tree is not a git checkout (an installed wheel) or git cannot tell.

    :func:`git_commit` of :data:`SOURCE_ROOT` (the tree this process imported, :func:`imported_tree`), the string a
    leaderboard's ``provenance.json`` records; ``$TOKRAG_GIT_COMMIT`` overrides it as there. Only a tree with its own
    ``.git`` is asked: a wheel installed in a virtual environment that lives inside some other checkout is not given
    that checkout's commit.
    """
    if not os.environ.get("TOKRAG_GIT_COMMIT") and not (SOURCE_ROOT / ".git").exists():
        return None
    commit = git_commit(SOURCE_ROOT)
    return None if commit in ("", "unknown") else commit


CHANGE_DIRS: tuple[str, ...] = ("tokrag_model", "tasks", "retrieval", "leaderboards")
"""The package folders whose *untracked* files :func:`git_changes_fingerprint` hashes (tracked files: all of them)."""


_PINNED_GIT_CONFIG: tuple[str, ...] = (
    "-c", "diff.relative=false", "-c", "diff.renames=false", "-c", "diff.autoRefreshIndex=true",
    "-c", "diff.ignoreSubmodules=none", "-c", "core.fsmonitor=false",
)
"""``git -c`` options (they override the user's and repository's configuration, ``$GIT_CONFIG_*`` included) that
could change which paths :func:`git_changes_fingerprint` is given."""


def git_changes_fingerprint(repo: Path | None = None) -> str | None:
    """Fingerprint (16 hex, SHA-256 prefix) of how the working tree of ``repo`` (default :data:`SOURCE_ROOT`) differs
    from its HEAD commit: the path and the SHA-256 of the working-tree bytes of each tracked file that differs from
    HEAD (``git diff HEAD --name-only``; ``deleted`` for a removed file, the link text of a symlink), plus the path
    and SHA-256 of each untracked, not ignored file under :data:`CHANGE_DIRS`. The files' contents are hashed, not
    git's patch text, so the user's git configuration (``diff.context``, ``diff.algorithm``,
    ``diff.indentHeuristic``, ``core.autocrlf``, an external diff or text conversion, ...) does not change it; the
    options that could change the list of paths are pinned (:data:`_PINNED_GIT_CONFIG`). The ignore rules of
    ``.gitignore`` and ``core.excludesFile`` decide which untracked files count. None when there are no such
    changes, when ``$TOKRAG_GIT_COMMIT`` is set (the commit is then not asked of git either), or when git cannot tell
    (no git, not a checkout, a command failed or took over 10 s). Raises nothing.

    ``tokrag_commit`` only says ``<HEAD>+dirty``: two different edits of ``methods/cad.py`` recorded the same
    string. This value tells them apart (the same edit of the same commit gives the same value on any machine,
    whatever its git configuration). For :data:`SOURCE_ROOT`, the changes this process imported
    (:func:`imported_tree`: read once); another ``repo`` is read now."""
    if os.environ.get("TOKRAG_GIT_COMMIT"):
        return None
    if _is_source_root(repo):
        return imported_tree()[1]
    return _git_changes(Path(repo))


def _git_changes(repo: Path) -> str | None:
    """:func:`git_changes_fingerprint` of ``repo`` read from git now (no override). Raises nothing."""
    git = ["git", *_PINNED_GIT_CONFIG, "-C", str(repo)]
    try:
        changed = subprocess.run([*git, "diff", "HEAD", "--name-only", "-z", "--no-renames", "--no-ext-diff",
                                  "--no-textconv", "--ignore-submodules=none", "--"],
                                 capture_output=True, timeout=10, check=True).stdout
        untracked = subprocess.run([*git, "ls-files", "-z", "--others", "--exclude-standard", "--", *CHANGE_DIRS],
                                   capture_output=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None

    def names(out: bytes) -> list[str]:
        return sorted(name for name in out.decode("utf-8", "surrogateescape").split("\0") if name)

    tracked, files = names(changed), names(untracked)
    if not tracked and not files:
        return None
    h = hashlib.sha256()
    for kind, group in (("tracked", tracked), ("untracked", files)):
        for name in group:
            h.update(f"\0{kind}\0{name}\0{_content_digest(Path(repo) / name)}".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:16]


def _content_digest(path: Path) -> str:
    """SHA-256 of a working-tree file's bytes as they are on disk; ``link:<SHA-256 of its target text>`` for a
    symlink (git stores the link, not what it points at), ``deleted``, ``not-a-file`` or ``unreadable``."""
    try:
        if path.is_symlink():
            return "link:" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
        if not path.exists():
            return "deleted"
        if not path.is_file():
            return "not-a-file"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def tokrag_changes() -> str | None:
    """:func:`git_changes_fingerprint` of the tokrag source tree as this process imported it (:func:`imported_tree`;
    recorded beside :func:`tokrag_commit` as ``tokrag_versions.tokrag_changes``), None for a clean checkout, outside a
    git checkout, or when ``$TOKRAG_GIT_COMMIT`` is set."""
    if not (SOURCE_ROOT / ".git").exists():
        return None
    return git_changes_fingerprint(SOURCE_ROOT)


def tokrag_tree(now: bool = False) -> dict[str, str | None]:
    """``{"tokrag_commit": tokrag_commit(), "tokrag_changes": tokrag_changes()}``: the tokrag source tree this process
    imported (read from git once per process, :func:`imported_tree`), what a record names as the code that computed it
    (a retrieval run's ``meta.json``, a benchmark's ``provenance``). With ``now``, the tree as it is on disk now, read
    from git again: what a long run compares with the imported one to tell that the checkout moved under it
    (``benchmarks._cli.provenance``). The same None rules and ``$TOKRAG_GIT_COMMIT`` override as those two functions.
    Raises nothing."""
    if not now:
        return {"tokrag_commit": tokrag_commit(), "tokrag_changes": tokrag_changes()}
    if os.environ.get("TOKRAG_GIT_COMMIT"):
        return {"tokrag_commit": tokrag_commit(), "tokrag_changes": None}
    if not (SOURCE_ROOT / ".git").exists():
        return {"tokrag_commit": None, "tokrag_changes": None}
    commit = _git_head(SOURCE_ROOT)
    return {"tokrag_commit": None if commit in ("", "unknown") else commit, "tokrag_changes": _git_changes(SOURCE_ROOT)}


def tokrag_source() -> dict[str, str | None]:
    """``{"version": tokrag_version(), "commit": tokrag_commit()}``."""
    return {"version": tokrag_version(), "commit": tokrag_commit()}


THREAD_ENV_VARS: tuple[str, ...] = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Environment variables that set torch's CPU thread count; :func:`compute_environment` records them as given."""


def cpu_model_name() -> str | None:
    """The CPU's model name: the first ``model name`` line of ``/proc/cpuinfo`` (Linux x86), else
    ``platform.processor()``; None when neither says (an empty string counts as not saying). Raises nothing."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                name, sep, value = line.partition(":")
                if sep and name.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor().strip() or None


def cpu_kernels() -> dict[str, Any]:
    """``{"arch": platform.machine(), "cpu_capability": torch.backends.cpu.get_cpu_capability()}`` (``AVX2``,
    ``AVX512``, ``DEFAULT``, ...; None where torch cannot tell): the part of :func:`compute_environment` that says which
    CPU kernels computed a number, without its CPU-model probe (``/proc/cpuinfo``) and thread counts; a leaderboard
    journal header's ``machine`` (:func:`leaderboards.runner._machine`). Raises nothing."""
    import platform

    import torch

    cap = None
    try:
        cap = torch.backends.cpu.get_cpu_capability()
    except Exception:  # noqa: BLE001 (older torch, or a build without the query)
        pass
    return {"arch": platform.machine(), "cpu_capability": cap}


def compute_environment(device: Any = None) -> dict[str, Any]:
    """What computed a result, beyond the library versions: on CPU a forward pass's bits depend on the thread
    count (even a batch-1 product differs at 1 vs 2 threads) and on the CPU's kernels (MKL's differ between an AVX2
    and an AVX-512/AMX machine), so two results whose greedy answers differ can be told apart by these. Recorded in
    the results JSON's ``config.tokrag_machine`` (taken at model load, :class:`tokrag_model.base.RAGMethodLM`) and in
    a leaderboard cell's ``provenance.json`` (``machine``). Not part of any run key (hardware is not keyed).

    Keys: ``torch_num_threads`` / ``torch_num_interop_threads`` (``torch.get_num_threads()`` /
    ``get_num_interop_threads()`` now), ``env`` (``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` as given, strings, None
    when unset), ``arch`` (``platform.machine()``), ``cpu_capability`` (``torch.backends.cpu.get_cpu_capability()``:
    ``AVX2``, ``AVX512``, ``DEFAULT``, ...; None where torch cannot tell), ``cpu_model`` (:func:`cpu_model_name`) and
    ``cuda_device`` (``torch.cuda.get_device_name`` of ``device`` when it is a CUDA device, else None). Imports torch
    (lazily: this module stays cheap to import). Raises nothing."""
    import torch

    cuda = None
    if str(device or "").startswith("cuda"):
        try:
            cuda = torch.cuda.get_device_name(torch.device(str(device)))
        except Exception:  # noqa: BLE001 (CUDA not available in this process)
            cuda = None
    return {
        "torch_num_threads": torch.get_num_threads(),
        "torch_num_interop_threads": torch.get_num_interop_threads(),
        "env": {name: os.environ.get(name) for name in THREAD_ENV_VARS},
        **cpu_kernels(),
        "cpu_model": cpu_model_name(),
        "cuda_device": cuda,
    }
