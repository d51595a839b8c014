"""What a report says about how its cells ran, read from their run folders (not part of any run key):

* the compute setting of each cell (:func:`compute_setting`: device, CPU model and kernels, torch's thread count,
  torch version, from ``provenance.json``'s ``machine`` and ``versions``): one line per model beside its fairness
  contract, naming the cells of each setting when they were computed under more than one (on CPU a forward pass's
  bits depend on the CPU's kernels and the thread count, so a greedy answer may differ between them), a column of the
  provenance table and of the CSV when the report mixes settings;
* the chat template's SHA-256 as run, and the methods' resolved settings (``results.json``
  ``config.tokrag_resolved_config``: ``layer_resolved``, ``rate``, ...), which the spec's ``model_args`` only name
  as written, and what a Tok-RAG preset was calibrated on (``config.tokrag_preset``'s ``calibration.data``: the dev
  files with their SHA-256, the corpus and run fingerprints);
* the library versions the run key holds but ``provenance.json``'s ``versions`` lacks (``config.json``'s
  ``library_versions``: for a cell run before s57 r3, ``tokenizers``, the Anserini jar, ``scikit-learn``,
  ``rouge-score``, ``rouge``; since then ``provenance.json`` names every library of the key that is installed, and
  this adds only those that were not, as None);
* per row, the share of answers whose scored text (:func:`_scored_text`) contains the passage template's marker
  (:func:`passage_marker`: ``[Reference]:``
  of the default ``passage_template``), an answer-hygiene diagnostic computed from the samples' predictions.

:func:`annotate` adds them to a report's data (:func:`leaderboards.report.compute`); the other functions render them.
"""

from __future__ import annotations

from typing import Any

SHOW = 12
"""Cell ids named per compute setting at most (then ``… (N more)``)."""

_BOOKKEEPING = {"requested_auto", "unused_args", "trace", "trace_prompts", "chat_template_sha256", "max_gen_toks",
                "max_gen_toks_default"}
"""Resolved-config keys not shown as settings: how an argument was requested, trace switches, the chat template's hash
(its own contract line) and the model's default ``max_gen_toks`` (``max_gen_toks_default``; ``max_gen_toks`` in a run
folder written before: the task's ``gen_kwargs`` override it: the contract's ``generation as run`` line gives what
ran)."""

MIXED_NOTE = ("greedy answers may differ between them: on CPU a forward pass's bits depend on the CPU's kernels and "
              "the thread count, and hardware is not part of the run key")

UNKNOWN_NOTE = ("these differ only in what a run folder did not record: a cell run before the runner recorded its "
                "machine, or a field it could not read; they may be one setting")

MARKER_LABEL = "passage marker in answer"

MARKER_NOTE = ("passage marker in answer = fraction of the answers whose scored text (the first non-empty line of "
               "the generation for the QA tasks, tasks.utils.answer_line; the whole generation for long-form ones; "
               "text after the scored line is not counted) contains the passage "
               "template's marker, its text before the first placeholder ({markers}), which the prompt puts before every "
               "passage: such an answer copies the prompt's format; a method whose prompts show no passages "
               "(rag-none) cannot copy it, so its rate counts the answers that contain that text anyway, a control for "
               "the others' (counted by the report from the samples; not a task metric)")


def _resolved(d: dict) -> dict:
    """A finished cell's resolved model settings: ``results.json`` ``config.tokrag_resolved_config`` (with
    ``layer_resolved``), else ``provenance.json`` ``model_resolved_config``; empty for a model that records none."""
    def get(obj: Any, key: str) -> Any:  # a record that is no object (a damaged file read by check) holds nothing
        return obj.get(key) if isinstance(obj, dict) else None

    rc = get(get(d.get("results"), "config"), "tokrag_resolved_config")
    if not isinstance(rc, dict):
        rc = get(d.get("provenance"), "model_resolved_config")
    return rc if isinstance(rc, dict) else {}


def compute_setting(d: dict) -> dict | None:
    """What computed a finished cell ``d`` (:func:`leaderboards.runner.load_cell`): ``device``, ``cpu_model``,
    ``cpu_capability``, ``torch_num_threads``, ``cuda_device`` (``provenance.json`` ``machine``, else ``results.json``
    ``config.tokrag_machine``) and ``torch`` (its version); None when the run folder records no machine."""
    m = (d.get("provenance") or {}).get("machine")
    if not isinstance(m, dict):
        m = ((d.get("results") or {}).get("config") or {}).get("tokrag_machine")
    if not isinstance(m, dict):
        return None
    device = _resolved(d).get("device") or ((d.get("results") or {}).get("config") or {}).get("device")
    cudas = m.get("cuda")
    cuda = _field(m.get("cuda_device")) or (_field(cudas[0]) if isinstance(cudas, list) and cudas else None)
    versions = (d.get("provenance") or {}).get("versions")
    return {"device": str(device) if device else ("cuda" if cuda else "cpu"), "cpu_model": _field(m.get("cpu_model")),
            "cpu_capability": _field(m.get("cpu_capability")), "torch_num_threads": _field(m.get("torch_num_threads")),
            "cuda_device": cuda, "torch": _field(versions.get("torch")) if isinstance(versions, dict) else None}


def _field(value: Any) -> str | int | float | None:
    """A machine record's field as the report shows and compares it: text or a number; any other value (a list, a
    mapping: not what the runner writes) counts as not recorded (it made the report a TypeError traceback)."""
    return value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def setting_label(s: dict | None) -> str:
    """``cpu AMD EPYC (AVX2), 2 threads, torch 2.13.0+cpu`` (``cuda:0 NVIDIA H100 ..., torch ...`` on a GPU: the CPU's
    threads do not compute it); ``not recorded`` for a run folder without a machine record."""
    if s is None:
        return "not recorded (the run folder has no machine record)"
    torch = f", torch {s['torch']}" if s.get("torch") else ""
    if str(s["device"]).startswith("cuda"):
        return f"{s['device']} {s.get('cuda_device') or 'GPU not recorded'}{torch}"
    n = s.get("torch_num_threads")
    threads = "threads not recorded" if n is None else f"{n} thread{'' if n == 1 else 's'}"
    cap = f" ({s['cpu_capability']})" if s.get("cpu_capability") else ""
    return f"{s['device']} {s.get('cpu_model') or 'CPU model not recorded'}{cap}, {threads}{torch}"


def _known(s: dict | None) -> dict:
    """The fields of a compute setting ``s`` that its label shows and its run folder recorded (None left out): a
    GPU cell's device, GPU and torch; a CPU cell's device, CPU model, kernels, thread count and torch."""
    if s is None:
        return {}
    keys = (("device", "cuda_device", "torch") if str(s["device"]).startswith("cuda")
            else ("device", "cpu_model", "cpu_capability", "torch_num_threads", "torch"))
    return {k: s.get(k) for k in keys if s.get(k) is not None}


def settings_differ(settings: list[dict | None]) -> bool:
    """True when two of ``settings`` (:func:`compute_setting` of cells) differ in a field both recorded; a field one
    of them did not record (or a run folder without a machine record) is unknown, not a difference."""
    values: dict[str, set] = {}  # two cells differ in a field both recorded <=> that field has two recorded values
    for s in settings:
        for k, v in _known(s).items():
            values.setdefault(k, set()).add(v)
    return any(len(vs) > 1 for vs in values.values())


def _names(cells: list[str]) -> str:
    return ", ".join(cells[:SHOW]) + (f", … ({len(cells) - SHOW} more)" if len(cells) > SHOW else "")


def compute_line(groups: dict[str, list[str]], whole_report: bool = False, differ: bool = True) -> str:
    """The one line of :func:`annotate` for ``groups`` (setting label -> the cell ids computed under it, in order);
    ``differ`` False (:func:`settings_differ`): the labels differ only in what a run folder did not record."""
    if len(groups) == 1:
        (label, cells), = groups.items()
        where = "every cell of the report" if whole_report else "every cell with results"
        return f"computed on: {label} ({where}, from provenance.json machine)"
    order = sorted(groups, key=lambda k: -len(groups[k]))  # stable: the first setting of the most cells is 'the others'
    n = len(groups[order[0]])
    parts = [f"{order[0]} ({n} cell{'' if n == 1 else 's'}: the other{'' if n == 1 else 's'})"]
    parts += [f"{lab} ({len(groups[lab])} cell{'' if len(groups[lab]) == 1 else 's'}: {_names(groups[lab])})"
              for lab in order[1:]]
    if not differ:
        return f"computed on: {'; '.join(parts)} (from provenance.json machine; {UNKNOWN_NOTE})"
    return f"computed under {len(groups)} settings (from provenance.json machine): {'; '.join(parts)}; {MIXED_NOTE}"


def passage_marker(template: Any) -> str | None:
    """The literal text of a ``passage_template`` before its first placeholder, stripped (``[Reference]:`` of
    ``"[Reference]: {title}\\n{text}\\n"``; ``{Doc}:`` of ``"{{Doc}}: {text}"``); None when there is none
    (``"{title}\\n{text}"``), when it has no letter or digit (``-`` of ``"- {title}: {text}"``), or no template."""
    if not isinstance(template, str):
        return None
    import string

    head = ""
    try:
        for literal, field, _spec, _conv in string.Formatter().parse(template):  # '{{' is a literal '{'
            head += literal
            if field is not None:
                break
    except ValueError:  # not a template format_passage can use
        return None
    head = head.strip()
    # punctuation alone ('-' of '- {title}: {text}', '[' of '[{rank}] {text}') is in ordinary answers ('1914-1918'):
    # counting it would not tell a copied passage format from an answer
    return head if any(c.isalnum() for c in head) else None


def _prediction(s: dict) -> str | None:
    """A sample's generation (its first filtered response: no tokrag task has a ``filter_list``, so this is the whole
    generation, cut only at the task's ``until``), when it is text (a generation task); else None."""
    resp = s.get("filtered_resps") or s.get("resps")
    while isinstance(resp, list) and resp:
        resp = resp[0]
    return resp if isinstance(resp, str) else None


def _scored_text(d: dict, task: str):
    """The function that gives the text ``task``'s ``process_results`` scores of a generation, by the name of that
    function as the cell's ``results.json`` records it (``configs.<task>.process_results``, lm-eval's dump of its
    source): :func:`tasks.utils.answer_line` (the first non-empty line) for ``process_results_qa`` and
    ``process_results_dialogue``, :func:`tasks.longform.longform_text` (the whole generation) for
    ``process_results_longform``; None for any other or none recorded (what such a task scores is not known here)."""
    import re

    from tasks.longform import longform_text
    from tasks.utils import answer_line

    src = (((d.get("results") or {}).get("configs") or {}).get(task) or {}).get("process_results")
    m = re.match(r"\s*def\s+(\w+)\s*\(", src) if isinstance(src, str) else None
    return {"process_results_qa": answer_line, "process_results_dialogue": answer_line,
            "process_results_longform": longform_text}.get(m.group(1) if m else None)


def _marker_counts(done: list, task: str) -> dict | None:
    """``{"marker", "answers", "n", "rate"}`` over the finished cells ``done`` ((cell, key, data) of one row, every
    seed): how many text answers contain their cell's passage marker in the text the task scores (:func:`_scored_text`:
    the first non-empty line of a QA task's generation, not what follows it); None without a marker, a text answer or a
    known scoring rule."""
    hits = total = 0
    markers = []
    for _cell, _key, d in done:
        marker = passage_marker(_resolved(d).get("passage_template"))
        scored = _scored_text(d, task)
        if marker is None or scored is None:
            continue
        preds = [scored(p) for p in map(_prediction, d["samples"].get(task, [])) if p is not None]
        if not preds:
            continue
        markers.append(marker)
        hits += sum(marker in p for p in preds)
        total += len(preds)
    if not total:
        return None
    return {"marker": " | ".join(dict.fromkeys(markers)), "answers": hits, "n": total, "rate": hits / total}


def _fmt_value(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def _preset_lines(model_cells: list[tuple[str, dict]]) -> list[str]:
    """What the presets of one model's finished cells ``model_cells`` ((method, cell data as
    :func:`leaderboards.report.collect` loads it)) were calibrated on: for each method and each distinct preset its cells
    ran with (``results.json`` ``config.tokrag_preset``, the preset as the model read it, with its ``sha256``), one line
    per data set of the preset's ``calibration.data`` (:func:`tasks.calibrate.data_lines`): ``tokrag-calibrated:
    preset 'leaderboards/presets/x.json' (sha256 1a2b3c4d5e6f) calibrated on nq dev (120 samples): nq_open/... (sha256
    ...) in /data; corpus ...; run ...``. The preset is named as the cell's resolved ``preset`` gives it (as the spec
    wrote it), else by its recorded path. A preset written before its data files were recorded says ``its data files
    are not recorded ...``; a preset without ``calibration.data``, and a cell without a preset, add nothing."""
    from tasks.calibrate import data_lines

    out: list[str] = []
    seen: set[tuple[str, Any]] = set()
    for m, d in model_cells:
        config = (d.get("results") or {}).get("config") if isinstance(d.get("results"), dict) else None
        preset = config.get("tokrag_preset") if isinstance(config, dict) else None
        if not isinstance(preset, dict) or (m, preset.get("sha256")) in seen:
            continue
        seen.add((m, preset.get("sha256")))
        name = _resolved(d).get("preset") or preset.get("path")
        sha = f" (sha256 {preset['sha256'][:12]})" if isinstance(preset.get("sha256"), str) else ""
        out += [f"{m}: preset {_fmt_value(name)}{sha} {line}" for line in data_lines(preset.get("calibration"))]
    return out


def _resolved_lines(model_cells: list[tuple[str, dict]]) -> tuple[list[str], list[str]]:
    """(shared line(s), per-method lines) of the resolved settings of one model's finished cells ``model_cells``
    ((method, resolved config)): a key every method has with one value is shared; the rest are the method's own
    (a method's unused arguments left out; a value that differs between a method's cells is given as ``a | b``)."""
    if not any(rc for _m, rc in model_cells):
        return [], []
    methods = list(dict.fromkeys(m for m, _rc in model_cells))
    values: dict[str, dict[str, list]] = {}  # key -> method -> values (distinct, in order)
    unused: dict[str, set[str]] = {}
    for m, rc in model_cells:
        unused.setdefault(m, set()).update(rc.get("unused_args") or [])
        for k, v in rc.items():
            if k in _BOOKKEEPING:
                continue
            lst = values.setdefault(k, {}).setdefault(m, [])
            if v not in lst:
                lst.append(v)
    shared = {k for k, per in values.items()
              if set(per) == set(methods) and all(len(v) == 1 for v in per.values())
              and len({_fmt_value(v[0]) for v in per.values()}) == 1}
    out_shared = []
    if shared:
        out_shared.append("resolved settings shared by every method (from the results): "
                          + ", ".join(f"{k}={_fmt_value(values[k][methods[0]][0])}" for k in sorted(shared)))
    lines = []
    for m in methods:
        own = [(k, per[m]) for k, per in sorted(values.items()) if k not in shared and m in per and k not in unused[m]]
        if own:
            lines.append(f"{m}: " + ", ".join(f"{k}={' | '.join(_fmt_value(x) for x in v)}" for k, v in own))
    return out_shared, lines


def _template_line(cells: list[tuple[str, dict]]) -> list[str]:
    """The chat template's SHA-256 as the model's cells ran with it (``results.json`` ``config.tokrag_prompt``, else
    the resolved config) where ``tokrag_prompt`` says it was applied; none when no cell ran with one."""
    seen: dict[str, list[str]] = {}
    for cid, d in cells:
        cfg = (d.get("results") or {}).get("config") or {}
        h = (cfg.get("tokrag_prompt") or {}).get("chat_template_sha256") or _resolved(d).get("chat_template_sha256")
        if h and (cfg.get("tokrag_prompt") or {}).get("apply_chat_template"):  # the model's template, applied
            seen.setdefault(str(h), []).append(cid)
    if not seen:
        return []
    if len(seen) == 1:
        return [f"chat template SHA-256 (as run, from the results): {next(iter(seen))}"]
    return ["chat template SHA-256 (as run, from the results) DIFFERS between cells: "
            + "; ".join(f"{h} ({_names(c)})" for h, c in seen.items())]


def annotate(data: dict, loaded: dict[str, Any]) -> None:
    """Add to a report's ``data`` (in place), from the finished cells ``loaded`` (:func:`leaderboards.report.collect`):

    * ``provenance[i]["machine"]`` (the cell's record) and ``["compute"]`` (:func:`setting_label`); ``versions``
      completed with ``config.json``'s ``library_versions`` that it lacks (before s57 r3: tokenizers, anserini,
      scikit-learn, rouge-score, rouge; since: the libraries not installed, None);
    * ``compute_settings``: ``[{"setting": label, "cells": [...]}]`` over the report; ``compute_settings_differ``:
      whether two of them differ in a field both recorded (:func:`settings_differ`);
    * ``models[i]["as_run"]``: lines shown under the model's fairness contract: the compute line
      (:func:`compute_line`; for a report whose cells all share one setting, once, under the first model) and the chat
      template's hash; ``models[i]["method_resolved"]``: the resolved settings (:func:`_resolved_lines`), then what
      each method's preset was calibrated on (:func:`_preset_lines`);
    * ``rows[j]["passage_marker"]`` (:func:`_marker_counts`)."""
    labels: dict[str, str] = {}
    settings: dict[str, dict | None] = {}
    for p in data["provenance"]:
        got = loaded.get(p["cell"])
        if p.get("missing") or got is None or got[2] is None:
            continue
        d = got[2]
        s = settings[p["cell"]] = compute_setting(d)
        p["machine"] = (d.get("provenance") or {}).get("machine")
        p["compute"] = labels[p["cell"]] = setting_label(s)
        lib = (d.get("config") or {}).get("library_versions") or {}
        extra = {k: v for k, v in lib.items() if k not in (p.get("versions") or {})}
        if extra:
            p["versions"] = {**(p.get("versions") or {}), **extra}
    everywhere: dict[str, list[str]] = {}
    for cid, lab in labels.items():
        everywhere.setdefault(lab, []).append(cid)
    data["compute_settings"] = [{"setting": lab, "cells": cells} for lab, cells in everywhere.items()]
    data["compute_settings_differ"] = settings_differ(list(settings.values()))
    for i, mod in enumerate(data["models"]):
        mine = [(cid, d) for cid, (cell, _k, d) in loaded.items() if d is not None and cell.model_name == mod["name"]]
        groups: dict[str, list[str]] = {}
        for cid, _d in mine:
            groups.setdefault(labels[cid], []).append(cid)
        lines = []
        if len(everywhere) == 1 and data.get("multi_model"):
            if i == 0:
                lines.append(compute_line(everywhere, whole_report=True))
        elif groups:
            lines.append(compute_line(groups, differ=settings_differ([settings[cid] for cid, _d in mine])))
        mod["as_run"] = lines + _template_line(mine)
        shared, own = _resolved_lines([(loaded[cid][0].method.name, _resolved(d)) for cid, d in mine])
        mod["method_resolved"] = shared + own + _preset_lines([(loaded[cid][0].method.name, d) for cid, d in mine])
    by_row: dict[tuple, list] = {}  # the finished cells of each (model, method, task): a row's seeds
    for c in loaded.values():
        if c[2] is not None:
            by_row.setdefault((c[0].model_name, c[0].method.name, c[0].task.task), []).append(c)
    for r in data["rows"]:
        got = _marker_counts(by_row.get((r["model"], r["method"], r["task"]), []), r["task"])
        if got is not None:
            r["passage_marker"] = got


def mixed(data: dict) -> bool:
    """True when the report's cells have more than one compute-setting label (the provenance table and the CSV then
    give each cell's); :func:`differ` tells whether they really differ."""
    return len(data.get("compute_settings") or []) > 1


def differ(data: dict) -> bool:
    """True when two of the report's cells were computed under settings that differ in a field both recorded."""
    return bool(data.get("compute_settings_differ", mixed(data)))


def row_settings(data: dict, row: dict) -> str:
    """The compute settings of ``row``'s cells (its seeds), `` | ``-joined (the CSV's ``compute`` column)."""
    pre = f"{row['model']}/" if row.get("model") else ""
    want = {f"{pre}{row['method']}/{row['task']}/seed{s}" for s in row.get("seeds") or []}
    return " | ".join(dict.fromkeys(p["compute"] for p in data["provenance"] if p["cell"] in want and p.get("compute")))


def marker_shown(data: dict) -> bool:
    return any(r.get("passage_marker") for r in data["rows"])


def marker_cell(row: dict) -> str:
    pm = row.get("passage_marker")
    return "-" if not pm else f"{pm['rate']:.3f}"


def marker_notes(data: dict) -> list[str]:
    markers = dict.fromkeys(r["passage_marker"]["marker"] for r in data["rows"] if r.get("passage_marker"))
    return [MARKER_NOTE.format(markers=", ".join(repr(m) for m in markers))] if markers else []
