"""Plotly figure builders: pure functions from EM results to ``go.Figure`` (no Streamlit here).

Conventions shared by every figure:

- The EM x axis counts iterations in half-steps: the initialisation sits at 0, the E-step of iteration i at
  i - 0.5 and its M-step at i (:func:`half_step_positions`), so both half-steps of every iteration are drawn.
- Heatmaps of probabilities use one FIXED colour range [0, 1] (``zmin=0, zmax=1`` and a shared colour axis with
  ``cmin=0, cmax=1``), so colours mean the same thing at every iteration; rows run top-down (the y axis is
  reversed, row 0 on top); numbers are written on the cells when the matrix is small.
- Figures are built as plain dicts and validated once by a single ``go.Figure(...)`` call (no templates, no
  ``make_subplots``, no per-shape ``add_*`` calls): each builder costs a few milliseconds, so a Step stays instant.
- User-supplied text (item, worker and class names; titles and axis titles that contain them) is escaped with
  :func:`crowdlab.safe.html` inside each builder, where it enters the figure: callers pass raw names.
- Confusion matrices follow the house convention ``gamma[m, k_said, k_true]``: columns = true class,
  rows = what the worker says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab import safe

__all__ = [
    "COLOR_SCALE",
    "parse_rect_path",
    "rect_path",
    "annotator_bars",
    "class_prior_bars",
    "confusion_grid",
    "convergence_chart",
    "half_step_positions",
    "item_means_range",
    "item_means_scatter",
    "metric_curve",
    "objective_contour",
    "objective_curve",
    "objective_spread",
    "posterior_heatmap",
    "prior_sweep_figure",
    "reliability_scatter",
    "restart_scatter",
    "scores_vs_means",
    "sens_spec_scatter",
    "wrap_label",
    "wrap_title",
]

COLOR_SCALE = "Blues"
OBJECTIVE_COLOR = "#1f77b4"
BOUND_COLOR = "#ff7f0e"
CURRENT_COLOR = "#d62728"
METRIC_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")
GRID_COLOR = "#e6e6e6"
X_TITLE = "iteration (E-steps at the half)"
_MARGIN = dict(l=10, r=10, t=50, b=10)
# Legends sit at the very bottom of the figure (container coordinates), under the x axis title, in a bottom margin
# kept free for them: a legend placed relative to the plot area (y = -0.2) lands on the axis title at some heights.
LEGEND_BELOW = dict(orientation="h", yref="container", yanchor="bottom", y=0.0, xanchor="left", x=0.0)


def legend_margin(rows: int = 2, top: int = 50) -> dict:
    """Margins that leave room for the x tick labels and title plus ``rows`` rows of a :data:`LEGEND_BELOW`."""
    return dict(l=10, r=10, t=top, b=58 + 24 * rows)


def half_step_positions(kind: Sequence[str], iteration: Sequence[int]) -> np.ndarray:
    """x position of every snapshot: init and M-steps at their iteration, an E-step half a step earlier.

    ``iteration`` counts the M-steps done (as :class:`crowdlab.em.Snapshot` does), so the E-step that opens
    iteration i carries ``iteration = i - 1`` and sits at ``i - 0.5``.
    """
    kind = np.asarray(kind)
    it = np.asarray(iteration, dtype=np.float64)
    return np.where(kind == "E", it + 0.5, it)


def _atoms(text: str, width: int) -> list[str]:
    """The words of ``text``, with the spaces of a short formula kept: inside parentheses ("log p(x | θ)") and around
    an equals sign ("k = 1"), as long as the piece fits in ``width`` (and 16) characters."""
    out: list[str] = []
    for w in str(text).split(" "):
        if out:
            prev = out[-1]
            inside = prev.count("(") > prev.count(")")
            around = w == "=" or prev.endswith(" =") or prev == "="
            if (inside or around) and len(prev) + 1 + len(w) <= min(width, 16):
                out[-1] = f"{prev} {w}"
                continue
        out.append(w)
    return out


def _wrap_lines(text: str, width: int) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` characters (a longer word keeps its own line); a
    short formula is not broken (:func:`_atoms`)."""
    words, lines, cur = _atoms(text, width), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    lines.append(cur)
    return lines


def wrap_title(text: str, width: int = 36) -> str:
    """``text`` broken at spaces into lines of at most ``width`` characters (joined by ``<br>``): plotly never
    wraps a title, and a chart in a narrow column at 1024 px would cut it off."""
    return "<br>".join(_wrap_lines(text, width))


def wrap_label(name: str, width: int, lines: int = 2) -> str:
    """A user's name as a small title over a narrow chart: at most ``lines`` lines of ``width`` characters,
    broken at spaces (:func:`wrap_title`'s rule), a word longer than a line cut into pieces, the rest shortened
    with an ellipsis (:func:`crowdlab.safe.shorten`); each line escaped (:func:`crowdlab.safe.html`), the line
    breaks the only markup."""
    words = [w[i : i + width] for w in " ".join(str(name).split()).split(" ") for i in range(0, max(len(w), 1), width)]
    out = _wrap_lines(" ".join(words), width)
    if len(out) > lines:
        out = out[: lines - 1] + [safe.shorten(out[lines - 1] + " " + out[lines], width)]  # longer: ends in "…"
    return "<br>".join(safe.html(line) for line in out)


TOP_TICKS = 30  # px of top margin for the tick labels of an x axis drawn on top


def _layout(title: str, height: int, *, title_width: int = 36, **extra) -> dict:
    """A light layout without a template (templates cost ~10 ms per figure to build). Long titles wrap
    (:func:`wrap_title`) and the top margin grows with their lines; the title is escaped (:func:`crowdlab.safe.html`)
    before wrapping, so builders take plain text."""
    text = wrap_title(safe.html(title), title_width)
    n_lines = text.count("<br>") + 1
    out = dict(
        title=dict(text=text, font=dict(size=15)),
        height=height,
        margin=_MARGIN,
        paper_bgcolor="white",
        plot_bgcolor="white",
        font=dict(size=12),
    )
    if (extra.get("legend") or {}).get("yref") == "container" and "margin" not in extra:
        extra["margin"] = legend_margin()  # room under the x axis title for a LEGEND_BELOW
    out.update(extra)
    if n_lines > 1:
        # an x axis on top puts its tick labels in the top margin too, under the title
        ticks_on_top = TOP_TICKS if (extra.get("xaxis") or {}).get("side") == "top" else 0
        margin = dict(out["margin"])
        margin["t"] = max(margin.get("t", 50), 30 + 20 * n_lines + ticks_on_top)
        out["margin"] = margin
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
    # scalar marker symbols only: a per-point symbol array is validated point by point (~25 ms at 1,000 points)
    traces = [
        dict(
            type="scatter",
            x=x,
            y=obj,
            mode="lines+markers",
            name=objective_name,
            meta="objective",
            line=dict(color=OBJECTIVE_COLOR, width=2),
            marker=dict(symbol="circle", size=7, color=OBJECTIVE_COLOR),
            customdata=np.stack([np.arange(obj.size).astype(str), step_name], axis=1),
            hovertemplate="snapshot %{customdata[0]} (%{customdata[1]})<br>x = %{x}<br>%{y:.6g}"
            "<extra>objective</extra>",
        )
    ]
    if e.any():
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
        xaxis=_axis(title=dict(text=X_TITLE, standoff=6), rangemode="tozero", zeroline=False),
        yaxis=_axis(tickformat=".6~g", range=flat_range(obj, bound if show_bound else None)),
    )
    return go.Figure(data=traces, layout=layout)


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
    :meth:`crowdlab.em.Run.convergence_trace`), on one fixed y range (:func:`convergence_range`).

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
            mode="lines+markers" if it.size <= 200 else "lines",
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
                mode="lines+markers" if it.size <= 200 else "lines",
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
        xaxis=_axis(title=dict(text="iteration", standoff=6), range=[0, max(float(it.max()), 1.0) + 0.5]),
        yaxis=_axis(title=dict(text="log10", standoff=4), range=convergence_range(trace), dtick=2),
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
        legend=LEGEND_BELOW,
        margin=legend_margin(),
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
    return go.Figure(data=traces, layout=layout)


CHANGED_COLOR = "#ff7f0e"
RIGHT_COLOR = "#2ca02c"
WRONG_COLOR = "#d62728"
TRUTH_ROW = 1.1  # y of annotator_bars' row of true types, above the bars (its tick label: "truth")
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
    return go.Figure(data=traces, layout=layout)


# ---------------------------------------------------------------------------- workers and priors
def reliability_scatter(
    n_labels: np.ndarray,
    accuracy: np.ndarray,
    worker_names: Sequence[str],
    *,
    highlight: Sequence[int] | None = None,
    chance: float | None = None,
    title: str = "Worker reliability",
    y_title: str = "estimated accuracy",
    x_title: str = "number of labels",
    counts: bool = True,
    label_max: int = 12,
    height: int = 380,
) -> go.Figure:
    """One point per worker: ``n_labels`` (x; any per-worker quantity when ``counts`` is False, titled
    ``x_title``) against estimated accuracy (y, fixed range [0, 1] with a small margin so points at 0 and 1
    show whole).

    Traces: ``workers`` (everyone not highlighted) and ``highlight`` (the workers in ``highlight``, e.g. those
    shown in the confusion grid), hover = worker name. With at most ``label_max`` workers every point carries its
    name, so points that coincide are still told apart. For counts, the x axis turns logarithmic when they span
    a factor of 20 or more; a quantity in [0, 1] gets the fixed range [0, 1]. ``chance`` draws a dotted
    horizontal line (e.g. 1/K) named ``chance``.
    """
    n = np.asarray(n_labels, dtype=np.float64)
    acc = np.asarray(accuracy, dtype=np.float64)
    names = np.array(safe.html_all(worker_names), dtype=object)
    y_title = safe.html(y_title)
    if n.shape != acc.shape or n.shape != names.shape:
        raise ValueError(f"need one label count, accuracy and name per worker: {n.shape}, {acc.shape}, {names.shape}.")
    mark = np.zeros(n.shape, dtype=bool)
    if highlight is not None:
        mark[np.asarray(list(highlight), dtype=int)] = True
    labelled = n.size <= label_max
    traces = []
    x_hover = "%{x:,} labels" if counts else x_title + " %{x:.3f}"
    for meta, sel, color, size in (("workers", ~mark, OBJECTIVE_COLOR, 9), ("highlight", mark, CURRENT_COLOR, 11)):
        if not sel.any():
            continue
        traces.append(
            dict(
                type="scatter",
                x=n[sel],
                y=acc[sel],
                mode="markers+text" if labelled else "markers",
                meta=meta,
                name="shown in the grid" if meta == "highlight" else "workers",
                text=names[sel],
                textposition="top center",
                textfont=dict(size=12, color="#333333"),
                marker=dict(size=size, color=color, opacity=0.75, line=dict(width=1, color="white")),
                hovertemplate="%{text}<br>" + x_hover + "<br>" + y_title + " %{y:.3f}<extra></extra>",
            )
        )
    positive = n[n > 0]
    log_x = counts and positive.size > 0 and positive.max() / positive.min() >= 20
    unit = not counts and n.size > 0 and n.min() >= 0 and n.max() <= 1
    shapes = []
    if chance is not None:
        shapes.append(
            dict(
                type="line",
                x0=0,
                x1=1,
                xref="paper",
                y0=chance,
                y1=chance,
                yref="y",
                name="chance",
                line=dict(color="#888888", width=1, dash="dot"),
            )
        )
    layout = _layout(
        title,
        height,
        shapes=shapes,
        legend=LEGEND_BELOW,
        margin=legend_margin(1),
        showlegend=bool(mark.any()),
        xaxis=_axis(
            title=dict(text=x_title, standoff=6),
            type="log" if log_x else "linear",
            rangemode="normal" if log_x or not counts else "tozero",
            range=[-0.04, 1.04] if unit else None,
        ),
        yaxis=_axis(title=dict(text=y_title), range=[-0.06, 1.1] if labelled else [-0.02, 1.02]),
    )
    return go.Figure(data=traces, layout=layout)


def sens_spec_scatter(
    alpha: np.ndarray,
    beta: np.ndarray,
    worker_names: Sequence[str],
    *,
    title: str = "Two-coin workers: sensitivity α = P(says 1 | true 1) vs specificity β = P(says 0 | true 0)",
    height: int = 380,
) -> go.Figure:
    """Specificity beta (x) against sensitivity alpha (y), both on [0, 1]; the spammer line alpha + beta = 1.

    A worker on the dashed line says "1" with the same probability whatever the truth (a spammer); below it,
    an adversary. Traces: ``workers``; shapes: ``spammer line``.
    """
    a = np.asarray(alpha, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    names = safe.html_all(worker_names)
    trace = dict(
        type="scatter",
        x=b,
        y=a,
        mode="markers",
        meta="workers",
        name="workers",
        text=names,
        marker=dict(size=9, color=OBJECTIVE_COLOR, opacity=0.75, line=dict(width=1, color="white")),
        hovertemplate="%{text}<br>β %{x:.3f}, α %{y:.3f}<extra></extra>",
    )
    line = dict(
        type="line",
        x0=0,
        y0=1,
        x1=1,
        y1=0,
        xref="x",
        yref="y",
        name="spammer line",
        line=dict(color="#888", dash="dash"),
    )
    layout = _layout(
        title,
        height,
        shapes=[line],
        annotations=[
            dict(
                text="α + β = 1: spammer",
                x=0.25,
                y=0.75,
                xref="x",
                yref="y",
                showarrow=False,
                textangle=45,
                font=dict(size=11, color="#888"),
                yshift=10,
            )
        ],
        xaxis=_axis(title=dict(text="specificity β = P(0 | 0)", standoff=6), range=[-0.02, 1.02]),
        yaxis=_axis(title=dict(text="sensitivity α = P(1 | 1)"), range=[-0.02, 1.02]),
    )
    return go.Figure(data=[trace], layout=layout)


def class_prior_bars(
    pi: np.ndarray,
    class_names: Sequence[str],
    *,
    reference: np.ndarray | None = None,
    reference_name: str = "share in gold",
    title: str = "Class prior π",
    height: int = 340,
) -> go.Figure:
    """Bars of the class prior pi (K,) with values on them; the y range stays [0, 1] at every iteration.

    ``reference`` (K,), e.g. the class shares among the gold labels, is drawn as wide horizontal markers
    (trace ``meta="reference"``); the bars have ``meta="pi"``.
    """
    pi = np.asarray(pi, dtype=np.float64)
    classes = safe.html_all(class_names)
    reference_name = safe.html(reference_name)
    if pi.shape != (len(classes),):
        raise ValueError(f"pi has shape {pi.shape} for {len(classes)} classes.")
    traces = [
        dict(
            type="bar",
            x=classes,
            y=pi,
            meta="pi",
            name="π (estimate)",
            text=_cell_text(pi),
            textposition="auto",
            marker=dict(color=OBJECTIVE_COLOR),
            hovertemplate="class %{x}: π = %{y:.3f}<extra></extra>",
        )
    ]
    if reference is not None:
        traces.append(
            dict(
                type="scatter",
                x=classes,
                y=np.asarray(reference, dtype=np.float64),
                mode="markers",
                meta="reference",
                name=reference_name,
                marker=dict(symbol="line-ew", size=40, line=dict(width=3, color=CURRENT_COLOR)),
                hovertemplate="class %{x}: " + reference_name + " %{y:.3f}<extra></extra>",
            )
        )
    layout = _layout(
        title,
        height,
        legend=LEGEND_BELOW,
        margin=legend_margin(),
        xaxis=_axis(type="category"),
        yaxis=_axis(range=[0.0, 1.0], title=dict(text="probability")),
    )
    return go.Figure(data=traces, layout=layout)


def annotator_bars(
    p_good: np.ndarray,
    worker_names: Sequence[str],
    *,
    truth: np.ndarray | None = None,
    title: str = "P(annotator is good | scores)",
    height: int = 340,
) -> go.Figure:
    """One bar per annotator: the posterior probability of being a good annotator, fixed range [0, 1].

    The bar colour follows the same probability on a fixed [0, 1] scale (red = bad, blue = good); a dot on top
    of every bar (trace ``p_good_dots``) keeps an annotator with P(good) near 0 visible. ``truth`` (bool, True =
    good), e.g. from a simulation, writes "good" / "bad" above every bar (trace ``truth``), a row the y axis labels
    "truth" (so the words are not read as the estimate's verdict: at the start every bar is at 1 whatever the
    truth). Bars stay in the order given: pass the annotators in a fixed order, so a bar keeps its place from step
    to step.
    """
    w = np.asarray(p_good, dtype=np.float64)
    names = safe.html_all(worker_names)
    if w.shape != (len(names),):
        raise ValueError(f"p_good has shape {w.shape} for {len(names)} annotators.")
    trace = dict(
        type="bar",
        x=names,
        y=w,
        meta="p_good",
        name="P(good)",
        marker=dict(color=w, cmin=0.0, cmax=1.0, colorscale="RdBu"),
        hovertemplate="%{x}: P(good) = %{y:.3f}<extra></extra>",
    )
    dots = dict(
        type="scatter",
        x=names,
        y=w,
        mode="markers",
        meta="p_good_dots",
        name="P(good)",
        showlegend=False,
        marker=dict(color=w, cmin=0.0, cmax=1.0, colorscale="RdBu", size=8, line=dict(width=1, color="#444")),
        hoverinfo="skip",
    )
    traces = [trace, dots]
    top = 1.04
    if truth is not None:
        good = np.asarray(truth, dtype=bool)
        if good.shape != w.shape:
            raise ValueError(f"truth has shape {good.shape} for {w.size} annotators.")
        traces.append(
            dict(
                type="scatter",
                x=names,
                y=np.full(w.size, TRUTH_ROW),
                mode="text",
                meta="truth",
                name="truth",
                text=np.where(good, "good", "bad"),
                textfont=dict(size=12, color=np.where(good, "#2166ac", "#b2182b").tolist()),
                cliponaxis=False,  # the first and last words whole in a narrow chart
                hovertemplate="%{x}: truly %{text}<extra>simulation</extra>",
            )
        )
        top = 1.18
    ticks = [0, 0.2, 0.4, 0.6, 0.8, 1]
    labels = [f"{t:g}" for t in ticks] + (["truth"] if truth is not None else [])
    layout = _layout(
        title,
        height,
        showlegend=False,
        xaxis=_axis(type="category", tickangle=-60 if len(names) > 12 else 0),
        yaxis=_axis(
            range=[-0.04, top],
            title=dict(text="P(good)"),
            tickvals=ticks + ([TRUTH_ROW] if truth is not None else []),
            ticktext=labels,
            automargin=True,
        ),
        bargap=0.15,
    )
    return go.Figure(data=traces, layout=layout)


def item_means_range(data, reference: np.ndarray | None = None) -> tuple[float, float]:
    """Axis range of the μ_i scatter, from the data alone: every iterate's μ_i is a weighted average of the scores,
    so the scores' range and the reference's (by default the true means, when there are any) hold them all, and
    the axes stay put from step to step."""
    lo, hi = data.value_range
    if reference is None:
        reference = np.asarray(data.gold, dtype=np.float64) if data.has_gold else np.zeros(0)
    ref = np.asarray(reference, dtype=np.float64)
    ref = ref[np.isfinite(ref)]
    if ref.size:
        lo, hi = min(lo, float(ref.min())), max(hi, float(ref.max()))
    return lo, hi


def item_means_scatter(
    mu: np.ndarray,
    reference: np.ndarray,
    item_names: Sequence[str],
    *,
    reference_name: str = "gold",
    title: str = "Item means μᵢ",
    height: int = 380,
    axis_range: tuple[float, float] | None = None,
) -> go.Figure:
    """Estimated item means (y) against a reference (x: gold scores, or the plain average) with the line y = x.

    Items with a non-finite reference are left out. Traces: ``items`` and ``diagonal``. ``axis_range`` (low,
    high): both axes span it (plus 4 % each side) whatever ``mu`` is, so stepping through EM on the same data
    moves the dots and never the axes (pass the range of the scores and the reference: every iterate's means
    lie in it); without it the axes fit this ``mu`` and reference.
    """
    mu = np.asarray(mu, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    if mu.shape != ref.shape:
        raise ValueError(f"mu {mu.shape} and reference {ref.shape} differ in shape.")
    ok = np.isfinite(ref) & np.isfinite(mu)
    names = np.array(safe.html_all(item_names), dtype=object)
    reference_name = safe.html(reference_name)
    if axis_range is not None:
        lo, hi = float(axis_range[0]), float(axis_range[1])
    else:
        lo = float(min(ref[ok].min(), mu[ok].min())) if ok.any() else 0.0
        hi = float(max(ref[ok].max(), mu[ok].max())) if ok.any() else 1.0
    pad = 0.04 * (hi - lo) if hi > lo else 0.5
    fixed = dict(range=[lo - pad, hi + pad]) if axis_range is not None else {}
    traces = [
        dict(
            type="scattergl" if ok.sum() > 3000 else "scatter",
            x=ref[ok],
            y=mu[ok],
            mode="markers",
            meta="items",
            name="items",
            text=names[ok],
            marker=dict(size=8, color=OBJECTIVE_COLOR, opacity=0.7, line=dict(width=0.5, color="white")),
            hovertemplate="%{text}<br>" + reference_name + " %{x:.3g}, μ %{y:.3g}<extra></extra>",
        ),
        dict(
            type="scatter",
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            meta="diagonal",
            name="μ = " + reference_name,
            line=dict(color="#888888", dash="dash", width=1),
            hoverinfo="skip",
        ),
    ]
    layout = _layout(
        title,
        height,
        showlegend=False,
        xaxis=_axis(title=dict(text=reference_name, standoff=6), **fixed),
        yaxis=_axis(title=dict(text="estimated μᵢ"), **fixed),
    )
    return go.Figure(data=traces, layout=layout)


def scores_vs_means(
    values: np.ndarray,
    means: np.ndarray,
    p_good: np.ndarray,
    worker_names: Sequence[str],
    *,
    sigma: float,
    title: str = "Every score against its item's mean μᵢ",
    height: int = 420,
) -> go.Figure:
    """The lecture model at a glance: one point per score, x = the item's estimated mean, y = the score, coloured
    by the annotator's P(good) on a fixed [0, 1] scale (red = bad, blue = good). A good annotator's scores lie in
    the band mu_i +- 2 sigma around the diagonal; a bad one's spread over the whole range.

    ``values``, ``means``, ``p_good`` and ``worker_names``: one entry per score (the annotator's P(good) and
    name repeated). Traces (``meta``): ``scores``, ``diagonal``, ``band`` (the +-2 sigma lines).
    """
    v = np.asarray(values, dtype=np.float64)
    m = np.asarray(means, dtype=np.float64)
    w = np.asarray(p_good, dtype=np.float64)
    names = np.array(safe.html_all(worker_names), dtype=object)  # user-supplied: text, never markup
    if not (v.shape == m.shape == w.shape == names.shape):
        raise ValueError(f"need one value, mean, P(good) and name per score: {v.shape}, {m.shape}, {w.shape}.")
    lo = float(min(v.min(), m.min())) if v.size else 0.0
    hi = float(max(v.max(), m.max())) if v.size else 1.0
    line = [lo, hi]
    traces = [
        dict(
            type="scattergl" if v.size > 3000 else "scatter",
            x=m,
            y=v,
            mode="markers",
            meta="scores",
            name="scores",
            text=names,
            marker=dict(
                size=7 if v.size <= 3000 else 4,
                color=w,
                cmin=0.0,
                cmax=1.0,
                colorscale="RdBu",
                opacity=0.8,
                line=dict(width=0.5, color="#444"),
                colorbar=dict(title=dict(text="P(good)"), thickness=12),
            ),
            hovertemplate="%{text}<br>μᵢ %{x:.3g}, score %{y:.3g}<br>P(good) %{marker.color:.3f}<extra></extra>",
        ),
        dict(
            type="scatter",
            x=line,
            y=line,
            mode="lines",
            meta="diagonal",
            name="score = μᵢ",
            line=dict(color="#444444", width=1.5),
            hoverinfo="skip",
        ),
        dict(
            type="scatter",
            x=[lo, hi, None, lo, hi],
            y=[lo + 2 * sigma, hi + 2 * sigma, None, lo - 2 * sigma, hi - 2 * sigma],
            mode="lines",
            meta="band",
            name="μᵢ ± 2σ (a good annotator)",
            line=dict(color="#888888", width=1, dash="dash"),
            hoverinfo="skip",
        ),
    ]
    pad = 0.03 * (hi - lo or 1.0)
    layout = _layout(
        title,
        height,
        legend=LEGEND_BELOW,
        margin=legend_margin(1),
        xaxis=_axis(title=dict(text="estimated item mean μᵢ", standoff=6), range=[lo - pad, hi + pad]),
        yaxis=_axis(title=dict(text="score sᵢₐ"), range=[lo - pad, hi + pad]),
    )
    return go.Figure(data=traces, layout=layout)


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
    return go.Figure(data=traces, layout=layout)


# ---------------------------------------------------------------------------- restarts and prior sweeps
INIT_ORDER = ("majority", "all_good", "random")
OPTIMUM_COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
QUALITY_COLUMNS = ("accuracy", "macro F", "pearson r")


def _quality_column(table) -> str | None:
    for c in QUALITY_COLUMNS:
        if c in table.columns and np.isfinite(table[c].to_numpy(dtype=float)).any():
            return c
    return None


def _start_names(table) -> list[str]:
    return [f"{i} (seed {s})" if i == "random" else str(i) for i, s in zip(table["init"], table["seed"])]


def restart_scatter(table, title: str = "Restarts: final objective vs accuracy") -> go.Figure:
    """One point per restart: final objective (x) against accuracy / Pearson r (y; iterations without gold).

    ``table``: :func:`crowdlab.sweep.restarts` (columns init, seed, objective, iterations, optimum, and
    accuracy / pearson r, relabelled when present). One trace per optimum (``meta="optimum <k>"``, 0 = best),
    coloured by it; restarts that ended at a relabelling of the classes (mirror optima) are drawn as crosses.
    The legend keeps the two encodings apart: a circle in each optimum's colour (``meta="key optimum <k>"``,
    toggling its trace), and where there are mirror optima a grey cross (``meta="key relabelled"``); the points'
    own traces stay out of it (their legend symbol would be their first point's, a circle or a cross).
    """
    if len(table) == 0:
        return _empty(title, "No restarts yet.")
    ycol = _quality_column(table) or "iterations"
    names = np.array(_start_names(table), dtype=object)
    relabelled = table["relabelled"].to_numpy(dtype=bool) if "relabelled" in table.columns else None
    traces = []
    for k in sorted(int(v) for v in table["optimum"].unique()):
        sel = table["optimum"].to_numpy() == k
        sym = np.where(relabelled[sel], "x", "circle") if relabelled is not None else "circle"
        tags = np.where(relabelled[sel], " · classes relabelled", "") if relabelled is not None else [""] * sel.sum()
        traces.append(
            dict(
                type="scatter",
                x=table["objective"].to_numpy(dtype=float)[sel],
                y=table[ycol].to_numpy(dtype=float)[sel],
                mode="markers",
                meta=f"optimum {k}",
                name=f"optimum {k}" + (" (best)" if k == 0 else ""),
                legendgroup=f"optimum {k}",
                showlegend=False,
                text=names[sel],
                customdata=np.asarray(tags, dtype=object),
                marker=dict(symbol=sym, size=11, color=OPTIMUM_COLORS[k % len(OPTIMUM_COLORS)], opacity=0.8),
                hovertemplate="%{text}%{customdata}<br>objective %{x:.6g}<br>" + ycol + " %{y:.4g}<extra></extra>",
            )
        )
    keys = [
        dict(
            type="scatter",
            x=[None],
            y=[None],
            mode="markers",
            meta="key " + t["meta"],
            name=t["name"],
            legendgroup=t["legendgroup"],
            marker=dict(symbol="circle", size=11, color=t["marker"]["color"], opacity=0.8),
            hoverinfo="skip",
        )
        for t in traces
    ]
    if relabelled is not None and relabelled.any():
        keys.append(
            dict(
                type="scatter",
                x=[None],
                y=[None],
                mode="markers",
                meta="key relabelled",
                name="classes relabelled (mirror)",
                marker=dict(symbol="x", size=11, color="#7f7f7f"),
                hoverinfo="skip",
            )
        )
    unit = ycol in QUALITY_COLUMNS[:2]
    rows = max(2, len(keys))  # in half the page at 1024 px the legend puts one entry on a row
    layout = _layout(
        title,
        400 + 24 * (rows - 2),
        legend=LEGEND_BELOW,
        margin=legend_margin(rows=rows),
        xaxis=_axis(title=dict(text="final objective", standoff=6), tickformat=".6~g"),
        yaxis=_axis(title=dict(text=ycol), range=[0.0, 1.02] if unit else None),
    )
    return go.Figure(data=traces + keys, layout=layout)


def objective_spread(table, title: str = "Spread of the final objectives") -> go.Figure:
    """Final objectives by kind of start: one box with all its points per start kind (``meta`` = the kind)."""
    if len(table) == 0:
        return _empty(title, "No restarts yet.")
    kinds = [k for k in INIT_ORDER if k in set(table["init"])] + sorted(set(table["init"]) - set(INIT_ORDER))
    names = np.array(_start_names(table), dtype=object)
    traces = []
    for j, kind in enumerate(kinds):
        sel = table["init"].to_numpy() == kind
        traces.append(
            dict(
                type="box",
                y=table["objective"].to_numpy(dtype=float)[sel],
                name=kind,
                meta=kind,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                text=names[sel],
                marker=dict(color=METRIC_COLORS[j % len(METRIC_COLORS)], size=8),
                line=dict(width=1),
                fillcolor="rgba(0,0,0,0)",
                hovertemplate="%{text}<br>objective %{y:.6g}<extra></extra>",
            )
        )
    layout = _layout(
        title,
        400,
        showlegend=False,
        xaxis=_axis(title=dict(text="start", standoff=6)),
        yaxis=_axis(title=dict(text="final objective"), tickformat=".6~g"),
    )
    return go.Figure(data=traces, layout=layout)


def prior_sweep_figure(table, title: str = "Prior strength: quality and objective") -> go.Figure:
    """x = prior strength (categories, in the order given); left axis [0, 1]: accuracy, macro F, mean worker
    accuracy, Pearson r (those present); right axis: the final objective (dashed, ``meta="objective"``)."""
    if len(table) == 0:
        return _empty(title, "No prior sweep yet.")
    x = [f"{float(s):g}" for s in table["prior"]]
    traces = []
    cols = [c for c in (*QUALITY_COLUMNS, "mean worker accuracy") if c in table.columns]
    for j, c in enumerate(cols):
        color = METRIC_COLORS[j % len(METRIC_COLORS)]
        traces.append(
            dict(
                type="scatter",
                x=x,
                y=table[c].to_numpy(dtype=float),
                mode="lines+markers",
                meta=c,
                name=c,
                line=dict(color=color, width=2),
                marker=dict(color=color, size=7),
                hovertemplate="prior %{x}<br>" + c + " %{y:.4f}<extra></extra>",
            )
        )
    traces.append(
        dict(
            type="scatter",
            x=x,
            y=table["objective"].to_numpy(dtype=float),
            mode="lines+markers",
            meta="objective",
            name="objective (right axis)",
            yaxis="y2",
            line=dict(color=OBJECTIVE_COLOR, width=2, dash="dash"),
            marker=dict(color=OBJECTIVE_COLOR, size=7, symbol="diamond"),
            hovertemplate="prior %{x}<br>objective %{y:.6g}<extra></extra>",
        )
    )
    layout = _layout(
        title,
        400,
        legend=LEGEND_BELOW,
        margin=legend_margin(),
        xaxis=_axis(title=dict(text="prior strength (pseudo-counts)", standoff=6), type="category"),
        yaxis=_axis(title=dict(text="against gold / worker accuracy"), range=[0.0, 1.02]),
        yaxis2=dict(
            title=dict(text="final objective"),
            overlaying="y",
            side="right",
            showgrid=False,
            tickmode="auto",
            nticks=6,
            tickformat=".6~g",
        ),
    )
    return go.Figure(data=traces, layout=layout)
