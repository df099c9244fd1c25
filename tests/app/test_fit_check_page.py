"""The Compare page's "Which model fits?" section (issue 38, section 2): on the bundled bluebirds the button runs
the fit check, which stays in session state, and the page shows its recommendation with its numbers, the held-out
chart, the table and the checks, without an exception; the number of folds is a setting kept under a plain key."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from crowdlab.ui import fit_check_view, state
from tests.app.helpers import click, figures, goto, ok

ROOT = Path(__file__).resolve().parents[2]


def test_which_model_fits_on_the_compare_page():
    at = ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run())
    goto(at, "pages/3_Compare_methods.py")
    assert any("Check which model fits" in i.value for i in at.info)
    at.number_input(key=fit_check_view.FOLDS_KEY).set_value(3).run()
    assert at.session_state[fit_check_view.FOLDS_VALUE] == 3
    click(at, "compare.fit.run")
    result = at.session_state[fit_check_view.RESULTS][(at.session_state[state.DATA_ID], 3)]
    assert result.folds == 3 and len(result.table) >= 5
    text = " ".join(m.value for m in at.markdown).replace("\\", "")  # Markdown escapes
    assert "predicts held-out labels best" in text and f"{result.table['held-out'].iloc[0]:.3f}" in text
    assert any("Held-out labels" in str(spec.get("layout", {}).get("title")) for _, spec in figures(at))
    shown = [d.value for d in at.dataframe if "held-out" in d.value.columns]
    assert len(shown) == 1 and list(shown[0]["method"]) == list(result.table["method"])
    goto(at, "pages/1_Data.py")
    goto(at, "pages/3_Compare_methods.py")  # the result survives a page switch
    assert any("predicts held\\-out labels best" in m.value for m in at.markdown)


def test_the_data_page_worker_report_points_to_and_then_shows_the_fit_check():
    at = ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run())
    goto(at, "pages/1_Data.py")
    assert any("Which model fits?" in c.value for c in at.caption)
    goto(at, "pages/3_Compare_methods.py")
    click(at, "compare.fit.run")
    goto(at, "pages/1_Data.py")
    assert any("Which model fits?" in m.value and "held\\-out" in m.value for m in at.markdown)
    shown = [d.value for d in at.dataframe if "held-out labels" in d.value.columns]
    assert len(shown) == 1 and "Dawid-Skene" in shown[0].columns
