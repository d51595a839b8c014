"""``tokrag leaderboard rescore SPEC``: recompute every metric, CI and test from the logged samples.

No model is loaded and nothing is generated: the task's *current* filters (its ``filter_list``, else lm-eval's
default ``take_first``) are re-applied to each logged sample's raw ``resps`` with lm-eval's own filter code
(:func:`refiltered_samples`), and each sample's ``doc`` and re-filtered ``filtered_resps`` go through the task's
*current* ``process_results`` (its YAML's ``!function`` or lm-eval's default for the output type), and every
task-level metric is re-aggregated with the task's current aggregation functions. So a fix to the
metric code (``tasks/metrics.py``, a task's ``utils.py``) changes the report without a re-run.

The lm-eval task object is built from the task's YAML exactly as lm-eval builds it, except that its
documents are the logged ones (``custom_dataset`` is replaced), so neither the data folder nor a
retrieval run is needed. So a fixed answer-extraction filter changes the report too; with unchanged filters the
re-filtered responses are the logged ``filtered_resps``. A filter the task no longer defines is dropped with its
aggregates. Samples that log no raw ``resps`` are scored on their logged ``filtered_resps``, and a cell whose
``filter_list`` changed since such a run is refused (:class:`StaleGenerationsError`).

The run folders are never modified (their ``DONE`` checksums stay valid); the re-scored cells are
handed to :func:`leaderboards.report.build_report`. With unchanged metric code the re-scored report
is byte-identical to the report built from the logged values (tested). A logged per-sample metric that
``process_results`` cannot re-derive from the log (``token_perplexity``: the model's token count is not in
the samples file) is kept as logged and re-aggregated with the rest (:func:`rescore_loaded`).

A metric fix inside a task's folder (its ``utils.py``, a version bump in its YAML) changes the task
fingerprint and so the cell's run-folder key. ``rescore`` then uses the finished folder whose
configuration differs from the cell's only in the task fingerprint, and says so: the generations
are those of the earlier task code, scored by the current one (provenance keeps the old fingerprint). The code that
builds the requests may have changed with it (the loader ``custom_dataset`` and what it calls: ``tasks/utils.py``'s
``QA_PROMPTS``, passage picking and noise in ``tasks/rag.py``, the few-shot pool in ``tasks/data.py``, your task's
``utils.py``), so for such a cell only the docs and requests are rebuilt with the task's current loader, the cell's
metadata and the run's overrides, as the run builds them (:func:`rebuilt_requests`: the data folder and the retrieval
run cache are read), and each logged sample's ``doc`` and ``arguments`` (the prompt, few-shot examples included; a
tokrag model's appended trace left out) must equal the current ones (:func:`doc_difference`); otherwise the cell is
refused (:class:`StaleGenerationsError`, one line naming the doc and the first differing field), also when its docs
cannot be rebuilt (no data folder, a loader error). Under ``apply_chat_template`` the prompt is the chat rendered by
the model's template: it is rendered again by the method's own ``apply_chat_template`` over the tokenizer ``pretrained``
resolves to (:func:`chat_renderer`; no weights are loaded) and compared, and a run whose recorded template hash
(``config.tokrag_prompt.chat_template_sha256``) is not the tokenizer's is refused too; for a model that is not a tokrag
method only the docs are checked. A changed template file changes the run key (:mod:`leaderboards.keys`), so such a
cell has no finished run. A cell read from its own folder (unchanged task code) is checked without any data.

Only a change of what *scores* a generation can be re-scored. Before a cell is re-scored, the task configuration
its run recorded (``results.json``'s ``configs.<task>``, lm-eval's dump after the run's overrides) is compared with
the one the current YAML gives (:func:`generation_difference`): every field that shapes the requests (prompt
templates, ``description``, few-shot settings, ``generation_kwargs``, ``target_delimiter``, the data fields,
``metadata`` such as ``hits``/``noise``/``prompt``) must be equal; only ``metric_list``, ``process_results``,
``filter_list``, the loader's source (``custom_dataset``: its docs are checked as above), task names and the
metadata ``version`` may differ. A cell whose generations came from other requests is refused
(:class:`StaleGenerationsError`, one line naming the cell, the field and the re-run), or left out as missing with
``allow_missing``.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError
from retrieval.io import fingerprint
from tasks import quiet_lm_eval

from .keys import cell_keys, command_directory, find_task_yaml, missing_task_data, recorded_task_data
from .report import build_report
from .runner import (DONE, IncompleteRunError, MisplacedRunError, finished_folders, finished_runs_by_cell, load_cell, other_inputs_note,
                     resolve_runs_dir, run_command)
from .spec import LeaderboardSpec

log = logging.getLogger(__name__)


def task_for_docs(spec: LeaderboardSpec, task: str, docs: list[dict]):
    """lm-eval's ``ConfigurableTask`` for ``task`` (from its YAML under the spec's include path) whose
    dataset is ``docs`` (every split the config names), so that ``process_results`` and
    ``aggregation()`` are the task's own.

    Raises:
        ConfigError: no YAML defines ``task``, or ``docs`` is empty.
    """
    import datasets
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks._yaml_loader import load_yaml  # lm-eval 0.4.13's YAML loader (includes, !function)

    path = find_task_yaml(task, spec.include_path)
    if path is None:
        raise ConfigError(f"rescore: task {task!r} is not defined by any YAML under {[str(p) for p in spec.include_path]}")
    if not docs:
        raise ConfigError(f"rescore: no logged samples for task {task!r}")
    cfg = copy.deepcopy(load_yaml(path, resolve_func=True))
    splits = {cfg.get(k) for k in ("test_split", "validation_split", "training_split", "fewshot_split")} - {None}
    first = [docs[0]]

    def logged_docs(**_: Any) -> datasets.DatasetDict:
        return datasets.DatasetDict({s: datasets.Dataset.from_list(first) for s in splits})

    cfg["custom_dataset"] = logged_docs
    for key in ("tag", "group", "task_list"):
        cfg.pop(key, None)
    return ConfigurableTask(config=cfg)


def _jsonable(v: Any) -> Any:
    """The value as the samples file stores it (tuples become lists, numpy scalars numbers)."""
    return json.loads(json.dumps(v, default=str))


def _has_raw_resps(samples: list[dict]) -> bool:
    """Whether every sample logs its raw ``resps`` (a list), so the task's current filters can be re-applied."""
    return all(isinstance(s.get("resps"), list) for s in samples)


def refiltered_samples(task: Any, samples: list[dict]) -> list[dict]:
    """``samples`` (one task's logged samples in the samples file's order: by doc id, a doc's filters in the task's
    order, as the runner writes them) with ``filtered_resps`` and ``filter`` re-derived from the logged raw ``resps``
    by the task's *current* filters (lm-eval's own ``FilterEnsemble.apply`` over
    :class:`lm_eval.api.instance.Instance` objects built from the log, as ``evaluator.evaluate`` applies them): one
    sample per current filter and logged doc, in the samples file's order (the docs in the log's order, each doc's
    samples in the order of the task's filters), each a copy of the logged sample of that doc and filter (else of
    that doc's first) with the new ``filtered_resps`` (JSON values). With unchanged filters the result equals
    ``samples`` read from a samples file, with several filters too. Samples without ``resps`` (not logged) are
    returned as they are: their logged ``filtered_resps`` are scored (:func:`_stale_cells` refuses such a cell when
    its filters changed). The input is not modified."""
    from lm_eval.api.instance import Instance

    filters = getattr(task, "_filters", None)
    if not samples or not filters or not _has_raw_resps(samples):
        return samples
    by_doc: dict[Any, dict[str, dict]] = {}  # doc_id -> {filter: logged sample}, docs in the log's order
    for s in samples:
        by_doc.setdefault(s.get("doc_id"), {}).setdefault(s.get("filter", "none"), s)
    instances: dict[Any, list[Instance]] = {}
    for doc_id, logged in by_doc.items():
        first = next(iter(logged.values()))
        args = first.get("arguments") or [()] * len(first["resps"])
        instances[doc_id] = [Instance(request_type=task.OUTPUT_TYPE, doc=first["doc"], arguments=tuple(a), idx=i,
                                      metadata=(task.config.task, doc_id, len(r)), resps=copy.deepcopy(r))
                             for i, (a, r) in enumerate(zip(args, first["resps"], strict=True))]
    flat = [inst for insts in instances.values() for inst in insts]
    for ensemble in filters:
        ensemble.apply(flat)
    out = []
    for doc_id, logged in by_doc.items():  # the runner's order: by doc, then lm-eval's (the filters') order
        for ensemble in filters:
            base = logged.get(ensemble.name) or next(iter(logged.values()))
            filtered = [inst.filtered_resps[ensemble.name] for inst in instances[doc_id]]
            out.append({**base, "filter": ensemble.name, "filtered_resps": _jsonable(filtered)})
    return out


def rescore_loaded(spec: LeaderboardSpec, loaded: dict[str, Any],
                   tasks: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Re-score every loaded cell; returns ``(loaded with re-scored samples and results, changes)``.

    ``changes``: ``{"samples": n, "cells": n, "changed_values": n, "changed": {cell_id: {metric: [old, new]}}}``
    where ``changed`` lists the task-level aggregates that moved.

    A per-sample metric the logged sample lists in its ``metrics`` but that ``process_results`` no longer
    yields from the logged sample is **kept as logged** and re-aggregated with the task's aggregation
    together with the rest: ``token_perplexity`` of ``wikitext103_bm25_wiki`` needs the token count that the
    model attaches to the live log-likelihood (an ``n_tokens`` attribute, lost in the samples JSON), and a
    re-score does not change token counts. Dropping it would leave ``results.json``'s old aggregate in the
    report unchecked. Such metrics are counted in ``changes["kept"]`` (``{metric: number of samples}``,
    summed over the cells; the key is present only when some metric was kept).

    ``tasks``: ``{task name: task_for_docs(...)}`` already built (:func:`collect_for_rescore`'s), filled here.
    """
    tasks = {} if tasks is None else tasks
    out: dict[str, Any] = {}
    summary: dict[str, Any] = {"samples": 0, "cells": 0, "changed_values": 0, "changed": {}}
    kept: dict[str, int] = {}
    for cid, (cell, key, data) in loaded.items():
        if data is None:
            out[cid] = (cell, key, None)
            continue
        tname = cell.task.task
        samples = data["samples"].get(tname, [])
        if tname not in tasks:
            tasks[tname] = task_for_docs(spec, tname, [s["doc"] for s in samples])
        task = tasks[tname]
        samples = refiltered_samples(task, samples)
        new_samples, per_metric = [], {}
        for s in samples:
            res = task.process_results(s["doc"], s.get("filtered_resps") or [])
            ns = {k: v for k, v in s.items() if k not in set(s.get("metrics") or [])}
            for name, v in res.items():
                ns[name] = _jsonable(v)
                if _jsonable(s.get(name)) != ns[name]:
                    summary["changed_values"] += 1
                per_metric.setdefault((name, s.get("filter", "none")), []).append(v)
            ns["metrics"] = list(res.keys())
            for name in s.get("metrics") or []:  # logged, not re-derivable from the log: kept as logged
                if name in res or name not in s:
                    continue
                ns[name] = s[name]
                ns["metrics"].append(name)
                per_metric.setdefault((name, s.get("filter", "none")), []).append(s[name])
                kept[name] = kept.get(name, 0) + 1
            new_samples.append(ns)
        results = copy.deepcopy(data["results"])
        task_res = (results.setdefault("results", {})).setdefault(tname, {})
        filters = {f for _, f in per_metric}
        for k in [k for k in task_res if "," in k and k.split(",", 1)[1] not in filters]:
            del task_res[k]  # the aggregates of a filter the task no longer defines
        aggs = task.aggregation()
        for (name, filt), values in per_metric.items():
            if name not in aggs:
                continue
            k = f"{name},{filt}"
            new = aggs[name](values)
            old = task_res.get(k)
            if old is None or abs(float(old) - float(new)) > 1e-12:
                summary["changed"].setdefault(cid, {})[name] = [old, new]
            task_res[k] = new
        summary["samples"] += len(samples)
        summary["cells"] += 1
        out[cid] = (cell, key, {**data, "samples": {**data["samples"], tname: new_samples}, "results": results})
    if kept:
        summary["kept"] = kept
    return out, summary


class StaleGenerationsError(IncompleteRunError):
    """A finished run's generations were made from other requests (prompt, generation or few-shot settings, task
    metadata) than the task builds now, so re-scoring them would report old generations as the current task's."""


# task config fields that do not shape the requests: the metric code re-scoring applies (the filters are re-applied to
# the logged raw ``resps``: refiltered_samples; a cell whose samples lack them is refused if its filters changed), the
# loader (the docs are the logged ones; a data change is in the run key) and the task's names
_RESCORABLE = frozenset({"metric_list", "process_results", "filter_list", "custom_dataset", "tag", "group", "task_list",
                         "task_alias", "group_alias"})
# metadata keys that do not shape the requests: the version a metric fix bumps, what lm-eval and the loaders add
# (tasks.utils._LMEVAL_KEYS) and the run cache folder
_RESCORABLE_METADATA = frozenset({"version", "config_source", "config", "tokrag_data", "cache_dir"})


def _short(v: Any, n: int = 80) -> str:
    text = json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= n else text[:n - 3] + "..."


# a callable that lm-eval's TaskConfig.to_dict leaves nested (fewshot_config.doc_to_text: only top-level callables
# become their source) reaches results.json through json's default=str: "<function fs_text at 0x7f97...>", an
# address of one process
_ADDRESS = re.compile(r"^(<.*) at 0x[0-9a-fA-F]+>$", re.DOTALL)


def _without_addresses(v: Any) -> Any:
    """``v`` (JSON) with each ``"<function NAME at 0x...>"`` leaf as ``"<function NAME>"``: the name (lm-eval's
    ``str`` of the callable: its qualified name) is all a run records of a nested callable, so that is compared."""
    if isinstance(v, dict):
        return {k: _without_addresses(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_without_addresses(x) for x in v]
    return _ADDRESS.sub(r"\1>", v) if isinstance(v, str) else v


def _canonical_equal(old: Any, new: Any) -> bool:
    """Whether two JSON values are the same canonical JSON (``1`` and ``1.0`` differ, as do ``True`` and ``1``)."""
    return json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)


def _differences(old: Any, new: Any, path: str, *, lists: bool = False) -> Iterator[tuple[str, Any, Any]]:
    """``(path, old, new)`` of every leaf where two JSON values differ, in order (dict keys sorted, a missing key reads
    as None; the path is dotted, ``ctxs[0].docid``). Lists are leaves compared with ``==``, or with ``lists`` walked
    item by item (a list of another length differs at its first extra or missing item, read as None) and leaves
    compared as canonical JSON. A generator: :func:`generation_difference` lists every difference,
    :func:`doc_difference` takes the first."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new), key=str):
            yield from _differences(old.get(k), new.get(k), f"{path}.{k}" if path else str(k), lists=lists)
    elif lists and isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            yield from _differences(old[i] if i < len(old) else None, new[i] if i < len(new) else None, f"{path}[{i}]",
                                    lists=True)
    elif not (_canonical_equal(old, new) if lists else old == new):
        yield path, old, new


def _run_overrides(cell: Any, output_type: str | None, generation_kwargs: dict | None,
                   num_fewshot: int | None) -> tuple[dict | None, int]:
    """``(generation_kwargs, num_fewshot)`` after the overrides the runner's ``simple_evaluate`` applies to a task
    whose YAML gives ``generation_kwargs`` and ``num_fewshot``: the cell's ``gen_kwargs`` over ``generation_kwargs``
    (``generate_until`` tasks; a new dict, else ``generation_kwargs`` itself), its ``num_fewshot`` unless the YAML
    says 0 (0 when neither says)."""
    if output_type == "generate_until" and cell.gen_kwargs:
        generation_kwargs = {**copy.deepcopy(generation_kwargs or {}), **dict(cell.gen_kwargs)}
    if cell.num_fewshot is not None and num_fewshot != 0:
        return generation_kwargs, cell.num_fewshot
    return generation_kwargs, 0 if num_fewshot is None else num_fewshot


def current_task_config(task: Any, cell: Any) -> dict[str, Any]:
    """The task configuration lm-eval would record for ``cell`` now (``results.json``'s ``configs.<task>``): ``task``'s
    dump (:func:`task_for_docs`) with the overrides the runner's ``simple_evaluate`` applies: the cell's ``gen_kwargs``
    over ``generation_kwargs`` (``generate_until`` tasks), its ``num_fewshot`` (unless the YAML says 0; 0 when
    neither says), its task metadata (:meth:`leaderboards.spec.Cell.lm_eval_metadata`) over the YAML's. JSON values."""
    cfg = _jsonable(task.dump_config())
    gen_kwargs, cfg["num_fewshot"] = _run_overrides(cell, cfg.get("output_type"), cfg.get("generation_kwargs"),
                                                    cfg.get("num_fewshot"))
    if gen_kwargs is not None:
        cfg["generation_kwargs"] = _jsonable(gen_kwargs)
    cfg["metadata"] = {**(cfg.get("metadata") or {}), **_jsonable(cell.lm_eval_metadata())}
    return cfg


def generation_difference(recorded: dict[str, Any] | None, current: dict[str, Any]) -> str | None:
    """The fields that shape the requests and differ between the task config a run recorded (``results.json``'s
    ``configs.<task>``) and ``current`` (:func:`current_task_config`): ``"FIELD: RUN in the run -> NOW now"`` for the
    first (dotted path, JSON values, long ones cut), then ``"; also FIELD, FIELD"`` for the others; None when only
    re-scorable fields differ (``_RESCORABLE``, metadata ``_RESCORABLE_METADATA``). A callable nested in a field
    (``fewshot_config.doc_to_text: !function ...``), which lm-eval records only as ``"<function NAME at 0x...>"``, is
    compared by its name (the address differs per process; a change inside the function is not seen).
    A run without a recorded config gives a line too: what made its generations is unknown."""
    if not isinstance(recorded, dict):
        return "the run's results.json records no task config (configs.<task>): its generation settings are unknown"

    def kept(cfg: dict[str, Any]) -> dict[str, Any]:
        out = {k: _without_addresses(v) for k, v in cfg.items() if k not in _RESCORABLE}
        meta = out.get("metadata")
        if isinstance(meta, dict):
            out["metadata"] = {k: v for k, v in meta.items() if k not in _RESCORABLE_METADATA}
        return out

    diffs = list(_differences(kept(_jsonable(recorded)), kept(current), ""))
    if not diffs:
        return None
    (path, old, new), more = diffs[0], [d[0] for d in diffs[1:]]
    return f"{path}: {_short(old)} in the run -> {_short(new)} now" + (f"; also {', '.join(more)}" if more else "")


def rebuilt_requests(spec: LeaderboardSpec, cell: Any, cache: dict[str, Any] | None = None) -> dict[Any, dict]:
    """``{doc id: {"doc": doc, "arguments": [...] | None}}``: the documents and requests ``cell``'s task builds *now*,
    built as the run builds them (JSON values). The task is lm-eval's from the runner's ``TaskManager``
    (:func:`leaderboards.runner._load_task_manager`: the spec's include path with tokrag's ``tasks/``;
    ``TaskManager.load`` as ``simple_evaluate`` calls it) with the cell's task metadata
    (:meth:`leaderboards.spec.Cell.lm_eval_metadata`), so its ``custom_dataset`` is called with what the run passed,
    after ``random``/NumPy are seeded with the cell's seed as ``simple_evaluate`` seeds them (their states are restored
    afterwards; torch's generator is not seeded). Then ``simple_evaluate``'s overrides are applied (the cell's
    ``gen_kwargs`` over ``generation_kwargs``, its ``num_fewshot`` unless the YAML says 0, 0 when neither says, the
    few-shot seed) and lm-eval's ``build_all_requests`` builds the first ``limit`` docs' requests (few-shot examples,
    description, system instruction): ``arguments`` as the samples file logs them. Under ``apply_chat_template``
    the prompt is rendered as the run rendered it, by the model's chat template (:func:`chat_renderer`: the
    tokenizer only, no weights); for a model that is not a tokrag method (``arguments`` None) only the doc is checked.
    Reads the data folder and the retrieval run cache (a retrieval not cached is computed). ``cache``: the tasks loaded so far
    (one load per task, metadata and seed) and the requests built so far (one build per load and the run settings
    that shape them: ``gen_kwargs``, ``num_fewshot``, ``limit``, ``system_instruction``, ``fewshot_as_multiturn``,
    ``apply_chat_template`` and then the model and ``pretrained``; the cached dict is returned again, not a copy).

    Raises:
        whatever the task's loader or lm-eval raises (no data folder, a loader error).
    """
    import random

    import lm_eval.api.task as lm_task
    import numpy as np

    from .runner import _load_task_manager

    cache = {} if cache is None else cache
    meta = _jsonable(cell.lm_eval_metadata())
    at = json.dumps([cell.task.task, meta, cell.seed], sort_keys=True)
    chat = [cell.method.model, cell.model_args.get("pretrained"), cell.model_args.get("revision")] \
        if cell.apply_chat_template else []  # the rendered prompt is the model's tokenizer's
    built = "requests " + json.dumps([at, _jsonable(dict(cell.gen_kwargs)), cell.num_fewshot, cell.limit,
                                      cell.system_instruction, cell.fewshot_as_multiturn, cell.apply_chat_template,
                                      *chat], sort_keys=True, default=str)
    if built in cache:
        return cache[built]
    render = chat_renderer(cell, cache)[0] if cell.apply_chat_template else None
    loggers = [logging.getLogger(n) for n in ("lm_eval", "lm_eval.tasks", "lm_eval.api.task")]
    levels = [lg.level for lg in loggers]
    py_state, np_state = random.getstate(), np.random.get_state()
    bar = lm_task.tqdm
    try:
        for lg in loggers:  # lm-eval's "Selected tasks", task overrides, loader hints: the run said them
            lg.setLevel(logging.ERROR)
        if at not in cache:
            random.seed(cell.seed)
            np.random.seed(cell.seed)
            task = _load_task_manager(spec, meta).load([cell.task.task])["tasks"].get(cell.task.task)
            if task is None:
                raise ConfigError(f"lm-eval built no task {cell.task.task!r} from {[str(p) for p in spec.include_path]}")
            cache[at] = (task, copy.deepcopy(task.get_config("generation_kwargs")), task.get_config("num_fewshot"))
        task, gen_kwargs, num_fewshot = cache[at]
        output_type = task.get_config("output_type")
        gen_kwargs, num_fewshot = _run_overrides(cell, output_type, gen_kwargs, num_fewshot)
        if output_type == "generate_until":  # simple_evaluate's overrides, from the YAML's values
            task.set_config(key="generation_kwargs", value=copy.deepcopy(gen_kwargs or {}))
        task.set_config(key="num_fewshot", value=num_fewshot)
        task.set_fewshot_seed(seed=cell.seed)
        out: dict[Any, dict] = {}
        if cell.apply_chat_template and render is None:  # not a tokrag method: its rendering is not known here
            for i, doc in enumerate(task.eval_docs):
                if cell.limit is not None and i >= cell.limit:
                    break
                out[i] = {"doc": _jsonable(doc), "arguments": None}
            cache[built] = out
            return out
        lm_task.tqdm = lambda it, **_: it  # no progress bar over the docs
        task.build_all_requests(limit=cell.limit, system_instruction=cell.system_instruction,
                                fewshot_as_multiturn=cell.fewshot_as_multiturn,
                                apply_chat_template=bool(cell.apply_chat_template), chat_template=render)
        for inst in task.instances:
            entry = out.setdefault(inst.doc_id, {"doc": _jsonable(inst.doc), "arguments": []})
            entry["arguments"].append(_jsonable(inst.args))
        cache[built] = out
        return out
    finally:
        lm_task.tqdm = bar
        random.setstate(py_state)
        np.random.set_state(np_state)
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def chat_renderer(cell: Any, cache: dict[str, Any] | None = None) -> tuple[Callable | None, str | None]:
    """``(render, sha256)``: how ``cell``'s model renders a chat now, without its weights. ``render(chat_history,
    add_generation_prompt=True) -> str`` is the model class's own ``apply_chat_template`` (lm-eval's hook: the
    passages slot in the first user turn) over the tokenizer that ``pretrained`` resolves to
    (:func:`tokrag_model.base.load_tokenizer`: as :meth:`tokrag_model.base.Backbone.load` loads it);
    ``sha256``: SHA-256 of that tokenizer's chat template (what the run recorded as ``config.tokrag_prompt.
    chat_template_sha256``), None without one. ``(None, None)`` for a model class that is not a tokrag method
    (:class:`tokrag_model.base.RAGMethodLM`): how it renders is not known without loading it. ``cache``: one tokenizer
    load per model and ``pretrained``. A ``revision`` given with an offline alias, which a run made before such a
    spec was refused (s53) took with only a WARNING, did not act in that run (the alias's package pins its weights):
    the alias's tokenizer is read without it, and a one-line WARNING says so (a new cell of it is refused:
    :func:`tokrag_model.loading.check_revision`).

    Raises:
        ConfigError, OfflineError: the model cannot be resolved or its tokenizer loaded (not here).
    """
    from tokrag_model.base import RAGMethodLM, chat_template_sha256, load_tokenizer
    from tokrag_model.loading import check_revision

    from .runner import _model_class

    cache = {} if cache is None else cache
    args = cell.model_args
    at = "chat " + json.dumps([cell.method.model, args.get("pretrained"), args.get("revision")], default=str)
    if at in cache:
        return cache[at]
    cls = _model_class(cell.method.model)
    if not (isinstance(cls, type) and issubclass(cls, RAGMethodLM)):
        cache[at] = (None, None)
        return cache[at]
    revision = args.get("revision")
    try:
        check_revision(args["pretrained"], revision)
    except ConfigError:  # the run loaded the alias's own weights: read its tokenizer as the run did
        log.warning("rescore: %s: revision=%r did not act in its run (pretrained=%r is an offline alias, whose package "
                    "pins its weights), so its prompts are rendered with the alias's own tokenizer; a new cell with this "
                    "revision is refused: drop it from the spec (that changes the run key)", cell.cell_id, revision,
                    args["pretrained"])
        revision = None
    tok = load_tokenizer(args["pretrained"], revision, bool(args.get("trust_remote_code", False)))
    cache[at] = (cls.chat_renderer(tok, args["pretrained"]), chat_template_sha256(tok))
    return cache[at]


def recorded_chat_template_sha256(results: dict[str, Any] | None) -> str | None:
    """The SHA-256 of the chat template a run rendered its prompts with, as its ``results.json`` records it
    (``config.tokrag_prompt.chat_template_sha256``, else the model's ``config.tokrag_resolved_config``), or None."""
    config = (results or {}).get("config") or {}
    for where in (config.get("tokrag_prompt"), config.get("tokrag_resolved_config")):
        if isinstance(where, dict) and where.get("chat_template_sha256"):
            return where["chat_template_sha256"]
    return None


def _first_difference(old: Any, new: Any, path: str) -> tuple[str, Any, Any] | None:
    """The first ``(path, old, new)`` where two JSON values differ, lists walked item by item (:func:`_differences`)."""
    return next(_differences(old, new, path, lists=True), None)


def _pair(old: Any, new: Any) -> tuple[str, str]:
    """``old`` and ``new`` as short JSON; two long strings are cut around their first differing character."""
    if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > 60:
        i = next((j for j in range(min(len(old), len(new))) if old[j] != new[j]), min(len(old), len(new)))
        lo = max(0, i - 20)
        cut = [("..." if lo else "") + json.dumps(s[lo:i + 40])[1:-1] + ("..." if len(s) > i + 40 else "")
               for s in (old, new)]
        return f'"{cut[0]}"', f'"{cut[1]}"'
    return _short(old), _short(new)


def _task_arguments(arguments: Any) -> Any:
    """A sample's logged ``arguments`` without the ``{"tokrag_trace": ...}`` element a tokrag model appends to each
    request (``tokrag_model.base``, ``trace=true``): what the task asked."""
    if not isinstance(arguments, list):
        return arguments
    return [[a for a in req if not (isinstance(a, dict) and "tokrag_trace" in a)] if isinstance(req, list) else req
            for req in arguments]


def doc_difference(samples: list[dict], rebuilt: dict[Any, dict]) -> str | None:
    """``"doc ID: FIELD RUN in the run -> NOW now"`` for the first logged sample (in the log's order) whose ``doc``
    differs from the one the task builds now (``rebuilt``, :func:`rebuilt_requests`; compared as canonical JSON, field
    by field: the first differing field, e.g. ``ctxs[0].docid``, long values cut), else whose request ``arguments``
    differ (``arguments[0][0]``: the prompt, cut around the first differing character; a tokrag model's appended trace
    is not compared; not compared where ``rebuilt`` has None); ``"doc ID: not built now (...)"`` for a logged doc id the task no longer builds; None when every logged
    doc and request is the current one."""
    for s in samples:
        doc_id = s.get("doc_id")
        if doc_id not in rebuilt:
            n = len({x.get("doc_id") for x in samples})
            return f"doc {doc_id}: not built now (the task builds {len(rebuilt)} docs for the {n} logged doc ids)"
        d = _first_difference(_jsonable(s.get("doc")), rebuilt[doc_id]["doc"], "")
        if d is None and rebuilt[doc_id].get("arguments") is not None and "arguments" in s:
            d = _first_difference(_task_arguments(_jsonable(s.get("arguments"))), rebuilt[doc_id]["arguments"],
                                  "arguments")
        if d:
            path, old, new = d
            run, now = _pair(old, new)
            return f"doc {doc_id}: {path or 'doc'} {run} in the run -> {now} now"
    return None


def _stale_cells(spec: LeaderboardSpec, runs: Path, loaded: dict[str, Any], folders: dict[str, Path],
                 tasks: dict[str, Any]) -> dict[str, str]:
    """``{cell id: one line}`` for each loaded cell whose logged generations came from other requests than the task
    builds now (:func:`generation_difference`; for a cell read from the folder of earlier task code also its docs,
    :func:`rebuilt_requests` / :func:`doc_difference`): the cell, the folder read, the field and what to run. A cell of
    earlier task code whose docs cannot be rebuilt (no data folder, a loader error) gets a line saying so."""
    stale: dict[str, str] = {}
    built: dict[str, Any] = {}  # rebuilt_requests' cache: a task loaded once per name, metadata and seed, its requests
    # built once per run settings (the methods of one task and seed share them)
    for cid, (cell, key, data) in loaded.items():
        if data is None:
            continue
        tname = cell.task.task
        samples = data["samples"].get(tname) or []
        if not samples:
            continue  # rescore_loaded raises its own error
        if tname not in tasks:
            tasks[tname] = task_for_docs(spec, tname, [s["doc"] for s in samples])
        recorded = ((data.get("results") or {}).get("configs") or {}).get(tname)
        current = current_task_config(tasks[tname], cell)
        why = generation_difference(recorded, current)
        if why is None and not _has_raw_resps(samples) and isinstance(recorded, dict) \
                and _jsonable(recorded.get("filter_list")) != current.get("filter_list"):
            why = (f"filter_list: {_short(recorded.get('filter_list'))} in the run -> "
                   f"{_short(current.get('filter_list'))} now, and the samples log no raw resps to re-apply it to")
        folder = folders[cid]
        redo = f"remove its run folder {folder} and run: " if folder.name == key else "re-run it: "
        redo += run_command(spec, runs)
        if why is None and folder.name != key:  # read from the folder of earlier task code: its loader may differ too
            try:
                rebuilt = rebuilt_requests(spec, cell, built)
            except Exception as exc:  # noqa: BLE001 - any failure of the loader: the docs cannot be checked
                log.debug("rescore: the docs of %s could not be rebuilt", cid, exc_info=True)  # an internal bug shows
                err = " ".join(f"{type(exc).__name__}: {exc}".split())
                err = err if len(err) <= 300 else err[:297] + "..."
                stale[cid] = (f"{cid}: the code of task {tname!r} changed since the run in {folder} and its docs could "
                              f"not be rebuilt to check that the logged requests are still the ones it builds ({err}); "
                              "make its data folder and retrieval available (TOKRAG_DATA_DIR, the run cache) and "
                              f"rescore again, or {redo}")
                continue
            why = doc_difference(samples, rebuilt)
            if why is None and cell.apply_chat_template:  # rebuilt above: the renderer is cached
                run_sha, now_sha = recorded_chat_template_sha256(data.get("results")), chat_renderer(cell, built)[1]
                if run_sha and now_sha and run_sha != now_sha:
                    why = f"chat template sha256 {run_sha[:12]} in the run -> {now_sha[:12]} now"
        if why is None:
            continue
        stale[cid] = (f"{cid}: the samples in {folder} were generated from other requests than task {tname!r} builds "
                      f"now ({why}); only a metric change can be re-scored, {redo}")
    return stale


_NOT_KEY = ("cell_id", "config_hash", "spec", "task_fingerprint")


def _without_task_code(material: dict[str, Any]) -> str:
    return fingerprint({k: v for k, v in material.items() if k not in _NOT_KEY})


def collect_for_rescore(spec: LeaderboardSpec, runs: Path, *, allow_missing: bool = False,
                        missing_out: list[str] | None = None,
                        tasks: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Like :func:`leaderboards.report.collect`, but a cell whose folder is missing is matched with a
    finished folder that differs only in the task fingerprint; returns ``(loaded, notes)``. Every loaded cell's
    generations must come from the requests the task builds now (:func:`generation_difference`: only a metric change
    is re-scored). With ``allow_missing`` a cell without a usable folder is loaded as None (reported as missing); one
    line per such cell, ``<cell id> (<why>)`` (no finished folder, several candidate folders, generations of other
    requests), is appended to ``missing_out``. ``tasks``: a cache ``{task name: task_for_docs(...)}``, filled here.

    Raises:
        IncompleteRunError: a cell has no finished folder, or several candidates match (unless ``allow_missing``);
            the ``rescore ... --allow-missing`` it offers is left out when no cell is finished (nor found from the
            directory it names).
        StaleGenerationsError: a cell's logged generations were made from other requests than the task builds now
            (prompt, generation or few-shot settings, task metadata; for a cell of earlier task code also its docs, or
            they could not be rebuilt); one line per such cell (unless ``allow_missing``).
        MisplacedRunError: a folder read for a cell holds another cell's run, also with ``allow_missing``.
    """
    tasks = {} if tasks is None else tasks
    read_from: dict[str, Path] = {}  # the folder each loaded cell was read from
    index: dict[str, list[Path]] | None = None
    finished: dict[str, list] = {}  # the finished folders by cell id (other_inputs_note), read with index
    gone: dict[str, list] = {}  # task -> its metadata's data files not found from here (missing_task_data), read once
    loaded, notes, missing = {}, [], []
    for cell, key, mat in cell_keys(spec, runs):
        try:  # MisplacedRunError (another cell's run in the folder) is raised, even with allow_missing
            loaded[cell.cell_id] = (cell, key, load_cell(runs / key, cell.cell_id))
            read_from[cell.cell_id] = runs / key
            continue
        except MisplacedRunError:
            raise
        except IncompleteRunError as exc:
            if not allow_missing and (runs / key / DONE).exists():
                raise  # the cell's own finished folder is damaged: its own error, as report and check give it
            first_error = str(exc)
        if index is None:  # the finished folders, read once: by key material without the task code, and by cell id
            folders = finished_folders(runs)
            index = {}
            for d, cfg in folders:
                index.setdefault(_without_task_code(cfg), []).append(d)
            finished = finished_runs_by_cell(runs, folders)
        # the cell's own folder failed above (damaged: checksums, marker): not a candidate of its own (it raised again)
        hits = [h for h in index.get(_without_task_code(mat), []) if h.name != key]
        if len(hits) == 1:
            loaded[cell.cell_id] = (cell, key, load_cell(hits[0], cell.cell_id))  # checked against its own name
            read_from[cell.cell_id] = hits[0]
            notes.append(f"{cell.cell_id}: task folder changed since the run; re-scoring the samples of {hits[0].name}")
        elif hits:
            missing.append(f"{cell.cell_id} (several finished folders differ only in the task code: "
                           f"{', '.join(h.name for h in hits)}; remove the stale ones)")
        else:
            if cell.task.task not in gone:  # not "inputs changed" for a file not found
                gone[cell.task.task] = missing_task_data(cell.task.task, spec.include_path, [spec.path.parent],
                                                         recorded_task_data(finished, cell.task.task))
            note = other_inputs_note(cell.cell_id, key, mat, finished, gone[cell.task.task], spec.name)
            missing.append(f"{cell.cell_id} ({first_error}{'; ' + note if note else ''})")
        if cell.cell_id not in loaded:
            loaded[cell.cell_id] = (cell, key, None)
    if missing_out is not None:
        missing_out.extend(" ".join(m.split()) for m in missing)
    if missing and not allow_missing:
        cwd = command_directory(spec, [m for ms in gone.values() for m in ms])  # where the task data are found
        partial = len(missing) < len(loaded) or cwd is not None  # none finished: --allow-missing re-scores nothing
        raise IncompleteRunError(f"{len(missing)} of {len(loaded)} cells have no finished run in {runs}:\n  "
                                 + "\n  ".join(missing) + "\nrun: " + run_command(spec, runs, cwd=cwd)
                                 + ("\nor re-score the finished ones: "
                                    + run_command(spec.whole or spec, runs, "--allow-missing", verb="rescore", cwd=cwd)
                                    if partial else ""))
    stale = _stale_cells(spec, runs, loaded, read_from, tasks)
    if stale and not allow_missing:
        raise StaleGenerationsError("\n".join(stale[cid] for cid in loaded if cid in stale))
    for cid, line in stale.items():  # allow_missing: left out, and said why
        cell, key, _ = loaded[cid]
        loaded[cid] = (cell, key, None)
        if missing_out is not None:
            missing_out.append(f"{cid} ({line.removeprefix(cid + ': ')})")
    return loaded, [n for n in notes if n.split(": ", 1)[0] not in stale]


def rescore(spec: LeaderboardSpec, runs_dir: str | os.PathLike | None = None, out_dir: str | os.PathLike | None = None,
            *, timings: bool = True, questions: bool = True, allow_missing: bool = False,
            replace: bool = False) -> tuple[Path, dict[str, Any]]:
    """Re-score every cell of ``spec`` and write the report (same files and place as ``report``, and the same
    refusal to overwrite a report whose results it would lose unless ``replace``).

    Returns ``(report folder, changes)`` (``changes["notes"]``: cells read from a folder of earlier task
    code; ``changes["missing"]``: with ``allow_missing``, one line per cell left out and why, e.g. several
    candidate folders or generations of other requests; ``changes["kept"]``: logged per-sample metrics kept as
    logged, see :func:`rescore_loaded`). Raises IncompleteRunError for unfinished cells and StaleGenerationsError
    for cells whose generations came from other requests than the task builds now (unless ``allow_missing``: they
    show as missing),
    InvariantError when the re-scored samples break an invariant, ReportOverwriteError (see
    :func:`leaderboards.report.check_overwrite`).
    """
    quiet_lm_eval()
    runs = resolve_runs_dir(spec, runs_dir)
    missing: list[str] = []
    tasks: dict[str, Any] = {}  # built once for the check of the generations and the re-scoring
    found, notes = collect_for_rescore(spec, runs, allow_missing=allow_missing, missing_out=missing, tasks=tasks)
    loaded, changes = rescore_loaded(spec, found, tasks)
    changes["notes"] = notes
    changes["missing"] = missing
    out = build_report(spec, runs, out_dir, timings=timings, questions=questions, loaded=loaded, compare_results=False,
                       replace=replace)
    return out, changes


__all__ = ["rescore", "rescore_loaded", "refiltered_samples", "collect_for_rescore", "task_for_docs",
           "generation_difference", "current_task_config", "rebuilt_requests", "doc_difference", "chat_renderer",
           "recorded_chat_template_sha256", "StaleGenerationsError"]
