"""The figure builders of crowdlab.plots.risk: traces, fixed axes and colour ranges, orientation, and the geometry
of decision boundaries (things that would silently draw a wrong picture)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.plots import risk as figs


def _trace(fig, meta):
    found = [t for t in fig.data if t.meta == meta]
    assert len(found) == 1, [t.meta for t in fig.data]
    return found[0]


def _metas(fig) -> list:
    return [t.meta for t in fig.data]


# ---------------------------------------------------------------------------- boundaries
@pytest.mark.parametrize(
    "w",
    [(0.3, 1.0, 2.0), (-1.0, 0.0, 1.0), (0.5, 1.0, 0.0), (0.0, -2.0, 0.7), (1.9, 1.0, 1.0)],
)
def test_boundary_segment_lies_on_the_line_and_on_the_box_edges(w):
    box = (-2.0, 2.0, -1.0, 3.0)
    xs, ys = figs.boundary_segment(w, box)
    b, w1, w2 = w
    for x, y in zip(xs, ys):
        assert b + w1 * x + w2 * y == pytest.approx(0.0, abs=1e-9)
        assert box[0] - 1e-9 <= x <= box[1] + 1e-9 and box[2] - 1e-9 <= y <= box[3] + 1e-9
        on_edge = min(abs(x - box[0]), abs(x - box[1]), abs(y - box[2]), abs(y - box[3]))
        assert on_edge < 1e-9
    assert (xs[0], ys[0]) != (xs[1], ys[1])


def test_boundary_segment_is_none_without_a_line_in_the_box():
    box = (-1.0, 1.0, -1.0, 1.0)
    assert figs.boundary_segment((5.0, 1.0, 1.0), box) is None  # x + y = -5 misses the box
    assert figs.boundary_segment((1.0, 0.0, 0.0), box) is None  # no slope: one class everywhere
    xs, ys = figs.boundary_segment((0.0, 1.0, 0.0), box)  # vertical x = 0
    assert xs == [0.0, 0.0] and sorted(ys) == [-1.0, 1.0]


# ---------------------------------------------------------------------------- Fig. 1
def test_loglik_curves_align_maxima_fix_the_range_and_mark_the_truth():
    th = np.linspace(0, 1, 101)
    curves = {"n = 10": -10 * (th - 0.6) ** 2 - 7.0, "n = 100": -100 * (th - 0.7) ** 2 + 3.0}
    fig = figs.loglik_curves(th, curves, theta_true=0.75, floor=20.0)
    assert _metas(fig) == ["curve:n = 10", "mle:n = 10", "curve:n = 100", "mle:n = 100", "truth"]
    for label, centre in (("n = 10", 0.6), ("n = 100", 0.7)):
        y = np.asarray(_trace(fig, f"curve:{label}").y)
        assert y.max() == pytest.approx(0.0)
        assert _trace(fig, f"mle:{label}").x[0] == pytest.approx(centre)
    assert np.asarray(_trace(fig, "curve:n = 100").y).min() < -20  # not clipped: it leaves the chart
    assert list(fig.layout.yaxis.range) == [-20.0, 1.0]
    assert list(_trace(fig, "truth").x) == [0.75, 0.75]
    with pytest.raises(ValueError):
        figs.loglik_curves(th, {"bad": np.zeros(5)})


def test_loglik_contour_is_relative_clipped_and_square():
    t = np.linspace(0.01, 0.99, 11)
    T1, T2 = np.meshgrid(t, t)
    Z = -500 * ((T1 - 0.8) ** 2 + (T2 - 0.3) ** 2)
    fig = figs.loglik_contour(t, t, Z, truth=(0.8, 0.3), mle=(0.79, 0.31), flipped=(0.21, 0.69), floor=30)
    z = np.asarray(_trace(fig, "surface").z)
    assert z.max() == pytest.approx(0.0) and z.min() == pytest.approx(-30.0)
    # Z[i2, i1]: the best point is at column of t1 = 0.8 and row of t2 = 0.3
    i2, i1 = np.unravel_index(int(np.argmax(z)), z.shape)
    assert t[i1] == pytest.approx(0.794, abs=0.05) and t[i2] == pytest.approx(0.304, abs=0.05)
    assert fig.layout.yaxis.scaleanchor == "x"
    # both axes shrink their domain to keep the square: with only x constrained, a tall narrow column widened the
    # y range far past [0, 1] instead (seen on the ROC chart at 1024 px)
    assert fig.layout.xaxis.constrain == fig.layout.yaxis.constrain == "domain"
    assert {"truth", "mle", "flipped"} <= set(_metas(fig))
    with pytest.raises(ValueError):
        figs.loglik_contour(t, t[:5], Z)


# ---------------------------------------------------------------------------- Fig. 3
def test_error_heatmap_has_a_fixed_colour_range_and_p_increasing_upwards():
    th = np.array([0.5, 0.6, 0.7])
    p = np.array([0.6, 0.8])
    small = figs.error_heatmap(th, p, np.full((2, 3), 0.01), current=(0.6, 0.8))
    large = figs.error_heatmap(th, p, np.full((2, 3), 0.9), current=(0.2, 0.8))
    for fig in (small, large):
        heat = _trace(fig, "error")
        assert (heat.zmin, heat.zmax) == (0.0, figs.ERROR_ZMAX)  # colours never follow the data
        assert list(heat.y) == [0.6, 0.8]
        assert fig.layout.yaxis.autorange != "reversed"
    assert "current" in _metas(small) and "current" not in _metas(large)  # outside the grid: not drawn
    assert list(_trace(small, "error").text[0]) == ["0.01", "0.01", "0.01"]
    with pytest.raises(ValueError):
        figs.error_heatmap(th, p, np.zeros((3, 2)))


def test_fisher_contour_uses_fixed_log_levels_and_survives_zero_information():
    th = np.linspace(0.5, 1.0, 6)
    p = np.array([0.5, 0.7, 0.99])
    J = np.vstack([np.zeros(6), np.full(6, 1.0), np.full(6, 1e6)])
    fig = figs.fisher_contour(th, p, J, current=(0.75, 0.7))
    c = _trace(fig, "fisher")
    lo, hi, size = figs.FISHER_LEVELS
    assert (c.contours.start, c.contours.end, c.contours.size) == (lo, hi, size)
    assert (c.zmin, c.zmax) == (lo, hi)
    z = np.asarray(c.z, dtype=float)
    assert np.isnan(z[0]).all()  # J = 0: no log, no -inf
    assert np.allclose(z[1], 0.0) and np.allclose(z[2], hi)  # clipped at the top level
    assert "current" in _metas(fig)


# ---------------------------------------------------------------------------- Figs. 4, 6, 8
def test_error_vs_n_draws_a_log_axis_with_the_sample_sizes_as_ticks():
    ns = [50, 100, 500]
    fig = figs.error_vs_n(
        ns, {"a": {"y": [0.2, 0.1, 0.05], "meta": "collaborative:3"}, "b": {"y": [0.3, np.nan, 0.1]}}, y_max=0.5
    )
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.tickvals) == [50.0, 100.0, 500.0]
    assert list(fig.layout.yaxis.range) == [0.0, 0.5]
    assert _metas(fig) == ["collaborative:3", "series:b"]
    auto = figs.error_vs_n(ns, {"a": {"y": [0.2, 0.1, 0.05]}})
    assert auto.layout.yaxis.range[0] == 0.0 and auto.layout.yaxis.range[1] == pytest.approx(0.21)
    with pytest.raises(ValueError):
        figs.error_vs_n(ns, {"a": {"y": [0.1]}})
    assert figs.error_vs_n(ns, {}).layout.annotations  # a message, not an empty chart


def test_misspecification_limit_marks_truth_and_points():
    grid = np.linspace(0.01, 0.99, 5)
    fig = figs.misspecification_limit(grid, np.linspace(0, 1, 5), theta_true=0.75, p_true=0.8, marked={"a": (0.7, 0.9)})
    assert _metas(fig) == ["limit", "truth", "p_true", "mark:a"]
    assert list(_trace(fig, "truth").y) == [0.75, 0.75] and list(_trace(fig, "p_true").x) == [0.8, 0.8]
    assert list(fig.layout.yaxis.range) == [-0.02, 1.02]


# ---------------------------------------------------------------------------- Lemma 6, Prop. 7
def test_two_population_figure_has_both_ridges_and_1_96_se_bars():
    t = np.linspace(0, 1, 5)
    Z = np.zeros((5, 5))
    Z[2, 3] = 1.0
    fig = figs.two_population_figure(
        t, t, Z, line_a=([0.2, 0.8], [0.0, 1.0]), line_b=([0.0, 1.0], [0.3, 0.6]),
        truth=(0.7, 0.5), estimate=(0.68, 0.52), se=(0.01, 0.02),
    )  # fmt: skip
    assert _metas(fig) == ["surface", "ridge_a", "ridge_b", "truth", "estimate"]
    assert fig.layout.xaxis.constrain == fig.layout.yaxis.constrain == "domain"
    est = _trace(fig, "estimate")
    assert est.error_x.value == pytest.approx(0.0196) and est.error_y.value == pytest.approx(0.0392)
    assert np.asarray(_trace(fig, "surface").z).max() == 0.0
    with pytest.raises(ValueError):
        figs.two_population_figure(t, t[:3], Z, line_a=([0, 1], [0, 1]))


def test_flat_line_profile_puts_risk_on_a_second_unit_axis():
    fig = figs.flat_line_profile([0.6, 0.8, 1.0], [-5.0, -5.0, -5.0], [0.4, 0.3, 0.2], true_t11=0.8)
    assert np.allclose(_trace(fig, "loglik").y, 0.0)
    assert _trace(fig, "risk").yaxis == "y2"
    assert fig.layout.yaxis2.overlaying == "y" and list(fig.layout.yaxis2.range) == [-0.02, 1.02]


# ---------------------------------------------------------------------------- Raykar et al. 2010
def test_raykar_scatter_splits_by_truth_fixes_colours_and_draws_the_boundaries():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    mu = rng.uniform(size=50)
    truth = (x > 0).astype(int)
    box = (-3, 3, -3, 3)
    fig = figs.raykar_scatter(
        x, y, mu, truth=truth, boundary=(0.0, 1.0, 0.0), mv_boundary=(0.5, 1.0, 1.0), true_boundary=(9, 1, 1), box=box
    )
    assert _metas(fig) == ["items:1", "items:0", "true_boundary", "mv_boundary", "boundary"]
    assert len(_trace(fig, "items:1").x) == truth.sum() and len(_trace(fig, "items:0").x) == 50 - truth.sum()
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert _trace(fig, "items:1").marker.coloraxis == "coloraxis"
    assert list(_trace(fig, "boundary").x) == [0.0, 0.0]
    assert list(_trace(fig, "true_boundary").x) == [None]  # outside the box: an empty line, the legend stays
    assert list(fig.layout.xaxis.range) == [-3.0, 3.0] and list(fig.layout.yaxis.range) == [-3.0, 3.0]
    plain = figs.raykar_scatter(x, y, mu)
    assert _metas(plain) == ["items"]
    with pytest.raises(ValueError):
        figs.raykar_scatter(x, y[:3], mu)


def test_roc_trail_draws_one_trail_per_annotator_and_the_current_point():
    F = np.array([[0.3, 0.5], [0.2, 0.45], [0.1, 0.4]])
    T = np.array([[0.6, 0.5], [0.7, 0.55], [0.9, 0.6]])
    fig = figs.roc_trail(F, T, ["a", "b"], true_fpr=[0.1, 0.4], true_tpr=[0.9, 0.6], kinds=["expert", "novice"])
    assert _metas(fig) == ["chance", "trail:a", "trail:b", "now", "truth"]
    assert list(_trace(fig, "trail:a").x) == [0.3, 0.2, 0.1]
    now = _trace(fig, "now")
    assert list(now.x) == [0.1, 0.4] and list(now.y) == [0.9, 0.6] and "text" in now.mode
    assert fig.layout.yaxis.scaleanchor == "x" and list(fig.layout.xaxis.range) == [-0.02, 1.02]
    many = figs.roc_trail(np.zeros((1, 9)), np.ones((1, 9)), [str(i) for i in range(9)])
    assert "text" not in _trace(many, "now").mode  # labels only while they can be read
    with pytest.raises(ValueError):
        figs.roc_trail(F, T[:, :1], ["a", "b"])


def test_roc_trail_keeps_both_axes_on_the_unit_square():
    # a tall, narrow column: with scaleanchor alone plotly widened the y *range* (to about [-0.8, 1.7]); both axes
    # must give up domain instead, so each keeps [0, 1] (a 0.02 margin for the markers on the edges)
    fig = figs.roc_trail(np.array([[0.0, 1.0]]), np.array([[1.0, 0.0]]), ["a", "b"], true_fpr=[0, 1], true_tpr=[1, 0])
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert list(axis.range) == [-0.02, 1.02] and axis.constrain == "domain"
    assert (fig.layout.yaxis.scaleanchor, fig.layout.yaxis.scaleratio) == ("x", 1)  # square
    assert fig.layout.xaxis.autorange is None and fig.layout.yaxis.autorange is None
    chance = _trace(fig, "chance")
    assert list(chance.x) == [0, 1] and list(chance.y) == [0, 1]  # nothing drawn beyond the square


def test_roc_trail_labels_move_apart_when_points_crowd():
    x = np.array([0.50, 0.52, 0.51, 0.1, 0.9])
    y = np.array([0.80, 0.81, 0.79, 0.9, 0.3])
    names = ["w0", "w1", "w2", "w3", "w4"]
    fig = figs.roc_trail(x[None, :], y[None, :], names)
    pos = list(_trace(fig, "now").textposition)
    assert len(set(pos[:3])) == 3  # the three close points put their labels on different sides
    assert pos[3] == pos[4] == "top center"  # a point alone keeps its label on top
    assert figs.label_positions(np.array([0.5]), np.array([1.0]), ["w"]) != ["top center"]  # not off the top
    assert _trace(fig, "now").cliponaxis is False  # a marker or label on the edge is drawn whole


def test_roc_trail_for_a_narrow_column_wraps_shortens_and_places_labels_for_the_text_drawn():
    """Presenter mode's narrow column: title lines of at most ``title_width`` characters, a short x-axis title,
    automargin on both axes, and names placed for the size they are drawn at (14 px on a square about 90 px wide):
    labels that do not collide at 10 px on 190 px must move apart there."""
    x = np.array([0.10, 0.18, 0.12, 0.45, 0.55])
    y = np.array([0.90, 0.85, 0.70, 0.85, 0.80])
    names = ["w0", "w1", "w2", "w3", "w4"]
    wide = figs.roc_trail(x[None, :], y[None, :], names)
    narrow = figs.roc_trail(
        x[None, :], y[None, :], names, title_width=18, x_title="1 − β (false pos.)", label_px=(90.0, 14.0)
    )
    assert wide.layout.xaxis.title.text == "1 − β (false-positive rate)"
    assert narrow.layout.xaxis.title.text == "1 − β (false pos.)"
    assert all(len(line) <= 18 for line in narrow.layout.title.text.split("<br>"))
    assert narrow.layout.xaxis.automargin and narrow.layout.yaxis.automargin
    assert (
        list(_trace(narrow, "now").textposition)
        == figs.label_positions(x, y, names, plot_px=90.0, font_px=14.0)
        != figs.label_positions(x, y, names)
    )


# ---------------------------------------------------------------------------- intervals
def test_interval_chart_sorts_by_estimate_and_keeps_the_extremes():
    est = np.array([0.7, 0.9, 0.5, 0.8])
    fig = figs.interval_chart(
        ["w0", "w1", "w2", "w2"], est, est - 0.1, np.minimum(est + 0.2, 1.0),
        n_labels=[10, 20, 30, 40], exact=[False, True, False, False], chance=0.5,
    )  # fmt: skip
    order = list(fig.layout.yaxis.categoryarray)
    assert order == ["w2 #2", "w0", "w2 #3", "w1"]  # lowest first = bottom; duplicate names made unique
    wald, exact = _trace(fig, "wald"), _trace(fig, "exact")
    assert list(wald.y) == ["w2 #2", "w0", "w2 #3"] and list(exact.y) == ["w1"]
    assert np.all(np.asarray(wald.error_x.array) >= 0) and np.all(np.asarray(wald.error_x.arrayminus) >= 0)
    assert np.allclose(wald.error_x.arrayminus, 0.1)
    assert list(fig.layout.xaxis.range) == [-0.02, 1.02]
    assert fig.layout.shapes[0].x0 == 0.5
    big = figs.interval_chart([f"w{i}" for i in range(100)], np.linspace(0, 1, 100), np.zeros(100), np.ones(100),
                              max_rows=10)  # fmt: skip
    assert list(big.layout.yaxis.categoryarray) == [f"w{i}" for i in (0, 1, 2, 3, 4, 95, 96, 97, 98, 99)]
    assert figs.interval_chart([], np.zeros(0), np.zeros(0), np.zeros(0)).layout.annotations
    with pytest.raises(ValueError):
        figs.interval_chart(["a"], est, est, est)
