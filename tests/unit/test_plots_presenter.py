"""Presenter mode's figures (issue 26): no text under :data:`crowdlab.plots.common.PRESENTER_PX`, from the one place
(:func:`crowdlab.plots.common.figure`), including the text plotly or Streamlit's theme would size by itself
(legends and colour-bar ticks were 12.75 px, the sequence strip's digits 10-12 px and its legend 11 px); normal
mode's figures are as before."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.plots import common, dependent, matrices
from crowdlab.plots import curves as figs_curves


@pytest.fixture(autouse=True)
def _restore_source():
    """Every test here leaves the figures' presenter source as it found it (the app's, when crowdlab.ui was
    imported by an earlier test in this process)."""
    before = common._presenter[0]
    yield
    common.presenter_source(before)


@pytest.fixture()
def presenter():
    common.presenter_source(lambda: True)
    return common.PRESENTER_PX


def _sizes(obj, path="") -> list[tuple[str, float]]:
    """Every font size in a figure's JSON: (path, size)."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("font", "tickfont", "textfont") and isinstance(v, dict) and v.get("size") is not None:
                sizes = np.atleast_1d(np.asarray(v["size"], dtype=float))
                out += [(f"{path}.{k}", float(s)) for s in sizes]
            out += _sizes(v, f"{path}.{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            out += _sizes(v, f"{path}[{i}]")
    return out


def _history(n: int = 5) -> dict:
    kind = np.array(["init"] + ["E", "M"] * n)
    iteration = np.array([0] + [i for i in range(n) for _ in (0, 1)])
    obj = -100 + np.cumsum(np.r_[0, np.ones(2 * n)])
    return dict(kind=kind, iteration=iteration, objective=obj, bound=obj - 0.5)


def _strip():
    rows = {"truth": np.array([0, 1, 2, 1] * 8), "mv": np.array([0, 1, 1, 1] * 8)}
    return dependent.sequence_strip(rows, ["O", "PER", "LOC"])


def _heatmap():
    q = np.array([[0.9, 0.1], [0.3, 0.7], [0.5, 0.5]])
    return matrices.posterior_heatmap(q, ["a", "b", "c"], ["0", "1"], gold=np.array([0, 1, -1]))


BUILDERS = {
    "objective": lambda: figs_curves.objective_curve(_history(), 3, "Objective"),
    "objective with gap": lambda: figs_curves.objective_with_gap(_history(), 3, "Objective"),
    "strip": _strip,
    "posterior": _heatmap,
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_presenter_figures_have_no_text_under_16_px(presenter, name):
    fig = BUILDERS[name]().to_plotly_json()
    sizes = _sizes(fig)
    assert sizes and min(s for _, s in sizes) >= presenter, [x for x in sizes if x[1] < presenter]
    layout = fig["layout"]
    # the text the theme would size by itself carries an explicit size
    assert layout["legend"]["font"]["size"] >= presenter
    assert layout["xaxis"]["tickfont"]["size"] >= presenter and layout["yaxis"]["tickfont"]["size"] >= presenter
    for key in [k for k in layout if k.startswith("coloraxis")]:
        assert layout[key]["colorbar"]["tickfont"]["size"] >= presenter


def test_the_strip_digits_and_legend_grow_in_presenter_mode_only(presenter):
    common.presenter_source(lambda: False)
    normal = _strip()
    common.presenter_source(lambda: True)
    big = _strip()
    strip = [t for t in normal.data if t.meta == "strip"][0]
    assert strip.textfont.size < 16 and normal.layout.legend.font.size == 11  # normal mode: as it was
    assert [t for t in big.data if t.meta == "strip"][0].textfont.size == 16 and big.layout.legend.font.size == 16


def test_normal_figures_keep_their_sizes_and_the_shared_legend_is_not_changed():
    common.presenter_source(lambda: False)
    before = dict(common.LEGEND_BELOW)
    fig = figs_curves.objective_curve(_history(), 3, "Objective")
    assert fig.layout.legend.font.size is None and fig.layout.xaxis.tickfont.size is None
    common.presenter_source(lambda: True)
    figs_curves.objective_curve(_history(), 3, "Objective")
    assert common.LEGEND_BELOW == before and "font" not in common.LEGEND_BELOW


# ---------------------------------------------------------------------------- x-axis titles clear of the ticks
def _x_axes(fig) -> list[dict]:
    layout = fig.to_plotly_json()["layout"]
    return [v for k, v in layout.items() if k.startswith("xaxis") and isinstance(v, dict) and v.get("title")]


X_TITLED = {
    **{k: v for k, v in BUILDERS.items() if k != "posterior"},  # the posterior's axes have no titles
    "metric": lambda: figs_curves.metric_curve(np.array([0, 0.5, 1.0]), {"accuracy": np.array([0.5, 0.6, 0.7])}, 0.5),
}


@pytest.mark.parametrize("name", list(X_TITLED))
def test_x_axis_titles_keep_clear_of_their_tick_labels(name):
    """A fresh run's x-axis title sat on its tick labels ("0.4 iteration (E-steps at ½) 0.6"): plotly keeps a title
    inside the margin it has; with automargin it grows the margin to the standoff, which is at least 12 px."""
    axes = [a for a in _x_axes(X_TITLED[name]()) if (a["title"].get("text") or "")]
    assert axes, name
    for a in axes:
        assert a.get("automargin") is True, a
        assert a["title"]["standoff"] >= common.X_TITLE_STANDOFF >= 12, a


def test_x_title_clear_keeps_a_larger_standoff_and_takes_a_plain_title():
    assert common.x_title_clear({"title": "t"})["title"] == {"text": "t", "standoff": common.X_TITLE_STANDOFF}
    assert common.x_title_clear({"title": {"text": "t", "standoff": 30}})["title"]["standoff"] == 30
    assert common.x_title_clear({"title": "t", "automargin": False})["automargin"] is False  # a builder's choice
