"""HMM-crowd: labels forming Markov chains, each position labelled by a crowd (Traganitis & Giannakis Sec. 4, App. A).

Model (Traganitis & Giannakis eq. (19)): in every sequence, y_1 ~ pi0 and y_n | y_{n-1} ~ T(., y_{n-1}); worker m labels
position n with f_m(x_n) ~ Gamma_m(., y_n), independently. The emission of a position is the product of its
workers' confusion entries (eq. (39)): log e_n(k) = sum over n's labels of log Gamma_m(f_m(x_n), k), one sparse
product ``X @ log Gamma`` for all positions.

- E-step (Alg. 1 line 4; App. A eqs. (40)-(49)): scaled forward-backward, vectorised over all sequences at once.
  Sequences are sorted by length so the sequences still running at step t are a prefix of that order; each step
  is one (S_t, K) x (K, K) product -- a Python loop over time steps (the longest sequence), never over sequences
  or positions. It gives q_nk = P(y_n = k | F) (eq. (24)) and the expected transition counts
  sum_n xi_n(k, k') (eq. (25)).
- M-step: T from the expected transitions (eq. (26)), Gamma_m as in the i.i.d. case (eq. (27) = eq. (11)),
  pi0 from the posteriors of the first positions; optional symmetric Dirichlet(1 + s) priors (MAP) on the
  columns of T and Gamma_m and on pi0.
- Viterbi (eq. (19)): the most probable label sequence, batched the same way.

Numerics: the scaled pass is the fast path. When a scale factor falls below 1e-200 (zeros in pi0 or T meet
labels that want exactly those states, e.g. deterministic workers or given parameters), the same quantities are
computed by a log-space forward-backward instead, with pi0 and T floored at 1e-300 inside the logs as everywhere
else (`safe_log`): the posteriors and the objective stay finite and consistent with E_q[log p(F, y)].

Conventions: T[k_new, k_old] = P(y_{n+1} = k_new | y_n = k_old) (columns sum to one, as T(k_n, k_{n-1}) in
eq. (19) and 1^T T = 1^T in eq. (22)); eq. (26) is printed with the indices the other way round. The objective is
the exact log-likelihood log p(F | theta) (+ log prior); the EM bound's entropy term is the entropy of the chain
posterior, H = log p(F) - E_q[log p(F, y)], computed in the E-step.
Shapes: pi0 (K,), T (K, K), gamma (M, K, K), q (N, K), xi (K, K) summed over all consecutive pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import (
    LatentModel,
    ModelInfo,
    column_sums,
    entropy_rows,
    log_dirichlet,
    normalise_columns,
    row_max,
    row_sums,
    safe_log,
)
from crowdlab.models.dawid_skene import expected_counts
from crowdlab.models.params import ClassParams


@dataclass(frozen=True, eq=False)
class HMMParams(ClassParams):
    """Initial distribution ``pi`` (= pi0), transitions ``T`` (K, K), confusion matrices ``gamma`` (M, K, K)."""

    T: np.ndarray = None

    def stationary(self) -> np.ndarray:
        """The stationary distribution of T (eigenvector for eigenvalue 1), used for worker accuracy."""
        w, v = np.linalg.eig(self.T)
        i = int(np.argmin(np.abs(w - 1.0)))
        p = np.abs(np.real(v[:, i]))
        return p / p.sum() if p.sum() > 0 else np.full(self.T.shape[0], 1.0 / self.T.shape[0])

    def worker_accuracy(self) -> np.ndarray:
        diag = np.diagonal(self.gamma, axis1=1, axis2=2)
        return diag @ self.stationary()

    def to_dict(self, worker_names=None, class_names=None) -> dict:
        out = super().to_dict(worker_names, class_names)
        out["pi0"] = out.pop("pi")
        out["T"] = self.T.tolist()
        out["T_convention"] = "T[k_new][k_old] = P(y_next = k_new | y = k_old)"
        return out


@dataclass(frozen=True, eq=False)
class HMMPosterior:
    """q (N, K) marginals; xi (K, K) with xi[k_new, k_old] = sum_n P(y_n = k_old, y_{n+1} = k_new | F);
    ``entropy`` of the chain posterior; ``log_lik`` = log p(F | theta) of the parameters it came from."""

    q: np.ndarray
    xi: np.ndarray
    entropy: float
    log_lik: float | None = None
    params: object = None  # the parameters of the E-step that produced it (the bound is tight there)


@dataclass(frozen=True, eq=False)
class _Layout:
    """Time-major packing of the sequences. Sequences are sorted by decreasing length; packed row
    ``offsets[t] + j`` is position t of the j-th longest sequence still running at t, so the positions of step t
    are the contiguous slice ``offsets[t] : offsets[t] + count[t]`` and the first ``count[t + 1]`` of them
    continue at t + 1. ``perm[packed row] = item``."""

    starts: np.ndarray  # (S,) first item of each sequence
    lengths: np.ndarray  # (S,)
    count: np.ndarray  # (Lmax,) sequences longer than t
    offsets: np.ndarray  # (Lmax + 1,)
    perm: np.ndarray  # (N,) packed row -> item
    inv: np.ndarray  # (N,) item -> packed row

    def step(self, t: int, n: int | None = None) -> slice:
        """Packed rows of step t (the first ``n`` of them when given)."""
        return slice(self.offsets[t], self.offsets[t] + (self.count[t] if n is None else n))


def layout(data: Annotations) -> _Layout:
    """The packing of ``data``'s sequences (cached on the Annotations object)."""
    cached = data.__dict__.get("_hmm_layout")
    if cached is not None:
        return cached
    lay = _layout_of(np.asarray(data.sequence_starts))
    data.__dict__["_hmm_layout"] = lay
    return lay


CHUNK_POSITIONS = 1 << 15  # positions per block of whole sequences in the E-step (see ``chunks``)


@dataclass(frozen=True, eq=False)
class _Chunk:
    """A block of consecutive whole sequences: items ``lo:hi`` and their packing (items counted from ``lo``)."""

    lo: int
    hi: int
    lay: _Layout


def chunks(data: Annotations, size: int | None = None) -> list[_Chunk]:
    """``data``'s sequences cut into blocks of whole sequences of about ``size`` positions (``CHUNK_POSITIONS``; a
    longer sequence is a block of its own), cached on the Annotations object. The E-step runs forward-backward block
    by block, so its working memory is a few (block, K) arrays, not a few (N, K) ones."""
    size = int(size or CHUNK_POSITIONS)
    cached = data.__dict__.get("_hmm_chunks")
    if cached is not None and cached[0] == size:
        return cached[1]
    st = np.asarray(data.sequence_starts, dtype=np.int64)
    out, a, S = [], 0, st.size - 1
    while a < S:
        b = int(np.searchsorted(st, st[a] + size, side="right")) - 1  # sequences a .. b-1 fit in size positions
        b = min(max(b, a + 1), S)
        out.append(_Chunk(int(st[a]), int(st[b]), _layout_of(st[a : b + 1] - st[a])))
        a = b
    data.__dict__["_hmm_chunks"] = (size, out)
    return out


def _layout_of(st: np.ndarray) -> _Layout:
    """The packing of the sequences whose starts (and end) are ``st`` (S + 1,)."""
    starts, lengths = st[:-1], np.diff(st)
    order = np.argsort(-lengths, kind="stable")
    lmax = int(lengths.max())
    count = np.bincount(lengths, minlength=lmax + 1)[::-1].cumsum()[::-1][1:]  # sequences longer than t
    offsets = np.concatenate([[0], np.cumsum(count)])
    # packed row offsets[t] + j  <->  item starts[order[j]] + t
    t_of = np.repeat(np.arange(lmax), count)
    j_of = np.arange(offsets[-1]) - offsets[t_of]
    perm = starts[order[j_of]] + t_of
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size)
    return _Layout(starts, lengths, count, offsets, perm, inv)


def emission_logs(data: Annotations, gamma: np.ndarray) -> np.ndarray:
    """(N, K) log e_n(k) = sum of log Gamma_m(f_m(x_n), k) over n's labels (Traganitis & Giannakis eq. (39))."""
    M, K, _ = gamma.shape
    return np.asarray(data.label_counts @ safe_log(gamma).reshape(M * K, K))


def _mv(x: np.ndarray, T: np.ndarray) -> np.ndarray:
    """x @ T.T for a batch of rows (T[k_new, k_old]: the predicted next-state weights)."""
    return np.einsum("sj,kj->sk", x, T, optimize=False)


def _forward(E: np.ndarray, pi0: np.ndarray, T: np.ndarray, lay: _Layout) -> tuple[np.ndarray, np.ndarray]:
    """Scaled forward pass over packed rows: (alpha (N, K) normalised, c (N,) scale factors)."""
    N, K = E.shape
    alpha = np.empty((N, K))
    c = np.empty(N)
    sl = lay.step(0)
    a = pi0[None, :] * E[sl]
    for t in range(lay.count.size):
        if t:
            prev, sl = lay.step(t - 1, lay.count[t]), lay.step(t)
            a = _mv(alpha[prev], T) * E[sl]
        ct = a.sum(axis=1)
        c[sl] = ct
        alpha[sl] = a / np.maximum(ct, 1e-300)[:, None]
    return alpha, c


def _scaled_emissions(data: Annotations, gamma: np.ndarray, lay: _Layout) -> tuple[np.ndarray, np.ndarray, float]:
    """Packed (logE, E = exp(logE - max), sum of the maxima)."""
    logE = emission_logs(data, gamma)[lay.perm]
    m = logE.max(axis=1, keepdims=True)
    return logE, np.exp(logE - m), float(m.sum())


SCALE_MIN = 1e-200  # a scaled-forward factor below this switches to the log-space pass


def _needs_log_space(c: np.ndarray) -> bool:
    return bool(c.size) and not (np.all(np.isfinite(c)) and c.min() >= SCALE_MIN)


def _log_forward_backward(logE: np.ndarray, pi0: np.ndarray, T: np.ndarray, lay: _Layout, pairs: bool = False):
    """Log-space forward-backward on packed rows: (q packed (N, K), xi (K, K), log_lik[, (first, xi_pairs)]).

    log alpha_t(k) = log e_t(k) + logsumexp_j (log alpha_{t-1}(j) + log T(k, j)); log beta likewise backwards;
    q = exp(log alpha + log beta - log p(F_s)) per sequence s. O(N K^2), a loop over time steps only."""
    from scipy.special import logsumexp

    N, K = logE.shape
    lpi, lT = safe_log(pi0), safe_log(T)
    la = np.empty((N, K))
    sl = lay.step(0)
    la[sl] = lpi[None, :] + logE[sl]
    for t in range(1, lay.count.size):
        prev, sl = lay.step(t - 1, lay.count[t]), lay.step(t)
        la[sl] = logE[sl] + logsumexp(la[prev][:, None, :] + lT[None, :, :], axis=2)
    S = lay.lengths.size
    last = lay.offsets[np.sort(lay.lengths)[::-1] - 1] + np.arange(S)  # packed row of each sequence's end
    ll_seq = logsumexp(la[last], axis=1)  # per sequence, in sorted order
    t_of = np.repeat(np.arange(lay.count.size), lay.count)
    j_of = np.arange(N) - lay.offsets[t_of]  # which sorted sequence a packed row belongs to
    lb = np.zeros((N, K))
    xi = np.zeros((K, K))
    firsts, pair_list = [], []
    for t in range(lay.count.size - 2, -1, -1):
        n = lay.count[t + 1]
        nxt, cur = lay.step(t + 1), lay.step(t, n)
        w = logE[nxt] + lb[nxt]  # (n, K_new)
        lb[cur] = logsumexp(w[:, :, None] + lT[None, :, :], axis=1)
        pair = np.exp(la[cur][:, None, :] + lT[None, :, :] + w[:, :, None] - ll_seq[:n, None, None])  # [s, new, old]
        xi += pair.sum(axis=0)
        if pairs:
            firsts.append(lay.perm[cur])
            pair_list.append(np.swapaxes(pair, 1, 2))
    lq = la + lb - ll_seq[j_of][:, None]
    q = np.exp(lq - lq.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    out = (q, xi, float(ll_seq.sum()))
    if not pairs:
        return out
    first = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    xp = np.concatenate(pair_list) if pair_list else np.zeros((0, K, K))
    return (*out, (first, xp))


def forward_backward(data: Annotations, params: HMMParams, pairs: bool = False, _cache=None):
    """Scaled forward-backward over all sequences at once (Traganitis & Giannakis, App. A).

    Returns ``(q, xi_sum, log_lik)`` and, with ``pairs=True``, also ``(first, xi_pairs)`` where
    ``xi_pairs[p, j, k] = P(y_n = j, y_{n+1} = k | F)`` for the pair starting at item ``first[p]``.
    """
    lay = layout(data)
    if _cache is not None:
        logE, E, msum, alpha, c = _cache
    else:
        logE, E, msum = _scaled_emissions(data, params.gamma, lay)
        alpha, c = _forward(E, params.pi, params.T, lay)
    if _needs_log_space(c):
        res = _log_forward_backward(logE, params.pi, params.T, lay, pairs)
        q = res[0][lay.inv]
        if not pairs:
            return q, res[1], res[2]
        first, xp = res[3]
        order = np.argsort(first)
        return q, res[1], res[2], (first[order], xp[order])
    T = params.T
    log_lik = float(np.log(np.maximum(c, 1e-300)).sum() + msum)
    beta = np.ones_like(alpha)
    xi = np.zeros((T.shape[0], T.shape[0]))
    firsts, pair_list = [], []
    for t in range(lay.count.size - 2, -1, -1):
        n = lay.count[t + 1]
        nxt, cur = lay.step(t + 1), lay.step(t, n)
        v = E[nxt] * beta[nxt] / np.maximum(c[nxt], 1e-300)[:, None]
        beta[cur] = np.einsum("sk,kj->sj", v, T, optimize=False)
        xi += (v.T @ alpha[cur]) * T
        if pairs:
            firsts.append(lay.perm[cur])
            pair_list.append(alpha[cur][:, :, None] * T.T[None, :, :] * v[:, None, :])
    q = alpha * beta
    q /= q.sum(axis=1, keepdims=True)
    q = q[lay.inv]
    if not pairs:
        return q, xi, log_lik
    K = T.shape[0]
    first = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    xp = np.concatenate(pair_list) if pair_list else np.zeros((0, K, K))
    order = np.argsort(first)
    return q, xi, log_lik, (first[order], xp[order])


def _backward(E: np.ndarray, alpha: np.ndarray, c: np.ndarray, T: np.ndarray, lay: _Layout):
    """Scaled backward pass over packed rows: (q packed (N, K), xi (K, K) summed over consecutive pairs)."""
    beta = np.ones_like(alpha)
    xi = np.zeros((T.shape[0], T.shape[0]))
    for t in range(lay.count.size - 2, -1, -1):
        n = lay.count[t + 1]
        nxt, cur = lay.step(t + 1), lay.step(t, n)
        v = E[nxt] * beta[nxt] / np.maximum(c[nxt], 1e-300)[:, None]
        beta[cur] = np.einsum("sk,kj->sj", v, T, optimize=False)
        xi += (v.T @ alpha[cur]) * T
    beta *= alpha  # q, unnormalised (beta is not needed any more)
    beta /= row_sums(beta)[:, None]
    return beta, xi


@dataclass(frozen=True, eq=False)
class _Pass:
    """What one forward-backward over all sequences gives at one parameter set: q (N, K) in item order, xi (K, K),
    log p(F | theta), sum_n q_n . log e_n (the emission part of E_q[log p(F, y)]), and the sum of q over the first
    positions of the sequences."""

    q: np.ndarray
    xi: np.ndarray
    log_lik: float
    emission: float
    first: np.ndarray


def chunked_forward_backward(data: Annotations, params: HMMParams, size: int | None = None) -> _Pass:
    """Forward-backward block by block of whole sequences (:func:`chunks`), accumulating xi, the log-likelihood and
    the emission term; only q (N, K) is kept for the whole data. Same numbers as :func:`forward_backward` (a block
    whose scale factors underflow takes the log-space pass, as there)."""
    M, K, _ = params.gamma.shape
    log_g = safe_log(params.gamma).reshape(M * K, K)
    X = data.label_counts
    pi0, T = params.pi, params.T
    q = np.empty((data.n_items, K))
    xi = np.zeros((K, K))
    first = np.zeros(K)
    log_lik = emission = 0.0
    for ch in chunks(data, size):
        lay = ch.lay
        logE = np.asarray(X[ch.lo : ch.hi] @ log_g)[lay.perm]  # packed rows of this block
        m = row_max(logE)
        E = np.exp(logE - m[:, None])
        alpha, c = _forward(E, pi0, T, lay)
        if _needs_log_space(c):
            qp, xi_b, ll_b = _log_forward_backward(logE, pi0, T, lay)
        else:
            qp, xi_b = _backward(E, alpha, c, T, lay)
            ll_b = float(np.log(np.maximum(c, 1e-300)).sum() + m.sum())
        del E, alpha
        xi += xi_b
        log_lik += ll_b
        emission += float(np.einsum("nk,nk->", qp, logE))
        first += column_sums(qp[: lay.count[0]])  # step 0: the first position of every sequence of the block
        q[ch.lo : ch.hi] = qp[lay.inv]
    return _Pass(q, xi, log_lik, emission, first)


def forward_log_likelihood(data: Annotations, params: HMMParams) -> float:
    """log p(F | theta) by the scaled forward pass alone."""
    lay = layout(data)
    logE, E, msum = _scaled_emissions(data, params.gamma, lay)
    _, c = _forward(E, params.pi, params.T, lay)
    if _needs_log_space(c):
        return _log_forward_backward(logE, params.pi, params.T, lay)[2]
    return float(np.log(np.maximum(c, 1e-300)).sum() + msum)


def viterbi(data: Annotations, params: HMMParams) -> np.ndarray:
    """(N,) the most probable labels of each sequence (Traganitis & Giannakis eq. (19)), log space, all at once."""
    lay = layout(data)
    logE = emission_logs(data, params.gamma)[lay.perm]
    logT = safe_log(params.T)
    N, K = logE.shape
    delta = np.empty((N, K))
    back = np.zeros((N, K), dtype=np.int32)
    sl = lay.step(0)
    delta[sl] = safe_log(params.pi)[None, :] + logE[sl]
    for t in range(1, lay.count.size):
        prev, sl = lay.step(t - 1, lay.count[t]), lay.step(t)
        scores = delta[prev][:, None, :] + logT[None, :, :]  # [s, k_new, k_old]
        back[sl] = np.argmax(scores, axis=2)
        delta[sl] = np.max(scores, axis=2) + logE[sl]
    path = np.empty(N, dtype=np.int32)
    for t in range(lay.count.size - 1, -1, -1):
        sl = lay.step(t)
        n_next = lay.count[t + 1] if t + 1 < lay.count.size else 0
        rows = np.arange(sl.start, sl.stop)
        if n_next:  # still running at t + 1: follow the back-pointer
            nxt = np.arange(lay.offsets[t + 1], lay.offsets[t + 1] + n_next)
            path[rows[:n_next]] = back[nxt, path[nxt]]
        path[rows[n_next:]] = np.argmax(delta[rows[n_next:]], axis=1)  # sequences ending at t
    return path[lay.inv]


def transition_counts(data: Annotations, labels: np.ndarray, K: int) -> np.ndarray:
    """(K, K) counts[k_new, k_old] of consecutive label pairs within sequences."""
    lay = layout(data)
    nxt_mask = np.ones(data.n_items, dtype=bool)
    nxt_mask[lay.starts] = False  # an item that starts a sequence has no predecessor
    cur = np.flatnonzero(nxt_mask)
    flat = np.bincount(labels[cur] * K + labels[cur - 1], minlength=K * K)
    return flat.reshape(K, K).astype(np.float64)


class HMMCrowd(LatentModel):
    """EM for crowd-labelled chains (Traganitis & Giannakis Alg. 1): exact (forward-backward) or hard (Viterbi)."""

    info = ModelInfo(
        "hmm",
        "HMM-crowd (Markov-chain labels)",
        "classes",
        exact=True,
        latent="item",
        prior_pull=(
            "s pseudo-counts in every cell of every confusion matrix, the transition matrix and the start "
            "distribution: a stronger prior pulls them towards uniform"
        ),
    )

    def __init__(self, prior: float = 0.0, hard: bool = False) -> None:
        if prior < 0:
            raise ModelError("prior strength must be >= 0.")
        self.prior = float(prior)
        self.hard = bool(hard)
        self._memo: list[tuple[object, object, _Pass]] = []  # (data, params, forward-backward), newest last

    def _fb(self, data: Annotations, params: HMMParams) -> _Pass:
        """The forward-backward at these parameters, computed once (:func:`chunked_forward_backward`).

        The engine asks for the objective right after an M-step and the next E-step needs the same pass: keeping
        the last one makes one forward-backward per iteration (the bound after an M-step needs no pass at the old
        parameters: see ``_ecll``). The old one is let go before the new one is computed, so at most one q (N, K)
        lives here."""
        for d, p, st in self._memo:
            if d is data and p is params:
                return st
        self._memo = []
        st = chunked_forward_backward(data, params)
        self._memo = [(data, params, st)]
        return st

    @property
    def has_prior(self) -> bool:
        return self.prior > 0

    def check(self, data: Annotations) -> None:
        super().check(data)
        if not data.is_sequential:
            raise ModelError("The HMM model needs sequences (items with sequence and position).")

    # -- posterior objects ------------------------------------------------------------
    def as_posterior(self, data: Annotations, q: np.ndarray) -> HMMPosterior:
        """A posterior that factorises over positions (independent q_n): xi = sum of q_n q_{n+1}^T."""
        q = np.asarray(q, dtype=np.float64)
        lay = layout(data)
        has_prev = np.ones(data.n_items, dtype=bool)
        has_prev[lay.starts] = False
        cur = np.flatnonzero(has_prev)
        xi = q[cur].T @ q[cur - 1]
        return HMMPosterior(q, xi, entropy_rows(q))

    def e_step(self, data: Annotations, params: HMMParams) -> HMMPosterior:
        if self.hard:
            path = viterbi(data, params)
            q = np.zeros((data.n_items, data.n_classes))
            q[np.arange(data.n_items), path] = 1.0
            return HMMPosterior(q, transition_counts(data, path, data.n_classes), 0.0)
        fb = self._fb(data, params)
        lpi, lT = safe_log(params.pi), safe_log(params.T)
        ecll = float(fb.first @ lpi + (fb.xi * lT).sum() + fb.emission)
        return HMMPosterior(fb.q, fb.xi, max(fb.log_lik - ecll, 0.0), fb.log_lik, params)

    def m_step(self, data: Annotations, post: HMMPosterior) -> HMMParams:
        if isinstance(post, np.ndarray):
            post = self.as_posterior(data, post)
        s = self.prior
        q = post.q
        counts = expected_counts(data, q)
        self._counts = (data, q, counts)  # the bound after this M-step needs E_q[emission counts] again
        gamma = normalise_columns(counts, s)
        T = normalise_columns(post.xi, s)
        first = q[layout(data).starts].sum(axis=0)
        pi0 = (first + s) / (first.sum() + s * first.size)
        return HMMParams(pi=pi0, gamma=gamma, T=T)

    # -- objectives -----------------------------------------------------------------------
    def _ecll(self, data: Annotations, post: HMMPosterior, params: HMMParams) -> float:
        """E_q[log p(F, y | theta)]: initial states + transitions + emissions."""
        q = post.q
        lay = layout(data)
        memo = getattr(self, "_counts", None)
        hit = memo is not None and memo[0] is data and memo[1] is q
        counts = memo[2] if hit else expected_counts(data, q)
        # sum_n q_n . log e_n = sum over (worker, said, truth) of the expected counts times log Gamma: no (N, K) array
        return float(
            (q[lay.starts] @ safe_log(params.pi)).sum()
            + (post.xi * safe_log(params.T)).sum()
            + (counts * safe_log(params.gamma)).sum()
        )

    def log_prior(self, params: HMMParams) -> float:
        if not self.has_prior:
            return 0.0
        a = 1.0 + self.prior
        return (
            log_dirichlet(np.swapaxes(params.gamma, 1, 2), a)
            + log_dirichlet(params.T.T, a)
            + log_dirichlet(params.pi, a)
        )

    def log_likelihood(self, data: Annotations, params: HMMParams) -> float:
        return self._fb(data, params).log_lik + self.log_prior(params)

    def complete_objective(self, data: Annotations, post, params: HMMParams) -> float:
        if isinstance(post, np.ndarray):
            post = self.as_posterior(data, post)
        return self._ecll(data, post, params) + self.log_prior(params)

    def bound(self, data: Annotations, post, params: HMMParams) -> float:
        if isinstance(post, np.ndarray):
            post = self.as_posterior(data, post)
        if post.params is params and post.log_lik is not None:  # right after an exact E-step: F = log p(F)
            return post.log_lik + self.log_prior(params)
        return self.complete_objective(data, post, params) + post.entropy

    def objective(self, data: Annotations, post, params: HMMParams) -> float:
        if self.hard:
            return self.complete_objective(data, post, params)
        return self.log_likelihood(data, params)

    def decode(self, data: Annotations, params: HMMParams) -> np.ndarray:
        """Viterbi labels (the paper's label estimate, eq. (19))."""
        return viterbi(data, params)
