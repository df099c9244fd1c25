"""Every lesson step on one screen: in presenter mode at the projector's 1024 x 768, after a step's button, the
step's chart is at least 90 % visible without scrolling, its outcome sentence and Previous / Next are whole on the
first screen, and no visible text (HTML or the chart's SVG: ticks, legends, cell numbers) is under 16 px, for every
step of every lesson (stacked under the narration, formula, buttons and outcome, a median 47 % of the chart was); a
lesson's last step offers the next lesson (its Next is "Next lesson", and → goes there), with no tooltip that
covers the step's own button. A screenshot of the first screen of every step lands in
tests/e2e/artifacts/lesson_<lesson>_<step>.png."""

from __future__ import annotations

import pytest

from crowdlab.teaching import lessons
from tests.e2e.helpers import ARTIFACTS, assert_no_exception, wait_idle, wait_page
from tests.e2e.test_text_size_browser import MIN_PX, SMALL_TEXT

pytestmark = pytest.mark.e2e

PROJECTOR = {"width": 1024, "height": 768}
VISIBLE = 0.9
CHART = '[data-testid="stMain"] :is([data-testid="stPlotlyChart"], .cl-live-chart)'
# the share of the lesson's chart (its first chart, plotly's or the live one, drawn) inside the window
SHARE = f"""
() => {{ const p = Array.from(document.querySelectorAll('{CHART}'))
    .find(e => e.offsetParent !== null && e.querySelector('.main-svg'));
  if (!p) return null;
  const r = p.getBoundingClientRect();
  const w = Math.max(0, Math.min(r.right, innerWidth) - Math.max(r.left, 0));
  const h = Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
  return {{share: (w * h) / (r.width * r.height), top: Math.round(r.top), bottom: Math.round(r.bottom)}}; }}
"""
# the bottoms of the outcome and of Previous / Next (null: not on the page)
BOTTOMS = """
() => Object.fromEntries(['.st-key-lesson_outcome', '.st-key-lesson-prev button', '.st-key-lesson-next button']
  .map(s => { const e = document.querySelector('[data-testid="stMain"] ' + s);
    return [s, e && e.offsetParent !== null ? Math.round(e.getBoundingClientRect().bottom) : null]; }))
"""
# whether the point at the middle of the step's button belongs to it (a tooltip over it would take the click)
ACTION_ON_TOP = """
() => { const b = document.querySelector('[data-testid="stMain"] .st-key-lesson-action button');
  const r = b.getBoundingClientRect(), e = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
  return !!e && b.contains(e); }
"""


# display formulas wider than their box, by how many px
FORMULA_CUT = """
() => Array.from(document.querySelectorAll('[data-testid="stMain"] .katex-display')).filter(e => e.offsetParent)
  .map(e => { const k = e.querySelector('.katex-html') || e; const r = k.getBoundingClientRect(),
    b = e.parentElement.getBoundingClientRect(); return Math.round(r.right - b.right); }).filter(d => d > 1)
"""


def test_every_lesson_step_has_its_chart_on_the_first_screen(server, page):
    page.set_viewport_size(PROJECTOR)
    page.goto(server + "/Lessons?present=1")
    wait_page(page)
    main = page.locator('[data-testid="stMain"]')
    action = main.locator(".st-key-lesson-action button")
    short, cut, below, small, covered = [], [], [], [], []
    order = list(lessons.LESSONS)
    for li, key in enumerate(order):
        lesson = lessons.LESSONS[key]
        for i in range(len(lesson.steps)):
            main.get_by_text(f"step {i + 1} of {len(lesson.steps)}").wait_for()
            wait_idle(page)  # the step drawn in full (its button too)
            page.mouse.move(5, 760)  # no tooltip over the screenshot
            assert lesson.title in main.inner_text()
            if action.is_enabled():
                action.click()
                wait_idle(page)
            page.wait_for_function(f"({SHARE})() !== null")
            page.wait_for_timeout(300)  # plotly lays out its chart
            wait_idle(page)
            assert_no_exception(page)
            m = page.evaluate(SHARE)
            assert m is not None, (key, i + 1, "no chart after the step's button")
            page.screenshot(path=str(ARTIFACTS / f"lesson_{key}_{i + 1:02d}.png"))
            wide = page.evaluate(FORMULA_CUT)
            if wide:
                cut.append((key, i + 1, wide))
            if m["share"] < VISIBLE:
                short.append((key, i + 1, round(m["share"], 2), m["top"], m["bottom"]))
            low = {s: b for s, b in page.evaluate(BOTTOMS).items() if b is None or b > PROJECTOR["height"]}
            if low:
                below.append((key, i + 1, low))
            tiny = page.evaluate(SMALL_TEXT, MIN_PX)
            if tiny:
                small.append((key, i + 1, tiny[:4]))
            last = i + 1 == len(lesson.steps)
            nxt = main.locator(".st-key-lesson-next button").first
            if last:  # whatever shows when the lecturer points at Next leaves the step's button free
                nxt.hover()
                page.wait_for_timeout(700)
                if not page.evaluate(ACTION_ON_TOP):
                    covered.append((key, i + 1))
                page.mouse.move(5, 760)
            if last and li + 1 < len(order):  # the last step offers the next lesson
                assert "Next lesson" in nxt.inner_text()
                assert lessons.LESSONS[order[li + 1]].title in main.inner_text()
            if last and li + 1 == len(order):
                break
            page.wait_for_timeout(450)  # Previous / Next hold a just-drawn step for 0.4 s (a double click)
            nxt.click()
            wait_idle(page)
    found = {
        "chart under 90 % visible (share, top, bottom)": short,
        "the outcome or Previous / Next below the first screen (bottom px)": below,
        "text under 16 px": small,
        "a tooltip over the step's button": covered,
        "display formulas wider than their box (KaTeX does not wrap: the box cuts them)": cut,
    }
    assert not any(found.values()), {k: v for k, v in found.items() if v}
