"""GLAD (Whitehill et al. 2009) on blocks of items: the streaming engine's batch EM for a model whose item
difficulties are parameters of each item.

GLAD's parameters are the class prior pi (K,), the worker abilities alpha (M,) and the item inverse difficulties
beta_i = exp(b_i) (N,). Each item's b_i is local to the block that holds the item, so it stays with the block
(here: one (N,) array beside the (N, K) posterior, 8 (K + 1) bytes per item); only pi and alpha go to every block.
The M-step is the in-memory model's own (`crowdlab.models.glad.GLAD.m_step`), block by block:

- the ability step (`GLAD._ascend_alpha`): a Newton step per worker from the gradient and curvature of Q, which are
  sums over the worker's labels, so each block returns its share (one pass), then the step halved per worker
  until that worker's part of Q does not fall (`_halve`). Q is separable by worker given b, so one more pass
  evaluates every worker's part of Q at all 12 trial step lengths 1, 1/2, ..., 1/2^11 at once, and the first
  length the in-memory line search would accept is taken;
- the difficulty step (`GLAD._ascend_b`): local to each item, run on each block as it is (folded into the next
  pass).

So an M-step of R rounds is 2R passes over the blocks (the E-step shares the first). The stopping rule,
objective (log p(x | theta) + the Gaussian priors, whose b part is summed by blocks), lower bound and monotonicity
check are those of the in-memory `crowdlab.engines.run.Run` started by majority vote, as in
`crowdlab.engines.blocks.batch_em`; the largest parameter change includes every beta_i (a maximum over blocks)
and the median-difficulty confusion matrices (`glad_params`, the median of all beta).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from crowdlab.engines.blocks import EngineSnapshot, _block_model
from crowdlab.engines.run import PARAM_TOL, REL_TOL_MONOTONE, settled_at, stalled_at
from crowdlab.models.base import _inner, entropy_rows
from crowdlab.models.glad import GLAD, GladParams, _obs_terms, glad_params, sigmoid

TRIES = 12  # the halvings of `crowdlab.models.glad._halve`

Blocks = Callable[[], Iterator[tuple[int, int, object]]]
"""``blocks()``: (first item, last item + 1, the block as `crowdlab.engines.blocks.Block`) for every block, in item
order."""


def _local_params(pi: np.ndarray, alpha: np.ndarray, b: np.ndarray) -> GladParams:
    """The parameters a block's E-step reads: pi, alpha and the block's own beta (no confusion view)."""
    return GladParams(pi=pi, gamma=None, extra={"ability": alpha}, beta=np.exp(b))


def _w(block, q: np.ndarray) -> np.ndarray:
    return q[block.item, block.label]


def _alpha_sums(block, alpha: np.ndarray, b: np.ndarray, w: np.ndarray, K: int) -> np.ndarray:
    """(3, M): the block's share of the gradient, curvature and value of Q in each ability (data terms only)."""
    M = alpha.shape[0]
    beta_o = np.exp(b[block.item])
    x = alpha[block.worker] * beta_o
    s = sigmoid(x)
    out = np.empty((3, M))
    out[0] = np.bincount(block.worker, weights=(w - s) * beta_o, minlength=M)
    out[1] = np.bincount(block.worker, weights=s * (1.0 - s) * beta_o**2, minlength=M)
    out[2] = np.bincount(block.worker, weights=_obs_terms(block, alpha, b, w, K), minlength=M)
    return out


def _trial_sums(block, cands: np.ndarray, b: np.ndarray, w: np.ndarray, K: int) -> np.ndarray:
    """(TRIES, M): the block's share of each worker's part of Q at every trial ability vector."""
    M = cands.shape[1]
    return np.stack([np.bincount(block.worker, weights=_obs_terms(block, c, b, w, K), minlength=M) for c in cands])


def _halve_all(model: GLAD, alpha: np.ndarray, sums: np.ndarray, trials: np.ndarray, cands: np.ndarray, step):
    """`crowdlab.models.glad._halve` on the ability step, given every trial's value at once."""
    mu, var = model.alpha_prior
    f0 = sums[2] - (alpha - mu) ** 2 / (2 * var)
    slack = 16 * np.finfo(np.float64).eps * np.maximum(1.0, np.abs(f0))
    todo = np.abs(step) > 1e-12 * (1.0 + np.abs(alpha))
    out = alpha.copy()
    for i in range(TRIES):
        if not todo.any():
            break
        fc = trials[i] - (cands[i] - mu) ** 2 / (2 * var)
        ok = todo & np.isfinite(fc) & (fc >= f0 - slack)
        out[ok] = cands[i][ok]
        todo &= ~ok
    return out


def _b_prior(model: GLAD, b: np.ndarray) -> float:
    mb, vb = model.beta_prior
    return float(-0.5 * (((b - mb) ** 2) / vb + np.log(2 * np.pi * vb)).sum())


def _log_prior(model: GLAD, pi: np.ndarray, alpha: np.ndarray, b_prior: float) -> float:
    """`GLAD.log_prior` with the items' part ``b_prior`` summed by blocks."""
    from crowdlab.models.base import log_dirichlet

    ma, va = model.alpha_prior
    out = -0.5 * (((alpha - ma) ** 2) / va + np.log(2 * np.pi * va)).sum() + b_prior
    if model.class_prior == "estimate" and model.prior > 0:
        out += log_dirichlet(pi, 1.0 + model.prior)
    return float(out)


def glad_em(
    model: GLAD,
    blocks: Blocks,
    N: int,
    M: int,
    K: int,
    known: np.ndarray | None,
    *,
    tol: float,
    max_iter: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[EngineSnapshot], list[str], np.ndarray]:
    """GLAD's EM over ``blocks`` from the majority-vote start; (snapshots, violations, the posterior of the last
    E-step (N, K), what ``cl.fit`` reports). The last snapshot's parameters hold beta for all N items."""
    q = np.empty((N, K))
    for lo, hi, blk in blocks():  # the start: vote fractions, known items clamped
        v = blk.vote_counts
        tot = v.sum(axis=1, keepdims=True)
        qb = np.where(tot > 0, v / np.maximum(tot, 1), 1.0 / K)
        if known is not None:
            kb = known[lo:hi]
            idx = np.flatnonzero(kb >= 0)
            qb[idx] = 0.0
            qb[idx, kb[idx]] = 1.0
        q[lo:hi] = qb
    H = entropy_rows(q)
    b = np.full(N, model.beta_prior[0])
    alpha = np.full(M, model.alpha_prior[0])
    mu, var = model.alpha_prior

    def pi_of(qq: np.ndarray) -> np.ndarray:
        if model.class_prior == "uniform":
            return np.full(K, 1.0 / K)
        return (qq.sum(axis=0) + model.prior) / (N + model.prior * K)

    def m_step(alpha: np.ndarray, rounds: int, first: np.ndarray | None) -> np.ndarray:
        """The ability/difficulty rounds on the current q; ``b`` is updated in place; the new alpha returned.
        ``first``: the gradient sums of the first round when the E-step's pass already made them."""
        for r in range(rounds):
            if r == 0 and first is not None:
                sums = first
            else:
                sums = np.zeros((3, M))
                for lo, hi, blk in blocks():
                    sums += _alpha_sums(blk, alpha, b[lo:hi], _w(blk, q[lo:hi]), K)
            grad = sums[0] - (alpha - mu) / var
            curv = sums[1] + 1.0 / var
            step = grad / curv
            t = 0.5 ** np.arange(TRIES)
            cands = alpha[None, :] + t[:, None] * step[None, :]
            trials = np.zeros((TRIES, M))
            for lo, hi, blk in blocks():
                trials += _trial_sums(blk, cands, b[lo:hi], _w(blk, q[lo:hi]), K)
            alpha = _halve_all(model, alpha, sums, trials, cands, step)
            for lo, hi, blk in blocks():  # the difficulty step, local to each block's items
                b[lo:hi] = model._ascend_b(blk, alpha, b[lo:hi], _w(blk, q[lo:hi]), K)
        return alpha

    def e_pass(pi: np.ndarray, alpha: np.ndarray, q_old: np.ndarray):
        """The E-step at (pi, alpha, b): the new posterior, sum of log p(x_n | theta), E_{q_old}[log joint], H(q_new),
        the items' prior term, and the next M-step's first gradient sums (on the new q)."""
        q_new = np.empty_like(q_old)
        rows = inner_old = ent = bp = 0.0
        sums = np.zeros((3, M))
        for lo, hi, blk in blocks():
            kn = None if known is None else known[lo:hi]
            m = _block_model(model, blk, kn)
            p = _local_params(pi, alpha, b[lo:hi])
            e = m._soft(blk, p)
            q_new[lo:hi] = e.q
            rows += float(e.rows.sum())
            inner_old += _inner(q_old[lo:hi], e.lj)
            ent += float(e.entropy) if e.entropy is not None else entropy_rows(e.q)
            bp += _b_prior(model, b[lo:hi])
            sums += _alpha_sums(blk, alpha, b[lo:hi], _w(blk, e.q), K)
        return q_new, rows, inner_old, ent, bp, sums

    def full(pi, alpha) -> GladParams:
        return glad_params(pi, alpha, np.exp(b))

    violations: list[str] = []

    def check(prev: EngineSnapshot, o: float, bd: float, kind: str, n: int) -> str | None:
        if not (np.isfinite(o) and np.isfinite(bd)):
            msg = f"non-finite objective after {kind}-step {n}"
            violations.append(msg)
            return msg
        problems = []
        if o < prev.objective - REL_TOL_MONOTONE * max(1.0, abs(prev.objective)):
            problems.append(f"objective fell by {prev.objective - o:.3g}")
        if bd < prev.bound - REL_TOL_MONOTONE * max(1.0, abs(prev.bound)):
            problems.append(f"bound F(q, theta) fell by {prev.bound - bd:.3g}")
        if not problems:
            return None
        msg = f"{kind}-step to snapshot {n}: " + "; ".join(problems)
        violations.append(msg)
        return msg

    pi = pi_of(q)
    alpha = m_step(alpha, 3 * model.m_rounds, None)
    params = full(pi, alpha)
    q_new, rows, inner_old, ent, bp, sums = e_pass(pi, alpha, q)
    lp = _log_prior(model, pi, alpha, bp)
    snaps = [EngineSnapshot(0, "init", 0, params, rows + lp, inner_old + lp + H)]
    q_report = q
    it = 0
    while it < max_iter:
        # E-step: q_new at the same parameters; its bound is the objective (the posterior is exact)
        q, H = q_new, ent
        q_report = q
        prev = snaps[-1]
        o = prev.objective
        n = len(snaps)
        snaps.append(EngineSnapshot(n, "E", it, params, o, o, check(prev, o, o, "E", n)))
        # M-step, warm-started at the E-step's parameters; objective and bound from the next E pass
        it += 1
        before = params
        pi = pi_of(q)
        alpha = m_step(alpha, model.m_rounds, sums)
        params = full(pi, alpha)
        q_new, rows, inner_old, ent, bp, sums = e_pass(pi, alpha, q)
        lp = _log_prior(model, pi, alpha, bp)
        o, bd = rows + lp, inner_old + lp + H
        dparam = _change(before, params)
        prev = snaps[-1]
        n = len(snaps)
        snaps.append(EngineSnapshot(n, "M", it, params, o, bd, check(prev, o, bd, "M", n), dparam))
        if progress is not None:
            progress(it, max_iter)
        if settled_at(snaps, tol, PARAM_TOL) or stalled_at(snaps):
            break
    return snaps, violations, q_report


def _change(a: GladParams, b: GladParams) -> float:
    """The largest change of any parameter (`crowdlab.engines.run.param_change`, without concatenating)."""
    return float(
        max(
            np.max(np.abs(b.pi - a.pi)),
            np.max(np.abs(b.gamma - a.gamma)),
            np.max(np.abs(b.alpha - a.alpha)),
            np.max(np.abs(b.beta - a.beta)) if b.beta.size else 0.0,
        )
    )
