"""A dataset whose item, worker, class and file names are Markdown, HTML, LaTeX and spreadsheet formulas, through
every page under AppTest: no exception, every Markdown and LaTeX element shows the names escaped
(:mod:`crowdlab.io.safe`), CSV downloads hold no formula cell, and the upload survives a page switch.

AppTest cannot drive ``st.file_uploader``: the upload goes through :func:`crowdlab.ui.data_page.load_upload` (what
the Load button's callback calls) in a small wrapper app, as in tests/app/test_pages.py.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.io import safe
from crowdlab.ui import data_page, export_page, state
from tests.app.helpers import goto, ok, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "tests" / "data"
DATA_PAGE = "pages/1_Data.py"
STEP_PAGE = "pages/2_Step_through_EM.py"
COMPARE_PAGE = "pages/3_Compare_methods.py"
PRIORS_PAGE = "pages/4_Priors_and_initialisations.py"
EXPORT_PAGE = "pages/5_Export.py"
FILE_NAME = "**upload** $y^2$ <i>f.csv"
GOLD_NAME = "<script>alert(1)</script>.csv"
TIMEOUT = 60
# what must never reach a Markdown or LaTeX element unescaped
RAW = ("**markdown**", "<script", "<a href", "![t](", "$x^2$", "**upload**", "<img", ":red[", "<i>", "$y^2$", "**bold")
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")

WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import data_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    data_page.load_upload(**request)
runpy.run_path(st.session_state.get("test.target", {data_page!r}), run_name="__main__")
"""


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    text = WRAPPER.format(data_page=str(ROOT / DATA_PAGE))
    return wrapper_script(tmp_path_factory.mktemp("hostile_app"), text, "upload_wrapper.py")


def _texts(at: AppTest) -> list[str]:
    """The source of every element that Streamlit renders as Markdown or LaTeX (main area and sidebar)."""
    kinds = ("markdown", "caption", "success", "info", "warning", "error", "subheader", "title")
    out = []
    for kind in kinds:
        out += [str(el.value) for el in at.get(kind)]
    out += [str(el.value) for el in at.sidebar.get("markdown")]
    return out


def _escaped(at: AppTest) -> list[str]:
    """The texts of :func:`_texts`, after asserting that no hostile name appears in them unescaped (an escaped
    character, a backslash and the character, stands for nothing that Markdown or KaTeX would interpret)."""
    texts = _texts(at)
    for t in texts:
        bare = re.sub(r"\\[!-/:-@\[-`{-~]", "\0", t)
        for raw in RAW:
            assert raw not in bare, (raw, t)
    for formula in (x.value for x in at.latex):  # KaTeX: a name must not open math, a script or a group
        bare = re.sub(r"\\(textbackslash\{\}|textasciicircum\{\}|textasciitilde\{\}|[{}$&%#_])", "\0", formula)
        for raw in ("$x^2$", "$y^2$", "a\\b{c}_d", "%{fullData"):
            assert raw not in bare, (raw, formula)
        assert bare.count("{") == bare.count("}"), formula
    return texts + [x.value for x in at.latex]


def _upload(wrapper: Path) -> AppTest:
    at = AppTest.from_file(str(wrapper), default_timeout=TIMEOUT)
    at.session_state["test.upload"] = dict(
        content=(DATA_DIR / "hostile_long.csv").read_bytes(),
        gold=(DATA_DIR / "hostile_gold.csv").read_bytes(),
        name=FILE_NAME,
        gold_name=GOLD_NAME,
    )
    return ok(at.run())


# unlike helpers.click: does not assert that the button is enabled
def _click(at: AppTest, key: str) -> AppTest:
    return ok(at.button(key=key).click().run())


def _tab(at: AppTest, tab: str) -> AppTest:
    at.session_state[state.VIEW_PREFIX + "tab"] = tab  # what the tab's on_change callback writes
    return ok(at.run())


def _assert_no_formula(content: bytes) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(content.decode())))
    for row in rows:
        for cell in row:
            assert not (cell.startswith(safe.FORMULA_START) and not NUMBER.match(cell)), (cell, row)
    return rows


def test_hostile_names_through_every_page(wrapper):
    at = _upload(wrapper)
    data = at.session_state[state.DATA]
    assert data.n_items == 12 and data.name == Path(FILE_NAME).stem
    texts = _escaped(at)
    joined = "\n".join(texts)
    assert safe.md(f"Loaded '{FILE_NAME}' with gold from '{GOLD_NAME}'") in joined
    assert safe.md(Path(FILE_NAME).stem) in joined  # the dataset's name, in the sidebar and the summary card
    assert all(safe.md(c) in joined for c in data.class_names)  # "Classes: ..." on the card
    # the Data page's CSV downloads
    files = data_page._preview_files(data)
    rows = _assert_no_formula(files["csv"])
    assert ["'@SUM(A1)"] == sorted({r[1] for r in rows[1:] if "SUM" in r[1]})
    _assert_no_formula(files["gold"])

    goto(at, STEP_PAGE)
    for method in ("ds", "two_coin"):
        if at.selectbox(key=state.W_METHOD).value != method:
            ok(at.selectbox(key=state.W_METHOD).set_value(method).run())
        for _ in range(3):
            _click(at, "stepper.step")
        _click(at, "stepper.e_step")
        for tab in ("Posterior", "Workers", "Priors", "Formulas", "Surface"):
            _tab(at, tab)
            _escaped(at)
        _tab(at, "Formulas")
        item = at.selectbox(key="stepper.explain_item").value
        assert any(safe.md(data.item_names[item]) in t for t in _texts(at))
        assert any(r"\text{item " in x.value for x in at.latex)
        _tab(at, "Intervals")
        _escaped(at)
    # the "What just happened" formulas name the item $x^2$ literally
    _tab(at, "Formulas")
    n = data.item_names.index("$x^2$")
    ok(at.selectbox(key="stepper.explain_item").set_value(n).run())
    assert any(r"\text{item \$x\textasciicircum{}2\$}" in x.value for x in at.latex)
    _escaped(at)

    goto(at, COMPARE_PAGE)
    _click(at, "compare.run")
    _escaped(at)

    goto(at, PRIORS_PAGE)
    _click(at, "priors.run_restarts")
    _escaped(at)

    goto(at, EXPORT_PAGE)
    _escaped(at)
    run = at.session_state[state.RUN]
    files = export_page.export_files(run, "print()")
    for name in ("posteriors.csv", "labels.csv", "workers.csv"):
        _assert_no_formula(files[name])
    assert b"'=HYPERLINK" in files["labels.csv"] and b"'@SUM(A1)" in files["workers.csv"]
    assert b"\n-3.5," in files["posteriors.csv"]  # a plain number stays a number
    assert any(FILE_NAME.replace('"', '\\"') in c.value for c in at.code)  # the snippet names the file (code)


def test_the_upload_survives_a_page_switch(wrapper):
    at = _upload(wrapper)
    data_id = at.session_state[state.DATA_ID]
    assert data_id.startswith("upload:")
    kept = at.session_state[data_page.UPLOAD_KEPT]
    assert kept["file"][0] == FILE_NAME and kept["gold"][0] == GOLD_NAME
    goto(at, STEP_PAGE)
    goto(at, DATA_PAGE)
    assert at.session_state[state.DATA_ID] == data_id  # the dataset is kept
    texts = _escaped(at)
    notice = [t for t in texts if "Kept from your last upload" in t]
    assert len(notice) == 1
    assert safe.md(FILE_NAME) in notice[0] and safe.md(GOLD_NAME) in notice[0]
    # Load reads the kept files again (the upload boxes are empty after the switch)
    at.session_state[state.NOTICE] = None
    _click(at, "data.upload.load")
    assert at.session_state[state.DATA_ID] == data_id
    assert any(safe.md(f"Loaded '{FILE_NAME}'") in s.value for s in at.success)
    # Forget drops them; the dataset stays
    _click(at, "data.upload.forget")
    assert not any("Kept from your last upload" in t for t in _texts(at))
    assert at.session_state[state.DATA_ID] == data_id
    at.button(key="data.upload.load").click().run()
    assert [e.value for e in at.error] == [safe.md(data_page.NO_FILE_YET)]
