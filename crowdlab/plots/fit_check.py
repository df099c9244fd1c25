"""Figures of the fit check (:mod:`crowdlab.analysis.fit_check`): each model's held-out log score per label with its
95 % interval. Pure functions from the check's table to ``go.Figure``."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from crowdlab.io import safe
from crowdlab.plots.common import CURRENT_COLOR, _axis, _empty, _layout, figure

GREY = "#7f7f7f"


def held_out_figure(table: pd.DataFrame, *, title: str = "Held-out labels: mean log score per label") -> go.Figure:
    """One row per model (the table's order, best on top): its mean log score per held-out label (nats, higher is
    better) and the 95 % interval as an error bar; the recommended model (the first row) in colour."""
    if table is None or table.empty:
        return _empty(title, "No model was checked.")
    names = [safe.html(safe.shorten(m, 34)) for m in table["method"]]
    x = table["held-out"].to_numpy(dtype=float)
    lo = table["lo"].to_numpy(dtype=float)
    hi = table["hi"].to_numpy(dtype=float)
    colours = [CURRENT_COLOR] + [GREY] * (len(names) - 1)
    trace = go.Scatter(
        x=x,
        y=names,
        mode="markers",
        marker=dict(size=11, color=colours),
        error_x=dict(type="data", symmetric=False, array=hi - x, arrayminus=x - lo, color=GREY, thickness=1.5),
        hovertemplate="%{y}: %{x:.3f} nats per held-out label<extra></extra>",
    )
    layout = _layout(
        title,
        max(260, 90 + 34 * len(names)),
        xaxis=_axis(title="mean log predictive probability per held-out label (nats; higher is better)"),
        yaxis=_axis(autorange="reversed", automargin=True),
        showlegend=False,
    )
    return figure([trace], layout)
