"""Fixtures shared by the unit tests: the bundled samples most tests use (loaded once per module, as before)."""

import pytest

from crowdlab.io.samples import load_sample


@pytest.fixture(scope="module")
def bluebirds():
    return load_sample("bluebirds")


@pytest.fixture(scope="module")
def rte():
    return load_sample("rte")
