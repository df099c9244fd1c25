"""The Step page: the method picker and the one stepper (:func:`crowdlab.ui.lab.stepper`) on its run.

Keeping a Step instant: a click moves the cursor in its callback (a new snapshot is computed at the top of the
stepper's fragment, under a spinner); the panel then draws only stored snapshots. Metrics against gold are
computed once per new snapshot (:func:`state.metrics`), the objective curve reads :meth:`Run.history` (a few
numbers per snapshot), and below them lazy tabs (:mod:`crowdlab.ui.panels`) run only the open panel, each of which
shows a bounded number of items and workers, so the cost of a rerun does not grow with the dataset
beyond the EM step itself (``benchmarks/bench_step.py`` measures it).
"""

from __future__ import annotations

import streamlit as st

from crowdlab.engines.init import INITS
from crowdlab.engines.run import Run
from crowdlab.ui import lab, panels, presenter, state

SELECT_WIDTH = 340  # px: the longest method title and start fit whole (about 265 px of text in presenter mode)


def method_picker() -> None:
    """Method, initialisation, prior strength, hard EM, seed and stopping rule (a change resets the run); folded
    into an expander in presenter mode, whose label names the run's real start (:func:`state.start_title`)."""
    cfg = state.get_config()
    summary = f"Method: {state.method_title(cfg.method)} · start: {state.start_title()}"
    with presenter.settings(summary, key="stepper.settings", always=True):
        _method_widgets()


def _method_widgets() -> None:
    data = state.get_data()
    options = state.method_options(data)
    state.sync_config_widgets()
    cfg = state.get_config()
    not_em = cfg.method == "mv"
    # one row that wraps when narrow (1024 px with the sidebar): every choice stays readable in full
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    c1 = c2 = c3 = c4 = row
    c1.selectbox(
        "Method",
        options,
        format_func=state.method_title,
        key=state.W_METHOD,
        on_change=state.on_config_widget,
        width=SELECT_WIDTH,
    )
    c2.selectbox(
        "Start from",
        state.inits_for(cfg.method),
        format_func=INITS.get,
        key=state.W_INIT,
        on_change=state.on_config_widget,
        disabled=not_em,
        width=SELECT_WIDTH,
    )
    c3.number_input(
        "Prior strength",
        min_value=0.0,
        step=0.5,
        key=state.W_PRIOR,
        on_change=state.on_config_widget,
        disabled=not_em,
        help=state.prior_help(cfg.method),
        width=130,
    )
    c4.checkbox(
        "Hard EM",
        key=state.W_HARD,
        on_change=state.on_config_widget,
        disabled=not_em or not state.hard_applies(cfg.method),
        help=state.hard_help(cfg.method),
    )
    with st.expander("Seed and stopping rule"):
        d1, d2, d3 = st.columns(3)
        d1.number_input("Seed (random start)", min_value=0, step=1, key=state.W_SEED, on_change=state.on_config_widget)
        d2.number_input(
            "Tolerance (relative)", min_value=0.0, format="%.1e", key=state.W_TOL, on_change=state.on_config_widget
        )
        d3.number_input("Max iterations", min_value=1, step=10, key=state.W_MAX_ITER, on_change=state.on_config_widget)


def stepper_panel() -> None:
    """The one stepper (:func:`crowdlab.ui.lab.stepper`) on the Step page's run: buttons and shortcuts, Play,
    scrubber, the objective and the metrics against gold, then the parameter tabs."""
    lab.stepper(state.MAIN, curves=_curves, panels=panels.draw_tabs)


def _curves(run: Run) -> None:
    """The objective (both half-steps, the bound dashed) and the metrics against gold, current point marked."""
    if run.iterative:
        lab.default_curves(state.MAIN, run)
    else:
        _baseline(run)


def _baseline(run: Run) -> None:
    """Majority vote: one snapshot, no objective; its scores against gold."""
    st.info("Majority vote is the baseline EM starts from: no parameters, no objective, nothing to step.")
    values = {k: v for k, v in state.metrics(run).items() if k != "x"}
    if values:
        row = st.container(horizontal=True, gap="medium")  # wraps when narrow (presenter mode): never "0.…"
        for k, v in values.items():
            row.metric(k, f"{v[0]:.3f}", width="content")
