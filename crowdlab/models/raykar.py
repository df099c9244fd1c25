"""Raykar et al. (2010), "Learning from crowds": a two-coin crowd whose truth follows a classifier.

Binary labels; class code 1 is the positive class. Item i has a feature row x_i (a design matrix ``X`` (N, d),
usually with an intercept column: `crowdlab.io.features.ItemFeatures`) and

    p_i = P(y_i = 1 | x_i, w) = sigma(w^T x_i),     annotator j says 1 w.p. alpha_j if y_i = 1, 0 w.p. beta_j if 0.

- E-step (Raykar et al.): mu_i = a_i p_i / (a_i p_i + b_i (1 - p_i)) with a_i = prod_j alpha_j^{y_ij} (1 - alpha_j)^
  {1 - y_ij}, b_i = prod_j beta_j^{1 - y_ij} (1 - beta_j)^{y_ij} (products over the labels item i received),
  computed in log space: ``log_joint[:, 1] = log p_i + log a_i``, ``log_joint[:, 0] = log(1 - p_i) + log b_i``.
- M-step: alpha_j = sum_i mu_i y_ij / sum_i mu_i and beta_j = sum_i (1 - mu_i)(1 - y_ij) / sum_i (1 - mu_i) (sums
  over the labels of j), with Beta(a1, a2) / Beta(b1, b2) priors the MAP (sum mu y + a1 - 1) / (sum mu + a1 + a2 - 2)
  (as `TwoCoin`). w maximises sum_i [mu_i log p_i + (1 - mu_i) log(1 - p_i)] - l2/2 ||w_pen||^2 (logistic
  regression on soft labels with a Gaussian prior), by Newton-Raphson (IRLS) with step halving, run to
  convergence (Newton decrement <= 1e-10 relative, at most 50 steps) from the last w found (warm start; w = 0 at
  the first M-step). The problem is strictly concave when l2 > 0, so the M-step is exact and EM is monotone.
- Objective (what EM climbs, never decreasing): log p(labels | X, theta) + log prior
  = sum_i log[a_i p_i + b_i (1 - p_i)] + sum_j [log Beta(alpha_j; a1, a2) + log Beta(beta_j; b1, b2)]
  + log N(w_pen; 0, I / l2). The Gaussian term is the full log density, -l2/2 ||w_pen||^2 + (d_pen/2) log(l2/2 pi);
  the Beta terms include their normalising constants (0 for the flat Beta(1, 1)). ``w_pen`` leaves out the
  intercept (column named "intercept", first, when the features have one): the prior does not pull the base rate
  towards 1/2. l2 = 0 means no prior on w (a flat, improper one: the term is 0); with separable data w can then
  grow without bound.

Initialisation "majority" (the paper: "majority voting as start values for mu_i") is q0 = vote fractions, then
an M-step. Shapes: alpha, beta (M,), w (d,), q (N, 2) with q[:, 1] = mu.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.io.features import ItemFeatures
from crowdlab.models.base import LatentModel, ModelInfo, log_beta_pdf
from crowdlab.models.dawid_skene import class_log_joint, expected_counts
from crowdlab.models.params import ClassParams
from crowdlab.models.two_coin import _beta_map, two_coin_gamma

__all__ = [
    "NewtonResult",
    "RaykarModel",
    "RaykarParams",
    "log_sigmoid",
    "logistic_objective",
    "logistic_regression",
    "newton_logistic",
]


def expit(x):
    """The logistic function 1 / (1 + exp(-x)) (scipy.special.expit, imported on first use so that
    ``import crowdlab`` stays light)."""
    from scipy.special import expit as _expit

    return _expit(x)


NEWTON_STEPS = 50
NEWTON_TOL = 1e-10


def log_sigmoid(z: np.ndarray) -> np.ndarray:
    """log sigma(z) = -log(1 + e^{-z}), stable for any z (log(1 - sigma(z)) = log_sigmoid(-z))."""
    return -np.logaddexp(0.0, -np.asarray(z, dtype=np.float64))


# ====================================================================== logistic regression (IRLS)
def _penalty_mask(d: int, penalised: np.ndarray | None) -> np.ndarray:
    if penalised is None:
        return np.ones(d)
    mask = np.asarray(penalised, dtype=np.float64)
    if mask.shape != (d,):
        raise ModelError(f"penalised needs one entry per column ({d}), got shape {mask.shape}.")
    return mask


def logistic_objective(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = 0.0, penalised: np.ndarray | None = None
) -> float:
    """sum_i [y_i log sigma(x_i w) + (1 - y_i) log(1 - sigma(x_i w))] - l2/2 sum_{penalised} w^2 (y in [0, 1])."""
    z = X @ w
    pen = _penalty_mask(X.shape[1], penalised)
    return float(y @ z - np.logaddexp(0.0, z).sum() - 0.5 * l2 * (pen * w * w).sum())


@dataclass(frozen=True)
class NewtonResult:
    """Result of `newton_logistic`: the weights, the objective there, Newton steps taken, and convergence."""

    w: np.ndarray
    objective: float
    steps: int
    converged: bool


def newton_logistic(
    X: np.ndarray,
    y: np.ndarray,
    l2: float = 1.0,
    *,
    penalised: np.ndarray | None = None,
    w0: np.ndarray | None = None,
    max_steps: int = NEWTON_STEPS,
    tol: float = NEWTON_TOL,
) -> NewtonResult:
    """Maximise `logistic_objective` over w by Newton-Raphson (IRLS) with step halving.

    ``y`` may be soft (mu_i in [0, 1]) or hard. ``penalised`` (d,) 0/1 marks the weights the L2 term shrinks
    (default all). From ``w0`` (default 0), each step solves (X^T S X + l2 P) delta = X^T (y - p) - l2 P w with
    S = diag(p (1 - p)); the step is halved until the objective does not decrease beyond rounding error
    (16 eps |objective|), so the result is never worse than ``w0`` beyond rounding. Stops when the Newton
    decrement g^T delta / 2 (the predicted gain) is at most ``tol * max(1, |objective|)`` (after taking that last
    step), or after ``max_steps`` steps.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    d = X.shape[1]
    pen = _penalty_mask(d, penalised)
    # Newton is affine invariant: iterate on columns scaled by powers of two (X_j / s_j, |entries| <= 1, exact)
    # so that feature values from 1e-300 to 1e300 give finite Hessians; w = w_s / s at the end.
    s = _column_scales(X)
    with np.errstate(over="ignore", invalid="ignore"):  # the precision of w_s = w s is l2 / s^2
        reg_s = np.where(l2 * pen > 0, l2 * pen * (1.0 / s) ** 2, 0.0)
    # a column so tiny that l2 / s^2 passes 1e300 has its optimum |w_j| < 1e-300 |gradient|: w_j = 0 exactly
    free = reg_s <= 1e300
    w0_s = None if w0 is None else (np.asarray(w0, float) * s)[free]
    w_out = _newton_scaled(X[:, free] / s[free], y, reg_s[free], w0_s, max_steps, tol)
    w = np.zeros(d)
    with np.errstate(over="ignore"):
        w[free] = w_out.w / s[free]
    if not np.all(np.isfinite(w)):
        raise ModelError(
            f"the logistic regression's weights overflow ({w.tolist()}): the features are separable at a scale "
            "float64 cannot hold. Standardise the features or set l2 > 0."
        )
    return NewtonResult(w, w_out.objective, w_out.steps, w_out.converged)


def _column_scales(X: np.ndarray) -> np.ndarray:
    """(d,) the power of two at or above each column's largest |entry| (1 for an all-zero column)."""
    top = np.abs(X).max(axis=0) if X.shape[0] else np.zeros(X.shape[1])
    exps = np.frexp(np.where(top > 0, top, 1.0))[1]
    return np.where(top > 0, np.ldexp(1.0, exps), 1.0)


def _newton_scaled(
    X: np.ndarray, y: np.ndarray, reg: np.ndarray, w0: np.ndarray | None, max_steps: int, tol: float
) -> NewtonResult:
    """`newton_logistic` on O(1) columns with the per-weight penalty precisions ``reg`` (d,)."""
    d = X.shape[1]
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=np.float64)
    z = X @ w
    f = float(y @ z - np.logaddexp(0.0, z).sum() - 0.5 * (reg * w * w).sum())
    for step in range(1, max_steps + 1):
        p = expit(z)
        g = X.T @ (y - p) - reg * w
        H = (X * (p * (1.0 - p))[:, None]).T @ X
        H[np.diag_indices(d)] += reg
        try:
            delta = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            delta = np.linalg.lstsq(H, g, rcond=None)[0]
        if not np.all(np.isfinite(delta)):
            delta = np.linalg.lstsq(H, g, rcond=None)[0]
        decrement = 0.5 * float(g @ delta)
        last = decrement <= tol * max(1.0, abs(f))
        # a step that lowers f by no more than rounding error counts as no decrease: near the optimum a Newton
        # step's gain is below rounding, and a strict f_new >= f rejected it at random, so w moved in lumps and
        # EM's stopping rule saw parameters "still drifting" (Raykar on the app's simulation: stalled after 74
        # iterations instead of converged)
        floor = f - 16 * np.finfo(np.float64).eps * max(1.0, abs(f))
        Xd = X @ delta
        t = 1.0
        while True:
            w_new = w + t * delta
            z_new = z + t * Xd
            f_new = float(y @ z_new - np.logaddexp(0.0, z_new).sum() - 0.5 * (reg * w_new * w_new).sum())
            if f_new >= floor or last or t < 1e-12:
                break
            t *= 0.5
        if f_new >= floor:
            w, z, f = w_new, z_new, f_new
        else:  # no step improves: at the optimum up to rounding
            return NewtonResult(w, f, step, True)
        if last:
            return NewtonResult(w, f, step, True)
    return NewtonResult(w, f, max_steps, False)


def logistic_regression(
    X: np.ndarray,
    y: np.ndarray,
    l2: float = 1.0,
    *,
    penalised: np.ndarray | None = None,
    w0: np.ndarray | None = None,
) -> np.ndarray:
    """(d,) L2-penalised logistic regression weights for soft or hard labels y (the baseline classifier).

    The same IRLS as Raykar's M-step (`newton_logistic`); e.g. trained on majority-vote labels.
    """
    return newton_logistic(X, y, l2, penalised=penalised, w0=w0).w


# ====================================================================== parameters
@dataclass(frozen=True, eq=False)
class RaykarParams(ClassParams):
    """Two-coin annotators plus a logistic classifier.

    ``extra["alpha"]``, ``extra["beta"]`` (M,); ``gamma`` (M, 2, 2) the matching confusion matrices
    [[beta, 1 - alpha], [1 - beta, alpha]]; ``w`` (d,) the classifier weights for the columns
    ``feature_names``; ``pi`` = [1 - mean_i p_i, mean_i p_i], the average prevalence over the training items
    (for display: the model has no separate prevalence parameter).
    """

    w: np.ndarray = field(default_factory=lambda: np.zeros(0))
    feature_names: tuple[str, ...] = ()

    @property
    def alpha(self) -> np.ndarray:
        return self.extra["alpha"]

    @property
    def beta(self) -> np.ndarray:
        return self.extra["beta"]

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """(n,) w^T x for design rows X (n, d) (transform raw rows with `ItemFeatures.transform` first)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.shape[1] != self.w.shape[0]:
            raise ModelError(f"these rows have {X.shape[1]} columns; the classifier has {self.w.shape[0]} weights.")
        return X @ self.w

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(n,) P(y = 1 | x) = sigma(w^T x) for design rows X (n, d)."""
        return expit(self.decision_function(X))

    def predict(self, X: np.ndarray, threshold: float = 0.5) -> np.ndarray:
        """(n,) class codes: 1 where P(y = 1 | x) > threshold."""
        return (self.predict_proba(X) > threshold).astype(np.int32)

    def to_dict(self, worker_names=None, class_names=None) -> dict:
        out = super().to_dict(worker_names, class_names)
        out["w"] = self.w.tolist()
        out["feature_names"] = list(self.feature_names)
        return out


# ====================================================================== model
class RaykarModel(LatentModel):
    """Raykar's learning from crowds: EM over (w, alpha, beta) with a logistic classifier on item features.

    ``features``: the design matrix aligned with the data's items (`ItemFeatures`). ``l2``: precision of the
    Gaussian prior on the non-intercept weights (0: none). ``prior``: Beta(1 + prior, 1 + prior) on every
    alpha_j and beta_j (as `TwoCoin`; or give ``alpha_prior`` / ``beta_prior`` pairs, each >= 1). ``hard``: hard
    EM. ``newton_steps`` / ``newton_tol``: the IRLS of the M-step.
    """

    info = ModelInfo("raykar", "Raykar (learning from crowds, with item features)", "classes", True, "item", True)

    def __init__(
        self,
        features: ItemFeatures,
        l2: float = 1.0,
        prior: float = 0.0,
        hard: bool = False,
        *,
        alpha_prior: tuple[float, float] | None = None,
        beta_prior: tuple[float, float] | None = None,
        newton_steps: int = NEWTON_STEPS,
        newton_tol: float = NEWTON_TOL,
    ) -> None:
        if not isinstance(features, ItemFeatures):
            raise TypeError("features must be an ItemFeatures (see crowdlab.io.features.read_features).")
        if not np.isfinite(l2) or l2 < 0:
            raise ModelError("l2 (the precision of the Gaussian prior on w) must be >= 0.")
        if prior < 0:
            raise ModelError("prior strength must be >= 0.")
        if newton_steps < 1:
            raise ModelError("newton_steps must be at least 1.")
        self.features = features
        self.l2 = float(l2)
        self.prior = float(prior)
        self.hard = bool(hard)
        s = 1.0 + self.prior
        self.alpha_prior = tuple(float(v) for v in alpha_prior) if alpha_prior else (s, s)
        self.beta_prior = tuple(float(v) for v in beta_prior) if beta_prior else (s, s)
        if min(self.alpha_prior + self.beta_prior) < 1.0:
            raise ModelError("Beta prior parameters must be >= 1 for a closed-form MAP M-step.")
        self.newton_steps = int(newton_steps)
        self.newton_tol = float(newton_tol)
        self.penalised = features.penalised.astype(np.float64)
        self.last_newton: NewtonResult | None = None
        self._w_warm: np.ndarray | None = None

    # ------------------------------------------------------------------ protocol
    @property
    def has_prior(self) -> bool:
        return self.l2 > 0 or self.alpha_prior != (1.0, 1.0) or self.beta_prior != (1.0, 1.0)

    @property
    def objective_name(self) -> str:
        if self.hard:
            base = "complete-data log-likelihood log p(labels, ŷ | X, θ)"
        else:
            base = "log-likelihood log p(labels | X, θ)"
        return base + (" + log prior" if self.has_prior else "")

    def check(self, data: Annotations) -> None:
        super().check(data)
        f = self.features
        if f.n_items != data.n_items:
            raise ModelError(f"the features have {f.n_items} rows; the data have {data.n_items} items.")
        if f.item_names != data.item_names:
            raise ModelError("the rows of the features are not the data's items (read them with read_features).")

    def design(self, data: Annotations) -> np.ndarray:
        X = self.features.X
        if X.shape[0] != data.n_items:
            raise ModelError(f"the features have {X.shape[0]} rows; the data have {data.n_items} items.")
        return X

    def log_joint(self, data: Annotations, params: RaykarParams) -> np.ndarray:
        """(N, 2): [log(1 - p_i) + log b_i, log p_i + log a_i]."""
        z = self.design(data) @ params.w
        lj = class_log_joint(data, np.ones(2), params.gamma)
        lj[:, 1] += log_sigmoid(z)
        lj[:, 0] += log_sigmoid(-z)
        return lj

    def m_step(self, data: Annotations, q: np.ndarray, *, w0: np.ndarray | None = None) -> RaykarParams:
        """alpha, beta in closed form; w by IRLS from ``w0`` (default: the last w found, or 0)."""
        c = expected_counts(data, q)  # c[m, said, true]
        alpha = _beta_map(c[:, 1, 1], c[:, :, 1].sum(axis=1), *self.alpha_prior)
        beta = _beta_map(c[:, 0, 0], c[:, :, 0].sum(axis=1), *self.beta_prior)
        X = self.design(data)
        if w0 is None and self._w_warm is not None and self._w_warm.shape == (X.shape[1],):
            w0 = self._w_warm
        res = newton_logistic(
            X, q[:, 1], self.l2, penalised=self.penalised, w0=w0, max_steps=self.newton_steps, tol=self.newton_tol
        )
        self.last_newton = res
        self._w_warm = res.w
        return self.make_params(alpha, beta, res.w)

    def log_prior(self, params: RaykarParams) -> float:
        out = log_beta_pdf(params.alpha, *self.alpha_prior) + log_beta_pdf(params.beta, *self.beta_prior)
        if self.l2 > 0:
            wp = params.w[self.penalised > 0]
            out += -0.5 * self.l2 * float(wp @ wp) + 0.5 * wp.size * np.log(self.l2 / (2.0 * np.pi))
        return float(out)

    # ------------------------------------------------------------------ parameters
    def make_params(self, alpha: np.ndarray, beta: np.ndarray, w: np.ndarray) -> RaykarParams:
        """Parameters from alpha, beta (M,) and w (d,); pi is the mean of sigma(X w) over the training items."""
        alpha = np.asarray(alpha, dtype=np.float64)
        beta = np.asarray(beta, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.features.d,):
            raise ModelError(f"w needs {self.features.d} weights ({', '.join(self.features.names)}).")
        p = float(expit(self.features.X @ w).mean()) if self.features.n_items else 0.5
        return RaykarParams(
            pi=np.array([1.0 - p, p]),
            gamma=two_coin_gamma(alpha, beta),
            extra={"alpha": alpha, "beta": beta},
            w=w,
            feature_names=self.features.names,
        )

    def params_from(self, pi: np.ndarray, gamma: np.ndarray) -> RaykarParams:
        """From a class prior and (M, 2, 2) confusion matrices (e.g. moment matching): alpha = gamma[:, 1, 1],
        beta = gamma[:, 0, 0], and w = 0 except the intercept, logit(pi_1) (when the features have one)."""
        pi = np.asarray(pi, dtype=np.float64)
        gamma = np.asarray(gamma, dtype=np.float64)
        w = np.zeros(self.features.d)
        if self.features.intercept:
            p = float(np.clip(pi[1], 1e-6, 1 - 1e-6))
            w[0] = np.log(p / (1.0 - p))
        return self.make_params(gamma[:, 1, 1], gamma[:, 0, 0], w)

    def reset_warm_start(self) -> None:
        """Forget the last w (the next M-step's IRLS starts from w = 0)."""
        self._w_warm = None

    def predict_proba(self, params: RaykarParams, X: np.ndarray | None = None) -> np.ndarray:
        """(n,) sigma(w^T x): for the training items (X None) or for design rows X (see `ItemFeatures.transform`)."""
        return params.predict_proba(self.features.X if X is None else X)
