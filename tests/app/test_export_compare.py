"""The Export page's file of every method run on Compare methods (issue 26, section 6): the labels of all of them
side by side in one file, under the upload's own column names (``question``/``answer`` stay so), as are the Step
page's labels.csv and posteriors.csv."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.ui import compare_page, export_page, state
from tests.app.helpers import click, goto, ok, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "tests" / "data" / "question_answer.csv"
WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import data_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    data_page.load_upload(**request)
runpy.run_path(st.session_state.get("test.target", {target!r}), run_name="__main__")
"""


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    text = WRAPPER.format(target=str(ROOT / "pages/5_Export.py"))
    return wrapper_script(tmp_path_factory.mktemp("export_app"), text, "export_wrapper.py")


def _uploaded(wrapper: Path) -> AppTest:
    at = AppTest.from_file(str(wrapper), default_timeout=30)
    at.session_state["test.upload"] = dict(content=FILE.read_bytes(), gold=None, name=FILE.name, gold_name=None)
    return ok(at.run())


def _compare_table(at: AppTest) -> pd.DataFrame:
    found = [d.value for d in at.dataframe if "answer (Majority vote)" in d.value.columns]
    assert len(found) == 1
    return found[0]


def test_export_has_every_compare_method_side_by_side_in_the_uploads_column_names(wrapper):
    at = _uploaded(wrapper)
    assert at.session_state[state.DATA].columns == ("question", "annotator", "answer", "truth")
    assert not any(b.proto.label == export_page.ALL_METHODS_FILE for b in at.get("download_button"))
    assert any("Run all methods" in c.value for c in at.caption)  # says how to get the file
    goto(at, "pages/3_Compare_methods.py")
    click(at, "compare.run")
    comparison = at.session_state[compare_page.RESULTS][(at.session_state[state.DATA_ID], 0.0)]
    methods = list(comparison.table["method"])
    assert len(methods) >= 8  # the EM methods and the baselines
    goto(at, "pages/5_Export.py")
    assert any(b.proto.label == export_page.ALL_METHODS_FILE for b in at.get("download_button"))
    shown = _compare_table(at)
    assert list(shown.columns) == ["question", "truth", *(f"answer ({m})" for m in methods)]
    assert list(shown["question"]) == ["q1", "q2", "q3", "q4", "q5"]
    assert list(shown["truth"]) == ["yes", "no", "", "no", "yes"]
    assert list(shown["answer (Majority vote)"]) == ["yes", "no", "yes", "no", "yes"]
    # the Step page's run, fitted here: its files keep the upload's names too, and the zip holds the side-by-side file
    click(at, "export.fit")
    run = at.session_state[export_page.EXPORT_RUN]["run"]
    files = export_page.export_files(run, "")
    assert list(pd.read_csv(io.BytesIO(files["labels.csv"])).columns) == ["question", "answer"]
    post = pd.read_csv(io.BytesIO(files["posteriors.csv"]))
    assert {"question", "answer", "truth", "p_yes", "p_no"} <= set(post.columns) and "item" not in post
    zipped = [b for b in at.get("download_button") if b.proto.label == "All of them (zip)"]
    assert len(zipped) == 1
    assert any(b.proto.label == export_page.ALL_METHODS_FILE for b in at.get("download_button"))
    assert list(_compare_table(at).columns)[:2] == ["question", "truth"]
