"""At a projector's 1024 x 768, with the sidebar open, every formula line of "What just happened" fits its box
(KaTeX display math does not wrap: a line wider than its box is cut), and the likelihood surface draws."""

from __future__ import annotations

import re

import pytest

from tests.e2e.helpers import assert_no_exception, screenshot, wait_idle, wait_page

pytestmark = pytest.mark.e2e

PROJECTOR = {"width": 1024, "height": 768}

WIDTHS = """() => Array.from(document.querySelectorAll('.katex-display')).map(d => {
    const k = d.querySelector('.katex-html') || d;
    const box = d.closest('[data-testid="stVerticalBlock"]') || d.parentElement;
    return [k.scrollWidth, box.clientWidth, k.innerText.replace(/\\s+/g, '').slice(0, 60)];
})"""


def _tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    wait_idle(page)


@pytest.mark.parametrize(("dataset", "method"), [("Bluebirds", "Dawid-Skene"), ("Affective", "Good/bad annotators")])
def test_every_formula_line_fits_at_1024(server, page, dataset, method):
    page.set_viewport_size(PROJECTOR)
    page.goto(server)
    wait_page(page)
    if dataset != "Bluebirds":
        page.locator('[data-testid="stSelectbox"]').first.click()
        page.get_by_role("option").filter(has_text=dataset).first.click()
        wait_idle(page)
    page.locator('[data-testid="stSidebar"]').get_by_role("link").filter(has_text="Step through EM").first.click()
    wait_page(page)
    main = page.locator('[data-testid="stMain"]')
    if method not in main.locator('[data-testid="stExpander"] summary').filter(has_text="Method:").first.inner_text():
        main.locator('[data-testid="stExpander"] summary').filter(has_text="Method:").first.click()  # folded
        wait_idle(page)
        box = page.locator('[data-testid="stSelectbox"]').filter(has_text="Method").first
        box.click()
        page.get_by_role("option").filter(has_text=method).first.click()
        wait_idle(page)
    _tab(page, "Formulas")
    for button in ("E-step", "M-step"):
        page.get_by_role("button", name=re.compile(rf"^{button}")).click()  # the name ends with its shortcut key
        wait_idle(page)
        page.get_by_text("The next half-step").first.click()  # the expander: the narrowest box
        page.wait_for_timeout(500)
        widths = page.evaluate(WIDTHS)
        assert len(widths) >= 6
        cut = [w for w in widths if w[0] > w[1]]
        assert not cut, cut
    assert_no_exception(page)
    _tab(page, "Surface")
    page.locator(".js-plotly-plot").last.wait_for()
    assert page.get_by_text("start").count() >= 1
    assert_no_exception(page)
    screenshot(page, f"explain_{dataset.lower()}_surface")
