"""The Step page's Workers tab: the dependence check's heatmap, its metrics and its pairs under the worker report,
for Dawid-Skene and EBCC (Li, Rubinstein & Cohn 2019) on the bluebirds (39 workers who label every image)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.analysis.dependence import dependence_check
from tests.app.helpers import arr, ok
from tests.app.test_step_lab import _chart, _method, _open, _run, _tab


@pytest.mark.parametrize("method", ["ds", "ebcc"])
def test_workers_tab_shows_the_pair_heatmap(method):
    at = _method(_open("bluebirds"), method)
    ok(at.button(key="stepper.step").click().run())
    _tab(at, "Workers")
    spec = _chart(at, "stepper.dependence_chart")
    assert spec is not None
    run = _run(at)
    rep = dependence_check(run.data, run.params, run.posterior)
    heat = spec["data"][0]
    z = arr(heat["z"], float).reshape(len(heat["y"]), -1)
    assert z.shape == (30, 30)  # 39 workers: the 30 of the strongest pairs
    shown = z[np.isfinite(z)]
    assert shown.size and np.isin(np.round(shown, 9), np.round(rep.kappa, 9)).all()
    flagged = [s for s in spec["layout"].get("shapes", []) if s.get("name") == "flagged"]
    assert bool(flagged) == (rep.n_flagged > 0)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["pairs flagged"] == f"{rep.n_flagged} of {rep.n_tested}"
    assert metrics["effective annotators"] == f"{rep.effective['eigen']:.1f} of 39"
