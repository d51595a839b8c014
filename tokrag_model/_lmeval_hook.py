"""Interpreter start-up hook (imported by ``tokrag_lmeval.pth`` in site-packages).

lm-eval 0.4.13 has no plugin entry points. This hook installs a tiny ``sys.meta_path`` finder that
waits until ``lm_eval.api.registry`` has been executed, then registers the tokrag models there (after
importing ``lm_eval.models`` so that the built-in ``hf`` etc. stay visible). Until lm-eval is imported
it costs one finder lookup per import; it never imports torch or lm-eval itself and never raises.
"""

import sys

_TARGET = "lm_eval.api.registry"


class _AfterImport:
    """Meta-path finder that runs ``callback(module)`` right after module ``fullname`` has been executed."""

    def __init__(self, fullname, callback):
        self.fullname, self.callback, self.busy = fullname, callback, False

    def find_spec(self, fullname, path=None, target=None):  # noqa: D401
        if fullname != self.fullname or self.busy:
            return None
        try:
            import importlib.util

            self.busy = True
            try:
                spec = importlib.util.find_spec(fullname)
            finally:
                self.busy = False
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return None
            loader, finder = spec.loader, self

            class _Wrapped:
                def __getattr__(self, name):
                    return getattr(loader, name)

                def create_module(self, s):
                    return loader.create_module(s)

                def exec_module(self, module):
                    loader.exec_module(module)
                    sys.meta_path[:] = [f for f in sys.meta_path if f is not finder]
                    try:
                        finder.callback(module)
                    except Exception:  # never break an import
                        pass

            spec.loader = _Wrapped()
            return spec
        except Exception:  # never break the interpreter
            return None


def after_import(fullname, callback):
    """Run ``callback(module)`` once module ``fullname`` is imported (at once if it already is).

    Used for lm-eval's model registry (models) and task manager (``tasks.register_task_path``); lm-eval
    0.4.13 has no plugin entry points. Idempotent per (module, callback); never raises.
    """
    try:
        module = sys.modules.get(fullname)
        if module is not None:
            callback(module)
        elif not any(isinstance(f, _AfterImport) and f.fullname == fullname and f.callback is callback
                     for f in sys.meta_path):
            sys.meta_path.insert(0, _AfterImport(fullname, callback))
    except Exception:
        pass


def _after_registry(module=None):
    try:
        import tokrag_model

        tokrag_model.register()
        tokrag_model.register_tasks()
        if module is not None:
            _patch_get_model(module)
        after_import("lm_eval.config.evaluate_config", _patch_process_tasks)
        after_import("lm_eval.utils", _patch_make_table)
        _install_excepthook()
        from .provenance import imported_tree

        imported_tree()  # the commit this process imported, read once now: every record of the run names it
    except Exception as exc:  # pragma: no cover - defensive
        try:
            import logging

            logging.getLogger("tokrag_model").debug("tokrag model registration skipped: %s", exc)
        except Exception:
            pass


def _after_task_manager(module=None):
    """Add the task folder once ``lm_eval.tasks.manager`` has been executed. That module imports lm-eval's registry
    half-way (``lm_eval.api.task``), so :func:`_after_registry`'s ``tasks.register_task_path`` found it in
    ``sys.modules`` without its ``TaskManager`` yet and the patch was lost: ``import lm_eval.tasks`` (lm-eval's own
    pattern, ``lm_eval.tasks.TaskManager()``) before the registry indexed none of tokrag's tasks. Never raises."""
    try:
        import tokrag_model

        tokrag_model.register_tasks()
    except Exception:  # pragma: no cover - defensive
        pass


def _patch_task_index(module):
    """Keep lm-eval's index of its own task folder on disk once ``lm_eval.tasks._index`` is imported
    (:func:`tokrag_model._task_index_cache.patch_task_index`: ~7 s CPU of every ``TaskManager()`` after the first
    process). Never raises."""
    try:
        from tokrag_model._task_index_cache import patch_task_index

        patch_task_index(module)
    except Exception as exc:  # pragma: no cover - defensive: lm-eval's own build stays
        try:
            import logging

            logging.getLogger("tokrag_model").debug("lm-eval task index cache not installed: %s", exc)
        except Exception:
            pass


def _patch_task_download(module):
    """Make ``datasets`` identify the local data files of an lm-eval task (``dataset_path: json`` + ``data_files``)
    by their content once ``lm_eval.api.task`` is imported (:func:`tokrag_model._local_data_files.patch_task_download`:
    by mtime alone, a file edited with its mtime put back gave its old rows). Never raises."""
    try:
        from tokrag_model._local_data_files import patch_task_download

        patch_task_download(module)
    except Exception as exc:  # pragma: no cover - defensive: datasets' own identity stays
        try:
            import logging

            logging.getLogger("tokrag_model").debug("local data file content keys not installed: %s", exc)
        except Exception:
            pass


def _patch_get_model(registry):
    """``--model rag-standrd``: lm-eval's ValueError lists all ~40 model names; ours is one line with the
    closest names (a :class:`ConfigError`, still a ValueError), marked ``_tokrag_before_load``: no model is built
    yet, so ``lm_eval`` exits 2 as for every other pre-load refusal (:func:`_patch_harness`; it exited 1 before
    s57 h4)."""
    original = registry.get_model
    if getattr(original, "_tokrag", False):
        return

    def get_model(model_name):
        try:
            return original(model_name)
        except ValueError as exc:
            from retrieval.errors import ConfigError, unknown_name
            from tokrag_model import MODEL_CLASSES

            if str(model_name) in registry.model_registry.keys():
                raise
            problem = ConfigError(unknown_name("--model", str(model_name), registry.model_registry.keys(), list_all=0,
                                               hint=f"the tokrag methods are {', '.join(MODEL_CLASSES)}; a method of "
                                                    "your own: add its line to METHODS in tokrag_model/methods/__init__.py"))
            problem._tokrag_before_load = True  # type: ignore[attr-defined]  (one line, exit 2 under lm_eval: _patch_harness)
            raise problem from exc

    get_model._tokrag = True  # type: ignore[attr-defined]
    get_model.__doc__ = original.__doc__
    registry.get_model = get_model


_TASKS_NOT_FOUND = "Tasks not found: "


def _reuses_request_cache(cache_requests: object) -> bool:
    """Whether lm-eval's ``cache_requests`` setting (the CLI's dict from ``--cache_requests true|refresh|delete``,
    or a ``--config`` YAML's string or bool, read as :func:`cache_requests_dict` reads it) would *read* cached
    requests: ``true`` does; ``refresh`` rebuilds them (and rewrites the cache), ``delete`` removes it. A value
    :func:`cache_requests_dict` refuses reads nothing here (it is refused there)."""
    from retrieval.errors import ConfigError

    try:
        setting = cache_requests_dict(cache_requests)
    except ConfigError:  # refused where the setting is read (the hook, before the task set-up)
        return False
    return isinstance(setting, dict) and bool(setting.get("cache_requests")) \
        and not setting.get("rewrite_requests_cache") and not setting.get("delete_requests_cache")


def cache_requests_dict(cache_requests: object) -> object:
    """lm-eval's ``cache_requests`` as the dict its CLI makes of ``--cache_requests true|refresh|delete``
    (``lm_eval._cli.utils.request_caching_arg_to_dict``): a ``--config`` YAML's ``cache_requests: refresh`` (a
    string) or ``cache_requests: true`` (a bool) reached lm-eval as is, and its run ended in ``AttributeError: 'str'
    object has no attribute 'get'`` (``lm_eval/_cli/run.py``) after the task set-up. None and ``false`` give {} (no
    caching); a dict is returned unchanged.

    Raises:
        ConfigError: a value other than true, refresh, delete or false (one line naming the setting).
    """
    if cache_requests is None or isinstance(cache_requests, dict):
        return cache_requests
    text = str(cache_requests).strip().lower()
    if text in ("false", "none", ""):
        return {}
    if text not in ("true", "refresh", "delete"):
        from retrieval.errors import ConfigError

        raise ConfigError(f"cache_requests: {cache_requests!r}: expected true, refresh or delete (lm-eval's "
                          "--cache_requests; in a --config file e.g. 'cache_requests: refresh'), or leave it out")
    return {"cache_requests": text in ("true", "refresh"), "rewrite_requests_cache": text == "refresh",
            "delete_requests_cache": text == "delete"}


def check_cache_requests(task_manager: object, names: object, cache_requests: object, selected: object = None) -> None:
    """Refuse ``--cache_requests true`` for a run that selects one of this package's tasks, or a task that lm-eval
    loads from local data (``dataset_path: json`` + ``data_files``, a local dataset folder:
    :func:`tokrag_model._local_data_files.task_local_data`), before the model loads.

    lm-eval keys its request cache by task name, few-shot count, rank, chat template, system prompt and tokenizer only
    (``lm_eval/api/task.py``, ``build_all_requests``), never by the task's ``--metadata``: a second run of
    ``rag_qa_bm25`` with another ``questions`` file (or corpus, hits, noise, ``$TOKRAG_DATA_DIR``) read the first run's
    prompts and scored them against its own documents (the question "what is the capital of france" got the prompt
    of "who wrote hamlet") while the results recorded the second file's hash. Likewise a user task over a local data
    file, run again after an edit of the file, read the prompts of its old rows (the rows themselves are read by
    content: :mod:`tokrag_model._local_data_files`). ``refresh`` (rebuild and rewrite) and ``delete`` pass; other
    tasks (hub data sets, a task's own ``custom_dataset`` loader) are left to lm-eval. ``names`` are lm-eval's resolved
    task names (or a ``--tasks`` YAML's config dicts), ``task_manager`` its :class:`~lm_eval.tasks.TaskManager`;
    ``selected`` the tasks lm-eval builds for them (:func:`tasks.precheck._expand_selected`; None: expanded here when
    needed).

    Raises:
        ConfigError: one line saying why and what to pass instead.
    """
    if not _reuses_request_cache(cache_requests):
        return
    from retrieval.errors import ConfigError
    from tasks.precheck import _expand_selected, _selects_ours

    names = list(names or [])
    if _selects_ours(task_manager, names, selected):
        raise ConfigError("--cache_requests true: lm-eval keys its request cache by task name only, so a tokrag task "
                          "would reuse prompts built from another questions file, corpus, hits or noise setting; leave "
                          "it off (retrieval is already cached by tokrag's run cache) or pass --cache_requests refresh, "
                          "which rebuilds the prompts")
    from tokrag_model._local_data_files import task_local_data

    for task in _expand_selected(task_manager, names) if selected is None else selected:
        found = task_local_data(task.cfg)
        if found is not None:
            raise ConfigError(f"--cache_requests true: lm-eval keys its request cache by task name only, so task "
                              f"'{task.name}' would reuse the prompts built from an earlier version of its local data "
                              f"{found} once that is edited; leave it off or pass --cache_requests refresh, which "
                              "rebuilds the prompts")


def _ours_loaded() -> bool:
    """Whether the imported ``tasks`` package is this project's (registered by ``tokrag_model.register_tasks`` only
    then), so that its prechecks may run."""
    from pathlib import Path

    ours = sys.modules.get("tasks")
    try:
        return ours is not None and Path(str(getattr(ours, "__file__", ""))).resolve().parent.parent == \
            Path(__file__).resolve().parent.parent
    except (OSError, RuntimeError):
        return False


def check_loaded_run(task_manager: object, names: object, *, model: object = None, model_args: object = None,
                     metadata: object = None, output_path: object = None, use_cache: object = None,
                     cache_requests: object = None, gen_kwargs: object = None, limit: object = None, seed: object = None,
                     num_fewshot: object = None, apply_chat_template: object = None, samples: object = None,
                     loaded: bool = False, log_samples: object = None) -> None:
    """The pre-load checks of a run whose tasks ``task_manager`` (lm-eval's ``TaskManager``) resolved: ``names`` (task
    and group names, or a ``--tasks`` YAML's config dicts), expanded once (:func:`tasks.precheck._expand_selected`) for
    :func:`check_cache_requests` (stale prompts), :func:`tasks.precheck.check_run_arguments` (lost or wrong runs:
    ``--apply_chat_template`` with a plain-text task such as ``wiki_lm_bm25``, sampling, ``--limit``, ...),
    :func:`tasks.utils.check_metadata_model_args` (a ``--metadata`` key that is a tokrag model argument, ``k``) and
    :func:`tasks.precheck.check_selected_tasks` (QA metadata, corpus, questions file, ``--num_fewshot``, a ``--samples``
    index past a QA task's documents), :func:`tasks.precheck.check_samples_order` (a ``--samples`` list with a repeated
    or out-of-order index), then :func:`tasks.precheck.check_selfrag_lm_questions` (``rag-selfrag-filter`` on a
    rolling task whose docs lack its ``query_field``: the task's first docs are built; ``samples``: lm-eval's
    ``--samples``, which skips it; so does ``loaded``: a model object, ``simple_evaluate(model=lm)``, whose
    ``query_field`` and tokenizer are its own, not ``model_args``', and which refuses such a doc itself before any
    forward pass; nor is a ``loaded`` object's generation budget checked against ``max_length``, its own:
    :func:`tasks.precheck.check_run_arguments`).
    ``metadata``: what the tasks get (lm-eval merges ``model_args`` | ``metadata``); ``model``: the model's name
    (a tokrag method name is checked as such). Run by lm-eval's CLI (:func:`_patch_process_tasks`) and by
    ``lm_eval.simple_evaluate`` called from Python (:func:`patch_evaluator`).

    Raises:
        ConfigError / DataError / OfflineError: the check's one line.
    """
    from tasks.precheck import (_expand_selected, _is_ours, _model_args, check_run_arguments, check_samples_order,
                                check_selected_tasks, check_selfrag_lm_questions)
    from tasks.utils import check_metadata_model_args

    names = list(names or [])
    selected = _expand_selected(task_manager, names)  # the tasks lm-eval builds: once, for the checks below
    check_cache_requests(task_manager, names, cache_requests, selected)  # stale prompts
    check_run_arguments(task_manager, names, model=model, output_path=output_path, use_cache=use_cache,  # lost/wrong runs
                        gen_kwargs=gen_kwargs, limit=limit, model_args=model_args, seed=seed,
                        apply_chat_template=apply_chat_template, samples=samples, selected=selected, loaded=loaded,
                        log_samples=log_samples)  # --log_samples: its samples_<task>_<date>.jsonl under --output_path
    ours_selected = [t.name for t in selected if _is_ours(t)]
    if ours_selected:  # --metadata '{"k": 2}': read by neither the model nor the task
        check_metadata_model_args(metadata, _model_args(model_args), model, ours_selected[0])
    check_selected_tasks(task_manager, names, metadata, gen_kwargs, model_args,  # bad QA metadata: before the load
                         num_fewshot=num_fewshot, selected=selected, samples=samples)  # --samples past a task's docs
    check_samples_order(task_manager, names, model=model, samples=samples, selected=selected)  # after: index past docs
    if not loaded:  # a doc without a query (a model object is already loaded and checks its own query_field)
        check_selfrag_lm_questions(task_manager, names, model, model_args, limit, samples, selected)


def _patch_process_tasks(module):
    """``--tasks nq_oracle_bm25_noise30``: lm-eval raises ``ValueError: Tasks not found: ...`` after a
    14-line traceback; ours names each unknown task with the closest task names (one line). A copied task YAML that
    misses its ``include`` / ``!function`` module (``--tasks /folder``, a ``.yaml`` path or glob: lm-eval's
    ``FileNotFoundError``; ``--include_path /folder --tasks NAME``: skipped by lm-eval's index) is named in one line
    (:func:`tasks.precheck.check_task_paths`, :func:`tasks.precheck.check_include_path_tasks`); a ``--tasks`` path
    that does not exist is named as such (:func:`tasks.precheck.check_task_files_exist`). ``--cache_requests true``
    with a tokrag task, or a task lm-eval loads from local data files, is refused (:func:`check_cache_requests`:
    lm-eval's request cache ignores the task's metadata and its data file's content); a ``--config`` file's
    ``cache_requests: refresh`` (a string or bool) becomes lm-eval's dict first (:func:`cache_requests_dict`), which
    lm-eval's run otherwise read with ``.get`` and crashed.
    Then the run arguments
    (a ``--metadata`` key that is a tokrag model argument, ``k``: :func:`tasks.utils.check_metadata_model_args`;
    ``--apply_chat_template`` with a plain-text task such as ``wiki_lm_bm25`` among them: refused)
    and the QA tasks' metadata, corpus and bring-your-own questions file are checked
    (:func:`tasks.precheck.check_selected_tasks`), and ``--apply_chat_template`` with a tokrag method whose tokenizer
    has no chat template is refused where the model's files tell it
    (:func:`tokrag_model.base.check_chat_template_before_load`), before lm-eval loads the model. A tokrag error raised here is marked
    ``_tokrag_before_load`` (an argument error: exit 2 under ``lm_eval``, :func:`_patch_harness`)."""
    cls = getattr(module, "EvaluatorConfig", None)
    if cls is None or getattr(cls.process_tasks, "_tokrag", False):
        return
    original = cls.process_tasks

    def process_tasks(self, metadata=None):
        try:
            return _process_tasks(self, metadata)
        except Exception as exc:
            try:
                from retrieval.errors import TokragError

                if isinstance(exc, TokragError):
                    exc._tokrag_before_load = True  # type: ignore[attr-defined]  (exit 2 under lm_eval: _patch_harness)
            except Exception:
                pass
            raise

    def _process_tasks(self, metadata=None):
        from retrieval.errors import ConfigError

        requested, ours = self.tasks, _ours_loaded()
        if not isinstance(getattr(self, "cache_requests", None), (dict, type(None))):  # a --config file's string/bool
            self.cache_requests = cache_requests_dict(self.cache_requests)
        try:
            manager = original(self, metadata)
        except Exception as exc:
            text = str(exc)
            if ours and not text.startswith(_TASKS_NOT_FOUND):  # a copied YAML without its _qa_template / utils.py
                from tasks.precheck import check_task_paths

                try:
                    check_task_paths(requested)
                except ConfigError as problem:
                    raise problem from exc
                except Exception:  # noqa: BLE001 - a fault of the check: lm-eval's own error stands
                    pass
            if not isinstance(exc, ValueError) or not text.startswith(_TASKS_NOT_FOUND):
                raise
            from retrieval.errors import unknown_name
            from tasks import indexed_task_names

            names = [t.strip() for t in text[len(_TASKS_NOT_FOUND):].split(",") if t.strip()]
            if not names:  # --tasks ' ': no name at all (a tokrag method's run is refused earlier: check_run_command)
                from tokrag_model.eval_cli import check_tasks_given

                try:
                    check_tasks_given([])
                except ConfigError as problem:
                    raise problem from exc
            if ours:  # --tasks path/that/is/not/there.yaml; --include_path /copies --tasks NAME whose YAML was skipped
                from tasks.precheck import check_include_path_tasks, check_task_files_exist

                try:
                    check_task_files_exist(requested)
                    check_include_path_tasks(names, getattr(self, "include_path", None))
                except ConfigError as problem:
                    raise problem from exc
                except Exception:  # noqa: BLE001 - a fault of the check: lm-eval's own error stands
                    pass
            known = indexed_task_names()
            parts = [unknown_name("task", name, known, list_all=0) for name in names]
            own = ("" if getattr(self, "include_path", None) else  # a name you made up: most likely your own YAML
                   "; a task YAML of your own needs --include_path <the folder that holds it>")
            raise ConfigError("; ".join(parts) + "; 'lm_eval ls tasks' lists them all" + own) from exc
        if ours:
            from tasks.precheck import check_include_path_tasks

            try:
                check_include_path_tasks(requested, getattr(self, "include_path", None))
            except ConfigError:
                raise
            except Exception:  # noqa: BLE001 - a fault of the check must not stop a run lm-eval resolved
                pass
            from tasks.precheck import check_task_path_metadata

            check_task_path_metadata(requested, self.metadata, manager)  # --tasks my.yaml whose metadata: drops the include's
            check_loaded_run(manager, self.tasks or [], model=getattr(self, "model", None),
                             model_args=getattr(self, "model_args", None), metadata=self.metadata,
                             output_path=getattr(self, "output_path", None), use_cache=getattr(self, "use_cache", None),
                             cache_requests=getattr(self, "cache_requests", None),
                             gen_kwargs=getattr(self, "gen_kwargs", None), limit=getattr(self, "limit", None),
                             seed=getattr(self, "seed", None), num_fewshot=getattr(self, "num_fewshot", None),
                             apply_chat_template=getattr(self, "apply_chat_template", None),
                             samples=getattr(self, "samples", None), log_samples=getattr(self, "log_samples", None))
            from tasks.precheck import check_system_instruction

            check_system_instruction(manager, self.tasks or [], getattr(self, "system_instruction", None))
            manager._tokrag_prechecked = True  # type: ignore[attr-defined]  (simple_evaluate then skips them: once)
        from tokrag_model.base import check_chat_template_before_load

        check_chat_template_before_load(getattr(self, "model", None), getattr(self, "model_args", None),  # a base model
                                        getattr(self, "apply_chat_template", None))
        return manager

    process_tasks._tokrag = True  # type: ignore[attr-defined]
    process_tasks.__doc__ = original.__doc__
    cls.process_tasks = process_tasks
    _patch_validate_arguments(cls)


def _patch_validate_arguments(cls):
    """lm-eval's own cross-checks of its run flags (``EvaluatorConfig._validate_arguments``: ``--fewshot_as_multiturn``
    without ``--apply_chat_template``, ``--samples`` with ``--limit``, ``--log_samples`` or ``--predict_only`` without
    ``--output_path``) raise a ValueError that ended a tokrag method's ``lm_eval`` / ``tokrag eval`` run with a
    20-line traceback, where tokrag's own refusals of its flags are one line. For a run whose model (``--model``, else
    the ``--config`` file's) is a tokrag method the ValueError becomes a ConfigError with lm-eval's message, marked
    ``_tokrag_before_load`` (one line, exit 2: :func:`_patch_harness`); other models keep lm-eval's traceback."""
    original = getattr(cls, "_validate_arguments", None)
    if original is None or getattr(original, "_tokrag", False):
        return

    def _validate_arguments(self):
        try:
            result = original(self)
        except ValueError as exc:
            from retrieval.errors import ConfigError, TokragError
            from tokrag_model.methods import METHODS

            model = getattr(self, "model", None)
            if isinstance(exc, TokragError) or not (isinstance(model, str) and model in METHODS):
                raise
            problem = ConfigError(str(exc))
            problem._tokrag_before_load = True  # type: ignore[attr-defined]
            raise problem from exc
        from retrieval.errors import TokragError
        from tokrag_model.methods import METHODS

        model = getattr(self, "model", None)
        if isinstance(model, str) and model in METHODS:
            try:
                check_result_loggers(self)
                if getattr(self, "check_integrity", False):
                    check_integrity_runnable()
                check_include_folders(getattr(self, "include_path", None))
            except TokragError as exc:
                exc._tokrag_before_load = True  # type: ignore[attr-defined]  (one line, exit 2: _patch_harness)
                raise
        return result

    _validate_arguments._tokrag = True  # type: ignore[attr-defined]
    _validate_arguments.__doc__ = original.__doc__
    cls._validate_arguments = _validate_arguments


_PUSH_KEYS = ("push_results_to_hub", "push_samples_to_hub")


def check_result_loggers(cfg: object) -> None:
    """lm-eval's result loggers of a run (``cfg``: its ``EvaluatorConfig``, the command line merged with the
    ``--config`` file), checked before lm-eval builds them and long before the model loads: ``--wandb_args`` without
    the ``wandb`` package (lm-eval's ``WandbLogger`` logged a warning, then ``UnboundLocalError: cannot access local
    variable 'wandb'``, a traceback), ``--trackio_args`` without ``trackio`` (an ImportError traceback),
    ``--wandb_config_args`` without ``--wandb_args`` (ignored without a word),
    ``--hf_hub_log_args`` with a key lm-eval's ``EvaluationTracker`` does not take (a TypeError traceback), and with
    ``push_results_to_hub`` / ``push_samples_to_hub`` true: without a token (lm-eval reads ``token=`` there or the
    ``HF_TOKEN`` environment variable only; its ValueError traceback), with ``HF_HUB_OFFLINE`` set (the whole run
    went by, then an ``OfflineModeIsEnabled`` traceback, exit 1, nothing pushed; without ``hub_results_org`` the
    traceback came before the load, from ``whoami``), without ``--output_path`` or ``output_path=`` in
    ``--hf_hub_log_args`` (lm-eval writes nothing and so pushes
    nothing, exit 0), and ``push_samples_to_hub`` without ``--log_samples`` (lm-eval only warns, and pushes no samples).
    Run by the start-up hook's patch of ``EvaluatorConfig._validate_arguments`` for a tokrag method's run; another
    model's run is left to lm-eval.

    Raises:
        ConfigError: one line naming the flag and what to do.
    """
    import importlib.util
    import inspect
    import os

    from retrieval.errors import ConfigError

    if getattr(cfg, "wandb_args", None) and importlib.util.find_spec("wandb") is None:
        raise ConfigError("--wandb_args: the wandb package is not installed, so lm-eval cannot log the run to Weights "
                          "& Biases; pip install 'wandb>=0.13.6' (or lm_eval[wandb]), or drop --wandb_args")
    if getattr(cfg, "wandb_config_args", None) and not getattr(cfg, "wandb_args", None):
        raise ConfigError("--wandb_config_args: lm-eval logs to Weights & Biases only with --wandb_args, and without "
                          "it ignores these; add --wandb_args project=NAME, or drop --wandb_config_args")
    if getattr(cfg, "trackio_args", None) and importlib.util.find_spec("trackio") is None:
        raise ConfigError("--trackio_args: the trackio package is not installed, so lm-eval cannot log the run to "
                          "Trackio; pip install trackio (or lm_eval[trackio]), or drop --trackio_args")
    hub = getattr(cfg, "hf_hub_log_args", None)
    if not isinstance(hub, dict) or not hub:
        return
    try:
        from lm_eval.loggers.evaluation_tracker import EvaluationTracker

        # output_path is a key too (named last): lm-eval's run sets it from --output_path, and without that flag the
        # tracker writes (and pushes) under the one given here
        known = [k for k in inspect.signature(EvaluationTracker.__init__).parameters if k not in ("self", "output_path")]
        known.append("output_path")
    except Exception:  # noqa: BLE001 - another lm-eval layout: its own errors stand
        known = None
    unknown = [k for k in hub if known is not None and k not in known]
    if unknown:
        import difflib

        close = difflib.get_close_matches(str(unknown[0]), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"--hf_hub_log_args: unknown key {unknown[0]!r}{hint}; lm-eval's EvaluationTracker takes "
                          f"{', '.join(known)}")
    pushes = [k for k in _PUSH_KEYS if hub.get(k)]
    if not pushes:
        return
    flag = f"--hf_hub_log_args {pushes[0]}={hub[pushes[0]]}"
    if not (hub.get("token") or os.environ.get("HF_TOKEN")):
        raise ConfigError(f"{flag}: no Hugging Face token (lm-eval reads only token= in --hf_hub_log_args or the "
                          f"HF_TOKEN environment variable, not a saved 'hf auth login'); set HF_TOKEN to a token with "
                          f"write access, or drop {pushes[0]}")
    try:
        from huggingface_hub import constants

        offline = bool(constants.HF_HUB_OFFLINE)
    except Exception:  # noqa: BLE001 - read the variable as huggingface_hub does
        offline = os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")
    if offline:
        raise ConfigError(f"{flag}: HF_HUB_OFFLINE is set, so the push to the hub would fail after the whole run; "
                          f"unset HF_HUB_OFFLINE to push, or drop {pushes[0]} (--output_path keeps the results "
                          f"on disk)")
    if not (getattr(cfg, "output_path", None) or hub.get("output_path")):
        raise ConfigError(f"{flag}: lm-eval pushes the files it writes under --output_path, and without it writes "
                          f"and pushes nothing; add --output_path DIR")
    if hub.get("push_samples_to_hub") and not getattr(cfg, "log_samples", False):
        raise ConfigError(f"--hf_hub_log_args push_samples_to_hub={hub['push_samples_to_hub']}: lm-eval pushes the "
                          f"samples it logs, and without --log_samples logs none; add --log_samples")


def check_include_folders(include_path: object) -> None:
    """``--include_path`` (a path, or the ``--config`` file's list of them) of a tokrag method's run, checked before
    lm-eval indexes it: lm-eval globs ``<path>/**/*.yaml``, so a folder that does not exist (a relative path from
    another working directory, a typo) or a YAML file given instead of its folder added no task without a word: the
    run said ``unknown task 'my_task'`` with no hint at the path, or ran the package's task of that name instead of
    the user's copy. Folders joined with ``:`` (the form lm-eval's ``lm-eval ls --help`` shows) are one path that does
    not exist for ``lm_eval run``: that line says so, and that a ``--config`` file's ``include_path`` takes a list.

    Raises:
        ConfigError: one line naming the path, what it is, and what to give instead.
    """
    import os
    from pathlib import Path

    from retrieval.errors import ConfigError

    entries = include_path if isinstance(include_path, (list, tuple)) else [include_path]
    for entry in entries:
        if not isinstance(entry, (str, os.PathLike)) or not str(entry).strip():
            continue
        path = Path(entry)
        try:
            if path.is_dir():
                continue
            is_file = path.is_file()
        except OSError:  # unreadable: lm-eval's own behaviour stands
            continue
        if is_file:
            raise ConfigError(f"--include_path {entry} is a file; lm-eval indexes the *.yaml files under a folder and "
                              f"would add no task from it: give its folder (--include_path {path.parent}), or pass the "
                              f"YAML itself to --tasks")
        where = "" if path.is_absolute() else f" (a relative path, read from {Path.cwd()})"
        parts = [p for p in str(entry).split(os.pathsep) if p.strip()]
        if len(parts) > 1 and all(Path(p).is_dir() for p in parts):  # the form lm-eval's `ls --help` shows
            raise ConfigError(f"--include_path {entry}: no such folder, so lm-eval would add no task from it: lm-eval "
                              f"run takes one folder here and does not split it at '{os.pathsep}'; give one folder, or "
                              f"list them in a --config file (include_path: [{', '.join(parts)}])")
        raise ConfigError(f"--include_path {entry}: no such folder{where}, so lm-eval would add no task from it; give "
                          f"the folder that holds your task YAMLs")


def check_integrity_runnable() -> None:
    """``--check_integrity`` (``simple_evaluate(check_integrity=True)``) of a tokrag method's run, checked before the
    model load: lm-eval then runs its own task tests (``run_task_tests``: pytest on ``tests/test_version_stable.py``
    of a source checkout of lm-evaluation-harness, found within 3 folders above ``lm_eval/evaluator_utils.py``) after
    the model load, and an install from a wheel (site-packages) has no such folder, so the run stopped there with
    ``FileNotFoundError: Unable to find package root`` (a traceback, exit 1; lm-eval's ``hf`` the same). Nothing is
    refused when lm-eval's tests are there.

    Raises:
        ConfigError: one line naming the flag, the lm_eval install and what to do.
    """
    import pathlib

    from retrieval.errors import ConfigError

    try:
        import lm_eval.evaluator_utils as utils

        utils.find_test_root(start_path=pathlib.Path(utils.__file__))
    except FileNotFoundError:
        where = pathlib.Path(utils.__file__).resolve().parent
        raise ConfigError(f"--check_integrity: lm-eval runs its own task tests (tests/test_version_stable.py of a "
                          f"source checkout of lm-evaluation-harness) after the model load, and this lm_eval install "
                          f"({where}) has none, so the run would stop there; drop --check_integrity, or install "
                          f"lm-eval from a source checkout (pip install -e)") from None
    except Exception:  # noqa: BLE001 - another lm-eval layout: its own behaviour stands
        return


def add_n_column(table, result_dict):
    """Insert an ``n`` column (documents evaluated per task, lm-eval's ``n-samples[task]['effective']``) after
    the first column of lm-eval's Markdown results table; rows of groups and continuation rows stay blank.
    Returns ``table`` unchanged when it is not such a table or ``result_dict`` has no sample counts."""
    counts = result_dict.get("n-samples") or {}
    lines = table.split("\n")
    if not counts or len(lines) < 2 or not lines[0].startswith("|"):
        return table
    by_name = {}
    for key, res in (result_dict.get("results") or {}).items():
        if key in counts:
            n = counts[key].get("effective", counts[key].get("original"))
            by_name[str(res.get("alias", key)).strip()] = "" if n is None else str(n)
    cells = []
    for i, line in enumerate(lines):
        parts = line.split("|")
        if len(parts) < 3:
            cells.append(None)
            continue
        name = parts[1].strip()
        name = name[2:].strip() if name.startswith("- ") else name
        cells.append("n" if i == 0 else "" if i == 1 else by_name.get(name, ""))
    width = max(3, *(len(c) for c in cells if c is not None))
    out = []
    for i, (line, cell) in enumerate(zip(lines, cells)):
        if cell is None:
            out.append(line)
            continue
        parts = line.split("|")
        new = "-" * (width - 1) + ":" if i == 1 else cell.rjust(width)
        out.append("|".join(parts[:2] + [new] + parts[2:]))
    return "\n".join(out)


def _patch_make_table(module):
    """lm-eval's results table gets an ``n`` column (issue 12.6: ``--limit 0.002`` evaluated 6 docs per task and
    only the results JSON said so)."""
    original = getattr(module, "make_table", None)
    if original is None or getattr(original, "_tokrag", False):
        return

    def make_table(result_dict, column="results", sort_results=False):
        table = original(result_dict, column, sort_results)
        try:
            return add_n_column(table, result_dict) if column == "results" else table
        except Exception:  # never break lm-eval's summary
            return table

    make_table._tokrag = True  # type: ignore[attr-defined]
    make_table.__doc__ = original.__doc__
    module.make_table = make_table


def _program() -> str:
    """The command the user typed, for an error line: ``lm_eval`` (the console script, or ``python -c``), a script's
    file name (``reference_cells.py``), or ``python -m package.module``."""
    from pathlib import Path

    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if isinstance(name, str) and name and name != "__main__":
        return f"python -m {name.removesuffix('.__main__')}"
    arg0 = Path(sys.argv[0]).name if sys.argv and sys.argv[0] not in ("", "-c") else ""
    return arg0 or "lm_eval"


def _install_excepthook():
    """Under plain ``lm_eval`` (and any program that imports lm-eval's registry), print a tokrag error (bad model
    argument, offline hub id, Java set-up, bad data) as one ``<program>: error: ...`` line instead of a stack trace
    (``TOKRAG_TRACEBACK=1`` keeps it); the program is :func:`_program`'s (``lm_eval`` for lm-eval's CLI)."""
    import os

    if os.environ.get("TOKRAG_TRACEBACK", "") not in ("", "0") or getattr(sys.excepthook, "_tokrag", False):
        return
    previous = sys.excepthook

    def hook(etype, value, tb):
        try:
            from retrieval.errors import TokragError

            exc, seen = value, set()
            while exc is not None and id(exc) not in seen:
                seen.add(id(exc))
                if isinstance(exc, TokragError):
                    sys.stderr.write(f"{_program()}: error: {exc}\n(set TOKRAG_TRACEBACK=1 for the stack trace)\n")
                    return
                exc = exc.__cause__ or exc.__context__
        except Exception:
            pass
        previous(etype, value, tb)

    hook._tokrag = True  # type: ignore[attr-defined]
    sys.excepthook = hook


_JSON_EXAMPLES = {
    "model_args": '{"pretrained": "smollm2-135m-instruct", "k": 3}',
    "metadata": '{"hits": 3}',
    "gen_kwargs": '{"max_gen_toks": 32}',
}
"""A valid JSON example per lm-eval flag (by its argparse ``dest``) for :func:`json_argument_error`: ``hits`` is task
metadata, ``k`` a model argument, so one example for every flag sent users to an unknown-key error."""


def json_argument_error(flag, value, detail, dest=None):
    """The one line for a ``--metadata`` / ``--model_args`` / ``--gen_kwargs`` value that lm-eval reads as JSON (it
    holds a ``{``) and that is not valid JSON; ``detail`` is :mod:`json`'s message, ``dest`` the flag's argparse
    destination (``-a`` is ``model_args``; None: ``flag`` without its dashes), which picks the example
    (:data:`_JSON_EXAMPLES`; another flag: ``{"key": "value"}``)."""
    text = str(value)
    if text.lstrip().startswith("{"):
        example = _JSON_EXAMPLES.get(dest or str(flag).lstrip("-"), '{"key": "value"}')
        return (f"{flag}: not valid JSON ({detail}): {text}; write a JSON object with double-quoted keys and strings, "
                f"e.g. {flag} '{example}', or key=value pairs without braces")
    return (f"{flag}: {text!r} holds a '{{', so lm-eval reads it as JSON, and it is not valid JSON ({detail}); write "
            f"the whole argument as one JSON object, e.g. {flag} '{{\"key\": \"value with {{braces}}\"}}'")


_KEYED_FLAGS = ("model_args", "metadata", "gen_kwargs")
"""lm-eval's ``MergeDictAction`` flags (by argparse ``dest``) whose keys a tokrag run reads."""
_TYPED_DICT_ARGS: dict[int, tuple[object, list]] = {}
"""``id(namespace)`` -> (the namespace, [(dest, option, values)]): the ``--model_args`` / ``--metadata`` /
``--gen_kwargs`` values as typed, noted while lm-eval's parser fills ``namespace`` (its dict keeps the last of a
repeated key), read by :func:`check_run_command` and dropped there."""


def _note_dict_argument(namespace, dest, option, values):
    entry = _TYPED_DICT_ARGS.get(id(namespace))
    if entry is None or entry[0] is not namespace:
        entry = _TYPED_DICT_ARGS[id(namespace)] = (namespace, [])
    entry[1].append((dest, option, [str(v) for v in (values if isinstance(values, (list, tuple)) else [values])]))


def typed_pairs(values):
    """The ``(key, value as typed)`` pairs of one occurrence of an lm-eval ``MergeDictAction`` flag (its ``values``,
    read as lm-eval reads them: the first value as a JSON object when it is one, its other values then ignored; else
    every value as ``key=value,...`` split by lm-eval's ``split_top_level``), in order, a repeated key kept each
    time; in a JSON object a key repeated in a nested object is listed too (``"outer.inner"``). An item without
    ``=`` is skipped (lm-eval refuses it itself)."""
    return [(key, text) for key, text, _ in _typed_items(values)]


def _typed_items(values):
    """:func:`typed_pairs` as ``(key, value as typed, value as lm-eval reads it)``: the JSON value, or
    ``handle_cli_value_string`` of a ``key=value`` item's text (``True`` and ``true`` are both ``True``)."""
    import json

    from lm_eval._cli.utils import handle_cli_value_string, split_top_level

    values = [str(v) for v in values]
    if not values:
        return []
    try:
        parsed = json.loads(values[0], object_pairs_hook=_Pairs)
    except json.JSONDecodeError:  # key=value pairs
        parsed = None
    except (ValueError, RecursionError):  # JSON past Python's digit or recursion limit: lm-eval's parser refuses it
        return []  # (the hook's one line, retrieval.io.json_limit_error's); no pairs to read here
    if isinstance(parsed, _Pairs):
        out = []

        def walk(obj, prefix=""):
            for key, value in obj.pairs:
                if isinstance(value, _Pairs):
                    walk(value, f"{prefix}{key}.")
                plain = _plain(value)
                out.append((f"{prefix}{key}", json.dumps(plain), plain))

        try:
            walk(parsed)
        except RecursionError:  # objects nested about as deep as the reader follows: as above
            return []
        return out
    out = []
    for value in values:
        for item in split_top_level(value):
            if "=" in item:
                key, text = item.split("=", 1)
                out.append((key, text, handle_cli_value_string(text)))
    return out


def _same_value(a, b) -> bool:
    """Whether lm-eval's dict holds the same value whichever of ``a`` and ``b`` it keeps: equal and of the same
    JSON form (``True`` and ``true``, a JSON ``"x"`` and ``x``, an object's keys in another order pass; ``3`` and
    ``3.0``, ``1`` and ``True`` do not)."""
    import json

    if a != b:
        return False
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError):  # not JSON (a tuple key, a set from ast.literal_eval): as Python writes it
        return repr(a) == repr(b)


class _Pairs:
    """A JSON object as its list of pairs (:func:`typed_pairs`: :mod:`json` would keep the last of a repeated key)."""

    def __init__(self, pairs):
        self.pairs = list(pairs)

    def plain(self):
        return {k: _plain(v) for k, v in self.pairs}


def _plain(value):
    if isinstance(value, _Pairs):
        return value.plain()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def check_repeated_keys(typed):
    """Refuse a key given twice with two values in ``--model_args``, ``--metadata`` or ``--gen_kwargs`` (``typed``:
    ``[(dest, option, values)]`` per occurrence of a flag, in order): lm-eval keeps the last silently
    (``layer=5,layer=20`` ran layer 20 and the results recorded only that; ``'{"hits": 2, "hits": 5}'`` gave hits 5),
    whether within one value, across a flag's values or across repeated flags; the same value twice (as lm-eval reads
    it: :func:`_same_value`) loses nothing and passes. Only called for a tokrag method's run (:func:`check_run_command`).

    Raises:
        ConfigError: one line naming the flag, the key and both values.
    """
    from retrieval.errors import ConfigError

    for dest in _KEYED_FLAGS:
        seen = {}
        for flag_dest, option, values in typed:
            if flag_dest != dest:
                continue
            for key, text, value in _typed_items(values):
                if key in seen and not _same_value(seen[key][2], value):  # the same value twice loses nothing
                    first_option, first, _ = seen[key]
                    where = "" if first_option == option else f" ({first_option}, then {option})"
                    raise ConfigError(f"{option}: key {key!r} is given twice{where}: {key}={first}, then {key}={text}; "
                                      "lm-eval would keep the last one silently: give it once")
                seen[key] = (option, text, value)


def _typed_dict_arguments(args):
    """The ``[(dest, option, values)]`` noted while lm-eval's parser filled ``args`` (dropped from
    :data:`_TYPED_DICT_ARGS`): a subcommand's parser fills a namespace of its own and copies its values to ``args``,
    so the entry is the one whose dicts are ``args``' own objects."""
    for key, (namespace, typed) in list(_TYPED_DICT_ARGS.items()):
        if namespace is args or all(getattr(namespace, dest, None) is getattr(args, dest, None)
                                    for dest in {d for d, _, _ in typed}):
            del _TYPED_DICT_ARGS[key]
            return typed
    return []


def check_run_command(args):
    """The checks of an ``lm_eval run`` command line (``args``: lm-eval's parsed arguments) whose model (``--model``,
    else the ``--config`` file's ``model``) is a tokrag method, before lm-eval builds anything: a run without a task
    (no ``--tasks``, ``--tasks ''`` or ``' '``, and no ``tasks`` in the ``--config`` file) is refused with ``tokrag
    eval``'s line (:func:`tokrag_model.eval_cli.check_tasks_given`; lm-eval printed its ``ValueError: No tasks
    specified`` traceback, or our unknown-task line with no name in it), an empty ``--output_path``, an empty
    ``--samples`` without ``--limit`` (``'{}'``, ``'[]'``, ``''``: lm-eval drops it and evaluated every document), a key
    given twice in ``--model_args``, ``--metadata`` or ``--gen_kwargs`` (:func:`check_repeated_keys`), and
    ``--model_args`` the
    model would refuse when it is built (:func:`check_model_arguments`, with lm-eval's ``--batch_size``,
    ``--max_batch_size`` and ``--device``, else the ``--config`` file's, merged as the model merges them: its
    argument check,
    :func:`tokrag_model.args.resolved_args`: ``dtype=float64``, ``preset=``, ``layr=3``, ``--batch_size 0``; an empty
    or blank ``pretrained=``, in :func:`tokrag_model.loading.check_pretrained`'s line; a ``revision=`` given with an
    offline alias, in :func:`tokrag_model.loading.check_revision`'s line; the model refused them only after lm-eval's
    task set-up, ~30 s; a folder that does not exist is still the load's to report; without ``--model_args`` the
    ``--config`` file's ``model_args``, as lm-eval takes them). Other models, and other commands (``ls``), are left to
    lm-eval.

    Raises:
        ConfigError: the check's one line.
    """
    typed = _typed_dict_arguments(args)
    if getattr(args, "command", None) != "run":
        return
    from retrieval.errors import ConfigError
    from tokrag_model.eval_cli import check_tasks_given, config_value
    from tokrag_model.methods import METHODS

    config = getattr(args, "config", None)
    model = getattr(args, "model", None) or config_value(config, "model")
    if not isinstance(model, str) or model not in METHODS:
        return
    tasks = getattr(args, "tasks", None)
    tasks = [tasks] if isinstance(tasks, str) else list(tasks or [])
    check_tasks_given([f"--tasks={t}" for t in tasks] + ([f"--config={config}"] if config else []))
    out = getattr(args, "output_path", None)
    if isinstance(out, str) and not out.strip():  # lm-eval saves results only for a non-empty path: the run's were lost
        raise ConfigError("--output_path is empty (an unset shell variable?): lm-eval would save no results; give a "
                          "folder, or leave the option out to print them only")
    check_repeated_keys(typed)
    samples = getattr(args, "samples", None)  # lm-eval's try_parse_json made '{}' a dict, '[]' a list
    limit = getattr(args, "limit", None) or config_value(config, "limit")  # with a --limit, that many documents run
    if isinstance(samples, (dict, list, str)) and not samples and not limit:  # EvaluatorConfig.from_cli drops it
        import json

        first = tasks[0] if len(tasks) == 1 and "," not in tasks[0] else "TASK"
        raise ConfigError(f"--samples {json.dumps(samples)} is empty, and lm-eval drops it and evaluates every "
                          f"document of the run's tasks; name each task with its document indices, e.g. --samples "
                          f"'{{\"{first}\": [0, 1]}}', or drop --samples")
    model_args = getattr(args, "model_args", None)
    if not model_args and config:  # lm-eval takes the --config file's model_args unless the command line gives some
        from lm_eval.config.evaluate_config import EvaluatorConfig

        from tokrag_model.args import model_args_dict

        model_args = model_args_dict(EvaluatorConfig.load_yaml_config(config).get("model_args"))
    if model_args is None:  # no --model_args: the model's defaults, with lm-eval's flags below
        model_args = {}
    if isinstance(model_args, dict):  # the model's own argument check (dtype=float64, preset=, layr=3), ~30 s earlier
        from tokrag_model.args import merge_lm_eval_flags

        # with lm-eval's own --batch_size/--max_batch_size/--device, merged as the model merges them: --batch_size 0
        # or --device gpu was refused by the model only after lm-eval's task set-up; a flag the command line does not
        # give is the --config file's, as EvaluatorConfig.from_cli takes it (a command-line value that is truthy or 0)
        flags = {k: getattr(args, k, None) for k in ("batch_size", "max_batch_size", "device")}
        yaml_flags = _config_file_values(config) if config else {}
        flags = {k: v if (v or v == 0) else yaml_flags.get(k) for k, v in flags.items()}
        merged = merge_lm_eval_flags(model, model_args, flags, warn=False)
        check_model_arguments(model, merged)
        given = model_args.get("device") if model_args.get("device") is not None else flags.get("device")
        check_explicit_cuda0(given if given == merged.get("device") else None)


def check_explicit_cuda0(device: object) -> None:
    """``--device cuda:0`` typed on the command line (or ``device: cuda:0`` in the ``--config`` file, or
    ``device=cuda:0`` in ``--model_args``) of a tokrag method's run on a machine without CUDA: the model takes
    ``cuda:0`` for lm-eval's default, given when ``--device`` is not (:func:`tokrag_model.loading.resolve_device`),
    and fell back to CPU without a word, while ``cuda`` and ``cuda:1`` are refused; lm-eval's CLI gives None for a
    ``--device`` not typed, so here the two are told apart. ``device``: the device the user gave (None: none).

    Raises:
        ConfigError: ``resolve_device``'s line for ``cuda:1``, for ``cuda:0``.
    """
    if not isinstance(device, str) or device.strip() != "cuda:0":
        return
    from retrieval.errors import ConfigError
    from tokrag_model.loading import backend_unavailable

    why = backend_unavailable("cuda")
    if why is not None:
        raise ConfigError(f"--device cuda:0 (or device=cuda:0 in --model_args): {why}; use --device cpu, or leave "
                          "--device out to run on CPU")


def _config_file_values(config: str) -> dict:
    """lm-eval's ``--config`` YAML file as lm-eval reads it (``EvaluatorConfig.load_yaml_config``), with values as
    written (``batch_size: 0`` stays 0); {} when it cannot be read or is no mapping (lm-eval reports that itself)."""
    from lm_eval.config.evaluate_config import EvaluatorConfig

    try:
        values = EvaluatorConfig.load_yaml_config(config)
    except Exception:  # noqa: BLE001 - lm-eval's own error for the file stands
        return {}
    return values if isinstance(values, dict) else {}


def check_model_arguments(model: str, model_args: dict) -> None:
    """What the tokrag method ``model`` (its name) refuses when it is built with ``model_args`` (a dict), told without
    building it: its argument check (:func:`tokrag_model.args.resolved_args`: ``dtype=float64``, ``preset=``,
    ``layr=3``), an empty or blank ``pretrained`` (:func:`tokrag_model.loading.check_pretrained`'s line; a path is
    the load's to report) and a ``revision`` given with an offline alias (:func:`tokrag_model.loading.check_revision`:
    the load refused it only after lm-eval's task set-up, ~30 s) and a CUDA or MPS device this machine lacks
    (:func:`tokrag_model.loading.resolve_device`, lm-eval's default ``cuda:0`` falling back to CPU: the model refused
    ``--device cuda`` at its build, exit 1). Run by :func:`check_run_command` and, for
    ``lm_eval.simple_evaluate`` called from Python, by :func:`_python_run_checks`, before the tasks are set up.

    Raises:
        ConfigError: the model's one line.
    """
    from tokrag_model.args import resolved_args
    from tokrag_model.loading import check_pretrained, check_revision, resolve_device
    from tokrag_model.methods import MODELS

    cfg = resolved_args(MODELS[model], model_args)
    pretrained = None if cfg is None else cfg.get("pretrained")
    if cfg is not None and not (isinstance(pretrained, str) and pretrained.strip()):
        check_pretrained(pretrained)  # pretrained= (empty or blank): the load's own line (a path is the load's)
    if cfg is not None:  # revision= with an offline alias: the load's own line (resolve_pretrained), before the tasks
        check_revision(pretrained, cfg.get("revision"))
        resolve_device(cfg.get("device"))  # --device cuda without CUDA: the model's own line, refused at its build (exit 1)


def _patch_cli_utils(module):
    """``--metadata '{hits: 3'`` (or a ``--model_args`` key=value list with a ``{`` in a value): lm-eval's argument
    action raised ``ValueError: Invalid JSON`` out of argparse, a ~40-line traceback before anything loads; ours is
    one ``lm_eval: error: --metadata: not valid JSON (...)`` line (exit 2, as argparse's own errors). A value that is
    valid JSON past Python's digit or recursion limit (an integer of 5001 digits, nesting 30,000 deep: a ValueError or
    RecursionError traceback out of lm-eval's ``try_parse_json``) is :func:`retrieval.io.json_limit_error`'s line
    naming the flag (``--metadata: holds JSON nested too deep ...; fix the nesting``), for any model."""
    cls = getattr(module, "MergeDictAction", None)
    if cls is None or getattr(cls.__call__, "_tokrag", False):
        return
    original = cls.__call__

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            if self.dest in _KEYED_FLAGS and values:  # what the user typed, for check_repeated_keys (execute)
                _note_dict_argument(namespace, self.dest, option_string or "--" + self.dest, values)
        except Exception:  # noqa: BLE001 - never break lm-eval's parsing
            pass
        try:
            return original(self, parser, namespace, values, option_string)
        except (ValueError, RecursionError) as exc:
            if not values:
                raise
            from retrieval.io import json_limit_error

            flag, value = option_string or "--" + self.dest, values[0] if isinstance(values, (list, tuple)) else values
            limit = _json_limit(value)
            if limit is not None:  # valid JSON past Python's digit or recursion limit: a ValueError or RecursionError
                line = str(json_limit_error(limit, flag, whole_file=True))  # traceback out of lm-eval's try_parse_json
            elif isinstance(exc, ValueError) and str(exc).startswith("Invalid JSON"):
                line = json_argument_error(flag, value, _json_detail(value, exc), self.dest)
            else:
                raise
            _TYPED_DICT_ARGS.pop(id(namespace), None)  # this parse ends here: its noted values must not pass for
            # those of a later parse in this process (check_run_command matches an entry by its dicts: None here)
            if _under_tokrag_eval():  # tokrag eval prints its own 'tokrag eval: error:' line for a ConfigError
                from retrieval.errors import ConfigError

                raise ConfigError(line) from None
            parser.exit(2, f"lm_eval: error: {line}\n")

    __call__._tokrag = True  # type: ignore[attr-defined]
    __call__.__doc__ = original.__doc__
    cls.__call__ = __call__


def _json_limit(value) -> BaseException | None:
    """The error :func:`json.loads` raises for ``value`` (a flag's first value, as lm-eval's ``try_parse_json`` reads
    it) when it is valid JSON past Python's digit limit (a plain ValueError) or recursion limit (a RecursionError):
    :func:`retrieval.io.json_limit_error`'s cases. None for a value it reads, or one that is not JSON."""
    import json

    try:
        json.loads(value)
    except json.JSONDecodeError:
        return None
    except (ValueError, RecursionError) as err:
        return err
    except Exception:  # noqa: BLE001 - not text json reads: lm-eval's own error stands
        return None
    return None


def _json_detail(value, exc) -> str:
    """:mod:`json`'s message for ``value`` that lm-eval's ``try_parse_json`` refused as ``Invalid JSON`` (``exc``),
    else ``exc``'s own."""
    import json

    try:
        json.loads(value)
    except json.JSONDecodeError as err:
        return str(err)
    except Exception:  # noqa: BLE001 - lm-eval's message then
        pass
    return str(exc)


def _under_tokrag_eval() -> bool:
    """Whether lm-eval's CLI runs inside ``tokrag eval`` (``tokrag_model.eval_cli.main`` on the stack, also as
    ``python -m tokrag_model.eval_cli``), whose refusals are ``tokrag eval: error: ...`` lines of a ConfigError."""
    from pathlib import Path

    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "main" and Path(code.co_filename).parts[-2:] == ("tokrag_model", "eval_cli.py"):
            return True
        frame = frame.f_back
    return False


def _called_from_main() -> bool:
    """Whether lm-eval's CLI runs as a program (the ``lm_eval`` console script, ``python -m lm_eval`` or a script's
    top level): the nearest caller outside lm-eval's modules is a ``__main__`` module, not e.g.
    ``tokrag_model.eval_cli`` (``tokrag eval``, which prints its own error line and exits 2)."""
    frame = sys._getframe(2)  # the caller of HarnessCLI.execute (lm-eval's cli_evaluate)
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] == "lm_eval":
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__") == "__main__"


def _patch_harness(module):
    """A tokrag error raised before the model load (marked by :func:`_patch_process_tasks`: an unknown task, a bad run
    argument, a copied YAML without its template, bad task metadata) ended ``lm_eval`` with exit status 1 (Python's
    status for an uncaught exception; the excepthook only prints the line), while ``tokrag eval`` exits 2 as argparse
    does for a bad argument. A tokrag method's command line is checked first (:func:`check_run_command`: no task, a
    key given twice in ``--model_args``, a model argument the model refuses). Under lm-eval's CLI run as a program
    (:func:`_called_from_main`), ``HarnessCLI.execute`` now prints the same one line and exits 2; ``TOKRAG_TRACEBACK=1`` keeps the traceback (exit 1). Ctrl-C of a run
    of a tokrag model printed lm-eval's ~125-line KeyboardInterrupt traceback through torch; it now prints the one
    line ``tokrag eval`` prints (:func:`_interrupted_line`) and ends the process by SIGINT (not exit status 130, after
    which bash goes on with a loop or script: :func:`retrieval.errors.die_by`); a run of another model, or with
    ``TOKRAG_TRACEBACK=1``, keeps lm-eval's traceback. A failed write of such a run (a full disk, a disk quota or a
    file-size limit: ``ENOSPC``, ``EDQUOT``, ``EFBIG``; since s57 f2 also a read-only file system anywhere and any
    errno of a tokrag write: ``EIO``, ``EACCES``, ...; a traceback, exit 1) is ``tokrag``'s one line
    (:func:`_no_room_line`), exit 2, likewise."""
    cls = getattr(module, "HarnessCLI", None)
    if cls is None or getattr(cls.execute, "_tokrag", False):
        return
    original = cls.execute

    def execute(self, args):
        try:
            from retrieval.errors import TokragError

            try:
                check_run_command(args)  # no task, a repeated model argument: before lm-eval builds anything
            except TokragError as exc:
                exc._tokrag_before_load = True  # type: ignore[attr-defined]  (one line, exit 2: below)
                raise
            except Exception:  # noqa: BLE001 - a fault of the check: lm-eval runs as it would
                pass
            return _run_raising_results_write_errors(original, self, args)
        except KeyboardInterrupt:
            line = _interrupted_line(args)
            if line is None or not _called_from_main():
                raise
            from tokrag_model.eval_cli import close_progress_bars

            close_progress_bars()
            sys.stderr.write(line + "\n")
            import signal

            from retrieval.errors import die_by

            die_by(signal.SIGINT)  # not exit status 130: bash stops a loop or script only when the child died of SIGINT
            raise SystemExit(130) from None  # SIGINT blocked
        except Exception as exc:
            import os

            line = _no_room_line(exc, args)
            if line is not None and _called_from_main():  # a full disk: tokrag's one line (retrieval.errors)
                from tokrag_model.eval_cli import close_progress_bars

                close_progress_bars()
                sys.stderr.write(f"{_program()}: error: {line}\n")
                raise SystemExit(2) from None
            if not getattr(exc, "_tokrag_before_load", False) or os.environ.get("TOKRAG_TRACEBACK", "") not in ("", "0") \
                    or not _called_from_main():
                raise
            sys.stderr.write(f"{_program()}: error: {exc}\n(set TOKRAG_TRACEBACK=1 for the stack trace)\n")
            raise SystemExit(2) from None

    execute._tokrag = True  # type: ignore[attr-defined]
    execute.__doc__ = original.__doc__
    cls.execute = execute


def _run_raising_results_write_errors(original, cli, args):
    """``original(cli, args)`` (lm-eval's ``HarnessCLI.execute``), where, for a run of a tokrag method, an OSError of
    lm-eval's own write of the results (``EvaluationTracker.save_results_aggregated`` / ``save_results_samples``:
    the ``--output_path`` folder's ``mkdir``, the results or samples file's ``write_text``) is raised once the run
    ends, marked as a write's (:func:`retrieval.errors.mark_write`): lm-eval catches it, logs ``Could not save results
    aggregated`` and the run exited 0 without its results file (a disk turned full, read-only or failing during a
    run of hours; the pre-run check refuses a path unwritable from the start). So the command ends with tokrag's one
    line of a failed write, exit 2 (s57 r2); the results table lm-eval prints is printed first. Another model's run,
    and an error that is no OSError (a push to the hub), are left to lm-eval: a WARNING, as before."""
    try:
        import lm_eval.loggers.evaluation_tracker as tracker

        ours = _tokrag_method_run(args)
    except Exception:  # noqa: BLE001 - another lm-eval layout, or a fault of ours: lm-eval runs as it would
        ours = False
    if not ours:
        return original(cli, args)
    real = tracker.eval_logger
    caught: list[OSError] = []

    class _Capture:
        """lm-eval's tracker logger, keeping the OSError being handled when it says it could not save."""

        def warning(self, msg, *a, **k):
            exc = sys.exc_info()[1]
            if str(msg).startswith("Could not save") and isinstance(exc, OSError) and isinstance(exc.errno, int):
                caught.append(exc)
            k.setdefault("stacklevel", 2)  # the log line names lm-eval's call, as without the capture
            return real.warning(msg, *a, **k)

        def __getattr__(self, name):
            return getattr(real, name)

    tracker.eval_logger = _Capture()
    try:
        result = original(cli, args)
    finally:
        tracker.eval_logger = real
    if caught:
        from retrieval.errors import mark_write

        exc = caught[0]
        if isinstance(exc.filename, (str, bytes)):
            raise mark_write(exc, exc.filename)
        where = str(getattr(args, "output_path", None) or "--output_path")  # a flush or close: no file named
        raise mark_write(OSError(exc.errno, exc.strerror, where), where) from exc
    return result


def _tokrag_method_run(args) -> bool:
    """Whether the run's model (``--model``, else the ``--config`` file's ``model``, as lm-eval merges them) is a tokrag
    method (:data:`tokrag_model.methods.METHODS`, as :func:`tasks.precheck.check_run_arguments` tells it)."""
    from tokrag_model.eval_cli import config_value
    from tokrag_model.methods import METHODS

    model = getattr(args, "model", None) or config_value(getattr(args, "config", None), "model")
    return isinstance(model, str) and model in METHODS


def _no_room_line(exc, args):
    """:func:`retrieval.errors.no_room_line` of ``exc`` (a failed write: a full disk, a quota, a file-size limit, a
    read-only file system, any errno of a tokrag write; ``tokrag``'s one line) for a run of a tokrag method (:func:`_tokrag_method_run`); None for another exception or
    model, with ``TOKRAG_TRACEBACK=1`` set, or when it cannot be told (never raises)."""
    try:
        from retrieval.errors import no_room_line

        line = no_room_line(exc)
        return line if line is not None and _tokrag_method_run(args) else None
    except Exception:  # never hide the error behind a fault of ours
        return None


def _interrupted_line(args):
    """The line for Ctrl-C of lm-eval's CLI with the parsed arguments ``args``
    (:func:`tokrag_model.eval_cli.interrupted_line`, with the ``--use_cache`` resume hint and :func:`_program`'s
    name), when the run's model (``--model``, else the ``--config`` file's ``model``, as lm-eval merges them) is a
    tokrag method (:data:`tokrag_model.methods.METHODS`, as :func:`tasks.precheck.check_run_arguments` tells it);
    None for another model, with ``TOKRAG_TRACEBACK=1`` set, or when it cannot be told (never raises)."""
    import os

    try:
        if os.environ.get("TOKRAG_TRACEBACK", "") not in ("", "0"):
            return None
        from tokrag_model.eval_cli import config_value, interrupted_line

        config = getattr(args, "config", None)
        if not _tokrag_method_run(args):
            return None
        return interrupted_line(getattr(args, "use_cache", None) or config_value(config, "use_cache"), _program())
    except Exception:  # never hide the interrupt behind a fault of ours
        return None


_CACHED_KINDS = ("loglikelihood", "loglikelihood_rolling", "generate_until")
_MISSING = object()


def patch_caching_lm(module):
    """lm-eval's ``--use_cache`` (``lm_eval.api.model.CachingLM``) keyed a response by ``hash_args(kind, req.args)``:
    the request's arguments only (context, generation kwargs). A tokrag context holds the passages slot, never the
    passages, so ``--tasks nq_oracle_bm25,nq_oracle_bm25_noise100 --use_cache C`` run twice gave nq_oracle_bm25
    the noise100 task's answers (the same questions), and so for any tasks differing only in their passages (retriever,
    noise, counterfactual, ``--metadata``) or a second model configuration given the same path. For a model with a
    ``response_cache_args(kind, req)`` (:meth:`tokrag_model.base.RAGMethodLM.response_cache_args`: the arguments plus
    the model's identity and the doc's digest) the cache now looks up, and stores, each response under
    ``hash_args(kind, response_cache_args(kind, req))``, the key the model's cache hook gives the responses it finishes
    (a resumed run reads them), and adds the number of responses read from the cache to the model's
    ``cached_responses`` (recorded as ``tokrag_cached_responses`` in the results ``config``); other models keep
    lm-eval's lookup. The loop is lm-eval 0.4.13's
    (``CachingLM.__getattr__``): sampled generations (``do_sample``) are never read from the cache. After the call a
    response is stored only when the cache does not hold it already (the hook stored each as it finished: lm-eval's
    loop wrote every response a second time, one more sqlite write and commit each). Idempotent."""
    cls = getattr(module, "CachingLM", None)
    if cls is None or getattr(cls.__getattr__, "_tokrag", False):
        return
    original = cls.__getattr__

    def __getattr__(self, attr):
        fn = original(self, attr)
        key_args = getattr(self.__dict__.get("lm"), "response_cache_args", None)
        if attr not in _CACHED_KINDS or not callable(key_args):
            return fn

        def _fn(requests):
            db, log = self.dbdict, module.eval_logger
            log.info(f"Loading '{attr}' responses from cache '{self.cache_db}' where possible...")
            keys = [module.hash_args(attr, key_args(attr, req)) for req in requests]
            sampled = [attr == "generate_until" and bool(req.args[1].get("do_sample", False)) for req in requests]
            if any(sampled):
                log.warning(f"Arguments to lm.generate_until() '{requests[sampled.index(True)].args[1]}' include "
                            "non-deterministic sampling. Caching will not be performed for such requests.")
            res, todo = [], []
            for i, (key, sample) in enumerate(zip(keys, sampled)):
                hit = not sample and key in db
                res.append(db[key] if hit else None)
                if not hit:
                    todo.append(i)
            log.info(f"Cached requests: {len(requests) - len(todo)}, Requests remaining: {len(todo)}")
            self.lm.cached_responses = (getattr(self.lm, "cached_responses", None) or 0) + len(requests) - len(todo)
            out = getattr(self.lm, attr)([requests[i] for i in todo]) if todo else []
            for i, r in zip(todo, out, strict=True):
                res[i] = r
                if db.get(keys[i], _MISSING) != r:  # the model's cache hook stored it already as it finished
                    db[keys[i]] = r
            db.commit()
            return res

        return _fn

    __getattr__._tokrag = True  # type: ignore[attr-defined]
    __getattr__.__doc__ = original.__doc__
    cls.__getattr__ = __getattr__


def _python_run_checks(arguments: dict) -> None:
    """:func:`check_loaded_run` (and :func:`tokrag_model.base.check_chat_template_before_load` for a model named by a
    string) for ``lm_eval.simple_evaluate`` called with ``arguments`` (its bound arguments), unless lm-eval's CLI ran
    them already on its task manager (:func:`_patch_process_tasks` marks it; the mark is used once). Without a
    ``task_manager`` one is built as ``simple_evaluate`` builds it (metadata ``model_args`` | ``metadata``) and put in
    ``arguments``, so the tasks are indexed once. A model object is checked as its ``METHOD`` (a tokrag method's name).
    Raises a tokrag error only; a fault of a check (a task name lm-eval will refuse itself) leaves lm-eval's error."""
    manager = arguments.get("task_manager")
    if manager is not None and getattr(manager, "_tokrag_prechecked", False):
        manager._tokrag_prechecked = False  # checked by the CLI for this run; a reused manager is checked again
        return
    names = [t for t in arguments.get("tasks") or [] if isinstance(t, (str, dict))]
    if not names or not _ours_loaded():
        return
    from lm_eval.utils import simple_parse_args_string

    from retrieval.errors import TokragError

    model, model_args = arguments.get("model"), arguments.get("model_args")
    name = model if isinstance(model, str) else getattr(model, "METHOD", None)
    try:
        from tokrag_model.args import model_args_dict
        from tokrag_model.methods import METHODS

        margs = model_args_dict(model_args)
        if isinstance(model, str) and model in METHODS and margs is not None:  # the model's own argument check first,
            check_model_arguments(model, margs)  # as under the CLI (lm-eval would build the model before the tasks)
        if isinstance(model, str) and model in METHODS and arguments.get("check_integrity"):
            check_integrity_runnable()  # lm-eval's task tests: run after the load, absent from a wheel install
        if manager is None:
            from lm_eval.tasks import TaskManager

            if margs is None:  # a string lm-eval cannot parse: it reports that itself
                return
            manager = arguments["task_manager"] = TaskManager(metadata=margs | (arguments.get("metadata") or {}))
        gen = arguments.get("gen_kwargs")
        seeds = [arguments.get(k, 0) for k in ("random_seed", "numpy_random_seed", "torch_random_seed",
                                               "fewshot_random_seed")]
        check_loaded_run(manager, names, model=name, model_args=model_args, metadata=getattr(manager, "metadata", None),
                         use_cache=arguments.get("use_cache"),
                         cache_requests={k: bool(arguments.get(k)) for k in ("cache_requests", "rewrite_requests_cache",
                                                                            "delete_requests_cache")},
                         gen_kwargs=simple_parse_args_string(gen) if isinstance(gen, str) else gen,
                         limit=arguments.get("limit"), seed=seeds, num_fewshot=arguments.get("num_fewshot"),
                         apply_chat_template=arguments.get("apply_chat_template"), samples=arguments.get("samples"),
                         loaded=not isinstance(model, str))
        from tasks.precheck import check_system_instruction

        check_system_instruction(manager, names, arguments.get("system_instruction"))
        if isinstance(model, str):
            from tokrag_model.base import check_chat_template_before_load

            check_chat_template_before_load(model, model_args, arguments.get("apply_chat_template"))
    except TokragError:
        raise
    except Exception as exc:  # noqa: BLE001 - a fault of a check must not stop a run lm-eval would run
        import logging

        logging.getLogger("tokrag_model").debug("tokrag pre-load checks of simple_evaluate skipped: %s", exc)


def _evaluated_tasks(task_dict: object) -> list:
    """``(name, task)`` of the tasks in lm-eval's ``evaluate`` ``task_dict`` (``{"tasks": {...}, "groups": ...}``, or
    the older nested dict of tasks and groups)."""
    found, stack = [], [task_dict]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        items = node["tasks"].items() if isinstance(node.get("tasks"), dict) else node.items()
        for key, value in items:
            if isinstance(value, dict):
                stack.append(value)
            elif hasattr(value, "config"):
                found.append((str(getattr(key, "group_name", key)), value))
    return found


def evaluated_task_data(task_dict: object, limit: object = None, samples: object = None) -> list[tuple]:
    """``(name, split, tokrag_data, scored)`` of each task in lm-eval's ``evaluate`` ``task_dict`` that records its data
    (``config.metadata.tokrag_data``, :mod:`tasks.provenance`), for
    :meth:`tokrag_model.methods.tokrag.TokRAGLM.note_evaluation_data`: ``split`` the questions' split
    (``tokrag_data.questions.split``, else the task metadata ``split``, else ``test``); ``scored`` the docs lm-eval
    scores, as its ``Task.doc_iterator`` picks them: their pool positions for ``samples`` (``{task: [indices]}``),
    else the first ``limit`` (lm-eval's ``get_sample_size``: a fraction below 1 of the docs, rounded up), else all.
    A task whose docs cannot be counted is left out. Raises nothing."""
    import math

    out = []
    for name, task in _evaluated_tasks(task_dict):
        try:
            meta = getattr(task.config, "metadata", None) or {}
            data = meta.get("tokrag_data") if isinstance(meta, dict) else None
            if not isinstance(data, dict):
                continue
            questions = data.get("questions") if isinstance(data.get("questions"), dict) else {}
            split = questions.get("split") or meta.get("split") or "test"
            chosen = samples.get(name) if isinstance(samples, dict) else None
            if chosen:
                scored = sorted({int(i) for i in chosen})
            else:
                n = len(task.eval_docs)
                if isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit:
                    n = min(n, int(math.ceil(n * limit)) if limit < 1.0 else int(limit))
                scored = n
        except Exception:  # noqa: BLE001 - a task lm-eval evaluates whatever this reads of it
            continue
        out.append((name, split, data, scored))
    return out


def check_evaluated_tasks(task_dict: object, apply_chat_template: object) -> None:
    """Refuse, at the start of lm-eval's ``evaluate`` (also called without ``simple_evaluate``), a task that declares
    itself plain text (task metadata ``plain_text: true``, ``wiki_lm_bm25``: :func:`tasks.precheck.plain_text`) run
    with ``apply_chat_template`` (its context would be chat-framed), and one of this package's tasks run with few-shot
    examples while it has no few-shot pool (:func:`tasks.precheck.draws_fewshot_from_scored_docs`, the CLI's rule:
    they would be drawn from the scored documents).

    Raises:
        ConfigError: one line naming the task and what to drop.
    """
    from retrieval.errors import ConfigError
    from tasks.precheck import PLAIN_TEXT, draws_fewshot_from_scored_docs, plain_text

    for name, task in _evaluated_tasks(task_dict):
        cfg = task.config
        if plain_text(getattr(cfg, "metadata", None)) and apply_chat_template not in (None, False, ""):
            raise ConfigError(f"apply_chat_template: task {name} scores plain text (task metadata {PLAIN_TEXT}: true), "
                              "but its context would be put in a chat user turn and the continuation scored after the "
                              "assistant header: evaluate it in a separate call without apply_chat_template")
        try:
            n = int(getattr(cfg, "num_fewshot", 0) or 0)
        except (TypeError, ValueError):
            n = 0
        if n > 0 and draws_fewshot_from_scored_docs(cfg):
            raise ConfigError(f"num_fewshot {n}: task {name} has no few-shot split of its own, so lm-eval would draw "
                              "the examples from the documents it scores and put scored text into the prompts; "
                              "evaluate it with num_fewshot 0")


def patch_evaluator(module):
    """``lm_eval.simple_evaluate`` called from Python (a notebook, a script) skipped the pre-load checks lm-eval's CLI
    runs (:func:`_patch_process_tasks`): ``metadata={"k": 1}`` was ignored by the model while the results recorded it,
    ``apply_chat_template=True`` chat-framed ``wiki_lm_bm25``, ``num_fewshot=1`` drew its examples from the scored
    documents. ``simple_evaluate`` now runs them (:func:`_python_run_checks`; once under the CLI), before the model
    loads. ``evaluate`` (also called directly) first resets a tokrag model's per-evaluation state
    (:meth:`tokrag_model.base.RAGMethodLM.start_evaluation`: the recorded chat-template flag, the ``use_cache`` counter
    and a stale ``CachingLM``'s hook of a reused model object) and tells it the evaluation's tasks and their output
    types (:meth:`~tokrag_model.base.RAGMethodLM.note_evaluation_tasks`: the chat template never reaches a
    ``loglikelihood_rolling`` task, whose requests are the text alone) and, where it has
    ``note_evaluation_data`` (``tokrag``'s preset), the data of those tasks (:func:`evaluated_task_data`: a preset
    calibrated on the dev questions scored logs the in-sample WARNING), then refuses a plain-text task chat-framed, or
    one of our tasks with few-shot examples from its scored documents (:func:`check_evaluated_tasks`); when it
    returns or raises, the model's ``plain_contexts`` is None again (outside an evaluation). Idempotent."""
    original_simple, original_evaluate = getattr(module, "simple_evaluate", None), getattr(module, "evaluate", None)
    if original_simple is None or original_evaluate is None or getattr(original_simple, "_tokrag", False):
        return
    import inspect

    simple_sig, evaluate_sig = inspect.signature(original_simple), inspect.signature(original_evaluate)

    def simple_evaluate(*args, **kwargs):
        try:
            bound = simple_sig.bind(*args, **kwargs)
        except TypeError:  # lm-eval's own error
            return original_simple(*args, **kwargs)
        _python_run_checks(bound.arguments)
        return original_simple(**bound.arguments)  # with the task manager the checks built

    def evaluate(*args, **kwargs):
        try:
            bound = evaluate_sig.bind(*args, **kwargs)
        except TypeError:
            return original_evaluate(*args, **kwargs)
        lm, chat = bound.arguments.get("lm"), bound.arguments.get("apply_chat_template", False)
        from lm_eval.api.model import CachingLM

        inner = lm.__dict__.get("lm") if isinstance(lm, CachingLM) else lm
        start = getattr(inner, "start_evaluation", None)
        if callable(start):
            start(apply_chat_template=chat, use_cache=inner is not lm)
        note = getattr(inner, "note_evaluation_tasks", None)
        if callable(note):  # which tasks the chat template reaches: not a loglikelihood_rolling one (the text alone)
            note({name: getattr(task, "OUTPUT_TYPE", None)
                  for name, task in _evaluated_tasks(bound.arguments.get("task_dict"))})
        data = getattr(inner, "note_evaluation_data", None)
        if callable(data):  # a tokrag preset calibrated on the dev questions this run scores: one WARNING
            data(evaluated_task_data(bound.arguments.get("task_dict"), bound.arguments.get("limit"),
                                     bound.arguments.get("samples")))
        try:
            if _ours_loaded():
                check_evaluated_tasks(bound.arguments.get("task_dict"), chat)
            return original_evaluate(*args, **kwargs)
        finally:  # outside an evaluation a context may be a chat rendered by another model object (base.py)
            if getattr(inner, "plain_contexts", None) is not None:
                inner.plain_contexts = None

    for new, old in ((simple_evaluate, original_simple), (evaluate, original_evaluate)):
        new._tokrag = True  # type: ignore[attr-defined]
        new.__doc__, new.__wrapped__ = old.__doc__, old  # type: ignore[attr-defined]
    module.simple_evaluate, module.evaluate = simple_evaluate, evaluate


def install():
    """Register the tokrag models (and tasks path) once lm-eval's registry is imported, and the tasks path again
    once its task manager is (:func:`_after_task_manager`); patch lm-eval's CLI argument
    action once ``lm_eval._cli.utils`` is (it parses the command line before the registry is imported), and its
    ``HarnessCLI.execute`` once ``lm_eval._cli.harness`` is (exit 2 for a pre-load argument error); key ``--use_cache``
    by what a tokrag model reads once ``lm_eval.api.model`` is (:func:`patch_caching_lm`); keep lm-eval's index of its
    own task folder on disk once ``lm_eval.tasks._index`` is (:func:`_patch_task_index`); run the pre-load checks
    for Python callers of ``simple_evaluate`` and reset a model's per-evaluation state once ``lm_eval.evaluator`` is
    (:func:`patch_evaluator`); read a task's local data files by their content once ``lm_eval.api.task`` is
    (:func:`_patch_task_download`)."""
    after_import(_TARGET, _after_registry)
    after_import("lm_eval.tasks.manager", _after_task_manager)  # imports the registry half-way: see there
    after_import("lm_eval.tasks._index", _patch_task_index)  # lm-eval's own task folder indexed once, kept on disk
    after_import("lm_eval._cli.utils", _patch_cli_utils)
    after_import("lm_eval._cli.harness", _patch_harness)
    after_import("lm_eval.api.model", patch_caching_lm)
    after_import("lm_eval.evaluator", patch_evaluator)  # Python callers: the CLI's pre-load checks, per-evaluation state
    after_import("lm_eval.api.task", _patch_task_download)  # a local data file's rows: by its content, not its mtime


install()
