"""A score of 1e308 (the float limit) on the Data, Step, Compare and Export pages: no exception, no error, the
exports are finite JSON (issue "Any file, any size, any value")."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.io import limits
from crowdlab.ui import export_page, state
from tests.app.helpers import ok, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import data_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    data_page.load_upload(**request)
runpy.run_path(st.session_state["test.target"], run_name="__main__")
"""
ROWS = ["item,worker,score"] + [f"i{n},w{m},{0.1 * ((n + m) % 7)}" for n in range(8) for m in range(4)]
ROWS[5] = "i1,w0,1e308"
CONTENT = ("\n".join(ROWS) + "\n").encode()


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    return wrapper_script(tmp_path_factory.mktemp("huge_app"), WRAPPER)


@pytest.mark.parametrize(
    ("page", "button"),
    [
        ("pages/1_Data.py", None),
        ("pages/2_Step_through_EM.py", "stepper.run"),
        ("pages/3_Compare_methods.py", "compare.run"),
        ("pages/5_Export.py", "export.fit"),
    ],
)
def test_pages_with_a_1e308_score(wrapper, page, button, monkeypatch):
    # the readers refuse |score| > 1e12 by default (crowdlab.io.limits); a user who raises the limit gets this far
    monkeypatch.setattr(limits, "_CURRENT", dataclasses.replace(limits.get_limits(), max_abs_value=1.7e308))
    at = AppTest.from_file(str(wrapper), default_timeout=60)
    at.session_state["test.target"] = str(ROOT / page)
    at.session_state["test.upload"] = dict(content=CONTENT, name="huge.csv")
    ok(at.run())
    data = at.session_state[state.DATA]
    assert data.is_continuous and data.value.max() == 1e308
    if button:
        ok(at.button(key=button).click().run())
    if page.endswith("Export.py"):
        run = at.session_state[export_page.EXPORT_RUN]["run"]
        files = export_page.export_files(run, "")
        for name in ("params.json", "history.json"):
            text = files[name].decode()
            assert "NaN" not in text and "Infinity" not in text
            json.loads(text)
