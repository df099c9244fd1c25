"""GLAD's M-step (Whitehill et al. 2009, Sec. 3 "M-step") as a few passes over the labels, shared by the in-memory
model (`crowdlab.models.glad.GLAD.m_step`) and the streaming and Dask engines (`crowdlab.engines.glad_blocks`).

The M-step climbs Q(alpha, b) = sum_ij v_ij [w_ij log sigma(x_ij) + (1 - w_ij) log sigma(-x_ij)] + log prior,
x_ij = alpha_j exp(b_i), w_ij = q_{i, L_ij}, v_ij the label's weight (1 for hard labels), by rounds of two blocks:
a Newton step per worker in alpha_j (Q given b is concave and separable by worker), then a Fisher-scoring step
per item in b_i (separable by item given alpha). Each coordinate's step is taken only when it does not lower that
coordinate's part of Q, and halved otherwise, so the M-step never lowers Q (generalised EM).

The check without evaluating Q. A step d of a coordinate whose part f of Q has gradient g0 before and g1 after it
changes f by (trapezoid rule on f')

    f(x + d) - f(x) = d (g0 + g1) / 2 - d^3 f'''(xi) / 12,

so the step is safe when d (g0 + g1) / 2 >= |d|^3 B / 12 for a bound B >= |f'''| on the segment:

- alpha_j: f''' = -sum_i v sigma (1 - sigma)(1 - 2 sigma) beta_i^3 and |sigma (1 - sigma)(1 - 2 sigma)| <= C3 =
  1 / (6 sqrt 3), so B = C3 sum_i v beta_i^3;
- b_i: with u = alpha_j exp(b_i) the third derivative of one label's term is
  (w - sigma) u - 3 sigma (1 - sigma) u^2 - sigma (1 - sigma)(1 - 2 sigma) u^3, so B = sum_j v (U + 3 U^2 / 4 + C3 U^3)
  with U = max |u| on the segment (|u| is monotone in b_i: its larger end).

The priors are quadratic (the trapezoid rule is exact for them). Gradients need one exp per label and no log, and
the gradient after one block's step is what the next block's step needs anyway, so a round costs two passes
over the labels: one at (alpha', b) (the abilities' check and the difficulties' gradient and information), one
at (alpha', b') (the difficulties' check and the next round's ability gradient and curvature). Near the optimum
every Newton step passes the check: d (g0 + g1) / 2 is about g0^2 / (2 h) while the bound term is smaller by a
factor of about |d| beta / 6. Where the bound is too loose (large early steps), the coordinate falls back to
comparing the values of its part of Q (the logs: one more pass), accepting a fall within rounding (16 eps |f|),
and halves the step while it falls (at most ``TRIES`` times; then it keeps its value). Comparing values alone, as
the first version of this M-step did, rejected good steps at random near the optimum: there a step changes a
worker's part of Q (a sum of thousands of terms) by less than the rounding error of that sum, and every rejection
cost one more pass.

Each pass exists in numpy (``np.bincount`` over the labels) and, when numba's kernels are loaded
(`crowdlab.models.kernels`), as one compiled loop over the labels; both give the same numbers to rounding.
"""

from __future__ import annotations

import math

import numpy as np

from crowdlab.models import kernels

TRIES = 12  # step lengths 1, 1/2, ..., 1/2^11
C3 = 1.0 / (6.0 * math.sqrt(3.0))  # max over sigma in (0, 1) of |sigma (1 - sigma)(1 - 2 sigma)|
MIN_OBS = 1 << 15  # labels (of a data set or a block) below this: numpy (both take microseconds)
# a data set of this many labels loads numba's kernels (`crowdlab.models.kernels.load_for`): a GLAD iteration makes
# several passes over the labels, so the compiled passes pay for the load (about 0.5-1 s) at fewer labels than the
# E-step's row kernels do (FIRST_USE_CELLS)
FIRST_USE_OBS = 1 << 19
EPS = np.finfo(np.float64).eps

_COMPILED: dict | None = None
_TRIED = False
_EMPTY = np.zeros(0)
_EMPTY2 = np.zeros((0, 0))


# ------------------------------------------------------------------------------------------- per-label values
def _x_e(obs, alpha: np.ndarray, beta: np.ndarray, k: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """(x, e) per label: x = alpha_j beta_i and e = exp(-|x|), numpy's vectorised exp in both paths (several times
    faster than numba's scalar one), so that they give the same values. (Compiled passes that recomputed x from
    alpha and beta instead of reading it took twice as long.)"""
    if k is None:
        x = np.take(alpha, obs.worker) * np.take(beta, obs.item)
        e = np.abs(x)
        np.negative(e, out=e)
    else:
        x, e = np.empty(obs.item.shape[0]), np.empty(obs.item.shape[0])
        k["x"](obs.item, obs.worker, alpha, beta, x, e)
    np.exp(e, out=e)
    return x, e


def _sig(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """sigma(x) from e = exp(-|x|), as the compiled passes compute it: 1 / (1 + e) for x >= 0, e / (1 + e) below."""
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _terms(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """w log sigma(x) + (1 - w) log sigma(-x) per label (Q's data term without the constant -(1 - w) log(K - 1)):
    log sigma(x) = min(x, 0) - L and log sigma(-x) = -max(x, 0) - L share one L = log(1 + e^-|x|)."""
    return w * np.minimum(x, 0.0) - (1.0 - w) * np.maximum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))


def _v(obs) -> np.ndarray:
    return _EMPTY if obs.weight is None else np.ascontiguousarray(obs.weight, dtype=np.float64)


def _worker_rows(obs, w, s, b, M: int, out: np.ndarray) -> None:
    """`worker_sums` in numpy from sigma ``s`` and beta ``b`` per label; ``w`` None: sum v sigma beta_i in row 0
    instead of sum v (w - sigma) beta_i (`s_sums`)."""
    v = obs.weight
    r = s if w is None else w - s
    c = s * (1.0 - s)
    b3 = b * b * b
    if v is not None:
        r, c, b3 = v * r, v * c, v * b3
    out[0] = np.bincount(obs.worker, weights=r * b, minlength=M)
    out[1] = np.bincount(obs.worker, weights=c * b * b, minlength=M)
    out[2] = np.bincount(obs.worker, weights=b3, minlength=M)


# ------------------------------------------------------------------------------------------- the passes
def worker_sums(obs, w: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """(3, M) at (alpha, beta): per worker the data terms of dQ/dalpha_j (sum v (w - sigma) beta_i), of its
    curvature (sum v sigma (1 - sigma) beta_i^2) and sum v beta_i^3 (the third-derivative bound, before C3)."""
    M = alpha.shape[0]
    k = _compiled(obs)
    x, e = _x_e(obs, alpha, beta, k)
    out = np.zeros((3, M))
    if k is not None:
        k["worker_sums"](obs.item, obs.worker, _v(obs), w, x, e, beta, out)
    else:
        _worker_rows(obs, w, _sig(x, e), np.take(beta, obs.item), M, out)
    return out


def alpha_trial(obs, w: np.ndarray, alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At (alpha, beta): ((M,) the workers' data gradient sum v (w - sigma) beta_i, (2, N) the items' data gradient
    sum v (w - sigma) x and Fisher information sum v sigma (1 - sigma) x^2)."""
    M, N = alpha.shape[0], beta.shape[0]
    k = _compiled(obs)
    x, e = _x_e(obs, alpha, beta, k)
    if k is not None:
        gw, items = np.zeros(M), np.zeros((2, N))
        k["alpha_trial"](obs.item, obs.worker, _v(obs), w, x, e, beta, gw, items)
        return gw, items
    s = _sig(x, e)
    r = w - s if obs.weight is None else obs.weight * (w - s)
    c = s * (1.0 - s) if obs.weight is None else obs.weight * (s * (1.0 - s))
    items = np.empty((2, N))
    items[0] = np.bincount(obs.item, weights=r * x, minlength=N)
    items[1] = np.bincount(obs.item, weights=c * x * x, minlength=N)
    return np.bincount(obs.worker, weights=r * np.take(beta, obs.item), minlength=M), items


def b_trial(
    obs, w: np.ndarray, alpha: np.ndarray, beta: np.ndarray, grow: np.ndarray, with_sums: bool = True, keep=None
):
    """At (alpha, beta): ((N,) the items' data gradient sum v (w - sigma) x, (N,) their third-derivative bound
    sum v (U + 3 U^2 / 4 + C3 U^3) with U = |x| grow_i, (3, M) `worker_sums` or None without ``with_sums``).
    ``keep`` (a dict): gets "xe", (x, e) of this pass, for `log_joint_data` at the same point."""
    M, N = alpha.shape[0], beta.shape[0]
    k = _compiled(obs)
    x, e = _x_e(obs, alpha, beta, k)
    if keep is not None:
        keep["xe"] = (x, e)
    sums = np.zeros((3, M)) if with_sums else None
    if k is not None:
        gi, bound = np.zeros(N), np.zeros(N)
        k["b_trial"](obs.item, obs.worker, _v(obs), w, x, e, beta, grow, gi, bound, _EMPTY2 if sums is None else sums)
        return gi, bound, sums
    s = _sig(x, e)
    r = w - s if obs.weight is None else obs.weight * (w - s)
    u = np.abs(x) * np.take(grow, obs.item)
    cub = u + 0.75 * u * u + C3 * u * u * u
    gi = np.bincount(obs.item, weights=r * x, minlength=N)
    bound = np.bincount(obs.item, weights=cub if obs.weight is None else obs.weight * cub, minlength=N)
    if sums is not None:
        _worker_rows(obs, w, s, np.take(beta, obs.item), M, sums)
    return gi, bound, sums


def values(obs, w: np.ndarray, alpha: np.ndarray, beta: np.ndarray, by: str, mask=None) -> np.ndarray:
    """Q's data terms at (alpha, beta) summed per worker (``by="worker"``, (M,)) or per item (``"item"``, (N,));
    with ``mask`` ((M,) or (N,) bools) only those workers' or items' labels are summed (the others read 0): the
    value checks ask for the few coordinates the gradient check did not clear."""
    codes, n = (obs.worker, alpha.shape[0]) if by == "worker" else (obs.item, beta.shape[0])
    item, worker, v = obs.item, obs.worker, obs.weight
    if mask is not None:
        sel = np.flatnonzero(mask[codes])
        codes, item, worker, w = codes[sel], item[sel], worker[sel], w[sel]
        v = None if v is None else v[sel]
    t = _terms(np.take(alpha, worker) * np.take(beta, item), w)
    return np.bincount(codes, weights=t if v is None else t * v, minlength=n)


def gather_w(q: np.ndarray, obs, beta: np.ndarray | None = None, M: int = 0):
    """(n_obs,) w = q_{i, L_ij}: the posterior weight of "this label is right"; with ``beta``, also (M,)
    sum v w beta_i per worker (the w part of dQ/dalpha_j, for `first_sums`)."""
    k = _compiled(obs)
    if k is None or q.dtype != np.float64 or not q.flags.c_contiguous:
        w = q[obs.item, obs.label]
        if beta is None:
            return w
        wb = w * np.take(beta, obs.item)
        return w, np.bincount(obs.worker, weights=wb if obs.weight is None else obs.weight * wb, minlength=M)
    w = np.empty(obs.item.shape[0])
    if beta is None:
        k["gather_w"](q, obs.item, obs.label, w)
        return w
    wb = np.zeros(M)
    k["gather_wb"](q, obs.item, obs.worker, obs.label, _v(obs), beta, w, wb)
    return w, wb


def log_joint_data(obs, alpha: np.ndarray, beta: np.ndarray, K: int, s_out=None, xe=None) -> np.ndarray:
    """(N, K) the E-step's log joint without log pi (Sec. 3, E-step): sum over item i's labels of
    v log P(L_ij | Z_i = k), i.e. v [log sigma(-x) - log(K - 1)] for every k plus v [x + log(K - 1)] for the k
    said (log sigma(x) - log(sigma(-x) / (K - 1)) = x + log(K - 1)). ``s_out`` ((3, M) zeros): also the parts of
    `worker_sums` that do not depend on q, from the same exponentials (`first_sums`). ``xe``: (x, e) at this
    point when the M-step's last pass made them (`b_step`; e is overwritten)."""
    N, M = beta.shape[0], alpha.shape[0]
    lk = math.log(K - 1)
    k = _compiled(obs)
    x, e = _x_e(obs, alpha, beta, k) if xe is None else xe
    if s_out is not None and k is None:
        _worker_rows(obs, None, _sig(x, e), np.take(beta, obs.item), M, s_out)
    if k is not None:
        base, out = np.zeros(N), np.zeros((N, K))
        s = _EMPTY2 if s_out is None else s_out
        k["log_joint"](obs.item, obs.worker, obs.label, _v(obs), x, e, np.log1p(e), beta, lk, base, out, s)
        out += base[:, None]
        return out
    np.log1p(e, out=e)  # log sigma(-x) = min(-x, 0) - log(1 + e^-|x|)
    ls = np.minimum(-x, 0.0) - e
    wrong = ls - lk if obs.weight is None else (ls - lk) * obs.weight
    base = np.bincount(obs.item, weights=wrong, minlength=N)
    say = x + lk if obs.weight is None else (x + lk) * obs.weight
    bonus = np.bincount(obs.item * K + obs.label, weights=say, minlength=N * K).reshape(N, K)
    return base[:, None] + bonus


def first_sums(s_sums: np.ndarray, wb: np.ndarray) -> np.ndarray:
    """`worker_sums` at the E-step's parameters from what the E-step's pass gave (``s_sums``: sum v sigma beta_i,
    the curvature and sum v beta_i^3) and ``wb`` = sum v w beta_i (`gather_w`): the gradient's data term is
    wb - sum v sigma beta_i, no second pass of exponentials. (The difference loses about eps x sum v beta_i to
    cancellation near the optimum: 1e-13 in a gradient of sums of thousands of labels, a Newton step 1e-15.)"""
    out = s_sums.copy()
    out[0] = wb - s_sums[0]
    return out


# ------------------------------------------------------------------------------------------- the steps
def safe(step: np.ndarray, g0: np.ndarray, g1: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Where a step provably does not lower f: step (g0 + g1) / 2 >= |step|^3 bound / 12 (module docstring)."""
    with np.errstate(invalid="ignore", over="ignore"):
        lhs = 0.5 * step * (g0 + g1)
        rhs = np.abs(step) ** 3 * bound / 12.0
        return np.isfinite(lhs) & np.isfinite(rhs) & (lhs >= rhs)


def not_lower(f0: np.ndarray, fc: np.ndarray) -> np.ndarray:
    """Where fc is not below f0 beyond rounding (16 eps |f0|)."""
    slack = 16 * EPS * np.maximum(1.0, np.abs(f0))
    return np.isfinite(fc) & (fc >= f0 - slack)


def alpha_step(prior: tuple[float, float], alpha: np.ndarray, sums: np.ndarray, trial, worker_values):
    """One Newton step per worker from ``sums`` (`worker_sums` at (alpha, b)), checked and halved as the module
    docstring says. ``trial(a)``: the workers' data gradient at (a, b) (summed over every block; the caller keeps
    its by-products); ``worker_values(a, mask)``: the data values of Q at (a, b) of the workers in ``mask``.
    Returns (new alpha, whether the last ``trial`` call was at the new alpha)."""
    mu, var = prior
    g0 = sums[0] - (alpha - mu) / var
    step = g0 / (sums[1] + 1.0 / var)
    bound = C3 * sums[2]

    def value(a: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return worker_values(a, mask) - (a - mu) ** 2 / (2 * var)

    return _halving(alpha, step, g0, bound, lambda a: trial(a) - (a - mu) / var, value)


def b_step(
    prior: tuple[float, float],
    obs,
    w: np.ndarray,
    alpha: np.ndarray,
    b: np.ndarray,
    items: np.ndarray,
    last: bool = False,
    observed: bool = True,
):
    """One scoring step per item from ``items`` (`alpha_trial`'s (2, N) at (alpha, b)), checked and halved;
    local to the items of ``obs``. Returns (new b, `worker_sums` at (alpha, new b) for the next round, or None when
    this is the ``last`` round; then instead (exp(new b), x, e) of the pass at the new point when it was the last
    one made, for the E-step that follows (`log_joint_data`), else None).

    The step's curvature is the larger of the Fisher information and the observed curvature
    sum v [sigma (1 - sigma) x^2 - (w - sigma) x] (``observed=False``: Fisher scoring alone, the first version's
    step). Fisher scoring overshoots where the observed curvature is larger, up to twice the way on some items of
    real sets; there the step flipped sign from one EM iteration to the next and never settled, the objective flat
    at the optimum (plain EM on AdultContent and TREC stopped as stalled)."""
    mu, var = prior
    g0 = items[0] - (b - mu) / var
    step = g0 / (items[1] + (np.maximum(0.0, -items[0]) if observed else 0.0) + 1.0 / var)
    seen: dict = {}

    def grad(bb: np.ndarray) -> np.ndarray:
        d = bb - b
        with np.errstate(over="ignore"):
            beta = np.exp(bb)
            gi, bound, sums = b_trial(obs, w, alpha, beta, np.maximum(1.0, np.exp(-d)), not last, seen)
        seen["bound"], seen["sums"], seen["beta"] = bound, sums, beta
        return gi - (bb - mu) / var

    def value(bb: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return values(obs, w, alpha, np.exp(bb), "item", mask) - (bb - mu) ** 2 / (2 * var)

    new, at_new = _halving(b, step, g0, None, grad, value, seen)
    if last:
        return new, (seen["beta"], *seen["xe"]) if at_new else None
    return new, seen["sums"] if at_new else worker_sums(obs, w, alpha, np.exp(new))


def newton_gain(
    alpha_prior: tuple[float, float], beta_prior: tuple[float, float], alpha, b, sums, items
) -> tuple[float, float]:
    """(the workers' part, the items' part) of 1/2 sum g^2 / h over the coordinates: what one step of this M-step
    (its curvatures) would gain on Q at (alpha, b), from ``sums`` (`worker_sums`) and ``items`` (`alpha_trial`'s)
    there; a part whose arrays are None is 0. With w from the posterior at (alpha, b) the gradient of Q is that of
    the objective (Fisher's identity), so this estimates what EM has left to gain there
    (`crowdlab.engines.run.at_optimum`)."""
    ga = gb = 0.0
    if sums is not None:
        ma, va = alpha_prior
        g = sums[0] - (alpha - ma) / va
        ga = 0.5 * float(np.sum(g * g / (sums[1] + 1.0 / va)))
    if items is not None:
        mb, vb = beta_prior
        g = items[0] - (b - mb) / vb
        gb = 0.5 * float(np.sum(g * g / (items[1] + np.maximum(0.0, -items[0]) + 1.0 / vb)))
    return ga, gb


def _halving(x, step, g0, bound, grad, value, last: dict | None = None):
    """The per-coordinate safeguard: x + t step for t = 1, 1/2, ... the first that `safe` (gradient ``grad`` at the
    candidate, third-derivative ``bound``, or ``last["bound"]`` as ``grad`` leaves it) or `not_lower` (``value(p,
    mask)`` at a point, asked only for the coordinates in ``mask``, those `safe` does not clear: each later mask is
    within the first) accepts; coordinates with a negligible step, or none accepted in TRIES halvings, keep x.
    Returns (new x, whether the last ``grad`` call was at new x)."""
    todo = np.abs(step) > 1e-12 * (1.0 + np.abs(x))
    out = x.copy()
    t = 1.0
    f0 = None
    cand = np.where(todo, x + step, x)
    for _ in range(TRIES):
        if not todo.any():
            return out, False
        g1 = grad(cand)
        bd = last["bound"] if bound is None else bound
        ok = todo & safe(cand - x, g0, g1, bd)
        need = todo & ~ok
        if need.any():
            if f0 is None:
                f0 = value(x, need)
            ok |= need & not_lower(f0, value(cand, need))
        out[ok] = cand[ok]
        todo &= ~ok
        if not todo.any():
            return out, True
        t *= 0.5
        cand = np.where(todo, x + t * step, out)
    return out, False


# ------------------------------------------------------------------------------------------- compiled passes
def prepare(n_obs: int) -> None:
    """Load numba's kernels for a fit of ``n_obs`` labels when it pays (FIRST_USE_OBS): the in-memory M-step calls
    it with the data set's labels, and every engine process with the whole file's before working on its blocks,
    so that the blocks run the compiled passes whenever the in-memory fit of the same data would."""
    kernels.load_for(kernels.FIRST_USE_CELLS if n_obs >= FIRST_USE_OBS else 0)


def _compiled(obs) -> dict | None:
    """The compiled passes when numba's kernels are loaded (`prepare`) and ``obs`` has MIN_OBS labels or more."""
    if obs.item.shape[0] < MIN_OBS or kernels.loaded() is None:
        return None
    return _compile()


def _compile() -> dict | None:
    global _COMPILED, _TRIED
    if _TRIED:
        return _COMPILED
    _TRIED = True
    if kernels.loaded() is None:
        return None
    import numba

    jit = numba.njit(cache=True, boundscheck=False, nogil=True)

    @jit
    def k_x(item, worker, alpha, beta, x, nabs):  # pragma: no cover - compiled
        for o in range(item.shape[0]):
            t = alpha[worker[o]] * beta[item[o]]
            x[o] = t
            nabs[o] = -abs(t)

    @jit
    def k_worker_sums(item, worker, v, w, x, e, beta, out):  # pragma: no cover - compiled
        hasv = v.shape[0] > 0
        for o in range(item.shape[0]):
            j = worker[o]
            b = beta[item[o]]
            eo = e[o]
            s = (1.0 if x[o] >= 0 else eo) / (1.0 + eo)  # a select, no branch: x's sign is random
            if hasv:
                vo = v[o]
                out[0, j] += vo * (w[o] - s) * b
                out[1, j] += vo * (s * (1.0 - s)) * b * b
                out[2, j] += vo * (b * b * b)
            else:
                out[0, j] += (w[o] - s) * b
                out[1, j] += s * (1.0 - s) * b * b
                out[2, j] += b * b * b

    @jit
    def k_alpha_trial(item, worker, v, w, x, e, beta, gw, items):  # pragma: no cover - compiled
        hasv = v.shape[0] > 0
        for o in range(item.shape[0]):
            i = item[o]
            xo = x[o]
            eo = e[o]
            s = (1.0 if xo >= 0 else eo) / (1.0 + eo)
            if hasv:
                r = v[o] * (w[o] - s)
                c = v[o] * (s * (1.0 - s))
            else:
                r = w[o] - s
                c = s * (1.0 - s)
            gw[worker[o]] += r * beta[i]
            items[0, i] += r * xo
            items[1, i] += c * xo * xo

    @jit
    def k_b_trial(item, worker, v, w, x, e, beta, grow, gi, bound, sums):  # pragma: no cover - compiled
        hasv = v.shape[0] > 0
        with_sums = sums.shape[0] > 0
        for o in range(item.shape[0]):
            i = item[o]
            j = worker[o]
            xo = x[o]
            eo = e[o]
            b = beta[i]
            s = (1.0 if xo >= 0 else eo) / (1.0 + eo)
            u = abs(xo) * grow[i]
            cub = u + 0.75 * u * u + C3 * u * u * u
            if hasv:
                vo = v[o]
                r = vo * (w[o] - s)
                c = vo * (s * (1.0 - s))
                b3 = vo * (b * b * b)
                cub = vo * cub
            else:
                r = w[o] - s
                c = s * (1.0 - s)
                b3 = b * b * b
            gi[i] += r * xo
            bound[i] += cub
            if with_sums:
                sums[0, j] += r * b
                sums[1, j] += c * b * b
                sums[2, j] += b3

    @jit
    def k_gather_w(q, item, label, out):  # pragma: no cover - compiled
        for o in range(item.shape[0]):
            out[o] = q[item[o], label[o]]

    @jit
    def k_gather_wb(q, item, worker, label, v, beta, out, wb):  # pragma: no cover - compiled
        hasv = v.shape[0] > 0
        for o in range(item.shape[0]):
            i = item[o]
            wo = q[i, label[o]]
            out[o] = wo
            t = wo * beta[i]
            wb[worker[o]] += v[o] * t if hasv else t

    @jit
    def k_log_joint(item, worker, label, v, x, e, l1p, beta, lk, base, out, s_out):  # pragma: no cover - compiled
        hasv = v.shape[0] > 0
        with_s = s_out.shape[0] > 0
        for o in range(item.shape[0]):
            i = item[o]
            j = worker[o]
            b = beta[i]
            xo = x[o]
            eo = e[o]
            ls = min(-xo, 0.0) - l1p[o]
            if hasv:
                base[i] += (ls - lk) * v[o]
                out[i, label[o]] += (xo + lk) * v[o]
            else:
                base[i] += ls - lk
                out[i, label[o]] += xo + lk
            if with_s:
                s = (1.0 if xo >= 0 else eo) / (1.0 + eo)
                if hasv:
                    vo = v[o]
                    s_out[0, j] += vo * s * b
                    s_out[1, j] += vo * (s * (1.0 - s)) * b * b
                    s_out[2, j] += vo * (b * b * b)
                else:
                    s_out[0, j] += s * b
                    s_out[1, j] += s * (1.0 - s) * b * b
                    s_out[2, j] += b * b * b

    _COMPILED = {
        "x": k_x,
        "worker_sums": k_worker_sums,
        "alpha_trial": k_alpha_trial,
        "b_trial": k_b_trial,
        "gather_w": k_gather_w,
        "gather_wb": k_gather_wb,
        "log_joint": k_log_joint,
    }
    return _COMPILED
