"""A Step click sends light figures (issue 26, section 2): no repeated 3.7 kB Streamlit template in every figure,
only the colourway that crowdlab's figures may use (:mod:`crowdlab.ui.charts`)."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
from streamlit.testing.v1 import AppTest

import crowdlab.ui  # noqa: F401  (makes the light template the default, as every page does)
from crowdlab.ui import charts
from tests.app.helpers import click, figures, ok

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_template_keeps_streamlits_colourway_and_nothing_else():
    assert pio.templates.default == charts.LIGHT
    full, light = pio.templates["streamlit"], pio.templates[charts.LIGHT]
    assert light.layout.colorway == full.layout.colorway  # the front end's colour placeholders, as before
    spec = json.loads(go.Figure(go.Scatter(x=[0, 1], y=[1, 2])).to_json())
    assert set(spec["layout"]["template"]["data"]) == {"scatter"}
    assert len(json.dumps(spec["layout"]["template"])) < 400


def test_step_click_figures_are_light():
    at = AppTest.from_file(str(ROOT / "pages/2_Step_through_EM.py"), default_timeout=60)
    at.session_state["presenter"] = True
    ok(at.run())
    click(at, "stepper.step")
    specs = [spec for _, spec in figures(at)]
    assert len(specs) == 3
    for spec in specs:  # the live chart element's figures carry no template at all (its script supplies the look)
        assert len(json.dumps(spec["layout"].get("template", {}))) < 400
    assert sum(len(json.dumps(s)) for s in specs) < 12_000  # was 19,000 (three 3.7 kB templates)
