"""The "bad annotators" model for continuous scores, from the EM lecture on bad annotators.

Each annotator a is good (z_a = 1) with prior probability pi_good or bad (z_a = 0). A good annotator's score of
item i is s_ia ~ N(mu_i, sigma) (one sigma for all items); a bad one's is Uniform over the score range
[low, high] (density 1 / (high - low); the slides use [0, 1]). The latent variable is per annotator.

- E-step (slides, "Example: Inference for Annotator Labels"):
  w_a = P(z_a = 1 | s, theta) = pi_good prod_i N(s_ia; mu_i, sigma) / (that + (1 - pi_good) prod_i 1/(high - low)),
  in log space over the items annotator a scored.
- M-step (slides, "Simple solution", step 3): mu_i = sum_a w_a s_ia / sum_a w_a,
  sigma^2 = sum_{i,a} w_a (s_ia - mu_i)^2 / sum_{i,a} w_a, pi_good = sum_a w_a / M (optionally with a
  Beta(1 + s, 1 + s) prior on pi_good). Sums run over the observed scores (missing scores are allowed).
  Two guards keep every number finite: sigma >= sigma_min (default 1e-3 (high - low)), the constrained maximiser
  since the log-likelihood is unimodal in sigma; and an item whose scorers all have w_a = 0 keeps its plain mean
  (any mu_i maximises then).
- Initialisation "assume everyone is good" (the slides): w_a = 1, so mu_i is the item mean and sigma the spread
  of all scores; pi_good starts at 0.5 (from w_a = 1 it would be 1, a fixed point EM can never leave).

Objective: sum_a log sum_z p(s_a, z_a | theta) (+ log prior), exactly what EM climbs.
Shapes: mu (N,), q (M, 2) with q[:, 1] = w (good), q[:, 0] = 1 - w.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from crowdlab.data import Annotations
from crowdlab.models.base import LatentModel, ModelInfo, log_beta_pdf, safe_log

LOG_2PI = float(np.log(2 * np.pi))


@dataclass(frozen=True, eq=False)
class ScoreParams:
    """Item means ``mu`` (N,), common ``sigma``, ``pi_good`` and the score range of the uniform."""

    mu: np.ndarray
    sigma: float
    pi_good: float
    low: float
    high: float

    def to_dict(self, worker_names=None, item_names=None) -> dict:
        out = {
            "mu": self.mu.tolist(),
            "sigma": self.sigma,
            "pi_good": self.pi_good,
            "score_range": [self.low, self.high],
        }
        if item_names is not None:
            out["items"] = list(item_names)
        return out


class GoodBadScores(LatentModel):
    """Good annotators ~ N(mu_i, sigma), bad ~ Uniform[low, high]; latent good/bad per annotator."""

    info = ModelInfo("scores", "Good/bad annotators (scores)", "continuous", exact=True, latent="annotator")

    def __init__(
        self,
        prior: float = 0.0,
        hard: bool = False,
        score_range: tuple[float, float] | None = None,
        sigma_min: float | None = None,
    ) -> None:
        if prior < 0:
            raise ValueError("prior strength must be >= 0.")
        self.prior = float(prior)
        self.hard = bool(hard)
        self.score_range = score_range
        self.sigma_min = sigma_min

    @property
    def has_prior(self) -> bool:
        return self.prior > 0

    def _range(self, data: Annotations) -> tuple[float, float]:
        if self.score_range is not None:
            lo, hi = map(float, self.score_range)
            if not hi > lo:
                raise ValueError("score range needs high > low.")
            if data.value.min() < lo or data.value.max() > hi:
                raise ValueError(f"scores fall outside the range [{lo}, {hi}].")
            return lo, hi
        return data.value_range

    def _sigma_min(self, lo: float, hi: float) -> float:
        return self.sigma_min if self.sigma_min is not None else 1e-3 * (hi - lo)

    def obs_log_normal(self, data: Annotations, params: ScoreParams) -> np.ndarray:
        """(n_obs,) log N(s_ia; mu_i, sigma) of every observed score."""
        r = (data.value - params.mu[data.item]) / params.sigma
        return -0.5 * r * r - np.log(params.sigma) - 0.5 * LOG_2PI

    def log_joint(self, data: Annotations, params: ScoreParams) -> np.ndarray:
        M = data.n_workers
        good = np.bincount(data.worker, weights=self.obs_log_normal(data, params), minlength=M)
        n_a = data.labels_per_worker
        bad = -n_a * np.log(params.high - params.low)
        out = np.empty((M, 2))
        out[:, 0] = safe_log(1.0 - params.pi_good) + bad
        out[:, 1] = safe_log(params.pi_good) + good
        return out

    def m_step(self, data: Annotations, q: np.ndarray) -> ScoreParams:
        lo, hi = self._range(data)
        w = q[:, 1]
        w_obs = w[data.worker]
        N = data.n_items
        den = np.bincount(data.item, weights=w_obs, minlength=N)
        num = np.bincount(data.item, weights=w_obs * data.value, minlength=N)
        plain = np.bincount(data.item, weights=data.value, minlength=N) / np.maximum(data.labels_per_item, 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = np.where(den > 0, num / np.where(den > 0, den, 1.0), plain)
        resid = data.value - mu[data.item]
        tot = w_obs.sum()
        var = float((w_obs * resid * resid).sum() / tot) if tot > 0 else float(np.var(resid))
        sigma = max(float(np.sqrt(var)), self._sigma_min(lo, hi))
        s = self.prior
        pi_good = float((w.sum() + s) / (w.shape[0] + 2 * s))
        return ScoreParams(mu=mu, sigma=sigma, pi_good=pi_good, low=lo, high=hi)

    def log_prior(self, params: ScoreParams) -> float:
        if not self.has_prior:
            return 0.0
        a = 1.0 + self.prior
        return log_beta_pdf(np.array([params.pi_good]), a, a)

    def all_good(self, data: Annotations, pi_good: float = 0.5) -> tuple[np.ndarray, ScoreParams]:
        """The slides' start: q = everyone good, mu and sigma estimated from all scores, pi_good = 0.5.

        pi_good is not taken from q (that would be 1, a fixed point: with P(bad) = 0 no annotator can ever be
        found bad); the slides start the prior at an uninformed value.
        """
        q = np.zeros((data.n_workers, 2))
        q[:, 1] = 1.0
        return q, replace(self.m_step(data, q), pi_good=float(pi_good))

    def hard_labels(self, q: np.ndarray) -> np.ndarray:
        """1 = good, 0 = bad, per annotator."""
        return np.argmax(q, axis=1).astype(np.int32)
