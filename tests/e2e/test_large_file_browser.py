"""The Data page's "Fit a large file on this machine" in a real browser at 1024 x 768: a path typed, Fit by
streaming, a summary, and a download whose file is read from disk only when clicked (Streamlit's deferred download)
and holds the labels the in-memory fit gives."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

import crowdlab as cl
from crowdlab.io.samples import sample_paths
from crowdlab.ui import large_file
from tests.e2e.helpers import (
    assert_no_exception,
    assert_nothing_cut,
    screenshot,
    streamlit_server,
    wait_idle,
    wait_page,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("files")
    shutil.copy(sample_paths("bluebirds")[0], folder / "birds.csv")
    return folder


@pytest.fixture(scope="module")
def files_server(files):
    with streamlit_server(env={large_file.FILES_ENV: str(files)}, log_name="streamlit_files.log") as url:
        yield url


def test_fit_a_file_on_disk_and_download_its_labels(files_server, files, page, tmp_path):
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(files_server + "/Data")
    wait_page(page)
    main = page.locator('[data-testid="stMain"]')
    main.get_by_text("Fit a large file on this machine").click()
    box = main.get_by_label("Path of the label file")
    box.fill(str(files / "birds.csv"))
    box.press("Enter")
    wait_idle(page)
    main.get_by_role("button", name="Fit by streaming").click()
    main.get_by_text("by streaming with Dawid-Skene").wait_for(timeout=60_000)
    wait_idle(page)
    assert_no_exception(page)
    assert "108 items, 39 workers, 4,212 labels" in main.inner_text()
    screenshot(page, "large_file_fitted")
    assert_nothing_cut(page, "large file")
    with page.expect_download() as info:
        main.get_by_role("button", name="labels.csv").click()
    got = tmp_path / "labels.csv"
    info.value.save_as(got)
    labels = pd.read_csv(got, dtype=str)
    mem = cl.fit(cl.read_annotations(files / "birds.csv"), "ds")
    assert list(labels["label"]) == [str(x) for x in np.asarray(mem.data.class_names)[mem.labels()]]
