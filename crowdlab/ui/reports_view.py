"""Worker reports in the app (:func:`crowdlab.analysis.reports.worker_report`): the Step page's "Worker report" tab and
the
Data page's section.

The table has one row per worker: labels, estimated accuracy with its interval, the worst confusion, Raykar & Yu's
(2012) spammer score and the agreement with the consensus; Krippendorff's alpha of the whole label set sits above
it as a metric. The panels receive the runs they report and fit none: the Step page reports the current snapshot of
its run (computed once per snapshot and kept in a small cache in session state); the Data page reports the
Dawid-Skene run it passes, :func:`crowdlab.ui.state.reference_run` (fitted once per dataset id there), and the
report is kept once per dataset id (``st.cache_data``). Worker names are shown by ``st.dataframe``, which renders
plain text (no Markdown).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from crowdlab.analysis.export import csv_bytes
from crowdlab.analysis.reports import ACCURACY_UNDER_PRIOR, worker_report
from crowdlab.engines.run import Run
from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.io.safe import plural
from crowdlab.ui import lab, sessions, state

SORTS = ("spammer score (lowest first)", "accuracy (lowest first)", "labels (most first)")
STEP_CACHE = "stepper.report_cache"  # plain key: [((run id, snapshot index), DataFrame), ...], newest last
STEP_CACHE_SIZE = 4
REPORT_ERRORS = (ModelError, ValueError, ArithmeticError)  # a dataset the reference fit or its report cannot handle

ACCURACY_CAPTION = (
    "**accuracy**: estimated P(the worker's label is right) = {formula}, with its 95 % interval (*lower*–*upper*)."
)
CAPTIONS = (
    "**worst confusion** (under the table): the largest off-diagonal entry of the worker's confusion matrix "
    "(*rate*: its probability).",
    "**spammer score** (Raykar & Yu 2012): how far the confusion matrix is from one whose answer does not depend "
    "on the true class. Near 0: a spammer (clicks without looking, whatever their favourite class); near 1: "
    "reliable (or reliably inverted).",
    "**agreement**: share of the worker's labels equal to the consensus label.",
)


def table_only(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` without its attributes, for ``st.dataframe``: a worker report's ``attrs`` hold the dependence check's
    report, which Streamlit would try (and fail, with a warning) to write as a table attribute."""
    df = df.copy(deep=False)
    df.attrs = {}
    return df


def sorted_report(df: pd.DataFrame, how: str) -> pd.DataFrame:
    """The report ordered as the user asked (ties in worker order)."""
    if how == SORTS[1]:
        return df.sort_values("accuracy", kind="stable")
    if how == SORTS[2]:
        return df.sort_values("n_labels", ascending=False, kind="stable")
    return df.sort_values("spammer_score", kind="stable")


def _alpha_text(alpha: float) -> str:
    return "—" if alpha is None or not math.isfinite(alpha) else f"{alpha:.3f}"


def report_table(df: pd.DataFrame, key: str, *, consensus: str) -> None:
    """Krippendorff's alpha, a sort choice, the table (3 decimals, fixed widths for 1024 px) and the captions."""
    alpha = df.attrs.get("krippendorff_alpha", float("nan"))
    # a row that wraps when narrow (presenter mode with the sidebar open): the metric's label is never cut
    row = st.container(horizontal=True, gap="medium", vertical_alignment="bottom", key=f"{key}.head")
    row.metric(
        "Krippendorff's α",
        _alpha_text(alpha),
        help="Agreement of the whole label set beyond chance (nominal α, Krippendorff 2011): 1 = perfect, "
        "0 = no better than chance.",
        width="content",
    )
    how = row.radio("Sort by", SORTS, horizontal=True, key=f"{key}.sort", width="stretch")
    shown = table_only(sorted_report(df, how))
    # 7 narrow columns fit the main column at 1024 px; the worst confusions (long class names) get their own table
    config = {
        "worker": st.column_config.TextColumn("worker", width=90),
        "n_labels": st.column_config.NumberColumn("labels", format="%d", width=60),
        "accuracy": st.column_config.NumberColumn("accuracy", format="%.3f", width=75),
        "lower": st.column_config.NumberColumn("lower", format="%.3f", width=60),
        "upper": st.column_config.NumberColumn("upper", format="%.3f", width=60),
        "spammer_score": st.column_config.NumberColumn("spammer", format="%.3f", width=70),
        "agreement": st.column_config.NumberColumn("agreement", format="%.3f", width=80),
    }
    if "abstention_rate" in shown:  # the share of the worker's answers that were "can't tell"
        config = {
            **{k: config[k] for k in ("worker", "n_labels")},
            "abstention_rate": st.column_config.NumberColumn(
                "can't tell", format="%.3f", width=70, help="Share of the worker's answers that were \"can't tell\""
            ),
            **{k: v for k, v in config.items() if k not in ("worker", "n_labels")},
        }
    st.dataframe(
        shown,
        hide_index=True,
        column_order=list(config),
        column_config=config,
        height=lab.table_height(len(shown), 320),
        key=f"{key}.table",
    )
    with st.expander("Each worker's worst confusion"):
        st.dataframe(
            shown[["worker", "worst_confusion", "worst_rate"]],
            hide_index=True,
            column_config={
                "worker": st.column_config.TextColumn("worker", width=90),
                "worst_confusion": st.column_config.TextColumn("worst confusion", width=300),
                "worst_rate": st.column_config.NumberColumn("rate", format="%.3f", width=70),
            },
            height=lab.table_height(len(shown), 240),
            key=f"{key}.confusions",
        )
    sessions.download_button(
        "Download the worker report (CSV)",
        csv_bytes(shown),
        file_name="worker_report.csv",
        mime="text/csv",
        key=f"{key}.download",
    )
    kinds = sorted(set(df["interval"]))
    how_ci = " and ".join(kinds)
    st.caption(
        ACCURACY_CAPTION.format(formula=df.attrs.get("accuracy_formula", ACCURACY_UNDER_PRIOR))
        + " "
        + " ".join(CAPTIONS)
        + f" Intervals: {how_ci}. Consensus: {consensus}. α = {_alpha_text(alpha)} over the items with two or more "
        "labels."
    )


# ---------------------------------------------------------------------------- the Step page's tab
def _step_report(run: Run) -> pd.DataFrame:
    """The report of the cursor's snapshot, computed once per (run id, snapshot) and kept in session state."""
    key = (st.session_state.get(state.RUN_ID), run.current.index, id(run))
    cache = list(st.session_state.get(STEP_CACHE) or [])
    for k, df in cache:
        if k == key:
            return df
    df = worker_report(run)
    cache.append((key, df))
    st.session_state[STEP_CACHE] = cache[-STEP_CACHE_SIZE:]
    return df


def step_report_panel(run: Run) -> None:
    """The Step page's "Worker report" tab: the table for the current snapshot's parameters."""
    data = run.data
    if data.is_continuous or not hasattr(run.params, "gamma"):
        st.info(
            "The worker report needs a class model with confusion matrices: pick Dawid-Skene, one-coin, two-coin, "
            "GLAD, MACE or IBCC (majority vote has no parameters; the scores model's annotators are only good or "
            "bad, see the Workers tab)."
        )
        return
    try:
        df = _step_report(run)
    except (ModelError, ValueError, np.linalg.LinAlgError) as exc:
        st.info(f"No worker report for this snapshot: {exc}")
        return
    at = lab.where(run)
    st.markdown(f"**Worker report, {at}** ({data.n_workers:,} workers)")
    report_table(df, "stepper.report", consensus=f"the arg-max of q, {at}")
    dependence_section(df.attrs.get("dependence"), at)


DEPENDENCE_CAPTION = (
    "Each pair of workers with {min_shared} or more shared items: the number of items on which they agree, against "
    "what the fitted model predicts if they erred independently given the true class (their confusion columns, "
    "with the item's class posterior computed without the pair). p-value: the exact Poisson-binomial tail (normal "
    "approximation above 500 shared items), one-sided; flagged: Holm-adjusted p ≤ {level:g}. κ (from -1 to 1): "
    "the excess agreement as a share of the most it could be, a shortfall as a share of the predicted agreement; "
    "the colours span the values of most pairs, a few extreme ones saturate. A clique that dominates the crowd can "
    "become the model's idea of the truth: it then looks accurate, and the excess shows between the workers "
    "outside it. Effective independent annotators: the participation ratio (Σλ)²/Σλ² of the eigenvalues λ of the "
    "residual correlation matrix (κ of the tested pairs); Kish's (Σw)²/Σw² with w = each worker's labels × "
    "information per label, independence assumed; and both together, (Σw)²/(wᵀRw)."
)


def dependence_section(rep, at: str) -> None:
    """Under the worker report: the pairs that agree more than conditional independence predicts (the heatmap of
    :func:`crowdlab.plots.copying.pair_heatmap`, the most likely copying pairs) and the effective numbers."""
    from crowdlab.plots.copying import pair_heatmap

    st.markdown(f"**Do the workers copy each other?** ({at})")
    if rep is None:
        st.info("The dependence check could not run on this snapshot.")
        return
    e = rep.effective
    row = st.container(horizontal=True, gap="medium", key="stepper.dependence.head")
    row.metric("pairs flagged", f"{rep.n_flagged} of {rep.n_tested}", width="content")
    if e:
        row.metric("effective annotators", f"{e['eigen']:.1f} of {e['n_workers']}", width="content")
        row.metric("Kish", f"{e['kish']:.1f}", width="content")
        row.metric("both", f"{e['weighted']:.1f}", width="content")
    st.plotly_chart(lab.wrap_title(pair_heatmap(rep), 60), key="stepper.dependence_chart")
    if rep.n_tested:
        top = rep.frame(top=10)
        st.dataframe(
            top,
            hide_index=True,
            column_config={
                "worker a": st.column_config.TextColumn("worker a", width=110),
                "worker b": st.column_config.TextColumn("worker b", width=110),
                "shared items": st.column_config.NumberColumn("shared", format="%d", width=60),
                "agree": st.column_config.NumberColumn("agree", format="%.0f", width=60),
                "agree if independent": st.column_config.NumberColumn("if indep.", format="%.1f", width=70),
                "excess (kappa)": st.column_config.NumberColumn("κ", format="%.3f", width=60),
                "p-value": st.column_config.NumberColumn("p", format="%.2g", width=60),
                "Holm p": st.column_config.NumberColumn("Holm p", format="%.2g", width=60),
                "flagged": st.column_config.CheckboxColumn("flagged", width=60),
            },
            height=lab.table_height(len(top), 320),
            key="stepper.dependence.table",
        )
    st.caption(DEPENDENCE_CAPTION.format(min_shared=rep.min_shared, level=rep.level))


# ---------------------------------------------------------------------------- the Data page's section
AUTO_LABELS = 200_000  # larger datasets fit Dawid-Skene for the report only when asked
REQUESTED = "data.report.requested"  # plain key: the dataset id whose report was asked for


def _request(data_id: str) -> None:
    st.session_state[REQUESTED] = data_id


@st.cache_data(max_entries=8, show_spinner="Computing the worker report...")
def data_report(data_id: str, _run: Run) -> pd.DataFrame:
    """The worker report of ``_run``, the dataset's reference Dawid-Skene run (:func:`crowdlab.ui.state.reference_run`),
    with its iterations and stop reason, cached per dataset id (the run itself is not hashed)."""
    df = worker_report(_run)
    df.attrs["iterations"] = int(_run.last.iteration)
    df.attrs["stop_reason"] = _run.stop_reason
    return df


def _waits_for_button(data: Annotations) -> bool:
    return data.n_obs > AUTO_LABELS and st.session_state.get(REQUESTED) != state.data_key(data)


def report_due(data: Annotations) -> bool:
    """Whether the Data page's worker report is made now: class labels, and at most AUTO_LABELS labels or its
    button pressed (what a caller checks before it asks for the reference run)."""
    return not data.is_continuous and not _waits_for_button(data)


def ds_report_if_ready(data: Annotations) -> pd.DataFrame | None:
    """The Data page's Dawid-Skene worker report (of the same reference run, from :mod:`crowdlab.ui.state`), or None
    where that fit waits for its button (more than AUTO_LABELS labels) or fails: what the IBCC details compare their
    credible intervals with."""
    if not report_due(data):
        return None
    try:
        return data_report(state.data_key(data), state.reference_run(data))
    except REPORT_ERRORS:
        return None


def data_report_section(data: Annotations, run: Run | None, error: str | None = None) -> None:
    """The Data page's worker report (class labels only) of ``run``, the dataset's reference Dawid-Skene run, which
    the page passes (:func:`crowdlab.ui.state.reference_run`): None while the report waits for its button (more than
    AUTO_LABELS labels; see :func:`report_due`) or where the fit failed (``error`` says why)."""
    if data.is_continuous:
        return
    st.subheader("Worker report")
    data_id = state.data_key(data)
    if _waits_for_button(data):
        st.button(
            f"Fit Dawid-Skene for the worker report ({data.n_obs:,} labels)",
            key="data.report.fit",
            on_click=_request,
            args=(data_id,),
        )
        st.caption(f"Above {AUTO_LABELS:,} labels the fit waits for this button (it may take a while).")
        return
    if run is None:
        st.info(f"No worker report for this dataset: {error or 'the Dawid-Skene fit did not run.'}")
        return
    try:
        df = data_report(data_id, run)
    except REPORT_ERRORS as exc:
        st.info(f"No worker report for this dataset: {exc}")
        return
    report_table(
        df,
        "data.report",
        consensus=f"Dawid-Skene fitted from majority vote ({plural(df.attrs.get('iterations', 0), 'iteration')})",
    )
    fit_check_note(data)


def fit_check_note(data: Annotations) -> None:
    """Under the Data page's report: whether Dawid-Skene is the right model for this crowd, from the Compare page's
    fit check when it has been run on this dataset (the recommendation and each worker's held-out score under
    Dawid-Skene and the recommended model), else where to run it."""
    from crowdlab.io import safe
    from crowdlab.models import MODELS
    from crowdlab.ui import fit_check_view

    found = fit_check_view.latest_for(state.get_data_id())
    if found is None:
        st.caption(
            "Is Dawid-Skene the right model for this crowd? **Which model fits?** on the Compare methods page checks "
            "it without gold: held-out labels and replicated crowds."
        )
        return
    st.markdown(f"**Which model fits?** {safe.md(found.recommendation)}")
    workers = found.worker_frame(data)
    cols = ["worker", "held-out labels"]
    for key in dict.fromkeys(["ds", found.recommended]):
        if key in found.probabilities:
            cols.append(MODELS[key].info.title)
    st.dataframe(workers[cols].head(20), hide_index=True, key="data.report.fit_check")
    st.caption(
        "Each worker's mean log score per held-out label (nats) under Dawid-Skene and the recommended model, the "
        "workers the recommended model predicts worst first (from the Compare page's fit check)."
    )
