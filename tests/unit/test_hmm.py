"""HMM-crowd: forward-backward, pairwise posteriors, log-likelihood and Viterbi against brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from crowdlab.engines.run import Run
from crowdlab.io.data import Annotations
from crowdlab.models.hmm import HMMCrowd, HMMParams, forward_backward, forward_log_likelihood, viterbi


def tiny_chains(rng, lengths, M, K, p_obs=0.6):
    """Sequences of the given lengths, M workers with random confusion matrices, missing labels allowed
    (including positions nobody labelled)."""
    starts = np.concatenate([[0], np.cumsum(lengths)])
    N = int(starts[-1])
    ii, ww = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    keep = rng.random(ii.size) < p_obs
    item, worker = ii.ravel()[keep], ww.ravel()[keep]
    label = rng.integers(0, K, size=item.size)
    if item.size == 0 or np.unique(label).size < 1:
        item, worker, label = np.array([0]), np.array([0]), np.array([0])
    return Annotations(
        item,
        worker,
        label,
        [f"n{i}" for i in range(N)],
        [f"w{m}" for m in range(M)],
        [str(k) for k in range(K)],
        sequence_starts=starts,
    )


def random_params(rng, M, K):
    pi0 = rng.dirichlet(np.ones(K))
    T = rng.dirichlet(np.ones(K), size=K).T  # columns = previous state
    gamma = np.stack([rng.dirichlet(np.ones(K), size=K).T for _ in range(M)])
    return HMMParams(pi=pi0, gamma=gamma, T=T)


def brute(data: Annotations, p: HMMParams):
    """Enumerate every label sequence of every chain: log p(F), marginals, pairwise marginals, argmax."""
    st = data.sequence_starts
    N, K = data.n_items, data.n_classes
    logE = np.zeros((N, K))
    for i, w, l in zip(data.item, data.worker, data.label):
        logE[i] += np.log(p.gamma[w, l])
    total, q, pairs, best = 0.0, np.zeros((N, K)), {}, np.zeros(N, dtype=int)
    for s in range(len(st) - 1):
        a, b = st[s], st[s + 1]
        L = b - a
        seqs = list(itertools.product(range(K), repeat=L))
        lps = []
        for y in seqs:
            lp = np.log(p.pi[y[0]]) + logE[a, y[0]]
            for t in range(1, L):
                lp += np.log(p.T[y[t], y[t - 1]]) + logE[a + t, y[t]]
            lps.append(lp)
        lps = np.array(lps)
        lz = logsumexp(lps)
        total += lz
        w = np.exp(lps - lz)
        for y, wt in zip(seqs, w):
            for t in range(L):
                q[a + t, y[t]] += wt
            for t in range(L - 1):
                pairs.setdefault(a + t, np.zeros((K, K)))[y[t], y[t + 1]] += wt
        best[a:b] = seqs[int(np.argmax(lps))]
    return total, q, pairs, best


CASES = [(seed, K) for K in (2, 3) for seed in range(10)]


@pytest.mark.parametrize("seed,K", CASES)
def test_forward_backward_equals_enumeration(seed, K):
    rng = np.random.default_rng(seed)
    max_len = 7 if K == 2 else 5
    lengths = rng.integers(1, max_len + 1, size=int(rng.integers(1, 4)))
    M = int(rng.integers(1, 4))
    data = tiny_chains(rng, lengths, M, K)
    p = random_params(rng, M, K)
    total, q_b, pairs_b, best = brute(data, p)
    q, xi, ll, (first, xp) = forward_backward(data, p, pairs=True)
    assert ll == pytest.approx(total, abs=1e-10)
    assert forward_log_likelihood(data, p) == pytest.approx(total, abs=1e-10)
    np.testing.assert_allclose(q, q_b, atol=1e-10)
    assert sorted(first.tolist()) == sorted(pairs_b)
    for f, x in zip(first, xp):
        np.testing.assert_allclose(x, pairs_b[int(f)], atol=1e-10)
    # summed transitions in T's orientation: xi[k_new, k_old]
    np.testing.assert_allclose(xi, sum(pairs_b.values(), np.zeros((K, K))).T if pairs_b else 0, atol=1e-10)
    np.testing.assert_array_equal(viterbi(data, p), best)


def test_bound_is_tight_after_e_step_and_entropy_is_the_chain_entropy():
    rng = np.random.default_rng(7)
    data = tiny_chains(rng, [4, 3], 2, 2)
    p = random_params(rng, 2, 2)
    model = HMMCrowd()
    post = model.e_step(data, p)
    assert model.bound(data, post, p) == pytest.approx(model.log_likelihood(data, p), abs=1e-10)
    # exact entropy of the posterior over whole sequences, by enumeration
    H = 0.0
    st = data.sequence_starts
    logE = np.zeros((data.n_items, 2))
    for i, w, l in zip(data.item, data.worker, data.label):
        logE[i] += np.log(p.gamma[w, l])
    for s in range(2):
        a, b = st[s], st[s + 1]
        lps = []
        for y in itertools.product(range(2), repeat=b - a):
            lp = np.log(p.pi[y[0]]) + logE[a, y[0]]
            for t in range(1, b - a):
                lp += np.log(p.T[y[t], y[t - 1]]) + logE[a + t, y[t]]
            lps.append(lp)
        w = np.exp(np.array(lps) - logsumexp(lps))
        H -= float((w * np.log(w)).sum())
    assert post.entropy == pytest.approx(H, abs=1e-9)


def _random_chain_problem(seed):
    rng = np.random.default_rng(seed)
    K = int(rng.integers(2, 5))
    lengths = rng.integers(1, 30, size=int(rng.integers(1, 12)))
    return tiny_chains(rng, lengths, int(rng.integers(1, 7)), K, p_obs=float(rng.uniform(0.2, 1.0)))


@pytest.mark.parametrize("hard", [False, True])
def test_hmm_em_never_decreases_its_objective(hard):
    for seed in range(200):
        data = _random_chain_problem(seed)
        init = ("majority", "random", "all_good")[seed % 3]
        run = Run(data, HMMCrowd(prior=(0.0, 0.5, 2.0)[seed % 3], hard=hard), init, seed=seed, max_iter=30)
        run.run()
        h = run.history()
        obj, bound = h["objective"], h["bound"]
        assert np.all(np.isfinite(obj)) and np.all(np.isfinite(bound))
        assert np.all(np.diff(obj) >= -1e-9 * np.maximum(1, np.abs(obj[:-1]))), seed
        assert np.all(np.diff(bound) >= -1e-9 * np.maximum(1, np.abs(bound[:-1]))), seed
        assert run.violations == [], (seed, run.violations)


# ---------------------------------------------------- Traganitis & Giannakis Sec. 6.1.1, reproduced
def seed_crowd_sequences(n_items: int, seed: int):
    """K = 4, M = 10 (6 better than random, 4 answering at random), sequences of 40, random T."""
    from crowdlab.teaching.simulate import mix_from_counts, simulate_sequences

    return simulate_sequences(
        n_items // 40,
        40,
        4,
        10,
        self_transition=None,
        mix=mix_from_counts({"expert": 6, "spammer": 4}),
        expert_accuracy=(0.35, 0.6),
        seed=seed,
    )


def test_hmm_beats_iid_dawid_skene_at_n_1000():
    import crowdlab as cl
    from crowdlab.io.metrics import macro_f

    gains = []
    for seed in range(3):
        sim = seed_crowd_sequences(1000, seed)
        ds = cl.fit(sim.annotations, "ds")
        hmm = cl.fit(sim.annotations, "hmm")
        gains.append(macro_f(hmm.labels(), sim.truth, 4) - macro_f(ds.labels(), sim.truth, 4))
    assert np.mean(gains) > 0.01 and min(gains) > -0.01, gains


def test_transition_error_falls_as_n_grows():
    import crowdlab as cl

    errors = []
    for n in (200, 1000, 10000):
        errs = []
        for seed in range(3):
            sim = seed_crowd_sequences(n, seed)
            T_hat = cl.fit(sim.annotations, "hmm").params.T
            errs.append(np.abs(T_hat - sim.T).sum(axis=0).max())  # induced 1-norm ||T - T_hat||_1
        errors.append(np.mean(errs))
    assert errors[0] > errors[1] > errors[2], errors
