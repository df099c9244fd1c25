"""The one chart path for charts that change while a run is stepped: mounted once, updated in place, animated.

``st.plotly_chart`` folds a hash of the figure into its element's identity, so a changed figure is a new element:
React remounts it and its front end draws it three times while sizing it (9 draws and ~8,000 new DOM nodes per
Step click on the Step page). :func:`live_chart` is a Streamlit custom component (components v2: it renders in the
page, no iframe) whose identity is its key alone. Its JavaScript (``live_chart.js`` beside this file) creates the
Plotly graph on the first figure and applies every later one with ``Plotly.react``: one draw per changed figure,
no new graph. Between two figures the bars, dots and curve ends glide to their new places (Plotly's
``layout.transition``) and heatmap cells change colour smoothly (tweened in the script), for
:func:`motion_ms` milliseconds; ``layout.uirevision`` is the chart's key, so a zoom, a hover or a legend toggle
survives the next Step.

Plotly.js comes from the installed plotly package (``plotly/package_data/plotly.min.js``), served by Streamlit's
own route for component assets: nothing is fetched from the internet, and the browser loads it once per page.

Charts that never change during a run may keep ``st.plotly_chart``.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import streamlit as st

NAME = "crowdlab_live_chart"
ASSETS = "crowdlab_plotly_js"  # the component whose asset folder is plotly's package_data (plotly.min.js)
JS = (Path(__file__).with_name("live_chart.js")).read_text(encoding="utf-8")
CSS = ".cl-live-chart { width: 100%; }"
DEFAULT_HEIGHT = 450
MOTION_KEY = "view.motion_ms"  # session state: the lecturer's animation length (ms); 0 = no motion
MOTION_DEFAULT_MS = 400
_mount = st.components.v2.component(NAME, js=JS, css=CSS, isolate_styles=False)  # Plotly styles the document
# draws no chart, loads plotly.js while the page is idle (live_chart.js, on ``data.preload``): a component of its own
# name, so that the chart element's instances are the charts alone
_preload = st.components.v2.component(f"{NAME}_preload", js=JS, isolate_styles=False)


def motion_ms() -> int:
    """How long a change animates, in ms: the session's choice, else ``CROWDLAB_MOTION_MS`` (0 turns motion off,
    as the tests do), else :data:`MOTION_DEFAULT_MS`. The browser's "reduce motion" setting also turns it off."""
    chosen = st.session_state.get(MOTION_KEY)
    if chosen is not None:
        return max(0, int(chosen))
    return env_motion_ms()


def env_motion_ms() -> int:
    """``CROWDLAB_MOTION_MS`` as a length in [0, 2000] ms; unset or not a number: :data:`MOTION_DEFAULT_MS`."""
    text = os.environ.get("CROWDLAB_MOTION_MS", "").strip()
    try:
        value = float(text)
    except ValueError:
        return MOTION_DEFAULT_MS
    return int(max(0.0, min(2000.0, value))) if value == value else MOTION_DEFAULT_MS


# what the charts drawn now belong to (the stepper sets the id of its run): a new run is a new ``uirevision``, so a
# zoom survives the steps of one run but the next run (another method, a reset) starts from its own axes; plotly
# would otherwise keep the last run's axis ranges for a figure that leaves them to autorange
REVISION: ContextVar[str] = ContextVar("crowdlab_chart_revision", default="")
MOTION_CHOICES = (0, 200, 400, 700, 1000)
W_MOTION = "frame.motion"  # the sidebar's widget (a view of MOTION_KEY)


def _on_motion() -> None:
    st.session_state[MOTION_KEY] = int(st.session_state[W_MOTION])


def motion_control() -> None:
    """The sidebar's choice of how long a change animates (ms; 0 = none). Call inside ``with st.sidebar``."""
    now = motion_ms()
    st.session_state[W_MOTION] = min(MOTION_CHOICES, key=lambda c: abs(c - now))
    st.select_slider(
        "Animation (ms)",
        MOTION_CHOICES,
        key=W_MOTION,
        on_change=_on_motion,
        help="How long a chart takes to move to a new half-step (bars, dots, curve ends, heatmap colours). 0: no "
        "motion. Also off when the browser or the system asks for reduced motion.",
    )


def _plotly_src() -> str:
    """The URL of plotly.min.js: the installed plotly package's own copy, registered once per Streamlit runtime as
    the asset folder of a component named :data:`ASSETS` and served by Streamlit's component-asset route."""
    from streamlit import config
    from streamlit.components.v2.get_bidi_component_manager import get_bidi_component_manager
    from streamlit.components.v2.manifest_scanner import ComponentConfig, ComponentManifest

    manager = get_bidi_component_manager()
    name = f"{ASSETS}.plotly"
    if manager.get_component_path(name) is None:
        import plotly

        root = Path(plotly.__file__).resolve().parent
        manifest = ComponentManifest(name=ASSETS, version="1", components=[ComponentConfig("plotly", "package_data")])
        manager.register_from_manifest(manifest, root)
    base = str(config.get_option("server.baseUrlPath") or "").strip("/")
    return ("/" + base if base else "") + f"/_stcore/bidi-components/{name}/plotly.min.js"


def spec_json(fig: go.Figure, key: str) -> str:
    """The figure as Plotly JSON with ``layout.uirevision`` set to ``key`` and the run it shows (:data:`REVISION`),
    unless the figure sets its own."""
    fig = go.Figure(fig)  # a copy: the caller's figure stays as it was
    if fig.layout.uirevision is None:
        fig.layout.uirevision = f"{key}|{REVISION.get()}"
    fig.layout.template = _EMPTY  # the element's script supplies the look (its TEMPLATE): nothing on the wire
    return fig.to_json(validate=False)


_EMPTY = go.layout.Template()


def preload() -> None:
    """Load plotly.js in the background on a page whose first chart comes later (a lesson before its first
    button): the click that brings the chart then only draws it. Draws nothing."""
    _preload(key="plotly-preload", data={"preload": _plotly_src()})


def live_chart(fig: go.Figure, key: str, *, where: Any = None, height: int | None = None) -> None:
    """Draw ``fig`` in the chart element ``key``: the first call mounts a Plotly graph, every later call (a rerun
    with another figure) updates that graph in place with an animated transition. ``where``: a container or column
    to draw in (default: the current one). ``height`` defaults to the figure's layout height, else 450 px."""
    h = int(height or fig.layout.height or DEFAULT_HEIGHT)
    data = {"spec": spec_json(fig, key), "key": key, "height": h, "motion": motion_ms(), "src": _plotly_src()}
    if where is None:
        _mount(key=key, data=data, height=h)
    else:
        with where:
            _mount(key=key, data=data, height=h)
