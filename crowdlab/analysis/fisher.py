"""Fisher information and standard errors (Donmez et al. 2010, Sec. 5; eqs. (23)-(24)).

Expected (Fisher) information
-----------------------------
- :func:`fisher_symmetric`: J(theta) for one binary classifier under the symmetric model (8) with alpha =
  p(y = code 0) (the paper's p(y = 1)), vectorised over arrays of theta and alpha (Fig. 3, right). With
  P1 = p(out = 0) = theta (2 alpha - 1) + 1 - alpha and P2 = 1 - P1 = alpha - theta (2 alpha - 1), the score is
  +-(2 alpha - 1) / P_out, so

      J(theta) = P1 (2 alpha - 1)^2 / P1^2 + P2 (2 alpha - 1)^2 / P2^2 = (2 alpha - 1)^2 / (P1 P2).

  **Erratum.** Eq. (24) as printed, alpha (2 alpha - 1)^2 / P1^2 + (1 - alpha) (2 alpha - 1)^2 / P2^2, weights the
  squared score by p(y) instead of p_theta(out); it agrees with E[score^2] only at theta = 1/2 and theta = 1
  (e.g. theta = 0.7, alpha = 0.8: printed 1.248, E[score^2] = 1.528). It is kept as
  :func:`fisher_symmetric_printed` for comparison. Since eq. (9) is linear in m/n, Var(theta_hat) =
  P1 P2 / (n (2 alpha - 1)^2) = 1 / (n J) exactly (before clipping to [0, 1]), which the Monte-Carlo check in
  ``benchmarks/bench_fisher.py`` and the tests confirm.
- :func:`fisher_enumerate`: the exact information E[score score^T] of any small discrete model, by summing over
  every outcome vector (l^k of them): J = sum_o dp_o dp_o^T / p_o, where the derivatives dp_o / dtheta come from the
  complex step (Im p(theta + i h e_a) / h, exact to rounding for any ``prob_fn`` written with +, *, / and powers)
  or, for functions that are not complex-safe, central differences. :func:`outcome_probs` and
  :func:`symmetric_outcome_probs` give p(out_1, ..., out_k) = sum_y p(y) prod_j p_j(out_j | y) (eq. (12)) and
  :func:`fisher_collaborative` the k x k information of the collaborative symmetric model.

Observed information for fitted crowd models
--------------------------------------------
:func:`observed_information` computes the negative Hessian of the marginal log-likelihood log p(x | theta)
(+ log prior when the model is MAP) of a fitted Dawid-Skene, one-coin or two-coin model, analytically, by
Louis' identity for independent items: with q_n(y) the exact posterior of item n,

    d^2 log p(x_n) = E_q[d^2 log p(x_n, y)] + Var_q[d log p(x_n, y)],

summed over items; everything is sparse products with the (item x worker-label) count matrix X (no loop over
items or labels). The free parametrisation phi (the "native" parameters minus the simplex constraints):

- Dawid-Skene: every column Gamma_m(., k) without one entry, and pi without one entry; the dropped (dependent)
  entry is the *largest* of its column (so it is never on the boundary; which entry is dropped does not change any
  standard error, because everything reported goes through the covariance of all entries);
- one-coin: theta_m, plus pi without its largest entry when the model estimates pi (``class_prior=None``);
- two-coin: alpha_m, beta_m and p.

Parameters on the boundary (a probability within 1e-6 of 0 or 1) have no Wald interval (the likelihood is not
smooth in them there); they are held fixed, listed in ``fixed``, and their rows get an exact binomial interval
instead (see :func:`worker_intervals`). ``block="full"`` inverts the whole information matrix (the honest standard
errors); ``block="worker"`` computes only each worker's diagonal block (and one block for the class prior) and
inverts those, i.e. the *conditional* information with every other parameter held at its estimate: cheaper for big
crowds, but its standard errors ignore the uncertainty of the truth the other workers define, so they are smaller
(lower bounds). ``"auto"`` uses "full" up to 2,000 free parameters. A singular or indefinite matrix is inverted on
its positive eigen-space (pseudo-inverse) and flagged.

Good/bad scores model (the EM lecture): phi = (mu_1..mu_N, sigma, pi_good), sigma itself (not log sigma, so its
interval is reported on the native scale). Louis' identity runs over annotators (the latent z_a is per annotator):
with w_a = P(good | s_a), information = sum_a [w_a (-H_good,a) + (1 - w_a) (-H_bad,a)] - sum_a w_a (1 - w_a)
d_a d_a^T, d_a = g_good,a - g_bad,a (see :func:`_scores_information`); plus the Beta prior's s / pi^2 +
s / (1 - pi)^2. Always the full (N + 2) x (N + 2) matrix (``block`` is ignored; dense, so O(N^3) for very many
items). Held fixed: pi_good within 1e-6 of 0 or 1, sigma at its floor sigma_min, and an item mean no annotator
with P(good) > 0 scored (not identified). ``expected_counts`` holds the (M, 2) posterior [P(bad), P(good)].
Caveat: mu_i and sigma are the MLE with one mean per item (Neyman-Scott), so sigma is biased low by a factor
about sqrt(1 - N / n_good_scores) and the mean intervals are a little narrow (about 92 % for a 95 % interval with
6 good scorers per item); the sigma interval undercovers badly.

:func:`worker_intervals` turns that into a table: per worker the estimate, standard error and a 95% Wald interval
(clipped to [0, 1], or on the logit scale) of the worker's accuracy sum_k pi_k Gamma_m(k, k) (delta method through
pi and Gamma), or of the native entries (one-coin theta_m, two-coin alpha_m / beta_m, Dawid-Skene Gamma_m(k, k)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import betaincinv, expit, logit, ndtri  # not scipy.stats: 1-2 s to import for two quantiles

from crowdlab.errors import DataError, ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import softmax_rows
from crowdlab.models.dawid_skene import DawidSkene, expected_counts
from crowdlab.models.mace import mace_gamma
from crowdlab.models.one_coin import OneCoin
from crowdlab.models.params import ClassParams
from crowdlab.models.scores import GoodBadScores, ScoreParams, standard_diff, standard_frame
from crowdlab.models.two_coin import TwoCoin

__all__ = [
    "ObservedInformation",
    "fisher_collaborative",
    "fisher_enumerate",
    "fisher_symmetric",
    "fisher_symmetric_printed",
    "observed_information",
    "outcome_probs",
    "symmetric_outcome_probs",
    "worker_intervals",
]

BOUNDARY = 1e-6  # a probability this close to 0 or 1 is on the boundary: held fixed, no Wald interval
MAX_OUTCOMES = 1 << 21  # l^k outcome vectors fisher_enumerate accepts
FULL_LIMIT = 2000  # "auto" inverts the full information matrix up to this many free parameters
EIG_RTOL = 1e-10  # eigenvalues below EIG_RTOL * largest count as zero (singular information)
SIGMA_FLOOR_RTOL = 1e-9  # a scores-model sigma within this relative distance of sigma_min is at its floor
MU_WEIGHT_MIN = 1e-8  # an item whose scorers' summed P(good) is below this has an unidentified mean


# ====================================================================== expected information
def _alpha(alpha) -> np.ndarray:
    a = np.asarray(alpha, dtype=np.float64)
    if not np.all(np.isfinite(a)) or (a <= 0).any() or (a >= 1).any():
        raise DataError("alpha = p(y = code 0) must lie strictly between 0 and 1.")
    return a


def fisher_symmetric(theta, alpha) -> np.ndarray:
    """J(theta) = (2 alpha - 1)^2 / (P1 P2) for k = 1, two classes, symmetric noise (the corrected eq. (24)).

    ``theta`` and ``alpha`` = p(y = code 0) (the paper's P(y = 1)) broadcast, so a grid gives Fig. 3's contours.
    P1 = theta (2 alpha - 1) + 1 - alpha = p(out = 0), P2 = 1 - P1.
    Zero when alpha = 1/2 (not identifiable). The asymptotic variance of eq. (9) is 1 / (n J).
    """
    th = np.asarray(theta, dtype=np.float64)
    a = _alpha(alpha)
    d = 2.0 * a - 1.0
    p1 = th * d + 1.0 - a
    return d * d / (p1 * (1.0 - p1))


def fisher_symmetric_printed(theta, alpha) -> np.ndarray:
    """Eq. (24) exactly as printed: alpha (2a - 1)^2 / (theta (2a - 1) - a + 1)^2 - (2a - 1)^2 (a - 1) / (a -
    theta (2a - 1))^2. Not the Fisher information except at theta in {1/2, 1} (see the module docstring)."""
    th = np.asarray(theta, dtype=np.float64)
    a = _alpha(alpha)
    d = 2.0 * a - 1.0
    return a * d * d / (th * d - a + 1.0) ** 2 - d * d * (a - 1.0) / (a - th * d) ** 2


def _outcome_grid(l: int, k: int) -> np.ndarray:
    if l**k > MAX_OUTCOMES:
        raise ModelError(f"{l}^{k} = {l**k} outcome vectors are too many to enumerate (limit {MAX_OUTCOMES}).")
    return np.indices((l,) * k).reshape(k, -1).T  # (l^k, k), C order: the last classifier varies fastest


def outcome_probs(gamma, p_y) -> np.ndarray:
    """(l^k,) p(out_1, ..., out_k) = sum_y p(y) prod_j gamma[j, out_j, y] for every outcome vector (eq. (12)).

    ``gamma`` (k, l, l) with ``gamma[j, said, true]`` (house convention); ``p_y`` (l,). Outcome vectors in C order
    of ``np.indices((l,) * k)``. Complex-safe (complex ``gamma`` for complex-step derivatives).
    """
    G = np.asarray(gamma)
    p = np.asarray(p_y)
    k, l, _ = G.shape
    outs = _outcome_grid(l, k)
    per = G[np.arange(k)[None, :], outs, :]  # (l^k, k, l): gamma[j, out_j, y]
    return np.prod(per, axis=1) @ p


def symmetric_outcome_probs(theta, p_y) -> np.ndarray:
    """(l^k,) outcome probabilities of k classifiers under the symmetric model (8); complex-safe in ``theta``."""
    th = np.atleast_1d(np.asarray(theta))
    p = np.asarray(p_y)
    if p.ndim == 0:
        p = np.array([p, 1.0 - p])
    l = p.shape[0]
    eye = np.eye(l)[None]
    G = eye * th[:, None, None] + (1.0 - eye) * ((1.0 - th) / (l - 1))[:, None, None]
    return outcome_probs(G, p)


def fisher_enumerate(
    prob_fn: Callable[[np.ndarray], np.ndarray],
    theta,
    *,
    method: str = "complex",
    h: float | None = None,
) -> np.ndarray:
    """Exact Fisher information of one observation of a small discrete model, by enumerating its outcomes.

    ``prob_fn(theta) -> (n_outcomes,)`` probabilities of *every* outcome (they sum to 1), e.g.
    ``lambda t: symmetric_outcome_probs(t, p_y)``. J = sum_o p_o s_o s_o^T with score s_o = d log p_o / d theta
    = (d p_o / d theta) / p_o, i.e. J = sum_o dp_o dp_o^T / p_o over outcomes with p_o > 0.

    ``method="complex"`` (default): dp_o/dtheta_a = Im p_o(theta + i h e_a) / h with h = 1e-30 -- no cancellation,
    exact to rounding, but ``prob_fn`` must accept complex input and use only analytic operations (no abs, max,
    clip, comparisons). ``method="central"``: (p(theta + h e_a) - p(theta - h e_a)) / (2 h), h = 1e-6 by default
    (error O(h^2)). Returns (r, r).
    """
    th = np.atleast_1d(np.asarray(theta, dtype=np.float64))
    p = np.real(np.asarray(prob_fn(th)))
    if abs(p.sum() - 1.0) > 1e-8:
        raise ModelError(f"prob_fn must return the probabilities of every outcome (they sum to {p.sum():.6g}).")
    r = th.size
    dp = np.empty((p.size, r))
    if method == "complex":
        step = 1e-30 if h is None else float(h)
        for a in range(r):
            t = th.astype(np.complex128)
            t[a] += 1j * step
            dp[:, a] = np.imag(prob_fn(t)) / step
    elif method == "central":
        step = 1e-6 if h is None else float(h)
        for a in range(r):
            e = np.zeros(r)
            e[a] = step
            dp[:, a] = (np.real(prob_fn(th + e)) - np.real(prob_fn(th - e))) / (2.0 * step)
    else:
        raise ValueError(f"method must be 'complex' or 'central', got {method!r}.")
    keep = p > 1e-300
    return (dp[keep] / p[keep, None]).T @ dp[keep]


def fisher_collaborative(theta, p_y) -> np.ndarray:
    """(k, k) Fisher information of one example under the collaborative symmetric model (eq. (12)), by enumeration.

    The asymptotic covariance of the collaborative MLE from n examples is inv(J) / n (eq. (23)).
    """
    p = np.asarray(p_y, dtype=np.float64)
    if p.ndim == 0:
        p = np.array([float(p), 1.0 - float(p)])
    return fisher_enumerate(lambda t: symmetric_outcome_probs(t, p), theta)


# ====================================================================== observed information
@dataclass(frozen=True, eq=False)
class _Layout:
    """Native parameters nu (all probabilities) of a model, how the raw (Gamma, pi) depend on them, and priors.

    raw w = c0 + C nu, with w = [gamma.ravel() (M K K), pi (K)]. Prior log density = sum_t coef_t log(x_t) with
    x = x0 + P nu.
    """

    kind: str
    nu0: np.ndarray
    names: list[str]
    worker: np.ndarray
    groups: list[np.ndarray]  # simplex groups (indices into nu)
    scalars: np.ndarray  # indices of free-standing probabilities
    model_fixed: np.ndarray  # bool (R,): held fixed by the model itself (one-coin's known class prior)
    C: sp.csr_matrix
    c0: np.ndarray
    P: sp.csr_matrix
    x0: np.ndarray
    coef: np.ndarray
    build: Callable[[np.ndarray], ClassParams]


def _coo(rows, cols, vals, shape) -> sp.csr_matrix:
    return sp.csr_matrix(
        (np.asarray(vals, dtype=np.float64), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))), shape=shape
    )


def _layout(model, data: Annotations, params: ClassParams) -> _Layout:
    M, K = data.n_workers, data.n_classes
    if params.gamma.shape != (M, K, K) or params.pi.shape != (K,):
        raise ModelError(
            f"params are for {params.n_workers} workers and {params.n_classes} classes; the data have {M} and {K}."
        )
    W = M * K * K + K
    wn, cn = data.worker_names, data.class_names
    cell = (np.arange(M)[:, None, None] * K * K + np.arange(K)[None, :, None] * K + np.arange(K)[None, None, :]).ravel()
    m_of_cell = np.repeat(np.arange(M), K * K)
    if isinstance(model, DawidSkene):
        R = W
        nu0 = np.concatenate([params.gamma.ravel(), params.pi])
        names = [f"gamma[{wn[m]}][said={cn[a]} | true={cn[b]}]" for m in range(M) for a in range(K) for b in range(K)]
        names += [f"pi[{c}]" for c in cn]
        worker = np.concatenate([m_of_cell, np.full(K, -1)])
        groups = [cell.reshape(M, K, K)[m, :, b] for m in range(M) for b in range(K)] + [M * K * K + np.arange(K)]
        scalars = np.zeros(0, np.int64)
        model_fixed = np.zeros(R, bool)
        C, c0 = sp.identity(W, format="csr"), np.zeros(W)
        s = model.prior
        t = np.arange(R) if s > 0 else np.zeros(0, np.int64)
        P, x0, coef = _coo(np.arange(t.size), t, np.ones(t.size), (t.size, R)), np.zeros(t.size), np.full(t.size, s)

        def build(nu: np.ndarray) -> ClassParams:
            return model.params_from(nu[W - K :], nu[: W - K].reshape(M, K, K))

    elif isinstance(model, OneCoin):
        theta = params.extra.get("theta")
        if theta is None:
            raise ModelError("one-coin params need extra['theta'] (build them with OneCoin.params_from).")
        R = M + K
        nu0 = np.concatenate([np.asarray(theta, np.float64), params.pi])
        names = [f"theta[{w}]" for w in wn] + [f"pi[{c}]" for c in cn]
        worker = np.concatenate([np.arange(M), np.full(K, -1)])
        fixed_pi = model.class_prior is not None
        groups = [] if fixed_pi else [M + np.arange(K)]
        scalars = np.arange(M)
        model_fixed = np.zeros(R, bool)
        model_fixed[M:] = fixed_pi
        diag = ((cell // K) % K) == (cell % K)
        rows = np.concatenate([cell, M * K * K + np.arange(K)])
        cols = np.concatenate([m_of_cell, M + np.arange(K)])
        vals = np.concatenate([np.where(diag, 1.0, -1.0 / (K - 1)), np.ones(K)])
        C = _coo(rows, cols, vals, (W, R))
        c0 = np.concatenate([np.where(diag, 0.0, 1.0 / (K - 1)), np.zeros(K)])
        s = model.prior
        pr, px0, pc = [], [], []
        if s > 0:
            pr += [(np.arange(M), np.ones(M)), (np.arange(M), -np.ones(M))]
            px0 += [np.zeros(M), np.ones(M)]
            pc += [np.full(M, s), np.full(M, s)]
            if not fixed_pi:
                pr.append((M + np.arange(K), np.ones(K)))
                px0.append(np.zeros(K))
                pc.append(np.full(K, s))
        P, x0, coef = _prior_terms(pr, px0, pc, R)

        def build(nu: np.ndarray) -> ClassParams:
            return model.params_from(nu[M:], nu[:M])

    elif isinstance(model, TwoCoin):
        if K != 2:
            raise ModelError(f"two-coin is for two classes; the data have {K}.")
        alpha, beta_ = params.extra.get("alpha"), params.extra.get("beta")
        if alpha is None or beta_ is None:
            raise ModelError("two-coin params need extra['alpha'] and extra['beta'] (TwoCoin.params_from).")
        R = 2 * M + 1
        nu0 = np.concatenate([np.asarray(alpha, np.float64), np.asarray(beta_, np.float64), [params.pi[1]]])
        names = [f"alpha[{w}]" for w in wn] + [f"beta[{w}]" for w in wn] + ["p"]
        worker = np.concatenate([np.arange(M), np.arange(M), [-1]])
        groups = []
        scalars = np.arange(R)
        model_fixed = np.zeros(R, bool)
        m = np.arange(M)
        # gamma[m] = [[beta, 1 - alpha], [1 - beta, alpha]]; flat index m*4 + said*2 + true
        rows = np.concatenate([m * 4 + 0, m * 4 + 2, m * 4 + 1, m * 4 + 3, [4 * M, 4 * M + 1]])
        cols = np.concatenate([M + m, M + m, m, m, [2 * M, 2 * M]])
        vals = np.concatenate([np.ones(M), -np.ones(M), -np.ones(M), np.ones(M), [-1.0, 1.0]])
        C = _coo(rows, cols, vals, (W, R))
        c0 = np.zeros(W)
        c0[m * 4 + 2] = 1.0
        c0[m * 4 + 1] = 1.0
        c0[4 * M] = 1.0
        s = 1.0 + model.prior
        (a1, a2), (b1, b2) = model.alpha_prior, model.beta_prior
        pr, px0, pc = [], [], []
        terms = ((m, (a1 - 1, a2 - 1)), (M + m, (b1 - 1, b2 - 1)), (np.array([2 * M]), (s - 1, s - 1)))
        for idx, (c_lo, c_hi) in terms:
            if c_lo != 0:
                pr.append((idx, np.ones(idx.size)))
                px0.append(np.zeros(idx.size))
                pc.append(np.full(idx.size, c_lo))
            if c_hi != 0:
                pr.append((idx, -np.ones(idx.size)))
                px0.append(np.ones(idx.size))
                pc.append(np.full(idx.size, c_hi))
        P, x0, coef = _prior_terms(pr, px0, pc, R)

        def build(nu: np.ndarray) -> ClassParams:
            return model.params_from(nu[2 * M], nu[:M], nu[M : 2 * M])

    else:
        title = getattr(getattr(model, "info", None), "title", type(model).__name__)
        raise ModelError(
            f"Observed information is implemented for Dawid-Skene, one-coin and two-coin; not for {title}.",
        )
    return _Layout(
        kind=model.info.key,
        nu0=nu0,
        names=names,
        worker=worker.astype(np.int64),
        groups=groups,
        scalars=np.asarray(scalars, np.int64),
        model_fixed=model_fixed,
        C=sp.csr_matrix(C),
        c0=c0,
        P=P,
        x0=x0,
        coef=coef,
        build=build,
    )


def _prior_terms(rows_vals, x0s, coefs, R: int) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Stack prior terms coef * log(x0 + (+-1) nu_idx) into (P (T, R), x0 (T,), coef (T,))."""
    if not rows_vals:
        return sp.csr_matrix((0, R)), np.zeros(0), np.zeros(0)
    idx = np.concatenate([r for r, _ in rows_vals])
    val = np.concatenate([v for _, v in rows_vals])
    T = idx.size
    return _coo(np.arange(T), idx, val, (T, R)), np.concatenate(x0s), np.concatenate(coefs)


def _free_map(lay: _Layout) -> tuple[np.ndarray, sp.csr_matrix, list[int]]:
    """Free coordinates phi and B (R, r) with nu = nu0 + B (phi - phi0); also the boundary-fixed indices."""
    nu = lay.nu0
    R = nu.size
    free: list[int] = []
    dep_of: dict[int, int] = {}
    boundary: list[int] = []
    for i in lay.scalars:
        if lay.model_fixed[i]:
            continue
        if BOUNDARY < nu[i] < 1.0 - BOUNDARY:
            free.append(int(i))
        else:
            boundary.append(int(i))
    for g in lay.groups:
        if lay.model_fixed[g].all():
            continue
        d = int(g[np.argmax(nu[g])])
        for i in g:
            i = int(i)
            if i == d:
                continue
            if nu[i] > BOUNDARY:
                free.append(i)
                dep_of[i] = d
            else:
                boundary.append(i)
        if nu[d] >= 1.0 - BOUNDARY:
            boundary.append(d)
    free_arr = np.asarray(sorted(free), dtype=np.int64)
    r = free_arr.size
    rows = list(free_arr)
    cols = list(range(r))
    vals = [1.0] * r
    for c, i in enumerate(free_arr):
        if int(i) in dep_of:
            rows.append(dep_of[int(i)])
            cols.append(c)
            vals.append(-1.0)
    B = _coo(rows, cols, vals, (R, r))
    return free_arr, B, sorted(boundary)


@dataclass(frozen=True, eq=False)
class ObservedInformation:
    """The observed information of a fitted class model at ``params`` (see the module docstring).

    ``names`` / ``worker`` / ``phi``: the free parameters (worker index, -1 for the class prior) and their values;
    ``information``: -Hessian of log p(x | theta) (+ log prior) in phi, (r, r) (block mode: zero outside the
    blocks); ``covariance``: its inverse (pseudo-inverse on the positive eigen-space when ``singular``);
    ``gradient``: d/dphi of the objective (about 0 at a maximum); ``fixed``: boundary parameters held fixed;
    ``min_eigenvalue`` / ``max_eigenvalue`` of the information; ``notes``: sentences for the user.
    :meth:`params_at` rebuilds the model parameters from a phi vector (used by the finite-difference tests).
    """

    names: tuple[str, ...]
    worker: np.ndarray
    phi: np.ndarray
    information: np.ndarray | sp.spmatrix
    covariance: np.ndarray | sp.spmatrix
    gradient: np.ndarray
    block: str
    singular: bool
    min_eigenvalue: float
    max_eigenvalue: float
    fixed: tuple[str, ...]
    notes: tuple[str, ...]
    expected_counts: np.ndarray
    _layout: _Layout = field(repr=False)
    _B: sp.csr_matrix = field(repr=False)
    _A: sp.csr_matrix = field(repr=False)

    def params_at(self, phi) -> ClassParams:
        """Model parameters with the free coordinates set to ``phi`` (fixed ones kept)."""
        phi = np.asarray(phi, dtype=np.float64)
        nu = self._layout.nu0 + self._B @ (phi - self.phi)
        return self._layout.build(nu)

    def variance(self, J: sp.spmatrix) -> np.ndarray:
        """Delta-method variances diag(J Cov J^T) for rows J (n_q, r) of derivatives with respect to phi."""
        J = sp.csr_matrix(J)
        JC = J @ self.covariance
        prod = JC.multiply(J) if sp.issparse(JC) else J.multiply(np.asarray(JC))
        return np.maximum(np.asarray(prod.sum(axis=1)).ravel(), 0.0)

    def se(self) -> np.ndarray:
        """Standard errors of the free parameters phi."""
        return np.sqrt(self.variance(sp.identity(self.phi.size, format="csr")))


def _symmetric_inverse(H: np.ndarray) -> tuple[np.ndarray, bool, float, float]:
    """Inverse of a symmetric matrix on its positive eigen-space; (inverse, singular?, min eig, max eig)."""
    if H.shape[0] == 0:
        return np.zeros((0, 0)), False, 0.0, 0.0
    lam, V = np.linalg.eigh(0.5 * (H + H.T))
    top = float(lam.max())
    keep = lam > EIG_RTOL * max(top, 1e-300)
    inv = (V[:, keep] / lam[keep]) @ V[:, keep].T
    return inv, bool((~keep).any()), float(lam.min()), top


def _block_information(blocks: list[np.ndarray], r: int, grams, negs) -> list[np.ndarray]:
    """The diagonal blocks (columns ``blocks``, disjoint, covering ``range(r)``) of
    ``-(sum_y S_y^T diag(w_y) S_y - sum_z Z^T diag(u) Z)`` for ``grams`` = [(S_y, w_y)] and ``negs`` = [(Z, u)]
    (sparse matrices with r columns; ``u`` None for ones), all blocks at once: every pair of nonzeros of a row
    that fall in the same block adds w * a * b to that block's cell (numpy, no Python loop over the blocks: on
    TREC's 684 workers the information took 2.4 s as a loop of sparse products per block, 0.7 s now)."""
    blk = np.empty(r, dtype=np.int64)
    loc = np.empty(r, dtype=np.int64)
    size = np.array([b.size for b in blocks], dtype=np.int64)
    for j, cols in enumerate(blocks):
        blk[cols] = j
        loc[cols] = np.arange(cols.size)
    offset = np.concatenate([[0], np.cumsum(size * size)])
    total = np.zeros(int(offset[-1]))

    def add(mat, weight, sign: float) -> None:
        coo = sp.coo_matrix(mat)
        keep = coo.data != 0
        row, col, val = coo.row[keep].astype(np.int64), coo.col[keep].astype(np.int64), coo.data[keep]
        b = blk[col]
        order = np.lexsort((col, b, row))  # the nonzeros of one row in one block, together
        row, col, val, b = row[order], col[order], val[order], b[order]
        key = row * len(blocks) + b
        start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        count = np.diff(np.r_[start, key.size])
        group_of = np.repeat(np.arange(start.size), count)
        reps = count[group_of]  # each nonzero pairs with every nonzero of its group (itself included)
        first = np.repeat(np.arange(key.size), reps)
        second = start[group_of[first]] + (np.arange(first.size) - np.repeat(np.cumsum(reps) - reps, reps))
        w = val[first] * val[second]
        if weight is not None:
            w = w * weight[row[first]]
        bb = b[first]
        cell = offset[bb] + loc[col[first]] * size[bb] + loc[col[second]]
        total[:] += sign * np.bincount(cell, weights=w, minlength=total.size)

    for mat, weight in grams:
        add(mat, weight, -1.0)
    for mat, weight in negs:
        add(mat, weight, 1.0)
    return [total[offset[j] : offset[j + 1]].reshape(n, n) for j, n in enumerate(size)]


def observed_information(model, data: Annotations, params: ClassParams, *, block: str = "auto") -> ObservedInformation:
    """Observed information -d^2/dphi^2 [log p(x | theta) + log prior] of a fitted DS / one-coin / two-coin model.

    Louis' identity per item (exact posterior q_n, even when the model was fitted by hard EM): the Hessian is
    sum_n (E_q[d^2 log p(x_n, y)] + Var_q[d log p(x_n, y)]). In the raw coordinates (Gamma cells, pi) the
    complete-data log-likelihood log pi_y + sum counts log Gamma_m(said, y) has a diagonal Hessian
    (-expected counts / Gamma^2 and -sum_n q_ny / pi_y^2); the raw coordinates are affine in phi (w = c0 + A phi),
    so the per-item scores in phi are the sparse products S_y = X diag(1 / Gamma(., y)) A_y (+ the pi row), and
    Var_q sums to sum_y S_y^T diag(q_y) S_y - G^T G with G = sum_y diag(q_y) S_y (row n: the score of item n).
    ``block``: "full", "worker" (per-worker blocks: conditional information, smaller standard errors) or "auto".

    The steps: `_check_class_fit`, the free parametrisation (`_layout`, `_free_map`), the terms of Louis' identity
    (`_louis_terms`: the exact posterior, the complete-data curvature, the per-item scores, the prior's curvature),
    the information of each block (`_information_blocks`), their inverses (`_inverted_blocks`) and the notes
    (`_observed_notes`).
    """
    if isinstance(model, GoodBadScores):
        return _scores_information(model, data, params, block)
    _check_class_fit(model, data, params)
    lay = _layout(model, data, params)
    free, B, boundary = _free_map(lay)
    r = free.size
    A = sp.csr_matrix(lay.C @ B)
    A.eliminate_zeros()
    block = _block_kind(block, r)
    terms = _louis_terms(model, data, params, lay, A, B)
    worker_phi = lay.worker[free]
    blocks, block_infos = _information_blocks(terms, worker_phi, r, block)
    info, cov, singular, lo, hi = _inverted_blocks(blocks, block_infos, r, block)
    fixed = tuple(lay.names[i] for i in boundary)
    return ObservedInformation(
        names=tuple(lay.names[i] for i in free),
        worker=worker_phi,
        phi=lay.nu0[free].copy(),
        information=info,
        covariance=cov,
        gradient=terms.gradient,
        block=block,
        singular=singular,
        min_eigenvalue=float(lo),
        max_eigenvalue=float(hi),
        fixed=fixed,
        notes=_observed_notes(r, block, singular, lo, hi, terms.gradient, cov, model.hard, fixed),
        expected_counts=terms.counts,
        _layout=lay,
        _B=B,
        _A=A,
    )


def _check_class_fit(model, data: Annotations, params: ClassParams) -> None:
    """Raise unless ``model`` is Dawid-Skene, one-coin or two-coin, fits ``data``, and ``params`` are its
    ClassParams."""
    if not isinstance(model, DawidSkene | OneCoin | TwoCoin):
        title = getattr(getattr(model, "info", None), "title", type(model).__name__)
        raise ModelError(
            "Observed information is implemented for Dawid-Skene, one-coin, two-coin and the good/bad scores "
            f"model; not for {title}.",
        )
    model.check(data)
    if not isinstance(params, ClassParams):
        raise ModelError("params must be the ClassParams of a fitted class model (run.params).")


def _block_kind(block: str, r: int) -> str:
    """ "full" or "worker": "auto" is "full" up to FULL_LIMIT free parameters."""
    if block == "auto":
        block = "full" if r <= FULL_LIMIT else "worker"
    if block not in ("full", "worker"):
        raise ValueError(f"block must be 'auto', 'full' or 'worker', got {block!r}.")
    return block


@dataclass(frozen=True, eq=False)
class _LouisTerms:
    """The terms of Louis' identity in the free coordinates phi (r of them) of a class model with M workers, K
    classes and N items; raw coordinates: the M K K Gamma cells, then the K entries of pi.

    ``q`` (N, K): the exact posterior; ``counts`` (M, K, K): the expected counts under it; ``A`` (M K K + K, r):
    raw = c0 + A phi (CSC); ``d`` (M K K + K,): -E_q[d^2 log p(x, y)], diagonal in the raw coordinates; ``S``: K
    sparse (N, r) matrices, the per-item complete-data scores S_y; ``G`` (N, r): sum_y diag(q_y) S_y, each item's
    score; ``P`` (T, r) and ``w_prior`` (T,): the log prior's terms coef_t log(x_t), x = x0 + P phi, and their
    curvature coef_t / x_t^2 (T = 0 without a prior); ``gradient`` (r,): of the objective, prior included."""

    q: np.ndarray
    counts: np.ndarray
    A: sp.csc_matrix
    d: np.ndarray
    S: list
    G: sp.spmatrix
    P: sp.csc_matrix
    w_prior: np.ndarray
    gradient: np.ndarray


def _louis_terms(model, data: Annotations, params: ClassParams, lay: _Layout, A: sp.csr_matrix, B) -> _LouisTerms:
    """Every term the information blocks need, computed once for all of them."""
    q = softmax_rows(model.log_joint(data, params))  # exact posterior (also for hard-EM fits)
    counts = expected_counts(data, q)
    active = np.diff(A.indptr) > 0  # raw coordinates that move with phi
    d = _complete_curvature(params, q, counts, active)
    S, G = _item_scores(data, params, q, A, active)
    gradient = np.asarray(G.sum(axis=0)).ravel()
    PB, w_pr, g_pr = _prior_curvature(lay, B)
    if g_pr.size:
        gradient = gradient + PB.T @ g_pr
    return _LouisTerms(q, counts, A.tocsc(), d, S, G, PB.tocsc(), w_pr, gradient)


def _complete_curvature(params: ClassParams, q: np.ndarray, counts: np.ndarray, active: np.ndarray) -> np.ndarray:
    """-E_q[d^2 log p(x, y)] in the raw coordinates, where it is diagonal: expected counts / Gamma^2 for the Gamma
    cells, sum_n q_ny / pi_y^2 for pi (0 where a coordinate does not move with phi)."""
    gam = params.gamma.ravel()
    pi = params.pi
    MKK = gam.size
    d = np.zeros(active.size)
    g_act = active[:MKK]
    d[:MKK][g_act] = counts.ravel()[g_act] / gam[g_act] ** 2
    p_act = active[MKK:]
    d[MKK:][p_act] = q.sum(axis=0)[p_act] / pi[p_act] ** 2
    return d


def _item_scores(
    data: Annotations, params: ClassParams, q: np.ndarray, A: sp.csr_matrix, active: np.ndarray
) -> tuple[list, sp.spmatrix]:
    """(S, G): the per-item complete-data scores S_y = X diag(1 / Gamma(., y)) A_y (+ the pi row), y = 0 .. K-1,
    each (N, r) CSC, and G = sum_y diag(q_y) S_y (row n: the score of item n)."""
    M, K, N = data.n_workers, data.n_classes, data.n_items
    MKK = M * K * K
    gam = params.gamma.ravel()
    pi = params.pi
    X = data.label_counts
    cell_rows = np.arange(M)[:, None] * K * K + np.arange(K)[None, :] * K
    S = []
    for y in range(K):
        rows = (cell_rows + y).ravel()
        inv = np.zeros(rows.size)
        act = active[rows]
        inv[act] = 1.0 / gam[rows][act]
        Sy = X @ (sp.diags(inv) @ A[rows])
        if active[MKK + y]:
            Sy = Sy + sp.csr_matrix(np.ones((N, 1))) @ (A[MKK + y] / pi[y])
        S.append(sp.csc_matrix(Sy))
    G = sum(sp.diags(q[:, y]) @ S[y] for y in range(K))
    return S, G


def _prior_curvature(lay: _Layout, B) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """(P, w, g) of the log prior sum_t coef_t log(x_t), x = x0 + P phi: P = lay.P B, the curvature
    w_t = coef_t / x_t^2 and the gradient's g_t = coef_t / x_t (0 for the terms that do not move with phi)."""
    PB = sp.csr_matrix(lay.P @ B)
    x = lay.x0 + lay.P @ lay.nu0
    moving = np.diff(PB.indptr) > 0
    w_pr = np.zeros(x.size)
    w_pr[moving] = lay.coef[moving] / x[moving] ** 2
    g_pr = np.zeros(x.size)
    g_pr[moving] = lay.coef[moving] / x[moving]
    return PB, w_pr, g_pr


def _block_of(t: _LouisTerms, cols: np.ndarray) -> np.ndarray:
    """The information of the free coordinates ``cols`` (a dense (c, c) block), from the items whose scores touch
    them (a worker block: the items the worker labelled)."""
    Ssub = [sp.csr_matrix(s[:, cols]) for s in t.S]
    touched = np.flatnonzero(sum(np.diff(s.indptr) for s in Ssub) > 0)
    Ssub = [s[touched] for s in Ssub]
    qt = t.q[touched]
    V = sum((s.T @ sp.diags(qt[:, y]) @ s) for y, s in enumerate(Ssub))
    Gs = sum(sp.diags(qt[:, y]) @ s for y, s in enumerate(Ssub))
    Ac = t.A[:, cols]
    H = (V - Gs.T @ Gs - Ac.T @ sp.diags(t.d) @ Ac).toarray()
    if t.w_prior.size:
        Pc = t.P[:, cols]
        H -= (Pc.T @ sp.diags(t.w_prior) @ Pc).toarray()
    return -H


def _information_blocks(
    t: _LouisTerms, worker_phi: np.ndarray, r: int, block: str
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(blocks, their information): one block of every coordinate ("full"), or one per worker and one for the
    class prior ("worker", all at once by `_block_information`)."""
    if block == "full":
        blocks = [np.arange(r)]
        return blocks, [_block_of(t, blocks[0])]
    order = np.argsort(worker_phi, kind="stable")
    cuts = np.flatnonzero(np.diff(worker_phi[order])) + 1
    blocks = [b for b in np.split(order, cuts) if b.size]
    K = len(t.S)
    grams = [(t.S[y], t.q[:, y]) for y in range(K)]
    neg = [(t.G, None), (t.A, t.d)] + ([(t.P, t.w_prior)] if t.w_prior.size else [])
    return blocks, _block_information(blocks, r, grams, neg)


def _inverted_blocks(blocks: list[np.ndarray], block_infos: list[np.ndarray], r: int, block: str):
    """(information, covariance, singular, smallest and largest eigenvalue): each block inverted on its positive
    eigen-space (`_symmetric_inverse`); "full": the dense (r, r) matrices, "worker": sparse block-diagonal ones."""
    info_rows, info_cols, info_vals, cov_vals = [], [], [], []
    singular, lo, hi = False, np.inf, -np.inf
    infos, covs = [], []
    for cols, I_b in zip(blocks, block_infos):
        C_b, sing, lmin, lmax = _symmetric_inverse(I_b)
        singular |= sing
        lo, hi = min(lo, lmin), max(hi, lmax)
        infos.append(I_b)
        covs.append(C_b)
        rr, cc = np.meshgrid(cols, cols, indexing="ij")
        info_rows.append(rr.ravel())
        info_cols.append(cc.ravel())
        info_vals.append(I_b.ravel())
        cov_vals.append(C_b.ravel())
    if block == "full":
        info, cov = infos[0], covs[0]
    else:
        rr, cc = np.concatenate(info_rows), np.concatenate(info_cols)
        info = sp.csr_matrix((np.concatenate(info_vals), (rr, cc)), shape=(r, r))
        cov = sp.csr_matrix((np.concatenate(cov_vals), (rr, cc)), shape=(r, r))
    if r == 0:
        lo = hi = 0.0
    return info, cov, singular, lo, hi


def _observed_notes(r, block, singular, lo, hi, gradient, cov, hard, fixed) -> tuple[str, ...]:
    """The notes of a class model's observed information: per-worker blocks, `_information_notes`, and the
    parameters held fixed on the boundary."""
    notes = []
    if block == "worker":
        notes.append(
            "Per-worker blocks of the information (every other parameter held at its estimate): the standard "
            "errors ignore the uncertainty of the other workers and of the class prior, so they are too small."
        )
    notes += _information_notes(r, block, singular, lo, hi, gradient, cov, hard)
    if fixed:
        notes.append(
            f"{len(fixed)} parameter(s) on the boundary of [0, 1] are held fixed (no Wald interval): "
            + ", ".join(fixed[:5])
            + (" ..." if len(fixed) > 5 else "")
        )
    return tuple(notes)


def _information_notes(r, block, singular, lo, hi, gradient, cov, hard) -> list[str]:
    """The warnings every observed information carries (singular, ill-conditioned, not concave, not converged)."""
    notes = []
    if singular:
        notes.append(
            "The observed information is singular or not positive definite: some parameters are not identified "
            "by these data (or the fit is not at a maximum); the pseudo-inverse was used, so standard errors "
            "along those directions are missing, not small."
        )
    if lo > 0 and hi / lo > 1e8:
        notes.append(
            f"The observed information is ill-conditioned (condition number {hi / lo:.2g}): some combinations of "
            "parameters are barely identified, and their standard errors are large and unreliable."
        )
    if lo < 0 and abs(lo) > EIG_RTOL * max(hi, 1e-300):
        notes.append("The log-likelihood is not concave here (negative curvature): this may not be a maximum.")
    if r and not singular and block == "full":
        decrement = float(gradient @ cov @ gradient)
        if decrement > 1e-2:
            notes.append(
                f"The gradient is not zero (Newton decrement {decrement:.3g}): EM has not converged to a maximum; "
                "run it to convergence before reading the intervals."
            )
    if hard:
        notes.append(
            "These parameters come from hard EM, which does not maximise log p(x | theta); the intervals assume a "
            "maximum-likelihood estimate."
        )
    return notes


def _scores_information(
    model: GoodBadScores, data: Annotations, params, block: str, standard: bool = False
) -> ObservedInformation:
    """Observed information of the good/bad scores model in phi = (mu_1..mu_N, sigma, pi_good) (module docstring).

    Louis' identity per annotator, with w_a = P(good | s_a): -d^2 log p(s | phi) = sum_a [w_a (-H_good,a) +
    (1 - w_a) (-H_bad,a)] - sum_a w_a (1 - w_a) d_a d_a^T, d_a = g_good,a - g_bad,a, where g / H are the gradient
    and Hessian of log p(s_a, z_a | phi). With r = s_ia - mu_i, n_a scores and S2_a = sum_i r^2 of annotator a:
    g_good,a = (r_ia / sigma^2 summed per item, S2_a / sigma^3 - n_a / sigma, 1 / pi), g_bad,a = (0, 0,
    -1 / (1 - pi)); -H_good,a has mu-mu diagonal c_ia / sigma^2 (c_ia scores of a on i), mu_i-sigma
    2 sum r_ia / sigma^3, sigma-sigma 3 S2_a / sigma^4 - n_a / sigma^2, pi-pi 1 / pi^2; -H_bad,a only
    1 / (1 - pi)^2. The Beta(1 + s, 1 + s) prior adds s / pi^2 + s / (1 - pi)^2.

    ``standard=True``: in the standardised coordinates (mu_z, sigma_z, pi_good) of `crowdlab.models.scores`
    (mu = c + h mu_z, sigma = h sigma_z), where every number is O(1) for scores of any size; standard errors of
    mu and sigma in score units are then h times theirs (what :func:`worker_intervals` does). In score units
    (the default) the information scales as 1 / h^2: for score ranges beyond 1e-60 .. 1e60 that is refused with
    a ModelError (the matrix would under- or overflow).
    """
    model.check(data)
    if not isinstance(params, ScoreParams):
        raise ModelError("params must be the ScoreParams of a fitted good/bad scores model (run.params).")
    N, M = data.n_items, data.n_workers
    if params.mu.shape != (N,):
        raise ModelError(f"params have {params.mu.size} item means; the data have {N} items.")
    if block not in ("auto", "full", "worker"):
        raise ValueError(f"block must be 'auto', 'full' or 'worker', got {block!r}.")
    lo_s, hi_s = params.low, params.high
    c_s, h_s = standard_frame(lo_s, hi_s)
    if not standard and not 1e-60 <= h_s <= 1e60:
        raise ModelError(
            f"the scores span [{lo_s:.3g}, {hi_s:.3g}]: their observed information in score units (about 1 / "
            f"{h_s:.3g}^2) is beyond float64.",
        )
    pi = float(params.pi_good)
    if standard:
        mu, sig = np.asarray(params.standard_means(), np.float64), float(params.sigma) / h_s
    else:
        mu, sig = np.asarray(params.mu, np.float64), float(params.sigma)
    q = softmax_rows(model.log_joint(data, params))
    w = q[:, 1]
    it, wk = data.item, data.worker
    res = (standard_diff(data.value, c_s, h_s) if standard else data.value) - mu[it]
    w_obs = w[wk]
    n_a = np.bincount(wk, minlength=M).astype(np.float64)
    S2 = np.bincount(wk, weights=res * res, minlength=M)
    cnt_w = np.bincount(it, weights=w_obs, minlength=N)  # sum_a w_a c_ia
    res_w = np.bincount(it, weights=w_obs * res, minlength=N)  # sum_a w_a sum r_ia
    R = N + 2
    s_pr = model.prior
    pi_free = BOUNDARY < pi < 1.0 - BOUNDARY
    floor_s = model._sigma_min(lo_s, hi_s)  # in score units
    floor = floor_s / h_s if standard else floor_s
    sig_free = sig > floor * (1.0 + SIGMA_FLOOR_RTOL)
    mu_free = cnt_w > MU_WEIGHT_MIN

    # E_q[-H]: mu-mu diagonal, mu-sigma column, sigma-sigma and pi-pi
    info = np.zeros((R, R))
    info[np.arange(N), np.arange(N)] = cnt_w / sig**2
    info[:N, N] = info[N, :N] = 2.0 * res_w / sig**3
    info[N, N] = float((w * (3.0 * S2 / sig**4 - n_a / sig**2)).sum())
    grad = np.zeros(R)
    grad[:N] = res_w / sig**2
    grad[N] = float((w * (S2 / sig**3 - n_a / sig)).sum())
    # complete-data score differences d_a = g_good,a - g_bad,a, (M, R); the mu part by np.add.at over scores
    D = np.zeros((M, R))
    np.add.at(D, (wk, it), res / sig**2)
    D[:, N] = S2 / sig**3 - n_a / sig
    if pi_free:
        info[N + 1, N + 1] = w.sum() / pi**2 + (1.0 - w).sum() / (1.0 - pi) ** 2 + s_pr / pi**2 + s_pr / (1 - pi) ** 2
        grad[N + 1] = w.sum() / pi - (1.0 - w).sum() / (1.0 - pi) + s_pr / pi - s_pr / (1.0 - pi)
        D[:, N + 1] = 1.0 / pi + 1.0 / (1.0 - pi)
    info -= (D * (w * (1.0 - w))[:, None]).T @ D  # minus Var_q of the complete-data score

    free = np.flatnonzero(np.concatenate([mu_free, [sig_free, pi_free]]))
    info = info[np.ix_(free, free)]
    gradient = grad[free]
    if not (np.all(np.isfinite(info)) and np.all(np.isfinite(grad))):
        raise ModelError(
            f"the observed information of the scores model is not finite at these parameters (sigma = {sig:.3g}"
            f"{' in units of ' + format(h_s, '.3g') if standard else ''}); nothing was computed."
        )
    cov, singular, lo, hi = _symmetric_inverse(info)
    r = free.size
    if r == 0:
        lo = hi = 0.0
    names = [f"mu[{n}]" for n in data.item_names] + ["sigma", "pi_good"]
    nu0 = np.concatenate([mu, [sig, pi]])

    def build(nu: np.ndarray) -> ScoreParams:
        if standard:
            mu_s = np.clip(c_s + h_s * nu[:N], lo_s, hi_s)
            return ScoreParams(mu_s, h_s * float(nu[N]), float(nu[N + 1]), lo_s, hi_s, mu_z=nu[:N].copy())
        return ScoreParams(mu=nu[:N].copy(), sigma=float(nu[N]), pi_good=float(nu[N + 1]), low=lo_s, high=hi_s)

    lay = _Layout(
        kind="scores",
        nu0=nu0,
        names=names,
        worker=np.full(R, -1, np.int64),
        groups=[],
        scalars=free,
        model_fixed=np.zeros(R, bool),
        C=sp.identity(R, format="csr"),
        c0=np.zeros(R),
        P=sp.csr_matrix((0, R)),
        x0=np.zeros(0),
        coef=np.zeros(0),
        build=build,
    )
    B = _coo(free, np.arange(r), np.ones(r), (R, r))
    notes = _information_notes(r, "full", singular, lo, hi, gradient, cov, model.hard)
    fixed_idx = np.setdiff1d(np.arange(R), free)
    fixed = tuple(names[i] for i in fixed_idx)
    if not mu_free.all():
        notes.append(
            f"{int((~mu_free).sum())} item mean(s) scored by no annotator judged good are not identified: held "
            "fixed (their interval is the whole score range)."
        )
    if not sig_free:
        notes.append(f"sigma is at its floor sigma_min = {floor_s:.3g}: held fixed (no Wald interval).")
    if not pi_free:
        notes.append(f"pi_good = {pi:.6g} is on the boundary of [0, 1]: held fixed (no Wald interval).")
    return ObservedInformation(
        names=tuple(names[i] for i in free),
        worker=np.full(r, -1, np.int64),
        phi=nu0[free].copy(),
        information=info,
        covariance=cov,
        gradient=gradient,
        block="full",
        singular=singular,
        min_eigenvalue=float(lo),
        max_eigenvalue=float(hi),
        fixed=fixed,
        notes=tuple(notes),
        expected_counts=q,
        _layout=lay,
        _B=B,
        _A=sp.identity(R, format="csr"),
    )


# ====================================================================== intervals per worker
def clopper_pearson(s: np.ndarray, t: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) binomial interval for s successes in t trials, non-integer expected counts allowed
    (Beta quantiles with s and t - s as they are); [0, 1] where t = 0."""
    a = 1.0 - level
    s = np.clip(s, 0.0, t)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(s <= 1e-9, 0.0, betaincinv(np.maximum(s, 1e-9), t - s + 1.0, a / 2))
        hi = np.where(t - s <= 1e-9, 1.0, betaincinv(s + 1.0, np.maximum(t - s, 1e-9), 1 - a / 2))
    lo = np.where(t > 0, lo, 0.0)
    hi = np.where(t > 0, hi, 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


def worker_intervals(
    run_or_model,
    data: Annotations | None = None,
    params: ClassParams | None = None,
    *,
    what: str = "accuracy",
    level: float = 0.95,
    scale: str = "linear",
    block: str = "auto",
) -> pd.DataFrame:
    """Standard errors and Wald intervals per worker from the observed information.

    ``run_or_model``: a :class:`crowdlab.engines.run.Run` (its model, data and the parameters at its cursor) or a model
    with
    ``data`` and ``params``. ``what``: "accuracy" (sum_k pi_k Gamma_m(k, k), delta method through pi and Gamma),
    "native" (one-coin theta_m; two-coin alpha_m, beta_m; Dawid-Skene Gamma_m(k, k)) or "all". ``scale``:
    "linear" (estimate +- z se, clipped to [0, 1]) or "logit" (the interval of logit(estimate), mapped back).

    A row whose estimate is on the boundary (within 1e-6 of 0 or 1), whose standard error is 0 (every parameter
    it depends on is fixed) or that rests on a confusion column with less than one expected label (set by the
    M-step's rule for empty columns, not by data) gets the exact Clopper-Pearson interval of its expected counts
    instead (treating the posterior labels as known), with a note. Returns a DataFrame with columns worker,
    parameter, estimate, se, lower, upper, n_labels, note; ``df.attrs["notes"]`` holds the notes of
    :func:`observed_information`.

    Good/bad scores model: rows of the item means ("mu", ``worker`` = the item name, clipped to [low, high]), then
    "sigma" and "pi_good"; ``what`` is ignored (no per-worker accuracy exists), see :func:`_score_intervals`.
    """
    if data is None and params is None and hasattr(run_or_model, "model"):
        run = run_or_model
        model, data, params = run.model, run.data, run.params
        extra_notes = [] if run.converged else ["EM has not converged at this step; the intervals assume a maximum."]
    else:
        model = run_or_model
        extra_notes = []
        if data is None or params is None:
            raise ValueError("pass a Run, or a model together with data and params.")
    if what not in ("accuracy", "native", "all"):
        raise ValueError(f"what must be 'accuracy', 'native' or 'all', got {what!r}.")
    if scale not in ("linear", "logit"):
        raise ValueError(f"scale must be 'linear' or 'logit', got {scale!r}.")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}.")
    if isinstance(model, GoodBadScores):
        return _score_intervals(model, data, params, level, scale, block, extra_notes)
    info = observed_information(model, data, params, block=block)
    lay = info._layout
    M, K = data.n_workers, data.n_classes
    MKK = M * K * K
    W = MKK + K
    R = lay.nu0.size
    C = info.expected_counts
    m = np.arange(M)

    blocks: list[tuple[np.ndarray, str, sp.csr_matrix, np.ndarray, np.ndarray, np.ndarray]] = []
    # each: (worker index, parameter label, J rows w.r.t. phi, estimate, successes, trials)
    native_rows = []
    if what in ("native", "all"):
        if lay.kind == "one_coin":
            native_rows.append((m, np.arange(M), "theta (accuracy)", np.trace(C, axis1=1, axis2=2), C.sum(axis=(1, 2))))
        elif lay.kind == "two_coin":
            native_rows.append((m, m, "alpha (sensitivity)", C[:, 1, 1], C[:, :, 1].sum(axis=1)))
            native_rows.append((m, M + m, "beta (specificity)", C[:, 0, 0], C[:, :, 0].sum(axis=1)))
        else:
            for k in range(K):
                name = f"P(says {data.class_names[k]} | true {data.class_names[k]})"
                native_rows.append((m, m * K * K + k * K + k, name, C[:, k, k], C[:, :, k].sum(axis=1)))
    for wk, idx, name, s, t in native_rows:
        Jnu = _coo(np.arange(idx.size), idx, np.ones(idx.size), (idx.size, R))
        blocks.append((wk, name, sp.csr_matrix(Jnu @ info._B), lay.nu0[idx], s, t))
    if what == "accuracy" or (what == "all" and lay.kind != "one_coin"):
        kk = np.arange(K)
        rows = np.repeat(m, 2 * K)
        cells = (m[:, None] * K * K + kk[None, :] * (K + 1)).ravel()  # gamma[m, k, k]
        cols = np.stack([cells.reshape(M, K), np.broadcast_to(MKK + kk, (M, K))], axis=1).ravel()
        vals = np.stack([np.broadcast_to(params.pi, (M, K)), params.gamma[:, kk, kk]], axis=1).ravel()
        Jw = _coo(rows, cols, vals, (M, W))
        blocks.append(
            (
                m,
                "accuracy",
                sp.csr_matrix(Jw @ info._A),
                params.worker_accuracy(),
                np.trace(C, axis1=1, axis2=2),
                C.sum(axis=(1, 2)),
            )
        )
    # a worker's accuracy weighs every column of its confusion matrix (one-coin: its one theta); a column resting
    # on less than one expected label is set by the M-step's rule for empty columns, not by data, and the delta
    # method then reports an interval as narrow as the data are thin (a worker with 1 label: 0.32 in [0.29, 0.35])
    columns = C.sum(axis=1)  # (M, K): expected labels per true class
    thin_worker = (columns < 1.0).any(axis=1) if lay.kind != "one_coin" else C.sum(axis=(1, 2)) < 1.0

    z = float(ndtri(0.5 + level / 2))
    frames = []
    n_labels = data.labels_per_worker
    for wk, name, J, est, s, t in blocks:
        se = np.sqrt(info.variance(J))
        est = np.asarray(est, dtype=np.float64)
        thin = thin_worker[wk] if name == "accuracy" else np.asarray(t, dtype=np.float64) < 1.0
        on_edge = (est <= BOUNDARY) | (est >= 1.0 - BOUNDARY) | (se <= 1e-12)
        if scale == "linear":
            lo, hi = np.clip(est - z * se, 0.0, 1.0), np.clip(est + z * se, 0.0, 1.0)
        else:
            e = np.clip(est, BOUNDARY, 1.0 - BOUNDARY)
            half = z * se / (e * (1.0 - e))
            lo, hi = expit(logit(e) - half), expit(logit(e) + half)
        cp_lo, cp_hi = clopper_pearson(s, t, level)
        exact = on_edge | thin
        lo, hi = np.where(exact, cp_lo, lo), np.where(exact, cp_hi, hi)
        tail = "no Wald interval; exact binomial interval of the expected counts (labels taken as known)"
        note = np.where(
            on_edge,
            f"on the boundary: {tail}",
            np.where(thin, f"a confusion column rests on less than one expected label: {tail}", ""),
        )
        frames.append(
            pd.DataFrame(
                {
                    "worker": [data.worker_names[i] for i in wk],
                    "parameter": name,
                    "estimate": est,
                    "se": se,
                    "lower": lo,
                    "upper": hi,
                    "n_labels": n_labels[wk],
                    "note": note,
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    df.attrs["notes"] = list(info.notes) + extra_notes
    df.attrs["block"] = info.block
    df.attrs["level"] = level
    df.attrs["scale"] = scale
    return df


def _score_intervals(model, data, params, level, scale, block, extra_notes) -> pd.DataFrame:
    """worker_intervals for the good/bad scores model: rows "mu" (one per item, ``worker`` = the item name), then
    "sigma" and "pi_good" (``worker`` = "(all annotators)"). ``what`` does not matter (the model has no per-worker
    accuracy: every choice gives these native rows). ``n_labels``: the item's number of scores for a mean, every
    score for sigma and pi_good. mu intervals are clipped to [low, high], sigma's to [0, inf), pi_good's to
    [0, 1]; ``scale="logit"`` puts pi_good on the logit and sigma on the log scale (mu stays linear). Held-fixed
    parameters: an unidentified mean gets [low, high]; sigma at its floor a zero-width interval; pi_good on the
    boundary the exact binomial interval of sum_a P(good) out of M annotators. All with a note."""
    model.check(data)
    if not isinstance(params, ScoreParams):
        raise ModelError("params must be the ScoreParams of a fitted good/bad scores model (run.params).")
    # in standardised units (finite for scores of any size), then h times the mu and sigma standard errors
    info = _scores_information(model, data, params, block, standard=True)
    N, M = data.n_items, data.n_workers
    R = N + 2
    h_s = standard_frame(params.low, params.high)[1]
    full_idx = np.full(R, -1)
    free_pos = np.flatnonzero(np.asarray(info._B.sum(axis=1)).ravel() > 0)
    full_idx[free_pos] = np.arange(free_pos.size)
    se = np.zeros(R)
    se[free_pos] = info.se()
    with np.errstate(over="ignore"):
        se[: N + 1] *= h_s
    est = np.concatenate([np.asarray(params.mu, np.float64), [float(params.sigma), float(params.pi_good)]])
    z = float(ndtri(0.5 + level / 2))
    big = np.finfo(np.float64).max
    with np.errstate(over="ignore"):
        lo, hi = np.clip(est - z * se, -big, big), np.clip(est + z * se, -big, big)  # 1e308-sized scores
    lo[:N], hi[:N] = np.clip(lo[:N], params.low, params.high), np.clip(hi[:N], params.low, params.high)
    lo[N], lo[N + 1], hi[N + 1] = max(lo[N], 0.0), max(lo[N + 1], 0.0), min(hi[N + 1], 1.0)
    note = np.full(R, "", dtype=object)
    held = full_idx < 0
    if scale == "logit":
        if not held[N]:
            lo[N], hi[N] = est[N] * np.exp(-z * se[N] / est[N]), est[N] * np.exp(z * se[N] / est[N])
        if not held[N + 1]:
            e = est[N + 1]
            half = z * se[N + 1] / (e * (1.0 - e))
            lo[N + 1], hi[N + 1] = expit(logit(e) - half), expit(logit(e) + half)
    mu_held = held[:N]
    lo[:N][mu_held], hi[:N][mu_held] = params.low, params.high
    note[:N][mu_held] = "not identified (no annotator judged good scored it): held fixed, the whole score range"
    if held[N]:
        lo[N] = hi[N] = est[N]
        note[N] = "at its floor sigma_min: held fixed, no Wald interval"
    if held[N + 1]:
        w_sum = float(info.expected_counts[:, 1].sum())
        cp_lo, cp_hi = clopper_pearson(np.array([w_sum]), np.array([float(M)]), level)
        lo[N + 1], hi[N + 1] = float(cp_lo[0]), float(cp_hi[0])
        note[N + 1] = "on the boundary: no Wald interval; exact binomial interval of sum P(good) of M annotators"
    n_scores = float(data.n_obs)
    df = pd.DataFrame(
        {
            "worker": list(data.item_names) + ["(all annotators)"] * 2,
            "parameter": ["mu"] * N + ["sigma", "pi_good"],
            "estimate": est,
            "se": se,
            "lower": lo,
            "upper": hi,
            "n_labels": np.concatenate([data.labels_per_item, [n_scores, n_scores]]).astype(np.int64),
            "note": note.astype(str),
        }
    )
    df.attrs["notes"] = list(info.notes) + extra_notes
    df.attrs["block"] = info.block
    df.attrs["level"] = level
    df.attrs["scale"] = scale
    df.attrs["kind"] = "scores"
    df.attrs["score_range"] = (params.low, params.high)
    return df


MACE_INTERVAL = "Wald (observed information of the worker's own θ, ξ)"


def mace_worker_intervals(model, data: Annotations, params, *, level: float = 0.95) -> pd.DataFrame:
    """Wald intervals for each MACE worker's accuracy from the observed information of its own parameters.

    MACE (Hovy et al. 2013) gives worker j the confusion Gamma_j(a, t) = theta_j I(a = t) + (1 - theta_j) xi_j(a).
    Holding pi and every other worker at their estimates, j's marginal log-likelihood is a sum over the items it
    labelled, and Louis' identity gives its Hessian in the free coordinates (theta, xi_1 .. xi_(K-1); xi_0 = 1 - the
    rest) from the complete-data terms f_it = sum of log Gamma_j(a, t) over j's labels a of item i: with q_i the
    exact posterior of item i, g_it and h_it the gradient and Hessian of f_it (closed form: dGamma/dtheta = I(a = t)
    - xi(a), dGamma/dxi_c = (1 - theta) e_c with e_c = I(a = c) - I(a = 0), d2Gamma/dtheta dxi_c = -e_c),

        d2 l_j = sum_i [sum_t q_it (h_it + g_it g_it^T) - gbar_i gbar_i^T],   gbar_i = sum_t q_it g_it

    (:func:`_mace_information`; a worker who labelled an item twice is covered too), plus the MAP objective's log
    Beta(theta) and log Dirichlet(xi) priors. The accuracy sum_k pi_k Gamma_j(k, k) = theta + (1 - theta) pi . xi
    goes through the delta method on the logit scale (the interval stays inside (0, 1)). This is the conditional
    ("worker block") information, as ``block="worker"`` is for Dawid-Skene: it leaves out the uncertainty of the
    other workers and of the truth's prior, so the interval is somewhat narrow. Over 200 simulated Dawid-Skene
    crowds (300 items, 5 workers, 5 labels an item; MACE is misspecified there) it covered the truth 0.921 (K = 2)
    and 0.829 (K = 3) of the time, against 0.872 and 0.774 for the exact binomial interval with the labels taken
    as known (``benchmarks/bench_fisher.py``).

    Items whose class is known (semi-supervised EM) have a one-hot posterior. A worker on the boundary (theta or
    an xi entry within 1e-6 of 0 or 1) or with a singular information gets the exact binomial interval of its
    expected correct labels instead, with a note. Returns a DataFrame with columns worker, estimate, se, lower,
    upper (the accuracy), spamming, spam_lower, spam_upper (P(spamming) = 1 - theta_j and its interval, the same
    way), n_labels, note.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}.")
    theta = np.asarray(params.theta, dtype=np.float64)
    xi = np.asarray(params.xi, dtype=np.float64)
    pi = np.asarray(params.pi, dtype=np.float64)
    M, K = xi.shape
    n_labels = np.bincount(data.worker, minlength=M)
    on_edge = (theta <= BOUNDARY) | (theta >= 1.0 - BOUNDARY) | (xi <= BOUNDARY).any(axis=1)
    th = np.where(on_edge, 0.5, theta)  # boundary workers: placeholders (they get the exact interval)
    xs = np.where(on_edge[:, None], 1.0 / K, xi)
    gam = mace_gamma(th, xs)  # (M, K, K): Gamma_j(a, t)
    q = model.e_step(data, params)
    q = np.asarray(q if isinstance(q, np.ndarray) else q.q, dtype=np.float64)  # exact; known items one-hot
    H = _mace_information(data, q, th, xs, gam)
    a, b = model.theta_prior
    t_ = th
    H[:, 0, 0] += (a - 1.0) / t_**2 + (b - 1.0) / (1.0 - t_) ** 2
    c0 = model.strategy_prior - 1.0
    H[:, 1:, 1:] += c0 * (np.eye(K - 1)[None] / xs[:, 1:, None] ** 2 + (1.0 / xs[:, 0] ** 2)[:, None, None])
    est = theta + (1.0 - theta) * (xi @ pi)
    g = np.concatenate([(1.0 - xs @ pi)[:, None], (1.0 - t_)[:, None] * (pi[1:] - pi[0])[None, :]], axis=1)
    singular = np.zeros(M, bool)
    var = np.full(M, np.nan)
    var_theta = np.full(M, np.nan)
    for j in np.flatnonzero(~on_edge):
        ev = np.linalg.eigvalsh(H[j])
        if not np.all(np.isfinite(ev)) or ev.min() <= EIG_RTOL * max(ev.max(), 1e-300):
            singular[j] = True
            continue
        cov = np.linalg.inv(H[j])
        var[j] = float(g[j] @ cov @ g[j])
        var_theta[j] = float(cov[0, 0])
    exact = on_edge | singular | ~np.isfinite(var)
    z = float(ndtri(0.5 + level / 2))

    def wald(value, v):  # the logit-scale Wald interval of a probability, or the exact one where there is none
        e_ = np.clip(value, BOUNDARY, 1.0 - BOUNDARY)
        half = z * np.sqrt(np.maximum(v, 0.0)) / (e_ * (1.0 - e_))
        lo, hi = expit(logit(e_) - half), expit(logit(e_) + half)
        cp_lo, cp_hi = clopper_pearson(value * n_labels, n_labels.astype(float), level)
        return np.minimum(np.where(exact, cp_lo, lo), value), np.maximum(np.where(exact, cp_hi, hi), value)

    se = np.sqrt(np.maximum(var, 0.0))
    lo, hi = wald(est, var)
    spam_lo, spam_hi = wald(1.0 - theta, var_theta)  # P(spamming) = 1 - theta has theta's variance
    tail = "exact binomial interval of the estimate over the worker's labels (labels taken as known)"
    note = np.where(on_edge, f"on the boundary: {tail}", np.where(exact, f"singular information: {tail}", ""))
    return pd.DataFrame(
        {
            "worker": list(data.worker_names),
            "estimate": est,
            "se": np.where(exact, np.nan, se),
            "lower": lo,
            "upper": hi,
            "spamming": 1.0 - theta,
            "spam_lower": spam_lo,
            "spam_upper": spam_hi,
            "n_labels": n_labels,
            "note": note,
        }
    )


PAIR_CHUNK = 1 << 15  # (worker, item) pairs per block of :func:`_mace_information` (memory O(chunk K^2))


def _mace_information(data: Annotations, q: np.ndarray, theta, xi, gam) -> np.ndarray:
    """(M, K, K): minus the Hessian of each MACE worker's marginal log-likelihood in its free coordinates
    (theta, xi_1 .. xi_(K-1)), the others held fixed, by Louis' identity over the worker's (worker, item) pairs:
    with f_pt = sum over the pair's labels r of log Gamma(a_r, t), its gradient g_pt and Hessian h_pt, and q_p the
    exact posterior of the pair's item, -H = -sum_p [sum_t q_pt (h_pt + g_pt g_pt^T) - gbar_p gbar_p^T],
    gbar_p = sum_t q_pt g_pt. One label per pair reduces to the closed form of :func:`mace_worker_intervals`; a
    worker who labelled an item twice is covered too."""
    M, K = xi.shape
    order = np.lexsort((data.item, data.worker))
    w_, it, lab = data.worker[order], data.item[order], data.label[order]
    new_pair = np.r_[True, (w_[1:] != w_[:-1]) | (it[1:] != it[:-1])]
    starts = np.flatnonzero(new_pair)  # first label of each pair
    P = K
    H = np.zeros((M, P, P))
    for c0 in range(0, starts.size, PAIR_CHUNK):
        ps = starts[c0 : c0 + PAIR_CHUNK]
        lo, hi = int(ps[0]), int(starts[c0 + PAIR_CHUNK]) if c0 + PAIR_CHUNK < starts.size else lab.size
        a, w = lab[lo:hi], w_[lo:hi]
        rel = ps - lo
        G = gam[w, a, :]  # (n, K): Gamma(a_r, t)
        e = np.zeros((a.size, K - 1))  # d xi(a) / d xi_c = I(a = c) - I(a = 0)
        e[np.flatnonzero(a > 0), a[a > 0] - 1] = 1.0
        e[a == 0] = -1.0
        onehot = np.eye(K)[a]  # I(a = t)
        # d log Gamma(a, t) per coordinate: theta, then xi_1 .. xi_(K-1); (n, K) each
        d = [(onehot - xi[w, a][:, None]) / G] + [((1.0 - theta[w]) * e[:, c])[:, None] / G for c in range(K - 1)]
        g = [np.add.reduceat(x, rel, axis=0) for x in d]  # per pair, (n_pairs, K)
        qp = q[it[ps]]
        gbar = [(qp * x).sum(axis=1) for x in g]
        pw = w_[ps]
        for i in range(P):
            for k in range(i, P):
                h = -d[i] * d[k]  # d2 log Gamma = d2 Gamma / Gamma - d log Gamma d log Gamma
                if i == 0 and k > 0:
                    h = h - e[:, k - 1][:, None] / G
                hp = np.add.reduceat(h, rel, axis=0)
                entry = (qp * (hp + g[i] * g[k])).sum(axis=1) - gbar[i] * gbar[k]
                H[:, i, k] -= np.bincount(pw, weights=entry, minlength=M)
                H[:, k, i] = H[:, i, k]
    return H
