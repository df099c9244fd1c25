"""Restarts and prior sweeps: distinct optima, their spread, quality against prior strength.

Conventions: :mod:`crowdlab.plots.common`."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from crowdlab.plots.common import (
    LEGEND_BELOW,
    METRIC_COLORS,
    OBJECTIVE_COLOR,
    _axis,
    _empty,
    _layout,
    figure,
    legend_margin,
)

# ---------------------------------------------------------------------------- restarts and prior sweeps
INIT_ORDER = ("majority", "all_good", "random")
OPTIMUM_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
QUALITY_COLUMNS = ("accuracy", "macro F", "pearson r")


def _quality_column(table) -> str | None:
    for c in QUALITY_COLUMNS:
        if c in table.columns and np.isfinite(table[c].to_numpy(dtype=float)).any():
            return c
    return None


def _start_names(table) -> list[str]:
    return [f"{i} (seed {s})" if i == "random" else str(i) for i, s in zip(table["init"], table["seed"])]


def restart_scatter(table, title: str = "Restarts: final objective vs accuracy") -> go.Figure:
    """One point per restart: final objective (x) against accuracy / Pearson r (y; iterations without gold).

    ``table``: :func:`crowdlab.analysis.sweep.restarts` (columns init, seed, objective, iterations, optimum, and
    accuracy / pearson r, relabelled when present). One trace per optimum (``meta="optimum <k>"``, 0 = best),
    coloured by it; restarts that ended at a relabelling of the classes (mirror optima) are drawn as crosses.
    The legend keeps the two encodings apart: a circle in each optimum's colour (``meta="key optimum <k>"``,
    toggling its trace), and where there are mirror optima a grey cross (``meta="key relabelled"``); the points'
    own traces stay out of it (their legend symbol would be their first point's, a circle or a cross).
    """
    if len(table) == 0:
        return _empty(title, "No restarts yet.")
    ycol = _quality_column(table) or "iterations"
    names = np.array(_start_names(table), dtype=object)
    relabelled = table["relabelled"].to_numpy(dtype=bool) if "relabelled" in table.columns else None
    traces = []
    for k in sorted(int(v) for v in table["optimum"].unique()):
        sel = table["optimum"].to_numpy() == k
        sym = np.where(relabelled[sel], "x", "circle") if relabelled is not None else "circle"
        tags = np.where(relabelled[sel], " · classes relabelled", "") if relabelled is not None else [""] * sel.sum()
        traces.append(
            dict(
                type="scatter",
                x=table["objective"].to_numpy(dtype=float)[sel],
                y=table[ycol].to_numpy(dtype=float)[sel],
                mode="markers",
                meta=f"optimum {k}",
                name=f"optimum {k}" + (" (best)" if k == 0 else ""),
                legendgroup=f"optimum {k}",
                showlegend=False,
                text=names[sel],
                customdata=np.asarray(tags, dtype=object),
                marker=dict(symbol=sym, size=11, color=OPTIMUM_COLORS[k % len(OPTIMUM_COLORS)], opacity=0.8),
                hovertemplate="%{text}%{customdata}<br>objective %{x:.6g}<br>" + ycol + " %{y:.4g}<extra></extra>",
            )
        )
    keys = [
        dict(
            type="scatter",
            x=[None],
            y=[None],
            mode="markers",
            meta="key " + t["meta"],
            name=t["name"],
            legendgroup=t["legendgroup"],
            marker=dict(symbol="circle", size=11, color=t["marker"]["color"], opacity=0.8),
            hoverinfo="skip",
        )
        for t in traces
    ]
    if relabelled is not None and relabelled.any():
        keys.append(
            dict(
                type="scatter",
                x=[None],
                y=[None],
                mode="markers",
                meta="key relabelled",
                name="classes relabelled (mirror)",
                marker=dict(symbol="x", size=11, color="#7f7f7f"),
                hoverinfo="skip",
            )
        )
    unit = ycol in QUALITY_COLUMNS[:2]
    rows = max(2, len(keys))  # in half the page at 1024 px the legend puts one entry on a row
    layout = _layout(
        title,
        400 + 24 * (rows - 2),
        legend=LEGEND_BELOW,
        margin=legend_margin(rows=rows),
        xaxis=_axis(title=dict(text="final objective", standoff=6), tickformat=".6~g"),
        yaxis=_axis(title=dict(text=ycol), range=[0.0, 1.02] if unit else None),
    )
    return figure(traces + keys, layout)


def objective_spread(table, title: str = "Spread of the final objectives") -> go.Figure:
    """Final objectives by kind of start: one box with all its points per start kind (``meta`` = the kind)."""
    if len(table) == 0:
        return _empty(title, "No restarts yet.")
    kinds = [k for k in INIT_ORDER if k in set(table["init"])] + sorted(set(table["init"]) - set(INIT_ORDER))
    names = np.array(_start_names(table), dtype=object)
    traces = []
    for j, kind in enumerate(kinds):
        sel = table["init"].to_numpy() == kind
        traces.append(
            dict(
                type="box",
                y=table["objective"].to_numpy(dtype=float)[sel],
                name=kind,
                meta=kind,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                text=names[sel],
                marker=dict(color=METRIC_COLORS[j % len(METRIC_COLORS)], size=8),
                line=dict(width=1),
                fillcolor="rgba(0,0,0,0)",
                hovertemplate="%{text}<br>objective %{y:.6g}<extra></extra>",
            )
        )
    layout = _layout(
        title,
        400,
        showlegend=False,
        xaxis=_axis(title=dict(text="start", standoff=6)),
        yaxis=_axis(title=dict(text="final objective"), tickformat=".6~g"),
    )
    return figure(traces, layout)


def prior_sweep_figure(table, title: str = "Prior strength: quality and objective") -> go.Figure:
    """x = prior strength (categories, in the order given); left axis [0, 1]: accuracy, macro F, mean worker
    accuracy, Pearson r (those present); right axis: the final objective (dashed, ``meta="objective"``)."""
    if len(table) == 0:
        return _empty(title, "No prior sweep yet.")
    x = [f"{float(s):g}" for s in table["prior"]]
    traces = []
    cols = [c for c in (*QUALITY_COLUMNS, "mean worker accuracy") if c in table.columns]
    for j, c in enumerate(cols):
        color = METRIC_COLORS[j % len(METRIC_COLORS)]
        traces.append(
            dict(
                type="scatter",
                x=x,
                y=table[c].to_numpy(dtype=float),
                mode="lines+markers",
                meta=c,
                name=c,
                line=dict(color=color, width=2),
                marker=dict(color=color, size=7),
                hovertemplate="prior %{x}<br>" + c + " %{y:.4f}<extra></extra>",
            )
        )
    traces.append(
        dict(
            type="scatter",
            x=x,
            y=table["objective"].to_numpy(dtype=float),
            mode="lines+markers",
            meta="objective",
            name="objective (right axis)",
            yaxis="y2",
            line=dict(color=OBJECTIVE_COLOR, width=2, dash="dash"),
            marker=dict(color=OBJECTIVE_COLOR, size=7, symbol="diamond"),
            hovertemplate="prior %{x}<br>objective %{y:.6g}<extra></extra>",
        )
    )
    layout = _layout(
        title,
        400,
        legend=LEGEND_BELOW,
        margin=legend_margin(),
        xaxis=_axis(title=dict(text="prior strength (pseudo-counts)", standoff=6), type="category"),
        yaxis=_axis(title=dict(text="against gold / worker accuracy"), range=[0.0, 1.02]),
        yaxis2=dict(
            title=dict(text="final objective"),
            overlaying="y",
            side="right",
            showgrid=False,
            tickmode="auto",
            nticks=6,
            tickformat=".6~g",
        ),
    )
    return figure(traces, layout)
