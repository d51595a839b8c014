"""``md_text(..., line=True)`` at a line start (s57 r1, review of f1's a2dbb28).

f1's escape checked a block marker only at the text's first character, so a line that began with spaces or a tab
kept its marker: four spaces (or a tab) before the text made an indented code block (``    <b>q</b>`` rendered as
code, with its backslashes shown), ``  > x`` a block quote and `` * x`` a nested empty list; and a text of dashes only
(``--`` after the list's ``- ``, ``---`` as a paragraph) became a thematic break (``<hr>``), its text gone. Now the
leading spaces and tabs are dropped (Markdown shows none of them) before the start is checked, and a text of dashes
only gets its first dash escaped. The rendered text is read back with markdown-it-py (installed with rich).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from leaderboards.report import md_text, render_markdown

REPO = Path(__file__).resolve().parents[1]


def _render(md: str) -> str:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


@pytest.mark.parametrize("text, escaped", [
    ("    <b>q</b>", "\\<b>q\\</b>"), ("\tq*1", "q\\*1"), ("  > x", "\\> x"), (" * x", "\\* x"), ("   - x", "\\- x"),
    ("  # x", "\\# x"), ("\t1. x", "1\\. x"), ("  plain", "plain"), ("--", "\\--"), ("---", "\\---"),
    ("- - -", "\\- - -"), (" -- ", "\\-- "), ("-- x", "-- x"), ("--limit 3", "--limit 3"),
])
def test_a_line_start_after_spaces_or_of_dashes_is_escaped(text, escaped):
    assert md_text(text, line=True) == escaped
    item = _render(f"- {escaped}\n")
    assert "<pre>" not in item and "<hr" not in item and "<blockquote>" not in item
    assert [_text(x) for x in re.findall(r"<li>(.*?)</li>", item, flags=re.S)] == [" ".join(text.split())]
    para = _render(f"# h\n\n{escaped}\n\nend\n")
    assert re.findall(r"<p>(.*?)</p>", para, flags=re.S)[0] == html.escape(text.strip(" \t"), quote=False)


def test_inside_a_line_or_a_cell_nothing_changes():
    for text in ("    <b>q</b>", "--", "  > x", "---"):
        assert md_text(text) == text.replace("<b>", "\\<b>").replace("</b>", "\\</b>")


@pytest.mark.parametrize("description", ["    Ids such as <b>q</b> and *q*.", "---", "\t> quoted"])
def test_a_spec_description_renders_as_written(description):
    """The committed reference-cells report, its description replaced: the paragraph under the title reads as the
    description (no code block, no rule, no quote), and every other line is as committed."""
    folder = REPO / "leaderboards" / "reference-cells"
    data = json.loads((folder / "leaderboard.json").read_text(encoding="utf-8"))
    data["units"] = {k: data["units"][k] for k in data["metrics"] if k in data["units"]}
    committed = (folder / "leaderboard.md").read_text(encoding="utf-8").split("\n")
    md = render_markdown({**data, "description": description}).split("\n")
    assert data["description"] and md[:2] == committed[:2] and md[3:] == committed[3:]
    page = _render("\n".join(md))
    first = page.split("</h1>\n", 1)[1].split("\n", 1)[0]
    assert first == "<p>" + html.escape(description.strip(" \t"), quote=False) + "</p>"
