"""Curves over the iterations: the objective (and bound), the convergence trace, metrics against gold.

Conventions: :mod:`crowdlab.plots.common`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab.io import safe
from crowdlab.plots.common import (
    BOUND_COLOR,
    CURRENT_COLOR,
    LEGEND_BELOW,
    METRIC_COLORS,
    OBJECTIVE_COLOR,
    X_TITLE,
    _axis,
    _empty,
    _layout,
    figure,
    half_step_positions,
    iteration_ticks,
    legend_margin,
    min_font,
    with_markers,
)


def objective_curve(
    history: Mapping[str, np.ndarray],
    current_index: int,
    title: str = "Objective",
    *,
    objective_name: str = "log-likelihood",
    bound_name: str = "bound L(q, θ)",
    show_bound: bool = True,
    height: int = 360,
) -> go.Figure:
    """The objective after every half-step, the bound as a dashed line, and the current snapshot marked.

    ``history``: :meth:`crowdlab.engines.run.Run.history` (arrays ``kind``, ``iteration``, ``objective``, ``bound``).
    Traces (their ``meta`` says which): ``objective`` (lines+markers, named ``objective_name``), ``e_steps``
    (diamonds on the snapshots after E-steps, when there are any), ``bound`` (dashed, named ``bound_name``, when
    ``show_bound`` and finite values exist) and ``current`` (one large marker at ``current_index``). A run
    without an objective (majority vote) gives a figure with a message instead.
    """
    kind = np.asarray(history["kind"])
    obj = np.asarray(history["objective"], dtype=np.float64)
    bound = np.asarray(history["bound"], dtype=np.float64)
    if obj.size == 0 or not np.isfinite(obj).any():
        return _empty(title, "No objective: this method is not iterative.", height)
    x = half_step_positions(kind, history["iteration"])
    i = int(np.clip(current_index, 0, obj.size - 1))
    objective_name, bound_name = safe.html(objective_name), safe.html(bound_name)
    step_name = np.array([{"init": "init", "E": "after E-step", "M": "after M-step"}.get(k, k) for k in kind])
    e = kind == "E"
    marked = with_markers(obj.size)  # a marker per half-step only on a short run
    # scalar marker symbols only: a per-point symbol array is validated point by point (~25 ms at 1,000 points)
    traces = [
        dict(
            type="scatter",
            x=x,
            y=obj,
            mode="lines+markers" if marked else "lines",
            name=objective_name,
            meta="objective",
            line=dict(color=OBJECTIVE_COLOR, width=2),
            marker=dict(symbol="circle", size=7, color=OBJECTIVE_COLOR),
            customdata=np.stack([np.arange(obj.size).astype(str), step_name], axis=1),
            hovertemplate="snapshot %{customdata[0]} (%{customdata[1]})<br>x = %{x}<br>%{y:.6g}"
            "<extra>objective</extra>",
        )
    ]
    if e.any() and marked:
        traces.append(
            dict(
                type="scatter",
                x=x[e],
                y=obj[e],
                mode="markers",
                name="after an E-step",
                meta="e_steps",
                showlegend=False,
                marker=dict(symbol="diamond", size=9, color=OBJECTIVE_COLOR, line=dict(width=1, color="white")),
                hoverinfo="skip",
            )
        )
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
        legend=LEGEND_BELOW,
        margin=legend_margin(),
        xaxis=_axis(title=dict(text=X_TITLE, standoff=6), rangemode="tozero", zeroline=False, **iteration_ticks(x)),
        yaxis=_axis(tickformat=".6~g", range=flat_range(obj, bound if show_bound else None)),
    )
    return figure(traces, layout)


GAP_FLOOR = 1e-3  # nats: the gap to the best objective is drawn down to here on its log axis
GAP_DECADE_HEIGHT = 440  # px: a figure this high or higher ticks the gap at every decade, a lower one at every other


def objective_with_gap(
    history: Mapping[str, np.ndarray],
    current_index: int,
    title: str = "Objective",
    *,
    objective_name: str = "log-likelihood",
    height: int = 460,
) -> go.Figure:
    """:func:`objective_curve` (without the bound) above, and below it, on a log axis, the gap from each snapshot's
    objective to the best one of the run, the same x axis: a late rise that is a sliver beside the first one on the
    upper chart (4 nats after 48) is a plain drop of the gap below. Extra traces (``meta``): ``gap`` and
    ``gap_current`` on the axis ``y2``."""
    fig = objective_curve(history, current_index, title, objective_name=objective_name, show_bound=False, height=height)
    obj = np.asarray(history["objective"], dtype=np.float64)
    if obj.size == 0 or not np.isfinite(obj).any():
        return fig
    x = half_step_positions(np.asarray(history["kind"]), history["iteration"])
    gap = np.maximum(np.nanmax(obj) - obj, GAP_FLOOR)
    i = int(np.clip(current_index, 0, obj.size - 1))
    fig.add_trace(
        go.Scatter(
            x=x, y=gap, mode="lines", yaxis="y2", name="gap to the best objective (log scale)", meta="gap",
            line=dict(color=OBJECTIVE_COLOR, width=2, dash="dot"),
            hovertemplate="x = %{x}<br>gap %{y:.3g} nats<extra></extra>",
        )
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=[x[i]], y=[gap[i]], mode="markers", yaxis="y2", meta="gap_current", showlegend=False,
            marker=dict(symbol="circle-open", size=14, color=CURRENT_COLOR, line=dict(width=3)), hoverinfo="skip",
        )
    )  # fmt: skip
    fig.update_layout(
        yaxis=dict(domain=[0.5, 1.0]),
        yaxis2=_axis(
            domain=[0.0, 0.4],
            type="log",
            title=dict(text="gap (nats)", font=dict(size=min_font())),
            dtick=1 if height >= GAP_DECADE_HEIGHT else 2,  # a decade a tick only where they do not touch
            exponentformat="none",  # 0.001 ... 100: a power's superscript is drawn at 70 %, under 16 px
            tickfont=dict(size=min_font()),
        ),
        xaxis=dict(anchor="y2"),
    )
    return fig


def flat_range(*series: np.ndarray | None, rel: float = 1e-9) -> list[float] | None:
    """A fixed y range for curves that move by no more than rounding (``rel`` of their size): centre +- 0.1 % of
    the size (at least +- 1), else None (autorange). Autorange stretched a 6e-12 wobble of a bound at -346.57 to the
    chart's full height, with four tick labels all "-346.574": the bound looked as if EM had lowered it."""
    vals = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in series if v is not None])
    vals = vals[np.isfinite(vals)]
    if not vals.size:
        return None
    lo, hi = float(vals.min()), float(vals.max())
    centre, size = (lo + hi) / 2, max(1.0, abs(lo), abs(hi))
    if hi - lo > rel * size:
        return None
    pad = max(1.0, 1e-3 * size)
    return [centre - pad, centre + pad]


LOG_FLOOR = -16.0  # log10 of the smallest change drawn (float64 rounding of an objective of order 1)
GAIN_COLOR = OBJECTIVE_COLOR
CHANGE_COLOR = "#9467bd"


def convergence_range(trace: Mapping[str, np.ndarray]) -> list[float]:
    """The fixed y range [LOG_FLOOR, top] of :func:`convergence_chart`: top is the largest log10 value of the whole
    stored run rounded up (at least 1), so the axis does not jump as the cursor moves or a step adds a point."""
    vals = [np.asarray(trace[k], dtype=np.float64) for k in ("gain", "param_change")]
    vals = np.concatenate([np.abs(v[np.isfinite(v)]) for v in vals]) if vals else np.zeros(0)
    vals = vals[vals > 0]
    top = float(np.ceil(np.log10(vals.max()))) if vals.size else 1.0
    return [LOG_FLOOR - 0.5, max(1.0, top) + 0.5]


def _log10_floor(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log10(np.where(v > 0, v, np.nan))
    return np.where(np.isfinite(out), np.maximum(out, LOG_FLOOR), np.where(np.isnan(v), np.nan, LOG_FLOOR))


def convergence_chart(
    trace: Mapping[str, np.ndarray],
    current_iteration: int,
    *,
    tol_line: float | None = None,
    title: str = "How fast EM is still moving",
    height: int = 360,
) -> go.Figure:
    """log10 of the objective gain and of the largest parameter change per iteration (from
    :meth:`crowdlab.engines.run.Run.convergence_trace`), on one fixed y range (:func:`convergence_range`).

    Traces (``meta``): ``gain`` (gains <= 0 are drawn at the floor, LOG_FLOOR), ``param_change`` (when the model
    has float parameters), ``tol`` (dashed: log10 of the objective test's threshold ``tol_line`` in nats, when
    given) and ``current`` (a vertical line at the cursor's iteration, a layout shape). An empty trace (majority
    vote, or no iteration yet) gives a message instead.
    """
    it = np.asarray(trace["iteration"], dtype=np.float64)
    if it.size == 0:
        return _empty(title, "No iteration yet: press Step.", height)
    gain = np.asarray(trace["gain"], dtype=np.float64)
    change = np.asarray(trace["param_change"], dtype=np.float64)
    traces = [
        dict(
            type="scatter",
            x=it,
            y=_log10_floor(gain),
            mode="lines+markers" if with_markers(it.size) else "lines",
            name="objective gain (log10 nats)",
            meta="gain",
            line=dict(color=GAIN_COLOR, width=2),
            marker=dict(size=5, color=GAIN_COLOR),
            customdata=gain,
            hovertemplate="iteration %{x}<br>gain %{customdata:.3g}<extra></extra>",
        )
    ]
    if np.isfinite(change).any():
        traces.append(
            dict(
                type="scatter",
                x=it,
                y=_log10_floor(change),
                mode="lines+markers" if with_markers(it.size) else "lines",
                name="largest parameter change (log10)",
                meta="param_change",
                line=dict(color=CHANGE_COLOR, width=2),
                marker=dict(size=5, color=CHANGE_COLOR, symbol="square"),
                customdata=change,
                hovertemplate="iteration %{x}<br>change %{customdata:.3g}<extra></extra>",
            )
        )
    if tol_line is not None and tol_line > 0 and np.isfinite(tol_line):
        y = max(float(np.log10(tol_line)), LOG_FLOOR)
        traces.append(
            dict(
                type="scatter",
                x=[0, float(it.max())],
                y=[y, y],
                mode="lines",
                name="objective test's threshold",
                meta="tol",
                line=dict(color="#7f7f7f", width=1, dash="dash"),
                hoverinfo="skip",
            )
        )
    cur = float(current_iteration)
    shapes = [
        dict(type="line", x0=cur, x1=cur, xref="x", y0=0, y1=1, yref="paper", name="current",
             line=dict(color=CURRENT_COLOR, width=2, dash="dot"))
    ]  # fmt: skip
    layout = _layout(
        title,
        height,
        legend=LEGEND_BELOW,
        margin=legend_margin(),
        shapes=shapes,
        xaxis=_axis(
            title=dict(text="iteration", standoff=6),
            range=[0, max(float(it.max()), 1.0) + 0.5],
            **{k: v for k, v in iteration_ticks(it).items() if k != "range"},
        ),
        yaxis=_axis(title=dict(text="log10", standoff=4), range=convergence_range(trace), dtick=2),
    )
    return figure(traces, layout)


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
    for j, (raw, values) in enumerate(values_by_name.items()):
        y = np.asarray(values, dtype=np.float64)
        if y.shape != x.shape:
            raise ValueError(f"metric {raw!r} has {y.size} values for {x.size} positions.")
        name = safe.html(raw)
        ys.append(y)
        finite.append(y[np.isfinite(y)])
        color = METRIC_COLORS[j % len(METRIC_COLORS)]
        traces.append(
            dict(
                type="scatter",
                x=x,
                y=y,
                mode="lines+markers" if with_markers(x.size) else "lines",
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
        legend=LEGEND_BELOW,
        margin=legend_margin(),
        xaxis=_axis(title=dict(text=X_TITLE, standoff=6), rangemode="tozero", **iteration_ticks(x)),
        yaxis=_axis(range=list(y_range) if y_range is not None else None),
    )
    return figure(traces, layout)
