"""The stepping contract of crowdlab.engines.run.Run: half-steps, back, scrub, reset, run, reuse of snapshots."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.engines.run import Run
from crowdlab.errors import ModelError
from crowdlab.models import DawidSkene, MajorityVote, OneCoin, TwoCoin, make_model
from tests.unit.problems import random_problem


@pytest.fixture
def data():
    return random_problem(np.random.default_rng(1), 60, 6, 3, "sparse")


def test_half_steps_alternate_and_count_iterations(data):
    run = Run(data, DawidSkene())
    assert run.current.kind == "init" and run.next_kind == "E"
    run.e_step()
    assert run.current.kind == "E" and run.iteration == 0 and run.next_kind == "M"
    with pytest.raises(ValueError):
        run.e_step()
    run.m_step()
    assert run.current.kind == "M" and run.iteration == 1
    run.step()
    assert run.iteration == 2 and len(run.snapshots) == 5


def test_e_step_keeps_params_m_step_keeps_posterior(data):
    run = Run(data, DawidSkene())
    s0 = run.current
    s1 = run.e_step()
    assert s1.params is s0.params
    s2 = run.m_step()
    assert s2.q is s1.q
    assert not np.allclose(s2.params.gamma, s0.params.gamma)


def test_back_goes_back_one_half_step_without_recomputing(data):
    run = Run(data, DawidSkene())
    run.step()
    run.step()
    snaps = list(run.snapshots)
    run.back()
    assert run.current.kind == "E" and run.current is snaps[3]  # after E, M: back gives "after E"
    run.back()
    assert run.current.kind == "M" and run.iteration == 1
    run.back()
    run.back()
    assert run.index == 0
    run.back()
    assert run.index == 0
    run.step()  # forward again: reuses the stored snapshots
    assert run.current is snaps[2]
    assert len(run.snapshots) == len(snaps)


def test_back_after_e_only_returns_to_before_it(data):
    run = Run(data, DawidSkene())
    run.step()
    run.e_step()
    run.back()
    assert run.current.kind == "M" and run.iteration == 1
    assert run.back().kind == "E"  # the cursor moves like the scrubber: one snapshot


def test_goto_and_reset(data):
    run = Run(data, DawidSkene())
    run.run(max_iter=5)
    assert run.iteration == 5
    run.goto(3)
    assert run.index == 3 and run.current is run.snapshots[3]
    run.goto(999)
    assert run.at_end
    run.reset()
    assert run.index == 0 and len(run.snapshots) == 1


def test_run_converges_and_reports_progress(data):
    run = Run(data, DawidSkene(), tol=1e-10, max_iter=500)
    seen = []
    run.run(progress=lambda i, n: seen.append(i))
    # converged, or stalled: the objective no longer rises above rounding while a parameter drifts along a flat
    # direction (sparse data: a confusion entry creeping to 0)
    assert run.stop_reason in ("converged", "stalled")
    assert seen == list(range(1, run.iteration + 1))
    h = run.objective_history()
    assert abs(h[-1] - h[-2]) <= 1e-10 * abs(h[-1])


def test_run_can_be_stopped(data):
    run = Run(data, DawidSkene(), tol=0.0, max_iter=500)
    run.run(should_stop=lambda: run.iteration >= 3)
    assert run.iteration == 3


def test_changed_marks_items_whose_label_flipped(data):
    run = Run(data, DawidSkene())
    prev = run.current
    s = run.e_step()
    flipped = np.flatnonzero(np.argmax(s.q, 1) != np.argmax(prev.q, 1))
    np.testing.assert_array_equal(s.changed, flipped)


def test_param_init_starts_with_m_step(data):
    base = Run(data, OneCoin())
    base.run()
    run = Run(data, DawidSkene(), "params", params=base.params)
    assert run.next_kind == "M"
    np.testing.assert_allclose(run.current.q, OneCoin().e_step(data, base.params))
    run.step()
    assert run.current.kind == "M"
    run.back()
    assert run.index == 0


def test_start_from_another_models_posterior(data):
    one = Run(data, OneCoin())
    one.run()
    run = Run(data, DawidSkene(), "posterior", q0=one.posterior)
    np.testing.assert_allclose(run.current.q, one.posterior)
    assert "Another model" in run.start_description


def test_random_init_is_reproducible(data):
    a = Run(data, DawidSkene(), "random", seed=5)
    b = Run(data, DawidSkene(), "random", seed=5)
    c = Run(data, DawidSkene(), "random", seed=6)
    np.testing.assert_array_equal(a.current.q, b.current.q)
    assert not np.allclose(a.current.q, c.current.q)


def test_majority_vote_is_one_snapshot(data):
    run = Run(data, MajorityVote())
    assert not run.iterative and run.converged
    run.step()
    run.run()
    assert len(run.snapshots) == 1 and run.current.objective is None


def test_two_coin_refuses_three_classes(data):
    with pytest.raises(ModelError, match="two classes"):
        Run(data, TwoCoin())


def test_unknown_method_and_init_have_clear_errors(data):
    with pytest.raises(ModelError, match="Unknown method"):
        make_model("nope")
    with pytest.raises(ModelError, match="Unknown initialisation"):
        Run(data, DawidSkene(), "nope")


def test_given_params_are_validated(data):
    from crowdlab.models.params import ClassParams

    bad = ClassParams(np.full(3, 1 / 3), np.ones((data.n_workers, 3, 3)))
    with pytest.raises(ModelError, match="columns summing to 1"):
        Run(data, DawidSkene(), "params", params=bad)


def test_hard_em_posteriors_are_one_hot(data):
    run = Run(data, DawidSkene(hard=True))
    run.run()
    q = run.posterior
    assert set(np.unique(q)) <= {0.0, 1.0}
    assert "complete-data" in run.model.objective_name


def test_keep_posteriors_drops_old_ones_and_recomputes_them_exactly(data):
    full = Run(data, DawidSkene())
    full.run(max_iter=6)
    lean = Run(data, DawidSkene(), keep_posteriors=2)
    lean.run(max_iter=6)
    assert sum(s.q is not None for s in lean.snapshots) <= 3
    np.testing.assert_array_equal(lean.history()["objective"], full.history()["objective"])
    for i in (0, 1, 4, 7):
        np.testing.assert_allclose(lean.goto(i).q, full.snapshots[i].q, atol=1e-12)
    assert lean.violations == []


def test_params_budget_lets_the_oldest_parameter_sets_go_and_keeps_the_numbers(data):
    full = Run(data, DawidSkene())
    full.run(max_iter=30)
    one = full.snapshots[2].params.gamma.nbytes + full.snapshots[2].params.pi.nbytes  # one M-step's parameters
    lean = Run(data, DawidSkene(), keep_posteriors=2, params_budget=3 * one)
    lean.run(max_iter=30)
    n = len(lean.snapshots)
    assert n == len(full.snapshots) == 61
    kept = [i for i, s in enumerate(lean.snapshots) if s.params is not None]
    assert kept[0] == 0 and kept[1:] == list(range(kept[1], n))  # the start, then an unbroken tail
    assert sum(lean.snapshots[i].kind == "M" for i in kept[1:]) <= 4  # the budget (3 sets) and the current one
    np.testing.assert_array_equal(lean.history()["objective"], full.history()["objective"])
    np.testing.assert_array_equal([s.param_change for s in lean.snapshots], [s.param_change for s in full.snapshots])
    np.testing.assert_array_equal(lean.labels(), full.labels())
    np.testing.assert_array_equal(lean.params.gamma, full.params.gamma)
    # the cursor walks back over what is kept (posteriors recomputed exactly), then stops with a clear message
    i = n - 1
    while not lean.released(i - 1):
        np.testing.assert_allclose(lean.back().q, full.snapshots[i - 1].q, atol=1e-12)
        i -= 1
    assert i >= n - 5
    with pytest.raises(ValueError, match=rf"snapshot {i - 1} was let go .* snapshots {i} to {n - 1} are kept"):
        lean.back()
    assert lean.index == i  # the cursor did not move
    with pytest.raises(ValueError, match="params_budget"):
        lean.goto(5)
    np.testing.assert_allclose(lean.goto(0).q, full.snapshots[0].q, atol=1e-12)  # the start always stays
    assert lean.violations == []


def test_fit_bounds_its_parameter_memory_and_keeps_everything_under_the_budget(data, monkeypatch):
    import crowdlab as cl
    from crowdlab.engines import fit as api

    small = cl.fit(data, "ds", max_iter=20, accelerate=False)  # a snapshot per half-step
    assert all(s.params is not None for s in small.snapshots)  # a normal fit is far below 256 MiB
    monkeypatch.setattr(api, "PARAMS_BUDGET", 4 * small.params.gamma.nbytes)
    lean = cl.fit(data, "ds", max_iter=20, accelerate=False)
    assert lean.params_budget == 4 * small.params.gamma.nbytes
    assert sum(s.params is None for s in lean.snapshots) > 20
    np.testing.assert_array_equal(lean.history()["objective"], small.history()["objective"])


def test_objective_after_an_exact_e_step_is_reused_not_recomputed(data):
    run = Run(data, DawidSkene())
    run.step()
    e, m = run.snapshots[1], run.snapshots[0]
    assert e.objective == m.objective
    assert e.bound == pytest.approx(DawidSkene().log_likelihood(data, m.params), rel=1e-12)
