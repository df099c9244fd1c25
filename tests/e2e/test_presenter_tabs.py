"""Presenter mode at 1024x768 with the sidebar re-opened, the narrowest the Step page's tabs ever get (about 440 px):
every formula, table and metric of the tabs GLAD, MACE and IBCC fill stays whole, and Compare methods shows its
last row.

Screenshots land in tests/e2e/artifacts/presenter_tabs_<method>_<tab>.png.
"""

from __future__ import annotations

import pytest

from tests.e2e.helpers import ARTIFACTS, assert_no_exception, wait_idle, wait_page

pytestmark = pytest.mark.e2e

PROJECTOR = {"width": 1024, "height": 768}
METHODS = {
    "ds": "Dawid-Skene",
    "glad": "GLAD (ability and difficulty)",
    "mace": "MACE (competence and spamming)",
    "ibcc": "Bayesian Dawid-Skene (IBCC, variational)",
    "ebcc": "Correlated workers (EBCC, variational)",
}
TABS = ("Formulas", "Intervals", "Details", "Workers")

# what is cut in the main area: a formula wider than its box (KaTeX scrolls it), a table wider than the main column,
# text ellipsised or wider than its box (a metric's label or value)
CUT = """
() => {
  const main = document.querySelector('[data-testid="stMain"] [data-testid="stMainBlockContainer"]')
    || document.querySelector('[data-testid="stMain"]');
  const right = main.getBoundingClientRect().right;
  const shown = e => e.offsetParent !== null;
  const out = [];
  document.querySelectorAll('[data-testid="stMain"] .katex-display').forEach(e => {
    // what KaTeX draws (its .base boxes) against the box that shows it: a scroll width alone counts a 2 px spill
    // of a fraction's or a sum's margins that draws nothing
    const tex = e.querySelector('annotation');  // the LaTeX source KaTeX keeps beside what it draws
    const box = e.getBoundingClientRect();
    const ink = Array.from(e.querySelectorAll('.katex-html .base')).map(b => b.getBoundingClientRect());
    const over = Math.max(0, ...ink.map(b => b.right - box.right), ...ink.map(b => box.left - b.left));
    if (shown(e) && over > 1) out.push(['formula', (tex ? tex.textContent : '').slice(0, 70), Math.round(over)]);
  });
  document.querySelectorAll('[data-testid="stMain"] [data-testid="stDataFrame"]').forEach(e => {
    const r = e.getBoundingClientRect();
    if (shown(e) && r.right > right + 1) out.push(['table', '', Math.round(r.right - right)]);
  });
  document.querySelectorAll('[data-testid="stMain"] [data-testid="stMetric"] *').forEach(e => {
    if (shown(e) && (e.innerText || '').trim() && !e.children.length && e.scrollWidth - e.clientWidth > 1)
      out.push(['metric', e.innerText.trim().slice(0, 50), e.scrollWidth - e.clientWidth]);
  });
  document.querySelectorAll('[data-testid="stMain"] *').forEach(e => {
    if (shown(e) && getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth - e.clientWidth > 1
        && (e.innerText || '').trim()) out.push(['ellipsis', e.innerText.trim().slice(0, 50), 0]);
  });
  return out;
}
"""


def _shot(page, name: str) -> None:
    """The whole page at the projector's width: the viewport grows to the app's scroll height (the app scrolls
    inside a section), then goes back."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate(
        "() => Math.max(...Array.from(document.querySelectorAll('section, div')).map(e => e.scrollHeight))"
    )
    page.set_viewport_size({"width": PROJECTOR["width"], "height": min(int(height) + 50, 5000)})
    page.wait_for_timeout(400)
    page.screenshot(path=str(ARTIFACTS / f"presenter_tabs_{name}.png"))
    page.set_viewport_size(PROJECTOR)
    page.wait_for_timeout(400)


def _open_with_sidebar(page, server, path: str) -> None:
    page.set_viewport_size(PROJECTOR)
    page.goto(f"{server}{path}?present=1")
    wait_page(page)
    page.locator('[data-testid="stExpandSidebarButton"]').click()
    page.locator('[data-testid="stSidebar"]').get_by_text("Presenter mode").wait_for()
    wait_idle(page)
    right = "() => document.querySelector('[data-testid=\"stSidebar\"]').getBoundingClientRect().right"
    assert page.evaluate(right) > 200, "the sidebar did not open"


@pytest.mark.parametrize("method", list(METHODS))
def test_new_models_tabs_stay_whole_beside_the_sidebar(server, page, method):
    _open_with_sidebar(page, server, "/Step_through_EM")
    main = page.locator('[data-testid="stMain"]')
    main.locator('[data-testid="stExpander"] summary').filter(has_text="Method:").first.click()
    wait_idle(page)
    main.locator('[data-testid="stSelectbox"]').filter(has_text="Method").first.click()
    page.get_by_role("option", name=METHODS[method], exact=True).click()
    wait_idle(page)
    main.get_by_role("button", name="Step", exact=True).first.click()
    page.get_by_text("iteration 1, after M-step").first.wait_for()
    wait_idle(page)
    # the tabs a method has (issue 26: GLAD, MACE and IBCC have no Intervals tab, Dawid-Skene no Details tab)
    lacks = {"ds": ("Details",), "ebcc": ("Details", "Intervals")}.get(method, ("Intervals",))
    for tab in [t for t in TABS if t not in lacks]:
        page.get_by_role("tab", name=tab, exact=True).click()
        wait_idle(page)
        page.wait_for_timeout(600)  # KaTeX and the tables draw
        assert_no_exception(page)
        if tab == "Formulas":
            assert main.locator(".katex-display").count() > 3
        if tab == "Workers" or (tab == "Intervals" and method == "ds"):  # the new models' are elsewhere
            main.locator('[data-testid="stDataFrame"]').first.wait_for()
        if tab == "Details" and method in ("mace", "ibcc"):
            main.locator('[data-testid="stDataFrame"]').first.wait_for()
        _shot(page, f"{method}_{tab.lower()}")
        assert page.evaluate(CUT) == [], (method, tab, page.evaluate(CUT))


def test_compare_methods_shows_every_row_in_presenter_mode(server, page):
    """The results table's height was 35 px a row, which cut its last row (M-MSR) in presenter mode's taller rows."""
    _open_with_sidebar(page, server, "/Compare_methods")
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("button", name="Run all methods").click()
    table = main.locator('[data-testid="stDataFrame"]').first
    table.wait_for(timeout=120_000)
    wait_idle(page)
    page.wait_for_timeout(600)
    table.scroll_into_view_if_needed()
    # the grid draws only the rows in view; a table whose height is its content has no vertical scroll left
    inner = table.locator(".dvn-scroller").first
    left = inner.evaluate("e => e.scrollHeight - e.clientHeight")
    _shot(page, "compare")
    assert left <= 1, f"the results table hides {left} px of rows"
