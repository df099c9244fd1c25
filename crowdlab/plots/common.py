"""Plotly figure builders: pure functions from EM results to ``go.Figure`` (no Streamlit here).

Shared conventions of every figure: colours, the half-step x axis, titles that wrap, layouts, axes.

Conventions shared by every figure:

- The EM x axis counts iterations in half-steps: the initialisation sits at 0, the E-step of iteration i at
  i - 0.5 and its M-step at i (:func:`half_step_positions`), so both half-steps of every iteration are drawn.
- Heatmaps of probabilities use one FIXED colour range [0, 1] (``zmin=0, zmax=1`` and a shared colour axis with
  ``cmin=0, cmax=1``), so colours mean the same thing at every iteration; rows run top-down (the y axis is
  reversed, row 0 on top); numbers are written on the cells when the matrix is small.
- Figures are built as plain dicts and validated once by a single ``go.Figure(...)`` call (no templates, no
  ``make_subplots``, no per-shape ``add_*`` calls): each builder costs a few milliseconds, so a Step stays instant.
- User-supplied text (item, worker and class names; titles and axis titles that contain them) is escaped with
  :func:`crowdlab.io.safe.html` inside each builder, where it enters the figure: callers pass raw names.
- Confusion matrices follow the house convention ``gamma[m, k_said, k_true]``: columns = true class,
  rows = what the worker says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab.io import safe

COLOR_SCALE = "Blues"
OBJECTIVE_COLOR = "#1f77b4"
BOUND_COLOR = "#ff7f0e"
CURRENT_COLOR = "#d62728"
METRIC_COLORS = ("#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")
GRID_COLOR = "#e6e6e6"
X_TITLE = "iteration (E-steps at ½)"
_MARGIN = dict(l=10, r=10, t=50, b=10)
# Legends sit at the very bottom of the figure (container coordinates), under the x axis title, in a bottom margin
# kept free for them: a legend placed relative to the plot area (y = -0.2) lands on the axis title at some heights.
LEGEND_BELOW = dict(orientation="h", yref="container", yanchor="bottom", y=0.0, xanchor="left", x=0.0)


# Presenter mode (a projector read from the back row): no text of any figure under this size, in px. The one place
# the figures take their presenter font size from: :func:`figure` raises every smaller size to it (and gives the
# text whose size plotly or Streamlit's theme would choose, legends, ticks, colour bars, an explicit one).
PRESENTER_PX = 16
_FONT_KEYS = ("font", "tickfont", "textfont", "insidetextfont", "outsidetextfont", "titlefont")
_presenter: list[Callable[[], bool]] = [lambda: False]


def presenter_source(is_on: Callable[[], bool]) -> None:
    """Tell the figures how to know whether presenter mode is on (the UI layer passes its own test, which reads the
    session's state; the plots never import streamlit). Without one, figures are drawn at their normal sizes."""
    _presenter[0] = is_on


def min_font() -> int | None:
    """The smallest font size the figures may use now: :data:`PRESENTER_PX` in presenter mode, else None."""
    return PRESENTER_PX if _presenter[0]() else None


def _floor_fonts(obj, px: int, key: str = ""):
    """A copy of a figure's plain-dict structure with every font size under ``px`` raised to ``px`` (arrays of sizes
    element-wise); arrays of data are passed through untouched (not copied)."""
    if isinstance(obj, dict):
        out = {k: _floor_fonts(v, px, k) for k, v in obj.items()}
        if key in _FONT_KEYS and "size" in out:
            size = out["size"]
            if isinstance(size, (int, float)):
                out["size"] = max(size, px)
            elif size is not None:
                out["size"] = np.maximum(np.asarray(size, dtype=np.float64), px)
        return out
    if isinstance(obj, (list, tuple)) and obj and isinstance(obj[0], dict):
        return [_floor_fonts(v, px, key) for v in obj]
    return obj


def _sized(d: dict | None, key: str, px: int) -> dict:
    """``d`` (a copy) with ``d[key]["size"]`` set when it has none."""
    d = dict(d or {})
    d[key] = {**(d.get(key) or {})}
    d[key].setdefault("size", px)
    return d


def readable(data: list, layout: dict, px: int) -> tuple[list, dict]:
    """The traces and layout of a figure with no text under ``px``: every explicit size raised, and an explicit size
    on the text plotly or Streamlit's theme sizes by itself (the legend, hover labels, every axis's ticks and title,
    colour bars, annotations, the numbers on heatmap cells), which would be 11-13 px."""
    data = [_floor_fonts(t, px) if isinstance(t, dict) else t for t in data]
    layout = _floor_fonts(layout, px)
    layout = _sized(layout, "font", px)
    for key in ("legend", "hoverlabel"):
        layout[key] = _sized(layout.get(key), "font", px)
    axes = {k for k in layout if k.startswith(("xaxis", "yaxis"))} | {"xaxis", "yaxis"}
    for t in data:
        if isinstance(t, dict):
            for ref, name in ((t.get("xaxis"), "xaxis"), (t.get("yaxis"), "yaxis")):
                if isinstance(ref, str) and ref[1:].isdigit():
                    axes.add(name + ref[1:])
            if t.get("texttemplate") or t.get("text") is not None and t.get("type") == "heatmap":
                t["textfont"] = _sized(t, "textfont", px)["textfont"]  # plotly sizes cell numbers to fit: 11 px
            scaled = t.get("type") in ("heatmap", "contour", "histogram2d") and not t.get("coloraxis")
            if isinstance(t.get("colorbar"), dict) or t.get("showscale", scaled):
                bar = _sized(t.get("colorbar"), "tickfont", px)
                bar["title"] = _sized(bar.get("title"), "font", px)
                t["colorbar"] = bar
            marker = t.get("marker")
            if isinstance(marker, dict) and (isinstance(marker.get("colorbar"), dict) or marker.get("showscale")):
                bar = _sized(marker.get("colorbar"), "tickfont", px)
                bar["title"] = _sized(bar.get("title"), "font", px)
                t["marker"] = {**marker, "colorbar": bar}
    for axis in axes:
        a = _sized(layout.get(axis), "tickfont", px)
        title = a.get("title")
        a["title"] = _sized(title if isinstance(title, dict) else ({"text": title} if title else {}), "font", px)
        layout[axis] = a
    for key in [k for k in layout if k.startswith("coloraxis")]:
        ca = dict(layout[key] or {})
        bar = _sized(ca.get("colorbar"), "tickfont", px)
        bar["title"] = _sized(bar.get("title"), "font", px)
        ca["colorbar"] = bar
        layout[key] = ca
    if layout.get("annotations"):
        layout["annotations"] = [_sized(a, "font", px) for a in layout["annotations"]]
    return data, layout


def figure(data: list, layout: dict) -> go.Figure:
    """The one ``go.Figure(...)`` call of every builder: in presenter mode (:func:`min_font`) no text under
    :data:`PRESENTER_PX` (:func:`readable`)."""
    px = min_font()
    if px:
        data, layout = readable(list(data), dict(layout), px)
    return go.Figure(data=data, layout=layout)


def legend_margin(rows: int = 2, top: int = 50) -> dict:
    """Margins that leave room for the x tick labels and title plus ``rows`` rows of a :data:`LEGEND_BELOW`."""
    return dict(l=10, r=10, t=top, b=58 + 24 * rows)


def half_step_positions(kind: Sequence[str], iteration: Sequence[int]) -> np.ndarray:
    """x position of every snapshot: init and M-steps at their iteration, an E-step half a step earlier.

    ``iteration`` counts the M-steps done (as :class:`crowdlab.engines.run.Snapshot` does), so the E-step that opens
    iteration i carries ``iteration = i - 1`` and sits at ``i - 0.5``.
    """
    kind = np.asarray(kind)
    it = np.asarray(iteration, dtype=np.float64)
    return np.where(kind == "E", it + 0.5, it)


MARKERS_MAX = 41  # snapshots (20 iterations): a curve with more is drawn without markers (they merge into a band)
HALF_STEP_TICKS = (0.5, 1.0, 2.0, 5.0)  # tick spacings for short runs: never finer than a half-step
MAX_TICKS = 8


def with_markers(n: int) -> bool:
    """Whether a curve over ``n`` snapshots carries a marker per snapshot: only on short runs (:data:`MARKERS_MAX`;
    a marker per half-step of a 1,000-iteration run drew a hatched band)."""
    return n <= MARKERS_MAX


def iteration_ticks(x: Sequence[float]) -> dict:
    """Tick settings of an iteration axis over the half-step positions ``x``: on a short run (up to 40 iterations) a
    fixed spacing from :data:`HALF_STEP_TICKS`, the finest that gives at most :data:`MAX_TICKS` ticks, so no tick
    falls between half-steps ("iteration 0.3"), and the range that goes with them, from 0 to the last position (to 1
    for a run still at its start); plotly's own ticks and range on longer runs (whole iterations there)."""
    x = np.asarray(x, dtype=np.float64)
    top = float(np.nanmax(x)) if x.size and np.isfinite(x).any() else 0.0
    if top > MAX_TICKS * HALF_STEP_TICKS[-1]:
        return {}
    step = next(d for d in HALF_STEP_TICKS if top / d <= MAX_TICKS)
    end = max(top, 1.0)
    pad = 0.04 * end
    # the range too (the ticks are fixed for it): a chart updated in place kept a longer run's range, 0-125, with
    # a tick every 5 across it
    return dict(tickmode="linear", tick0=0, dtick=step, range=[-pad, end + pad])


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
    with an ellipsis (:func:`crowdlab.io.safe.shorten`); each line escaped (:func:`crowdlab.io.safe.html`), the line
    breaks the only markup."""
    words = [w[i : i + width] for w in " ".join(str(name).split()).split(" ") for i in range(0, max(len(w), 1), width)]
    out = _wrap_lines(" ".join(words), width)
    if len(out) > lines:
        out = out[: lines - 1] + [safe.shorten(out[lines - 1] + " " + out[lines], width)]  # longer: ends in "…"
    return "<br>".join(safe.html(line) for line in out)


TOP_TICKS = 30  # px of top margin for the tick labels of an x axis drawn on top


def _layout(title: str, height: int, *, title_width: int = 36, **extra) -> dict:
    """A light layout without a template (templates cost ~10 ms per figure to build). Long titles wrap
    (:func:`wrap_title`) and the top margin grows with their lines; the title is escaped (:func:`crowdlab.io.safe.html`)
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
    for key, axis in list(extra.items()):
        if key.startswith("xaxis") and isinstance(axis, dict) and axis.get("title"):
            out[key] = x_title_clear(axis)
    if n_lines > 1:
        # an x axis on top puts its tick labels in the top margin too, under the title
        ticks_on_top = TOP_TICKS if (extra.get("xaxis") or {}).get("side") == "top" else 0
        margin = dict(out["margin"])
        margin["t"] = max(margin.get("t", 50), 30 + 20 * n_lines + ticks_on_top)
        out["margin"] = margin
    return out


X_TITLE_STANDOFF = 12  # px between an x axis's tick labels and its title, at least


def x_title_clear(axis: dict) -> dict:
    """An x axis (a copy) whose title stays clear of its tick labels: at least :data:`X_TITLE_STANDOFF` px under
    them, with ``automargin`` (plotly keeps a title inside the margin it has, and a standoff of 4-6 px put it on
    the tick labels' line box: "0.4 iteration (E-steps at ½) 0.6")."""
    axis = dict(axis)
    title = axis.get("title")
    title = dict(title) if isinstance(title, dict) else {"text": title}
    title["standoff"] = max(title.get("standoff") or 0, X_TITLE_STANDOFF)
    axis["title"] = title
    axis.setdefault("automargin", True)
    return axis


def _axis(**kw) -> dict:
    return dict(gridcolor=GRID_COLOR, zerolinecolor=GRID_COLOR, linecolor="#bbbbbb", **kw)


def _empty(title: str, message: str, height: int = 320) -> go.Figure:
    return figure(
        [],
        _layout(
            title,
            height,
            annotations=[
                dict(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=14))
            ],
            xaxis=dict(visible=False),
            yaxis=dict(visible=False),
        ),
    )


def _cell_text(z: np.ndarray) -> np.ndarray:
    return np.char.mod("%.2f", z)
