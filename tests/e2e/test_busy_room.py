"""A busy room: 10 browser sessions at once on the Data page, each uploading its own label file and pressing
Load once, as soon as the box shows the chosen file (as a student does, without waiting for the upload to end).
All 10 must load their own file: the press may reach the server before the file, or in the same rerun
(tests/app/test_load_race.py has each order). Then a download in three of them gives each its own labels, and no
page logged a download button whose file the server had dropped ("source error"). Screenshots of a session that
did not load: tests/e2e/artifacts/busy_room_*.png.
"""

from __future__ import annotations

from pathlib import Path

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
        console = []  # "Download Button source error - 404": a button whose file the server no longer has
        for p in pages:
            p.on("console", lambda m: console.append(m.text) if "source error" in m.text else None)
            p.set_default_timeout(90_000)
            p.goto(server + "/Data", wait_until="commit")
        for p in pages:
            wait_page(p)
        for k, p in enumerate(pages):  # choose, and press Load as soon as the box shows the file (still uploading)
            uploader = p.locator('[data-testid="stFileUploader"]').first
            uploader.locator('input[type="file"]').set_input_files(
                {"name": f"room{k}.csv", "mimeType": "text/csv", "buffer": _labels(k)}
            )
            uploader.get_by_text(f"room{k}.csv").wait_for()
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
        for k, p in enumerate(pages[:3]):  # each download still downloads its session's own file
            with p.expect_download() as got:
                p.get_by_role("button", name="Download all labels (long CSV)").click()
            assert f"room{k}_w0" in Path(got.value.path()).read_text()
        assert console == []
    finally:
        for c in contexts:
            c.close()
