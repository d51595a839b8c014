"""The HTML views of a leaderboard report: ``index.html`` and the per-question pages.

``index.html`` opens on the pivot (methods x tasks per model, primary metric, best value per column in bold,
an average column; click a header to sort), then the plots (robustness over noise, cost vs accuracy,
per-task bars), the fairness contracts, the long tables (also sortable) and the provenance. It is
static and self-contained: inline CSS and a few lines of inline JavaScript for sorting, PNG plots
beside it, nothing fetched from the network.

``questions/<model>__<task>.html`` (``<task>.html`` for a one-model spec): one expandable entry per
question with the question, the gold answers, the passages in the order shown to the model (gold
passages, noise and counterfactual passages and passages that contain a gold answer are marked),
every method's answer with its scores and helped/hurt against the closed-book row, and for Tok-RAG
the generated tokens coloured by the branch that emitted them (S_R, S_L and the layer on hover).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from retrieval.io import atomic_write_bytes

from . import stats
from .report import (
    BOLD_NOTE, EXACT_CI, LABELS, PAIRED, _lower_better, cells_lines, confidence_label, generated_lines, method_label, mde_lines, pivot_table, provenance_notes, provenance_table, tables, versions,
)
from .spec import LeaderboardSpec
from .traces import sample_trace, token_rows

e = html.escape

_CSS = (
    "body{font-family:sans-serif;margin:2em;max-width:1500px}table{border-collapse:collapse;margin:1em 0;font-size:13px}"
    "th,td{border:1px solid #bbb;padding:3px 7px;text-align:left;vertical-align:top}th{background:#eee}"
    "table.sortable th{cursor:pointer;user-select:none}table.sortable th:hover{background:#dde}"
    "th[aria-sort=ascending]::after{content:' \\25B2'}th[aria-sort=descending]::after{content:' \\25BC'}"
    "img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}code{background:#f4f4f4}p.note,li.note{color:#444;font-size:13px}"
    "figure{display:inline-block;margin:0.5em 1em 0.5em 0;vertical-align:top;max-width:48%}"
    "details{border-bottom:1px solid #ddd;padding:4px 0}summary{cursor:pointer}"
    ".gold{background:#e6f4e6}.noise{background:#f7e9e9}.counterfactual{background:#fff1d6}"
    ".tag{font-size:11px;border:1px solid #999;border-radius:3px;padding:0 3px;margin-right:4px}"
    ".tok{border-radius:2px;padding:0 1px;white-space:pre-wrap}.tok-R{background:#cfe3ff}.tok-L{background:#ffd9b3}"
    ".tok-agree{opacity:0.6}.tok-bypass{text-decoration:underline dotted}.ok{color:#176317}.bad{color:#a31515}"
    ".answer{white-space:pre-wrap;font-family:monospace}"
)

_SORT_JS = """
function sortKey(td){var t=td.textContent.trim();if(t==='-'||t==='')return null;var n=parseFloat(t);return isNaN(n)?t:n;}
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('thead th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var asc=th.getAttribute('aria-sort')!=='ascending';
      t.querySelectorAll('thead th').forEach(function(h){h.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',asc?'ascending':'descending');
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){
        var x=sortKey(a.cells[i]),y=sortKey(b.cells[i]);
        if(x===null&&y===null)return 0;if(x===null)return 1;if(y===null)return -1;
        var c=(typeof x==='number'&&typeof y==='number')?x-y:String(x).localeCompare(String(y));
        return asc?c:-c;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
"""


def _head(title: str) -> list[str]:
    return ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">', f"<title>{e(title)}</title>",
            f"<style>{_CSS}</style>", "</head>", "<body>"]


def _table(head: list[str], rows: list[list[str]], *, anchor: str = "", cls: str = "sortable", raw: bool = False) -> str:
    """A table; ``raw`` cells are already HTML (the pivot's bold), others are escaped."""
    ident = f' id="{e(anchor)}"' if anchor else ""
    out = [f'<table class="{cls}"{ident}><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{c if raw else e(str(c))}</td>" for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def page_name(model: str | None, task: str) -> str:
    """Relative path of the per-question page of (model, task)."""
    slug = re.sub(r"[^A-Za-z0-9_.\-]", "_", f"{model}__{task}" if model else task)
    return f"questions/{slug}.html"


def question_files(data: dict) -> set[str]:
    """Every per-question page :func:`write_question_pages` can write for ``data`` (a report's data, also an
    earlier report's ``leaderboard.json``): one per (model, task) row."""
    return {page_name(r.get("model"), str(r.get("task"))) for r in data.get("rows") or [] if r.get("task")}


def render_html(data: dict, plots: list[tuple[str, str]], pages: list[tuple[str | None, str, str]] | None = None) -> str:
    """``index.html``: pivot, plots, contracts, long tables, provenance (see the module docstring)."""
    pages = pages or []
    pl = LABELS.get(data["primary_metric"], data["primary_metric"])
    parts = _head(f"Leaderboard: {data['spec']}") + [f"<h1>Leaderboard: {e(data['spec'])}</h1>"]
    if data["description"]:
        parts.append(f"<p>{e(data['description'])}</p>")
    cl = cells_lines(data)
    if cl:
        parts.append(f'<p id="cells">{e(cl[0])}</p>')
        if cl[1:]:
            parts.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in cl[1:]) + "</ul>")
    parts.append('<p class="note">Overview first; then <a href="#plots">plots</a>, <a href="#contract">fairness contract</a>, '
                 '<a href="#results">long tables</a> and <a href="#provenance">provenance</a>. Click a column header to sort.</p>')
    parts.append(f'<h2 id="overview">Overview: {e(pl)} per task ({e(BOLD_NOTE)}; methods are compared only within a model)</h2>')
    conf = confidence_label(data["bootstrap"]["confidence"])
    for i, piv in enumerate(data["pivot"]):
        if data["multi_model"]:
            parts.append(f"<h3>{e(piv['label'])}</h3>")
        head, body = pivot_table(data, piv, bold=("\0b", "\0/b"))
        cells = []
        for r, line in zip(piv["rows"], body):
            out_line = []
            for j, c in enumerate(line):
                s = e(c).replace("\0b", "<b>").replace("\0/b", "</b>")
                task = piv["columns"][j - 1]["task"] if 0 < j <= len(piv["columns"]) else None
                v = (r["values"].get(task) or {}) if task else {}
                if v.get("lo") is not None:
                    tip = f"{conf} CI [{v['lo']:.3f}, {v['hi']:.3f}]" + (
                        " (exact Clopper-Pearson: every question scored the same)" if v.get("ci") == EXACT_CI else "")
                    s = f'<span title="{e(tip)}">{s}</span>'
                out_line.append(s)
            cells.append(out_line)
        parts.append(_table(head, cells, anchor=f"pivot-{i}", cls="sortable pivot", raw=True))
        mde = mde_lines(data, piv["model"])
        if mde:
            parts.append("<ul>" + "".join(f'<li class="note">{e(x)}</li>' for x in mde) + "</ul>")
        mine = [(t, p) for m, t, p in pages if m == piv["model"]]
        if mine:
            parts.append('<p class="note">Per-question pages: ' + ", ".join(f'<a href="{e(p)}">{e(t)}</a>' for t, p in mine) + "</p>")
    parts.append('<h2 id="plots">Plots</h2><div>')
    for name, cap in plots:
        parts.append(f'<figure><img src="{e(name)}" alt="{e(cap)}"><figcaption>{e(cap)}</figcaption></figure>')
    parts.append("</div>")
    parts.append('<h2 id="contract">Fairness contract</h2>')
    for mod in data["models"]:
        if data["multi_model"]:
            parts.append(f"<h3>{e(mod['label'])}</h3>")
        parts.append("<ul>" + "".join(f"<li><code>{e(x)}</code></li>" for x in mod["contract"] + mod.get("as_run", []))
                     + "</ul>")
        if mod["method_args"]:
            parts.append("<p>Method arguments for this model:</p><ul>"
                         + "".join(f"<li><code>{e(x)}</code></li>" for x in mod["method_args"]) + "</ul>")
        if mod.get("method_resolved"):
            parts.append("<p>Resolved method settings, as run:</p><ul>"
                         + "".join(f"<li><code>{e(x)}</code></li>" for x in mod["method_resolved"]) + "</ul>")
        if mod["notes"]:
            parts.append(f'<p class="note">{e(mod["notes"])}</p>')
    parts.append("<p>Methods and their own hyper-parameters:</p><ul>")
    for name, d in data["method_args"].items():
        args = ", ".join(f"{k}={v}" for k, v in sorted(d.get("model_args", {}).items()))
        parts.append(f"<li>{e(name)}: model <code>{e(d['model'])}</code>" + (f", <code>{e(args)}</code>" if args else "") + "</li>")
    parts.append("</ul>")
    if data["specific_settings"]:
        parts.append("<h3>Specific settings (explicit deviations, rows marked *)</h3><ul>")
        for name, dev in data["specific_settings"].items():
            parts.append(f"<li>{e(name)}: <code>{e(', '.join(f'{k}={v}' for k, v in sorted(dev.items())))}</code></li>")
        parts.append("</ul>")
    for anchor, title, head, rows, under in tables(data):
        parts.append(f'<h2 id="{anchor}">{e(title)}</h2>')
        parts.append(_table(head, rows))
        if under:
            parts.append("<ul>" + "".join(f'<li class="note">{e(x)}</li>' for x in under) + "</ul>")
    head, rows = provenance_table(data)
    parts.append('<h2 id="provenance">Provenance (one row per cell)</h2>')
    parts.append(_table(head, rows))
    if notes := provenance_notes(data):
        parts.append("<ul>" + "".join(f'<li class="note">{e(x)}</li>' for x in notes) + "</ul>")
    parts.append("<p>Units: " + e("; ".join(f"{LABELS.get(k, k)} = {u}" for k, u in data["units"].items() if u)) + "</p>")
    parts.append("<p>Library versions: " + e("; ".join(versions(data))) + "</p>")
    if data["notes"]:
        parts.append(f"<h2>Notes</h2><p>{e(data['notes'])}</p>")
    gen, *how = generated_lines(data)  # the command and code that generated it, and the bootstrap's seeding
    parts += [f"<p>{e(gen).replace('`tokrag leaderboard report`', '<code>tokrag leaderboard report</code>')}</p>"]
    parts += [f'<p class="note">{e(x)}</p>' for x in how]
    parts += [f"<script>{_SORT_JS}</script>", "</body>", "</html>", ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------- per-question pages

def _tokens_html(trace: dict | None) -> tuple[str, bool] | None:
    """Tok-RAG's tokens as coloured spans, and whether they carry their text (the 5-element trace);
    None without tokens. The older 4-element trace gives one block per token (branch and scores only)."""
    toks = token_rows(trace)
    if not toks:
        return None
    names = {"R": "RAG branch", "L": "pure LM branch"}
    out = []
    for t in toks:
        b = t["branch"]
        cls = f"tok tok-{b[:1]}" + (" tok-agree" if "=" in b else "") + (" tok-bypass" if b.endswith("b") else "")
        how = " (both branches agreed)" if "=" in b else " (function token, no test)" if b.endswith("b") else ""
        score = ", ".join(f"{k} {t[x]:.4f}" for k, x in (("S_R", "s_r"), ("S_L", "s_l")) if t[x] is not None)
        tip = f"{names.get(b[:1], b)}{how}" + (f": {score}" if score else "") + (f", layer {t['layer']}" if t["layer"] is not None else "")
        text = t["text"] if t["text"] is not None else "\u25ae"
        out.append(f'<span class="{cls}" title="{e(tip)}">{e(text)}</span>')
    return "".join(out), all(t["text"] is not None for t in toks)


def _passages_html(doc: dict) -> str:
    """The passages of one question as an HTML list, tagged by the rules of the metrics beside them
    (tasks.utils.process_results_qa): "gold" as gold_at_k (tasks.rag.is_gold_docid: the docid less the
    counterfactual suffix is a gold id; bring-your-own ids may hold '#') or a passage of source "gold";
    "counterfactual" for a passage of that source (its background too), so a swapped gold passage carries both tags
    and the other swapped passages (nq_oracle_bm25_counterfactual_all) "counterfactual" only;
    "has answer" as answer_recall (DPR has_answer over the passage text, retrieval.has_answer)."""
    from retrieval import has_answer
    from tasks.rag import is_gold_docid

    gold = {str(g) for g in doc.get("gold_docids") or []}
    answers = list(doc.get("answers") or [])
    items = []
    for c in doc.get("ctxs") or []:
        if not isinstance(c, dict):
            continue
        docid = str(c.get("docid"))
        src = c.get("source") or ""
        is_gold = src == "gold" or is_gold_docid(docid, gold)
        tags = ["gold"] if is_gold else []
        cls = "gold" if is_gold else ""
        if src == "counterfactual":
            tags.append("counterfactual")
            cls = "counterfactual"
        if src == "noise":
            tags.append("noise")
            cls = "noise"
        if answers and has_answer(str(c.get("text", "")), answers):
            tags.append("has answer")
        score = c.get("score")
        head = f"{docid}" + (f" ({score:.3f})" if isinstance(score, (int, float)) else "")
        title = c.get("title")
        items.append(f'<li class="{cls}">' + "".join(f'<span class="tag">{e(t)}</span>' for t in tags)
                     + f"<code>{e(head)}</code> " + (f"<b>{e(str(title))}</b>: " if title else "") + f"{e(str(c.get('text', '')))}</li>")
    return "<ol>" + "".join(items) + "</ol>" if items else "<p>(no passages)</p>"


def _question_page(spec: LeaderboardSpec, data: dict, model: str | None, task: str, samples: dict[str, dict[int, dict]]) -> str:
    """One page: every question of (model, task) with every method's answer (first seed)."""
    primary = data["primary_metric"]
    cb = data["closed_book"]
    shown = [m for m in PAIRED + ["answer_recall"] if m in data["metrics"]]
    label = next((m["label"] for m in data["models"] if m["name"] == model), "")
    title = f"{data['spec']}: {task}" + (f" ({label})" if model else "")
    lower = _lower_better(data.get("higher_is_better") or {}, task, primary)  # the direction of the report's columns
    parts = _head(title) + [f"<h1>{e(title)}</h1>", '<p><a href="../index.html">back to the leaderboard</a></p>',
                            '<p class="note">Passages: <span class="gold">gold</span>, <span class="noise">noise</span>, '
                            '<span class="counterfactual">counterfactual</span> (a swapped gold passage is tagged both); <span class="tag">has answer</span> = the passage '
                            'text contains a gold answer (DPR has_answer, the rule of answer_recall). Tok-RAG tokens: <span class="tok tok-R">RAG branch</span> '
                            '<span class="tok tok-L">pure LM branch</span> (faded: both branches agreed; dotted: function token); '
                            'hover a token for S_R, S_L and the layer.'
                            + (f' &#9650;/&#9660; = helped/hurt against {e(str(cb))} ({e(LABELS.get(primary, primary))}'
                               + (", lower is better" if lower else "") + ').' if cb else '') + '</p>']
    methods = list(samples)
    doc_ids = sorted(set().union(*[set(v) for v in samples.values()])) if samples else []

    def is_right(v: Any) -> bool:  # stats.is_right: 1 is right, or 0 for a lower-is-better metric such as cf_match
        return isinstance(v, (int, float)) and stats.is_right(v, lower)

    for d in doc_ids:
        first = next(samples[m][d] for m in methods if d in samples[m])
        doc = first.get("doc") or {}
        right = [m for m in methods if d in samples[m] and is_right(samples[m][d].get(primary))]
        summary = (f"#{d} {e(str(doc.get('qid', '')))} &mdash; {e(str(doc.get('question', '')))} &mdash; "
                   f"{e(LABELS.get(primary, primary))}: {len(right)}/{len(methods)} methods"
                   + (" right (lower is better: right = 0)" if lower else ""))
        parts.append(f'<details id="q{d}"><summary>{summary}</summary>')
        golds = ", ".join(str(a) for a in doc.get("answers") or [])
        parts.append(f"<p><b>Gold answers:</b> {e(golds)}</p>")
        if doc.get("counterfactual_answer"):
            parts.append(f"<p><b>Planted (counterfactual) answer:</b> {e(str(doc['counterfactual_answer']))}</p>")
        parts.append(_passages_html(doc))
        head = ["method", "answer"] + [LABELS.get(m, m) for m in shown] + ([f"vs {cb}"] if cb else [])
        rows = []
        cb_v = samples.get(cb, {}).get(d, {}).get(primary) if cb else None
        for m in methods:
            s = samples[m].get(d)
            if s is None:
                continue
            resp = s.get("filtered_resps") or s.get("resps") or [""]
            while isinstance(resp, list) and resp:
                resp = resp[0]
            toks = _tokens_html(sample_trace(s))
            if toks is None:
                ans = e(str(resp))
            elif toks[1]:
                ans = toks[0]
            else:  # no token text in the trace: the answer, then one block per token for the branches
                ans = f"{e(str(resp))}<br>{toks[0]}"
            cells = [e(method_label(data, m)), f'<span class="answer">{ans}</span>']
            for k in shown:
                v = s.get(k)
                cells.append(f"{v:.3f}" if isinstance(v, (int, float)) and not isinstance(v, bool) else "-")
            if cb:
                v = s.get(primary)
                mark = "-"
                if m != cb and isinstance(v, (int, float)) and isinstance(cb_v, (int, float)):
                    sign = stats.compare(v, cb_v, lower)
                    mark = ('<span class="ok">&#9650; helped</span>' if sign > 0 else
                            '<span class="bad">&#9660; hurt</span>' if sign < 0 else "=")
                cells.append(mark)
            rows.append(cells)
        parts.append(_table(head, rows, cls="answers", raw=True))
        parts.append("</details>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def write_question_pages(spec: LeaderboardSpec, loaded: dict[str, Any], data: dict, out: Path) -> list[tuple[str | None, str, str]]:
    """Write one page per (model, task) under ``out/questions/``; returns ``(model, task, relative path)``."""
    groups: dict[tuple, dict[str, dict[int, dict]]] = {}
    for cell, _key, d in loaded.values():
        if d is None:
            continue
        g = groups.setdefault((cell.model_name, cell.task.task), {})
        if cell.method.name in g:  # several seeds: the first seed's answers are shown
            continue
        g[cell.method.name] = {int(s["doc_id"]): s for s in d["samples"].get(cell.task.task, [])}
    pages = []
    from .runner import leaderboard_write

    with leaderboard_write(out / "questions"):  # EACCES, EIO: the command's one line (s57 g2)
        (out / "questions").mkdir(parents=True, exist_ok=True)
    for (model, task), samples in groups.items():
        rel = page_name(model, task)
        atomic_write_bytes(out / rel, _question_page(spec, data, model, task, samples).encode("utf-8"))
        pages.append((model, task, rel))
    return pages


__all__ = ["render_html", "write_question_pages", "page_name", "question_files"]
