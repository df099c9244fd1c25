"""Shared helpers of the browser tests: waiting for Streamlit, screenshots, exception checks, navigation."""

from __future__ import annotations

import re
from pathlib import Path

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
