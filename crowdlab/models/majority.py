"""Majority vote: the baseline every EM run starts from (Raykar et al. 2010 and Traganitis & Giannakis start there).

- ``vote_fractions``: q_nk = share of item n's labels that say k (Raykar's soft majority vote, the default
  starting posterior of EM).
- ``majority_posterior``: the majority-vote posterior with ties split evenly: q_nk = 1/|T_n| for every class k in
  the tie set T_n (the classes with the most votes), 0 elsewhere. Accuracy computed from it counts a tie as a
  fractional hit, as the datasets' README reports ("ties split").
- ``majority_labels``: the hard rule, deterministic and documented: the class with the most votes; among tied
  classes, the one with the most labels in the whole file; if still tied, the lowest class code.

Soft votes (``data.weight``): every count above is a sum of weights (a row with confidence 0.8 gives its class
0.8 of a vote and the others the rest), and ties are ties within rounding.
"""

from __future__ import annotations

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import ModelInfo, needs_classes
from crowdlab.models.kernels import ranked_argmax


def vote_fractions(data: Annotations) -> np.ndarray:
    """(N, K) share of each item's labels per class (uniform for an item nobody labelled)."""
    v = data.vote_counts
    tot = v.sum(axis=1, keepdims=True)
    return np.where(tot > 0, v / np.where(tot > 0, tot, 1), 1.0 / v.shape[1])


def majority_posterior(data: Annotations) -> np.ndarray:
    """(N, K) majority vote with ties split evenly among the tied classes (an unlabelled item: all tied)."""
    v = data.vote_counts
    top = v == v.max(axis=1, keepdims=True)
    return top / top.sum(axis=1, keepdims=True)


TIE_RULES = {
    "frequent": "the tied class most frequent in the whole file (then the lowest code)",
    "random": "a tied class drawn at random (seeded)",
    "first": "the label of the first worker (in file order) who named one of the tied classes",
}


def tied_items(data: Annotations) -> np.ndarray:
    """(N,) True where two or more classes share the most votes (an unlabelled item counts as tied)."""
    v = data.vote_counts
    return (v == v.max(axis=1, keepdims=True)).sum(axis=1) > 1


def _votes(data: Annotations) -> np.ndarray:
    """(N, K) votes: the cached vote counts when they exist, else one ``bincount`` over the labels (integers, no
    float copy)."""
    cached = data.__dict__.get("vote_counts")
    if cached is not None or data.is_soft or data.response_names:  # soft votes: sums of weights (floats)
        return data.vote_counts
    K = data.n_classes
    key = data.item.astype(np.int64)
    key *= K
    key += data.label
    return np.bincount(key, minlength=data.n_items * K).reshape(data.n_items, K)


def majority_labels(data: Annotations, tie_break: str = "frequent", seed: int | None = 0) -> np.ndarray:
    """(N,) hard majority vote; a tie goes by ``tie_break`` (see ``TIE_RULES``): "frequent" (the default: the
    most frequent class overall, then the lowest code), "random" (uniform among the tied classes, seeded) or
    "first" (the first tied label given, in file order)."""
    if tie_break == "frequent" and data.is_soft:  # fractional votes: ties within rounding, then the rule's order
        v = data.vote_counts
        K = v.shape[1]
        order = np.lexsort((np.arange(K), -v.sum(axis=0)))
        rank = np.empty(K)
        rank[order] = np.arange(K)
        top = v >= v.max(axis=1, keepdims=True) - 1e-12 * np.maximum(v.max(axis=1, keepdims=True), 1.0)
        return np.argmin(np.where(top, rank[None, :], np.inf), axis=1).astype(np.int32)
    if tie_break == "frequent":
        v = _votes(data)
        K = v.shape[1]
        # rank classes by overall frequency (desc), then by code (asc): a tie-breaking bonus below one vote, in
        # integers: K x votes + (K - 1 for the first class in that order .. 0 for the last), so the arg-max is exact
        order = np.lexsort((np.arange(K), -np.einsum("ij->j", v)))
        bonus = np.empty(K, dtype=v.dtype)
        bonus[order] = np.arange(K - 1, -1, -1)
        return ranked_argmax(v, bonus)
    v = data.vote_counts
    K = v.shape[1]
    top = v == v.max(axis=1, keepdims=True)
    if tie_break == "random":
        noise = np.random.default_rng(seed).random(v.shape)
        return np.argmax(np.where(top, noise, -1.0), axis=1).astype(np.int32)
    if tie_break == "first":
        # rank of each (item, class) by the first observation that names it; untouched cells rank last
        first = np.full(v.shape, np.iinfo(np.int64).max, dtype=np.int64)
        cls = data.label < v.shape[1]  # responses that are not classes name no class
        np.minimum.at(first, (data.item[cls], data.label[cls]), np.arange(data.n_obs, dtype=np.int64)[cls])
        return np.argmin(np.where(top, first, np.iinfo(np.int64).max), axis=1).astype(np.int32)
    raise ModelError(f"Unknown tie rule {tie_break!r}; choose one of {', '.join(TIE_RULES)}.")


class MajorityVote:
    """Not an EM model: one step, no parameters to learn. Offered on the Step page as the baseline."""

    reads_responses = True  # a response that is not a class is not a vote

    info = ModelInfo("mv", "Majority vote", "classes", exact=True, latent="item")
    hard = False
    prior = 0.0
    iterative = False
    has_prior = False

    def __init__(self, tie_break: str = "frequent", tie_seed: int | None = 0) -> None:
        if tie_break not in TIE_RULES:
            from crowdlab.errors import ModelError

            raise ModelError(f"Unknown tie rule {tie_break!r}; choose one of {', '.join(TIE_RULES)}.")
        self.tie_break = tie_break
        self.tie_seed = tie_seed

    def posterior(self, data: Annotations) -> np.ndarray:
        return majority_posterior(data)

    def labels(self, data: Annotations) -> np.ndarray:
        """The hard labels under this model's tie rule."""
        return majority_labels(data, self.tie_break, self.tie_seed)

    def hard_labels(self, q: np.ndarray) -> np.ndarray:
        return np.argmax(q, axis=1).astype(np.int32)

    def check(self, data: Annotations) -> None:
        from crowdlab.errors import ModelError

        if data.is_continuous:
            raise ModelError(needs_classes("Majority vote", data))
