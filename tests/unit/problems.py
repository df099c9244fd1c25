"""Small random crowd problems for the engine tests (independent of crowdlab.teaching.simulate on purpose)."""

from __future__ import annotations

import numpy as np

from crowdlab.io.data import Annotations


def random_problem(rng: np.random.Generator, n_items: int, n_workers: int, K: int, design: str) -> Annotations:
    """A random label set of one of several awkward designs.

    design: "dense", "sparse" (each pair observed w.p. 0.3, >= 1 label per item), "single" (one worker),
    "unanimous" (everyone gives the same class everywhere... per item), "deterministic" (near-perfect workers),
    "repeats" (repeated (item, worker) pairs).
    """
    truth = rng.integers(0, K, size=n_items)
    if design == "single":
        n_workers = 1
    acc = rng.uniform(0.3, 0.95, size=n_workers)
    if design == "deterministic":
        acc = np.full(n_workers, 1.0 - 1e-9)
    pairs_i, pairs_w = np.meshgrid(np.arange(n_items), np.arange(n_workers), indexing="ij")
    pairs_i, pairs_w = pairs_i.ravel(), pairs_w.ravel()
    if design == "sparse":
        keep = rng.random(pairs_i.size) < 0.3
        first = rng.integers(0, n_workers, size=n_items)  # guarantee one label per item
        keep[np.arange(n_items) * n_workers + first] = True
        pairs_i, pairs_w = pairs_i[keep], pairs_w[keep]
    if design == "repeats":
        pairs_i = np.concatenate([pairs_i, pairs_i[:n_items]])
        pairs_w = np.concatenate([pairs_w, pairs_w[:n_items]])
    right = rng.random(pairs_i.size) < acc[pairs_w]
    wrong = (truth[pairs_i] + rng.integers(1, K, size=pairs_i.size)) % K
    label = np.where(right, truth[pairs_i], wrong)
    if design == "unanimous":
        label = truth[pairs_i]
    return Annotations(
        pairs_i,
        pairs_w,
        label,
        [f"i{n}" for n in range(n_items)],
        [f"w{m}" for m in range(n_workers)],
        [str(k) for k in range(K)],
        gold=truth,
    )


DESIGNS = ("dense", "sparse", "single", "unanimous", "deterministic", "repeats")
