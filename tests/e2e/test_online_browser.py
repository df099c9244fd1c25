"""The "Batch vs online" page in a real headless Chromium: a click on the stepper reruns only the stepper's fragment,
so what must follow the run has to be drawn inside it. The step-size chart's "now" ring stayed where the last full
run left it (missing while stepping; at update 3 after a page switch while the run was at update 8).

Fixtures (a fresh ``streamlit run app.py`` and Debian's /usr/bin/chromium) come from conftest.py.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.helpers import assert_no_exception, screenshot, sidebar_link, wait_idle, wait_page

pytestmark = pytest.mark.e2e

# the stepper's step-size chart (keyed onl.eta_now_chart; the settings draw onl.eta_chart): its "now" trace (x, y)
# or None when shown, and how many step-size charts the page holds (shown or not)
ETA = """
() => { const all = Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'))
    .filter(p => ((p.layout.title || {}).text || '').includes('Step size'));
  const shown = Array.from(document.querySelectorAll('.st-key-onl-eta_now_chart .js-plotly-plot'))
    .filter(p => p.offsetParent !== null).map(p => {
      const now = p.data.find(t => t.meta === 'now');
      return now ? [Array.from(now.x)[0], Array.from(now.y)[0]] : null; });
  return {shown: shown, count: all.length}; }
"""


def _button(page, name: str) -> None:
    page.get_by_role("button", name=re.compile("^" + re.escape(name) + r"(\s|$)")).first.click()
    wait_idle(page)


def _eta_of_block(page) -> float:
    text = page.get_by_text(re.compile(r"ηₜ of this block = ")).first.inner_text()
    return float(re.search(r"ηₜ of this block = ([0-9]+\.[0-9]+)", text).group(1))


def test_step_size_marker_follows_every_step(server, page):
    page.goto(server + "/Batch_vs_online")
    wait_page(page)
    page.get_by_role("tab", name="Step size ηₜ").nth(1).click()  # the stepper's tab (the first is the settings')
    wait_idle(page)
    for t in range(1, 4):
        _button(page, "Step")
        eta = page.evaluate(ETA)
        assert eta["shown"] == [[t, pytest.approx(_eta_of_block(page), abs=5e-5)]], (t, eta)
        assert eta["count"] == 2, eta  # no chart piles up, hidden, per step
    sidebar_link(page, "Step through EM")
    sidebar_link(page, "Batch vs online")
    page.get_by_role("tab", name="Step size ηₜ").nth(1).click()
    wait_idle(page)
    for _ in range(5):
        _button(page, "Step")
    assert page.evaluate(ETA)["shown"] == [[8, pytest.approx(0.1765, abs=5e-5)]]
    _button(page, "E-step")  # the block of update 9, before its update
    assert page.evaluate(ETA)["shown"] == [[9, pytest.approx(_eta_of_block(page), abs=5e-5)]]
    assert_no_exception(page)
    screenshot(page, "batch_vs_online_eta_now")
