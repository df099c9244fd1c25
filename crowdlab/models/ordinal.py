"""Ordinal ratings: a worker's confusion favours ratings near the truth (a discretised Gaussian annotator).

Ratings r_1 < ... < r_K (a 0-10 similarity score, 1-5 stars) read with ``kind="ordinal"`` are classes with an
order. Dawid-Skene gives each worker K(K - 1) free parameters and no notion that 7 is nearer 8 than 2; this model
gives each worker two, a bias b_m and a spread s_m, and lets its noisy reading of item i's true rating index k
fall into the bins of the scale: the worker reports level l when k + b_m + s_m e (e ~ N(0, 1)) lies in
(l - 1/2, l + 1/2), the outer bins open-ended,

    Gamma_m(l | k) = Phi((l + 1/2 - k - b_m) / s_m) - Phi((l - 1/2 - k - b_m) / s_m).

This is the ordinal annotator of Lakshminarayanan & Teh (2013, "Inferring ground truth from multi-annotator
ordinal data: a probabilistic approach", arXiv:1305.0015: a latent Gaussian score per annotator, biased and
noisy, cut at fixed thresholds), here without their item difficulty and fitted by EM instead of variational
Bayes: the distance between levels is the index distance (equally spaced thresholds), so an error of one level is
always likelier than one of two.

- E-step (exact): Dawid-Skene's eq. (9) with these Gamma_m (``class_log_joint``); soft votes and "can't tell"
  responses are not supported.
- M-step: pi in closed form (with ``prior`` pseudo-counts); (b_m, log s_m) for each worker climb the expected
  complete log-likelihood sum_{l, k} C_m(l, k) log Gamma_m(l | k), C_m = Dawid-Skene's expected counts, by
  Newton steps on each worker's two parameters (numerical derivatives), each halved until the worker's term does
  not fall: generalised EM, so log p(x | theta) (+ log prior) never decreases (tested).

Shapes: pi (K,), gamma (M, K, K) built from ``extra["bias"]`` (M,) and ``extra["spread"]`` (M,).
"""

from __future__ import annotations

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import LatentModel, ModelInfo, WarmPosterior, log_dirichlet, safe_log
from crowdlab.models.dawid_skene import ConfusionLogJoint, expected_counts
from crowdlab.models.params import ClassParams

MIN_SPREAD = 0.05  # in levels: below it a worker would be certain to the 1e-23 and one slip a -inf
MAX_SPREAD = 1e6  # in levels: past it every rating is as likely as any other to 1e-4 (on 100 levels); the cap
# keeps exp(log s) finite when a Newton step runs far out (issue 42: "overflow encountered in exp")
MAX_BIAS = 1e6  # in levels, likewise: past it a worker gives the outermost rating whatever the truth


def ordinal_gamma(bias: np.ndarray, spread: np.ndarray, K: int) -> np.ndarray:
    """(M, K, K) Gamma_m(l | k) of the discretised Gaussian annotator (columns = true level, each sums to one).
    A spread below MIN_SPREAD (0 included) counts as MIN_SPREAD and one past MAX_SPREAD as MAX_SPREAD, a bias past
    +-MAX_BIAS as +-MAX_BIAS: the matrix stays finite, without a warning, whatever the parameters."""
    from scipy.special import ndtr  # on first use: ``import crowdlab`` stays light (issue 30)

    bias = np.clip(bias, -MAX_BIAS, MAX_BIAS)
    spread = np.clip(spread, MIN_SPREAD, MAX_SPREAD)
    levels = np.arange(K, dtype=np.float64)
    edges = np.r_[-np.inf, levels[:-1] + 0.5, np.inf]  # bin l is (edges[l], edges[l + 1])
    z = (edges[None, :, None] - levels[None, None, :] - bias[:, None, None]) / spread[:, None, None]
    cdf = ndtr(z)  # (M, K + 1, K)
    return np.maximum(np.diff(cdf, axis=1), 1e-300)


def _worker_terms(C: np.ndarray, bias: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """(M,) sum_{l, k} C_m(l, k) log Gamma_m(l | k)."""
    return np.einsum("mlk,mlk->m", C, np.log(ordinal_gamma(bias, spread, C.shape[1])))


class OrdinalDS(ConfusionLogJoint, LatentModel):
    """EM for ordinal ratings with a two-parameter (bias, spread) discretised Gaussian annotator per worker."""

    info = ModelInfo(
        "ordinal",
        "Ordinal Dawid-Skene (discretised Gaussian annotators)",
        "classes",
        exact=True,
        latent="item",
        prior_pull="s pseudo-counts on the class prior (the workers' two parameters have no prior)",
        has_hard=False,
    )

    def __init__(self, prior: float = 0.0, hard: bool = False, newton_rounds: int = 3) -> None:
        if prior < 0:
            raise ModelError("prior strength must be >= 0.")
        if hard:
            raise ModelError("the ordinal model has no hard version (its M-step climbs by Newton steps on q).")
        self.prior = float(prior)
        self.hard = False
        self.newton_rounds = int(newton_rounds)

    @property
    def has_prior(self) -> bool:
        return self.prior > 0

    def check(self, data: Annotations) -> None:
        from crowdlab.errors import ModelError

        super().check(data)
        if data.is_soft or data.response_names:
            raise ModelError(f"{self.info.title} reads whole ratings (no soft votes, no non-class responses).")

    def e_step(self, data: Annotations, params: ClassParams) -> WarmPosterior:
        return WarmPosterior(super().e_step(data, params), params)  # the M-step's ascent starts where this was

    def as_posterior(self, data: Annotations, q: np.ndarray) -> WarmPosterior:
        return WarmPosterior(self.clamp(data, q), None)

    def m_step(self, data: Annotations, post) -> ClassParams:
        q, start = (post.q, post.params) if isinstance(post, WarmPosterior) else (post, None)
        K = data.n_classes
        s = self.prior
        pi = (q.sum(axis=0) + s) / (q.shape[0] + s * K)
        C = expected_counts(data, q)  # (M, K, K): C[m, l, k]
        if start is not None and "bias" in start.extra:
            bias, log_sp = start.extra["bias"].copy(), np.log(start.extra["spread"])
        else:  # moments of the expected errors l - k
            d = np.arange(K)[:, None] - np.arange(K)[None, :]
            n = np.maximum(C.sum(axis=(1, 2)), 1e-12)
            bias = np.einsum("mlk,lk->m", C, d) / n
            var = np.einsum("mlk,lk->m", C, d.astype(float) ** 2) / n - bias**2
            log_sp = 0.5 * np.log(np.maximum(var, MIN_SPREAD**2) + 0.25)
        rounds = self.newton_rounds * (1 if start is not None else 5)
        for _ in range(rounds):
            bias, log_sp = self._newton(C, bias, log_sp)
        spread = np.exp(log_sp)
        gamma = ordinal_gamma(bias, spread, K)
        return ClassParams(pi=pi, gamma=gamma, extra={"bias": bias, "spread": spread})

    def _newton(self, C, bias, log_sp):
        """One Newton step per worker on (b, log s) with central-difference derivatives, halved until the worker's
        term does not fall (the step falls back to a gradient step where the Hessian is not negative definite)."""
        lo, hi = np.log(MIN_SPREAD), np.log(MAX_SPREAD)

        def f(b, ls):
            return _worker_terms(C, b, np.exp(np.clip(ls, lo, hi)))

        h = 1e-4
        f0 = f(bias, log_sp)
        fb_p, fb_m = f(bias + h, log_sp), f(bias - h, log_sp)
        fs_p, fs_m = f(bias, log_sp + h), f(bias, log_sp - h)
        fbs = f(bias + h, log_sp + h)
        g = np.stack([(fb_p - fb_m) / (2 * h), (fs_p - fs_m) / (2 * h)], axis=1)
        hbb = (fb_p - 2 * f0 + fb_m) / h**2
        hss = (fs_p - 2 * f0 + fs_m) / h**2
        hbs = (fbs - fb_p - fs_p + f0) / h**2
        det = hbb * hss - hbs**2
        concave = (hbb < 0) & (det > 0)
        safe = np.where(concave, det, 1.0)
        step_b = np.where(
            concave, -(hss * g[:, 0] - hbs * g[:, 1]) / safe, 0.1 * g[:, 0] / np.maximum(1, np.abs(g[:, 0]))
        )
        step_s = np.where(
            concave, -(hbb * g[:, 1] - hbs * g[:, 0]) / safe, 0.1 * g[:, 1] / np.maximum(1, np.abs(g[:, 1]))
        )
        t = np.ones_like(bias)
        out_b, out_s = bias.copy(), log_sp.copy()
        todo = np.ones(bias.shape, bool)
        slack = 16 * np.finfo(float).eps * np.maximum(1.0, np.abs(f0))
        for _ in range(30):
            cb, cs = np.clip(bias + t * step_b, -MAX_BIAS, MAX_BIAS), np.clip(log_sp + t * step_s, lo, hi)
            fc = f(cb, cs)
            ok = todo & np.isfinite(fc) & (fc >= f0 - slack)
            out_b[ok], out_s[ok] = cb[ok], cs[ok]
            todo &= ~ok
            if not todo.any():
                break
            t[todo] *= 0.5
        return out_b, out_s

    def log_prior(self, params: ClassParams) -> float:
        return log_dirichlet(params.pi, 1.0 + self.prior) if self.has_prior else 0.0


def posterior_mean_rating(q: np.ndarray, class_names) -> np.ndarray:
    """(N,) E[rating] = sum_k q_ik r_k with r_k the class names read as numbers; finite for any finite ratings
    (ratings of +-1e308 are summed at the scale of the largest, so the sum cannot overflow)."""
    r = np.array([float(c) for c in class_names])
    scale = float(np.max(np.abs(r))) if r.size else 0.0
    if not np.isfinite(scale) or scale == 0.0:
        return q @ r
    return np.clip(q @ (r / scale), r.min() / scale, r.max() / scale) * scale


__all__ = ["OrdinalDS", "ordinal_gamma", "posterior_mean_rating", "safe_log"]
