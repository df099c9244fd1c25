"""Accelerated EM (SQUAREM, `crowdlab.engines.accel`): the same fixed point as plain EM, monotone, counted, the
default of the front doors; its stopping rule (gap estimate and maximum check) and the flat-objective stop."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import crowdlab as cl
from crowdlab.engines.accel import gap_estimate, null_objective
from crowdlab.engines.run import Run
from crowdlab.frames import from_dataframe
from crowdlab.io.samples import load_sample
from crowdlab.models import make_model
from crowdlab.models.base import from_free, to_free
from tests.unit.problems import DESIGNS, random_problem

MODELS = ("ds", "one_coin", "two_coin", "mace", "mace_vb", "ibcc", "ebcc", "glad")
SETS = ("patients", "rte", "bluebirds", "dogs", "simulated")


def _applies(method, data) -> bool:
    return not (method == "two_coin" and data.n_classes != 2)


def _plain_to_its_fixed_point(data, method, **kw):
    return cl.fit(data, method, accelerate=False, tol=1e-12, max_iter=20000, restarts=1, **kw)


def _assert_same_fixed_point(fast, plain):
    rel = (fast.last.objective - plain.last.objective) / abs(plain.last.objective)
    if fast.acceleration.saddles and rel > 0:  # it left a saddle plain EM stopped at, and says so
        return
    assert abs(rel) <= 1e-6, (fast.last.objective, plain.last.objective, fast.acceleration.summary())


@pytest.mark.parametrize("method", MODELS)
@pytest.mark.parametrize("key", SETS)
def test_the_accelerated_fit_ends_at_plain_ems_fixed_point_on_the_bundled_sets(key, method):
    data = load_sample(key)
    if not _applies(method, data):
        pytest.skip("two-coin is for two classes")
    fast = cl.fit(data, method, restarts=1)  # one start each: the same start as the plain fit
    assert fast.acceleration is not None and fast.stop_reason == "converged"
    _assert_same_fixed_point(fast, _plain_to_its_fixed_point(data, method))
    # monotone: no violation, the complete states' objectives never fall; every evaluation counted
    assert fast.violations == []
    assert np.all(np.diff(fast.objective_history()) >= -1e-9 * abs(fast.last.objective))
    acc = fast.acceleration
    assert acc.evaluations == fast.last.iteration + acc.check["evaluations"]  # the last check's are not stored
    assert acc.check["passed"] and acc.gap <= 1e-8 * 1e4
    assert 0 <= acc.fallbacks <= acc.cycles


def test_the_bundled_simulated_crowd_takes_far_fewer_evaluations():
    data = load_sample("simulated")
    fast, plain = cl.fit(data, "ds"), cl.fit(data, "ds", accelerate=False)
    assert fast.acceleration.evaluations * 10 < plain.last.iteration  # 79 against 5,000-odd


@pytest.mark.parametrize("method", MODELS)
def test_free_coordinates_round_trip(method):
    data = load_sample("rte")
    model = make_model(method)
    params = cl.fit(data, method, max_iter=5, accelerate=False).params
    parts = model.free_parts(params)
    back = model.from_free_parts(params, from_free(to_free(parts), parts))
    for (x, _kind, _axis), (y, _, _) in zip(parts, model.free_parts(back), strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-12)


def test_hard_em_and_models_without_coordinates_run_plain():
    data = load_sample("rte")
    assert cl.fit(data, "ds", hard=True).acceleration is None
    assert cl.fit(data, "mv").acceleration is None


def test_step_stays_plain_and_max_iter_bounds_the_evaluations():
    data = load_sample("simulated")
    run = Run(data, make_model("ds"))
    run.step()
    assert not run.last.accelerated and run.last.iteration == 1
    for limit in (1, 2, 7, 40):
        fit = cl.fit(data, "ds", max_iter=limit)
        assert fit.last.iteration == limit and fit.stop_reason == "max_iter"


def test_accelerated_snapshots_are_marked_and_stay_scrubbable():
    data = load_sample("simulated")
    run = Run(data, make_model("ds"))
    run.run(accelerate=True)
    kinds = [s.kind for s in run.snapshots]
    assert all(a != b for a, b in zip(kinds[1:], kinds[2:], strict=False))  # E and M alternate
    marked = [s for s in run.snapshots if s.accelerated]
    assert marked and all(s.kind == "M" for s in marked)
    assert sum(s.accelerated for s in marked) + sum(s.kind == "M" and not s.accelerated for s in run.snapshots) == (
        run.last.iteration
    )
    run.goto(3)
    assert run.current.q is not None
    assert "EM-map evaluations" in run.acceleration.summary()


def test_gap_estimate_is_aitkens():
    gap, limit = gap_estimate(-10.0, -9.0, -8.5)  # gains 1, 0.5: 0.25 + 0.125 + ... = 0.5 left
    assert gap == pytest.approx(0.5) and limit == pytest.approx(-8.0)
    assert gap_estimate(-10.0, -9.9, -9.7)[0] == np.inf  # growing gains: leaving a saddle
    assert gap_estimate(-10.0, -10.0, -10.0)[0] == 0.0


def test_no_signal_is_recognised_early():
    rng = np.random.default_rng(0)
    n = 200_000
    frame = pd.DataFrame({"item": rng.integers(0, 10_000, n), "worker": rng.integers(0, 100, n)})
    frame["label"] = rng.integers(0, 2, n)
    data = from_dataframe(frame)
    run = cl.fit(data, "ds")
    assert run.stop_reason == "no_signal" and run.acceleration.no_signal
    assert run.last.iteration < 1000
    assert (run.last.objective - null_objective(data)) / data.n_obs < 5e-3
    assert "no signal" in run.acceleration.summary()


@pytest.mark.slow
def test_200_seeded_simulated_problems_reach_plain_ems_fixed_point():
    rng = np.random.default_rng(2026)
    for i in range(200):
        K = int(rng.integers(2, 5))
        data = random_problem(rng, int(rng.integers(20, 120)), int(rng.integers(2, 12)), K, DESIGNS[i % len(DESIGNS)])
        method = MODELS[i % len(MODELS)]
        if not _applies(method, data):
            method = "ds"
        fast = cl.fit(data, method, max_iter=20000, restarts=1)
        assert fast.violations == [], (i, method)
        _assert_same_fixed_point(fast, _plain_to_its_fixed_point(data, method))


def _shared() -> Path | None:
    for base in Path(__file__).resolve().parents:
        if (base / "shared" / "datasets").is_dir():
            return base / "shared" / "datasets"
    return None


@pytest.mark.slow
def test_adultcontent_fit_ends_within_a_thousandth_of_a_nat_of_its_fixed_point():
    """Plain EM's default fit said "converged" at iteration 2,138 (-36422.3436) and, stepped on, ends near -36422.2184:
    0.125 nats short. The accelerated fit's stop must be a maximum: 1,000 plain EM steps from it gain < 1e-3."""
    shared = _shared()
    if shared is None or not (shared / "ipeirotis_adultcontent").is_dir():
        pytest.skip("the shared datasets are not beside this checkout")
    data = cl.read_annotations(shared / "ipeirotis_adultcontent" / "labels.csv")
    run = cl.fit(data, "ds")
    acc = run.acceleration
    assert run.stop_reason == "converged" and acc.check["passed"] and acc.gap <= 1e-3
    assert run.last.objective > -36422.2184 - 1e-3
    model, params = make_model("ds"), run.params
    best = run.last.objective
    for _ in range(1000):
        full = model.e_step(data, params)
        best = max(best, model.log_likelihood(data, params))
        params = model.m_step(data, full)
    assert best - run.last.objective < 1e-3


@pytest.mark.parametrize("method", ["ds", "mace", "ibcc"])
def test_a_released_accelerated_point_recomputes_its_own_posterior(method):
    """cl.fit keeps two posteriors; an accelerated "M" point's posterior is the E-step at its own parameters, not
    the E snapshot's before it (which a plain M-step would keep): run.snapshot(i) gives the numbers the run had."""
    data = load_sample("bluebirds")
    kept = Run(data, make_model(method), "majority", tol=1e-8)
    kept.run(accelerate=True)
    released = cl.fit(data, method, restarts=1)
    assert len(released.snapshots) == len(kept.snapshots)
    points = [s.index for s in kept.snapshots if s.accelerated][:-2]
    assert points and all(released.snapshots[i].q is None for i in points)  # released: recomputed on demand
    for i in points:
        np.testing.assert_allclose(released.snapshot(i).q, kept.snapshots[i].q, rtol=1e-12, atol=1e-300)


@pytest.mark.slow
def test_a_model_far_below_the_null_fit_is_not_called_signal_free():
    """One-coin on TREC 2010 ends 0.31 nats per label *below* the null fit (the workers' own answer shares, which
    one-coin cannot express): the flat-objective rule took that for "within 5e-3 of the null" and stopped at
    evaluation 60 saying the labels carry no signal. It must run to a checked maximum, at least as high as plain
    EM's stop."""
    shared = _shared()
    if shared is None or not (shared / "trec2010_relevance").is_dir():
        pytest.skip("the shared datasets are not beside this checkout")
    data = cl.read_annotations(shared / "trec2010_relevance" / "labels.csv")
    run = cl.fit(data, "one_coin")
    assert run.stop_reason == "converged" and not run.acceleration.no_signal and run.acceleration.check["passed"]
    assert (run.last.objective - null_objective(data)) / data.n_obs < -0.3
    assert run.last.objective >= cl.fit(data, "one_coin", accelerate=False).last.objective - 1e-6
