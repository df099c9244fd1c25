"""Soft votes in the app: the LLM-judge sample on the Data summary and on the Step page's Formulas tab, for every
class model (the weights appear as exponents, the note gives the objective)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.teaching import explain
from crowdlab.ui import panels, state
from tests.app.helpers import click, ok

ROOT = Path(__file__).resolve().parents[2]
HOME = str(ROOT / "app.py")
STEP_PAGE = "pages/2_Step_through_EM.py"


def _open() -> AppTest:
    at = ok(AppTest.from_file(HOME, default_timeout=60).run())
    ok(at.selectbox(key="home.dataset").set_value("judges").run())
    return at


def test_data_page_shows_what_was_read():
    at = ok(_open().switch_page("pages/1_Data.py").run())
    text = " ".join(c.value for c in at.caption).replace("\\", "")  # the notes are markdown-escaped
    assert "Read soft votes from column 'confidence'" in text and "2,000 rows became 3,643" in text
    labels = {m.label: m.value for m in at.metric}
    assert labels.get("labels") == "2,000" and labels.get("votes") == "soft"


@pytest.mark.parametrize("method", ["ds", "glad", "mace", "ibcc", "mv"])
def test_formulas_tab_shows_the_weights(method):
    at = ok(_open().switch_page(STEP_PAGE).run())
    if at.selectbox(key=state.W_METHOD).value != method:
        ok(at.selectbox(key=state.W_METHOD).set_value(method).run())
    if method != "mv":
        click(at, "stepper.step")
        click(at, "stepper.e_step")
    at.session_state[state.VIEW_PREFIX + "tab"] = "Formulas"
    ok(at.run())
    assert any(explain.SOFT_NOTE in c.value for c in at.caption)
    if method != "mv":  # item T001: its first judge said faulty with confidence 0.82
        ok(at.selectbox(key=panels.W_ITEM).set_value(0).run())
        assert any("^{0.82" in x.value or "^{0.18" in x.value for x in at.latex), [x.value for x in at.latex][:6]
