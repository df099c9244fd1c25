"""The pages' long waits report from inside the work (issue 26, section 2): Compare methods' bar follows each
method's iterations, the Step page's Run to convergence and the Sequences baseline say their pace, and the
Sequences page measures what its CoNLL caption states."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from crowdlab.ui import compare_page, lab, progress, sequences_page
from tests.app.helpers import click, ok

ROOT = Path(__file__).resolve().parents[2]


def _recording(cls, texts: list[str]):
    class Recording(cls):
        def __init__(self, show, *args, **kwargs):
            def shown(fraction, text):
                texts.append(text)
                return show(fraction, text)

            super().__init__(shown, *args, **kwargs)

    return Recording


def test_compare_methods_bar_follows_the_iterations_of_each_method(monkeypatch):
    texts: list[str] = []
    monkeypatch.setattr(compare_page, "MethodsPace", _recording(progress.MethodsPace, texts))
    monkeypatch.setattr(progress, "UPDATE_EVERY", 0.0)  # every iteration reaches the bar
    at = ok(AppTest.from_file(str(ROOT / "pages/3_Compare_methods.py"), default_timeout=60).run())
    click(at, "compare.run")
    inside = [t for t in texts if t.startswith("GLAD (") and ": iteration " in t]
    assert inside and all(" on it, " in t and t.endswith(" in all") for t in inside)
    assert any(t.startswith("Dawid-Skene (") and ": iteration " in t for t in texts)
    assert texts[-1] == "done"


def test_run_to_convergence_and_the_sequences_baseline_say_their_pace(monkeypatch):
    texts: list[str] = []
    monkeypatch.setattr(lab, "Pace", _recording(progress.Pace, texts))
    monkeypatch.setattr(progress, "UPDATE_EVERY", 0.0)
    monkeypatch.setattr(sequences_page, "MEASURED", {})
    at = ok(AppTest.from_file(str(ROOT / "pages/2_Step_through_EM.py"), default_timeout=60).run())
    click(at, "stepper.run")
    assert any(t.startswith("Running EM: iteration ") and " of at most " in t and t.endswith(" left") for t in texts)
    texts.clear()
    seq = ok(AppTest.from_file(str(ROOT / "pages/6_Sequences.py"), default_timeout=60).run())
    assert any(
        t.startswith("Fitting i.i.d. Dawid-Skene once") and " of at most " in t and t.endswith(" left") for t in texts
    )
    data_id = seq.session_state["seq.data.id"]
    assert sequences_page.MEASURED[data_id] > 0  # what the CoNLL caption states is measured


def test_export_fit_to_convergence_says_its_pace(monkeypatch):
    """Export's Fit to convergence ran inside its button's callback, with nothing on the page but Streamlit's own
    busy sign; it now runs in the page's body under the same bar as the Step page's Run to convergence."""
    texts: list[str] = []
    monkeypatch.setattr(lab, "Pace", _recording(progress.Pace, texts))
    monkeypatch.setattr(progress, "UPDATE_EVERY", 0.0)
    at = ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run())
    at.switch_page("pages/5_Export.py")
    ok(at.run())
    click(at, "export.fit")
    assert any(t.startswith("Fitting Dawid-Skene to convergence: iteration ") and t.endswith(" left") for t in texts)
    assert any("fitted to convergence" in i.value for i in at.info)
