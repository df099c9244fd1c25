"""Batch EM where the rows are not all in one array: the part shared by the streaming and the Dask engines.

The class models' E-step needs only the parameters and one item's labels, and their M-step needs only expected
sufficient statistics (DESIGN.md, "Scale: one model, three engines"). So an engine splits the rows into *blocks
by item* (every row of an item in one block: a bucket file of the streaming engine, a partition of the Dask
engine) and runs, per block, `block_round`: the E-step of seed 003 eq. (9) for the block's items with the
broadcast parameters, then the block's share of the M-step statistics, the expected counts
counts[m, k', k] = sum_n q_nk #(worker m said k' on item n) (the numerator of eq. (11)) and the class totals
sum_n q_nk. The statistics of the blocks add up (`Stats.__add__`, in any order: a loop or a tree reduction), and
the model's own ``m_step_from_stats`` turns the sums into parameters, so the formulas live in the model once.

`batch_em` drives an engine with the same half-step schedule, objective, lower bound, convergence rule and
monotonicity check as the in-memory :class:`crowdlab.engines.run.Run` started by majority vote, so the engines agree
with
``cl.fit`` to rounding (1e-8 in the tests). One round over the blocks per EM iteration: the E-step with theta_t
and the statistics of the new posterior come out of the same pass, and log p(x | theta_t) with them.

Supported: "mv", "ds", "one_coin", "two_coin" (soft EM, optional prior strength), started by majority vote.
Not supported here: hard EM, other initialisations, the scores/HMM/MRF/Raykar models (their latent variables or
features do not split by item), gold inside the engines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from crowdlab.engines.init import INITS
from crowdlab.engines.run import (
    PARAM_TOL,
    REL_TOL_MONOTONE,
    complete_objectives,
    param_change,
    settled_at,
    snapshot_history,
    stalled_at,
)
from crowdlab.errors import ModelError
from crowdlab.io.data import Annotations
from crowdlab.models import make_model
from crowdlab.models.base import entropy_rows, safe_log
from crowdlab.models.majority import MajorityVote

ENGINE_METHODS = ("mv", "ds", "one_coin", "two_coin")


@dataclass
class Stats:
    """The sums one round produces; blocks combine with ``+``.

    ``counts`` (M, K, K) expected counts, ``q_sum`` (K,) class totals, ``n_items``; ``loglik`` sum_n log sum_k
    p(x_n, y_n = k | theta) and ``complete`` sum_nk q_nk log p(x_n, y_n = k | theta) at the parameters of the
    E-step (0 for the majority-vote start), ``entropy`` H(q); ``agree`` (M,) labels that agree with the hard
    label (majority vote only).
    """

    counts: np.ndarray
    q_sum: np.ndarray
    n_items: int = 0
    loglik: float = 0.0
    complete: float = 0.0
    entropy: float = 0.0
    agree: np.ndarray | None = None

    def __add__(self, other: Stats) -> Stats:
        agree = None if self.agree is None else self.agree + other.agree
        return Stats(
            self.counts + other.counts,
            self.q_sum + other.q_sum,
            self.n_items + other.n_items,
            self.loglik + other.loglik,
            self.complete + other.complete,
            self.entropy + other.entropy,
            agree,
        )

    @staticmethod
    def zero(M: int, K: int, mv: bool = False) -> Stats:
        return Stats(np.zeros((M, K, K)), np.zeros(K), agree=np.zeros(M) if mv else None)


def add_stats(a: Stats, b: Stats) -> Stats:
    """``a + b`` as a function (for tree reductions)."""
    return a + b


class _Blank(Sequence):
    """``n`` blank names: a block's item (and worker, class) names, which the model functions never read."""

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [""] * len(range(*i.indices(self.n)))
        if not -self.n <= i < self.n:
            raise IndexError(i)
        return ""


class Block(Annotations):
    """One block's rows as :class:`crowdlab.data.Annotations` over its own items: item codes 0 .. n_items - 1 local
    to the block (every row of those items is in it), worker and label codes global. Built without the reader's
    checks and name tuples (the engine made the codes), so that the in-memory models' own functions (the E-step's
    sparse product and compiled row kernels, the M-step's ``X.T @ q``) run on a block as they run on a data set.
    """

    def __post_init__(self) -> None:
        for f in ("item", "worker", "label"):
            object.__setattr__(self, f, np.ascontiguousarray(getattr(self, f), dtype=np.int32))


def make_block(
    item: np.ndarray, worker: np.ndarray, label: np.ndarray, n_items: int, M: int, K: int, label_counts=None
) -> Block:
    """A :class:`Block`; ``label_counts``: its (n_items, M K) count matrix when already built (the streaming
    engine stores it with the bucket), else built on first use and kept (the Dask engine's blocks stay on their
    worker)."""
    b = Block(item, worker, label, _Blank(n_items), _Blank(M), _Blank(K))
    if label_counts is not None:
        b.__dict__["label_counts"] = label_counts
    return b


def _bind_known(model, block: Block, known: np.ndarray | None) -> None:
    """Semi-supervised EM on a block: the model's clamp reads the block's known classes (-1: unknown)."""
    if known is None:
        model.known = None
        model.__dict__.pop("_known_memo", None)
        return
    model.known = known
    model.__dict__["_known_memo"] = (block, known)


def block_round(
    block: Block | None,
    model,
    params=None,
    mode: str = "em",
    mv_bonus: np.ndarray | None = None,
    known: np.ndarray | None = None,
    *,
    n_items: int = 0,
    M: int = 0,
    K: int = 0,
) -> tuple[np.ndarray, np.ndarray | None, Stats]:
    """One block's E-step and M-step statistics: (q (n_items, K), hard labels or None, Stats).

    ``mode``: "em" (the model's own E-step with ``params``: `LatentModel._soft`, known items clamped), "votes"
    (q = vote fractions: EM's majority-vote start) or "mv" (majority vote with ties split, hard labels by the rule
    of `crowdlab.models.majority.majority_labels`, whose tie bonus is ``mv_bonus``). ``block`` None: an empty
    block (``n_items``, ``M``, ``K`` give the shapes).
    """
    from crowdlab.models.base import _inner, column_sums
    from crowdlab.models.dawid_skene import expected_counts

    if block is not None:
        n_items, M, K = block.n_items, block.n_workers, block.n_classes
    stats = Stats.zero(M, K, mode == "mv")
    stats.n_items = int(n_items)
    hard = None
    if block is None or not n_items:
        return np.zeros((n_items, K)), (np.zeros(n_items, np.int32) if mode == "mv" else None), stats
    if mode == "em":
        _bind_known(model, block, known)
        e = model._soft(block, params)
        q = e.q
        stats.loglik = float(e.rows.sum())
        stats.complete = _inner(q, e.lj)
        stats.entropy = float(e.entropy) if e.entropy is not None else entropy_rows(q)
        stats.q_sum = e.colsum.copy() if e.colsum is not None else column_sums(q)
        model.__dict__.pop("_lj_memo", None)  # one block at a time: keep no block's arrays
        _bind_known(model, block, None)
    else:
        v = block.vote_counts
        if mode == "votes":
            tot = v.sum(axis=1, keepdims=True)
            q = np.where(tot > 0, v / np.maximum(tot, 1), 1.0 / K)
            if known is not None:
                idx = np.flatnonzero(known >= 0)
                q[idx] = 0.0
                q[idx, known[idx]] = 1.0
        else:
            top = v == v.max(axis=1, keepdims=True)
            q = top / top.sum(axis=1, keepdims=True)
            hard = np.argmax(v + mv_bonus[None, :], axis=1).astype(np.int32)
            stats.agree = np.bincount(block.worker, weights=(block.label == hard[block.item]), minlength=M).astype(
                float
            )
        stats.entropy = entropy_rows(q)
        stats.q_sum = q.sum(axis=0)
    if mode != "mv":
        stats.counts = expected_counts(block, q)
    return q, hard, stats


def mv_bonus(class_totals: np.ndarray) -> np.ndarray:
    """The tie-breaking bonus of `majority_labels`: most frequent class overall, then the lowest code."""
    K = class_totals.shape[0]
    order = np.lexsort((np.arange(K), -class_totals))
    bonus = np.empty(K)
    bonus[order] = (K - np.arange(K)) / (K + 1.0) * 0.5
    return bonus


def engine_model(method: str, prior: float = 0.0):
    """The model an engine runs, or a ModelError naming what the engines support."""
    from crowdlab.models import ALIASES

    key = ALIASES.get(method, method)
    if key == "online_ds":
        raise ModelError(
            "online EM (online_ds) is its own model (crowdlab.models.online): it reads each row once and needs no "
            "per-item state; use it through crowdlab.fit / the in-memory engine, not --stream or --engine dask."
        )
    if key not in ENGINE_METHODS:
        raise ModelError(
            f"The streaming and Dask engines run {', '.join(ENGINE_METHODS)}; {method!r} needs the whole data set "
            "in memory (crowdlab.fit)."
        )
    return make_model(key) if key == "mv" else make_model(key, prior=prior)


# ---------------------------------------------------------------------- the result
@dataclass
class EngineSnapshot:
    """What the in-memory Snapshot holds that the outputs need (no per-snapshot posterior: only the last)."""

    index: int
    kind: str
    iteration: int
    params: object
    objective: float | None
    bound: float | None
    violation: str | None = None
    param_change: float = float("nan")  # after an M-step: the largest parameter change (the stopping rule's)


class ArrowNames(Sequence):
    """Names held as one Arrow string array (the bytes of the names + 8 bytes each), not as Python strings (~60
    bytes each): 2 x 10^7 item names take ~0.4 GB instead of ~1.4 GB. Indexing gives a str; a slice gives a list
    of str."""

    def __init__(self, array) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.array[i].to_pylist()
        return self.array[i].as_py()

    def __iter__(self):
        for lo in range(0, len(self.array), 1 << 16):
            yield from self.array.slice(lo, 1 << 16).to_pylist()


class EngineData:
    """The dictionaries of a data set an engine fitted: names and counts, no rows (quacks like Annotations for
    `crowdlab.analysis.export`)."""

    gold = None
    has_gold = False
    is_continuous = False
    is_sequential = False
    graph = None

    def __init__(self, item_names, worker_names, class_names, labels_per_worker, n_obs: int, name="", notes=()):
        self.item_names = item_names
        self.worker_names = tuple(worker_names)
        self.class_names = tuple(class_names)
        self.labels_per_worker = np.asarray(labels_per_worker)
        self.n_obs = int(n_obs)
        self.name = name
        self.notes = tuple(notes)

    @property
    def n_items(self) -> int:
        return len(self.item_names)

    @property
    def n_workers(self) -> int:
        return len(self.worker_names)

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def gold_mask(self) -> np.ndarray:
        return np.zeros(self.n_items, dtype=bool)


class EngineRun:
    """The result of a streaming or Dask fit, shaped like :class:`crowdlab.engines.run.Run` at its last snapshot.

    ``posterior`` (N, K) q in the item order of ``data.item_names`` (the Dask engine: see
    `crowdlab.engines.distributed.DaskRun`), ``labels()``, ``params`` (pi, gamma[m, said, true], the model's own
    parameters), ``history()`` / ``objective_history()``, ``converged``, ``stop_reason``, ``violations``.
    """

    init = "majority"
    seed = 0  # what cl.fit records (the majority-vote start draws nothing)

    def __init__(self, data, model, snapshots, q, hard_labels, tol, max_iter, engine, violations, agree=None):
        self.data = data
        self.model = model
        self.snapshots = snapshots
        self._q = q
        self._hard = hard_labels
        self.tol = tol
        self.param_tol = PARAM_TOL
        self.max_iter = max_iter
        self.engine = engine
        self.violations = violations
        self.iterative = not isinstance(model, MajorityVote)
        self.start_description = "Majority vote (ties split evenly)" if not self.iterative else INITS["majority"]
        self.agree = agree
        self.timings: dict[str, float] = {}  # engine figures: seconds to read/prepare, seconds of EM, rounds

    @property
    def last(self) -> EngineSnapshot:
        return self.snapshots[-1]

    @property
    def current(self):
        return _Current(self.last, self._q)

    @property
    def index(self) -> int:
        return self.last.index

    @property
    def params(self):
        return self.last.params

    @property
    def posterior(self) -> np.ndarray:
        return self._q

    @property
    def objective(self) -> float | None:
        return self.last.objective

    def labels(self, snap=None) -> np.ndarray:
        if self._hard is not None:
            return self._hard
        out = np.empty(self._q.shape[0], dtype=np.int32)
        step = 1 << 20  # in slices: no (N,) int64 temporary next to a posterior of 10^7 items
        for lo in range(0, out.size, step):
            out[lo : lo + step] = np.argmax(self._q[lo : lo + step], axis=1)
        return out

    @property
    def converged(self) -> bool:
        """The in-memory engine's rule (:func:`crowdlab.engines.run.settled`): objective and parameters settled."""
        if not self.iterative:
            return True
        return settled_at(self.snapshots, self.tol, self.param_tol)

    @property
    def stop_reason(self) -> str | None:
        """ "converged", "stalled" or "max_iter", as :attr:`crowdlab.engines.run.Run.stop_reason` (None for majority
        vote);
        :data:`crowdlab.engines.run.STOP_REASONS` says it in words."""
        if not self.iterative:
            return None
        if self.converged:
            return "converged"
        if stalled_at(self.snapshots):
            return "stalled"
        return "max_iter"

    def history(self) -> dict[str, np.ndarray]:
        return snapshot_history(self.snapshots)

    def objective_history(self) -> list[float]:
        return complete_objectives(self.snapshots)


@dataclass
class _Current:
    snap: EngineSnapshot
    q: np.ndarray

    @property
    def params(self):
        return self.snap.params

    @property
    def objective(self):
        return self.snap.objective

    @property
    def iteration(self):
        return self.snap.iteration

    posterior = None


# ---------------------------------------------------------------------- the driver
Round = Callable[[object, str], Stats]
"""``round(params, mode)``: run `block_round` on every block (mode "em" with ``params``, "votes" or "mv") keeping
each block's new posterior as its current one and its previous one as the one before, and return the summed
Stats."""


def _complete_from_counts(st: Stats, params) -> float:
    """E_q[log p(x, y | theta)] = sum_k q_sum_k log pi_k + sum counts * log Gamma: linear in the statistics."""
    return float(st.q_sum @ safe_log(params.pi) + (st.counts * safe_log(params.gamma)).sum())


def batch_em(
    model, do_round: Round, *, tol: float, max_iter: int, progress: Callable[[int, int], None] | None = None
) -> tuple[list[EngineSnapshot], list[str], bool]:
    """Run EM through ``do_round`` with the schedule of `crowdlab.engines.run.Run` (majority-vote start).

    Returns (snapshots, violations, last_round_is_extra): after the loop the engine's *previous* posterior is the
    one of the last E-step (what ``cl.fit`` reports); the current one is E(theta_T), computed to evaluate the
    objective of the last M-step.
    """
    if getattr(model, "hard", False):
        raise ModelError("hard EM is not offered by the streaming and Dask engines; use crowdlab.fit(..., hard=True).")
    violations: list[str] = []
    if isinstance(model, MajorityVote):
        do_round(None, "mv")
        return [EngineSnapshot(0, "init", 0, None, None, None)], violations, False
    lp = model.log_prior
    s0 = do_round(None, "votes")
    params = model.m_step_from_stats(s0.counts, s0.q_sum, s0.n_items)
    bound0 = _complete_from_counts(s0, params) + lp(params) + s0.entropy
    r = do_round(params, "em")  # E-step with theta_0: log p(x | theta_0) and q_1's statistics
    obj = r.loglik + lp(params)
    snaps = [EngineSnapshot(0, "init", 0, params, obj, bound0)]

    def check(prev: EngineSnapshot, o: float, b: float, kind: str) -> str | None:
        if not (np.isfinite(o) and np.isfinite(b)):
            msg = f"non-finite objective after {kind}-step {len(snaps)}"
            violations.append(msg)
            return msg
        problems = []
        if o < prev.objective - REL_TOL_MONOTONE * max(1.0, abs(prev.objective)):
            problems.append(f"objective fell by {prev.objective - o:.3g}")
        if b < prev.bound - REL_TOL_MONOTONE * max(1.0, abs(prev.bound)):
            problems.append(f"bound F(q, theta) fell by {prev.bound - b:.3g}")
        if not problems:
            return None
        msg = f"{kind}-step to snapshot {len(snaps)}: " + "; ".join(problems)
        violations.append(msg)
        return msg

    it = 0
    while it < max_iter:
        # E-step (already computed by the last round): same objective, bound F(q_new, theta_old)
        prev = snaps[-1]
        b = r.complete + lp(params) + r.entropy
        snaps.append(
            EngineSnapshot(len(snaps), "E", it, params, prev.objective, b, check(prev, prev.objective, b, "E"))
        )
        # M-step from the round's statistics; its objective needs the next round's E-step
        it += 1
        before = params
        params = model.m_step_from_stats(r.counts, r.q_sum, r.n_items)
        b = _complete_from_counts(r, params) + lp(params) + r.entropy
        r = do_round(params, "em")
        o = r.loglik + lp(params)
        prev = snaps[-1]
        dparam = param_change(before, params)
        snaps.append(EngineSnapshot(len(snaps), "M", it, params, o, b, check(prev, o, b, "M"), dparam))
        if progress is not None:
            progress(it, max_iter)
        # the in-memory Run's rule, so every engine stops at the same iteration
        if settled_at(snaps, tol, PARAM_TOL) or stalled_at(snaps):
            break
    return snaps, violations, True
