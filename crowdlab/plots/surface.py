"""The likelihood surface: objective contours with the EM path.

Conventions: :mod:`crowdlab.plots.common`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab.io import safe
from crowdlab.plots.common import (
    CURRENT_COLOR,
    LEGEND_BELOW,
    _axis,
    _layout,
    figure,
    legend_margin,
)


# ---------------------------------------------------------------------------- the likelihood surface
def objective_contour(
    xs: np.ndarray,
    ys: np.ndarray,
    Z: np.ndarray,
    path_x: Sequence[float],
    path_y: Sequence[float],
    *,
    path_index: Sequence[int] | None = None,
    x_title: str = "x",
    y_title: str = "y",
    title: str = "Objective over two parameters",
    end_label: str = "now",
    floor_quantile: float = 0.2,
    height: int = 540,
) -> go.Figure:
    """Contours of Z[iy, ix] (the objective on the grid xs x ys) with the path EM took drawn on top, made to read
    on a projector: a thick path with large markers, the start and the end (``end_label``) written beside them.

    Z is shown relative to its maximum on the grid (0 = the best point of this slice), clipped from below at
    its ``floor_quantile`` quantile so the contours resolve the region around the maximum rather than the
    steep walls near 0 and 1. Traces (``meta``): ``surface`` (contour), ``path`` (lines+markers through
    ``path_x``, ``path_y``), ``start`` (the first path point, labelled "start"), ``current`` (the last path
    point, labelled ``end_label``) and ``max`` (the grid's best point). The axes span the grid (with a 2 %
    margin, so points on the edge show): [0, 1] for probabilities.
    """
    xs = np.asarray(xs, dtype=np.float64)
    ys = np.asarray(ys, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    if Z.shape != (ys.size, xs.size):
        raise ValueError(f"Z has shape {Z.shape}; expected (len(ys), len(xs)) = {(ys.size, xs.size)}.")
    px = np.asarray(path_x, dtype=np.float64)
    py = np.asarray(path_y, dtype=np.float64)
    if px.shape != py.shape or px.size == 0:
        raise ValueError("the path needs at least one point, with as many x as y values.")
    x_title, y_title = safe.html(x_title), safe.html(y_title)
    rel = Z - np.nanmax(Z)
    floor = float(np.nanquantile(rel, floor_quantile))
    if not floor < 0:
        floor = -1.0
    shown = np.maximum(rel, floor)
    iy, ix = np.unravel_index(int(np.nanargmax(Z)), Z.shape)
    idx = np.arange(px.size) if path_index is None else np.asarray(path_index)

    def span(v: np.ndarray) -> list[float]:
        lo, hi = float(v.min()), float(v.max())
        if lo >= 0.0 and hi <= 1.0 and lo <= 0.01 and hi >= 0.99:
            return [-0.02, 1.02]
        pad = 0.02 * (hi - lo or 1.0)
        return [lo - pad, hi + pad]

    label_font = dict(size=16, color="black")
    xr, yr = span(xs), span(ys)

    def away(dx: float, dy: float) -> str:
        """A text position on the side opposite to the direction (dx, dy) (in axis-range units)."""
        dx, dy = dx / (xr[1] - xr[0]), dy / (yr[1] - yr[0])
        return ("bottom" if dy > 0 else "top") + " " + ("left" if dx > 0 else "right")

    def inside(pos: str, x: float, y: float, label: str) -> str:
        """Keep a label on the side of its point that faces the middle of the plot when the point is too near
        an edge for the label (about 2 % of the plot's width per character) to fit there."""
        v, h = pos.split(" ")
        fx, fy = (x - xr[0]) / (xr[1] - xr[0]), (y - yr[0]) / (yr[1] - yr[0])
        room = min(0.4, 0.022 * len(label) + 0.03)
        h = "right" if fx < room else "left" if fx > 1 - room else h
        v = "top" if fy < 0.15 else "bottom" if fy > 0.85 else v
        return f"{v} {h}"

    start_pos = away(px[1] - px[0], py[1] - py[0]) if px.size > 1 else "top right"
    end_pos = away(px[-2] - px[-1], py[-2] - py[-1]) if px.size > 1 else "bottom right"
    start_pos, end_pos = inside(start_pos, px[0], py[0], "start"), inside(end_pos, px[-1], py[-1], end_label)
    traces = [
        dict(
            type="contour",
            x=xs,
            y=ys,
            z=shown,
            meta="surface",
            name="objective",
            zmin=floor,
            zmax=0.0,
            ncontours=24,
            colorscale="Viridis",
            contours=dict(coloring="heatmap", showlines=True),
            line=dict(width=0.5, color="rgba(255,255,255,0.4)"),
            colorbar=dict(title=dict(text="Δ objective"), thickness=14),
            hovertemplate="x %{x:.4g}, y %{y:.4g}<br>objective − slice max: %{z:.4g}<extra></extra>",
            showlegend=False,
        ),
        dict(
            type="scatter",
            x=px,
            y=py,
            mode="lines+markers",
            meta="path",
            name="EM path (init and every M-step)",
            customdata=idx,
            line=dict(color="white", width=5),
            marker=dict(size=13, color="#ff7f0e", line=dict(width=2, color="black")),
            hovertemplate="snapshot %{customdata}<br>(%{x:.4g}, %{y:.4g})<extra>EM path</extra>",
        ),
        dict(
            type="scatter",
            x=[px[0]],
            y=[py[0]],
            mode="markers+text",
            meta="start",
            name="start",
            showlegend=False,
            text=["start"],
            textposition=start_pos,
            textfont=label_font,
            cliponaxis=False,
            marker=dict(symbol="square", size=20, color="white", line=dict(width=3, color="black")),
            hovertemplate="start (%{x:.4g}, %{y:.4g})<extra></extra>",
        ),
        dict(
            type="scatter",
            x=[px[-1]],
            y=[py[-1]],
            mode="markers+text",
            meta="current",
            name=end_label,
            showlegend=False,
            text=[end_label],
            textposition=end_pos,
            textfont=label_font,
            cliponaxis=False,
            marker=dict(symbol="circle-open", size=28, color=CURRENT_COLOR, line=dict(width=5)),
            hovertemplate=end_label + " (%{x:.4g}, %{y:.4g})<extra></extra>",
        ),
        dict(
            type="scatter",
            x=[xs[ix]],
            y=[ys[iy]],
            mode="markers",
            meta="max",
            name="best point of this slice",
            marker=dict(symbol="star", size=22, color="yellow", line=dict(width=2, color="black")),
            hovertemplate="slice maximum (%{x:.4g}, %{y:.4g})<extra></extra>",
        ),
    ]
    layout = _layout(
        title,
        height,
        title_width=64,
        font=dict(size=14),
        margin=legend_margin(1),
        legend=LEGEND_BELOW,
        xaxis=_axis(title=dict(text=x_title, standoff=6, font=dict(size=16)), range=xr),
        yaxis=_axis(title=dict(text=y_title, font=dict(size=16)), range=yr),
    )
    return figure(traces, layout)
