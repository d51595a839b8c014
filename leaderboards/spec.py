r"""Leaderboard specs: methods x tasks x seeds under one fairness contract.

A spec is a YAML file::

    name: ci
    description: SmolLM2 on 50 NQ-oracle questions, clean and 60% noise
    include_path: ../../tasks          # lm-eval task folder (relative to this file; default: tasks/)
    report_dir: ../ci-report           # optional, relative to this file; default <runs_dir>/reports/<name>
    reference: rag-standard            # paired tests compare every method with this one
    shared:                            # THE FAIRNESS CONTRACT: identical for every cell
      model_args: {pretrained: smollm2-135m-instruct, k: 5}
      gen_kwargs: {max_gen_toks: 32, do_sample: false}
      limit: 50                        # first 50 documents of every task (a fixed subset)
      batch_size: 1
      apply_chat_template: true        # lm-eval's --apply_chat_template (passages inside the first user turn);
                                       # a plain-text task (YAML metadata plain_text: true, wiki_lm_bm25) runs
                                       # without it and without system_instruction, printed in the contract
      system_instruction: null         # lm-eval's --system_instruction
      fewshot_as_multiturn: true       # lm-eval's --fewshot_as_multiturn (with num_fewshot and a chat template)
      prompt: instruct                 # QA prompt format, task metadata `prompt`: instruct | base
                                       # (base also sets gen_kwargs.until: ["\n"] unless the contract sets until,
                                       # on the tasks that stop at the short-answer stop: ELI5 and WoW keep their own)
    tasks: [nq_oracle_bm25, {task: nq_oracle_bm25_noise60, noise: 0.6}]
    seeds: [1234]
    bootstrap: {iters: 1000, seed: 0, confidence: 0.95}
    methods:
      - name: rag-standard
        model: rag-standard            # an lm-eval registry name, or "package.module:Class"
      - name: tokrag
        model: tokrag
        model_args: {layer: dynamic}       # the method's own hyper-parameters (not contract keys)
        specific: {k: 10}                  # an explicit, printed deviation from the contract

A method may not set a contract key in ``model_args``/``gen_kwargs``: a deviation must be written
under ``specific`` (model arguments) or ``specific_gen_kwargs``, and is printed beside the row in
every table. This keeps "same k, same prompt, same budget" checkable from the spec alone. ``device`` and
``batch_size`` are contract keys (``shared:``), never model arguments: a method's own value is
``specific: {batch_size: 2}``.

Several base models: ``models:`` lists them, each with its own fairness contract (its ``shared``
is merged over the top-level ``shared``, ``model_args``/``gen_kwargs`` key by key) and optionally a
subset of the spec's ``tasks`` and ``methods``. Methods are compared only within a model: every
table, test and plot is per model. Cell ids become ``model/method/task/seedN``::

    models:
      - name: smollm2-135m-instruct
        shared: {model_args: {pretrained: smollm2-135m-instruct}, apply_chat_template: true}
      - name: gemma-3-270m
        shared: {model_args: {pretrained: gemma-3-270m}}
        tasks: [nq_oracle_bm25, nq_oracle_bm25_noise60]
        method_args: {tokrag-calibrated: {preset: leaderboards/presets/tokrag-gemma-3-270m.json}}

``method_args`` gives a method hyper-parameters that depend on the base model (a calibrated preset);
they may not set contract keys.

A task entry may set its own ``limit`` (e.g. fewer paragraphs for a language-modelling task); it is
the same for every method, so it is part of the contract and printed with it. ``reference`` may be a
list (``[rag-standard, rag-none]``): every method is compared with each, Holm-corrected within a task.
``closed_book`` (default ``rag-none`` when such a method exists) is the method that per-question
helped/hurt counts compare with.

Errors: :class:`retrieval.errors.ConfigError` naming the spec file and the offending key.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from retrieval.errors import ConfigError
from tasks.precheck import _SEED_RANGES, INSTRUCT_STOP, base_prompt_needs_newline_stop, plain_text

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INCLUDE = REPO_ROOT / "tasks"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_NOISE_RE = re.compile(r"^(?P<base>.+?)_noise(?P<pct>\d+)$")
_SHARED_KEYS = {"model_args", "gen_kwargs", "limit", "batch_size", "device", "num_fewshot", "apply_chat_template",
                "system_instruction", "fewshot_as_multiturn", "prompt"}
SEED_MIN, SEED_MAX = next((low, high) for name, low, high in _SEED_RANGES.values() if name == "numpy")
"""The smallest and largest seed of a cell: NumPy's range (``np.random.seed`` takes integers in [0, 2**32 - 1]; lm-eval
seeds it with the cell's), the one :mod:`tasks.precheck` checks lm-eval's ``--seed`` against."""
PROMPTS = ("instruct", "base")
"""Prompt formats of the QA tasks (task metadata ``prompt``, tasks/README.md "Prompts"): a contract's ``prompt``."""
_TOP_KEYS = {
    "name", "description", "include_path", "report_dir", "runs_dir", "reference", "shared", "tasks",
    "seeds", "bootstrap", "methods", "notes", "subset", "progress_chunk", "models", "closed_book",
    "primary_metric",
}  # no "metrics": nothing read it (metrics: [nope] passed); the tasks' metric lists and primary_metric say what is shown
_MODEL_KEYS = {"name", "label", "shared", "tasks", "methods", "method_args", "notes"}
_TASK_KEYS = {"task", "noise", "family", "limit"}
_METHOD_KEYS = {"name", "model", "model_args", "gen_kwargs", "specific", "specific_gen_kwargs", "label", "notes"}
_MODEL_FLAG_KEYS = ("batch_size", "device")
"""The contract keys that lm-eval also hands a model next to its ``--model_args`` (``--batch_size``, ``--device``). A
spec sets them in a contract (``shared:``, a model's ``models[j].shared:``) for every row, or as a method's printed
deviation (``methods[i].specific``); any ``model_args`` (a method's, a model's ``method_args``, a contract's) holding
one is refused at load (:func:`_refuse_model_flags`): there it won over the contract for that cell, unprinted
(s61 d1)."""
# Generation settings lm-eval passes to generate_until (a typo here would silently break the contract).
_GEN_KEYS = {"max_gen_toks", "until", "do_sample", "temperature", "top_p", "top_k"}
_BOOTSTRAP_KEYS = {"iters", "seed", "confidence"}


def _check_keys(path: Path, where: str, given: dict, allowed: set[str], model: Any = None) -> None:
    """Raise ConfigError naming unknown keys of ``given`` of section ``where`` (``top level``, ``shared``,
    ``models[i].shared.gen_kwargs``, ``methods[i]``, ...), each with where it belongs when it is valid in another
    section (:func:`_elsewhere`: ``shared: {k: 5}`` names ``shared.model_args``; ``model``: a method entry's
    ``model``, whose own arguments it tells from another method's), else a did-you-mean, and the allowed keys."""
    from retrieval.errors import closest

    unknown = sorted(set(given) - allowed)
    if unknown:
        hints = []
        for key in unknown:
            place = _elsewhere(where, str(key), model)
            close = closest(key, allowed, n=1)
            hints.append(f"{key!r}" + (f" ({place})" if place else f" (did you mean {close[0]!r}?)" if close else ""))
        raise _err(path, f"{where}: unknown key(s) {', '.join(hints)}; allowed: {sorted(allowed)}")


def _model_arguments() -> tuple[set[str], dict[str, list[str]]]:
    """``(the model arguments every tokrag method takes, {a method's own argument: the methods taking it})``
    (:data:`tokrag_model.args.COMMON_ARGS`, each method's ``EXTRA_ARGS``); empty without the models."""
    try:
        from tokrag_model.args import COMMON_ARGS
        from tokrag_model.methods import MODELS
    except Exception:  # noqa: BLE001 - the spec module without the models
        return set(), {}
    own: dict[str, list[str]] = {}
    for method in MODELS:
        try:
            extra = getattr(MODELS[method], "EXTRA_ARGS", {}) or {}
        except Exception:  # noqa: BLE001 - a method that does not import here: no hint from it
            continue
        for name in extra:
            if name not in COMMON_ARGS:
                own.setdefault(name, []).append(method)
    return set(COMMON_ARGS), own


def _elsewhere(where: str, key: str, model: Any = None) -> str | None:
    """Where ``key``, unknown in spec section ``where`` (a :func:`_check_keys` section), belongs when it is valid one
    level elsewhere, as a hint (``a model argument: put it under shared.model_args``); None when it is valid nowhere
    else. In order: a generation setting (``gen_kwargs``), a contract key (``shared``; a model's own contract for a
    ``models[i]`` section; in a method entry, for ``device``/``batch_size``, its ``specific`` too), a model
    argument (the contract's ``model_args``; in a method entry, its ``specific``
    too; a method's own argument, its ``model_args``, or where the entry's ``model`` is another tokrag method, the
    methods that take it: ``alpha`` in a ``rag-standard`` entry is rag-cad's), a top-level, ``bootstrap``, task-,
    method- or model-entry key."""
    head = where.split(".")[0]
    method = head if head.startswith("methods[") else None
    contract = f"{head}.shared" if head.startswith("models[") else "shared"
    if key in _GEN_KEYS and not where.endswith("gen_kwargs"):
        return f"a generation setting: put it under {method or contract}.gen_kwargs"
    if key in _SHARED_KEYS and where != contract:
        if method and key in _MODEL_FLAG_KEYS:  # a method may deviate in these: its specific (printed)
            return (f"a contract key: put it under {contract} (or models[j].shared, a model's own contract) for every "
                    f"row, or under {method}.specific as this method's printed deviation")
        return f"a contract key: put it under {contract}"
    common, own = _model_arguments()
    if key in common:
        if method:
            return (f"a model argument: put it under {contract}.model_args, the contract, or {method}.specific for "
                    "this method's own value")
        return f"a model argument: put it under {contract}.model_args"
    if key in own:
        if method and isinstance(model, str) and model in _tokrag_methods() and model not in own[key]:
            return (f"a model argument of {', '.join(own[key])}, not of {model}: put it under the model_args of a "
                    f"methods entry with model: {' or '.join(own[key])}")
        if method:
            return f"a model argument: put it under {method}.model_args"
        return f"a model argument of {', '.join(own[key])}: put it under that method's methods[].model_args"
    if key in _TOP_KEYS and where != "top level":
        return "a top-level key: move it to the spec's top level"
    if key in _BOOTSTRAP_KEYS and where != "bootstrap":
        return "a bootstrap setting: put it under bootstrap"
    if key in _TASK_KEYS and not where.startswith("tasks["):
        return "a key of a tasks entry: tasks: [{task: NAME, " + key + ": ...}]"
    if key in _METHOD_KEYS and not method:
        return "a key of a methods entry: methods: [{name: ..., model: ..., " + key + ": ...}]"
    if key in _MODEL_KEYS and not head.startswith("models["):
        return "a key of a models entry: models: [{name: ..., " + key + ": ...}]"
    return None


@dataclass(frozen=True)
class MethodSpec:
    """One leaderboard row family: an lm-eval model (registry name or ``module:Class``) with its arguments.

    ``model_args`` are the method's own hyper-parameters; ``specific`` are explicit deviations from the
    contract's model arguments (printed with every table).
    """

    name: str
    model: str
    model_args: dict[str, Any] = field(default_factory=dict)
    gen_kwargs: dict[str, Any] = field(default_factory=dict)
    specific: dict[str, Any] = field(default_factory=dict)
    specific_gen_kwargs: dict[str, Any] = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True)
class TaskSpec:
    """One lm-eval task of the leaderboard, with its noise ratio (fraction of passages replaced by noise).

    ``family`` groups the clean task with its noise variants for the robustness curve; ``limit`` (the
    first N documents) overrides the contract's ``limit`` for this task, for every method alike.
    """

    task: str
    noise: float | None
    family: str
    limit: int | float | None = None


@dataclass(frozen=True)
class ModelSpec:
    """One base model and its fairness contract (``shared``: the spec's ``shared`` with this model's
    entries merged over it). ``name`` is None for a spec without ``models:`` (one implicit model)."""

    name: str | None
    label: str
    shared: dict[str, Any]
    tasks: tuple[str, ...] | None = None
    methods: tuple[str, ...] | None = None
    method_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: str = ""


@dataclass(frozen=True)
class Cell:
    """One unit of work: (model, method, task, seed) with every resolved setting. Its run folder is keyed
    by :func:`leaderboards.keys.cell_key` of :meth:`config`."""

    method: MethodSpec
    task: TaskSpec
    seed: int
    model_args: dict[str, Any]
    gen_kwargs: dict[str, Any]
    limit: int | float | None
    batch_size: int
    device: str | None
    num_fewshot: int | None
    apply_chat_template: bool
    model: ModelSpec | None = None
    system_instruction: str | None = None
    fewshot_as_multiturn: bool = True
    prompt: str | None = None
    hits: int | None = None
    draws: bool = field(default=False, compare=False, repr=False)
    """Whether the task draws passages at random (:func:`task_draws`), so that lm-eval gets the cell's seed."""

    @property
    def model_name(self) -> str | None:
        """The spec's name of the cell's base model (None without ``models:``)."""
        return self.model.name if self.model else None

    @property
    def label(self) -> str:
        """Human-readable cell id ``[model | ]method | task | seed N``."""
        pre = f"{self.model_name} | " if self.model_name else ""
        return f"{pre}{self.method.name} | {self.task.task} | seed {self.seed}"

    @property
    def cell_id(self) -> str:
        """Stable id used in baselines and tables: ``method/task/seedN`` (``model/method/task/seedN``
        when the spec lists ``models:``)."""
        pre = f"{self.model_name}/" if self.model_name else ""
        return f"{pre}{self.method.name}/{self.task.task}/seed{self.seed}"

    def config(self) -> dict[str, Any]:
        """The settings that define this cell's numbers (JSON-able, without fingerprints). The model's
        spec name is not part of it: the contract (weights, prompt settings) is."""
        return {
            "method": self.method.name,
            "model": self.method.model,
            "model_args": self.model_args,
            "gen_kwargs": self.gen_kwargs,
            "task": self.task.task,
            "seed": self.seed,
            "limit": self.limit,
            "batch_size": self.batch_size,
            "device": self.device,
            "num_fewshot": self.num_fewshot,
            "apply_chat_template": self.apply_chat_template,
            # prompt settings added later: in the key only when set, so older cells keep their keys
            **({"system_instruction": self.system_instruction} if self.system_instruction is not None else {}),
            **({"fewshot_as_multiturn": False} if not self.fewshot_as_multiturn else {}),
            **({"prompt": self.prompt} if self.prompt is not None else {}),
            **({"hits": self.hits} if self.hits is not None else {}),
        }

    def task_metadata(self) -> dict[str, Any]:
        """lm-eval task metadata this cell adds (``--metadata``): the prompt format when the contract names one,
        and ``hits`` when the task must retrieve another number of passages than its YAML's (:func:`task_hits`)."""
        return {**({"prompt": self.prompt} if self.prompt is not None else {}),
                **({"hits": self.hits} if self.hits is not None else {})}

    def lm_eval_metadata(self) -> dict[str, Any]:
        """The task metadata lm-eval gets for this cell: :meth:`task_metadata` and, for a task that draws passages at
        random (:attr:`draws`), ``seed``: the cell's seed, over the YAML's (the shipped YAMLs say 1234, the default
        draw). So the spec's ``seeds`` draw the noise and counterfactual passages as they seed lm-eval's random,
        NumPy, torch and few-shot generators. A method's ``model_args`` ``seed`` never reaches the task here (the
        runner gives lm-eval its own task manager): every method of a cell sees the same passages. A clean task's
        metadata is :meth:`task_metadata` (its passages do not depend on a seed). A new dict at each call."""
        return {**self.task_metadata(), **({"seed": self.seed} if self.draws else {})}


@dataclass(frozen=True)
class LeaderboardSpec:
    """A parsed leaderboard spec (see the module docstring for the YAML layout)."""

    name: str
    path: Path
    description: str
    include_path: list[Path]
    shared: dict[str, Any]
    methods: list[MethodSpec]
    tasks: list[TaskSpec]
    seeds: list[int]
    reference: str | None
    bootstrap_iters: int
    bootstrap_seed: int
    confidence: float
    report_dir: Path | None
    runs_dir: Path | None
    notes: str
    subset: str
    progress_chunk: int
    models: list[ModelSpec] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    closed_book: str | None = None
    primary_metric: str = "answer_match"
    selection: dict[str, tuple[str, ...]] = field(default_factory=dict)
    whole: LeaderboardSpec | None = field(default=None, repr=False, compare=False)
    """The spec a selection was made of (:meth:`select`; None for a whole spec): the run checks its methods."""

    def select(self, *, models: list[str] | None = None, methods: list[str] | None = None,
               tasks: list[str] | None = None, verb: str = "run") -> LeaderboardSpec:
        """This spec restricted to some models, methods and tasks (``leaderboard run --models/--methods/--tasks``),
        to run a grid in parts, the cells that matter first. A selected cell is the same cell as in the whole spec:
        same settings, same run folder (the key does not depend on the spec's lists), so the whole spec's run and
        report find it done. ``None`` keeps all; a name given twice counts once. The selection is kept in
        :attr:`selection` (names in spec order), the whole spec in :attr:`whole`. Models left without a cell (their
        own ``tasks:``/``methods:`` lists exclude the selection) are logged at INFO. ``verb``: the command whose
        options these are (``run``, ``check``), as the messages name them.

        Raises:
            ConfigError: a name not in the spec (with a did-you-mean that ignores case), ``models`` for a spec
                without ``models:``, or a selection that leaves no cell.
        """
        from retrieval.errors import closest

        def pick(option: str, given: list[str] | None, known: list[str]) -> tuple[str, ...] | None:
            if given is None:
                return None
            lower = {k.lower(): k for k in reversed(known)}  # the first of names equal but for case
            for x in given:
                if x not in known:
                    close = [lower[c] for c in closest(x.lower(), lower, n=1)]
                    raise ConfigError(f"leaderboard {verb} {option}: {x!r} is not in the spec {self.path}"
                                      + (f" (did you mean {close[0]!r}?)" if close else "") + f"; have {known}")
            return tuple(k for k in known if k in given)  # spec order, once each

        if models is not None and not self.models:
            raise ConfigError(f"leaderboard {verb} --models: the spec {self.path} has no models: list (one implicit model); "
                              "drop --models")
        chosen = {"models": pick("--models", models, [str(m.name) for m in self.models]),
                  "methods": pick("--methods", methods, [m.name for m in self.methods]),
                  "tasks": pick("--tasks", tasks, [t.task for t in self.tasks])}
        out = replace(
            self,
            models=[m for m in self.models if chosen["models"] is None or m.name in chosen["models"]],
            methods=[m for m in self.methods if chosen["methods"] is None or m.name in chosen["methods"]],
            tasks=[t for t in self.tasks if chosen["tasks"] is None or t.task in chosen["tasks"]],
            selection={**self.selection, **{k: v for k, v in chosen.items() if v is not None}},
            whole=self.whole or self,
        )
        cells = out.cells()
        if not cells:
            raise ConfigError(f"leaderboard {verb} {out.selection_args()}: selects no cell of the spec {self.path} (a "
                              "model's own tasks/methods lists may exclude the others)")
        with_cells = {c.model_name for c in cells}
        idle = [str(m.name) for m in out.models if m.name not in with_cells]
        if idle:  # --tasks nq_oracle_gold on the v2 spec: gemma's tasks: list excludes it
            log.info("leaderboard %s %s: no cell for model(s) %s (their own tasks:/methods: lists exclude the "
                     "selection)", self.name, out.selection_args(), ", ".join(idle))
        return out

    def selection_args(self) -> str:
        """The selection as ``run`` options (``--methods a,b --tasks t``); empty for a whole spec."""
        return " ".join(f"--{k} {','.join(v)}" for k, v in self.selection.items())

    def label(self) -> str:
        """``name``, with ``(selection: --methods a,b)`` for a selection (:meth:`select`), as the run logs it."""
        return self.name + (f" (selection: {self.selection_args()})" if self.selection else "")

    def model_list(self) -> list[ModelSpec]:
        """The base models: the ``models:`` entries, or one implicit model (name None) with ``shared``."""
        return self.models or [ModelSpec(name=None, label="", shared=self.shared)]

    def methods_of(self, model: ModelSpec) -> list[MethodSpec]:
        """The methods evaluated with ``model`` (all, or the model's ``methods`` subset), in spec order."""
        return [m for m in self.methods if model.methods is None or m.name in model.methods]

    def tasks_of(self, model: ModelSpec) -> list[TaskSpec]:
        """The tasks evaluated with ``model`` (all, or the model's ``tasks`` subset), in spec order."""
        return [t for t in self.tasks if model.tasks is None or t.task in model.tasks]

    def cells(self) -> list[Cell]:
        """All cells, ordered model-major then method-major (one model load serves all of a method's cells). A task
        whose YAML declares it plain text (:func:`task_plain_text`: ``wiki_lm_bm25``) or a ``loglikelihood_rolling``
        task (:func:`task_unchatted`: lm-eval drops the chat of a rolling request) gets ``apply_chat_template``
        False whatever the contract says, no ``system_instruction`` (lm-eval would prepend it to the text) and the
        default ``fewshot_as_multiturn`` (no effect without a chat template): the keys of plain-prompt cells."""
        out = []
        for mod in self.model_list():
            sh = mod.shared
            for m in self.methods_of(mod):
                margs = self.cell_model_args(mod, m)
                for t in self.tasks_of(mod):
                    stop = _prompt_contract(sh, task_until(t.task, self.include_path))  # base: short-answer tasks
                    gk = {**sh.get("gen_kwargs", {}), **stop, **m.gen_kwargs, **m.specific_gen_kwargs}
                    hits = task_hits(t.task, self.include_path, margs.get("k"))
                    draws = task_draws(t.task, self.include_path)
                    plain = task_unchatted(t.task, self.include_path) is not None  # never chat-framed, whatever the contract
                    for s in self.seeds:
                        out.append(
                            Cell(
                                method=m, task=t, seed=s, model_args=margs, gen_kwargs=gk,
                                limit=t.limit if t.limit is not None else sh.get("limit"),
                                batch_size=int(sh.get("batch_size", 1)),
                                device=sh.get("device", "cpu"), num_fewshot=sh.get("num_fewshot"),
                                apply_chat_template=bool(sh.get("apply_chat_template", False)) and not plain,
                                model=mod if mod.name else None,
                                system_instruction=None if plain else sh.get("system_instruction"),
                                fewshot_as_multiturn=True if plain else bool(sh.get("fewshot_as_multiturn", True)),
                                prompt=sh.get("prompt"), hits=hits, draws=draws,
                            )
                        )
        return out

    def cell_model_args(self, model: ModelSpec, method: MethodSpec) -> dict[str, Any]:
        """The model arguments of ``method``'s cells with ``model``: the contract's, the method's own, the model's
        ``method_args`` for it and the method's ``specific`` deviations, later over earlier (a new dict)."""
        return {**model.shared.get("model_args", {}), **method.model_args, **model.method_args.get(method.name, {}),
                **method.specific}

    def noise_share(self, model: ModelSpec, method: MethodSpec, task: TaskSpec) -> float | None:
        """The share of passages ``task`` replaces by noise in ``method``'s cells with ``model``: the report's noise
        column and the robustness curve's x. :func:`task_noise_share` of the cells' model argument ``k``."""
        return task_noise_share(task, self.include_path, self.cell_model_args(model, method).get("k"))

    def method(self, name: str) -> MethodSpec:
        """The method called ``name``. Raises ConfigError if there is none."""
        for m in self.methods:
            if m.name == name:
                return m
        raise ConfigError(f"{self.path}: no method named {name!r} (have {[m.name for m in self.methods]})")

    def contract_lines(self, model: ModelSpec | None = None) -> list[str]:
        """The fairness contract of ``model`` (default: the first) as printable ``key: value`` lines."""
        model = model or self.model_list()[0]
        sh = model.shared
        lines = []
        for k, v in sorted(sh.get("model_args", {}).items()):
            lines.append(f"model_args.{k}: {v}")
        tasks = self.tasks_of(model)
        stops = {t.task: task_until(t.task, self.include_path) for t in tasks}
        own_stop = {task: until for task, until in stops.items() if not _prompt_contract(sh, until)}
        base = {} if len(own_stop) == len(tasks) else _prompt_contract(sh, INSTRUCT_STOP)
        for k, v in sorted({**sh.get("gen_kwargs", {}), **base}.items()):
            lines.append(f"gen_kwargs.{k}: {v}")
        if base:  # the base prompt's newline: only the tasks with the short-answer stop (_prompt_contract)
            for task, until in own_stop.items():
                lines.append(f"gen_kwargs.until.{task}: {until} (the task's own stop, as with lm_eval's prompt=base)")
        for k in sorted(_SHARED_KEYS - {"model_args", "gen_kwargs"}):
            if k in sh:
                lines.append(f"{k}: {sh[k]}")
        for t in tasks:
            if t.limit is not None:
                lines.append(f"limit.{t.task}: {t.limit}")
        for t in tasks:  # a plain-text or rolling task runs without the contract's chat template and system instruction (cells)
            why = task_unchatted(t.task, self.include_path) \
                if sh.get("apply_chat_template") or sh.get("system_instruction") is not None else None
            if why is not None:
                if sh.get("apply_chat_template"):
                    lines.append(f"apply_chat_template.{t.task}: false ({why})")
                if sh.get("system_instruction") is not None:
                    lines.append(f"system_instruction.{t.task}: null ({why})")
        for t in tasks:  # a task told to retrieve the contract's k passages instead of its own number (task_hits)
            hits = task_hits(t.task, self.include_path, sh.get("model_args", {}).get("k"))
            if hits is not None:
                lines.append(f"hits.{t.task}: {hits} (passages the task retrieves, = what the model is given)")
        lines.append(f"seeds: {', '.join(str(s) for s in self.seeds)}")
        lines.append(f"tasks: {', '.join(t.task for t in tasks)}")
        if self.subset:
            lines.append(f"subset: {self.subset}")
        return lines

    def specific_settings(self) -> dict[str, dict[str, Any]]:
        """Per-method explicit deviations from the contract: ``{method: {key: value}}`` (empty if none). A key is
        named as the contract names it: ``model_args.<arg>``, ``gen_kwargs.<kwarg>``, and ``device`` / ``batch_size``
        (:data:`_MODEL_FLAG_KEYS`: the contract's ``device:`` / ``batch_size:``, which the cells' model gets in their
        place, as a model argument). A ``specific`` ``device: null`` is no deviation and is left out: a device of
        None is "not given", so the cells run on the contract's device (:func:`leaderboards.runner.cell_device`,
        :func:`tokrag_model.args.merge_lm_eval_flags`); printed as ``device=None`` it marked a contract row ``*``."""
        out = {}
        for m in self.methods:
            dev = {k if k in _MODEL_FLAG_KEYS else f"model_args.{k}": v for k, v in m.specific.items()
                   if not (k == "device" and v is None)}
            dev.update({f"gen_kwargs.{k}": v for k, v in m.specific_gen_kwargs.items()})
            if dev:
                out[m.name] = dev
        return out


class _TaskYamlLoader(yaml.SafeLoader):
    """A YAML loader for lm-eval task files: ``!function utils.x`` tags read as plain strings."""


_TaskYamlLoader.add_multi_constructor("!", lambda loader, suffix, node: f"!{suffix}")


def task_yaml_metadata(task: str, include_path: list[Path]) -> dict[str, Any]:
    """The ``metadata:`` of ``task``'s YAML merged over those of the files it ``include``s ({} if none is found)."""
    return dict(_task_yaml_metadata(task, tuple(Path(p) for p in include_path)))


DRAWS = ("noise", "counterfactual")
"""Task metadata keys whose passages are drawn at random with the metadata ``seed`` (tasks/rag.py)."""


def task_draws(task: str, include_path: list[Path]) -> bool:
    """Whether ``task`` draws passages at random: its YAML metadata (with the files it includes) sets ``seed`` or a
    true :data:`DRAWS` key (``noise``, ``counterfactual``). False when no YAML of it is found."""
    meta = task_yaml_metadata(task, include_path)
    return "seed" in meta or any(meta.get(k) for k in DRAWS)


def task_plain_text(task: str, include_path: list[Path]) -> bool:
    """Whether ``task``'s YAML metadata (with the files it includes) declares that it scores plain text
    (:data:`tasks.precheck.PLAIN_TEXT` ``plain_text: true``: ``wiki_lm_bm25``), so that its cells run without the
    contract's chat template (:meth:`LeaderboardSpec.cells`). False when no YAML of it is found."""
    return plain_text(task_yaml_metadata(task, include_path))


def task_unchatted(task: str, include_path: list[Path]) -> str | None:
    """Why ``task``'s cells run without the contract's chat template, system instruction and ``fewshot_as_multiturn``
    (:meth:`LeaderboardSpec.cells`, :meth:`LeaderboardSpec.contract_lines`), or None when they keep them:
    ``"plain-text language-modelling task"`` (:func:`task_plain_text`); ``"loglikelihood_rolling: lm-eval scores the
    text alone"`` (:func:`task_output_type`): a rolling request is ``(doc_to_target(doc),)`` (lm-eval 0.4.13
    ``ConfigurableTask.construct_requests``), the chat lm-eval renders for it is dropped, so the flags change no number
    (every tokrag method, ``rag-selfrag-filter``'s critic included: it renders the tokenizer's default template
    with or without them) and only split the cell's key from the same run's without them."""
    if task_plain_text(task, include_path):
        return "plain-text language-modelling task"
    if task_output_type(task, include_path) == "loglikelihood_rolling":
        return "loglikelihood_rolling: lm-eval scores the text alone"
    return None


def task_yaml_chain(task: str, include_path: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """``[(path, document)]`` of ``task``'s YAML and of the files it ``include``s, as lm-eval's ``load_yaml`` reads
    them: ``include:`` is one file or a list (read by :func:`tasks.precheck.includes`: an absolute path as is, else
    relative to the including file's resolved folder), followed recursively. The list is in lm-eval's precedence,
    highest first: the task's own file, then each include's chain from the last include to the first (lm-eval
    merges the includes in order, a later one over an earlier, and the including file over all), so the first
    document that sets a top-level key holds lm-eval's value of it. [] if no YAML is found. Read afresh at each
    call; a file that is missing, unreadable or already in the chain is left out with what it includes (lm-eval
    reports it when the task loads); at most 16 files."""
    from tasks.precheck import includes

    from .keys import find_task_yaml

    chain: list[tuple[Path, dict[str, Any]]] = []
    seen: set[Path] = set()

    def walk(y: Path) -> None:
        real = y.resolve()
        if len(chain) >= 16 or real in seen or not y.is_file():
            return
        try:
            doc = yaml.load(y.read_text(encoding="utf-8"), Loader=_TaskYamlLoader) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return
        doc = doc if isinstance(doc, dict) else {}
        seen.add(real)
        chain.append((y, doc))
        for _, inc in reversed(includes(doc, real.parent)):  # the last include first: it wins over earlier ones
            walk(Path(inc))

    y = find_task_yaml(task, list(include_path))
    if y is not None:
        walk(y)
    return chain


@lru_cache(maxsize=512)
def _task_yaml_chain(task: str, include_path: tuple[Path, ...]) -> tuple[tuple[Path, dict[str, Any]], ...]:
    """:func:`task_yaml_chain`, read once per (task, include_path)."""
    return tuple(task_yaml_chain(task, list(include_path)))


def _task_yaml_docs(task: str, include_path: tuple[Path, ...]) -> tuple[dict[str, Any], ...]:
    """``task``'s YAML document and those of the files it ``include``s, the task's own first (() if none is found)."""
    return tuple(doc for _, doc in _task_yaml_chain(task, include_path))


def _task_yaml_metadata(task: str, include_path: tuple[Path, ...]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for doc in reversed(_task_yaml_docs(task, include_path)):
        if isinstance(doc.get("metadata"), dict):
            meta.update(doc["metadata"])
    return meta


def task_yaml_metrics(task: str, include_path: list[Path]) -> list[str] | None:
    """The metric names of ``task``'s ``metric_list`` (its own, else the nearest included file's); None when the
    task's YAML is not found or names no metric list (a task of lm-eval's own registry)."""
    for doc in _task_yaml_docs(task, tuple(Path(p) for p in include_path)):
        ml = doc.get("metric_list")
        if isinstance(ml, list):
            return [m["metric"] for m in ml if isinstance(m, dict) and isinstance(m.get("metric"), str)]
    return None


def task_hits(task: str, include_path: list[Path], k: Any) -> int | None:
    """The ``hits`` (passages retrieved per question) a cell passes to its task so that the task attaches exactly
    the ``k`` passages the contract gives the model; None to keep the task's own.

    The model argument ``k`` takes the top k of the *attached* passages, and lm-eval does not pass a Python-built
    model's arguments to the tasks. Without this, a contract ``k: 3`` on a task that retrieves 5 showed the model
    3 passages while answer recall@k, gold@k, the noise share and the per-question pages counted 5. A QA task (its
    YAML metadata names a ``dataset``) retrieves ``k``; another task (language modelling, ``wiki_lm_bm25``: 3)
    keeps its own depth unless ``k`` is smaller; a gold-only task (its one gold passage) and a task without
    ``hits`` are left alone. ``None`` when nothing changes, so the run keys of such cells stay as they were.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        return None
    meta = task_yaml_metadata(task, include_path)
    own = meta.get("hits")
    if isinstance(own, bool) or not isinstance(own, int) or meta.get("gold_only") in (True, "true", "True", 1):
        return None
    want = k if "dataset" in meta else min(k, own)
    return None if want == own else want


def task_noise_passages(task: TaskSpec, include_path: list[Path], k: Any) -> tuple[int, int] | None:
    """``(replaced, passages)``: how many of the ``passages`` a question of ``task`` is given its noise replaces with a
    contract ``k`` (:func:`tasks.rag.n_noise` of the task's noise and ``passages``: :func:`task_hits` of ``k``, else
    the YAML's ``hits``). None when the task draws no noise of :func:`tasks.rag.add_noise` (no metadata ``noise``
    above 0: a clean task, or one whose own loader draws it), its YAML sets no integer ``hits`` or it is gold-only.
    A question BM25 finds fewer passages for has fewer (the task logs a WARNING); this counts the full ``hits``."""
    from tasks.rag import n_noise

    declared, source, _ = task_noise(task.task, include_path)
    if source != "metadata" or not declared or task.noise is None:
        return None
    meta = task_yaml_metadata(task.task, include_path)
    own = meta.get("hits")
    if isinstance(own, bool) or not isinstance(own, int) or own < 1 or \
            meta.get("gold_only") in (True, "true", "True", 1):
        return None
    passages = task_hits(task.task, include_path, k) or own
    return n_noise(task.noise, passages), passages


def task_noise_share(task: TaskSpec, include_path: list[Path], k: Any) -> float | None:
    """The share of a question's passages ``task`` actually replaces by noise with a contract ``k``: ``replaced /
    passages`` of :func:`task_noise_passages`, a whole number of passages, so not always the nominal ``task.noise``
    (at ``k: 3`` ``_noise20`` and ``_noise40`` both replace 1 of 3: 1/3; at ``k: 2`` ``_noise20`` replaces none: 0.0,
    the clean task). At ``hits`` 5 or 10 it equals the nominal 0.2/0.4/0.6/0.8. ``task.noise`` (None for a task
    without noise) when :func:`task_noise_passages` is None."""
    counted = task_noise_passages(task, include_path, k)
    return task.noise if counted is None else counted[0] / counted[1]


def _and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _warn_noise_shares(spec: LeaderboardSpec) -> None:
    """One WARNING per contract (model and ``k``; a method's ``specific`` ``k`` is a contract of its own) whose noise
    tasks replace another share of the passages than their nominal noise (:func:`task_noise_passages`): the task, the
    nominal and the actual share, the levels that replace the same number of passages and those that replace none
    (identical to the clean task)."""
    for mod in spec.model_list():
        ks = list(dict.fromkeys(spec.cell_model_args(mod, m).get("k") for m in spec.methods_of(mod)))
        for k in ks:
            counted = [(t, c) for t in spec.tasks_of(mod)
                       if (c := task_noise_passages(t, spec.include_path, k)) is not None]
            off = [(t, c) for t, c in counted if abs(c[0] / c[1] - t.noise) > 1e-9]  # type: ignore[operator]
            if not off:
                continue
            parts = [f"{t.task} {t.noise:g} -> {c[0] / c[1]:.2f} ({c[0]} of {c[1]})" for t, c in off]
            groups: dict[tuple, list[str]] = {}
            for t, c in counted:
                groups.setdefault((t.family, c), []).append(t.task)
            same = [f"{_and(ts)} {'both' if len(ts) == 2 else 'all'} replace {c[0]} of {c[1]} passages"
                    for (_, c), ts in groups.items() if len(ts) > 1 and c[0]]
            zero = [f"{_and(ts)} replace{'s' if len(ts) == 1 else ''} 0 of {c[1]} passages: identical to the "
                    "clean task" for (_, c), ts in groups.items() if c[0] == 0]
            who = f" (model {mod.name})" if mod.name else ""
            log.warning("leaderboard spec %s: with k=%s%s the noise tasks replace a whole number of passages "
                        "(tasks.rag.n_noise), not their nominal share: %s%s; the report's noise column and robustness "
                        "curve show the actual share (k: 5 or 10 gives the nominal 0.2/0.4/0.6/0.8)", spec.path, k,
                        who, ", ".join(parts), "".join(f"; {x}" for x in same + zero))


def task_filters(task: str, include_path: list[Path]) -> list[str] | None:
    """The filter names of ``task``'s ``filter_list`` (its own, else the nearest included file's, as lm-eval merges
    them; an entry without a string ``name`` reads as ``'?'``); ``['none']`` when the YAML sets none (lm-eval's
    default filter); None when the task's YAML is not found (a task of lm-eval's own registry)."""
    docs = _task_yaml_docs(task, tuple(Path(p) for p in include_path))
    if not docs:
        return None
    for doc in docs:
        if "filter_list" in doc:
            fl = doc["filter_list"]
            if not isinstance(fl, list) or not fl:
                return ["none"]
            return [str(f["name"]) if isinstance(f, dict) and isinstance(f.get("name"), str) else "?" for f in fl]
    return ["none"]


def _check_one_filter(path: Path, tasks: list[str], include_path: list[Path]) -> None:
    """Refuse a task with more than one lm-eval filter (``filter_list`` with several named filters, as lm-eval's
    gsm8k has ``strict-match`` and ``flexible-extract``): lm-eval logs one sample per (question, filter) and one
    aggregate ``metric,<filter>`` per filter, while the report has one value per (row, metric), so it showed one
    filter's per-question values (the last logged) beside a blend of every filter's aggregates, naming neither."""
    for t in tasks:
        names = task_filters(t, include_path)
        if names is not None and len(names) > 1:
            y = task_yaml_chain(t, include_path)[0][0]
            raise _err(path, multi_filter_message(t, names, where=f" (filter_list, {y})", include=y.name))


def multi_filter_message(task: str, names: list[str], *, was_run: bool = False, where: str = "",
                         include: str = "of the task's YAML") -> str:
    """The one-line refusal of a task with several lm-eval filters ``names``, and what to list instead: ``task 'x'
    has 2 lm-eval filters [...]<where>, but a leaderboard reports one value per metric and task: list instead ...``
    (``was_run``: ``was run with`` instead of ``has``, for a run's samples; ``include``: the file a one-filter task
    would include). Used by :func:`_check_one_filter` (the spec) and :mod:`leaderboards.report` (a run's samples)."""
    return (f"task {task!r} {'was run with' if was_run else 'has'} {len(names)} lm-eval filters {names}{where}, but a "
            "leaderboard reports one value per metric and task: list instead a task of one filter (a YAML with its "
            f"own task: name, include: {include} and a filter_list of that one filter), one such task per filter to "
            "compare")


def task_output_type(task: str, include_path: list[Path]) -> str:
    """lm-eval's ``output_type`` of ``task``: the first one its YAML chain sets (:func:`task_yaml_chain`, lm-eval's
    precedence: the task's own file over what it includes), else ``generate_until`` (lm-eval's ``TaskConfig``
    default; also for a task whose YAML is not found here, a task of lm-eval's own registry). Loads no task."""
    for doc in _task_yaml_docs(task, tuple(Path(p) for p in include_path)):
        if "output_type" in doc:
            return str(doc["output_type"])
    return "generate_until"


def task_until(task: str, include_path: list[Path]) -> Any:
    """The stop strings of ``task``'s YAML (``generation_kwargs.until`` of the first file of its chain that sets
    ``generation_kwargs``, :func:`task_yaml_chain`: lm-eval merges the top-level keys, so a file's
    ``generation_kwargs`` replaces the whole mapping it includes); None when no file sets them or no YAML is found.
    Loads no task."""
    for doc in _task_yaml_docs(task, tuple(Path(p) for p in include_path)):
        if "generation_kwargs" in doc:
            gen = doc["generation_kwargs"]
            return gen.get("until") if isinstance(gen, dict) else None
    return None


def task_generates(task: str, include_path: list[Path]) -> bool:
    """Whether lm-eval runs ``task`` as ``generate_until`` (:func:`task_output_type`; also when its YAML names no
    output type, lm-eval's default: such a task was taken for a scoring one, and its prompt room went unchecked)."""
    return task_output_type(task, include_path) == "generate_until"


def _contract_where(mi: int, own: dict[str, Any], section: str, key: str) -> str:
    """The contract key that set ``section.key``: model ``mi``'s own ``shared`` when it sets it, else the top level's."""
    mine = own.get(section) if isinstance(own.get(section), dict) else {}
    return f"models[{mi}].shared.{section}" if key in mine else f"shared.{section}"


def _last_set(key: str, layers: list[tuple[str, Any]]) -> tuple[str, Any] | None:
    """``(spec key, value)`` of ``key`` as a cell resolves it from ``[(where, mapping)]`` (the last that sets it wins)."""
    found = None
    for where, d in layers:
        if isinstance(d, dict) and key in d:
            found = (f"{where}.{key}", d[key])
    return found


def _check_prompt_room(path: Path, shared: dict[str, Any], models: list[ModelSpec], models_raw: Any,
                       methods: list[MethodSpec], tasks: list[TaskSpec], include_path: list[Path]) -> None:
    """Refuse a (model, method) whose ``max_length`` model argument is at most its ``max_gen_toks`` generation setting
    when one of its tasks generates: a prompt gets ``max_length - max_gen_toks`` tokens, none here, and the run failed
    at its first request, after the model load. Only this certain case: how long a prompt is, is unknown before the
    task is built (the model refuses a prompt that does not fit when it sees one), and a task that only scores
    (``loglikelihood_rolling``) never uses ``max_gen_toks``. Each value is named by the spec key that set it."""
    generating = {t.task for t in tasks if task_generates(t.task, include_path)}
    if not generating:
        return
    for mi, mod in enumerate(models or [None]):
        own = (models_raw[mi].get("shared") or {}) if mod is not None else {}
        own = own if isinstance(own, dict) else {}
        if mod is not None and not generating & {t.task for t in tasks if mod.tasks is None or t.task in mod.tasks}:
            continue
        sh = mod.shared if mod is not None else shared
        for i, m in enumerate(methods):
            if mod is not None and mod.methods is not None and m.name not in mod.methods:
                continue

            def model_arg(key: str) -> tuple[str, Any] | None:  # the model-argument layers a cell merges, in order
                return _last_set(key, [
                    (_contract_where(mi, own, "model_args", key), sh.get("model_args")),
                    (f"methods[{i}].model_args", m.model_args),
                    *([(f"models[{mi}].method_args.{m.name}", mod.method_args.get(m.name))] if mod is not None else []),
                    (f"methods[{i}].specific", m.specific)])

            length, arg = model_arg("max_length"), model_arg("max_gen_toks")
            gen = _last_set("max_gen_toks", [
                (_contract_where(mi, own, "gen_kwargs", "max_gen_toks"), sh.get("gen_kwargs")),
                (f"methods[{i}].gen_kwargs", m.gen_kwargs), (f"methods[{i}].specific_gen_kwargs", m.specific_gen_kwargs)])
            if arg is not None and gen is not None and arg[1] != gen[1] and m.model in _tokrag_methods():
                raise _err(path, f"{arg[0]} {arg[1]} has no effect on {m.name}: {gen[0]} {gen[1]} sets the generation "
                                 "budget of each request, which wins as in lm-eval's hf (the run stopped at its first "
                                 f"request); set {gen[0]} instead and drop the model argument")
            if length is None or gen is None or not is_int(length[1], 1) or not is_int(gen[1], 1) or length[1] > gen[1]:
                continue
            who = f"{m.name}" + (f" with model {mod.name}" if mod is not None else "")
            raise _err(path, f"{length[0]} {length[1]} leaves no room for a prompt with {gen[0]} {gen[1]} ({who}): a "
                             "prompt gets max_length - max_gen_toks tokens; raise max_length well above max_gen_toks "
                             "(by the prompt's length) or lower max_gen_toks")


def _check_greedy(path: Path, shared: dict[str, Any], models: list[ModelSpec], models_raw: Any,
                  methods: list[MethodSpec]) -> None:
    """Refuse a tokrag method (:func:`_tokrag_methods`) whose resolved ``gen_kwargs`` ask for sampling
    (``do_sample: true``, or ``temperature`` > 0 without ``do_sample: false``): the methods decode greedily, and the
    run only warned while the report recorded the sampling settings. The rule is the lm-eval CLI's
    (:func:`tasks.precheck.check_run_arguments`, ``--gen_kwargs``); each value is named by the spec key that set it."""
    ours = _tokrag_methods()
    if not ours:
        return
    from tasks.precheck import check_run_arguments

    for mi, mod in enumerate(models or [None]):
        own = (models_raw[mi].get("shared") or {}) if mod is not None else {}
        own = own if isinstance(own, dict) else {}
        sh = mod.shared if mod is not None else shared
        for i, m in enumerate(methods):
            if m.model not in ours or (mod is not None and mod.methods is not None and m.name not in mod.methods):
                continue
            found = {key: _last_set(key, [
                (_contract_where(mi, own, "gen_kwargs", key), sh.get("gen_kwargs")),
                (f"methods[{i}].gen_kwargs", m.gen_kwargs), (f"methods[{i}].specific_gen_kwargs", m.specific_gen_kwargs)])
                for key in ("do_sample", "temperature")}
            set_ = {k: v for k, v in found.items() if v is not None}
            try:
                check_run_arguments(None, [], model=m.model, gen_kwargs={k: v[1] for k, v in set_.items()})
            except ConfigError as exc:
                why = str(exc).split(": ", 1)[-1].removeprefix("--model ")
                where = ", ".join(f"{w} {v!r}" for w, v in set_.values())
                who = f"method {m.name}" + (f" with model {mod.name}" if mod is not None else "")
                raise _err(path, f"{where} ({who}): {m.model} {why.removeprefix(m.model + ' ')}") from None


def _tokrag_methods() -> set[str]:
    """The registered tokrag method names (:data:`tokrag_model.methods.METHODS`); empty without the models."""
    try:
        from tokrag_model.methods import METHODS
    except Exception:  # noqa: BLE001 - the spec module without the models
        return set()
    return set(METHODS)


def _err(path: Path, msg: str) -> ConfigError:
    return ConfigError(f"leaderboard spec {path}: {msg}")


def _as_dict(path: Path, where: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _err(path, f"{where} must be a mapping (key: value), got {type(value).__name__}")
    return dict(value)


def _limit(path: Path, where: str, limit: Any) -> None:
    """Raise ConfigError unless ``limit`` is None or an integer >= 1 (the first N documents). A float is refused, as
    by :func:`_int`: lm-eval reads a limit below 1 as a FRACTION of the task (0.5: half of it, hundreds of documents)
    and truncates 2.5 to 2."""
    if limit is not None and not is_int(limit, 1):
        raise _err(path, f"{where} must be a positive number of documents, an integer such as 50 (lm-eval would read "
                         f"a float as a fraction of the task or truncate it), got {limit!r}")


def _folder_text(value: Any) -> bool:
    """``value`` can name a folder in a spec: non-blank text, or a number YAML read from an unquoted name
    (``runs_dir: 2024``); not a bool, null, list or mapping."""
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_int(value: Any, low: int) -> bool:
    """``value`` is an integer >= ``low`` (a bool or a float is not): the one test of integer settings and arguments."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= low


def is_number(value: Any, low: float = float("-inf")) -> bool:
    """``value`` is an int or float >= ``low`` (a bool is not; NaN never is): the one test of numeric values."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value >= low


def _int(path: Path, where: str, value: Any, low: int, *, null: bool = False) -> None:
    """Raise ConfigError unless ``value`` is an integer >= ``low`` (a YAML bool or float is not; None when ``null``)."""
    if value is None and null:
        return
    if not is_int(value, low):
        raise _err(path, f"{where} must be an integer >= {low}{' or null' if null else ''}, got {value!r}")


def _batch_size(path: Path, where: str, value: Any) -> int:
    """A contract's ``batch_size`` as lm-eval's ``--batch_size`` takes it and tokrag's models read it
    (:func:`tokrag_model.args.to_batch_size`): a whole number >= 1 (``4``, ``'4'``, ``4.0``) is that number, and
    ``auto`` / ``auto:N`` are 1, the batch size tokrag's models run ``auto`` at (deterministic; the run key and the
    request journal's chunks need a fixed number). So ``4``, ``'4'`` and ``4.0`` give one cell and one run folder.

    Raises:
        ConfigError: one line naming ``where``: a fraction, a number < 1, a bool, NaN/infinity, null, another text.
    """
    from tokrag_model.args import to_batch_size

    try:
        if value is None:
            raise ValueError(value)
        return to_batch_size(value)
    except ValueError:
        raise _err(path, f"{where} must be an integer >= 1, got {value!r}: give a whole number such as 4 (or '4', "
                         "4.0), or 'auto' / 'auto:N', which run at batch size 1 as with lm-eval's --batch_size on "
                         "tokrag's models") from None


def _bool(path: Path, where: str, value: Any) -> None:
    """Raise ConfigError unless ``value`` is a YAML boolean (``'false'`` quoted is a string, and truthy)."""
    if not isinstance(value, bool):
        raise _err(path, f"{where} must be true or false (an unquoted YAML boolean), got {value!r}")


def _number(path: Path, where: str, value: Any, low: float) -> None:
    if not is_number(value, low):
        raise _err(path, f"{where} must be a number >= {low}, got {value!r}")


def _refuse_model_flags(path: Path, where: str, args: dict[str, Any]) -> None:
    """Refuse model arguments ``args`` (at ``where``: ``methods[i].model_args``, ``models[j].method_args.<method>``,
    ``shared.model_args``, ``models[j].shared.model_args``) that hold a contract key lm-eval also hands the model
    (:data:`_MODEL_FLAG_KEYS`): such a ``device`` or ``batch_size`` won over the contract's ``device:`` /
    ``batch_size:`` for its cells without being printed as a deviation (a batch size can change lm-eval ``hf``'s
    outputs and the cost columns; a device the numbers and costs). A method's own value goes under its
    ``specific``, which is printed beside its row (:meth:`LeaderboardSpec.specific_settings`). Any other contract
    key (:data:`_SHARED_KEYS`: ``limit``, ``num_fewshot``, ``prompt``, ...) is refused there too (s61 rt): no model
    argument of a tokrag method has such a name, and a ``limit: 2`` in a method's ``model_args`` was handed to its
    model, which a user's ``LM`` taking ``**kwargs`` (the tests' ToyLM) ignored, its cells scoring the contract's limit
    with nothing printed, while a tokrag method refused it only at ``run`` (``unknown model argument(s) 'limit'``).

    Raises:
        ConfigError: one line ``leaderboard spec <path>[:<line>]: <where>.<key> <value>: a contract key: put it
            under ...`` (:func:`_elsewhere`'s words; ``<line>`` where the spec file has the key).
    """
    for key in [*_MODEL_FLAG_KEYS, *sorted(_SHARED_KEYS - set(_MODEL_FLAG_KEYS))]:
        if key in args:
            line = _yaml_line(path, f"{where}.{key}")
            at = f"{path}:{line}" if line is not None else str(path)
            raise ConfigError(f"leaderboard spec {at}: {where}.{key} {args[key]!r}: {_elsewhere(where, key)}")


def _refuse_specific_contract_keys(path: Path, where: str, specific: dict[str, Any]) -> None:
    """Refuse a contract key other than ``device`` / ``batch_size`` (:data:`_MODEL_FLAG_KEYS`) in a method's
    ``specific`` (``where``: ``methods[i].specific``): ``specific`` holds model arguments, and ``limit``,
    ``num_fewshot``, ``prompt``, the chat-template settings are none; they are the same for every method of a paired
    comparison (leaderboards/README.md: the question subset is "identical for every method"). Before s61 rt,
    ``specific: {limit: 2}`` was handed to the model as a model argument: a user's ``LM`` taking ``**kwargs`` (the
    tests' ToyLM) ignored it and scored the contract's limit while the report listed ``model_args.limit=2`` as the
    row's deviation; a tokrag method was refused only by ``run`` (``unknown model argument(s) 'limit'``), while
    ``report``, ``check`` and ``--estimate`` took the spec.

    Raises:
        ConfigError: one line ``leaderboard spec <path>[:<line>]: <where>.<key> <value>: a contract key, the same for
            every method, not a model argument: put it under shared (or models[j].shared, a model's own contract)...``
            (``model_args`` / ``gen_kwargs``: where a method's own values go instead).
    """
    for key in sorted(set(specific) & (_SHARED_KEYS - set(_MODEL_FLAG_KEYS))):
        line = _yaml_line(path, f"{where}.{key}")
        at = f"{path}:{line}" if line is not None else str(path)
        head = where.rsplit(".", 1)[0]
        if key == "model_args":
            fix = f"{where} holds the method's own model arguments themselves (specific: {{k: 3}})"
        elif key == "gen_kwargs":
            fix = f"a method's own generation settings go under {head}.specific_gen_kwargs"
        else:
            fix = ("a contract key, the same for every method, not a model argument: put it under shared (or "
                   "models[j].shared, a model's own contract)" + ("; a task entry's limit sets one task's"
                                                                  if key == "limit" else ""))
        raise ConfigError(f"leaderboard spec {at}: {where}.{key} {specific[key]!r}: {fix}")


def _check_specific_flags(path: Path, where: str, specific: dict[str, Any]) -> None:
    """A method's ``specific`` ``batch_size`` / ``device`` checked as a contract's are (:func:`_batch_size`, whose
    whole number it stores in ``specific``: ``4``, ``'4'`` and ``4.0`` give one cell; :func:`_check_device`).

    Raises:
        ConfigError: one line naming ``where.batch_size`` / ``where.device`` and what to give instead.
    """
    if "batch_size" in specific:
        specific["batch_size"] = _batch_size(path, f"{where}.batch_size", specific["batch_size"])
    _check_device(path, f"{where}.device", specific.get("device"))


def _check_model_args(path: Path, where: str, args: dict[str, Any]) -> None:
    """Values the leaderboard relies on: ``k`` (passages given to the model, also what the task retrieves and
    answer recall counts) is an integer >= 1 (``k: 0`` gave a retrieval method no passage, ``k: -1`` all but one)."""
    if "k" in args:
        _int(path, f"{where}.k", args["k"], 1)


def _yaml_line(path: Path, where: str) -> int | None:
    """The 1-based line in the spec file ``path`` of the entry at ``where`` (``models[0].shared.gen_kwargs.until``:
    mapping keys and ``[i]`` list positions; a key's own line, where a block list's value starts on the next); None
    where the file cannot be read again or the path is not found there (a YAML merge key, ``<<:``)."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    mark = None
    for part in re.findall(r"\[\d+\]|[^.\[\]]+", where):
        if part.startswith("["):
            i = int(part[1:-1])
            node = node.value[i] if isinstance(node, yaml.SequenceNode) and i < len(node.value) else None
            mark = node.start_mark if node is not None else None
        elif isinstance(node, yaml.MappingNode):
            key = next((k for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
            node = next((v for k, v in node.value if k is key), None) if key is not None else None
            mark = key.start_mark if key is not None else None
        else:
            node = None
        if node is None:
            return None
    return mark.line + 1 if mark is not None else None


def _check_gen_kwargs(path: Path, where: str, gk: dict[str, Any]) -> None:
    """Generation settings of the right type (``max_gen_toks: -3`` gave empty answers, ``'abc'`` failed after
    the model had loaded), and no value lm-eval would run with another meaning
    (:func:`tokrag_model.base.check_gen_kwarg_values`: ``until: ""``, ``top_p: .inf``, ``temperature: .nan``, which
    passed here and were refused only inside a cell, after its model load).

    Raises:
        ConfigError: one line naming ``where`` and the key (``<path>:<line>: <where>.<key>...`` where its line is
            found) and what to give instead.
    """
    if "max_gen_toks" in gk:
        _int(path, f"{where}.max_gen_toks", gk["max_gen_toks"], 1)
    if "do_sample" in gk:
        _bool(path, f"{where}.do_sample", gk["do_sample"])
    if "top_k" in gk:
        _int(path, f"{where}.top_k", gk["top_k"], 0)
    for key in ("temperature", "top_p"):
        if key in gk:
            _number(path, f"{where}.{key}", gk[key], 0.0)
    until = gk.get("until")
    if until is not None and not (isinstance(until, str) or (isinstance(until, list) and all(isinstance(u, str) for u in until))):
        raise _err(path, f"{where}.until must be a string or a list of strings, got {until!r}")
    try:
        from tokrag_model.gen_kwargs import GenKwargsValueError, check_gen_kwarg_values  # no torch or lm-eval import
    except ImportError:  # the leaderboard without the models: the cell's model refuses them
        return
    try:
        check_gen_kwarg_values(gk)
    except GenKwargsValueError as exc:
        line = _yaml_line(path, f"{where}.{exc.key}")
        if line is None:
            raise _err(path, f"{where}: {exc}") from None
        raise ConfigError(f"{path}:{line}: {where}: {exc}") from None


def _check_device(path: Path, where: str, device: Any) -> None:
    """``device`` is null or a string torch accepts, checked at load for what does not depend on the machine: a name
    torch does not know is refused as such, and ``meta`` (tensors without data) for
    :func:`tokrag_model.args.to_device`'s reason. Whether this machine has the device (``cuda``/``cuda:N``, ``mps``,
    ``xpu``, ...) is asked only by ``tokrag leaderboard run`` (:func:`leaderboards.runner.check_cell_devices`), so
    ``report``, ``rescore``, ``check`` and ``run --estimate`` of a spec written for a GPU machine work anywhere.

    Raises:
        ConfigError: one line naming the spec, ``where`` and the device, and what to give instead.
    """
    if device is None or device == "cpu":
        return
    if not isinstance(device, str):
        raise _err(path, f"{where} must be a device string (cpu, cuda, cuda:N), got {device!r}")
    import torch

    from tokrag_model.args import to_device  # the model argument's own check

    try:
        kind = torch.device(device.strip()).type
    except (RuntimeError, ValueError):
        raise _err(path, f"{where} {device!r} is not a device torch knows; use cpu, cuda or cuda:N") from None
    if kind == "meta":  # holds no data on any machine: to_device's reason
        try:
            to_device(device)
        except ValueError as exc:
            raise _err(path, f"{where} {device!r}: {exc}") from None


def _task_spec(path: Path, i: int, entry: Any) -> TaskSpec:
    if isinstance(entry, str):
        name, noise, limit = entry, None, None
    elif isinstance(entry, dict) and "task" in entry:
        _check_keys(path, f"tasks[{i}]", entry, _TASK_KEYS)
        name, noise, limit = entry["task"], entry.get("noise"), entry.get("limit")
    else:
        raise _err(path, f"tasks[{i}] must be a task name or {{task: NAME, noise: RATIO, limit: N}}, got {entry!r}")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise _err(path, f"tasks[{i}]: invalid task name {name!r}")
    _limit(path, f"tasks[{i}] ({name}).limit", limit)
    m = _NOISE_RE.match(name)
    family = entry.get("family") if isinstance(entry, dict) and entry.get("family") else (m.group("base") if m else name)
    if noise is None:
        noise = _name_noise(name)
    if noise is not None and not (is_number(noise, 0.0) and noise <= 1.0):
        raise _err(path, f"tasks[{i}] ({name}): noise must be a ratio in [0, 1], got {noise!r}")
    return TaskSpec(task=name, noise=None if noise is None else float(noise), family=family, limit=limit)


def _name_noise(task: str) -> float | None:
    """The noise ratio a task name's ``_noiseNN`` suffix declares (``nq_noise40`` -> 0.4); None without one."""
    m = _NOISE_RE.match(task)
    return int(m.group("pct")) / 100.0 if m else None


def task_noise(task: str, include_path: list[Path]) -> tuple[float | None, str | None, Path | None]:
    """The share of passages ``task`` replaces by noise, as its YAML declares it: the metadata ``noise`` (with the files
    it includes; what :func:`tasks.rag.add_noise` draws), else the ``_noiseNN`` of its name (a task that draws its
    noise in its own loader, as the toy fixtures do), else 0.0.

    Returns:
        ``(value, source, yaml_path)``: ``source`` is ``"metadata"``, ``"name"`` (the ``_noiseNN``) or None (nothing
        declared: value 0.0); ``yaml_path`` the task's own YAML. ``value`` None when its metadata ``noise`` is not a
        number (the task refuses it at load); ``(None, None, None)`` when no YAML of the task is found (a task of
        lm-eval's own registry: not known here).
    """
    chain = _task_yaml_chain(task, tuple(Path(p) for p in include_path))
    if not chain:
        return None, None, None
    y = chain[0][0]
    meta = task_yaml_metadata(task, include_path)
    if "noise" in meta:
        try:
            return float(meta["noise"]), "metadata", y
        except (TypeError, ValueError):
            return None, "metadata", y
    named = _name_noise(task)
    return (0.0, None, y) if named is None else (named, "name", y)


def _check_task_noise(path: Path, i: int, entry: Any, t: TaskSpec, include_path: list[Path]) -> TaskSpec:
    """``t`` with the noise its task draws (:func:`task_noise`): a spec entry's ``noise:`` labels the report's noise
    column, its CSV/JSON and the robustness plot's x-axis, so a value other than the task's is refused (one line
    naming the spec, the task and both values; for a task that declares no noise, neither metadata nor ``_noiseNN``,
    as the committed clean tasks, whose own loader may draw some, it names the declaration that fixes it). Unchanged
    when the task's noise is not known here."""
    declared, source, y = task_noise(t.task, include_path)
    if declared is None:
        return t
    given = entry.get("noise") if isinstance(entry, dict) else None
    if given is not None and abs(float(given) - declared) > 1e-9:
        if source is not None:  # the metadata noise or the name's _noiseNN
            raise _err(path, f"tasks[{i}] ({t.task}): noise {given!r} is not the noise the task draws, {declared:g} "
                             f"(metadata noise of {y}, 0 when it sets none); drop noise: from the entry or give "
                             f"{declared:g}")
        # nothing declared (the committed clean tasks set no noise): a loader of the user's may draw it
        raise _err(path, f"tasks[{i}] ({t.task}): noise {given!r} is not the noise the task draws, 0 ({y} declares "
                         "none: no metadata noise, no _noiseNN in its name); if its loader draws noise itself, declare "
                         f"it in the task YAML: metadata: {{noise: {given}}} (or an _noiseNN name), else drop noise: "
                         "from the entry")
    noise = declared if declared else (None if given is None else float(given))
    return replace(t, noise=noise)


def _shared(path: Path, where: str, raw: Any) -> dict[str, Any]:
    """A validated contract mapping (``shared`` or a model's ``shared``)."""
    shared = _as_dict(path, where, raw)
    _check_keys(path, where, shared, _SHARED_KEYS)
    shared["model_args"] = _as_dict(path, f"{where}.model_args", shared.get("model_args"))
    shared["gen_kwargs"] = _as_dict(path, f"{where}.gen_kwargs", shared.get("gen_kwargs"))
    _check_keys(path, f"{where}.gen_kwargs", shared["gen_kwargs"], _GEN_KEYS)
    _limit(path, f"{where}.limit", shared.get("limit"))
    _refuse_model_flags(path, f"{where}.model_args", shared["model_args"])
    _check_model_args(path, f"{where}.model_args", shared["model_args"])
    _check_gen_kwargs(path, f"{where}.gen_kwargs", shared["gen_kwargs"])
    if "batch_size" in shared:
        shared["batch_size"] = _batch_size(path, f"{where}.batch_size", shared["batch_size"])
    if "num_fewshot" in shared:
        _int(path, f"{where}.num_fewshot", shared["num_fewshot"], 0, null=True)
    for key in ("apply_chat_template", "fewshot_as_multiturn"):
        if key in shared:
            _bool(path, f"{where}.{key}", shared[key])
    _check_device(path, f"{where}.device", shared.get("device"))
    if shared.get("prompt") is not None and shared["prompt"] not in PROMPTS:
        raise _err(path, f"{where}.prompt {shared['prompt']!r} is not one of {list(PROMPTS)} (tasks/README.md, 'Prompts')")
    if shared.get("system_instruction") is not None and not isinstance(shared["system_instruction"], str):
        raise _err(path, f"{where}.system_instruction must be a string")
    return shared


def _prompt_contract(shared: dict[str, Any], task_stop: Any) -> dict[str, Any]:
    r"""The ``gen_kwargs`` the prompt format adds to the cells of a task whose YAML stops at ``task_stop``
    (:func:`task_until`) under the contract ``shared``: ``prompt: base`` stops at a newline (tasks/README.md,
    "Prompts"), so ``gen_kwargs.until: ["\n"]`` is added unless the contract sets ``until``, for a task whose stop
    is the short-answer one (:data:`tasks.precheck.INSTRUCT_STOP`;
    :func:`tasks.precheck.base_prompt_needs_newline_stop`, the rule by which
    :func:`tasks.precheck.check_selected_tasks` warns an ``lm_eval`` run that lacks it). A task
    with another stop keeps it, as ``lm_eval --metadata '{"prompt": "base"}'`` does: ``eli5_bm25_wiki`` stops at a
    new "Question:" and scores the whole generation (cut at its first newline, one run scored ROUGE-L 0.545 where
    lm_eval gave 0.881). ``{}`` when nothing is added."""
    if base_prompt_needs_newline_stop(shared.get("prompt"), "until" in shared.get("gen_kwargs", {}), task_stop):
        return {"until": ["\n"]}
    return {}


def _name_subset(path: Path, where: str, given: Any, known: list[str]) -> tuple[str, ...] | None:
    """A model's ``tasks``/``methods`` subset: names that must all occur in ``known``."""
    import difflib

    if given is None:
        return None
    if not isinstance(given, list) or not given or not all(isinstance(x, str) for x in given):
        raise _err(path, f"{where} must be a non-empty list of names, got {given!r}")
    for x in given:
        if x not in known:
            close = difflib.get_close_matches(x, known, n=1, cutoff=0.6)
            raise _err(path, f"{where}: {x!r} is not in the spec" + (f" (did you mean {close[0]!r}?)" if close else "")
                       + f"; have {known}")
    return tuple(given)


def _models(path: Path, raw: Any, shared: dict[str, Any], methods: list[str], tasks: list[str]) -> list[ModelSpec]:
    """Parse ``models:`` (each entry's contract = its ``shared`` merged over the top-level ``shared``)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw:
        raise _err(path, "models: give a non-empty list of {name, shared: {model_args: {pretrained: ...}}}")
    out = []
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or "name" not in e:
            raise _err(path, f"models[{i}] must be a mapping with at least 'name'")
        _check_keys(path, f"models[{i}]", e, _MODEL_KEYS)
        name = e["name"]
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise _err(path, f"models[{i}]: invalid name {name!r} (letters, digits, '_', '-', '.')")
        own = _shared(path, f"models[{i}].shared", e.get("shared"))
        merged = {**shared, **{k: v for k, v in own.items() if k not in ("model_args", "gen_kwargs")}}
        merged["model_args"] = {**shared["model_args"], **own["model_args"]}
        merged["gen_kwargs"] = {**shared["gen_kwargs"], **own["gen_kwargs"]}
        margs = _as_dict(path, f"models[{i}].method_args", e.get("method_args"))
        for mname, args in margs.items():
            _name_subset(path, f"models[{i}].method_args", [mname], methods)
            args = margs[mname] = _as_dict(path, f"models[{i}].method_args.{mname}", args)
            _refuse_model_flags(path, f"models[{i}].method_args.{mname}", args)
            _check_model_args(path, f"models[{i}].method_args.{mname}", args)
            clash = sorted(set(args) & set(merged["model_args"]))
            if clash:
                raise _err(path, f"models[{i}].method_args.{mname}: {clash} are contract settings (shared.model_args); "
                                 "a method's per-model hyper-parameters may not change the contract")
        out.append(ModelSpec(
            name=name, label=str(e.get("label") or name), shared=merged,
            tasks=_name_subset(path, f"models[{i}].tasks", e.get("tasks"), tasks),
            methods=_name_subset(path, f"models[{i}].methods", e.get("methods"), methods),
            method_args=margs, notes=str(e.get("notes") or "").strip(),
        ))
    names = [m.name for m in out]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise _err(path, f"duplicate model names {dups}: give each model a distinct 'name'")
    return out


def _yaml_error(path: Path, exc: yaml.YAMLError) -> str:
    """One line ``<path>:<line>:<col>: not valid YAML (<problem>)`` for a PyYAML error (its own text spans several
    lines and names ``"<unicode string>"`` rather than the file). Line and column are 1-based."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    problem = " ".join(str(problem).split())
    context, cmark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and cmark is not None and cmark is not mark:  # "while parsing a flow sequence" opened at line 1, column 7
        problem += f"; {' '.join(str(context).split())} started at line {cmark.line + 1}, column {cmark.column + 1}"
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    return f"{where}: not valid YAML ({problem}); fix the leaderboard spec"


class _SpecLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a mapping key given twice (``{model: tokrag, model: rag-cad}``: the
    safe loader kept the last silently, so a row named ``tokrag`` ran CAD). YAML requires unique keys. Anchors and
    merge keys work as in the safe loader: a key a ``<<:`` merge brings in may be overridden by the mapping's own."""

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        # the safe loader calls this before it builds a mapping (and on each merged one); check the keys as written,
        # once per node, before the merge rewrites node.value
        checked = self.__dict__.setdefault("_checked_nodes", set())
        if id(node) not in checked:
            checked.add(id(node))
            first: dict[Any, yaml.Mark] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.get(key)
                except TypeError:  # an unhashable key: the safe loader's own error follows
                    continue
                if seen is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}, first at line {seen.line + 1}, column {seen.column + 1}",
                        key_node.start_mark)
                first[key] = key_node.start_mark
        super().flatten_mapping(node)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """A YAML integer, refusing the two YAML 1.1 forms that PyYAML reads and YAML 1.2 (and a reader of the spec) do
        not: a leading zero is octal (``k: 010`` ran k=8, ``seeds: [0042]`` seed 34) and colons are base 60
        (``limit: 1:30`` was 90), each silently. ``0``, ``0x1f``, ``0b101`` and ``1_000`` are read as before, and so
        are leading zeros before one digit (``07``, ``-007``, ``00``: the same number in octal and in decimal, so
        ``seeds: [01, 02]`` is seeds 1 and 2 in either reading).

        Raises:
            _LegacyNumber: one of those forms (its line and column), with the plain number to write instead (and the
            decimal one, sign kept: ``-010`` is -8 in YAML 1.1, -10 in decimal).
        """
        value = super().construct_yaml_int(node)
        text = str(node.value).replace("_", "")
        body = text.lstrip("+-")
        if ":" in body or (len(body) > 1 and body[0] == "0" and body[1] not in "bxBX" and len(body.lstrip("0")) > 1):
            decimal = ("-" if text.startswith("-") else "") + body.lstrip("0")  # octal: 2+ digits after the zeros
            how = ("base 60 (each ':' part a sexagesimal digit)" if ":" in body else "octal (a leading zero)")
            raise _LegacyNumber(None, None, f"{node.value} is read by YAML 1.1 as {how}, the number {value}: write "
                                f"{value} for that number" + (f", {decimal} for the decimal one" if ":" not in body else "")
                                + ", or quote it as text", node.start_mark)
        return value

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        """A YAML float, refusing base 60 (``1:30.5`` read as 90.5), as :meth:`construct_yaml_int` does."""
        value = super().construct_yaml_float(node)
        if ":" in str(node.value):
            raise _LegacyNumber(None, None, f"{node.value} is read by YAML 1.1 as base 60 (each ':' part a sexagesimal "
                                f"digit), the number {value}: write {value} for that number, or quote it as text",
                                node.start_mark)
        return value

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> Any:
        """A YAML 1.1 date or timestamp (``2026-12-07``), refusing one that is no date (``2026-02-30``), whose
        ``ValueError`` was a traceback from ``tokrag leaderboard`` (the text fields read any as the text written:
        :func:`_text_as_written`).

        Raises:
            yaml.constructor.ConstructorError: its line and column, and to write a real date or quote the text.
        """
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.value} is read by YAML 1.1 as a date, and it is none ({exc}): write a real date "
                "or quote it as text", node.start_mark) from None


class _LegacyNumber(yaml.constructor.ConstructorError):
    """A number in a YAML 1.1 form read silently as another value (:meth:`_SpecLoader.construct_yaml_int`)."""


_SpecLoader.add_constructor("tag:yaml.org,2002:int", _SpecLoader.construct_yaml_int)
_SpecLoader.add_constructor("tag:yaml.org,2002:float", _SpecLoader.construct_yaml_float)
_SpecLoader.add_constructor("tag:yaml.org,2002:timestamp", _SpecLoader.construct_yaml_timestamp)

_TEXT_KEYS = {"top level": ("name", "description", "notes", "subset"), "models": ("name", "label", "notes"),
              "methods": ("name", "label", "notes")}
"""The spec's text fields (names, labels, descriptions, notes), by where they sit: the top-level mapping and each
entry of ``models``/``methods``."""

_TEXT_TAGS = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
              "tag:yaml.org,2002:timestamp"}
"""The tags YAML 1.1 resolves a plain scalar to that are not text (``yes``, ``010``, ``1e3``, ``2026-12-07``): a
text field's value of one of them is read as the text written (:func:`_text_as_written`)."""


def _text_as_written(path: Path, root: yaml.Node | None) -> None:
    """Make each text field of the spec's node tree (:data:`_TEXT_KEYS`) read as the text written: a plain scalar
    that YAML 1.1 resolves to a boolean, number or date (``label: yes`` was True and printed "True", ``label: no`` was
    False and printed the method's name, ``label: 1e3`` "1000.0", ``notes: 010`` refused as octal, ``label:
    2026-12-7 9:30:00`` "2026-12-07 09:30:00", ``notes: 2026-02-30`` a ValueError traceback) is retagged as a string
    before it is built. A text field has no other meaning to give them, so they are read, not refused (as the
    numbers of the spec's numeric fields are, where ``010`` could mean 8 or 10). ``null``, ``~`` and an empty value
    stay "not given".

    Raises:
        ConfigError: ``<path>:<line>: <where>.<key> is a list/mapping; write it as text`` for a text field that is one.
    """
    def fix(mapping: yaml.Node, where: str, keys: tuple[str, ...]) -> None:
        if not isinstance(mapping, yaml.MappingNode):
            return
        for j, (key_node, value_node) in enumerate(mapping.value):
            if not (isinstance(key_node, yaml.ScalarNode) and key_node.value in keys):
                continue
            if isinstance(value_node, yaml.ScalarNode):
                if value_node.style is None and value_node.tag in _TEXT_TAGS:  # a copy: the node may be an anchor's,
                    mapping.value[j] = (key_node, yaml.ScalarNode(  # whose aliases elsewhere (limit: *n) stay numbers
                        "tag:yaml.org,2002:str", value_node.value, value_node.start_mark, value_node.end_mark))
            else:
                kind = "list" if isinstance(value_node, yaml.SequenceNode) else "mapping"
                raise ConfigError(f"{path}:{value_node.start_mark.line + 1}: {where}.{key_node.value} is a {kind}; "
                                  "write it as text (quote it if it holds ':' or starts with '[' or '{')")

    if not isinstance(root, yaml.MappingNode):
        return
    fix(root, "top level", _TEXT_KEYS["top level"])
    for key_node, value_node in root.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value in ("models", "methods") \
                and isinstance(value_node, yaml.SequenceNode):
            for i, entry in enumerate(value_node.value):
                fix(entry, f"{key_node.value}[{i}]", _TEXT_KEYS[key_node.value])


def _spec_text(path: Path) -> str:
    """The spec file's text, read as UTF-8 (a leading UTF-8 byte-order mark is kept: YAML skips it).

    Raises:
        ConfigError: bytes that are not UTF-8 (a Latin-1 ``é``, a UTF-16 file): one line
            ``<path>:<line>: not valid UTF-8 (byte 0xe9 at byte 13 of the line); re-encode the leaderboard spec as
            UTF-8`` (line and byte 1-based), where the read raised a UnicodeDecodeError traceback.
    """
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        bom = " (it starts with a UTF-16 byte-order mark)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ConfigError(f"{path}:{line}: not valid UTF-8{bom} (byte 0x{data[exc.start]:02x} at byte "
                          f"{exc.start - start + 1} of the line); re-encode the leaderboard spec as UTF-8") from None


def _load_spec_yaml(path: Path) -> Any:
    """The spec file's YAML through :class:`_SpecLoader`, its text fields read as written (:func:`_text_as_written`).

    Raises:
        yaml.YAMLError, _LegacyNumber: as :class:`_SpecLoader` raises them; ConfigError: a text field that is a list
        or mapping, or a file that is not UTF-8 (:func:`_spec_text`).
    """
    loader = _SpecLoader(_spec_text(path))
    try:
        root = loader.get_single_node()
        _text_as_written(path, root)
        return loader.construct_document(root) if root is not None else None
    finally:
        loader.dispose()


def load_spec(path: str | os.PathLike) -> LeaderboardSpec:
    """Parse and validate a leaderboard spec YAML.

    Raises:
        ConfigError: a spec file that is not UTF-8 (:func:`_spec_text`), unreadable YAML, a mapping key given twice (:class:`_SpecLoader`), an octal (``010``) or base-60
            (``1:30``) number (:meth:`_SpecLoader.construct_yaml_int`; a text field's plain scalar is read as the
            text written instead, ``label: yes`` is "yes": :func:`_text_as_written`, which refuses a list or mapping
            there), unknown keys, a method
            setting a contract key (of any model) outside ``specific``, a ``device`` or ``batch_size`` in any
            ``model_args`` or ``method_args`` (contract keys: :func:`_refuse_model_flags`; a method's own value goes
            under its ``specific``, checked as the contract's), any other contract key in a method's ``specific``
            (``limit``, ``num_fewshot``, ...: :func:`_refuse_specific_contract_keys`), duplicate method or model names, no
            methods/tasks/seeds, a repeated seed, a bad seed
            (outside [0, 2**32 - 1]), limit or noise ratio, a task entry's ``noise`` other than the noise its task draws
            (:func:`task_noise`), a ``max_length`` model argument at most ``max_gen_toks``
            for a task that generates (:func:`_check_prompt_room`), sampling asked of a tokrag method, which decodes
            greedily (:func:`_check_greedy`), a generation kwarg lm-eval would run with another meaning
            (``until: ""``, ``top_p: .inf``: :func:`_check_gen_kwargs`, at its line), a task with more than one
            lm-eval filter (:func:`_check_one_filter`),
            a folder given as the spec, a ``reference``/``closed_book`` that names no method, a ``reference`` list
            that is empty or names a method twice, a model whose ``methods`` hold no reference, or a model's
            ``tasks``/``methods`` subset naming something the spec lacks.

    Logs one WARNING per contract whose ``k`` makes a noise task replace another share of the passages than its
    nominal noise (:func:`_warn_noise_shares`, e.g. ``k: 3``: ``_noise20`` and ``_noise40`` both replace 1 of 3).
    """
    path = Path(path).resolve()
    if path.is_dir():  # e.g. a report or runs folder given where the spec goes
        raise ConfigError(f"leaderboard spec {path} is a folder, not a spec file: give the spec's YAML file "
                          "(specs live in leaderboards/specs/*.yaml)")
    if not path.is_file():
        raise ConfigError(f"leaderboard spec {path} does not exist (specs live in leaderboards/specs/*.yaml)")
    try:
        raw = _load_spec_yaml(path)  # a repeated key refused, text fields read as written
    except _LegacyNumber as exc:  # valid YAML 1.1, read as another number than written
        mark = exc.problem_mark
        raise ConfigError(f"{path}:{mark.line + 1}:{mark.column + 1}: {exc.problem}; fix the leaderboard spec") from None
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_error(path, exc)) from None
    if not isinstance(raw, dict):
        raise _err(path, "top level must be a mapping")
    _check_keys(path, "top level", raw, _TOP_KEYS)
    name = raw.get("name") or path.stem
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise _err(path, f"name {name!r} must be letters, digits, '_', '-', '.'")
    base = path.parent

    shared = _shared(path, "shared", raw.get("shared"))
    models_raw = raw.get("models")
    # every contract a method must not override: the top-level one and each model's own
    contracts = [shared] + [_shared(path, f"models[{i}].shared", e.get("shared")) for i, e in enumerate(models_raw or [])
                            if isinstance(e, dict)]
    if any(c.get("prompt", shared.get("prompt")) == "base" for c in contracts):
        contracts.append({"model_args": {}, "gen_kwargs": {"until": ["\n"]}})  # the base prompt's stop

    methods_raw = raw.get("methods")
    if not isinstance(methods_raw, list) or not methods_raw:
        raise _err(path, "methods: give a non-empty list of {name, model, model_args}")
    methods: list[MethodSpec] = []
    for i, m in enumerate(methods_raw):
        if not isinstance(m, dict):
            raise _err(path, f"methods[{i}] must be a mapping with at least 'model'")
        _check_keys(path, f"methods[{i}]", m, _METHOD_KEYS, m.get("model"))
        if "model" not in m:
            raise _err(path, f"methods[{i}] must be a mapping with at least 'model'")
        mname = m.get("name") or m["model"]
        if not isinstance(mname, str) or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$", mname) or "/" in mname:
            raise _err(path, f"methods[{i}]: invalid name {mname!r}")
        margs = _as_dict(path, f"methods[{i}].model_args", m.get("model_args"))
        gk = _as_dict(path, f"methods[{i}].gen_kwargs", m.get("gen_kwargs"))
        spec_args = _as_dict(path, f"methods[{i}].specific", m.get("specific"))
        spec_gk = _as_dict(path, f"methods[{i}].specific_gen_kwargs", m.get("specific_gen_kwargs"))
        _check_keys(path, f"methods[{i}].gen_kwargs", gk, _GEN_KEYS)
        _check_keys(path, f"methods[{i}].specific_gen_kwargs", spec_gk, _GEN_KEYS)
        _refuse_model_flags(path, f"methods[{i}].model_args", margs)
        _check_model_args(path, f"methods[{i}].model_args", margs)
        _refuse_specific_contract_keys(path, f"methods[{i}].specific", spec_args)
        _check_model_args(path, f"methods[{i}].specific", spec_args)
        _check_specific_flags(path, f"methods[{i}].specific", spec_args)
        _check_gen_kwargs(path, f"methods[{i}].gen_kwargs", gk)
        _check_gen_kwargs(path, f"methods[{i}].specific_gen_kwargs", spec_gk)
        for section, given, fix in (
            ("model_args", margs, "a deviation for one method must be written under 'specific:' so that it is printed"),
            ("gen_kwargs", gk, "write a deviation under 'specific_gen_kwargs:'"),
        ):
            clash = sorted(set(given) & {k for c in contracts for k in c[section]})
            if clash:
                raise _err(path, f"methods[{i}] ({mname}): {section} {clash} are contract settings (shared.{section}); {fix}")
        methods.append(
            MethodSpec(name=mname, model=str(m["model"]), model_args=margs, gen_kwargs=gk, specific=spec_args,
                       specific_gen_kwargs=spec_gk, label=str(m.get("label") or mname))
        )
    names = [m.name for m in methods]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise _err(path, f"duplicate method names {dups}: give each row a distinct 'name'")

    tasks_raw = raw.get("tasks")
    if not isinstance(tasks_raw, list) or not tasks_raw:
        raise _err(path, "tasks: give a non-empty list of lm-eval task names")
    tasks = [_task_spec(path, i, t) for i, t in enumerate(tasks_raw)]
    tnames = [t.task for t in tasks]
    if len(set(tnames)) != len(tnames):
        raise _err(path, f"tasks: duplicate entries in {tnames}")

    seeds = raw.get("seeds", [1234])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise _err(path, f"seeds must be a non-empty list of integers, got {seeds!r}")
    for i, s in enumerate(seeds):  # each cell seeds NumPy with it: outside this range the run died after the model load
        if not SEED_MIN <= s <= SEED_MAX:
            raise _err(path, f"seeds[{i}] {s} is out of range: a seed must be an integer in [{SEED_MIN}, {SEED_MAX}] "
                             "(the range of NumPy's seed, which every cell sets to it)")
    if len(set(seeds)) != len(seeds):
        raise _err(path, f"seeds: duplicate entries in {seeds}; give each seed once")

    ref_raw = raw.get("reference")
    references = [] if ref_raw is None else ([ref_raw] if isinstance(ref_raw, str) else ref_raw)
    if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
        raise _err(path, f"reference must be a method name or a list of them, got {ref_raw!r}")
    if isinstance(ref_raw, list) and not references:  # a spec without paired tests leaves reference: out
        raise _err(path, "reference: [] names no method; name the method(s) the paired tests compare with, or leave "
                         "reference: out for a report without paired tests")
    for r in references:
        if r not in names:
            raise _err(path, f"reference {r!r} is not one of the methods {names}")
    twice = sorted({r for r in references if references.count(r) > 1})
    if twice:  # each paired section was printed once per mention
        raise _err(path, f"reference: {twice} given more than once in {references}; give each method once")
    closed_book = raw.get("closed_book", "rag-none" if "rag-none" in names else None)
    if closed_book is not None and closed_book not in names:
        raise _err(path, f"closed_book {closed_book!r} is not one of the methods {names}")
    primary = raw.get("primary_metric", "answer_match")
    if not isinstance(primary, str) or not primary:
        raise _err(path, f"primary_metric must be a per-sample metric name (e.g. answer_match), got {primary!r}")
    inc = raw.get("include_path")
    given_incs = [inc] if isinstance(inc, str) else inc
    if inc is not None and (not isinstance(given_incs, list) or not given_incs
                            or not all(_folder_text(p) for p in given_incs)):  # 5, [null], '', []: a TypeError or no folder
        raise _err(path, f"include_path must be a folder of lm-eval task YAMLs or a non-empty list of them (relative "
                         f"to the spec's folder), got {inc!r}; leave it out for the package's tasks/")
    incs = [DEFAULT_INCLUDE] if inc is None else [(base / str(p)).resolve() for p in given_incs]
    for p in incs:
        if not p.is_dir():
            raise _err(path, f"include_path {p} is not a folder of lm-eval task YAMLs")
    tasks = [_check_task_noise(path, i, e, t, incs) for i, (e, t) in enumerate(zip(tasks_raw, tasks))]
    noisy_families = {t.family for t in tasks if t.noise}
    tasks = [TaskSpec(t.task, 0.0, t.family, t.limit) if t.noise is None and t.family in noisy_families else t for t in tasks]

    # a primary metric the spec names must be one the tasks log (the pivot showed another metric under its heading);
    # the default (answer_match) falls back to word perplexity in a report of language-modelling tasks only
    task_metrics = [task_yaml_metrics(t, incs) for t in tnames]
    if "primary_metric" in raw and all(ms is not None for ms in task_metrics):
        produced = sorted({m for ms in task_metrics for m in ms})  # type: ignore[union-attr]
        if primary not in produced:
            from retrieval.errors import closest

            close = closest(primary, produced, n=1)
            raise _err(path, f"primary_metric {primary!r} is not a metric of the spec's tasks"
                             + (f" (did you mean {close[0]!r}?)" if close else "") + f"; they log {produced}")
    _check_one_filter(path, tnames, incs)
    models = _models(path, models_raw, shared, names, tnames)
    for i, mod in enumerate(models):  # such a model got no paired section and no word about it
        if references and mod.methods is not None and not set(references) & set(mod.methods):
            raise _err(path, f"models[{i}] ({mod.name}).methods {list(mod.methods)} hold no reference method "
                             f"{references}, so its methods would have no paired test; add a reference to its methods")
    _check_prompt_room(path, shared, models, models_raw, methods, tasks, incs)
    _check_greedy(path, shared, models, models_raw, methods)

    bs = _as_dict(path, "bootstrap", raw.get("bootstrap"))
    _check_keys(path, "bootstrap", bs, _BOOTSTRAP_KEYS)
    _int(path, "bootstrap.iters", bs.get("iters", 1000), 100)
    _int(path, "bootstrap.seed", bs.get("seed", 0), 0)
    conf = bs.get("confidence", 0.95)
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not (0.5 < conf < 1.0):
        raise _err(path, f"bootstrap.confidence must be a number in (0.5, 1), got {conf!r}")
    iters, conf = int(bs.get("iters", 1000)), float(conf)
    _int(path, "progress_chunk", raw.get("progress_chunk", 8), 1)

    def _opt_dir(key: str) -> Path | None:
        v = raw.get(key)
        if v is not None and not _folder_text(v):  # [a] was the folder "['a']", true "True", '' the spec's own folder
            raise _err(path, f"{key} must be a folder (text, relative to the spec's folder), got {v!r}; leave it out for "
                             "the default")
        return None if v is None else (base / str(v)).resolve()

    spec = LeaderboardSpec(
        name=name, path=path, description=str(raw.get("description") or "").strip(), include_path=incs,
        shared=shared, methods=methods, tasks=tasks, seeds=list(seeds), reference=references[0] if references else None,
        references=references, closed_book=closed_book, primary_metric=primary, models=models,
        bootstrap_iters=iters, bootstrap_seed=int(bs.get("seed", 0)), confidence=conf,
        report_dir=_opt_dir("report_dir"), runs_dir=_opt_dir("runs_dir"),
        notes=str(raw.get("notes") or "").strip(), subset=str(raw.get("subset") or "").strip(),
        progress_chunk=int(raw.get("progress_chunk", 8)),
    )
    _warn_noise_shares(spec)
    return spec
