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

"Can't tell" responses (``data.response_names``, R of them; MACE by EM and by VB alike): an abstention is never the
truth, so it can only come from the spamming route: xi_j runs over the K + R responses and Gamma_j("can't tell", t) =
(1 - theta_j) xi_j("can't tell") for every t. MACE thus learns who abstains (and how that trades against its
competence) but, by its own assumption that spam does not depend on the truth, not on which class: an abstention
says nothing about the class (a worker who always abstains leaves the posterior as it is without that worker,
tested to 1e-12 against the same response alphabet). The counts of the inner EM are the same with O_j(r) = every
"can't tell" of j (surely spam) and D_j(r) = 0.

Shapes: pi (K,), theta (M,), xi (M, K) (M, K + R with responses that are not classes), gamma (M, K, K) (M, K + R,
K), q (N, K).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import (
    LatentModel,
    ModelInfo,
    VariationalObjective,
    WarmPosterior,
    _inner,
    credible_draws,
    credible_interval,
    log_beta_pdf,
    log_dirichlet,
    safe_log,
)
from crowdlab.models.dawid_skene import ConfusionLogJoint, expected_counts
from crowdlab.models.kernels import add_row_offset
from crowdlab.models.params import ClassParams

CLASS_PRIORS = ("uniform", "estimate")


def mace_gamma(theta: np.ndarray, xi: np.ndarray, K: int | None = None) -> np.ndarray:
    """(M, K, K): Gamma_j(a, t) = theta_j I(a = t) + (1 - theta_j) xi_j(a) (columns = true class); with ``K``
    classes and ``xi`` over more responses, (M, K + R, K) (a response that is not a class is never honest)."""
    theta = np.asarray(theta, dtype=np.float64)
    xi = np.asarray(xi, dtype=np.float64)
    A = xi.shape[1]
    K = A if K is None else K
    eye = np.eye(A) if K == A else np.eye(A, K)
    return eye[None] * theta[:, None, None] + (1.0 - theta)[:, None, None] * xi[:, :, None]


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
    pi = np.asarray(pi, dtype=np.float64)
    return MaceParams(pi=pi, gamma=mace_gamma(theta, xi, pi.shape[0]), extra={"theta": theta}, xi=xi)


def spam_responsibility(theta: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """(M, K): P(S_ij = 0 | A_ij = a, T_i = a) = theta_j / (theta_j + (1 - theta_j) xi_j(a))."""
    den = theta[:, None] + (1.0 - theta)[:, None] * xi
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, theta[:, None] / np.where(den > 0, den, 1.0), 0.0)


class MACE(ConfusionLogJoint, LatentModel):
    """MACE EM (Hovy et al. 2013), MAP with Beta and Dirichlet priors; hard EM optional."""

    reads_responses = True  # "can't tell" is a spam response (module docstring)

    info = ModelInfo(
        "mace",
        "MACE (competence and spamming)",
        "classes",
        exact=True,
        latent="item",
        prior_pull=(
            "s more pseudo-counts on each competence's Beta(2, 2) and each strategy's Dirichlet(2): a stronger "
            "prior pulls competences towards 0.5 and strategies towards uniform"
        ),
    )

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
            raise ModelError("prior strength must be >= 0.")
        if class_prior not in CLASS_PRIORS:
            raise ModelError(f"class_prior must be one of {CLASS_PRIORS}.")
        s = float(prior)
        self.prior = s
        self.hard = bool(hard)
        self.class_prior = class_prior
        self.theta_prior = (float(theta_prior[0]) + s, float(theta_prior[1]) + s)
        self.strategy_prior = float(strategy_prior) + s
        self.inner = int(inner)
        self._check_priors()

    def _check_priors(self) -> None:
        if min(self.theta_prior) < 1.0 or self.strategy_prior < 1.0:
            raise ModelError("MACE's Beta and Dirichlet prior parameters must be >= 1 for a closed-form MAP M-step.")

    @property
    def has_prior(self) -> bool:
        return self.theta_prior != (1.0, 1.0) or self.strategy_prior != 1.0 or self.prior > 0

    def e_step(self, data: Annotations, params: MaceParams) -> WarmPosterior:
        return WarmPosterior(super().e_step(data, params), params)

    def as_posterior(self, data: Annotations, q: np.ndarray) -> WarmPosterior:
        return WarmPosterior(self.clamp(data, q), None)

    def m_step(self, data: Annotations, post) -> MaceParams:
        q, start = (post.q, post.params) if isinstance(post, WarmPosterior) else (post, None)
        return self.m_step_from_stats(expected_counts(data, q), self._q_sum(q), q.shape[0], start)

    def _q_sum(self, q: np.ndarray) -> np.ndarray | None:
        """sum_n q_nk when the class prior is estimated (the only use), else None."""
        return self.q_column_sums(q) if self.class_prior == "estimate" else None

    def m_step_from_stats(self, C: np.ndarray, q_sum, n_items: int, start=None) -> MaceParams:
        """The M-step from the expected counts C (M, K, K), the class totals (K,) (None: uniform class prior) and N,
        warm-started at ``start`` (the parameters of the E-step that gave q; None at the start): what the streaming
        and Dask engines sum over blocks (`crowdlab.engines.blocks`)."""
        M, K = C.shape[0], C.shape[2]
        D = np.diagonal(C, axis1=1, axis2=2)  # (M, K): labels a on items whose truth may be a
        n_lab = C.sum(axis=2)  # (M, K): labels a given by j
        A = C.shape[1]  # responses: the K classes, then any that are not classes (xi runs over all of them)
        if A > K:  # a response that is not a class is never honest (D = 0 there): all of it is spam
            D = np.concatenate([D, np.zeros((M, A - K))], axis=1)
        O = n_lab - D  # surely spam
        n = n_lab.sum(axis=1)
        a, b = self.theta_prior
        c = self.strategy_prior
        if start is None:
            theta, xi = np.full(M, 0.5), np.full((M, A), 1.0 / A)
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
            xi_new = np.where(tot > 0, num / np.where(tot > 0, tot, 1.0), 1.0 / A)
            done = np.abs(theta_new - theta).max() < 1e-12 and np.abs(xi_new - xi).max() < 1e-12
            theta, xi = theta_new, xi_new
            if done:
                break
        return mace_params(self._class_prior(q_sum, n_items, K), theta, xi)

    def _class_prior(self, q_sum, n_items: int, K: int) -> np.ndarray:
        """pi: uniform (the paper's), or estimated with Dirichlet(1 + ``prior``) (MAP) from the class totals."""
        if self.class_prior == "uniform":
            return np.full(K, 1.0 / K)
        return (q_sum + self.prior) / (n_items + self.prior * K)

    def log_prior(self, params: MaceParams) -> float:
        if not self.has_prior:
            return 0.0
        out = log_beta_pdf(params.theta, *self.theta_prior) + log_dirichlet(params.xi, self.strategy_prior)
        if self.class_prior == "estimate" and self.prior > 0:
            out += log_dirichlet(params.pi, 1.0 + self.prior)
        return float(out)

    def free_parts(self, params: MaceParams) -> list:
        """Accelerated EM extrapolates log pi, logit theta and log xi (each strategy renormalised at the map)."""
        return [(params.pi, "simplex", 0), (params.theta, "logit", 0), (params.xi, "simplex", 1)]

    def from_free_parts(self, params: MaceParams, arrays: list[np.ndarray]) -> MaceParams:
        return mace_params(*arrays)

    def params_from(self, pi: np.ndarray, theta: np.ndarray, xi: np.ndarray) -> MaceParams:
        return mace_params(pi, theta, xi)


# ---------------------------------------------------------------------------- the paper's Bayesian version
@dataclass(frozen=True, eq=False)
class MaceVBParams(MaceParams):
    """MACE's variational posteriors: theta_j ~ Beta(``ab[j, 0]``, ``ab[j, 1]``), xi_j ~ Dirichlet(``c[j]``).

    ``theta``, ``xi``, ``gamma`` are posterior means (what the tables, plots and worker reports show);
    ``e_theta``, ``e_spam`` (M,) and ``e_xi`` (M, K) are E[log theta_j], E[log(1 - theta_j)] and E[log xi_j(a)],
    which the E-step uses; ``log_tilde`` (M, K, K) is log(exp E[log theta] I(a = t) + exp(E[log(1 - theta)] +
    E[log xi(a)])), the E-step's (sub-normalised) confusion matrices."""

    ab: np.ndarray = None
    c: np.ndarray = None
    e_theta: np.ndarray = None
    e_spam: np.ndarray = None
    e_xi: np.ndarray = None
    log_tilde: np.ndarray = None
    prior: tuple = (0.5, 0.5, 10.0)  # (a, b, c): Beta(a, b) on theta_j, Dirichlet(c) on xi_j

    def to_dict(self, worker_names=None, class_names=None) -> dict:
        out = super().to_dict(worker_names, class_names)
        out["beta_posterior"] = self.ab.tolist()
        out["dirichlet_posterior"] = self.c.tolist()
        out["prior"] = {"beta": list(self.prior[:2]), "dirichlet": self.prior[2]}
        out["note"] = "theta, xi and gamma are posterior means; theta_j ~ Beta(beta_posterior[j]), xi_j ~ Dir(...)"
        return out


def vb_expected_logs(ab: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E[log theta_j], E[log(1 - theta_j)], E[log xi_j(a)]) under Beta(ab[j]) and Dirichlet(c[j])."""
    from crowdlab.models.ibcc import expected_log

    e_ab = expected_log(ab)
    return e_ab[:, 0], e_ab[:, 1], expected_log(c)


def mace_vb_params(pi: np.ndarray, ab: np.ndarray, c: np.ndarray, prior=(0.5, 0.5, 10.0)) -> MaceVBParams:
    """Parameters from the Beta posteriors ``ab`` (M, 2) of theta and the Dirichlet posteriors ``c`` (M, K) of xi
    (``prior``: the (a, b, c) they started from, kept for the explanations and the export)."""
    ab = np.asarray(ab, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    e_theta, e_spam, e_xi = vb_expected_logs(ab, c)
    pi = np.asarray(pi, dtype=np.float64)
    K = pi.shape[0]  # c runs over K classes, or K + the "can't tell" responses (never honest)
    spam = e_spam[:, None] + e_xi  # (M, K): log of the spam route to label a
    log_tilde = np.repeat(spam[:, :, None], K, axis=2)
    idx = np.arange(K)
    log_tilde[:, idx, idx] = np.logaddexp(e_theta[:, None], spam[:, :K])
    theta = ab[:, 0] / ab.sum(axis=1)
    xi = c / c.sum(axis=1, keepdims=True)
    return MaceVBParams(
        pi=pi,
        gamma=mace_gamma(theta, xi, K),
        extra={"theta": theta},
        xi=xi,
        ab=ab,
        c=c,
        e_theta=e_theta,
        e_spam=e_spam,
        e_xi=e_xi,
        log_tilde=log_tilde,
        prior=tuple(float(v) for v in prior),
    )


class MaceVB(VariationalObjective, MACE):
    """MACE by variational Bayes (Hovy et al. 2013, Sec. 2.2): Beta and Dirichlet posteriors, the ELBO as objective.

    The paper's Bayesian version of the same model: theta_j ~ Beta(a, b) and xi_j ~ Dirichlet(c) are integrated
    over with the mean-field family q(T, S) q(theta) q(xi) instead of point-estimated. Defaults: Beta(0.5, 0.5),
    the paper's sparse prior ("either an annotator tried to get the right answer, or simply did not care"), and
    Dirichlet(10) on the strategies, as in crowd-kit's MACE. Coordinate ascent, stepped like EM:

    - E-step (q(T) and q(S | T)): Dawid-Skene's E-step with Gamma~_j(a, t) = exp E[log theta_j] I(a = t) +
      exp(E[log(1 - theta_j)] + E[log xi_j(a)]) in place of Gamma_j, where E[log theta_j] = psi(a_j) -
      psi(a_j + b_j) and so on (psi: digamma); q(S_ij = 0 | A_ij = a, T_i = a) = exp E[log theta_j] / Gamma~_j(a,
      a) (MACE's responsibility with the expected logs).
    - M-step (q(theta_j), q(xi_j)): Beta(a + E[#honest], b + E[#spam]) and Dirichlet(c + E[#spammed a]), the
      expected counts of MACE's EM; up to ``inner`` rounds alternate them with q(S | T) at fixed q(T), as MACE's
      EM does (each round raises the ELBO).

    Objective: ELBO = sum_i sum_t q_it (log pi_t + sum over i's labels of log Gamma~_j(A_ij, t)) + H(q(T)) -
    sum_j KL(q(theta_j) || Beta(a, b)) - sum_j KL(q(xi_j) || Dir(c)) <= log p(A) (q(S | T) at its optimum given
    q(theta, xi); that is why Gamma~ and not the posterior mean enters). It never decreases (checked on every step);
    as the labels per worker grow, E[log theta] -> log of the posterior mean and the fit tends to MACE's EM.
    ``class_prior="estimate"`` keeps pi a point estimate (MAP with Dirichlet(1 + ``prior``)).
    """

    reads_responses = True  # "can't tell": a spam-only response, as in MACE by EM (the module docstring)

    info = ModelInfo(
        "mace_vb",
        "MACE (variational Bayes)",
        "classes",
        exact=False,
        latent="item",
        has_hard=False,
        prior_pull=(
            "s more pseudo-counts on each competence's Beta(0.5, 0.5) and each strategy's Dirichlet(10): a "
            "stronger prior pulls competences towards 0.5 and strategies towards uniform"
        ),
    )

    def __init__(
        self,
        prior: float = 0.0,
        hard: bool = False,
        class_prior: str = "uniform",
        theta_prior: tuple[float, float] = (0.5, 0.5),
        strategy_prior: float = 10.0,
        inner: int = 20,
    ) -> None:
        """``theta_prior``: Beta(a, b) on each theta_j; ``strategy_prior``: symmetric Dirichlet(c) on each xi_j; any
        positive values (no closed-form MAP needed). ``prior`` adds that many pseudo-counts to all of them."""
        if hard:
            raise ModelError(
                "MACE (variational Bayes) keeps a full posterior q(T);"
                " there is no hard version: leave hard=False (the default)."
            )
        super().__init__(prior, False, class_prior, theta_prior, strategy_prior, inner)

    def _check_priors(self) -> None:
        if min(self.theta_prior) <= 0 or self.strategy_prior <= 0:
            raise ModelError("MACE's Beta and Dirichlet prior parameters must be > 0.")

    @property
    def objective_name(self) -> str:
        return "ELBO (variational lower bound on log p(A))"

    def log_joint(self, data: Annotations, params: MaceVBParams) -> np.ndarray:
        """(N, K): log pi_t + sum over i's labels of log Gamma~_j(A_ij, t) (the VB E-step's exponent)."""
        return add_row_offset(*self.log_joint_parts(data, params))

    def log_joint_parts(self, data: Annotations, params: MaceVBParams) -> tuple[np.ndarray, np.ndarray]:
        K = data.n_classes
        return np.asarray(data.label_counts @ params.log_tilde.reshape(-1, K)), safe_log(params.pi)

    def m_step(self, data: Annotations, post) -> MaceVBParams:
        q, start = (post.q, post.params) if isinstance(post, WarmPosterior) else (post, None)
        return self.m_step_from_stats(expected_counts(data, q), self._q_sum(q), q.shape[0], start)

    def m_step_from_stats(self, C: np.ndarray, q_sum, n_items: int, start=None) -> MaceVBParams:
        """The VB M-step from the expected counts, class totals and N (see `MACE.m_step_from_stats`)."""
        from scipy.special import expit

        M, K = C.shape[0], C.shape[2]
        D = np.diagonal(C, axis1=1, axis2=2)  # (M, K): labels a on items whose truth may be a
        A = C.shape[1]  # responses: the K classes, then "can't tell" (xi runs over all of them)
        if A > K:  # "can't tell" responses: never honest (D = 0 there), all of them spam
            D = np.concatenate([D, np.zeros((M, A - K))], axis=1)
        O = C.sum(axis=2) - D  # surely spam
        a, b = self.theta_prior
        c = self.strategy_prior
        if isinstance(start, MaceVBParams):
            e_theta, e_spam, e_xi = start.e_theta, start.e_spam, start.e_xi
            rounds = self.inner
        else:
            e_theta, e_spam, e_xi = np.full(M, np.log(0.5)), np.full(M, np.log(0.5)), np.full((M, A), -np.log(A))
            rounds = 5 * self.inner
        ab = cc = None
        for _ in range(rounds):
            r = expit(e_theta[:, None] - e_spam[:, None] - e_xi)  # q(S = 0 | A = a, T = a)
            spam = D * (1.0 - r) + O
            ab_new = np.stack([a + (D * r).sum(axis=1), b + spam.sum(axis=1)], axis=1)
            cc_new = c + spam
            done = ab is not None and np.abs(ab_new - ab).max() < 1e-10 and np.abs(cc_new - cc).max() < 1e-10
            ab, cc = ab_new, cc_new
            e_theta, e_spam, e_xi = vb_expected_logs(ab, cc)
            if done:
                break
        return mace_vb_params(self._class_prior(q_sum, n_items, K), ab, cc, (a, b, c))

    def kl(self, params: MaceVBParams) -> float:
        """sum_j KL(Beta(ab_j) || Beta(a, b)) + KL(Dir(c_j) || Dir(c))."""
        from crowdlab.models.ibcc import kl_dirichlet

        a0 = np.broadcast_to(np.asarray(self.theta_prior), params.ab.shape)
        c0 = np.full_like(params.c, self.strategy_prior)
        return kl_dirichlet(params.ab, a0) + kl_dirichlet(params.c, c0)

    def log_prior(self, params: MaceVBParams) -> float:
        """The point-estimated class prior's log density (``class_prior="estimate"`` with ``prior`` > 0), else 0;
        theta and xi enter the ELBO through their KL terms."""
        if self.class_prior == "estimate" and self.prior > 0:
            return float(log_dirichlet(params.pi, 1.0 + self.prior))
        return 0.0

    def elbo(self, data: Annotations, q, params: MaceVBParams) -> float:
        """E_q[log pi_T + sum log Gamma~] + H(q(T)) - KL terms (+ log prior of an estimated pi)."""
        q = q.q if isinstance(q, WarmPosterior) else q
        lj = self._lj(data, params)
        return _inner(q, lj) + self.entropy(q) - self.kl(params) + self.log_prior(params)

    def free_parts(self, params: MaceVBParams) -> list:
        """Accelerated VB extrapolates log pi and the logs of the Beta and Dirichlet posteriors' parameters."""
        return [(params.pi, "simplex", 0), (params.ab, "log", 0), (params.c, "log", 0)]

    def from_free_parts(self, params: MaceVBParams, arrays: list[np.ndarray]) -> MaceVBParams:
        return mace_vb_params(*arrays, params.prior)

    def params_from(self, pi: np.ndarray, theta: np.ndarray, xi: np.ndarray, strength: float = 10.0) -> MaceVBParams:
        """Posteriors with means theta (M,) and xi (M, K), each worth ``strength`` pseudo-labels."""
        theta = np.clip(np.asarray(theta, dtype=np.float64), 1e-6, 1 - 1e-6)
        ab = strength * np.stack([theta, 1.0 - theta], axis=1)
        c = strength * np.maximum(np.asarray(xi, dtype=np.float64), 1e-6)
        return mace_vb_params(pi, ab, c, (*self.theta_prior, self.strategy_prior))

    def accuracy_intervals(
        self, params: MaceVBParams, level: float = 0.95, draws: int | None = None, seed: int = 0
    ) -> dict:
        return accuracy_intervals(params, level, draws, seed)


def spam_intervals(params: MaceVBParams, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """(M,) lower and upper ends of the central ``level`` credible interval of P(spamming) = 1 - theta_j, which
    is Beta(b_j, a_j) under the variational posterior theta_j ~ Beta(a_j, b_j)."""
    from scipy.stats import beta

    tail = (1.0 - level) / 2.0
    a, b = params.ab[:, 0], params.ab[:, 1]
    return beta.ppf(tail, b, a), beta.ppf(1.0 - tail, b, a)


def accuracy_intervals(params: MaceVBParams, level: float = 0.95, draws: int | None = None, seed: int = 0) -> dict:
    """Posterior mean and central credible interval of each worker's accuracy sum_t pi_t Gamma_j(t, t) =
    theta_j + (1 - theta_j) xi_j . pi, by Monte Carlo (seeded) over theta_j ~ Beta(a_j, b_j) and xi_j ~
    Dirichlet(c_j) (independent under the variational posterior; pi is a point value). ``draws`` defaults to
    :func:`crowdlab.models.base.credible_draws`. Returns ``mean``, ``lo``, ``hi`` (M,), ``level`` and ``draws``."""
    a, b = params.ab[:, 0], params.ab[:, 1]
    c, pi = params.c, params.pi
    M, K = c.shape
    pi = np.r_[pi, np.zeros(K - pi.shape[0])]  # a "can't tell" answer is never the truth
    draws = credible_draws(M, K, draws)

    def sample(rng: np.random.Generator, n: int) -> np.ndarray:
        theta = rng.beta(a[None], b[None], size=(n, M))
        g = rng.gamma(c[None], size=(n, M, K))  # normalised: Dirichlet(c_j) draws
        total = g.sum(axis=2)
        ok = total > 0  # all K gammas can underflow to 0 when every c_j(a) is tiny: use the mean there
        hit = np.where(ok, (g @ pi) / np.where(ok, total, 1.0), ((c @ pi) / c.sum(axis=1))[None])
        return theta + (1.0 - theta) * hit

    lo, hi = credible_interval(sample, M, K, level, draws, seed)
    mean = np.diagonal(params.gamma, axis1=1, axis2=2) @ params.pi
    return {"mean": mean, "lo": lo, "hi": hi, "level": level, "draws": draws}
