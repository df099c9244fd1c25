"""Presenter mode in a real headless Chromium at 1024x768 (a classroom projector): nothing cut off, the curves and
the main picture on the first screen, and the keyboard drives the stepper.

Fixtures (a fresh ``streamlit run app.py`` and Debian's /usr/bin/chromium) come from conftest.py. Screenshots of
the first screen land in tests/e2e/artifacts/presenter_<page>.png.
"""

from __future__ import annotations

import pytest

from tests.e2e.helpers import (
    ARTIFACTS,
    CHART_TEXT_OUT,
    assert_no_exception,
    assert_nothing_cut,
    iteration,
    wait_idle,
    wait_page,
)

pytestmark = pytest.mark.e2e

PROJECTOR = {"width": 1024, "height": 768}
# the stepping pages (URL path, the main picture's tab, the stepper's key prefix) and the home page
STEPPING = [
    ("/Step_through_EM", "Posterior"),
    ("/Sequences", "Strip view"),
    ("/Networks", "Graph"),
    ("/Learning_from_crowds", None),
    ("/Batch_vs_online", "Confusion matrices"),
]
STEPPER_BUTTONS = ("Back", "E-step", "M-step", "Next", "Step", "Run to convergence", "Reset", "Play")

# Every element of a kind, with its box and whether its text overflows its box (scrollWidth > clientWidth means
# the browser cut or ellipsised it). Plotly titles are checked against their chart's box.
MEASURE = """
(selector) => Array.from(document.querySelectorAll(selector)).filter(e => e.offsetParent !== null).map(e => {
  const r = e.getBoundingClientRect();
  const inner = e.querySelector('p, div') || e;
  return {text: (e.innerText || e.textContent || '').trim().slice(0, 60), left: r.left, right: r.right,
          top: r.top, bottom: r.bottom,
          overflow: Math.max(e.scrollWidth - e.clientWidth, inner.scrollWidth - inner.clientWidth)};
})
"""
CHART_TITLES = """
() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).map(p => {
  const t = p.querySelector('.gtitle');
  if (!t) return null;
  const c = p.getBoundingClientRect(), r = t.getBoundingClientRect();
  return {text: t.textContent.slice(0, 60), left: r.left - c.left, right: c.right - r.right};
}).filter(x => x)
"""


def _open(page, server, path: str) -> None:
    page.set_viewport_size(PROJECTOR)
    page.goto(f"{server}{path}?present=1")
    wait_page(page)
    page.wait_for_timeout(800)  # plotly lays out its charts
    wait_idle(page)
    assert_no_exception(page)


def _measure(page, selector: str) -> list[dict]:
    return page.evaluate(MEASURE, selector)


def _assert_whole(items: list[dict], what: str) -> None:
    assert items, f"no {what} found"
    for it in items:
        assert it["left"] >= -0.5 and it["right"] <= PROJECTOR["width"] + 0.5, f"{what} out of the screen: {it}"
        assert it["overflow"] <= 1, f"{what} cut off: {it}"


def _assert_titles_fit(page) -> None:
    for t in page.evaluate(CHART_TITLES):
        assert t["left"] >= -1 and t["right"] >= -1, f"chart title cut off: {t}"


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"presenter_{name}.png"))


@pytest.mark.parametrize(("path", "tab"), STEPPING, ids=[p.strip("/").lower() for p, _ in STEPPING])
def test_stepping_pages_fit_a_projector_in_presenter_mode(server, page, path, tab):
    _open(page, server, path)
    sidebar = page.evaluate(
        "() => { const s = document.querySelector('[data-testid=\"stSidebar\"]'); "
        "if (!s) return 0; const r = s.getBoundingClientRect(); return Math.max(0, Math.min(r.right, 1024) - r.left); }"
    )
    assert sidebar < 5, f"the sidebar takes {sidebar} px of the projector"  # folded away
    _assert_whole(_measure(page, '[data-testid="stMain"] h1'), "page title")
    main = page.locator('[data-testid="stMain"]')
    for name in STEPPER_BUTTONS:
        button = main.get_by_role("button", name=name, exact=False).first
        box = button.bounding_box()
        assert box and box["y"] + box["height"] <= PROJECTOR["height"], f"{name} is below the first screen: {box}"
    _assert_whole(_measure(page, '[data-testid="stMain"] [data-testid="stButton"] button'), "button")
    _assert_whole(_measure(page, '[data-testid="stMain"] [data-testid="stTab"]'), "tab label") if tab else None
    _assert_titles_fit(page)
    assert_nothing_cut(page, path)
    # the objective curve and the main picture start on the first screen
    charts = page.evaluate(
        "() => Array.from(document.querySelectorAll('[data-testid=\"stMain\"] .js-plotly-plot'))"
        ".map(p => { const r = p.getBoundingClientRect(); return {top: r.top, left: r.left, "
        "title: (p.querySelector('.gtitle') || {}).textContent || ''}; })"
    )
    objective = [c for c in charts if c["title"].startswith("Objective")]
    assert objective and objective[0]["top"] < PROJECTOR["height"] - 200, charts
    beside = [c for c in charts if c["left"] > PROJECTOR["width"] * 0.3 and c["top"] < PROJECTOR["height"] - 200]
    assert beside, f"no main picture beside the curves on the first screen: {charts}"
    _shot(page, path.strip("/").lower())
    # the settings, folded in presenter mode: in its larger font, every choice whole (the dataset's expander is the
    # same in both modes; the test at 1024 px with the sidebar open opens it)
    folded = page.locator('[data-testid="stMain"] [data-testid="stExpander"] summary')
    for i in range(folded.count()):
        if not folded.nth(i).inner_text().startswith("Dataset"):
            folded.nth(i).click()
            wait_idle(page)
    assert_nothing_cut(page, f"{path}, settings open")


# (page, the method to pick in the folded settings): the Step page with the longest objective name (IBCC's ELBO),
# the pages whose objectives have six-digit tick labels (the x-axis title lost its ")" beside them), and Batch vs
# online, whose long legend entries ran past the edge
REOPENED = [
    ("/Step_through_EM", "Bayesian Dawid-Skene (IBCC, variational)"),
    ("/Sequences", None),
    ("/Networks", None),
    ("/Batch_vs_online", None),
]


@pytest.mark.parametrize(("path", "method"), REOPENED, ids=[p.strip("/").lower() for p, _ in REOPENED])
def test_curve_titles_stay_whole_when_the_sidebar_is_reopened(server, page, path, method):
    """Presenter mode starts with the sidebar folded; a lecturer who opens it again (for the toggle, or another
    page) narrows the curves' column to about 215 px: their titles and axis titles stay inside their charts."""
    _open(page, server, path)
    main = page.locator('[data-testid="stMain"]')
    if method:
        main.locator('[data-testid="stExpander"] summary').filter(has_text="Method:").first.click()
        wait_idle(page)
        main.locator('[data-testid="stSelectbox"]').filter(has_text="Method").first.click()
        page.get_by_role("option", name=method, exact=True).click()
        wait_idle(page)
    main.get_by_role("button", name="Step", exact=True).first.click()
    after = "block 1 of" if path == "/Batch_vs_online" else "iteration 1, after M-step"
    page.get_by_text(after).first.wait_for()
    wait_idle(page)
    page.locator('[data-testid="stExpandSidebarButton"]').click()
    page.locator('[data-testid="stSidebar"]').get_by_text("Presenter mode").wait_for()
    wait_idle(page)
    page.wait_for_timeout(800)  # plotly lays out its charts for the narrower column
    sidebar = page.evaluate("() => document.querySelector('[data-testid=\"stSidebar\"]').getBoundingClientRect().right")
    assert sidebar > 200, f"the sidebar did not open: {sidebar}"
    titles = [t["text"] for t in page.evaluate(CHART_TITLES)]
    assert any(t.startswith("Objective") for t in titles), titles
    _assert_titles_fit(page)
    out = page.evaluate(CHART_TEXT_OUT)
    assert out == [], ("chart text cut at its chart's edge", out)
    main.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    _shot(page, f"{path.strip('/').lower()}_sidebar_open")


def test_confusion_matrix_numbers_are_readable_in_presenter_mode(server, page):
    _open(page, server, "/Step_through_EM")
    page.get_by_role("tab", name="Workers").click()
    page.locator('[data-testid="stMain"] .js-plotly-plot .heatmaplayer text').first.wait_for()
    wait_idle(page)
    sizes = page.evaluate(
        "() => Array.from(document.querySelectorAll('[data-testid=\"stMain\"] .js-plotly-plot .heatmaplayer text'))"
        ".map(t => parseFloat(getComputedStyle(t).fontSize))"
    )
    assert sizes and min(sizes) >= 14, sizes
    _shot(page, "step_workers")


def test_home_page_counts_are_whole_at_1024(server, page):
    _open(page, server, "/")
    _assert_whole(_measure(page, '[data-testid="stMetricValue"]'), "metric value")
    values = [m["text"] for m in _measure(page, '[data-testid="stMetricValue"]')]
    assert "4,212" in values and not any(v.endswith("...") or v.endswith("…") for v in values), values
    _shot(page, "home")


def test_arrow_keys_move_one_half_step(server, page):
    _open(page, server, "/Step_through_EM")
    assert iteration(page) == (0, "initialisation")
    page.locator('[data-testid="stMain"] h1').first.click()  # focus the page, not an input
    page.keyboard.press("ArrowRight")
    page.get_by_text("iteration 1, after E-step").first.wait_for()
    wait_idle(page)
    page.keyboard.press("ArrowRight")
    page.get_by_text("iteration 1, after M-step").first.wait_for()
    wait_idle(page)
    page.keyboard.press("ArrowLeft")  # back one half-step: "after E"
    page.get_by_text("iteration 1, after E-step").first.wait_for()
    wait_idle(page)
    assert iteration(page) == (1, "after E-step")
    assert_no_exception(page)


def test_play_advances_half_steps_on_its_own_and_pause_stops(server, page):
    _open(page, server, "/Step_through_EM")
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("button", name="Play").first.click()
    page.get_by_text("iteration 1, after E-step").first.wait_for()
    page.get_by_text("iteration 1, after M-step").first.wait_for(timeout=10_000)  # the timer's next half-step
    page.get_by_text("iteration 2, after E-step").first.wait_for(timeout=10_000)
    main.get_by_role("button", name="Pause").first.click()
    wait_idle(page)
    page.wait_for_timeout(500)
    stopped = iteration(page)
    page.wait_for_timeout(2500)  # more than two half-steps at 1 s each
    assert iteration(page) == stopped
    assert_no_exception(page)
