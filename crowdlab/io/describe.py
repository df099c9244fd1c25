"""Pictures of a label set before any model: who labelled what, class balance, worker-by-worker agreement."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdlab.io.annotations import Annotations


def class_balance(data: Annotations) -> pd.DataFrame:
    """Labels per class (and gold per class when gold exists); a "can't tell" response gets a row after them."""
    R = data.n_responses
    names = data.class_names + data.response_names
    out = pd.DataFrame({"class": names, "labels": np.bincount(data.label, minlength=R)})
    if data.has_gold:
        g = data.gold[data.gold_mask]
        out["gold"] = np.bincount(g, minlength=R)
    return out


def top_workers(data: Annotations, limit: int) -> np.ndarray:
    """Codes of the ``limit`` workers with the most labels (ties by code), most active first."""
    n = data.labels_per_worker
    order = np.lexsort((np.arange(n.size), -n))
    return order[:limit]


def worker_agreement(data: Annotations, limit: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairwise agreement of the ``limit`` most active workers.

    Returns ``(workers, agree, shared)``: worker codes (W,), ``agree[a, b]`` = share of label pairs on items both
    labelled that are equal (NaN when they share no item), ``shared[a, b]`` = number of such label pairs. One
    sparse product X_W^T X_W over the item x (worker, class) count matrix; the diagonal compares a worker with
    themself (1 unless they labelled an item twice differently).
    """
    K, R = data.n_classes, data.n_responses  # the class answers only: a "can't tell" shares nothing
    workers = top_workers(data, limit)
    cols = (workers[:, None] * R + np.arange(K)[None, :]).ravel()
    X = data.label_counts[:, cols]
    B = (X.T @ X).toarray().reshape(len(workers), K, len(workers), K)
    same = np.einsum("akbk->ab", B)
    shared = B.sum(axis=(1, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        agree = np.where(shared > 0, same / np.where(shared > 0, shared, 1), np.nan)
    return workers, agree, shared


def worker_table(data: Annotations) -> pd.DataFrame:
    """Per worker: labels given, items covered, and share of labels per class (and per "can't tell" response)."""
    K = data.n_responses
    counts = np.bincount(data.worker.astype(np.int64) * K + data.label, minlength=data.n_workers * K)
    counts = counts.reshape(data.n_workers, K)
    items = np.bincount(data.worker, minlength=data.n_workers)
    out = pd.DataFrame({"worker": data.worker_names, "labels": items})
    with np.errstate(invalid="ignore", divide="ignore"):
        share = counts / np.maximum(items[:, None], 1)
    for k, c in enumerate(data.class_names + data.response_names):
        out[f"share {c}"] = share[:, k]
    return out
