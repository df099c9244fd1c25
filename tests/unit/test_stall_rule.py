"""The "stalled" stop: a flat objective is a stall only where the parameters stop closing in on a fixed point.

Near a maximum EM's objective gains shrink like the square of its parameter steps, so the objective reaches
rounding error while the steps are still shrinking geometrically; calling that "stalled" (as crowdlab did for
32 of 102 fits of six models on the 17 real sets with gold, MACE (VB) and IBCC on bluebirds among them) told the
user that something was wrong when EM was simply converging linearly.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.engines.run import SETTLE_ITERATIONS, STALL_ITERATIONS, contracting, stalled_at
from crowdlab.io.samples import load_sample


def _snaps(changes, objective=-100.0):
    """An init snapshot and one M snapshot per parameter change, the objective flat at ``objective``."""
    out = [SimpleNamespace(kind="init", objective=objective, param_change=float("nan"))]
    for d in changes:
        out += [SimpleNamespace(kind="E", objective=objective, param_change=float("nan"))]
        out += [SimpleNamespace(kind="M", objective=objective, param_change=d)]
    return out


def test_contracting_needs_every_step_smaller_than_the_last():
    n = SETTLE_ITERATIONS + 1
    assert contracting(list(0.7 ** np.arange(n)))
    assert not contracting(list(0.7 ** np.arange(n - 1)))  # too short to tell
    wobble = list(0.7 ** np.arange(n))
    wobble[-1] = wobble[-2] * 1.01  # GLAD's M-step noise at 1e-9: 1.02e-09 then 1.04e-09
    assert not contracting(wobble)
    assert not contracting([1.0] * n)  # drifting at a constant rate along a flat direction
    assert not contracting([*list(0.7 ** np.arange(n - 1)), 0.0])
    assert not contracting([*list(0.7 ** np.arange(n - 1)), float("nan")])


@pytest.mark.parametrize(
    "changes, stall",
    [
        (list(1e-5 * 0.7 ** np.arange(STALL_ITERATIONS + 2)), False),  # closing in: let the settle test end it
        ([1e-5] * (STALL_ITERATIONS + 2), True),  # drifting
        (list(1e-5 * 0.7 ** np.arange(STALL_ITERATIONS + 1)) + [1e-3], True),  # moving away again
    ],
)
def test_a_flat_objective_stalls_only_without_contraction(changes, stall):
    assert stalled_at(_snaps(changes)) is stall


def test_a_rising_objective_never_stalls():
    snaps = _snaps([1e-5] * (STALL_ITERATIONS + 2))
    for i, s in enumerate(snaps):
        s.objective = -100.0 + 1e-6 * i
    assert not stalled_at(snaps)


@pytest.mark.parametrize("method", ["mace_vb", "ibcc"])
def test_bluebirds_variational_fits_now_end_converged_at_the_same_optimum(method):
    """Both used to stop as "stalled" (MACE (VB) after 55 iterations, IBCC after 61) with their parameter changes
    shrinking by a factor of about 0.7 every iteration."""
    data = load_sample("bluebirds")
    run = cl.fit(data, method, accelerate=False)  # the plain rule (the accelerated one has its own tests)
    assert run.stop_reason == "converged"
    tight = cl.fit(data, method, tol=1e-14, max_iter=3000, accelerate=False)
    assert run.last.objective == pytest.approx(tight.last.objective, abs=1e-8)
    d = run.convergence_trace()["param_change"]
    assert d[-1] < 1e-7
    fast = cl.fit(data, method)
    assert fast.stop_reason == "converged"
    assert fast.last.objective == pytest.approx(tight.last.objective, abs=1e-6)
