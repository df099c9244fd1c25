"""The live class's figure: what a label bought, with and without next-item routing (no Streamlit here)."""

from __future__ import annotations

import plotly.graph_objects as go

from crowdlab.plots.common import LEGEND_BELOW, _axis, _empty, _layout

# routing: solid lines; a fixed deal: dashed; majority vote and Dawid-Skene keep their colours across both
_STYLE = {"mv": ("majority vote", "#7f7f7f"), "ds": ("Dawid-Skene (EM)", "#1f77b4")}


def routing_curves(curves: dict[str, dict], live: dict | None = None, live_name: str = "our class") -> go.Figure:
    """Accuracy against the truth over labels spent. ``curves``: a name ("routing", "fixed deal") -> the dict of
    :func:`crowdlab.classroom.items.accuracy_over_labels` (labels, mv, ds), drawn as lines (routing solid, others
    dashed); ``live``: the class's own votes, as markers."""
    title = "Accuracy over labels spent: majority vote and EM, with and without routing"
    traces = []
    for name, c in curves.items():
        dash = "solid" if name == "routing" else "dash"
        for method, (label, color) in _STYLE.items():
            xs = [x for x, y in zip(c.get("labels", []), c.get(method, [])) if y is not None]
            ys = [y for y in c.get(method, []) if y is not None]
            if xs:
                traces.append(dict(type="scatter", mode="lines", x=xs, y=ys, name=f"{label}, {name}",
                                   line=dict(color=color, dash=dash, width=3)))  # fmt: skip
    if live:
        for method, (label, color) in _STYLE.items():
            xs = [x for x, y in zip(live.get("labels", []), live.get(method, [])) if y is not None]
            ys = [y for y in live.get(method, []) if y is not None]
            if xs:
                traces.append(dict(type="scatter", mode="markers", x=xs, y=ys, name=f"{label}, {live_name}",
                                   marker=dict(color=color, size=11, symbol="diamond")))  # fmt: skip
    if not traces:
        return _empty(title, "No votes with a truth yet.")
    layout = _layout(
        title,
        420,
        title_width=60,
        xaxis=_axis(title=dict(text="labels spent"), rangemode="tozero"),
        yaxis=_axis(title=dict(text="accuracy (items with a truth)"), range=[0, 1.02], tickformat=".0%"),
        legend=LEGEND_BELOW,
    )
    return go.Figure(data=traces, layout=layout)
