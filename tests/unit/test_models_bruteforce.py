"""Exact checks on tiny problems: log-likelihood and posteriors equal enumeration over all true labels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from crowdlab.io.data import Annotations
from crowdlab.models import DawidSkene, GoodBadScores, OneCoin, ScoreParams, TwoCoin
from crowdlab.models.params import ClassParams
from tests.unit.problems import random_problem


def brute_force(data: Annotations, pi: np.ndarray, gamma: np.ndarray):
    """Enumerate y in K^N: returns log p(x) and the (N, K) exact posterior marginals."""
    N, K = data.n_items, data.n_classes
    logs, assigns = [], []
    for y in itertools.product(range(K), repeat=N):
        y = np.array(y)
        lp = np.log(pi[y]).sum()
        for i, w, l in zip(data.item, data.worker, data.label):
            lp += np.log(gamma[w, l, y[i]])
        logs.append(lp)
        assigns.append(y)
    logs = np.array(logs)
    logZ = logsumexp(logs)
    post = np.zeros((N, K))
    w = np.exp(logs - logZ)
    for y, wt in zip(assigns, w):
        post[np.arange(N), y] += wt
    return logZ, post


def random_class_params(rng, model, M, K):
    pi = rng.dirichlet(np.ones(K))
    if isinstance(model, DawidSkene):
        gamma = np.stack([rng.dirichlet(np.ones(K), size=K).T for _ in range(M)])
        return ClassParams(pi, gamma)
    if isinstance(model, OneCoin):
        return model.params_from(pi, rng.uniform(0.05, 0.95, size=M))
    return model.params_from(pi[1], rng.uniform(0.05, 0.95, size=M), rng.uniform(0.05, 0.95, size=M))


CASES = [(model_cls, seed) for model_cls in (DawidSkene, OneCoin, TwoCoin) for seed in range(12)]


@pytest.mark.parametrize("model_cls,seed", CASES)
def test_likelihood_and_posterior_equal_enumeration(model_cls, seed):
    rng = np.random.default_rng(seed)
    K = 2 if model_cls is TwoCoin else int(rng.integers(2, 4))
    N = int(rng.integers(2, 7)) if K == 2 else int(rng.integers(2, 6))
    M = int(rng.integers(1, 4))
    data = random_problem(rng, N, M, K, design=("sparse", "dense", "repeats")[seed % 3])
    model = model_cls()
    params = random_class_params(rng, model, data.n_workers, K)
    logZ, post = brute_force(data, params.pi, params.gamma)
    assert model.log_likelihood(data, params) == pytest.approx(logZ, abs=1e-10, rel=1e-12)
    np.testing.assert_allclose(model.e_step(data, params), post, atol=1e-10)
    # the EM bound is tight right after the E-step
    q = model.e_step(data, params)
    assert model.bound(data, q, params) == pytest.approx(logZ, abs=1e-9)


def test_map_objective_adds_exact_log_prior():
    from scipy.stats import dirichlet

    rng = np.random.default_rng(3)
    data = random_problem(rng, 5, 3, 3, "sparse")
    model = DawidSkene(prior=2.0)
    params = random_class_params(rng, DawidSkene(), 3, 3)
    logZ, _ = brute_force(data, params.pi, params.gamma)
    lp = dirichlet.logpdf(params.pi, np.full(3, 3.0))
    for m in range(3):
        for k in range(3):
            lp += dirichlet.logpdf(params.gamma[m, :, k], np.full(3, 3.0))
    assert model.log_likelihood(data, params) == pytest.approx(logZ + lp, abs=1e-9)


def brute_force_scores(data: Annotations, p: ScoreParams):
    from scipy.stats import norm

    M = data.n_workers
    logs, assigns = [], []
    for z in itertools.product((0, 1), repeat=M):
        z = np.array(z)
        lp = np.sum(np.where(z == 1, np.log(p.pi_good), np.log(1 - p.pi_good)))
        for i, a, s in zip(data.item, data.worker, data.value):
            lp += norm.logpdf(s, p.mu[i], p.sigma) if z[a] else -np.log(p.high - p.low)
        logs.append(lp)
        assigns.append(z)
    logs = np.array(logs)
    logZ = logsumexp(logs)
    w = np.exp(logs - logZ)
    good = np.zeros(M)
    for z, wt in zip(assigns, w):
        good += wt * z
    return logZ, good


@pytest.mark.parametrize("seed", range(8))
def test_scores_model_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    N, M = int(rng.integers(2, 6)), int(rng.integers(1, 5))
    ii, aa = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    keep = rng.random(ii.size) < 0.7
    keep[:N] = True
    item, worker = ii.ravel()[keep], aa.ravel()[keep]
    data = Annotations(
        item,
        worker,
        None,
        [f"i{n}" for n in range(N)],
        [f"a{m}" for m in range(M)],
        value=rng.random(item.size),
    )
    params = ScoreParams(
        mu=rng.random(N),
        sigma=float(rng.uniform(0.05, 0.4)),
        pi_good=float(rng.uniform(0.2, 0.8)),
        low=0.0,
        high=1.0,
    )
    model = GoodBadScores(score_range=(0.0, 1.0))
    logZ, good = brute_force_scores(data, params)
    assert model.log_likelihood(data, params) == pytest.approx(logZ, abs=1e-10)
    np.testing.assert_allclose(model.e_step(data, params)[:, 1], good, atol=1e-10)
