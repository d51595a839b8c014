"""tokrag_model: RAG decoding methods as lm-eval models over one shared multi-context decoder.

Models (lm-eval names such as ``tokrag``, ``rag-standard``, ``rag-replug``, ``rag-cad``): one module per
method in :mod:`tokrag_model.methods`, listed in its registry :data:`tokrag_model.methods.METHODS`, over
:mod:`tokrag_model.base`; registered lazily (``module:Class``
strings) by the start-up hook :mod:`tokrag_model._lmeval_hook` installed as ``tokrag_lmeval.pth``, so
plain ``lm_eval --model tokrag ...`` works after ``pip install``; ``tokrag eval ...`` does the same
explicitly.

Importing this package is cheap (no torch, no lm_eval); the submodules that import torch set
``OMP_WAIT_POLICY=PASSIVE`` first when it is unset.
"""

from __future__ import annotations

from .methods import METHODS, target

# lm-eval model name -> "tokrag_model.methods.<module>:<Class>" (lazy; see tokrag_model.methods)
MODEL_CLASSES = {name: target(name) for name in METHODS}

__all__ = ["MODEL_CLASSES", "register", "register_tasks"]


def register() -> None:
    """Register the methods in lm-eval's model registry (keeping its built-in models).

    lm-eval imports its built-in ``MODEL_MAPPING`` only when the registry is empty (stack_notes G7),
    so ``lm_eval.models`` is imported first. Idempotent. (:func:`register_tasks` adds the task folder.)
    """
    import lm_eval.models  # noqa: F401  (built-ins first)
    from lm_eval.api.registry import model_registry

    for name, where in MODEL_CLASSES.items():
        if name not in model_registry:
            model_registry.register(name, target=where)



def register_tasks() -> None:
    """Let lm-eval find the project's task YAMLs without ``--include_path`` (``tasks.register_task_path``), and
    record where a task's data came from in the results (``tasks.register_provenance``).

    Only the ``tasks`` package installed next to ``tokrag_model`` is used (a user's own ``tasks`` module is
    never imported). Never raises.
    """
    try:
        import importlib.util
        import sys
        from pathlib import Path

        mod = sys.modules.get("tasks")
        spec = importlib.util.find_spec("tasks") if mod is None else None
        origin = getattr(mod, "__file__", None) if mod is not None else (spec.origin if spec else None)
        if not origin or Path(origin).resolve().parent.parent != Path(__file__).resolve().parent.parent:
            return
        if mod is None:
            import tasks as mod  # noqa: F811
        for name in ("register_task_path", "register_provenance"):
            register = getattr(mod, name, None)
            if register is not None:
                register()
    except Exception:
        pass
