"""Error rates without labels (Donmez et al. 2010): closed forms vs optimisers, EM vs brute force, Lemma 6, Prop. 7."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar
from scipy.stats import multivariate_normal

from crowdlab.analysis import risk
from crowdlab.errors import DataError, ModelError


# ---------------------------------------------------------------------- eq. (9)
@pytest.mark.parametrize(("theta", "p0", "seed"), [(0.75, 0.8, 1), (0.9, 0.3, 2), (0.6, 0.75, 3), (0.4, 0.85, 4)])
def test_eq9_equals_numerical_maximiser(theta, p0, seed):
    out, _ = risk.simulate_classifier_outputs(2000, [theta], p0, seed=seed)
    est = risk.symmetric_closed_form(out[:, 0], p0)
    assert est.identifiable and est.in_range
    res = minimize_scalar(
        lambda t: -risk.symmetric_loglik(t, out[:, 0], p0), bounds=(0, 1), method="bounded", options={"xatol": 1e-12}
    )
    assert abs(res.x - est.theta) < 1e-6
    assert est.risk == pytest.approx(1 - est.theta)
    # EM on eq. (12) with k = 1 reaches the same point
    em = risk.collaborative_mle(out, p0, tol=1e-12)
    assert abs(em.theta[0] - est.theta) < 1e-6
    # the paper's m counts the outputs of its class 2 = code 1
    assert est.m == int((out == 1).sum())


def test_eq9_vectorised_formula():
    m = np.array([[100, 400], [700, 1500]])
    got = risk.closed_form_theta(m, 2000, 0.8)
    want = np.vectorize(lambda mm: (0.8 - mm / 2000) / (2 * 0.8 - 1))(m)
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_eq9_uniform_marginal_is_not_identifiable():
    out, _ = risk.simulate_classifier_outputs(500, [0.8], 0.5, seed=0)
    est = risk.symmetric_closed_form(out[:, 0], [0.5, 0.5])
    assert est.theta is None and est.risk is None and not est.identifiable
    assert "uniform" in est.verdict and "Prop. 3" in est.verdict
    # the likelihood really is flat
    ll = risk.symmetric_loglik(np.linspace(0, 1, 11), out[:, 0], 0.5)
    np.testing.assert_allclose(ll, ll[0], rtol=1e-12)


def test_eq9_outside_unit_interval_is_clipped_with_a_verdict():
    # p(y = 0) = 0.8: the symmetric model can only produce p(out = 1) in [0.2, 0.8]; 90% ones is impossible
    out = np.r_[np.ones(900, int), np.zeros(100, int)]
    est = risk.symmetric_closed_form(out, 0.8)
    assert not est.in_range and est.theta_raw < 0 and est.theta == 0.0
    assert "outside [0, 1]" in est.verdict and "Prop. 7" in est.verdict
    grid = np.linspace(0, 1, 1001)
    assert risk.symmetric_loglik(est.theta, out, 0.8) >= risk.symmetric_loglik(grid, out, 0.8).max() - 1e-9


def test_symmetric_loglik_is_vectorised_and_matches_eq12():
    out, _ = risk.simulate_classifier_outputs(300, [0.7], [0.5, 0.3, 0.2], seed=5)
    grid = np.linspace(0.05, 0.95, 12).reshape(3, 4)
    ll = risk.symmetric_loglik(grid, out[:, 0], [0.5, 0.3, 0.2])
    assert ll.shape == (3, 4)
    np.testing.assert_allclose(ll, risk.collaborative_loglik(grid[..., None], out, [0.5, 0.3, 0.2]), rtol=1e-12)


# ---------------------------------------------------------------------- eqs. (4), (12), (16)
def _brute_loglik(theta, out, p):
    """Eq. (16) literally: sum over every completion of the missing outputs of sum_y p(y) prod_j p(out_j | y)."""
    l = p.size
    total = 0.0
    for row in out:
        miss = np.flatnonzero(row < 0)
        s = 0.0
        for fill in itertools.product(range(l), repeat=miss.size):
            full = row.copy()
            full[miss] = fill
            for y in range(l):
                prod = p[y]
                for j, o in enumerate(full):
                    prod *= theta[j] if o == y else (1 - theta[j]) / (l - 1)
                s += prod
        total += np.log(s)
    return total


def test_missing_outputs_eq16_equals_bruteforce():
    p = np.array([0.5, 0.3, 0.2])
    theta = np.array([0.8, 0.6, 0.45])
    out, _ = risk.simulate_classifier_outputs(40, theta, p, missing=0.3, seed=7)
    assert (out < 0).any()
    assert risk.collaborative_loglik(theta, out, p) == pytest.approx(_brute_loglik(theta, out, p), rel=1e-12)


@pytest.mark.parametrize(
    ("theta", "p", "missing"),
    [([0.8, 0.7, 0.6], [0.7, 0.3], 0.0), ([0.8, 0.7, 0.6, 0.9], [0.5, 0.3, 0.2], 0.2)],
)
def test_collaborative_em_is_monotone_and_equals_direct_maximisation(theta, p, missing):
    out, _ = risk.simulate_classifier_outputs(3000, theta, p, missing=missing, seed=11)
    fit = risk.collaborative_mle(out, p, tol=1e-12)
    assert fit.converged
    h = fit.history
    assert np.all(np.diff(h) >= -1e-9 * np.abs(h[1:]))
    assert fit.loglik == pytest.approx(float(risk.collaborative_loglik(fit.theta, out, p)), rel=1e-12)
    k = len(theta)
    res = minimize(
        lambda t: -risk.collaborative_loglik(t, out, p),
        np.full(k, 0.7),
        method="L-BFGS-B",
        bounds=[(1e-6, 1 - 1e-6)] * k,
        options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 2000},
    )
    assert -res.fun <= fit.loglik + 1e-8
    np.testing.assert_allclose(res.x, fit.theta, atol=1e-5)


def test_collaborative_mle_recovers_truth_and_prop3_verdict():
    theta = np.array([0.85, 0.75, 0.65, 0.9, 0.7])
    out, _ = risk.simulate_classifier_outputs(20_000, theta, 0.75, missing=0.1, seed=3)
    fit = risk.collaborative_mle(out, 0.75)
    np.testing.assert_allclose(fit.theta, theta, atol=0.02)
    np.testing.assert_allclose(fit.risk, 1 - fit.theta)
    np.testing.assert_array_equal(fit.n_outputs, (out >= 0).sum(axis=0))
    assert fit.identifiable and "Prop. 3" in fit.verdict
    uniform = risk.collaborative_mle(out, 0.5)
    assert not uniform.identifiable and "uniform" in uniform.verdict


def test_combination_rule_equals_bruteforce():
    p = np.array([0.2, 0.5, 0.3])
    theta = np.array([0.9, 0.55, 0.7, 0.4])
    out, _ = risk.simulate_classifier_outputs(200, theta, p, missing=0.25, seed=2)
    out[0] = -1  # a row with every output missing: arg-max p(y)
    want = []
    for row in out:
        lik = [[theta[j] if o == y else (1 - theta[j]) / 2 for j, o in enumerate(row) if o >= 0] for y in range(3)]
        score = [p[y] * np.prod(lik[y]) for y in range(3)]
        want.append(int(np.argmax(score)))
    np.testing.assert_array_equal(risk.combine(out, theta, p), want)
    assert risk.combine(out[:1], theta, p)[0] == 1
    q = risk.posterior(out, theta, p)
    np.testing.assert_allclose(q.sum(axis=1), 1.0)


def test_combination_beats_each_classifier():
    theta = np.array([0.8, 0.75, 0.7, 0.72, 0.78])
    out, y = risk.simulate_classifier_outputs(5000, theta, 0.75, seed=9)
    fit = risk.collaborative_mle(out, 0.75)
    acc = (risk.combine(out, fit.theta, 0.75) == y).mean()
    assert acc > (out == y[:, None]).mean(axis=0).max() + 0.03


# ---------------------------------------------------------------------- Lemma 6, Prop. 7
def _two_by_two(t11, t22):
    return np.array([[[t11, 1 - t22], [1 - t11, t22]]])


def test_lemma6_flat_direction():
    out, _ = risk.simulate_confusion_outputs(5000, _two_by_two(0.85, 0.7), 0.6, seed=1)
    flat = risk.lemma6_flat_direction(out[:, 0], 0.6, n_points=51)
    assert flat.theta11.size == 51
    np.testing.assert_allclose(flat.loglik, flat.loglik[0], rtol=1e-12, atol=0)
    np.testing.assert_allclose(0.6 * flat.theta11 - 0.4 * flat.theta22, flat.identified, atol=1e-12)
    assert np.ptp(flat.risk) > 0.3  # the risk is not identified from one population
    # the family is the maximum-likelihood set: nothing on a grid does better
    g11, g22 = np.meshgrid(np.linspace(0, 1, 201), np.linspace(0, 1, 201))
    assert risk.two_by_two_loglik(g11, g22, out[:, 0], 0.6).max() <= flat.loglik[0] + 1e-9
    # the truth lies (up to sampling) on the identified line
    assert abs(0.6 * 0.85 - 0.4 * 0.7 - flat.identified) < 0.02
    # through a given point: the likelihood is constant along that line too
    through = risk.lemma6_flat_direction(out[:, 0], 0.6, through=(0.85, 0.7))
    np.testing.assert_allclose(through.loglik, through.loglik[0], rtol=1e-12, atol=0)


def test_prop7_two_populations_recover_theta():
    G = _two_by_two(0.85, 0.7)
    out_a, _ = risk.simulate_confusion_outputs(50_000, G, 0.8, seed=21)
    out_b, _ = risk.simulate_confusion_outputs(50_000, G, 0.3, seed=22)
    est = risk.two_population_estimate(out_a[:, 0], 0.8, out_b[:, 0], 0.3)
    assert est.identifiable and "Prop. 7" in est.verdict
    assert abs(est.theta11 - 0.85) < 0.02 and abs(est.theta22 - 0.7) < 0.02
    assert 0 < est.se11 < 0.01 and 0 < est.se22 < 0.01
    assert est.risk_a == pytest.approx(1 - 0.8 * est.theta11 - 0.2 * est.theta22)
    # it is the joint maximum-likelihood estimate: both lines hold exactly
    ra, rb = (out_a == 0).mean(), (out_b == 0).mean()
    assert 0.8 * est.theta11 - 0.2 * est.theta22 == pytest.approx(ra - 0.2, abs=1e-12)
    assert 0.3 * est.theta11 - 0.7 * est.theta22 == pytest.approx(rb - 0.7, abs=1e-12)


def test_prop7_needs_different_marginals_and_handles_the_square():
    out, _ = risk.simulate_confusion_outputs(1000, _two_by_two(0.8, 0.8), 0.6, seed=1)
    same = risk.two_population_estimate(out[:, 0], 0.6, out[:, 0], 0.6)
    assert not same.identifiable and same.theta11 is None and "different marginals" in same.verdict
    # lines meeting outside [0, 1]^2: the joint likelihood is maximised over the square instead
    a = np.r_[np.zeros(990, int), np.ones(10, int)]
    b = np.r_[np.zeros(10, int), np.ones(990, int)]
    est = risk.two_population_estimate(a, 0.6, b, 0.4)
    assert max(est.theta_raw) > 1
    assert 0 <= est.theta11 <= 1 and 0 <= est.theta22 <= 1 and "outside" in est.verdict


# ---------------------------------------------------------------------- regression
REG = {"mu_y": 0.5, "sigma_y": 1.0, "tau": 1.0}


@pytest.mark.parametrize("theta", [0.3, 1.5, -0.8])
def test_regression_closed_form_equals_numerical_maximiser(theta):
    F, _ = risk.simulate_regression(4000, [theta], **REG, seed=4)
    est = risk.regression_closed_form(F[:, 0], **REG)
    assert est.identifiable
    assert np.sign(est.theta) == np.sign(theta) and abs(est.theta - theta) < 0.1
    for lo, hi, root in ((1e-3, 10.0, est.roots[1]), (-10.0, -1e-3, est.roots[0])):
        res = minimize_scalar(
            lambda t: -risk.regression_loglik(t, F[:, 0], **REG), bounds=(lo, hi), method="bounded",
            options={"xatol": 1e-12},
        )  # fmt: skip
        assert abs(res.x - root) < 1e-6
    # eq. (13) with k = 1, maximised numerically from elsewhere, lands on the closed form
    fit = risk.collaborative_regression_mle(F, **REG, theta0=[3.0 * np.sign(est.theta)], signs=[np.sign(est.theta)])
    assert abs(fit.theta[0] - est.theta) < 1e-6
    assert est.risk == pytest.approx(float(risk.regression_risk(est.theta, **REG)))


def test_regression_eq13_equals_multivariate_normal():
    theta = np.array([0.3, 0.8, -1.2])
    F, _ = risk.simulate_regression(60, theta, 0.5, 1.3, 0.7, seed=3)
    cov = 1.3**2 * np.outer(theta, theta) + 0.7**2 * np.diag(theta**2)
    want = multivariate_normal(theta * 0.5, cov).logpdf(F).sum()
    assert risk.collaborative_regression_loglik(theta, F, 0.5, 1.3, 0.7) == pytest.approx(want, rel=1e-12)
    # k = 1: eq. (13) and eq. (11) agree
    ll13 = risk.collaborative_regression_loglik(np.array([[0.4], [-0.9]]), F[:, :1], 0.5, 1.3, 0.7)
    np.testing.assert_allclose(ll13, risk.regression_loglik(np.array([0.4, -0.9]), F[:, 0], 0.5, 1.3, 0.7), rtol=1e-12)


def test_collaborative_regression_mle_recovers_theta():
    theta = np.array([0.3, 0.8, 1.2])
    F, _ = risk.simulate_regression(20_000, theta, 0.5, 1.0, 0.7, seed=8)
    fit = risk.collaborative_regression_mle(F, 0.5, 1.0, 0.7)
    assert fit.converged and fit.identifiable
    np.testing.assert_allclose(fit.theta, theta, atol=0.03)
    # a maximum: every nearby point is worse
    rng = np.random.default_rng(0)
    near = fit.theta + 1e-3 * rng.standard_normal((20, 3))
    assert risk.collaborative_regression_loglik(near, F, 0.5, 1.0, 0.7).max() < fit.loglik


def test_regression_sign_not_identified_when_mu_is_zero():
    F, _ = risk.simulate_regression(1000, [0.6], 0.0, 1.0, 1.0, seed=1)
    est = risk.regression_closed_form(F[:, 0], 0.0, 1.0, 1.0)
    assert not est.identifiable and est.roots[0] == pytest.approx(-est.roots[1])
    assert risk.collaborative_regression_mle(F, 0.0, 1.0, 1.0).identifiable is False


def test_regression_risk_matches_simulation():
    theta, mu, sigma, tau = 0.6, 0.5, 1.2, 0.8
    F, y = risk.simulate_regression(400_000, [theta], mu, sigma, tau, seed=2)
    mse = np.mean((y - F[:, 0]) ** 2)
    assert mse == pytest.approx(float(risk.regression_risk(theta, mu, sigma, tau)), rel=0.01)


# ---------------------------------------------------------------------- errors a person can act on
def test_bad_inputs_raise_actionable_errors():
    with pytest.raises(DataError, match="sum to 1"):
        risk.symmetric_loglik(0.5, [0, 1], [0.5, 0.6])
    with pytest.raises(DataError, match="> 0"):
        risk.collaborative_mle([[0, 1]], [1.0, 0.0])
    with pytest.raises(DataError, match="class codes 0 .. 1"):
        risk.symmetric_closed_form([0, 2, 1], 0.7)
    with pytest.raises(ModelError, match="two classes"):
        risk.symmetric_closed_form([0, 2, 1], [0.5, 0.3, 0.2])
    with pytest.raises(DataError, match="no outputs"):
        risk.collaborative_mle([[0, -1], [1, -1]], 0.7)
    with pytest.raises(DataError, match="missing predictions"):
        risk.regression_closed_form([0.1, np.nan], 0.0, 1.0, 1.0)
