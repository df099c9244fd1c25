"""The Data page's Load press and the chosen file's arrival, in every order a busy server delivers them.

A browser sends the file and the Load press separately; under load the press can reach the server first (the
box is still empty), both can arrive in one merged rerun (the two callbacks in either order), or the press's
callback is interrupted by the file's rerun and never delivered again. The file loads on its arrival, so each
order loads it once and keeps the "Loaded ..." message. AppTest cannot drive ``st.file_uploader``,
so a wrapper app puts a stand-in upload under the box's key (no box is drawn) and calls the callbacks in the
order the test asks. tests/e2e/test_busy_room.py presses Load in 10 real concurrent browser sessions.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from crowdlab.ui import data_page, state
from tests.app.helpers import ROOT, wrapper_script

DATA = ROOT / "tests" / "data"
WRAPPER = """
import io
import streamlit as st
from crowdlab.ui import data_page, frame, state

class Upload(io.BytesIO):  # what st.file_uploader returns: a name and the bytes
    def __init__(self, name, content):
        super().__init__(content)
        self.name = name

state.ensure_dataset(frame._default_dataset)
for step in st.session_state.pop("test.steps", []):
    if step[0] == "file":
        st.session_state[data_page.UPLOAD_FILE] = None if step[1] is None else Upload(*step[1])
        data_page._on_file_change("file")
    elif step[0] == "gold":
        st.session_state[data_page.UPLOAD_GOLD] = Upload(*step[1])
        data_page._on_file_change("gold")
    elif step[0] == "box":  # the box's value arrives (its on_change to come), or a page switch empties it
        st.session_state[data_page.UPLOAD_FILE] = None if step[1] is None else Upload(*step[1])
    elif step[0] == "load":
        data_page._on_load()
    elif step[0] == "forget":
        data_page._on_forget()
"""


def _app(tmp_path: Path) -> AppTest:
    script = wrapper_script(tmp_path, WRAPPER, links=False)
    return AppTest.from_file(str(script), default_timeout=30).run()


def _run(at: AppTest, *steps) -> AppTest:
    at.session_state["test.steps"] = list(steps)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _file(name: str) -> tuple[str, bytes]:
    return name, (DATA / name).read_bytes()


def _loaded(at: AppTest, name: str) -> bool:
    ok = at.session_state[data_page.UPLOAD_OK] or ""
    return at.session_state[state.DATA_ID].startswith("upload:") and ok.startswith(f"Loaded '{name}'")


def test_load_pressed_before_the_file_arrives_loads_it_when_it_arrives(tmp_path):
    # before: "Choose a label file first", then the file's arrival cleared the message and loaded nothing
    # issue 42: the press said "Choose a label file first" while the chosen file was on its way; it says that a file
    # chosen just now is still arriving and loads by itself
    at = _run(_app(tmp_path), ("load",))
    assert at.session_state[data_page.UPLOAD_ERROR] == data_page.NO_FILE_YET
    assert "still arriving and loads by itself" in data_page.NO_FILE_YET
    at = _run(at, ("file", _file("small_long.csv")))
    assert _loaded(at, "small_long.csv") and at.session_state[data_page.UPLOAD_ERROR] is None


def test_a_lost_press_still_loads_the_file(tmp_path):
    # a press whose callback a following rerun interrupted never reaches the page: the file loads on arrival
    at = _run(_app(tmp_path), ("file", _file("small_long.csv")))
    assert _loaded(at, "small_long.csv")
    at = _run(at, ("gold", _file("small_gold.csv")))  # a gold file reloads with the label file
    assert at.session_state[data_page.UPLOAD_OK].startswith("Loaded 'small_long.csv' with gold from 'small_gold.csv'")


def test_load_and_the_file_in_one_rerun_in_either_order(tmp_path):
    # before: with Load's callback first, the file's on_change then cleared "Loaded ..." (a lost press)
    at = _run(_app(tmp_path), ("box", _file("small_long.csv")), ("load",), ("file", _file("small_long.csv")))
    assert _loaded(at, "small_long.csv")
    at = _run(_app(tmp_path), ("file", _file("small_long.csv")), ("load",))
    assert _loaded(at, "small_long.csv")


def test_a_file_arriving_after_a_load_of_the_kept_file_replaces_it(tmp_path):
    at = _run(_app(tmp_path), ("file", _file("small_long.csv")), ("load",), ("box", None))
    assert _loaded(at, "small_long.csv")  # a page switch emptied the box: the file is kept
    at = _run(at, ("load",))  # the press read the kept file while the new one was on its way
    assert _loaded(at, "small_long.csv")
    at = _run(at, ("file", _file("small_wide.csv")))
    assert _loaded(at, "small_wide.csv")


def test_a_bad_file_shows_the_message_and_keeps_the_dataset(tmp_path):
    at = _app(tmp_path)
    before = at.session_state[state.DATA_ID]
    at = _run(at, ("file", _file("empty.csv")))
    assert at.session_state[state.DATA_ID] == before and at.session_state[data_page.UPLOAD_ERROR]
    at = _run(at, ("file", None))  # removing it clears the message
    assert at.session_state[data_page.UPLOAD_ERROR] is None and at.session_state[state.DATA_ID] == before
