"""Load of a live class (slow): 40 real headless Chromium students on phones join one session and submit 10 labels
each while the projector view is open. The figures come from benchmarks/bench_class.py (one run for both tests),
which prints them in full; benchmarks/README.md has the measurements."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.e2e.helpers import CHROMIUM

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def load():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"the browser tests need Debian's chromium at {CHROMIUM}")
    spec = importlib.util.spec_from_file_location("bench_class", ROOT / "benchmarks" / "bench_class.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.run_load(40, 10)
    print(out)
    return out


def test_40_students_lose_nothing_and_duplicate_nothing(load):
    """Every tap a page sent is stored once: the database holds exactly the taps, no (student, item) twice."""
    assert load["taps"] >= 300, load  # most of the class got through (every page: the test below)
    assert load["votes_stored"] == load["taps"] and load["lost"] == 0 and load["duplicated"] == 0, load


@pytest.mark.xfail(
    strict=False,
    reason="depends on the machine: p95 1.57-1.82 s on a quiet 2-core machine at a class's pace (4-16 s between taps), "
    "13 s at ten times that pace and 128 s at the class's pace on a machine at load 16-20 (benchmarks/README.md, "
    "'bench_class.py'); CI's load is not ours to choose",
)
def test_40_students_are_counted_within_2_s(load):
    assert load["tap_to_counted_p95_s"] <= 2.0, load


def test_every_page_finishes(load):
    """Every phone draws the view after its last answer (with a polling fragment in that view, 3-17 of 40 did not:
    benchmarks/README.md, 'bench_class.py')."""
    assert load["n_errors"] == 0 and load["never_counted"] == 0, load["errors"]
