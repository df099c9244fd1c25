"""Shared helpers of the browser tests: waiting for Streamlit, screenshots, exception checks, navigation."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1400, "height": 1000}
ROOT = Path(__file__).resolve().parents[2]
EXCEPTION = '[data-testid="stException"]'
ITERATION = re.compile(r"iteration (\d+), (after [EM]-step|initialisation)")


def wait_idle(page) -> None:
    """Wait until Streamlit has finished the current run (the status widget shows no 'Running')."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !/Running/.test(document.querySelector('[data-testid=\"stStatusWidget\"]').innerText)",
        timeout=30_000,
    )
    page.wait_for_timeout(200)


def wait_page(page) -> None:
    """Wait for a page of the app to be drawn: its title, the sidebar's dataset summary, the run finished."""
    page.locator('[data-testid="stMain"] h1').first.wait_for()
    page.locator('[data-testid="stSidebar"]').get_by_text("Current dataset").wait_for()
    wait_idle(page)


def iteration(page) -> tuple[int, str]:
    text = page.get_by_text(ITERATION).first.inner_text()
    m = ITERATION.search(text)
    assert m, text
    return int(m.group(1)), m.group(2)


def screenshot(page, name: str) -> Path:
    """Full-page screenshot: grow the viewport to the app's scroll height (the app scrolls inside a section)."""
    height = page.evaluate(
        "() => Math.max(...Array.from(document.querySelectorAll('section, div'))"
        ".map(e => e.scrollHeight), document.body.scrollHeight)"
    )
    page.set_viewport_size({"width": VIEWPORT["width"], "height": min(int(height) + 50, 6000)})
    page.wait_for_timeout(400)  # plotly re-lays out its charts for the new width
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(VIEWPORT)
    return path


def assert_no_exception(page) -> None:
    assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()


def sidebar_link(page, name: str) -> None:
    """Go to another page through the sidebar navigation (keeps the Streamlit session; page.goto would not).

    The navigation is the frame's own list of ``st.page_link`` (Streamlit's is off); a link's accessible name
    starts with its icon's ligature ("stairs Step through EM"), so the name is matched at the end."""
    link = re.compile(rf"(^|\s){re.escape(name)}$")
    page.locator('[data-testid="stSidebar"]').get_by_role("link", name=link).first.click()
    wait_page(page)


def sidebar_text(page) -> str:
    return page.locator('[data-testid="stSidebarUserContent"]').inner_text()


# Text the browser cut with an ellipsis (a button, a widget label, a metric): its box is narrower than its text.
ELLIPSISED = """
() => Array.from(document.querySelectorAll('[data-testid="stMain"] *')).filter(e => e.offsetParent !== null
  && getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth - e.clientWidth > 1
  && (e.innerText || '').trim()).map(e => [e.innerText.trim().slice(0, 60), e.scrollWidth - e.clientWidth])
"""
# The options of the open select box wider than its text field (a select box clips its value without an ellipsis).
CLIPPED_OPTIONS = """
() => { const box = document.activeElement && document.activeElement.closest('[data-testid="stSelectbox"]');
  if (!box) return null;
  const input = box.querySelector('input'), s = getComputedStyle(input);
  const ctx = document.createElement('canvas').getContext('2d'); ctx.font = s.font;
  const room = input.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
  return Array.from(document.querySelectorAll('[role=option]')).map(o => o.innerText.trim())
    .map(o => [o, Math.ceil(ctx.measureText(o).width), room]).filter(x => x[1] > x[2]); }
"""


# Chart text (titles, axis titles, legend entries, annotations) reaching past its chart's box: plotly never wraps
# it, and the box clips it.
CHART_TEXT_OUT = """
() => Array.from(document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')).filter(p => p.offsetParent)
  .map(p => { const c = p.getBoundingClientRect();
    return Array.from(p.querySelectorAll('.gtitle, .g-xtitle text, .g-ytitle text, .legendtext, .annotation-text'))
      .map(t => [t.textContent.slice(0, 50), t.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && (r.left < c.left - 1 || r.right > c.right + 1))
      .map(([text, r]) => [text, Math.round(r.left - c.left), Math.round(c.right - r.right)]); }).flat()
"""


def assert_nothing_cut(page, where: str) -> None:
    """Nothing in the main area cut to an ellipsis or at a chart's edge, and every option of every open-able select
    box whole in its box (measured with the box's own font, so nothing is selected and nothing reruns)."""
    cut = page.evaluate(ELLIPSISED)
    assert cut == [], (where, cut)
    out = page.evaluate(CHART_TEXT_OUT)
    assert out == [], (where, "chart text cut at its chart's edge", out)
    boxes = page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]:visible input:not([disabled])')
    for i in range(boxes.count()):
        _open_select(page, boxes.nth(i), where)
        clipped = page.evaluate(CLIPPED_OPTIONS)
        page.keyboard.press("Escape")
        assert clipped == [], (where, i, clipped)


def _open_select(page, box, where: str) -> None:
    """Open a select box's list: a click on its field, or (when a rerun swallowed the click, which happens on a
    busy machine) on its arrow button, up to three tries."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(3):
        wait_idle(page)
        box.scroll_into_view_if_needed()  # room below it for the list
        if attempt == 0:
            box.click()
        else:
            box.locator("xpath=..").get_by_role("button", name="Open").click()
        try:
            page.locator("[role=option]").first.wait_for(timeout=8_000)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    raise AssertionError(f"{where}: a select box's list did not open in three tries")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(env: dict | None = None, log_name: str = "streamlit.log") -> Iterator[str]:
    """``streamlit run app.py`` on a free port of 127.0.0.1 (``env`` added to the environment); yields its base URL
    once /_stcore/health answers, and stops it at the end. Its process is ``LAST_SERVER[0]`` meanwhile (for
    memory measurements)."""
    port = _free_port()
    streamlit = Path(sys.executable).with_name("streamlit")
    cmd = [str(streamlit), "run", "app.py", "--server.port", str(port), "--server.address", "127.0.0.1"]
    cmd += ["--server.headless", "true", "--browser.gatherUsageStats", "false"]
    cmd += ["--server.fileWatcherType", "none"]  # edits elsewhere in the tree must not rerun the app mid-test
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / log_name, "w")  # closed below
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    LAST_SERVER.clear()
    LAST_SERVER.append(proc)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with code {proc.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("streamlit did not answer /_stcore/health within 60 s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


LAST_SERVER: list[subprocess.Popen] = []
