"""Moment matching (Traganitis & Giannakis, Secs. 3.2, 4.2): simplex projection, sample moments, eq. (17)'s fit, the
transition estimate of eqs. (21)-(23) and the "moments" initialisation of EM."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from crowdlab.engines.init import INITS, initialise
from crowdlab.engines.moments import (
    _majority_start,
    _Objective,
    fit_moments,
    hmm_moment_params,
    lagged_moments,
    moment_estimates,
    moment_objective,
    population_moments,
    project_simplex,
    sample_moments,
    transition_estimate,
)
from crowdlab.engines.run import Run
from crowdlab.errors import ModelError
from crowdlab.io.data import Annotations
from crowdlab.io.metrics import confusion_error
from crowdlab.models import (
    GLAD,
    IBCC,
    MACE,
    DawidSkene,
    GoodBadScores,
    HMMCrowd,
    MajorityVote,
    NetworkCrowd,
    OneCoin,
    TwoCoin,
)
from crowdlab.models.params import ClassParams
from crowdlab.teaching.simulate import (
    mix_from_counts,
    simulate_crowd,
    simulate_sbm,
    simulate_scores,
    simulate_sequences,
)
from tests.unit.test_em_monotone import _check_run, _problem


def _norm1(A: np.ndarray) -> float:
    """Induced matrix 1-norm (largest absolute column sum)."""
    return float(np.abs(A).sum(axis=0).max())


@pytest.fixture(scope="module")
def crowd_full():
    return simulate_crowd(5000, 10, 3, labels_per_item=10, seed=3)


@pytest.fixture(scope="module")
def crowd_missing():
    return simulate_crowd(5000, 10, 3, labels_per_item=5, seed=3)


@pytest.fixture(scope="module")
def seqs():
    return simulate_sequences(
        500,
        40,
        4,
        10,
        self_transition=None,
        mix=mix_from_counts({"expert": 6, "spammer": 4}),
        expert_accuracy=(0.35, 0.6),
        seed=1,
    )


# ------------------------------------------------------------------ simplex projection
def test_project_simplex_matches_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(60):
        K = int(rng.integers(1, 7))
        v = rng.normal(scale=(0.1, 1.0, 5.0)[trial % 3], size=K) + (trial % 2) * 0.3
        p = project_simplex(v)
        res = minimize(
            lambda x, v=v: ((x - v) ** 2).sum(),
            np.full(K, 1.0 / K),
            jac=lambda x, v=v: 2 * (x - v),
            bounds=[(0, None)] * K,
            constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: np.ones_like(x)}],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        )
        np.testing.assert_allclose(p, res.x, atol=1e-6)
        assert ((p - v) ** 2).sum() <= res.fun + 1e-10  # never worse than the solver


def test_project_simplex_invariants():
    rng = np.random.default_rng(1)
    V = rng.normal(scale=3.0, size=(7, 5, 4))
    P = project_simplex(V, axis=1)  # every V[i, :, j] projected
    assert (P >= 0).all()
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(project_simplex(P, axis=1), P, atol=1e-12)  # idempotent
    for i, j in [(0, 0), (3, 2), (6, 3)]:
        np.testing.assert_allclose(P[i, :, j], project_simplex(V[i, :, j]), atol=1e-14)
    # optimality (variational inequality): (v - p) . (z - p) <= 0 for every z in the simplex
    v, p = V[2, :, 1], P[2, :, 1]
    Z = rng.dirichlet(np.ones(5), size=200)
    assert ((Z - p) @ (v - p)).max() <= 1e-12
    # a point already on the simplex and a shifted copy of it (projection is shift-invariant along 1)
    z = rng.dirichlet(np.ones(6))
    np.testing.assert_allclose(project_simplex(z), z, atol=1e-14)
    np.testing.assert_allclose(project_simplex(z + 3.7), z, atol=1e-12)


# ------------------------------------------------------------------ sample moments
def _tiny_with_repeats_and_gaps() -> Annotations:
    rng = np.random.default_rng(5)
    N, M, K = 40, 5, 3
    item, worker = np.nonzero(rng.random((N, M)) < 0.7)
    rep = rng.random(item.size) < 0.15  # some (item, worker) pairs labelled twice
    item = np.concatenate([item, item[rep]])
    worker = np.concatenate([worker, worker[rep]])
    label = rng.integers(0, K, size=item.size)
    return Annotations(item, worker, label, [str(i) for i in range(N)], [f"w{m}" for m in range(M)], ["a", "b", "c"])


def _explicit_moments(data: Annotations):
    """Eqs. (13)-(15) by explicit loops over items and workers (the reference)."""
    N, M, K = data.n_items, data.n_workers, data.n_classes
    f = np.zeros((N, M, K))
    np.add.at(f, (data.item, data.worker, data.label), 1.0)
    seen = f.sum(axis=2) > 0
    f[seen] /= f[seen].sum(axis=1, keepdims=True)
    mu = {m: f[seen[:, m], m].mean(axis=0) for m in range(M) if seen[:, m].any()}
    S, T = {}, {}
    for a in range(M):
        for b in range(a + 1, M):
            both = seen[:, a] & seen[:, b]
            if both.any():
                S[a, b] = (np.einsum("ni,nj->ij", f[both, a], f[both, b]) / both.sum(), both.sum())
            for c in range(b + 1, M):
                all3 = both & seen[:, c]
                if all3.any():
                    t3 = np.einsum("ni,nj,nl->ijl", f[all3, a], f[all3, b], f[all3, c])
                    T[a, b, c] = (t3 / all3.sum(), all3.sum())
    return mu, S, T


def test_sample_moments_equal_explicit_loops_with_gaps_and_repeats():
    data = _tiny_with_repeats_and_gaps()
    mom = sample_moments(data, max_workers=20)
    mu, S, T = _explicit_moments(data)
    N = data.n_items
    for m, v in mu.items():
        np.testing.assert_allclose(mom.mu[m], v, atol=1e-12)
    assert {tuple(p) for p in mom.pairs} == set(S)
    for p, (a, b) in enumerate(mom.pairs):
        np.testing.assert_allclose(mom.S[p], S[a, b][0], atol=1e-12)
        assert mom.w2[p] * N == pytest.approx(S[a, b][1])
    assert {tuple(t) for t in mom.triples} == set(T)
    for q, (a, b, c) in enumerate(mom.triples):
        np.testing.assert_allclose(mom.T3[q], T[a, b, c][0], atol=1e-12)
        assert mom.w3[q] * N == pytest.approx(T[a, b, c][1])
    # the third order is restricted to the most active workers
    small = sample_moments(data, max_workers=3)
    assert small.triples.shape[0] <= 1 and set(small.triples.ravel()) <= set(small.workers3)
    assert small.workers3.size == 3
    top = np.argsort(-data.labels_per_worker, kind="stable")[:3]
    assert set(small.workers3) == set(top)


def test_population_moments_reproduce_sample_moments():
    """Eqs. (13), (14), (16) at the TRUE parameters match the data's sample moments within sampling error."""
    sim = simulate_crowd(20000, 6, 3, labels_per_item=4, seed=11)  # 4 of 6 workers per item: gaps everywhere
    mom = sample_moments(sim.annotations)
    mu, S, T3 = population_moments(sim.pi, sim.gamma, mom)
    N = sim.annotations.n_items
    for est, pop, w in ((mom.mu, mu, mom.w1), (mom.S, S, mom.w2), (mom.T3, T3, mom.w3)):
        n = (w * N).reshape((-1,) + (1,) * (est.ndim - 1))
        se = np.sqrt(np.maximum(pop * (1 - pop), 1.0 / n) / n)  # binomial standard error of each frequency
        z = np.abs(est - pop) / se
        assert z.max() < 5.0, z.max()
        assert np.abs(est - pop).max() < 0.03
    # and the moments of a wrong parameter set do not match
    wrong = population_moments(sim.pi, sim.gamma[:, :, [1, 0, 2]] * 0.5 + 0.5 / 3, mom)
    assert np.abs(mom.S - wrong[1]).max() > 0.05


# ------------------------------------------------------------------ the fit of eq. (17)
def test_gradient_matches_finite_differences():
    data = _tiny_with_repeats_and_gaps()
    obj = _Objective(sample_moments(data))
    rng = np.random.default_rng(2)
    pi = rng.dirichlet(np.ones(3))
    G = rng.dirichlet(np.ones(3), size=(5, 3)).transpose(0, 2, 1)
    _, dpi, dG = obj(pi, G)
    h = 1e-6
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        fd = (obj(pi + e, G, grad=False) - obj(pi - e, G, grad=False)) / (2 * h)
        assert fd == pytest.approx(dpi[k], rel=1e-5, abs=1e-8)
    for idx in [(0, 0, 0), (1, 2, 1), (4, 1, 2), (3, 0, 2)]:
        E = np.zeros_like(G)
        E[idx] = h
        fd = (obj(pi, G + E, grad=False) - obj(pi, G - E, grad=False)) / (2 * h)
        assert fd == pytest.approx(dG[idx], rel=1e-5, abs=1e-8)


def test_objective_never_increases_and_history_is_g(crowd_missing):
    data = crowd_missing.annotations
    fit = fit_moments(data)
    h = fit.history
    assert h.size == fit.iterations + 1 and fit.iterations > 5
    assert np.all(np.diff(h) <= 0.0)
    assert h[-1] < 0.2 * h[0]
    assert h[0] == pytest.approx(moment_objective(*_majority_start(data), fit.moments), rel=1e-12)
    assert h[-1] == pytest.approx(moment_objective(fit.params.pi, fit.params.gamma, fit.moments), rel=1e-12)
    assert fit.converged
    P = fit.params
    assert (P.gamma >= 0).all() and np.allclose(P.gamma.sum(axis=1), 1.0)
    assert (P.pi >= 0).all() and np.isclose(P.pi.sum(), 1.0)


def test_moment_estimate_recovers_gamma_and_starts_ds_at_the_same_optimum(crowd_full):
    sim, data = crowd_full, crowd_full.annotations
    est = moment_estimates(data)
    err = confusion_error(sim.gamma, est.gamma)
    err_mv = confusion_error(sim.gamma, _majority_start(data)[1])
    assert err < 0.05 and err < 0.25 * err_mv, (err, err_mv)
    np.testing.assert_allclose(est.pi, sim.pi, atol=0.03)
    r_mv = Run(data, DawidSkene(), "majority")
    r_mv.run(tol=1e-10, max_iter=2000)
    r_mm = Run(data, DawidSkene(), "moments")
    r_mm.run(tol=1e-10, max_iter=2000)
    a, b = r_mv.current.objective, r_mm.current.objective
    assert abs(a - b) <= 1e-6 * abs(a)
    assert r_mm.violations == [] and r_mm.start_description == INITS["moments"]
    assert r_mm.snapshots[0].objective > r_mv.snapshots[0].objective  # the moments start much higher


def test_missing_labels_still_recover(crowd_missing):
    sim, data = crowd_missing, crowd_missing.annotations
    assert data.labels_per_item.max() == 5
    est = moment_estimates(data)
    assert confusion_error(sim.gamma, est.gamma) < 0.1
    r_mv = Run(data, DawidSkene(), "majority")
    r_mv.run(tol=1e-10, max_iter=2000)
    r_mm = Run(data, DawidSkene(), "moments")
    r_mm.run(tol=1e-10, max_iter=2000)
    a, b = r_mv.current.objective, r_mm.current.objective
    assert abs(a - b) <= 1e-6 * abs(a)


def test_permutation_ambiguity_is_resolved(crowd_full):
    """Started from a relabelled (column-permuted) point, the fit lands on a permuted solution of the same g;
    the linear_sum_assignment step puts the classes back."""
    data = crowd_full.annotations
    pi0, G0 = _majority_start(data)
    perm = np.array([2, 0, 1])
    plain = fit_moments(data)
    fit = fit_moments(data, start=(pi0[perm], G0[:, :, perm]))
    assert not np.array_equal(fit.permutation, np.arange(3))
    np.testing.assert_allclose(fit.params.gamma, plain.params.gamma, atol=1e-3)
    assert confusion_error(crowd_full.gamma, fit.params.gamma) < 0.05


def test_third_order_subset_and_tiny_crowds():
    sim = simulate_crowd(3000, 12, 3, labels_per_item=6, seed=4)
    fit = fit_moments(sim.annotations, max_workers=5)
    assert fit.moments.workers3.size == 5 and set(fit.moments.triples.ravel()) <= set(fit.moments.workers3)
    assert fit.moments.pairs.shape[0] == 12 * 11 // 2  # second order still over every worker
    assert confusion_error(sim.gamma, fit.params.gamma) < 0.15
    # one or two workers: no triples (or no pairs); still a valid point
    for M in (1, 2):
        d = simulate_crowd(200, M, 3, labels_per_item=M, seed=M).annotations
        p = moment_estimates(d)
        assert np.allclose(p.gamma.sum(axis=1), 1.0) and np.isclose(p.pi.sum(), 1.0)


def test_continuous_scores_are_refused():
    with pytest.raises(ModelError, match="class labels"):
        moment_estimates(simulate_scores(seed=0).annotations)


# ------------------------------------------------------------------ transitions, Sec. 4.2
def _tiny_sequences() -> Annotations:
    rng = np.random.default_rng(9)
    starts = np.array([0, 4, 9, 10, 16])
    N, M, K = 16, 3, 2
    item, worker = np.nonzero(rng.random((N, M)) < 0.7)
    label = rng.integers(0, K, size=item.size)
    return Annotations(
        item,
        worker,
        label,
        [str(i) for i in range(N)],
        ["a", "b", "c"],
        ["0", "1"],
        sequence_starts=starts,
    )


def test_lagged_moments_equal_explicit_loops():
    data = _tiny_sequences()
    pairs, S, w = lagged_moments(data)
    N, M, K = data.n_items, data.n_workers, data.n_classes
    f = np.zeros((N, M, K))
    f[data.item, data.worker, data.label] = 1.0
    seen = f.sum(axis=2) > 0
    cur = np.array([n for n in range(N) if n not in set(data.sequence_starts[:-1])])
    ref = {}
    for m in range(M):
        for mp in range(M):
            ok = cur[seen[cur, m] & seen[cur - 1, mp]]
            if ok.size:
                ref[m, mp] = (np.einsum("ni,nj->ij", f[ok, m], f[ok - 1, mp]) / ok.size, ok.size)
    assert {tuple(p) for p in pairs} == set(ref)
    assert any(a == b for a, b in pairs)  # m = m' is included
    for p, (a, b) in enumerate(pairs):
        np.testing.assert_allclose(S[p], ref[a, b][0], atol=1e-12)
        assert w[p] * cur.size == pytest.approx(ref[a, b][1])


def _stationary(T: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eig(T)
    p = np.abs(np.real(v[:, np.argmin(np.abs(w - 1))]))
    return p / p.sum()


def test_transition_from_true_gamma(seqs):
    T, A = transition_estimate(seqs.annotations, ClassParams(pi=_stationary(seqs.T), gamma=seqs.gamma), return_A=True)
    assert (A >= -1e-15).all() and A.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(T.sum(axis=0), 1.0)
    err = _norm1(T - seqs.T)
    assert err < 0.2, err  # measured 0.12
    np.testing.assert_allclose(A.sum(axis=0), _stationary(seqs.T), atol=0.05)  # pi = 1^T A (eq. (23))


def test_transition_from_moment_estimates(seqs):
    hp = hmm_moment_params(seqs.annotations)
    assert confusion_error(seqs.gamma, hp.gamma) < 0.15  # measured 0.072
    assert _norm1(hp.T - seqs.T) < 0.35  # measured 0.18
    np.testing.assert_allclose(hp.T.sum(axis=0), 1.0)
    uniform = np.full((4, 4), 0.25)
    assert _norm1(hp.T - seqs.T) < 0.6 * _norm1(uniform - seqs.T)


def test_transition_needs_sequences(crowd_missing):
    with pytest.raises(ModelError, match="sequences"):
        transition_estimate(crowd_missing.annotations, moment_estimates(crowd_missing.annotations))


# ------------------------------------------------------------------ EM started from the moments
@pytest.mark.parametrize("model", [DawidSkene(), DawidSkene(prior=1.0), OneCoin(), OneCoin(hard=True), TwoCoin()])
def test_run_from_moments_is_monotone(model):
    sim = simulate_crowd(1500, 8, 2, labels_per_item=4, seed=7)
    run = Run(sim.annotations, model, "moments")
    assert run.next_kind == "M"  # a parameter start
    run.run(max_iter=200)
    _check_run(run)
    assert (run.labels() == sim.truth).mean() > 0.9


def test_one_coin_and_two_coin_conversions():
    data = simulate_crowd(1500, 8, 2, labels_per_item=4, seed=7).annotations
    est = moment_estimates(data)
    theta = np.diagonal(est.gamma, axis1=1, axis2=2) @ est.pi
    p1 = initialise(OneCoin(), data, "moments").params0
    np.testing.assert_allclose(p1.extra["theta"], theta, atol=5e-3)
    fixed = initialise(OneCoin(class_prior=[0.3, 0.7]), data, "moments").params0
    np.testing.assert_allclose(fixed.pi, [0.3, 0.7])
    p2 = initialise(TwoCoin(), data, "moments").params0
    np.testing.assert_allclose(p2.extra["alpha"], est.gamma[:, 1, 1], atol=5e-3)
    np.testing.assert_allclose(p2.extra["beta"], est.gamma[:, 0, 0], atol=5e-3)
    assert p2.pi[1] == pytest.approx(est.pi[1], abs=5e-3)


def test_run_from_moments_on_random_problems():
    for model_cls in (DawidSkene, OneCoin, TwoCoin):
        for seed in range(0, 200, 12):
            data = _problem(seed, binary=model_cls is TwoCoin)
            run = Run(data, model_cls(prior=(0.0, 0.5)[seed % 2]), "moments", max_iter=40)
            run.run()
            _check_run(run)


def test_hmm_from_moments(seqs):
    run = Run(seqs.annotations, HMMCrowd(), "moments")
    start = run.snapshots[0]
    assert "lagged" in run.start_description and start.params.T.shape == (4, 4)
    run.run(max_iter=300)
    assert run.violations == []
    obj = np.array(run.objective_history())
    assert np.all(np.diff(obj) >= -1e-9 * np.abs(obj[:-1]))
    ref = Run(seqs.annotations, HMMCrowd(), "majority")
    ref.run(max_iter=300)
    assert run.current.objective >= ref.current.objective - 1e-6 * abs(ref.current.objective)
    assert _norm1(run.params.T - seqs.T) < 0.15


def test_mrf_from_moments():
    net = simulate_sbm(400, 3, 8, seed=2)
    run = Run(net.annotations, NetworkCrowd(), "moments")
    assert run.snapshots[0].params.state is None
    np.testing.assert_allclose(run.snapshots[0].params.pi, 1.0 / 3)
    run.run(max_iter=30)
    assert (run.labels() == net.truth).mean() > 0.9


@pytest.mark.parametrize("model", [GLAD(), MACE(), IBCC(), MACE(hard=True)])
def test_glad_mace_ibcc_start_from_the_moment_posterior(model):
    """Models not parametrised by (pi, Gamma) start from Dawid-Skene's posterior at the moment estimates, then
    their own M-step (they raised TypeError from params_from before, or read (pi, Gamma) as Dirichlet counts)."""
    sim = simulate_crowd(800, 8, 3, labels_per_item=4, seed=5)
    data = sim.annotations
    start = initialise(model, data, "moments")
    assert start.next_kind == "E" and "Dawid-Skene's posterior" in start.description
    ds = initialise(DawidSkene(), data, "moments").params0
    q_ds = DawidSkene().e_step(data, ds)
    q0 = getattr(start.q0, "q", start.q0)
    if model.hard:
        np.testing.assert_array_equal(q0.argmax(axis=1), q_ds.argmax(axis=1))
    else:
        np.testing.assert_allclose(q0, q_ds, atol=1e-12)
    run = Run(data, model, "moments", max_iter=300)
    run.run()
    assert run.violations == [] and np.isfinite(run.objective_history()).all()
    assert (run.labels() == sim.truth).mean() > 0.85


def test_moments_refused_for_scores_and_majority_vote():
    scores = simulate_scores(seed=0).annotations
    with pytest.raises(ModelError, match="class labels"):
        initialise(GoodBadScores(), scores, "moments")
    with pytest.raises(ModelError, match="class labels"):
        Run(scores, GoodBadScores(), "moments")
    with pytest.raises(ModelError, match="class labels"):
        initialise(MajorityVote(), simulate_crowd(50, 4, 3, seed=0).annotations, "moments")
