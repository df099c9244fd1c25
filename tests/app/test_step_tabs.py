"""The Step page's tabs: only the tabs with something to show for the method (issue 26: for GLAD, MACE and IBCC two
of the eight tabs only said "not available"; Dawid-Skene's Details tab only said "pick another method")."""

from __future__ import annotations

import pytest

from tests.app.test_step_lab import _method, _open, _tab

ALL = ("Posterior", "Workers", "Priors", "Formulas", "Surface", "Intervals", "Details", "Stopping")
NO_DETAILS = tuple(t for t in ALL if t != "Details")
NO_SURFACE_OR_INTERVALS = tuple(t for t in ALL if t not in ("Surface", "Intervals"))


def _labels(at) -> tuple[str, ...]:
    return tuple(t.label for t in at.tabs)


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("ds", NO_DETAILS),
        ("two_coin", NO_DETAILS),
        ("glad", NO_SURFACE_OR_INTERVALS),
        ("mace", NO_SURFACE_OR_INTERVALS),
        ("mace_vb", NO_SURFACE_OR_INTERVALS),
        ("ibcc", NO_SURFACE_OR_INTERVALS),
        ("ebcc", tuple(t for t in NO_SURFACE_OR_INTERVALS if t != "Details")),  # nothing of its own there
    ],
)
def test_the_step_page_shows_only_tabs_with_something_to_show(method, expected):
    at = _method(_open("bluebirds"), method)
    assert _labels(at) == expected


def test_a_remembered_tab_the_method_lacks_opens_the_first():
    """Surface open on Dawid-Skene, then GLAD (no Surface): the Posterior tab opens, nothing errs."""
    at = _tab(_method(_open("bluebirds"), "ds"), "Surface")
    assert at.session_state["stepper.tab"] == "Surface"
    at = _method(at, "glad")
    assert "Surface" not in _labels(at) and at.session_state["stepper.tab"] == "Posterior"
