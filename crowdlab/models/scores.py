"""The "bad annotators" model for continuous scores, from the EM lecture on bad annotators.

Each annotator a is good (z_a = 1) with prior probability pi_good or bad (z_a = 0). A good annotator's score of
item i is s_ia ~ N(mu_i, sigma) (one sigma for all items); a bad one's is Uniform over the score range
[low, high] (density 1 / (high - low)). The range follows the lecture, [0, 1] (density 1), unless a
``score_range`` is given or the data fall outside [0, 1]: then it is the data's own range [min, max]
(:func:`range_note` says which). The latent variable is per annotator.

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

A degenerate global maximum: declare a single annotator good and everyone else bad. The means mu_i then equal that
annotator's own scores, their residuals vanish, sigma falls to its floor sigma_min, and each of their N scores
adds -log(sigma_min) - log(2 pi)/2 to the objective, more than any sensible fit can gain. On the lecture's crowd
(``crowdlab.teaching.lessons.lecture_scores(0)``: 20 items, 3 good and 2 bad annotators, the Data page's default
simulation) EM started from "only annotator A0 good" (``init="posterior"``) converges to 117.3 at the default floor
(for any 20 x 5 data set on [0, 1]: 20 (log 1000 - log(2 pi)/2) + log(1/5) + 4 log(4/5)), against 67.7 for the
sensible optimum found from "everyone good". The remedy is a floor near the spread expected of a good annotator
(``sigma_min=0.07`` there: the single-good answer then scores 32.3, below the sensible one, and the start from A0
reaches the sensible optimum) and a start from "everyone good". On the bundled affect set (700 items scored by 38
annotators, range -100..100) the single-good answer already scores below the sensible one at the default floor
(-36,254 against -32,062).

Shapes: mu (N,), q (M, 2) with q[:, 1] = w (good), q[:, 0] = 1 - w.

Numerics (any finite scores, 1e-300 or 1e308 alike): the E- and M-steps work on standardised scores
z = (s - c) / h with c the midpoint and h the half-width of [low, high], both computed without overflow
(c = low/2 + high/2, h = high/2 - low/2), so |z| <= 1. Rescaling or shifting all scores leaves z, the posteriors
and the standardised parameters unchanged; the objective only moves by the Jacobian -n_obs log(scale). The
parameters are stored in score units (mu = c + h mu_z, sigma = h sigma_z, both finite). When all scores are
equal (or closer than 2e-290) the range is [s, s + width] with width = 1, or a relative 2^-30 of |s| when s + 1
would round back to s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import LatentModel, ModelInfo, log_beta_pdf, safe_log

LOG_2PI = float(np.log(2 * np.pi))
LOG_2 = float(np.log(2.0))
LOGPDF_FLOOR = -1e200  # a score absurdly far from a given mean (user-supplied parameters) stays finite


def score_range(values: np.ndarray) -> tuple[float, float]:
    """(low, high) of the scores with high > low for any finite scores (see the module docstring)."""
    lo, hi = float(np.min(values)), float(np.max(values))
    if hi / 2.0 - lo / 2.0 >= 1e-290:  # a half-width that log and division handle (else: as one value)
        return lo, hi
    width = max(1.0, abs(lo) * 2.0**-30)
    if np.isfinite(lo + width) and lo + width > lo:
        return lo, lo + width
    return lo - width, lo


def standard_frame(low: float, high: float) -> tuple[float, float]:
    """(c, h): midpoint and half-width of [low, high], computed without overflow (h > 0 when high > low)."""
    return low / 2.0 + high / 2.0, high / 2.0 - low / 2.0


def standard_diff(s: np.ndarray, m: np.ndarray, h: float) -> np.ndarray:
    """(s - m) / h without overflow for any finite s, m (|s - m| may exceed the largest float)."""
    return (s / 2.0 - m / 2.0) / (h / 2.0) if h >= 2e-300 else (s - m) / h


def weighted_item_means(data: Annotations, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mu, den): per item sum_a w s / sum_a w over its scores (den = sum_a w), to full precision and without
    overflow: each item's scores are divided by a power of two t_i >= its largest |score| (exact) before summing.
    Items with den = 0 get their plain mean."""
    N = data.n_items
    v = data.value
    big = np.zeros(N)
    np.maximum.at(big, data.item, np.abs(v))
    t = np.minimum(np.exp2(np.minimum(np.ceil(np.log2(np.where(big > 0, big, 1.0))), 1023.0)), 2.0**1023)
    u = v / t[data.item]  # |u| <= 2 (<= 1 below 2^1023)
    den = np.bincount(data.item, weights=weights, minlength=N)
    num = np.bincount(data.item, weights=weights * u, minlength=N)
    plain = np.bincount(data.item, weights=u, minlength=N) / np.maximum(data.labels_per_item, 1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean_u = np.where(den > 0, num / np.where(den > 0, den, 1.0), plain)
        mu = mean_u * t
    return np.clip(mu, -np.finfo(np.float64).max, np.finfo(np.float64).max), den


LECTURE_RANGE = (0.0, 1.0)


@dataclass(frozen=True, eq=False)
class ScoreParams:
    """Item means ``mu`` (N,), common ``sigma``, ``pi_good`` and the score range of the uniform."""

    mu: np.ndarray
    sigma: float
    pi_good: float
    low: float
    high: float
    mu_z: np.ndarray | None = None  # the means on the standardised scale (see below); None: derived from mu

    def standard_means(self) -> np.ndarray:
        """(N,) mu_z = (mu - c) / h in the frame of [low, high]. The M-step keeps them as computed, so EM stays
        exact when the scores' spread is near the float resolution of their size (mu itself then rounds)."""
        if self.mu_z is not None:
            return self.mu_z
        c, h = standard_frame(self.low, self.high)
        return standard_diff(self.mu, c, h)

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


def range_note(params: ScoreParams) -> str:
    """Where the bad annotators' uniform range comes from, in words: the lecture's [0, 1] or the data's range."""
    if (params.low, params.high) == LECTURE_RANGE:
        return "the lecture's range"
    return "the data's range"


class GoodBadScores(LatentModel):
    """Good annotators ~ N(mu_i, sigma), bad ~ Uniform[low, high]; latent good/bad per annotator."""

    info = ModelInfo(
        "scores",
        "Good/bad annotators (scores)",
        "continuous",
        exact=True,
        latent="annotator",
        prior_pull=("Beta(1 + s, 1 + s) on P(good): a stronger prior pulls it towards 0.5"),
    )

    def __init__(
        self,
        prior: float = 0.0,
        hard: bool = False,
        score_range: tuple[float, float] | None = None,
        sigma_min: float | None = None,
    ) -> None:
        if prior < 0:
            raise ModelError("prior strength must be >= 0.")
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
                raise ModelError("score range needs high > low.")
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise ModelError("score range needs finite bounds.")
            if data.value.min() < lo or data.value.max() > hi:
                raise ModelError(f"scores fall outside the range [{lo}, {hi}].")
            return lo, hi
        lo, hi = float(data.value.min()), float(data.value.max())
        if LECTURE_RANGE[0] <= lo and hi <= LECTURE_RANGE[1]:
            return LECTURE_RANGE
        return score_range(data.value)

    def _sigma_min(self, lo: float, hi: float) -> float:
        """The floor of sigma in score units: 1e-3 (high - low) unless given (computed without overflow)."""
        return self.sigma_min if self.sigma_min is not None else 2e-3 * standard_frame(lo, hi)[1]

    def obs_log_normal(self, data: Annotations, params: ScoreParams) -> np.ndarray:
        """(n_obs,) log N(s_ia; mu_i, sigma) of every observed score, evaluated on the standardised scale:
        log N(z; mu_z, sigma_z) - log h (floored at -1e200 for absurd user-given parameters)."""
        c, h = standard_frame(params.low, params.high)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            sigma_z = max(params.sigma / h, 1e-300)
            r = (standard_diff(data.value, c, h) - params.standard_means()[data.item]) / sigma_z
            out = -0.5 * r * r - (np.log(sigma_z) + np.log(h) + 0.5 * LOG_2PI)
        return np.fmax(out, LOGPDF_FLOOR)

    def log_joint(self, data: Annotations, params: ScoreParams) -> np.ndarray:
        M = data.n_workers
        good = np.bincount(data.worker, weights=self.obs_log_normal(data, params), minlength=M)
        n_a = data.labels_per_worker
        bad = -n_a * (LOG_2 + np.log(standard_frame(params.low, params.high)[1]))  # log 1 / (high - low)
        out = np.empty((M, 2))
        out[:, 0] = safe_log(1.0 - params.pi_good) + bad
        out[:, 1] = safe_log(params.pi_good) + good
        return out

    def m_step(self, data: Annotations, q: np.ndarray) -> ScoreParams:
        lo, hi = self._range(data)
        c, h = standard_frame(lo, hi)
        w = q[:, 1]
        w_obs = w[data.worker]
        mu, den = weighted_item_means(data, w_obs)  # in score units, to full precision (what is exported)
        mu = np.clip(mu, lo, hi)
        z = standard_diff(data.value, c, h)  # about [-1, 1]
        N = data.n_items
        num = np.bincount(data.item, weights=w_obs * z, minlength=N)
        plain = np.bincount(data.item, weights=z, minlength=N) / np.maximum(data.labels_per_item, 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mu_z = np.where(den > 0, num / np.where(den > 0, den, 1.0), plain)  # what EM uses
        resid = z - mu_z[data.item]
        tot = w_obs.sum()
        var = float((w_obs * resid * resid).sum() / tot) if tot > 0 else float(np.var(resid))
        sigma_z = max(float(np.sqrt(var)), self._sigma_min(lo, hi) / h)
        sigma = h * sigma_z
        s = self.prior
        pi_good = float((w.sum() + s) / (w.shape[0] + 2 * s))
        return ScoreParams(mu=mu, sigma=sigma, pi_good=pi_good, low=lo, high=hi, mu_z=mu_z)

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
