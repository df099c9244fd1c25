"""GLAD (Whitehill et al. 2009) on blocks of items: the streaming engine's batch EM for a model whose item
difficulties are parameters of each item.

GLAD's parameters are the class prior pi (K,), the worker abilities alpha (M,) and the item inverse difficulties
beta_i = exp(b_i) (N,). Each item's b_i is local to the block that holds the item, so it stays with the block
(here: one (N,) array beside the (N, K) posterior, and the (2, N) gradient and information of the difficulty step:
8 (K + 3) bytes per item); only pi and alpha go to every block. The M-step is the in-memory model's own
(`crowdlab.models.glad_steps`, as `crowdlab.models.glad.GLAD.m_step` runs it), block by block; each round is:

- the ability step (`glad_steps.alpha_step`): a Newton step per worker from the gradient and curvature of Q, which
  are sums over the worker's labels (the E-step's pass, or the previous round's difficulty pass, returns them), so
  one pass at the stepped abilities (`glad_steps.alpha_trial`) gives the gradient that checks every worker's step,
  and, kept with each block, its items' gradient and information for the difficulty step; a worker whose step the
  check does not clear costs another pass (its values of Q, then a halved step), as in memory;
- the difficulty step (`glad_steps.b_step`): local to each block's items, run on each block as it is; the same
  pass returns the next round's ability gradient and curvature.

So an M-step of R rounds is 2R passes over the blocks (the E-step's pass gives the first round's sums). The
stopping rule, objective (log p(x | theta) + the Gaussian priors, whose b part is summed by blocks), lower bound and
monotonicity check are those of the in-memory `crowdlab.engines.run.Run` started by majority vote, as in
`crowdlab.engines.blocks.batch_em`; the largest parameter change includes every beta_i (a maximum over blocks)
and the median-difficulty confusion matrices (`glad_params`, the median of all beta).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from crowdlab.engines.accel import null_from_counts
from crowdlab.engines.blocks import EngineSnapshot, Outcome, _block_model, accelerated_em, monotone_check
from crowdlab.engines.run import PARAM_TOL, at_optimum, settled_at, stalled_at
from crowdlab.models import glad_steps
from crowdlab.models.base import _inner, entropy_rows
from crowdlab.models.glad import GLAD, GladParams, glad_params

Blocks = Callable[[], Iterator[tuple[int, int, object]]]
"""``blocks()``: (first item, last item + 1, the block as `crowdlab.engines.blocks.Block`) for every block, in item
order."""


def _local_params(pi: np.ndarray, alpha: np.ndarray, b: np.ndarray) -> GladParams:
    """The parameters a block's E-step reads: pi, alpha and the block's own beta (no confusion view)."""
    return GladParams(pi=pi, gamma=None, extra={"ability": alpha}, beta=np.exp(b))


def _w(block, q: np.ndarray) -> np.ndarray:
    return glad_steps.gather_w(q, block)


def _trial(block, q, alpha, b) -> tuple[np.ndarray, np.ndarray]:
    """The block's share of the workers' gradient at (alpha, b), and its items' (2, n) gradient and information."""
    return glad_steps.alpha_trial(block, _w(block, q), alpha, np.exp(b))


def _values(block, q, alpha, b, mask) -> np.ndarray:
    """(M,): the block's share of the values of Q at (alpha, b) of the workers in ``mask``."""
    return glad_steps.values(block, _w(block, q), alpha, np.exp(b), "worker", mask)


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


class StreamOps:
    """The passes of `glad_em` over the streaming engine's buckets: the state (q (N, K), b (N,) and the difficulty
    step's (2, N) gradient and information) in memory."""

    def __init__(
        self, blocks: Blocks, model: GLAD, N: int, M: int, K: int, known: np.ndarray | None, n_obs: int = 0
    ) -> None:
        self.blocks, self.model, self.M, self.K, self.known = blocks, model, M, K, known
        self.n_items = N
        self.q = np.empty((N, K))
        self.b = np.full(N, model.beta_prior[0])
        self.items = np.zeros((2, N))
        self.report = self.q
        self.passes = 0  # passes over the buckets
        glad_steps.prepare(n_obs)  # the compiled passes whenever the in-memory fit of this file runs them

    def start(self) -> float:
        self.passes += 1
        self.answers = np.zeros((self.M, self.K))  # n_m(l): each worker's answers (the no-signal objective)
        for lo, hi, blk in self.blocks():
            self.q[lo:hi] = _votes(blk, None if self.known is None else self.known[lo:hi], self.K)
            self.answers += _answers(blk, self.M, self.K)
        return entropy_rows(self.q)

    def worker_sums(self, alpha: np.ndarray) -> np.ndarray:
        self.passes += 1
        sums = np.zeros((3, self.M))
        for lo, hi, blk in self.blocks():
            sums += glad_steps.worker_sums(blk, _w(blk, self.q[lo:hi]), alpha, np.exp(self.b[lo:hi]))
        return sums

    def alpha_trial(self, alpha: np.ndarray) -> np.ndarray:
        self.passes += 1
        gw = np.zeros(self.M)
        for lo, hi, blk in self.blocks():
            g, self.items[:, lo:hi] = _trial(blk, self.q[lo:hi], alpha, self.b[lo:hi])
            gw += g
        return gw

    def worker_values(self, alpha: np.ndarray, mask: np.ndarray) -> np.ndarray:
        self.passes += 1
        out = np.zeros(self.M)
        for lo, hi, blk in self.blocks():
            out += _values(blk, self.q[lo:hi], alpha, self.b[lo:hi], mask)
        return out

    def b_step(self, alpha: np.ndarray, last: bool) -> np.ndarray | None:
        self.passes += 1
        sums = None if last else np.zeros((3, self.M))
        for lo, hi, blk in self.blocks():
            w = _w(blk, self.q[lo:hi])
            self.b[lo:hi], part = glad_steps.b_step(
                self.model.beta_prior, blk, w, alpha, self.b[lo:hi], self.items[:, lo:hi], last
            )
            if sums is not None:
                sums += part
        return sums

    def class_sums(self) -> np.ndarray:
        return self.q.sum(axis=0)

    def item_gain(self, alpha: np.ndarray) -> float:
        """The items' part of `glad_steps.newton_gain` at (alpha, b) on the current q (`glad_em`'s stall test)."""
        self.alpha_trial(alpha)
        prior = self.model.alpha_prior, self.model.beta_prior
        return glad_steps.newton_gain(*prior, None, self.b, None, self.items)[1]

    def e_pass(self, pi: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        self.passes += 1
        q_new = np.empty_like(self.q)
        out = np.zeros(4 + 3 * self.M)
        for lo, hi, blk in self.blocks():
            kn = None if self.known is None else self.known[lo:hi]
            qb, part = _e_block(self.model, blk, kn, pi, alpha, self.b[lo:hi], self.q[lo:hi], self.K)
            q_new[lo:hi] = qb
            out += part
        self.report, self.q = self.q, q_new
        return out

    def beta(self) -> np.ndarray:
        return np.exp(self.b)

    # accelerated EM (`GladMap`): difficulties set from extrapolated parameters; the current posterior reported
    def set_b(self, b: np.ndarray) -> None:
        self.b = np.array(b, dtype=np.float64)

    def report_current(self) -> None:
        self.report = self.q


def _answers(blk, M: int, K: int) -> np.ndarray:
    """(M, K): how often each worker gave each label in the block."""
    return np.bincount(blk.worker.astype(np.int64) * K + blk.label, minlength=M * K).reshape(M, K).astype(float)


def _votes(blk, known: np.ndarray | None, K: int) -> np.ndarray:
    """The start: vote fractions, known items clamped."""
    v = blk.vote_counts
    tot = v.sum(axis=1, keepdims=True)
    qb = np.where(tot > 0, v / np.maximum(tot, 1), 1.0 / K)
    if known is not None:
        idx = np.flatnonzero(known >= 0)
        qb[idx] = 0.0
        qb[idx, known[idx]] = 1.0
    return qb


def _e_block(model: GLAD, blk, known, pi, alpha, b, q_old, K):
    """One block's E-step: (its new q, [sum log p(x_n | theta), E_{q_old}[log joint], H(q_new), the items' prior
    term, then the next M-step's first ability sums (3 M, `glad_steps.worker_sums`) on the new q])."""
    m = _block_model(model, blk, known)
    params = _local_params(pi, alpha, b)
    e = m._soft(blk, params)
    ent = float(e.entropy) if e.entropy is not None else entropy_rows(e.q)
    head = [float(e.rows.sum()), _inner(q_old, e.lj), ent, _b_prior(model, b)]
    w, sums = m.first_sums(blk, e.q, params)
    if sums is None:
        sums = glad_steps.worker_sums(blk, w, alpha, params.beta)
    return e.q, np.concatenate([head, sums.ravel()])


def glad_em(
    model: GLAD,
    ops,
    M: int,
    K: int,
    *,
    tol: float,
    max_iter: int,
    progress: Callable[[int, int], None] | None = None,
    accelerate: bool = False,
    n_obs: int = 0,
) -> Outcome:
    """GLAD's EM through ``ops`` (`StreamOps`, or the Dask engine's `DaskOps`) from the majority-vote start.
    ``ops.report`` is then the posterior of the last E-step, what ``cl.fit`` reports;
    the last snapshot's parameters hold beta for every item (in ``ops``' item order; older snapshots let their
    beta go, as a long in-memory fit lets old parameter sets go). ``accelerate``: SQUAREM around the EM map
    (`GladMap`; `crowdlab.engines.blocks.accelerated_em`); ``ops.report`` is then the posterior at the last
    parameters, as ``cl.fit``'s accelerated run reports."""
    H = ops.start()
    alpha = np.full(M, model.alpha_prior[0])

    def pi_of() -> np.ndarray:
        if model.class_prior == "uniform":
            return np.full(K, 1.0 / K)
        return (ops.class_sums() + model.prior) / (ops.n_items + model.prior * K)

    def m_step(alpha: np.ndarray, rounds: int, sums: np.ndarray | None) -> np.ndarray:
        """The ability/difficulty rounds on the current q (``ops`` updates b); the new alpha. ``sums``: the first
        round's ability sums when the E-step's pass already made them."""
        if sums is None:
            sums = ops.worker_sums(alpha)
        for r in range(rounds):
            alpha, fresh = glad_steps.alpha_step(model.alpha_prior, alpha, sums, ops.alpha_trial, ops.worker_values)
            if not fresh:
                ops.alpha_trial(alpha)  # the items' gradient and information at the abilities taken
            sums = ops.b_step(alpha, r == rounds - 1)  # the difficulty step, local to each block's items
        return alpha

    def e_pass(pi, alpha):
        out = ops.e_pass(pi, alpha)
        return out[0], out[1], out[2], out[3], out[4:].reshape(3, M)

    violations: list[str] = []

    def check(prev: EngineSnapshot, o: float, bd: float, kind: str, n: int) -> str | None:
        return monotone_check(violations, n, prev, o, bd, kind)

    pi = pi_of()
    alpha = m_step(alpha, 3 * model.m_rounds, None)
    params = glad_params(pi, alpha, ops.beta())
    rows, inner_old, ent, bp, sums = e_pass(pi, alpha)
    lp = _log_prior(model, pi, alpha, bp)
    snaps = [EngineSnapshot(0, "init", 0, params, rows + lp, inner_old + lp + H)]
    if accelerate:
        em = GladMap(model, ops, pi_of, m_step, e_pass)
        null = null_from_counts(ops.answers)
        point = (params, em.adopt(params, sums), rows + lp)
        return accelerated_em(
            model,
            em,
            snaps,
            violations,
            point,
            tol=tol,
            max_iter=max_iter,
            progress=progress,
            n_obs=n_obs,
            null=null,
            slim=lambda p: replace(p, beta=None),
        )
    it = 0
    while it < max_iter:
        # E-step: the posterior at the same parameters; its bound is the objective (the posterior is exact)
        H = ent
        prev = snaps[-1]
        o = prev.objective
        n = len(snaps)
        snaps.append(EngineSnapshot(n, "E", it, params, o, o, check(prev, o, o, "E", n)))
        # M-step, warm-started at the E-step's parameters; objective and bound from the next E pass
        it += 1
        before = params
        pi = pi_of()
        alpha = m_step(alpha, model.m_rounds, sums)
        params = glad_params(pi, alpha, ops.beta())
        rows, inner_old, ent, bp, sums = e_pass(pi, alpha)
        lp = _log_prior(model, pi, alpha, bp)
        o, bd = rows + lp, inner_old + lp + H
        dparam = _change(before, params)
        prev = snaps[-1]
        n = len(snaps)
        snaps.append(EngineSnapshot(n, "M", it, params, o, bd, check(prev, o, bd, "M", n), dparam))
        for old in snaps[-4:-2]:  # the per-item difficulties of older snapshots go
            if old.params is not None and old.params.beta is not None and old.params is not params:
                old.params = replace(old.params, beta=None)
        if progress is not None:
            progress(it, max_iter)
        if settled_at(snaps, tol, PARAM_TOL):
            break
        if stalled_at(snaps):  # at the optimum (the gradient leaves nothing to gain: converged) or not
            ga, _ = glad_steps.newton_gain(model.alpha_prior, model.beta_prior, alpha, None, sums, None)
            gain = ga + ops.item_gain(alpha) + model.class_prior_gain(ops.class_sums(), ops.n_items, pi)
            snaps[-1].at_optimum = at_optimum(gain, o, tol)
            break
    return Outcome(snaps, violations, True)


class GladMap:
    """GLAD's EM map on blocks, for accelerated EM (`crowdlab.engines.accel`): ``evaluate(params)`` is one E pass
    with ``params`` (their difficulties b = log beta first set in the blocks unless the blocks hold them: an
    extrapolated point's), giving log p(x | params) + log prior; ``m_step(state)`` the ability/difficulty rounds
    of `glad_em` on that E pass's posterior, warm-started at its parameters. The blocks hold the posterior of the
    last E pass only (beside the one reported), so an M-step from an earlier point evaluates it again: one pass
    against the 2 ``m_rounds`` (more where a step's check fails) of an M-step, and rare (once a fit on the bundled
    sets and on the weak crowd of tests/unit/test_engine_accel.py: the posterior reported at the stop, after the
    maximum check)."""

    def __init__(self, model: GLAD, ops, pi_of, m_rounds, e_pass) -> None:
        self.model, self.ops, self.pi_of, self.m_rounds, self.e_pass = model, ops, pi_of, m_rounds, e_pass
        self.current = 0  # the E pass whose posterior the blocks hold (a count)
        self.b_of = None  # the parameters whose difficulties the blocks hold

    def _hold_b(self, params: GladParams) -> None:
        if self.b_of is not params:
            self.ops.set_b(np.log(params.beta))
            self.b_of = params

    def adopt(self, params: GladParams, sums: np.ndarray):
        """The start's E pass (the blocks hold its posterior and ``params``' difficulties) as an evaluation."""
        self.b_of = params
        self.current += 1
        return (self.current, params, sums)

    def evaluate(self, params: GladParams):
        self._hold_b(params)
        rows, _inner, _ent, bp, sums = self.e_pass(params.pi, params.alpha)
        self.current += 1
        obj = float(rows + _log_prior(self.model, params.pi, params.alpha, bp))
        return (self.current, params, sums), obj

    def _restore(self, state) -> np.ndarray:
        """The blocks back at ``state``'s posterior and difficulties; its E pass's gradient sums."""
        token, params, sums = state
        if token != self.current:
            sums = self.evaluate(params)[0][2]
        self._hold_b(params)
        return sums

    def m_step(self, state) -> GladParams:
        sums = self._restore(state)
        params = state[1]
        pi = self.pi_of()
        alpha = self.m_rounds(params.alpha, self.model.m_rounds, sums)
        new = glad_params(pi, alpha, self.ops.beta())
        self.b_of = new
        return new

    def finish(self, state) -> None:
        """The posterior at ``state``'s parameters reported (``ops.report``)."""
        self._restore(state)
        self.ops.report_current()


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


# ---------------------------------------------------------------------- the Dask engine's passes
class DaskOps:
    """The passes of `glad_em` on the Dask engine: each part (`crowdlab.engines.distributed.Part`) keeps its q, its
    previous q and its b on the worker that holds it (``glad``: a dict on the part), and every pass is one call per
    worker to the engine's actor there (`crowdlab.engines.distributed._Rounds.call`) returning summed arrays, as
    the engine's rounds are. ``beta()`` gathers every item's beta (for the median-difficulty view and the largest
    parameter change), in the parts' order."""

    def __init__(self, actors: list, model: GLAD, N: int, M: int, K: int, n_obs: int = 0) -> None:
        self.actors, self.model, self.n_items, self.M, self.K, self.n_obs = actors, model, N, M, K, n_obs
        self.passes = 0  # passes over the parts
        self.sizes: list[int] | None = None  # items per worker, in the order of ``beta()`` (for ``set_b``)

    def _all(self, fn, *args):
        calls = [a.call(fn, *args) for a in self.actors]
        return [call.result() for call in calls]

    def _sum(self, fn, *args):
        total = None
        for part in self._all(fn, *args):  # in the workers' fixed order
            total = part if total is None else total + part
        return total

    def start(self) -> float:
        self.passes += 1
        out = self._sum(_d_start, self.M, self.K, self.model.beta_prior[0], self.n_obs)
        self.answers = out[1:].reshape(self.M, self.K)  # n_m(l): each worker's answers (the no-signal objective)
        return float(out[0])

    def worker_sums(self, alpha):
        self.passes += 1
        return self._sum(_d_worker_sums, alpha, self.M)

    def alpha_trial(self, alpha):
        self.passes += 1
        return self._sum(_d_alpha_trial, alpha, self.M)

    def worker_values(self, alpha, mask):
        self.passes += 1
        return self._sum(_d_values, alpha, mask, self.M)

    def b_step(self, alpha, last: bool):
        self.passes += 1
        return self._sum(_d_bstep, self.model, alpha, self.M, last)

    def class_sums(self):
        return self._sum(_d_class_sums, self.K)

    def item_gain(self, alpha) -> float:
        self.passes += 1
        return float(self._sum(_d_item_gain, self.model, alpha, self.M))

    def e_pass(self, pi, alpha):
        self.passes += 1
        return self._sum(_d_epass, self.model, pi, alpha, self.M, self.K)

    def beta(self) -> np.ndarray:
        return np.concatenate([np.zeros(0), *self._all(_d_beta)])

    def finish(self) -> None:
        """Each part's reported posterior (the last E-step's) where the engine's frames read it (``cur``)."""
        self._all(_d_finish)

    # accelerated EM (`GladMap`): as `StreamOps`', each part its own share
    def set_b(self, b: np.ndarray) -> None:
        if self.sizes is None:
            self.sizes = [int(n) for n in self._all(_d_size)]
        cuts = np.cumsum([0, *self.sizes])
        calls = [a.call(_d_set_b, b[lo:hi]) for a, lo, hi in zip(self.actors, cuts[:-1], cuts[1:])]
        for call in calls:
            call.result()

    def report_current(self) -> None:
        self._all(_d_report_current)


def _live(parts):
    return [p for p in parts if p.block is not None]


def _d_start(parts, M: int, K: int, mu_b: float, n_obs: int) -> np.ndarray:
    """[H(q), then the answers n_m(l) (M K)] of the start on a worker's parts."""
    glad_steps.prepare(n_obs)  # in this worker's process
    out = np.zeros(1 + M * K)
    for p in parts:
        n = len(p.items)
        p.glad = {"q": np.zeros((n, K)), "b": np.full(n, mu_b), "items": np.zeros((2, n))}
        if p.block is not None:
            p.glad["q"] = _votes(p.block, p.known, K)
            out[1:] += _answers(p.block, M, K).ravel()
        p.glad["report"] = p.glad["q"]
        out[0] += entropy_rows(p.glad["q"])
    return out


def _d_worker_sums(parts, alpha, M: int) -> np.ndarray:
    out = np.zeros((3, M))
    for p in _live(parts):
        out += glad_steps.worker_sums(p.block, _w(p.block, p.glad["q"]), alpha, np.exp(p.glad["b"]))
    return out


def _d_alpha_trial(parts, alpha, M: int) -> np.ndarray:
    out = np.zeros(M)
    for p in _live(parts):
        g, p.glad["items"] = _trial(p.block, p.glad["q"], alpha, p.glad["b"])
        out += g
    return out


def _d_values(parts, alpha, mask, M: int) -> np.ndarray:
    out = np.zeros(M)
    for p in _live(parts):
        out += _values(p.block, p.glad["q"], alpha, p.glad["b"], mask)
    return out


def _d_bstep(parts, model: GLAD, alpha, M: int, last: bool) -> np.ndarray:
    out = np.zeros((3, M))  # (zeros after the last round: nothing reads them)
    for p in _live(parts):
        w = _w(p.block, p.glad["q"])
        p.glad["b"], part = glad_steps.b_step(model.beta_prior, p.block, w, alpha, p.glad["b"], p.glad["items"], last)
        if not last:
            out += part
    return out


def _d_item_gain(parts, model: GLAD, alpha, M: int) -> float:
    _d_alpha_trial(parts, alpha, M)
    prior = model.alpha_prior, model.beta_prior
    return sum(glad_steps.newton_gain(*prior, None, p.glad["b"], None, p.glad["items"])[1] for p in _live(parts))


def _d_class_sums(parts, K: int) -> np.ndarray:
    out = np.zeros(K)
    for p in parts:
        out += p.glad["q"].sum(axis=0)
    return out


def _d_epass(parts, model: GLAD, pi, alpha, M: int, K: int) -> np.ndarray:
    out = np.zeros(4 + 3 * M)
    for p in parts:
        if p.block is None:
            out[3] += _b_prior(model, p.glad["b"])
            continue
        q_new, part = _e_block(model, p.block, p.known, pi, alpha, p.glad["b"], p.glad["q"], K)
        p.glad["report"], p.glad["q"] = p.glad["q"], q_new
        out += part
    return out


def _d_beta(parts) -> np.ndarray:
    return np.concatenate([np.zeros(0), *(np.exp(p.glad["b"]) for p in parts)])


def _d_finish(parts) -> int:
    for p in parts:
        p.cur = (p.glad["report"], None)
    return 0


def _d_size(parts) -> int:
    return sum(len(p.items) for p in parts)


def _d_set_b(parts, b: np.ndarray) -> int:
    at = 0
    for p in parts:
        n = len(p.items)
        p.glad["b"] = np.array(b[at : at + n], dtype=np.float64)
        at += n
    return 0


def _d_report_current(parts) -> int:
    for p in parts:
        p.glad["report"] = p.glad["q"]
    return 0
