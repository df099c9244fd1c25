"""Issue 41, section 5: panels receive runs, they do not make them. The worker report panel
(:mod:`crowdlab.ui.reports_view`) fits nothing; the Data page passes it the dataset's reference Dawid-Skene run from
:func:`crowdlab.ui.state.reference_run`, fitted once per dataset id."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from crowdlab.analysis.reports import worker_report
from crowdlab.errors import ModelError
from crowdlab.models.dawid_skene import DawidSkene
from crowdlab.ui import reports_view, state
from tests.app.helpers import ok
from tests.app.test_step_lab import _open

DATA_PAGE = "pages/1_Data.py"


def _report(at):
    found = [d.value for d in at.dataframe if "spammer_score" in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def test_the_report_panel_imports_no_fit():
    tree = ast.parse(Path(reports_view.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "crowdlab.engines.fit" not in imported and not hasattr(reports_view, "fit")


def test_the_data_page_passes_the_reference_run_and_it_is_fitted_once(monkeypatch):
    runs = []
    real = state.reference_run

    def spy(data):
        runs.append(real(data))
        return runs[-1]

    monkeypatch.setattr(state, "reference_run", spy)
    at = ok(_open("patients").switch_page(DATA_PAGE).run())
    assert runs, "the Data page did not ask the state for the reference run"
    run = runs[-1]
    data = at.session_state[state.DATA]  # (the run may come from another session on the same dataset id)
    assert isinstance(run.model, DawidSkene) and run.data.worker_names == data.worker_names
    assert np.array_equal(run.data.label, data.label) and np.array_equal(run.data.item, data.item)
    got = _report(at).set_index("worker")
    want = worker_report(run).set_index("worker")
    assert got["accuracy"].to_numpy() == pytest.approx(want.loc[got.index, "accuracy"].to_numpy())
    ok(at.run())  # a rerun gets the same run (cached per dataset id), not a new fit
    assert runs[-1] is run


def test_a_failed_reference_fit_is_said_under_the_heading(monkeypatch):
    def fails(data):
        raise ModelError("no fit today")

    monkeypatch.setattr(state, "reference_run", fails)
    at = ok(_open("dogs").switch_page(DATA_PAGE).run())
    assert "Worker report" in [h.value for h in at.subheader]
    assert any(i.value == "No worker report for this dataset: no fit today" for i in at.info)
    assert not [d for d in at.dataframe if "spammer_score" in d.value.columns]
