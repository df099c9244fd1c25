"""The Compare methods page: every applicable method on the working dataset, side by side, and below it "Which
model fits?" (:mod:`crowdlab.ui.fit_check_view`: held-out labels and predictive checks, no gold needed).

"Run all methods" sets a pending flag (``on_click``); the page then runs
:func:`crowdlab.analysis.compare.compare_methods`
under ``st.progress`` and keeps the :class:`~crowdlab.analysis.compare.Comparison` in session state keyed by
(dataset id, prior strength), so a page switch keeps it and a new dataset asks for a new run.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from crowdlab.analysis.compare import VB_KIND, Comparison, compare_methods
from crowdlab.analysis.export import csv_bytes
from crowdlab.io.annotations import Annotations
from crowdlab.models.baselines import BASELINES
from crowdlab.plots import data as figs
from crowdlab.ui import method_chooser, method_options, sessions, state
from crowdlab.ui.fit_check_view import fit_check_section
from crowdlab.ui.progress import MethodsPace

PRIOR = "compare.prior"  # widget
PRIOR_VALUE = "compare.prior_value"  # plain key behind it
PENDING = "compare.pending"
RESULTS = "compare.results"  # {(data id, prior): Comparison}, the most recent few
KEEP = 4
HEAD_ROWS = 20
MAIN_WIDTH = 560  # px: the main column at 1024 px (sidebar open); the results table's columns must fit in it
METRIC_COLUMNS = ("accuracy", "soft accuracy", "macro F", "log loss", "pearson r")


def _prior() -> float:
    return float(st.session_state.get(PRIOR_VALUE, 0.0))


def result_key() -> tuple[str | None, float]:
    return state.get_data_id(), _prior()


def get_comparison() -> Comparison | None:
    """The comparison of the working dataset at the current prior strength, when it has been run."""
    return (st.session_state.get(RESULTS) or {}).get(result_key())


def _on_prior() -> None:
    st.session_state[PRIOR_VALUE] = float(st.session_state[PRIOR])


def _on_run() -> None:
    st.session_state[PENDING] = True


def run_pending(data: Annotations) -> None:
    """Run every applicable method now (under a progress bar) when "Run all methods" was pressed."""
    if not st.session_state.pop(PENDING, False):
        return
    bar = st.progress(0.0, text="Running every method...")
    # which method, its iteration and measured pace, the time so far (a 50,000-row file sat at "GLAD (4 of 11)")
    paced = MethodsPace(lambda f, text: bar.progress(f, text=text))
    methods = method_chooser.chosen(data)  # the method chooser (issue 38 section 4)
    comparison = compare_methods(
        data,
        methods,
        prior=_prior(),
        progress=paced.method,
        iteration_progress=paced.iteration,
        baselines=method_chooser.with_baselines(),
    )
    bar.empty()
    results = dict(st.session_state.get(RESULTS) or {})
    results[result_key()] = comparison
    st.session_state[RESULTS] = dict(list(results.items())[-KEEP:])


def compare_page(data: Annotations) -> None:
    st.caption(
        "Every method that applies to this dataset, each run to convergence from majority vote. "
        "With gold labels: accuracy, soft accuracy (ties split), macro F and log loss of the posterior."
    )
    st.session_state[PRIOR] = _prior()
    c1, c2 = st.columns([1, 3], vertical_alignment="bottom")
    c1.number_input(
        "Prior strength",
        min_value=0.0,
        step=0.5,
        key=PRIOR,
        on_change=_on_prior,
        help="Pseudo-counts added to every confusion-matrix cell (MAP EM); 0 = maximum likelihood.",
    )
    method_chooser.method_chooser(data)
    c2.button(
        method_chooser.run_label(data),
        key="compare.run",
        type="primary",
        on_click=_on_run,
        disabled=not method_chooser.chosen(data),
    )
    run_pending(data)
    comparison = get_comparison()
    if comparison is None:
        st.info("Press **Run all methods** to fit every method to the current dataset.")
    else:
        show_comparison(data, comparison)
    fit_check_section(data)


def show_comparison(data: Annotations, comparison: Comparison) -> None:
    show_table(data, comparison)
    if data.is_continuous:
        return
    # full width: eleven methods (EM and the baselines) need the room
    st.plotly_chart(figs.method_agreement_heatmap(comparison.agreement), key="compare.agreement_chart")
    st.caption("Share of items on which two methods choose the same class.")
    show_disagreements(data, comparison)


def show_table(data: Annotations, comparison: Comparison) -> None:
    table = comparison.table
    st.subheader("Results")
    shown = table.copy()
    if "objective" in shown:  # majority vote and the baselines have none: a dash, not "None"
        shown["objective"] = [_dash(v, "{:,.2f}") for v in shown["objective"]]
    if "converged" in shown:  # a baseline is not iterated to a fixed point: a dash
        shown["converged"] = ["—" if v is None or v != v else ("yes" if v else "no") for v in shown["converged"]]
    # the main table keeps to a few columns that fit at 1024 px (MAIN_WIDTH); the rest are in the details below it
    if "accuracy" in shown:  # with gold: the three scores an analyst compares on, visible (kind in the details)
        main = ["method", "accuracy", "macro F", "log loss", "time (s)"]
    elif "pearson r" in shown:
        main = ["method", "kind", "pearson r", "time (s)"]
    else:  # "converged" goes to the details too: five columns (610 px) cut "time" to "tin" at 1024 px
        main = ["method", "kind", "iterations", "time (s)"]
    runs = [c for c in ("kind", "iterations", "converged", "objective") if c in shown and c not in main]
    scores = [c for c in METRIC_COLUMNS if c in shown and c not in main]
    config = {
        "method": st.column_config.TextColumn("method", width=275),
        "kind": st.column_config.TextColumn("kind", width=120),
        "iterations": st.column_config.NumberColumn("iterations", format="%d", width=70),
        "converged": st.column_config.TextColumn("converged", width=75),
        "objective": st.column_config.TextColumn("objective", width=85),
        "time (s)": st.column_config.NumberColumn("time (s)", format="%.3f", width=70),
    }
    for col in METRIC_COLUMNS:
        config[col] = st.column_config.NumberColumn(col, format="%.3f", width=70)
    main = [c for c in main if c in shown]
    if "log loss" in main:  # a baseline has no posterior, so no log loss: a dash, not an empty cell
        shown["log loss"] = [_dash(v, "{:.3f}") for v in shown["log loss"]]
        config["log loss"] = st.column_config.TextColumn("log loss", width=70)
    height = "content"  # every method on screen (a dozen rows at most), no inner scrolling (lab.table_height)
    st.dataframe(shown, hide_index=True, column_order=main, column_config=config, height=height, key="compare.table")
    if runs or scores:
        with st.expander("Iterations, convergence, objective, macro F and the posterior's scores"):
            for i, cols in enumerate((runs, scores)):
                if cols:
                    part = shown[["method", *cols]].copy()
                    for c in cols:
                        if c in METRIC_COLUMNS:  # NaN (a baseline's soft accuracy, log loss): a dash
                            part[c] = [_dash(v, "{:.3f}") for v in part[c]]
                    st.dataframe(
                        part, hide_index=True, column_config=DETAILS_CONFIG, height=height, key=f"compare.details{i}"
                    )
    kind_notes(comparison)
    collapse_notes(data, comparison)
    if data.is_continuous:
        if "pearson r" in table:
            st.caption(
                "The scores model estimates each item's mean from the good annotators only; the plain mean "
                "averages everyone. Pearson r: correlation of each estimate with the gold means."
            )
        else:
            st.caption("No gold means: nothing to score the estimates against.")
        return
    if "accuracy" in table:
        st.caption(best_caption(table))
    else:
        st.caption("This dataset has no gold labels: compare the methods by how much they agree.")


def collapse_notes(data: Annotations, comparison: Comparison) -> None:
    """The Step page's notice for a collapsed class prior, for each method whose fit has one (one-coin scored 0.583
    on bluebirds, below majority vote's 0.759, with no word why)."""
    for run in comparison.runs.values():
        method_options.prior_collapse_notice(run, name=run.model.info.title)


def best_caption(table) -> str:
    """ "Highest accuracy: **A** (0.898)." naming every method that reaches it (ties: the same share of gold)."""
    acc = table["accuracy"].to_numpy(dtype=float)
    top = np.nanmax(acc)
    winners = [f"**{m}**" for m, a in zip(table["method"], acc) if abs(a - top) <= 1e-12]
    tie = f" (a tie of {len(winners)})" if len(winners) > 1 else ""
    return f"Highest accuracy{tie}: {', '.join(winners)} ({top:.3f})."


# the details tables (the run's iterations, convergence and objective; the scores of its labels and posterior):
# four columns each, so they fit at 1024 px
DETAILS_CONFIG = {
    "method": st.column_config.TextColumn("method", width=275),
    "iterations": st.column_config.NumberColumn("iterations", format="%d", width=75),
    "converged": st.column_config.TextColumn("converged", width=80),
    "objective": st.column_config.TextColumn("objective", width=90),
    **{c: st.column_config.TextColumn(c, width=80) for c in METRIC_COLUMNS},
}


def _dash(v, fmt: str) -> str:
    return fmt.format(v) if v is not None and np.isfinite(v) else "—"


VB_NOTE = (
    "Rows of kind *variational Bayes* (IBCC, MACE (VB), EBCC) step like EM but integrate over the workers' parameters: "
    "their objective is a lower bound on the evidence (the ELBO), not the log-likelihood of the EM rows, so the two "
    "objectives are not comparable."
)


def kind_notes(comparison: Comparison) -> None:
    """What the "variational Bayes" and "baseline (not EM)" rows are, and which baselines do not apply and why."""
    vb = [VB_NOTE] if (comparison.table["kind"] == VB_KIND).any() else []
    if not comparison.baselines and not comparison.skipped:
        if vb:
            st.caption(vb[0])
        return
    note = (
        "Rows of kind *baseline (not EM)* climb no likelihood and cannot be stepped: majority vote, Wawa (a vote "
        "weighted by each worker's agreement with the majority), Zero-Based Skill (skills nudged towards the "
        "weighted vote), KOS (Karger, Oh & Shah 2011: message passing, binary labels only) and M-MSR (Ma & "
        "Olshevsky 2020: robust rank-one completion of the workers' agreement rates). Their scores are vote "
        "shares, not posteriors, so soft accuracy and log loss are left out. Time: wall-clock seconds of the fit."
    )
    skipped = [f"{BASELINES[k][0]} left out: {v}" for k, v in comparison.skipped.items()]
    st.caption(" ".join([*vb, note, *skipped]))


def show_disagreements(data: Annotations, comparison: Comparison) -> None:
    dis = comparison.disagreements
    st.markdown(f"**Items where the methods disagree: {len(dis):,} of {data.n_items:,}**")
    if dis.empty:
        st.caption("Every method gives every item the same label.")
        return
    st.dataframe(dis.head(HEAD_ROWS), hide_index=True, width="stretch", key="compare.disagreements")
    if len(dis) > HEAD_ROWS:
        st.caption(f"The first {HEAD_ROWS} of {len(dis):,} disputed items; the download has them all.")
    sessions.download_button(
        "Download the disputed items (CSV)",
        csv_bytes(dis),
        file_name="disagreements.csv",
        mime="text/csv",
        key="compare.download",
    )
