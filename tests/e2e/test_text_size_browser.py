"""Readable from the back row: in presenter mode at 1024x768 no visible text on any page (pages/*.py and app.py)
is under 16 px, HTML or SVG (plotly's legends, ticks, colour bars, annotations, cell numbers; the sequence strip's
digits; widget labels, buttons, code, a formula's subscripts). One visit a page, measured after its first render.

Left out: KaTeX's MathML copy of a formula (for screen readers; clipped to 1 px, never drawn) and zero-width
spaces (KaTeX's layout struts). Screenshots: tests/e2e/artifacts/text_size_<page>.png."""

from __future__ import annotations

import pytest

from tests.e2e.helpers import ARTIFACTS, assert_no_exception, wait_idle

pytestmark = pytest.mark.e2e

PROJECTOR = {"width": 1024, "height": 768}
MIN_PX = 16
PAGES = [
    "",
    "Lessons",
    "Data",
    "Step_through_EM",
    "Compare_methods",
    "Priors_and_initialisations",
    "Export",
    "Sequences",
    "Networks",
    "Error_rates_without_labels",
    "Learning_from_crowds",
    "Batch_vs_online",
    "Class",
    "Join",
]

CHARTS_DRAWN = """
() => Array.from(document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stPlotlyChart"], .cl-live-chart)'))
  .every(c => c.querySelector('.main-svg'))
"""
# every visible text node (a box on the page, not hidden, not off to the side like the folded sidebar) whose
# element's computed font size is under the minimum: [text, px, where]
SMALL_TEXT = """
(minPx) => {
  const out = [], W = window.innerWidth;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, text = node.textContent.replace(/\\u200b/g, '').trim();
    const e = node.parentElement;
    if (!text || !e || ['SCRIPT', 'STYLE', 'NOSCRIPT', 'TITLE'].includes(e.tagName)) continue;
    if (e.closest('.katex-mathml')) continue;
    if (!e.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    const r = e.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || r.right <= 0 || r.left >= W) continue;
    const px = parseFloat(getComputedStyle(e).fontSize);
    if (px < minPx - 0.05) {
      const where = (e.closest('[data-testid]') || {dataset: {}}).dataset.testid || '';
      const cls = e.getAttribute('class') || '';
      out.push([text.slice(0, 40), Math.round(px * 100) / 100, `${where} ${e.tagName}.${cls}`]);
    }
  }
  return out;
}
"""


def test_no_text_under_16_px_in_presenter_mode(server, browser):
    context = browser.new_context(viewport=PROJECTOR)
    page = context.new_page()
    page.set_default_timeout(30_000)
    small: dict[str, list] = {}
    try:
        for name in PAGES:
            page.goto(f"{server}/{name}?present=1")
            page.locator('[data-testid="stMain"] h1').first.wait_for()
            wait_idle(page)
            if name != "Join":  # the student's phone page has no presenter mode (its own CSS)
                # presenter mode's CSS in force (a rerun may redraw the sidebar that carries it)
                page.wait_for_function("() => getComputedStyle(document.documentElement).fontSize === '17px'")
            page.wait_for_function(CHARTS_DRAWN)  # every chart drawn (not its grey placeholder)
            page.wait_for_timeout(500)  # plotly lays out its charts
            assert_no_exception(page)
            found = page.evaluate(SMALL_TEXT, MIN_PX)
            if found:
                small[name or "home"] = found[:8] + ([f"... {len(found)} in all"] if len(found) > 8 else [])
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"text_size_{(name or 'home').lower()}.png"))
    finally:
        context.close()
    assert small == {}, small
