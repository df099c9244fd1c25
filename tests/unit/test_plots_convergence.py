"""The Convergence tab's figure: log10 of the objective gain and of the parameter change per iteration, on a fixed
y range, with the cursor marked; non-positive gains drawn at the floor."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab import plots
from crowdlab.engines.run import Run
from crowdlab.io.samples import load_sample
from crowdlab.models import make_model
from crowdlab.plots.curves import LOG_FLOOR, convergence_range


def _trace(fig, meta):
    found = [t for t in fig.data if t.meta == meta]
    return found[0] if found else None


@pytest.fixture(scope="module")
def run():
    r = Run(load_sample("bluebirds"), make_model("ds"))
    r.run()
    return r


def test_traces_follow_the_run_and_the_range_is_fixed(run):
    trace = run.convergence_trace()
    fig = plots.convergence_chart(trace, run.current.iteration, tol_line=1e-5)
    gain = _trace(fig, "gain")
    assert np.allclose(np.asarray(gain.y), np.maximum(np.log10(trace["gain"]), LOG_FLOOR))
    assert np.allclose(np.asarray(_trace(fig, "param_change").y), np.log10(trace["param_change"]))
    assert _trace(fig, "tol").y[0] == pytest.approx(-5.0)
    fixed = list(fig.layout.yaxis.range)
    assert fixed == convergence_range(trace)
    assert fixed[0] < LOG_FLOOR and fixed[1] >= np.log10(trace["gain"].max())
    # the cursor moves, the axis does not
    back = plots.convergence_chart(trace, 3)
    assert list(back.layout.yaxis.range) == fixed
    assert [s.x0 for s in back.layout.shapes if s.name == "current"] == [3]


def test_non_positive_and_missing_values():
    trace = {
        "iteration": np.array([1, 2, 3, 4]),
        "gain": np.array([10.0, 0.0, -1e-3, 1e-20]),
        "param_change": np.full(4, np.nan),
    }
    fig = plots.convergence_chart(trace, 2)
    assert list(_trace(fig, "gain").y) == [1.0, LOG_FLOOR, LOG_FLOOR, LOG_FLOOR]
    assert _trace(fig, "param_change") is None  # a model without float parameters
    assert list(fig.layout.yaxis.range) == [LOG_FLOOR - 0.5, 1.5]


def test_no_iteration_yet_gives_a_message():
    fig = plots.convergence_chart({"iteration": np.array([]), "gain": np.array([]), "param_change": np.array([])}, 0)
    assert fig.layout.annotations and "press Step" in fig.layout.annotations[0].text
