"""MACE by variational Bayes (Hovy et al. 2013, Sec. 2.2; crowdlab.models.mace.MaceVB).

Checked against things computed another way: the ELBO against its definition term by term on a tiny problem, with
every expectation and KL divergence integrated numerically (no digamma); the converged ELBO against a Monte-Carlo
estimate of log p(A), which it must not exceed; the fit on much data against MACE's EM; the credible intervals
against draws from the Beta posterior. (The ELBO never decreasing over 200 random problems, with and without
revealed gold: tests/unit/test_new_models_fuzz.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

import crowdlab as cl
from crowdlab.engines.run import Run
from crowdlab.io.data import Annotations
from crowdlab.models import MaceVB
from crowdlab.models.mace import accuracy_intervals, mace_vb_params, spam_intervals
from crowdlab.teaching.simulate import simulate_crowd


def _tiny() -> Annotations:
    # 3 items, 2 workers, 2 classes; item "c" has one label
    return Annotations.from_labels(
        ["a", "a", "b", "b", "c"], ["u", "v", "u", "v", "u"], ["0", "0", "1", "0", "1"], classes=["0", "1"]
    )


def _e_log(a: float, b: float, f) -> float:
    """E[f(x)] under Beta(a, b), by quadrature."""
    return integrate.quad(lambda x: f(x) * stats.beta.pdf(x, a, b), 0, 1, limit=200)[0]


def _kl_beta(a: float, b: float, a0: float, b0: float) -> float:
    def f(x):
        p = stats.beta.pdf(x, a, b)
        return p * (stats.beta.logpdf(x, a, b) - stats.beta.logpdf(x, a0, b0)) if p > 0 else 0.0

    return integrate.quad(f, 0, 1, limit=200)[0]


def test_elbo_equals_its_definition_integrated_numerically():
    data = _tiny()
    model = MaceVB(theta_prior=(0.7, 1.3), strategy_prior=2.0, class_prior="estimate")
    ab = np.array([[3.2, 1.7], [1.1, 2.5]])
    c = np.array([[4.0, 1.5], [1.2, 2.2]])
    pi = np.array([0.6, 0.4])
    params = mace_vb_params(pi, ab, c)
    q = np.array([[0.9, 0.1], [0.3, 0.7], [0.5, 0.5]])

    # E[log theta], E[log(1 - theta)], E[log xi(a)] by quadrature; for K = 2, xi_j(0) ~ Beta(c_j0, c_j1)
    lt = [_e_log(*ab[j], np.log) for j in range(2)]
    ls = [_e_log(*ab[j], lambda x: np.log1p(-x)) for j in range(2)]
    lx = [[_e_log(*c[j], np.log), _e_log(*c[j], lambda x: np.log1p(-x))] for j in range(2)]
    elbo = float((q * np.log(pi)).sum() - (q * np.log(q)).sum())  # E log p(T) + H(q(T))
    for i, j, a in zip(data.item, data.worker, data.label):
        for t in range(2):
            if a == t:  # q(S = 0 | ...) at its optimum given q(theta, xi)
                w0, w1 = np.exp(lt[j]), np.exp(ls[j] + lx[j][a])
                r = w0 / (w0 + w1)
                term = r * lt[j] + (1 - r) * (ls[j] + lx[j][a]) - r * np.log(r) - (1 - r) * np.log(1 - r)
            else:  # a label that is not the truth is spam
                term = ls[j] + lx[j][a]
            elbo += q[i, t] * term
    for j in range(2):
        elbo -= _kl_beta(*ab[j], 0.7, 1.3) + _kl_beta(*c[j], 2.0, 2.0)  # Dir(c) on 2 classes is Beta(c0, c1)
    assert model.elbo(data, q, params) == pytest.approx(elbo, rel=1e-7)


def test_elbo_after_the_e_step_is_the_log_normaliser_minus_the_kl():
    data = simulate_crowd(300, 6, 3, labels_per_item=3, seed=2).annotations
    model = MaceVB()
    run = Run(data, model, max_iter=5)
    run.run()
    p = run.params
    lj = model.log_joint(data, p)
    assert model.log_likelihood(data, p) == pytest.approx(logsumexp(lj, axis=1).sum() - model.kl(p), rel=1e-12)
    # Gamma~ is sub-normalised: exp E[log theta] + exp E[log(1 - theta)] < 1 (Jensen)
    assert np.all(np.exp(p.log_tilde).sum(axis=1) < 1.0)


def test_converged_elbo_is_below_a_monte_carlo_log_evidence():
    """ELBO <= log p(A) = log E_prior[p(A | theta, xi)] (uniform class prior), estimated from 400,000 prior draws."""
    data = _tiny()
    model = MaceVB(theta_prior=(2.0, 2.0), strategy_prior=2.0)
    run = Run(data, model, tol=1e-12, max_iter=500)
    run.run()
    rng = np.random.default_rng(0)
    S = 400_000
    theta = rng.beta(2.0, 2.0, size=(S, 2))
    xi0 = rng.beta(2.0, 2.0, size=(S, 2))
    xi = np.stack([xi0, 1 - xi0], axis=2)  # (S, worker, label)
    log_p = np.zeros(S)
    for i in range(3):
        rows = np.flatnonzero(data.item == i)
        per_t = np.zeros((S, 2))
        for t in range(2):
            prod = np.ones(S)
            for o in rows:
                j, a = data.worker[o], data.label[o]
                prod *= theta[:, j] * (a == t) + (1 - theta[:, j]) * xi[:, j, a]
            per_t[:, t] = 0.5 * prod
        log_p += np.log(per_t.sum(axis=1))
    w = np.exp(log_p - log_p.max())
    evidence = np.log(w.mean()) + log_p.max()
    se = w.std() / w.mean() / np.sqrt(S)
    elbo = run.objective_history()[-1]
    assert elbo <= evidence + 3 * se
    assert elbo > evidence - 1.0  # and not a vacuous bound on 5 labels


def test_with_much_data_vb_tends_to_mace_em():
    """Posterior means -> MACE's maximum-likelihood EM as the labels per worker grow (flat priors for EM; VB's
    Dirichlet(1) on the strategies, since an expert's few hundred spam labels would still feel Dirichlet(10))."""
    data = simulate_crowd(20000, 5, 3, labels_per_item=3, seed=4).annotations
    vb = cl.fit(data, "mace_vb", model_options={"strategy_prior": 1.0}, tol=1e-12)
    em = cl.fit(data, "mace", model_options={"theta_prior": (1.0, 1.0), "strategy_prior": 1.0}, tol=1e-12)
    np.testing.assert_allclose(vb.params.theta, em.params.theta, atol=2e-3)
    np.testing.assert_allclose(vb.params.xi, em.params.xi, atol=5e-3)
    assert (vb.labels() == em.labels()).mean() > 0.999


def test_spam_intervals_cover_the_beta_posterior():
    data = simulate_crowd(400, 8, 2, labels_per_item=3, seed=6).annotations
    p = cl.fit(data, "mace_vb").params
    lo, hi = spam_intervals(p, 0.9)
    draws = 1.0 - np.random.default_rng(1).beta(p.ab[:, 0], p.ab[:, 1], size=(20000, data.n_workers))
    inside = ((draws >= lo) & (draws <= hi)).mean(axis=0)
    np.testing.assert_allclose(inside, 0.9, atol=0.01)
    assert np.all((lo <= p.spamming) & (p.spamming <= hi))
    # more labels, a narrower interval
    big = cl.fit(simulate_crowd(4000, 8, 2, labels_per_item=3, seed=6).annotations, "mace_vb").params
    assert np.median(np.subtract(*spam_intervals(big, 0.9)[::-1])) < np.median(hi - lo) / 2


def test_accuracy_intervals_match_the_closed_form_under_a_uniform_class_prior():
    """With pi uniform, accuracy = theta + (1 - theta) xi . pi = theta + (1 - theta) / K whatever xi is, so its
    credible interval is an affine image of the Beta posterior's: the Monte Carlo must land on it."""
    data = simulate_crowd(300, 10, 3, labels_per_item=3, seed=4).annotations
    p = cl.fit(data, "mace_vb").params
    ci = accuracy_intervals(p, level=0.9, seed=0)
    K = data.n_classes
    a, b = p.ab[:, 0], p.ab[:, 1]
    want_lo = stats.beta.ppf(0.05, a, b) * (1 - 1 / K) + 1 / K
    want_hi = stats.beta.ppf(0.95, a, b) * (1 - 1 / K) + 1 / K
    assert ci["draws"] == 4000
    np.testing.assert_allclose(ci["lo"], want_lo, atol=0.01)
    np.testing.assert_allclose(ci["hi"], want_hi, atol=0.01)
    np.testing.assert_allclose(ci["mean"], p.theta * (1 - 1 / K) + 1 / K, atol=1e-12)
    # an estimated class prior: xi . pi varies too; the interval still holds the mean and covers fresh draws
    p = cl.fit(data, "mace_vb", model_options={"class_prior": "estimate"}).params
    ci = MaceVB().accuracy_intervals(p, level=0.9, seed=0)
    rng = np.random.default_rng(9)
    theta = rng.beta(p.ab[:, 0], p.ab[:, 1], size=(20000, data.n_workers))
    xi = np.stack([rng.dirichlet(c, size=20000) for c in p.c], axis=1)  # (draws, M, K), one worker at a time
    acc = theta + (1 - theta) * (xi @ p.pi)
    inside = ((acc >= ci["lo"]) & (acc <= ci["hi"])).mean(axis=0)
    np.testing.assert_allclose(inside, 0.9, atol=0.015)
    assert np.all((ci["lo"] <= ci["mean"]) & (ci["mean"] <= ci["hi"]))


def test_options_are_checked_and_params_round_trip():
    with pytest.raises(ValueError, match="no hard version"):
        MaceVB(hard=True)
    with pytest.raises(ValueError, match="> 0"):
        MaceVB(theta_prior=(0.0, 1.0))
    with pytest.raises(ValueError, match="class_prior"):
        MaceVB(class_prior="learned")
    model = MaceVB()
    p = model.params_from(np.array([0.5, 0.5]), np.array([0.8, 0.3]), np.array([[0.9, 0.1], [0.5, 0.5]]))
    np.testing.assert_allclose(p.theta, [0.8, 0.3])
    np.testing.assert_allclose(p.xi, [[0.9, 0.1], [0.5, 0.5]])
    d = p.to_dict()
    assert d["prior"] == {"beta": [0.5, 0.5], "dirichlet": 10.0} and len(d["beta_posterior"]) == 2


def test_bundled_sets_match_maces_em_closely_and_never_fall():
    """On the bundled sets VB's accuracy is within 0.04 of MACE's EM, and the ELBO never falls."""
    from crowdlab.io.metrics import accuracy
    from crowdlab.io.samples import load_sample

    for name in ("bluebirds", "dogs", "rte"):
        data = load_sample(name)
        vb = cl.fit(data, "mace_vb")
        obj = np.array(vb.objective_history())
        assert vb.violations == [] and np.all(np.diff(obj) >= -1e-9 * np.abs(obj[:-1]))
        em = cl.fit(data, "mace")
        assert accuracy(vb.labels(), data.gold) > accuracy(em.labels(), data.gold) - 0.04
        assert vb.stop_reason in ("converged", "stalled")
