"""The likelihood surface of a model over two of its parameters, and the path EM took across it.

For binary Dawid-Skene, one-coin and two-coin, pick two scalar parameters (e.g. worker j's sensitivity alpha_j
and specificity beta_j, or Gamma_j(1, 1) and Gamma_j(0, 0), two workers' accuracies, or the prevalence p); for
the lecture's scores model, sigma, pi_good or an item's mean mu_i. The others are held at their values in a
chosen snapshot. ``objective_surface`` evaluates the model's objective (log-likelihood + log prior)
on a grid; ``em_path`` reads the two parameters off every complete snapshot of a run. EM climbs the full
surface in all parameters at once, so the path seen in two coordinates is a projection: it climbs this slice
only approximately, and ends at the slice's maximum when the run has converged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.special import logsumexp

from crowdlab.engines.run import Run
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import safe_log
from crowdlab.models.dawid_skene import class_log_joint
from crowdlab.models.params import ClassParams
from crowdlab.models.scores import LOG_2PI, ScoreParams


@dataclass(frozen=True)
class Coord:
    """A scalar parameter: ``name`` and the worker (or item) it belongs to.

    Class models: "alpha", "beta" (two-coin), "theta" (one-coin), "g11", "g00" (binary Dawid-Skene:
    Gamma_m(1, 1) = P(says class 1 | true class 1) and Gamma_m(0, 0)), "p" (the prevalence pi_1). The lecture's
    scores model: "pi_good", "sigma" and "mu" (item ``worker``'s mean: the field holds the item index).
    """

    name: str
    worker: int = -1

    def label(self, data: Annotations) -> str:
        if self.name == "mu":
            return f"μ ({data.item_names[self.worker]})"
        if self.name in ("g11", "g00"):
            c = data.class_names[1 if self.name == "g11" else 0]
            return f"Γ({c}|{c}) ({data.worker_names[self.worker]})"
        sym = {"alpha": "α", "beta": "β", "theta": "θ", "p": "p", "pi_good": "π_good", "sigma": "σ"}[self.name]
        return sym if self.worker < 0 else f"{sym} ({data.worker_names[self.worker]})"

    @property
    def probability(self) -> bool:
        return self.name not in ("sigma", "mu")


SURFACE_KEYS = ("one_coin", "two_coin", "ds", "scores")


def coords_for(model_key: str, n_workers: int, n_items: int = 0) -> list[Coord]:
    """The scalar parameters a surface can be drawn over for this model (class models: two classes)."""
    if model_key == "two_coin":
        per = [Coord(n, m) for m in range(n_workers) for n in ("alpha", "beta")]
    elif model_key == "one_coin":
        per = [Coord("theta", m) for m in range(n_workers)]
    elif model_key == "ds":
        per = [Coord(n, m) for m in range(n_workers) for n in ("g11", "g00")]
    elif model_key == "scores":
        return [Coord("sigma"), Coord("pi_good"), *(Coord("mu", i) for i in range(n_items))]
    else:
        raise ValueError("surfaces are drawn for binary Dawid-Skene, one-coin, two-coin and the scores model.")
    return [*per, Coord("p")]


def get_value(model, params, c: Coord) -> float:
    if isinstance(params, ScoreParams):
        return float(params.mu[c.worker]) if c.name == "mu" else float(getattr(params, c.name))
    if c.name == "p":
        return float(params.pi[1])
    if c.name == "g11":
        return float(params.gamma[c.worker, 1, 1])
    if c.name == "g00":
        return float(params.gamma[c.worker, 0, 0])
    return float(params.extra[c.name][c.worker])


def with_value(model, params, values: dict[Coord, float]):
    """A copy of ``params`` with the given coordinates replaced (rebuilding Gamma through the model)."""
    if isinstance(params, ScoreParams):
        mu = params.mu.copy()
        kw = {}
        for c, v in values.items():
            if c.name == "mu":
                mu[c.worker] = v
            else:
                kw[c.name] = float(v)
        return replace(params, mu=mu, mu_z=None, **kw)  # mu_z follows the new mu
    p = float(params.pi[1])
    extra = {k: np.array(v, dtype=np.float64, copy=True) for k, v in params.extra.items()}
    gamma = None
    for c, v in values.items():
        if c.name == "p":
            p = v
        elif c.name in ("g11", "g00"):
            gamma = params.gamma.copy() if gamma is None else gamma
            k = 1 if c.name == "g11" else 0
            gamma[c.worker, k, k] = v
            gamma[c.worker, 1 - k, k] = 1.0 - v
        else:
            extra[c.name][c.worker] = v
    if "theta" in extra:
        return model.params_from(np.array([1 - p, p]), extra["theta"])
    if "alpha" in extra:
        return model.params_from(p, extra["alpha"], extra["beta"])
    return ClassParams(pi=np.array([1 - p, p]), gamma=params.gamma if gamma is None else gamma, extra=params.extra)


def coord_range(run: Run, c: Coord, upto: int | None = None) -> tuple[float, float]:
    """The grid range of a coordinate: [0.005, 0.995] for a probability; for sigma, from a quarter of the
    smallest to 1.5 times the largest value on the run's path (within the score range); for an item mean, the
    score range."""
    if c.probability:
        return 0.005, 0.995
    snaps = [s for s in run.snapshots[: None if upto is None else upto + 1] if s.kind in ("init", "M")]
    vals = np.array([get_value(run.model, s.params, c) for s in snaps])
    p = snaps[-1].params
    width = p.high - p.low
    if c.name == "mu":
        return p.low, p.high
    lo = max(float(vals.min()) / 4, 1e-3 * width)
    return lo, max(min(float(vals.max()) * 1.5, width), 2 * lo)


def objective_surface(
    data: Annotations,
    model,
    params: ClassParams,
    x: Coord,
    y: Coord,
    n: int = 41,
    lo: float = 0.005,
    hi: float = 0.995,
    *,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    xs: np.ndarray | None = None,
    ys: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xs, ys, Z) with Z[iy, ix] = log p(x | theta with x = xs[ix], y = ys[iy]) (+ log prior).

    The grid: ``xs``/``ys`` when given, else ``n`` points over ``x_range``/``y_range`` (default [lo, hi]).

    Vectorised over the grid: only the chosen workers' terms of the per-item log-joint (and log pi, when the
    prevalence is a coordinate) change, so Z is the base log-joint plus those terms for every grid point at once,
    then a logsumexp over classes and a sum over the affected items (in chunks of grid points).
    """
    if x == y:
        raise ValueError("pick two different parameters.")
    xs = np.linspace(*(x_range or (lo, hi)), n) if xs is None else np.asarray(xs, dtype=np.float64)
    ys = np.linspace(*(y_range or (lo, hi)), n) if ys is None else np.asarray(ys, dtype=np.float64)
    gx, gy = np.meshgrid(xs, ys)  # [iy, ix]
    if isinstance(params, ScoreParams):
        Z = _scores_surface(data, model, params, x, y, gx.ravel(), gy.ravel())
        return xs, ys, Z.reshape(ys.size, xs.size)
    grids = [with_value(model, params, {x: a, y: b}) for a, b in zip(gx.ravel(), gy.ravel())]
    K = data.n_classes
    workers = sorted({c.worker for c in (x, y) if c.worker >= 0})
    touches_p = any(c.name == "p" for c in (x, y))
    base = class_log_joint(data, params.pi, params.gamma)  # (N, K)
    X = data.label_counts
    rows = np.arange(data.n_items)
    if not touches_p:  # only items labelled by the chosen workers change
        cols = np.concatenate([np.arange(w * K, (w + 1) * K) for w in workers])
        rows = np.unique(X[:, cols].nonzero()[0])
    const = float(logsumexp(np.delete(base, rows, axis=0), axis=1).sum()) if rows.size < data.n_items else 0.0
    lj = base[rows]
    for w in workers:  # remove the current terms of the chosen workers
        lj = lj - np.asarray(X[rows][:, w * K : (w + 1) * K] @ safe_log(params.gamma[w]))
    if touches_p:
        lj = lj - safe_log(params.pi)[None, :]
    Z = np.empty(len(grids))
    chunk = max(1, 4_000_000 // max(1, rows.size * K))
    for g0 in range(0, len(grids), chunk):
        part = grids[g0 : g0 + chunk]
        add = np.zeros((len(part), rows.size, K))
        for w in workers:
            Xw = np.asarray(X[rows][:, w * K : (w + 1) * K].todense())  # (R, K) counts of worker w's labels
            logg = np.stack([safe_log(p.gamma[w]) for p in part])  # (G, K_said, K_true)
            add += np.einsum("rs,gsk->grk", Xw, logg)
        if touches_p:
            add += np.stack([safe_log(p.pi) for p in part])[:, None, :]
        Z[g0 : g0 + len(part)] = _lse_last(lj[None] + add).sum(axis=1)
    Z += const + np.array([model.log_prior(p) for p in grids])
    return xs, ys, Z.reshape(ys.size, xs.size)


def _scores_surface(data: Annotations, model, params: ScoreParams, x: Coord, y: Coord, vx, vy) -> np.ndarray:
    """The lecture model's objective sum_a log[(1 - pi_good) prod b + pi_good prod N(s_ia; mu_i, sigma)] (+ log
    prior) at every grid point: per annotator, only the sum of squared residuals SS_a depends on the item means,
    so SS_a is the current one corrected on the scores of the (at most two) items on the axes."""
    G, M = vx.size, data.n_workers
    vals = {x: vx, y: vy}
    pi = vals.get(Coord("pi_good"), np.full(G, params.pi_good))
    sigma = vals.get(Coord("sigma"), np.full(G, params.sigma))
    resid = data.value - params.mu[data.item]
    ss = np.broadcast_to(np.bincount(data.worker, weights=resid * resid, minlength=M), (G, M)).copy()
    for c in (x, y):
        if c.name != "mu":
            continue
        obs = np.flatnonzero(data.item == c.worker)
        s_obs, a_obs = data.value[obs], data.worker[obs]
        onehot = np.zeros((obs.size, M))
        onehot[np.arange(obs.size), a_obs] = 1.0
        old = (s_obs - params.mu[c.worker]) ** 2
        new = (s_obs[None, :] - vals[c][:, None]) ** 2  # (G, n_obs)
        ss += (new - old[None, :]) @ onehot
    n_a = data.labels_per_worker.astype(np.float64)
    good = -0.5 * ss / sigma[:, None] ** 2 - n_a[None, :] * (np.log(sigma)[:, None] + 0.5 * LOG_2PI)
    bad = -n_a * np.log(params.high - params.low)
    Z = np.logaddexp(safe_log(1.0 - pi)[:, None] + bad[None, :], safe_log(pi)[:, None] + good).sum(axis=1)
    if model.has_prior:
        Z = Z + np.array([model.log_prior(replace(params, pi_good=float(v))) for v in pi])
    return Z


def _lse_last(a: np.ndarray) -> np.ndarray:
    """logsumexp over the last axis (a ufunc pair for two classes; max-shifted otherwise)."""
    if a.shape[-1] == 2:
        return np.logaddexp(a[..., 0], a[..., 1])
    m = a.max(axis=-1)
    return m + np.log(np.exp(a - m[..., None]).sum(axis=-1))


def em_path(run: Run, x: Coord, y: Coord) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xs, ys, snapshot indices) of the two coordinates at the init and after every M-step."""
    snaps = [s for s in run.snapshots if s.kind in ("init", "M")]
    xs = np.array([get_value(run.model, s.params, x) for s in snaps])
    ys = np.array([get_value(run.model, s.params, y) for s in snaps])
    return xs, ys, np.array([s.index for s in snaps])
