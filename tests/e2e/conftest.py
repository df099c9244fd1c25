"""Fixtures of the browser tests: one fresh ``streamlit run app.py`` per test session, one headless Chromium.

The server starts on a free port of 127.0.0.1 when the first browser test asks for it (no session has loaded
anything yet, so the first deep link is a truly cold one) and stops at the end of the session. Chromium is
Debian's /usr/bin/chromium, never a Playwright download; without it the tests fail when the environment variable
CI is set and are skipped otherwise.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.helpers import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, VIEWPORT

ROOT = Path(__file__).resolve().parents[2]


def _missing(reason: str) -> None:
    msg = f"{reason}: the browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)."
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server():
    """A fresh ``streamlit run app.py`` on a free port; yields its base URL once /_stcore/health answers."""
    port = _free_port()
    streamlit = Path(sys.executable).with_name("streamlit")
    cmd = [str(streamlit), "run", "app.py", "--server.port", str(port), "--server.address", "127.0.0.1"]
    cmd += ["--server.headless", "true", "--browser.gatherUsageStats", "false"]
    cmd += ["--server.fileWatcherType", "none"]  # edits elsewhere in the tree must not rerun the app mid-test
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / "streamlit.log", "w")  # closed below
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
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
