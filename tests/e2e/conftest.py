"""Fixtures of the browser tests: one fresh ``streamlit run app.py`` per test session, one headless Chromium.

The server starts on a free port of 127.0.0.1 when the first browser test asks for it (no session has loaded
anything yet, so the first deep link is a truly cold one) and stops at the end of the session. Chromium is
Debian's /usr/bin/chromium, never a Playwright download; without it the tests fail when the environment variable
CI is set and are skipped otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.helpers import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, VIEWPORT, streamlit_server

ROOT = Path(__file__).resolve().parents[2]


def _missing(reason: str) -> None:
    msg = f"{reason}: the browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)."
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def server():
    """A fresh ``streamlit run app.py`` on a free port; yields its base URL once /_stcore/health answers."""
    with streamlit_server() as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        _missing("no chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture()
def page(browser):
    """A new browser context: a new Streamlit session (nothing shared with other tests)."""
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    context.close()
