"""Issue 42's doors, page by page: a setting that refuses the bundled sample leaves every page standing with a
sentence (§2); a path that loops or names no user is refused in a sentence, and `/` is no allowed root (§3); a
refusal of a file on the server names the file and what is wrong, never its content (§1); Load while an upload is
still arriving says so (§7)."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.io import limits
from tests.app.helpers import ROOT

PAGES = ["app.py"] + sorted(
    str(Path(p).relative_to(ROOT)) for p in glob.glob(str(ROOT / "pages" / "*.py")) if "Join" not in p
)


@pytest.fixture
def no_cache():
    """Empty Streamlit's data caches (shared by every AppTest of this process): a sample loaded by an earlier test
    under the default limits would otherwise come from the cache, past the limit a test sets."""
    import streamlit as st

    st.cache_data.clear()
    yield
    st.cache_data.clear()


def _text(at: AppTest) -> list[str]:
    """Every message a visitor reads on the page, markdown escapes removed."""
    kinds = ("error", "warning", "info", "success", "caption", "markdown", "exception", "toast", "text")
    out = []
    for kind in kinds:
        for el in at.get(kind):
            out.append(str(getattr(el, "value", "") or getattr(el, "message", "")).replace("\\", ""))
    return out


@pytest.mark.parametrize(
    "setting, env",
    [
        ({"max_workers": 1}, "CROWDLAB_MAX_WORKERS"),
        ({"max_items": 1}, "CROWDLAB_MAX_ITEMS"),
        ({"max_file_mb": 1e-300}, "CROWDLAB_MAX_FILE_MB"),
    ],
)
@pytest.mark.parametrize("page", PAGES)
def test_a_setting_that_refuses_the_sample_leaves_every_page_standing(no_cache, page, setting, env):
    with limits.override(**setting):
        at = AppTest.from_file(str(ROOT / page), default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    warned = [w.value.replace("\\", "") for w in at.warning]
    assert any("bundled sample" in w and env in w and "Upload your own labels" in w for w in warned), warned


def test_with_the_sample_refused_the_data_page_offers_the_upload(no_cache):
    with limits.override(max_items=1):
        at = AppTest.from_file(str(ROOT / "pages" / "1_Data.py"), default_timeout=30).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.get("file_uploader") and at.button(key="data.upload.load")
        warned = [w.value.replace("\\", "") for w in at.warning]
        assert any("CROWDLAB_MAX_ITEMS" in w for w in warned), warned
        # picking another bundled dataset over the same limit is refused in a sentence, not a traceback
        at.selectbox(key="home.dataset").set_value("rte").run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("The bundled dataset" in w.value.replace("\\", "") for w in at.warning)


# ---------------------------------------------------------------------------- §1 and §3: the large-file path box
DATA_PAGE = str(ROOT / "pages" / "1_Data.py")
SECRETS = ("hunter2", "SECRET123")


@pytest.fixture
def allowed(tmp_path, monkeypatch) -> Path:
    from crowdlab.ui import large_file

    folder = tmp_path / "files"
    folder.mkdir()
    monkeypatch.setenv(large_file.FILES_ENV, str(folder))
    return folder


def _fit_path(path) -> AppTest:
    from crowdlab.ui import large_file

    at = AppTest.from_file(DATA_PAGE, default_timeout=60).run()
    at.text_input(key=large_file.PATH).set_value(str(path))
    return at.button(key="data.large.fit").click().run()


def _planted(folder: Path) -> dict[str, str]:
    """Files on the server that are not label files, each holding the secret somewhere a reader would quote it;
    name -> words of the refusal that say what is wrong."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    s = "password=hunter2 api_key=SECRET123"
    files = {
        "notes.txt": (f"{s}\n", "only one column"),
        "two.txt": (f"{s}\nmore notes\n", "only one column"),
        "one_class.csv": ("item,worker,label\n1,a,SECRET123\n2,b,SECRET123\n", "same class"),
        "header.csv": ("item,SECRET123,label\n1,a,x\n", "no worker column"),
        "quotes.csv": (
            "item,worker,label\n1,a,\"it's hunter2 'SECRET123'\"\n2,b,\"it's hunter2 'SECRET123'\"\n",
            "same class",
        ),
        "latin1.csv": (b"item,worker,label\n1,a,x\n2,b,\xffSECRET123\n", "not UTF-8"),
        "nul.csv": (b"item,worker,label\n1,a,x\n2,b,SECRET123\x00\n", "NUL byte"),
    }
    out = {}
    for name, (text, words) in files.items():
        (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode())
        out[name] = words
    pq.write_table(pa.table({"item": ["1", "2"], "SECRET123": ["a", "b"], "label": ["x", "y"]}), folder / "p.parquet")
    out["p.parquet"] = "worker"
    return out


def test_a_refused_file_on_the_server_is_named_never_quoted(allowed):
    """Issue 42 §1: a file that is not a label file is refused by its name and what is wrong; its content (a
    planted secret) appears in no message, caption or text the visitor is shown."""
    for name, words in _planted(allowed).items():
        at = _fit_path(allowed / name)
        assert not at.exception, (name, [e.value for e in at.exception])
        shown = _text(at)
        errors = [e.value.replace("\\", "") for e in at.error]
        assert any(name in e and words in e for e in errors), (name, errors)
        leaked = [t for t in shown if any(secret in t for secret in SECRETS)]
        assert not leaked, (name, leaked)


def test_withhold_keeps_the_file_name_and_crowdlabs_own_words():
    from crowdlab.io import safe

    msg = (
        "file 'notes.txt', row 1, column 'api_key=SECRET123': found only one column ('password=hunter2'); "
        "the columns are \"it's\", 'x\\'y' (Arrow: bad (row 'SECRET123') here). Save As > 'CSV UTF-8', the app's "
        "folder."
    )
    out = safe.withhold(msg, keep=["notes.txt"])
    assert not any(secret in out for secret in SECRETS) and "it's" not in out
    assert out.startswith("file 'notes.txt', row 1, column '…'") and "'CSV UTF-8'" in out and "app's" in out


@pytest.mark.parametrize("case", ["self", "pair", "nosuchuser"])
def test_a_path_that_loops_or_names_no_user_is_refused_in_a_sentence(allowed, case):
    """Issue 42 §3: a symlink loop (a -> a, a -> b -> a) and ~nosuchuser/x.csv ended in Streamlit's generic error."""
    if case == "self":
        (allowed / "loop.csv").symlink_to(allowed / "loop.csv")
        path, words = allowed / "loop.csv", "symbolic link that leads back to itself"
    elif case == "pair":
        (allowed / "a.csv").symlink_to(allowed / "b.csv")
        (allowed / "b.csv").symlink_to(allowed / "a.csv")
        path, words = allowed / "a.csv", "symbolic link that leads back to itself"
    else:
        path, words = "~crowdlab_no_such_user_42/x.csv", "whom this machine does not know"
    at = _fit_path(path)
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any(words in e for e in errors), errors


@pytest.mark.parametrize("folders", ["/", "/etc", "/usr/share", "/proc"])
def test_the_root_and_the_system_folders_are_never_allowed(monkeypatch, folders):
    """Issue 42 §3: with server.address 0.0.0.0 and CROWDLAB_FILES_DIR=/ every file on the machine was readable."""
    from crowdlab.ui import large_file

    monkeypatch.setenv(large_file.FILES_ENV, folders)
    roots, why = large_file.roots()
    assert roots == [] and why.startswith("Off:") and ("system folder" in why or "root of the file system" in why)
    at = AppTest.from_file(DATA_PAGE, default_timeout=30).run()
    assert not at.exception and not at.error
    said = [i.value.replace("\\", "") for i in at.info]
    assert any("never a system folder or the root of the file system" in i for i in said), said
    assert not [t for t in at.text_input if t.key == large_file.PATH]


def test_a_system_folder_beside_a_good_one_is_left_out_with_its_reason(tmp_path, monkeypatch):
    import os

    from crowdlab.ui import large_file

    monkeypatch.setenv(large_file.FILES_ENV, os.pathsep.join(["/", str(tmp_path)]))
    roots, why = large_file.roots()
    assert roots == [tmp_path.resolve()] and "left out: / is the root of the file system" in why


# ---------------------------------------------------------------------------- §4: a Parquet upload
def _upload_wrapper(folder: Path) -> Path:
    wrapper = folder / "wrap.py"
    wrapper.write_text(
        "import runpy\nimport streamlit as st\nfrom crowdlab.ui import data_page\n"
        "request = st.session_state.pop('test.upload', None)\n"
        "if request is not None:\n"
        "    data_page.load_upload(**request)\n"
        f"runpy.run_path({DATA_PAGE!r}, run_name='__main__')\n"
    )
    return wrapper


def test_a_parquet_upload_is_read_in_memory(tmp_path):
    """Issue 42 §4: the app's upload refused a Parquet file that the streaming engine reads."""
    import io

    import pandas as pd

    from crowdlab.io.samples import sample_paths
    from crowdlab.ui import state

    buf = io.BytesIO()
    pd.read_csv(sample_paths("bluebirds")[0]).to_parquet(buf)
    at = AppTest.from_file(str(_upload_wrapper(tmp_path)), default_timeout=60)
    at.session_state["test.upload"] = dict(content=buf.getvalue(), name="birds.parquet")
    at = at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert at.session_state[state.DATA].n_obs == 4212
    assert at.session_state[state.DATA_ID].startswith("upload:")


def test_with_the_sample_refused_an_upload_becomes_the_dataset_and_the_step_page_works(no_cache, tmp_path):
    """Issue 42 §2: the app starts without the sample and offers the upload; what is uploaded then drives the
    pages that need a dataset."""
    from crowdlab.ui import state

    small = (ROOT / "tests" / "data" / "small_long.csv").read_bytes()
    with limits.override(max_items=50):
        at = AppTest.from_file(str(_upload_wrapper(tmp_path)), default_timeout=60).run()
        assert not at.exception, [e.value for e in at.exception]
        assert state.DATA not in at.session_state or at.session_state[state.DATA] is None  # no dataset yet
        at.session_state["test.upload"] = dict(content=small, name="small.csv")
        at.run()
        assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
        assert at.session_state[state.DATA_ID].startswith("upload:")
        at.switch_page(str(ROOT / "pages" / "2_Step_through_EM.py")).run()
        assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
        assert not any("bundled sample" in w.value for w in at.warning)
