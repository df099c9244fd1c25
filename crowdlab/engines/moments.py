"""Moment matching for crowd labels (Traganitis & Giannakis: Sec. 3.2 i.i.d. items, Sec. 4.2 Markov chains).

Response vectors: worker m's answer on item n is the one-hot f_m(x_n) = e_k' (Traganitis & Giannakis Sec. 3.2); a
worker who labelled the same item several times contributes its normalised counts. With labels missing, every
moment is the average over the items on which *all* the workers involved answered:

- first order (eq. (13)):  mu_m = E[f_m] = Gamma_m pi, averaged over the n_m items worker m labelled;
- second order (eq. (14)): S_mm' = E[f_m f_m'^T] = Gamma_m diag(pi) Gamma_m'^T for m != m', over the n_mm' items
  both labelled;
- third order (eqs. (15)-(16)): T_mm'm'' = E[f_m o f_m' o f_m''] = [[Gamma_m diag(pi), Gamma_m', Gamma_m'']]_K for
  distinct m, m', m'', over the n_mm'm'' items all three labelled.

:func:`moment_estimates` fits pi and every Gamma_m by minimising the weighted version of g in eq. (17),

    g = sum_m w_m ||mu_m - Gamma_m pi||^2 + sum_{m<m'} w_mm' ||S_mm' - Gamma_m Pi Gamma_m'^T||_F^2
        + sum_{m<m'<m''} w_mm'm'' ||T_mm'm'' - [[Gamma_m Pi, Gamma_m', Gamma_m'']]_K||_F^2,

with weights w = (overlap count) / N: each moment counts in proportion to the number of items it was averaged
over (roughly its inverse sampling variance), moments with no overlap drop out, and with every label present all
weights are 1, which is eq. (17) exactly. The first- and second-order terms use all workers (only the pairs that
share items, held as a sparse pair list); the third-order terms use only the ``max_workers`` most active workers
(fewer for many classes: ``THIRD_ORDER_CELLS``), because the tensor grows as (M K)^3. The other workers are still
identified through their second-order terms with the rest of the crowd (S_mm' = Gamma_m (Pi Gamma_m'^T) is linear
in Gamma_m once the others are known).

Optimisation: projected gradient on (pi, Gamma_1..M) jointly, every column projected onto the probability
simplex (vectorised sort-based Euclidean projection, :func:`project_simplex`), alternating Barzilai-Borwein trial
steps and
an Armijo backtracking line search, so g never increases (the history is returned by :func:`fit_moments`). It
stops when g changes by less than ``tol`` (relative, default 1e-9) or after ``max_iter`` iterations. The start is
the Dawid-Skene M-step on the soft majority vote, which also fixes the class permutation (Traganitis & Giannakis As2:
workers better than random); after fitting, the class permutation that maximises the summed diagonal of the
Gammas (linear_sum_assignment) is applied (g is invariant to it).

:func:`transition_estimate` recovers the transition matrix of Markov-chain labels from the lagged cross moments
S~_mm' = E[f_m(x_n) f_m'(x_{n-1})^T] = Gamma_m A Gamma_m'^T with A = T diag(pi) (eq. (21)) by the convex
least-squares problem (22) over C_S = {A >= 0, 1^T A 1 = 1} and T = A diag(pi)^-1, pi = 1^T A (eq. (23)).
:func:`hmm_moment_params` is Algorithm 2, lines 3-4.

Conventions: ``gamma[m, k_said, k_true]`` (columns = true class, each sums to 1), ``T[k_new, k_old]``.
Everything is vectorised: the moments are sparse products of the count matrix X; no Python loop runs over items,
observations, worker pairs or triples (only over optimisation iterations).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import normalise_columns
from crowdlab.models.dawid_skene import expected_counts
from crowdlab.models.hmm import HMMParams, layout
from crowdlab.models.majority import vote_fractions
from crowdlab.models.params import ClassParams

__all__ = [
    "MomentFit",
    "Moments",
    "fit_moments",
    "hmm_moment_params",
    "lagged_moments",
    "moment_estimates",
    "moment_objective",
    "population_moments",
    "project_simplex",
    "sample_moments",
    "transition_estimate",
]


# ------------------------------------------------------------------ simplex projection
def project_simplex(v: np.ndarray, axis: int = -1) -> np.ndarray:
    """Euclidean projection of every vector along ``axis`` onto the probability simplex {x >= 0, sum x = 1}.

    The sort-based algorithm (Held et al. 1974; Duchi et al. 2008): with u sorted decreasingly and
    rho = max{j : u_j - (sum_{i<=j} u_i - 1) / j > 0}, the projection is max(v - theta, 0) for
    theta = (sum_{i<=rho} u_i - 1) / rho. Vectorised over all the other axes.
    """
    v = np.asarray(v, dtype=np.float64)
    x = np.moveaxis(v, axis, -1)
    K = x.shape[-1]
    u = -np.sort(-x, axis=-1)
    css = np.cumsum(u, axis=-1) - 1.0
    j = np.arange(1, K + 1, dtype=np.float64)
    rho = np.count_nonzero(u - css / j > 0, axis=-1)  # the condition holds on a prefix; rho >= 1 always
    rho = np.maximum(rho, 1)
    theta = np.take_along_axis(css, (rho - 1)[..., None], axis=-1) / rho[..., None]
    return np.moveaxis(np.maximum(x - theta, 0.0), -1, axis)


def _project_params(pi: np.ndarray, gamma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pi onto the simplex, every column of every Gamma_m onto the simplex (the set C of eq. (17))."""
    return project_simplex(pi), project_simplex(gamma, axis=1)


# ------------------------------------------------------------------ sample moments
@dataclass(frozen=True, eq=False)
class Moments:
    """Sample moments with their weights (overlap count / N).

    ``mu`` (M, K), ``w1`` (M,): eq. (13). ``pairs`` (P, 2) worker pairs a < b sharing items, ``S`` (P, K, K) with
    S[p] = mean of f_a f_b^T, ``w2`` (P,): eq. (14). ``triples`` (Q, 3) worker triples a < b < c among
    ``workers3`` (the most active workers) sharing items, ``T3`` (Q, K, K, K), ``w3`` (Q,): eqs. (15)-(16).
    """

    n_items: int
    n_workers: int
    n_classes: int
    mu: np.ndarray
    w1: np.ndarray
    pairs: np.ndarray
    S: np.ndarray
    w2: np.ndarray
    workers3: np.ndarray
    triples: np.ndarray
    T3: np.ndarray
    w3: np.ndarray


def _responses(data: Annotations) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """(F, O): F (N, M K) response vectors f_m(x_n) (one-hot, or normalised counts for repeated labels) and
    O (N, M) the 0/1 indicator that worker m labelled item n."""
    if data.is_continuous:
        raise ModelError("moment matching applies to class labels")
    X = data.label_counts.tocsr()
    X.sum_duplicates()
    M, K, N = data.n_workers, data.n_classes, data.n_items
    rows = np.repeat(np.arange(N, dtype=np.int64), np.diff(X.indptr))
    key = rows * M + X.indices.astype(np.int64) // K
    ukey, inv = np.unique(key, return_inverse=True)
    tot = np.bincount(inv, weights=X.data)
    F = sp.csr_matrix((X.data / tot[inv], X.indices.copy(), X.indptr.copy()), shape=X.shape)
    O = sp.csr_matrix((np.ones(ukey.size), (ukey // M, ukey % M)), shape=(N, M))
    return F, O


_CHUNK = 1 << 21


def _combos3(r: int) -> np.ndarray:
    """(C(r, 3), 3) all index triples i < j < k below r."""
    i, j, k = np.meshgrid(np.arange(r), np.arange(r), np.arange(r), indexing="ij")
    keep = (i < j) & (j < k)
    return np.stack([i[keep], j[keep], k[keep]], axis=1)


def _third_order_bins(Fs: sp.csr_matrix, D: int) -> tuple[np.ndarray, np.ndarray]:
    """Sums over items of Fs[n, a] Fs[n, b] Fs[n, c] for column triples a < b < c of the same row, as
    (keys, sums) with key = (a D + b) D + c, D = number of columns.

    The non-zeros of each row are taken three at a time; rows with the same number of non-zeros share one table
    of position triples, so the only loops are over the distinct row lengths (at most D) and over chunks of
    about ``_CHUNK`` triples, never over single items.
    """
    Fs = Fs.tocsr()
    Fs.sort_indices()
    nnz_row = np.diff(Fs.indptr)
    cols = Fs.indices.astype(np.int64)
    ones = bool(np.all(Fs.data == 1.0))
    cube = D**3 <= 1 << 23
    keys_all, vals_all = [], []
    total = np.zeros(D**3) if cube else None
    for r in np.unique(nnz_row[nnz_row >= 3]):
        combos = _combos3(int(r))
        rows = Fs.indptr[:-1][nnz_row == r]
        chunk = max(1, _CHUNK // combos.shape[0])  # bounded memory: about _CHUNK triples at a time
        for lo in range(0, rows.size, chunk):
            pos = rows[lo : lo + chunk, None, None] + combos[None, :, :]  # (rows, C(r, 3), 3)
            c = cols[pos]
            key = ((c[..., 0] * D + c[..., 1]) * D + c[..., 2]).ravel()
            val = None if ones else Fs.data[pos].prod(axis=-1).ravel()
            if cube:
                total += np.bincount(key, weights=val, minlength=D**3)
            else:
                keys_all.append(key)
                vals_all.append(np.ones(key.size) if val is None else val)
    if cube:
        keys = np.flatnonzero(total)
        return keys, total[keys]
    if not keys_all:
        return np.zeros(0, np.int64), np.zeros(0)
    keys, inv = np.unique(np.concatenate(keys_all), return_inverse=True)
    return keys, np.bincount(inv.ravel(), weights=np.concatenate(vals_all))


def _pair_blocks(SS: sp.spmatrix, C: sp.spmatrix, K: int, strict: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Worker pairs (a, b) with C[a, b] > 0 (a < b when ``strict``) and their K x K blocks of SS / C."""
    C = C.tocoo()
    keep = C.data > 0
    if strict:
        keep &= C.row < C.col
    a, b, cnt = C.row[keep].astype(np.int64), C.col[keep].astype(np.int64), C.data[keep]
    M = C.shape[0]
    order = np.argsort(a * M + b)
    a, b, cnt = a[order], b[order], cnt[order]
    pkey = a * M + b
    blocks = np.zeros((pkey.size, K, K))
    SS = SS.tocoo()
    ea, eb = SS.row // K, SS.col // K
    ekey = ea.astype(np.int64) * M + eb
    pos = np.searchsorted(pkey, ekey)
    pos_c = np.minimum(pos, max(pkey.size - 1, 0))
    hit = (pos < pkey.size) & (pkey[pos_c] == ekey) if pkey.size else np.zeros(ekey.size, bool)
    np.add.at(blocks, (pos[hit], SS.row[hit] % K, SS.col[hit] % K), SS.data[hit])
    blocks /= cnt[:, None, None]
    return np.stack([a, b], axis=1), blocks, cnt.astype(np.float64)


# the most third-order cells (worker triples x K^4, the work of one evaluation of g's third-order part and its
# gradient): with K = 9 classes and 20 workers sharing items that was 649 triples x 6,561 = 4.3e6 cells, 0.1 s an
# evaluation and about 40 s for the fit, before GLAD's first step (a sparse problem of 213 labels, issue 28)
THIRD_ORDER_CELLS = 1_000_000


def third_order_workers(n_classes: int, max_workers: int) -> int:
    """How many of the most active workers enter the third-order moments: at most ``max_workers``, and few enough
    that every triple of them together stays within :data:`THIRD_ORDER_CELLS` (C(W, 3) K^4 cells); 20 for K <= 5."""
    W = max(int(max_workers), 0)
    while W >= 3 and W * (W - 1) * (W - 2) // 6 * n_classes**4 > THIRD_ORDER_CELLS:
        W -= 1
    return W


def _top_workers(data: Annotations, max_workers: int) -> np.ndarray:
    """The ``max_workers`` workers with the most labels (ties: lower code first), sorted by code."""
    counts = data.labels_per_worker
    order = np.lexsort((np.arange(counts.size), -counts))
    return np.sort(order[: max(int(max_workers), 0)])


def sample_moments(data: Annotations, *, max_workers: int = 20) -> Moments:
    """Sample counterparts of eqs. (13)-(16) with missing labels handled (see the module docstring).

    First and second order over all workers (sparse products F^T 1, F^T F, O^T O); third order over the
    ``max_workers`` most active workers only, summing f_a o f_b o f_c over the non-zeros of each item taken three
    at a time (C(labels_n, 3) work per item), distinct workers only; fewer than ``max_workers`` when K is large
    (:func:`third_order_workers`: every evaluation of g costs C(W, 3) K^4). Repeated labels of one worker on one item
    enter as normalised counts (each (item, worker) response sums to one).
    """
    F, O = _responses(data)
    N, M, K = data.n_items, data.n_workers, data.n_classes
    n1 = np.asarray(O.sum(axis=0)).ravel()
    mu = np.asarray(F.sum(axis=0)).reshape(M, K) / np.maximum(n1, 1.0)[:, None]
    pairs, S, n2 = _pair_blocks(F.T @ F, O.T @ O, K, strict=True)
    sel = _top_workers(data, third_order_workers(K, max_workers))
    W = sel.size
    triples = np.zeros((0, 3), dtype=np.int64)
    T3 = np.zeros((0, K, K, K))
    n3 = np.zeros(0)
    if W >= 3:
        D = W * K
        cols = (sel[:, None] * K + np.arange(K)[None, :]).ravel()
        keys, sums = _third_order_bins(F[:, cols], D)
        ca, cb, cc = keys // (D * D), keys // D % D, keys % D
        wa, wb, wc = ca // K, cb // K, cc // K
        keep = (wa < wb) & (wb < wc)  # distinct workers only (repeated labels give same-worker bins)
        tkey = (wa[keep] * W + wb[keep]) * W + wc[keep]
        present = np.bincount(tkey, minlength=W**3) > 0
        slot = np.cumsum(present) - 1
        Q = int(present.sum())
        cls = (ca[keep] % K * K + cb[keep] % K) * K + cc[keep] % K
        T3 = np.bincount(slot[tkey] * K**3 + cls, weights=sums[keep], minlength=Q * K**3).reshape(Q, K, K, K)
        n3 = T3.sum(axis=(1, 2, 3))  # each (item, worker) response sums to one: the sum counts the items
        T3 = T3 / np.maximum(n3, 1e-300)[:, None, None, None]
        n3 = np.rint(n3)
        tri = np.flatnonzero(present)
        triples = np.stack([sel[tri // (W * W)], sel[tri // W % W], sel[tri % W]], axis=1)
    scale = 1.0 / max(N, 1)
    return Moments(N, M, K, mu, n1 * scale, pairs, S, n2 * scale, sel, triples, T3, n3 * scale)


def population_moments(pi: np.ndarray, gamma: np.ndarray, mom: Moments) -> tuple[np.ndarray, ...]:
    """(mu, S, T3) implied by (pi, Gamma) for the pairs and triples of ``mom``: eqs. (13), (14), (16)."""
    pi = np.asarray(pi, dtype=np.float64)
    G = np.asarray(gamma, dtype=np.float64)
    mu = G @ pi
    a, b = mom.pairs[:, 0], mom.pairs[:, 1]
    S = np.einsum("pik,pjk->pij", G[a] * pi, G[b])
    ta, tb, tc = mom.triples.T if mom.triples.size else (np.zeros(0, int),) * 3
    T3 = np.einsum("qik,qjk,qlk->qijl", G[ta] * pi, G[tb], G[tc])
    return mu, S, T3


# ------------------------------------------------------------------ objective (17) and its gradient
def _aggregator(idx: np.ndarray, M: int) -> sp.csr_matrix:
    """(M, len(idx)) 0/1 matrix summing per-term contributions into their worker."""
    return sp.csr_matrix((np.ones(idx.size), (idx, np.arange(idx.size))), shape=(M, idx.size))


class _Objective:
    """Weighted g of eq. (17) and its gradient in (pi, Gamma), vectorised over workers, pairs and triples."""

    def __init__(self, mom: Moments) -> None:
        self.m = mom
        M = mom.n_workers
        self.pa, self.pb = mom.pairs[:, 0], mom.pairs[:, 1]
        self.agg_a, self.agg_b = _aggregator(self.pa, M), _aggregator(self.pb, M)
        t = mom.triples
        self.ta, self.tb, self.tc = t[:, 0], t[:, 1], t[:, 2]
        self.agg3 = [_aggregator(t[:, i], M) for i in range(3)]

    def __call__(self, pi: np.ndarray, G: np.ndarray, grad: bool = True):
        m = self.m
        M, K = m.n_workers, m.n_classes
        # first order, eq. (13)
        r1 = G @ pi - m.mu
        val = float((m.w1 * (r1**2).sum(axis=1)).sum())
        if grad:
            wr1 = 2.0 * m.w1[:, None] * r1
            dG = wr1[:, :, None] * pi[None, None, :]
            dpi = np.einsum("mik,mi->k", G, wr1)
        # second order, eq. (14)
        if m.pairs.shape[0]:
            A, B = G[self.pa], G[self.pb]
            R = np.matmul(A * pi, np.ascontiguousarray(np.swapaxes(B, 1, 2))) - m.S
            val += float((m.w2 * (R**2).sum(axis=(1, 2))).sum())
            if grad:
                wR = 2.0 * m.w2[:, None, None] * R
                RB = np.matmul(wR, B)  # (P, K, K): sum_j R_ij B_jk
                RA = np.matmul(np.swapaxes(wR, 1, 2), A)  # sum_i R_ij A_ik
                dpi += np.einsum("pik,pik->k", RB, A)
                dG += (self.agg_a @ (RB * pi).reshape(-1, K * K)).reshape(M, K, K)
                dG += (self.agg_b @ (RA * pi).reshape(-1, K * K)).reshape(M, K, K)
        # third order, eqs. (15)-(16): model[q, i, j, l] = sum_k pi_k A_ik B_jk C_lk
        if m.triples.shape[0]:
            A, B, C = G[self.ta], G[self.tb], G[self.tc]
            Q = A.shape[0]
            AB = (A[:, :, None, :] * B[:, None, :, :]).reshape(Q, K * K, K)  # [q, (i j), k]
            Ct = np.ascontiguousarray(np.swapaxes(C, 1, 2))
            R = np.matmul(AB * pi, Ct) - m.T3.reshape(Q, K * K, K)  # [q, (i j), l]
            val += float((m.w3 * (R**2).sum(axis=(1, 2))).sum())
            if grad:
                wR = 2.0 * m.w3[:, None, None] * R
                RC = np.matmul(wR, C).reshape(Q, K, K, K)  # [q, i, j, k] = sum_l R_ijl C_lk
                BC = (B[:, :, None, :] * C[:, None, :, :]).reshape(Q, K * K, K)  # [q, (j l), k]
                gA = np.matmul(wR.reshape(Q, K, K * K), BC)  # sum_jl R B C
                gB = (RC * A[:, :, None, :]).sum(axis=1)  # sum_il R A C
                gC = np.matmul(np.swapaxes(wR, 1, 2), AB)  # [q, l, k] = sum_ij R A B
                dpi += (gA * A).sum(axis=(0, 1))
                for agg, g in zip(self.agg3, (gA, gB, gC)):
                    dG += (agg @ (g * pi).reshape(-1, K * K)).reshape(M, K, K)
        if not grad:
            return val
        return val, dpi, dG


def moment_objective(pi: np.ndarray, gamma: np.ndarray, mom: Moments) -> float:
    """The weighted g of eq. (17) at (pi, Gamma) for the sample moments ``mom``."""
    return _Objective(mom)(np.asarray(pi, float), np.asarray(gamma, float), grad=False)


# ------------------------------------------------------------------ fitting
@dataclass(frozen=True, eq=False)
class MomentFit:
    """Result of :func:`fit_moments`: ``params`` (pi, Gamma), ``history`` g after every accepted iteration
    (index 0: the start), ``iterations``, ``converged`` (relative change below tol), the ``moments`` used and
    the class ``permutation`` applied after fitting (identity when none helped)."""

    params: ClassParams
    history: np.ndarray
    iterations: int
    converged: bool
    moments: Moments
    permutation: np.ndarray


def _majority_start(data: Annotations) -> tuple[np.ndarray, np.ndarray]:
    """Dawid-Skene M-step (eq. (11)) on the soft majority vote: the starting point of the fit."""
    q = vote_fractions(data)
    gamma = normalise_columns(expected_counts(data, q))
    pi = q.sum(axis=0) / q.shape[0]
    return pi, gamma


def fit_moments(
    data: Annotations,
    *,
    max_workers: int = 20,
    max_iter: int = 300,
    tol: float = 1e-9,
    seed: int | None = 0,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> MomentFit:
    """Minimise the weighted g of eq. (17) over pi in C_p and Gamma_m in C (see the module docstring).

    Projected gradient on all blocks at once; alternating Barzilai-Borwein trial step (BB1 / BB2), Armijo
    backtracking
    (g(x+) <= g(x) + 1e-4 grad . (x+ - x)), so the recorded history never increases. ``start``: (pi, Gamma),
    default the majority-vote M-step. ``seed`` is accepted for symmetry with the other initialisations; the fit
    is deterministic.
    """
    del seed
    mom = sample_moments(data, max_workers=max_workers)
    obj = _Objective(mom)
    pi, G = _majority_start(data) if start is None else (np.asarray(start[0], float), np.asarray(start[1], float))
    pi, G = _project_params(pi, G)
    f, dpi, dG = obj(pi, G)
    hist = [f]
    step = 1.0 / max(np.sqrt((dpi**2).sum() + (dG**2).sum()), 1e-12)
    converged = False
    it = 0
    for it in range(1, int(max_iter) + 1):
        accepted = False
        while step > 1e-20:
            pi_n, G_n = _project_params(pi - step * dpi, G - step * dG)
            dp, dg = pi_n - pi, G_n - G
            slope = float((dpi * dp).sum() + (dG * dg).sum())
            if slope >= 0:  # projected step is zero: a stationary point
                break
            f_n, dpi_n, dG_n = obj(pi_n, G_n)
            if f_n <= f + 1e-4 * slope:
                accepted = True
                break
            step *= 0.5
        if not accepted:
            converged = True
            it -= 1
            break
        # alternating Barzilai-Borwein trial step: s.s / s.y on odd iterations, s.y / y.y on even ones
        yp, yg = dpi_n - dpi, dG_n - dG
        sy = float(yp @ dp + (yg * dg).sum())
        if sy > 0:
            bb = float((dp**2).sum() + (dg**2).sum()) / sy if it % 2 else sy / float((yp**2).sum() + (yg**2).sum())
            step = float(np.clip(bb, 1e-12, 1e12))
        else:
            step *= 2.0
        change = f - f_n
        pi, G, f, dpi, dG = pi_n, G_n, f_n, dpi_n, dG_n
        hist.append(f)
        if change <= tol * max(abs(f), 1e-300):
            converged = True
            break
    # permutation fix (As2): relabel the true classes so the summed Gamma has the largest diagonal
    _, perm = linear_sum_assignment(-G.sum(axis=0))
    if np.sum(G.sum(axis=0)[np.arange(perm.size), perm]) <= np.trace(G.sum(axis=0)) + 1e-12:
        perm = np.arange(pi.size)
    G, pi = G[:, :, perm], pi[perm]
    return MomentFit(ClassParams(pi=pi, gamma=G), np.asarray(hist), it, converged, mom, perm)


def moment_estimates(data: Annotations, *, max_workers: int = 20, max_iter: int = 300, seed: int = 0) -> ClassParams:
    """pi and Gamma_1..M by moment matching (Traganitis & Giannakis eqs. (13)-(17)); see :func:`fit_moments`."""
    return fit_moments(data, max_workers=max_workers, max_iter=max_iter, seed=seed).params


# ------------------------------------------------------------------ transitions (Sec. 4.2)
def lagged_moments(data: Annotations) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample lagged cross moments S~_mm' = mean of f_m(x_n) f_m'(x_{n-1})^T over consecutive positions of the
    sequences where m labelled n and m' labelled n - 1 (eq. (21)), for all ordered pairs including m = m'.

    Returns (pairs (P, 2) as (m, m'), S~ (P, K, K), weights (P,) = overlap count / number of consecutive pairs).
    """
    if not data.is_sequential:
        raise ModelError("transition moments need sequences (items with sequence and position).")
    F, O = _responses(data)
    lay = layout(data)
    has_prev = np.ones(data.n_items, dtype=bool)
    has_prev[lay.starts] = False
    cur = np.flatnonzero(has_prev)
    prev = cur - 1
    pairs, S, cnt = _pair_blocks(F[cur].T @ F[prev], O[cur].T @ O[prev], data.n_classes, strict=False)
    return pairs, S, cnt / max(cur.size, 1)


def transition_estimate(
    data: Annotations, params, *, max_iter: int = 20000, tol: float = 1e-13, return_A: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """T (K, K), T[k_new, k_old], from the lagged moments (Traganitis & Giannakis eqs. (21)-(23)).

    Solves the convex problem (22), min_{A in C_S} sum w_mm' ||S~_mm' - Gamma_m A Gamma_m'^T||_F^2 (weights as
    in :func:`lagged_moments`), by accelerated projected gradient (FISTA with restart) with the exact step
    1 / Lipschitz, C_S being the simplex of the K^2 entries of A. Then pi = 1^T A and T = A diag(pi)^-1 (eq. (23)),
    computed as a column normalisation of A (a column with no mass becomes uniform). ``params.gamma`` supplies the
    Gammas (e.g. from :func:`moment_estimates`, or the true ones). ``return_A``: also return A.
    """
    G = np.asarray(params.gamma, dtype=np.float64)
    K = G.shape[1]
    pairs, S, w = lagged_moments(data)
    a, b = pairs[:, 0], pairs[:, 1]
    GtG = np.einsum("mik,mil->mkl", G, G)  # Gamma_m^T Gamma_m
    # objective = const - 2 <Bv, A> + <A, H A>, H[(i,j),(k,l)] = sum_p w_p (Ga^T Ga)[i,k] (Gb^T Gb)[j,l]
    H = np.einsum("p,pik,pjl->ijkl", w, GtG[a], GtG[b]).reshape(K * K, K * K)
    Bv = np.einsum("p,pai,pab,pbj->ij", w, G[a], S, G[b], optimize=True).ravel()
    L = 2.0 * float(np.linalg.eigvalsh(0.5 * (H + H.T)).max())
    x = project_simplex(np.full(K * K, 1.0 / (K * K)))
    if L > 0:
        y, t = x.copy(), 1.0
        for _ in range(int(max_iter)):
            grad = 2.0 * (H @ y - Bv)
            x_new = project_simplex(y - grad / L)
            if float(((y - x_new) * (x_new - x)).sum()) > 0:  # gradient-mapping restart (momentum uphill)
                y, t = x.copy(), 1.0
                continue
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            y = x_new + ((t - 1.0) / t_new) * (x_new - x)
            done = np.abs(x_new - x).max() < tol
            x, t = x_new, t_new
            if done:
                break
    A = x.reshape(K, K)
    T = normalise_columns(np.maximum(A, 0.0))
    return (T, A) if return_A else T


def hmm_moment_params(
    data: Annotations, *, max_workers: int = 20, max_iter: int = 300, seed: int = 0, params: ClassParams | None = None
) -> HMMParams:
    """Traganitis & Giannakis Alg. 2, lines 3-4: Gamma and pi by eq. (17) (the chain treated as i.i.d. draws from its
    stationary distribution, eq. (20)), T by eqs. (22)-(23); pi0 = pi. ``params``: reuse given (pi, Gamma)."""
    if params is None:
        params = moment_estimates(data, max_workers=max_workers, max_iter=max_iter, seed=seed)
    T = transition_estimate(data, params)
    return HMMParams(pi=np.asarray(params.pi, float), gamma=np.asarray(params.gamma, float), T=T)
