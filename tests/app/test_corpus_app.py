"""The corpus (tests/data/corpus) through the app: the Data page's upload under ``streamlit.testing.v1.AppTest``.

Label files are uploaded as label files, gold files next to their label file. A file that should load becomes
the working dataset with the expected observations and notes; a file that should not shows the reader's message
(in the app's spelling) and no exception, and the working dataset stays. Each run stays under 10 s.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.io import safe
from crowdlab.ui import data_page, state
from tests.app.helpers import wrapper_script
from tests.unit.test_corpus import CORPUS, MANIFEST, SECONDS, big_file, check_error

ROOT = Path(__file__).resolve().parents[2]
WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import data_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    data_page.load_upload(**request)
runpy.run_path({data_page!r}, run_name="__main__")
"""

UPLOADS = [e for e in MANIFEST["files"] if e["kind"] in ("labels", "gold")]


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> AppTest:
    text = WRAPPER.format(data_page=str(ROOT / "pages" / "1_Data.py"))
    script = wrapper_script(tmp_path_factory.mktemp("corpus_app"), text, "upload_wrapper.py")
    return AppTest.from_file(str(script), default_timeout=30)


def upload(at: AppTest, content: bytes, name: str, gold: bytes | None = None, gold_name: str | None = None, **opts):
    at.session_state["test.upload"] = dict(content=content, gold=gold, name=name, gold_name=gold_name, **opts)
    t0 = time.process_time()
    at.run()
    assert time.process_time() - t0 < SECONDS
    assert not at.exception, [e.value for e in at.exception]
    return at


def check(at: AppTest, expect: dict, before: str | None) -> None:
    error = at.session_state[data_page.UPLOAD_ERROR]
    if "error" in expect:
        assert error, "loaded, expected an error"
        check_error(type("E", (), {"__str__": lambda self: error})(), expect)
        assert any(safe.md(error) in e.value for e in at.error)
        assert at.session_state[state.DATA_ID] == before  # the working dataset stays
        assert 'kind="' not in error and "--kind" not in error  # the app's spelling
    else:
        assert not error, error
        data = at.session_state[state.DATA]
        assert data.n_obs == expect["loads"]
        assert len(data.notes) == len(expect["notes"]), data.notes
        for fragment in expect["notes"]:
            assert any(fragment in n for n in data.notes), (fragment, data.notes)


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["file"]) for e in UPLOADS])
def test_upload(app, entry):
    at = app
    before = at.session_state[state.DATA_ID] if state.DATA_ID in at.session_state else None
    options = {k: v for k, v in entry.get("options", {}).items() if k in ("kind", "fmt")}
    raw = (CORPUS / entry["file"]).read_bytes()
    if entry["kind"] == "gold":
        upload(at, (CORPUS / entry["base"]).read_bytes(), entry["base"], raw, entry["file"], **options)
    else:
        upload(at, raw, entry["file"], **options)
    check(at, entry["expect"], before)


@pytest.mark.parametrize("name", list(MANIFEST["big"]))
def test_big_upload(app, name):
    if state.DATA_ID not in app.session_state:
        app.run()  # the page's own dataset first (this test may run before any other in the module)
    before = app.session_state[state.DATA_ID]
    upload(app, big_file(name), name)
    check(app, MANIFEST["big"][name], before)


def test_the_data_page_shows_the_limits(app):
    app.run()
    assert any("Limits:" in c.value and "MB" in c.value for c in app.caption)


def test_upload_limit_matches_streamlit_config():
    import tomllib

    from crowdlab.io.limits import Limits

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == Limits().max_file_mb
