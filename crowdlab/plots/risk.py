"""Figures for error rates without labels (Donmez et al. 2010), classifiers from crowds (Raykar et al. 2010), per-worker
intervals. Pure functions from arrays to ``go.Figure`` (no Streamlit).

Conventions (as in :mod:`crowdlab.plots.common`): figures are plain dicts validated once by ``go.Figure``; every trace
carries ``meta`` naming its role, so tests and readers can find it. Axes that show probabilities span [0, 1] (with
a small margin) at every setting, and colour ranges are fixed (never taken from the data), so nothing jumps when a
slider moves. Functions over a numeric grid (theta, p(y)) are drawn with the y axis increasing upwards.

Donmez et al.'s classes 1 and 2 are crowdlab's codes 0 and 1; ``p`` below is the paper's p(y = 1) (``p_y[0]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab.io import safe
from crowdlab.plots.common import (
    CURRENT_COLOR,
    LEGEND_BELOW,
    OBJECTIVE_COLOR,
    _axis,
    _empty,
    _layout,
    figure,
    legend_margin,
    x_title_clear,
)
from crowdlab.plots.dependent import PALETTE

__all__ = [
    "ERROR_ZMAX",
    "FISHER_LEVELS",
    "MU_COLORSCALE",
    "PALETTE",
    "boundary_segment",
    "error_heatmap",
    "error_vs_n",
    "fisher_contour",
    "flat_line_profile",
    "interval_chart",
    "label_positions",
    "loglik_contour",
    "loglik_curves",
    "misspecification_limit",
    "raykar_scatter",
    "roc_trail",
    "two_population_figure",
]

ERROR_ZMAX = 0.3  # the fixed top of the estimation-error colour scale (errors above read as >= 0.3)
FISHER_LEVELS = (-2.0, 2.0, 0.2)  # log10 J contour levels: start, end, size (fixed, so contours never jump)
LOGLIK_FLOOR = 30.0  # log-likelihood curves and contours are drawn down to max - 30
MU_COLORSCALE = [[0.0, "#2166ac"], [0.5, "#f7f7f7"], [1.0, "#b2182b"]]  # P(y = 1): blue 0, white 1/2, red 1
TRUTH_COLOR = "#111111"
MV_COLOR = "#ff7f0e"
GREY = "#888888"
_LEGEND_BELOW = LEGEND_BELOW  # at the bottom of the figure, under the x axis title (never on it)
_UNIT = [-0.02, 1.02]


def _relative_contour(x, y, Z: np.ndarray, floor: float, name: str, axes: tuple[str, str]) -> dict:
    """A Viridis contour of Z - max(Z), clipped at ``-floor`` (fixed colour range [-floor, 0]), meta ``surface``."""
    rel = np.maximum(Z - np.nanmax(Z), -floor)
    return dict(
        type="contour",
        x=x,
        y=y,
        z=rel,
        meta="surface",
        name=name,
        zmin=-floor,
        zmax=0.0,
        contours=dict(start=-floor, end=0.0, size=floor / 15, coloring="heatmap", showlines=True),
        colorscale="Viridis",
        line=dict(width=0.5, color="rgba(255,255,255,0.4)"),
        colorbar=dict(title=dict(text=name), thickness=12),
        hovertemplate=f"{axes[0]} %{{x:.3f}}, {axes[1]} %{{y:.3f}}<br>{name}: %{{z:.3g}}<extra></extra>",
    )


def _line(x, y, meta: str, name: str, **style) -> dict:
    return dict(type="scatter", x=list(x), y=list(y), mode="lines", meta=meta, name=name, **style)


def _point(
    x: float, y: float, meta: str, name: str, symbol: str, color: str, size: int = 14, edge: str | None = None, **extra
) -> dict:
    return dict(
        type="scatter",
        x=[float(x)],
        y=[float(y)],
        mode="markers",
        meta=meta,
        name=name,
        marker=dict(symbol=symbol, size=size, color=color, line=dict(width=1.5 if edge else 2, color=edge or color)),
        **extra,
    )


# ---------------------------------------------------------------------------- Fig. 1: log-likelihood curves
def loglik_curves(
    theta: np.ndarray,
    curves: Mapping[str, np.ndarray],
    *,
    theta_true: float | None = None,
    title: str = "Log-likelihood ℓ(θ) of one classifier's outputs",
    floor: float = LOGLIK_FLOOR,
    height: int = 420,
    em_path: Sequence[float] | None = None,
) -> go.Figure:
    """One curve per label (e.g. "n = 100"), each shifted so its maximum is 0 (the paper aligns the maxima), clipped
    at ``-floor``; the maximiser of each marked (none on a flat curve: every θ is a maximum there, and the arg-max
    of the grid would mark its first point); the true theta as a vertical line. ``em_path``: EM's θ after each
    iteration, its start first: drawn on the first curve, the start a ring, the path small dots, the estimate a
    diamond (traces ``em:start``, ``em:path``, ``em:estimate``).

    ``theta`` (G,) on [0, 1]; ``curves``: label -> (G,) log-likelihood values. Traces (``meta``): ``curve:<label>``,
    ``mle:<label>`` and ``truth``. The y range is fixed to [-floor, floor / 20]: a larger n gives a steeper curve,
    which leaves the chart at the bottom (the values are not clipped, so no flat line is drawn at the floor).
    """
    th = np.asarray(theta, dtype=np.float64)
    traces = []
    for j, (label, ll) in enumerate(curves.items()):
        ll = np.asarray(ll, dtype=np.float64)
        if ll.shape != th.shape:
            raise ValueError(f"curve {label!r} has {ll.size} values for {th.size} theta values.")
        rel = ll - np.nanmax(ll)
        color = PALETTE[j % len(PALETTE)]
        traces.append(
            dict(
                type="scatter",
                x=th,
                y=rel,
                mode="lines",
                meta=f"curve:{label}",
                name=str(label),
                line=dict(color=color, width=2),
                hovertemplate="θ = %{x:.3f}<br>ℓ − max = %{y:.3g}<extra>" + str(label) + "</extra>",
            )
        )
        if np.nanmax(ll) - np.nanmin(ll) <= 1e-9 * max(1.0, abs(float(np.nanmax(ll)))):
            continue  # flat: no maximum to mark
        i = int(np.nanargmax(ll))
        traces.append(
            _point(
                th[i], 0.0, f"mle:{label}", f"θ̂ ({label}) = {th[i]:.3f}", "circle", color, size=10,
                showlegend=False, hovertemplate=f"θ̂ ({label}) = {th[i]:.4f}<extra></extra>",
            )
        )  # fmt: skip
    if em_path is not None and len(em_path) and curves:
        path = np.asarray(em_path, dtype=np.float64)
        first = np.asarray(next(iter(curves.values())), dtype=np.float64)
        y = np.interp(path, th, first - np.nanmax(first))
        traces.append(
            _point(path[0], y[0], "em:start", f"EM's start θ = {path[0]:.2f}", "circle-open", "#444444", size=13)
        )
        if len(path) > 2:
            traces.append(
                dict(
                    type="scatter",
                    x=path[1:-1],
                    y=y[1:-1],
                    mode="markers",
                    meta="em:path",
                    name="EM's iterations",
                    marker=dict(color="#888888", size=5),
                )
            )
        if len(path) > 1:
            traces.append(
                _point(
                    path[-1], y[-1], "em:estimate", f"EM's estimate θ = {path[-1]:.3f}", "diamond", "#d62728", size=12
                )
            )
    if theta_true is not None:
        traces.append(
            _line(
                [theta_true, theta_true], [-floor, floor / 20], "truth", f"true θ = {theta_true:.2f}",
                line=dict(color=TRUTH_COLOR, dash="dot", width=2),
            )
        )  # fmt: skip
    # EM's path adds two legend entries: in a narrow column (two entries a row) the legend takes up to three rows,
    # and a bottom margin kept for one let the x axis title ride up onto the tick labels
    entries = sum(1 for t in traces if t.get("showlegend", True) is not False)
    layout = _layout(
        title,
        height,
        legend=_LEGEND_BELOW,
        margin=legend_margin(rows=max(1, -(-entries // 2)) if entries > 3 else 1),
        xaxis=x_title_clear(_axis(title=dict(text="θ (accuracy of the classifier)", standoff=6), range=_UNIT)),
        yaxis=_axis(title=dict(text="ℓ(θ) − max ℓ"), range=[-floor, floor / 20]),
    )
    return figure(traces, layout)


def loglik_contour(
    t1: np.ndarray,
    t2: np.ndarray,
    Z: np.ndarray,
    *,
    truth: tuple[float, float] | None = None,
    mle: tuple[float, float] | None = None,
    flipped: tuple[float, float] | None = None,
    title: str = "Collaborative log-likelihood ℓ(θ₁, θ₂) (k = 2)",
    floor: float = LOGLIK_FLOOR,
    height: int = 420,
) -> go.Figure:
    """Contours of Z[i2, i1] (eq. (12) over the grid t1 x t2) relative to its maximum, clipped at ``-floor``, with
    the truth (star), the maximum-likelihood estimate (circle) and, when given, the mirror point (1 - theta) that
    fits equally well when p(y) is uniform (x). Traces: ``surface``, ``truth``, ``mle``, ``flipped``."""
    t1 = np.asarray(t1, dtype=np.float64)
    t2 = np.asarray(t2, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    if Z.shape != (t2.size, t1.size):
        raise ValueError(f"Z has shape {Z.shape}; expected (len(t2), len(t1)) = {(t2.size, t1.size)}.")
    traces = [_relative_contour(t1, t2, Z, floor, "ℓ − max", ("θ₁", "θ₂"))]
    if truth is not None:
        traces.append(_point(*truth, "truth", "truth", "star", "#ffffff", size=17, edge=TRUTH_COLOR))
    if mle is not None:
        traces.append(_point(*mle, "mle", "maximum-likelihood estimate", "circle-open", CURRENT_COLOR, size=14))
    if flipped is not None:
        traces.append(
            _point(*flipped, "flipped", "1 − θ̂ (the mirror solution)", "x", "#ffffff", size=12, edge=TRUTH_COLOR)
        )
    layout = _layout(
        title,
        height,
        legend=_LEGEND_BELOW,
        xaxis=_axis(title=dict(text="θ₁", standoff=6), range=_UNIT, constrain="domain"),
        yaxis=_axis(title=dict(text="θ₂"), range=_UNIT, scaleanchor="x", scaleratio=1, constrain="domain"),
    )
    return figure(traces, layout)


# ---------------------------------------------------------------------------- Fig. 3: Fisher information and MC error
def _grid_range(values: np.ndarray) -> list[float]:
    v = np.asarray(values, dtype=np.float64)
    half = 0.5 * float(np.min(np.diff(v))) if v.size > 1 else 0.025
    return [float(v.min()) - half, float(v.max()) + half]


def error_heatmap(
    theta: np.ndarray,
    p: np.ndarray,
    err: np.ndarray,
    *,
    current: tuple[float, float] | None = None,
    predicted: np.ndarray | None = None,
    zmax: float = ERROR_ZMAX,
    title: str = "Monte Carlo: mean |θ̂ − θ|",
    x_range: Sequence[float] | None = None,
    y_range: Sequence[float] | None = None,
    height: int = 440,
) -> go.Figure:
    """Heatmap of err[ip, itheta] (mean absolute error of theta_hat) over theta (x) and p(y = 1) (y, upwards), on a
    FIXED colour range [0, zmax]; numbers on the cells; ``predicted`` (same shape, e.g. sqrt(2 / (pi n J))) goes
    into the hover. ``current`` (theta, p) is marked when inside the grid. Traces: ``error``, ``current``."""
    th = np.asarray(theta, dtype=np.float64)
    pp = np.asarray(p, dtype=np.float64)
    E = np.asarray(err, dtype=np.float64)
    if E.shape != (pp.size, th.size):
        raise ValueError(f"err has shape {E.shape}; expected (len(p), len(theta)) = {(pp.size, th.size)}.")
    custom = np.asarray(predicted, dtype=np.float64) if predicted is not None else np.full(E.shape, np.nan)
    heat = dict(
        type="heatmap",
        x=th,
        y=pp,
        z=E,
        meta="error",
        name="mean |θ̂ − θ|",
        zmin=0.0,
        zmax=float(zmax),
        colorscale="Magma",
        reversescale=True,
        text=np.char.mod("%.2f", E)[:, :].tolist() if E.size <= 400 else None,
        texttemplate="%{text}" if E.size <= 400 else None,
        textfont=dict(size=10),
        customdata=custom,
        colorbar=dict(title=dict(text="mean |θ̂ − θ|"), thickness=12),
        hovertemplate="θ = %{x:.2f}, p(y=1) = %{y:.2f}<br>Monte Carlo: %{z:.4f}"
        "<br>Fisher prediction √(2/(π n J)): %{customdata:.4f}<extra></extra>",
    )
    traces = [heat]
    xr = list(x_range) if x_range is not None else _grid_range(th)
    yr = list(y_range) if y_range is not None else _grid_range(pp)
    if current is not None and xr[0] <= current[0] <= xr[1] and yr[0] <= current[1] <= yr[1]:
        traces.append(_point(*current, "current", "your (θ, p(y))", "x-thin-open", "#00bcd4", size=16))
    layout = _layout(
        title,
        height,
        showlegend=False,
        xaxis=_axis(title=dict(text="true θ", standoff=6), range=xr),
        yaxis=_axis(title=dict(text="p(y = 1)"), range=yr),
    )
    return figure(traces, layout)


def fisher_contour(
    theta: np.ndarray,
    p: np.ndarray,
    J: np.ndarray,
    *,
    current: tuple[float, float] | None = None,
    title: str = "Fisher information J(θ) (k = 1)",
    x_range: Sequence[float] | None = None,
    y_range: Sequence[float] | None = None,
    height: int = 440,
    estimate: float | None = None,
) -> go.Figure:
    """Contours of log10 J[ip, itheta] over theta (x) and p(y = 1) (y, upwards) at FIXED levels
    (:data:`FISHER_LEVELS`), the colour bar labelled in J. Traces: ``fisher``, ``current``; ``estimate``: EM's
    theta at the current p, a diamond (trace ``estimate``), so that the chart shows where EM went."""
    th = np.asarray(theta, dtype=np.float64)
    pp = np.asarray(p, dtype=np.float64)
    J = np.asarray(J, dtype=np.float64)
    if J.shape != (pp.size, th.size):
        raise ValueError(f"J has shape {J.shape}; expected (len(p), len(theta)) = {(pp.size, th.size)}.")
    lo, hi, size = FISHER_LEVELS
    with np.errstate(divide="ignore", invalid="ignore"):
        logJ = np.log10(np.where(J > 0, J, np.nan))
    logJ = np.clip(logJ, lo, hi)
    ticks = np.arange(lo, hi + 1e-9, 1.0)
    trace = dict(
        type="contour",
        x=th,
        y=pp,
        z=logJ,
        customdata=J,
        meta="fisher",
        name="log10 J",
        zmin=lo,
        zmax=hi,
        contours=dict(start=lo, end=hi, size=size, coloring="heatmap", showlines=True),
        colorscale="Viridis",
        line=dict(width=0.6, color="rgba(255,255,255,0.5)"),
        colorbar=dict(
            title=dict(text="J (log scale)"),
            thickness=12,
            tickvals=ticks.tolist(),
            ticktext=[f"{10**t:g}" for t in ticks],
        ),
        hovertemplate="θ = %{x:.3f}, p(y=1) = %{y:.3f}<br>J = %{customdata:.4g}<extra></extra>",
    )
    traces = [trace]
    xr = list(x_range) if x_range is not None else [float(th.min()), float(th.max())]
    yr = list(y_range) if y_range is not None else [float(pp.min()), float(pp.max())]
    if current is not None and xr[0] <= current[0] <= xr[1] and yr[0] <= current[1] <= yr[1]:
        traces.append(_point(*current, "current", "your (θ, p(y))", "x-thin-open", "#ff4081", size=16))
    if estimate is not None and current is not None and xr[0] <= estimate <= xr[1]:
        traces.append(
            _point(
                estimate,
                current[1],
                "estimate",
                f"EM's θ̂ = {estimate:.3f}",
                "diamond",
                "#d62728",
                size=12,
                edge="white",
            )
        )
    layout = _layout(
        title,
        height,
        showlegend=False,
        xaxis=_axis(title=dict(text="true θ", standoff=6), range=xr),
        yaxis=_axis(title=dict(text="p(y = 1)"), range=yr),
    )
    return figure(traces, layout)


# ---------------------------------------------------------------------------- Figs. 4, 6, 8: error against n
def error_vs_n(
    ns: Sequence[int],
    series: Mapping[str, Mapping],
    *,
    title: str = "Mean |θ̂ − θ| against n",
    y_title: str = "mean |θ̂ − θ|",
    y_max: float | None = None,
    height: int = 420,
) -> go.Figure:
    """Lines of the estimation error against n (log x axis). ``series``: name -> {"y": (len(ns),), optional
    "color", "dash", "width", "meta", "showlegend"}. The y axis starts at 0; its top is ``y_max`` or 5 % above
    the largest finite value. Each trace's ``meta`` is its "meta" entry, else ``series:<name>``."""
    x = np.asarray(ns, dtype=np.float64)
    traces = []
    top = 0.0
    for j, (name, s) in enumerate(series.items()):
        y = np.asarray(s["y"], dtype=np.float64)
        if y.shape != x.shape:
            raise ValueError(f"series {name!r} has {y.size} values for {x.size} sample sizes.")
        if np.isfinite(y).any():
            top = max(top, float(np.nanmax(y)))
        color = s.get("color", PALETTE[j % len(PALETTE)])
        traces.append(
            dict(
                type="scatter",
                x=x,
                y=y,
                mode="lines+markers" if s.get("markers", True) else "lines",
                meta=s.get("meta", f"series:{name}"),
                name=str(name),
                showlegend=s.get("showlegend", True),
                line=dict(color=color, width=s.get("width", 2), dash=s.get("dash", "solid")),
                marker=dict(size=6, color=color),
                hovertemplate="n = %{x:,.0f}<br>%{y:.4f}<extra>" + str(name) + "</extra>",
            )
        )
    if not traces:
        return _empty(title, "Nothing to show.", height)
    layout = _layout(
        title,
        height,
        legend=_LEGEND_BELOW,
        xaxis=_axis(
            title=dict(text="n (unlabelled examples, log scale)", standoff=6),
            type="log",
            tickvals=[float(v) for v in x],
            ticktext=[f"{int(v):,}" for v in x],
        ),
        yaxis=_axis(title=dict(text=y_title), range=[0.0, y_max if y_max is not None else max(top, 1e-3) * 1.05]),
    )
    return figure(traces, layout)


def misspecification_limit(
    p_assumed: np.ndarray,
    theta_limit: np.ndarray,
    *,
    theta_true: float,
    p_true: float,
    marked: Mapping[str, tuple[float, float]] | None = None,
    title: str = "Where θ̂ ends up as n → ∞ when p(y) is assumed wrong",
    height: int = 420,
) -> go.Figure:
    """theta_hat's limit (eq. (9) at the true output frequency) against the assumed p(y = 1); the true theta as
    a horizontal line and the true p(y = 1) as a vertical one; ``marked``: label -> (p, limit) points in the
    colours of the error-vs-n chart. Traces: ``limit``, ``truth``, ``p_true``, ``mark:<label>``."""
    pa = np.asarray(p_assumed, dtype=np.float64)
    lim = np.asarray(theta_limit, dtype=np.float64)
    traces = [
        dict(
            type="scatter",
            x=pa,
            y=lim,
            mode="lines",
            meta="limit",
            name="limit of θ̂",
            line=dict(color=OBJECTIVE_COLOR, width=3),
            hovertemplate="assumed p(y=1) = %{x:.3f}<br>θ̂ → %{y:.4f}<extra></extra>",
        ),
        _line([0, 1], [theta_true, theta_true], "truth", f"true θ = {theta_true:.2f}",
              line=dict(color=TRUTH_COLOR, dash="dot", width=2)),
        _line([p_true, p_true], [0, 1], "p_true", f"true p(y=1) = {p_true:.2f}",
              line=dict(color=GREY, dash="dash", width=1.5)),
    ]  # fmt: skip
    for j, (label, (px, py)) in enumerate((marked or {}).items()):
        color = PALETTE[j % len(PALETTE)]
        traces.append(_point(px, py, f"mark:{label}", str(label), "circle", color, size=10, showlegend=False))
    layout = _layout(
        title,
        height,
        legend=_LEGEND_BELOW,
        xaxis=_axis(title=dict(text="assumed p(y = 1)", standoff=6), range=_UNIT),
        yaxis=_axis(title=dict(text="θ̂ as n → ∞"), range=_UNIT),
    )
    return figure(traces, layout)


# ---------------------------------------------------------------------------- Lemma 6, Prop. 7: two populations
def two_population_figure(
    t11: np.ndarray,
    t22: np.ndarray,
    Z: np.ndarray,
    *,
    line_a: tuple[np.ndarray, np.ndarray],
    line_b: tuple[np.ndarray, np.ndarray] | None = None,
    truth: tuple[float, float] | None = None,
    estimate: tuple[float, float] | None = None,
    se: tuple[float, float] | None = None,
    title: str = "Population A's log-likelihood over (θ₁₁, θ₂₂)",
    floor: float = LOGLIK_FLOOR,
    height: int = 480,
) -> go.Figure:
    """Contours of one population's log-likelihood Z[i22, i11] relative to its maximum (clipped at ``-floor``),
    its flat ridge (Lemma 6: every point on it fits equally well), the second population's ridge, the truth and
    the two-population estimate with +-1.96 standard-error bars (Prop. 7). Traces: ``surface``, ``ridge_a``,
    ``ridge_b``, ``truth``, ``estimate``."""
    a = np.asarray(t11, dtype=np.float64)
    b = np.asarray(t22, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    if Z.shape != (b.size, a.size):
        raise ValueError(f"Z has shape {Z.shape}; expected (len(t22), len(t11)) = {(b.size, a.size)}.")
    traces = [
        _relative_contour(a, b, Z, floor, "ℓ_A − max", ("θ₁₁", "θ₂₂")),
        _line(*line_a, "ridge_a", "population A: flat ridge (Lemma 6)", line=dict(color="#ffffff", width=3)),
    ]
    if line_b is not None:
        traces.append(
            _line(*line_b, "ridge_b", "population B: its ridge", line=dict(color="#ff9800", width=3, dash="dash"))
        )
    if truth is not None:
        traces.append(_point(*truth, "truth", "truth", "star", "#ffffff", size=17, edge=TRUTH_COLOR))
    if estimate is not None:
        extra = {}
        if se is not None:
            extra = dict(
                error_x=dict(type="constant", value=1.96 * se[0], color=CURRENT_COLOR, thickness=2),
                error_y=dict(type="constant", value=1.96 * se[1], color=CURRENT_COLOR, thickness=2),
            )
        traces.append(
            _point(*estimate, "estimate", "two-population estimate ± 1.96 SE", "circle", CURRENT_COLOR, size=11,
                   **extra)
        )  # fmt: skip
    layout = _layout(
        title,
        height,
        legend=_LEGEND_BELOW,
        xaxis=_axis(title=dict(text="θ₁₁ = P(says 1 | y = 1)", standoff=6), range=_UNIT, constrain="domain"),
        yaxis=_axis(
            title=dict(text="θ₂₂ = P(says 2 | y = 2)"), range=_UNIT, scaleanchor="x", scaleratio=1, constrain="domain"
        ),
    )
    return figure(traces, layout)


def flat_line_profile(
    t11: np.ndarray,
    loglik: np.ndarray,
    risk: np.ndarray,
    *,
    true_t11: float | None = None,
    title: str = "Along A's ridge: same fit, other risk",
    height: int = 480,
) -> go.Figure:
    """Along a Lemma 6 line (parametrised by theta11): the log-likelihood minus its maximum (left axis, flat) and
    the risk R(f) (right axis, [0, 1]). Traces: ``loglik``, ``risk``, ``truth``."""
    x = np.asarray(t11, dtype=np.float64)
    ll = np.asarray(loglik, dtype=np.float64)
    rel = ll - np.nanmax(ll)
    traces = [
        dict(
            type="scatter", x=x, y=rel, mode="lines", meta="loglik", name="ℓ_A − max (left axis)",
            line=dict(color=OBJECTIVE_COLOR, width=3),
        ),
        dict(
            type="scatter", x=x, y=np.asarray(risk, dtype=np.float64), mode="lines", meta="risk",
            name="risk R(f) (right axis)", yaxis="y2", line=dict(color=CURRENT_COLOR, width=3, dash="dash"),
        ),
    ]  # fmt: skip
    if true_t11 is not None:
        traces.append(
            _line([true_t11, true_t11], [-1, 1], "truth", "true θ₁₁", line=dict(color=TRUTH_COLOR, dash="dot"))
        )
    layout = _layout(
        title,
        height,
        legend=_LEGEND_BELOW,
        xaxis=_axis(title=dict(text="θ₁₁ along the ridge", standoff=6), range=_UNIT),
        yaxis=_axis(title=dict(text="ℓ_A − max"), range=[-1.0, 1.0]),
        yaxis2=dict(
            title=dict(text="risk R(f)"),
            range=_UNIT,
            overlaying="y",
            side="right",
            showgrid=False,
            tickmode="array",
            tickvals=[0.0, 0.25, 0.5, 0.75, 1.0],
        ),
    )
    return figure(traces, layout)


# ------------------------------------------------------------------ Raykar et al. 2010: a classifier from crowds
def boundary_segment(w: Sequence[float], box: Sequence[float]) -> tuple[list[float], list[float]] | None:
    """The part of the line w0 + w1 x + w2 y = 0 inside the box (x0, x1, y0, y1), as ([xa, xb], [ya, yb]);
    None when the line misses the box or w1 = w2 = 0 (no boundary: one class everywhere)."""
    w0, w1, w2 = (float(v) for v in w)
    x0, x1, y0, y1 = (float(v) for v in box)
    scale = max(abs(w1), abs(w2))
    if scale < 1e-12 * max(1.0, abs(w0)):
        return None
    pts = []
    if abs(w2) > 1e-12 * scale:  # crossings of the vertical edges
        for x in (x0, x1):
            y = -(w0 + w1 * x) / w2
            if y0 - 1e-9 <= y <= y1 + 1e-9:
                pts.append((x, y))
    if abs(w1) > 1e-12 * scale:  # crossings of the horizontal edges
        for y in (y0, y1):
            x = -(w0 + w2 * y) / w1
            if x0 - 1e-9 <= x <= x1 + 1e-9:
                pts.append((x, y))
    if len(pts) < 2:
        return None
    pts = np.unique(np.round(np.array(pts), 12), axis=0)
    if len(pts) < 2:
        return None
    d = ((pts[:, None, :] - pts[None, :, :]) ** 2).sum(axis=2)
    i, j = np.unravel_index(int(np.argmax(d)), d.shape)
    return [float(pts[i, 0]), float(pts[j, 0])], [float(pts[i, 1]), float(pts[j, 1])]


def raykar_scatter(
    x: np.ndarray,
    y: np.ndarray,
    mu: np.ndarray,
    *,
    truth: np.ndarray | None = None,
    boundary: Sequence[float] | None = None,
    mv_boundary: Sequence[float] | None = None,
    true_boundary: Sequence[float] | None = None,
    box: Sequence[float] | None = None,
    x_title: str = "x₁",
    y_title: str = "x₂",
    title: str = "Items coloured by the posterior μᵢ = P(yᵢ = 1 | labels, xᵢ)",
    height: int = 520,
) -> go.Figure:
    """The items in the plane of two features, coloured by mu (FIXED colour range [0, 1], one shared colour axis),
    circles where the truth is 1 and diamonds where it is 0 (one trace ``items`` without truth); the decision
    boundaries w0 + w1 x + w2 y = 0 as lines: the current classifier (``boundary``, solid), the classifier trained
    on majority-vote labels (``mv_boundary``, dashed) and the true one (``true_boundary``, dotted). ``box``
    (x0, x1, y0, y1) fixes the axes (default: the data's range plus 5 %). Traces: ``items:1``, ``items:0`` (or
    ``items``), ``boundary``, ``mv_boundary``, ``true_boundary``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    if not (x.shape == y.shape == mu.shape):
        raise ValueError("x, y and mu need one value per item.")
    if box is None:
        pad_x = 0.05 * max(float(np.ptp(x)) if x.size else 1.0, 1e-9)
        pad_y = 0.05 * max(float(np.ptp(y)) if y.size else 1.0, 1e-9)
        box = (x.min() - pad_x, x.max() + pad_x, y.min() - pad_y, y.max() + pad_y) if x.size else (-1, 1, -1, 1)
    box = tuple(float(v) for v in box)
    marker = dict(coloraxis="coloraxis", size=7, opacity=0.85, line=dict(width=0.5, color="#555555"))
    hover = "x₁ %{x:.2f}, x₂ %{y:.2f}<br>μ = %{marker.color:.3f}<extra>%{meta}</extra>"
    traces = []
    if truth is None:
        traces.append(dict(type="scatter", x=x, y=y, mode="markers", meta="items", name="items",
                           marker=dict(color=mu, symbol="circle", **marker), hovertemplate=hover))  # fmt: skip
    else:
        t = np.asarray(truth)
        for cls, symbol, name in ((1, "circle", "truth 1"), (0, "diamond", "truth 0")):
            m = t == cls
            traces.append(
                dict(type="scatter", x=x[m], y=y[m], mode="markers", meta=f"items:{cls}", name=name,
                     marker=dict(color=mu[m], symbol=symbol, **marker), hovertemplate=hover)
            )  # fmt: skip
    for w, meta, name, style in (
        (true_boundary, "true_boundary", "true boundary", dict(color=GREY, width=2, dash="dot")),
        (mv_boundary, "mv_boundary", "trained on majority vote", dict(color=MV_COLOR, width=3, dash="dash")),
        (boundary, "boundary", "Raykar (this snapshot)", dict(color=TRUTH_COLOR, width=3)),
    ):
        if w is None:
            continue
        seg = boundary_segment(w, box)
        xs, ys = seg if seg is not None else ([None], [None])
        traces.append(_line(xs, ys, meta, name, line=style, hoverinfo="skip"))
    layout = _layout(
        title,
        height,
        legend=_LEGEND_BELOW,
        coloraxis=dict(
            cmin=0.0, cmax=1.0, colorscale=MU_COLORSCALE,
            colorbar=dict(title=dict(text="μᵢ"), thickness=12, tickvals=[0, 0.5, 1]),
        ),
        xaxis=_axis(title=dict(text=x_title, standoff=6), range=[box[0], box[1]], zeroline=False),
        yaxis=_axis(title=dict(text=y_title), range=[box[2], box[3]], zeroline=False),
    )  # fmt: skip
    return figure(traces, layout)


def roc_trail(
    fpr: np.ndarray,
    tpr: np.ndarray,
    names: Sequence[str],
    *,
    true_fpr: np.ndarray | None = None,
    true_tpr: np.ndarray | None = None,
    kinds: Sequence[str] | None = None,
    title: str = "Annotators in ROC space: (1 − β, α), with their trail",
    height: int = 520,
    title_width: int = 30,
    x_title: str = "1 − β (false-positive rate)",
    label_px: tuple[float, float] = (190.0, 10.0),
) -> go.Figure:
    """Each annotator's path in ROC space over the snapshots so far: ``fpr`` = 1 - beta and ``tpr`` = alpha, both
    (S, M) (rows: snapshots, the last is the current one). Per annotator: ``trail:<name>`` (thin line through the
    earlier positions), and together ``now`` (the current positions) and ``truth`` (hollow markers, when given).
    The diagonal (alpha = 1 - beta: a spammer) is dashed; both axes span [0, 1].

    For a narrow column: ``title_width`` (characters a title line), a shorter ``x_title``, and ``label_px`` = (the
    square's width, the label font) in px, which :func:`label_positions` places the names for (a page whose CSS
    draws text larger than the figure asks, as presenter mode does, passes the size it draws)."""
    F = np.atleast_2d(np.asarray(fpr, dtype=np.float64))
    T = np.atleast_2d(np.asarray(tpr, dtype=np.float64))
    if F.shape != T.shape or F.shape[1] != len(names):
        raise ValueError("fpr and tpr need shape (snapshots, annotators), one column per name.")
    M = F.shape[1]
    colors = [PALETTE[m % len(PALETTE)] for m in range(M)]
    names = safe.html_all(names)  # escaped where they enter the figure (labels, text, meta)
    labels = [n + (f" ({safe.html(kinds[m])})" if kinds is not None else "") for m, n in enumerate(names)]
    traces = [_line([0, 1], [0, 1], "chance", "α = 1 − β: a spammer", line=dict(color=GREY, dash="dash", width=1))]
    for m in range(M):
        traces.append(
            dict(
                type="scatter", x=F[:, m], y=T[:, m], mode="lines+markers", meta=f"trail:{names[m]}",
                name=labels[m], showlegend=False, line=dict(color=colors[m], width=1.5),
                marker=dict(size=4, color=colors[m]), opacity=0.6, hoverinfo="skip",
            )
        )  # fmt: skip
    others = None  # the hollow truth markers: a label avoids them too
    if true_fpr is not None and true_tpr is not None:
        others = (np.asarray(true_fpr, dtype=np.float64), np.asarray(true_tpr, dtype=np.float64))
    traces.append(
        dict(
            type="scatter", x=F[-1], y=T[-1], mode="markers+text" if M <= 8 else "markers", meta="now",
            name="estimate now", text=names, textfont=dict(size=10),
            textposition=label_positions(
                F[-1], T[-1], names, others=others, plot_px=label_px[0], font_px=label_px[1]
            ) if M <= 8 else "top center",
            marker=dict(size=13, color=colors, line=dict(width=1, color="#ffffff")), cliponaxis=False,
            customdata=labels, hovertemplate="%{customdata}<br>1 − β %{x:.3f}, α %{y:.3f}<extra>now</extra>",
        )
    )  # fmt: skip
    if true_fpr is not None and true_tpr is not None:
        traces.append(
            dict(
                type="scatter", x=np.asarray(true_fpr, dtype=np.float64), y=np.asarray(true_tpr, dtype=np.float64),
                mode="markers", meta="truth", name="truth",
                marker=dict(size=13, symbol="circle-open", color=colors, line=dict(width=2)),
                customdata=labels, hovertemplate="%{customdata}<br>true 1 − β %{x:.3f}, α %{y:.3f}<extra>truth</extra>",
            )
        )  # fmt: skip
    layout = _layout(
        title,
        height,
        title_width=title_width,  # 30: whole in a half-width column at 1024 px
        legend=_LEGEND_BELOW,
        # both axes keep [0, 1]: the one with more room shrinks its domain to make the square (with scaleanchor
        # alone plotly widens the y *range* of a tall, narrow plot instead, to about [-0.8, 1.7])
        xaxis=_axis(
            title=dict(text=safe.html(x_title), standoff=6), range=_UNIT, constrain="domain",
            constraintoward="left", automargin=True,
        ),
        yaxis=_axis(
            title=dict(text="α (sensitivity)"), range=_UNIT, scaleanchor="x", scaleratio=1, constrain="domain",
            constraintoward="top", automargin=True,
        ),
    )  # fmt: skip
    return figure(traces, layout)


_LABEL_SPOTS = (  # textposition -> where the label's centre sits relative to the marker (in px), preferred first
    ("top center", 0.0, 1.0),
    ("bottom center", 0.0, -1.0),
    ("middle right", 1.0, 0.0),
    ("middle left", -1.0, 0.0),
    ("top right", 1.0, 1.0),
    ("top left", -1.0, 1.0),
    ("bottom right", 1.0, -1.0),
    ("bottom left", -1.0, -1.0),
)


def label_positions(
    x: np.ndarray,
    y: np.ndarray,
    names: Sequence[str],
    *,
    others: tuple[np.ndarray, np.ndarray] | None = None,
    marker_px: float = 13.0,
    font_px: float = 10.0,
    plot_px: float = 190.0,
) -> list[str]:
    """A ``textposition`` per point of a scatter on the unit square, chosen greedily so labels overlap each other,
    the markers and the ``others`` points as little as possible (ties: the first of :data:`_LABEL_SPOTS`, so
    an isolated point keeps its label on top). Approximate: label boxes are estimated from ``font_px`` on a square
    ``plot_px`` wide."""
    px_unit = 1.0 / plot_px  # one px in units of the square
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    r = marker_px / 2 * px_unit
    h = 1.3 * font_px * px_unit  # label box height
    # obstacles as boxes (cx, cy, half width, half height): every marker
    px = [x] if others is None else [x, np.asarray(others[0], dtype=np.float64)]
    py = [y] if others is None else [y, np.asarray(others[1], dtype=np.float64)]
    boxes = [(a, b, r, r) for a, b in zip(np.concatenate(px), np.concatenate(py)) if np.isfinite(a) and np.isfinite(b)]
    out = ["top center"] * x.size
    # the most crowded points choose first
    dist = np.hypot(x[:, None] - x[None, :], y[:, None] - y[None, :]) + np.eye(x.size) * 10
    order = np.argsort(dist.min(axis=1) if x.size > 1 else np.zeros(x.size), kind="stable")
    for i in order:
        if not (np.isfinite(x[i]) and np.isfinite(y[i])):
            continue
        w = 0.6 * font_px * max(len(str(names[i])), 1) * px_unit / 2  # half width
        best, best_cost = None, np.inf
        for pos, dx, dy in _LABEL_SPOTS:
            cx = x[i] + dx * (r + w + 2 * px_unit)
            cy = y[i] + dy * (r + h / 2 + 1 * px_unit)
            cost = sum(
                max(0.0, min(cx + w, bx + bw) - max(cx - w, bx - bw))
                * max(0.0, min(cy + h / 2, by + bh) - max(cy - h / 2, by - bh))
                for bx, by, bw, bh in boxes
            )
            # beyond the plot's edge a label is cut off: worse than any overlap
            cost += max(0.0, -0.02 - (cx - w)) + max(0.0, cx + w - 1.02)
            cost += max(0.0, -0.02 - (cy - h / 2)) + max(0.0, cy + h / 2 - 1.02)
            if cost < best_cost - 1e-12:
                best, best_cost = (pos, cx, cy), cost
        out[i] = best[0]
        boxes.append((best[1], best[2], w, h / 2))
    return out


# ---------------------------------------------------------------------------- per-worker intervals
def interval_chart(
    worker: Sequence[str],
    estimate: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    n_labels: np.ndarray | None = None,
    exact: np.ndarray | None = None,
    chance: float | None = None,
    x_title: str = "estimate",
    title: str = "Estimate and 95 % interval per worker",
    max_rows: int = 40,
) -> go.Figure:
    """Dot and whisker per worker, sorted by estimate (the highest on top), on a [0, 1] x axis. ``exact`` (bool)
    marks rows whose interval is the exact binomial one (drawn hollow: estimate on the boundary). Shows at most
    ``max_rows`` rows: the lowest and highest estimates, half each. Traces: ``wald``, ``exact``; ``chance`` (a
    dotted vertical line) is a shape named "chance"."""
    est = np.asarray(estimate, dtype=np.float64)
    lo = np.asarray(lower, dtype=np.float64)
    hi = np.asarray(upper, dtype=np.float64)
    names = safe.html_all(worker)
    x_title = safe.html(x_title)
    if not (est.shape == lo.shape == hi.shape == (len(names),)):
        raise ValueError("worker, estimate, lower and upper need one entry per worker.")
    if est.size == 0:
        return _empty(title, "No workers to show.")
    nl = np.zeros(est.size) if n_labels is None else np.asarray(n_labels, dtype=np.float64)
    ex = np.zeros(est.size, dtype=bool) if exact is None else np.asarray(exact, dtype=bool)
    order = np.argsort(est, kind="stable")
    if order.size > max_rows:
        order = np.concatenate([order[: max_rows // 2], order[-(max_rows - max_rows // 2) :]])
    # a category label must be unique: two workers may share a display name after str()
    labels = [f"{names[i]}" if names.count(names[i]) == 1 else f"{names[i]} #{i}" for i in order]
    traces = []
    for flag, meta, name, symbol in ((False, "wald", "95 % Wald interval", "circle"),
                                     (True, "exact", "exact binomial interval (estimate on the boundary)",
                                      "circle-open")):  # fmt: skip
        sel = ex[order] == flag
        if not sel.any():
            continue
        idx = order[sel]
        traces.append(
            dict(
                type="scatter",
                x=est[idx],
                y=[labels[k] for k in np.flatnonzero(sel)],
                mode="markers",
                meta=meta,
                name=name,
                marker=dict(size=9, symbol=symbol, color=OBJECTIVE_COLOR, line=dict(width=2, color=OBJECTIVE_COLOR)),
                error_x=dict(
                    type="data", symmetric=False, array=hi[idx] - est[idx], arrayminus=est[idx] - lo[idx],
                    color=OBJECTIVE_COLOR, thickness=1.5, width=4,
                ),
                customdata=np.stack([lo[idx], hi[idx], nl[idx]], axis=1),
                hovertemplate="%{y}<br>estimate %{x:.3f}<br>95 %: [%{customdata[0]:.3f}, %{customdata[1]:.3f}]"
                "<br>labels: %{customdata[2]:,.0f}<extra></extra>",
            )
        )  # fmt: skip
    shapes = []
    if chance is not None:
        shapes.append(
            dict(type="line", x0=chance, x1=chance, y0=0, y1=1, xref="x", yref="paper", name="chance",
                 line=dict(color=GREY, dash="dot"))
        )  # fmt: skip
    height = int(min(max(140 + 22 * order.size, 260), 1100))
    layout = _layout(
        title,
        height,
        shapes=shapes,
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1),
        xaxis=_axis(title=dict(text=x_title, standoff=6), range=_UNIT),
        yaxis=_axis(type="category", categoryorder="array", categoryarray=labels, automargin=True),
    )
    return figure(traces, layout)
