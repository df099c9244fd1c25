"""GLAD: worker ability and item difficulty (Whitehill, Ruvolo, Wu, Bergsma & Movellan 2009).

Model (Whitehill et al. 2009, Sec. 2): worker j has ability alpha_j in (-inf, inf) (0: guessing, negative:
adversarial), item i has inverse difficulty beta_i > 0 (1 / beta_i is its difficulty), and worker j labels item i
correctly with probability (eq. (1))

    P(L_ij = Z_i | alpha_j, beta_i) = sigma(alpha_j * beta_i),      sigma(x) = 1 / (1 + e^-x),

an error landing on each of the K - 1 other classes with equal probability (the paper's multi-class version).
The true class has prior P(Z_i = k) = pi_k: uniform and fixed as in the paper (``class_prior="uniform"``) or
estimated in closed form like Dawid-Skene's (``class_prior="estimate"``). As in the paper, beta_i = exp(b_i) keeps
it positive, and Gaussian priors N(mu, var) sit on alpha_j and on b_i = log beta_i (the paper's code and crowd-kit
use mean 1 and variance 1 for both).

- E-step (exact, Sec. 3 "E-step"): q_ik ∝ pi_k prod_j sigma(alpha_j beta_i)^{I(L_ij = k)}
  ((1 - sigma(alpha_j beta_i)) / (K - 1))^{I(L_ij != k)}, in log space, one bincount over the observations.
- M-step (Sec. 3 "M-step"): no closed form. The paper climbs the expected complete log-likelihood
  Q(alpha, beta) = sum_ij [w_ij log sigma(alpha_j beta_i) + (1 - w_ij) log((1 - sigma(alpha_j beta_i)) / (K - 1))]
  + log prior, with w_ij = q_{i, L_ij}, by gradient ascent; its gradients are
  dQ/dalpha_j = sum_i (w_ij - sigma(alpha_j beta_i)) beta_i - (alpha_j - mu_a) / var_a and
  dQ/db_i = sum_j (w_ij - sigma(alpha_j beta_i)) alpha_j beta_i - (b_i - mu_b) / var_b.
  Here the ascent alternates two blocks: all abilities at once (Q is concave and separable in alpha given b:
  one Newton step per worker), then all inverse difficulties (separable in b given alpha: one Fisher-scoring step
  per item). Every coordinate's step is halved until its own part of Q does not fall, so the M-step never lowers
  Q. This is therefore generalised EM (Dempster, Laird & Rubin 1977): the E-step is exact and the M-step raises
  (not maximises) Q, which is enough for log p(x | theta) + log prior never to decrease (checked on every step).
  The ascent starts from the parameters of the E-step that produced q (``WarmPosterior``).
- Soft votes (``data.weight``, :class:`crowdlab.io.annotations.Annotations`): an observation of weight v counts as v of
  a label, in the E-step's sum and in Q (every per-observation term above times v), so EM climbs the weighted
  likelihood sum_i log sum_k pi_k prod_j P(L_ij | Z_i = k)^v_ij + log prior, monotone as before.

Shapes: pi (K,), alpha (M,), beta (N,), q (N, K). For the views shared with the other class models,
``gamma[j]`` is worker j's confusion matrix on an item of median difficulty (accuracy sigma(alpha_j * median beta)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import LatentModel, ModelInfo, WarmPosterior, log_dirichlet
from crowdlab.models.one_coin import one_coin_gamma
from crowdlab.models.params import ClassParams

CLASS_PRIORS = ("uniform", "estimate")


def _log1p_exp_neg_abs(x: np.ndarray) -> np.ndarray:
    """log(1 + e^-|x|), in [0, log 2]: the part log sigma(x) and log sigma(-x) share."""
    out = np.abs(np.asarray(x, dtype=np.float64))  # a new array (or a scalar)
    if not isinstance(out, np.ndarray) or out.ndim == 0:
        return np.log1p(np.exp(-out))
    np.negative(out, out=out)
    np.exp(out, out=out)
    return np.log1p(out, out=out)


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    """log sigma(x) = min(x, 0) - log(1 + e^-|x|), stable for any x (3x faster than ``-logaddexp(0, -x)``)."""
    return np.minimum(x, 0.0) - _log1p_exp_neg_abs(x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(log_sigmoid(x))


@dataclass(frozen=True, eq=False)
class GladParams(ClassParams):
    """GLAD parameters: ``extra["ability"]`` (M,) abilities; ``beta`` (N,) inverse difficulties (beta_i > 0)."""

    beta: np.ndarray = None

    @property
    def alpha(self) -> np.ndarray:
        return self.extra["ability"]

    @property
    def difficulty(self) -> np.ndarray:
        """(N,) 1 / beta_i: the paper's item difficulty."""
        return 1.0 / self.beta

    def accuracy_on_labels(self, data: Annotations) -> np.ndarray:
        """(M,) each worker's expected accuracy on the items it labelled: the mean over its labels of
        sigma(alpha_j beta_i). The median-difficulty accuracy (``worker_accuracy``) reads high on sets whose
        difficulties are skewed (RTE: +0.075 against the gold-based accuracy, this mean +0.040). A worker with no
        labels gets the median-difficulty value."""
        x = self.alpha[data.worker] * self.beta[data.item]
        n = np.bincount(data.worker, minlength=self.n_workers)
        total = np.bincount(data.worker, weights=sigmoid(x), minlength=self.n_workers)
        return np.where(n > 0, total / np.maximum(n, 1), self.worker_accuracy())

    def to_dict(self, worker_names=None, class_names=None) -> dict:
        out = super().to_dict(worker_names, class_names)
        out["beta"] = self.beta.tolist()
        out["gamma_note"] = "gamma[j] is worker j's confusion matrix on an item of median difficulty"
        return out


def glad_params(pi: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> GladParams:
    """GladParams with the median-difficulty confusion matrices filled in."""
    pi = np.asarray(pi, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    acc = sigmoid(alpha * float(np.median(beta)))
    return GladParams(pi=pi, gamma=one_coin_gamma(acc, pi.shape[0]), extra={"ability": alpha}, beta=beta)


def _obs_terms(data: Annotations, alpha: np.ndarray, b: np.ndarray, w: np.ndarray, K: int) -> np.ndarray:
    """Per observation: w log sigma(x) + (1 - w) log sigma(-x), x = alpha_j exp(b_i) (Q without log(K - 1)),
    times the observation's weight for soft votes."""
    x = alpha[data.worker] * np.exp(b[data.item])
    # log sigma(x) = min(x, 0) - L and log sigma(-x) = -max(x, 0) - L with one L = log(1 + e^-|x|)
    out = w * np.minimum(x, 0.0) - (1.0 - w) * np.maximum(x, 0.0) - _log1p_exp_neg_abs(x)
    return out if data.weight is None else out * data.weight


def _weighted(data: Annotations, per_obs: np.ndarray) -> np.ndarray:
    """``per_obs`` times the observations' weights (soft votes); hard labels: unchanged, nothing multiplied."""
    return per_obs if data.weight is None else per_obs * data.weight


class GLAD(LatentModel):
    """GLAD EM (Whitehill et al. 2009): exact E-step, generalised M-step by Newton / Fisher-scoring ascent."""

    spreads_errors = True
    info = ModelInfo(
        "glad",
        "GLAD (ability and difficulty)",
        "classes",
        exact=True,
        latent="item",
        prior_pull=(
            "the Gaussian priors on the abilities α_j and on log β_i get variance / (1 + s) (and an estimated "
            "class prior s pseudo-counts): a stronger prior pulls abilities and difficulties towards the prior "
            "means"
        ),
    )

    def __init__(
        self,
        prior: float = 0.0,
        hard: bool = False,
        class_prior: str = "uniform",
        alpha_prior: tuple[float, float] = (1.0, 1.0),
        beta_prior: tuple[float, float] = (1.0, 1.0),
        m_rounds: int = 5,
    ) -> None:
        """``prior`` (strength s >= 0): Dirichlet(1 + s) pseudo-counts on an estimated class prior, and the Gaussian
        priors' variances divided by 1 + s (a stronger pull towards the prior means). ``alpha_prior`` and
        ``beta_prior``: (mean, variance) of the Gaussian priors on alpha_j and on log beta_i (variance > 0).
        ``m_rounds``: ability/difficulty ascent rounds per M-step (more at the start, which has no warm start)."""
        if prior < 0:
            raise ModelError("prior strength must be >= 0.")
        if class_prior not in CLASS_PRIORS:
            raise ModelError(f"class_prior must be one of {CLASS_PRIORS}.")
        if alpha_prior[1] <= 0 or beta_prior[1] <= 0:
            raise ModelError("the Gaussian priors of GLAD need a positive variance.")
        self.prior = float(prior)
        self.hard = bool(hard)
        self.class_prior = class_prior
        self.alpha_prior = (float(alpha_prior[0]), float(alpha_prior[1]) / (1.0 + self.prior))
        self.beta_prior = (float(beta_prior[0]), float(beta_prior[1]) / (1.0 + self.prior))
        self.m_rounds = int(m_rounds)

    @property
    def has_prior(self) -> bool:
        return True  # the Gaussian priors on alpha and log beta are part of the paper's model

    # -- E-step ----------------------------------------------------------------------
    def log_joint(self, data: Annotations, params: GladParams) -> np.ndarray:
        """(N, K): log pi_k + sum over item i's labels of log P(L_ij | Z_i = k) (Sec. 3, E-step)."""
        N, K = data.n_items, data.n_classes
        x = params.alpha[data.worker] * params.beta[data.item]
        wrong = _weighted(data, log_sigmoid(-x) - np.log(K - 1))
        base = np.bincount(data.item, weights=wrong, minlength=N)
        # log sigma(x) - log(sigma(-x) / (K - 1)) = x + log(K - 1): what saying k adds to class k
        say = _weighted(data, x + np.log(K - 1))
        bonus = np.bincount(data.item * K + data.label, weights=say, minlength=N * K).reshape(N, K)
        return base[:, None] + bonus + np.log(np.maximum(params.pi, 1e-300))[None, :]

    def e_step(self, data: Annotations, params: GladParams) -> WarmPosterior:
        return WarmPosterior(super().e_step(data, params), params)

    def as_posterior(self, data: Annotations, q: np.ndarray) -> WarmPosterior:
        return WarmPosterior(self.clamp(data, q), None)

    # -- M-step ----------------------------------------------------------------------
    def m_step(self, data: Annotations, post) -> GladParams:
        q, start = (post.q, post.params) if isinstance(post, WarmPosterior) else (post, None)
        N, M, K = data.n_items, data.n_workers, data.n_classes
        if self.class_prior == "uniform":
            pi = np.full(K, 1.0 / K)
        else:
            s = self.prior
            pi = (q.sum(axis=0) + s) / (q.shape[0] + s * K)
        if start is None:
            alpha = np.full(M, self.alpha_prior[0])
            b = np.full(N, self.beta_prior[0])
            rounds = 3 * self.m_rounds
        else:
            alpha = start.alpha.copy()
            b = np.log(start.beta)
            rounds = self.m_rounds
        w = q[data.item, data.label]  # P(Z_i = L_ij): the weight of "this label is right"
        for _ in range(rounds):
            alpha = self._ascend_alpha(data, alpha, b, w, K)
            b = self._ascend_b(data, alpha, b, w, K)
        return glad_params(pi, alpha, np.exp(b))

    def _ascend_alpha(self, data, alpha, b, w, K) -> np.ndarray:
        """One Newton step per worker on its (concave) part of Q, halved until that part does not fall."""
        M = data.n_workers
        mu, var = self.alpha_prior
        beta_o = np.exp(b[data.item])
        x = alpha[data.worker] * beta_o
        s = sigmoid(x)
        grad = np.bincount(data.worker, weights=_weighted(data, (w - s) * beta_o), minlength=M) - (alpha - mu) / var
        curv = np.bincount(data.worker, weights=_weighted(data, s * (1.0 - s) * beta_o**2), minlength=M) + 1.0 / var
        step = grad / curv

        def f(a):
            return np.bincount(data.worker, weights=_obs_terms(data, a, b, w, K), minlength=M) - (a - mu) ** 2 / (
                2 * var
            )

        return _halve(f, alpha, step)

    def _ascend_b(self, data, alpha, b, w, K) -> np.ndarray:
        """One Fisher-scoring step per item on its part of Q (an ascent direction), halved until it does not fall."""
        N = data.n_items
        mu, var = self.beta_prior
        alpha_o = alpha[data.worker]
        x = alpha_o * np.exp(b[data.item])
        s = sigmoid(x)
        grad = np.bincount(data.item, weights=_weighted(data, (w - s) * x), minlength=N) - (b - mu) / var
        info = np.bincount(data.item, weights=_weighted(data, s * (1.0 - s) * x * x), minlength=N) + 1.0 / var
        step = grad / info

        def f(bb):
            return np.bincount(data.item, weights=_obs_terms(data, alpha, bb, w, K), minlength=N) - (bb - mu) ** 2 / (
                2 * var
            )

        return _halve(f, b, step)

    # -- objective -------------------------------------------------------------------
    def log_prior(self, params: GladParams) -> float:
        ma, va = self.alpha_prior
        mb, vb = self.beta_prior
        b = np.log(params.beta)
        out = -0.5 * (((params.alpha - ma) ** 2) / va + np.log(2 * np.pi * va)).sum()
        out += -0.5 * (((b - mb) ** 2) / vb + np.log(2 * np.pi * vb)).sum()
        if self.class_prior == "estimate" and self.prior > 0:
            out += log_dirichlet(params.pi, 1.0 + self.prior)
        return float(out)

    @property
    def objective_name(self) -> str:
        core = "log p(F, ŷ | θ)" if self.hard else "log-likelihood log p(F | θ)"
        return core + " + log Gaussian priors on α, log β"

    def free_parts(self, params: GladParams) -> list:
        """Accelerated EM extrapolates log pi, the abilities alpha and b = log beta (the paper's own coordinates)."""
        return [(params.pi, "simplex", 0), (params.alpha, "real", 0), (params.beta, "log", 0)]

    def from_free_parts(self, params: GladParams, arrays: list[np.ndarray]) -> GladParams:
        return glad_params(*arrays)

    def params_from(self, pi: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> GladParams:
        return glad_params(pi, alpha, beta)


def _halve(f, x: np.ndarray, step: np.ndarray, tries: int = 12) -> np.ndarray:
    """Per coordinate: x + t * step with t = 1, 1/2, 1/4, ... the first that does not lower f's coordinate
    beyond rounding error (16 eps |f|); coordinates where none does within ``tries`` halvings, or whose step is
    negligible, keep their value.

    The slack matters near the optimum: there a step of 1e-9 changes f by about 1e-18 of its size, below
    rounding, so a strict ``f(new) >= f(old)`` rejected good steps at random, the parameter changes stopped
    shrinking steadily and the stopping rule called the run stalled (bluebirds, 38 iterations, instead of
    converged after 32 at the same objective)."""
    f0 = f(x)
    slack = 16 * np.finfo(np.float64).eps * np.maximum(1.0, np.abs(f0))
    t = np.ones_like(x)
    todo = np.abs(step) > 1e-12 * (1.0 + np.abs(x))
    out = x.copy()
    for _ in range(tries):
        if not todo.any():
            break
        cand = np.where(todo, x + t * step, out)
        fc = f(cand)
        ok = todo & np.isfinite(fc) & (fc >= f0 - slack)
        out[ok] = cand[ok]
        todo &= ~ok
        t[todo] *= 0.5
    return out
