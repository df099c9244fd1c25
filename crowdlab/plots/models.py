"""Figures of the models' own parameters: GLAD's abilities and item difficulties (Whitehill et al. 2009) and MACE's
spamming probabilities (Hovy et al. 2013). Pure functions from arrays to ``go.Figure``; names are escaped with
:func:`crowdlab.io.safe.html` here, so callers pass them as they are."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab.io import safe
from crowdlab.plots.common import CURRENT_COLOR, OBJECTIVE_COLOR, _axis, _empty, _layout, figure

GREY = "#7f7f7f"


def _extremes(values: np.ndarray, max_rows: int) -> np.ndarray:
    """Indices sorted by value; at most ``max_rows``: the lowest and the highest half each."""
    order = np.argsort(values, kind="stable")
    if order.size > max_rows:
        order = np.concatenate([order[: max_rows // 2], order[-(max_rows - max_rows // 2) :]])
    return order


def _labels(names: Sequence, order: np.ndarray) -> list[str]:
    names = [safe.html(safe.shorten(n, 24)) for n in names]
    return [names[i] if names.count(names[i]) == 1 else f"{names[i]} #{i}" for i in order]


def ability_chart(
    alpha: np.ndarray, names: Sequence, n_labels: np.ndarray, *, max_rows: int = 40, title: str | None = None
) -> go.Figure:
    """GLAD's worker abilities alpha_j as dots, sorted (highest on top); 0 (guessing) dotted; negative alpha
    (adversarial: right less often than chance) in red. Trace ``meta``: "ability"."""
    alpha = np.asarray(alpha, dtype=np.float64)
    if alpha.size == 0:
        return _empty(title or "Worker ability", "No workers to show.")
    order = _extremes(alpha, max_rows)
    labels = _labels(names, order)
    colors = [CURRENT_COLOR if alpha[i] < 0 else OBJECTIVE_COLOR for i in order]
    trace = dict(
        type="scatter",
        x=alpha[order],
        y=labels,
        mode="markers",
        meta="ability",
        name="ability αⱼ",
        marker=dict(size=9, color=colors),
        customdata=np.asarray(n_labels, dtype=np.float64)[order],
        hovertemplate="%{y}<br>α = %{x:.3f}<br>labels: %{customdata:,.0f}<extra></extra>",
    )
    shapes = [dict(type="line", x0=0, x1=0, y0=0, y1=1, xref="x", yref="paper", line=dict(color=GREY, dash="dot"))]
    shown = "" if order.size == alpha.size else f" (the {order.size} lowest and highest of {alpha.size:,})"
    layout = _layout(
        title or f"Worker ability αⱼ{shown}",
        int(min(max(140 + 22 * order.size, 260), 1000)),
        shapes=shapes,
        showlegend=False,
        xaxis=_axis(title=dict(text="ability αⱼ (0: guessing, < 0: adversarial)", standoff=6)),
        yaxis=_axis(type="category", categoryorder="array", categoryarray=labels, automargin=True),
    )
    return figure([trace], layout)


def log_ticks(lo: float, hi: float, max_ticks: int = 6) -> tuple[list[float], list[str]]:
    """Tick positions (in log10) and labels for a log10 axis over [lo, hi] (log10 units): 1, 2, 5 times the powers
    of ten inside it, or the powers of ten alone (every other one, and so on) when those are more than
    ``max_ticks``; at least the two ends when nothing nicer falls inside. Labels are plain numbers ("0.1", "2")."""
    lo, hi = float(min(lo, hi)), float(max(lo, hi))
    decades = range(int(np.floor(lo)), int(np.ceil(hi)) + 1)
    for mantissas in ((1, 2, 5), (1,)):
        values = [m * 10.0**e for e in decades for m in mantissas]
        inside = [v for v in values if lo - 1e-9 <= np.log10(v) <= hi + 1e-9]
        if 2 <= len(inside) <= max_ticks:
            break
    else:
        powers = [10.0**e for e in decades if lo - 1e-9 <= e <= hi + 1e-9]
        step = max(1, int(np.ceil(len(powers) / max_ticks)))
        inside = powers[::step] if len(powers) >= 2 else [10**lo, 10**hi]
    return [float(np.log10(v)) for v in inside], [f"{v:.3g}" for v in inside]


def difficulty_histogram(beta: np.ndarray, *, title: str = "Item difficulty 1/βᵢ") -> go.Figure:
    """Histogram of GLAD's item difficulties 1/beta_i in log10 bins, drawn on a linear axis of log10(1/beta) (every
    bar as wide as its bin, the hardest one too) with ticks at 1, 2, 5 times powers of ten labelled as numbers
    (:func:`log_ticks`). Trace ``meta``: "difficulty"; its customdata holds each bin's ends (as difficulties)."""
    beta = np.asarray(beta, dtype=np.float64)
    if beta.size == 0:
        return _empty(title, "No items to show.")
    logd = np.log10(1.0 / beta)
    edges = np.linspace(logd.min() - 1e-9, logd.max() + 1e-9, 31) if np.ptp(logd) > 0 else logd[:1] + [-0.5, 0.5]
    counts, edges = np.histogram(logd, bins=edges)
    trace = dict(
        type="bar",
        x=0.5 * (edges[:-1] + edges[1:]),
        y=counts,
        width=np.diff(edges) * 0.95,
        meta="difficulty",
        marker=dict(color=OBJECTIVE_COLOR),
        customdata=np.stack([10 ** edges[:-1], 10 ** edges[1:]], axis=1),
        hovertemplate="difficulty %{customdata[0]:.3g} to %{customdata[1]:.3g}<br>%{y} items<extra></extra>",
    )
    tickvals, ticktext = log_ticks(edges[0], edges[-1])
    pad = 0.02 * (edges[-1] - edges[0])
    layout = _layout(
        title,
        320,
        showlegend=False,
        xaxis=_axis(
            title=dict(text="1/βᵢ (larger: harder; log scale)", standoff=6),
            range=[edges[0] - pad, edges[-1] + pad],  # the first and the last bar whole, not at the edge
            tickvals=tickvals,
            ticktext=ticktext,
            automargin=True,
        ),
        yaxis=_axis(title=dict(text="items", standoff=6), automargin=True),
    )
    return figure([trace], layout)


def spam_chart(
    spamming: np.ndarray,
    names: Sequence,
    n_labels: np.ndarray,
    *,
    max_rows: int = 40,
    title: str | None = None,
    interval: tuple[np.ndarray, np.ndarray] | None = None,
) -> go.Figure:
    """MACE's P(spamming) = 1 - theta_j per worker as horizontal bars on [0, 1], the most spamming on top; bars
    above 0.5 (a worker who spams more often than not) in red; ``interval`` (lower, upper) per worker, e.g. the
    95% credible interval of MACE by variational Bayes, as error bars. Trace ``meta``: "spam"."""
    p = np.asarray(spamming, dtype=np.float64)
    if p.size == 0:
        return _empty(title or "Spamming", "No workers to show.")
    order = _extremes(p, max_rows)
    labels = _labels(names, order)
    trace = dict(
        type="bar",
        orientation="h",
        x=p[order],
        y=labels,
        meta="spam",
        marker=dict(color=[CURRENT_COLOR if p[i] > 0.5 else OBJECTIVE_COLOR for i in order]),
        customdata=np.asarray(n_labels, dtype=np.float64)[order],
        hovertemplate="%{y}<br>P(spamming) = %{x:.3f}<br>labels: %{customdata:,.0f}<extra></extra>",
    )
    if interval is not None:
        lo, hi = (np.asarray(v, dtype=np.float64)[order] for v in interval)
        trace["error_x"] = dict(
            type="data", symmetric=False, array=hi - p[order], arrayminus=p[order] - lo, color=GREY, thickness=1.5
        )
        trace["customdata"] = np.stack([trace["customdata"], lo, hi], axis=1)
        trace["hovertemplate"] = (
            "%{y}<br>P(spamming) = %{x:.3f}<br>95% credible: %{customdata[1]:.3f} to %{customdata[2]:.3f}"
            "<br>labels: %{customdata[0]:,.0f}<extra></extra>"
        )
    shown = "" if order.size == p.size else f" (the {order.size} lowest and highest of {p.size:,})"
    layout = _layout(
        title or f"P(spamming) = 1 − θⱼ per worker{shown}",
        int(min(max(140 + 22 * order.size, 260), 1000)),
        showlegend=False,
        shapes=[
            dict(type="line", x0=0.5, x1=0.5, y0=0, y1=1, xref="x", yref="paper", line=dict(color=GREY, dash="dot"))
        ],
        xaxis=_axis(title=dict(text="P(spamming)", standoff=6), range=[0, 1]),
        yaxis=_axis(type="category", categoryorder="array", categoryarray=labels, automargin=True),
    )
    return figure([trace], layout)


def spam_by_group(
    spamming: np.ndarray,
    groups: Sequence[str],
    names: Sequence,
    *,
    order: Sequence[str] | None = None,
    height: int = 340,
    title: str | None = None,
) -> go.Figure:
    """MACE's P(spamming) = 1 - theta_j per worker as one row of dots per group (e.g. the simulation's true worker
    types), spread over the row so that equal values stay apart; dots above 0.5 (flagged as spammers) in red. Each
    row's label says how many of its workers are flagged, so a figure of any number of workers keeps its
    height. Trace ``meta``: "spam"."""
    p = np.asarray(spamming, dtype=np.float64)
    groups = [str(g) for g in groups]
    rows = list(order) if order is not None else sorted(set(groups))
    rows = [r for r in rows if r in groups]
    if p.size == 0 or not rows:
        return _empty(title or "Spamming", "No workers to show.")
    y = np.zeros(p.size)
    ticks = []
    for r, row in enumerate(rows):
        idx = np.flatnonzero(np.array(groups) == row)
        idx = idx[np.argsort(p[idx], kind="stable")]
        y[idx] = r + (np.linspace(-0.25, 0.25, idx.size) if idx.size > 1 else 0.0)
        ticks.append(f"{safe.html(row)}<br>{int((p[idx] > 0.5).sum())} of {idx.size} flagged")
    labels = [safe.html(safe.shorten(str(n), 24)) for n in names]
    trace = dict(
        type="scatter",
        mode="markers",
        x=p,
        y=y,
        meta="spam",
        marker=dict(size=9, color=[CURRENT_COLOR if v > 0.5 else OBJECTIVE_COLOR for v in p], opacity=0.85),
        text=labels,
        hovertemplate="%{text}<br>P(spamming) = %{x:.3f}<extra></extra>",
    )
    layout = _layout(
        title or "P(spamming) = 1 − θⱼ per worker",
        int(height),
        showlegend=False,
        margin=dict(l=24, r=10, t=50, b=10),  # a little room: the row labels stay whole in presenter mode too
        shapes=[
            dict(type="line", x0=0.5, x1=0.5, y0=0, y1=1, xref="x", yref="paper", line=dict(color=GREY, dash="dot"))
        ],
        xaxis=_axis(title=dict(text="P(spamming)", standoff=6), range=[0, 1]),
        yaxis=_axis(
            tickmode="array",
            tickvals=list(range(len(rows))),
            ticktext=ticks,
            range=[-0.5, len(rows) - 0.5],
            automargin=True,
            zeroline=False,
        ),  # fmt: skip
    )
    return figure([trace], layout)
