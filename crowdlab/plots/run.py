"""Plotly figure builders: pure functions from EM results to ``go.Figure`` (no Streamlit here).

Conventions shared by every figure:

- The EM x axis counts iterations in half-steps: the initialisation sits at 0, the E-step of iteration i at
  i - 0.5 and its M-step at i (:func:`half_step_positions`), so both half-steps of every iteration are drawn.
- Heatmaps of probabilities use one FIXED colour range [0, 1] (``zmin=0, zmax=1`` and a shared colour axis with
  ``cmin=0, cmax=1``), so colours mean the same thing at every iteration; rows run top-down (the y axis is
  reversed, row 0 on top); numbers are written on the cells when the matrix is small.
- Figures are built as plain dicts and validated once by a single ``go.Figure(...)`` call (no templates, no
  ``make_subplots``, no per-shape ``add_*`` calls): each builder costs a few milliseconds, so a Step stays instant.
- Confusion matrices follow the house convention ``gamma[m, k_said, k_true]``: columns = true class,
  rows = what the worker says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

__all__ = [
    "COLOR_SCALE",
    "confusion_grid",
    "half_step_positions",
    "metric_curve",
    "objective_curve",
    "posterior_heatmap",
]

COLOR_SCALE = "Blues"
OBJECTIVE_COLOR = "#1f77b4"
BOUND_COLOR = "#ff7f0e"
CURRENT_COLOR = "#d62728"
METRIC_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")
GRID_COLOR = "#e6e6e6"
X_TITLE = "iteration (E-steps at the half)"
_MARGIN = dict(l=10, r=10, t=50, b=10)


def half_step_positions(kind: Sequence[str], iteration: Sequence[int]) -> np.ndarray:
    """x position of every snapshot: init and M-steps at their iteration, an E-step half a step earlier.

    ``iteration`` counts the M-steps done (as :class:`crowdlab.em.Snapshot` does), so the E-step that opens
    iteration i carries ``iteration = i - 1`` and sits at ``i - 0.5``.
    """
    kind = np.asarray(kind)
    it = np.asarray(iteration, dtype=np.float64)
    return np.where(kind == "E", it + 0.5, it)


def _layout(title: str, height: int, **extra) -> dict:
    """A light layout without a template (templates cost ~10 ms per figure to build)."""
    out = dict(
        title=dict(text=title),
        height=height,
        margin=_MARGIN,
        paper_bgcolor="white",
        plot_bgcolor="white",
        font=dict(size=12),
    )
    out.update(extra)
    return out


def _axis(**kw) -> dict:
    return dict(gridcolor=GRID_COLOR, zerolinecolor=GRID_COLOR, linecolor="#bbbbbb", **kw)


def _empty(title: str, message: str, height: int = 320) -> go.Figure:
    return go.Figure(
        layout=_layout(
            title,
            height,
            annotations=[
                dict(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=14))
            ],
            xaxis=dict(visible=False),
            yaxis=dict(visible=False),
        )
    )


def objective_curve(
    history: Mapping[str, np.ndarray],
    current_index: int,
    title: str = "Objective",
    *,
    objective_name: str = "log-likelihood",
    bound_name: str = "bound F(q, θ)",
    show_bound: bool = True,
    height: int = 360,
) -> go.Figure:
    """The objective after every half-step, the bound as a dashed line, and the current snapshot marked.

    ``history``: :meth:`crowdlab.em.Run.history` (arrays ``kind``, ``iteration``, ``objective``, ``bound``).
    Traces (their ``meta`` says which): ``objective`` (lines+markers, named ``objective_name``; circles after
    init/M-steps, diamonds after E-steps), ``bound`` (dashed, named ``bound_name``, when ``show_bound`` and
    finite values exist) and ``current`` (one large marker at ``current_index``). A run without an objective
    (majority vote) gives a figure with a message instead.
    """
    kind = np.asarray(history["kind"])
    obj = np.asarray(history["objective"], dtype=np.float64)
    bound = np.asarray(history["bound"], dtype=np.float64)
    if obj.size == 0 or not np.isfinite(obj).any():
        return _empty(title, "No objective: this method is not iterative.", height)
    x = half_step_positions(kind, history["iteration"])
    i = int(np.clip(current_index, 0, obj.size - 1))
    symbols = np.where(kind == "E", "diamond", "circle")
    step_name = np.array([{"init": "init", "E": "after E-step", "M": "after M-step"}.get(k, k) for k in kind])
    traces = [
        dict(
            type="scatter",
            x=x,
            y=obj,
            mode="lines+markers",
            name=objective_name,
            meta="objective",
            line=dict(color=OBJECTIVE_COLOR, width=2),
            marker=dict(symbol=symbols, size=7, color=OBJECTIVE_COLOR),
            customdata=np.stack([np.arange(obj.size).astype(str), step_name], axis=1),
            hovertemplate="snapshot %{customdata[0]} (%{customdata[1]})<br>x = %{x}<br>%{y:.6g}"
            "<extra>objective</extra>",
        )
    ]
    if show_bound and np.isfinite(bound).any():
        traces.append(
            dict(
                type="scatter",
                x=x,
                y=bound,
                mode="lines",
                name=bound_name,
                meta="bound",
                line=dict(color=BOUND_COLOR, width=2, dash="dash"),
                hovertemplate="x = %{x}<br>%{y:.6g}<extra>bound</extra>",
            )
        )
    traces.append(
        dict(
            type="scatter",
            x=[x[i]],
            y=[obj[i]],
            mode="markers",
            name="current",
            meta="current",
            marker=dict(symbol="circle-open", size=18, color=CURRENT_COLOR, line=dict(width=3)),
            hovertemplate="current snapshot<br>%{y:.6g}<extra></extra>",
        )
    )
    layout = _layout(
        title,
        height,
        legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0),
        xaxis=_axis(title=dict(text=X_TITLE, standoff=6), rangemode="tozero", zeroline=False),
        yaxis=_axis(tickformat=".6~g"),
    )
    return go.Figure(data=traces, layout=layout)


def metric_curve(
    iterations: Sequence[float],
    values_by_name: Mapping[str, Sequence[float]],
    current_iteration: float,
    title: str = "Against gold",
    *,
    y_range: tuple[float, float] | None = None,
    height: int = 360,
) -> go.Figure:
    """One line per metric over the snapshots, a dotted vertical line and markers at the current position.

    ``iterations``: x of each snapshot (e.g. :func:`half_step_positions`); ``values_by_name``: metric name ->
    one value per snapshot (NaN allowed). The y range defaults to [0, 1.02] when every value lies in [0, 1]
    (it then stays put while stepping), else it follows the data.
    """
    x = np.asarray(iterations, dtype=np.float64)
    traces = []
    finite = []
    ys = []
    for j, (name, values) in enumerate(values_by_name.items()):
        y = np.asarray(values, dtype=np.float64)
        if y.shape != x.shape:
            raise ValueError(f"metric {name!r} has {y.size} values for {x.size} positions.")
        ys.append(y)
        finite.append(y[np.isfinite(y)])
        color = METRIC_COLORS[j % len(METRIC_COLORS)]
        traces.append(
            dict(
                type="scatter",
                x=x,
                y=y,
                mode="lines+markers",
                name=name,
                line=dict(color=color, width=2),
                marker=dict(size=5, color=color),
                hovertemplate="x = %{x}<br>%{y:.4f}<extra>" + name + "</extra>",
            )
        )
    if x.size and ys:
        at = int(np.argmin(np.abs(x - current_iteration)))
        traces.append(
            dict(
                type="scatter",
                x=[x[at]] * len(ys),
                y=[float(y[at]) for y in ys],
                mode="markers",
                name="current",
                marker=dict(symbol="circle-open", size=14, color=CURRENT_COLOR, line=dict(width=3)),
                hoverinfo="skip",
            )
        )
    allv = np.concatenate(finite) if finite else np.zeros(0)
    if y_range is None and (allv.size == 0 or (allv.min() >= 0 and allv.max() <= 1)):
        y_range = (0.0, 1.02)
    vline = dict(
        type="line",
        x0=current_iteration,
        x1=current_iteration,
        y0=0,
        y1=1,
        xref="x",
        yref="paper",
        line=dict(color=CURRENT_COLOR, width=1, dash="dot"),
    )
    layout = _layout(
        title,
        height,
        shapes=[vline],
        legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0),
        xaxis=_axis(title=dict(text=X_TITLE, standoff=6), rangemode="tozero"),
        yaxis=_axis(range=list(y_range) if y_range is not None else None),
    )
    return go.Figure(data=traces, layout=layout)


def _cell_text(z: np.ndarray) -> np.ndarray:
    return np.char.mod("%.2f", z)


def _grid(rows: int, cols: int, hspace: float, vspace: float) -> list[tuple[list[float], list[float]]]:
    """(x domain, y domain) of each cell of a rows x cols grid, row-major from the top left."""
    w = (1.0 - hspace * (cols - 1)) / cols
    h = (1.0 - vspace * (rows - 1)) / rows
    out = []
    for r in range(rows):
        top = 1.0 - r * (h + vspace)
        for c in range(cols):
            left = c * (w + hspace)
            out.append(([left, left + w], [max(top - h, 0.0), top]))
    return out


def confusion_grid(
    gamma: np.ndarray,
    worker_names: Sequence[str],
    class_names: Sequence[str],
    max_workers: int = 12,
    *,
    workers: Sequence[int] | None = None,
    cols: int = 4,
    text_max_classes: int = 5,
    title: str = "Confusion matrices Γ_m (columns: true class, rows: worker says)",
) -> go.Figure:
    """A grid of heatmaps, one per worker: ``gamma[m]`` with true class as columns, "worker says" as rows.

    ``gamma`` (M, K, K) with ``gamma[m, k_said, k_true]``. Shows ``workers`` (indices) or the first
    ``max_workers``, titled by worker name (layout annotations). Every heatmap uses the shared colour axis
    ``coloraxis`` fixed to [0, 1] and its y axis is reversed (row 0 on top); numbers sit on the cells when
    K <= ``text_max_classes``. The grid has ``cols`` columns; unused cells of the last row get hidden axes.
    """
    gamma = np.asarray(gamma, dtype=np.float64)
    if gamma.ndim != 3 or gamma.shape[1] != gamma.shape[2]:
        raise ValueError(f"gamma must be (M, K, K), got shape {gamma.shape}.")
    M, K, _ = gamma.shape
    idx = list(range(min(M, max_workers))) if workers is None else [int(w) for w in workers][:max_workers]
    if not idx:
        return _empty(title, "No workers to show.")
    names = [str(c) for c in class_names]
    n = len(idx)
    cols = max(1, min(cols, n))
    rows = math.ceil(n / cols)
    cell_h, gap = 190, 75  # pixels: a heatmap, and the room between rows for tick labels and the next title
    plot_h = rows * cell_h + (rows - 1) * gap
    vspace = gap / plot_h if rows > 1 else 0.0
    domains = _grid(rows, cols, hspace=0.05, vspace=vspace)
    show_text = K <= text_max_classes
    traces = []
    layout = _layout(
        title,
        plot_h + 140,
        margin=dict(l=10, r=10, t=90, b=50),
        coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=COLOR_SCALE, colorbar=dict(title=dict(text="P"), thickness=12)),
        annotations=[],
    )
    for j in range(rows * cols):
        s = "" if j == 0 else str(j + 1)
        xd, yd = domains[j]
        r, c = divmod(j, cols)
        used = j < n
        layout["xaxis" + s] = dict(
            domain=xd,
            anchor="y" + s,
            type="category",
            visible=used,
            title=dict(text="true class" if r == rows - 1 or j + cols >= n else "", standoff=4),
        )
        layout["yaxis" + s] = dict(
            domain=yd,
            anchor="x" + s,
            type="category",
            autorange="reversed",
            visible=used,
            title=dict(text="says" if c == 0 else "", standoff=4),
        )
        if not used:
            continue
        m = idx[j]
        z = gamma[m]
        wname = str(worker_names[m])
        traces.append(
            dict(
                type="heatmap",
                z=z,
                x=names,
                y=names,
                xaxis="x" + s,
                yaxis="y" + s,
                zmin=0.0,
                zmax=1.0,
                coloraxis="coloraxis",
                text=_cell_text(z) if show_text else None,
                texttemplate="%{text}" if show_text else None,
                name=wname,
                hovertemplate="true %{x}, says %{y}: %{z:.3f}<extra>" + wname + "</extra>",
                xgap=1,
                ygap=1,
            )
        )
        layout["annotations"].append(
            dict(
                text=wname,
                x=(xd[0] + xd[1]) / 2,
                y=yd[1],
                xref="paper",
                yref="paper",
                xanchor="center",
                yanchor="bottom",
                yshift=4,
                showarrow=False,
                font=dict(size=13),
            )
        )
    return go.Figure(data=traces, layout=layout)


def posterior_heatmap(
    q: np.ndarray,
    item_names: Sequence[str],
    class_names: Sequence[str],
    gold: np.ndarray | None = None,
    *,
    title: str = "Posterior q (rows: items, columns: classes)",
    text_max_cells: int = 400,
) -> go.Figure:
    """Heatmap of the posterior q (N, K): items as rows (top-down), classes as columns, fixed range [0, 1].

    ``gold`` (N,) int codes with -1 = unknown: the cell of each known gold class is outlined (a layout shape
    named ``gold``), so the number in it stays readable. Numbers sit on the cells when N * K <=
    ``text_max_cells``.
    """
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 2:
        raise ValueError(f"q must be (items, classes), got shape {q.shape}.")
    N, K = q.shape
    items = [str(s) for s in item_names]
    classes = [str(c) for c in class_names]
    if len(items) != N or len(classes) != K:
        raise ValueError(f"names do not match q's shape {q.shape}: {len(items)} items, {len(classes)} classes.")
    show_text = N * K <= text_max_cells
    heat = dict(
        type="heatmap",
        z=q,
        x=classes,
        y=items,
        zmin=0.0,
        zmax=1.0,
        coloraxis="coloraxis",
        text=_cell_text(q) if show_text else None,
        texttemplate="%{text}" if show_text else None,
        name="q",
        hovertemplate="item %{y}, class %{x}: %{z:.3f}<extra></extra>",
        xgap=1,
        ygap=1,
    )
    shapes = []
    if gold is not None:
        g = np.asarray(gold)
        known = np.flatnonzero(g >= 0) if g.dtype.kind in "iu" else np.zeros(0, dtype=int)
        # on category axes, shapes use the category index as the coordinate
        shapes = [
            dict(
                type="rect",
                x0=int(g[n]) - 0.5,
                x1=int(g[n]) + 0.5,
                y0=int(n) - 0.5,
                y1=int(n) + 0.5,
                xref="x",
                yref="y",
                line=dict(color=CURRENT_COLOR, width=2),
                name="gold",
            )
            for n in known
        ]
    layout = _layout(
        title,
        max(240, 100 + 22 * N),
        margin=dict(l=10, r=10, t=80, b=10),
        shapes=shapes,
        coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=COLOR_SCALE, colorbar=dict(title=dict(text="q"), thickness=12)),
        xaxis=dict(type="category", side="top"),
        yaxis=dict(type="category", autorange="reversed"),
    )
    return go.Figure(data=[heat], layout=layout)
