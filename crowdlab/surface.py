"""The likelihood surface of a binary model over two parameters, and the path EM took across it.

For the one-coin and two-coin models with K = 2, pick two scalar parameters (e.g. worker j's sensitivity
alpha_j and specificity beta_j, or two workers' accuracies, or the prevalence p); the others are held at their
values in a chosen snapshot. ``objective_surface`` evaluates the model's objective (log-likelihood + log prior)
on a grid; ``em_path`` reads the two parameters off every complete snapshot of a run. EM climbs the full
surface in all parameters at once, so the path seen in two coordinates is a projection: it climbs this slice
only approximately, and ends at the slice's maximum when the run has converged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from crowdlab.data import Annotations
from crowdlab.em import Run
from crowdlab.models.base import safe_log
from crowdlab.models.dawid_skene import class_log_joint
from crowdlab.models.params import ClassParams


@dataclass(frozen=True)
class Coord:
    """A scalar parameter: ``name`` in {"alpha", "beta", "theta", "p"} and the worker it belongs to."""

    name: str
    worker: int = -1

    def label(self, data: Annotations) -> str:
        sym = {"alpha": "α", "beta": "β", "theta": "θ", "p": "p"}[self.name]
        return sym if self.worker < 0 else f"{sym} ({data.worker_names[self.worker]})"


def coords_for(model_key: str, n_workers: int) -> list[Coord]:
    """The scalar parameters a surface can be drawn over for this model."""
    if model_key == "two_coin":
        per = [Coord(n, m) for m in range(n_workers) for n in ("alpha", "beta")]
    elif model_key == "one_coin":
        per = [Coord("theta", m) for m in range(n_workers)]
    else:
        raise ValueError("surfaces are drawn for the binary one-coin and two-coin models.")
    return [*per, Coord("p")]


def get_value(model, params: ClassParams, c: Coord) -> float:
    if c.name == "p":
        return float(params.pi[1])
    return float(params.extra[c.name][c.worker])


def with_value(model, params: ClassParams, values: dict[Coord, float]) -> ClassParams:
    """A copy of ``params`` with the given coordinates replaced (rebuilding Gamma through the model)."""
    p = float(params.pi[1])
    extra = {k: np.array(v, dtype=np.float64, copy=True) for k, v in params.extra.items()}
    for c, v in values.items():
        if c.name == "p":
            p = v
        else:
            extra[c.name][c.worker] = v
    if "theta" in extra:
        return model.params_from(np.array([1 - p, p]), extra["theta"])
    return model.params_from(p, extra["alpha"], extra["beta"])


def objective_surface(
    data: Annotations,
    model,
    params: ClassParams,
    x: Coord,
    y: Coord,
    n: int = 41,
    lo: float = 0.005,
    hi: float = 0.995,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xs, ys, Z) with Z[iy, ix] = log p(x | theta with x = xs[ix], y = ys[iy]) (+ log prior).

    Vectorised over the grid: only the chosen workers' terms of the per-item log-joint (and log pi, when the
    prevalence is a coordinate) change, so Z is the base log-joint plus those terms for every grid point at once,
    then a logsumexp over classes and a sum over the affected items (in chunks of grid points).
    """
    if x == y:
        raise ValueError("pick two different parameters.")
    xs = np.linspace(lo, hi, n)
    ys = np.linspace(lo, hi, n)
    gx, gy = np.meshgrid(xs, ys)  # [iy, ix]
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
    return xs, ys, Z.reshape(n, n)


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
