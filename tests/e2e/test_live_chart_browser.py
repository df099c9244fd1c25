"""Charts that move: every stepping chart is mounted once and updated in place (crowdlab.ui.live_chart).

At 1024x768 in presenter mode, a Step click on the Step page remounts no chart, draws each changed chart once (at
most 3 draws for the three charts on the first screen) and creates at most 1,000 DOM nodes (st.plotly_chart: 9
draws and ~8,000 nodes a click). These are counts, not timings: they do not depend on the machine's load. The
browser asks for reduced motion, as the tests do, so that no animation frame is counted.

Play in a lesson's free controls redraws the lesson's own chart at every half-step: sampled while it plays, the
chart's data change at least 10 times (they stayed frozen at iteration ½ while Play ran inside a collapsed panel).
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.helpers import ARTIFACTS, assert_no_exception, screenshot, wait_idle, wait_page

pytestmark = pytest.mark.e2e

PROJECTOR = {"width": 1024, "height": 768}
# counts what a click adds to the page: every new element node, and every new plotly graph (a mount)
PROBE = """() => { window.__clAdded = 0; window.__clGraphs = 0;
  new MutationObserver(ms => { for (const m of ms) for (const n of m.addedNodes) { if (n.nodeType !== 1) continue;
    window.__clAdded += 1 + n.getElementsByTagName('*').length;
    if (n.classList.contains('js-plotly-plot')) window.__clGraphs += 1;
    window.__clGraphs += n.querySelectorAll('.js-plotly-plot').length; } })
  .observe(document.body, {childList: true, subtree: true}); }"""
STATS = "() => JSON.parse(JSON.stringify(Object.assign({added: window.__clAdded, graphs: window.__clGraphs}, " \
    "window.__crowdlabCharts || {})))"  # fmt: skip


@pytest.fixture()
def still(browser):
    """A projector-sized page that asks for reduced motion (no animation frames to count)."""
    context = browser.new_context(viewport=PROJECTOR, reduced_motion="reduce")
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    context.close()


def _settle(page, label: str) -> None:
    page.get_by_text(label).first.wait_for()
    wait_idle(page)
    page.wait_for_timeout(500)


def test_a_step_click_remounts_nothing_and_draws_each_changed_chart_once(server, still):
    page = still
    page.goto(f"{server}/Step_through_EM?present=1")
    wait_page(page)
    page.wait_for_function("() => window.__crowdlabCharts && window.__crowdlabCharts.draws >= 3")
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("button", name="Step", exact=True).click()  # the first Step also brings the scrubber
    _settle(page, "iteration 1, after M-step")
    page.evaluate(PROBE)
    per_click = []
    for k in range(2, 5):
        before = page.evaluate(STATS)
        main.get_by_role("button", name="Step", exact=True).click()
        _settle(page, f"iteration {k}, after M-step")
        after = page.evaluate(STATS)
        keys = set(after["byKey"]) | set(before["byKey"])
        draws = {
            key: after["byKey"].get(key, {}).get("draws", 0) - before["byKey"].get(key, {}).get("draws", 0)
            for key in keys
        }
        per_click.append(
            {
                "mounts": after["mounts"] - before["mounts"],
                "graphs": after["graphs"] - before["graphs"],
                "draws": draws,
                "nodes": after["added"] - before["added"],
            }
        )
    screenshot(page, "live_chart_step")
    assert_no_exception(page)
    for click in per_click:
        assert click["mounts"] == 0 and click["graphs"] == 0, per_click  # nothing remounted
        assert all(n <= 1 for n in click["draws"].values()), per_click  # one draw per changed chart
        assert sum(click["draws"].values()) <= 3, per_click
        assert click["nodes"] <= 1000, per_click
    assert sum(sum(c["draws"].values()) for c in per_click) >= 6  # the charts did change


def test_play_in_a_lesson_moves_the_lessons_chart(server, still):
    page = still
    page.goto(f"{server}/Lessons?present=1")
    wait_page(page)
    main = page.locator('[data-testid="stMain"]')
    # the EM lecture, step 5: a Dawid-Skene run on bluebirds from the majority vote (50 half-steps to its end)
    main.get_by_role("button", name="Start: assume everyone is good").click()
    wait_idle(page)
    for n in range(2, 6):
        main.locator("h1").first.click()
        page.keyboard.press("ArrowRight")
        main.get_by_text(f"step {n} of").first.wait_for()
        wait_idle(page)
    main.get_by_role("button", name="Start from the majority vote").click()
    wait_idle(page)
    main.get_by_text("Step freely on this run").click()
    wait_idle(page)
    page.wait_for_function(
        "() => document.querySelector('.cl-live-chart') && document.querySelector('.cl-live-chart').data"
    )
    # (null while the chart is being replaced: Play's start and end swap the stepper's fragment)
    read = """() => { const g = document.querySelector('.cl-live-chart');
      return g && g.data ? JSON.stringify(g.data.map(t => [t.x, t.y, t.z])) : null; }"""
    main.get_by_role("button", name="Play").first.click()
    seen, t0 = [], time.monotonic()
    while time.monotonic() - t0 < 25 and len(set(seen)) < 12:
        seen.append(page.evaluate(read))
        page.wait_for_timeout(400)
    screenshot(page, "live_chart_lesson_play")
    assert_no_exception(page)
    seen = [s for s in seen if s is not None]
    changes = sum(1 for a, b in zip(seen, seen[1:], strict=False) if a != b)
    assert changes >= 10, f"the lesson's chart changed {changes} times in {len(seen)} samples"


SCROLL_TOP = (
    "() => { window.scrollTo(0, 0); for (const e of document.querySelectorAll('*')) if (e.scrollTop) e.scrollTop = 0;"
    " return document.querySelector('[data-testid=\"stMain\"] h1').getBoundingClientRect().top; }"
)
FIRST_SCREEN = """() => Array.from(document.querySelectorAll('.cl-live-chart')).map(g => {
  const r = g.getBoundingClientRect(); return [g.dataset.key, Math.round(r.top), Math.round(r.height)]; })"""


@pytest.mark.parametrize(
    ("mode", "viewport"), [("presenter", PROJECTOR), ("normal", {"width": 1280, "height": 800})], ids=str
)
def test_the_curve_and_the_main_picture_are_on_the_first_screen(server, browser, mode, viewport):
    """After a Step, the objective curve and the model's main picture (the first chart of the panels) each show
    at least 200 px on the first screen, for DS, GLAD, MACE, IBCC and EBCC: presenter mode at 1024x768 and normal
    mode at 1280x800 (no chart at all was on it in normal mode: method row, gold slider, buttons, a lone speed box)."""
    context = browser.new_context(viewport=viewport, reduced_motion="reduce")
    page = context.new_page()
    page.set_default_timeout(30_000)
    suffix = "?present=1" if mode == "presenter" else ""
    page.goto(f"{server}/Step_through_EM{suffix}")
    wait_page(page)
    main = page.locator('[data-testid="stMain"]')
    seen = {}
    for method in ("Dawid-Skene", "GLAD", "MACE", "Bayesian Dawid-Skene (IBCC, variational)", "EBCC"):
        summary = main.locator('[data-testid="stExpander"] summary').filter(has_text="Method:").first
        box = main.locator('[data-testid="stSelectbox"]').filter(has_text="Method").first
        if not box.is_visible():
            summary.click()
            wait_idle(page)
        box.click()
        page.get_by_role("option", name=method).first.click()
        wait_idle(page)
        summary.click()  # fold the settings again, as they start
        wait_idle(page)
        main.get_by_role("button", name="Step", exact=True).click()
        main.get_by_text("iteration 1, after M-step").first.wait_for()
        wait_idle(page)
        page.wait_for_timeout(500)
        page.evaluate(SCROLL_TOP)  # back to the first screen (the app scrolls inside its own section)
        page.wait_for_timeout(300)
        assert 0 <= page.evaluate(SCROLL_TOP) < 120, "the page is not at its top"  # the title is on the screen
        charts = page.evaluate(FIRST_SCREEN)
        seen[method] = charts
        curve = [c for c in charts if c[0] == "stepper.objective_chart"]
        picture = [
            c for c in charts if c[0].startswith("stepper.") and "objective" not in c[0] and "metric" not in c[0]
        ]
        assert curve and picture, (method, charts)
        h = viewport["height"]
        assert curve[0][1] <= h - 200, (mode, method, charts)
        assert picture[0][1] <= h - 200, (mode, method, charts)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)  # the first screen only (the helper grows the viewport)
        page.screenshot(path=str(ARTIFACTS / f"first_screen_{mode}_{method.split()[0].lower()}.png"))
    assert_no_exception(page)
    context.close()
