"""The core's issue-10 features in the app (AppTest): worker reports (Step tab and Data page), the Convergence tab
and the stop reason, majority-vote ties, the scores model's degenerate optimum and its floor on sigma,
semi-supervised EM ("Reveal gold") and the non-EM baselines on the Compare page."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.em import STOP_REASONS
from crowdlab.reports import krippendorff_alpha, worker_report
from crowdlab.samples import load_sample
from crowdlab.ui import reports_view
from tests.app.test_step_lab import _arr, _chart, _click, _method, _ok, _open, _run, _tab, _trace

DATA_PAGE = "pages/1_Data.py"


def _table(at, column: str = "spammer_score"):
    """The one table on the page with ``column`` (keyed dataframes carry no id in AppTest)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


# ---------------------------------------------------------------------------- worker reports
def test_step_worker_report_is_the_cursors_and_sorted_by_spammer_score():
    at = _method(_open("bluebirds"), "ds")
    _click(at, "stepper.run")
    _tab(at, "Worker report")
    run = _run(at)
    want = worker_report(run)
    got = _table(at)
    assert len(got) == run.data.n_workers == 39
    assert np.all(np.diff(got["spammer_score"].to_numpy()) >= 0)  # spammers first
    by = want.set_index("worker")
    assert got["accuracy"].to_numpy() == pytest.approx(by.loc[got["worker"], "accuracy"].to_numpy())
    assert [m.value for m in at.metric] == [f"{krippendorff_alpha(run.data):.3f}"]
    assert any("near 0: a spammer" in c.value.lower() for c in at.caption)
    # sort by accuracy instead; back one step: the report follows the cursor
    _ok(at.radio(key="stepper.report.sort").set_value(reports_view.SORTS[1]).run())
    assert np.all(np.diff(_table(at)["accuracy"].to_numpy()) >= 0)
    _click(at, "stepper.back")
    _click(at, "stepper.back")
    run = _run(at)
    earlier = worker_report(run).set_index("worker")
    got = _table(at)
    assert got["accuracy"].to_numpy() == pytest.approx(earlier.loc[got["worker"], "accuracy"].to_numpy())


@pytest.mark.parametrize("method", ["mv", "scores"])
def test_step_worker_report_says_why_not(method):
    at = _method(_open("affect" if method == "scores" else "bluebirds"), method)
    _tab(at, "Worker report")
    assert any("needs a class model" in i.value for i in at.info)
    assert not at.dataframe


def test_data_page_worker_report_and_alpha():
    at = _ok(_open("dogs").switch_page(DATA_PAGE).run())
    data = load_sample("dogs")
    got = _table(at)
    assert len(got) == data.n_workers
    assert np.all(np.diff(got["spammer_score"].to_numpy()) >= 0)
    assert f"{krippendorff_alpha(data):.3f}" in [m.value for m in at.metric]
    assert any("Dawid-Skene fitted from majority vote" in c.value for c in at.caption)


# ---------------------------------------------------------------------------- convergence
def test_convergence_tab_plots_the_trace_on_a_fixed_range_and_says_why_it_stopped():
    at = _method(_open("bluebirds"), "ds")
    _tab(at, "Convergence")
    assert any("Not converged yet" in m.value for m in at.markdown)
    _click(at, "stepper.run")
    run = _run(at)
    assert run.stop_reason in STOP_REASONS
    trace = run.convergence_trace()
    spec = _chart(at, "stepper.convergence_chart")
    gain = _trace(spec, "gain")
    assert len(_arr(gain["x"])) == len(trace["gain"]) == run.last.iteration
    assert _arr(gain["y"])[0] == pytest.approx(np.log10(trace["gain"][0]))
    assert _trace(spec, "param_change") is not None
    fixed = spec["layout"]["yaxis"]["range"]
    assert any(STOP_REASONS[run.stop_reason] in m.value for m in at.markdown)
    assert any("284 nats" in c.value for c in at.caption)
    for _ in range(3):  # scrubbing back moves the cursor line, never the y axis
        _click(at, "stepper.back")
        spec = _chart(at, "stepper.convergence_chart")
        assert spec["layout"]["yaxis"]["range"] == fixed
    line = [s for s in spec["layout"]["shapes"] if s["name"] == "current"][0]
    assert line["x0"] == _run(at).current.iteration
