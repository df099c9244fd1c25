"""Majority vote: the baseline every EM run starts from (Raykar et al. 2010 and Traganitis & Giannakis start there).

- ``vote_fractions``: q_nk = share of item n's labels that say k (Raykar's soft majority vote, the default
  starting posterior of EM).
- ``majority_posterior``: the majority-vote posterior with ties split evenly: q_nk = 1/|T_n| for every class k in
  the tie set T_n (the classes with the most votes), 0 elsewhere. Accuracy computed from it counts a tie as a
  fractional hit, as the datasets' README reports ("ties split").
- ``majority_labels``: the hard rule, deterministic and documented: the class with the most votes; among tied
  classes, the one with the most labels in the whole file; if still tied, the lowest class code.
"""

from __future__ import annotations

import numpy as np

from crowdlab.data import Annotations
from crowdlab.models.base import ModelInfo


def vote_fractions(data: Annotations) -> np.ndarray:
    """(N, K) share of each item's labels per class (uniform for an item nobody labelled)."""
    v = data.vote_counts
    tot = v.sum(axis=1, keepdims=True)
    return np.where(tot > 0, v / np.maximum(tot, 1), 1.0 / v.shape[1])


def majority_posterior(data: Annotations) -> np.ndarray:
    """(N, K) majority vote with ties split evenly among the tied classes (an unlabelled item: all tied)."""
    v = data.vote_counts
    top = v == v.max(axis=1, keepdims=True)
    return top / top.sum(axis=1, keepdims=True)


def majority_labels(data: Annotations) -> np.ndarray:
    """(N,) hard majority vote; ties -> most frequent class overall -> lowest code."""
    v = data.vote_counts
    overall = v.sum(axis=0)
    K = v.shape[1]
    # rank classes by overall frequency (desc), then by code (asc): a tiny tie-breaking bonus < 1 vote
    order = np.lexsort((np.arange(K), -overall))
    bonus = np.empty(K)
    bonus[order] = (K - np.arange(K)) / (K + 1.0) * 0.5
    return np.argmax(v + bonus[None, :], axis=1).astype(np.int32)


class MajorityVote:
    """Not an EM model: one step, no parameters to learn. Offered on the Step page as the baseline."""

    info = ModelInfo("mv", "Majority vote", "classes", exact=True, latent="item")
    hard = False
    prior = 0.0
    iterative = False
    has_prior = False

    def posterior(self, data: Annotations) -> np.ndarray:
        return majority_posterior(data)

    def hard_labels(self, q: np.ndarray) -> np.ndarray:
        return np.argmax(q, axis=1).astype(np.int32)

    def check(self, data: Annotations) -> None:
        from crowdlab.errors import ModelError

        if data.is_continuous:
            raise ModelError("Majority vote needs class labels; this dataset has continuous scores.")
