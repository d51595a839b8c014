"""Leaderboard specs: methods x tasks x seeds under one fairness contract.

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
    tasks: [nq_oracle_bm25, {task: nq_oracle_bm25_noise60, noise: 0.6}]
    seeds: [1234]
    bootstrap: {iters: 1000, seed: 0, confidence: 0.95}
    methods:
      - name: rag-standard
        model: rag-standard            # an lm-eval registry name, or "package.module:Class"
      - name: tokrag
        model: tokrag
        model_args: {layer_policy: last}   # the method's own hyper-parameters (not contract keys)
        specific: {k: 10}                  # an explicit, printed deviation from the contract

A method may not set a contract key in ``model_args``/``gen_kwargs``: a deviation must be written
under ``specific`` (model arguments) or ``specific_gen_kwargs``, and is printed beside the row in
every table. This keeps "same k, same prompt, same budget" checkable from the spec alone.

Errors: :class:`retrieval.errors.ConfigError` naming the spec file and the offending key.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from retrieval.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INCLUDE = REPO_ROOT / "tasks"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_NOISE_RE = re.compile(r"^(?P<base>.+?)_noise(?P<pct>\d+)$")
_SHARED_KEYS = {"model_args", "gen_kwargs", "limit", "batch_size", "device", "num_fewshot", "apply_chat_template"}
_TOP_KEYS = {
    "name", "description", "include_path", "report_dir", "runs_dir", "reference", "shared", "tasks",
    "seeds", "bootstrap", "methods", "notes", "subset", "metrics", "progress_chunk",
}
_METHOD_KEYS = {"name", "model", "model_args", "gen_kwargs", "specific", "specific_gen_kwargs", "label", "notes"}
# Generation settings lm-eval passes to generate_until (a typo here would silently break the contract).
_GEN_KEYS = {"max_gen_toks", "until", "do_sample", "temperature", "top_p", "top_k"}
_BOOTSTRAP_KEYS = {"iters", "seed", "confidence"}


def _check_keys(path: Path, where: str, given: dict, allowed: set[str]) -> None:
    """Raise ConfigError naming unknown keys of ``given`` with a did-you-mean and the allowed keys."""
    import difflib

    unknown = sorted(set(given) - allowed)
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise _err(path, f"{where}: unknown key(s) {', '.join(hints)}; allowed: {sorted(allowed)}")


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

    ``family`` groups the clean task with its noise variants for the robustness curve.
    """

    task: str
    noise: float | None
    family: str


@dataclass(frozen=True)
class Cell:
    """One unit of work: (method, task, seed) with every resolved setting. Its run folder is keyed by
    :func:`leaderboards.keys.cell_key` of :meth:`config`."""

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

    @property
    def label(self) -> str:
        """Human-readable cell id ``method | task | seed N``."""
        return f"{self.method.name} | {self.task.task} | seed {self.seed}"

    @property
    def cell_id(self) -> str:
        """Stable id used in baselines and tables: ``method/task/seedN``."""
        return f"{self.method.name}/{self.task.task}/seed{self.seed}"

    def config(self) -> dict[str, Any]:
        """The settings that define this cell's numbers (JSON-able, without fingerprints)."""
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
        }


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

    def cells(self) -> list[Cell]:
        """All cells, ordered method-major (so one model load serves all of a method's cells)."""
        out = []
        sh = self.shared
        for m in self.methods:
            margs = {**sh.get("model_args", {}), **m.model_args, **m.specific}
            gk = {**sh.get("gen_kwargs", {}), **m.gen_kwargs, **m.specific_gen_kwargs}
            for t in self.tasks:
                for s in self.seeds:
                    out.append(
                        Cell(
                            method=m, task=t, seed=s, model_args=margs, gen_kwargs=gk,
                            limit=sh.get("limit"), batch_size=int(sh.get("batch_size", 1)),
                            device=sh.get("device", "cpu"), num_fewshot=sh.get("num_fewshot"),
                            apply_chat_template=bool(sh.get("apply_chat_template", False)),
                        )
                    )
        return out

    def method(self, name: str) -> MethodSpec:
        """The method called ``name``. Raises ConfigError if there is none."""
        for m in self.methods:
            if m.name == name:
                return m
        raise ConfigError(f"{self.path}: no method named {name!r} (have {[m.name for m in self.methods]})")

    def contract_lines(self) -> list[str]:
        """The fairness contract as printable ``key: value`` lines (shared settings for every row)."""
        sh = self.shared
        lines = []
        for k, v in sorted(sh.get("model_args", {}).items()):
            lines.append(f"model_args.{k}: {v}")
        for k, v in sorted(sh.get("gen_kwargs", {}).items()):
            lines.append(f"gen_kwargs.{k}: {v}")
        for k in sorted(_SHARED_KEYS - {"model_args", "gen_kwargs"}):
            if k in sh:
                lines.append(f"{k}: {sh[k]}")
        lines.append(f"seeds: {', '.join(str(s) for s in self.seeds)}")
        lines.append(f"tasks: {', '.join(t.task for t in self.tasks)}")
        if self.subset:
            lines.append(f"subset: {self.subset}")
        return lines

    def specific_settings(self) -> dict[str, dict[str, Any]]:
        """Per-method explicit deviations from the contract: ``{method: {key: value}}`` (empty if none)."""
        out = {}
        for m in self.methods:
            dev = {f"model_args.{k}": v for k, v in m.specific.items()}
            dev.update({f"gen_kwargs.{k}": v for k, v in m.specific_gen_kwargs.items()})
            if dev:
                out[m.name] = dev
        return out


def _err(path: Path, msg: str) -> ConfigError:
    return ConfigError(f"leaderboard spec {path}: {msg}")


def _as_dict(path: Path, where: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _err(path, f"{where} must be a mapping (key: value), got {type(value).__name__}")
    return dict(value)


def _task_spec(path: Path, i: int, entry: Any) -> TaskSpec:
    if isinstance(entry, str):
        name, noise = entry, None
    elif isinstance(entry, dict) and "task" in entry:
        _check_keys(path, f"tasks[{i}]", entry, {"task", "noise", "family"})
        name, noise = entry["task"], entry.get("noise")
    else:
        raise _err(path, f"tasks[{i}] must be a task name or {{task: NAME, noise: RATIO}}, got {entry!r}")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise _err(path, f"tasks[{i}]: invalid task name {name!r}")
    m = _NOISE_RE.match(name)
    family = entry.get("family") if isinstance(entry, dict) and entry.get("family") else (m.group("base") if m else name)
    if noise is None:
        noise = int(m.group("pct")) / 100.0 if m else None
    if noise is not None and not (isinstance(noise, (int, float)) and 0.0 <= float(noise) <= 1.0):
        raise _err(path, f"tasks[{i}] ({name}): noise must be a ratio in [0, 1], got {noise!r}")
    return TaskSpec(task=name, noise=None if noise is None else float(noise), family=family)


def load_spec(path: str | os.PathLike) -> LeaderboardSpec:
    """Parse and validate a leaderboard spec YAML.

    Raises:
        ConfigError: unreadable YAML, unknown keys, a method setting a contract key outside
            ``specific``, duplicate method names, no methods/tasks/seeds, a bad seed or noise ratio,
            or a ``reference`` that names no method.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"leaderboard spec {path} does not exist (specs live in leaderboards/specs/*.yaml)")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise _err(path, f"invalid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise _err(path, "top level must be a mapping")
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise _err(path, f"unknown top-level keys {sorted(unknown)} (allowed: {sorted(_TOP_KEYS)})")
    name = raw.get("name") or path.stem
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise _err(path, f"name {name!r} must be letters, digits, '_', '-', '.'")
    base = path.parent

    shared = _as_dict(path, "shared", raw.get("shared"))
    _check_keys(path, "shared", shared, _SHARED_KEYS)
    shared["model_args"] = _as_dict(path, "shared.model_args", shared.get("model_args"))
    shared["gen_kwargs"] = _as_dict(path, "shared.gen_kwargs", shared.get("gen_kwargs"))
    _check_keys(path, "shared.gen_kwargs", shared["gen_kwargs"], _GEN_KEYS)
    limit = shared.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0):
        raise _err(path, f"shared.limit must be a positive number of documents, got {limit!r}")

    methods_raw = raw.get("methods")
    if not isinstance(methods_raw, list) or not methods_raw:
        raise _err(path, "methods: give a non-empty list of {name, model, model_args}")
    methods: list[MethodSpec] = []
    for i, m in enumerate(methods_raw):
        if not isinstance(m, dict):
            raise _err(path, f"methods[{i}] must be a mapping with at least 'model'")
        _check_keys(path, f"methods[{i}]", m, _METHOD_KEYS)
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
        for section, given, fix in (
            ("model_args", margs, "a deviation for one method must be written under 'specific:' so that it is printed"),
            ("gen_kwargs", gk, "write a deviation under 'specific_gen_kwargs:'"),
        ):
            clash = sorted(set(given) & set(shared[section]))
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
    noisy_families = {t.family for t in tasks if t.noise}
    tasks = [TaskSpec(t.task, 0.0, t.family) if t.noise is None and t.family in noisy_families else t for t in tasks]
    tnames = [t.task for t in tasks]
    if len(set(tnames)) != len(tnames):
        raise _err(path, f"tasks: duplicate entries in {tnames}")

    seeds = raw.get("seeds", [1234])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise _err(path, f"seeds must be a non-empty list of integers, got {seeds!r}")

    reference = raw.get("reference")
    if reference is not None and reference not in names:
        raise _err(path, f"reference {reference!r} is not one of the methods {names}")

    bs = _as_dict(path, "bootstrap", raw.get("bootstrap"))
    _check_keys(path, "bootstrap", bs, _BOOTSTRAP_KEYS)
    iters = int(bs.get("iters", 1000))
    conf = float(bs.get("confidence", 0.95))
    if iters < 100 or not (0.5 < conf < 1.0):
        raise _err(path, "bootstrap.iters must be >= 100 and bootstrap.confidence in (0.5, 1)")

    inc = raw.get("include_path")
    incs = [DEFAULT_INCLUDE] if inc is None else [(base / p).resolve() for p in ([inc] if isinstance(inc, str) else inc)]
    for p in incs:
        if not p.is_dir():
            raise _err(path, f"include_path {p} is not a folder of lm-eval task YAMLs")

    def _opt_dir(key: str) -> Path | None:
        v = raw.get(key)
        return None if v is None else (base / str(v)).resolve()

    return LeaderboardSpec(
        name=name, path=path, description=str(raw.get("description") or "").strip(), include_path=incs,
        shared=shared, methods=methods, tasks=tasks, seeds=list(seeds), reference=reference,
        bootstrap_iters=iters, bootstrap_seed=int(bs.get("seed", 0)), confidence=conf,
        report_dir=_opt_dir("report_dir"), runs_dir=_opt_dir("runs_dir"),
        notes=str(raw.get("notes") or "").strip(), subset=str(raw.get("subset") or "").strip(),
        progress_chunk=int(raw.get("progress_chunk", 8)),
    )
