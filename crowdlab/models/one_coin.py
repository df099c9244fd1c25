"""One-coin (symmetric noise) model: one accuracy per worker, errors spread evenly.

Donmez et al. 2010, eq. (8): p_theta(yhat | y) = theta^{I(yhat = y)} ((1 - theta) / (l - 1))^{I(yhat != y)}.
Here every worker m has its own theta_m, so Gamma_m = theta_m I + (1 - theta_m) / (K - 1) (1 1^T - I), and the
class prior pi is estimated like Dawid-Skene's, or held fixed at a known marginal (``class_prior=``), as Donmez et al.
do.

- E-step: Traganitis & Giannakis eq. (9) with that Gamma_m.
- M-step: theta_m = (expected correct labels of m + a - 1) / (labels of m + a + b - 2), the exact maximiser
  of sum [c log theta + (n - c) log((1 - theta) / (K - 1))] + log Beta(theta; a, b); a = b = 1 + s for prior
  strength s (s = 0: maximum likelihood). pi as in Dawid-Skene.
"Can't tell" responses (``data.response_names``): the model has no confusion matrix to give them rows by class, and
its errors do not depend on the class either, so a worker's abstentions get one rate per response that does not
depend on the class, rho_m(r) = #(m said r) / #(m's answers) (the maximum-likelihood rate: q sums to one on every
item, so it is the plain share); Gamma_m is (M, K + R, K) with class rows (1 - sum_r rho_m(r)) times eq. (8) and
response rows rho_m(r). Every class multiplies the same factor, so abstentions leave the class posterior exactly as
it is without them (a worker who always abstains: as without that worker, tested to 1e-12); theta_m counts class
answers only. Two-coin does the same (:mod:`crowdlab.models.two_coin`).

Shapes: pi (K,), theta (M,), gamma (M, K, K), q (N, K).
"""

from __future__ import annotations

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import LatentModel, ModelInfo, log_beta_pdf, log_dirichlet
from crowdlab.models.dawid_skene import ConfusionLogJoint, expected_counts, with_response_rows
from crowdlab.models.params import ClassParams


def one_coin_gamma(theta: np.ndarray, K: int) -> np.ndarray:
    """(M, K, K) confusion matrices of Donmez et al. 2010 eq. (8) for accuracies ``theta`` (M,)."""
    theta = np.asarray(theta, dtype=np.float64)
    off = (1.0 - theta) / (K - 1)
    eye = np.eye(K)[None, :, :]
    return eye * theta[:, None, None] + (1.0 - eye) * off[:, None, None]


def class_free_rates(counts: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(class counts (M, K, K), rates (M, R) or None) from expected counts (M, K + R, K): each worker's share of
    answers that were response r, whatever the class (one-coin, two-coin); None without such responses."""
    if counts.shape[1] == K:
        return counts, None
    total = counts.sum(axis=(1, 2))
    said = counts[:, K:].sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(total[:, None] > 0, said / np.where(total > 0, total, 1.0)[:, None], 0.0)
    return counts[:, :K], rho


class OneCoin(ConfusionLogJoint, LatentModel):
    """One accuracy per worker (symmetric noise), optional Beta(1+s, 1+s) prior on each accuracy."""

    spreads_errors = True
    reads_responses = True  # "can't tell": a rate per worker that does not depend on the class (module docstring)
    info = ModelInfo(
        "one_coin",
        "One-coin (symmetric noise)",
        "classes",
        exact=True,
        latent="item",
        prior_pull=(
            "Beta(1 + s, 1 + s) on each worker's accuracy and s pseudo-counts on the class prior: a stronger "
            "prior pulls every accuracy towards 0.5 (not 1/K)"
        ),
    )

    def __init__(self, prior: float = 0.0, hard: bool = False, class_prior=None) -> None:
        if prior < 0:
            raise ModelError("prior strength must be >= 0.")
        self.prior = float(prior)
        self.hard = bool(hard)
        # Donmez et al. hold the marginal p(y) fixed and known; None estimates it like Dawid-Skene
        self.class_prior = None if class_prior is None else np.asarray(class_prior, dtype=np.float64)

    @property
    def has_prior(self) -> bool:
        return self.prior > 0

    def m_step(self, data: Annotations, q: np.ndarray) -> ClassParams:
        return self.m_step_from_stats(expected_counts(data, q), self.q_column_sums(q), q.shape[0])

    def m_step_from_stats(self, counts: np.ndarray, q_sum: np.ndarray, n_items: int) -> ClassParams:
        """The M-step from the expected counts (M, K, K), the class totals (K,) and N (see
        `crowdlab.engines.blocks`)."""
        counts, rho = class_free_rates(counts, q_sum.shape[0])
        correct = np.trace(counts, axis1=1, axis2=2)
        total = counts.sum(axis=(1, 2))
        s = self.prior
        with np.errstate(invalid="ignore", divide="ignore"):
            theta = np.where(total + 2 * s > 0, (correct + s) / np.maximum(total + 2 * s, 1e-300), 0.5)
        theta = np.clip(theta, 0.0, 1.0)
        if self.class_prior is not None:
            pi = self.class_prior
        else:
            pi = (q_sum + s) / (n_items + s * q_sum.shape[0])
        return self.params_from(pi, theta, rho)

    def params_from(self, pi: np.ndarray, theta: np.ndarray, abstain: np.ndarray | None = None) -> ClassParams:
        """``abstain``: (M, R) rates of the responses that are not classes, or None."""
        pi = np.asarray(pi, dtype=np.float64)
        gamma = one_coin_gamma(theta, pi.shape[0])
        if abstain is None:
            return ClassParams(pi=pi, gamma=gamma, extra={"theta": np.asarray(theta)})
        gamma = with_response_rows(gamma, np.asarray(abstain, dtype=np.float64)[:, :, None])
        return ClassParams(pi=pi, gamma=gamma, extra={"theta": np.asarray(theta), "abstain": np.asarray(abstain)})

    def free_parts(self, params: ClassParams) -> list:
        """Accelerated EM extrapolates log pi, logit theta and the logs of the abstention rates and what is left."""
        parts = [(params.pi, "simplex", 0), (params.extra["theta"], "logit", 0)]
        if "abstain" in params.extra:
            parts.append((params.extra["abstain"], "rates", 1))
        return parts

    def from_free_parts(self, params: ClassParams, arrays: list[np.ndarray]) -> ClassParams:
        return self.params_from(arrays[0], arrays[1], arrays[2] if len(arrays) > 2 else None)

    def log_prior(self, params: ClassParams) -> float:
        if not self.has_prior:
            return 0.0
        a = 1.0 + self.prior
        out = log_beta_pdf(params.extra["theta"], a, a)
        if self.class_prior is None:
            out += log_dirichlet(params.pi, a)
        return out
