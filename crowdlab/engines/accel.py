"""Accelerated EM with the same fixed point: SQUAREM around a model's EM (or VB) map, a stopping rule on the
estimated remaining gain, and a check that the stop is a maximum.

SQUAREM (Varadhan & Roland 2008, "Simple and globally convergent methods for accelerating the convergence of any
EM algorithm", Scand. J. Statist. 35, their scheme S3) takes two EM steps theta_1 = F(theta_0), theta_2 = F(theta_1),
forms r = theta_1 - theta_0 and v = theta_2 - 2 theta_1 + theta_0, and jumps to
theta' = theta_0 + 2 alpha r + alpha^2 v with alpha = |r| / |v|, followed by one EM step from theta' (their
stabilisation). Here theta is each model's parameter set in unconstrained coordinates (`LatentModel.free_parts`:
logs of probability vectors, renormalised at the map; logits of coins; logs of Dirichlet parameters), so every
extrapolated point is a valid parameter set: extrapolating (pi, Gamma) themselves leaves the simplex near its
boundary on almost every step. The step length is controlled as in their R package SQUAREM (``squarem1``: alpha
clipped to [1, step_max], step_max starting at 1 and multiplied by 4 each time it is used, divided by 4 after a
rejected step). A step is kept only when the objective at the new point is not below the objective at theta_0;
otherwise the cycle falls back to theta_2, two plain EM steps (so the objective never decreases, as plain EM's does
not). A fixed point of the accelerated scheme is a fixed point of F: the run ends where plain EM ends.

Stopping rule. Each cycle's two plain EM steps give the gains g_1 = l(theta_1) - l(theta_0) and
g_2 = l(theta_2) - l(theta_1); while EM converges linearly they shrink by a factor R = g_2 / g_1 < 1 per step, so
the objective's limit is l(theta_2) + g_2 R / (1 - R) (Aitken's extrapolation of the objective; McLachlan &
Krishnan 2008, Sec. 4.9). A candidate stop is one where that remaining gain and the last two cycles' gains are at
most ``tol`` min(max(1, |l|), ``GAP_SCALE``) nats (with the default tol = 1e-8: 1e-4 nats on any set of more than
10^4 nats). It is confirmed by ``TAIL_STEPS`` plain EM steps from it and the same estimate on their last gains (an
extrapolation excites fast modes whose quick decay can hide a slow tail). A small gain can also mean a saddle (EM
slows down near one before sliding away), so before declaring convergence the stop is checked: the parameters are
moved a little into the interior (seeded; `perturb`) and ``CHECK_CYCLES`` accelerated cycles are run from there.
If they climb above the stop by more than the tolerance, the stop was no maximum: the run goes on from the higher
point (counted in ``saddles``); else the stop is reported as checked.

A flat objective: when the labels carry no signal (each worker's answers independent of the item), every parameter
set whose confusion columns all equal the worker's own answer shares (log-likelihood ``null_objective``) is a
fixed point, and EM crawls over a nearly flat surface for thousands of iterations. After ``FLAT_AFTER``
evaluations, a run on ``FLAT_MIN_LABELS`` labels or more whose objective is within ``FLAT_NATS`` nats per label
of that null objective (either side: a model that cannot express every worker's answer shares, one-coin or GLAD,
may end far below it, which is no sign of a flat surface: on TREC 2010 0.31 and 0.59 nats per label below),
and whose last cycle gained less than a hundredth of that, stops with
``stop_reason = "no_signal"`` (on 2 x 10^5 random labels the fit sits 6e-4 nats per label above the null
objective; the real sets with gold, 0.04 or more).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.models.base import from_free, to_free

STEP_MIN0, STEP_MAX0, MSTEP = 1.0, 1.0, 4.0  # the SQUAREM package's defaults (squarem1: step.min0, step.max0, mstep)
GAP_SCALE = 1e4  # the remaining gain allowed at the stop: tol min(max(1, |objective|), GAP_SCALE) nats
WATCH = 1e3  # the objective at theta_2 is evaluated (for the gap estimate) once a cycle gains below WATCH x tol
TAIL_STEPS = 8  # plain EM steps taken from a candidate stop to re-estimate the gap once the fast modes have died
CHECK_SCALE = 1e-4  # the maximum check's perturbation: mixing weight of a random interior point
CHECK_CYCLES = 6  # accelerated cycles run from the perturbed point
FLAT_AFTER = 60  # EM-map evaluations before a flat objective may end a run
FLAT_MIN_LABELS = 10_000  # ... on at least this many labels (a small set converges soon anyway, and its noise fit
# sits far above the null objective per label)
FLAT_NATS = 5e-3  # nats per label above the no-signal objective below which the objective counts as flat


@dataclass
class Acceleration:
    """What an accelerated run did (``Run.acceleration``): EM-map evaluations (M-steps, the check's included),
    SQUAREM cycles, ``fallbacks`` (cycles whose extrapolation was rejected for a plain double EM step), ``gap``
    (the estimated remaining gain at the stop, nats), ``limit`` (the objective's extrapolated limit), ``check``
    (the maximum check at the stop: passed, gain, evaluations, scale, cycles), ``saddles`` (stops the check
    rejected: the run went on from the higher point it found, ``saddle_gain`` nats higher in all, so it may end
    above where plain EM stops), ``null_objective`` and ``no_signal`` (see the module docstring); ``passes``: on
    the streaming and Dask engines, the passes over the data the whole fit took (the start's included), None in
    memory."""

    evaluations: int = 0
    cycles: int = 0
    fallbacks: int = 0
    gap: float = float("nan")
    limit: float = float("nan")
    check: dict = field(default_factory=dict)
    saddles: int = 0
    saddle_gain: float = 0.0
    null_objective: float | None = None
    no_signal: bool = False
    passes: int | None = None
    fallbacks_seen: int = field(default=0, repr=False)  # the current Squarem's fallbacks already counted

    def summary(self) -> str:
        """One line for a report."""
        chk = self.check
        out = (
            f"accelerated EM (SQUAREM): EM-map evaluations {self.evaluations:,} (cycles {self.cycles:,}, fallback "
            f"steps {self.fallbacks:,}); estimated remaining gain {self.gap:.3g} nats"
        )
        if self.passes is not None:
            out += f"; passes over the data {self.passes:,}"
        if chk:
            out += (
                f"; maximum check {'passed' if chk.get('passed') else 'not passed'} (perturbed by "
                f"{chk.get('scale', CHECK_SCALE):g}, evaluations {chk.get('evaluations', 0)}, best gain "
                f"{chk.get('gain', float('nan')):.3g} nats)"
            )
        if self.saddles:
            out += (
                f"; {self.saddles} stop(s) were no maximum (a saddle or a plateau): the run went on from "
                f"{self.saddle_gain:.3g} nats higher, so it may end above where plain EM stops"
            )
        if self.no_signal:
            out += "; the labels carry no signal (the objective is flat at the no-signal fit)"
        return out


def accelerable(model, params) -> bool:
    """Whether ``model`` is run accelerated from ``params``: its EM is soft (exact EM or variational Bayes, not hard
    EM) and it declares unconstrained coordinates for them (`LatentModel.free_parts`)."""
    f = getattr(model, "free_parts", None)
    return f is not None and not getattr(model, "hard", False) and params is not None and f(params) is not None


def null_objective(data) -> float | None:
    """log-likelihood of the labels when every worker answers from its own answer shares whatever the item
    (sum over labels of log n_m(l) / n_m): the value every class model reaches at its no-signal fixed points.
    None for soft votes or continuous scores."""
    if getattr(data, "is_continuous", False) or getattr(data, "weight", None) is not None:
        return None
    R = data.n_responses
    counts = np.bincount(data.worker.astype(np.int64) * R + data.label, minlength=data.n_workers * R)
    return null_from_counts(counts.reshape(data.n_workers, R))


def null_from_counts(counts: np.ndarray) -> float:
    """:func:`null_objective` from the (M, R) counts n_m(l) of each worker's answers (the engines sum them over
    their blocks: the expected counts of a round summed over the true class)."""
    counts = np.asarray(counts, dtype=np.float64)
    tot = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, counts * np.log(counts / np.maximum(tot, 1.0)), 0.0)
    return float(terms.sum())


class MemoryMap:
    """The EM map F on a data set in memory: ``evaluate(params)`` is the E-step at ``params`` with the objective
    there, ``m_step(state)`` the M-step from that E-step's posterior, so F(params) = m_step(evaluate(params)[0]).

    Every engine gives its EM map in these two calls (`crowdlab.engines.blocks.RoundMap`: one pass over the
    blocks of a streamed file or of the Dask partitions, whose summed statistics are the state;
    `crowdlab.engines.glad_blocks.GladMap`): :class:`Squarem`, :func:`plain_tail`, :func:`maximum_check` and
    :func:`squarem_loop` see nothing else of where the data are."""

    def __init__(self, model, data) -> None:
        self.model, self.data = model, data

    def evaluate(self, params):
        """(posterior, objective) at ``params``: one E-step, whose pass also gives the objective (memoised)."""
        full = self.model.e_step(self.data, params)
        return full, float(self.model.log_likelihood(self.data, params))

    def m_step(self, full):
        return self.model.m_step(self.data, full)


class Squarem:
    """SQUAREM cycles around ``model``'s EM map ``em`` (:class:`MemoryMap` or an engine's), with the package's
    step control (module docstring)."""

    def __init__(self, model, em) -> None:
        self.model, self.em = model, em
        self.step_min, self.step_max = STEP_MIN0, STEP_MAX0
        self.evaluations = 0
        self.fallbacks = 0
        self.cycles = 0

    def evaluate(self, params):
        """(state, objective) at ``params`` (the E-step's posterior in memory; an engine's pass)."""
        return self.em.evaluate(params)

    def _m(self, full):
        self.evaluations += 1
        return self.em.m_step(full)

    def _try(self, params):
        """(posterior, objective) at an extrapolated point, or None when it is not finite there."""
        try:
            with np.errstate(all="ignore"):
                full, obj = self.evaluate(params)
        except (ArithmeticError, ValueError, ModelError):
            return None
        return (full, obj) if math.isfinite(obj) else None

    def cycle(self, p, full_p, l_p: float, with_l2: bool):
        """One cycle from ``p`` (posterior ``full_p``, objective ``l_p``): returns (params, posterior, objective,
        l2) at the accepted point; ``l2`` is l(theta_2) when ``with_l2`` (else None) with l1 in ``self.l1``."""
        self.cycles += 1
        p1 = self._m(full_p)
        full1, l1 = self.evaluate(p1)
        p2 = self._m(full1)
        self.l1 = l1
        at2 = self.evaluate(p2) if with_l2 else None
        parts = self.model.free_parts(p)
        x0 = to_free(parts)
        x1 = to_free(self.model.free_parts(p1))
        x2 = to_free(self.model.free_parts(p2))
        r = x1 - x0
        v = x2 - x1 - r
        sr2, sv2 = float(np.einsum("i,i->", r, r)), float(np.einsum("i,i->", v, v))  # no BLAS call (threads)
        alpha = math.sqrt(sr2 / sv2) if sv2 > 0 and math.isfinite(sr2 / sv2) else 1.0
        alpha = min(max(alpha, self.step_min), self.step_max)
        new = None
        if abs(alpha - 1.0) > 0.01:
            x = x0 + 2.0 * alpha * r + alpha * alpha * v
            try:
                pe = self.model.from_free_parts(p, from_free(x, parts))
            except (ArithmeticError, ValueError):
                pe = None
            at_e = None if pe is None else self._try(pe)
            if at_e is not None:
                pn = self._m(at_e[0])  # the stabilisation step
                at_n = self._try(pn)
                if at_n is not None and at_n[1] >= l_p:
                    new = (pn, *at_n)
            if new is None:
                self.fallbacks += 1
                if alpha == self.step_max:
                    self.step_max = max(STEP_MAX0, self.step_max / MSTEP)
                alpha = 1.0
        if new is None:
            new = (p2, *(at2 if at2 is not None else self.evaluate(p2)))
        elif at2 is not None and at2[1] > new[2]:
            new = (p2, *at2)  # two plain steps went higher than the extrapolation: keep them
        if alpha == self.step_max:
            self.step_max *= MSTEP
        return new[0], new[1], new[2], (None if at2 is None else at2[1])


def gap_estimate(l0: float, l1: float, l2: float) -> tuple[float, float]:
    """(remaining gain after l2, extrapolated limit) from three objectives of plain EM steps (Aitken: gains shrinking
    by R = g2 / g1 per step leave g2 R / (1 - R)); (inf, nan) while they do not shrink."""
    g1, g2 = l1 - l0, l2 - l1
    noise = 8 * np.finfo(float).eps * max(1.0, abs(l2))
    if abs(g1) <= noise and abs(g2) <= noise:
        return 0.0, l2
    if g1 > 0 and 0 <= g2 < g1:
        R = g2 / g1
        gap = g2 * R / (1.0 - R)
        return gap, l2 + gap
    return float("inf"), float("nan")


def plain_tail(em, params, full, objective: float, steps: int = TAIL_STEPS):
    """``steps`` plain EM steps from ``params`` (posterior ``full``, objective ``objective``): a long extrapolation
    leaves fast modes behind, so the two steps inside a cycle can show gains shrinking fast while a slow direction
    still has much to give; after a few plain steps the last gains shrink at the slow rate. Returns (params,
    posterior, objective, gap, limit) at the last step (:func:`gap_estimate` on its last three objectives)."""
    objs = [objective]
    for _ in range(steps):
        params = em.m_step(full)
        full, obj = em.evaluate(params)
        objs.append(float(obj))
    gap, limit = gap_estimate(*objs[-3:])
    return params, full, objs[-1], gap, limit


def perturb(parts, eps: float, rng: np.random.Generator) -> list[np.ndarray]:
    """The arrays of ``parts`` moved a little into the interior: probability vectors and rates mixed with weight
    ``eps`` with a random point of their simplex (so an entry at 0, which EM's map would keep at 0, can come
    back), coins likewise with a random coin, positive parameters scaled by exp(eps z), reals moved by eps z."""
    out = []
    for x, kind, axis in parts:
        x = np.asarray(x, dtype=np.float64)
        z = rng.random(x.shape)
        if kind == "simplex":
            out.append((1.0 - eps) * x + eps * z / z.sum(axis=axis, keepdims=True))
        elif kind == "rates":
            out.append((1.0 - eps) * x + eps * z / (x.shape[axis] + 1))
        elif kind == "logit":
            out.append((1.0 - eps) * x + eps * z)
        elif kind == "log":
            out.append(x * np.exp(eps * (2.0 * z - 1.0)))
        else:
            out.append(x + eps * (2.0 * z - 1.0))
    return out


def maximum_check(model, em, params, objective: float, tol_nats: float, seed: int | None) -> tuple[dict, tuple]:
    """Perturb ``params`` (seeded, :func:`perturb` with ``CHECK_SCALE``) and run ``CHECK_CYCLES``
    accelerated cycles from there. Returns (report, best) where best is (params, posterior, objective) of the
    highest point reached; report["passed"]: it is not above ``objective`` by more than ``tol_nats``."""
    rng = np.random.default_rng([0 if seed is None else int(seed), 4011])
    sq = Squarem(model, em)
    p = model.from_free_parts(params, perturb(model.free_parts(params), CHECK_SCALE, rng))
    full, obj = sq.evaluate(p)
    best = (None, None, -np.inf)  # the perturbed point itself is no candidate: it may break a constraint the
    # model's M-step keeps (a fixed uniform class prior), and only what the EM map returns counts
    for _ in range(CHECK_CYCLES):
        p, full, obj, _l2 = sq.cycle(p, full, obj, with_l2=False)
        if obj > best[2]:
            best = (p, full, obj)
    gain = best[2] - objective
    report = {
        "passed": bool(gain <= tol_nats),
        "gain": float(gain),
        "evaluations": sq.evaluations,
        "scale": CHECK_SCALE,
        "cycles": CHECK_CYCLES,
    }
    return report, best


def squarem_loop(host, model, em, acc: Acceleration, *, tol: float, max_iter: int, seed, n_obs: int, should_stop=None):
    """The accelerated run: SQUAREM cycles through ``em`` until the stopping rule of the module docstring holds,
    ``max_iter`` EM-map evaluations are done or ``should_stop()``; returns why it stopped ("converged",
    "max_iter", "no_signal", "stopped"), counting in ``acc``.

    ``host`` keeps the run's record, so that the in-memory `crowdlab.engines.run.Run` and the streaming and Dask
    engines (`crowdlab.engines.blocks.accelerated_em`) run the one loop: ``host.iteration`` (the evaluations
    recorded so far), ``host.begin()`` -> (params, state, objective) of the current point (recorded as an E
    half-step), ``host.record(params, state, objective, evaluations, after_e=False)`` (an accepted point that took
    ``evaluations`` EM-map evaluations, after an E half-step at the current point when ``after_e``) and
    ``host.plain_step()`` (one plain EM step, where no cycle fits under ``max_iter``)."""
    sq = Squarem(model, em)
    last_gain = None
    gains: list[float] = []  # the last accelerated cycles' gains
    while True:
        if host.iteration >= max_iter:
            return "max_iter"
        if max_iter - host.iteration < 3:  # no room for a cycle: plain steps up to the limit
            host.plain_step()
            acc.evaluations += 1
            continue
        params, state, l_p = host.begin()
        tol_nats = tol * min(max(1.0, abs(l_p)), GAP_SCALE)
        with_l2 = last_gain is not None and last_gain <= WATCH * tol_nats
        before = sq.evaluations
        p, full, obj, l2 = sq.cycle(params, state, l_p, with_l2)
        acc.evaluations += sq.evaluations - before
        acc.cycles, acc.fallbacks = acc.cycles + 1, acc.fallbacks + (sq.fallbacks - acc.fallbacks_seen)
        acc.fallbacks_seen = sq.fallbacks
        host.record(p, full, obj, sq.evaluations - before)
        last_gain = obj - l_p
        gap = float("inf")
        if l2 is not None:
            gap, limit = gap_estimate(l_p, sq.l1, l2)  # what plain EM has left after its two steps
            if math.isfinite(gap):
                acc.gap, acc.limit = gap, max(limit, obj)
        gains = [*gains[-1:], last_gain]
        room = max_iter - host.iteration >= TAIL_STEPS  # the confirmation fits under max_iter
        if room and gap <= tol_nats and max(gains) <= tol_nats:
            p, full, obj, gap, limit = plain_tail(em, p, full, obj)
            acc.evaluations += TAIL_STEPS
            host.record(p, full, obj, TAIL_STEPS, after_e=True)
            acc.gap, acc.limit = gap, max(limit, obj) if math.isfinite(gap) else float("nan")
            if not gap <= tol_nats:  # a slow tail the cycle's two steps hid: go on
                gains = []
                continue
            report, best = maximum_check(model, em, p, obj, tol_nats, seed)
            acc.evaluations += report["evaluations"]
            acc.check = report
            if report["passed"]:
                return "converged"
            acc.saddles += 1  # not a maximum (or not yet converged): go on from the higher point
            acc.saddle_gain += best[2] - obj
            host.record(*best, report["evaluations"], after_e=True)
            sq = Squarem(model, em)
            acc.fallbacks_seen = 0
            last_gain, gains = None, []
            continue
        null = acc.null_objective
        if (
            null is not None
            and host.iteration >= FLAT_AFTER
            and n_obs >= FLAT_MIN_LABELS
            and abs(obj - null) <= FLAT_NATS * n_obs  # near it: one-coin and GLAD sit far below it on real sets
            and last_gain <= FLAT_NATS * 1e-2 * n_obs
        ):
            acc.no_signal = True
            return "no_signal"
        if should_stop is not None and should_stop():
            return "stopped"
