"""Batch EM where the rows are not all in one array: the part shared by the streaming and the Dask engines.

The class models' E-step needs only the parameters and one item's labels, and their M-step needs only expected
sufficient statistics (docs/architecture.md, "Three engines, one model protocol"). So an engine splits the rows
into *blocks by item* (every row of an item in one block: a bucket file of the streaming engine, a partition of
the Dask engine) and runs, per block, `block_round`: the E-step of Traganitis & Giannakis eq. (9) for the block's
items with the broadcast parameters, then the block's share of the M-step statistics, the expected counts
counts[m, k', k] = sum_n q_nk #(worker m said k' on item n) (the numerator of eq. (11)) and the class totals
sum_n q_nk. The statistics of the blocks add up (`Stats.__add__`, in any order: a loop or a tree reduction), and
the model's own ``m_step_from_stats`` turns the sums into parameters, so the formulas live in the model once.

`batch_em` drives an engine with the same half-step schedule, objective, lower bound, convergence rule and
monotonicity check as the in-memory :class:`crowdlab.engines.run.Run` started by majority vote, so the engines agree
with ``cl.fit`` to rounding (1e-8 in the tests). One round over the blocks per EM iteration: the E-step with theta_t
and the statistics of the new posterior come out of the same pass, and log p(x | theta_t) with them. With
``accelerate`` it runs the in-memory accelerated loop (`crowdlab.engines.accel.squarem_loop`) around `RoundMap`,
the rounds as an EM map (`accelerated_em`).

Supported: "mv", "ds", "one_coin", "two_coin", "mace" (soft EM, optional prior strength), "mace_vb", "ibcc" and
"ebcc" (variational Bayes: the objective is the ELBO, the statistics the same expected counts), started by majority
vote, optionally semi-supervised (``known``: each block's fixed classes, -1 for unknown); GLAD on the streaming and
Dask engines by its own driver (`crowdlab.engines.glad_blocks`). The models whose M-step iterates (MACE's inner EM
over the spam indicators) start it from the parameters of the E-step, as in memory (``m_step_from_stats(...,
start)``); the variational ones add -KL(posteriors || priors) where the EM ones add the log prior
(`objective_terms`). EBCC splits its majority-vote start over the subtypes with seeded random weights drawn from
each item's name (``split_keys``), so the streaming engine's blocks and the Dask engine's partitions start as the
in-memory fit does. Not supported here: hard EM, other initialisations, the scores/HMM/MRF/Raykar models (their
latent variables or features do not split by item), gold inside the engines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from crowdlab.engines.accel import Acceleration, accelerable, null_from_counts, squarem_loop
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
from crowdlab.errors import DataError, ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models import make_model
from crowdlab.models.base import entropy_rows, safe_log
from crowdlab.models.majority import MajorityVote

ENGINE_METHODS = ("mv", "ds", "one_coin", "two_coin", "glad", "mace", "mace_vb", "ibcc", "ebcc")
_MEMOS = (
    "_lj_memo",
    "_known_memo",
    "_terms_memo",
    "_joint_memo",
    "_elbo_memo",
    "_prior_memo",
    "_pvec_memo",
    "_s_memo",
    "_xe_memo",
)


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
    def zero(M: int, K: int, mv: bool = False, S: int | None = None) -> Stats:
        """Zero sums; ``S`` the posterior's states per item (K, or L K for EBCC's (subtype, class) pairs)."""
        S = K if S is None else S
        return Stats(np.zeros((M, K, S)), np.zeros(S), agree=np.zeros(M) if mv else None)


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


def _block_model(model, block: Block, known: np.ndarray | None):
    """A shallow copy of ``model`` for one block: its own memos (blocks of one round may run at once in threads of
    one Dask worker, sharing the model object) and, for semi-supervised EM, the block's known classes (-1: unknown)
    where the model's clamp reads them."""
    import copy

    m = copy.copy(model)
    for memo in _MEMOS:
        m.__dict__.pop(memo, None)
    m.known = None if known is None else np.asarray(known)
    m.reveal = None
    if known is not None:
        m.__dict__["_known_memo"] = (block, m.known)
    return m


def is_ebcc(model) -> bool:
    from crowdlab.models.ebcc import EBCC

    return isinstance(model, EBCC)


def n_states(model, K: int) -> int:
    """Posterior states per item: K, or L K for EBCC's (subtype, class) pairs."""
    return K * model.subtypes if is_ebcc(model) else K


def _clamp_rows(q: np.ndarray, known: np.ndarray | None) -> np.ndarray:
    if known is not None:
        idx = np.flatnonzero(known >= 0)
        q[idx] = 0.0
        q[idx, known[idx]] = 1.0
    return q


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
    split_keys: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None, Stats]:
    """One block's E-step and M-step statistics: (q (n_items, K), hard labels or None, Stats).

    ``mode``: "em" (the model's own E-step with ``params``: `LatentModel._soft`, known items clamped), "votes"
    (q = vote fractions: EM's majority-vote start) or "mv" (majority vote with ties split, hard labels by the rule
    of `crowdlab.models.majority.majority_labels`, whose tie bonus is ``mv_bonus``). ``block`` None: an empty
    block (``n_items``, ``M``, ``K`` give the shapes). ``known``: the block's fixed classes (-1: unknown), clamped in
    both modes. EBCC: the statistics are over its joint posterior r (N, L K) (in "votes" mode the votes are split
    over the subtypes by `crowdlab.models.ebcc.split_subtypes` from ``split_keys``, the block's item keys
    (`crowdlab.models.ebcc.item_keys`)); q is the class marginal.
    """
    from crowdlab.models.base import _inner, column_sums
    from crowdlab.models.dawid_skene import expected_counts

    if block is not None:
        n_items, M, K = block.n_items, block.n_workers, block.n_classes
    ebcc = mode != "mv" and is_ebcc(model)
    stats = Stats.zero(M, K, mode == "mv", n_states(model, K) if ebcc else K)
    stats.n_items = int(n_items)
    hard = None
    if block is None or not n_items:
        return np.zeros((n_items, K)), (np.zeros(n_items, np.int32) if mode == "mv" else None), stats
    r = None
    if mode == "em":
        m = _block_model(model, block, known)
        if ebcc:
            post, lj, lse = m._joint(block, params)
            q, r = post.q, post.r
            stats.loglik = float(lse.sum())
            stats.complete = _inner(r, np.where(r > 0, lj, 0.0))
            stats.entropy = entropy_rows(r)
        else:
            e = m._soft(block, params)
            q = e.q
            stats.loglik = float(e.rows.sum())
            stats.complete = _inner(q, e.lj)
            stats.entropy = float(e.entropy) if e.entropy is not None else entropy_rows(q)
            stats.q_sum = e.colsum.copy() if e.colsum is not None else column_sums(q)
        del m  # one block at a time: keep no block's arrays
    else:
        v = block.vote_counts
        if mode == "votes":
            tot = v.sum(axis=1, keepdims=True)
            q = _clamp_rows(np.where(tot > 0, v / np.maximum(tot, 1), 1.0 / K), known)
            if ebcc:
                from crowdlab.models.ebcc import item_keys, split_subtypes

                keys = split_keys if split_keys is not None else item_keys(block.item_names)
                r = split_subtypes(q, model.subtypes, model.seed, keys)
        else:
            top = v == v.max(axis=1, keepdims=True)
            q = top / top.sum(axis=1, keepdims=True)
            hard = np.argmax(v + mv_bonus[None, :], axis=1).astype(np.int32)
            stats.agree = np.bincount(block.worker, weights=(block.label == hard[block.item]), minlength=M).astype(
                float
            )
        stats.entropy = entropy_rows(q if r is None else r)
        stats.q_sum = q.sum(axis=0)
    if r is not None:
        stats.q_sum = r.sum(axis=0)
        stats.counts = np.asarray(block.label_counts_t @ r).reshape(M, K, r.shape[1])
    elif mode != "mv":
        stats.counts = expected_counts(block, q)
    return q, hard, stats


def round_times(starts: list[float], end: float) -> dict:
    """``round_s``: the wall seconds of each round, from its start to the next one's (the client's M-step and
    objective included, as in an in-memory step), the last to ``end``; ``steady_s``: their mean after the first two
    (the majority-vote round and the first EM round, which load and compile the kernels: the in-memory yardstick
    times its steps after the first), or None with fewer than three rounds. Empty when no round was timed (GLAD's
    own driver)."""
    if not starts:
        return {}
    marks = [*starts, end]
    rounds = [b - a for a, b in zip(marks[:-1], marks[1:])]
    return {"round_s": rounds, "steady_s": float(np.mean(rounds[2:])) if len(rounds) > 2 else None}


def mv_bonus(class_totals: np.ndarray) -> np.ndarray:
    """The tie-breaking bonus of `majority_labels`: most frequent class overall, then the lowest code."""
    K = class_totals.shape[0]
    order = np.lexsort((np.arange(K), -class_totals))
    bonus = np.empty(K)
    bonus[order] = (K - np.arange(K)) / (K + 1.0) * 0.5
    return bonus


def engine_model(method: str, prior: float = 0.0, options: dict | None = None):
    """The model an engine runs (``options``: the model's constructor options, e.g. ``class_prior``), or a
    ModelError naming what the engines support."""
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
    if key == "mv":
        return make_model(key)
    return make_model(key, prior=prior, **(options or {}))


class _Dims:
    """What the models' prior and expected-log helpers read of a data set: numbers of workers and classes."""

    def __init__(self, M: int, K: int) -> None:
        self.n_workers, self.n_classes = int(M), int(K)


def objective_terms(model, params, dims: _Dims) -> tuple[np.ndarray, np.ndarray, float]:
    """(a (S,), B (M, K, S), c): the model's log joint over a block is X @ B + a (X: the block's item x
    (worker, label) counts), so E_q[log joint] = q_sum . a + sum counts * B from a round's statistics; and c what
    the objective adds beyond the data terms: the log prior (EM), or the log prior - KL(posteriors || priors)
    (variational Bayes: IBCC, MACE-VB, EBCC)."""
    from crowdlab.models.base import VariationalObjective
    from crowdlab.models.ibcc import IBCC
    from crowdlab.models.mace import MaceVB

    if isinstance(model, IBCC):
        e_g, e_nu, kl = model._terms(dims, params)
        return e_nu, e_g, model.log_prior(params) - kl
    if is_ebcc(model):
        mat, off, kl = model._terms(dims, params)
        return off, mat.reshape(dims.n_workers, dims.n_classes, -1), model.log_prior(params) - kl
    if isinstance(model, MaceVB):
        return safe_log(params.pi), params.log_tilde, model.log_prior(params) - model.kl(params)
    assert not isinstance(model, VariationalObjective), type(model)
    return safe_log(params.pi), safe_log(params.gamma), model.log_prior(params)


def _warm(model) -> bool:
    """Whether the model's M-step from statistics takes the E-step's parameters as its start (MACE's inner EM)."""
    import inspect

    return "start" in inspect.signature(model.m_step_from_stats).parameters


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
    at_optimum: bool = False  # a stall where the model's gradient leaves nothing to gain (`run.at_optimum`)


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
    parameters), ``history()`` / ``objective_history()``, ``converged``, ``stop_reason``, ``violations``;
    ``acceleration`` (`crowdlab.engines.accel.Acceleration`, None for plain EM) with ``passes``, the rounds over
    the data the accelerated run took.
    """

    init = "majority"
    seed = 0  # what cl.fit records (the majority-vote start draws nothing)

    def __init__(
        self, data, model, snapshots, q, hard_labels, tol, max_iter, engine, violations, agree=None, outcome=None
    ):
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
        self.acceleration = None if outcome is None else outcome.acceleration  # accelerated EM's account
        self._stop = None if outcome is None else outcome.stop_reason  # accelerated EM's own stop

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
        """The in-memory engine's rule (:func:`crowdlab.engines.run.settled`): objective and parameters settled,
        or a stall at the optimum (:func:`crowdlab.engines.run.at_optimum`, decided by the engine's driver); for
        accelerated EM its own rule (``_stop``)."""
        if not self.iterative:
            return True
        if self.acceleration is not None:  # the accelerated run's own rule (gap estimate and maximum check)
            return self._stop == "converged"
        if settled_at(self.snapshots, self.tol, self.param_tol):
            return True
        return self.last.at_optimum and stalled_at(self.snapshots)

    @property
    def stop_reason(self) -> str | None:
        """ "converged", "stalled" or "max_iter", as :attr:`crowdlab.engines.run.Run.stop_reason` (None for majority
        vote);
        :data:`crowdlab.engines.run.STOP_REASONS` says it in words."""
        if not self.iterative:
            return None
        if self.acceleration is not None:
            return self._stop
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


def _complete_from_counts(st: Stats, params, terms=None) -> float:
    """E_q[log p(x, y | theta)] = sum_k q_sum_k log pi_k + sum counts * log Gamma: linear in the statistics
    (``terms``: `objective_terms`' a and B in place of log pi and log Gamma)."""
    a, B = (safe_log(params.pi), safe_log(params.gamma)) if terms is None else terms[:2]
    return float(st.q_sum @ a + (st.counts * B).sum())


@dataclass
class Outcome:
    """What an engine's EM driver (`batch_em`, `crowdlab.engines.glad_blocks.glad_em`) returns: the snapshots,
    the monotonicity violations, ``extra`` (the engine's *previous* posterior is the one to report: plain EM's
    last round evaluates the objective of the last M-step, as ``cl.fit`` reports the posterior of the last E-step;
    False: the current one), and for an accelerated run its ``acceleration`` and ``stop_reason``."""

    snapshots: list
    violations: list
    extra: bool = False
    acceleration: Acceleration | None = None
    stop_reason: str | None = None


def monotone_check(violations: list[str], n: int, prev: EngineSnapshot, o: float, b: float, kind: str) -> str | None:
    """The in-memory Run's check of a half-step to snapshot ``n`` (objective ``o``, bound ``b``) against ``prev``:
    a message (also appended to ``violations``) when either is not finite or fell by more than rounding."""
    if not (np.isfinite(o) and np.isfinite(b)):
        msg = f"non-finite objective after {kind}-step {n}"
        violations.append(msg)
        return msg
    problems = []
    if o < prev.objective - REL_TOL_MONOTONE * max(1.0, abs(prev.objective)):
        problems.append(f"objective fell by {prev.objective - o:.3g}")
    if b < prev.bound - REL_TOL_MONOTONE * max(1.0, abs(prev.bound)):
        problems.append(f"bound F(q, theta) fell by {prev.bound - b:.3g}")
    if not problems:
        return None
    msg = f"{kind}-step to snapshot {n}: " + "; ".join(problems)
    violations.append(msg)
    return msg


class RoundMap:
    """The EM map of the engines' rounds, for accelerated EM (`crowdlab.engines.accel`): ``evaluate(params)`` is
    one round (one pass over the blocks: the E-step with ``params``, the statistics of its posterior and
    log p(x | params) + log prior, or the ELBO at that posterior for variational Bayes), ``m_step((params,
    stats))`` the model's ``m_step_from_stats`` on the summed statistics, warm-started at ``params`` as in
    `batch_em`. ``at``: the parameters of the last round (whose posterior the engine holds as its current one)."""

    def __init__(self, model, do_round: Round, dims: _Dims) -> None:
        self.model, self.do_round, self.dims = model, do_round, dims
        self.warm = _warm(model)
        self.at = None

    def evaluate(self, params):
        st = self.do_round(params, "em")
        self.at = params
        return (params, st), float(st.loglik + objective_terms(self.model, params, self.dims)[2])

    def m_step(self, state):
        params, st = state
        extra = (params,) if self.warm else ()
        return self.model.m_step_from_stats(st.counts, st.q_sum, st.n_items, *extra)

    def finish(self, state) -> None:
        """Leave the posterior at ``state``'s parameters as the engine's current one (one more round unless the
        last round was at them): what ``cl.fit``'s accelerated run reports, the posterior at its parameters."""
        if self.at is not state[0]:
            self.evaluate(state[0])


class _EngineHost:
    """How `crowdlab.engines.accel.squarem_loop` records an engine's accelerated run: an "E" snapshot at the
    current point, then an "M" snapshot per accepted point whose ``iteration`` advances by the EM-map evaluations
    it took (as the in-memory Run's accelerated snapshots); objective = bound = the objective at the point.
    ``slim(params)``: the parameters an older snapshot keeps (GLAD's let the per-item difficulties go)."""

    def __init__(self, em, snaps, violations, point, max_iter: int, progress, slim=None) -> None:
        self.em, self.snaps, self.violations, self.point = em, snaps, violations, point
        self.max_iter, self.progress, self.slim = max_iter, progress, slim

    @property
    def iteration(self) -> int:
        return self.snaps[-1].iteration

    def _append(self, kind: str, iteration: int, params, obj: float, dparam: float = float("nan")) -> None:
        n = len(self.snaps)
        violation = monotone_check(self.violations, n, self.snaps[-1], obj, obj, kind)
        self.snaps.append(EngineSnapshot(n, kind, iteration, params, obj, obj, violation, dparam))
        if self.slim is not None:
            for old in self.snaps[-4:-2]:
                if old.params is not None and old.params is not params:
                    old.params = self.slim(old.params)

    def begin(self):
        params, _, obj = self.point
        self._append("E", self.iteration, params, obj)
        return self.point

    def record(self, params, state, obj: float, evaluations: int, after_e: bool = False) -> None:
        if after_e:
            self.begin()
        before = self.snaps[-1].params
        self._append("M", self.iteration + int(evaluations), params, obj, param_change(before, params))
        self.point = (params, state, obj)
        if self.progress is not None:
            self.progress(self.iteration, self.max_iter)

    def plain_step(self) -> None:
        self.begin()
        params = self.em.m_step(self.point[1])
        state, obj = self.em.evaluate(params)
        self.record(params, state, obj, 1)


def accelerated_em(
    model, em, snaps: list, violations: list, point, *, tol: float, max_iter: int, progress, n_obs: int, null, slim=None
) -> Outcome:
    """Accelerated EM (`crowdlab.engines.accel.squarem_loop`, the in-memory Run's own loop) on an engine's EM map
    ``em`` (`RoundMap`, `crowdlab.engines.glad_blocks.GladMap`) from ``point`` = (params, state, objective) after
    the start's snapshots ``snaps``. The stop is checked to be a maximum with the perturbation seeded as
    ``cl.fit``'s default (seed 0). At the end the engine's current posterior is the one at the last parameters
    (``em.finish``)."""
    acc = Acceleration(null_objective=null)
    host = _EngineHost(em, snaps, violations, point, max_iter, progress, slim)
    stop = squarem_loop(host, model, em, acc, tol=tol, max_iter=max_iter, seed=EngineRun.seed, n_obs=n_obs)
    em.finish(host.point[1])
    return Outcome(snaps, violations, False, acc, stop)


def batch_em(
    model,
    do_round: Round,
    *,
    tol: float,
    max_iter: int,
    progress: Callable[[int, int], None] | None = None,
    accelerate: bool = False,
    n_obs: int = 0,
) -> Outcome:
    """Run EM through ``do_round`` with the schedule of `crowdlab.engines.run.Run` (majority-vote start).

    Plain EM: after the loop the engine's *previous* posterior is the one of the last E-step (what ``cl.fit``
    reports; ``Outcome.extra``); the current one is E(theta_T), computed to evaluate the objective of the last
    M-step. ``accelerate``: SQUAREM around the rounds (`accelerated_em` over a `RoundMap`) for the models that
    have it, each EM map one round; ``n_obs`` (the number of labels) decides the flat-objective stop.
    """
    if getattr(model, "hard", False):
        raise ModelError("hard EM is not offered by the streaming and Dask engines; use crowdlab.fit(..., hard=True).")
    violations: list[str] = []
    if isinstance(model, MajorityVote):
        do_round(None, "mv")
        return Outcome([EngineSnapshot(0, "init", 0, None, None, None)], violations, False)
    from crowdlab.models.base import VariationalObjective

    # variational Bayes (IBCC, MACE-VB, EBCC): the objective is the ELBO at the current (q, posteriors), which is
    # the bound itself, as the in-memory Run reports it; EM: log p(x | theta) (+ log prior) from the next E-step
    vb = isinstance(model, VariationalObjective)
    s0 = do_round(None, "votes")
    dims = _Dims(s0.counts.shape[0], s0.counts.shape[1])

    def lp(p) -> float:
        return objective_terms(model, p, dims)[2]

    def complete(st: Stats, p) -> float:
        return _complete_from_counts(st, p, objective_terms(model, p, dims))

    warm = _warm(model)

    def m_step(st: Stats, start):
        extra = (start,) if warm else ()
        return model.m_step_from_stats(st.counts, st.q_sum, st.n_items, *extra)

    params = m_step(s0, None)
    bound0 = complete(s0, params) + lp(params) + s0.entropy
    if accelerate and accelerable(model, params):
        em = RoundMap(model, do_round, dims)
        state, own = em.evaluate(params)  # E-step with theta_0: the objective at its own posterior
        snaps = [EngineSnapshot(0, "init", 0, params, bound0 if vb else own, bound0)]
        null = null_from_counts(s0.counts.sum(axis=2))  # each worker's answers n_m(l), from the votes' round
        return accelerated_em(
            model,
            em,
            snaps,
            violations,
            (params, state, own),
            tol=tol,
            max_iter=max_iter,
            progress=progress,
            n_obs=n_obs,
            null=null,
        )
    r = do_round(params, "em")  # E-step with theta_0: log p(x | theta_0) and q_1's statistics
    obj = bound0 if vb else r.loglik + lp(params)
    snaps = [EngineSnapshot(0, "init", 0, params, obj, bound0)]

    def check(prev: EngineSnapshot, o: float, b: float, kind: str) -> str | None:
        return monotone_check(violations, len(snaps), prev, o, b, kind)

    it = 0
    while it < max_iter:
        # E-step (already computed by the last round): same objective, bound F(q_new, theta_old)
        prev = snaps[-1]
        b = r.complete + lp(params) + r.entropy
        o = b if vb else prev.objective
        snaps.append(EngineSnapshot(len(snaps), "E", it, params, o, b, check(prev, o, b, "E")))
        # M-step from the round's statistics; its objective needs the next round's E-step
        it += 1
        before = params
        params = m_step(r, before)
        b = complete(r, params) + lp(params) + r.entropy
        r = do_round(params, "em")
        o = b if vb else r.loglik + lp(params)
        prev = snaps[-1]
        dparam = param_change(before, params)
        snaps.append(EngineSnapshot(len(snaps), "M", it, params, o, b, check(prev, o, b, "M"), dparam))
        if progress is not None:
            progress(it, max_iter)
        # the in-memory Run's rule, so every engine stops at the same iteration
        if settled_at(snaps, tol, PARAM_TOL) or stalled_at(snaps):
            break
    return Outcome(snaps, violations, True)


# ---------------------------------------------------------------------- semi-supervised: known classes
@dataclass
class KnownLabels:
    """Items whose class is known (semi-supervised EM on the engines): their names and class names as text."""

    items: np.ndarray
    labels: np.ndarray
    source: str = "known="

    def __len__(self) -> int:
        return len(self.items)


def check_known_model(model, known) -> None:
    """A ModelError when ``known`` is given to a model without a semi-supervised version (majority vote)."""
    if known is not None and not hasattr(model, "with_known"):
        raise ModelError(f"{model.info.title} has no semi-supervised version (known= / --known).")


def read_known(known, where: str = "python") -> KnownLabels | None:
    """The known classes from ``known``: None; a mapping item -> class; or a path to a CSV file with item and
    label columns, read as `crowdlab.io.gold.read_gold` reads a gold file (the CLI's ``--known``; blank labels
    are unknown)."""
    import os

    if known is None:
        return None
    if isinstance(known, KnownLabels):
        return known
    if isinstance(known, dict):
        items = np.asarray([str(k) for k in known], dtype=object)
        return KnownLabels(items, np.asarray([str(v) for v in known.values()], dtype=object))
    if isinstance(known, str | os.PathLike):
        from crowdlab.io.gold import _gold_columns, known_error, no_known_error
        from crowdlab.io.readers import check_where
        from crowdlab.io.readers import read_table as _read_table
        from crowdlab.io.values import _required_ids

        table = _read_table(
            known,
            needs="a known-labels file needs item and label columns",
            allow_no_rows=True,
            where=check_where(where),
        )
        try:
            item_j, gold_j = _gold_columns(table)
        except DataError as exc:  # said of a known-labels file, not of a gold file (issue 42)
            raise known_error(exc) from None
        if not len(table.rows):  # a header alone fixes nothing: refused, as in memory (it was accepted silently)
            raise no_known_error(table.file)
        items = _required_ids(table, item_j, "item id")
        given = ~table.missing(gold_j)
        if not given.any():
            raise no_known_error(table.file)
        return KnownLabels(items[given], table.values(gold_j)[given], table.file)
    raise TypeError(
        f"known= takes a mapping item -> class or the path of a CSV file (item, label), not {type(known).__name__}."
    )


def known_class_codes(known: KnownLabels, class_names) -> np.ndarray:
    """(len(known),) the class code of each known label (a number spelt otherwise, "1.0" for class "1", matches);
    a DataError names labels that are no class."""
    index = {str(c): k for k, c in enumerate(class_names)}
    as_number = {}
    for k, c in enumerate(class_names):
        try:
            as_number.setdefault(float(c), k)
        except ValueError:
            pass
    out = np.empty(len(known), dtype=np.int32)
    bad = []
    for j, lab in enumerate(known.labels):
        k = index.get(str(lab).strip())
        if k is None:
            try:
                k = as_number.get(float(lab))
            except ValueError:
                k = None
        if k is None:
            bad.append(str(lab))
            k = -1
        out[j] = k
    if bad:
        names = sorted(set(bad))
        raise DataError(
            f"known labels name classes no worker used ({', '.join(map(repr, names[:5]))}).",
            file=known.source,
            hint=f"The classes are {', '.join(map(repr, list(class_names)[:10]))}.",
        )
    return out


def known_for_items(item_names, known: KnownLabels, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """((n,) known class of each of ``item_names`` (-1: unknown), the indices into ``known`` that matched).
    ``item_names``: an Arrow string array, `ArrowNames`, or a sequence of str."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = item_names.array if isinstance(item_names, ArrowNames) else item_names
    if not isinstance(arr, pa.Array | pa.ChunkedArray):
        arr = pa.array([str(x) for x in arr], pa.large_string())
    value_set = pa.array([str(x) for x in known.items], arr.type)
    idx = pc.index_in(arr, value_set=value_set)
    valid = np.asarray(idx.is_valid(), dtype=bool)
    pos = np.asarray(idx.fill_null(0), dtype=np.int64)
    out = np.where(valid, codes[pos] if codes.size else -1, -1).astype(np.int32)
    return out, np.unique(pos[valid])


def refuse_unmatched(known: KnownLabels, matched: np.ndarray) -> None:
    """A DataError when items of the known labels are not in the data (as `read_gold` refuses them)."""
    if len(known) and np.unique(np.asarray(known.items, dtype=object)).size > matched.size:
        seen = np.zeros(len(known), dtype=bool)
        seen[matched] = True
        hit = set(np.asarray(known.items, dtype=object)[seen].tolist())
        names = [n for n in dict.fromkeys(known.items.tolist()) if n not in hit]
        raise DataError(
            f"{len(names)} item(s) with a known label have no labels in the data ({', '.join(map(repr, names[:5]))}).",
            file=known.source,
            hint="Check that the known labels belong to this label file and spell the item ids the same way.",
        )
