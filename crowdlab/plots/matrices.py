"""Matrices of an EM run: the confusion-matrix grid and the posterior heatmap (stable colour range, rows top-down).

Conventions: :mod:`crowdlab.plots.common`."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab.io import safe
from crowdlab.plots.common import (
    COLOR_SCALE,
    CURRENT_COLOR,
    _cell_text,
    _empty,
    _layout,
    figure,
    wrap_label,
)


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
    title: str = "Confusion matrices Γₘ (columns: true class, rows: worker says)",
    cell_height: int = 190,
    width_px: int = 640,
    text_px: float = 14.0,
) -> go.Figure:
    """A grid of heatmaps, one per worker: ``gamma[m]`` with true class as columns, "worker says" as rows.

    ``gamma`` (M, K, K) with ``gamma[m, k_said, k_true]``. Shows ``workers`` (indices) or the first
    ``max_workers``, titled by worker name (layout annotations). Every heatmap uses the shared colour axis
    ``coloraxis`` fixed to [0, 1] and its y axis is reversed (row 0 on top); numbers sit on the cells when
    K <= ``text_max_classes``, in a fixed size that stays legible (plotly would shrink it to fit a narrow cell).
    The grid has ``cols`` columns of ``cell_height`` px high matrices; unused cells of the last row get hidden axes.
    Worker names are wrapped onto at most two lines as wide as a matrix of a chart about ``width_px`` wide
    (:func:`wrap_label`) so neighbouring titles never overlap. No tick marks: a matrix's marks would poke into
    its left neighbour's numbers.

    ``text_px``: the largest size the page draws the cell numbers and tick labels at (presenter mode's CSS draws
    them at 14 px, whatever the figure asks; the default covers both modes). The numbers are written as "0.44"
    when that fits a cell of a matrix about ``width_px`` / ``cols`` wide at that size, else as ".44" (1.00 as
    "1"), else not at all (the hover keeps them). Class labels that do not fit across a cell turn upright, and
    the rows of the grid move apart to make room for them under each matrix.
    """
    gamma = np.asarray(gamma, dtype=np.float64)
    if gamma.ndim != 3 or gamma.shape[1] != gamma.shape[2]:
        raise ValueError(f"gamma must be (M, K, K), got shape {gamma.shape}.")
    M, K, _ = gamma.shape
    idx = list(range(min(M, max_workers))) if workers is None else [int(w) for w in workers][:max_workers]
    if not idx:
        return _empty(title, "No workers to show.")
    names = safe.html_all(class_names)
    # long names would squeeze the small matrices: ticks and titles shortened (the hover keeps the whole name)
    ticks = dict(tickvals=names, ticktext=[safe.html(safe.shorten(c, 12)) for c in class_names])
    n = len(idx)
    cols = max(1, min(cols, n))
    rows = math.ceil(n / cols)
    # a title per matrix, as wide as one: the chart less the colour bar (~70 px), the row labels (~7 px a
    # character) and the "says" title, split between the columns, at ~7.5 px a character of 13 px text
    tick_chars = max(len(t) for t in ticks["ticktext"])
    name_chars = max(8, int((width_px - 100 - 7 * tick_chars) / cols / 7.5))
    titles = {m: wrap_label(worker_names[m], name_chars) for m in idx}
    name_lines = max(t.count("<br>") + 1 for t in titles.values())
    extra = 16 * (name_lines - 1)  # px for a second line of the matrix titles
    # one cell, in px: a matrix's share of the plot area (the chart less the colour bar and the margins, ~95 px,
    # and the "says" title and row labels, ~7.5 px a character at 14 px), split between the K classes
    label_chars = max(len(safe.shorten(str(c), 12)) for c in class_names)  # as shown (not as escaped)
    cell_px = (1.0 - 0.06 * (cols - 1)) / cols * max(width_px - 100 - 8 * label_chars, 0) / K
    label_px = 0.56 * text_px * label_chars  # a class label written across, at text_px
    upright = label_px + 4 > cell_px  # labels turned upright reach label_px down instead of one text line
    drop = int(label_px - text_px) if upright else 0
    extra += drop
    cell_h, gap = cell_height, 75 + extra  # pixels: a heatmap, and the room between rows for ticks and titles
    plot_h = rows * cell_h + (rows - 1) * gap
    vspace = gap / plot_h if rows > 1 else 0.0
    domains = _grid(rows, cols, hspace=0.06, vspace=vspace)
    text_size = 12 if K <= 2 else 11 if K == 3 else 10
    cells = None  # the numbers in the widest form that fits a cell at text_px: "0.44", ".44", or none
    if K <= text_max_classes:
        for em, form in ((1.96, "full"), (1.4, "short")):  # "0.44" and ".44" in em (digits ~0.56, point ~0.28)
            if em * max(text_px, text_size) + 4 <= cell_px:
                cells = form
                break
    show_text = cells is not None
    traces = []
    layout = _layout(
        title,
        plot_h + 140 + extra,  # the top margin (+ a second line of matrix titles) and the bottom (+ labels)
        margin=dict(l=10, r=10, t=90 + extra - drop, b=50 + drop),
        coloraxis=dict(
            cmin=0.0,
            cmax=1.0,
            colorscale=COLOR_SCALE,
            # at most 320 px long, from the top: a tall grid would stretch it down the whole page
            colorbar=dict(
                title=dict(text="P"), thickness=12, lenmode="pixels", len=min(plot_h, 320), y=1, yanchor="top"
            ),
        ),
        annotations=[],
    )
    # the title pinned to the top (plotly centres it in the top margin, onto two-line matrix titles)
    layout["title"].update(y=1.0, yref="container", yanchor="top", pad=dict(t=10))
    title_lines = layout["title"]["text"].count("<br>") + 1
    layout["margin"]["t"] = max(layout["margin"]["t"], 22 + 20 * title_lines + 17 * name_lines)
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
            title=dict(text="true class" if (r == rows - 1 or j + cols >= n) and c == 0 else "", standoff=4),
            ticks="",
            **ticks,
            **({"tickangle": -90} if upright else {}),  # else plotly's own choice
        )
        layout["yaxis" + s] = dict(
            domain=yd,
            anchor="x" + s,
            type="category",
            autorange="reversed",
            visible=used,
            showticklabels=c == 0,  # every matrix has the same classes: label the rows once per grid row
            # plotly places the title by the labels at its own size: clear of them at text_px too
            title=dict(text="says" if c == 0 else "", standoff=4 + round(0.56 * max(text_px - 12, 0) * label_chars)),
            ticks="",
            **ticks,
        )
        if not used:
            continue
        m = idx[j]
        z = gamma[m]
        text = None
        if show_text:
            text = _cell_text(z)
            if cells == "short":
                text = np.where(text == "1.00", "1", np.char.lstrip(text, "0"))
        wname = safe.html(worker_names[m])
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
                text=text,
                texttemplate="%{text}" if show_text else None,
                textfont=dict(size=text_size) if show_text else None,
                name=wname,
                hovertemplate="true %{x}, says %{y}: %{z:.3f}<extra>" + wname + "</extra>",
                xgap=1,
                ygap=1,
            )
        )
        layout["annotations"].append(
            dict(
                text=titles[m],
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
    return figure(traces, layout)


CHANGED_COLOR = "#ff7f0e"
RIGHT_COLOR = "#2ca02c"
WRONG_COLOR = "#d62728"
CHANGED_MARK = "★ "
TIED_MARK = " ⚖"  # after the tick label of an item whose majority vote is tied


def rect_path(cells: Sequence[tuple[float, float, float, float]]) -> str:
    """One SVG path drawing every rectangle (x0, x1, y0, y1): a single layout shape instead of one per cell
    (each shape costs ~0.3 ms to validate, a path string costs nothing)."""
    return " ".join(f"M{x0:g},{y0:g} H{x1:g} V{y1:g} H{x0:g} Z" for x0, x1, y0, y1 in cells)


def parse_rect_path(path: str) -> list[tuple[float, float, float, float]]:
    """The rectangles (x0, x1, y0, y1) of a :func:`rect_path` string (for tests and for reading figures back)."""
    out = []
    for part in path.split("Z"):
        nums = part.replace("M", " ").replace("H", " ").replace("V", " ").replace(",", " ").split()
        if nums:
            x0, y0, x1, y1 = (float(v) for v in nums[:4])
            out.append((x0, x1, y0, y1))
    return out


def posterior_heatmap(
    q: np.ndarray,
    item_names: Sequence[str],
    class_names: Sequence[str],
    gold: np.ndarray | None = None,
    *,
    changed: np.ndarray | None = None,
    title: str = "Posterior q (rows: items, columns: classes)",
    text_max_cells: int = 400,
    gold_name: str = "gold",
    tied: np.ndarray | None = None,
) -> go.Figure:
    """Heatmap of the posterior q (N, K): items as rows (top-down), classes as columns, fixed range [0, 1].

    ``gold`` (N,) int codes with -1 = unknown: the cell of each known gold class is outlined (one layout shape
    named ``gold``, an SVG path of rectangles in category-index coordinates: :func:`parse_rect_path` reads it
    back), so the number in it stays readable, and a text column to the right (own x axis ``x2``) names the gold
    class: trace ``meta="gold_agrees"`` (green) where the arg-max of q agrees, ``meta="gold_differs"`` (red)
    where it does not. ``changed`` (N,) bool: rows whose hard label changed in the last half-step get a star in
    their tick label and a dotted outline around the row (one path shape named ``changed``). ``tied`` (N,) bool:
    rows whose majority vote is tied get :data:`TIED_MARK` after their tick label. Numbers sit on the cells when
    N * K <= ``text_max_cells``.
    """
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 2:
        raise ValueError(f"q must be (items, classes), got shape {q.shape}.")
    N, K = q.shape
    items = safe.html_all(item_names)
    classes = safe.html_all(class_names)
    if len(items) != N or len(classes) != K:
        raise ValueError(f"names do not match q's shape {q.shape}: {len(items)} items, {len(classes)} classes.")
    show_text = N * K <= text_max_cells
    known = np.zeros(0, dtype=int)
    g = None
    if gold is not None:
        g = np.asarray(gold)
        if g.shape != (N,):
            raise ValueError(f"gold needs one entry per row: got shape {g.shape} for {N} rows.")
        known = np.flatnonzero(g >= 0) if g.dtype.kind in "iu" else known
    gold_column = known.size > 0
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
    traces = [heat]
    shapes = []
    # on category axes, shapes use the category index as the coordinate
    if gold_column:
        cells = [(int(g[n]) - 0.5, int(g[n]) + 0.5, n - 0.5, n + 0.5) for n in known]
        shapes.append(
            dict(
                type="path",
                path=rect_path(cells),
                xref="x",
                yref="y",
                line=dict(color=CURRENT_COLOR, width=2),
                name="gold",
            )
        )
    yaxis = dict(type="category", autorange="reversed")
    ticks = list(items)
    if tied is not None:
        td = np.asarray(tied, dtype=bool)
        if td.shape != (N,):
            raise ValueError(f"tied needs one entry per row: got shape {td.shape} for {N} rows.")
        if td.any():
            ticks = [s + TIED_MARK if t else s for s, t in zip(ticks, td)]
            yaxis.update(tickvals=items, ticktext=ticks)
    if changed is not None:
        ch = np.asarray(changed, dtype=bool)
        if ch.shape != (N,):
            raise ValueError(f"changed needs one entry per row: got shape {ch.shape} for {N} rows.")
        rows = np.flatnonzero(ch)
        if rows.size:
            shapes.append(
                dict(
                    type="path",
                    path=rect_path([(-0.5, K - 0.5, n - 0.5, n + 0.5) for n in rows]),
                    xref="x",
                    yref="y",
                    line=dict(color=CHANGED_COLOR, width=2, dash="dot"),
                    name="changed",
                )
            )
            yaxis.update(tickvals=items, ticktext=[CHANGED_MARK + s if c else s for s, c in zip(ticks, ch)])
    layout = _layout(
        title,
        max(240, 110 + 24 * N),
        margin=dict(l=10, r=10, t=80, b=10),
        shapes=shapes,
        coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=COLOR_SCALE, colorbar=dict(title=dict(text="q"), thickness=12)),
        xaxis=dict(type="category", side="top", domain=[0.0, 0.8] if gold_column else [0.0, 1.0]),
        yaxis=yaxis,
    )
    if gold_column:
        ok = np.argmax(q[known], axis=1) == g[known]
        for meta, sel, color, note in (
            ("gold_agrees", known[ok], RIGHT_COLOR, "arg-max agrees"),
            ("gold_differs", known[~ok], WRONG_COLOR, "arg-max differs"),
        ):
            if sel.size == 0:
                continue
            traces.append(
                dict(
                    type="scatter",
                    x=[gold_name] * sel.size,
                    y=[items[n] for n in sel],
                    text=[classes[int(g[n])] for n in sel],
                    mode="text",
                    textfont=dict(color=color, size=13),
                    xaxis="x2",
                    yaxis="y",
                    meta=meta,
                    name="gold",
                    showlegend=False,
                    hovertemplate="item %{y}: " + gold_name + " %{text} (" + note + ")<extra></extra>",
                )
            )
        layout["xaxis2"] = dict(
            domain=[0.82, 0.9], type="category", side="top", anchor="y", showgrid=False, fixedrange=True
        )
    return figure(traces, layout)
