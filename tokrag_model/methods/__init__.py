"""The RAG decoding methods, one module each (like lm-eval's one backend per file), and their registry.

Each module holds one method whole: its lm-eval class (a :class:`tokrag_model.base.RAGMethodLM`), its
per-step rule over the shared decoder (:mod:`tokrag_model.decoder`) and its formulas with their source.
Shared pieces live in :mod:`tokrag_model.base` (loading, prompts, budget, batching, traces, the
single-branch rule, ``ScorePlan`` for batched teacher-forced scoring), :mod:`tokrag_model.prompt` and
:mod:`tokrag_model.loading`.

:data:`METHODS` maps each lm-eval model name to ``module:Class`` inside this package, lazily (importing
this package imports neither torch nor lm-eval); :data:`tokrag_model.MODEL_CLASSES` and lm-eval's
registry are built from it. Adding a method = its module here, its tests, and one line in
:data:`METHODS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

# lm-eval model name -> "module:Class" in tokrag_model.methods (order = the leaderboards' usual order)
METHODS: dict[str, str] = {
    "tokrag": "tokrag:TokRAGLM",
    "rag-standard": "standard:RagStandardLM",
    "rag-replug": "replug:ReplugLM",
    "rag-selfrag-filter": "selfrag_filter:SelfRAGFilterLM",
    "rag-none": "none:RagNoneLM",
    "rag-cad": "cad:CADLM",
    "rag-adacad": "adacad:AdaCADLM",
    "rag-ensemble-entropy": "ensemble_entropy:EntropyEnsembleLM",
}


def target(name: str) -> str:
    """The full ``package.module:Class`` string of method ``name`` (lm-eval's lazy registry form).

    Raises:
        KeyError: ``name`` is not a registered method.
    """
    return f"{__name__}.{METHODS[name]}"


def load(name: str) -> Any:
    """The lm-eval class of method ``name`` (imports its module, hence torch and lm-eval).

    Raises:
        KeyError: ``name`` is not a registered method.
        ConfigError: its ``METHODS`` line names a class the module lacks, or a class whose ``METHOD`` is another
            name (traces, results and error messages would carry that name).
    """
    from retrieval.errors import ConfigError, closest

    module, cls = METHODS[name].split(":")
    mod = importlib.import_module(f"{__name__}.{module}")
    found = getattr(mod, cls, None)
    if found is None:
        near = closest(cls, [n for n in vars(mod) if isinstance(getattr(mod, n), type)], n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(f"METHODS[{name!r}] = {METHODS[name]!r}: tokrag_model/methods/{module}.py has no class "
                          f"{cls!r}{hint}; fix the line in tokrag_model/methods/__init__.py")
    if getattr(found, "METHOD", name) != name:
        raise ConfigError(f"METHODS[{name!r}] = {METHODS[name]!r}: {cls}.METHOD is {found.METHOD!r}; set METHOD = "
                          f"{name!r} in tokrag_model/methods/{module}.py (its traces and messages carry METHOD)")
    return found


class _Models(Mapping):
    """``{name: class}`` over :data:`METHODS`, each module imported on first access."""

    def __getitem__(self, name: str) -> Any:
        return load(name)

    def __iter__(self) -> Iterator[str]:
        return iter(METHODS)

    def __len__(self) -> int:
        return len(METHODS)


MODELS: Mapping[str, Any] = _Models()
