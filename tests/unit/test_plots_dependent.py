"""crowdlab.plots.dependent: the strip view, the transition heatmap, the graph drawing and the E-step trace
(traces, ranges, row order, colours)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.plots import dependent as figs


def _by_meta(fig, meta):
    found = [t for t in fig.data if t.meta == meta]
    assert len(found) == 1, f"expected one trace with meta {meta!r}, got {[t.meta for t in fig.data]}"
    return found[0]


def _zcolor(trace, k: int) -> str:
    """The colour the stepped colour scale gives to class code k: one flat step per class on [zmin, zmax]."""
    K = round(trace.zmax - trace.zmin)
    (a, ca), (b, cb) = trace.colorscale[2 * k], trace.colorscale[2 * k + 1]
    assert (a, b) == pytest.approx((k / K, (k + 1) / K)) and ca == cb
    assert trace.zmin + (trace.zmax - trace.zmin) * a <= k <= trace.zmin + (trace.zmax - trace.zmin) * b
    return ca


def test_class_colors_are_stable_distinct_and_grey_the_background():
    c = figs.class_colors(4)
    assert c == list(figs.PALETTE[:4]) and len(set(c)) == 4
    assert figs.class_colors(4, background=2)[2] == figs.BACKGROUND_COLOR
    assert figs.class_colors(4, background=2)[:2] == c[:2]
    assert len(figs.class_colors(25)) == 25  # cycles past the palette


def test_sequence_strip_rows_top_down_colours_and_mistakes():
    truth = np.array([0, 0, 1, 1, 2, -1])
    rows = {"truth": truth, "mv": np.array([0, 1, 1, 1, 0, 2]), "hmm": np.array([0, 0, 1, 1, 2, 2])}
    fig = figs.sequence_strip(rows, ["a", "b", "c"], positions=np.arange(10, 16), confidence={"hmm": np.ones(6)})
    strip = _by_meta(fig, "strip")
    # rows in the order given, row 0 on top (the y range runs from the last row down to the first)
    assert list(fig.layout.yaxis.ticktext) == ["truth", "mv", "hmm"]
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2]
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]
    z = np.array(strip.z, dtype=object)
    assert z.shape == (3, 6) and z[0, 5] is None  # unknown truth is blank
    assert list(strip.x) == list(range(10, 16))
    assert tuple(fig.layout.xaxis.range) == (9.5, 15.5)
    # class k is painted in class_colors[k], whatever the classes present
    colors = figs.class_colors(3)
    assert [_zcolor(strip, k) for k in range(3)] == colors
    assert strip.showscale is False
    legend = [t for t in fig.data if str(t.meta).startswith("legend:")]
    assert [t.name for t in legend] == ["a", "b", "c"] and [t.marker.color for t in legend] == colors
    # mistakes: mv wrong at positions 11 and 14, unknown truth (15) is not a mistake; hmm never wrong
    mistakes = _by_meta(fig, "mistakes")
    cells = sorted(zip(np.round(np.array(mistakes.x) - figs.MARK_OFFSET).astype(int), np.round(mistakes.y).astype(int)))
    assert cells == [(11, 1), (14, 1)]
    assert np.array(strip.text).shape == (3, 6)  # short names: written on the cells


def test_sequence_strip_draws_every_column_whole_with_its_marks():
    truth = np.zeros(40, dtype=np.int64)
    mv = truth.copy()
    mv[[0, 39]] = 1  # mistakes in the first and the last column
    fig = figs.sequence_strip({"truth": truth, "mv": mv}, ["a", "b"], positions=np.arange(100, 140))
    lo, hi = fig.layout.xaxis.range
    assert lo <= 100 - 0.5 and hi >= 139 + 0.5  # every position's whole cell, the last one's too
    assert list(_by_meta(fig, "strip").x) == list(range(100, 140))
    mistakes = _by_meta(fig, "mistakes")
    assert max(mistakes.x) == pytest.approx(139 + figs.MARK_OFFSET)
    assert mistakes.cliponaxis is False  # the last column's marks poke past the plot area: drawn whole


@pytest.mark.parametrize("title", ["short", "sequence " + "a_long_uploaded_sentence_name " * 4 + "at snapshot 12"])
def test_sequence_strip_title_sits_above_its_legend(title):
    classes = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
    truth = np.arange(18) % 9
    fig = figs.sequence_strip({"truth": truth, "mv": (truth + 1) % 9}, classes, title=title, legend_width=350)
    lines = fig.layout.title.text.count("<br>") + 1
    rows = figs._legend_rows(["≠ truth", *classes], 350)
    assert rows >= 2 and (lines > 1) == (len(title) > 56)
    # the legend sits on the plot area (y = 1, anchored at its bottom); the title's first line on top of the legend
    # and the lines that hang below it, all inside a top margin that holds the title and the legend
    assert (fig.layout.legend.y, fig.layout.legend.yanchor) == (1.0, "bottom")
    t = fig.layout.title
    assert (t.yref, t.y, t.yanchor) == ("paper", 1.0, "bottom")
    assert t.pad.b >= figs.STRIP_LEGEND_ROW * rows + figs.STRIP_TITLE_LINE * (lines - 1)
    assert fig.layout.margin.t >= t.pad.b + figs.STRIP_TITLE_LINE


def test_sequence_strip_without_truth_has_no_mistakes_and_long_strips_have_no_text():
    rows = {"mv": np.zeros(80, dtype=int), "hmm": np.ones(80, dtype=int)}
    fig = figs.sequence_strip(rows, ["first class", "second class"])
    assert not [t for t in fig.data if t.meta == "mistakes"]
    assert _by_meta(fig, "strip").text is None


def test_transition_heatmap_is_fixed_to_0_1_rows_top_down_with_from_to_axes():
    T = np.array([[0.9, 0.2], [0.1, 0.8]])  # T[to, from]: columns sum to one
    fig = figs.transition_heatmap(T, ["x", "y"], title="T")
    heat = _by_meta(fig, "T")
    np.testing.assert_array_equal(np.array(heat.z), T)
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert fig.layout.yaxis.autorange == "reversed"
    assert "from" in fig.layout.xaxis.title.text and "to" in fig.layout.yaxis.title.text
    assert list(np.array(heat.text).ravel()) == ["0.90", "0.20", "0.10", "0.80"]
    assert figs.transition_heatmap(np.eye(12), [str(k) for k in range(12)]).data[0].text is None
    with pytest.raises(ValueError):
        figs.transition_heatmap(np.ones((2, 3)), ["a", "b"])


NER_TAGS = ["B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER", "O"]


def test_transition_heatmap_of_nine_tags_is_readable_across_the_tabs():
    """Audit (CoNLL NER, 1024 px): two 9 x 9 maps side by side were ~90 px wide, their numbers ran together and
    only every other "from" label showed. Given the width it is drawn at, the map writes numbers only where they
    fit a cell at 14 px (presenter mode's size), labels every class and grows with its cells."""
    T = np.full((9, 9), 1 / 9)
    T[8, 0] = 1.0
    full = figs.transition_heatmap(T, NER_TAGS, width_px=560)
    heat = _by_meta(full, "T")
    cell = figs.transition_cell_px(9, NER_TAGS, 560)
    assert cell >= 1.96 * 14 + 4 and np.asarray(heat.text)[8, 0] == "1.00" and heat.textfont.size == 12
    for axis in (full.layout.xaxis, full.layout.yaxis):  # every class labelled
        assert list(axis.tickvals) == NER_TAGS and list(axis.ticktext) == NER_TAGS
    assert full.layout.height >= 9 * 36  # the cells keep a readable height
    half = figs.transition_heatmap(T, NER_TAGS, width_px=270)
    assert half.data[0].text is None  # ~14 px cells: no number fits, the hover keeps them
    assert half.layout.xaxis.tickangle == -90
    # the old call (the lessons' fixed-size chart) is unchanged: numbers in plotly's own size
    assert figs.transition_heatmap(T, NER_TAGS).data[0].textfont.size is None


def test_fitting_cell_text_drops_the_leading_zero_before_the_number():
    z = np.array([[0.444, 1.0], [0.05, 0.999]])
    assert figs.fitting_cell_text(z, 40, 14).tolist() == [["0.44", "1.00"], ["0.05", "1.00"]]
    assert figs.fitting_cell_text(z, 25, 14).tolist() == [[".44", "1"], [".05", "1"]]
    assert figs.fitting_cell_text(z, 20, 14) is None
    assert figs.fitting_cell_text(z, 25, 10).tolist()[0][0] == "0.44"  # smaller text: the full form fits


def test_network_figure_colours_opacity_edges_and_wrong_rings():
    pos = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], dtype=float)
    edges = np.array([[0, 1], [1, 3], [2, 3]])
    labels = np.array([0, 0, 1, 1])
    conf = np.array([1.0, 0.5, 0.05, 0.9])
    wrong = np.array([False, True, False, False])
    fig = figs.network_figure(pos, edges, labels, conf, ["p", "q", "r"], wrong=wrong)
    e = _by_meta(fig, "edges")
    ex = np.array(e.x, dtype=float)
    assert ex.size == 9 and np.isnan(ex[2::3]).all()  # one segment per edge, broken by gaps
    assert list(ex[3:5]) == [1.0, 1.0]
    p, q = _by_meta(fig, "class:p"), _by_meta(fig, "class:q")
    assert list(p.x) == [0, 1] and list(q.y) == [1, 1]
    colors = figs.class_colors(3)
    assert (p.marker.color, q.marker.color) == (colors[0], colors[1])
    np.testing.assert_allclose(p.marker.opacity, [1.0, 0.5])
    np.testing.assert_allclose(q.marker.opacity, [0.15, 0.9])  # floored so an unsure node stays visible
    legend = [t for t in fig.data if str(t.meta).startswith("legend:")]
    assert [t.marker.color for t in legend] == colors and not p.showlegend  # solid legend markers
    ring = _by_meta(fig, "wrong")
    assert list(ring.x) == [1] and ring.marker.symbol == "circle-open"
    assert ring.marker.color not in colors
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.xaxis.visible is False
    assert [t for t in fig.data if t.meta == "wrong"] and "wrong" not in {
        t.meta for t in figs.network_figure(pos, edges, labels, conf, ["p", "q"]).data
    }
    with pytest.raises(ValueError):
        figs.network_figure(pos, edges, labels[:3], conf, ["p", "q"])


def test_sweep_trace_shows_the_gain_over_the_start_and_a_message_when_empty():
    fig = figs.sweep_trace([-100.0, -90.0, -89.5, -89.5], y_title="J")
    tr = _by_meta(fig, "trace")
    np.testing.assert_allclose(tr.y, [0.0, 10.0, 10.5, 10.5])
    np.testing.assert_allclose(tr.customdata, [-100.0, -90.0, -89.5, -89.5])
    assert list(tr.x) == [0, 1, 2, 3]
    end = _by_meta(fig, "end")
    assert (end.x[0], end.y[0]) == (3, 10.5)
    assert fig.layout.yaxis.title.text.startswith("J")
    empty = figs.sweep_trace([])
    assert not empty.data and "No E-step yet" in empty.layout.annotations[0].text
