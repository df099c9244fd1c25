"""The "Batch vs online" page's pure parts (crowdlab.engines.online, crowdlab.plots.online): batch EM of the same model
from the same start as online EM, the progress an online run reports, and the figures (the step size's marker,
the accuracy-vs-B axis and its one-matrix-per-worker point)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.engines.online import OnlineRun, batch_curves, batch_model, bucketed
from crowdlab.engines.run import Run
from crowdlab.models import DawidSkene, OneCoin
from crowdlab.models.online import OnlineDawidSkene, OnlineOneCoin
from crowdlab.plots import online as figs


# ---------------------------------------------------------------------------- batch EM of the same model
@pytest.mark.parametrize("cls", [OnlineDawidSkene, OnlineOneCoin])
@pytest.mark.parametrize("buckets", [None, 4])
@pytest.mark.parametrize("key", ["bluebirds", "rte"])
def test_batch_reference_starts_where_online_em_starts(cls, buckets, key, request):
    """Iteration 0 of the batch reference is online EM's start: the same objective and the same accuracy (it was
    Dawid-Skene from a majority vote, -19.6 / 0.76 on bluebirds against online's -24.4 / 0.76)."""
    data = request.getfixturevalue(key)
    model = cls(buckets=buckets, prior=1.0, passes=2)
    b = batch_curves(data, model)
    start = OnlineRun(data, model).snapshots[0]
    assert b["iteration"][0] == 0 and b["objective"][0] == pytest.approx(start.objective, rel=1e-12)
    assert b["accuracy"][0] == start.accuracy
    assert b["model"] == ("one-coin" if cls is OnlineOneCoin else "Dawid-Skene")
    assert np.all(np.diff(b["objective"]) >= -1e-9 * abs(b["objective"][0]))  # batch EM climbs


def test_batch_reference_is_batch_em_of_the_online_model(bluebirds):
    """One-coin online EM gets batch one-coin EM (not Dawid-Skene): its fixed point, from the same parameters."""
    model = OnlineOneCoin(prior=1.0)
    assert isinstance(batch_model(model), OneCoin) and isinstance(batch_model(OnlineDawidSkene()), DawidSkene)
    assert batch_model(model).prior == 1.0
    b = batch_curves(bluebirds, model)
    stream = model.stream(bluebirds)
    p0 = model.params(stream, model.init_state(stream))
    oc = OneCoin(prior=1.0)
    run = Run(bluebirds, oc, "params", params=oc.params_from(p0.pi, p0.extra["theta"]), max_iter=100)
    run.run()
    np.testing.assert_allclose(b["objective"], run.objective_history(), rtol=1e-12)
    ds = batch_curves(bluebirds, OnlineDawidSkene(prior=1.0))
    assert not np.allclose(ds["objective"][1:5], b["objective"][1:5])


def test_bucketed_data_ties_the_workers_of_a_bucket(rte):
    model = OnlineDawidSkene(buckets=4, seed=3)
    tied = bucketed(rte, model)
    stream = model.stream(rte)
    assert tied.n_workers == len(np.unique(stream.bucket_of_worker)) <= 4
    assert tied.n_obs == rte.n_obs and bucketed(rte, OnlineDawidSkene()) is rte
    np.testing.assert_array_equal(np.unique(stream.bucket_of_worker)[tied.worker], stream.bucket_of_worker[rte.worker])


def test_run_reports_progress_in_updates(bluebirds):
    """``run(progress=...)`` counts updates (its :attr:`progress_unit`), up to the run's total."""
    run = OnlineRun(bluebirds, OnlineDawidSkene(passes=2, batch_size=10))
    seen = []
    run.run(progress=lambda i, n: seen.append((i, n)))
    assert OnlineRun.progress_unit == "update"
    assert seen == [(t, 22) for t in range(1, 23)]  # 2 passes x 11 blocks of 108 items


# ---------------------------------------------------------------------------- figures
def _by_meta(fig, meta: str):
    return next((t for t in fig.data if t.meta == meta), None)


def test_eta_schedule_marks_the_current_update_with_its_step():
    fig = figs.eta_schedule(1.0, 10.0, 0.6, 55, t_now=8)
    now = _by_meta(fig, "now")
    assert now.x == (8,) and now.y[0] == pytest.approx(18**-0.6)
    assert now.name == "now: update 8, ηₜ = 0.1765"
    assert _by_meta(figs.eta_schedule(1.0, 10.0, 0.6, 55), "now") is None


def test_online_curve_names_its_batch_reference():
    fig = figs.online_curve(
        [("online", [0, 10], [1.0, 2.0], "online")], ([0, 100], [1.0, 3.0]), 10.0, title="t", x_max=200,
        y_range=(0.0, 4.0), batch_name="batch one-coin EM, same start",
    )  # fmt: skip
    assert _by_meta(fig, "batch").name == "batch one-coin EM, same start"


def test_accuracy_vs_buckets_labels_every_tick_and_shows_one_matrix_per_worker():
    """The log axis read "1 2 5 10 2 5" (20 and 50 cut to their first digit); now every tick is a value of B written
    whole, and one matrix per worker is a point of its own ("per worker", right of the largest B) and a dotted line
    drawn over batch EM's, visible even where the two are equal."""
    b = [1, 2, 4, 8, 16, 32, 64]
    m = np.linspace(0.80, 0.88, 7)
    fig = figs.accuracy_vs_buckets(
        b, m, m - 0.01, m + 0.01, n_workers=39, per_worker=0.889, batch=0.889, per_worker_range=(0.88, 0.9)
    )
    x = fig.layout.xaxis
    assert list(x.ticktext) == ["1", "2", "4", "8", "16", "32", "64", "per<br>worker"]
    assert list(x.tickvals[:-1]) == b and x.tickvals[-1] > 64 and x.type == "log"
    assert np.log10(x.tickvals[-1]) < x.range[1]
    point = _by_meta(fig, "per_worker_point")
    assert point.x == (x.tickvals[-1],) and point.y == (0.889,) and point.marker.symbol == "diamond"
    assert point.error_y.array[0] == pytest.approx(0.011) and point.error_y.arrayminus[0] == pytest.approx(0.009)
    metas = [t.meta for t in fig.data]
    assert metas.index("per_worker") > metas.index("batch")
    assert _by_meta(fig, "per_worker").line.dash != _by_meta(fig, "batch").line.dash
    lo, hi = fig.layout.yaxis.range
    assert lo < 0.79 and hi > 0.9


def test_bucket_ticks_thin_many_buckets_and_keep_the_largest():
    grid = [2**i for i in range(14)]  # 5,000 workers: B up to 8,192
    ticks = figs.bucket_ticks(grid)
    assert 1 < len(ticks) <= 8 and ticks[-1] == 8192 and set(ticks) <= set(grid)
    fig = figs.accuracy_vs_buckets(grid, np.full(14, 0.5), np.full(14, 0.4), np.full(14, 0.6), n_workers=5000,
                                   per_worker=None, batch=None)  # fmt: skip
    assert "8,192" in fig.layout.xaxis.ticktext and "per<br>worker" not in fig.layout.xaxis.ticktext
