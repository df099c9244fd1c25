"""A real headless Chromium (Debian's /usr/bin/chromium) against ``streamlit run app.py``.

The Step page is opened cold by deep link first, on a fresh server (no session has loaded anything yet), then the
home page. Screenshots land in tests/e2e/artifacts/<page>.png. Never ``playwright install`` here.
Without /usr/bin/chromium the tests fail when the environment variable CI is set, and are skipped otherwise.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
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
EXCEPTION = '[data-testid="stException"]'
ITERATION = re.compile(r"iteration (\d+), (after [EM]-step|initialisation)")


def _missing(reason: str) -> None:
    msg = f"{reason}: the browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)."
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """A fresh ``streamlit run app.py`` on a free port; yields its base URL once /_stcore/health answers."""
    port = _free_port()
    streamlit = Path(sys.executable).with_name("streamlit")
    cmd = [str(streamlit), "run", "app.py", "--server.port", str(port), "--server.address", "127.0.0.1"]
    cmd += ["--server.headless", "true", "--browser.gatherUsageStats", "false"]
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


@pytest.fixture(scope="module")
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
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    context.close()


def _wait_idle(page) -> None:
    """Wait until Streamlit has finished the current run (the status widget shows no 'Running')."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !/Running/.test(document.querySelector('[data-testid=\"stStatusWidget\"]').innerText)",
        timeout=30_000,
    )
    page.wait_for_timeout(200)


def _iteration(page) -> tuple[int, str]:
    text = page.get_by_text(ITERATION).first.inner_text()
    m = ITERATION.search(text)
    assert m, text
    return int(m.group(1)), m.group(2)


def _screenshot(page, name: str) -> None:
    """Full-page screenshot: grow the viewport to the app's scroll height (the app scrolls inside a section)."""
    height = page.evaluate(
        "() => Math.max(...Array.from(document.querySelectorAll('section, div'))"
        ".map(e => e.scrollHeight), document.body.scrollHeight)"
    )
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 50, 6000)})
    page.wait_for_timeout(800)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


def _assert_no_exception(page) -> None:
    assert page.locator(EXCEPTION).count() == 0, page.locator(EXCEPTION).first.inner_text()


def test_step_page_cold_deep_link_then_home(server, page):
    # 1. a cold deep link to the Step page on a fresh server: the frame loads the default dataset
    page.goto(server + "/Step_through_EM")
    page.get_by_text(ITERATION).first.wait_for()
    _wait_idle(page)
    _assert_no_exception(page)
    assert page.get_by_text("Bluebirds").first.is_visible()
    assert _iteration(page) == (0, "initialisation")

    # 2. Step three times: the iteration advances by one each time
    step = page.get_by_role("button", name="Step", exact=True)
    for i in range(1, 4):
        step.click()
        page.get_by_text(f"iteration {i}, after M-step").first.wait_for()
        _wait_idle(page)
    assert _iteration(page) == (3, "after M-step")

    # 3. E-step alone, then M-step
    page.get_by_role("button", name="E-step", exact=True).click()
    page.get_by_text("iteration 4, after E-step").first.wait_for()
    _wait_idle(page)
    page.get_by_role("button", name="M-step", exact=True).click()
    page.get_by_text("iteration 4, after M-step").first.wait_for()
    _wait_idle(page)

    # 4. Run to convergence: many more iterations, and the Run button is then disabled
    page.get_by_role("button", name="Run to convergence").click()
    page.get_by_text("converged").first.wait_for()
    _wait_idle(page)
    it, kind = _iteration(page)
    assert it > 4 and kind == "after M-step"
    assert page.get_by_role("button", name="Run to convergence").is_disabled()
    assert page.locator(".js-plotly-plot").count() >= 3  # objective, accuracy, confusion matrices
    _assert_no_exception(page)
    _screenshot(page, "step_through_em")

    # 5. Back goes one iteration back
    page.get_by_role("button", name="Back", exact=True).click()
    page.get_by_text(f"iteration {it - 1}, after M-step").first.wait_for()
    _wait_idle(page)

    # 6. the home page (sidebar navigation keeps the session; a reload would start a new one), then back
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link").first.click()
    page.get_by_text("Where to go next").wait_for()
    _wait_idle(page)
    _assert_no_exception(page)
    assert page.get_by_text("Bluebirds").first.is_visible()
    _screenshot(page, "home")
    page.locator('[data-testid="stMain"]').get_by_role("link", name=re.compile("Step through EM")).click()
    page.get_by_text(ITERATION).first.wait_for()
    _wait_idle(page)
    assert _iteration(page) == (it - 1, "after M-step")  # the run survived the page switch
    _assert_no_exception(page)


def test_posterior_view_and_home_dataset_switch(server, page):
    page.goto(server + "/")
    page.get_by_text("Where to go next").wait_for()
    _wait_idle(page)
    # switch dataset on the home page, then open the Step page via its link (same session)
    page.get_by_label("Bundled dataset").click()
    page.get_by_role("option", name=re.compile("Dog breeds")).click()
    page.get_by_text("Dataset changed: the run was reset.").wait_for()
    _wait_idle(page)
    _assert_no_exception(page)
    page.locator('[data-testid="stMain"]').get_by_role("link", name=re.compile("Step through EM")).click()
    page.get_by_text(ITERATION).first.wait_for()
    _wait_idle(page)
    assert page.get_by_text("Dog breeds").first.is_visible()
    page.get_by_role("button", name="Step", exact=True).click()
    page.get_by_text("iteration 1, after M-step").first.wait_for()
    _wait_idle(page)
    page.get_by_text("Posterior", exact=True).click()
    _wait_idle(page)
    page.get_by_text("red outlines mark the gold class").wait_for()
    _assert_no_exception(page)
    _screenshot(page, "step_posterior_dogs")
