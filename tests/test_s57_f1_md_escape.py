"""``leaderboard.md`` escapes the user strings it prints (s57 f1).

Before, the Markdown report printed task, model and method names, question ids, paths and settings as they came: a
held-out id ``q*1`` beside ``q*2`` rendered as emphasis (``q<em>1, q</em>2``), ``_q2_`` as an emphasised ``q2``, a
model label or id ``<b>q3</b>`` passed into the page as raw HTML, ``[x](y)`` became a link and ``&amp;`` an ``&``
(the HTML page already escaped them). Now one helper, :func:`leaderboards.report.md_text`, escapes every table cell
and list line that can hold one, and only the characters Markdown would read as syntax where they stand, so ordinary
text (``q05``, ``nq_oracle_gold``, the numbers, ``until=['\\n\\n']``) is unchanged byte for byte: the committed
reference-cells report regenerates from its JSON exactly, and a ToyLM leaderboard with plain ids renders as it did.

The rendered text is read back with markdown-it-py (installed with rich), CommonMark with GitHub's tables and
strikethrough.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, write_spec
from markdown_it import MarkdownIt

from leaderboards import report
from leaderboards.cli import main as lb_main
from leaderboards.report import md_text, render_markdown
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec

REPO = Path(__file__).resolve().parents[1]
RAG_QA = REPO / "tasks" / "qa" / "rag_qa_bm25.yaml"
N = 120
# which questions go to the dev / few-shot pool depends on the question text only (tasks.data.qa_split_of); for
# "who founded the town number {i}", i < 120 (as test_s56_r2_held_out_report_end_to_end reads them for 260)
DEV_AT = (3, 6, 11, 20, 22, 26, 28, 54, 55, 63, 67, 72, 89)
SHOT_AT = (113,)
# ids with Markdown syntax, given to the first ten dev questions (the ones the contract line names) and the few-shot one
ODD = {3: "q*1", 6: "q*2", 11: "q_1_", 20: "_q2_", 22: "<b>q3</b>", 26: "a|b", 28: "`c`", 54: "[x](y)", 55: "&amp;",
       63: "~~s~~", 113: "q\\*"}
ODD_FILE = "q_|<i>*x*.jsonl"
ODD_LABEL = "Toy <b>*v1*</b> | _x_"


def _render(md: str) -> str:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)


def _text(fragment: str) -> str:
    """The text a reader sees of rendered HTML: tags dropped, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def _items(page: str) -> list[str]:
    return [_text(x) for x in re.findall(r"<li>(.*?)</li>", page, flags=re.S)]


def _tables(page: str) -> list[list[list[str]]]:
    """Every table of the rendered page: rows of cell texts, the header row first."""
    return [[[_text(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)]
             for row in re.findall(r"<tr>(.*?)</tr>", t, flags=re.S)]
            for t in re.findall(r"<table>(.*?)</table>", page, flags=re.S)]


@pytest.mark.parametrize("text", [
    "q05", "nq_oracle_gold", "smollm2-135m-instruct/rag-none/nq_oracle_gold", "0.310 [0.258, 0.365] ‡", "rag-cad *",
    "rag-cad * †", "+0.010 [-0.020, +0.040] p<0.001 (3+/1−) holm≤0.004", "until=['\\n\\n', 'Question:']",
    "passage_template='[Reference]: {title}\\n{text}\\n'", "/work/shared/data/nq-dpr-1k/dev.jsonl", "p >= 0.05",
    "0.20 -> 0.33", "a * b", "x ~ y", "snake_case_name", "-", "2 of 24 in split dev", "café_crème",
])
def test_ordinary_text_is_unchanged(text):
    assert md_text(text) == text
    assert md_text(text, line=True) == text or text == "-"


@pytest.mark.parametrize("text, escaped", [
    ("q*1, q*2", "q\\*1, q\\*2"), ("q_1_", "q_1\\_"), ("_q2_", "\\_q2\\_"), ("<b>x</b>", "\\<b>x\\</b>"),
    ("a|b", "a\\|b"), ("`c`", "\\`c\\`"), ("[x](y)", "[x\\](y)"), ("[x][y]", "[x\\][y]"), ("&amp;", "\\&amp;"),
    ("&#35; &", "\\&#35; &"), ("~~s~~", "\\~\\~s\\~\\~"), ("$m$", "\\$m\\$"), ("q\\*", "q\\\\\\*"), ("x\\", "x\\\\"),
    ("<http://e.x>", "\\<http://e.x>"), ("name ##", "name \\##"), ("a\nb\r\nc", "a b c"),
])
def test_markdown_syntax_is_escaped(text, escaped):
    assert md_text(text) == escaped
    assert _text(_render(escaped)).strip() == " ".join(text.splitlines()).replace("\r", "")


@pytest.mark.parametrize("text, escaped", [
    ("# x", "\\# x"), ("> x", "\\> x"), ("- x", "\\- x"), ("+ x", "\\+ x"), ("* x", "\\* x"), ("1. x", "1\\. x"),
    ("12) x", "12\\) x"), ("[x]: http://e.x", "\\[x]: http://e.x"), ("= x", "\\= x"),
])
def test_a_line_start_that_opens_a_block_is_escaped(text, escaped):
    assert md_text(text, line=True) == escaped
    assert md_text(text) == text  # inside a line or a table cell it opens nothing
    assert _items(_render(f"- {escaped}\n")) == [text]


def test_the_committed_reference_report_regenerates_byte_for_byte():
    folder = REPO / "leaderboards" / "reference-cells"
    data = json.loads((folder / "leaderboard.json").read_text(encoding="utf-8"))
    # leaderboard.json writes its keys sorted; the report built them in the metrics' order
    data["units"] = {k: data["units"][k] for k in data["metrics"] if k in data["units"]}
    assert render_markdown(data) == (folder / "leaderboard.md").read_text(encoding="utf-8")


def test_the_committed_v2_report_renders_as_without_escapes(monkeypatch):
    data = json.loads((REPO / "leaderboards" / "nq-wiki-12k-v2" / "leaderboard.json").read_text(encoding="utf-8"))
    md = render_markdown(data)
    monkeypatch.setattr(report, "md_text", lambda text, line=False: str(text).replace("|", "\\|"))  # the old tables'
    assert md == render_markdown(data)


def _byo_report(work: Path, ids: dict[int, str], qfile: str, label: str, description: str) -> tuple[str, dict]:
    """A one-cell ToyLM leaderboard of a bring-your-own task over :data:`N` questions (question i's id ``ids[i]``, else
    ``q<i>``) in ``work/qfile``, its model labelled ``label``, run and reported with ``tokrag leaderboard report``;
    returns the report's (leaderboard.md, leaderboard.json)."""
    (work / "mytasks").mkdir(parents=True)
    (work / qfile).write_text("".join(
        json.dumps({"id": ids.get(i, f"q{i:03d}"), "question": f"who founded the town number {i}",
                    "answers": [f"Founder{i}"]}) + "\n" for i in range(N)), encoding="utf-8")
    (work / "passages.jsonl").write_text("".join(
        json.dumps({"id": f"p{i}", "title": f"Town {i}", "text": f"Town {i} was founded by Founder{i}."}) + "\n"
        for i in range(N)), encoding="utf-8")
    (work / "mytasks" / "towns.yaml").write_text(
        f"include: {RAG_QA}\ntask: towns\nmetadata:\n  version: 1.0\n  dataset: byo\n"
        f"  questions: {json.dumps(str(work / qfile))}\n  corpus: {json.dumps(str(work / 'passages.jsonl'))}\n",
        encoding="utf-8")
    write_spec(work, tasks=["towns"], include=work / "mytasks", limit=3,
               methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "first"}}],
               extra={"models": [{"name": "toy", "label": label}], "description": description})
    summary = run_spec(load_spec(work / "toy.yaml"), work / "runs", progress=False)
    assert summary.ran == ["toy/standard/towns/seed1"], summary
    out = work / "report"
    assert lb_main(["report", str(work / "toy.yaml"), "--runs-dir", str(work / "runs"), "--out", str(out),
                    "--no-timings", "--no-questions"]) == 0
    return ((out / "leaderboard.md").read_text(encoding="utf-8"),
            json.loads((out / "leaderboard.json").read_text(encoding="utf-8")))


def _questions_line(data: dict) -> str:
    (line,) = [x for x in data["models"][0]["contract"] if x.startswith("questions.towns")]
    return line


def _check_tables(page: str) -> list[list[list[str]]]:
    tables = _tables(page)
    assert tables
    for t in tables:  # no cell split or merged: every row as wide as its header
        assert {len(r) for r in t} == {len(t[0])}, t
    return tables


def test_a_leaderboard_with_plain_ids_renders_as_before(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKRAG_RUNS_DIR", raising=False)
    md, data = _byo_report(tmp_path / "plain", {}, "q.jsonl", "Toy v1", "Plain ids.")
    line = _questions_line(data)
    assert ("(14 held out by hash: 13 dev: q003, q006, q011, q020, q022, q026, q028, q054, q055, q063 and 3 more; "
            "1 few-shot: q113)") in line
    assert f"\n- {line}\n" in md  # as written
    page = _render(md)
    assert line in _items(page)
    _check_tables(page)
    # every escape left the plain report as it was: the same text without md_text (the tables' | escape kept)
    loaded = json.loads(json.dumps(data))
    monkeypatch.setattr(report, "md_text", lambda text, line=False: str(text).replace("|", "\\|"))
    assert md == render_markdown(_as_data(loaded))


def _as_data(d: dict) -> dict:
    """leaderboard.json as :func:`render_markdown` takes it: the units in the metrics' order (the JSON sorts keys)."""
    d["units"] = {k: d["units"][k] for k in d["metrics"] if k in d["units"]}
    return d


def test_a_leaderboard_with_markdown_in_its_ids_paths_and_labels_renders_them_as_written(tmp_path, monkeypatch):
    monkeypatch.delenv("TOKRAG_RUNS_DIR", raising=False)
    description = "Ids such as *q*, _q_ and <b>q</b>."
    md, data = _byo_report(tmp_path / "odd", ODD, ODD_FILE, ODD_LABEL, description)
    assert render_markdown(_as_data(json.loads(json.dumps(data)))) == md
    line = _questions_line(data)
    named = ", ".join(ODD[i] for i in DEV_AT[:10])
    assert f"(14 held out by hash: 13 dev: {named} and 3 more; 1 few-shot: {ODD[113]})" in line
    assert str(tmp_path / "odd" / ODD_FILE) in line
    page = _render(md)
    items = _items(page)
    assert line in items  # the contract line reads as the JSON's: no emphasis, no HTML, no link, no strikethrough
    assert f"- {md_text(line, line=True)}\n" in md
    for tag in ("<em>", "<s>", "<a ", "<b>", "<i>", "<del>"):
        assert tag not in page, tag
    assert re.findall(r"<h3>(.*?)</h3>", page) == [html.escape(ODD_LABEL, quote=False)]
    assert f"<h2>Fairness contract of {html.escape(ODD_LABEL, quote=False)}</h2>" in page
    assert f"<p>{html.escape(description, quote=False)}</p>" in page
    tables = _check_tables(page)
    prov = next(t for t in tables if t[0][0] == "cell")
    (row,) = prov[1:]
    assert any(cell.startswith(ODD_FILE + " ") or f"; {ODD_FILE} " in cell for cell in row), row
    results = next(t for t in tables if t[0][:3] == ["model", "method", "task"])
    assert [r[0] for r in results[1:]] == ["toy"]
