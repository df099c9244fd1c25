"""Figures of the "Batch vs online" page: pure functions from online and batch EM results to ``go.Figure``.

The x axis of the comparison curves counts the items seen: an online update of b items adds b, and a batch EM
iteration reads every item once, so batch iteration i sits at i x N. Axes are fixed by the caller (``x_max``,
``y_range`` from a reference run of the same settings), so they do not jump while stepping.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab.plots.common import CURRENT_COLOR, LEGEND_BELOW, METRIC_COLORS, OBJECTIVE_COLOR, _axis, _layout, figure

__all__ = ["accuracy_vs_buckets", "bucket_ticks", "eta_schedule", "online_curve", "padded_range"]

ONLINE_COLOR = OBJECTIVE_COLOR
BATCH_COLOR = "#ff7f0e"
PROGRESSIVE_COLOR = METRIC_COLORS[1]
X_SEEN = "items seen"


def padded_range(*arrays: Sequence[float], pad: float = 0.06, floor: float | None = None, ceil: float | None = None):
    """(low, high) over the finite values of ``arrays`` with ``pad`` of the span added on each side (clipped to
    ``floor`` / ``ceil``); (0, 1) when nothing is finite."""
    vals = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays]) if arrays else np.zeros(0)
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return (0.0, 1.0)
    lo, hi = float(vals.min()), float(vals.max())
    span = max(hi - lo, 1e-6 * max(1.0, abs(hi)))
    lo, hi = lo - pad * span, hi + pad * span
    if floor is not None:
        lo = max(lo, floor)
    if ceil is not None:
        hi = min(hi, ceil)
    return (lo, hi)


def _line(x, y, name: str, color: str, meta: str, *, dash: str | None = None, markers: bool = False) -> dict:
    return dict(
        type="scatter",
        x=np.asarray(x, dtype=np.float64),
        y=np.asarray(y, dtype=np.float64),
        mode="lines+markers" if markers else "lines",
        name=name,
        meta=meta,
        line=dict(color=color, width=2, dash=dash),
        marker=dict(size=6, color=color),
        connectgaps=True,
        hovertemplate="%{x:,.0f} items<br>%{y:.4f}<extra>" + name + "</extra>",
    )


def online_curve(
    series: Sequence[tuple[str, Sequence[float], Sequence[float], str]],
    batch: tuple[Sequence[float], Sequence[float]] | None,
    x_now: float,
    *,
    title: str,
    x_max: float,
    y_range: tuple[float, float],
    y_title: str = "",
    height: int = 340,
    batch_name: str = "batch EM (per iteration)",
) -> go.Figure:
    """Online series against items seen, batch EM's values per iteration (orange, markers at every pass, named
    ``batch_name`` in the legend: say which model and start), the cursor as a dotted vertical line.

    ``series``: (name, x, y, meta) per online line (meta "online" or "progressive"); ``batch``: (x, y) of batch
    EM (x = iteration x N). Fixed axes: x in [0, x_max], y in ``y_range``.
    """
    traces = []
    colors = {"online": ONLINE_COLOR, "progressive": PROGRESSIVE_COLOR}
    for name, x, y, meta in series:
        traces.append(_line(x, y, name, colors.get(meta, METRIC_COLORS[2]), meta))
    if batch is not None:
        traces.append(_line(batch[0], batch[1], batch_name, BATCH_COLOR, "batch", markers=True))
    vline = dict(
        type="line", x0=x_now, x1=x_now, y0=0, y1=1, xref="x", yref="paper",
        line=dict(color=CURRENT_COLOR, width=1, dash="dot"),
    )  # fmt: skip
    layout = _layout(
        title,
        height,
        shapes=[vline],
        legend=LEGEND_BELOW,
        xaxis=_axis(title=dict(text=X_SEEN, standoff=6), range=[0, x_max], tickformat="~s"),
        yaxis=_axis(title=dict(text=y_title), range=list(y_range), tickformat=".3~f"),
    )
    return figure(traces, layout)


def eta_schedule(
    eta0: float, tau0: float, rho: float, n_updates: int, *, t_now: int | None = None, height: int = 260
) -> go.Figure:
    """The step size eta_t = min(1, eta0 (tau0 + t)^(-rho)) over the updates of a run (log-scaled t), with the
    bounds of the Robbins-Monro range drawn for reference (rho = 0.5 and rho = 1 with the same eta0 and tau0), and
    the current update ``t_now`` (1-based; None or 0: no update yet) as a ring on the curve, named with its t and
    eta in the legend. Fixed axes: t in [1, n_updates], eta in [0, 1.02]."""
    n = max(int(n_updates), 2)
    t = np.unique(np.geomspace(1, n, 200).round())

    def eta(r: float) -> np.ndarray:
        return np.minimum(1.0, eta0 * np.power(np.maximum(tau0 + t, 1e-12), -r))

    traces = [
        _line(t, eta(0.5), "ρ = 0.5", "#bbbbbb", "rho_half", dash="dot"),
        _line(t, eta(1.0), "ρ = 1", "#888888", "rho_one", dash="dash"),
        _line(t, eta(rho), f"ρ = {rho:g} (this run)", ONLINE_COLOR, "eta"),
    ]
    for tr in traces:
        tr["hovertemplate"] = "update %{x:,.0f}<br>η = %{y:.4f}<extra></extra>"
    if t_now is not None and t_now >= 1:
        e_now = float(min(1.0, eta0 * max(tau0 + t_now, 1e-12) ** (-rho)))
        traces.append(
            dict(
                type="scatter",
                x=[t_now],
                y=[e_now],
                mode="markers",
                name=f"now: update {t_now:,}, ηₜ = {e_now:.4f}",
                meta="now",
                marker=dict(symbol="circle-open", size=14, color=CURRENT_COLOR, line=dict(width=3)),
                hoverinfo="skip",
            )  # fmt: skip
        )
    layout = _layout(
        "Step size ηₜ = η₀ (τ₀ + t)^(−ρ)",
        height,
        legend=LEGEND_BELOW,
        xaxis=_axis(title=dict(text="update t", standoff=4), type="log", range=[0, np.log10(n)], dtick=1),
        yaxis=_axis(range=[0, 1.02]),
    )
    return figure(traces, layout)


def bucket_ticks(buckets: Sequence[float], max_ticks: int = 8) -> list[float]:
    """Where to label the B axis: the sweep's values of B (every other one, or fewer, when there are more than
    ``max_ticks``; the largest always)."""
    b = [float(v) for v in buckets]
    step = max(1, -(-len(b) // max_ticks))
    return sorted(set(b[::-1][::step]))


def accuracy_vs_buckets(
    buckets: Sequence[float],
    mean: Sequence[float],
    low: Sequence[float],
    high: Sequence[float],
    *,
    n_workers: int,
    per_worker: float | None,
    batch: float | None,
    chosen: float | None = None,
    y_title: str = "accuracy against gold",
    height: int = 300,
    per_worker_range: tuple[float, float] | None = None,
) -> go.Figure:
    """Final accuracy of online EM against the number of hash buckets B (log axis, every tick labelled with its
    whole value): the mean over hash seeds and their range (error bars); one matrix per worker (no hashing) as its
    own point right of the largest B (a diamond at the tick "per worker", its seeds' range ``per_worker_range`` as
    an error bar) and a dotted line across, drawn above batch EM's dashed line so that it shows when they are
    equal; the number of workers M as a dotted vertical line."""
    b = np.asarray(buckets, dtype=np.float64)
    m = np.asarray(mean, dtype=np.float64)
    traces = [
        dict(
            type="scatter", x=b, y=m, mode="lines+markers", name="online EM, B hashed buckets", meta="hashed",
            line=dict(color=ONLINE_COLOR, width=2), marker=dict(size=7, color=ONLINE_COLOR),
            error_y=dict(type="data", symmetric=False, array=np.asarray(high) - m, arrayminus=m - np.asarray(low),
                         color=ONLINE_COLOR, thickness=1),
            hovertemplate="B = %{x}<br>%{y:.4f}<extra></extra>",
        )
    ]  # fmt: skip
    x_pw = max(float(b.max()) if b.size else 1.0, float(n_workers)) * 2.5  # clear of the largest B and of M
    x_hi = x_pw * 1.6
    shapes = [
        dict(type="line", x0=n_workers, x1=n_workers, y0=0, y1=1, xref="x", yref="paper",
             line=dict(color="#888888", width=1, dash="dot"))
    ]  # fmt: skip
    if batch is not None and np.isfinite(batch):
        traces.append(
            _line([1, x_hi], [batch, batch], f"batch EM (no hashing): {batch:.3f}", BATCH_COLOR, "batch", dash="dash")
        )
    pw_ok = per_worker is not None and np.isfinite(per_worker)
    if pw_ok:
        name = f"one matrix per worker: {per_worker:.3f}"
        line = _line([1, x_hi], [per_worker, per_worker], name, PROGRESSIVE_COLOR, "per_worker", dash="dot")
        line["legendgroup"] = "per_worker"
        traces.append(line)
        point = dict(
            type="scatter", x=[x_pw], y=[per_worker], mode="markers", name=name, meta="per_worker_point",
            legendgroup="per_worker", showlegend=False,
            marker=dict(symbol="diamond", size=11, color=PROGRESSIVE_COLOR, line=dict(color="white", width=1)),
            hovertemplate="one matrix per worker<br>%{y:.4f}<extra></extra>",
        )  # fmt: skip
        if per_worker_range is not None:
            lo_pw, hi_pw = per_worker_range
            point["error_y"] = dict(type="data", symmetric=False, array=[hi_pw - per_worker],
                                    arrayminus=[per_worker - lo_pw], color=PROGRESSIVE_COLOR, thickness=1)  # fmt: skip
        traces.append(point)
    if chosen is not None:
        at = np.flatnonzero(b == chosen)
        if at.size:
            traces.append(
                dict(
                    type="scatter",
                    x=[chosen],
                    y=[m[at[0]]],
                    mode="markers",
                    name="chosen B",
                    meta="chosen",
                    marker=dict(symbol="circle-open", size=16, color=CURRENT_COLOR, line=dict(width=3)),
                    hoverinfo="skip",
                )  # fmt: skip
            )
    lows = np.asarray(low, dtype=np.float64)
    extra = [per_worker if pw_ok else np.nan, *(per_worker_range or ())]
    y_range = padded_range(lows, high, extra, [batch if batch is not None else np.nan], pad=0.1, floor=0.0,
                           ceil=1.02)  # fmt: skip
    ticks = bucket_ticks(b) if b.size else []
    tickvals = [*ticks, *([x_pw] if pw_ok else [])]
    ticktext = [f"{int(v):,}" for v in ticks] + (["per<br>worker"] if pw_ok else [])
    layout = _layout(
        "Hashing workers into B confusion matrices",
        height,
        shapes=shapes,
        annotations=[
            dict(
                text=f"M = {n_workers:,} workers",
                x=np.log10(n_workers),
                y=0.02,
                xref="x",
                yref="paper",
                showarrow=False,
                xanchor="right",
                font=dict(size=11, color="#666666"),
            )
        ],  # fmt: skip
        legend=LEGEND_BELOW,
        xaxis=_axis(
            title=dict(text="B (hash buckets, log scale)", standoff=4),
            type="log",
            range=[0, np.log10(x_hi)],
            tickmode="array",
            tickvals=tickvals,
            ticktext=ticktext,
        ),  # fmt: skip
        yaxis=_axis(title=dict(text=y_title), range=list(y_range)),
    )
    return figure(traces, layout)
