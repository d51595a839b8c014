"""Checks of the QA tasks' metadata that run before the model loads.

``lm_eval`` (and ``tokrag eval``) load the model first and build the tasks after it: a typo in a
bring-your-own ``questions`` path, a bad line in that file or an unknown ``corpus`` used to end the run
only once the model's weights were in memory (minutes for a 7B model). The start-up hook
(``tokrag_model._lmeval_hook``) calls :func:`check_selected_tasks` right after lm-eval resolves
``--tasks``, with the same merged metadata the tasks will get (the task YAML's ``metadata`` with
``--model_args`` and ``--metadata`` over it); it raises the very error the task build would.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Iterable

from retrieval.errors import DataError

log = logging.getLogger(__name__)

INSTRUCT_STOP = ["\n\n", "Question:"]
"""The short-answer QA tasks' stop strings (``tasks/qa/_qa_template``), made for the instruct format."""

def _ours(custom_dataset: Any) -> bool:
    """Whether a task's ``custom_dataset`` as lm-eval's index holds it (``<folder of the YAML that names it>/utils.load_qa``)
    is this package's :func:`tasks.utils.load_qa` (``tasks/qa/utils.py``), not a user's function of the same name."""
    from pathlib import Path

    from . import TASK_DIR

    text = str(custom_dataset or "")
    folder, _, name = text.rpartition("/")
    if name != "utils.load_qa":
        return False
    try:
        return Path(folder).resolve() == (Path(TASK_DIR) / "qa").resolve()
    except (OSError, RuntimeError):
        return False


def _qa_tasks(task_manager: Any, names: Iterable[Any]) -> list[tuple[str, dict[str, Any], Any]]:
    """``[(task, yaml metadata, yaml stop strings)]`` of the QA tasks among ``names`` (tasks built by :func:`tasks.utils.load_qa`), groups expanded (tags and YAML-file configs are
    left to the task build). Every entry of lm-eval's index (``task_manager.task_index``) has its YAML's includes
    resolved."""
    index = getattr(task_manager, "task_index", None) or {}
    out, seen, todo = [], set(), [n for n in names if isinstance(n, str)]
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        entry = index.get(name)
        cfg = getattr(entry, "cfg", None)
        if not isinstance(cfg, dict):
            continue
        if getattr(getattr(entry, "kind", None), "name", "") == "GROUP":
            todo.extend(t for t in cfg.get("task") or [] if isinstance(t, str))
        elif _ours(cfg.get("custom_dataset")):
            meta, gen = cfg.get("metadata"), cfg.get("generation_kwargs")
            out.append((name, dict(meta) if isinstance(meta, dict) else {},
                        gen.get("until") if isinstance(gen, dict) else None))
    return out


def _model_args(model_args: Any) -> dict[str, Any]:
    """``--model_args`` as a dict (lm-eval keeps the ``key=value,...`` string or a dict); {} when unreadable."""
    if isinstance(model_args, dict):
        return model_args
    if isinstance(model_args, str) and model_args.strip():
        try:
            from lm_eval.utils import simple_parse_args_string

            return simple_parse_args_string(model_args) or {}
        except Exception:  # noqa: BLE001 - lm-eval reports a malformed string itself
            return {}
    return {}


def check_selected_tasks(task_manager: Any, names: Iterable[Any], metadata: dict[str, Any] | None,
                         gen_kwargs: Any = None, model_args: Any = None) -> None:
    """Run the data-free checks of every selected QA task (:func:`tasks.utils.qa_arguments`), then, reading only
    small local files: a bring-your-own ``questions`` file is read and checked line by line
    (:func:`tasks.byo.load_questions`) and must leave questions in the evaluated split; a ``corpus`` path or name must
    exist and look like a corpus format (:func:`retrieval.corpus.check_corpus_files`: first lines only; named and
    ``prebuilt:`` corpora are not loaded); a ``prebuilt:`` corpus whose index is neither cached nor downloadable is
    refused (:func:`check_prebuilt_download`). A hub id is left to the task build (it needs the network).

    Args:
        task_manager: lm-eval's ``TaskManager`` that resolved ``--tasks``.
        names: the resolved task and group names (strings; anything else is skipped).
        metadata: what lm-eval merges into every task's metadata (``--model_args`` | ``--metadata``).
        gen_kwargs: ``--gen_kwargs`` (a dict or lm-eval's ``key=value`` string; None: not given). A task run with
            ``prompt=base`` whose stop strings stay the short-answer tasks' :data:`INSTRUCT_STOP` (no ``until``
            here) gets one WARNING: the base format stops at a newline (tasks/README.md, "Prompts"; a leaderboard spec adds the stop itself).
        model_args: ``--model_args`` (a dict or the ``key=value,...`` string; None: not given). lm-eval's ``vllm``,
            API (``local-completions``, ...) and TensorRT-LLM models take a ``seed`` argument, and lm-eval merges
            ``--model_args`` into every task's metadata, where ``seed`` draws the noise and counterfactual passages:
            a task with noise or counterfactuals whose seed comes from there gets one WARNING (its passages differ from
            a run of another model without it; ``--metadata '{"seed": 1234}'`` keeps the default draw).

    Raises:
        ConfigError / DataError / OfflineError: the task build's own one-line error for that input.
    """
    from retrieval.corpus import NAMED_CORPORA, check_corpus_files

    from .byo import is_hub_id, load_questions
    from .data import qa_split_of
    from .rag import _byo_empty
    from .utils import qa_arguments

    from retrieval.logs import follow_lm_eval_logging

    follow_lm_eval_logging()  # under lm_eval, the WARNINGs below in lm-eval's format
    margs = _model_args(model_args)
    for task, yaml_meta, until in _qa_tasks(task_manager, names):
        kw, dataset, prompt, _ = qa_arguments({**yaml_meta, **(metadata or {})}, task)
        seed, default = (metadata or {}).get("seed"), yaml_meta.get("seed", 1234)
        if "seed" in margs and seed is not None and str(seed) == str(margs["seed"]) and str(seed) != str(default) and (
                float(kw.get("noise") or 0) > 0 or kw.get("counterfactual")):
            log.warning("%s: --model_args seed=%s also seeds this task's noise/counterfactual passages (lm-eval merges "
                        "--model_args into task metadata), so they differ from a run without it (default seed %s); add "
                        "--metadata '{\"seed\": %s}' to keep the default draw", task, margs["seed"], default, default)
        stop_given = "until" in (gen_kwargs if isinstance(gen_kwargs, dict) else str(gen_kwargs or ""))
        if prompt == "base" and not stop_given and until == INSTRUCT_STOP:
            log.warning("%s: prompt=base keeps the instruct format's stop strings %s; the base format stops at a newline: "
                        "add --gen_kwargs 'until=[\"\\n\"]' (tasks/README.md, \"Prompts\")", task, until)
        questions = kw.get("questions")  # first, as the task build reads them first
        if dataset == "byo" and not is_hub_id(questions):
            split = str(kw.get("split", "test"))
            rows = load_questions(questions, split=kw.get("hub_split"))
            if not any(qa_split_of(r["question"]) == split for r in rows):
                raise DataError(_byo_empty(questions, rows, split))
        corpus = kw.get("corpus")
        if isinstance(corpus, str) and corpus.startswith("prebuilt:"):
            check_prebuilt_download(corpus, kw)
        elif isinstance(corpus, str) and corpus not in NAMED_CORPORA:
            check_corpus_files(corpus)


def _run_cached(cache_dir: Any, corpus: str, retriever: str, k: int) -> bool:
    """Whether the run cache (``cache_dir``, the task's; default ``$TOKRAG_CACHE_DIR`` or ``~/.cache/tokrag``) holds a
    complete run of ``retriever`` over ``corpus`` with ``k`` passages, for any question set: the exact run key also
    fingerprints the questions, known only once the task's data set is loaded, so any such run counts (a run that the
    task build would serve from the cache, without the index, is never refused; an unreadable entry is no hit there
    either)."""
    import json

    from retrieval.cache import RunCache

    for meta in RunCache(cache_dir).root.glob(f"{retriever}-*/meta.json"):
        try:
            config = json.loads(meta.read_text(encoding="utf-8")).get("config") or {}
        except (OSError, ValueError, AttributeError):
            continue
        if config.get("retriever") == retriever and (config.get("corpus") or {}).get("name") == corpus and config.get("k") == k:
            return True
    return False


def check_prebuilt_download(corpus: str, kw: dict[str, Any]) -> None:
    """Refuse a task over ``prebuilt:NAME`` that could only fail once the model is loaded: its retrieval is not in the
    run cache (:func:`_run_cached`), a Pyserini index it needs is not cached (:func:`retrieval.prebuilt.download_plan`,
    asked of the retrieval worker: the index tables need Java) and the first download URL of that index does not
    answer (:func:`retrieval.prebuilt.url_reachable`, 10 s at most). A reachable URL is left to the task build
    (which prints the download plan and downloads, as without this check).

    Args:
        corpus: ``prebuilt:NAME``; kw: the task's :func:`tasks.utils.qa_arguments` (``retriever``, ``k``,
            ``retriever_params``, ``cache_dir``).

    Raises:
        ConfigError: what :func:`retrieval.retrieve` refuses in the parameters (unknown names, a hybrid without alpha).
        OfflineError: the one-line error of :func:`retrieval.prebuilt.open_lucene` / ``open_faiss`` (where to copy the
        unpacked index folder, or to use a local corpus); for ``dpr``/``hybrid`` under ``HF_HUB_OFFLINE=1``, that of
        :func:`retrieval.dense.resolve_encoder` for a question encoder not in the local hub cache (the task build
        hashes its weights for the run key before it looks in the run cache, so a cached run needs it too).
    """
    from retrieval import prebuilt as pb
    from retrieval.api import _resolve_params
    from retrieval.worker import call_java

    name, retriever = corpus[len("prebuilt:"):], str(kw.get("retriever") or "bm25")
    p, _ = _resolve_params(retriever, kw.get("retriever_params"), prebuilt=True)
    pb.check_params(name, retriever, p)
    if retriever != "bm25" and os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        from retrieval.dense import resolve_encoder

        resolve_encoder(pb.query_encoder_name(p))  # the run key hashes its weights: needed even for a cached run
    if _run_cached(kw.get("cache_dir"), corpus, retriever, int(float(kw.get("k", 5)))):
        return
    error = pb.unreachable_index_error(call_java("prebuilt_plan", name, retriever, p))
    if error is not None:
        raise error
