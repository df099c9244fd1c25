"""crowdlab.plots: traces, axis ranges, the fixed colour range and the marker positions."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab import plots
from crowdlab.em import Run
from crowdlab.models import DawidSkene, MajorityVote
from crowdlab.simulate import simulate_crowd


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
    # E-steps drawn as diamonds at the half positions
    assert list(obj.marker.symbol[:3]) == ["circle", "diamond", "circle"]
    np.testing.assert_array_equal(obj.x[:4], [0, 0.5, 1, 1.5])
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
    assert [t.meta for t in fig.data] == ["objective", "current"]
    mv = Run(run.data, MajorityVote())
    empty = plots.objective_curve(mv.history(), 0, title="MV")
    assert len(empty.data) == 0
    assert "not iterative" in empty.layout.annotations[0].text


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
    q = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    gold = np.array([0, -1, 1])
    fig = plots.posterior_heatmap(q, ["i0", "i1", "i2"], ["no", "yes"], gold=gold)
    heat = fig.data[0]
    assert heat.type == "heatmap"
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    np.testing.assert_allclose(np.asarray(heat.z), q)
    assert list(heat.y) == ["i0", "i1", "i2"]
    assert fig.layout.yaxis.autorange == "reversed"
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    # gold cells outlined: (class index, item index) = (0, 0) and (1, 2); item i1 has no gold
    boxes = [s for s in fig.layout.shapes if s.name == "gold"]
    assert [((b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2) for b in boxes] == [(0, 0), (1, 2)]
    assert all(b.x1 - b.x0 == 1 and b.y1 - b.y0 == 1 for b in boxes)
    assert heat.text[1][1] == "0.80"


def test_posterior_heatmap_without_gold_and_shape_checks():
    q = np.full((3, 2), 0.5)
    fig = plots.posterior_heatmap(q, ["a", "b", "c"], ["x", "y"])
    assert len(fig.data) == 1 and len(fig.layout.shapes) == 0
    fig = plots.posterior_heatmap(q, ["a", "b", "c"], ["x", "y"], gold=np.array([-1, -1, -1]))
    assert len(fig.data) == 1 and len(fig.layout.shapes) == 0
    with pytest.raises(ValueError, match="names do not match"):
        plots.posterior_heatmap(q, ["a", "b"], ["x", "y"])
