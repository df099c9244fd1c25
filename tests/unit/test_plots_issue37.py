"""What a lecturer notices on the charts (issue 37, section 4): an iteration axis ticks at half-steps at the finest
('iteration 0.3' on a run of one iteration); a long run's curve has no marker per half-step (they merged into a
hatched band); the sequence strip labels every 5th of its 30 positions, level (0-29 rotated onto each other); the
methods' agreement heatmap colours the range of its data (0.80-1.00 was one dark blue on [0, 1]); the copying
heatmap's cell numbers are 16 px in presenter mode (plotly fitted them to 11-14 px)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdlab.plots import common, copying, curves, data, dependent


def _history(n: int) -> dict:
    kind = np.array(["init"] + ["E", "M"] * n)
    iteration = np.array([0] + [i for i in range(n) for _ in (0, 1)])
    obj = -100 + np.cumsum(np.r_[0, np.ones(2 * n)])
    return dict(kind=kind, iteration=iteration, objective=obj, bound=obj - 0.5)


def _ticks(axis, top: float) -> np.ndarray:
    """The tick positions plotly draws over [0, top] for a linear axis with a fixed tick0 / dtick."""
    assert axis.tickmode == "linear" and axis.tick0 == 0, axis
    return np.arange(0.0, top + 1e-9, float(axis.dtick))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 12, 40])
def test_short_runs_tick_only_at_half_steps(n):
    h = _history(n)
    x = common.half_step_positions(h["kind"], h["iteration"])
    figs = [
        curves.objective_curve(h, 0),
        curves.metric_curve(x, {"accuracy": np.linspace(0.5, 0.9, x.size)}, 0.0),
    ]
    for fig in figs:
        ticks = _ticks(fig.layout.xaxis, max(n, 1))
        assert np.allclose(ticks * 2, np.round(ticks * 2)), ticks  # 0, 0.5, 1, ... never 0.2 or 0.3
        assert 2 <= ticks.size <= common.MAX_TICKS + 1


def test_a_run_at_its_start_shows_room_for_the_first_iteration():
    fig = curves.objective_curve(_history(0), 0)
    assert list(fig.layout.xaxis.range) == pytest.approx([-0.04, 1.04])
    h = _history(25)
    top = common.half_step_positions(h["kind"], h["iteration"]).max()
    lo, hi = curves.objective_curve(h, 0).layout.xaxis.range  # fits the run (an updated chart kept a longer one)
    assert -0.05 * top < lo < 0 and top < hi < 1.05 * top


def test_convergence_chart_ticks_at_whole_iterations_on_a_short_run():
    trace = dict(iteration=np.array([1.0]), gain=np.array([1e-3]), param_change=np.array([1e-2]))
    fig = curves.convergence_chart(trace, 1)
    assert fig.layout.xaxis.dtick == 0.5 and fig.layout.xaxis.tick0 == 0


def test_markers_only_on_short_runs():
    short, long = curves.objective_curve(_history(5), 3), curves.objective_curve(_history(1000), 3)
    obj = [t for t in short.data if t.meta == "objective"][0]
    assert "markers" in obj.mode and any(t.meta == "e_steps" for t in short.data)
    obj = [t for t in long.data if t.meta == "objective"][0]
    assert obj.mode == "lines" and not any(t.meta == "e_steps" for t in long.data)
    assert long.layout.xaxis.dtick is None  # plotly's own (whole-iteration) ticks on a long run
    x = np.arange(2001) / 2
    metric = curves.metric_curve(x, {"accuracy": np.full(x.size, 0.8)}, 10.0)
    assert metric.data[0].mode == "lines"


def test_sequence_strip_labels_every_fifth_position_level():
    rows = {"truth": np.arange(30) % 3, "run": np.arange(30) % 2}
    fig = dependent.sequence_strip(rows, ["O", "PER", "LOC"])
    assert fig.layout.xaxis.dtick == 5 and fig.layout.xaxis.tickangle == 0
    short = dependent.sequence_strip({"truth": np.arange(8) % 3}, ["O", "PER", "LOC"])
    assert short.layout.xaxis.dtick == 1


def test_method_agreement_colours_the_range_of_its_data():
    names = ["Majority vote", "Dawid-Skene", "GLAD"]
    narrow = pd.DataFrame([[1.0, 0.83, 0.91], [0.83, 1.0, 0.87], [0.91, 0.87, 1.0]], index=names, columns=names)
    ca = data.method_agreement_heatmap(narrow).layout.coloraxis
    assert (ca.cmin, ca.cmax) == pytest.approx((0.80, 1.0))
    wide = narrow.copy()
    wide.iloc[0, 1] = wide.iloc[1, 0] = 0.32
    assert data.method_agreement_heatmap(wide).layout.coloraxis.cmin == pytest.approx(0.30)
    assert data.agreement_range(np.eye(2) * np.nan) == (0.0, 1.0)
    assert data.agreement_range(np.ones((3, 3))) == pytest.approx((0.95, 1.0))  # all agree: still a range


@pytest.fixture()
def presenter():
    before = common._presenter[0]
    common.presenter_source(lambda: True)
    yield common.PRESENTER_PX
    common.presenter_source(before)


def test_copying_heatmap_numbers_are_16_px_in_presenter_mode(presenter):
    from crowdlab.analysis.dependence import dependence
    from crowdlab.teaching import lessons

    run = lessons.build("judges")
    run.run()
    fig = copying.pair_heatmap(dependence(run))
    heat = fig.data[0]
    assert heat.texttemplate and heat.textfont.size >= presenter
    assert heat.colorbar.tickfont.size >= presenter


def test_a_short_gap_chart_ticks_every_other_decade():
    """Lesson 1 step 9's gap chart, under 100 px high on the projector: six decade labels ran into each other."""
    assert curves.objective_with_gap(_history(5), 3, height=390).layout.yaxis2.dtick == 2
    assert curves.objective_with_gap(_history(5), 3, height=460).layout.yaxis2.dtick == 1


def test_the_gap_axis_writes_plain_numbers():
    """A power's superscript (10⁻³) is drawn at 70 % of the tick size: 14 px on the projector."""
    assert curves.objective_with_gap(_history(5), 3).layout.yaxis2.exponentformat == "none"


def test_likelihood_with_ems_path_keeps_room_for_its_legend():
    """Lesson 3 step 2 draws EM's θ path on the likelihood: five legend entries, three rows in the lesson's column;
    the bottom margin was kept for one, and the x axis title rode onto the tick labels."""
    from crowdlab.plots import risk

    th = np.linspace(0, 1, 51)
    curve = -50 * (th - 0.8) ** 2
    plain = risk.loglik_curves(th, {"n = 500": curve}, theta_true=0.8)
    fig = risk.loglik_curves(th, {"n = 500": curve}, theta_true=0.8, em_path=[0.6, 0.7, 0.78, 0.8])
    assert fig.layout.margin.b >= common.legend_margin(rows=3)["b"] > plain.layout.margin.b
    assert fig.layout.xaxis.title.standoff >= common.X_TITLE_STANDOFF


def test_copying_heatmap_writes_no_negative_zero():
    from types import SimpleNamespace

    kappa = np.array([[np.nan, -0.001, 0.2], [-0.001, np.nan, -0.3], [0.2, -0.3, np.nan]])
    report = SimpleNamespace(
        n_tested=3, worker_names=["a", "b", "c"], kappa_matrix=kappa, a=np.array([0, 0, 1]), b=np.array([1, 2, 2]),
        kappa=np.array([-0.001, 0.2, -0.3]), p_value=np.array([0.5, 0.01, 0.9]), flagged=np.array([0, 1, 0], bool),
        min_shared=10,
    )  # fmt: skip
    text = np.asarray(copying.pair_heatmap(report).data[0].text)
    assert "-0.00" not in text and "0.00" in text and "-0.30" in text
