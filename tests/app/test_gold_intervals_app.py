"""Issue 38 section 3 in the app: the Export page's Metrics tab shows the prediction-powered intervals beside the
gold-only ones when the data have gold on some items."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.helpers import click, ok, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "tests" / "data" / "question_answer.csv"  # gold (its truth column) on 4 of 5 questions
WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import data_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    data_page.load_upload(**request)
runpy.run_path({target!r}, run_name="__main__")
"""


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    text = WRAPPER.format(target=str(ROOT / "pages/5_Export.py"))
    return wrapper_script(tmp_path_factory.mktemp("ppi_app"), text, "ppi_wrapper.py")


def _tables(at: AppTest):
    return [d.value for d in at.dataframe if "prediction-powered" in d.value.columns]


def test_export_metrics_tab_shows_the_intervals(wrapper):
    at = AppTest.from_file(str(wrapper), default_timeout=30)
    at.session_state["test.upload"] = dict(content=FILE.read_bytes(), gold=None, name=FILE.name, gold_name=None)
    ok(at.run())
    assert not _tables(at)  # nothing fitted yet
    click(at, "export.fit")
    found = _tables(at)
    assert len(found) == 1
    table = found[0]
    assert list(table["quantity"]) == ["accuracy of the labels", "share of no", "share of yes"] or list(
        table["quantity"]
    ) == ["accuracy of the labels", "share of yes", "share of no"]
    assert list(table.columns) == ["quantity", "gold only (Wilson)", "model alone", "prediction-powered", "width ratio"]
    assert any("from the gold on 4 of them" in c.value for c in at.caption)
