"""The EM stepper: the method picker and the stepping panel (a fragment, so a Step reruns only the panel).

Keeping a Step instant: a click runs one half-step or two of the engine in its callback; the panel then draws
only stored snapshots. Metrics against gold are computed once per new snapshot (:func:`state.metrics`), the
objective curve reads :meth:`Run.history` (a few numbers per snapshot), and below them lazy tabs
(:mod:`crowdlab.ui.panels`) run only the open panel, each of which shows a bounded number of items and workers,
so the cost of a rerun does not grow with the dataset beyond the EM step itself
(``benchmarks/bench_step.py`` measures it).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

from crowdlab import plots
from crowdlab.em import Run
from crowdlab.init import INITS
from crowdlab.ui import panels, state


def method_picker() -> None:
    """Method, initialisation, prior strength, hard EM, seed and stopping rule (a change resets the run)."""
    data = state.get_data()
    options = state.method_options(data)
    state.sync_config_widgets()
    cfg = state.get_config()
    not_em = cfg.method == "mv"
    c1, c2, c3, c4 = st.columns([3, 3, 2, 2], vertical_alignment="bottom")
    c1.selectbox(
        "Method", options, format_func=state.method_title, key=state.W_METHOD, on_change=state.on_config_widget
    )
    c2.selectbox(
        "Start from",
        state.UI_INITS,
        format_func=INITS.get,
        key=state.W_INIT,
        on_change=state.on_config_widget,
        disabled=not_em,
    )
    c3.number_input(
        "Prior strength",
        min_value=0.0,
        step=0.5,
        key=state.W_PRIOR,
        on_change=state.on_config_widget,
        disabled=not_em,
        help="Pseudo-counts added to every cell (MAP EM); 0 = maximum likelihood.",
    )
    c4.checkbox(
        "Hard EM",
        key=state.W_HARD,
        on_change=state.on_config_widget,
        disabled=not_em,
        help="Replace the posterior by its arg-max (classification EM); the objective becomes log p(x, ẑ | θ).",
    )
    with st.expander("Seed and stopping rule"):
        d1, d2, d3 = st.columns(3)
        d1.number_input("Seed (random start)", min_value=0, step=1, key=state.W_SEED, on_change=state.on_config_widget)
        d2.number_input(
            "Tolerance (relative)", min_value=0.0, format="%.1e", key=state.W_TOL, on_change=state.on_config_widget
        )
        d3.number_input("Max iterations", min_value=1, step=10, key=state.W_MAX_ITER, on_change=state.on_config_widget)


def _progress_bar() -> tuple[object, Callable[[int, int], None]]:
    bar = st.progress(0.0, text="Running EM to convergence...")
    last = [0.0]

    def update(iteration: int, max_iter: int) -> None:
        now = time.perf_counter()
        if now - last[0] > 0.1:
            last[0] = now
            bar.progress(min(iteration / max(max_iter, 1), 1.0), text=f"Running EM: iteration {iteration}")

    return bar, update


@st.fragment
def stepper_panel() -> None:
    """Buttons, scrubber, position, objective curve, metrics against gold, and the parameter heatmaps."""
    run = state.get_run()
    if run is None:
        st.error(state.get_run_error() or "No run: pick a dataset and a method.")
        return
    if st.session_state.get(state.PENDING):
        bar, update = _progress_bar()
        state.run_pending(progress=update)
        bar.empty()
    _buttons(run)
    _position(run)
    if run.violations:
        st.warning(
            "EM check failed (exact EM never lowers its objective or the bound): " + "; ".join(run.violations[:5]),
            icon="⚠️",
        )
    if run.iterative:
        _curves(run)
    else:
        _baseline(run)
    panels.draw_tabs(run)


def _curves(run: Run) -> None:
    """The objective (both half-steps, the bound dashed) and the metrics against gold, current point marked."""
    left, right = st.columns(2)
    model = run.model
    bound_name = "complete-data objective" if model.hard else "bound F(q, θ)"
    with left:
        fig = plots.objective_curve(
            run.history(),
            run.index,
            title=f"Objective: {model.objective_name}",
            objective_name="objective",
            bound_name=bound_name,
        )
        st.plotly_chart(fig, key="stepper.objective_chart")
    with right:
        m = state.metrics(run)
        values = {k: v for k, v in m.items() if k != "x"}
        if values:
            x_now = float(m["x"][run.index])
            st.plotly_chart(plots.metric_curve(m["x"], values, x_now), key="stepper.metric_chart")
            st.caption(" · ".join(f"{k} now: **{v[run.index]:.3f}**" for k, v in values.items()))
        else:
            st.info("This dataset has no gold labels, so there is no accuracy to track.")


def _baseline(run: Run) -> None:
    """Majority vote: one snapshot, no objective; its scores against gold."""
    st.info("Majority vote is the baseline EM starts from: no parameters, no objective, nothing to step.")
    values = {k: v for k, v in state.metrics(run).items() if k != "x"}
    if values:
        for col, (k, v) in zip(st.columns(4), values.items()):
            col.metric(k, f"{v[0]:.3f}")


def _buttons(run: Run) -> None:
    it = run.iterative
    nk = run.next_kind
    cols = st.columns(6)
    cols[0].button("E-step", key="stepper.e_step", on_click=state.on_e_step, disabled=nk != "E", width="stretch")
    cols[1].button("M-step", key="stepper.m_step", on_click=state.on_m_step, disabled=nk != "M", width="stretch")
    cols[2].button("Step", key="stepper.step", on_click=state.on_step, disabled=not it, type="primary", width="stretch")
    cols[3].button(
        "Run to convergence",
        key="stepper.run",
        on_click=state.on_run_to_convergence,
        disabled=not it or (run.converged and run.at_end),
        width="stretch",
    )
    cols[4].button("Back", key="stepper.back", on_click=state.on_back, disabled=run.index == 0, width="stretch")
    cols[5].button(
        "Reset",
        key="stepper.reset",
        on_click=state.on_reset,
        disabled=len(run.snapshots) == 1,
        width="stretch",
    )


def _position(run: Run) -> None:
    n = len(run.snapshots)
    tail = " · converged" if run.iterative and run.converged and run.at_end else ""
    st.markdown(f"#### {state.step_label(run)}")
    st.caption(f"snapshot {run.index} of {n - 1} · {run.start_description}{tail}")
    if n > 1:
        st.session_state[state.W_SCRUB] = run.index
        st.slider("Scrub through the computed snapshots", 0, n - 1, key=state.W_SCRUB, on_change=state.on_scrub)
