"""A busy room: 10 browser sessions at once on the Data page, each uploading its own label file and pressing
Load once, right after choosing the file (as a student does, without waiting for the upload's progress bar).
All 10 must load their own file: the press may reach the server before the file, or in the same rerun
(tests/app/test_load_race.py has each order). Screenshots of a session that did not load:
tests/e2e/artifacts/busy_room_*.png.
"""

from __future__ import annotations

import pytest

from tests.e2e.helpers import VIEWPORT, assert_no_exception, screenshot, wait_page

pytestmark = pytest.mark.e2e

SESSIONS = 10


def _labels(k: int) -> bytes:
    """A small long CSV of its own for session k (its own worker names and item count)."""
    rows = ["item,worker,label"]
    for i in range(40 + k):
        for w in range(4):
            rows.append(f"item{i},room{k}_w{w},{'ab'[(i + (w == k % 4)) % 2]}")
    return ("\n".join(rows) + "\n").encode()


def test_ten_sessions_each_load_their_own_file_with_one_press(server, browser):
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(SESSIONS)]
    try:
        pages = [c.new_page() for c in contexts]
        for p in pages:
            p.set_default_timeout(90_000)
            p.goto(server + "/Data", wait_until="commit")
        for p in pages:
            wait_page(p)
        for k, p in enumerate(pages):  # choose and press at once, one session after the other
            box = p.locator('[data-testid="stFileUploader"]').first.locator('input[type="file"]')
            box.set_input_files({"name": f"room{k}.csv", "mimeType": "text/csv", "buffer": _labels(k)})
            p.get_by_role("button", name="Load", exact=True).click()
        loaded = []
        for k, p in enumerate(pages):
            try:
                p.get_by_text(f"Loaded 'room{k}.csv': {40 + k} items, 4 workers").wait_for(timeout=90_000)
                loaded.append(k)
            except Exception:  # noqa: BLE001 - counted and shown below
                screenshot(p, f"busy_room_{k}")
        assert loaded == list(range(SESSIONS)), f"{len(loaded)} of {SESSIONS} sessions loaded their file"
        for k, p in enumerate(pages):
            assert f"room{k}" in p.locator('[data-testid="stSidebar"]').inner_text()  # its own dataset
            assert_no_exception(p)
    finally:
        for c in contexts:
            c.close()
