"""MACE: who is spamming (Hovy, Berg-Kirkpatrick, Vaswani & Hovy 2013, "Learning Whom to Trust with MACE").

Model (Hovy et al. 2013, Sec. 2, Fig. 1): the true label T_i of item i is drawn from a uniform prior (or, with
``class_prior="estimate"``, from pi estimated like Dawid-Skene's). Each time worker j labels item i, a coin
S_ij ~ Bernoulli(1 - theta_j) decides whether j is spamming: if not (S_ij = 0), the label is the truth,
A_ij = T_i; if so, A_ij is drawn from j's own spamming strategy xi_j (a distribution over the K classes).
theta_j is j's competence; 1 - theta_j the probability of spamming. Summing over S_ij gives a confusion matrix
with columns = true class: Gamma_j(a, t) = theta_j I(a = t) + (1 - theta_j) xi_j(a).

EM with both latent layers (Sec. 2.1): the E-step's posterior over T_i is exact (Dawid-Skene's eq. (9) with that
Gamma_j); given T, P(S_ij = 0 | A_ij = a, T_i = a) = theta_j / (theta_j + (1 - theta_j) xi_j(a)) and S_ij = 1
whenever A_ij != T_i. The expected counts then give theta_j = E[#not spamming] / #labels and xi_j(a) =
E[#spammed a] / E[#spammed], with Beta(a, b) and Dirichlet(c) priors adding a - 1, b - 1 and c - 1 pseudo-counts
(MAP; the paper's Bayesian version puts the same priors on theta and xi). Everything reduces to the per-worker
Dawid-Skene counts C_j(a, t) = sum_i q_it #(j said a on i): D_j(a) = C_j(a, a) labels that may be honest and
O_j(a) = sum_{t != a} C_j(a, t) that are surely spam.

Here the M-step runs that inner EM over S (cheap: O(M K) per round) for up to ``inner`` rounds, starting from the
parameters of the E-step that produced q (``WarmPosterior``): each round raises E_q[log p(A, T | theta, xi)] +
log prior, so the M-step never lowers it (generalised EM) and the objective log p(A | theta, xi) + log prior,
with S and T summed out, never decreases (checked on every step).

Shapes: pi (K,), theta (M,), xi (M, K), gamma (M, K, K), q (N, K).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdlab.data import Annotations
from crowdlab.models.base import LatentModel, ModelInfo, WarmPosterior, log_beta_pdf, log_dirichlet
from crowdlab.models.dawid_skene import ConfusionLogJoint, expected_counts
from crowdlab.models.params import ClassParams

CLASS_PRIORS = ("uniform", "estimate")


def mace_gamma(theta: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """(M, K, K): Gamma_j(a, t) = theta_j I(a = t) + (1 - theta_j) xi_j(a) (columns = true class)."""
    theta = np.asarray(theta, dtype=np.float64)
    xi = np.asarray(xi, dtype=np.float64)
    K = xi.shape[1]
    return np.eye(K)[None] * theta[:, None, None] + (1.0 - theta)[:, None, None] * xi[:, :, None]


@dataclass(frozen=True, eq=False)
class MaceParams(ClassParams):
    """MACE parameters: ``extra["theta"]`` (M,) competence (1 - P(spamming)); ``xi`` (M, K) spam strategies."""

    xi: np.ndarray = None

    @property
    def theta(self) -> np.ndarray:
        return self.extra["theta"]

    @property
    def spamming(self) -> np.ndarray:
        """(M,) 1 - theta_j: how often worker j answers from its spamming strategy rather than the truth."""
        return 1.0 - self.theta

    def to_dict(self, worker_names=None, class_names=None) -> dict:
        out = super().to_dict(worker_names, class_names)
        out["xi"] = self.xi.tolist()
        return out


def mace_params(pi: np.ndarray, theta: np.ndarray, xi: np.ndarray) -> MaceParams:
    theta = np.asarray(theta, dtype=np.float64)
    xi = np.asarray(xi, dtype=np.float64)
    return MaceParams(pi=np.asarray(pi, dtype=np.float64), gamma=mace_gamma(theta, xi), extra={"theta": theta}, xi=xi)


def spam_responsibility(theta: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """(M, K): P(S_ij = 0 | A_ij = a, T_i = a) = theta_j / (theta_j + (1 - theta_j) xi_j(a))."""
    den = theta[:, None] + (1.0 - theta)[:, None] * xi
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, theta[:, None] / np.where(den > 0, den, 1.0), 0.0)


class MACE(ConfusionLogJoint, LatentModel):
    """MACE EM (Hovy et al. 2013), MAP with Beta and Dirichlet priors; hard EM optional."""

    info = ModelInfo("mace", "MACE (competence and spamming)", "classes", exact=True, latent="item")

    def __init__(
        self,
        prior: float = 0.0,
        hard: bool = False,
        class_prior: str = "uniform",
        theta_prior: tuple[float, float] = (2.0, 2.0),
        strategy_prior: float = 2.0,
        inner: int = 20,
    ) -> None:
        """``theta_prior``: Beta(a, b) on each competence theta_j (default Beta(2, 2): one pseudo-label each way, which
        keeps a worker seen on few labels off theta = 0 or 1); ``strategy_prior``: symmetric Dirichlet(c) on each
        spam strategy xi_j (c > 1 pulls a strategy seen on few labels towards uniform); all >= 1 for a closed-form
        MAP. The defaults were chosen on the 16 real sets of benchmarks/bench_peers.py. ``prior`` adds that many
        pseudo-counts to all of them and to an estimated class prior."""
        if prior < 0:
            raise ValueError("prior strength must be >= 0.")
        if class_prior not in CLASS_PRIORS:
            raise ValueError(f"class_prior must be one of {CLASS_PRIORS}.")
        s = float(prior)
        self.prior = s
        self.hard = bool(hard)
        self.class_prior = class_prior
        self.theta_prior = (float(theta_prior[0]) + s, float(theta_prior[1]) + s)
        self.strategy_prior = float(strategy_prior) + s
        if min(self.theta_prior) < 1.0 or self.strategy_prior < 1.0:
            raise ValueError("MACE's Beta and Dirichlet prior parameters must be >= 1 for a closed-form MAP M-step.")
        self.inner = int(inner)

    @property
    def has_prior(self) -> bool:
        return self.theta_prior != (1.0, 1.0) or self.strategy_prior != 1.0 or self.prior > 0

    def e_step(self, data: Annotations, params: MaceParams) -> WarmPosterior:
        return WarmPosterior(super().e_step(data, params), params)

    def as_posterior(self, data: Annotations, q: np.ndarray) -> WarmPosterior:
        return WarmPosterior(self.clamp(data, q), None)

    def m_step(self, data: Annotations, post) -> MaceParams:
        q, start = (post.q, post.params) if isinstance(post, WarmPosterior) else (post, None)
        M, K = data.n_workers, data.n_classes
        C = expected_counts(data, q)  # C[j, a, t]
        D = np.diagonal(C, axis1=1, axis2=2)  # (M, K): labels a on items whose truth may be a
        n_lab = C.sum(axis=2)  # (M, K): labels a given by j
        O = n_lab - D  # surely spam
        n = n_lab.sum(axis=1)
        a, b = self.theta_prior
        c = self.strategy_prior
        if start is None:
            theta, xi = np.full(M, 0.5), np.full((M, K), 1.0 / K)
            rounds = 5 * self.inner
        else:
            theta, xi = start.theta, start.xi
            rounds = self.inner
        for _ in range(rounds):
            r = spam_responsibility(theta, xi)
            honest = (D * r).sum(axis=1)
            spam = D * (1.0 - r) + O
            den = n + a + b - 2.0
            theta_new = np.where(den > 0, (honest + a - 1.0) / np.where(den > 0, den, 1.0), 0.5)
            theta_new = np.clip(theta_new, 0.0, 1.0)
            num = spam + (c - 1.0)
            tot = num.sum(axis=1, keepdims=True)
            xi_new = np.where(tot > 0, num / np.where(tot > 0, tot, 1.0), 1.0 / K)
            done = np.abs(theta_new - theta).max() < 1e-12 and np.abs(xi_new - xi).max() < 1e-12
            theta, xi = theta_new, xi_new
            if done:
                break
        if self.class_prior == "uniform":
            pi = np.full(K, 1.0 / K)
        else:
            pi = (q.sum(axis=0) + self.prior) / (q.shape[0] + self.prior * K)
        return mace_params(pi, theta, xi)

    def log_prior(self, params: MaceParams) -> float:
        if not self.has_prior:
            return 0.0
        out = log_beta_pdf(params.theta, *self.theta_prior) + log_dirichlet(params.xi, self.strategy_prior)
        if self.class_prior == "estimate" and self.prior > 0:
            out += log_dirichlet(params.pi, 1.0 + self.prior)
        return float(out)

    def params_from(self, pi: np.ndarray, theta: np.ndarray, xi: np.ndarray) -> MaceParams:
        return mace_params(pi, theta, xi)
