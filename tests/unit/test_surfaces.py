"""Likelihood surfaces of binary Dawid-Skene and the lecture's scores model, and the label-switch detector."""

from __future__ import annotations

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.analysis import surface, sweep
from crowdlab.engines.init import vote_fractions
from crowdlab.io.metrics import accuracy
from crowdlab.io.samples import load_sample
from crowdlab.teaching.simulate import simulate_scores

C = surface.Coord


@pytest.fixture(scope="module")
def lecture():
    sim = simulate_scores(20, 3, 2, seed=0)
    return sim.annotations, cl.fit(sim.annotations, "scores", tol=1e-12)


# ---------------------------------------------------------------------------- binary Dawid-Skene
def test_ds_surface_at_the_mle_is_the_runs_objective(bluebirds):
    run = cl.fit(bluebirds, "ds", tol=1e-12)
    x, y = C("g11", 3), C("g00", 3)
    vx, vy = surface.get_value(run.model, run.params, x), surface.get_value(run.model, run.params, y)
    assert (vx, vy) == (run.params.gamma[3, 1, 1], run.params.gamma[3, 0, 0])
    xs, ys, Z = surface.objective_surface(bluebirds, run.model, run.params, x, y, xs=[vx, 0.5], ys=[vy, 0.3])
    assert Z[0, 0] == pytest.approx(run.last.objective, abs=1e-9)
    assert Z[1, 1] < Z[0, 0] - 1  # another point of the slice is lower
    p = surface.with_value(run.model, run.params, {x: 0.5, y: 0.3})
    np.testing.assert_allclose(p.gamma[3].sum(axis=0), 1.0)  # columns stay distributions
    assert Z[1, 1] == pytest.approx(run.model.log_likelihood(bluebirds, p))


@pytest.mark.parametrize("coords", [(("g11", 2), ("g00", 7)), (("p", -1), ("g11", 0)), (("g00", 1), ("p", -1))])
def test_ds_vectorised_surface_equals_pointwise_likelihood(bluebirds, coords):
    run = cl.fit(bluebirds, "ds", prior=0.5)
    x, y = (C(*c) for c in coords)
    xs, ys, Z = surface.objective_surface(bluebirds, run.model, run.params, x, y, n=5)
    for iy in (0, 2, 4):
        for ix in (1, 3):
            p = surface.with_value(run.model, run.params, {x: xs[ix], y: ys[iy]})
            assert Z[iy, ix] == pytest.approx(run.model.log_likelihood(bluebirds, p), rel=1e-12, abs=1e-8)


def test_ds_converged_path_ends_at_the_top_of_the_slice(bluebirds):
    run = cl.Run(bluebirds, cl.make_model("ds"), "majority", tol=1e-12)
    run.run()
    x, y = C("g11", 5), C("g00", 5)
    xs, ys, Z = surface.objective_surface(bluebirds, run.model, run.params, x, y, n=81)
    iy, ix = np.unravel_index(Z.argmax(), Z.shape)
    px, py, idx = surface.em_path(run, x, y)
    step = xs[1] - xs[0]
    assert abs(xs[ix] - px[-1]) <= step and abs(ys[iy] - py[-1]) <= step
    assert idx[0] == 0 and len(px) == run.last.iteration + 1


# ---------------------------------------------------------------------------- the lecture's scores model
@pytest.mark.parametrize(
    "coords", [(("sigma", -1), ("pi_good", -1)), (("mu", 2), ("sigma", -1)), (("mu", 2), ("mu", 5))]
)
@pytest.mark.parametrize("prior", [0.0, 1.0])
def test_scores_surface_equals_pointwise_likelihood(lecture, coords, prior):
    data, _ = lecture
    run = cl.fit(data, "scores", prior=prior)
    x, y = (C(*c) for c in coords)
    xs, ys, Z = surface.objective_surface(
        data, run.model, run.params, x, y, n=7, x_range=surface.coord_range(run, x), y_range=surface.coord_range(run, y)
    )
    for iy in (0, 3, 6):
        for ix in (1, 5):
            p = surface.with_value(run.model, run.params, {x: xs[ix], y: ys[iy]})
            assert Z[iy, ix] == pytest.approx(run.model.log_likelihood(data, p), rel=1e-12, abs=1e-8)


@pytest.mark.parametrize("coords", [(("sigma", -1), ("pi_good", -1)), (("mu", 2), ("sigma", -1))])
def test_scores_surface_peaks_at_the_fitted_parameters(lecture, coords):
    data, run = lecture
    x, y = (C(*c) for c in coords)
    xr, yr = surface.coord_range(run, x), surface.coord_range(run, y)
    xs, ys, Z = surface.objective_surface(data, run.model, run.params, x, y, n=121, x_range=xr, y_range=yr)
    iy, ix = np.unravel_index(Z.argmax(), Z.shape)
    fx, fy = surface.get_value(run.model, run.params, x), surface.get_value(run.model, run.params, y)
    assert abs(xs[ix] - fx) <= xs[1] - xs[0] and abs(ys[iy] - fy) <= ys[1] - ys[0]
    # and the path starts where the run started (everyone good: sigma from all scores, pi_good 0.5)
    px, py, _ = surface.em_path(run, x, y)
    first = run.snapshots[0].params
    assert (px[0], py[0]) == (surface.get_value(run.model, first, x), surface.get_value(run.model, first, y))
    assert xr[0] <= px.min() and px.max() <= xr[1] and yr[0] <= py.min() and py.max() <= yr[1]


def test_scores_coordinates_and_labels(lecture):
    data, run = lecture
    coords = surface.coords_for("scores", data.n_workers, data.n_items)
    assert coords[:2] == [C("sigma"), C("pi_good")] and len(coords) == 2 + data.n_items
    assert coords[2].label(data) == f"μ ({data.item_names[0]})" and C("pi_good").label(data) == "π_good"
    assert surface.coord_range(run, C("mu", 0)) == (0.0, 1.0)  # the lecture's score range


# ---------------------------------------------------------------------------- label switching
def test_label_switch_fires_on_a_mirrored_bluebirds_run_and_not_on_the_default(bluebirds):
    default = cl.fit(bluebirds, "ds")
    assert sweep.label_switch(bluebirds, default.labels()) is None
    mirrored = cl.fit(bluebirds, "ds", init="posterior", q0=vote_fractions(bluebirds)[:, ::-1])
    assert mirrored.last.objective == pytest.approx(default.last.objective)  # a mirror: the same objective
    found = sweep.label_switch(bluebirds, mirrored.labels())
    assert found is not None and list(found.perm) == [1, 0]
    assert found.accuracy < 0.2 and found.accuracy_mapped == pytest.approx(accuracy(default.labels(), bluebirds.gold))
    assert found.agree < 0.2 < 0.8 < found.agree_mapped
    assert found.mapping(bluebirds.class_names) == [("0", "1"), ("1", "0")]


def test_label_switch_without_gold_and_never_for_scores():
    patients = load_sample("patients")
    run = cl.fit(patients, "ds")
    assert sweep.label_switch(patients, run.labels()) is None
    cycled = cl.fit(patients, "ds", init="posterior", q0=vote_fractions(patients)[:, [1, 2, 3, 0]])
    found = sweep.label_switch(patients, cycled.labels())
    assert found is not None and found.accuracy is None  # no gold: the evidence is the agreement
    scores = simulate_scores(10, 2, 1, seed=1).annotations
    assert sweep.label_switch(scores, np.zeros(scores.n_workers, dtype=int)) is None


# ---------------------------------------------------------------------------- a collapsed class prior
def test_prior_collapse_fires_on_one_coin_bluebirds_and_not_on_dawid_skene(bluebirds):
    """One-coin on bluebirds climbs to pi = (0.972, 0.028) and calls 97 % of the photos class 0 (accuracy 0.583,
    majority vote 0.759); Dawid-Skene keeps pi near the gold share (0.564, 0.436)."""
    oc = cl.fit(bluebirds, "one_coin")
    found = sweep.prior_collapse(bluebirds, oc.params.pi, oc.labels())
    assert found is not None and found.k == 1
    assert found.pi == pytest.approx(oc.params.pi[1]) and found.pi < 0.05
    assert found.mv_share == pytest.approx(32 / 108) and found.share == pytest.approx(3 / 108)
    assert found.accuracy == pytest.approx(0.583, abs=1e-3) and found.mv_accuracy == pytest.approx(0.759, abs=1e-3)
    ds = cl.fit(bluebirds, "ds")
    assert sweep.prior_collapse(bluebirds, ds.params.pi, ds.labels()) is None
    # at the start (majority vote's own prior) nothing has collapsed
    assert sweep.prior_collapse(bluebirds, oc.snapshots[0].params.pi, oc.labels()) is None


def test_prior_collapse_thresholds_and_inputs_it_ignores():
    patients = load_sample("patients")  # no gold
    mv_share = np.bincount(cl.fit(patients, "mv").labels(), minlength=4) / patients.n_items
    k = int(np.argmax(mv_share))
    pi = np.full(4, 1.0 / 3)
    pi[k] = 0.2 * mv_share[k]
    pi /= pi.sum()
    found = sweep.prior_collapse(patients, pi, np.zeros(patients.n_items, dtype=int))
    assert found is not None and found.k == k and found.accuracy is None
    assert sweep.prior_collapse(patients, pi, np.zeros(patients.n_items, dtype=int), ratio=0.1) is None
    # a class majority vote gives fewer than min_share of the items is not watched
    rare = int(np.argmin(mv_share))
    pi = mv_share.copy()
    pi[rare] = 0.0
    assert mv_share[rare] < 0.1  # 1 patient of 45
    assert sweep.prior_collapse(patients, pi, np.zeros(patients.n_items, dtype=int)) is None
    assert sweep.prior_collapse(patients, pi, np.zeros(patients.n_items, dtype=int), min_share=0.01).k == rare
    assert sweep.prior_collapse(patients, np.array([0.5, 0.5]), np.zeros(patients.n_items, dtype=int)) is None
    assert sweep.prior_collapse(patients, np.full(4, np.nan), np.zeros(patients.n_items, dtype=int)) is None
