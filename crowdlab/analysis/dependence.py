"""Do the workers err independently given the truth? A check of every pair after any class model.

Every class model in crowdlab assumes conditional independence (CI): given an item's true class, its workers'
labels are independent. Workers who copy each other (a clique sharing one answer key, LLM judges sharing training
data and prompts) break it, and a model that assumes it mistakes their agreement for accuracy.

The check (for every pair of workers a, b who labelled at least ``min_shared`` items in common):

- the truth distribution of each shared item n *without the pair*: log w_nk = log pi_k + sum over the item's
  other cells of log p(labels | k) + const, the log joint with the pair's own cells left out (a leave-pair-out
  posterior: the pair's agreement is not used to predict itself). It is computed from the log joint, never as
  q_n / (p(a's labels | k) p(b's labels | k)): where q_nk has underflowed to 0 and the pair's own Gamma for k is 0,
  the floors inside the two logs cancel and a class the other workers rule out gets a weight of order one (issue
  38: 224 of 1,770 independent pairs flagged on one crowd). Items whose class is known (``known``) keep it. For
  sequence and graph models the neighbours' evidence is not used (the item's prior is pi);
- the joint label table CI predicts: E_ab(k1, k2) = sum_n sum_k w_nk Gamma_a(k1, k) Gamma_b(k2, k) (the fitted
  confusion columns), beside the observed one O_ab(k1, k2) = sum_n f_an(k1) f_bn(k2) (f: the share of a worker's
  labels on n that are k1; one label each: an indicator);
- the statistic: the number of shared items on which the pair agree, against its distribution under CI given the
  fitted model: a sum of independent Bernoulli(e_n) with e_n = sum_k w_nk sum_k' Gamma_a(k', k) Gamma_b(k', k), a
  Poisson-binomial. The one-sided p-value P(agreements >= observed) is exact (the Poisson-binomial's
  distribution by recursion) for pairs with at most ``EXACT_MAX`` shared items and one label each per item; else a
  normal approximation with continuity correction. Copying raises agreement, so the test is one-sided.
- flagged: Holm's step-down adjustment over all tested pairs at ``level`` (family-wise: a crowd without copying
  gets any flag with probability at most ``level`` when the model is right; measured: see tests).
- the size of the excess: kappa_ab = (O - E) / (S - E) over the S shared items when O >= E, (O - E) / E below
  it: a chance-corrected agreement in [-1, 1] whose "chance" is the model's own CI prediction (0: as CI predicts;
  1: they always agree; -1: they never agree where CI predicts agreement).

What it does not account for: the uncertainty of the fitted Gamma (the parameters are taken as known), and a
clique large enough to be the model's idea of the truth: a fitted Dawid-Skene then explains the clique's agreement
as accuracy, and the excess shows up between the workers outside the clique instead (they agree with each other
more than their low fitted accuracy predicts). Read the heatmap with the model's fitted accuracies beside it.

Effective number of independent annotators (:func:`effective_annotators`):

- ``eigen``: the participation ratio of the eigenvalues lambda of the residual correlation matrix R (R_aa = 1,
  R_ab = kappa_ab clipped to [0, 1] for the tested pairs, 0 otherwise): M_eff = (sum lambda)^2 / sum lambda^2
  (Bretherton et al. 1999's effective number of independent variables). M independent workers give M; M exact
  copies give 1; two copies and one independent worker 1.8. (Li & Ji 2005's count of eigenvalues does not fall
  for a clique with kappa 0.3: its eigenvalues 1.9, 0.7, 0.7, 0.7 count as 4.)
- ``kish``: Kish's effective number (sum w)^2 / sum w^2 with w_m = worker m's information, its number of labels
  times the mutual information (nats) between one of its labels and the true class under the fitted model:
  unequal informativeness, independence assumed.
- ``weighted``: both at once, (sum w)^2 / (w' R w): Kish's formula with the correlation (the variance of a
  weighted vote of correlated workers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from crowdlab.io.annotations import Annotations

MIN_SHARED = 10  # pairs with fewer shared items are not tested
EXACT_MAX = (
    500  # shared items up to which the Poisson-binomial tail is computed exactly (then: normal, continuity-corrected)
)
MAX_INCIDENCES = 20_000_000  # (item, pair) incidences the check will build (memory: about 100 bytes each)
LEVEL = 0.05


@dataclass(frozen=True, eq=False)
class DependenceReport:
    """The pairwise check. Per tested pair (arrays of length P, pairs a < b): ``a``, ``b`` (worker codes),
    ``shared``, ``observed`` and ``expected`` agreements, ``kappa`` (excess agreement, chance = CI's prediction),
    ``z``, ``p_value`` (one-sided), ``p_holm`` and ``flagged``, ``exact`` (whether the p-value is exact).
    ``kappa_matrix`` (M, M): kappa for tested pairs, NaN elsewhere. ``effective``: :func:`effective_annotators`'s
    dict (empty when no pair was tested)."""

    worker_names: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    shared: np.ndarray
    observed: np.ndarray
    expected: np.ndarray
    kappa: np.ndarray
    z: np.ndarray
    p_value: np.ndarray
    p_holm: np.ndarray
    flagged: np.ndarray
    exact: np.ndarray
    kappa_matrix: np.ndarray
    effective: dict = field(default_factory=dict)
    level: float = LEVEL
    min_shared: int = MIN_SHARED

    @property
    def n_tested(self) -> int:
        return int(self.a.size)

    @property
    def n_flagged(self) -> int:
        return int(self.flagged.sum())

    def frame(self, top: int | None = None):
        """The pairs as a DataFrame, most likely copying first (smallest p-value, then largest kappa)."""
        import pandas as pd

        order = np.lexsort((-self.kappa, self.p_value))
        if top is not None:
            order = order[:top]
        names = np.asarray(self.worker_names, dtype=object)
        return pd.DataFrame(
            {
                "worker a": names[self.a[order]],
                "worker b": names[self.b[order]],
                "shared items": self.shared[order],
                "agree": self.observed[order],
                "agree if independent": self.expected[order],
                "excess (kappa)": self.kappa[order],
                "p-value": self.p_value[order],
                "Holm p": self.p_holm[order],
                "flagged": self.flagged[order],
            }
        )

    def summary(self) -> str:
        """One line: pairs tested, flagged, and the effective numbers."""
        e = self.effective
        eff = (
            f"effective independent annotators: {e['eigen']:.1f} of {e['n_workers']} (residual-correlation "
            f"eigenvalues, participation ratio), Kish {e['kish']:.1f}, both {e['weighted']:.1f}"
            if e
            else ""
        )
        return (
            f"{self.n_tested} worker pairs with >= {self.min_shared} shared items tested for copying, "
            f"{self.n_flagged} flagged (Holm, level {self.level:g})" + (f"; {eff}" if eff else "")
        )

    def to_dict(self) -> dict:
        top = self.frame(top=20)
        return {
            "pairs_tested": self.n_tested,
            "pairs_flagged": self.n_flagged,
            "level": self.level,
            "min_shared": self.min_shared,
            "test": "one-sided Poisson-binomial test of the pair's agreements under conditional independence "
            "given the fitted model (leave-pair-out truth posterior), Holm-adjusted",
            "effective_annotators": {
                k: (float(v) if isinstance(v, float | np.floating) else v) for k, v in self.effective.items()
            },
            "top_pairs": [
                {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()} for row in top.to_dict("records")
            ],
        }


def _cells(data: Annotations):
    """The (item, worker) cells, sorted by item: item (C,), worker (C,) and response counts (C, R) (R = K, or K + the
    responses that are not classes, "can't tell")."""
    X = data.label_counts.tocoo()
    R, M = data.n_responses, data.n_workers
    n = X.row.astype(np.int64)
    m = X.col.astype(np.int64) // R
    k = X.col.astype(np.int64) % R
    key = n * M + m
    uniq, inv = np.unique(key, return_inverse=True)
    C = uniq.size
    counts = np.zeros((C, R))
    np.add.at(counts, (inv, k), X.data)
    return uniq // M, uniq % M, counts


def _log_joint(data: Annotations, pi: np.ndarray, gamma: np.ndarray, item, worker, counts):
    """(cell_ll (C, K), item_ll (N, K)): log p(cell's labels | k) per cell, and each item's log joint log pi_k + the
    sum of its cells' log p(labels | k). Gamma is floored at 1e-300 inside the log, as in the models; the floor of
    a pair's own cells cancels exactly when they are subtracted from the item's sum, so a class that the other
    workers rule out stays ruled out (a posterior q that has underflowed to 0 cannot say that: issue 38)."""
    log_g = np.log(np.maximum(gamma, 1e-300))  # (M, R, K)
    cell_ll = np.einsum("cr,crk->ck", counts, log_g[worker])
    item_ll = np.tile(np.log(np.maximum(pi, 1e-300)), (data.n_items, 1))
    if item.size:
        starts = np.flatnonzero(np.r_[True, item[1:] != item[:-1]])
        item_ll[item[starts]] += np.add.reduceat(cell_ll, starts, axis=0)
    return cell_ll, item_ll


def _checked_options(min_shared, level) -> tuple[int, float]:
    """``min_shared`` a whole number >= 1 and ``level`` a number strictly between 0 and 1, else ModelError."""
    from crowdlab.errors import ModelError

    if isinstance(min_shared, bool) or not isinstance(min_shared, int | np.integer) or min_shared < 1:
        raise ModelError(
            f"min_shared (the fewest items a pair of workers must share to be tested) must be a whole number of at "
            f"least 1, not {min_shared!r}."
        )
    ok = isinstance(level, int | float | np.integer | np.floating) and not isinstance(level, bool)
    if not ok or not 0.0 < float(level) < 1.0:
        raise ModelError(
            f"level (the family-wise error rate of the Holm-adjusted test) must be a number strictly between 0 "
            f"and 1, such as 0.05, not {level!r}."
        )
    return int(min_shared), float(level)


def _checked_params(data: Annotations, params, q, known):
    """(pi (K,), gamma (M, R, K), known (N,) or None), their shapes checked against the data (ModelError)."""
    from crowdlab.errors import ModelError

    gamma = np.asarray(params.gamma, dtype=np.float64)
    pi = np.asarray(params.pi, dtype=np.float64)
    N, M, K, R = data.n_items, data.n_workers, data.n_classes, data.n_responses
    if gamma.shape != (M, R, K) or pi.shape != (K,):
        raise ModelError(
            f"The dependence check needs confusion matrices of shape ({M}, {R}, {K}) and a class prior of {K} "
            f"classes for these data; the parameters have {gamma.shape} and {pi.shape}."
        )
    if q is not None:
        q = np.asarray(getattr(q, "q", q))
        if q.shape != (N, K):
            raise ModelError(f"The posterior has shape {q.shape}; these data need ({N}, {K}).")
    if known is not None:
        known = np.asarray(known, dtype=np.int64)
        if known.shape != (N,) or known.min(initial=-1) < -1 or known.max(initial=-1) >= K:
            raise ModelError(f"known must be {N} class codes from -1 (unknown) to {K - 1}.")
        if not (known >= 0).any():
            known = None
    return pi, gamma, known


def _kappa(O: np.ndarray, E: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Chance-corrected excess agreement in [-1, 1], chance = CI's prediction E: (O - E) / (S - E) above it (the
    share of the most the excess could be), (O - E) / E below it (the share of the most the shortfall could be)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        up = np.where(S - E > 1e-9, (O - E) / np.maximum(S - E, 1e-300), 0.0)
        down = np.where(E > 1e-9, (O - E) / np.maximum(E, 1e-300), 0.0)
    return np.clip(np.where(O >= E, up, down), -1.0, 1.0)


def _pair_incidences(item: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices (i, j), i < j, of every two cells of the same item (``item`` sorted)."""
    C = item.size
    starts = np.flatnonzero(np.r_[True, item[1:] != item[:-1]])
    size = np.diff(np.r_[starts, C])
    pos = np.arange(C) - np.repeat(starts, size)
    after = np.repeat(size, size) - pos - 1  # cells after this one in its item
    total = int(after.sum())
    if total > MAX_INCIDENCES:
        from crowdlab.errors import ModelError

        raise ModelError(
            f"The dependence check would compare {total:,} pairs of labels on shared items (more than "
            f"{MAX_INCIDENCES:,}); run it on a sample of the items."
        )
    i = np.repeat(np.arange(C), after)
    first = np.cumsum(after) - after
    j = i + 1 + (np.arange(total) - np.repeat(first, after))
    return i, j


def poisson_binomial_sf(p: np.ndarray, counts: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(X >= x) for X a sum of independent Bernoulli(p) per row: ``p`` (P, S) padded with zeros past ``counts``;
    the distribution by the usual recursion, all rows at once (O(P S^2))."""
    P, S = p.shape
    dist = np.zeros((P, S + 1))
    dist[:, 0] = 1.0
    for j in range(S):
        pj = p[:, j : j + 1]
        top = min(j + 1, S)
        new = dist[:, 1 : top + 1] * (1.0 - pj) + dist[:, :top] * pj
        dist[:, 0] *= 1.0 - pj[:, 0]
        dist[:, 1 : top + 1] = new
    cum = np.cumsum(dist[:, ::-1], axis=1)[:, ::-1]  # cum[:, t] = P(X >= t)
    xi = np.clip(np.ceil(x - 1e-9).astype(np.int64), 0, S)
    out = cum[np.arange(P), xi]
    out[x <= 0] = 1.0
    return np.minimum(out, 1.0)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values."""
    n = p.size
    if n == 0:
        return p.copy()
    order = np.argsort(p)
    adj = np.maximum.accumulate(np.minimum((n - np.arange(n)) * p[order], 1.0))
    out = np.empty(n)
    out[order] = adj
    return out


def _leave_pair_out(lw: np.ndarray, known: np.ndarray | None) -> np.ndarray:
    """Normalised weights from log weights (rows), one-hot at the class of the rows whose truth is ``known``."""
    lw = lw - lw.max(axis=1, keepdims=True)
    w = np.exp(lw)
    w /= w.sum(axis=1, keepdims=True)
    if known is not None:
        rows = np.flatnonzero(known >= 0)
        w[rows] = 0.0
        w[rows, known[rows]] = 1.0
    return w


def dependence_check(
    data: Annotations,
    params,
    q: np.ndarray | None = None,
    *,
    min_shared: int = MIN_SHARED,
    level: float = LEVEL,
    known: np.ndarray | None = None,
) -> DependenceReport:
    """The pairwise check of conditional independence after a class model (see the module docstring).

    ``params``: the fitted parameters (anything with ``pi`` (K,) and ``gamma`` (M, R, K), house convention; R = K,
    or K + the responses that are not classes); ``q``: the fitted class posterior (N, K), checked for its shape
    only: the leave-pair-out weights come from the log joint (log pi + every cell's log Gamma, minus the pair's
    cells), never from log q, whose underflowed entries cannot be divided by the pair's evidence. ``known``: (N,)
    class codes taken as the truth (-1: not known), e.g. semi-supervised EM's known items or the gold; a known
    item's leave-pair-out truth is its class. ``min_shared``: a whole number >= 1; ``level``: in (0, 1)
    (ModelError otherwise). Vectorised: one pass over every two labels of an item."""
    min_shared, level = _checked_options(min_shared, level)
    pi, gamma, known = _checked_params(data, params, q, known)
    M = data.n_workers
    item, worker, counts = _cells(data)
    cell_ll, item_ll = _log_joint(data, pi, gamma, item, worker, counts)
    n_lab = counts.sum(axis=1)
    f = counts / n_lab[:, None]
    single = n_lab == 1
    i, j = _pair_incidences(item)
    a, b = worker[i], worker[j]
    swap = a > b
    i, j = np.where(swap, j, i), np.where(swap, i, j)
    a, b = worker[i], worker[j]
    pair = a.astype(np.int64) * M + b
    n = item[i]
    w = _leave_pair_out(item_ll[n] - cell_ll[i] - cell_ll[j], None if known is None else known[n])
    uniq, pinv = np.unique(pair, return_inverse=True)
    pa, pb = uniq // M, uniq % M
    # G[p, k] = sum_k' Gamma_a(k', k) Gamma_b(k', k): P(agree | true class k) for pair p
    G = np.einsum("pak,pak->pk", gamma[pa], gamma[pb])
    e = np.einsum("ik,ik->i", w, G[pinv])
    o = np.einsum("ik,ik->i", f[i], f[j])
    P = uniq.size
    shared = np.bincount(pinv, minlength=P)
    O = np.bincount(pinv, weights=o, minlength=P)
    E = np.bincount(pinv, weights=e, minlength=P)
    V = np.bincount(pinv, weights=e * (1.0 - e), minlength=P)
    all_single = np.bincount(pinv, weights=(single[i] & single[j]).astype(float), minlength=P) == shared
    keep = shared >= min_shared
    idx = np.flatnonzero(keep)
    pa, pb, shared, O, E, V, all_single = pa[idx], pb[idx], shared[idx], O[idx], E[idx], V[idx], all_single[idx]
    remap = np.full(P, -1)
    remap[idx] = np.arange(idx.size)
    sel = remap[pinv] >= 0
    pid, e_sel = remap[pinv][sel], e[sel]
    from scipy.special import ndtr  # the normal's tail; scipy.stats takes 1-2 s to import (issue 30)

    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(V > 0, (O - E) / np.sqrt(V), 0.0)
        p_norm = np.where(V > 0, ndtr(-(O - E - 0.5) / np.sqrt(np.maximum(V, 1e-300))), 1.0)
    p_norm[(V <= 0) & (O > E + 1e-9)] = 0.0  # agreement where the model says it cannot happen
    p_val = p_norm.copy()
    exact = all_single & (shared <= EXACT_MAX)
    if exact.any():
        p_val[exact] = _exact_tails(pid, e_sel, shared, O, exact)
    p_val = np.clip(p_val, 0.0, 1.0)
    p_holm = holm(p_val)
    flagged = p_holm <= level
    kappa = _kappa(O, E, shared.astype(np.float64))
    km = np.full((M, M), np.nan)
    km[pa, pb] = kappa
    km[pb, pa] = kappa
    report = DependenceReport(
        tuple(data.worker_names),
        pa,
        pb,
        shared,
        O,
        E,
        kappa,
        z,
        p_val,
        p_holm,
        flagged,
        exact,
        km,
        level=level,
        min_shared=min_shared,
    )
    eff = effective_annotators(km, _information(data, pi, gamma)) if pa.size else {}
    object.__setattr__(report, "effective", eff)
    return report


def _exact_tails(pid: np.ndarray, e: np.ndarray, shared: np.ndarray, O: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Exact Poisson-binomial upper tails of the pairs marked ``exact``, in blocks of pairs of similar size."""
    order = np.argsort(pid, kind="stable")
    pid, e = pid[order], e[order]
    starts = np.searchsorted(pid, np.arange(shared.size))
    which = np.flatnonzero(exact)
    which = which[np.argsort(shared[which], kind="stable")]
    out = np.empty(which.size)
    pos = 0
    while pos < which.size:
        S = int(shared[which[pos]])
        block_n = max(1, min(which.size - pos, int(4_000_000 // max(S * S, 1))))
        blk = which[pos : pos + block_n]
        Smax = int(shared[blk].max())
        mat = np.zeros((blk.size, Smax))
        for r, p in enumerate(blk):
            mat[r, : shared[p]] = e[starts[p] : starts[p] + shared[p]]
        out[pos : pos + blk.size] = poisson_binomial_sf(mat, shared[blk], np.round(O[blk]))
        pos += blk.size
    res = np.empty(exact.sum())
    res[np.searchsorted(np.flatnonzero(exact), which)] = out
    return res


def _information(data: Annotations, pi: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """(M,) each worker's number of labels times the mutual information (nats) between one label and the class."""
    joint = gamma * pi[None, None, :]  # (M, K', K): P(label k', class k)
    marg = joint.sum(axis=2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(joint > 0, joint * np.log(joint / np.maximum(marg * pi[None, None, :], 1e-300)), 0.0)
    mi = np.maximum(t.sum(axis=(1, 2)), 0.0)
    n = np.bincount(data.worker, minlength=data.n_workers).astype(float)
    return n * mi


def effective_annotators(kappa_matrix: np.ndarray, weights: np.ndarray | None = None) -> dict:
    """The effective number of independent annotators (see the module docstring): ``eigen`` (the participation
    ratio of the residual correlation matrix's eigenvalues, Bretherton et al. 1999), ``kish`` and ``weighted``
    (when ``weights`` are given), ``n_workers``."""
    M = kappa_matrix.shape[0]
    R = np.nan_to_num(np.clip(kappa_matrix, 0.0, 1.0), nan=0.0)
    np.fill_diagonal(R, 1.0)
    lam = np.clip(np.linalg.eigvalsh(R), 0.0, None)
    eigen = float(lam.sum() ** 2 / (lam**2).sum())
    out = {"n_workers": int(M), "eigen": eigen, "eigenvalues": np.sort(lam)[::-1]}
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        s2 = float((w**2).sum())
        out["kish"] = float(w.sum() ** 2 / s2) if s2 > 0 else float("nan")
        wRw = float(w @ R @ w)
        out["weighted"] = float(w.sum() ** 2 / wRw) if wRw > 0 else float("nan")
    return out


def pair_tables(
    data: Annotations, params, q: np.ndarray | None, a: int, b: int, *, known: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(observed, expected) (R, R) joint response tables of workers a and b on their shared items: rows a's
    response, columns b's (R = K, or K + the responses that are not classes); expected under CI with the
    leave-pair-out truth posterior from the log joint, as :func:`dependence_check` computes it (``q`` is checked
    for its shape only; ``known`` as there)."""
    pi, gamma, known = _checked_params(data, params, q, known)
    item, worker, counts = _cells(data)
    cell_ll, item_ll = _log_joint(data, pi, gamma, item, worker, counts)
    ia, ib = np.flatnonzero(worker == a), np.flatnonzero(worker == b)
    shared, pa, pb = np.intersect1d(item[ia], item[ib], assume_unique=True, return_indices=True)
    ia, ib = ia[pa], ib[pb]
    w = _leave_pair_out(item_ll[shared] - cell_ll[ia] - cell_ll[ib], None if known is None else known[shared])
    fa = counts[ia] / counts[ia].sum(axis=1, keepdims=True)
    fb = counts[ib] / counts[ib].sum(axis=1, keepdims=True)
    obs = fa.T @ fb
    exp = np.einsum("nk,ik,jk->ij", w, gamma[a], gamma[b])
    return obs, exp


def run_known(run) -> np.ndarray | None:
    """The classes a run's model takes as known (semi-supervised EM: ``known=``, ``reveal=``), None when none."""
    model = getattr(run, "model", None)
    if model is None or not getattr(model, "semi_supervised", False):
        return None
    return model.known_classes(run.data)


def dependence(run, *, min_shared: int = MIN_SHARED, level: float = LEVEL) -> DependenceReport:
    """:func:`dependence_check` of a fitted class-model run at its cursor (``crowdlab.dependence(run)``); the items
    the run's model takes as known (semi-supervised EM) keep their class."""
    from crowdlab.errors import ModelError

    min_shared, level = _checked_options(min_shared, level)
    if run.data.is_continuous or not hasattr(run.params, "gamma"):
        raise ModelError(
            "The dependence check needs a class model with confusion matrices (e.g. ds, ibcc, ebcc); "
            f"{run.model.info.title} has none."
        )
    return dependence_check(
        run.data, run.params, run.posterior, min_shared=min_shared, level=level, known=run_known(run)
    )
