"""Error rates without labels (Donmez, Lebanon & Balasubramanian 2010, "Unsupervised supervised learning").

Given the outputs of k predictors on unlabelled data and the *known* marginal p(y), the risks R(f_j) are plug-in
functions of a noise parameter theta estimated by maximum likelihood of the outputs alone (eqs. (1)-(3)).

Classification, symmetric noise model (eq. (8)): p(out | y) = theta if out = y, (1 - theta) / (l - 1) otherwise;
R(f) = 1 - theta.

- :func:`symmetric_closed_form`: k = 1, two classes, the closed-form maximiser (eq. (9)), with a verdict when p(y)
  is uniform (Prop. 3 / Corollary 4 fail: the likelihood is flat) or the value falls outside [0, 1] (the symmetric
  model cannot produce the observed output frequency; the constrained maximiser, eq. (9) clipped, is reported).
  :func:`closed_form_theta` is the bare vectorised formula.
- :func:`symmetric_loglik`: the k = 1 log-likelihood (eq. (5) with (8)) for any number of classes, vectorised
  over an array of theta (Fig. 1, left).
- :func:`collaborative_loglik` / :func:`collaborative_mle`: k conditionally independent classifiers (eq. (12)),
  EM with p(y) held fixed (Sec. 6), l classes; a missing output (code -1, eq. (16)) is summed out, which simply
  drops its factor from the product because sum_out p(out | y) = 1. :func:`posterior` and :func:`combine` give the
  unsupervised combination rule (eq. (4)): arg-max_y p(y) prod_j p_theta_j(f_j(x) | y).
- Non-symmetric 2x2 model (eq. (6)): :func:`two_by_two_loglik`; :func:`lemma6_flat_direction` traces the line of
  (theta11, theta22) with p(y=1) theta11 - p(y=2) theta22 fixed, along which one population's likelihood is
  constant (Lemma 6: only that combination is identified, and the risk is not); :func:`two_population_estimate`
  intersects the two lines from two populations with different marginals (Prop. 7), in closed form.

Regression (Sec. 2.1.2): predictions out | y ~ N(theta y, theta^2 tau^2) (eq. (10)) with y ~ N(mu_y, sigma_y^2);
mu_y, sigma_y and tau are assumed known. Marginally out ~ N(theta mu_y, theta^2 (tau^2 + sigma_y^2)) (eq. (11)).

- :func:`regression_loglik` / :func:`regression_closed_form`: k = 1, the closed-form maximiser (the roots of
  n theta^2 + B theta - 2A = 0 from the simplified log-likelihood after eq. (11)); the two roots are the maxima
  on theta > 0 and theta < 0 (the paper's "+-").
- :func:`collaborative_regression_loglik` / :func:`collaborative_regression_mle`: eq. (13) for k predictors,
  maximised with ``scipy.optimize.minimize`` (trust-exact, analytic gradient and Hessian). In u = 1/theta the
  log-likelihood is strictly concave on each orthant (Cauchy-Schwarz: tau^4 P > k tau^2 with
  P = 1/sigma_y^2 + k/tau^2), so the maximiser on the chosen orthant is unique.
- :func:`regression_risk`: R(f) = theta^2 tau^2 + (1 - theta)^2 E[y^2], E[y^2] = mu_y^2 + sigma_y^2.

Simulators: :func:`simulate_classifier_outputs` (eq. (8)), :func:`simulate_confusion_outputs` (eq. (6), any
confusion matrices), :func:`simulate_regression` (eq. (10), conditionally independent predictors).

Conventions
-----------
- Outputs are integer class codes 0 .. l-1 (crowdlab's codes); **code 0 is the paper's class 1, code 1 its class
  2**. So for two classes ``p_y[0]`` is the paper's p(y = 1) (alpha in eq. (24)) and eq. (9)'s m counts the
  outputs equal to code 1. Code -1 marks a missing output (eq. (16)).
- ``p_y``: the known marginal, an array (l,) of positive entries summing to 1, or, for two classes, one number
  p(y = code 0).
- Arrays of classifier outputs are (n, k): one row per unlabelled example, one column per classifier.
- Two-by-two model: ``theta11 = P(out 0 | y = 0)`` (the paper's theta_11), ``theta22 = P(out 1 | y = 1)``;
  R(f) = 1 - p(y=0) theta11 - p(y=1) theta22 (eq. (7)).
- Logs are floored at 1e-300 (:func:`crowdlab.models.base.safe_log`), so log-likelihoods are finite at the
  boundary of [0, 1] too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from crowdlab.errors import DataError, ModelError
from crowdlab.models.base import safe_log

__all__ = [
    "CollaborativeEstimate",
    "FlatDirection",
    "RegressionEstimate",
    "RegressionFit",
    "SymmetricEstimate",
    "TwoPopulationEstimate",
    "closed_form_theta",
    "collaborative_loglik",
    "collaborative_mle",
    "collaborative_regression_loglik",
    "collaborative_regression_mle",
    "combine",
    "lemma6_flat_direction",
    "posterior",
    "regression_closed_form",
    "regression_loglik",
    "regression_risk",
    "simulate_classifier_outputs",
    "simulate_confusion_outputs",
    "simulate_regression",
    "symmetric_closed_form",
    "symmetric_loglik",
    "two_by_two_loglik",
    "two_by_two_probs",
    "two_population_estimate",
]

UNIFORM_TOL = 1e-9  # |p(y) - 1/l| below this counts as uniform (Prop. 3 fails)
LOG_2PI = float(np.log(2.0 * np.pi))


# ====================================================================== results
@dataclass(frozen=True)
class SymmetricEstimate:
    """Eq. (9) for one binary classifier.

    ``theta``: the maximum-likelihood accuracy on [0, 1] (None when p(y) is uniform: every theta fits equally);
    ``risk = 1 - theta``; ``theta_raw``: eq. (9) before clipping; ``in_range``: whether eq. (9) fell in [0, 1]
    (False: the symmetric model (8) cannot produce the observed output frequency); ``identifiable``: Corollary 4's
    condition on p(y) (non-uniform); ``verdict``: a sentence saying which case holds.
    """

    theta: float | None
    risk: float | None
    theta_raw: float | None
    in_range: bool
    identifiable: bool
    verdict: str
    n: int
    m: int


@dataclass(frozen=True, eq=False)
class CollaborativeEstimate:
    """The maximiser of eq. (12)/(16) by EM with p(y) fixed.

    ``theta`` (k,) accuracies, ``risk = 1 - theta``; ``loglik``: eq. (12) at ``theta``; ``history``: the
    log-likelihood at the start and after every EM iteration (never decreasing); ``n_outputs`` (k,): outputs
    observed per classifier; ``identifiable``: Prop. 3's conditions hold at the estimate (p(y) not uniform and
    1/l < theta_j < 1 for every j); ``verdict``: which conditions fail, if any.
    """

    theta: np.ndarray
    risk: np.ndarray
    loglik: float
    history: np.ndarray
    n_iter: int
    converged: bool
    n_outputs: np.ndarray
    identifiable: bool
    verdict: str


@dataclass(frozen=True, eq=False)
class FlatDirection:
    """Lemma 6's flat direction: points (theta11, theta22) with the same p(y=1) theta11 - p(y=2) theta22.

    ``identified``: that common value (the only identified combination); ``loglik``: the one-population
    log-likelihood at every point (equal up to rounding); ``risk``: R(f) = 1 - p1 theta11 - p2 theta22 at every
    point (it varies: the risk is not identified from one population).
    """

    theta11: np.ndarray
    theta22: np.ndarray
    loglik: np.ndarray
    risk: np.ndarray
    identified: float


@dataclass(frozen=True)
class TwoPopulationEstimate:
    """Prop. 7: (theta11, theta22) from two unlabelled populations with different marginals.

    ``theta_raw``: the intersection of the two Lemma 6 lines (the joint maximum-likelihood estimate when it lies
    in [0, 1]^2); ``theta11``, ``theta22``: the maximiser on [0, 1]^2; ``se11``, ``se22``: delta-method standard
    errors from the binomial variance of the two output frequencies; ``risk_a``, ``risk_b``: eq. (7) under each
    population's marginal.
    """

    theta11: float | None
    theta22: float | None
    se11: float | None
    se22: float | None
    risk_a: float | None
    risk_b: float | None
    theta_raw: tuple[float, float] | None
    identifiable: bool
    verdict: str


@dataclass(frozen=True)
class RegressionEstimate:
    """Closed-form maximiser for one regression model (Sec. 2.1.2).

    ``roots``: (negative root, positive root) of the likelihood equation, the maxima on theta < 0 and
    theta > 0; ``theta``: the one chosen (``sign``); ``risk``: R(f) at ``theta``; ``loglik``: eq. (11)'s
    log-likelihood at ``theta``.
    """

    theta: float
    risk: float
    roots: tuple[float, float]
    loglik: float
    identifiable: bool
    verdict: str


@dataclass(frozen=True, eq=False)
class RegressionFit:
    """Maximiser of eq. (13) for k regression models on one orthant (``signs``)."""

    theta: np.ndarray
    risk: np.ndarray
    loglik: float
    signs: np.ndarray
    n_iter: int
    converged: bool
    identifiable: bool
    verdict: str


# ====================================================================== validation
def _marginal(p_y, l: int | None = None) -> np.ndarray:
    """p(y) as a float64 array (l,), positive, summing to 1; a number means (p, 1 - p)."""
    p = np.atleast_1d(np.asarray(p_y, dtype=np.float64))
    if p.ndim != 1:
        raise DataError(f"p(y) must be a vector of class probabilities, got shape {p.shape}.")
    if p.size == 1:
        p = np.array([p[0], 1.0 - p[0]])
    if not np.all(np.isfinite(p)) or (p <= 0).any():
        raise DataError(
            f"p(y) = {np.round(p, 6).tolist()} must have every entry > 0.",
            hint="Drop classes that never occur, or give p(y = code 0) strictly between 0 and 1.",
        )
    if abs(p.sum() - 1.0) > 1e-6:
        raise DataError(f"p(y) must sum to 1, got {p.sum():.6g}.")
    if l is not None and p.size != l:
        raise DataError(f"p(y) has {p.size} entries but the outputs need {l} classes.")
    return p / p.sum()


def _outputs(outputs, l: int, ndim: int = 2) -> np.ndarray:
    """Integer codes in -1 .. l-1; (n,) becomes (n, 1) when ``ndim`` is 2."""
    a = np.asarray(outputs)
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
            raise DataError("classifier outputs must be whole class codes (0 .. l-1, -1 for missing).")
    elif a.dtype.kind not in "iub":
        raise DataError(f"classifier outputs must be integer class codes, got dtype {a.dtype}.")
    a = a.astype(np.int64)
    if ndim == 2 and a.ndim == 1:
        a = a[:, None]
    if a.ndim != ndim:
        raise DataError(f"classifier outputs must be {'(n, k)' if ndim == 2 else '(n,)'}, got shape {a.shape}.")
    if a.size == 0:
        raise DataError("there are no classifier outputs.")
    if a.min() < -1 or a.max() >= l:
        raise DataError(
            f"classifier outputs must be class codes 0 .. {l - 1} (or -1 for missing); "
            f"found values from {a.min()} to {a.max()}.",
            hint="p(y) fixes the number of classes l: give one probability per class.",
        )
    return a


def _unit_interval(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)) or (x < 0).any() or (x > 1).any():
        raise DataError(f"{name} must lie in [0, 1].")
    return x


def _is_uniform(p: np.ndarray) -> bool:
    return bool(np.max(np.abs(p - 1.0 / p.size)) < UNIFORM_TOL)


# ====================================================================== k = 1, symmetric (eqs. (8)-(9))
def closed_form_theta(m, n, p1) -> np.ndarray:
    """Eq. (9), vectorised and unchecked: theta = (p1 - m/n) / (2 p1 - 1).

    ``m``: number of outputs equal to code 1 (the paper's class 2) among ``n``; ``p1 = p(y = code 0)``. Broadcasts
    over arrays (used for thousands of simulations at once). Not clipped to [0, 1].
    """
    m = np.asarray(m, dtype=np.float64)
    p1 = np.asarray(p1, dtype=np.float64)
    return (p1 - m / np.asarray(n, dtype=np.float64)) / (2.0 * p1 - 1.0)


def symmetric_closed_form(outputs, p_y) -> SymmetricEstimate:
    """Eq. (9): the maximum-likelihood accuracy of one binary classifier from its unlabelled outputs.

    ``outputs`` (n,) codes 0/1 (-1 = missing, dropped); ``p_y``: p(y = code 0) or (p0, p1). The log-likelihood is
    concave in theta (the output probability p(out = 1) = p0 (1 - theta) + p1 theta is linear in theta), so eq. (9)
    clipped to [0, 1] is the maximiser on [0, 1].
    """
    p = _marginal(p_y)
    if p.size != 2:
        raise ModelError(
            f"eq. (9) is for two classes; p(y) has {p.size}.",
        )
    out = _outputs(outputs, 2, ndim=1)
    out = out[out >= 0]
    n = int(out.size)
    if n == 0:
        raise DataError("every output is missing; eq. (9) needs at least one output.")
    m = int((out == 1).sum())
    p0 = float(p[0])
    if _is_uniform(p):
        return SymmetricEstimate(
            None,
            None,
            None,
            False,
            False,
            "Not identifiable: p(y) is uniform, so p(out = 1) = 1/2 whatever theta and the likelihood is flat "
            "(Prop. 3 / Corollary 4 need a non-uniform p(y)). The error rate cannot be estimated without labels.",
            n,
            m,
        )
    raw = float(closed_form_theta(m, n, p0))
    lo, hi = sorted((p0, 1.0 - p0))  # p(out = 1) at theta = 0 and theta = 1
    if 0.0 <= raw <= 1.0:
        verdict = (
            f"Identifiable (p(y) is not uniform, Corollary 4): eq. (9) gives theta = {raw:.4f}, the maximum-likelihood "
            f"accuracy; estimated error rate {1 - raw:.4f}."
        )
        if raw < 0.5:
            verdict += " theta < 1/2: the classifier looks worse than chance (outside Prop. 3's weak learners)."
        return SymmetricEstimate(raw, 1.0 - raw, raw, True, True, verdict, n, m)
    theta = float(np.clip(raw, 0.0, 1.0))
    verdict = (
        f"Eq. (9) gives theta = {raw:.4f}, outside [0, 1]: the share of outputs equal to 1 (m/n = {m / n:.4f}) lies "
        f"outside [{lo:.4f}, {hi:.4f}], the range the symmetric noise model (8) can produce with p(y = 0) = {p0:g}. "
        f"The constrained maximiser theta = {theta:g} is reported, but the symmetric model is likely wrong for this "
        "classifier (or p(y) is misspecified): use the non-symmetric model (6) with two populations "
        "(two_population_estimate, Prop. 7)."
    )
    return SymmetricEstimate(theta, 1.0 - theta, raw, False, True, verdict, n, m)


def symmetric_loglik(theta, outputs, p_y) -> np.ndarray:
    """Log-likelihood of one classifier's outputs under the symmetric model (eqs. (5), (8)), l classes.

    l(theta) = sum_c n_c log(p_c theta + (1 - p_c) (1 - theta) / (l - 1)) with n_c the count of outputs c (missing
    dropped). Vectorised: ``theta`` any shape in [0, 1], the result has its shape (Fig. 1, left).
    """
    p = _marginal(p_y)
    l = p.size
    out = _outputs(outputs, l, ndim=1)
    counts = np.bincount(out[out >= 0], minlength=l).astype(np.float64)
    th = _unit_interval("theta", theta)[..., None]
    prob = p * th + (1.0 - p) * (1.0 - th) / (l - 1)
    return (safe_log(prob) * counts).sum(axis=-1)


# ====================================================================== k >= 1, collaborative (eqs. (4), (12), (16))
def _patterns(out: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct output rows (P, k), their counts (P,), and each row's pattern index (n,)."""
    uniq, inverse, counts = np.unique(out, axis=0, return_inverse=True, return_counts=True)
    return uniq, counts.astype(np.float64), inverse.ravel()


def _indicators(uniq: np.ndarray, l: int) -> tuple[np.ndarray, np.ndarray]:
    """(P, k, l) float indicators: output j equals class y (observed), and output j observed and differs."""
    eq = uniq[:, :, None] == np.arange(l)[None, None, :]
    neq = (uniq >= 0)[:, :, None] & ~eq
    return eq.astype(np.float64), neq.astype(np.float64)


def _pattern_log_joint(theta: np.ndarray, eq: np.ndarray, neq: np.ndarray, logp: np.ndarray) -> np.ndarray:
    """(..., P, l): log p(y) + sum_j log p_theta_j(out_j | y) over the observed outputs (eq. (12) / (16))."""
    l = logp.size
    lt = safe_log(theta)
    lw = safe_log((1.0 - theta) / (l - 1))
    return np.einsum("...k,pky->...py", lt, eq) + np.einsum("...k,pky->...py", lw, neq) + logp


def _check_theta(theta, k: int) -> np.ndarray:
    th = _unit_interval("theta", theta)
    if th.shape[-1:] != (k,):
        raise DataError(f"theta needs one accuracy per classifier ({k}), got shape {th.shape}.")
    return th


def collaborative_loglik(theta, outputs, p_y) -> np.ndarray:
    """Eq. (12) (eq. (16) with missing outputs): sum_i log sum_y p(y) prod_{j observed} p_theta_j(out_ij | y).

    ``theta`` (..., k): any batch of accuracy vectors (e.g. a grid for Fig. 1, right); returns shape (...).
    ``outputs`` (n, k) codes, -1 = missing. Computed on the distinct output rows.
    """
    p = _marginal(p_y)
    out = _outputs(outputs, p.size)
    th = _check_theta(theta, out.shape[1])
    uniq, counts, _ = _patterns(out)
    eq, neq = _indicators(uniq, p.size)
    lj = _pattern_log_joint(th, eq, neq, np.log(p))
    return logsumexp(lj, axis=-1) @ counts


def posterior(outputs, theta, p_y) -> np.ndarray:
    """(n, l): p(y | outputs) under the fitted symmetric model, prop. to p(y) prod_j p_theta_j(out_j | y) (eq. (4))."""
    p = _marginal(p_y)
    out = _outputs(outputs, p.size)
    th = _check_theta(theta, out.shape[1])
    uniq, _, inverse = _patterns(out)
    eq, neq = _indicators(uniq, p.size)
    lj = _pattern_log_joint(th, eq, neq, np.log(p))
    q = np.exp(lj - logsumexp(lj, axis=1, keepdims=True))
    return q[inverse]


def combine(outputs, theta, p_y) -> np.ndarray:
    """Eq. (4): the unsupervised combination arg-max_y p(y) prod_j p_theta_j(f_j(x) | y), (n,) class codes.

    Missing outputs drop from the product (eq. (16)); a row with every output missing gets arg-max p(y). Ties go to
    the lowest class code.
    """
    return np.argmax(posterior(outputs, theta, p_y), axis=1).astype(np.int64)


def _default_start(out: np.ndarray, l: int) -> np.ndarray:
    """Agreement of each classifier with the (unweighted) plurality of the observed outputs, clipped to
    [1/l + 0.01, 0.99]: a start on the 'better than chance' side (Prop. 3's condition)."""
    votes = (out[:, :, None] == np.arange(l)).sum(axis=1)  # (n, l)
    plural = np.argmax(votes, axis=1)
    obs = out >= 0
    agree = ((out == plural[:, None]) & obs).sum(axis=0) / np.maximum(obs.sum(axis=0), 1)
    return np.clip(agree, 1.0 / l + 0.01, 0.99)


def collaborative_mle(
    outputs,
    p_y,
    theta0=None,
    *,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> CollaborativeEstimate:
    """Maximise eq. (12) (eq. (16) with missing outputs) over theta in [0, 1]^k by EM with p(y) fixed (Sec. 6).

    E-step: q_i(y) prop. to p(y) prod_{j observed} p_theta_j(out_ij | y). M-step: theta_j = sum_{i in S_j} q_i(out_ij)
    / |S_j|, the expected fraction of classifier j's outputs that are right (S_j: the examples j labelled; the
    paper's update divides by n because it has no missing outputs). Both run on the distinct output rows.

    ``outputs`` (n, k) codes (a (n,) array is one classifier), -1 = missing; ``p_y`` the known marginal (l,).
    ``theta0`` (k,): the start; default: each classifier's agreement with the plurality vote, clipped to
    [1/l + 0.01, 0.99]. Stops when no theta_j moves by more than ``tol`` in one iteration, or after ``max_iter``.
    """
    p = _marginal(p_y)
    l = p.size
    out = _outputs(outputs, l)
    k = out.shape[1]
    n_obs = (out >= 0).sum(axis=0)
    if (n_obs == 0).any():
        bad = np.flatnonzero(n_obs == 0).tolist()
        raise DataError(f"classifier(s) {bad} have no outputs at all; drop them before estimating.")
    theta = _default_start(out, l) if theta0 is None else _check_theta(theta0, k).astype(np.float64).copy()
    uniq, counts, _ = _patterns(out)
    eq, neq = _indicators(uniq, l)
    logp = np.log(p)
    history = []
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported after the loop
        lj = _pattern_log_joint(theta, eq, neq, logp)
        lse = logsumexp(lj, axis=1, keepdims=True)
        history.append(float(lse[:, 0] @ counts))
        q = np.exp(lj - lse) * counts[:, None]  # (P, l), weighted by pattern counts
        new = np.einsum("py,pky->k", q, eq) / n_obs
        step = float(np.max(np.abs(new - theta)))
        theta = new
        if step <= tol:
            converged = True
            break
    lj = _pattern_log_joint(theta, eq, neq, logp)
    history.append(float(logsumexp(lj, axis=1) @ counts))
    ident, verdict = _prop3_verdict(theta, p)
    return CollaborativeEstimate(
        theta=theta,
        risk=1.0 - theta,
        loglik=history[-1],
        history=np.asarray(history),
        n_iter=it,
        converged=converged,
        n_outputs=n_obs,
        identifiable=ident,
        verdict=verdict,
    )


def _prop3_verdict(theta: np.ndarray, p: np.ndarray) -> tuple[bool, str]:
    """Prop. 3's sufficient conditions at the estimate, in words."""
    l = p.size
    problems = []
    if _is_uniform(p):
        problems.append(
            "p(y) is uniform (Prop. 3 needs it non-uniform)"
            + ("; with two classes replacing every theta_j by 1 - theta_j gives the same likelihood" if l == 2 else "")
        )
    low = np.flatnonzero(theta <= 1.0 / l)
    if low.size:
        problems.append(f"classifier(s) {low.tolist()} at or below chance (theta <= 1/{l})")
    top = np.flatnonzero(theta >= 1.0)
    if top.size:
        problems.append(f"classifier(s) {top.tolist()} at theta = 1 (boundary)")
    if not problems:
        return True, "Identifiable: p(y) is not uniform and every 1/l < theta_j < 1 (Prop. 3)."
    return False, (
        "Prop. 3's conditions fail: "
        + "; ".join(problems)
        + ". The likelihood may have other maxima; the estimate is the one EM reached from its start."
    )


# ====================================================================== non-symmetric 2x2 model (eq. (6))
def two_by_two_probs(theta11, theta22, p1) -> np.ndarray:
    """p(out = code 0) = p(y=0) theta11 + p(y=1) (1 - theta22) (eq. (18)); broadcasts; ``p1 = p(y = code 0)``."""
    p1 = np.asarray(p1, dtype=np.float64)
    return p1 * np.asarray(theta11, dtype=np.float64) + (1.0 - p1) * (1.0 - np.asarray(theta22, dtype=np.float64))


def two_by_two_loglik(theta11, theta22, outputs, p_y) -> np.ndarray:
    """Log-likelihood of one population's outputs under the 2x2 model (eqs. (5)-(6)), broadcast over theta arrays.

    l = m0 log p(out = 0) + m1 log p(out = 1), with p(out = 0) from eq. (18); missing outputs dropped.
    """
    p = _marginal(p_y, 2)
    out = _outputs(outputs, 2, ndim=1)
    m1 = float((out == 1).sum())
    m0 = float((out == 0).sum())
    t11 = _unit_interval("theta11", theta11)
    t22 = _unit_interval("theta22", theta22)
    p0 = two_by_two_probs(t11, t22, p[0])
    return m0 * safe_log(p0) + m1 * safe_log(1.0 - p0)


def lemma6_flat_direction(outputs, p_y, through=None, n_points: int = 101) -> FlatDirection:
    """Lemma 6 made visible: a one-parameter family of (theta11, theta22) with equal likelihood on one population.

    Every (theta11, theta22) with the same c = p(y=0) theta11 - p(y=1) theta22 gives the same p(out) (eqs. (18)-(21)),
    hence the same likelihood, while the risk 1 - p(y=0) theta11 - p(y=1) theta22 changes along the line. With
    ``through=None`` the line is the maximum-likelihood set (c = m0/n - p(y=1)); with ``through=(t11, t22)`` it is
    the line through that point. Returns ``n_points`` evenly spaced points of the segment inside [0, 1]^2.
    """
    p = _marginal(p_y, 2)
    out = _outputs(outputs, 2, ndim=1)
    obs = out[out >= 0]
    if obs.size == 0:
        raise DataError("every output is missing.")
    p1, p2 = float(p[0]), float(p[1])
    if through is None:
        c = float((obs == 0).mean()) - p2
    else:
        a, b = (float(v) for v in _unit_interval("through", through))
        c = p1 * a - p2 * b
    # theta22 = (p1 theta11 - c) / p2 must lie in [0, 1]
    lo = max(0.0, c / p1)
    hi = min(1.0, (c + p2) / p1)
    t11 = np.linspace(lo, hi, int(n_points))
    t22 = np.clip((p1 * t11 - c) / p2, 0.0, 1.0)
    ll = two_by_two_loglik(t11, t22, out, p)
    return FlatDirection(t11, t22, ll, 1.0 - p1 * t11 - p2 * t22, c)


def two_population_estimate(outputs_a, p_a, outputs_b, p_b) -> TwoPopulationEstimate:
    """Prop. 7: estimate (theta11, theta22) of one classifier run on two populations with different marginals.

    Each population s identifies one line, p_s(y=0) theta11 - p_s(y=1) theta22 = c_s := r_s - p_s(y=1), with r_s
    its share of outputs equal to code 0 (the maximum-likelihood p(out = 0); Lemma 6). With a = p_a, b = p_b the
    lines meet at (Cramer's rule; determinant b(y=0) - a(y=0), non-zero iff the marginals differ)

        theta11 = (a(y=1) c_b - b(y=1) c_a) / (b(y=0) - a(y=0)),
        theta22 = (a(y=0) c_b - b(y=0) c_a) / (b(y=0) - a(y=0)).

    Because
    (theta11, theta22) -> (p_a(out=0), p_b(out=0)) is linear and invertible, the intersection is the joint maximum-
    likelihood estimate whenever it lies in [0, 1]^2; otherwise the joint likelihood (concave) is maximised over the
    square numerically and the verdict says so. Standard errors: delta method with Var(r_s) = r_s (1 - r_s) / n_s.
    """
    pa = _marginal(p_a, 2)
    pb = _marginal(p_b, 2)
    oa = _outputs(outputs_a, 2, ndim=1)
    ob = _outputs(outputs_b, 2, ndim=1)
    oa, ob = oa[oa >= 0], ob[ob >= 0]
    if oa.size == 0 or ob.size == 0:
        raise DataError("each population needs at least one output.")
    det = float(pb[0] - pa[0])
    if abs(det) < 1e-9:
        return TwoPopulationEstimate(
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            False,
            "Not identifiable: the two populations have the same marginal p(y), so their Lemma 6 lines coincide "
            "(Prop. 7 needs different marginals). Use data from a population with a different class balance.",
        )
    ra, rb = float((oa == 0).mean()), float((ob == 0).mean())
    D = np.array([[pa[0], -pa[1]], [pb[0], -pb[1]]])
    rhs = np.array([ra - pa[1], rb - pb[1]])
    raw = np.linalg.solve(D, rhs)
    Dinv = np.linalg.inv(D)
    cov = Dinv @ np.diag([ra * (1 - ra) / oa.size, rb * (1 - rb) / ob.size]) @ Dinv.T
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    if np.all((raw >= 0) & (raw <= 1)):
        theta = raw
        verdict = (
            f"Identifiable (Prop. 7): the marginals differ by {abs(det):.3g}; the two Lemma 6 lines meet at "
            f"theta11 = {raw[0]:.4f}, theta22 = {raw[1]:.4f} (the joint maximum-likelihood estimate)."
        )
    else:
        ma, mb = np.array([(oa == 0).sum(), (oa == 1).sum()]), np.array([(ob == 0).sum(), (ob == 1).sum()])

        def nll(t: np.ndarray) -> float:
            qa = two_by_two_probs(t[0], t[1], pa[0])
            qb = two_by_two_probs(t[0], t[1], pb[0])
            return -float(
                ma[0] * safe_log(qa) + ma[1] * safe_log(1 - qa) + mb[0] * safe_log(qb) + mb[1] * safe_log(1 - qb)
            )

        res = minimize(nll, np.clip(raw, 0.0, 1.0), method="L-BFGS-B", bounds=[(0.0, 1.0), (0.0, 1.0)])
        theta = np.clip(res.x, 0.0, 1.0)
        verdict = (
            f"The two Lemma 6 lines meet at ({raw[0]:.4f}, {raw[1]:.4f}), outside [0, 1]^2; the joint likelihood was "
            f"maximised over the square instead, giving ({theta[0]:.4f}, {theta[1]:.4f}). Check that the same "
            "classifier was run on both populations and that both marginals are right."
        )
    risk_a = 1.0 - pa[0] * theta[0] - pa[1] * theta[1]
    risk_b = 1.0 - pb[0] * theta[0] - pb[1] * theta[1]
    return TwoPopulationEstimate(
        float(theta[0]),
        float(theta[1]),
        float(se[0]),
        float(se[1]),
        float(risk_a),
        float(risk_b),
        (float(raw[0]), float(raw[1])),
        True,
        verdict,
    )


# ====================================================================== regression (eqs. (10), (11), (13))
def _positive(name: str, x: float) -> float:
    x = float(x)
    if not (np.isfinite(x) and x > 0):
        raise DataError(f"{name} must be a positive number, got {x!r}.")
    return x


def _predictions(F, ndim: int) -> np.ndarray:
    a = np.asarray(F, dtype=np.float64)
    if ndim == 2 and a.ndim == 1:
        a = a[:, None]
    if a.ndim != ndim or a.size == 0:
        raise DataError(f"predictions must be a non-empty {'(n, k)' if ndim == 2 else '(n,)'} array.")
    if not np.all(np.isfinite(a)):
        raise DataError(
            "predictions must be finite numbers (missing predictions are not supported for regression).",
            hint="Drop the rows with a missing prediction.",
        )
    return a


def _pow2(x: float) -> float:
    """The power of two at or above |x| (1 for 0): dividing by it is exact and brings |x| to (1/2, 1]."""
    x = abs(float(x))
    return 1.0 if x == 0 else float(np.ldexp(1.0, int(np.frexp(x)[1])))


def _reg_units(F: np.ndarray, mu: float, sigma: float, tau: float) -> tuple[np.ndarray, float]:
    """Scale factors that make the regression model's numbers O(1): ``c`` (k,) per prediction column and ``b``
    for the units of y (mu_y, sigma_y, tau), all powers of two. The model is invariant under them: with
    yhat_j / c_j and (mu_y, sigma_y, tau) / b the maximiser is theta_j b / c_j and the log-likelihood moves by
    n sum_j log c_j; so 1e300-sized predictions are estimated as precisely as their rescaled versions."""
    c = np.array([_pow2(np.abs(col).max()) for col in F.T]) if F.size else np.ones(F.shape[1])
    b = _pow2(max(abs(mu), sigma, tau))
    return c, b


def _reg_finite(what: str, value, hint: str) -> None:
    if not np.all(np.isfinite(value)):
        raise DataError(f"{what} is not representable as a float64 ({value}).", hint=hint)


UNITS_HINT = "Express the predictions and y in units closer to 1 (only their ratio matters to theta)."


def regression_risk(theta, mu_y: float, sigma_y: float, tau: float) -> np.ndarray:
    """R(f) = theta^2 tau^2 + (1 - theta)^2 E[y^2] with E[y^2] = mu_y^2 + sigma_y^2 (Sec. 2.1.2); vectorised."""
    th = np.asarray(theta, dtype=np.float64)
    return (th * tau) ** 2 + ((1.0 - th) * np.hypot(mu_y, sigma_y)) ** 2  # products first: no needless overflow


def _reg_stats(y: np.ndarray) -> tuple[int, float, float]:
    return int(y.size), float(y.sum()), float((y * y).sum())


def _reg_ll(theta: np.ndarray, n: int, s1: float, s2: float, mu: float, V: float) -> np.ndarray:
    """The simplified log-likelihood after eq. (11) (with |theta| in the normaliser)."""
    return (
        -n * (np.log(np.abs(theta)) + 0.5 * (LOG_2PI + np.log(V)))
        - s2 / (2.0 * V) / theta**2
        + mu * s1 / V / theta
        - n * mu * mu / (2.0 * V)
    )


def regression_loglik(theta, yhat, mu_y: float, sigma_y: float, tau: float) -> np.ndarray:
    """Eq. (11)'s log-likelihood of one regression model's predictions, vectorised over ``theta`` (non-zero).

    l(theta) = -n log(|theta| sqrt(2 pi (tau^2 + sigma_y^2))) - sum yhat^2 / (2 (tau^2 + sigma_y^2) theta^2)
    + mu_y sum yhat / ((tau^2 + sigma_y^2) theta) - n mu_y^2 / (2 (tau^2 + sigma_y^2)).
    """
    y = _predictions(yhat, 1)
    tau, sigma_y, mu = _positive("tau", tau), _positive("sigma_y", sigma_y), float(mu_y)
    th = np.asarray(theta, dtype=np.float64)
    if not np.all(np.isfinite(th)) or (th == 0).any():
        raise DataError("theta must be finite and non-zero (theta = 0 predicts a constant).")
    (c,), b = _reg_units(y[:, None], mu, sigma_y, tau)
    V = (tau / b) ** 2 + (sigma_y / b) ** 2
    with np.errstate(over="ignore", under="ignore"):
        th_n = th * b / c
    return _reg_ll(th_n, *_reg_stats(y / c), mu / b, V) - y.size * np.log(c)


def regression_closed_form(yhat, mu_y: float, sigma_y: float, tau: float, sign: str = "best") -> RegressionEstimate:
    """Closed-form maximiser for one regression model (Sec. 2.1.2; mu_y, sigma_y, tau known).

    Setting dl/dtheta = 0 gives n theta^2 + B theta - 2A = 0 with A = sum yhat^2 / (2 V), B = mu_y sum yhat / V,
    V = tau^2 + sigma_y^2, so theta = -mu_y sum yhat / (2 n V) +- sqrt((mu_y sum yhat)^2 / (4 n^2 V^2) + sum yhat^2 /
    (n V)). The roots have opposite signs: each is the maximiser on its half-line. ``sign``: "best" (the root with
    the larger likelihood; the positive one on a tie), "positive" or "negative".
    """
    y = _predictions(yhat, 1)
    tau = _positive("tau", tau)
    sigma_y = _positive("sigma_y", sigma_y)
    mu = float(mu_y)
    (c,), b = _reg_units(y[:, None], mu, sigma_y, tau)
    V = (tau / b) ** 2 + (sigma_y / b) ** 2  # in the rescaled units (see _reg_units)
    n, s1, s2 = _reg_stats(y / c)
    mu_n = mu / b
    if not np.any(y != 0):
        raise DataError("every prediction is 0: theta = a'/a would be 0, outside the model (a' must be non-zero).")
    B = mu_n * s1 / V
    disc = np.sqrt(B * B / (4.0 * n * n) + s2 / (n * V))
    neg, pos = -B / (2.0 * n) - disc, -B / (2.0 * n) + disc
    ll_neg, ll_pos = (float(v) for v in _reg_ll(np.array([neg, pos]), n, s1, s2, mu_n, V))
    tie = abs(ll_pos - ll_neg) <= 1e-12 * max(1.0, abs(ll_pos))
    with np.errstate(over="ignore"):
        neg, pos = neg * (c / b), pos * (c / b)  # back to the original units
    ll_neg, ll_pos = ll_neg - n * np.log(c), ll_pos - n * np.log(c)
    _reg_finite(f"theta (predictions up to {c:.3g}, y on a scale of {b:.3g})", np.array([neg, pos]), UNITS_HINT)
    if sign == "positive":
        theta, ll = pos, ll_pos
    elif sign == "negative":
        theta, ll = neg, ll_neg
    elif sign == "best":
        theta, ll = (pos, ll_pos) if (tie or ll_pos >= ll_neg) else (neg, ll_neg)
    else:
        raise ValueError(f"sign must be 'best', 'positive' or 'negative', got {sign!r}.")
    if tie:
        ident = False
        verdict = (
            "Only |theta| is identified: with mu_y = 0 (or sum of predictions 0) the likelihood is symmetric in the "
            f"sign of theta; the {'positive' if theta > 0 else 'negative'} root is reported."
        )
    else:
        ident = True
        other, ll_other = (neg, ll_neg) if theta > 0 else (pos, ll_pos)
        verdict = (
            f"Identifiable (Prop. 8 / Corollary 9, a != 0): theta = {theta:.4f} (log-likelihood {ll:.6g}); the root "
            f"of the other sign, {other:.4f}, has log-likelihood {ll_other:.6g}."
        )
    with np.errstate(over="ignore", invalid="ignore"):
        r = float(regression_risk(theta, mu, sigma_y, tau))
    _reg_finite("the risk E[(f(x) - y)^2]", r, UNITS_HINT)
    return RegressionEstimate(
        float(theta),
        r,
        (float(neg), float(pos)),
        ll,
        ident,
        verdict,
    )


def _coll_reg_terms(F: np.ndarray, mu: float, sigma: float, tau: float):
    n, k = F.shape
    P = 1.0 / sigma**2 + k / tau**2
    a = mu / sigma**2
    const = (
        0.5 * np.log(np.pi)
        - 0.5 * np.log(P / 2.0)
        - k * np.log(tau)
        - 0.5 * (k + 1) * LOG_2PI
        - np.log(sigma)
        - mu * mu / (2.0 * sigma**2)
    )
    return n, k, P, a, const, F.sum(axis=0), F.T @ F


def _coll_reg_ll_u(u: np.ndarray, stats, tau: float) -> np.ndarray:
    """Eq. (13) summed over examples, in u = 1/theta (batch (..., k)); uses only n, sum F and F^T F."""
    n, k, P, a, const, s1, Q = stats
    t2 = tau * tau
    quad = np.einsum("...j,jk,...k->...", u, Q, u)
    sum_s2 = n * a * a + 2.0 * a * (u @ s1) / t2 + quad / (t2 * t2)
    return n * const + n * np.log(np.abs(u)).sum(axis=-1) + sum_s2 / (2.0 * P) - (u * u) @ np.diag(Q) / (2.0 * t2)


def collaborative_regression_loglik(theta, F, mu_y: float, sigma_y: float, tau: float) -> np.ndarray:
    """Eq. (13): sum_i log p_theta(yhat_i1, ..., yhat_ik) for k conditionally independent regression models.

    ``theta`` (..., k) non-zero (batch allowed), ``F`` (n, k) predictions. Uses eq. (13)'s last line with |theta_j|
    in the normaliser; equals the multivariate normal N(theta mu_y, sigma_y^2 theta theta^T + tau^2 diag(theta^2)).
    """
    X = _predictions(F, 2)
    th = np.asarray(theta, dtype=np.float64)
    if th.shape[-1:] != (X.shape[1],) or not np.all(np.isfinite(th)) or (th == 0).any():
        raise DataError(f"theta needs {X.shape[1]} finite non-zero entries per row, got shape {th.shape}.")
    mu, sigma, tau = float(mu_y), _positive("sigma_y", sigma_y), _positive("tau", tau)
    c, b = _reg_units(X, mu, sigma, tau)
    stats = _coll_reg_terms(X / c, mu / b, sigma / b, tau / b)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        u = c / (th * b)  # 1 / theta in the rescaled units
    return _coll_reg_ll_u(u, stats, tau / b) - X.shape[0] * np.log(c).sum()


def collaborative_regression_mle(
    F,
    mu_y: float,
    sigma_y: float,
    tau: float,
    *,
    theta0=None,
    signs=None,
    gtol: float = 1e-10,
    max_iter: int = 1000,
) -> RegressionFit:
    """Maximise eq. (13) over theta on one orthant with ``scipy.optimize.minimize`` (trust-exact).

    Parametrisation: theta_j = signs_j exp(-v_j), i.e. u = 1/theta = signs exp(v), unconstrained in v; analytic
    gradient and Hessian (in u: g = n/u + (a s1/tau^2 + Q u/tau^4)/P - u diag(Q)/tau^2, H = -n diag(1/u^2)
    + Q/(tau^4 P) - diag(Q)/tau^2, with s1 = sum_i yhat_i, Q = sum_i yhat_i yhat_i^T, a = mu_y/sigma_y^2,
    P = 1/sigma_y^2 + k/tau^2; H is negative definite, so the orthant's maximiser is unique). ``signs`` (k,) of +-1:
    the orthant (default all +1: every model points the same way as y). ``theta0``: start (default: each model's
    closed form on that sign). k = 1 reproduces :func:`regression_closed_form`. ``converged``: scipy reports success,
    or it stopped on rounding ("bad approximation") with |gradient in v| <= 1e-7 n, i.e. steps of ~1e-11.
    """
    X = _predictions(F, 2)
    sigma_y = _positive("sigma_y", sigma_y)
    tau = _positive("tau", tau)
    mu = float(mu_y)
    n, k = X.shape
    s = np.ones(k) if signs is None else np.sign(np.asarray(signs, dtype=np.float64)).ravel()
    if s.shape != (k,) or (s == 0).any():
        raise DataError(f"signs must hold {k} entries, each +1 or -1.")
    if theta0 is None:
        roots = np.array([regression_closed_form(X[:, j], mu, sigma_y, tau).roots for j in range(k)])
        th0 = np.where(s > 0, roots[:, 1], roots[:, 0])
    else:
        th0 = np.asarray(theta0, dtype=np.float64).ravel()
        if th0.shape != (k,) or (np.sign(th0) != s).any():
            raise DataError("theta0 needs k non-zero entries with the signs given by `signs`.")
    c, b = _reg_units(X, mu, sigma_y, tau)  # work in O(1) units; theta_j = theta_n_j c_j / b
    stats = _coll_reg_terms(X / c, mu / b, sigma_y / b, tau / b)
    _, _, P, a, _, s1, Q = stats
    t2 = (tau / b) ** 2
    with np.errstate(over="ignore", under="ignore"):
        th0 = th0 * b / c
    dQ = np.diag(Q)

    def fun(v: np.ndarray):
        u = s * np.exp(v)
        ll = float(_coll_reg_ll_u(u, stats, tau / b))
        g = n / u + (a * s1 / t2 + Q @ u / (t2 * t2)) / P - u * dQ / t2
        return -ll, -(g * u)

    def hess(v: np.ndarray) -> np.ndarray:
        u = s * np.exp(v)
        g = n / u + (a * s1 / t2 + Q @ u / (t2 * t2)) / P - u * dQ / t2
        H = -n * np.diag(1.0 / (u * u)) + Q / (t2 * t2 * P) - np.diag(dQ) / t2
        return -(u[:, None] * H * u[None, :] + np.diag(g * u))

    res = minimize(
        fun,
        np.log(1.0 / np.abs(th0)),
        jac=True,
        hess=hess,
        method="trust-exact",
        options={"gtol": gtol * max(1.0, n), "maxiter": max_iter},
    )
    theta_n = s * np.exp(-res.x)
    ll = float(_coll_reg_ll_u(1.0 / theta_n, stats, tau / b)) - n * float(np.log(c).sum())
    with np.errstate(over="ignore"):
        theta = theta_n * (c / b)
    _reg_finite(f"theta (predictions up to {c.max():.3g}, y on a scale of {b:.3g})", theta, UNITS_HINT)
    with np.errstate(over="ignore", invalid="ignore"):
        risk_ = regression_risk(theta, mu, sigma_y, tau)
    _reg_finite("the risk E[(f(x) - y)^2]", risk_, UNITS_HINT)
    if mu == 0.0:
        ident = False
        verdict = (
            "With mu_y = 0 flipping the sign of every theta_j leaves eq. (13) unchanged: only the relative signs are "
            f"identified; the orthant signs = {s.astype(int).tolist()} was used."
        )
    else:
        ident = True
        verdict = f"Identifiable (Prop. 8, a != 0); maximiser on the orthant signs = {s.astype(int).tolist()}."
    return RegressionFit(
        theta=theta,
        risk=risk_,
        loglik=ll,
        signs=s,
        n_iter=int(res.nit),
        converged=bool(res.success or np.max(np.abs(res.jac)) <= 1e-7 * max(1.0, n)),
        identifiable=ident,
        verdict=verdict,
    )


# ====================================================================== simulators
def simulate_confusion_outputs(n: int, confusion, p_y, *, missing: float = 0.0, seed: int | None = 0):
    """Outputs of k conditionally independent classifiers with confusion matrices ``confusion`` (k, l, l).

    ``confusion[j, said, true] = P(classifier j outputs said | y = true)`` (columns sum to 1, the house
    convention; eq. (6) with theta_{said, true}). y_i ~ p(y); each output drawn by inverse CDF; each output is then
    hidden (-1) independently with probability ``missing``. Returns ``(outputs (n, k) int64, y (n,) int64)``.
    """
    p = _marginal(p_y)
    l = p.size
    G = np.asarray(confusion, dtype=np.float64)
    if G.ndim == 2:
        G = G[None]
    if G.shape[1:] != (l, l) or (G < 0).any() or np.abs(G.sum(axis=1) - 1).max() > 1e-9:
        raise DataError(f"confusion must be (k, {l}, {l}) with columns (true class) summing to 1.")
    if not 0.0 <= missing < 1.0:
        raise DataError(f"missing must be a probability in [0, 1), got {missing}.")
    rng = np.random.default_rng(seed)
    y = rng.choice(l, size=int(n), p=p)
    cdf = np.cumsum(G, axis=1)  # (k, l_said, l_true)
    c = np.moveaxis(cdf[:, :, y], 2, 0)  # (n, k, l_said)
    u = rng.random((int(n), G.shape[0]))
    out = np.minimum((u[:, :, None] >= c).sum(axis=2), l - 1).astype(np.int64)
    if missing > 0:
        out[rng.random(out.shape) < missing] = -1
    return out, y.astype(np.int64)


def simulate_classifier_outputs(n: int, theta, p_y, *, missing: float = 0.0, seed: int | None = 0):
    """Outputs of k = len(theta) classifiers under the symmetric noise model (eq. (8)), l = len(p_y) classes.

    Classifier j is right with probability theta_j, otherwise it outputs one of the l - 1 wrong classes uniformly.
    Outputs are hidden (-1) independently with probability ``missing``. Returns ``(outputs (n, k), y (n,))``.
    """
    p = _marginal(p_y)
    l = p.size
    th = _unit_interval("theta", np.atleast_1d(theta)).ravel()
    if not 0.0 <= missing < 1.0:
        raise DataError(f"missing must be a probability in [0, 1), got {missing}.")
    rng = np.random.default_rng(seed)
    n = int(n)
    y = rng.choice(l, size=n, p=p)
    right = rng.random((n, th.size)) < th
    wrong = (y[:, None] + rng.integers(1, l, size=(n, th.size))) % l
    out = np.where(right, y[:, None], wrong).astype(np.int64)
    if missing > 0:
        out[rng.random(out.shape) < missing] = -1
    return out, y.astype(np.int64)


def simulate_regression(n: int, theta, mu_y: float, sigma_y: float, tau: float, *, seed: int | None = 0):
    """Predictions of k conditionally independent regression models (eq. (10)): y ~ N(mu_y, sigma_y^2),
    yhat_j = theta_j (y + tau z_j), z_j ~ N(0, 1) independent. Returns ``(F (n, k), y (n,))``."""
    th = np.atleast_1d(np.asarray(theta, dtype=np.float64)).ravel()
    rng = np.random.default_rng(seed)
    y = mu_y + _positive("sigma_y", sigma_y) * rng.standard_normal(int(n))
    z = rng.standard_normal((int(n), th.size))
    return th * (y[:, None] + _positive("tau", tau) * z), y
