"""Generators of adversarial problems for the EM fuzz tests (seeded numpy generators, one problem per seed).

Every generator mixes ordinary problems with the awkward ones a real file can hold: a single item, a single
worker, items nobody labelled, near-deterministic workers (labels equal to the truth), one class everywhere,
repeated (item, worker) pairs, huge and tiny continuous scores (1e-200 .. 1e308, mixed signs, one outlier),
one distinct score, edge weights near the float limit, separable features for the classifier.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from crowdlab.engines.run import Run, nonfinite_entries
from crowdlab.io.data import Annotations

CLASS_DESIGNS = (
    "dense",
    "sparse",
    "single_worker",
    "single_item",
    "empty_items",
    "deterministic",
    "one_class",
    "repeats",
)


def class_problem(seed: int, K: int | None = None, max_items: int = 30, max_workers: int = 6) -> Annotations:
    """A class-label problem of design ``CLASS_DESIGNS[seed % 8]``; items nobody labelled are allowed."""
    rng = np.random.default_rng(seed)
    design = CLASS_DESIGNS[seed % len(CLASS_DESIGNS)]
    K = int(rng.integers(2, 5)) if K is None else K
    N = 1 if design == "single_item" else int(rng.integers(2, max_items))
    M = 1 if design == "single_worker" else int(rng.integers(1, max_workers))
    truth = rng.integers(0, K, size=N)
    acc = rng.uniform(0.2, 0.99, size=M)
    ii, ww = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    ii, ww = ii.ravel(), ww.ravel()
    keep = rng.random(ii.size) < (0.35 if design in ("sparse", "empty_items") else 1.0)
    if design == "empty_items":
        keep &= ii < max(1, N // 2)  # the second half of the items has no label at all
    keep[0] = True
    ii, ww = ii[keep], ww[keep]
    if design == "repeats":
        ii, ww = np.concatenate([ii, ii[: N + 1]]), np.concatenate([ww, ww[: N + 1]])
    right = rng.random(ii.size) < acc[ww]
    label = np.where(right, truth[ii], (truth[ii] + rng.integers(1, K, size=ii.size)) % K)
    if design == "deterministic":
        label = truth[ii]
    if design == "one_class":
        label = np.zeros_like(ii)
    return Annotations(
        ii,
        ww,
        label,
        [f"i{n}" for n in range(N)],
        [f"w{m}" for m in range(M)],
        [str(k) for k in range(K)],
        gold=truth,
    )


def sequence_problem(seed: int) -> Annotations:
    """Crowd-labelled Markov chains: 1-6 sequences of length 1-8, positions nobody labelled, near-deterministic
    workers and sticky chains for some seeds."""
    rng = np.random.default_rng(seed)
    K = int(rng.integers(2, 4))
    S = int(rng.integers(1, 6))
    lengths = rng.integers(1, 9, size=S)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    N = int(starts[-1])
    M = int(rng.integers(1, 5))
    truth = np.empty(N, dtype=np.int64)
    stay = 0.999 if seed % 3 == 0 else 0.6
    for s in range(S):
        y = int(rng.integers(0, K))
        for t in range(starts[s], starts[s + 1]):
            if rng.random() > stay:
                y = int(rng.integers(0, K))
            truth[t] = y
    ii, ww = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    ii, ww = ii.ravel(), ww.ravel()
    keep = rng.random(ii.size) < (1.0 if seed % 4 == 0 else 0.5)
    keep[0] = True
    ii, ww = ii[keep], ww[keep]
    acc = np.full(M, 1.0) if seed % 5 == 0 else rng.uniform(0.3, 0.95, M)
    right = rng.random(ii.size) < acc[ww]
    label = np.where(right, truth[ii], (truth[ii] + rng.integers(1, K, size=ii.size)) % K)
    return Annotations(
        ii,
        ww,
        label,
        [f"n{i}" for i in range(N)],
        [f"w{m}" for m in range(M)],
        [str(k) for k in range(K)],
        sequence_starts=starts,
    )


def network_problem(seed: int) -> Annotations:
    """A class problem on a random graph; edge weights from 1e-3 to near the float limit (their total penalty
    stays below the 1e300 the MRF accepts), isolated nodes allowed."""
    data = class_problem(seed, max_items=25, max_workers=5)
    rng = np.random.default_rng(seed + 10_000)
    N = data.n_items
    n_edges = int(rng.integers(0, 3 * N + 1))
    u, v = rng.integers(0, N, n_edges), rng.integers(0, N, n_edges)
    ok = u != v
    u, v = u[ok], v[ok]
    kind = seed % 4
    if kind == 0:
        w = np.ones(u.size)
    elif kind == 1:
        w = np.exp(rng.normal(0, 2, u.size))
    elif kind == 2:
        w = 10.0 ** rng.uniform(-3, 3, u.size)
    else:  # near overflow: total penalty (weights x delta x both directions) about 1e297
        w = np.full(u.size, 1e295 / max(u.size, 1) / max(data.n_workers, 1))
    A = sp.coo_matrix((w, (u, v)), shape=(N, N)).tocsr()
    A = A.maximum(A.T).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    return replace(data, graph=A)


SCORE_SCALES = (1.0, 1e17, 1e300, 1e-200, -1e17, 1.0)


def score_problem(seed: int) -> Annotations:
    """Continuous scores: ordinary ones in [0, 1], or scaled to 1e17 / 1e300 / 1e-200 (mixed signs), one outlier
    near 1e308, one distinct value everywhere, missing scores, single annotator or single item."""
    rng = np.random.default_rng(seed)
    N = 1 if seed % 11 == 0 else int(rng.integers(2, 30))
    M = 1 if seed % 13 == 0 else int(rng.integers(1, 8))
    ii, aa = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    keep = rng.random(ii.size) < (0.4 if seed % 2 else 1.0)
    keep[np.arange(N) * M] = True
    item, worker = ii.ravel()[keep], aa.ravel()[keep]
    mu = rng.uniform(0.2, 0.8, N)
    good = rng.random(M) < 0.6
    noise = 1e-12 if seed % 9 == 0 else 0.05  # near-deterministic good annotators
    v = np.where(good[worker], np.clip(mu[item] + rng.normal(0, noise, item.size), 0, 1), rng.random(item.size))
    v = v * SCORE_SCALES[seed % len(SCORE_SCALES)] + (rng.normal() * 1e17 if seed % 7 == 3 else 0.0)
    if seed % 7 == 0:
        v = np.round(v, 1)  # ties
    if seed % 17 == 0:
        v = np.full(v.size, (1e17, 1.0, -3e300)[seed % 3])  # one distinct value
    if seed % 19 == 0:
        v[int(rng.integers(0, v.size))] = (1.7e308, -1.7e308)[seed % 2]  # one outlier at the float limit
    return Annotations(item, worker, None, [f"i{n}" for n in range(N)], [f"a{m}" for m in range(M)], value=v)


def check_run(run: Run, *, bound_below_objective: bool = True) -> None:
    """Nothing non-finite, posteriors on the simplex, parameters finite, the objective (and bound) never falls
    for a monotone EM, and the engine recorded no violation."""
    h = run.history()
    obj, bound = h["objective"], h["bound"]
    assert np.all(np.isfinite(obj)) and np.all(np.isfinite(bound)), (obj, bound)
    for s in run.snapshots:
        q = s.q
        assert np.all(np.isfinite(q)) and q.min() >= 0.0 and q.max() <= 1.0 + 1e-12
        np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-9)
        assert nonfinite_entries(s.params) == []
    assert run.violations == [], run.violations
    if getattr(run.model, "monotone", True):
        tol = 1e-9 * np.maximum(1.0, np.abs(obj[:-1]))
        assert np.all(np.diff(obj) >= -tol), f"objective fell by {-np.diff(obj).min()}"
        assert np.all(np.diff(bound) >= -1e-9 * np.maximum(1.0, np.abs(bound[:-1])))
    if bound_below_objective and getattr(run.model, "exact", False):
        assert np.all(bound <= obj + 1e-8 * np.maximum(1.0, np.abs(obj)))


def soft_problem(seed: int, K: int | None = None, **kw) -> Annotations:
    """:func:`class_problem` as soft votes: each row's label becomes class probabilities (one-hot for some rows,
    a confidence on the label with the rest spread for others, a random Dirichlet row for the rest), expanded to
    weighted observations by :func:`crowdlab.io.data.soft_votes`."""
    from crowdlab.io.data import soft_votes

    data = class_problem(seed, K=K, **kw)
    rng = np.random.default_rng(seed + 50_000)
    n, K = data.n_obs, data.n_classes
    P = rng.dirichlet(np.full(K, (0.2, 1.0, 5.0)[seed % 3]), size=n)
    conf = rng.uniform(0.0, 1.0, n)
    spread = np.repeat(((1 - conf) / (K - 1))[:, None], K, axis=1)
    spread[np.arange(n), data.label] = conf
    kind = rng.integers(0, 3, n)  # 0: one-hot, 1: a confidence, 2: Dirichlet
    P = np.where((kind == 0)[:, None], np.eye(K)[data.label], np.where((kind == 1)[:, None], spread, P))
    P[0] = 0.5 * P[0] + 0.5 / K  # at least one row soft
    return soft_votes(data, P)
