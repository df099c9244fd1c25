"""Workers and priors: reliability and sensitivity/specificity scatters, class-prior bars, the scorers' bars and means.

Conventions: :mod:`crowdlab.plots.common`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from crowdlab.io import safe
from crowdlab.plots.common import (
    CURRENT_COLOR,
    LEGEND_BELOW,
    OBJECTIVE_COLOR,
    _axis,
    _cell_text,
    _layout,
    figure,
    legend_margin,
)

# ---------------------------------------------------------------------------- workers and priors
TRUTH_ROW = 1.1  # y of annotator_bars' row of true types, above the bars (its tick label: "truth")


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
    return figure(traces, layout)


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
    return figure([trace], layout)


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
    return figure(traces, layout)


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
    return figure(traces, layout)


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
    return figure(traces, layout)


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
    return figure(traces, layout)
