"""crowdlab.plots: traces, axis ranges, the fixed colour range and the marker positions."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab import plots
from crowdlab.engines.run import Run
from crowdlab.models import DawidSkene, MajorityVote
from crowdlab.teaching.simulate import simulate_crowd


def _by_meta(fig, meta):
    found = [t for t in fig.data if t.meta == meta]
    assert len(found) == 1, f"expected one trace with meta {meta!r}, got {[t.meta for t in fig.data]}"
    return found[0]


@pytest.fixture(scope="module")
def run():
    data = simulate_crowd(120, 6, 3, labels_per_item=4, seed=3).annotations
    r = Run(data, DawidSkene())
    for _ in range(4):
        r.step()
    r.e_step()  # 4 full iterations, then one E-step: snapshots init, (E, M) x 4, E
    return r


def test_half_step_positions_put_e_steps_at_the_half():
    x = plots.half_step_positions(["init", "E", "M", "E", "M", "E"], [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(x, [0, 0.5, 1, 1.5, 2, 2.5])
    # a parameter start goes straight to an M-step: no E position
    np.testing.assert_array_equal(plots.half_step_positions(["init", "M", "E"], [0, 1, 1]), [0, 1, 1.5])


def test_objective_curve_draws_every_half_step_and_the_dashed_bound(run):
    hist = run.history()
    fig = plots.objective_curve(hist, run.index, title="T", objective_name="log-lik", bound_name="F")
    obj = _by_meta(fig, "objective")
    bound = _by_meta(fig, "bound")
    assert len(obj.x) == len(run.snapshots) == 10
    np.testing.assert_allclose(obj.y, hist["objective"])
    np.testing.assert_allclose(bound.y, hist["bound"])
    assert bound.line.dash == "dash"
    assert obj.line.dash is None
    assert obj.name == "log-lik" and bound.name == "F"
    # E-steps marked by diamonds at the half positions
    np.testing.assert_array_equal(obj.x[:4], [0, 0.5, 1, 1.5])
    e = _by_meta(fig, "e_steps")
    assert e.marker.symbol == "diamond" and e.mode == "markers"
    np.testing.assert_array_equal(e.x, [0.5, 1.5, 2.5, 3.5, 4.5])
    np.testing.assert_allclose(e.y, hist["objective"][1::2])
    # the bound never exceeds the objective (EM's lower bound) and touches it after E-steps
    assert np.all(np.asarray(bound.y) <= np.asarray(obj.y) + 1e-8 * np.abs(obj.y))
    np.testing.assert_allclose(np.asarray(bound.y)[1::2], np.asarray(obj.y)[1::2], rtol=1e-9)
    assert fig.layout.title.text == "T"


@pytest.mark.parametrize("index", [0, 3, 9])
def test_objective_curve_marks_the_current_snapshot(run, index):
    hist = run.history()
    fig = plots.objective_curve(hist, index)
    cur = _by_meta(fig, "current")
    x = plots.half_step_positions(hist["kind"], hist["iteration"])
    assert list(cur.x) == [x[index]]
    assert list(cur.y) == pytest.approx([hist["objective"][index]])


def test_objective_curve_without_bound_and_for_majority_vote(run):
    fig = plots.objective_curve(run.history(), 2, show_bound=False)
    assert [t.meta for t in fig.data] == ["objective", "e_steps", "current"]
    mv = Run(run.data, MajorityVote())
    empty = plots.objective_curve(mv.history(), 0, title="MV")
    assert len(empty.data) == 0
    assert "not iterative" in empty.layout.annotations[0].text


def test_objective_curve_keeps_a_rounding_wobble_flat(run):
    # the error-rates lesson's "EM cannot move" step: objective and bound at -346.57359027997 wobbling by 6e-12;
    # autorange drew the bound falling across the whole chart, under four identical tick labels
    hist = {
        "kind": np.array(["init", "E", "M", "E"]),
        "iteration": np.array([0, 0, 1, 1]),
        "objective": np.full(4, -346.5735902799727),
        "bound": np.array([-346.5735902799727, -346.5735902799785, -346.5735902799727, -346.5735902799785]),
    }
    lo, hi = plots.objective_curve(hist, 3).layout.yaxis.range
    assert hi - lo == pytest.approx(2.0) and lo < -346.5735902799785 and -346.5735902799727 < hi
    assert plots.objective_curve(run.history(), 2).layout.yaxis.range is None  # a real climb keeps autorange
    assert plots.curves.flat_range(np.array([1e6, 1e6 + 1e-5])) == pytest.approx([1e6 - 1e3, 1e6 + 1e3])


def test_metric_curve_fixed_unit_range_and_current_markers():
    x = [0, 0.5, 1, 1.5, 2]
    acc = [0.70, 0.80, 0.85, 0.86, 0.87]
    f1 = [0.60, 0.75, 0.80, 0.81, np.nan]
    fig = plots.metric_curve(x, {"accuracy": acc, "macro F": f1}, 1.5)
    names = [t.name for t in fig.data]
    assert names == ["accuracy", "macro F", "current"]
    assert tuple(fig.layout.yaxis.range) == (0.0, 1.02)
    cur = fig.data[-1]
    assert list(cur.x) == [1.5, 1.5]
    assert list(cur.y) == pytest.approx([0.86, 0.81])
    # the vertical line sits at the current position
    assert len(fig.layout.shapes) == 1 and fig.layout.shapes[0].x0 == 1.5


def test_metric_curve_follows_data_outside_unit_range_and_checks_lengths():
    fig = plots.metric_curve([0, 1], {"r": [-0.5, 0.9]}, 1)
    assert fig.layout.yaxis.range is None
    with pytest.raises(ValueError, match="2 positions"):
        plots.metric_curve([0, 1], {"r": [0.1, 0.2, 0.3]}, 0)


def test_confusion_grid_fixed_colour_range_reversed_rows_shared_axis():
    rng = np.random.default_rng(0)
    M, K = 6, 3
    gamma = rng.dirichlet(np.ones(K), size=(M, K)).transpose(0, 2, 1)  # columns sum to one
    names = [f"w{m}" for m in range(M)]
    fig = plots.confusion_grid(gamma, names, ["a", "b", "c"], max_workers=5, cols=3)
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 5  # capped at max_workers
    for m, t in enumerate(heat):
        assert (t.zmin, t.zmax) == (0.0, 1.0)
        assert t.coloraxis == "coloraxis"
        np.testing.assert_allclose(np.asarray(t.z), gamma[m])  # rows = says, columns = true class
        assert list(t.x) == ["a", "b", "c"] and list(t.y) == ["a", "b", "c"]
        assert t.text is not None and t.text[0][0] == f"{gamma[m, 0, 0]:.2f}"
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    yaxes = [fig.layout[k] for k in fig.layout if k.startswith("yaxis")]
    assert len(yaxes) == 6  # 2 rows x 3 columns
    assert all(ax.autorange == "reversed" for ax in yaxes)
    titles = [a.text for a in fig.layout.annotations]
    assert titles == names[:5]


def test_confusion_grid_colour_range_does_not_follow_the_data():
    # a nearly flat matrix must not be stretched to the full colour scale
    gamma = np.full((2, 2, 2), 0.5)
    fig = plots.confusion_grid(gamma, ["a", "b"], ["0", "1"])
    assert all((t.zmin, t.zmax) == (0.0, 1.0) for t in fig.data)
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)


def test_confusion_grid_picks_workers_and_drops_text_when_large():
    K = 7
    gamma = np.tile(np.eye(K), (4, 1, 1))
    fig = plots.confusion_grid(gamma, ["w0", "w1", "w2", "w3"], [str(k) for k in range(K)], workers=[3, 1])
    assert [a.text for a in fig.layout.annotations] == ["w3", "w1"]
    assert all(t.text is None for t in fig.data)
    with pytest.raises(ValueError, match="M, K, K"):
        plots.confusion_grid(np.ones((2, 3, 4)), ["a", "b"], ["x", "y", "z"])


def test_posterior_heatmap_rows_top_down_gold_markers():
    q = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5], [0.3, 0.7]])
    gold = np.array([0, -1, 1, 0])
    fig = plots.posterior_heatmap(q, ["i0", "i1", "i2", "i3"], ["no", "yes"], gold=gold)
    heat = fig.data[0]
    assert heat.type == "heatmap"
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    np.testing.assert_allclose(np.asarray(heat.z), q)
    assert list(heat.y) == ["i0", "i1", "i2", "i3"]
    assert fig.layout.yaxis.autorange == "reversed"
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    # gold cells outlined: (class index, item index) = (0, 0), (1, 2) and (0, 3); item i1 has no gold
    (shape,) = [s for s in fig.layout.shapes if s.name == "gold"]
    boxes = plots.parse_rect_path(shape.path)
    assert [((x0 + x1) / 2, (y0 + y1) / 2) for x0, x1, y0, y1 in boxes] == [(0, 0), (1, 2), (0, 3)]
    assert all(x1 - x0 == 1 and y1 - y0 == 1 for x0, x1, y0, y1 in boxes)
    assert heat.text[1][1] == "0.80"
    # the gold column beside the heatmap: green where the arg-max agrees (i0; i2 ties at 0.5 -> class 0 != 1),
    # red where it differs (i2, i3)
    agrees = [t for t in fig.data if t.meta == "gold_agrees"][0]
    differs = [t for t in fig.data if t.meta == "gold_differs"][0]
    assert list(agrees.y) == ["i0"] and list(agrees.text) == ["no"]
    assert list(differs.y) == ["i2", "i3"] and list(differs.text) == ["yes", "no"]
    assert agrees.xaxis == "x2" and agrees.yaxis == "y"
    assert fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0]


def test_posterior_heatmap_without_gold_and_shape_checks():
    q = np.full((3, 2), 0.5)
    fig = plots.posterior_heatmap(q, ["a", "b", "c"], ["x", "y"])
    assert len(fig.data) == 1 and len(fig.layout.shapes) == 0
    fig = plots.posterior_heatmap(q, ["a", "b", "c"], ["x", "y"], gold=np.array([-1, -1, -1]))
    assert len(fig.data) == 1 and len(fig.layout.shapes) == 0
    assert fig.layout.xaxis.domain == (0.0, 1.0)
    with pytest.raises(ValueError, match="names do not match"):
        plots.posterior_heatmap(q, ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="one entry per row"):
        plots.posterior_heatmap(q, ["a", "b", "c"], ["x", "y"], changed=np.array([True, False]))


def test_posterior_heatmap_stars_and_outlines_the_changed_rows():
    q = np.array([[0.9, 0.1], [0.4, 0.6], [0.5, 0.5]])
    fig = plots.posterior_heatmap(q, ["a", "b", "c"], ["x", "y"], changed=np.array([False, True, False]))
    assert list(fig.layout.yaxis.tickvals) == ["a", "b", "c"]
    assert list(fig.layout.yaxis.ticktext) == ["a", "★ b", "c"]
    (shape,) = [s for s in fig.layout.shapes if s.name == "changed"]
    assert plots.parse_rect_path(shape.path) == [(-0.5, 1.5, 0.5, 1.5)]  # the whole row of item b
    assert shape.line.dash == "dot"
    # nothing changed: no stars, no outline
    fig = plots.posterior_heatmap(q, ["a", "b", "c"], ["x", "y"], changed=np.zeros(3, dtype=bool))
    assert fig.layout.yaxis.ticktext is None and len(fig.layout.shapes) == 0


def test_rect_path_round_trip():
    cells = [(-0.5, 0.5, 2.5, 3.5), (1.5, 2.5, 0.5, 1.5)]
    assert plots.parse_rect_path(plots.rect_path(cells)) == cells
    assert plots.parse_rect_path(plots.rect_path([])) == []


def test_confusion_grid_stays_legible_in_a_narrow_column():
    """Audit at 1024 px: the numbers were auto-shrunk to ~6 px, the y tick marks of one matrix poked into its left
    neighbour's numbers ("0.36-"), and long worker names (one 24-character line per matrix) overlapped."""
    import html

    gamma = np.tile(np.full((2, 2), 0.5), (3, 1, 1))
    names = ["Dr. Alexandra Montgomery-Smythe (night shift)", "<b>bob</b>", "averyveryverylongworkernamewithoutspaces"]
    classes = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>"]
    fig = plots.confusion_grid(gamma, names, classes, cols=2, width_px=330)
    assert all(t.textfont.size >= 12 for t in fig.data)  # a fixed, legible size (plotly's auto size shrinks it)
    axes = [fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis"))]
    assert axes and all(ax.ticks == "" for ax in axes)
    # every title fits over its matrix: at most two lines, each no wider than the matrix (~7.5 px a character)
    matrix_px = (fig.layout.xaxis.domain[1] - fig.layout.xaxis.domain[0]) * (330 - 100 - 7 * 12)
    for a in fig.layout.annotations:
        lines = [html.unescape(line) for line in a.text.split("<br>")]
        assert len(lines) <= 2 and all(len(line) * 7.5 <= matrix_px + 8 for line in lines), lines
        assert "<b>" not in a.text  # still escaped
    assert fig.layout.annotations[1].text == "&lt;b&gt;bob&lt;/<br>b&gt;"
    # two-line titles: the figure's title is pinned to the top with room below it for them
    assert fig.layout.title.yanchor == "top" and fig.layout.margin.t >= 22 + 20 * 2 + 17 * 2


def test_wrap_label_two_lines_escaped_and_shortened():
    assert plots.wrap_label("alice", 10) == "alice"
    assert plots.wrap_label("a b c d e f g h i j k l m n o p", 5) == "a b c<br>d e …"
    assert plots.wrap_label("<script>alert(1)</script>", 9) == "&lt;script&gt;a<br>lert(1)&lt;…"


def test_confusion_grid_labels_the_rows_once_per_grid_row():
    gamma = np.tile(np.eye(2), (6, 1, 1))
    fig = plots.confusion_grid(gamma, [f"w{m}" for m in range(6)], ["0", "1"], cols=3)
    shown = {k: fig.layout[k].showticklabels for k in fig.layout if k.startswith("yaxis")}
    assert shown == {"yaxis": True, "yaxis2": False, "yaxis3": False, "yaxis4": True, "yaxis5": False, "yaxis6": False}


def _confusion_cell_px(fig, K: int, width_px: int, label_chars: int) -> float:
    """A matrix cell's width as confusion_grid estimates it (the measured one in Chromium is a little wider)."""
    return (fig.layout.xaxis.domain[1] - fig.layout.xaxis.domain[0]) * (width_px - 100 - 8 * label_chars) / K


def test_confusion_grid_numbers_fit_their_cells_at_presenter_size():
    """Audit (presenter mode, Sequences and Networks): presenter mode's CSS draws cell numbers at 14 px, and in
    4 x 4 matrices four to a row they ran together ("0.440.160.140.09"). The numbers now take the form that fits
    a cell at 14 px (".44"), or go when none does; where there is room they stay "0.44"."""
    rng = np.random.default_rng(1)
    gamma = rng.dirichlet(np.ones(4), size=(8, 4)).transpose(0, 2, 1)
    gamma[0, 0, 0] = 1.0
    names = [f"w{m}" for m in range(8)]
    fig = plots.confusion_grid(gamma, names, list("0123"), cols=4, width_px=640)  # the Networks page's call
    cell = _confusion_cell_px(fig, 4, 640, 1)
    for t in fig.data:
        text = np.asarray(t.text)
        assert all(len(x) <= 3 for x in text.ravel()), text  # ".44" (no leading zero), "1" for 1.00
        assert 1.4 * 14 + 4 <= cell  # ".44" at 14 px with room to spare
    assert fig.data[0].text[0][0] == "1" and fig.data[1].text[0][0] == f"{gamma[1, 0, 0]:.2f}"[1:]
    wide = plots.confusion_grid(gamma, names, list("0123"), cols=2, width_px=640)
    assert wide.data[0].text[1][0] == f"{gamma[0, 1, 0]:.2f}"  # room for "0.44"
    tiny = plots.confusion_grid(gamma, names, list("0123"), cols=4, width_px=300)
    assert all(t.text is None for t in tiny.data)  # too narrow for any number: the hover keeps them


def test_confusion_grid_upright_class_labels_clear_the_next_row_of_titles():
    """Audit (presenter mode, CoNLL NER's 9 tags): the class labels under a matrix, turned upright by plotly, ran
    into the worker names of the next row. Labels that do not fit across turn upright on purpose and the rows
    move apart by their length."""
    tags = ["B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER", "O"]
    gamma = np.tile(np.eye(9), (4, 1, 1))
    fig = plots.confusion_grid(gamma, ["W04", "W05", "W13", "W15"], tags, cols=2, width_px=640)
    assert fig.layout.xaxis.tickangle == -90 and fig.layout.xaxis3.tickangle == -90
    plot_h = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    gap = (fig.layout.yaxis.domain[0] - fig.layout.yaxis3.domain[1]) * plot_h
    label = 0.56 * 14 * len("B-MISC")  # the longest tag, upright, at 14 px
    assert gap >= label + 16 + 17  # the labels, their standoff and a line of worker names
    assert fig.layout.margin.b >= label + 20  # the last row's labels and "true class" below them
    small = plots.confusion_grid(np.tile(np.eye(2), (4, 1, 1)), ["a", "b", "c", "d"], ["0", "1"], cols=2)
    assert small.layout.xaxis.tickangle is None  # short labels: plotly's own choice, as before


# ---------------------------------------------------------------------------- workers and priors
def test_reliability_scatter_points_highlight_fixed_range_and_log_axis():
    n = np.array([10.0, 500.0, 40.0, 1000.0])
    acc = np.array([0.5, 0.9, 0.7, 0.95])
    fig = plots.reliability_scatter(n, acc, ["a", "b", "c", "d"], highlight=[1, 3], chance=0.25)
    rest, shown = _by_meta(fig, "workers"), _by_meta(fig, "highlight")
    assert list(rest.x) == [10, 40] and list(rest.y) == [0.5, 0.7] and list(rest.text) == ["a", "c"]
    assert list(shown.x) == [500, 1000] and list(shown.text) == ["b", "d"]
    lo, hi = fig.layout.yaxis.range  # [0, 1] with room for points at 0 and 1 (and their name labels)
    assert lo <= -0.02 and hi >= 1.02 and hi - lo < 1.2
    assert rest.mode == "markers+text"  # few workers: every point carries its name
    assert fig.layout.xaxis.type == "log"  # counts span a factor of 100
    assert [s.y0 for s in fig.layout.shapes] == [0.25]
    # equal counts: a linear axis from zero (not a range of 107 .. 109)
    fig = plots.reliability_scatter(np.full(3, 108.0), np.array([0.5, 0.6, 0.7]), ["a", "b", "c"])
    assert fig.layout.xaxis.type == "linear" and fig.layout.xaxis.rangemode == "tozero"
    assert [t.meta for t in fig.data] == ["workers"]
    with pytest.raises(ValueError, match="one label count"):
        plots.reliability_scatter(n, acc[:2], ["a", "b", "c", "d"])


def test_sens_spec_scatter_axes_and_spammer_line():
    fig = plots.sens_spec_scatter(np.array([0.9, 0.3]), np.array([0.8, 0.6]), ["a", "b"])
    t = _by_meta(fig, "workers")
    assert list(t.x) == [0.8, 0.6] and list(t.y) == [0.9, 0.3]  # x = beta (specificity), y = alpha (sensitivity)
    assert "β" in fig.layout.xaxis.title.text and "α" in fig.layout.yaxis.title.text
    (line,) = fig.layout.shapes
    assert (line.x0, line.y0, line.x1, line.y1) == (0, 1, 1, 0)  # alpha + beta = 1


def test_class_prior_bars_fixed_range_and_reference():
    fig = plots.class_prior_bars(np.array([0.2, 0.5, 0.3]), ["a", "b", "c"], reference=np.array([0.25, 0.5, 0.25]))
    bars, ref = _by_meta(fig, "pi"), _by_meta(fig, "reference")
    assert list(bars.y) == [0.2, 0.5, 0.3] and list(bars.text) == ["0.20", "0.50", "0.30"]
    assert list(ref.y) == [0.25, 0.5, 0.25]
    assert tuple(fig.layout.yaxis.range) == (0.0, 1.0)
    with pytest.raises(ValueError, match="3 classes"):
        plots.class_prior_bars(np.array([0.5, 0.5]), ["a", "b", "c"])


def test_annotator_bars_fixed_colour_range():
    fig = plots.annotator_bars(np.array([0.1, 0.99]), ["a", "b"])
    bars = _by_meta(fig, "p_good")
    assert (bars.marker.cmin, bars.marker.cmax) == (0.0, 1.0)
    assert list(bars.marker.color) == [0.1, 0.99]
    dots = _by_meta(fig, "p_good_dots")
    assert list(dots.y) == [0.1, 0.99] and (dots.marker.cmin, dots.marker.cmax) == (0.0, 1.0)
    assert tuple(fig.layout.yaxis.range) == (-0.04, 1.04)


def test_annotator_bars_label_the_row_of_true_types_truth_and_keep_the_order_given():
    """At the start every bar is at P(good) = 1, so "bad" above a bar must say it is the simulation's truth: the
    y axis labels that row "truth". The bars stay in the order given (no sorting by P(good))."""
    w, names = np.array([1.0, 0.2, 0.9]), ["A0", "A1", "A2"]
    fig = plots.annotator_bars(w, names, truth=np.array([True, False, True]))
    bars, said = _by_meta(fig, "p_good"), _by_meta(fig, "truth")
    assert list(bars.x) == names and list(bars.y) == [1.0, 0.2, 0.9]
    ticks = dict(zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext))
    assert ticks[said.y[0]] == "truth" and ticks[1] == "1" and ticks[0] == "0"
    assert fig.layout.yaxis.range[1] > said.y[0] > 1
    plain = plots.annotator_bars(w, names)
    assert "truth" not in plain.layout.yaxis.ticktext


def test_chart_text_writes_subscripts_not_underscores():
    """Titles, axis titles and trace names use the app's Unicode subscripts (μᵢ, αⱼ, 1/βᵢ, θⱼ, ηₜ), never
    "μ_i"."""
    from crowdlab.plots import models as figs
    from crowdlab.plots import online

    names, n = ["a", "b", "c"], np.array([3, 4, 5])
    mu, ref = np.array([0.2, 0.5, 0.8]), np.array([0.25, 0.5, 0.75])
    built = [
        figs.ability_chart(np.array([0.5, -0.2, 1.0]), names, n),
        figs.difficulty_histogram(np.array([0.5, 2.0, 8.0])),
        figs.spam_chart(np.array([0.1, 0.6, 0.9]), names, n),
        plots.item_means_scatter(mu, ref, names, reference_name="true mean"),
        plots.scores_vs_means(np.array([0.2, 0.6]), mu[:2], np.array([0.9, 0.1]), ["a", "b"], sigma=0.1),
        online.eta_schedule(1.0, 1.0, 0.7, 100),
    ]
    for fig in built:
        texts = [fig.layout.title.text, fig.layout.xaxis.title.text, fig.layout.yaxis.title.text]
        texts += [t.name for t in fig.data if t.name]
        bad = [t for t in texts if t and "_" in t.replace("π_good", "")]
        assert not bad, bad
    assert "μᵢ" in built[3].layout.title.text and "αⱼ" in built[0].layout.title.text
    assert "1/βᵢ" in built[1].layout.title.text and "θⱼ" in built[2].layout.title.text
    assert "ηₜ" in built[5].layout.title.text


@pytest.mark.parametrize(
    ("lo", "hi", "expect"),
    [
        (np.log10(0.07), np.log10(1.5), ["0.1", "0.2", "0.5", "1"]),  # GLAD on bluebirds
        (np.log10(0.3), np.log10(40.0), ["0.5", "1", "2", "5", "10", "20"]),
        (-3.2, 2.1, ["0.001", "0.01", "0.1", "1", "10", "100"]),  # many decades: the powers of ten alone
        (np.log10(1.2), np.log10(1.8), ["1.2", "1.8"]),  # nothing nice inside: the ends
    ],
)
def test_log_ticks_are_plain_numbers_at_one_two_five(lo, hi, expect):
    from crowdlab.plots.models import log_ticks

    vals, text = log_ticks(lo, hi)
    assert text == expect
    assert np.allclose(10 ** np.asarray(vals), [float(t) for t in text], rtol=0.01)
    assert all(lo - 1e-6 <= v <= hi + 1e-6 for v in vals)


def test_difficulty_histogram_draws_every_bar_whole_with_plain_ticks():
    """GLAD's difficulties: bins in log10, every bar as wide as its bin (the hardest items' bar was a hairline at
    the edge of a log axis) and inside the x range; ticks at 1, 2, 5 x powers of ten, labelled as numbers."""
    from crowdlab.plots.models import difficulty_histogram

    rng = np.random.default_rng(0)
    beta = 1.0 / np.exp(rng.normal(-1.0, 0.7, 200))
    fig = difficulty_histogram(beta)
    bars = _by_meta(fig, "difficulty")
    x, w = np.asarray(bars.x), np.asarray(bars.width)
    assert int(np.sum(bars.y)) == 200 and np.allclose(w, w[0])
    lo, hi = fig.layout.xaxis.range
    assert lo < (x - w / 2).min() and (x + w / 2).max() < hi
    assert fig.layout.xaxis.type != "log"
    ticks = [float(t) for t in fig.layout.xaxis.ticktext]
    assert 3 <= len(ticks) <= 6 and {f"{t:e}"[0] for t in ticks} <= {"1", "2", "5"}  # e.g. 0.1, 0.2, 0.5, 1
    assert np.allclose(np.log10(ticks), fig.layout.xaxis.tickvals)
    assert all(lo <= v <= hi for v in fig.layout.xaxis.tickvals)
    ends = np.asarray(bars.customdata)
    assert ends[0, 0] <= (1.0 / beta).min() * 1.0001 and ends[-1, 1] >= (1.0 / beta).max() * 0.9999
    same = difficulty_histogram(np.full(5, 2.0))  # every item equally hard: one bar, still whole
    assert int(np.sum(_by_meta(same, "difficulty").y)) == 5


def test_item_means_scatter_drops_unknown_reference():
    fig = plots.item_means_scatter(np.array([1.0, 2.0, 3.0]), np.array([1.5, np.nan, 2.5]), ["a", "b", "c"])
    pts, diag = _by_meta(fig, "items"), _by_meta(fig, "diagonal")
    assert list(pts.x) == [1.5, 2.5] and list(pts.y) == [1.0, 3.0] and list(pts.text) == ["a", "c"]
    assert list(diag.x) == [1.0, 3.0] and list(diag.y) == [1.0, 3.0]


def test_item_means_scatter_axes_fixed_by_axis_range_and_markers_visible():
    ref = np.array([0.2, 0.5, 0.8])
    first = plots.item_means_scatter(np.array([0.45, 0.5, 0.55]), ref, ["a", "b", "c"], axis_range=(0.0, 1.0))
    later = plots.item_means_scatter(np.array([0.1, 0.6, 0.95]), ref, ["a", "b", "c"], axis_range=(0.0, 1.0))
    for fig in (first, later):
        assert list(fig.layout.xaxis.range) == list(fig.layout.yaxis.range) == pytest.approx([-0.04, 1.04])
        assert list(_by_meta(fig, "diagonal").x) == [0.0, 1.0]
        assert _by_meta(fig, "items").marker.size >= 7  # visible on a projector
    assert list(first.layout.xaxis.range) == list(later.layout.xaxis.range)  # two iterates, the same axes


# ---------------------------------------------------------------------------- the likelihood surface
def test_objective_contour_relative_clipped_and_the_path():
    xs = np.linspace(0, 1, 11)
    ys = np.linspace(0, 1, 21)
    Z = -((xs[None, :] - 0.3) ** 2 + (ys[:, None] - 0.8) ** 2) * 100 - 500
    fig = plots.objective_contour(xs, ys, Z, [0.5, 0.4, 0.3], [0.5, 0.7, 0.8], path_index=[0, 2, 4])
    surf = _by_meta(fig, "surface")
    z = np.asarray(surf.z)
    assert z.shape == (21, 11)
    assert z.max() == 0.0 and surf.zmax == 0.0  # relative to the slice's best point
    assert z.min() == pytest.approx(surf.zmin) and surf.zmin < 0  # clipped at the floor quantile
    np.testing.assert_allclose(z[16, 3], 0.0)  # Z[iy, ix]: the maximum at y = 0.8, x = 0.3
    path = _by_meta(fig, "path")
    assert list(path.x) == [0.5, 0.4, 0.3] and list(path.customdata) == [0, 2, 4]
    assert list(_by_meta(fig, "start").x) == [0.5] and list(_by_meta(fig, "current").y) == [0.8]
    best = _by_meta(fig, "max")
    assert (best.x[0], best.y[0]) == pytest.approx((0.3, 0.8))
    assert tuple(fig.layout.xaxis.range) == tuple(fig.layout.yaxis.range) == (-0.02, 1.02)
    with pytest.raises(ValueError, match="expected"):
        plots.objective_contour(xs, ys, Z.T, [0.5], [0.5])


# ---------------------------------------------------------------------------- restarts and prior sweeps
@pytest.fixture(scope="module")
def restart_table():
    import pandas as pd

    return pd.DataFrame(
        {
            "init": ["majority", "all_good", "random", "random", "random"],
            "seed": [0, 0, 0, 1, 2],
            "objective": [-10.0, -12.0, -10.0, -11.0, -10.0],
            "iterations": [5, 6, 7, 8, 9],
            "converged": [True] * 5,
            "relabelled": [False, False, True, False, False],
            "accuracy": [0.9, 0.8, 0.1, 0.7, 0.9],
            "optimum": [0, 2, 0, 1, 0],
        }
    )


def test_restart_scatter_one_trace_per_optimum_and_mirror_crosses(restart_table):
    fig = plots.restart_scatter(restart_table)
    assert [t.meta for t in fig.data if not t.meta.startswith("key")] == ["optimum 0", "optimum 1", "optimum 2"]
    # an honest legend (the audit saw "optimum 0" as a circle, "optimum 1" as a cross): colours as circles, the
    # cross once on its own; the points' traces stay out of it
    shown = [t for t in fig.data if t.showlegend is not False]
    assert [t.meta for t in shown] == ["key optimum 0", "key optimum 1", "key optimum 2", "key relabelled"]
    assert [t.marker.symbol for t in shown] == ["circle"] * 3 + ["x"]
    assert [t.marker.color for t in shown[:3]] == [_by_meta(fig, f"optimum {k}").marker.color for k in range(3)]
    assert all(
        _by_meta(fig, f"key optimum {k}").legendgroup == _by_meta(fig, f"optimum {k}").legendgroup for k in range(3)
    )
    best = _by_meta(fig, "optimum 0")
    assert list(best.x) == [-10.0, -10.0, -10.0] and list(best.y) == [0.9, 0.1, 0.9]
    assert list(best.marker.symbol) == ["circle", "x", "circle"]  # random seed 0 ended relabelled
    assert list(best.text) == ["majority", "random (seed 0)", "random (seed 2)"]
    assert fig.layout.yaxis.title.text == "accuracy" and tuple(fig.layout.yaxis.range) == (0.0, 1.02)
    # without gold: iterations on the y axis
    fig = plots.restart_scatter(restart_table.drop(columns=["accuracy"]))
    assert fig.layout.yaxis.title.text == "iterations" and list(fig.data[0].y) == [5, 7, 9]
    # no mirror optimum: no cross in the legend
    fig = plots.restart_scatter(restart_table.assign(relabelled=False))
    assert "key relabelled" not in [t.meta for t in fig.data]
    assert len(plots.restart_scatter(restart_table.iloc[:0]).data) == 0


def test_objective_spread_one_box_per_kind_of_start(restart_table):
    fig = plots.objective_spread(restart_table)
    assert [t.meta for t in fig.data] == ["majority", "all_good", "random"]
    assert list(_by_meta(fig, "random").y) == [-10.0, -11.0, -10.0]
    assert all(t.boxpoints == "all" for t in fig.data)


def test_prior_sweep_figure_unit_axis_and_objective_on_the_right():
    import pandas as pd

    t = pd.DataFrame(
        {
            "prior": [0.0, 0.5, 10.0],
            "objective": [-100.0, -110.0, -150.0],
            "accuracy": [0.9, 0.91, 0.85],
            "mean worker accuracy": [0.7, 0.69, 0.6],
        }
    )
    fig = plots.prior_sweep_figure(t)
    assert [tr.meta for tr in fig.data] == ["accuracy", "mean worker accuracy", "objective"]
    obj = _by_meta(fig, "objective")
    assert obj.yaxis == "y2" and list(obj.x) == ["0", "0.5", "10"] and list(obj.y) == [-100.0, -110.0, -150.0]
    assert tuple(fig.layout.yaxis.range) == (0.0, 1.02)
    assert fig.layout.yaxis2.overlaying == "y" and fig.layout.xaxis.type == "category"


# ---------------------------------------------------------------------------- projector readability
def test_objective_contour_spans_any_grid_and_labels_the_start_and_end():
    xs = np.linspace(0.02, 0.6, 9)  # e.g. sigma of the scores model: not a probability
    ys = np.linspace(0.005, 0.995, 11)
    Z = -((xs[None, :] - 0.25) ** 2) * 500 - (ys[:, None] - 0.6) ** 2 * 10
    fig = plots.objective_contour(xs, ys, Z, [0.4, 0.3, 0.25], [0.5, 0.58, 0.6], end_label="end (converged)")
    assert fig.layout.xaxis.range[0] < 0.02 < 0.6 < fig.layout.xaxis.range[1] < 0.7
    assert tuple(fig.layout.yaxis.range) == (-0.02, 1.02)
    start, end, path = _by_meta(fig, "start"), _by_meta(fig, "current"), _by_meta(fig, "path")
    assert list(start.text) == ["start"] and list(end.text) == ["end (converged)"]
    assert path.line.width >= 4 and path.marker.size >= 12 and end.marker.size >= 24  # reads on a projector
    # the labels sit on the side away from the path: it leaves the start to the left, so "start" is on the right
    assert start.textposition.endswith("right") and end.textposition.endswith("left")
    # ... unless that side is too near the edge for the label: then it faces the middle of the plot
    fig = plots.objective_contour(xs, ys, Z, [0.4, 0.1, 0.03], [0.5, 0.58, 0.6], end_label="end (converged)")
    assert _by_meta(fig, "current").textposition.endswith("right") and _by_meta(fig, "current").cliponaxis is False


def test_scores_vs_means_colours_by_p_good_with_the_two_sigma_band():
    fig = plots.scores_vs_means(
        np.array([0.2, 0.9, 0.4]), np.array([0.25, 0.3, 0.4]), np.array([1.0, 0.0, 1.0]), ["a", "b", "a"], sigma=0.05
    )
    pts = _by_meta(fig, "scores")
    assert list(pts.x) == [0.25, 0.3, 0.4] and list(pts.y) == [0.2, 0.9, 0.4]
    assert (pts.marker.cmin, pts.marker.cmax) == (0.0, 1.0) and list(pts.marker.color) == [1.0, 0.0, 1.0]
    band = _by_meta(fig, "band")
    assert band.y[0] == pytest.approx(0.2 + 0.1) and band.y[3] == pytest.approx(0.2 - 0.1)
    fig = plots.scores_vs_means(np.zeros(1), np.zeros(1), np.ones(1), ["<b>x</b>"], sigma=1.0)
    assert list(_by_meta(fig, "scores").text) == ["&lt;b&gt;x&lt;/b&gt;"]  # a name is text, never markup
    with pytest.raises(ValueError, match="one value"):
        plots.scores_vs_means(np.zeros(2), np.zeros(3), np.zeros(3), ["a"] * 3, sigma=1.0)


def test_long_titles_wrap_and_make_room():
    assert plots.wrap_title("a b c", 3) == "a b<br>c"
    # a short formula stays on one line (the audit saw "log p(x |" / "θ)" and "k" / "= 1, 3, 5, 10")
    title = plots.wrap_title("Objective: log-likelihood log p(F | θ) + log prior", 36)
    assert "p(F | θ)" in title.replace("<br>", "\n").splitlines()[1]
    assert "for k = 1," in plots.wrap_title("Fig. 4: error of the estimate against n, for k = 1, 3, 5, 10", 40)
    assert plots.wrap_title("a (b c d e f g h i j k l m n o p q)", 10).count("<br>") >= 2  # a long group breaks
    fig = plots.confusion_grid(np.tile(np.eye(2), (2, 1, 1)), ["w0", "w1"], ["0", "1"])
    assert "<br>" in fig.layout.title.text and fig.layout.margin.t >= 70
    # the posterior heatmap's class ticks sit on top, under the title: two title lines must not cover them
    q = np.array([[0.2, 0.8], [0.6, 0.4]])
    short = plots.posterior_heatmap(q, ["a", "b"], ["0", "1"], title="Posterior q")
    long = plots.posterior_heatmap(
        q, ["a", "b"], ["0", "1"], title="Posterior q at snapshot 6 (rows: items, columns: classes)"
    )
    assert long.layout.title.text.count("<br>") == 1
    assert long.layout.margin.t >= 30 + 20 * 2 + plots.common.TOP_TICKS > short.layout.margin.t


def test_legends_sit_below_the_axis_titles(run):
    """Every figure with a legend puts it at the bottom of the figure (container coordinates), in a margin kept
    for it, so it never lands on the x axis title."""
    import pandas as pd

    from crowdlab.plots import data as figs

    table = pd.DataFrame(
        {
            "init": ["majority", "random"],
            "seed": [0, 1],
            "objective": [-1.0, -2.0],
            "iterations": [3, 4],
            "optimum": [0, 1],
            "accuracy": [0.9, 0.1],
            "relabelled": [False, True],
        }
    )
    sweep = pd.DataFrame({"prior": [0.0, 1.0], "objective": [-1.0, -1.5], "accuracy": [0.8, 0.85]})
    balance = pd.DataFrame({"class": ["a", "b"], "labels": [3, 4], "gold": [1, 2]})
    xs = np.linspace(0, 1, 5)
    figures = [
        plots.objective_curve(run.history(), 1),
        plots.metric_curve([0, 1], {"accuracy": [0.5, 0.6], "macro F": [0.4, 0.5]}, 1),
        plots.reliability_scatter(np.arange(1.0, 5.0), np.full(4, 0.5), list("abcd"), highlight=[1]),
        plots.class_prior_bars(np.array([0.4, 0.6]), ["a", "b"], reference=np.array([0.5, 0.5])),
        plots.objective_contour(xs, xs, -np.add.outer(xs, xs), [0.5, 0.6], [0.5, 0.4]),
        plots.restart_scatter(table),
        plots.prior_sweep_figure(sweep),
        plots.scores_vs_means(np.zeros(2), np.ones(2), np.ones(2), ["a", "b"], sigma=0.1),
        figs.class_balance_bars(balance),
        figs.score_histogram(np.linspace(0, 1, 20), np.linspace(0.2, 0.8, 5)),
    ]
    for fig in figures:
        assert sum(t.showlegend is not False for t in fig.data) >= 2
        legend = fig.layout.legend
        assert (legend.yref, legend.yanchor, legend.y, legend.orientation) == ("container", "bottom", 0, "h")
        assert fig.layout.margin.b >= 80, fig.layout.title.text


def test_spam_chart_credible_whiskers():
    """MACE's spam chart with an interval (MACE by variational Bayes): each whisker reaches exactly its worker's
    interval ends, and the hover says so; without one, no whiskers."""
    from crowdlab.plots.models import spam_chart

    p = np.array([0.1, 0.9, 0.4, 0.7])
    lo, hi = p - np.array([0.05, 0.1, 0.2, 0.3]), np.minimum(p + 0.08, 1.0)
    fig = spam_chart(p, ["a", "b", "c", "d"], np.array([5, 6, 7, 8]), interval=(lo, hi))
    bar = fig.data[0]
    x = np.asarray(bar.x)
    np.testing.assert_allclose(x + np.asarray(bar.error_x.array), hi[[list(p).index(v) for v in x]])
    np.testing.assert_allclose(x - np.asarray(bar.error_x.arrayminus), lo[[list(p).index(v) for v in x]])
    assert list(bar.y) == list(fig.layout.yaxis.categoryarray)
    assert "95% credible" in bar.hovertemplate
    plain = spam_chart(p, ["a", "b", "c", "d"], np.array([5, 6, 7, 8]))
    assert plain.data[0].error_x.array is None and "credible" not in plain.data[0].hovertemplate


def test_spam_by_group_one_row_per_group_counts_the_flagged():
    """The lesson's spam chart: one row per group in the given order, each worker's dot at its P(spamming) and in
    its group's row, the row's label counting the workers above 0.5; its height does not grow with the workers."""
    from crowdlab.plots.models import spam_by_group

    p = np.array([0.9, 0.1, 0.6, 0.2, 0.95, 0.5])
    groups = ["spammer", "expert", "spammer", "novice", "spammer", "expert"]
    fig = spam_by_group(p, groups, list("abcdef"), order=["expert", "novice", "spammer", "other"], height=300)
    dots = fig.data[0]
    assert dots.meta == "spam" and fig.layout.height == 300
    np.testing.assert_allclose(dots.x, p)
    assert list(fig.layout.yaxis.ticktext) == ["expert<br>0 of 2 flagged", "novice<br>0 of 1 flagged",
                                               "spammer<br>3 of 3 flagged"]  # fmt: skip
    rows = np.rint(np.asarray(dots.y)).astype(int)
    assert [["expert", "novice", "spammer"][r] for r in rows] == groups
    assert (np.array(dots.marker.color) == np.where(p > 0.5, dots.marker.color[0], dots.marker.color[1])).all()
    assert spam_by_group(np.array([]), [], []).data == ()
