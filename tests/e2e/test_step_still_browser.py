"""Nothing jumps: the Step page's charts stay where they are on the first Step click (the scrubber used to appear
and the position's caption to get shorter, which moved the page by 25 px under the lecturer's pointer). Presenter
mode at 1024x768 and normal mode at 1400 px."""

from __future__ import annotations

import pytest

from tests.e2e.helpers import assert_no_exception, wait_idle, wait_page

pytestmark = pytest.mark.e2e

CHART_TOPS = """
() => Array.from(document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stPlotlyChart"], .cl-live-chart)'))
  .filter(c => c.offsetParent).map(c => Math.round(c.getBoundingClientRect().top * 10) / 10)
"""
CHARTS_DRAWN = """
() => { const c = Array.from(document.querySelectorAll(
    '[data-testid="stMain"] :is([data-testid="stPlotlyChart"], .cl-live-chart)'));
  return c.length > 0 && c.every(x => x.querySelector('.main-svg')); }
"""


def _tops(page) -> list[float]:
    page.wait_for_function(CHARTS_DRAWN)
    page.wait_for_timeout(400)
    return page.evaluate(CHART_TOPS)


@pytest.mark.parametrize("present", [True, False], ids=["presenter", "normal"])
def test_the_first_step_moves_no_chart(server, page, present):
    if present:
        page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{server}/Step_through_EM{'?present=1' if present else ''}")
    wait_page(page)
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("button", name="Reset", exact=False).first.wait_for()
    if main.get_by_text("iteration 0, initialisation").count() == 0:  # a fresh session starts at 0
        pytest.fail("the Step page did not open at its start")
    before = _tops(page)
    main.get_by_role("button", name="Step", exact=True).click()
    page.get_by_text("iteration 1, after M-step").first.wait_for()
    wait_idle(page)
    after = _tops(page)
    assert_no_exception(page)
    assert len(before) == len(after) >= 2, (before, after)
    moved = [round(b - a, 1) for a, b in zip(before, after)]
    assert all(abs(m) <= 2 for m in moved), f"charts moved by {moved} px (tops before {before}, after {after})"


HEADER = """
() => { const h = document.querySelector('[data-testid="stHeader"]').getBoundingClientRect();
  const b = document.querySelector('[data-testid="stExpandSidebarButton"]').getBoundingClientRect();
  const main = document.querySelector('[data-testid="stMain"]');
  return {header: [h.top, h.bottom], button: [b.top, b.bottom], scrolled: main.scrollTop,
          bg: getComputedStyle(document.querySelector('[data-testid="stHeader"]')).backgroundColor}; }
"""


def test_the_folded_sidebar_button_keeps_to_its_own_strip(server, page):
    """Presenter mode folds the sidebar; its button sat on a transparent header, so the page scrolled under it and
    the button floated over the charts' titles. The header is opaque and holds the button whole."""
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{server}/Step_through_EM?present=1")
    wait_page(page)
    page.mouse.move(600, 500)
    page.mouse.wheel(0, 350)
    page.wait_for_timeout(500)
    info = page.evaluate(HEADER)
    assert info["scrolled"] > 100, info
    assert info["bg"] not in ("transparent", "rgba(0, 0, 0, 0)"), info
    assert info["header"][0] <= info["button"][0] and info["button"][1] <= info["header"][1], info
