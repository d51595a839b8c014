"""The HTML report in a real browser: headless Chromium (the distribution's package, ``apt-get install
chromium``) driven by Playwright's Python API.

Checks that the page opens on the pivot table, that a plot is visible (loaded PNG), that clicking a
header re-sorts the pivot (ascending, then descending), that a per-question page shows Tok-RAG tokens
with their scores on hover, and that no script error is logged; saves screenshots under the run
folder (and under ``$TOKRAG_SCREENSHOT_DIR`` when set: ``.ci/run`` checks they exist). The test skips
only when Chromium or Playwright is truly unavailable, and fails instead under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from leaderboard_helpers import TOY, write_spec

from leaderboards.report import build_report
from leaderboards.runner import run_spec
from leaderboards.spec import load_spec

# Playwright adds --headless (headless=True) and a fresh temporary --user-data-dir on every launch.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def chromium_or_skip() -> str:
    """Path of the Chromium binary (skip, or fail under CI=true, when it or Playwright is missing)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        exe, why = None, "Playwright is not installed (pip install -e '.[test]')"
    else:
        why = "chromium is not installed (apt-get install chromium)"
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser test cannot run in CI: {why}")
        pytest.skip(why)
    return exe


def _rows(table) -> list[str]:
    return [r.locator("td").first.inner_text().strip() for r in table.locator("tbody tr").all()]


def test_report_in_headless_chromium(tmp_path):
    exe = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    methods = [{"name": "standard", "model": TOY, "model_args": {"mode": "first", "trace": "tokens"}},
               {"name": "none", "model": TOY, "model_args": {"mode": "none"}}]
    spec = load_spec(write_spec(tmp_path, methods=methods, extra={"reference": ["standard", "none"], "closed_book": "none"}))
    runs = tmp_path / "runs"
    run_spec(spec, runs, progress=False)
    out = build_report(spec, runs, runs / "reports" / spec.name, timings=False)
    shots = [runs / "screenshots"] + ([Path(os.environ["TOKRAG_SCREENSHOT_DIR"])] if os.environ.get("TOKRAG_SCREENSHOT_DIR") else [])
    for d in shots:
        d.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1600})
            page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
            page.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
            page.goto((out / "index.html").as_uri())
            # the page opens on the pivot: the first table, visible without scrolling
            pivot = page.locator("table.pivot").first
            assert pivot.is_visible() and page.locator("table").first.get_attribute("class") == "sortable pivot"
            box = pivot.bounding_box()
            assert box is not None and box["y"] < 1600
            assert _rows(pivot) == ["standard", "none"]
            assert pivot.locator("tbody tr").first.locator("b").first.inner_text() == "0.750"  # best in bold
            # at least one plot is visible and its PNG loaded
            plot = page.locator('img[src="robustness_toy_qa.png"]')
            assert plot.is_visible() and page.evaluate("document.querySelector('img[src=\"robustness_toy_qa.png\"]').naturalWidth") > 100
            # clicking a header re-sorts: toy_qa answer match ascending, then descending, then by method name
            head = pivot.locator("thead th").nth(1)
            head.click()
            assert _rows(pivot) == ["none", "standard"] and head.get_attribute("aria-sort") == "ascending"
            head.click()
            assert _rows(pivot) == ["standard", "none"] and head.get_attribute("aria-sort") == "descending"
            pivot.locator("thead th").nth(0).click()
            assert _rows(pivot) == ["none", "standard"]
            for d in shots:
                page.screenshot(path=str(d / "leaderboard_index.png"))
            # a per-question page: expand a question, hover a Tok-RAG token
            page.goto((out / "questions" / "toy_qa.html").as_uri())
            page.locator("details#q5 summary").click()
            tok = page.locator("details#q5 span.tok-R").first
            assert tok.is_visible() and tok.inner_text() == "green"
            assert tok.get_attribute("title") == "RAG branch: S_R 0.9000, S_L 0.5000, layer 12"
            assert page.locator("details#q5 li.gold").first.is_visible()
            for d in shots:
                page.screenshot(path=str(d / "leaderboard_question.png"))
        finally:
            browser.close()
    assert errors == []
    for d in shots:
        for name in ("leaderboard_index.png", "leaderboard_question.png"):
            assert (d / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (d / name).stat().st_size > 20_000
