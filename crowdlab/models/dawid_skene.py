"""Dawid-Skene: a full confusion matrix per worker (Traganitis & Giannakis, Sec. 3.1, eqs. (9)-(11)).

Model: y_n ~ Categorical(pi); each label of worker m on item n is k' with probability Gamma_m(k', y_n).

- E-step, eq. (9): q_nk ∝ pi_k * prod_m prod_k' Gamma_m(k', k)^{I(f_m(x_n) = k')}, computed in log space as one
  sparse product ``X @ log Gamma`` (X: item x (worker, label) counts), normalised with logsumexp.
- M-step, eqs. (10)-(11): Gamma_m(k', k) = sum_n q_nk I(f_m(x_n) = k') / sum_k'' sum_n q_nk I(f_m(x_n) = k''),
  i.e. ``X.T @ q`` normalised per column; pi_k = sum_n q_nk / N.
- MAP (optional): a symmetric Dirichlet(1 + s) prior on every column of every Gamma_m and on pi adds s
  pseudo-counts to each cell; the objective then includes the log prior densities.

Objective: log p(x | theta) = sum_n log sum_k pi_k prod Gamma_m(f_m(x_n), k) (+ log prior): exactly what EM climbs.
Shapes: pi (K,), gamma (M, K, K), q (N, K).

Soft votes (``data.weight``): X holds each observation's weight instead of 1, so the E-step's product raises
Gamma_m(l, k) to the weight and the M-step counts q times the weight; EM climbs the weighted likelihood
sum_n log sum_k pi_k prod Gamma_m(l, k)^w (+ log prior), the objective above when every weight is 1.

Responses that are not classes (``data.response_names``, e.g. "can't tell"): gamma is (M, K + R, K), a column
per true class over every response, so Gamma_m("can't tell", k) is worker m's rate of abstaining on class k, learnt
by the same eqs. (9)-(11). A worker who always abstains has Gamma_m("can't tell", k) = 1 for every k (with no
prior): the factor is 1 and the posterior is the one without that worker.
"""

from __future__ import annotations

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import LatentModel, ModelInfo, log_dirichlet, normalise_columns, safe_log
from crowdlab.models.kernels import add_row_offset
from crowdlab.models.parallel import counts_dot, sparse_dot
from crowdlab.models.params import ClassParams


def class_log_joint(data: Annotations, pi: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """(N, K): log pi_k + sum over n's labels of log Gamma_m(label, k): Traganitis & Giannakis eq. (9) before 1/Z."""
    return add_row_offset(*class_log_joint_parts(data, pi, gamma))


def class_log_joint_parts(data: Annotations, pi: np.ndarray, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(X @ log Gamma, log pi): the log joint of eq. (9) is their sum by rows (see `LatentModel.log_joint_parts`)."""
    M, R, K = gamma.shape  # R = K, or K + the responses that are not classes ("can't tell")
    log_g = safe_log(gamma).reshape(M * R, K)
    out = sparse_dot(data.label_counts, log_g)  # n_jobs threads (crowdlab.models.parallel), else None
    return (np.asarray(data.label_counts @ log_g) if out is None else out), safe_log(pi)


def expected_counts(data: Annotations, q: np.ndarray) -> np.ndarray:
    """(M, K, K): counts[m, k', k] = sum_n q_nk * #(worker m said k' on item n) -- the numerator of eq. (11)."""
    M, K = data.n_workers, data.n_classes
    out = counts_dot(data, q)  # n_jobs threads (crowdlab.models.parallel), else None
    return np.asarray(data.label_counts_t @ q if out is None else out).reshape(M, data.n_responses, K)


def split_responses(counts: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """(class counts (M, K, K), rates (M, R, K)) from expected counts (M, K + R, K) with R responses that are not
    classes: rho_m(r, k) = C_m(K + r, k) / sum_l C_m(l, k), worker m's rate of answering r on class k, the
    maximiser of sum_k sum_l C_m(l, k) log P(l | k). Where m has no counts under class k any rate maximises it;
    m's rate over all classes is taken (0 for a worker with no counts), so a class the posterior has dropped can
    come back (a Bayesian class prior keeps it alive) without a worker who always abstains ruling it out."""
    total = counts.sum(axis=1, keepdims=True)
    all_total = total.sum(axis=2)  # (M, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.where(all_total > 0, counts[:, K:].sum(axis=2) / np.where(all_total > 0, all_total, 1.0), 0.0)
        rho = np.where(total > 0, counts[:, K:] / np.where(total > 0, total, 1.0), pooled[:, :, None])
    return counts[:, :K], rho


def with_response_rows(gamma: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """(M, K + R, K): P(class l | k) = (1 - sum_r rho_m(r, k)) gamma_m(l, k) and P(response r | k) = rho_m(r, k)
    (``rho`` (M, R, K), or (M, R, 1) for a rate that does not depend on the class)."""
    rho = np.broadcast_to(rho, (gamma.shape[0], rho.shape[1], gamma.shape[2]))
    answered = np.clip(1.0 - rho.sum(axis=1, keepdims=True), 0.0, 1.0)
    return np.concatenate([answered * gamma, rho], axis=1)


def log_response_rows(log_gamma: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """(M, K + R, K): :func:`with_response_rows` in log space for a class part given by its (expected) logs:
    log_gamma + log(1 - sum_r rho) on the class rows, log rho on the response rows (``safe_log``: a rate of 0 or
    1 gives a finite log that multiplies a count of 0)."""
    rho = np.broadcast_to(rho, (log_gamma.shape[0], rho.shape[1], log_gamma.shape[2]))
    answered = np.clip(1.0 - rho.sum(axis=1, keepdims=True), 0.0, 1.0)
    return np.concatenate([log_gamma + safe_log(answered), safe_log(rho)], axis=1)


class ConfusionLogJoint:
    """The log joint of eq. (9) for a model whose parameters carry a class prior ``pi`` and per-worker confusion
    matrices ``gamma`` (Dawid-Skene, one-coin, two-coin, MACE): in one piece, and as (sparse product, log pi) for
    the E-step's kernel pass (`LatentModel.log_joint_parts`)."""

    def log_joint(self, data: Annotations, params: ClassParams) -> np.ndarray:
        return class_log_joint(data, params.pi, params.gamma)

    def log_joint_parts(self, data: Annotations, params: ClassParams) -> tuple[np.ndarray, np.ndarray]:
        return class_log_joint_parts(data, params.pi, params.gamma)


class DawidSkene(ConfusionLogJoint, LatentModel):
    """Dawid-Skene EM with optional symmetric Dirichlet priors (MAP) and optional hard EM."""

    reads_responses = True  # responses that are not classes: rows of the confusion matrices

    info = ModelInfo(
        "ds",
        "Dawid-Skene",
        "classes",
        exact=True,
        latent="item",
        prior_pull=(
            "s pseudo-counts in every cell of every confusion matrix and of the class prior: a stronger prior "
            "pulls them towards uniform"
        ),
    )

    def __init__(self, prior: float = 0.0, hard: bool = False) -> None:
        if prior < 0:
            raise ModelError("prior strength must be >= 0 (pseudo-counts added to every cell).")
        self.prior = float(prior)
        self.hard = bool(hard)

    @property
    def has_prior(self) -> bool:
        return self.prior > 0

    def m_step(self, data: Annotations, q: np.ndarray) -> ClassParams:
        return self.m_step_from_stats(expected_counts(data, q), self.q_column_sums(q), q.shape[0])

    def m_step_from_stats(self, counts: np.ndarray, q_sum: np.ndarray, n_items: int) -> ClassParams:
        """Eqs. (10)-(11) from the expected counts (M, K, K), the class totals sum_n q_nk (K,) and N: what the
        streaming and Dask engines sum over chunks or partitions (`crowdlab.engines.blocks`)."""
        gamma = normalise_columns(counts, self.prior)
        K = counts.shape[2]
        if counts.shape[1] > K and self.prior == 0:  # non-class responses: a column with no counts stays uniform
            empty = counts.sum(axis=1) <= 0  # over the classes only, as without them (no evidence of abstaining)
            if empty.any():
                fill = np.zeros(counts.shape[1])
                fill[:K] = 1.0 / K
                gamma = np.where(empty[:, None, :], fill[None, :, None], gamma)
        pi = (q_sum + self.prior) / (n_items + self.prior * q_sum.shape[0])
        return ClassParams(pi=pi, gamma=gamma)

    def log_prior(self, params: ClassParams) -> float:
        if not self.has_prior:
            return 0.0
        a = 1.0 + self.prior
        return log_dirichlet(np.swapaxes(params.gamma, 1, 2), a) + log_dirichlet(params.pi, a)

    def free_parts(self, params: ClassParams) -> list:
        """Accelerated EM extrapolates log pi and log Gamma (each column renormalised at the map)."""
        return [(params.pi, "simplex", 0), (params.gamma, "simplex", 1)]

    def from_free_parts(self, params: ClassParams, arrays: list[np.ndarray]) -> ClassParams:
        return ClassParams(pi=arrays[0], gamma=arrays[1])

    def params_from(self, pi: np.ndarray, gamma: np.ndarray) -> ClassParams:
        """User-given parameters (validated: simplex columns)."""
        return ClassParams(pi=np.asarray(pi, float), gamma=np.asarray(gamma, float))
