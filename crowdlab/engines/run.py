"""The EM engine: a run is a list of immutable snapshots, one per half-step, and an index that moves along it.

Snapshot 0 is the initialisation; then each E-step and each M-step appends one snapshot holding the parameters,
the posterior and the objective. Stepping back only moves the index (nothing is recomputed), and stepping
forward over snapshots already computed reuses them.

Every new snapshot is checked: exact EM never decreases its objective (log p(x | theta) (+ log prior)) nor the
lower bound F(q, theta) = E_q[log p(x, z | theta)] + H(q); hard EM never decreases its complete-data objective.
A drop beyond a relative 1e-9 is recorded on the snapshot (``violation``) and in ``Run.violations``; it is never
hidden. A non-finite objective, bound, posterior or parameter is never recorded: the half-step that produced it
raises :class:`crowdlab.errors.ModelError` naming that half-step and the value, and the run stays at the last
good snapshot (nothing non-finite leaves the engine).

Typical use::

    run = Run(data, DawidSkene())
    run.step()            # one E-step and one M-step
    run.e_step(); run.m_step()
    run.back()            # one half-step back (nothing recomputed)
    run.run(tol=1e-8, max_iter=500)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass, replace

import numpy as np

from crowdlab.engines.accel import (
    GAP_SCALE,
    Acceleration,
    MemoryMap,
    accelerable,
    null_objective,
    squarem_loop,
)
from crowdlab.engines.init import Start, initialise
from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import row_argmax
from crowdlab.models.majority import MajorityVote
from crowdlab.models.parallel import check_n_jobs, jobs

REL_TOL_MONOTONE = 1e-9
PARAM_TOL = 1e-7  # default: how far the parameters may still be projected to move when a run counts as converged
STALL_ITERATIONS = 20  # iterations with no gain above rounding before a run counts as stalled
# a stall counts as converged when the model's gradient there promises at most this fraction of the tolerance
# (`at_optimum`): the promise uses the complete-data curvature, which overstates the observed one by EM's rate
# 1 / (1 - r), so 1e-2 covers r up to 0.99
OPTIMUM_FRACTION = 1e-2
SETTLE_ITERATIONS = 10  # consecutive iterations both tests must hold for (a saddle passes them only briefly)
STILL = 1e-12  # a largest parameter change at or below this: nothing moves any more (an exact fixed point)
TAIL_SNAPSHOTS = 2 * SETTLE_ITERATIONS + 8  # the snapshots the stopping rule reads (SETTLE_ITERATIONS + 2 states)
KEEP_ALL_BELOW = 200_000  # labels: below this an interactive run keeps every posterior (scrubbing recomputes nothing)
POSTERIOR_WINDOW = 8  # above it, the posteriors of the last 8 snapshots; older ones are recomputed when scrubbed to
STOP_REASONS = {
    "converged": "converged: the objective stopped changing and the parameters are contracting to a fixed point "
    "(or, where they wobble at rounding level, the gradient leaves nothing to gain)",
    "stalled": "stalled: the objective has not risen above rounding error for 20 iterations, "
    "yet the parameters have neither settled nor kept contracting",
    "max_iter": "stopped at the iteration limit before converging",
    "stopped": "stopped by the user",
    "passes": "online EM: every pass over the data done (it has no convergence test)",
    "no_signal": "stopped early: the objective is flat at the fit where every worker answers at random, so the "
    "labels carry no signal about the items' classes",
}


def param_vector(params) -> np.ndarray | None:
    """Every floating-point array of a parameter snapshot (dataclass fields, and the values of dict fields such as
    ``extra``) as one flat vector: what the stopping rule watches move. None when there is none."""
    if params is None or not is_dataclass(params):
        return None
    parts = []
    for f in fields(params):
        v = getattr(params, f.name)
        for x in v.values() if isinstance(v, dict) else (v,):
            a = np.asarray(x) if isinstance(x, np.ndarray | float | np.floating) else None
            if a is not None and a.dtype.kind == "f":
                parts.append(a.ravel())
    return np.concatenate(parts) if parts else None


def _nbytes(vec: np.ndarray | None) -> int:
    return 0 if vec is None else int(vec.nbytes)


def check_responses(model, data: Annotations, init: str = "majority") -> None:
    """Refuse data with responses that are not classes ("can't tell") for a model without a place for them (those
    with ``reads_responses``: majority vote, Dawid-Skene, IBCC, EBCC, MACE (EM and VB), one-coin, two-coin have
    one), and the moment-matching start, which has no such rows either."""
    if not data.response_names:
        return
    names = ", ".join(repr(r) for r in data.response_names)
    if not getattr(model, "reads_responses", False):
        raise ModelError(
            f"{model.info.title} has no place for the responses that are not classes ({names}): use Dawid-Skene, "
            "IBCC, EBCC, MACE, one-coin or two-coin, or read the file without abstain= (each becomes a class)."
        )
    if init == "moments":
        raise ModelError(f"moment matching has no rows for the responses that are not classes ({names}).")


def nonfinite_entries(params, prefix: str = "") -> list[str]:
    """Names (with the first bad value) of the parameters of ``params`` that hold NaN or +-inf.

    Walks the fields of a parameter dataclass (arrays, floats, and the arrays of an ``extra`` dict); nested
    posterior objects (the MRF's E-step state) are left to the posterior check."""
    out: list[str] = []
    fields = getattr(params, "__dataclass_fields__", None)
    items = params.items() if isinstance(params, dict) else ((f, getattr(params, f)) for f in fields or ())
    for name, v in items:
        if isinstance(v, dict):
            out += nonfinite_entries(v, f"{prefix}{name}.")
            continue
        if isinstance(v, bool | str) or v is None:
            continue
        if isinstance(v, float | int | np.floating | np.integer | np.ndarray):
            a = np.asarray(v)
            if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
                bad = a[~np.isfinite(a)].ravel()[0]
                out.append(f"{prefix}{name} ({bad})")
    return out


def settled(objectives, changes, tol: float, param_tol: float | None) -> bool:
    """The stopping rule of :attr:`Run.converged` on the last complete states: ``objectives`` of the init and
    after each M-step (oldest first; the last SETTLE_ITERATIONS + 2 suffice) and ``changes``, the largest parameter
    change of each of those M-steps (one fewer than ``objectives``, or as many when the init is not among them).
    Shared by the in-memory, streaming and Dask engines so that every engine stops at the same iteration."""
    if len(objectives) < 2:
        return False
    a, b = objectives[-2], objectives[-1]
    if not abs(b - a) <= tol * max(1.0, abs(b)):
        return False
    if param_tol is None:
        return True
    d = np.asarray(changes[-(SETTLE_ITERATIONS + 2) :], dtype=np.float64)
    if not d.size or not np.isfinite(d[-1]):
        return True  # a model without float parameters: the objective test alone
    if d[-1] <= STILL:
        return True  # nothing moves any more (rounding level)
    if d.size < SETTLE_ITERATIONS + 2 or np.any(d <= 0):
        return False
    objs = np.asarray(objectives[-(SETTLE_ITERATIONS + 1) :], dtype=np.float64)
    if np.any(np.abs(np.diff(objs)) > tol * max(1.0, abs(b))):
        return False
    ratios = d[1:] / d[:-1]
    r = np.maximum(ratios[1:], ratios[:-1])  # the larger of two successive ratios, per iteration
    return bool(np.all(r < 1.0) and np.all(d[2:] * r / (1.0 - r) <= param_tol))


def stalled(m_objectives) -> bool:
    """No gain above rounding (8 eps |objective|) over the last STALL_ITERATIONS iterations (``m_objectives``:
    the objectives after each M-step, oldest first)."""
    if len(m_objectives) <= STALL_ITERATIONS:
        return False
    gains = np.diff(np.asarray(m_objectives[-STALL_ITERATIONS - 1 :], dtype=np.float64))
    return bool(np.all(gains <= 8 * np.finfo(float).eps * max(1.0, abs(m_objectives[-1]))))


def settled_at(snapshots, tol: float, param_tol: float | None) -> bool:
    """:func:`settled` on the tail of a list of snapshots (anything with kind, objective and param_change): the
    test every engine applies after each M-step."""
    tail = [s for s in snapshots[-TAIL_SNAPSHOTS:] if s.kind in ("init", "M")]
    objs = [s.objective for s in tail]
    changes = [s.param_change for s in tail if s.kind == "M"][-(len(objs) - 1) :] if len(objs) > 1 else []
    return settled(objs, changes, tol, param_tol)


def contracting(changes) -> bool:
    """The last SETTLE_ITERATIONS + 1 parameter changes (oldest first) are finite, positive and shrink at every
    iteration: EM closing in on a fixed point at a linear rate. There the objective goes flat at rounding error
    well before the parameters settle (its gains shrink like the square of the steps), which is no stall."""
    d = np.asarray(changes[-(SETTLE_ITERATIONS + 1) :], dtype=np.float64)
    return bool(d.size == SETTLE_ITERATIONS + 1 and np.all(np.isfinite(d)) and np.all(d > 0) and np.all(d[1:] < d[:-1]))


def stalled_at(snapshots) -> bool:
    """:func:`stalled` on the tail of a list of snapshots, unless the parameters are still :func:`contracting`
    (then the stopping rule of :func:`settled_at` ends the run a few iterations later, as converged)."""
    tail = [s for s in snapshots[-2 * STALL_ITERATIONS - 2 :] if s.kind == "M"]
    return stalled([s.objective for s in tail]) and not contracting([s.param_change for s in tail])


def at_optimum(gain: float | None, objective: float, tol: float) -> bool:
    """Whether a run that :func:`stalled_at` sits at an optimum: ``gain``, the model's estimate of what is left to
    gain from its gradient there (``remaining_gain``: one Newton step, 1/2 sum g^2 / h), is at most OPTIMUM_FRACTION
    of the tolerance in nats, tol min(max(1, |objective|), GAP_SCALE) (the accelerated run's scale). Then the stall
    is EM's parameters wobbling at rounding level around the optimum (GLAD's difficulty steps did, before their
    curvature was fixed: AdultContent, TREC), and the run counts as converged; a stall where the gradient still
    promises more (an M-step that cannot make progress) stays a stall. No estimate (None): not at an optimum."""
    if gain is None or not math.isfinite(gain):
        return False
    return gain <= OPTIMUM_FRACTION * tol * min(max(1.0, abs(objective)), GAP_SCALE)


def param_change(before, after) -> float:
    """The largest absolute change of any floating-point parameter between two parameter snapshots (NaN when
    they have none or differ in shape)."""
    x, y = param_vector(before), param_vector(after)
    if x is None or y is None or x.shape != y.shape:
        return float("nan")
    return float(np.max(np.abs(y - x))) if y.size else 0.0


def snapshot_history(snapshots) -> dict[str, np.ndarray]:
    """Per snapshot (anything with index, iteration, kind, objective, bound): arrays for plotting and export,
    NaN where an objective or bound is None. Shared by :class:`Run` and the streaming/Dask engines' runs."""
    nan = float("nan")
    return {
        "index": np.array([x.index for x in snapshots]),
        "iteration": np.array([x.iteration for x in snapshots]),
        "kind": np.array([x.kind for x in snapshots]),
        "objective": np.array([nan if x.objective is None else x.objective for x in snapshots]),
        "bound": np.array([nan if x.bound is None else x.bound for x in snapshots]),
    }


def complete_objectives(snapshots) -> list[float]:
    """The objective of each complete state (the init, then every M-step)."""
    return [s.objective for s in snapshots if s.kind in ("init", "M") and s.objective is not None]


def _split(full) -> tuple[np.ndarray, object]:
    """(q array, full posterior object or None) from what a model's E-step returned."""
    if isinstance(full, np.ndarray):
        return full, None
    return full.q, full


def posterior_window(data: Annotations) -> int | None:
    """``keep_posteriors`` for an interactive run on ``data``: None (keep all) below ``KEEP_ALL_BELOW`` labels,
    else ``POSTERIOR_WINDOW``, so that a long run on a large file grows by its parameters per half-step, not by an
    (items x classes) posterior."""
    return None if data.n_obs < KEEP_ALL_BELOW else POSTERIOR_WINDOW


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The EM state after one half-step.

    ``kind``: "init", "E" or "M". ``iteration``: M-steps done so far. ``objective``: what this EM climbs
    (None for majority vote, which is not iterative). ``bound``: F(q, theta) (soft EM) or the complete-data
    objective (hard EM). ``changed``: indices of latent units whose arg-max changed from the previous snapshot.
    """

    index: int
    kind: str
    iteration: int
    params: object
    q: np.ndarray
    objective: float | None
    bound: float | None
    changed: np.ndarray
    violation: str | None = None
    posterior: object = None  # the model's full posterior when it holds more than q (HMM: pairwise xi)
    param_change: float = float("nan")  # after an M-step: max |theta_t - theta_(t-1)| over every parameter
    accelerated: int = 0  # an accelerated M-step (`crowdlab.engines.accel`): the EM-map evaluations it stands for

    @property
    def post(self):
        """What the M-step consumes: the full posterior object, or q itself."""
        return self.q if self.posterior is None else self.posterior


class Run:
    """One EM run of ``model`` on ``data``: snapshots and a cursor."""

    def __init__(
        self,
        data: Annotations,
        model,
        init: str = "majority",
        *,
        seed: int | None = 0,
        tol: float = 1e-8,
        max_iter: int = 500,
        keep_posteriors: int | None = None,
        param_tol: float | None = PARAM_TOL,
        params_budget: int | None = None,
        n_jobs: int = 1,
        **init_kwargs,
    ) -> None:
        """``keep_posteriors``: None keeps every snapshot's posterior (the app: scrubbing recomputes nothing);
        an integer k keeps only the last k (a long non-interactive fit at 10^7 labels would otherwise hold one
        (N, K) array per half-step); older posteriors are then recomputed from the stored parameters on access.

        ``params_budget``: None keeps every snapshot's parameters (the app draws their trails); a number of bytes
        lets the oldest parameter sets go (the start's and the last few snapshots' always stay) once the stored
        ones pass it. Confusion matrices of 38 workers x 94 classes take 2.7 MB per iteration: 10,000 iterations
        would hold 27 GB. Moving the cursor to a snapshot whose parameters were let go raises ValueError; the snapshot
        stays in the list with its objective, bound and parameter change (:meth:`history` is whole).

        ``n_jobs``: threads for the E-step and the M-step statistics of the class models (blocks of items;
        `crowdlab.models.parallel`): 1 (the default) is one thread; any n_jobs >= 2 gives the same numbers bit for
        bit, and the same as one thread to ~1e-16 relative; -1: every core."""
        self.n_jobs = check_n_jobs(n_jobs)
        model.check(data)
        check_responses(model, data, init)
        self.data = data
        self.model = model
        self.init = init
        self.seed = seed
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.param_tol = None if param_tol is None else float(param_tol)
        self.stop_reason: str | None = None
        self.init_kwargs = init_kwargs
        self.keep_posteriors = keep_posteriors
        self.params_budget = None if params_budget is None else int(params_budget)
        self.iterative = not isinstance(model, MajorityVote)
        self.snapshots: list[Snapshot] = []
        self.index = 0
        self.violations: list[str] = []
        self.acceleration = None  # an accelerated run's account (`crowdlab.engines.accel.Acceleration`)
        self.accelerated_from: int | None = None  # the snapshot the first accelerated run() started from
        self._start()

    # ------------------------------------------------------------------ state
    def _jobs(self):
        """The context of this run's E- and M-steps: its ``n_jobs`` threads, and the spare output arrays the
        threaded passes reuse from one step to the next (`crowdlab.models.parallel`; only when n_jobs >= 2)."""
        n = getattr(self, "n_jobs", 1)
        if n < 2:
            return jobs(n)
        spares = self.__dict__.setdefault("_spares", [])
        return jobs(n, spares)

    def _start(self) -> None:
        with self._jobs():
            return self._start_()

    def _start_(self) -> None:
        self.__dict__.pop("_recomputed", None)
        self.__dict__.pop("_argmax_memo", None)
        self._param_bytes = 0  # bytes of the M-steps' parameter sets still stored (see params_budget)
        self._released_upto = 1  # snapshots 1 .. this - 1 have let their parameters go
        if not self.iterative:
            q = self.model.posterior(self.data)
            self.snapshots = [Snapshot(0, "init", 0, None, q, None, None, np.zeros(0, np.int64))]
            self.start_description = "Majority vote (ties split evenly)"
            self._first_next = None
            return
        start: Start = initialise(self.model, self.data, self.init, seed=self.seed, **self.init_kwargs)
        self.start_description = start.description
        self._first_next = start.next_kind
        q0, post0 = _split(start.q0)
        obj = self.model.objective(self.data, start.q0, start.params0)
        bound = self._bound(start.q0, start.params0)
        self._check_finite("initialisation", start.params0, q0, obj, bound)
        self.snapshots = [Snapshot(0, "init", 0, start.params0, q0, obj, bound, np.zeros(0, np.int64), None, post0)]

    def _bound(self, q, params) -> float:
        if self.model.hard:
            return self.model.complete_objective(self.data, q, params)
        return self.model.bound(self.data, q, params)

    @property
    def current(self) -> Snapshot:
        return self._materialize(self.index)

    @property
    def last(self) -> Snapshot:
        return self.snapshots[-1]

    def kind_after(self, snap: Snapshot) -> str | None:
        """Which half-step follows ``snap``: "E", "M", or None (majority vote)."""
        if not self.iterative:
            return None
        if snap.kind == "init":
            return self._first_next
        return "M" if snap.kind == "E" else "E"

    @property
    def next_kind(self) -> str | None:
        return self.kind_after(self.current)

    @property
    def iteration(self) -> int:
        return self.current.iteration

    @property
    def converged(self) -> bool:
        """True when EM has reached a fixed point, by two tests on the complete states (init and after M-steps):

        1. the objective changed by at most ``tol`` (relative) in the last iteration, and
        2. the parameters are contracting to a point within ``param_tol`` of where they are: with d_t the largest
           parameter change of iteration t and r the larger of the last two ratios d_t / d_(t-1), EM's linear
           convergence leaves at most d_t r / (1 - r) to go (Aitken's estimate); it must be <= ``param_tol``, and
           r < 1.

        Both must hold for SETTLE_ITERATIONS consecutive iterations. (A weaker rule, "200 iterations together
        gained no more than ``tol``", stops 0.6-1.4 nats short on the weather, web and music sets: their plateaus
        outlast it. A slow tail, a confusion entry creeping to 0, therefore runs long: 5,000 iterations on the
        bundled simulated crowd, 2 s.)
        Near a saddle or on a plateau the objective hardly moves while d_t shrinks for a while, then stops
        shrinking (r -> 1) and grows as EM slides away; the objective test alone stops there (Dawid-Skene on the
        CrowdScale 2013 fact-evaluation set pauses three times and gains 284 nats after the first pause, at
        iteration 58).

        ``param_tol=None`` uses test 1 alone.

        A run that has stalled (:func:`stalled_at`) counts as converged when the model estimates from its gradient
        that nothing is left to gain (:func:`at_optimum`; models with ``remaining_gain``: GLAD).
        """
        if not self.iterative:
            return True
        if self.last.accelerated:  # the accelerated run's own rule (gap estimate and maximum check)
            return self.stop_reason == "converged"
        return settled_at(self.snapshots, self.tol, self.param_tol) or self._stalled_at_optimum()

    def _stalled_at_optimum(self) -> bool:
        """:func:`stalled_at` and :func:`at_optimum` at the last snapshot (the gradient's pass made once per
        snapshot)."""
        gain_of = getattr(self.model, "remaining_gain", None)
        last = self.last
        if gain_of is None or last.kind != "M" or last.params is None or not stalled_at(self.snapshots):
            return False
        memo = self.__dict__.get("_optimum_memo")
        if memo is None or memo[0] is not last:
            memo = self.__dict__["_optimum_memo"] = (last, gain_of(self.data, last.params))
        return at_optimum(memo[1], last.objective, self.tol)

    def _stalled(self) -> bool:
        """The objective has not risen by more than rounding (8 eps |objective|) for STALL_ITERATIONS iterations."""
        return stalled_at(self.snapshots)

    def stop_check(self) -> str | None:
        """Why the run would stop now, or None when EM should go on: "converged" (:attr:`converged`), "max_iter"
        (``max_iter`` iterations done) or "stalled" (no gain above rounding for STALL_ITERATIONS iterations)."""
        if self.converged:
            return "converged"
        if self.last.iteration >= self.max_iter:
            return "max_iter"
        if self._stalled():
            return "stalled"
        return None

    def convergence_trace(self) -> dict[str, np.ndarray]:
        """Per iteration t >= 1 (the complete states): the objective gain and the largest parameter change, what
        the stopping rule watches (a plateau shows as both dipping and then rising again)."""
        done = [s for s in self.snapshots if s.kind in ("init", "M")]
        obj = np.array([np.nan if s.objective is None else s.objective for s in done], dtype=np.float64)
        return {
            "iteration": np.array([s.iteration for s in done[1:]]),
            "gain": np.diff(obj),
            "param_change": np.array([s.param_change for s in done[1:]], dtype=np.float64),
        }

    @property
    def at_end(self) -> bool:
        return self.index == len(self.snapshots) - 1

    # ------------------------------------------------------------------ moves
    def e_step(self) -> Snapshot:
        """Advance one E-step (reusing a stored snapshot when it exists)."""
        return self._half("E")

    def m_step(self) -> Snapshot:
        return self._half("M")

    def _half(self, kind: str) -> Snapshot:
        with self._jobs():
            return self._half_(kind)

    def _half_(self, kind: str) -> Snapshot:
        if self.next_kind != kind:
            raise ValueError(f"The next half-step is {self.next_kind}, not {kind}.")
        if not self.at_end:
            self.index += 1
            return self.current
        prev = self.last
        if kind == "E":
            params = prev.params
            full = self.model.e_step(self.data, params)
            iteration = prev.iteration
        else:
            full = prev.post
            params = self.model.m_step(self.data, full)
            iteration = prev.iteration + 1
        q, post = _split(full)
        if kind == "E" and self.model.exact and not self.model.hard and prev.objective is not None:
            obj = prev.objective  # log p(x | theta) + log prior: theta did not change
        else:
            obj = self.model.objective(self.data, full, params)
        bound = self._bound(full, params)
        same_q = q is prev.q  # an M-step keeps the posterior it was given: already checked, nothing changed
        # an E-step keeps the parameters (checked when they were made); a posterior the model vouches for (its
        # terms sum to this finite objective) needs no second pass over its N x K entries
        check_q = not (same_q or (kind == "E" and self._vouched(q, obj)))
        where = f"{kind}-step {len(self.snapshots)} (iteration {iteration})"
        vec = self._param_vector(params) if kind == "M" else None
        check_params = kind != "E" and not (vec is not None and bool(np.isfinite(vec).all()))
        self._check_finite(where, params if check_params else None, q if check_q else None, obj, bound)
        changed = np.zeros(0, np.int64) if same_q else np.flatnonzero(self._argmax(prev.q) != self._argmax(q))
        violation = self._check(prev, obj, bound, kind)
        dparam = float("nan")
        if kind == "M":
            old_vec = self._param_vector(prev.params)
            if vec is None or old_vec is None or vec.shape != old_vec.shape:
                dparam = param_change(prev.params, params)
            else:
                dparam = float(np.max(np.abs(vec - old_vec))) if vec.size else 0.0
        snap = Snapshot(len(self.snapshots), kind, iteration, params, q, obj, bound, changed, violation, post, dparam)
        self.snapshots.append(snap)
        self.index = snap.index
        self._prune()
        if kind == "M" and self.params_budget is not None:
            self._param_bytes += _nbytes(vec if vec is not None else param_vector(params))
            self._release_params()
        return snap

    def _release_params(self) -> None:
        """Let the oldest parameter sets go while the stored ones pass ``params_budget`` bytes; the start's and
        those of the last few snapshots (every posterior still stored, and two more) stay."""
        stop = len(self.snapshots) - max(self.keep_posteriors or 2, 2) - 2
        i = self._released_upto
        while self._param_bytes > self.params_budget and i < stop:
            s = self.snapshots[i]
            if s.params is not None:
                if s.kind == "M":
                    self._param_bytes -= _nbytes(param_vector(s.params))
                object.__setattr__(s, "params", None)
                object.__setattr__(s, "q", None)
                object.__setattr__(s, "posterior", None)
            i += 1
        # an E-step holds the parameters of the M-step before it: when those went, it goes too
        while i < stop and self.snapshots[i].kind == "E" and i > 1 and self.snapshots[i - 1].params is None:
            for name in ("params", "q", "posterior"):
                object.__setattr__(self.snapshots[i], name, None)
            i += 1
        self._released_upto = i

    def released(self, i: int) -> bool:
        """Whether snapshot ``i`` can no longer be shown (``params_budget``): it let its parameters go, or its
        posterior went and the parameters it would be recomputed from did. The cursor cannot move there."""
        f = self._released_upto
        return self.iterative and f > 1 and 0 < i <= f and self.snapshots[i].q is None

    def _cursor_to(self, index: int) -> Snapshot:
        index = int(np.clip(index, 0, len(self.snapshots) - 1))
        if self.released(index):
            raise ValueError(self._released_message(index))
        self.index = index
        return self.current

    def _released_message(self, i: int) -> str:
        first = next(j for j in range(i, len(self.snapshots)) if not self.released(j))
        return (
            f"snapshot {i} was let go to bound the memory (params_budget={self.params_budget:,} bytes): snapshot 0 "
            f"and snapshots {first} to {len(self.snapshots) - 1} are kept. Build a Run without params_budget to "
            "keep every snapshot."
        )

    def _param_vector(self, params) -> np.ndarray | None:
        """``param_vector(params)``, remembered for the last two parameter sets (each is compared twice)."""
        memo = self.__dict__.setdefault("_pvec_memo", [])
        for p, v in memo:
            if p is params:
                return v
        v = param_vector(params)
        self._pvec_memo = [*memo[-1:], (params, v)]
        return v

    def _vouched(self, q: np.ndarray, obj: float | None) -> bool:
        """True when the model's own E-step made ``q`` and says it is finite (`LatentModel.posterior_is_finite`)
        and the objective is finite."""
        f = getattr(self.model, "posterior_is_finite", None)
        return f is not None and obj is not None and bool(np.isfinite(obj)) and f(q)

    def _argmax(self, q: np.ndarray) -> np.ndarray:
        """Row-wise arg-max of q, remembered for the last two arrays (each posterior is compared twice: with the one
        before it and the one after)."""
        memo = self.__dict__.setdefault("_argmax_memo", [])
        for a, v in memo:
            if a is q:
                return v
        v = self.model.posterior_argmax(q) if hasattr(self.model, "posterior_argmax") else None
        if v is None:
            v = row_argmax(q)
        self._argmax_memo = [*memo[-1:], (q, v)]
        return v

    def _prune(self) -> None:
        """Release the posteriors of all but the last ``keep_posteriors`` snapshots (see ``__init__``).

        The snapshot objects stay in place (caches key on their identity); only their q and posterior are let go."""
        k = self.keep_posteriors
        if k is None:
            return
        for i in range(len(self.snapshots) - max(k, 2) - 1, -1, -1):
            s = self.snapshots[i]
            if s.q is None:
                break
            object.__setattr__(s, "q", None)
            object.__setattr__(s, "posterior", None)

    def snapshot(self, i: int) -> Snapshot:
        """Snapshot ``i`` with its posterior: the stored one, or (when ``keep_posteriors`` released it) one whose
        posterior is recomputed from the stored parameters, the same numbers the run had."""
        return self._materialize(int(i))

    def _materialize(self, i: int) -> Snapshot:
        with self._jobs():
            return self._materialize_(i)

    def _materialize_(self, i: int) -> Snapshot:
        """Snapshot i with its posterior, recomputed from the stored parameters when it was dropped. Recomputed
        ones are kept in a small cache (as many as ``keep_posteriors``), not written back: scrubbing through a
        long run does not fill the memory again."""
        s = self.snapshots[i]
        if s.q is not None:
            return s
        if self.released(i):
            raise ValueError(self._released_message(i))
        cache = self.__dict__.setdefault("_recomputed", {})
        hit = cache.get(i)
        if hit is not None and hit[0] is s:
            cache[i] = cache.pop(i)  # most recently used last
            return hit[1]
        if s.kind == "E":
            full = self.model.e_step(self.data, self.snapshots[i - 1].params)
        elif s.kind == "M" and s.accelerated:  # an accelerated point holds the E-step at its own parameters
            full = self.model.e_step(self.data, s.params)
        elif s.kind == "M":
            full = self._materialize(i - 1).post
        else:
            start = initialise(self.model, self.data, self.init, seed=self.seed, **self.init_kwargs)
            full = start.q0
        q, post = _split(full)
        out = replace(s, q=q, posterior=post)
        cache[i] = (s, out)
        while len(cache) > max(self.keep_posteriors or 2, 2):
            cache.pop(next(iter(cache)))
        return out

    def _check_finite(self, where: str, params, q: np.ndarray | None, obj: float, bound: float) -> None:
        """Raise ModelError when the half-step ``where`` produced a non-finite value (it is not recorded); ``q`` None:
        the posterior was checked before."""
        bad = []
        if obj is None or not np.isfinite(obj):
            bad.append(f"objective ({obj})")
        if bound is None or not np.isfinite(bound):
            bad.append(f"bound F(q, theta) ({bound})")
        if q is not None and not np.isfinite(q.sum()) and not np.all(np.isfinite(q)):
            rows = np.flatnonzero(~np.isfinite(q).all(axis=1))
            bad.append(f"posterior of {rows.size} unit(s), first row {int(rows[0])}")
        if params is not None:
            bad += [f"parameter {p}" for p in nonfinite_entries(params)]
        if bad:
            title = getattr(getattr(self.model, "info", None), "title", type(self.model).__name__)
            stop = (
                "The run cannot start."
                if where == "initialisation"
                else f"The run stops at snapshot {len(self.snapshots) - 1}; nothing was recorded."
            )
            raise ModelError(
                f"{title}: the {where} gave non-finite values: {', '.join(bad)}. {stop} Rescale extreme inputs "
                "(scores, edge weights) or try another start."
            )

    def _check(self, prev: Snapshot, obj: float, bound: float, kind: str) -> str | None:
        if not getattr(self.model, "monotone", True):
            return None
        problems = []
        tol = REL_TOL_MONOTONE
        if obj < prev.objective - tol * max(1.0, abs(prev.objective)):
            problems.append(f"objective fell by {prev.objective - obj:.3g}")
        if bound < prev.bound - tol * max(1.0, abs(prev.bound)):
            problems.append(f"bound F(q, theta) fell by {prev.bound - bound:.3g}")
        if not problems:
            return None
        msg = f"{kind}-step to snapshot {len(self.snapshots)}: " + "; ".join(problems)
        self.violations.append(msg)
        return msg

    def step(self) -> Snapshot:
        """Complete one EM iteration from here: E then M (or just M after an E-only step)."""
        if not self.iterative:
            return self.current
        if self.next_kind == "M":
            return self.m_step()
        self.e_step()
        return self.m_step()

    def back(self) -> Snapshot:
        """Go back one half-step (after E, M: back gives "after E"), as the scrubber does; nothing is recomputed."""
        return self._cursor_to(max(self.index - 1, 0))

    def goto(self, index: int) -> Snapshot:
        """Scrub: move the cursor to a snapshot already computed."""
        return self._cursor_to(index)

    def reset(self) -> Snapshot:
        """Forget every step and start again from the initialisation."""
        self.violations = []
        self.stop_reason = None
        self.acceleration = None
        self.accelerated_from = None
        self._start()
        self.index = 0
        return self.current

    def run(
        self,
        tol: float | None = None,
        max_iter: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        accelerate: bool = False,
    ) -> Snapshot:
        """Iterate until :attr:`converged`, ``max_iter`` iterations, a stall or ``should_stop()``; why it stopped
        is in :attr:`stop_reason` ("converged", "max_iter", "stalled", "stopped"; ``STOP_REASONS`` says it in words).

        ``accelerate``: SQUAREM around the EM map (`crowdlab.engines.accel`) for the models that declare
        unconstrained coordinates (Dawid-Skene, one-coin, two-coin, MACE by EM and by VB, IBCC, EBCC, GLAD; soft EM
        only; the others run plain EM). Each accepted point is stored as an "M" snapshot marked ``accelerated`` (the
        EM-map evaluations it stands for; its ``iteration`` counts evaluations, so ``max_iter`` bounds them), after
        a plain "E" snapshot; the intermediate evaluations are not stored. It stops on the estimated remaining gain
        after a check that the stop is a maximum (or on a flat objective: "no_signal"); :attr:`acceleration`
        holds the evaluations, fallback steps, the gap estimate and the check."""
        if tol is not None:
            self.tol = float(tol)
        if max_iter is not None:
            self.max_iter = int(max_iter)
        if not self.iterative:
            return self.current
        self.index = len(self.snapshots) - 1
        if accelerate and accelerable(self.model, self.last.params):
            if self.last.accelerated and self.stop_reason == "converged":
                return self.current
            if self.accelerated_from is None:
                self.accelerated_from = self.index  # the plain steps before it: what a script must replay
            self.stop_reason = None
            with self._jobs():
                self._run_accelerated(progress, should_stop)
            return self.current
        self.stop_reason = None
        while True:
            reason = self.stop_check()
            if reason is not None:
                self.stop_reason = reason
                break
            self.step()
            if progress is not None:
                progress(self.last.iteration, self.max_iter)
            if should_stop is not None and should_stop():
                self.stop_reason = "converged" if self.converged else "stopped"
                break
        return self.current

    def _run_accelerated(self, progress, should_stop) -> None:
        """The loop of :meth:`run` with ``accelerate`` (see there and `crowdlab.engines.accel`)."""
        acc = self.acceleration
        if acc is None:
            acc = self.acceleration = Acceleration(null_objective=null_objective(self.data))
        if self.next_kind == "M" and self.last.iteration < self.max_iter:
            self._half_("M")
            acc.evaluations += 1
            if progress is not None:
                progress(self.last.iteration, self.max_iter)
        host = _RunHost(self, progress)
        em = MemoryMap(self.model, self.data)
        self.stop_reason = squarem_loop(
            host,
            self.model,
            em,
            acc,
            tol=self.tol,
            max_iter=self.max_iter,
            seed=self.seed,
            n_obs=self.data.n_obs,
            should_stop=should_stop,
        )

    def _accelerated_m(self, params, full, obj: float, evaluations: int) -> Snapshot:
        """Append the point an accelerated cycle accepted as an "M" snapshot: its parameters, its own posterior
        (the E-step at those parameters gave the objective), objective = bound = log p(x | theta) (+ log prior; the
        ELBO at its own q for VB). ``iteration`` advances by the ``evaluations`` of the EM map it took."""
        prev = self.last
        q, post = _split(full)
        vec = self._param_vector(params)
        check_params = not (vec is not None and bool(np.isfinite(vec).all()))
        where = f"accelerated M-step {len(self.snapshots)} (iteration {prev.iteration + evaluations})"
        self._check_finite(where, params if check_params else None, None if self._vouched(q, obj) else q, obj, obj)
        changed = np.flatnonzero(self._argmax(prev.q) != self._argmax(q)) if q is not prev.q else np.zeros(0, np.int64)
        violation = self._check(prev, obj, obj, "M")
        old_vec = self._param_vector(prev.params)
        if vec is None or old_vec is None or vec.shape != old_vec.shape:
            dparam = param_change(prev.params, params)
        else:
            dparam = float(np.max(np.abs(vec - old_vec))) if vec.size else 0.0
        snap = Snapshot(
            len(self.snapshots),
            "M",
            prev.iteration + evaluations,
            params,
            q,
            obj,
            obj,
            changed,
            violation,
            post,
            dparam,
            max(int(evaluations), 1),
        )
        self.snapshots.append(snap)
        self.index = snap.index
        self._prune()
        if self.params_budget is not None:
            self._param_bytes += _nbytes(vec if vec is not None else param_vector(params))
            self._release_params()
        return snap

    # ------------------------------------------------------------------ results at the cursor
    @property
    def posterior(self) -> np.ndarray:
        return self.current.q

    @property
    def params(self):
        return self.current.params

    def labels(self, snap: Snapshot | None = None) -> np.ndarray:
        """Hard labels at ``snap`` (default: the cursor): arg-max of q; majority vote uses its tie rule."""
        snap = snap or self.current
        if snap.q is None:
            snap = self._materialize(snap.index)
        if not self.iterative:
            return self.model.labels(self.data)
        return row_argmax(snap.q).astype(np.int32)

    def history(self) -> dict[str, np.ndarray]:
        """Per snapshot: index, iteration, kind, objective, bound (arrays for plotting)."""
        return snapshot_history(self.snapshots)

    def objective_history(self) -> list[float]:
        """The objective after each complete iteration (init, then every M-step)."""
        return complete_objectives(self.snapshots)


class _RunHost:
    """How `crowdlab.engines.accel.squarem_loop` records an accelerated :class:`Run`: each cycle starts with an
    "E" snapshot at the current point and its accepted point is an accelerated "M" snapshot (:meth:`Run.run`)."""

    def __init__(self, run: Run, progress: Callable[[int, int], None] | None) -> None:
        self.run, self.progress = run, progress

    @property
    def iteration(self) -> int:
        return self.run.last.iteration

    def _said(self) -> None:
        if self.progress is not None:
            self.progress(self.run.last.iteration, self.run.max_iter)

    def begin(self):
        e = self.run._half_("E")
        return e.params, e.post, e.objective

    def record(self, params, full, obj: float, evaluations: int, after_e: bool = False) -> None:
        if after_e:
            self.run._half_("E")
        self.run._accelerated_m(params, full, obj, evaluations)
        self._said()

    def plain_step(self) -> None:
        self.run._half_("E")
        self.run._half_("M")
        self._said()
