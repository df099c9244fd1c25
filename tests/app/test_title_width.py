"""Titles wrap by the width of their chart (issue 26: plotly never wraps a title, and the builders' 31-36
characters left a wide chart's title in three short lines, its third on the column labels): the Step page's
posterior title and the lessons' curves."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.ui import lab
from tests.app.helpers import chart, ok
from tests.app.test_step_lab import HOME, STEP_PAGE, _open

LONG = "Posterior q, iteration 12, after M-step (rows: items, columns: classes)"


def _lines(fig: dict) -> list[str]:
    return fig["layout"]["title"]["text"].split("<br>")


def test_fit_title_wraps_by_width_and_moves_the_top_margin():
    fig = go.Figure(layout=dict(title=dict(text="Posterior q, iteration 12,<br>after M-step (rows: items,<br>columns: "
                                           "classes)", font=dict(size=15)), margin=dict(t=120)))  # fmt: skip
    wide = lab.fit_title(go.Figure(fig), 1000)
    assert wide.layout.title.text == LONG and wide.layout.margin.t == 80  # one line: two lines' margin less
    narrow = lab.fit_title(go.Figure(fig), 250)
    lines = narrow.layout.title.text.split("<br>")
    assert len(lines) >= 3 and all(len(x) * lab.TITLE_EM_PER_CHAR * 15 <= 250 for x in lines)


@pytest.mark.parametrize("present", [False, True], ids=["normal", "presenter"])
def test_the_posterior_title_uses_its_panel_width(present):
    at = _open()
    if present:
        at = AppTest.from_file(HOME, default_timeout=30)
        at.query_params["present"] = "1"
        at = ok(ok(at.run()).switch_page(STEP_PAGE).run())
    lines = _lines(chart(at, "stepper.posterior_chart"))
    room = lab.MAIN_PANEL_PX[present] / (lab.TITLE_EM_PER_CHAR * 16)
    assert max(len(x) for x in lines) > 40  # wider than the builders' 36 characters
    assert all(len(x) <= room for x in lines), lines
    assert len(lines) <= 2, lines
