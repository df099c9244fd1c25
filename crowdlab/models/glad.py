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
  ((1 - sigma(alpha_j beta_i)) / (K - 1))^{I(L_ij != k)}, in log space, one pass over the observations.
- M-step (Sec. 3 "M-step"): no closed form. The paper climbs the expected complete log-likelihood
  Q(alpha, beta) = sum_ij [w_ij log sigma(alpha_j beta_i) + (1 - w_ij) log((1 - sigma(alpha_j beta_i)) / (K - 1))]
  + log prior, with w_ij = q_{i, L_ij}, by gradient ascent; its gradients are
  dQ/dalpha_j = sum_i (w_ij - sigma(alpha_j beta_i)) beta_i - (alpha_j - mu_a) / var_a and
  dQ/db_i = sum_j (w_ij - sigma(alpha_j beta_i)) alpha_j beta_i - (b_i - mu_b) / var_b.
  Here the ascent alternates two blocks: all abilities at once (Q is concave and separable in alpha given b:
  one Newton step per worker), then all inverse difficulties (separable in b given alpha: one step per item, its
  curvature the larger of the Fisher information and the observed one). A coordinate's step is halved until its
  own part of Q does not fall, checked from the gradients before and after the step (a trapezoid rule with a bound
  on the third derivative; values of Q only where that bound is too loose), so a round costs two passes over the
  labels (`crowdlab.models.glad_steps`) and the M-step never lowers Q. This is therefore generalised EM
  (Dempster, Laird & Rubin 1977): the E-step is exact and the M-step raises (not maximises) Q, which is enough for
  log p(x | theta) + log prior never to decrease (checked on every step). The ascent starts from the parameters of
  the E-step that produced q (``WarmPosterior``).
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
from crowdlab.models import glad_steps
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
    times the observation's weight for soft votes (`glad_steps.values` sums them)."""
    out = glad_steps._terms(alpha[data.worker] * np.exp(b[data.item]), w)
    return out if data.weight is None else out * data.weight


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
        m_rounds: int = 1,
    ) -> None:
        """``prior`` (strength s >= 0): Dirichlet(1 + s) pseudo-counts on an estimated class prior, and the Gaussian
        priors' variances divided by 1 + s (a stronger pull towards the prior means). ``alpha_prior`` and
        ``beta_prior``: (mean, variance) of the Gaussian priors on alpha_j and on log beta_i (variance > 0).
        ``m_rounds``: ability/difficulty ascent rounds per M-step (three times as many at the start, which has no
        warm start). More rounds climb Q further per EM iteration, so plain EM needs fewer iterations, but each round
        costs two passes over the labels: on the 20 bundled and real sets plain EM took 1.0-1.9x the iterations with
        1 round as with 2 (0.6-1.2x the time: an iteration takes 0.6x), and the accelerated fit (`cl.fit`'s default)
        a few more EM-map evaluations (22-37 against 19-34). So the default is 1: per worker and per item one step
        from the gradient and curvature of one pass (issue 40, section 3)."""
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
        lj, off = self.log_joint_parts(data, params)
        return lj + off[None, :]

    def log_joint_parts(self, data: Annotations, params: GladParams) -> tuple[np.ndarray, np.ndarray]:
        """(the labels' part of the log joint (N, K), log pi (K,)): one pass over the labels
        (`glad_steps.log_joint_data`); the E-step's first pass over the rows adds log pi."""
        glad_steps.prepare(data.n_obs)
        s_sums = np.zeros((3, data.n_workers))
        memo = self.__dict__.pop("_xe_memo", None)
        hit = memo is not None and memo[0] is data and memo[1] is params.alpha and memo[2] is params.beta
        lj = glad_steps.log_joint_data(
            data, params.alpha, params.beta, data.n_classes, s_sums, memo[3:] if hit else None
        )
        self.__dict__["_s_memo"] = (data, params, s_sums)  # what the next M-step's first round needs of this pass
        return lj, np.log(np.maximum(params.pi, 1e-300))

    def first_sums(self, data: Annotations, q: np.ndarray, params: GladParams | None):
        """(w (n_obs,), `glad_steps.worker_sums` at ``params``) for an M-step on q that starts at the parameters of
        the E-step that made q: the sums come from that E-step's pass (`glad_steps.first_sums`) and one gather of
        w, without another pass of exponentials; (w, None) when this model's last E-step pass was elsewhere."""
        memo = self.__dict__.get("_s_memo")
        if params is not None and memo is not None and memo[0] is data and memo[1] is params:
            w, wb = glad_steps.gather_w(q, data, params.beta, data.n_workers)
            return w, glad_steps.first_sums(memo[2], wb)
        return glad_steps.gather_w(q, data), None

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
        glad_steps.prepare(data.n_obs)
        w, sums = self.first_sums(data, q, start)  # w_ij = P(Z_i = L_ij): the weight of "this label is right"
        if sums is None:
            sums = glad_steps.worker_sums(data, w, alpha, np.exp(b))
        for r in range(rounds):
            alpha, b, sums = self._round(data, w, alpha, b, sums, last=r == rounds - 1)
        if sums is None:  # the last pass was elsewhere
            return glad_params(pi, alpha, np.exp(b))
        beta, x, e = sums  # exp(b), and the last pass's x and e there: the next E-step's (`log_joint_parts`)
        params = glad_params(pi, alpha, beta)
        self.__dict__["_xe_memo"] = (data, params.alpha, params.beta, x, e)
        return params

    def _round(self, data, w, alpha, b, sums, last: bool = False):
        """One ascent round (`crowdlab.models.glad_steps`): a Newton step per worker from ``sums``
        (`glad_steps.worker_sums` at (alpha, b)), then a step per item (`glad_steps.b_step`); (alpha, b, the sums at the
        new point; after the ``last`` round, what `glad_steps.b_step` returns then)."""
        beta = np.exp(b)
        at: dict = {}

        def trial(a):
            gw, at["items"] = glad_steps.alpha_trial(data, w, a, beta)
            return gw

        def worker_values(a, mask):
            return glad_steps.values(data, w, a, beta, "worker", mask)

        alpha, fresh = glad_steps.alpha_step(self.alpha_prior, alpha, sums, trial, worker_values)
        if not fresh:
            trial(alpha)
        b, sums = glad_steps.b_step(self.beta_prior, data, w, alpha, b, at["items"], last)
        return alpha, b, sums

    def remaining_gain(self, data: Annotations, params: GladParams) -> float:
        """What EM has left to gain at ``params`` by one step of the M-step from there (nats): 1/2 sum g^2 / h over
        the abilities and difficulties (`glad_steps.newton_gain`; g the gradient of the objective, from the posterior
        at ``params``) plus, with an estimated class prior, the gain of its closed-form step. Two passes over the
        labels; the stopping rule asks for it once, when a run stalls (`crowdlab.engines.run.at_optimum`)."""
        q = self.e_step(data, params).q
        glad_steps.prepare(data.n_obs)
        w = glad_steps.gather_w(q, data)
        sums = glad_steps.worker_sums(data, w, params.alpha, params.beta)
        _, items = glad_steps.alpha_trial(data, w, params.alpha, params.beta)
        ga, gb = glad_steps.newton_gain(
            self.alpha_prior, self.beta_prior, params.alpha, np.log(params.beta), sums, items
        )
        return ga + gb + self.class_prior_gain(q.sum(axis=0), q.shape[0], params.pi)

    def class_prior_gain(self, colsum: np.ndarray, n: int, pi: np.ndarray) -> float:
        """Q's gain from the class prior's closed-form step at ``pi`` (0 for the fixed uniform prior): sum_k
        (n_k + s) log(pi_new_k / pi_k), n_k = sum_i q_ik (``colsum``)."""
        if self.class_prior == "uniform":
            return 0.0
        s, K = self.prior, pi.shape[0]
        new = (colsum + s) / (n + s * K)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(new > 0, (colsum + s) * (np.log(new) - np.log(np.maximum(pi, 1e-300))), 0.0)
        return float(terms.sum())

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
