"""The Data page asks which column is which when the reader cannot tell (issue 30): a column picker, not a guess.

AppTest cannot drive ``st.file_uploader``: the upload goes through :func:`crowdlab.ui.data_page.load_upload` (what
the Load button's callback calls) in a small wrapper app, as in ``test_pages.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.ui import data_page, state
from tests.app.helpers import click, ok, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import data_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    data_page.load_upload(**request)
runpy.run_path({data_page!r}, run_name="__main__")
"""
# four unnamed columns, every id in the first on six rows: long or wide cannot be told; w is the item, v the worker
UNCLEAR = b"v,w,t,memo\n" + b"".join(f"a{j},i{i},{(i + j) % 2},ok\n".encode() for i in range(6) for j in range(3))


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    text = WRAPPER.format(data_page=str(ROOT / "pages" / "1_Data.py"))
    return wrapper_script(tmp_path_factory.mktemp("picker_app"), text, "picker_wrapper.py")


def test_unclear_columns_show_a_picker_whose_choice_is_read(wrapper):
    at = AppTest.from_file(str(wrapper), default_timeout=30)
    at.session_state["test.upload"] = dict(content=UNCLEAR, name="unclear.csv")
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[data_page.UPLOAD_ASK] == ("v", "w", "t", "memo")
    assert "cannot tell how to read this file" in at.error[0].value and "column picker" in at.error[0].value
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"  # unchanged until the user picks
    at.selectbox(key=data_page.PICK["item"]).set_value(1)
    at.selectbox(key=data_page.PICK["worker"]).set_value(0)
    at.selectbox(key=data_page.PICK["label"]).set_value(2)
    at = click(at, "data.upload.load_columns")
    data = at.session_state[state.DATA]
    assert at.session_state[state.DATA_ID].startswith("upload:") and (data.n_items, data.n_workers) == (6, 3)
    assert any("as you named them" in n for n in data.notes)
    assert at.session_state[data_page.UPLOAD_ASK] is None and not at.error
    assert "columns=(1, 0, 2)" in at.session_state[state.DATA_SOURCE]  # the Export page's snippet reads it so


def test_a_clear_file_shows_no_picker(wrapper):
    at = AppTest.from_file(str(wrapper), default_timeout=30)
    at.session_state["test.upload"] = dict(content=(ROOT / "tests/data/small_long.csv").read_bytes(), name="s.csv")
    at = ok(at.run())
    assert not at.session_state[data_page.UPLOAD_ASK]
    assert not any(b.key == "data.upload.load_columns" for b in at.button)
