""" "Can't tell" answers in the app (issue 28, section 4): the Data page reads a file's "can't tell" label as a
response when told which (the "Can't tell answer" field), says how many it read, and notes a label spelled like
one otherwise; the Step page then offers only the models with a place for them, and every tab renders and steps
for each. Kind "ordinal" offers the ordinal model, which steps with the monotone check.

AppTest cannot drive ``st.file_uploader``: the upload goes through :func:`crowdlab.ui.data_page.load_upload` (what
the Load button's callback calls) in a small wrapper app, as in ``test_column_picker.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.ui import data_page, panels, state
from tests.app.helpers import click, ok, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
STEP_PAGE = "pages/2_Step_through_EM.py"
WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import data_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    data_page.load_upload(**request)
runpy.run_path({data_page!r}, run_name="__main__")
"""
ROWS = [
    (i, j, "unsure" if (i + 2 * j) % 7 == 0 else "ab"[(i + (j == 2) + (j == 3 and i % 5 == 0)) % 2])
    for i in range(40)
    for j in range(5)
]
UNSURE = b"item,worker,label\n" + "".join(f"t{i},w{j},{lab}\n" for i, j, lab in ROWS).encode()
N_UNSURE = sum(lab == "unsure" for _, _, lab in ROWS)
RATINGS = (
    b"item,worker,label\n"
    + "".join(f"p{i},r{j},{min(5, max(1, 1 + (i % 5) + (j % 3) - 1))}\n" for i in range(30) for j in range(4)).encode()
)


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    text = WRAPPER.format(data_page=str(ROOT / "pages" / "1_Data.py"))
    return wrapper_script(tmp_path_factory.mktemp("abstain_app"), text, "abstain_wrapper.py")


def _captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption).replace("\\", "")


def _loaded_with_abstain(wrapper) -> AppTest:
    at = AppTest.from_file(str(wrapper), default_timeout=60)
    at.session_state["test.upload"] = dict(content=UNSURE, name="unsure.csv")
    at = ok(at.run())
    assert "unsure" in at.session_state[state.DATA].class_names  # read as a class, with a note
    assert "'Can't tell answer' = 'unsure' reads it as a response" in _captions(at)
    at.text_input(key=data_page.UPLOAD_ABSTAIN).set_value("unsure")
    return click(at, "data.upload.load")  # Load reads the kept file again, with the field's token


def test_data_page_reads_the_token_and_says_how_many(wrapper):
    at = _loaded_with_abstain(wrapper)
    data = at.session_state[state.DATA]
    assert data.class_names == ("a", "b") and data.response_names == ("unsure",)
    assert f'({N_UNSURE} of them "can\'t tell")' in at.success[0].value.replace("\\", "")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["can't tell"] == str(N_UNSURE) and metrics["classes"] == "2"
    assert 'abstain="unsure"' in at.session_state[state.DATA_SOURCE]  # the Export page's snippet reads it so
    report = [d.value for d in at.dataframe if "abstention_rate" in d.value.columns]  # the worker report
    assert len(report) == 1
    said = {f"w{j}": sum(lab == "unsure" for i, jj, lab in ROWS if jj == j) / 40 for j in range(5)}
    got = dict(zip(report[0]["worker"], report[0]["abstention_rate"]))
    assert got == pytest.approx(said)


@pytest.mark.parametrize("method", ["ds", "ibcc", "ebcc", "mace", "mace_vb", "one_coin", "two_coin"])
def test_step_page_steps_every_model_with_abstentions(wrapper, method):
    at = ok(_loaded_with_abstain(wrapper).switch_page(STEP_PAGE).run())
    offered = at.selectbox(key=state.W_METHOD).options
    assert "GLAD (ability and difficulty)" not in " ".join(offered) and len(offered) == 8  # mv + the seven
    if at.selectbox(key=state.W_METHOD).value != method:
        ok(at.selectbox(key=state.W_METHOD).set_value(method).run())
    for _ in range(3):
        click(at, "stepper.step")
    run = at.session_state[state.RUN]
    assert run.data.response_names == ("unsure",) and run.params.gamma.shape[1] == 3
    h = np.asarray(run.history()["objective"])
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))
    for tab in panels.TABS:
        at.session_state[state.VIEW_PREFIX + "tab"] = tab
        ok(at.run())


def test_kind_ordinal_offers_the_ordinal_model_which_steps(wrapper):
    at = AppTest.from_file(str(wrapper), default_timeout=60)
    at.session_state["test.upload"] = dict(content=RATINGS, name="stars.csv", kind="ordinal")
    at = ok(at.run())
    data = at.session_state[state.DATA]
    assert data.ordinal and {m.label: m.value for m in at.metric}["classes"] == "5"
    at = ok(at.switch_page(STEP_PAGE).run())
    ok(at.selectbox(key=state.W_METHOD).set_value("ordinal").run())
    for _ in range(4):
        click(at, "stepper.step")
    run = at.session_state[state.RUN]
    assert run.model.info.key == "ordinal" and len(run.snapshots) >= 5
    h = np.asarray(run.history()["objective"])
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))  # generalised EM: it never falls
    at.session_state[state.VIEW_PREFIX + "tab"] = "Formulas"
    ok(at.run())
    assert any(r"\Phi" in x.value for x in at.latex)


@pytest.mark.parametrize(
    ("page", "buttons"),
    [
        ("pages/3_Compare_methods.py", ["compare.run"]),
        ("pages/4_Priors_and_initialisations.py", ["priors.run_restarts", "priors.run_sweep"]),
        ("pages/5_Export.py", ["export.fit"]),
        ("pages/8_Error_rates_without_labels.py", []),
        ("pages/10_Batch_vs_online.py", []),
    ],
)
def test_other_pages_take_data_with_abstentions(wrapper, page, buttons):
    """The other pages a dataset with "can't tell" responses reaches render and run without an exception or an
    error (they fit the models that have a place for the responses)."""
    at = ok(_loaded_with_abstain(wrapper).switch_page(page).run())
    for key in buttons:
        at = click(at, key)
        assert at.dataframe, key
