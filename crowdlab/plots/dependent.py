"""Figures for dependent data (Traganitis & Giannakis, Secs. 4-5): label strips of sequences, transition matrices, graph
drawings and the trace of an approximate E-step. Pure functions from arrays to ``go.Figure`` (no Streamlit).

Conventions (as in :mod:`crowdlab.plots.common`): probabilities use one fixed colour range [0, 1]; matrix rows run
top-down (row 0 on top); classes always get the same colour (:func:`class_colors`), so a strip, a graph and the
legend agree. Every trace carries ``meta`` naming its role, so tests and readers can find it. Names (rows, classes,
nodes) are escaped with :func:`crowdlab.io.safe.html` where they enter a figure (``meta`` too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab.io import safe
from crowdlab.plots.common import (
    COLOR_SCALE,
    CURRENT_COLOR,
    OBJECTIVE_COLOR,
    _axis,
    _cell_text,
    _empty,
    _layout,
    figure,
    wrap_title,
)

__all__ = [
    "BACKGROUND_COLOR",
    "PALETTE",
    "class_colors",
    "network_figure",
    "sequence_strip",
    "sweep_trace",
    "transition_heatmap",
]

# D3's category10 then more distinct colours: a class keeps its colour whatever the figure
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#393b79",
    "#e7ba52",
    "#637939",
    "#ad494a",
    "#7b4173",
    "#3182bd",
    "#e6550d",
    "#31a354",
    "#756bb1",
    "#636363",
)
BACKGROUND_COLOR = "#e0e0e0"  # a dominant "background" class (NER's O) in light grey, so the entities stand out
MISTAKE_COLOR = "#111111"
MARK_OFFSET = 0.3  # where a mistake's x sits in its cell (towards the top-right corner), in cell units
WRONG_COLOR = "#111111"  # black rings: no class colour is black
STRIP_TITLE_PAD = 10  # px above a strip's title
STRIP_TITLE_LINE = 20  # px per line of a strip's title (15 px text)
STRIP_LEGEND_ROW = 29  # px per row of a strip's legend (11 px text, 12 px symbols)
EDGE_COLOR = "#c8c8c8"
CELL_TEXT_PX = 16  # the largest size heatmap numbers are drawn at (presenter mode: PRESENTER_PX, 16 px)
DIGITS_EM = (1.96, 1.4)  # widths of "0.44" and ".44" in em (a digit ~0.56 em, the point ~0.28 em)
CELL_PAD_PX = 4  # room left in a cell around its number
LABEL_CHAR_PX = 8.0  # px a character of an axis label (12 px text; 14 px in presenter mode)
COLORBAR_PX = 75  # a colour bar with its ticks and title "P"


def class_colors(n_classes: int, background: int | None = None) -> list[str]:
    """One colour per class: the palette in order (cycling past 20 classes); class ``background`` light grey."""
    colors = [PALETTE[k % len(PALETTE)] for k in range(n_classes)]
    if background is not None and 0 <= background < n_classes:
        colors[background] = BACKGROUND_COLOR
    return colors


def _discrete_scale(colors: Sequence[str]) -> list[list]:
    """A stepped colour scale: value k (on [-0.5, K - 0.5]) gets colors[k] exactly."""
    K = len(colors)
    out = []
    for k, c in enumerate(colors):
        out += [[k / K, c], [(k + 1) / K, c]]
    return out


def _legend(class_names: Sequence[str], colors: Sequence[str], symbol: str = "square") -> list[dict]:
    """Legend-only traces (no data): one coloured marker per class, in the legend group of its class (clicking
    it hides that class's nodes too)."""
    return [
        dict(
            type="scatter",
            x=[None],
            y=[None],
            mode="markers",
            name=safe.html(name),
            meta=f"legend:{safe.html(name)}",
            legendgroup=safe.html(name),
            marker=dict(symbol=symbol, size=12, color=color),
            hoverinfo="skip",
            showlegend=True,
        )
        for name, color in zip(class_names, colors)
    ]


# ---------------------------------------------------------------------------- sequences
def sequence_strip(
    rows: Mapping[str, np.ndarray],
    class_names: Sequence[str],
    *,
    truth_row: str | None = "truth",
    positions: Sequence[int] | None = None,
    confidence: Mapping[str, np.ndarray] | None = None,
    background: int | None = None,
    title: str = "Labels along the sequence",
    text_max: int = 180,
    height: int | None = None,
    title_width: int = 56,
    legend_width: int = 440,
) -> go.Figure:
    """One sequence as coloured strips: a row per labelling (``rows``: name -> (P,) class codes, in the order
    given, top-down), a column per position. Codes < 0 (unknown) are left blank.

    Traces: ``strip`` (a heatmap of codes over a stepped colour scale, so class k always has ``class_colors``[k];
    no colour bar), ``legend:<class>`` (one per class) and, when ``truth_row`` is one of the rows, ``mistakes``:
    a small x in the top-right corner (``MARK_OFFSET``) of every cell of another row that disagrees with a known
    truth. Row i sits at y = i on a numeric axis labelled with the row names (``ticktext``), its range reversed
    so row 0 is on top. Class names are written on the cells when positions x longest name <= ``text_max``.
    ``confidence`` (name -> (P,) max q) goes into the hover.

    The title is wrapped at ``title_width`` characters and pinned to the top; the legend sits between it and the
    strip, and the top margin grows with the title's lines and the legend's rows (estimated for a legend
    ``legend_width`` px wide), so the two never overlap. Every column is drawn whole, the last one's marks too.
    """
    names = list(rows)
    if not names:
        return _empty(title, "Nothing to show.")
    z = np.vstack([np.asarray(rows[n], dtype=np.int64) for n in names])
    R, P = z.shape
    K = len(class_names)
    x = np.arange(P) if positions is None else np.asarray(positions)
    colors = class_colors(K, background)
    labels = np.array(safe.html_all(class_names) + [""], dtype=object)
    shown = safe.html_all(names)  # the row names as drawn (``names`` stay raw for the lookups below)
    text = labels[np.where(z >= 0, z, K)]
    zs = np.where(z >= 0, z, np.nan).astype(object)
    zs[z < 0] = None
    conf = np.full((R, P), np.nan)
    if confidence:
        for i, n in enumerate(names):
            if n in confidence:
                conf[i] = np.asarray(confidence[n], dtype=np.float64)
    custom = np.stack([text, np.where(np.isfinite(conf), np.char.mod("%.3f", np.nan_to_num(conf)), "–")], axis=-1)
    custom = custom.astype(object)
    show_text = P * max((len(str(c)) for c in class_names), default=1) <= text_max
    rows_y = np.arange(R)
    strip = dict(
        type="heatmap",
        z=zs.tolist(),
        x=x.tolist(),
        y=rows_y.tolist(),
        zmin=-0.5,
        zmax=K - 0.5,
        colorscale=_discrete_scale(colors),
        showscale=False,
        xgap=1,
        ygap=3,
        meta="strip",
        name="labels",
        customdata=np.stack(
            [np.broadcast_to(np.array(shown, dtype=object)[:, None], (R, P)), *custom.transpose(2, 0, 1)], axis=-1
        ).tolist(),
        hovertemplate="%{customdata[0]}, position %{x}: <b>%{customdata[1]}</b> (max q %{customdata[2]})"
        "<extra></extra>",
        hoverongaps=False,
    )
    if show_text:
        strip["text"] = text.tolist()
        strip["texttemplate"] = "%{text}"
        strip["textfont"] = dict(size=10 if P > 20 else 12)
    traces = [strip]
    if truth_row is not None and truth_row in rows:
        truth = z[names.index(truth_row)]
        wrong = (z != truth[None, :]) & (truth[None, :] >= 0) & (z >= 0)
        ri, pi = np.nonzero(wrong)
        # a small x in the top-right corner of each wrong cell, so the class written on it stays readable
        traces.append(
            dict(
                type="scatter",
                x=(x[pi] + MARK_OFFSET).tolist(),
                y=(ri - MARK_OFFSET).tolist(),
                mode="markers",
                name="≠ truth",
                meta="mistakes",
                marker=dict(symbol="x", size=8, color=MISTAKE_COLOR, line=dict(width=1, color="white")),
                legendgroup="mistakes",
                customdata=np.stack([np.array(shown, dtype=object)[ri], x[pi]], axis=-1).tolist() if ri.size else None,
                hovertemplate="%{customdata[0]}, position %{customdata[1]}: not the truth<extra></extra>",
                showlegend=bool(ri.size),
                # the marks of the last column stick out of the plot area by a few px: draw them whole
                cliponaxis=False,
            )
        )
    traces += _legend(class_names, colors)
    lo, hi = (float(x.min()), float(x.max())) if P else (0.0, 0.0)
    # the title on top, the legend (its rows estimated) between it and the strip: the top margin holds both
    n_title = wrap_title(safe.html(title), title_width).count("<br>") + 1
    entries = [safe.html(c) for c in class_names] + (["≠ truth"] if truth_row in rows else [])
    legend_rows = _legend_rows(entries, legend_width)
    top = STRIP_TITLE_PAD + STRIP_TITLE_LINE * n_title + STRIP_LEGEND_ROW * legend_rows + 6
    layout = _layout(
        title,
        height or 110 + 46 * R + max(0, top - 80),
        title_width=title_width,
        margin=dict(l=10, r=10, t=top, b=40),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0, font=dict(size=11)),
        xaxis=_axis(
            title=dict(text="position", standoff=4),
            showgrid=False,
            zeroline=False,
            range=[lo - 0.5, hi + 0.5],
            # a label at every 5th position (0-29 at every one were rotated onto each other in a narrow column)
            dtick=1 if P <= STRIP_EVERY_TICK else 5,
            tick0=0 if positions is None else None,
            tickangle=0,
        ),
        yaxis=dict(
            tickvals=rows_y.tolist(),
            ticktext=shown,
            range=[R - 0.5, -0.5],  # row 0 on top
            automargin=True,
            showgrid=False,
            zeroline=False,
        ),
    )
    # the title's first line sits on top of the legend (plotly would centre it in the top margin, onto the legend
    # under it) and any further lines hang below the first: lift it by the legend and those lines
    lift = STRIP_LEGEND_ROW * legend_rows + STRIP_TITLE_LINE * (n_title - 1) + 6
    layout["title"].update(yref="paper", y=1.0, yanchor="bottom", pad=dict(b=lift))
    return figure(traces, layout)


STRIP_EVERY_TICK = 10  # positions: a strip this short labels every one, a longer one every 5th


def _legend_rows(entries: Sequence[str], width: int) -> int:
    """How many rows a horizontal legend of ``entries`` (11 px text) takes in ``width`` px (an estimate: plotly
    wraps it at the figure's right edge, ``width`` px after the plot area's left edge)."""
    rows, used = 1, 0.0
    for e in entries:
        w = 44 + 6.5 * len(e)  # the symbol and the gaps around it, then the text
        if used and used + w > width:
            rows, used = rows + 1, 0.0
        used += w
    return rows


def transition_heatmap(
    T: np.ndarray,
    class_names: Sequence[str],
    *,
    title: str = "Transitions T[to, from]",
    text_max: int = 10,
    height: int | None = None,
    width_px: int | None = None,
    text_px: float = CELL_TEXT_PX,
    title_width: int = 36,
) -> go.Figure:
    """Heatmap of a transition matrix with T[k_new, k_old] = P(y_{n+1} = k_new | y_n = k_old): rows = "to"
    (top-down, row 0 on top), columns = "from" (each column sums to 1); fixed colour range [0, 1] on a shared
    colour axis. One trace, ``meta="T"``; every class is labelled on both axes (a category axis would skip every
    other label when crowded).

    ``width_px``: about how wide the chart is drawn. Given, the numbers go on the cells only when they fit a cell
    at ``text_px`` (the largest size they are drawn at: presenter mode's CSS draws heatmap numbers at 14 px,
    whatever the figure asks), as "0.44", else ".44", else not at all (the hover keeps them); the "from" labels
    turn (-45 or -90 degrees) only when they do not fit across, and the height follows the cells. Without it:
    numbers when K <= ``text_max``, in plotly's own size (the lessons' fixed-size charts)."""
    T = np.asarray(T, dtype=np.float64)
    if T.ndim != 2 or T.shape[0] != T.shape[1]:
        raise ValueError(f"T must be (K, K), got shape {T.shape}.")
    K = T.shape[0]
    names = safe.html_all(class_names)
    chars = max((len(str(c)) for c in class_names), default=1)
    heat = dict(
        type="heatmap",
        z=T,
        x=names,
        y=names,
        zmin=0.0,
        zmax=1.0,
        coloraxis="coloraxis",
        xgap=1,
        ygap=1,
        meta="T",
        name="T",
        hovertemplate="from %{x} to %{y}: %{z:.3f}<extra></extra>",
    )
    angle: float | str = -45 if K > 6 else 0
    if width_px is None:
        text = _cell_text(T) if K <= text_max else None
        side = max(320, min(560, 140 + 42 * K))
    else:
        cell = transition_cell_px(K, class_names, width_px)
        text = fitting_cell_text(T, cell, text_px) if K <= text_max else None
        if text is not None:
            heat["textfont"] = dict(size=12)
        label = LABEL_CHAR_PX * chars + 6  # a "from" label written across
        angle = 0 if label <= cell else -45 if cell >= 18 else -90
        drop = {0: 20, -45: 0.72 * label, -90: label}[angle]  # how far the "from" labels reach below the plot
        side = int(50 + min(cell, 40) * K + drop + 45)
    if text is not None:
        heat["text"] = text
        heat["texttemplate"] = "%{text}"
    ticks = dict(tickmode="array", tickvals=names, ticktext=names)
    layout = _layout(
        title,
        height or side,
        title_width=title_width,
        margin=dict(l=10, r=10, t=50, b=10),
        coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=COLOR_SCALE, colorbar=dict(title=dict(text="P"), thickness=12)),
        xaxis=dict(type="category", title=dict(text="from (label at n)"), automargin=True, tickangle=angle, **ticks),
        yaxis=dict(
            type="category", title=dict(text="to (label at n + 1)"), autorange="reversed", automargin=True, **ticks
        ),
    )
    return figure([heat], layout)


def transition_cell_px(K: int, class_names: Sequence[str], width_px: int) -> float:
    """About how wide one cell of :func:`transition_heatmap`'s K x K matrix is drawn in a chart ``width_px`` wide:
    the chart less the margins, the "to" title and labels (``LABEL_CHAR_PX`` a character) and the colour bar."""
    chars = max((len(str(c)) for c in class_names), default=1)
    return max(width_px - 20 - 25 - LABEL_CHAR_PX * chars - COLORBAR_PX, 0) / max(K, 1)


def fitting_cell_text(z: np.ndarray, cell_px: float, text_px: float = CELL_TEXT_PX) -> np.ndarray | None:
    """The numbers of a [0, 1] heatmap as they fit a cell ``cell_px`` wide at ``text_px``: "0.44"; else ".44"
    (no leading zero, as is usual for probabilities; 1.00 as "1"); else None (too narrow for any)."""
    z = np.asarray(z, dtype=np.float64)
    if DIGITS_EM[0] * text_px + CELL_PAD_PX <= cell_px:
        return np.char.mod("%.2f", z)
    if DIGITS_EM[1] * text_px + CELL_PAD_PX <= cell_px:
        full = np.char.mod("%.2f", z)
        return np.where(full == "1.00", "1", np.char.lstrip(full, "0"))
    return None


# ---------------------------------------------------------------------------- networks
def network_figure(
    pos: np.ndarray,
    edges: np.ndarray,
    labels: np.ndarray,
    confidence: np.ndarray,
    class_names: Sequence[str],
    *,
    wrong: np.ndarray | None = None,
    names: Sequence[str] | None = None,
    background: int | None = None,
    min_opacity: float = 0.15,
    title: str = "The graph",
    height: int = 620,
    wrong_total: int | None = None,
) -> go.Figure:
    """A drawing of a graph: nodes at ``pos`` (n, 2), ``edges`` (E, 2) node index pairs as thin grey lines, nodes
    coloured by their class ``labels`` (n,) with opacity = ``confidence`` (n,) (max q; at least ``min_opacity``),
    and the nodes of ``wrong`` (n,) bool (disagreeing with gold) ringed in black.

    Traces: ``edges``, one ``class:<name>`` per class (markers; per-point opacity), ``legend:<name>`` (solid
    legend markers), ``wrong`` when given: its legend entry counts the ringed nodes, and says "N drawn of T" when
    ``wrong_total`` (the count over the whole graph, of which only part is drawn) differs.
    Axes are hidden and equally scaled; an empty ``title`` leaves out the title and its margin.
    """
    pos = np.asarray(pos, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    conf = np.clip(np.asarray(confidence, dtype=np.float64), min_opacity, 1.0)
    n = pos.shape[0]
    if labels.shape != (n,) or conf.shape != (n,):
        raise ValueError(f"labels and confidence need one entry per node ({n}).")
    node_names = [str(i) for i in range(n)] if names is None else safe.html_all(names)
    colors = class_colors(len(class_names), background)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    ex = np.full(e.shape[0] * 3, np.nan)
    ey = np.full(e.shape[0] * 3, np.nan)
    ex[0::3], ex[1::3] = pos[e[:, 0], 0], pos[e[:, 1], 0]
    ey[0::3], ey[1::3] = pos[e[:, 0], 1], pos[e[:, 1], 1]
    traces = [
        dict(
            type="scatter",
            x=ex,
            y=ey,
            mode="lines",
            meta="edges",
            name="edges",
            line=dict(color=EDGE_COLOR, width=0.6),
            hoverinfo="skip",
            showlegend=False,
        )
    ]
    for k, cname in enumerate(safe.html_all(class_names)):
        idx = np.flatnonzero(labels == k)
        traces.append(
            dict(
                type="scatter",
                x=pos[idx, 0],
                y=pos[idx, 1],
                mode="markers",
                meta=f"class:{cname}",
                name=cname,
                marker=dict(size=8, color=colors[k], opacity=conf[idx], line=dict(width=0)),
                customdata=np.stack([np.array(node_names, dtype=object)[idx], conf[idx]], axis=-1)
                if idx.size
                else None,
                hovertemplate="node %{customdata[0]}: <b>" + cname + "</b> (max q %{customdata[1]:.3f})<extra></extra>",
                legendgroup=cname,
                showlegend=False,  # the legend's solid markers come from _legend (these carry per-node opacity)
            )
        )
    traces += _legend(class_names, colors, symbol="circle")
    if wrong is not None:
        w = np.flatnonzero(np.asarray(wrong, dtype=bool))
        traces.append(
            dict(
                type="scatter",
                x=pos[w, 0],
                y=pos[w, 1],
                mode="markers",
                meta="wrong",
                name=f"wrong ({w.size:,})"
                if wrong_total is None or wrong_total == w.size
                else f"wrong: {w.size:,} drawn of {wrong_total:,}",
                marker=dict(symbol="circle-open", size=13, color=WRONG_COLOR, line=dict(width=2)),
                hoverinfo="skip",
                legendgroup="wrong",
            )
        )
    hidden = dict(visible=False, showgrid=False, zeroline=False)
    layout = _layout(
        title,
        height,
        margin=dict(l=10, r=10, t=50 if title else 10, b=10),
        legend=dict(orientation="h", yanchor="top", y=-0.01, xanchor="left", x=0, itemsizing="constant"),
        xaxis=hidden,
        yaxis=dict(hidden, scaleanchor="x", scaleratio=1),
    )
    return figure(traces, layout)


def _whole_step(last: int, ticks: int = 8) -> int:
    """A whole tick step, 1, 2 or 5 times a power of ten, that puts at most ``ticks`` ticks past 0 on 0 .. ``last``."""
    steps = [m * 10**e for e in range(7) for m in (1, 2, 5)]
    return next((s for s in steps if last / s <= ticks), steps[-1])


def sweep_trace(
    values: Sequence[float],
    *,
    title: str = "Inside the last E-step",
    y_title: str = "improved quantity",
    height: int = 360,
) -> go.Figure:
    """The quantity an approximate E-step improves (ICM: J at the labels; mean field: F) after each sweep of that
    E-step, drawn as the gain over its value at the E-step's start (sweep 0), so small late gains stay readable;
    the hover gives the values themselves. One trace ``meta="trace"`` (y = gain) and ``end`` (the last sweep);
    the sweeps are whole numbers, so are the x ticks; a message when there is nothing to show."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return _empty(title, "No E-step yet:<br>step once to see its sweeps.", height)
    x = np.arange(v.size)
    y = v - v[0]
    traces = [
        dict(
            type="scatter",
            x=x,
            y=y,
            mode="lines+markers",
            meta="trace",
            name=y_title,
            line=dict(color=OBJECTIVE_COLOR, width=2),
            marker=dict(size=7, color=OBJECTIVE_COLOR),
            customdata=v,
            hovertemplate="sweep %{x}<br>gain %{y:.6g}<br>value %{customdata:.10g}<extra></extra>",
        ),
        dict(
            type="scatter",
            x=[x[-1]],
            y=[y[-1]],
            mode="markers",
            meta="end",
            name="end of the E-step",
            marker=dict(symbol="circle-open", size=16, color=CURRENT_COLOR, line=dict(width=3)),
            hoverinfo="skip",
        ),
    ]
    layout = _layout(
        title,
        height,
        showlegend=False,
        xaxis=_axis(
            title=dict(text="sweep (0 = start)", standoff=6), tick0=0, dtick=_whole_step(x[-1]), rangemode="tozero"
        ),
        yaxis=_axis(title=dict(text=f"{y_title} − its start"), tickformat=".4~g", rangemode="tozero"),
    )
    return figure(traces, layout)
