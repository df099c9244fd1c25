"""The default run is the fast one: the browser tests (``e2e``) and the slow statistical tests (``slow``) run when
the environment variable CI is set (``.ci/run`` sets it), with ``--all``, or when ``-m`` picks markers itself."""

from __future__ import annotations

import os

import pytest

HEAVY = ("e2e", "slow")


def pytest_addoption(parser):
    parser.addoption("--all", action="store_true", help="also run the browser (e2e) and slow tests (CI does)")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:  # every test under tests/e2e drives a real browser, marked or not
        if "e2e" in item.path.parts and not item.get_closest_marker("e2e"):
            item.add_marker(pytest.mark.e2e)
    if os.environ.get("CI") or config.getoption("--all") or config.getoption("-m"):
        return
    skip = pytest.mark.skip(reason="a browser or slow test: run with --all (CI runs every test)")
    for item in items:
        if any(item.get_closest_marker(m) for m in HEAVY):
            item.add_marker(skip)
