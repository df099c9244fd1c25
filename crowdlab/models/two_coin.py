"""Two-coin model for binary labels (Raykar et al. 2010, "a two coin analogy").

Worker j has sensitivity alpha_j = P(says 1 | y = 1) and specificity beta_j = P(says 0 | y = 0); the prevalence
is p = P(y = 1). In the confusion-matrix convention (columns = true class):
Gamma_j = [[beta_j, 1 - alpha_j], [1 - beta_j, alpha_j]].

- E-step (Raykar): mu_i = a_i p / (a_i p + b_i (1 - p)) with a_i = prod_j alpha_j^{y_ij} (1 - alpha_j)^{1 - y_ij}
  and b_i = prod_j beta_j^{1 - y_ij} (1 - beta_j)^{y_ij}; computed in log space (q_i1 = mu_i).
- M-step (Raykar): alpha_j = sum_i mu_i y_ij / sum_i mu_i, beta_j = sum_i (1 - mu_i)(1 - y_ij) / sum_i (1 - mu_i),
  sums over the items j labelled; with Beta(a1, a2) and Beta(b1, b2) priors (Raykar's Bayesian version)
  alpha_j = (sum mu y + a1 - 1) / (sum mu + a1 + a2 - 2), likewise beta_j; p = mean mu_i (+ the same
  pseudo-counts). Without features, p plays the role of Raykar's sigma(w^T x).
"Can't tell" responses: as one-coin's (:mod:`crowdlab.models.one_coin`), a rate per worker that does not depend on
the class (``extra["abstain"]`` (M, R)); they leave the class posterior as it is without them.

Shapes: alpha, beta (M,), p scalar (stored as pi = [1 - p, p]), q (N, 2) with q[:, 1] = mu.
"""

from __future__ import annotations

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import LatentModel, ModelInfo, log_beta_pdf
from crowdlab.models.dawid_skene import ConfusionLogJoint, expected_counts, with_response_rows
from crowdlab.models.one_coin import class_free_rates
from crowdlab.models.params import ClassParams


def two_coin_gamma(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """(M, 2, 2) confusion matrices [[beta, 1 - alpha], [1 - beta, alpha]] (columns = true class)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    g = np.empty((alpha.shape[0], 2, 2))
    g[:, 0, 0] = beta
    g[:, 1, 0] = 1.0 - beta
    g[:, 0, 1] = 1.0 - alpha
    g[:, 1, 1] = alpha
    return g


def _beta_map(success: np.ndarray, total: np.ndarray, a: float, b: float) -> np.ndarray:
    num = success + a - 1.0
    den = total + a + b - 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.5)
    return np.clip(out, 0.0, 1.0)


class TwoCoin(ConfusionLogJoint, LatentModel):
    """Sensitivity/specificity per worker; optional Beta priors on alpha_j, beta_j and p (MAP)."""

    reads_responses = True  # "can't tell": a rate per worker that does not depend on the class (one_coin.py)

    info = ModelInfo(
        "two_coin",
        "Two-coin (sensitivity / specificity)",
        "classes",
        True,
        "item",
        True,
        prior_pull=(
            "Beta(1 + s, 1 + s) on each sensitivity and specificity and on the prevalence: a stronger prior pulls"
            " them towards 0.5"
        ),
    )

    def __init__(
        self,
        prior: float = 0.0,
        hard: bool = False,
        alpha_prior: tuple[float, float] | None = None,
        beta_prior: tuple[float, float] | None = None,
    ) -> None:
        if prior < 0:
            raise ModelError("prior strength must be >= 0.")
        self.prior = float(prior)
        self.hard = bool(hard)
        s = 1.0 + self.prior
        self.alpha_prior = tuple(alpha_prior) if alpha_prior else (s, s)
        self.beta_prior = tuple(beta_prior) if beta_prior else (s, s)
        if min(self.alpha_prior + self.beta_prior) < 1.0:
            raise ModelError("Beta prior parameters must be >= 1 for a closed-form MAP M-step.")

    @property
    def has_prior(self) -> bool:
        return self.prior > 0 or self.alpha_prior != (1.0, 1.0) or self.beta_prior != (1.0, 1.0)

    def m_step(self, data: Annotations, q: np.ndarray) -> ClassParams:
        return self.m_step_from_stats(expected_counts(data, q), self.q_column_sums(q), q.shape[0])

    def m_step_from_stats(self, c: np.ndarray, q_sum: np.ndarray, n_items: int) -> ClassParams:
        """The M-step from the expected counts c[m, said, true], the class totals (K,) and N
        (`crowdlab.engines.blocks`)."""
        c, rho = class_free_rates(c, q_sum.shape[0])
        alpha = _beta_map(c[:, 1, 1], c[:, :, 1].sum(axis=1), *self.alpha_prior)
        beta = _beta_map(c[:, 0, 0], c[:, :, 0].sum(axis=1), *self.beta_prior)
        s = self.prior
        p = (q_sum[1] + s) / (n_items + 2 * s)
        return self.params_from(p, alpha, beta, rho)

    def params_from(
        self, p: float, alpha: np.ndarray, beta: np.ndarray, abstain: np.ndarray | None = None
    ) -> ClassParams:
        """``abstain``: (M, R) rates of the responses that are not classes, or None."""
        pi = np.array([1.0 - float(p), float(p)])
        extra = {"alpha": np.asarray(alpha, float), "beta": np.asarray(beta, float)}
        gamma = two_coin_gamma(alpha, beta)
        if abstain is not None:
            gamma = with_response_rows(gamma, np.asarray(abstain, dtype=np.float64)[:, :, None])
            extra["abstain"] = np.asarray(abstain, float)
        return ClassParams(pi=pi, gamma=gamma, extra=extra)

    def free_parts(self, params: ClassParams) -> list:
        """Accelerated EM extrapolates log pi, logit alpha, logit beta and the logs of the abstention rates."""
        parts = [(params.pi, "simplex", 0), (params.extra["alpha"], "logit", 0), (params.extra["beta"], "logit", 0)]
        if "abstain" in params.extra:
            parts.append((params.extra["abstain"], "rates", 1))
        return parts

    def from_free_parts(self, params: ClassParams, arrays: list[np.ndarray]) -> ClassParams:
        return self.params_from(arrays[0][1], arrays[1], arrays[2], arrays[3] if len(arrays) > 3 else None)

    def log_prior(self, params: ClassParams) -> float:
        if not self.has_prior:
            return 0.0
        s = 1.0 + self.prior
        return (
            log_beta_pdf(params.extra["alpha"], *self.alpha_prior)
            + log_beta_pdf(params.extra["beta"], *self.beta_prior)
            + log_beta_pdf(params.pi[1:], s, s)
        )
