"""Fuzz of the estimators without labels (crowdlab.analysis.risk, Donmez, Lebanon & Balasubramanian 2010): EM with p(y)
fixed never lowers the log-likelihood, and every estimate is finite, on generated problems with missing outputs,
all-missing rows, near-deterministic classifiers, near-degenerate marginals and predictions from 1e-200 to 1e200.
"""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.analysis import risk
from crowdlab.errors import DataError

pytestmark = pytest.mark.slow

N_COLLAB = 250
N_REGRESSION = 300


def _outputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    l = int(rng.integers(2, 5))
    k = int(rng.integers(1, 6))
    n = int(rng.integers(1, 120))
    p = rng.dirichlet(np.ones(l))
    if seed % 5 == 0:
        p = np.full(l, 1e-12)
        p[0] = 1.0 - (l - 1) * 1e-12  # near-degenerate marginal
    if seed % 7 == 0:
        p = np.full(l, 1.0 / l)  # uniform: Prop. 3 fails, the estimate must still be finite
    y = rng.choice(l, size=n, p=p / p.sum())
    acc = np.full(k, 1.0) if seed % 3 == 0 else rng.uniform(0.1, 0.99, k)
    right = rng.random((n, k)) < acc
    out = np.where(right, y[:, None], (y[:, None] + rng.integers(1, l, (n, k))) % l)
    missing = rng.random((n, k)) < (0.4 if seed % 2 else 0.0)
    out = np.where(missing, -1, out)
    if n > 1 and seed % 4 == 1:
        out[0] = -1  # an all-missing row
    for j in range(k):  # every classifier keeps at least one output
        if (out[:, j] < 0).all():
            out[-1, j] = y[-1]
    return out, p


def test_collaborative_mle_monotone_and_finite():
    for seed in range(N_COLLAB):
        out, p = _outputs(seed)
        est = risk.collaborative_mle(out, p, max_iter=60, tol=1e-12)
        h = est.history
        assert np.all(np.isfinite(h)) and np.isfinite(est.loglik)
        assert np.all(np.diff(h) >= -1e-9 * np.maximum(1.0, np.abs(h[:-1]))), (seed, np.diff(h).min())
        assert np.all((est.theta >= 0) & (est.theta <= 1)) and np.all(np.isfinite(est.risk))
        q = risk.posterior(out, est.theta, p)
        assert np.all(np.isfinite(q)) and q.min() >= 0
        np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-9)
        lab = risk.combine(out, est.theta, p)
        assert lab.min() >= 0 and lab.max() < p.size


def test_symmetric_closed_form_finite():
    for seed in range(N_COLLAB):
        out, p = _outputs(seed)
        if p.size != 2:
            continue
        col = out[:, 0][out[:, 0] >= 0]
        if col.size == 0:
            continue
        est = risk.symmetric_closed_form(col, p)
        for v in (est.theta, est.risk, est.theta_raw):
            assert v is None or np.isfinite(v)


def test_regression_estimators_finite_or_refused():
    """Predictions and y on any scale: a finite estimate equal (after rescaling) to the O(1) problem's, or a
    DataError saying the risk cannot be represented; never NaN or inf."""
    for seed in range(N_REGRESSION):
        rng = np.random.default_rng(seed)
        k = int(rng.integers(1, 4))
        n = int(rng.integers(2, 60))
        theta = rng.uniform(0.3, 2.0, k) * rng.choice([-1, 1], k)
        mu, sigma, tau = float(rng.normal()), float(rng.uniform(0.5, 2)), float(rng.uniform(0.2, 1))
        F, _ = risk.simulate_regression(n, theta, mu, sigma, tau, seed=seed)
        F = np.asarray(F).reshape(n, k)
        c = 10.0 ** rng.choice([0, 17, 150, 170, -150, -200])
        b = 10.0 ** rng.choice([0, 10, -10, 100])
        base = risk.regression_closed_form(F[:, 0], mu, sigma, tau)
        try:
            est = risk.regression_closed_form(F[:, 0] * c, mu * b, sigma * b, tau * b)
        except DataError as exc:
            assert "not representable" in str(exc)
            continue
        assert np.isfinite(est.theta) and np.isfinite(est.risk) and np.isfinite(est.loglik)
        assert est.theta == pytest.approx(base.theta * c / b, rel=1e-9)
        assert est.loglik == pytest.approx(base.loglik - n * np.log(c), rel=1e-9, abs=1e-6)
        if k > 1 and mu != 0:
            signs = np.sign(theta)
            fit0 = risk.collaborative_regression_mle(F, mu, sigma, tau, signs=signs)
            fit = risk.collaborative_regression_mle(F * c, mu * b, sigma * b, tau * b, signs=signs)
            assert np.all(np.isfinite(fit.theta)) and np.all(np.isfinite(fit.risk)) and np.isfinite(fit.loglik)
            np.testing.assert_allclose(fit.theta, fit0.theta * c / b, rtol=1e-6)
