"""GLAD (Whitehill et al. 2009), MACE (Hovy et al. 2013), IBCC (Kim & Ghahramani 2012) and semi-supervised EM:
brute force on tiny problems, closed forms, recovery of simulated parameters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import gammaln

import crowdlab as cl
from crowdlab.engines.run import Run
from crowdlab.errors import ModelError
from crowdlab.io.data import Annotations
from crowdlab.models import GLAD, IBCC, MACE, DawidSkene, OneCoin, make_model
from crowdlab.models.base import WarmPosterior
from crowdlab.models.glad import glad_params
from crowdlab.models.ibcc import accuracy_intervals
from crowdlab.models.mace import mace_params
from tests.unit.problems import random_problem


def _tiny(seed: int = 0, N: int = 5, M: int = 3, K: int = 3) -> Annotations:
    return random_problem(np.random.default_rng(seed), N, M, K, "sparse")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ---------------------------------------------------------------------------------------------- GLAD
def test_glad_likelihood_and_posterior_by_brute_force():
    data = _tiny(1, N=6, M=4, K=3)
    rng = np.random.default_rng(3)
    p = glad_params(rng.dirichlet(np.ones(3)), rng.normal(1, 1, 4), np.exp(rng.normal(0, 0.7, 6)))
    model = GLAD(class_prior="estimate")
    lj = np.zeros((data.n_items, 3))
    for n in range(data.n_items):
        for k in range(3):
            v = p.pi[k]
            for o in np.flatnonzero(data.item == n):
                s = _sigmoid(p.alpha[data.worker[o]] * p.beta[n])  # eq. (1)
                v *= s if data.label[o] == k else (1 - s) / 2
            lj[n, k] = v
    expected = np.log(lj.sum(axis=1)).sum() + model.log_prior(p)
    assert model.log_likelihood(data, p) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(model.e_step(data, p).q, lj / lj.sum(axis=1, keepdims=True), rtol=1e-10)


def test_glad_log_sigmoid_and_observation_terms_match_the_textbook_forms():
    """The shared-log1p forms equal -log(1 + e^-x) and w log sigma(x) + (1 - w) log sigma(-x) over the whole range,
    scalars and integers included."""
    from crowdlab.models.glad import _obs_terms, log_sigmoid

    x = np.concatenate([np.linspace(-800, 800, 4001), [-1e-300, 0.0, 1e-300, 37.0, -37.0]])
    np.testing.assert_allclose(log_sigmoid(x), -np.logaddexp(0.0, -x), rtol=1e-14, atol=1e-300)
    assert log_sigmoid(2.0) == pytest.approx(-np.log1p(np.exp(-2.0)), rel=1e-15)
    np.testing.assert_array_equal(log_sigmoid(np.array([3, -3])), log_sigmoid(np.array([3.0, -3.0])))
    data = random_problem(np.random.default_rng(7), n_items=40, n_workers=6, K=3, design="dense")
    rng = np.random.default_rng(8)
    alpha = rng.normal(0.0, 4.0, data.n_workers)
    b = rng.normal(0.0, 1.5, data.n_items)
    w = rng.random(data.n_obs)
    z = alpha[data.worker] * np.exp(b[data.item])
    want = w * -np.logaddexp(0.0, -z) + (1.0 - w) * -np.logaddexp(0.0, z)
    np.testing.assert_allclose(_obs_terms(data, alpha, b, w, 3), want, rtol=1e-13, atol=1e-300)


def test_glad_m_step_raises_expected_complete_log_likelihood():
    data = random_problem(np.random.default_rng(5), 40, 6, 3, "dense")
    model = GLAD()
    run = Run(data, model)
    for _ in range(3):
        e = run.e_step()
        before = model.complete_objective(data, e.q, e.params)
        m = run.m_step()
        after = model.complete_objective(data, e.q, m.params)
        assert after >= before - 1e-9
        assert after > before  # it is not stuck


def test_glad_step_halving_ignores_rounding_and_bluebirds_converges():
    """Near the optimum a step changes f by less than rounding: it must be taken, not halved away at random (which
    made GLAD's parameter changes wobble at 1e-9 and the stopping rule call bluebirds stalled). The gradient check
    (trapezoid rule with a third-derivative bound) takes it without asking for values at all; a real overshoot is
    halved until it no longer lowers f, and a coordinate the gradient check cannot clear falls back to values."""
    from crowdlab.models.glad_steps import _halving

    def no_values(point, mask):
        raise AssertionError("the gradient check should have sufficed")

    # f(x) = -(x - c)^2 per coordinate (third derivative 0), c = (1e-9, 1e-3), from x = 0
    c = np.array([1e-9, 1e-3])
    x, g0 = np.zeros(2), 2 * c
    out, fresh = _halving(x, np.array([1e-9, 2e-3]), g0, np.zeros(2), lambda a: -2 * (a - c), no_values)
    np.testing.assert_allclose(out, [1e-9, 2e-3])  # taken at once (2e-3 lands where f(0) is)
    assert fresh  # the last gradient was at the result
    seen = []

    def value(point, mask):
        seen.append(mask.copy())
        return np.where(mask, -((point - c) ** 2), np.nan)

    out, _ = _halving(x, np.array([1e-9, 4e-3]), g0, np.zeros(2), lambda a: -2 * (a - c), value)
    np.testing.assert_allclose(out, [1e-9, 2e-3])  # 4x too far: a real fall, halved once
    assert len(seen) == 2  # f at x and at the first candidate, for the coordinate the gradient check refused only
    np.testing.assert_array_equal(seen[0], [False, True])
    # a loose bound refuses what the gradient alone would take: the values decide, and accept a fall within rounding
    f0 = np.array([-2259.744365838259, -1.0])
    out, _ = _halving(
        x,
        np.full(2, 1e-9),
        np.ones(2),
        np.full(2, 1e40),
        lambda a: np.ones(2),
        lambda a, mask: f0 - 2e-16 * abs(f0) * a / 1e-9,
    )
    np.testing.assert_array_equal(out, [1e-9, 1e-9])
    from crowdlab.io.samples import load_sample

    run = cl.fit(load_sample("bluebirds"), "glad", accelerate=False)  # plain EM: its stopping rule
    assert run.stop_reason == "converged" and not run.violations
    d = run.convergence_trace()["param_change"][-11:]
    assert np.all(d[1:] < d[:-1])  # shrinking at every step to the end


class _Wobble(GLAD):
    """GLAD whose M-step ignores q and returns centre + v and centre - v in turn: parameters that move by 2 |v|
    every iteration without shrinking while the objective stays flat to rounding (v is orthogonal to the gradient,
    so the two points' objectives differ by O(|v|^3))."""

    def __init__(self, centre, v):
        super().__init__()
        self.centre, self.v, self.calls = centre, v, 0

    def m_step(self, data, post):
        self.calls += 1
        c = self.centre
        return glad_params(c.pi, c.alpha + (self.v if self.calls % 2 else -self.v), c.beta)


def _wobble_run(data, centre):
    """A plain run of `_Wobble` around ``centre``, v on two workers orthogonal to the gradient there."""
    from crowdlab.models import glad_steps

    model = GLAD()
    w = glad_steps.gather_w(model.e_step(data, centre).q, data)
    g = glad_steps.worker_sums(data, w, centre.alpha, centre.beta)[0] - (centre.alpha - 1.0)
    v = np.zeros(data.n_workers)
    v[0], v[1] = g[1], -g[0]
    v *= 1e-7 / max(np.abs(v).max(), 1e-300)
    run = Run(data, _Wobble(centre, v), max_iter=200)
    run.run()
    return run


def test_glad_stall_at_its_optimum_is_converged_and_away_from_it_stalled():
    """Issue 38, section 4: a plain run whose objective has been flat to rounding for 20 iterations while its
    parameters move without shrinking stops. Where the gradient leaves nothing to gain (GLAD's remaining_gain,
    at most 1e-2 of the tolerance: `crowdlab.engines.run.at_optimum`) that is the optimum: converged; where it
    still promises a gain, an M-step that cannot make progress: stalled."""
    from crowdlab.engines.run import stalled_at
    from crowdlab.io.samples import load_sample

    data = load_sample("bluebirds")
    best = cl.fit(data, "glad", accelerate=False).params
    at = _wobble_run(data, best)
    assert stalled_at(at.snapshots) and at.last.iteration < 30
    assert at.stop_reason == "converged" and at.converged and not at.violations
    assert at.model.remaining_gain(data, at.params) < 1e-9
    away = _wobble_run(data, glad_params(best.pi, best.alpha + 0.3, best.beta))
    assert stalled_at(away.snapshots) and away.last.iteration < 30
    assert away.stop_reason == "stalled" and not away.converged
    assert away.model.remaining_gain(data, away.params) > 1.0


def test_glad_recovers_abilities_and_difficulties():
    rng = np.random.default_rng(0)
    N, M, K = 400, 12, 3
    alpha = np.concatenate([np.full(6, 2.5), np.full(4, 0.8), np.full(2, 0.0)])
    beta = np.where(np.arange(N) < N // 2, 3.0, 0.4)  # easy half, hard half
    z = rng.integers(0, K, N)
    ii, ww = (a.ravel() for a in np.meshgrid(np.arange(N), np.arange(M), indexing="ij"))
    right = rng.random(ii.size) < _sigmoid(alpha[ww] * beta[ii])
    lab = np.where(right, z[ii], (z[ii] + rng.integers(1, K, ii.size)) % K)
    data = Annotations(ii, ww, lab, [f"i{n}" for n in range(N)], [f"w{m}" for m in range(M)], ["a", "b", "c"], gold=z)
    run = cl.fit(data, "glad")
    p = run.params
    assert (run.labels() == z).mean() > 0.9
    assert p.alpha[:6].min() > p.alpha[6:10].max() > p.alpha[10:].max()
    assert np.median(p.beta[: N // 2]) > 2 * np.median(p.beta[N // 2 :])  # easy items have larger beta
    assert run.violations == []


# ---------------------------------------------------------------------------------------------- MACE
def test_mace_likelihood_sums_out_the_spam_indicators():
    """log p(A | theta, xi) by enumerating T_i and every S_ij (Hovy et al. 2013, Fig. 1) equals the model's."""
    data = _tiny(2, N=4, M=3, K=3)
    rng = np.random.default_rng(1)
    theta, xi = rng.uniform(0.1, 0.9, 3), rng.dirichlet(np.ones(3), 3)
    p = mace_params(np.full(3, 1 / 3), theta, xi)
    model = MACE()
    total = 0.0
    for n in range(data.n_items):
        obs = np.flatnonzero(data.item == n)
        pn = 0.0
        for t in range(3):
            for spam in itertools.product((0, 1), repeat=obs.size):
                v = 1 / 3
                for o, s in zip(obs, spam):
                    j, a = data.worker[o], data.label[o]
                    v *= (1 - theta[j]) * xi[j, a] if s else theta[j] * (a == t)
                pn += v
        total += np.log(pn)
    assert model.log_likelihood(data, p) == pytest.approx(total + model.log_prior(p), rel=1e-12)


def test_mace_m_step_raises_q_and_finds_spammers():
    rng = np.random.default_rng(4)
    N, M, K = 300, 10, 4
    theta = np.array([0.95] * 5 + [0.6] * 2 + [0.0] * 3)  # three pure spammers
    xi = rng.dirichlet(np.ones(K) * 0.5, M)
    z = rng.integers(0, K, N)
    ii, ww = (a.ravel() for a in np.meshgrid(np.arange(N), np.arange(M), indexing="ij"))
    spam = rng.random(ii.size) > theta[ww]
    draw = (rng.random(ii.size)[:, None] > np.cumsum(xi[ww], axis=1)).sum(axis=1)
    lab = np.where(spam, np.minimum(draw, K - 1), z[ii])
    data = Annotations(ii, ww, lab, [f"i{n}" for n in range(N)], [f"w{m}" for m in range(M)], list("abcd"), gold=z)
    model = MACE()
    run = Run(data, model)
    e = run.e_step()
    before = model.complete_objective(data, e.q, e.params)
    m = run.m_step()
    assert model.complete_objective(data, e.q, m.params) >= before
    run.run()
    p = run.params
    assert (run.labels() == z).mean() > 0.95
    assert p.spamming[7:].min() > 0.8 and p.spamming[:5].max() < 0.15
    np.testing.assert_allclose(p.theta, theta, atol=0.1)
    assert run.violations == []


# ---------------------------------------------------------------------------------------------- IBCC
def _log_evidence(data: Annotations, model: IBCC) -> float:
    """log p(x) with kappa and every Gamma column integrated out, summing over all K^N true labellings."""
    nu0, A0 = model.prior_params(data)
    K, M = data.n_classes, data.n_workers
    out = []
    for y in itertools.product(range(K), repeat=data.n_items):
        y = np.array(y)
        ny = np.bincount(y, minlength=K)
        v = gammaln(nu0.sum()) - gammaln(nu0.sum() + ny.sum()) + (gammaln(nu0 + ny) - gammaln(nu0)).sum()
        c = np.zeros((M, K, K))
        np.add.at(c, (data.worker, data.label, y[data.item]), 1.0)
        a = A0 + c
        v += (gammaln(A0.sum(axis=1)) - gammaln(a.sum(axis=1))).sum() + (gammaln(a) - gammaln(A0)).sum()
        out.append(v)
    return float(np.logaddexp.reduce(out))


@pytest.mark.parametrize("seed", range(6))
def test_ibcc_elbo_is_below_the_exact_evidence(seed):
    data = _tiny(seed, N=5, M=3, K=2 + seed % 2)
    model = IBCC(prior=(0.0, 0.5)[seed % 2])
    run = Run(data, model)
    run.run(max_iter=200)
    log_px = _log_evidence(data, model)
    elbo = np.array(run.objective_history())
    assert np.all(elbo <= log_px + 1e-9)
    assert elbo[-1] > log_px - 2.0  # and it is a close bound at convergence on these tiny problems
    assert run.violations == []


def test_ibcc_m_step_is_prior_plus_expected_counts():
    data = _tiny(7, N=8, M=4, K=3)
    model = IBCC(prior=0.5, diagonal=2.0)
    q = np.random.default_rng(0).dirichlet(np.ones(3), data.n_items)
    p = model.m_step(data, q)
    c = np.zeros((4, 3, 3))
    np.add.at(c, (data.worker, data.label), q[data.item])
    np.testing.assert_allclose(p.A, 1.5 + 2.0 * np.eye(3) + c)
    np.testing.assert_allclose(p.nu, 1.5 + q.sum(axis=0))
    np.testing.assert_allclose(p.gamma.sum(axis=1), 1.0)


def test_ibcc_posterior_means_converge_to_dawid_skene_as_the_prior_vanishes():
    """Repeating every item r times leaves Dawid-Skene's ML fixed point as it is, while the prior's weight in
    IBCC shrinks like 1/r: IBCC's posterior means approach Dawid-Skene's estimates."""
    base = random_problem(np.random.default_rng(11), 30, 5, 3, "dense")
    ds = Run(base, DawidSkene())
    ds.run(tol=1e-13, max_iter=3000)
    errs = []
    for r in (1, 10, 100, 1000):
        N = base.n_items
        item = (base.item[None, :] + N * np.arange(r)[:, None]).ravel()
        data = Annotations(
            item,
            np.tile(base.worker, r),
            np.tile(base.label, r),
            [f"i{n}" for n in range(N * r)],
            base.worker_names,
            base.class_names,
        )
        run = Run(data, IBCC(), "posterior", q0=np.tile(ds.posterior, (r, 1)))
        run.run(tol=1e-13, max_iter=3000)
        errs.append(max(np.abs(run.params.gamma - ds.params.gamma).max(), np.abs(run.params.pi - ds.params.pi).max()))
    assert errs[-1] < 2e-3
    assert all(b < a for a, b in zip(errs, errs[1:]))


def test_ibcc_credible_intervals_cover_the_mean_and_shrink_with_data():
    rng = np.random.default_rng(2)
    small = random_problem(rng, 20, 4, 2, "dense")
    big = random_problem(rng, 400, 4, 2, "dense")
    widths = []
    for data in (small, big):
        run = cl.fit(data, "ibcc")
        ci = accuracy_intervals(run.params, draws=3000, seed=0)
        assert np.all(ci["lo"] <= ci["mean"] + 1e-3) and np.all(ci["mean"] <= ci["hi"] + 1e-3)
        assert np.all((ci["diag_lo"] <= ci["diag_mean"]) & (ci["diag_mean"] <= ci["diag_hi"]))
        widths.append(np.mean(ci["hi"] - ci["lo"]))
    assert widths[1] < widths[0] / 2
    again = accuracy_intervals(cl.fit(small, "ibcc").params, draws=3000, seed=0)
    np.testing.assert_array_equal(again["lo"], accuracy_intervals(cl.fit(small, "ibcc").params, 0.95, 3000, 0)["lo"])


def test_ibcc_has_no_hard_version():
    with pytest.raises(ValueError, match="no hard version"):
        make_model("ibcc", hard=True)


# ---------------------------------------------------------------------------------------------- semi-supervised
def _counts(data: Annotations, y: np.ndarray) -> np.ndarray:
    c = np.zeros((data.n_workers, data.n_classes, data.n_classes))
    np.add.at(c, (data.worker, data.label, y[data.item]), 1.0)
    return c


@pytest.mark.parametrize("method", ["ds", "one_coin", "two_coin", "glad", "mace", "mace_vb", "ibcc"])
def test_all_gold_revealed_gives_gold_and_closed_form_counts(method):
    K = 2 if method == "two_coin" else 3
    data = random_problem(np.random.default_rng(8), 50, 6, K, "sparse")
    run = cl.fit(data, method, reveal=1.0)
    gold = data.gold
    np.testing.assert_array_equal(run.labels(), gold)
    np.testing.assert_array_equal(run.posterior, np.eye(K)[gold])
    c = _counts(data, gold)
    p = run.params
    if method == "ds":
        np.testing.assert_allclose(p.gamma, c / np.maximum(c.sum(axis=1, keepdims=True), 1e-300) + 0.0, atol=1e-12)
        np.testing.assert_allclose(p.pi, np.bincount(gold, minlength=K) / gold.size)
    elif method == "one_coin":
        np.testing.assert_allclose(p.extra["theta"], np.trace(c, axis1=1, axis2=2) / c.sum(axis=(1, 2)))
    elif method == "two_coin":
        np.testing.assert_allclose(p.extra["alpha"], c[:, 1, 1] / c[:, :, 1].sum(axis=1))
        np.testing.assert_allclose(p.extra["beta"], c[:, 0, 0] / c[:, :, 0].sum(axis=1))
    elif method == "ibcc":
        nu0, A0 = run.model.prior_params(data)
        np.testing.assert_allclose(p.A, A0 + c)
        np.testing.assert_allclose(p.nu, nu0 + np.bincount(gold, minlength=K))
    elif method == "mace":
        # theta_j = (honest labels) / (labels): with the truth known, every wrong label is spam
        n = c.sum(axis=(1, 2))
        wrong = n - np.trace(c, axis1=1, axis2=2)
        a, b = run.model.theta_prior  # Beta pseudo-counts: a - 1 honest, b - 1 spam
        assert np.all(1.0 - p.theta >= (wrong + b - 1) / (n + a + b - 2) - 1e-9)
    elif method == "mace_vb":
        # Beta(a + E[#honest], b + E[#spam]): the two counts add up to the labels, and every wrong label is spam
        n = c.sum(axis=(1, 2))
        wrong = n - np.trace(c, axis1=1, axis2=2)
        a, b = run.model.theta_prior
        np.testing.assert_allclose(p.ab.sum(axis=1), a + b + n)
        assert np.all(p.ab[:, 1] >= b + wrong - 1e-9)
        np.testing.assert_allclose(p.c.sum(axis=1), K * run.model.strategy_prior + p.ab[:, 1] - b)
    assert run.violations == []


def test_known_mapping_by_names_and_partial_reveal():
    data = random_problem(np.random.default_rng(9), 40, 5, 3, "sparse")
    known = {data.item_names[0]: data.class_names[2], data.item_names[5]: data.class_names[1]}
    for method in ("ds", "glad", "mace", "mace_vb", "ibcc"):
        run = cl.fit(data, method, known=known)
        assert run.labels()[0] == 2 and run.labels()[5] == 1
        assert run.violations == []
    run = cl.fit(data, "ds", reveal=0.25, reveal_seed=3)
    kc = run.model.known_classes(data)
    assert (kc >= 0).sum() == 10
    np.testing.assert_array_equal(run.labels()[kc >= 0], data.gold[kc >= 0])
    again = cl.fit(data, "ds", reveal=0.25, reveal_seed=3).model.known_classes(data)
    np.testing.assert_array_equal(kc, again)


def test_semi_supervised_objective_is_the_joint_likelihood():
    """log p(x, y_known | theta): a known item contributes log p(x_n, y_n | theta), not the sum over classes."""
    data = random_problem(np.random.default_rng(10), 12, 3, 2, "dense")
    model = DawidSkene().with_known({data.item_names[0]: data.class_names[1]})
    p = DawidSkene().m_step(data, np.full((12, 2), 0.5) + np.eye(2)[data.gold] * 0.3)
    lj = model.log_joint(data, p)
    expected = np.logaddexp(lj[1:, 0], lj[1:, 1]).sum() + lj[0, 1]
    assert model.log_likelihood(data, p) == pytest.approx(expected)


def test_known_errors():
    data = random_problem(np.random.default_rng(0), 10, 3, 2, "dense")
    with pytest.raises(ModelError, match="not in the data"):
        cl.fit(data, "ds", known={"nope": data.class_names[0]})
    with pytest.raises(ModelError, match="not one of the classes"):
        cl.fit(data, "ds", known={data.item_names[0]: "zebra"})
    with pytest.raises(ValueError, match="fraction"):
        cl.fit(data, "ds", reveal=1.5)
    nogold = Annotations(data.item, data.worker, data.label, data.item_names, data.worker_names, data.class_names)
    with pytest.raises(ModelError, match="gold"):
        cl.fit(nogold, "ds", reveal=0.5)


@pytest.mark.parametrize("cls", [DawidSkene, OneCoin, GLAD, MACE])
def test_warm_posterior_is_what_iterative_m_steps_take(cls):
    data = random_problem(np.random.default_rng(1), 20, 4, 2, "dense")
    model = cls()
    post = model.e_step(data, model.m_step(data, model.as_posterior(data, np.full((20, 2), 0.5))))
    q = post.q if isinstance(post, WarmPosterior) else post
    assert q.shape == (20, 2) and np.allclose(q.sum(axis=1), 1.0)


def test_credible_draws_keep_to_the_budget():
    from crowdlab.models.base import CREDIBLE_BUDGET, credible_draws

    assert credible_draws(39, 2) == 4000  # a small crowd: all of them
    assert credible_draws(762, 4) == CREDIBLE_BUDGET // (762 * 4)  # TREC's crowd: fewer
    assert credible_draws(100_000, 5) == 400  # never fewer than 400
    assert credible_draws(100_000, 5, draws=50) == 50  # unless asked
