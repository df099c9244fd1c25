"""The Compare page's "Which model fits?" section: :func:`crowdlab.analysis.fit_check.fit_check` on the working
dataset (held-out labels and posterior predictive checks, no gold needed), its recommendation in plain words, the
held-out scores with their intervals, and every check.

"Check which model fits" sets a pending flag (``on_click``); the section then runs the check under ``st.progress``
and keeps the :class:`~crowdlab.analysis.fit_check.FitCheck` in session state keyed by (dataset id, folds), so a
page switch keeps it and a new dataset asks for a new run.
"""

from __future__ import annotations

import streamlit as st

from crowdlab.analysis.export import csv_bytes
from crowdlab.analysis.fit_check import FOLDS, PPC_LEVEL, FitCheck, check_methods, fit_check
from crowdlab.errors import ModelError
from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.plots.fit_check import held_out_figure
from crowdlab.ui import sessions, state

FOLDS_KEY = "compare.fit.folds"  # widget
FOLDS_VALUE = "compare.fit.folds_value"  # plain key behind it
PENDING = "compare.fit.pending"
RESULTS = "compare.fit.results"  # {(data id, folds): FitCheck}, the most recent few
KEEP = 3
REPLICATES = 100  # the app's predictive replicates (the API's default is 200)
COLUMNS = ["method", "held-out", "lo", "hi", "gap", "gap se", "impossible", "checks failed", "gold accuracy"]


def _folds() -> int:
    return int(st.session_state.get(FOLDS_VALUE, FOLDS))


def _on_folds() -> None:
    st.session_state[FOLDS_VALUE] = int(st.session_state[FOLDS_KEY])


def _on_run() -> None:
    st.session_state[PENDING] = True


def result_key() -> tuple[str | None, int]:
    return state.get_data_id(), _folds()


def get_fit_check() -> FitCheck | None:
    """The fit check of the working dataset at the chosen number of folds, when it has been run."""
    return (st.session_state.get(RESULTS) or {}).get(result_key())


def latest_for(data_id: str | None) -> FitCheck | None:
    """The most recent fit check of dataset ``data_id`` (any number of folds), or None."""
    found = [v for (d, _), v in (st.session_state.get(RESULTS) or {}).items() if d == data_id]
    return found[-1] if found and data_id is not None else None


def run_pending(data: Annotations) -> None:
    """Run the check now (under a progress bar) when "Check which model fits" was pressed."""
    if not st.session_state.pop(PENDING, False):
        return
    bar = st.progress(0.0, text="Checking which model fits...")

    def progress(i: int, n: int, title: str) -> None:
        if i < n:
            bar.progress(i / n, text=f"{title} ({i + 1} of {n}): {_folds()} folds over the labels, then replicates")

    try:
        result = fit_check(data, folds=_folds(), replicates=REPLICATES, progress=progress)
    except ModelError as exc:
        bar.empty()
        st.warning(str(exc))
        return
    bar.empty()
    results = dict(st.session_state.get(RESULTS) or {})
    results[result_key()] = result
    st.session_state[RESULTS] = dict(list(results.items())[-KEEP:])


def fit_check_section(data: Annotations) -> None:
    """The section, drawn under the comparison."""
    st.subheader("Which model fits?")
    if data.is_continuous:
        st.caption("The fit check compares class models; this dataset has continuous scores.")
        return
    try:
        methods = check_methods(data)
    except ModelError as exc:
        st.caption(str(exc))
        return
    st.caption(
        "No gold needed. Each model is refitted without one fold of the labels and predicts the labels it did not "
        "see (the mean log probability per held-out label, smoothed alike for every model; higher is better), and "
        "label sets replicated from each fit are set beside the real one (unanimous items, agreement within items "
        "and between pairs of workers, the majority's class shares). A model can fit the labels it was fitted on "
        f"and still fail both. Models: {', '.join(methods)}."
    )
    st.session_state[FOLDS_KEY] = _folds()
    c1, c2 = st.columns([1, 3], vertical_alignment="bottom")
    c1.number_input(
        "Folds", min_value=2, max_value=10, step=1, key=FOLDS_KEY, on_change=_on_folds, help="Folds over the labels."
    )
    c2.button("Check which model fits", key="compare.fit.run", on_click=_on_run)
    run_pending(data)
    result = get_fit_check()
    if result is None:
        st.info(
            "Press **Check which model fits** to refit every class model once per fold (a few seconds on a "
            "small set, minutes on 10^5 labels)."
        )
        return
    show_fit_check(data, result)


def show_fit_check(data: Annotations, result: FitCheck) -> None:
    st.markdown(f"**Recommendation.** {safe.md(result.recommendation)}")
    st.plotly_chart(held_out_figure(result.table), key="compare.fit.chart")
    cols = [c for c in COLUMNS if c in result.table]
    config = {c: st.column_config.NumberColumn(c, format="%.3f", width=70) for c in cols if c != "method"}
    config["method"] = st.column_config.TextColumn("method", width=260)
    config["checks failed"] = st.column_config.NumberColumn("checks failed", format="%d", width=70)
    st.dataframe(
        result.table,
        hide_index=True,
        column_order=cols,
        column_config=config,
        height="content",
        key="compare.fit.table",
    )
    skipped = (
        f" {safe.plural(result.n_skipped, 'held-out label')} of workers with no other label were not scored."
        if result.n_skipped
        else ""
    )
    st.caption(
        f"held-out: mean log score per held-out label (nats) over {result.n_scored:,} labels in {result.folds} folds, "
        f"every model's predictive smoothed alike ((1 - eps) p + eps / R, eps = {result.epsilon:g}); lo, hi: its 95 % "
        "interval (item-clustered); gap: the best model's score minus this one's, on the same labels, with its "
        "standard error; impossible: the share of held-out labels the unsmoothed model gave less than 1e-6; checks "
        f"failed: replicated statistics whose p-value is below {PPC_LEVEL:g}."
        + (" gold accuracy: the full fit's, never used by the check." if "gold accuracy" in result.table else "")
        + skipped
    )
    if not result.checks.empty:
        with st.expander("Posterior predictive checks: where the observed labels fall among the replicates"):
            st.caption(
                "observed: the statistic on the real labels; replicated: its mean over label sets drawn from the "
                "fitted model with the same design; lo, hi: the replicates' central 95 %; p: two-sided; model prior: "
                "the model's own class share beside the majority's."
            )
            st.dataframe(
                result.checks,
                hide_index=True,
                column_config={
                    c: st.column_config.NumberColumn(c, format="%.3f")
                    for c in ("observed", "replicated", "lo", "hi", "p", "model prior")
                },
                key="compare.fit.checks",
            )
    with st.expander("Per worker: how well each model predicts the worker's held-out labels"):
        workers = result.worker_frame(data)
        st.caption(
            "Mean log score of each worker's held-out labels (nats) under each model, the workers the recommended "
            "model predicts worst first. A worker one model predicts far better than another is where they part."
        )
        st.dataframe(workers.head(50), hide_index=True, key="compare.fit.workers")
        if len(workers) > 50:
            st.caption(f"The first 50 of {len(workers):,} workers; the download has them all.")
        sessions.download_button(
            "Download the per-worker scores (CSV)",
            csv_bytes(workers),
            file_name="fit_check_workers.csv",
            mime="text/csv",
            key="compare.fit.download_workers",
        )
    sessions.download_button(
        "Download the fit check (CSV)",
        csv_bytes(result.table),
        file_name="fit_check.csv",
        mime="text/csv",
        key="compare.fit.download",
    )
