"""HMM-crowd: labels that form Markov chains, each position labelled by a crowd (seed 003, Sec. 4, App. A).

Model (seed 003 eq. (19)): in every sequence, y_1 ~ pi0 and y_n | y_{n-1} ~ T(., y_{n-1}); worker m labels
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

Conventions: T[k_new, k_old] = P(y_{n+1} = k_new | y_n = k_old) (columns sum to one, as T(k_n, k_{n-1}) in
eq. (19) and 1^T T = 1^T in eq. (22)); eq. (26) is printed with the indices the other way round. The objective is
the exact log-likelihood log p(F | theta) (+ log prior); the EM bound's entropy term is the entropy of the chain
posterior, H = log p(F) - E_q[log p(F, y)], computed in the E-step.
Shapes: pi0 (K,), T (K, K), gamma (M, K, K), q (N, K), xi (K, K) summed over all consecutive pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdlab.data import Annotations
from crowdlab.errors import ModelError
from crowdlab.models.base import LatentModel, ModelInfo, entropy_rows, log_dirichlet, normalise_columns, safe_log
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


@dataclass(frozen=True, eq=False)
class _Layout:
    """Time-major view of the sequences: at step t the running sequences are ``order[:count[t]]``."""

    starts: np.ndarray  # (S,) first item of each sequence
    lengths: np.ndarray  # (S,)
    order: np.ndarray  # (S,) sequences by decreasing length
    count: np.ndarray  # (Lmax,) number of sequences longer than t

    def positions(self, t: int) -> np.ndarray:
        return self.starts[self.order[: self.count[t]]] + t


def layout(data: Annotations) -> _Layout:
    st = data.sequence_starts
    starts, lengths = st[:-1], np.diff(st)
    order = np.argsort(-lengths, kind="stable")
    lmax = int(lengths.max())
    count = (lengths[None, :] > np.arange(lmax)[:, None]).sum(axis=1)
    return _Layout(starts, lengths, order, count)


def emission_logs(data: Annotations, gamma: np.ndarray) -> np.ndarray:
    """(N, K) log e_n(k) = sum of log Gamma_m(f_m(x_n), k) over position n's labels (seed 003 eq. (39))."""
    M, K, _ = gamma.shape
    return np.asarray(data.label_counts @ safe_log(gamma).reshape(M * K, K))


def forward_backward(data: Annotations, params: HMMParams, pairs: bool = False):
    """Scaled forward-backward over all sequences at once (seed 003 App. A).

    Returns ``(q, xi_sum, log_lik)`` and, with ``pairs=True``, also ``(first, xi_pairs)`` where
    ``xi_pairs[p, j, k] = P(y_n = j, y_{n+1} = k | F)`` for the pair starting at item ``first[p]``.
    """
    lay = layout(data)
    logE = emission_logs(data, params.gamma)
    m = logE.max(axis=1, keepdims=True)
    E = np.exp(logE - m)  # scaled emissions; log_lik adds m back
    N, K = E.shape
    T = params.T
    alpha = np.empty((N, K))
    c = np.empty(N)
    pos = lay.positions(0)
    a = params.pi[None, :] * E[pos]
    c[pos] = a.sum(axis=1)
    alpha[pos] = a / np.maximum(c[pos], 1e-300)[:, None]
    for t in range(1, lay.count.size):
        prev, pos = lay.positions(t - 1)[: lay.count[t]], lay.positions(t)
        a = (alpha[prev] @ T.T) * E[pos]
        c[pos] = a.sum(axis=1)
        alpha[pos] = a / np.maximum(c[pos], 1e-300)[:, None]
    log_lik = float(np.log(np.maximum(c, 1e-300)).sum() + m.sum())
    beta = np.ones((N, K))
    xi = np.zeros((K, K))
    firsts, pair_list = [], []
    for t in range(lay.count.size - 2, -1, -1):
        nxt = lay.positions(t + 1)
        cur = lay.positions(t)[: nxt.size]
        v = E[nxt] * beta[nxt] / np.maximum(c[nxt], 1e-300)[:, None]
        beta[cur] = v @ T
        xi += (v.T @ alpha[cur]) * T
        if pairs:
            firsts.append(cur)
            pair_list.append(alpha[cur][:, :, None] * T.T[None, :, :] * v[:, None, :])
    q = alpha * beta
    q /= q.sum(axis=1, keepdims=True)
    if not pairs:
        return q, xi, log_lik
    first = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    xp = np.concatenate(pair_list) if pair_list else np.zeros((0, K, K))
    order = np.argsort(first)
    return q, xi, log_lik, (first[order], xp[order])


def forward_log_likelihood(data: Annotations, params: HMMParams) -> float:
    """log p(F | theta) by the scaled forward pass alone."""
    lay = layout(data)
    logE = emission_logs(data, params.gamma)
    m = logE.max(axis=1, keepdims=True)
    E = np.exp(logE - m)
    alpha = np.empty_like(E)
    total = float(m.sum())
    pos = lay.positions(0)
    a = params.pi[None, :] * E[pos]
    for t in range(lay.count.size):
        if t:
            prev, pos = lay.positions(t - 1)[: lay.count[t]], lay.positions(t)
            a = (alpha[prev] @ params.T.T) * E[pos]
        ct = a.sum(axis=1)
        total += float(np.log(np.maximum(ct, 1e-300)).sum())
        alpha[pos] = a / np.maximum(ct, 1e-300)[:, None]
    return total


def viterbi(data: Annotations, params: HMMParams) -> np.ndarray:
    """(N,) the most probable labels of every sequence (seed 003 eq. (19)), in log space, all sequences at once."""
    lay = layout(data)
    logE = emission_logs(data, params.gamma)
    logT = safe_log(params.T)
    N, K = logE.shape
    delta = np.empty((N, K))
    back = np.zeros((N, K), dtype=np.int32)
    pos = lay.positions(0)
    delta[pos] = safe_log(params.pi)[None, :] + logE[pos]
    for t in range(1, lay.count.size):
        prev, pos = lay.positions(t - 1)[: lay.count[t]], lay.positions(t)
        scores = delta[prev][:, None, :] + logT[None, :, :]  # [s, k_new, k_old]
        back[pos] = np.argmax(scores, axis=2)
        delta[pos] = np.max(scores, axis=2) + logE[pos]
    path = np.empty(N, dtype=np.int32)
    for t in range(lay.count.size - 1, -1, -1):
        pos = lay.positions(t)
        n_next = lay.count[t + 1] if t + 1 < lay.count.size else 0
        if n_next:  # still running at t + 1: follow the back-pointer
            nxt = lay.positions(t + 1)
            path[pos[:n_next]] = back[nxt, path[nxt]]
        path[pos[n_next:]] = np.argmax(delta[pos[n_next:]], axis=1)  # sequences ending at t
    return path


def transition_counts(data: Annotations, labels: np.ndarray, K: int) -> np.ndarray:
    """(K, K) counts[k_new, k_old] of consecutive label pairs within sequences."""
    lay = layout(data)
    nxt_mask = np.ones(data.n_items, dtype=bool)
    nxt_mask[lay.starts] = False  # an item that starts a sequence has no predecessor
    cur = np.flatnonzero(nxt_mask)
    flat = np.bincount(labels[cur] * K + labels[cur - 1], minlength=K * K)
    return flat.reshape(K, K).astype(np.float64)


class HMMCrowd(LatentModel):
    """EM for crowd-labelled Markov chains (seed 003 Alg. 1), exact (forward-backward) or hard (Viterbi)."""

    info = ModelInfo("hmm", "HMM-crowd (Markov-chain labels)", "classes", exact=True, latent="item")

    def __init__(self, prior: float = 0.0, hard: bool = False) -> None:
        if prior < 0:
            raise ValueError("prior strength must be >= 0.")
        self.prior = float(prior)
        self.hard = bool(hard)

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
        q, xi, ll = forward_backward(data, params)
        post = HMMPosterior(q, xi, 0.0, ll)
        ent = ll - self._ecll(data, post, params)
        return HMMPosterior(q, xi, max(float(ent), 0.0), ll)

    def m_step(self, data: Annotations, post: HMMPosterior) -> HMMParams:
        if isinstance(post, np.ndarray):
            post = self.as_posterior(data, post)
        s = self.prior
        q = post.q
        gamma = normalise_columns(expected_counts(data, q), s)
        T = normalise_columns(post.xi, s)
        first = q[layout(data).starts].sum(axis=0)
        pi0 = (first + s) / (first.sum() + s * first.size)
        return HMMParams(pi=pi0, gamma=gamma, T=T)

    # -- objectives -----------------------------------------------------------------------
    def _ecll(self, data: Annotations, post: HMMPosterior, params: HMMParams) -> float:
        """E_q[log p(F, y | theta)]: initial states + transitions + emissions."""
        q = post.q
        start = q[layout(data).starts]
        return float(
            (start @ safe_log(params.pi)).sum()
            + (post.xi * safe_log(params.T)).sum()
            + (q * emission_logs(data, params.gamma)).sum()
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
        return forward_log_likelihood(data, params) + self.log_prior(params)

    def complete_objective(self, data: Annotations, post, params: HMMParams) -> float:
        if isinstance(post, np.ndarray):
            post = self.as_posterior(data, post)
        return self._ecll(data, post, params) + self.log_prior(params)

    def bound(self, data: Annotations, post, params: HMMParams) -> float:
        if isinstance(post, np.ndarray):
            post = self.as_posterior(data, post)
        return self.complete_objective(data, post, params) + post.entropy

    def objective(self, data: Annotations, post, params: HMMParams) -> float:
        if self.hard:
            return self.complete_objective(data, post, params)
        return self.log_likelihood(data, params)

    def decode(self, data: Annotations, params: HMMParams) -> np.ndarray:
        """Viterbi labels (the seed's label estimate, eq. (19))."""
        return viterbi(data, params)
