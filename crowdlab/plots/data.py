"""Plotly figure builders for a label set and for method comparisons (pure functions, no Streamlit).

The pictures a person wants before fitting anything: how many labels each item and each worker has, the class
balance (next to gold's), and how often pairs of workers agree; and after
:func:`crowdlab.analysis.compare.compare_methods`,
how often pairs of methods agree.

Conventions (as in :mod:`crowdlab.plots.common`): figures are built as plain dicts and validated by one
``go.Figure(...)`` call; heatmaps of agreement use a FIXED colour range ([0, 1], or [-1, 1] for correlations),
rows run top-down in the same order as the columns (the y axis is reversed), cells without a value (NaN: the two
workers share no item) are left blank, and numbers sit on the cells when the matrix is small. Names (workers,
classes, methods) and titles are escaped with :func:`crowdlab.io.safe.html` where they enter a figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.io.describe import worker_agreement
from crowdlab.models.scores import score_range
from crowdlab.plots.common import LEGEND_BELOW, figure, legend_margin, min_font, wrap_title

__all__ = [
    "AGREEMENT_COLOR_SCALE",
    "CORRELATION_COLOR_SCALE",
    "agreement_heatmap",
    "class_balance_bars",
    "count_bins",
    "count_histogram",
    "labels_per_item_histogram",
    "labels_per_worker_histogram",
    "method_agreement_heatmap",
    "score_correlation",
    "score_correlation_heatmap",
    "score_histogram",
    "short_method_names",
    "worker_agreement_heatmap",
    "wrap_name",
]

AGREEMENT_COLOR_SCALE = "Blues"
CORRELATION_COLOR_SCALE = "RdBu"
BAR_COLOR = "#1f77b4"
GOLD_COLOR = "#ff7f0e"
GRID_COLOR = "#e6e6e6"
_MARGIN = dict(l=10, r=10, t=50, b=10)


TITLE_CHARS = 34  # a title wraps at this many characters: whole in a half-width column at 1024 px


def _layout(title: str, height: int, **extra) -> dict:
    text = wrap_title(safe.html(title), TITLE_CHARS)
    lines = text.count("<br>") + 1
    out = dict(
        title=dict(text=text),
        height=height,
        margin=_MARGIN if lines == 1 else dict(_MARGIN, t=_MARGIN["t"] + 22 * (lines - 1)),
        paper_bgcolor="white",
        plot_bgcolor="white",
        font=dict(size=12),
    )
    out.update(extra)
    return out


def _axis(**kw) -> dict:
    return dict(gridcolor=GRID_COLOR, zerolinecolor=GRID_COLOR, linecolor="#bbbbbb", **kw)


# ---------------------------------------------------------------------------- counts
def count_bins(counts: Sequence[int] | np.ndarray, max_bins: int = 40) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer bins over ``counts``: ``(starts, frequencies, width)``.

    One bin per integer from min to max (zeros in between kept) when that is at most ``max_bins`` bins; else
    bins of equal integer ``width`` starting at the minimum. ``frequencies.sum() == len(counts)``.
    """
    c = np.asarray(counts, dtype=np.int64).ravel()
    if c.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 1
    lo, hi = int(c.min()), int(c.max())
    width = max(1, -(-(hi - lo + 1) // max_bins))  # ceil
    n_bins = (hi - lo) // width + 1
    freq = np.bincount((c - lo) // width, minlength=n_bins)
    starts = lo + width * np.arange(n_bins)
    return starts, freq, width


def count_histogram(
    counts: Sequence[int] | np.ndarray,
    *,
    title: str,
    x_title: str,
    y_title: str,
    max_bins: int = 40,
    height: int = 320,
) -> go.Figure:
    """Bars of how many units (items, workers) have each count (labels); see :func:`count_bins`.

    One trace (``meta="counts"``): x = the bin's first count (its centre when bins are wider than 1), y = number
    of units; hover names the range of the bin.
    """
    starts, freq, width = count_bins(counts, max_bins)
    if width == 1:
        x = starts.astype(np.float64)
        ranges = starts.astype(str)
    else:
        x = starts + (width - 1) / 2
        ranges = np.char.add(np.char.add(starts.astype(str), "–"), (starts + width - 1).astype(str))
    bar = dict(
        type="bar",
        x=x,
        y=freq,
        width=width * 0.9,
        meta="counts",
        name=y_title,
        marker=dict(color=BAR_COLOR),
        customdata=ranges,
        hovertemplate="%{customdata} " + x_title + ": %{y} " + y_title + "<extra></extra>",
    )
    if starts.size:  # pad the bars' extent so that a single bar is a block, not a sliver at the edge
        lo, hi = float(starts[0]) - 0.5, float(starts[-1] + width) - 0.5
        pad = max(2.0 * width, 0.05 * (hi - lo))
        x_range = [lo - pad, hi + pad]
    else:
        x_range = None
    y_axis = _axis(title=dict(text=y_title), rangemode="tozero")
    if freq.size and freq.max() <= 8:
        y_axis.update(tick0=0, dtick=1)  # whole numbers of units
    layout = _layout(
        title,
        height,
        showlegend=False,
        bargap=0,
        xaxis=_axis(title=dict(text=x_title), range=x_range),
        yaxis=y_axis,
    )
    return figure([bar], layout)


def labels_per_item_histogram(data: Annotations, *, height: int = 320) -> go.Figure:
    """How many items have 1, 2, 3, ... labels."""
    n = data.labels_per_item
    return count_histogram(
        n,
        title=f"Labels per item (mean {n.mean():.1f})",
        x_title="labels on the item",
        y_title="items",
        height=height,
    )


def labels_per_worker_histogram(data: Annotations, *, height: int = 320) -> go.Figure:
    """How many workers gave 1, 2, 3, ... labels (binned when the counts spread widely)."""
    n = data.labels_per_worker
    return count_histogram(
        n,
        title=f"Labels per worker (median {np.median(n):g}, max {n.max()})",
        x_title="labels by the worker",
        y_title="workers",
        height=height,
    )


# ---------------------------------------------------------------------------- class balance / scores
def class_balance_bars(balance: pd.DataFrame, *, title: str = "Class balance", height: int = 320) -> go.Figure:
    """Share of the labels in each class, with gold's share beside it when the frame has a ``gold`` column.

    ``balance``: :func:`crowdlab.io.describe.class_balance` (columns ``class``, ``labels`` and optionally
    ``gold``). Shares (not counts) so that labels and gold, which have different totals, compare directly; the
    counts are in the hover. Traces ``meta="labels"`` and ``meta="gold"``, classes in the frame's order.
    """
    classes = safe.html_all(balance["class"])
    traces = []
    for col, name, color in (("labels", "crowd labels", BAR_COLOR), ("gold", "gold labels", GOLD_COLOR)):
        if col not in balance:
            continue
        n = np.asarray(balance[col], dtype=np.float64)
        share = n / n.sum() if n.sum() > 0 else np.zeros_like(n)
        traces.append(
            dict(
                type="bar",
                x=classes,
                y=share,
                name=name,
                meta=col,
                marker=dict(color=color),
                customdata=n.astype(np.int64),
                hovertemplate="class %{x}: %{y:.1%} (%{customdata})<extra>" + name + "</extra>",
            )
        )
    layout = _layout(
        title,
        height,
        barmode="group",
        legend=LEGEND_BELOW,
        margin=legend_margin(1),
        xaxis=_axis(
            type="category", tickvals=classes, ticktext=[safe.html(safe.shorten(c, 14)) for c in balance["class"]]
        ),
        yaxis=_axis(title=dict(text="share"), tickformat=".0%", rangemode="tozero"),
    )
    return figure(traces, layout)


def score_histogram(
    values: np.ndarray,
    gold: np.ndarray | None = None,
    *,
    bins: int = 30,
    title: str = "Scores",
    height: int = 320,
) -> go.Figure:
    """Distribution of continuous scores (share per bin), with the gold means' distribution on the same bins.

    Traces ``meta="scores"`` and (when ``gold`` has finite values) ``meta="gold"``; both normalised to shares so
    they overlay. Bins are equal-width over the range of scores and gold together.
    """
    v = np.asarray(values, dtype=np.float64)
    g = None if gold is None else np.asarray(gold, dtype=np.float64)
    g = None if g is None or not np.isfinite(g).any() else g[np.isfinite(g)]
    both = v if g is None else np.concatenate([v, g])
    lo, hi = score_range(both)  # hi > lo for any finite scores (1e308 included)
    width = hi / bins - lo / bins  # hi - lo may overflow; its bins-th part does not
    t = np.arange(bins + 1) / bins
    edges = np.maximum.accumulate(lo * (1.0 - t) + hi * t)  # between lo and hi: no overflow
    centres = edges[:-1] + width / 2
    traces = []
    for arr, name, meta, color in ((v, "crowd scores", "scores", BAR_COLOR), (g, "gold means", "gold", GOLD_COLOR)):
        if arr is None:
            continue
        freq, _ = np.histogram(arr, bins=edges)
        traces.append(
            dict(
                type="bar",
                x=centres,
                y=freq / max(arr.size, 1),
                width=width,
                name=name,
                meta=meta,
                opacity=0.6,
                marker=dict(color=color),
                customdata=freq,
                hovertemplate="%{x:.3g}: %{y:.1%} (%{customdata})<extra>" + name + "</extra>",
            )
        )
    layout = _layout(
        title,
        height,
        barmode="overlay",
        bargap=0,
        legend=LEGEND_BELOW,
        margin=legend_margin(1),
        xaxis=_axis(title=dict(text="score")),
        yaxis=_axis(title=dict(text="share"), tickformat=".0%", rangemode="tozero"),
    )
    return figure(traces, layout)


# ---------------------------------------------------------------------------- agreement heatmaps
def agreement_heatmap(
    matrix: np.ndarray,
    names: Sequence[str],
    *,
    title: str,
    shared: np.ndarray | None = None,
    zrange: tuple[float, float] = (0.0, 1.0),
    colorscale: str = AGREEMENT_COLOR_SCALE,
    colorbar_title: str = "agree",
    text_max: int = 12,
    axis_title: str = "",
    tickangle: float | None = None,
    height: int | None = None,
    wrap_names: bool = False,
    square: bool = False,
    max_ticks: int | None = None,
) -> go.Figure:
    """A square heatmap of pairwise agreement: rows top-down in the same order as the columns.

    ``matrix`` (W, W), NaN where there is nothing to compare (a blank cell); ``shared`` (W, W) optional number of
    label pairs behind each cell (in the hover). The colour range is fixed to ``zrange`` (``zmin``/``zmax`` and
    the colour axis' ``cmin``/``cmax``) so colours mean the same thing on every dataset. Numbers on the cells
    when W <= ``text_max``. ``names`` are raw text (escaped here); ``wrap_names`` breaks them at a parenthesis
    (:func:`wrap_name`). ``square``: square cells (the y axis scaled to the x axis) in a figure of ``height`` or
    380 px, for a narrow column, where the free height would stretch the matrix into a tall strip. With more than
    ``max_ticks`` names only every few carry a tick label (rotated ids piled up; the hover names every cell).
    """
    z = np.asarray(matrix, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] != z.shape[1]:
        raise ValueError(f"matrix must be square, got shape {z.shape}.")
    W = z.shape[0]
    labels = [wrap_name(n) if wrap_names else safe.html(n) for n in names]
    if len(labels) != W:
        raise ValueError(f"{len(labels)} names for a {W} x {W} matrix.")
    # long names: ticks shortened (the hover keeps the whole name) and slanted, so they do not overlap
    raw = [str(n) for n in names]
    long_names = not wrap_names and max(map(len, raw), default=0) > 12
    ticks = dict(tickvals=labels, ticktext=[safe.html(safe.shorten(n, 14)) for n in raw]) if long_names else {}
    if max_ticks is not None and W > max_ticks:
        step = math.ceil(W / max_ticks)
        text = ticks.get("ticktext", labels)
        ticks = dict(tickmode="array", tickvals=labels[::step], ticktext=text[::step])
    zlist = z.astype(object)
    zlist[~np.isfinite(z)] = None  # plotly leaves None cells blank
    show_text = W <= text_max
    heat = dict(
        type="heatmap",
        z=zlist.tolist(),
        x=labels,
        y=labels,
        zmin=zrange[0],
        zmax=zrange[1],
        coloraxis="coloraxis",
        xgap=1,
        ygap=1,
        name="agreement",
        meta="agreement",
        hoverongaps=False,
    )
    if show_text:
        heat["text"] = np.where(np.isfinite(z), np.char.mod("%.2f", np.nan_to_num(z)), "").tolist()
        heat["texttemplate"] = "%{text}"
        heat["textfont"] = dict(size=10 if square else 12)  # fixed: plotly's automatic size shrinks to ~5 px
    if shared is not None:
        heat["customdata"] = np.asarray(shared, dtype=np.int64).tolist()
        heat["hovertemplate"] = "%{y} vs %{x}: %{z:.3f} on %{customdata} label pairs<extra></extra>"
    else:
        heat["hovertemplate"] = "%{y} vs %{x}: %{z:.3f}<extra></extra>"
    side = 380 if square else max(320, min(900, 140 + 22 * W))
    layout = _layout(
        title,
        height or side,
        margin=dict(l=10, r=10, t=50, b=10),
        coloraxis=dict(
            cmin=zrange[0],
            cmax=zrange[1],
            colorscale=colorscale,
            colorbar=dict(title=dict(text=colorbar_title), thickness=12),
        ),
        xaxis=dict(
            type="category",
            title=dict(text=axis_title),
            tickangle=tickangle if tickangle is not None else (-45 if W > 6 or long_names else 0),
            dtick=1,
            tickfont=dict(size=10 if W > 15 else 12),
            automargin=True,
            **ticks,
        ),
        yaxis=dict(
            type="category",
            title=dict(text=axis_title),
            autorange="reversed",
            dtick=1,
            tickfont=dict(size=10 if W > 15 else 12),
            automargin=True,
            **ticks,
        ),
    )
    if square:
        layout["xaxis"]["constrain"] = "domain"
        layout["yaxis"].update(scaleanchor="x", scaleratio=1, constrain="domain")
    return figure([heat], layout)


# a worker-by-worker matrix in the Data page's left column (~330 px at 1024 px): square, about a dozen tick labels,
# numbers on the cells only while they fit
NARROW_MATRIX = dict(square=True, max_ticks=12, text_max=8)


def worker_agreement_heatmap(data: Annotations, limit: int = 30) -> go.Figure:
    """Share of equal labels for every pair of the ``limit`` most active workers (classes only).

    :func:`crowdlab.io.describe.worker_agreement`; workers ordered most active first, on both axes.
    """
    workers, agree, shared = worker_agreement(data, limit)
    names = [data.worker_names[w] for w in workers]
    more = f" (the {len(workers)} most active of {data.n_workers})" if len(workers) < data.n_workers else ""
    return agreement_heatmap(
        agree,
        names,
        shared=shared,
        title="Worker agreement on shared items" + more,
        axis_title="worker",
        **NARROW_MATRIX,
    )


def score_correlation(data: Annotations, limit: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pearson correlation of the scores of every pair of the ``limit`` most active workers (continuous data).

    Returns ``(workers, r, shared)`` like :func:`crowdlab.io.describe.worker_agreement`: ``r[a, b]`` is computed over
    the items both scored (a worker's repeated scores of one item are averaged), NaN when they share fewer than 3
    items or one of them gives a constant score there. Vectorised: sums over shared items are products of the
    (items x workers) score and mask matrices.
    """
    n = data.labels_per_worker
    workers = np.lexsort((np.arange(n.size), -n))[:limit]
    pos = np.full(data.n_workers, -1)
    pos[workers] = np.arange(workers.size)
    keep = pos[data.worker] >= 0
    item, col = data.item[keep], pos[data.worker[keep]]
    W, N = workers.size, data.n_items
    total = np.zeros((N, W))
    cnt = np.zeros((N, W))
    v = data.value[keep]
    np.add.at(total, (item, col), v / max(float(np.abs(v).max(initial=0.0)), 1e-300))  # r is scale-free; |v| <= 1
    np.add.at(cnt, (item, col), 1.0)
    M = (cnt > 0).astype(np.float64)
    X = np.divide(total, cnt, out=np.zeros_like(total), where=cnt > 0)
    shared = M.T @ M  # items both scored
    sx = X.T @ M  # sx[a, b] = sum of a's scores on items b also scored
    sxx = (X * X).T @ M
    sxy = X.T @ X
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.where(shared > 0, shared, 1.0)
        cov = sxy / k - (sx / k) * (sx.T / k)
        var_a = sxx / k - (sx / k) ** 2
        var_b = var_a.T
        r = cov / np.sqrt(var_a * var_b)
    r = np.where((shared >= 3) & (var_a > 1e-12) & (var_b > 1e-12), np.clip(r, -1.0, 1.0), np.nan)
    return workers, r, shared.astype(np.int64)


def score_correlation_heatmap(data: Annotations, limit: int = 30) -> go.Figure:
    """Correlation of the scores of every pair of workers, colour range fixed to [-1, 1] (:func:`score_correlation`).

    Good scorers track the item means and correlate with each other; bad (uniform) scorers correlate with nobody.
    """
    workers, r, shared = score_correlation(data, limit)
    names = [data.worker_names[w] for w in workers]
    more = f" (the {len(workers)} most active of {data.n_workers})" if len(workers) < data.n_workers else ""
    return agreement_heatmap(
        r,
        names,
        shared=shared,
        title="Correlation of worker scores on shared items" + more,
        zrange=(-1.0, 1.0),
        colorscale=CORRELATION_COLOR_SCALE,
        colorbar_title="r",
        axis_title="worker",
        **NARROW_MATRIX,
    )


RANGE_STEP = 0.05  # a colour range on the data starts at a multiple of this


def agreement_range(matrix: np.ndarray, step: float = RANGE_STEP) -> tuple[float, float]:
    """A colour range on the data for agreements in [0, 1]: from the smallest agreement off the diagonal, rounded
    down to a multiple of ``step``, to 1 (methods that all agree on 80-100 % of the items were one dark blue on a
    fixed [0, 1] scale). (0, 1) when there is no pair to compare."""
    z = np.asarray(matrix, dtype=np.float64)
    off = z[~np.eye(z.shape[0], dtype=bool)] if z.ndim == 2 and z.shape[0] == z.shape[1] else z.ravel()
    off = off[np.isfinite(off)]
    if off.size == 0:
        return (0.0, 1.0)
    lo = np.floor(float(np.clip(off.min(), 0.0, 1.0)) / step + 1e-9) * step
    return (float(min(lo, 1.0 - step)), 1.0)


def method_agreement_heatmap(agreement: pd.DataFrame, *, title: str = "Agreement between methods") -> go.Figure:
    """Share of items on which two methods give the same hard label
    (:attr:`crowdlab.analysis.compare.Comparison.agreement`), coloured over :func:`agreement_range`."""
    names = [str(n) for n in agreement.index]
    W = len(names)
    many = W > 6
    z = agreement.to_numpy(dtype=np.float64)
    fig = agreement_heatmap(
        z,
        names,
        zrange=agreement_range(z),
        wrap_names=True,
        title=title,
        text_max=20,
        tickangle=-30,
        # many methods: one-line short names leave the cells room for their numbers, about square
        height=max(380, 200 + 40 * W) if many else max(380, 180 + 70 * W),
    )
    # a fixed size: plotly's automatic one shrank the numbers to ~5 px in the narrow cells at 1024 px
    fig.update_traces(textfont_size=max(11 if many else 12, min_font() or 0))
    if many:  # (EM and the baselines): both axes keep the short names, the hover the whole titles
        ticks = dict(tickvals=[wrap_name(n) for n in names], ticktext=safe.html_all(short_method_names(names)))
        fig.layout.xaxis.update(tickangle=-45, **ticks)
        fig.layout.yaxis.update(**ticks)
    return fig


_MINOR_WORDS = {"and", "&", "of", "the", "with"}


def short_method_names(titles: Sequence[str]) -> list[str]:
    """Method titles without their parenthesis ("One-coin (symmetric noise)" -> "One-coin") for a tight axis.

    Two titles sharing a head stay apart: the later ones keep the initials of their parenthesis, as the app
    writes them ("MACE (competence and spamming)", "MACE (variational Bayes)" -> "MACE", "MACE (VB)")."""
    out, seen = [], set()
    for title in map(str, titles):
        head, sep, tail = title.partition(" (")
        short = head
        if sep and head in seen:
            words = [w for w in tail.rstrip(")").replace(",", " ").split() if w.lower() not in _MINOR_WORDS]
            short = f"{head} ({''.join(w[0].upper() for w in words)})"
        seen.add(head)
        out.append(short)
    return out


def wrap_name(name: str) -> str:
    """A long method title on two lines at its parenthesis ("One-coin<br>(symmetric noise)") for axis labels;
    the text is escaped (:func:`crowdlab.io.safe.html`), the line break is the only markup."""
    head, sep, tail = str(name).partition(" (")
    return f"{safe.html(head)}<br>({safe.html(tail)}" if sep else safe.html(name)
