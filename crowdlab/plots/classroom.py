"""The live class's figure: what a label bought, with and without next-item routing (no Streamlit here)."""

from __future__ import annotations

import plotly.graph_objects as go

from crowdlab.classroom.items import choice_colors
from crowdlab.plots.common import LEGEND_BELOW, _axis, _empty, _layout, figure, wrap_label

# routing: solid lines; a fixed deal: dashed; majority vote and Dawid-Skene keep their colours across both
_STYLE = {"mv": ("majority vote", "#7f7f7f"), "ds": ("Dawid-Skene (EM)", "#1f77b4")}


def routing_curves(curves: dict[str, dict], live: dict | None = None, live_name: str = "our class") -> go.Figure:
    """Accuracy against the truth over labels spent. ``curves``: a name ("routing", "fixed deal") -> the dict of
    :func:`crowdlab.classroom.items.accuracy_over_labels` (labels, mv, ds), drawn as lines (routing solid, others
    dashed); ``live``: the class's own votes, as markers."""
    title = "Accuracy over labels spent: majority vote and EM, with and without routing"
    traces = []
    for name, c in curves.items():
        dash = "solid" if name == "routing" else "dash"
        for method, (label, color) in _STYLE.items():
            xs = [x for x, y in zip(c.get("labels", []), c.get(method, [])) if y is not None]
            ys = [y for y in c.get(method, []) if y is not None]
            if xs:
                traces.append(dict(type="scatter", mode="lines", x=xs, y=ys, name=f"{label}, {name}",
                                   line=dict(color=color, dash=dash, width=3)))  # fmt: skip
    if live:
        for method, (label, color) in _STYLE.items():
            xs = [x for x, y in zip(live.get("labels", []), live.get(method, [])) if y is not None]
            ys = [y for y in live.get(method, []) if y is not None]
            if xs:
                traces.append(dict(type="scatter", mode="markers", x=xs, y=ys, name=f"{label}, {live_name}",
                                   marker=dict(color=color, size=11, symbol="diamond")))  # fmt: skip
    if not traces:
        return _empty(title, "No votes with a truth yet.")
    layout = _layout(
        title,
        420,
        title_width=60,
        xaxis=_axis(title=dict(text="labels spent"), rangemode="tozero"),
        yaxis=_axis(title=dict(text="accuracy (items with a truth)"), range=[0, 1.02], tickformat=".0%"),
        legend=LEGEND_BELOW,
    )
    return figure(traces, layout)


# ---------------------------------------------------------------------------- the projector (issue 39 §2)
ROLE_COLORS = {"honest": "#009e73", "spammer": "#d55e00", "adversary": "#cc79a7", "lazy": "#7f7f7f"}
RIGHT_COLOR = "#009e73"
WRONG_COLOR = "#b0b0b0"


def vote_bars(item_ids, choices, by_item: dict, height: int | None = None) -> go.Figure:
    """The class's answers so far: one stacked horizontal bar per item (first item on top), a segment per answer
    in the answer's colour (:func:`choice_colors`), its count in the segment."""
    from crowdlab.io import safe

    ids = [str(i) for i in item_ids]
    colors = choice_colors(choices)
    labels = [safe.html(i) for i in ids]
    traces = []
    for c in choices:
        xs = [int(by_item.get(i, {}).get(c, 0)) for i in ids]
        traces.append(dict(type="bar", orientation="h", name=safe.html(c), y=labels, x=xs, marker=dict(color=colors[c]),
                           text=[str(x) if x else "" for x in xs], textposition="inside", insidetextanchor="middle",
                           textangle=0, textfont=dict(size=14),
                           hovertemplate="%{y}: %{x} " + safe.html(c) + "<extra></extra>"))  # fmt: skip
    h = height or max(260, 100 + 34 * len(ids))  # rows tall enough for the counts inside the bars
    most = max([sum(int(v) for v in by_item.get(i, {}).values()) for i in ids] or [0])
    layout = _layout(
        "The class's answers per item",
        h,
        barmode="stack",
        xaxis=_axis(
            title=dict(text="answers"), range=[0, max(3, most) * 1.05], tickformat="d", dtick=1 if most <= 10 else None
        ),  # fmt: skip
        yaxis=_axis(autorange="reversed", type="category"),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0, traceorder="normal"),
        font=dict(size=16),
    )
    return figure(traces, layout)


def reveal_dots(reveal: dict, names: dict[str, str] | None = None) -> go.Figure:
    """The reveal in one picture: every student a dot coloured by secret role. Left: Dawid-Skene's estimate of
    their accuracy against their true accuracy (on the diagonal: EM guessed right; the dashed line: a coin flip).
    Middle: MACE's probability that they answered at random against the same true accuracy. Right: the class's
    accuracy by majority vote, Dawid-Skene and MACE."""
    from crowdlab.classroom.items import ROLE_TITLES
    from crowdlab.io import safe

    names = names or {}
    studs = reveal.get("students", {})
    traces: list[dict] = []
    for role, color in ROLE_COLORS.items():
        recs = [(sid, r) for sid, r in studs.items() if r.get("role") == role and r.get("true_accuracy") is not None]
        if not recs:
            continue
        title = ROLE_TITLES.get(role, role)
        text = [safe.html(names.get(sid, "")) for sid, _ in recs]
        truth = [r["true_accuracy"] for _, r in recs]
        marker = dict(color=color, size=16, line=dict(color="white", width=1), opacity=0.9)
        ds = [(t, r.get("accuracy"), x) for t, (_, r), x in zip(truth, recs, text) if r.get("accuracy") is not None]
        if ds:
            traces.append(dict(type="scatter", mode="markers", name=title, legendgroup=role, x=[d[0] for d in ds],
                               y=[d[1] for d in ds], text=[d[2] for d in ds], marker=marker, xaxis="x", yaxis="y",
                               hovertemplate="%{text}: right %{x:.0%}, EM thinks %{y:.0%}<extra></extra>"))  # fmt: skip
        mc = [(t, r.get("mace_spamming"), x) for t, (_, r), x in zip(truth, recs, text)
              if r.get("mace_spamming") is not None]  # fmt: skip
        if mc:
            traces.append(dict(type="scatter", mode="markers", name=title, legendgroup=role, showlegend=not ds,
                               x=[d[1] for d in mc], y=[d[0] for d in mc], text=[d[2] for d in mc], marker=marker,
                               xaxis="x2", yaxis="y2",
                               hovertemplate="%{text}: P(random) %{x:.0%}, right %{y:.0%}<extra></extra>"))  # fmt: skip
    traces.append(dict(type="scatter", mode="lines", x=[0, 1], y=[0, 1], showlegend=False, hoverinfo="skip",
                       line=dict(color="#999999", width=1), xaxis="x", yaxis="y"))  # fmt: skip
    traces.append(dict(type="scatter", mode="lines", x=[0.5, 0.5], y=[0, 1], showlegend=False, hoverinfo="skip",
                       line=dict(color="#bbbbbb", width=1, dash="dash"), xaxis="x", yaxis="y"))  # fmt: skip
    cls = reveal.get("class", {})
    methods = [("MV", cls.get("mv_accuracy")), ("DS", cls.get("ds_accuracy")), ("MACE", cls.get("mace_accuracy"))]
    methods = [(m, v) for m, v in methods if v is not None]
    traces.append(dict(type="bar", x=[m for m, _ in methods], y=[v for _, v in methods], showlegend=False,
                       marker=dict(color=["#7f7f7f", "#1f77b4", "#9467bd"][: len(methods)]),
                       text=[f"{v:.0%}" for _, v in methods], textposition="outside", xaxis="x3", yaxis="y3",
                       hovertemplate="%{x}: %{y:.0%}<extra></extra>"))  # fmt: skip
    pct = dict(range=[-0.07, 1.07], tickformat=".0%")
    layout = _layout(
        "Did EM find the careless students? Every student is a dot",
        500,
        title_width=80,
        font=dict(size=15),
        margin=dict(l=10, r=10, t=90, b=10),
        xaxis=_axis(domain=[0, 0.33], title=dict(text="right (the truth)"), **pct),
        yaxis=_axis(title=dict(text="Dawid-Skene's estimate"), **pct),
        xaxis2=_axis(domain=[0.45, 0.72], title=dict(text="MACE: P(at random)"), **pct),
        yaxis2=_axis(anchor="x2", title=dict(text="right (the truth)"), **pct),
        xaxis3=_axis(domain=[0.8, 1.0], tickangle=0, type="category"),
        yaxis3=_axis(
            anchor="x3",
            range=[0, 1.15],
            tickformat=".0%",
            title=dict(text="items right: majority vote, Dawid-Skene, MACE", font=dict(size=13)),
        ),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0.0),
    )
    return figure(traces, layout)


def step_picture(names, trust, item_names, p_first, first_choice: str, title: str, colors=None) -> go.Figure:
    """One half-step of EM on the class's votes: how far EM trusts each student (left) and each item's
    probability of ``first_choice`` (right); the same traces at every half-step, so the live chart glides."""
    from crowdlab.io import safe

    names = [safe.html(n) for n in names]
    items = [safe.html(i) for i in item_names]
    traces = [
        dict(type="bar", orientation="h", y=names, x=[float(t) for t in trust], xaxis="x", yaxis="y",
             marker=dict(color="#1f77b4"), text=[f"{t:.0%}" for t in trust], textposition="inside",
             showlegend=False, hovertemplate="%{y}: trusted %{x:.0%}<extra></extra>"),
        dict(type="bar", orientation="h", y=items, x=[float(p) for p in p_first], xaxis="x2", yaxis="y2",
             marker=dict(color=(colors or {}).get(first_choice, "#e69f00")), showlegend=False,
             hovertemplate="%{y}: P(" + safe.html(first_choice) + ") %{x:.0%}<extra></extra>"),
    ]  # fmt: skip
    h = max(380, 110 + 24 * max(len(names), len(items)))
    layout = _layout(
        title,
        h,
        title_width=80,
        font=dict(size=15),
        xaxis=_axis(domain=[0, 0.44], range=[0, 1], tickformat=".0%", title=dict(text="how far EM trusts them")),
        yaxis=_axis(autorange="reversed", type="category"),
        xaxis2=_axis(
            domain=[0.58, 1.0], range=[0, 1], tickformat=".0%", title=dict(text=f"P({safe.html(first_choice)})")
        ),  # fmt: skip
        yaxis2=_axis(anchor="x2", autorange="reversed", type="category"),
        shapes=[
            dict(
                type="line",
                xref="x2",
                yref="paper",
                x0=0.5,
                x1=0.5,
                y0=0,
                y1=1,
                line=dict(color="#999999", dash="dash", width=1),
            )
        ],  # fmt: skip
    )
    return figure(traces, layout)


def prediction_bars(question: dict, shown: bool, height: int = 320) -> go.Figure:
    """The class's predictions per answer; once the step has run (``shown``), the right answer green, the others
    grey. ``height`` in px (a lesson draws it under its own chart, smaller)."""
    from crowdlab.io import safe

    options = list(question.get("options", []))
    counts = [int(question.get("counts", {}).get(o, 0)) for o in options]
    right = question.get("answer")
    colors = [(RIGHT_COLOR if o == right else WRONG_COLOR) if shown else "#1f77b4" for o in options]
    # two short lines at most (escaped): a long answer ("✓ yes, it changes") is not turned on its side in a narrow
    # column
    whole = [("✓ " if shown and o == right else "") + o for o in options]
    labels = [wrap_label(w, 12) for w in whole]
    if len(set(labels)) < len(labels):  # two long names alike in their shortened form: each bar keeps its own
        labels = [safe.html(w) for w in whole]
    traces = [dict(type="bar", x=labels, y=counts, marker=dict(color=colors), text=[str(c) for c in counts],
                   textposition="outside", showlegend=False, hovertemplate="%{x}: %{y}<extra></extra>")]  # fmt: skip
    n = question.get("predicted", sum(counts))
    layout = _layout(
        f"The class's predictions ({n} so far)",
        height,
        font=dict(size=16),
        yaxis=_axis(range=[0, max(3, max(counts or [0])) * 1.25], title=dict(text="students")),
        xaxis=_axis(type="category", tickangle=0),
    )
    return figure(traces, layout)
