"""Bayesian Dawid-Skene by variational inference: IBCC (Kim & Ghahramani 2012).

Model (Kim & Ghahramani 2012, Sec. 2, "Independent Bayesian Classifier Combination"): Dawid-Skene's model with
Dirichlet priors on everything: the class prior kappa ~ Dir(nu0) and every column of every confusion matrix,
Gamma_m(., k) ~ Dir(A0_m(., k)) (columns = true class, the house convention; the paper's pi^(k)_m). Default
prior: 1 + ``prior`` in every cell, plus ``diagonal`` on the diagonal (the paper's belief that workers beat
chance); nu0 = 1 + ``prior``.

Variational Bayes (Sec. 3, mean field q(y) q(kappa) prod q(Gamma_m(., k))), coordinate ascent in two half-steps
that this app steps like EM:

- E-step (the update of q(y)): q_nk ∝ exp(E[log kappa_k] + sum over n's labels of E[log Gamma_m(label, k)]),
  with E[log x_a] = psi(a_a) - psi(sum_b a_b) under a Dirichlet(a) (psi: digamma); one sparse product, like
  Dawid-Skene's eq. (9) with the expected logs in place of the logs.
- M-step (the update of the Dirichlet posteriors): A_m(k', k) = A0_m(k', k) + sum_n q_nk #(m said k' on n) and
  nu_k = nu0_k + sum_n q_nk: Dawid-Skene's expected counts plus the prior's.

Objective: the evidence lower bound ELBO = E[log p(x, y, kappa, Gamma)] - E[log q] <= log p(x) (the marginal
likelihood with every parameter integrated out):
ELBO = sum_nk q_nk (E log kappa_k + sum E log Gamma) + H(q) - KL(q(kappa) || p(kappa)) - sum KL(q(Gamma col) ||
p(Gamma col)). Each half-step maximises it over one factor with the other fixed, so it never decreases (checked
on every step; this is not EM on log p(x | theta), and the app labels the objective as the ELBO).

Parameters shown (``IbccParams``): the posterior means (pi = E kappa, gamma = E Gamma) plus the Dirichlet
parameters ``nu`` (K,) and ``A`` (M, K, K). Credible intervals for each worker's accuracy
sum_k kappa_k Gamma_m(k, k) come from the Dirichlet posteriors (:func:`accuracy_intervals`).

As the data grow relative to the prior (e.g. every item repeated r times, r -> infinity), E[log Gamma] -> log of
the posterior mean and the updates become Dawid-Skene's maximum-likelihood EM: IBCC's posterior means converge to
Dawid-Skene's answer (tested).

"Can't tell" responses (``data.response_names``, R of them): worker m answers r on class k with rate
rho_m(r, k) and a class with probability 1 - sum_r rho_m(r, k), then drawn from Gamma_m(., k) as above. The rates
are point estimates (variational EM: rho_m(r, k) = sum_n q_nk #(m said r on n) / sum_n q_nk #(m answered on n),
the maximiser of the ELBO over rho, so it still never decreases), not Dirichlet posteriors: under a prior on them
the abstentions of a worker who always abstains would still say something about the classes (the marginal
prod_k B(a0 + n_k, b0) depends on how many items are in each class), which is not what "can't tell" means. With
point rates that worker's rho is 1 on every class, its factor is 1, and the posterior is the one without it
(tested to 1e-12). The Dirichlets count class answers only; ``gamma`` is (M, K + R, K), as Dawid-Skene's.

Shapes: nu (K,), A (M, K, K), q (N, K); ``abstain`` (M, R, K) or None.
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
    _inner,
    credible_draws,
    credible_interval,
)
from crowdlab.models.dawid_skene import expected_counts, log_response_rows, split_responses, with_response_rows
from crowdlab.models.kernels import add_row_offset
from crowdlab.models.params import ClassParams


@dataclass(frozen=True, eq=False)
class IbccParams(ClassParams):
    """Posterior means ``pi`` (K,) and ``gamma`` (M, K, K) and the Dirichlet parameters ``nu`` and ``A``; with
    responses that are not classes, their rates ``abstain`` (M, R, K) and ``gamma`` (M, K + R, K)."""

    nu: np.ndarray = None
    A: np.ndarray = None
    abstain: np.ndarray | None = None

    def to_dict(self, worker_names=None, class_names=None) -> dict:
        out = super().to_dict(worker_names, class_names)
        out["dirichlet_nu"] = self.nu.tolist()
        out["dirichlet_A"] = self.A.tolist()
        if self.abstain is not None:
            out["abstain"] = self.abstain.tolist()
        out["note"] = "pi and gamma are posterior means; columns A[m][:, k] are Dirichlet parameters"
        return out


def ibcc_params(nu: np.ndarray, A: np.ndarray, abstain: np.ndarray | None = None) -> IbccParams:
    nu = np.asarray(nu, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    gamma = A / A.sum(axis=1, keepdims=True)
    if abstain is not None:
        gamma = with_response_rows(gamma, abstain)
    return IbccParams(pi=nu / nu.sum(), gamma=gamma, nu=nu, A=A, abstain=abstain)


def expected_log(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """E[log x] under Dirichlet(a) along ``axis``: psi(a) - psi(sum a)."""
    from scipy.special import digamma  # on first use: ``import crowdlab`` stays light

    return digamma(a) - digamma(a.sum(axis=axis, keepdims=True))


def kl_dirichlet(a: np.ndarray, b: np.ndarray, axis: int = -1, elog: np.ndarray | None = None) -> float:
    """Sum over the vectors along ``axis`` of KL(Dir(a) || Dir(b)); ``elog``: ``expected_log(a, axis)`` if known."""
    sa = a.sum(axis=axis)
    sb = b.sum(axis=axis)
    from scipy.special import gammaln

    out = gammaln(sa) - gammaln(a).sum(axis=axis) - gammaln(sb) + gammaln(b).sum(axis=axis)
    out = out + ((a - b) * (expected_log(a, axis) if elog is None else elog)).sum(axis=axis)
    return float(out.sum())


class IBCC(VariationalObjective, LatentModel):
    """Variational Bayesian Dawid-Skene (Kim & Ghahramani 2012): Dirichlet posteriors, the ELBO as objective."""

    reads_responses = True  # "can't tell": point-estimated rates per worker and class (module docstring)

    info = ModelInfo(
        "ibcc",
        "Bayesian Dawid-Skene (IBCC, variational)",
        "classes",
        exact=False,
        latent="item",
        has_hard=False,
        prior_pull=(
            "s more pseudo-counts in every cell of every Dirichlet (confusion columns and class prior; the "
            "diagonal bonus stays): a stronger prior pulls them towards uniform"
        ),
    )

    def __init__(self, prior: float = 0.0, hard: bool = False, diagonal: float = 1.0) -> None:
        if prior < 0 or diagonal < 0:
            raise ModelError("prior strength and diagonal bonus must be >= 0.")
        if hard:
            raise ModelError(
                "IBCC is variational Bayes: it keeps a full posterior q(y);"
                " there is no hard version: leave hard=False (the default)."
            )
        self.prior = float(prior)
        self.diagonal = float(diagonal)
        self.hard = False

    @property
    def objective_name(self) -> str:
        return "ELBO (variational lower bound on log p(x))"

    def prior_params(self, data: Annotations) -> tuple[np.ndarray, np.ndarray]:
        """(nu0 (K,), A0 (M, K, K)): the Dirichlet prior parameters."""
        memo = self.__dict__.get("_prior_memo")
        if memo is not None and memo[0] is data:
            return memo[1]
        out = self.prior_arrays(data.n_workers, data.n_classes)
        self.__dict__["_prior_memo"] = (data, out)
        return out

    def prior_arrays(self, M: int, K: int) -> tuple[np.ndarray, np.ndarray]:
        """(nu0 (K,), A0 (M, K, K)) for M workers and K classes."""
        a = 1.0 + self.prior
        return np.full(K, a), np.full((M, K, K), a) + self.diagonal * np.eye(K)[None]

    def _terms(self, data: Annotations, params: IbccParams) -> tuple[np.ndarray, np.ndarray, float]:
        """(E[log Gamma] (M, K, K), E[log kappa] (K,), KL of the Dirichlet posteriors from the priors) at
        ``params``, remembered for the last two parameter sets: the E-step, the ELBO after it and the ELBO after
        the next M-step all need them."""
        memo = self.__dict__.setdefault("_terms_memo", [])
        for d, p, v in memo:
            if d is data and p is params:
                return v
        nu0, A0 = self.prior_params(data)
        e_g, e_nu = expected_log(params.A, axis=1), expected_log(params.nu)
        kl = kl_dirichlet(params.nu, nu0, elog=e_nu) + kl_dirichlet(params.A, A0, axis=1, elog=e_g)
        v = (e_g, e_nu, kl)
        self.__dict__["_terms_memo"] = [*memo[-1:], (data, params, v)]
        return v

    def log_joint(self, data: Annotations, params: IbccParams) -> np.ndarray:
        """(N, K): E[log kappa_k] + sum over n's labels of E[log Gamma_m(label, k)] (the VB E-step's exponent)."""
        return add_row_offset(*self.log_joint_parts(data, params))

    def log_joint_parts(self, data: Annotations, params: IbccParams) -> tuple[np.ndarray, np.ndarray]:
        K = data.n_classes
        e_g, e_nu, _ = self._terms(data, params)
        if params.abstain is not None:
            e_g = log_response_rows(e_g, params.abstain)
        return np.asarray(data.label_counts @ e_g.reshape(-1, K)), e_nu.copy()

    def m_step(self, data: Annotations, q: np.ndarray) -> IbccParams:
        nu0, A0 = self.prior_params(data)
        counts, rho = expected_counts(data, q), None
        if data.response_names:
            counts, rho = split_responses(counts, data.n_classes)
        return ibcc_params(nu0 + self.q_column_sums(q), A0 + counts, rho)

    def m_step_from_stats(self, counts: np.ndarray, q_sum: np.ndarray, n_items: int, start=None) -> IbccParams:
        """The M-step from the expected counts (M, K, K) and class totals (K,) summed over blocks
        (`crowdlab.engines.blocks`): the Dirichlet posteriors are the prior plus them."""
        nu0, A0 = self.prior_arrays(counts.shape[0], counts.shape[2])
        return ibcc_params(nu0 + q_sum, A0 + counts)

    def elbo(self, data: Annotations, q: np.ndarray, params: IbccParams) -> float:
        """E_q[log joint] + H(q) - KL(Dirichlet posteriors || priors); remembered for the last (data, q, params),
        since the engine asks for it as the objective and again as the bound."""
        memo = self.__dict__.get("_elbo_memo")
        if memo is not None and memo[0] is data and memo[1] is q and memo[2] is params:
            return memo[3]
        lj = self._lj(data, params)
        kl = self._terms(data, params)[2]
        value = _inner(q, lj) + self.entropy(q) - kl
        self.__dict__["_elbo_memo"] = (data, q, params, value)
        return value

    def free_parts(self, params: IbccParams) -> list:
        """Accelerated VB extrapolates the logs of the Dirichlet parameters nu and A (and of the abstention rates)."""
        parts = [(params.nu, "log", 0), (params.A, "log", 0)]
        if params.abstain is not None:
            parts.append((params.abstain, "rates", 1))
        return parts

    def from_free_parts(self, params: IbccParams, arrays: list[np.ndarray]) -> IbccParams:
        return ibcc_params(arrays[0], arrays[1], arrays[2] if len(arrays) > 2 else None)

    def params_from(self, nu: np.ndarray, A: np.ndarray) -> IbccParams:
        return ibcc_params(nu, A)

    def accuracy_intervals(
        self, params: IbccParams, level: float = 0.95, draws: int | None = None, seed: int = 0
    ) -> dict:
        return accuracy_intervals(params, level, draws, seed)


def accuracy_intervals(params: IbccParams, level: float = 0.95, draws: int | None = None, seed: int = 0) -> dict:
    """Posterior mean and central credible interval of each worker's accuracy sum_k kappa_k Gamma_m(k, k).

    Monte Carlo over the Dirichlet posteriors (seeded): Gamma_m(k, k) ~ Beta(A_m(k, k), sum_k' A_m(k', k) -
    A_m(k, k)) (the marginal of a Dirichlet column) and kappa ~ Dir(nu); ``draws`` defaults to
    :func:`crowdlab.models.base.credible_draws` (4,000 for small crowds). Also the exact per-class intervals of
    Gamma_m(k, k) (Beta quantiles). Returns arrays: ``mean``, ``lo``, ``hi`` (M,) and ``diag_mean``, ``diag_lo``,
    ``diag_hi`` (M, K), and ``level`` and ``draws``.
    """
    from scipy.stats import beta as beta_dist

    A = params.A
    diag = np.diagonal(A, axis1=1, axis2=2)  # (M, K)
    rest = A.sum(axis=1) - diag
    M, K = diag.shape
    draws = credible_draws(M, K, draws)
    # "can't tell": a right answer is an answer (1 - sum_r rho, a point estimate) that is right
    answered = np.ones((M, K)) if params.abstain is None else np.clip(1.0 - params.abstain.sum(axis=1), 0.0, 1.0)

    def sample(rng: np.random.Generator, n: int) -> np.ndarray:
        g = rng.beta(diag[None], rest[None], size=(n, M, K)) * answered[None]
        kappa = rng.dirichlet(params.nu, size=n)  # (n, K)
        return np.einsum("smk,sk->sm", g, kappa)

    lo, hi = credible_interval(sample, M, K, level, draws, seed)
    tail = (1.0 - level) / 2
    return {
        "mean": np.diagonal(params.gamma, axis1=1, axis2=2) @ params.pi,
        "lo": lo,
        "hi": hi,
        "diag_mean": answered * diag / (diag + rest),
        "diag_lo": answered * beta_dist.ppf(tail, diag, rest),
        "diag_hi": answered * beta_dist.ppf(1.0 - tail, diag, rest),
        "level": level,
        "draws": draws,
    }
