"""Nothing the app shows needs the internet: in a classroom without it, every page, opened and used (a Step click,
a lesson's first action, every tab of the Step page), sends no request beyond 127.0.0.1. The browser tab's icon
was a material icon that the browser fetched from a font server on the internet (and the console filled with
errors offline); it is drawn by the app now."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.e2e.helpers import assert_no_exception, wait_idle, wait_page

pytestmark = pytest.mark.e2e

PAGES = [
    "",
    "Lessons",
    "Data",
    "Step_through_EM",
    "Compare_methods",
    "Priors_and_initialisations",
    "Export",
    "Sequences",
    "Networks",
    "Error_rates_without_labels",
    "Learning_from_crowds",
    "Batch_vs_online",
]
LOCAL = ("127.0.0.1", "localhost", "::1")


def test_no_request_leaves_the_machine(server, browser):
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    away: list[str] = []

    def route(r):  # offline: anything beyond this machine is refused, and noted
        host = urlparse(r.request.url).hostname or ""
        if r.request.url.startswith(("data:", "blob:")) or host in LOCAL:
            r.continue_()
        else:
            away.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        for name in PAGES:
            page.goto(f"{server}/{name}?present=1")
            wait_page(page)
            main = page.locator('[data-testid="stMain"]')
            if name == "Step_through_EM":
                main.get_by_role("button", name="Step", exact=True).click()
                wait_idle(page)
                tabs = main.get_by_role("tab")
                for i in range(tabs.count()):
                    tabs.nth(i).click()
                    wait_idle(page)
            elif name == "Lessons":
                main.get_by_role("button", name="Start: assume everyone is good").click()
                wait_idle(page)
            page.wait_for_timeout(500)
            assert_no_exception(page)
            assert away == [], (name or "home", away)
        # the tab's icon is the app's own, served from this machine
        icons = page.evaluate("() => Array.from(document.querySelectorAll('link[rel~=icon]')).map(l => l.href)")
        assert icons and all(urlparse(u).hostname in LOCAL or u.startswith("data:") for u in icons), icons
    finally:
        context.close()
