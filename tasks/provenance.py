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
      "run_fingerprint": "<16 hex>" | "gold"
    }

``files``: every local file or folder the task read its questions and passages from, by role (``questions``,
``corpus``, ``oracle_file``, ``hub_id``, and for the built-in data sets the files of the data folder, e.g.
``nq_open/NQ-open.dev.jsonl``), with its absolute path and the SHA-256 of a file's bytes (a folder: ``fingerprint``,
a 16-hex hash over its files' relative paths and SHA-256s). A hub data set is ``{"hub_id": ..., "split": ...}``.
``corpus``: the retrieval corpus as :class:`retrieval.Corpus` fingerprints it (its passages' ids, titles and texts,
in order; ``prebuilt:...`` corpora carry only their name). ``run_fingerprint``: the cached TREC run's fingerprint
(as every doc's ``run_fingerprint``; ``gold`` for gold-passage-only tasks). Paths and hashes only: deterministic for
the same files at the same place; the leaderboards' run keys never read it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

METADATA_KEY = "tokrag_data"
"""The key of the task config's ``metadata`` that holds the provenance (results JSON ``configs.<task>.metadata``)."""


class TaskData(dict):
    """A ``custom_dataset`` return value: ``{split: datasets.Dataset}`` as lm-eval expects, plus ``provenance``."""

    def __init__(self, splits: dict[str, Any], provenance: dict[str, Any]):
        super().__init__(splits)
        self.provenance = provenance


def path_record(path: str | os.PathLike) -> dict[str, str]:
    """``{"path": absolute path, "sha256": hex}`` of a file, ``{"path", "fingerprint"}`` of a folder (16 hex over
    ``[relative path, sha256]`` of its files, hidden ones and ``__pycache__`` skipped, in sorted order)."""
    from retrieval.io import fingerprint, sha256_file

    p = Path(path).expanduser().resolve()
    if p.is_file():
        return {"path": str(p), "sha256": sha256_file(p)}
    items = []
    for dirpath, dirnames, filenames in os.walk(p):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if not name.startswith("."):
                f = Path(dirpath) / name
                items.append([f.relative_to(p).as_posix(), sha256_file(f)])
    return {"path": str(p), "fingerprint": fingerprint(items)}


def _local(value: Any) -> Path | None:
    if value in (None, "") or not isinstance(value, (str, os.PathLike)):
        return None
    p = Path(value).expanduser()
    return p if p.exists() else None


def dataset_files(dataset: str, data_dir: Any = None) -> dict[str, Path]:
    """The files of the local data folder (``data_dir`` or ``$TOKRAG_DATA_DIR``) that a built-in QA data set reads
    (:mod:`tasks.data`), by their path inside it; ``{}`` without a folder or for other data sets."""
    from . import data

    root = data.resolve_data_dir(data_dir)
    if root is None:
        return {}
    names = {"nq_open": [data.NQ_OPEN_FILE, data.NQ_ORACLE_FILE],  # the oracle file gives NQ-open's gold ids
             "nq_oracle": [data.NQ_ORACLE_FILE, data.NQ_OPEN_FILE],  # NQ-open gives the oracle questions their ids
             "webq": [data.WEBQ_FILE.format(split=s) for s in ("test", *data.WEBQ_POOL_FILES)]}.get(dataset, [])
    return {n: root / n for n in names if (root / n).is_file()}


def qa_provenance(dataset: str, metadata: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any]:
    """``tokrag_data`` of a QA task (module docstring).

    Args:
        dataset: the task's ``dataset`` (``byo``, ``nq_open``, ...).
        metadata: the keys :func:`tasks.utils.load_qa` passed on (``questions``, ``corpus``, ``oracle_file``,
            ``hub_id``, ``hub_split``, ``data_dir``).
        stats: what :func:`tasks.rag.build_qa_docs` filled in (``corpus``: the :class:`retrieval.Corpus` or None,
            ``run_fingerprint``).
    """
    from tokrag_model.provenance import tokrag_source

    files: dict[str, Any] = {}
    questions = metadata.get("questions")
    if dataset == "byo" and questions not in (None, ""):
        local = _local(questions)
        files["questions"] = (path_record(local) if local is not None
                              else {"hub_id": str(questions), "split": str(metadata.get("hub_split") or "test")})
    for role in ("corpus", "oracle_file", "hub_id"):
        local = _local(metadata.get(role))
        if local is not None:
            files[role] = path_record(local)
    if dataset != "byo" and metadata.get("oracle_file") in (None, ""):
        for name, path in dataset_files(dataset, metadata.get("data_dir")).items():
            files[name] = path_record(path)
    return {"tokrag": tokrag_source(), "files": files, "corpus": corpus_record(stats.get("corpus"), metadata.get("corpus")),
            "run_fingerprint": stats.get("run_fingerprint")}


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
    """``tokrag_data`` of ``wiki_lm_bm25``: the ``wiki-vital`` corpus (paragraphs and retrieval corpus) and its run."""
    from tokrag_model.provenance import tokrag_source

    return {"tokrag": tokrag_source(), "files": {}, "corpus": corpus_record(stats.get("corpus"), "wiki-vital"),
            "run_fingerprint": stats.get("run_fingerprint")}


def _patch_task(module) -> None:
    """Wrap ``ConfigurableTask.download``: a :class:`TaskData` dataset's provenance goes into the task config's
    ``metadata`` (a copy with :data:`METADATA_KEY` added), which lm-eval writes under ``configs`` of the results."""
    cls = getattr(module, "ConfigurableTask", None)
    if cls is None or getattr(cls.download, "_tokrag", False):
        return
    original = cls.download

    def download(self, *args, **kwargs):
        original(self, *args, **kwargs)
        provenance = getattr(getattr(self, "dataset", None), "provenance", None)
        config = getattr(self, "_config", None)
        if isinstance(provenance, dict) and config is not None and isinstance(config.metadata, dict):
            config.metadata = {**config.metadata, METADATA_KEY: provenance}

    download._tokrag = True  # type: ignore[attr-defined]
    download.__doc__ = original.__doc__
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
    except Exception:
        pass
