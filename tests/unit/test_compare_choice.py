"""Issue 38 section 4: Compare runs the chosen methods only (crowdlab.analysis.compare.compare_methods(methods=...))."""

from __future__ import annotations

import pytest

from crowdlab.analysis.compare import chosen_methods, compare_methods
from crowdlab.models import applicable_models


def test_compare_runs_only_the_chosen_methods(bluebirds):
    out = compare_methods(bluebirds, ["glad", "ds"])
    assert list(out.runs) == ["glad", "ds"] and len(out.table) == 2
    assert not out.baselines
    assert chosen_methods(bluebirds, None) == applicable_models(bluebirds)
    assert chosen_methods(bluebirds, ["ds", "ds", "mv"]) == ["ds", "mv"]


def test_compare_refuses_a_method_that_does_not_apply(bluebirds, rte):
    with pytest.raises(ValueError, match="'scores' is not among the methods that apply"):
        compare_methods(bluebirds, ["ds", "scores"])
    with pytest.raises(ValueError, match="'nope'"):
        chosen_methods(rte, ["nope"])
