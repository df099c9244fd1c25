"""The Data page fits a file too large for the app's memory through the streaming engine (issue 29): a path on this
machine (inside the allowed folders), a bar per pass, the same answer as the in-memory fit, the results written and
offered for download; every refusal a sentence, never a traceback, and the working dataset untouched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import crowdlab as cl
from crowdlab.io.samples import sample_paths
from crowdlab.ui import large_file, state
from tests.app.helpers import ok

ROOT = Path(__file__).resolve().parents[2]
DATA_PAGE = str(ROOT / "pages" / "1_Data.py")


@pytest.fixture
def allowed(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "files"
    folder.mkdir()
    monkeypatch.setenv(large_file.FILES_ENV, str(folder))
    return folder


def _fit(path, method="ds", **more) -> AppTest:
    at = AppTest.from_file(DATA_PAGE, default_timeout=60)
    at = ok(at.run())
    at.text_input(key=large_file.PATH).set_value(str(path))
    at.selectbox(key=large_file.METHOD).set_value(method)
    for key, v in more.items():
        at.number_input(key=key).set_value(v)
    return at.button(key="data.large.fit").click().run()


@pytest.mark.parametrize("method", ["ds", "mace"])
def test_a_file_on_disk_is_fitted_by_streaming_as_in_memory(allowed, method):
    labels, _ = sample_paths("bluebirds")
    path = allowed / "birds.csv"
    shutil.copy(labels, path)
    at = _fit(path, method)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    r = at.session_state[large_file.RESULT]
    mem = cl.fit(cl.read_annotations(labels), method)  # accelerated EM on both engines, the same path
    assert (r["items"], r["workers"], r["labels"]) == (108, 39, 4212)
    assert r["iterations"] == mem.iteration and r["stop"] == "converged"
    assert any("Fitted 'birds.csv' by streaming" in s.value.replace("\\", "") for s in at.success)
    folder = Path(r["folder"])
    assert sorted(p.name for p in folder.iterdir()) == sorted(large_file.OUTPUTS)
    got = pd.read_csv(folder / "labels.csv", dtype=str)
    want = np.asarray(mem.data.class_names)[mem.labels()]
    assert list(got["label"]) == [str(x) for x in want]
    post = pd.read_csv(folder / "posteriors.csv")
    q = post[[c for c in post.columns if c.startswith("p_")]].to_numpy()
    np.testing.assert_allclose(q, mem.posterior, rtol=0, atol=1e-8)
    assert json.loads((folder / "history.json").read_text())["engine"] == "stream"
    counts = r["classes"]["items"].to_numpy()
    np.testing.assert_array_equal(counts, np.bincount(mem.labels(), minlength=2))
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"  # the working dataset is not replaced
    # a second fit replaces the first and removes its folder
    at.button(key="data.large.fit").click().run()
    assert not folder.exists() and Path(at.session_state[large_file.RESULT]["folder"]).is_dir()
    shutil.rmtree(at.session_state[large_file.RESULT]["folder"])


def test_a_fit_stopped_at_its_limit_says_what_to_try(allowed):
    shutil.copy(sample_paths("bluebirds")[0], allowed / "birds.csv")
    at = _fit(allowed / "birds.csv", "ds", **{large_file.MAX_ITER: 3})
    assert not at.exception, [e.value for e in at.exception]
    r = at.session_state[large_file.RESULT]
    assert r["iterations"] == 3 and r["stop"] == "stopped at the iteration limit"
    warned = [w.value.replace("\\", "") for w in at.warning]
    assert any("not converged after 3 iterations" in w and "give a Prior" in w for w in warned), warned
    shutil.rmtree(r["folder"])


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda d: d.parent / "outside.csv", "outside the folders this app may read"),
        (lambda d: d / "missing.csv", "No file at"),
        (lambda d: d, "is a folder"),
        (lambda d: d / "labels.xlsx", "not a label file this engine reads"),
        (lambda d: d / "broken.csv", "broken.csv"),
        (lambda d: "", "Type the path"),
    ],
)
def test_a_bad_path_or_file_is_refused_in_a_sentence(allowed, make, words):
    (allowed.parent / "outside.csv").write_text("item,worker,label\n1,a,x\n")
    (allowed / "labels.xlsx").write_bytes(b"PK\x03\x04")
    (allowed / "broken.csv").write_bytes(b"item,worker,label\n1,a\n\xff\xfe,b,c,d\n")
    at = _fit(make(allowed))
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value.replace("\\", "") for e in at.error]  # the messages' markdown escapes gone
    assert any(words in e for e in errors), errors
    assert large_file.RESULT not in at.session_state
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"


def test_results_that_cannot_be_written_leave_a_sentence_and_no_folder(allowed, monkeypatch, tmp_path):
    import tempfile

    from crowdlab.ui import large_file as lf

    shutil.copy(sample_paths("bluebirds")[0], allowed / "birds.csv")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def full(run, folder):
        (folder / "labels.csv").write_text("item,label\n")
        raise OSError(28, "No space left on device", str(folder / "posteriors.csv"))

    monkeypatch.setattr(lf, "write_engine_outputs", full)
    at = _fit(allowed / "birds.csv")
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any("Could not read or write a file: No space left on device" in e for e in errors), errors
    assert list(tmp_path.glob(lf.RESULTS_PREFIX + "*")) == [] and lf.RESULT not in at.session_state


def test_old_results_folders_are_removed_by_the_next_fit(tmp_path, monkeypatch):
    import os
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    old, new = tmp_path / (large_file.RESULTS_PREFIX + "old"), tmp_path / (large_file.RESULTS_PREFIX + "new")
    for f in (old, new):
        f.mkdir()
        (f / "labels.csv").write_text("item,label\n")
    os.utime(old, (1, 1))
    large_file._remove_old_results()
    assert not old.exists() and new.exists()


def test_off_when_the_app_is_shown_to_other_machines(monkeypatch):
    monkeypatch.delenv(large_file.FILES_ENV, raising=False)
    import streamlit as st

    monkeypatch.setattr(st, "get_option", lambda name: "0.0.0.0" if name == "server.address" else None)
    roots, why = large_file.roots()
    assert roots == [] and large_file.FILES_ENV in why
    monkeypatch.setattr(st, "get_option", lambda name: "127.0.0.1" if name == "server.address" else None)
    roots, why = large_file.roots()
    assert Path.home().resolve() in roots and "this machine only" in why


@pytest.mark.parametrize("limit", ["max_rows=100", "max_file_mb=0.01"])
def test_an_upload_past_a_limit_opens_the_streaming_section(allowed, limit):
    labels, _ = sample_paths("bluebirds")
    wrapper = allowed.parent / "wrap.py"
    wrapper.write_text(
        "import runpy\nimport streamlit as st\nfrom crowdlab.io import limits\nfrom crowdlab.ui import data_page\n"
        "request = st.session_state.pop('test.upload', None)\n"
        "if request is not None:\n"
        f"    with limits.override({limit}):\n"
        "        data_page.load_upload(**request)\n"
        f"runpy.run_path({DATA_PAGE!r}, run_name='__main__')\n"
    )
    at = AppTest.from_file(str(wrapper), default_timeout=60)
    at.session_state["test.upload"] = dict(content=Path(labels).read_bytes(), name="birds.csv")
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("to raise the limit" in e.value.replace("\\", "").lower() for e in at.error)
    box = [e for e in at.expander if "Fit a large file" in e.label]
    assert box and box[0].proto.expanded


def test_the_bar_counts_the_labels_read_then_each_pass(tmp_path):
    """The first pass reports the rows read so far (chunk by chunk); accelerated EM its EM-map evaluations after
    each accepted point (a few at a time, as in memory)."""
    from crowdlab.engines.stream import fit_file

    labels, _ = sample_paths("bluebirds")
    read, passes = [], []
    run = fit_file(
        labels,
        "ds",
        chunk_rows=1000,
        progress=lambda i, n: passes.append((i, n)),
        read_progress=lambda r, n: read.append(r),
    )
    assert read == [1000, 2000, 3000, 4000, 4212]
    done = [i for i, _ in passes]
    assert done == sorted(set(done)) and done[-1] == run.last.iteration and passes[0][1] == 10000
