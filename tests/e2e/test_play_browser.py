"""Play must play: on the four stepping pages a lecturer plays (the Step page, a lesson's free controls, Sequences,
Networks), Play started at the start of a run advances 20+ half-steps without stopping, and then on to the end of
the run, where it stops by itself, says so, and its button says "Play" again.

The browser's CPU is slowed down (Chromium's CPU throttling, as on a busy classroom laptop): there, Streamlit gives
the scrubber a new identity at each half-step that grows the run, the browser reports the replaced slider's value
back as a change, and the scrubber's handler used to take that for the lecturer's scrub and pause Play after two
half-steps while its button still said "Pause".
"""

from __future__ import annotations

import re
import time

import pytest

from tests.e2e.helpers import assert_no_exception, screenshot, wait_idle, wait_page

pytestmark = pytest.mark.e2e

PROJECTOR = {"width": 1024, "height": 768}
THROTTLE = 4.0  # Chromium's CPU slowed 4x
LONG_S = 45  # seconds of Play at 0.5 s per half-step before a long run's rest is computed at once
LABEL = re.compile(r"^iteration (\d+), (after [EM]-step|initialisation)$")
ENDED = "Play stopped at the end of the run"
# the stepper's position line (an h4) and its Play / Pause button
READ = """
() => { const m = document.querySelector('[data-testid="stMain"]');
  const h = Array.from(m.querySelectorAll('h4')).map(e => e.innerText.trim())
    .find(t => /^iteration \\d+, (after [EM]-step|initialisation)$/.test(t));
  const b = Array.from(m.querySelectorAll('button')).map(e => e.innerText)
    .find(t => /(^|\\n)(Play|Pause)(\\n|$)/.test(t));
  return [h || null, b ? (/Pause/.test(b) ? 'Pause' : 'Play') : null, m.innerText.includes(ENDED)]; }
""".replace("ENDED", repr(ENDED))


def half_step(label: str) -> int:
    """The snapshot index a position label names: initialisation 0, after E of iteration k 2k-1, after M 2k."""
    m = LABEL.match(label)
    assert m, label
    k = int(m.group(1))
    return 0 if m.group(2) == "initialisation" else 2 * k - (1 if m.group(2) == "after E-step" else 0)


def _open(page, server, path: str):
    page.set_viewport_size(PROJECTOR)
    page.goto(f"{server}{path}?present=1")
    wait_page(page)
    if path == "/Lessons":  # step 5 of the EM lecture starts a Dawid-Skene run on bluebirds (50 half-steps to
        # its end); Play is in the free controls under the lesson
        main = page.locator('[data-testid="stMain"]')
        main.get_by_role("button", name="Start: assume everyone is good").click()
        wait_idle(page)
        for n in range(2, 6):
            main.locator("h1").first.click()  # focus the page, not an input
            page.keyboard.press("ArrowRight")  # the lesson's Next
            main.get_by_text(f"step {n} of 15").wait_for()
            wait_idle(page)
        main.get_by_role("button", name="Start from the majority vote").click()
        wait_idle(page)
        main.get_by_text("Step freely on this run").click()
        wait_idle(page)
    page.wait_for_function(f"({READ})()[0] !== null")
    assert half_step(page.evaluate(READ)[0]) == 0
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": THROTTLE})
    return cdp


def _set_speed(page, seconds: str) -> None:
    """Pick a speed in the open select. A click that lands while Streamlit swaps the page's elements (a rerun in
    flight) opens a list that the swap closes again (one CI run in about ten): open it again, as a lecturer would."""
    box = page.locator('[data-testid="stMain"] input[aria-label="Play speed (seconds per half-step)"]').first
    option = page.get_by_role("option", name=seconds, exact=True)
    for attempt in range(4):
        box.click()
        try:
            option.wait_for(timeout=5000)
            option.click(timeout=5000)
            return
        except Exception:
            if attempt == 3:
                raise
            page.keyboard.press("Escape")


def _play(page, until, limit_s: float) -> list[int]:
    """Watch Play until ``until(seen, state)``; every change of position is one half-step forward, and Play is
    never found stopped (its button "Play") before the end. Returns the half-steps seen."""
    seen: list[int] = []
    stalled_since = time.monotonic()
    t0 = time.monotonic()
    ended_since = None
    while True:
        label, button, ended = page.evaluate(READ)
        if label is not None:
            h = half_step(label)
            if not seen or h != seen[-1]:
                # forward only (a slowed browser may draw two half-steps at once: never back, never a big leap)
                assert not seen or 0 < h - seen[-1] <= 3, ("Play went back or leapt", seen[-5:], h)
                seen.append(h)
                stalled_since = time.monotonic()
        if until(seen, (button, ended)):
            return seen
        # the end's full rerun draws the position line (in a lesson: beside the chart, above the buttons) before
        # the button: for a moment the page says Play stopped while the button still says Pause
        ended_since = (ended_since or time.monotonic()) if ended else None
        assert not ended or time.monotonic() - ended_since < 3, ("Play stopped before it was meant to", seen)
        assert button == "Pause" or time.monotonic() - stalled_since < 3, ("Play stopped", seen)
        assert time.monotonic() - stalled_since < 20, ("Play stands still although its button says Pause", seen)
        assert time.monotonic() - t0 < limit_s, ("Play too slow", seen)
        page.wait_for_timeout(150)


@pytest.mark.parametrize("path", ["/Step_through_EM", "/Lessons", "/Sequences", "/Networks"])
def test_play_plays_20_half_steps_from_the_start_and_on_to_the_end(server, page, path):
    cdp = _open(page, server, path)
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("button", name="Play").first.click()
    seen = _play(page, lambda s, st: len(s) and s[-1] >= 20, limit_s=240)
    assert seen[-1] >= 20
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1.0})
    _set_speed(page, "0.5 s")  # on to the end, faster, unthrottled (a new speed does not pause)
    t0 = time.monotonic()
    seen = _play(page, lambda s, st: st == ("Play", True) or time.monotonic() - t0 > LONG_S, limit_s=LONG_S + 60)
    if page.evaluate(READ)[2] is False:  # a long run (Sequences' HMM): the rest computed at once, Play its end
        main.get_by_role("button", name="Pause").first.click()
        wait_idle(page)
        main.get_by_role("button", name="Run to convergence").first.click()
        wait_idle(page)
        for _ in range(8):
            main.get_by_role("button", name=re.compile(r"^Back\b")).first.click()
            wait_idle(page)
        main.get_by_role("button", name="Play").first.click()
        seen = _play(page, lambda s, st: st == ("Play", True), limit_s=120)
        assert len(seen) >= 8
    assert page.evaluate(READ)[1] == "Play"  # the button says Play again
    # stopped for good: the timer does not go on
    last = page.evaluate(READ)[0]
    page.wait_for_timeout(2500)
    assert page.evaluate(READ)[0] == last
    assert main.get_by_role("button", name="Play").first.is_disabled()  # nothing more to play
    wait_idle(page)
    assert_no_exception(page)
    screenshot(page, "play_end_" + path.strip("/").lower())
