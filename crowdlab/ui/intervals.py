"""Standard errors and 95 % intervals per worker at the cursor of a run, for the Step page.

:func:`worker_intervals_panel` draws :func:`crowdlab.analysis.fisher.worker_intervals` (observed information, Louis'
identity; exact binomial intervals for estimates on the boundary) for Dawid-Skene, one-coin and two-coin runs:
a dot-and-whisker chart sorted by estimate and the table. For the good/bad scores model (the EM lecture) it draws the
item means mu_i instead (the ``SCORES_ROWS`` with the widest intervals, on the score range) with sigma and pi_good
in a small table. Other models get a note instead.

Self-contained: its view choices (accuracy or the model's own parameters, linear or logit scale, which parameter)
are widgets ``stepper.intervals.*`` mirrored under the plain key ``stepper.intervals.view``, so they survive a page
switch; the intervals are kept in a small cache in session state (``stepper.intervals.cache``) keyed on the run,
the parameters at the cursor and the choices, so scrubbing back to a snapshot seen before, or an E-step (which
leaves the parameters as they were), recomputes nothing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from crowdlab.analysis import fisher
from crowdlab.analysis.export import csv_bytes
from crowdlab.engines.run import Run
from crowdlab.errors import CrowdlabError
from crowdlab.io import safe
from crowdlab.models.params import ClassParams
from crowdlab.models.scores import ScoreParams
from crowdlab.plots import risk as figs
from crowdlab.ui import lab, sessions
from crowdlab.ui.live_chart import live_chart

SUPPORTED = ("ds", "one_coin", "two_coin")
W_WHAT = "stepper.intervals.what"
W_SCALE = "stepper.intervals.scale"
W_PARAM = "stepper.intervals.param"
VIEW = "stepper.intervals.view"  # plain key: {widget key: value}
CACHE = "stepper.intervals.cache"  # plain key: [(run, params, (converged, what, scale), DataFrame)], newest last
CACHE_SIZE = 8
WHAT = {"accuracy": "Accuracy Σ_k π_k Γ(k, k)", "native": "The model's own parameters"}
SCALE = {"linear": "Wald, linear (clipped to [0, 1])", "logit": "Wald on the logit scale"}
DEFAULTS = {W_WHAT: "accuracy", W_SCALE: "linear", W_PARAM: None}
MAX_ROWS = 40  # workers in the chart (the lowest and highest estimates); the table has every one
SCORES_ROWS = 40  # item means in the scores model's chart: the widest intervals
# the workers' table under the chart: fixed widths that add up to less than the tab at 1024 px with the sidebar
# open in presenter mode (about 440 px); the CSV has every column, the reason of an exact interval included
TABLE_COLUMNS = {
    "worker": st.column_config.TextColumn("worker", width=85),
    "estimate": st.column_config.NumberColumn("estimate", format="%.3f", width=75),
    "se": st.column_config.NumberColumn("SE", format="%.3f", width=55),
    "lower": st.column_config.NumberColumn("lower", format="%.3f", width=55),
    "upper": st.column_config.NumberColumn("upper", format="%.3f", width=55),
    "n_labels": st.column_config.NumberColumn("labels", format="%d", width=55),
    "exact": st.column_config.CheckboxColumn(
        "exact", width=50, help="On the boundary: an exact binomial interval instead of Wald's"
    ),
}


CALLS = {"n": 0}  # computations done in this process (tests read it)
ELSEWHERE = {  # where the models this tab does not cover show their intervals
    "mace": " MACE's are in the Workers tab's report (accuracy) and the Details tab (P(spamming)): Wald, from the "
    "information of each worker's own θ and ξ.",
    "mace_vb": " MACE's (variational Bayes) credible intervals are in the Workers tab's report and the Details tab.",
    "ibcc": " IBCC's credible intervals are in the Workers tab's report and the Details tab.",
    "glad": " GLAD's worker report (Workers tab) gives an exact binomial interval with the labels taken as known.",
}


def _view(key: str):
    return (st.session_state.get(VIEW) or {}).get(key, DEFAULTS[key])


def _on_view(key: str) -> None:
    st.session_state[VIEW] = {**(st.session_state.get(VIEW) or {}), key: st.session_state.get(key)}


def _mirrored(key: str, valid, default=None) -> dict:
    """Widget arguments; the remembered choice (or ``default``, else the module default when it is no longer valid)
    is written into the widget key first."""
    v = _view(key)
    st.session_state[key] = v if valid(v) else (DEFAULTS[key] if default is None else default)
    return {"key": key, "on_change": _on_view, "args": (key,)}


def applies(key: str) -> bool:
    """Whether the method (its key) has intervals in this tab at all (:data:`SUPPORTED` and the scores model)."""
    return key in SUPPORTED or key == "scores"


def supported(run: Run) -> bool:
    """Intervals exist for Dawid-Skene, one-coin, two-coin and scores runs (with parameters at the cursor)."""
    if run.model.info.key == "scores":
        return isinstance(run.params, ScoreParams)
    return run.model.info.key in SUPPORTED and isinstance(run.params, ClassParams)


def intervals(run: Run, what: str, scale: str) -> pd.DataFrame:
    """:func:`crowdlab.analysis.fisher.worker_intervals` at the cursor, from the small session cache when seen
    before."""
    params = run.params
    key = (run.converged, what, scale)
    cache = st.session_state.setdefault(CACHE, [])
    for r, p, k, df in cache:  # identity, not ids: an id can be reused once an old snapshot is freed
        if r is run and p is params and k == key:
            return df
    CALLS["n"] += 1
    with st.spinner("Computing the observed information..."):
        df = fisher.worker_intervals(run, what=what, scale=scale)
    cache.append((run, params, key, df))
    del cache[:-CACHE_SIZE]
    return df


def worker_intervals_panel(run: Run) -> None:
    """Per worker: estimate, standard error and 95 % interval at the cursor (chart and table)."""
    if not supported(run):
        st.info(
            "Standard errors and 95 % intervals per worker are available for Dawid-Skene, one-coin and two-coin "
            "only (and item means for the good/bad scores model), from the observed information of their "
            "likelihood. Pick one of them to see them." + ELSEWHERE.get(run.model.info.key, "")
        )
        return
    if run.model.info.key == "scores":
        _scores_panel(run)
        return
    c1, c2, c3 = st.columns([2, 2, 3])
    what = c1.radio("Interval for", list(WHAT), format_func=WHAT.get, **_mirrored(W_WHAT, WHAT.__contains__))
    scale = c2.radio("Scale", list(SCALE), format_func=SCALE.get, **_mirrored(W_SCALE, SCALE.__contains__))
    try:
        df = intervals(run, what, scale)
    except (CrowdlabError, ValueError, np.linalg.LinAlgError) as exc:
        st.warning(f"No intervals at this snapshot: {safe.md(exc)}")
        return
    names = list(dict.fromkeys(df["parameter"]))
    if len(names) > 1:
        param = c3.selectbox("Parameter", names, **_mirrored(W_PARAM, lambda v: v in names, names[0]))
    else:
        param = names[0]
        c3.markdown(f"**Parameter:** {safe.md(param)}")
    rows = df[df["parameter"] == param]
    exact = rows["note"].to_numpy() != ""
    chance = 1.0 / run.data.n_classes if param == "accuracy" or param.startswith("theta") else None
    fig = figs.interval_chart(
        rows["worker"].tolist(),
        rows["estimate"].to_numpy(),
        rows["lower"].to_numpy(),
        rows["upper"].to_numpy(),
        n_labels=rows["n_labels"].to_numpy(),
        exact=exact,
        chance=chance,
        x_title=param,
        title=f"{param}: estimate and {df.attrs.get('level', 0.95):.0%} interval per worker ({lab.where(run)})",
        max_rows=MAX_ROWS,
    )
    # the chart across the tab, the table under it: beside the chart (two fifths of the tab, 170 px in presenter
    # mode with the sidebar open) the table showed two of its columns and cut its button to "Download all interva…"
    live_chart(fig, "stepper.intervals_chart")
    table = rows.drop(columns=["parameter"]).sort_values("estimate", ascending=False, kind="stable")
    table["exact"] = table["note"].to_numpy() != ""
    st.dataframe(
        table,
        hide_index=True,
        key="stepper.intervals_table",
        column_order=list(TABLE_COLUMNS),
        column_config=TABLE_COLUMNS,
        height=lab.table_height(len(table)),
    )
    sessions.download_button(
        "Download all intervals (CSV)",
        csv_bytes(df),
        file_name="worker_intervals.csv",
        mime="text/csv",
        key="stepper.intervals_download",
    )
    notes = [
        "From the observed information at this snapshot (Louis' identity): SE = √(diagonal of its inverse), "
        "through the delta method for the accuracy"
    ]
    if len(rows) > MAX_ROWS:
        notes.append(f"the chart shows the {MAX_ROWS // 2} lowest and highest of {len(rows):,} workers")
    if exact.any():
        notes.append(f"hollow: {int(exact.sum())} estimate(s) on the boundary, exact binomial interval")
    st.caption("; ".join(notes) + ".")
    for note in df.attrs.get("notes", []):
        st.caption(f"⚠️ {safe.md(note)}")


def _scores_panel(run: Run) -> None:
    """Good/bad scores model: item means with their intervals (the widest ones), sigma and pi_good in a table."""
    try:
        df = intervals(run, "native", "linear")
    except (CrowdlabError, ValueError, np.linalg.LinAlgError) as exc:
        st.warning(f"No intervals at this snapshot: {safe.md(exc)}")
        return
    level = df.attrs.get("level", 0.95)
    low, high = df.attrs.get("score_range", (0.0, 1.0))
    mu = df[df["parameter"] == "mu"]
    widest = mu.assign(width=mu["upper"] - mu["lower"]).sort_values("width", ascending=False, kind="stable")
    shown = widest.head(SCORES_ROWS)
    fig = figs.interval_chart(
        shown["worker"].tolist(),
        shown["estimate"].to_numpy(),
        shown["lower"].to_numpy(),
        shown["upper"].to_numpy(),
        n_labels=shown["n_labels"].to_numpy(),
        exact=shown["note"].to_numpy() != "",
        x_title="item mean μᵢ",
        title=f"Item means: estimate and {level:.0%} interval ({lab.where(run)})",
        max_rows=SCORES_ROWS,
    )
    fig.update_xaxes(range=[low, high])
    live_chart(fig, "stepper.intervals_chart")  # the table under it, as the workers' table
    glob = df[df["parameter"] != "mu"][["parameter", "estimate", "se", "lower", "upper", "note"]]
    st.dataframe(
        glob,
        hide_index=True,
        key="stepper.intervals_scores_table",
        column_order=["parameter", "estimate", "se", "lower", "upper"],
        column_config={
            "parameter": st.column_config.TextColumn("parameter", width=90),
            "estimate": st.column_config.NumberColumn("estimate", format="%.4f", width=80),
            "se": st.column_config.NumberColumn("SE", format="%.4f", width=70),
            "lower": st.column_config.NumberColumn("lower", format="%.4f", width=70),
            "upper": st.column_config.NumberColumn("upper", format="%.4f", width=70),
        },
        height=lab.table_height(len(glob)),
    )
    sessions.download_button(
        "Download all intervals (CSV)",
        csv_bytes(df),
        file_name="item_mean_intervals.csv",
        mime="text/csv",
        key="stepper.intervals_download",
    )
    notes = [
        "From the observed information at this snapshot (Louis' identity over the annotators' good/bad posterior): "
        "SE = √(diagonal of its inverse); Wald intervals clipped to the score range"
    ]
    if len(mu) > SCORES_ROWS:
        notes.append(f"the chart shows the {SCORES_ROWS} widest of {len(mu):,} item intervals (the CSV has all)")
    st.caption("; ".join(notes) + ".")
    for note in df.attrs.get("notes", []):
        st.caption(f"⚠️ {safe.md(note)}")
