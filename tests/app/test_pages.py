"""Every page under ``streamlit.testing.v1.AppTest``: on the default data, an uploaded file and simulated data;
bad uploads; state across page switches; the Compare and Export pages' results.

AppTest cannot drive ``st.file_uploader``, so uploads go through :func:`crowdlab.ui.data_page.load_upload` (what
the Load button's callback calls) in a small wrapper app: a main script in a temporary folder, next to links to
the real ``pages/`` and ``app.py``, that loads a requested upload and then runs a real page. Switching from it to
the real pages keeps the session, as in the browser.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.errors import DataError
from crowdlab.io import safe
from crowdlab.io.data import read_annotations
from crowdlab.teaching.simulate import simulate_crowd
from crowdlab.ui import compare_page, data_page, export_page, state
from crowdlab.ui.frame import PHONE_PAGES
from tests.app.helpers import click, figures, goto, ok, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "tests" / "data"
HOME = "app.py"
DATA_PAGE = "pages/1_Data.py"
STEP_PAGE = "pages/2_Step_through_EM.py"
COMPARE_PAGE = "pages/3_Compare_methods.py"
EXPORT_PAGE = "pages/5_Export.py"
# every page but the phone pages, which have no frame (tests/app/test_class_pages.py)
PAGES = [HOME] + sorted(
    path for p in (ROOT / "pages").glob("*.py") if (path := p.relative_to(ROOT).as_posix()) not in PHONE_PAGES
)
TIMEOUT = 30

WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import data_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    data_page.load_upload(**request)
runpy.run_path(st.session_state.get("test.target", {data_page!r}), run_name="__main__")
"""


def _home() -> AppTest:
    return ok(AppTest.from_file(str(ROOT / HOME), default_timeout=TIMEOUT).run())


def _downloads(at: AppTest) -> list[str]:
    return [el.proto.label for el in at.get("download_button")]


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    text = WRAPPER.format(data_page=str(ROOT / DATA_PAGE))
    return wrapper_script(tmp_path_factory.mktemp("upload_app"), text, "upload_wrapper.py")


def _upload(wrapper: Path, name: str, gold: str | None = None, *, target: str = DATA_PAGE, at=None, **options):
    """Run the wrapper app: load tests/data/<name> (+ gold) through data_page.load_upload, then ``target``."""
    if at is None:
        at = AppTest.from_file(str(wrapper), default_timeout=TIMEOUT)
    at.session_state["test.target"] = str(ROOT / target)
    at.session_state["test.upload"] = dict(
        content=(DATA_DIR / name).read_bytes(),
        gold=None if gold is None else (DATA_DIR / gold).read_bytes(),
        name=name,
        gold_name=gold,
        **options,
    )
    return at.run()


# ---------------------------------------------------------------------------- every page, three kinds of data
@pytest.mark.parametrize("page", PAGES)
def test_every_page_loads_cold_on_the_default_data(page):
    at = ok(AppTest.from_file(str(ROOT / page), default_timeout=TIMEOUT).run())
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"
    assert any("items: **108**" in m.value for m in at.sidebar.markdown)
    assert len(at.title) == 1


@pytest.mark.parametrize("page", PAGES)
def test_every_page_loads_on_an_uploaded_file(wrapper, page):
    at = ok(_upload(wrapper, "small_long.csv", "small_gold.csv", target=page if page == HOME else DATA_PAGE))
    data_id = at.session_state[state.DATA_ID]
    assert data_id.startswith("upload:")
    assert at.session_state[state.DATA].n_items == 4
    if page != HOME:
        goto(at, page)
    assert at.session_state[state.DATA_ID] == data_id
    assert any(safe.md("small_long") in m.value for m in at.sidebar.markdown)  # names are escaped Markdown
    # the page's main action works on the uploaded data too
    for key in ("stepper.run", "compare.run", "export.fit"):
        if any(b.key == key for b in at.button) and not at.button(key=key).disabled:
            click(at, key)
    assert at.session_state[state.DATA_ID] == data_id
    if page == EXPORT_PAGE:
        assert 'read_annotations("small_long.csv", gold="small_gold.csv")' in at.code[0].value


@pytest.mark.parametrize("kind", ["crowd", "scores"])
@pytest.mark.parametrize("page", PAGES)
def test_every_page_loads_on_simulated_data(page, kind):
    at = goto(_home(), DATA_PAGE)
    click(at, "data.sim.run" if kind == "crowd" else "data.scores.run")
    data_id = at.session_state[state.DATA_ID]
    assert data_id.startswith(f"sim:{kind}:")
    assert [i.value for i in at.info] == [state.loaded_notice(at.session_state[state.DATA])]
    goto(at, page)
    assert at.session_state[state.DATA_ID] == data_id
    data = at.session_state[state.DATA]
    assert data.is_continuous == (kind == "scores")


# ---------------------------------------------------------------------------- the Data page
def test_data_page_shows_preview_pictures_and_downloads():
    at = goto(_home(), DATA_PAGE)
    head = at.dataframe[0].value
    assert list(head.columns) == ["item", "worker", "label"] and len(head) == data_page.PREVIEW_ROWS
    assert any("The first 20 of 4,212 labels" in c.value for c in at.caption)
    assert _downloads(at) == [
        "Download all labels (long CSV)",
        "Download gold (CSV)",
        "All workers (CSV)",
        "Download the worker report (CSV)",
    ]
    assert len(figures(at)) == 4
    workers = at.dataframe[1].value
    assert list(workers.columns) == ["worker", "labels", "share 0", "share 1"] and len(workers) == 20
    assert [t.label for t in at.tabs] == ["Upload", "Simulate a crowd", "Simulate scores (lecture)", "Bundled"]


BAD_FILES = [
    ("missing_label_column.csv", None),
    ("single_class.csv", None),
    ("empty.csv", None),
    ("not_csv.png", None),
    ("ragged_row.csv", None),
    ("latin1.csv", None),
    ("small_long.csv", "gold_unknown_items.csv"),
]


@pytest.mark.parametrize("name,gold", BAD_FILES)
def test_a_bad_upload_shows_the_readers_message_and_keeps_the_dataset(wrapper, name, gold):
    at = ok(AppTest.from_file(str(wrapper), default_timeout=TIMEOUT).run())
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"
    before = at.session_state[state.DATA]
    _upload(wrapper, name, gold, at=at)
    assert not at.exception
    with pytest.raises(DataError) as info:
        g = None if gold is None else io.BytesIO((DATA_DIR / gold).read_bytes())
        if g is not None:
            g.name = gold
        f = io.BytesIO((DATA_DIR / name).read_bytes())
        f.name = name
        read_annotations(f, gold=g, where="app")  # the app spells options by its widgets
    assert [e.value for e in at.error] == [safe.md(info.value)]  # the reader's text, escaped as Markdown
    assert safe.md(f"'{gold or name}'") in at.error[0].value  # the message names the uploaded file
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"
    assert at.session_state[state.DATA] is before
    assert not at.info  # no "dataset changed" notice
    assert any("The working dataset is unchanged" in c.value for c in at.caption)


def test_a_bad_upload_after_a_good_one_keeps_the_good_one(wrapper):
    at = ok(_upload(wrapper, "small_wide.csv", fmt="wide"))
    good_id = at.session_state[state.DATA_ID]
    assert good_id.startswith("upload:") and at.session_state[state.DATA].n_workers == 3
    assert [i.value for i in at.info] == [state.loaded_notice(at.session_state[state.DATA])]
    assert at.session_state[state.DATA_SOURCE] == 'read_annotations("small_wide.csv", fmt="wide")'
    assert any(safe.md("Loaded 'small_wide.csv'") in s.value for s in at.success)
    _upload(wrapper, "single_class.csv", at=at)
    assert len(at.error) == 1 and "same class" in at.error[0].value
    assert at.session_state[state.DATA_ID] == good_id
    # the Step page still runs on the good upload
    goto(at, STEP_PAGE)
    assert at.session_state[state.DATA_ID] == good_id


def test_load_without_a_file_says_so_and_keeps_the_dataset():
    at = goto(_home(), DATA_PAGE)
    at.button(key="data.upload.load").click().run()
    assert [e.value for e in at.error] == [safe.md(data_page.NO_FILE_YET)]
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"


def test_simulate_a_crowd_uses_the_sliders_and_a_reproducible_source():
    at = goto(_home(), DATA_PAGE)
    at.slider(key=data_page.SIM_ITEMS).set_value(300)
    at.slider(key=data_page.SIM_WORKERS).set_value(10)
    at.slider(key=data_page.SIM_SPAMMERS).set_value(3)
    at.slider(key=data_page.SIM_ADVERSARIES).set_value(0)
    ok(at.run())
    assert any("10 workers: **3 experts**, 4 novices, 3 spammers, 0 adversaries" in c.value for c in at.caption)
    click(at, "data.sim.run")
    data = at.session_state[state.DATA]
    assert (data.n_items, data.n_workers, data.n_classes) == (300, 10, 3)
    source = at.session_state[state.DATA_SOURCE]
    assert source.startswith("simulate_crowd(300, 10, 3, labels_per_item=4, mix=")
    again = eval(source, {"simulate_crowd": simulate_crowd}).annotations
    np.testing.assert_array_equal(again.label, data.label)
    np.testing.assert_array_equal(again.gold, data.gold)
    # too many non-experts: a warning and a disabled button
    at.slider(key=data_page.SIM_NOVICES).set_value(8)
    ok(at.run())
    assert at.warning and at.button(key="data.sim.run").disabled


# ---------------------------------------------------------------------------- state across pages
def test_switching_pages_keeps_dataset_sliders_comparison_and_run():
    at = goto(_home(), DATA_PAGE)
    at.slider(key=data_page.SIM_ITEMS).set_value(200)
    at.slider(key=data_page.SIM_SPAMMERS).set_value(3)
    click(at, "data.sim.run")
    data_id = at.session_state[state.DATA_ID]
    goto(at, COMPARE_PAGE)
    click(at, "compare.run")
    comparison = at.session_state[compare_page.RESULTS][(data_id, 0.0)]
    goto(at, STEP_PAGE)
    click(at, "stepper.step")
    click(at, "stepper.step")
    run = at.session_state[state.RUN]
    goto(at, EXPORT_PAGE)
    assert any("iteration 2, after M-step" in i.value for i in at.info)
    goto(at, HOME)
    goto(at, DATA_PAGE)
    assert at.session_state[state.DATA_ID] == data_id
    assert at.slider(key=data_page.SIM_ITEMS).value == 200  # restored from the plain key
    assert at.slider(key=data_page.SIM_SPAMMERS).value == 3
    goto(at, COMPARE_PAGE)
    assert at.session_state[compare_page.RESULTS][(data_id, 0.0)] is comparison  # not recomputed
    assert len(at.dataframe) >= 1 and "accuracy" in at.dataframe[0].value
    goto(at, STEP_PAGE)
    assert at.session_state[state.RUN] is run and run.index == 4


def test_changing_the_dataset_resets_the_run_and_the_comparison_view():
    at = goto(_home(), COMPARE_PAGE)
    click(at, "compare.run")
    assert len(at.dataframe) >= 1
    goto(at, STEP_PAGE)
    click(at, "stepper.step")
    goto(at, DATA_PAGE)
    click(at, "data.scores.run")
    assert [i.value for i in at.info] == [state.loaded_notice(at.session_state[state.DATA])]
    goto(at, COMPARE_PAGE)
    assert not at.dataframe and any("Run all methods" in i.value for i in at.info)
    goto(at, STEP_PAGE)
    assert at.session_state[state.RUN].index == 0


# ---------------------------------------------------------------------------- Compare
def test_compare_bluebirds_table_agreement_and_disagreements():
    at = goto(_home(), COMPARE_PAGE)
    assert any("Run all methods" in i.value for i in at.info)
    click(at, "compare.run")
    table = at.dataframe[0].value
    assert list(table["method"]) == ["Majority vote", "Dawid-Skene", "One-coin (symmetric noise)",
                                      "Two-coin (sensitivity / specificity)", "GLAD (ability and difficulty)",
                                      "MACE (competence and spamming)", "MACE (variational Bayes)",
                                      "Bayesian Dawid-Skene (IBCC, variational)",
                                      "Correlated workers (EBCC, variational)",
                                      "Wawa (agreement-weighted vote)", "Zero-Based Skill",
                                      "KOS (Karger, Oh & Shah 2011)", "M-MSR (Ma & Olshevsky 2020)"]  # fmt: skip
    ds = table.set_index("method").loc["Dawid-Skene"]
    assert round(ds["accuracy"], 3) == 0.898
    assert round(table.set_index("method").loc["Majority vote", "accuracy"], 3) == 0.759
    assert {"macro F", "log loss"} <= set(table.columns)
    best = (
        "Highest accuracy (a tie of 3): **Dawid-Skene**, **Two-coin (sensitivity / specificity)**, "
        "**MACE (competence and spamming)** (0.898)."
    )
    assert any(best == c.value for c in at.caption)
    assert len(figures(at)) == 1  # agreement between methods
    dis = [d.value for d in at.dataframe if "labels" in d.value.columns][0]  # after the details table
    assert len(dis) == compare_page.HEAD_ROWS and "gold" in dis.columns
    assert any(m.value.startswith("**Items where the methods disagree: 44 of 108") for m in at.markdown)
    assert _downloads(at) == ["Download the disputed items (CSV)"]


def test_compare_scores_and_no_gold():
    at = _home()
    ok(at.selectbox(key="home.dataset").set_value("affect").run())
    goto(at, COMPARE_PAGE)
    click(at, "compare.run")
    table = at.dataframe[0].value
    assert list(table["method"]) == ["Mean of the scores", "Good/bad annotators (scores)"]
    assert "pearson r" in table and not figures(at)
    goto(at, HOME)
    ok(at.selectbox(key="home.dataset").set_value("patients").run())
    goto(at, COMPARE_PAGE)
    click(at, "compare.run")
    assert "accuracy" not in at.dataframe[0].value
    assert any("no gold labels" in c.value for c in at.caption)


def test_compare_prior_strength_is_part_of_the_key():
    at = goto(_home(), COMPARE_PAGE)
    click(at, "compare.run")
    ok(at.number_input(key=compare_page.PRIOR).set_value(2.0).run())
    assert not at.dataframe  # a new prior needs a new run
    click(at, "compare.run")
    assert set(at.session_state[compare_page.RESULTS]) == {("sample:bluebirds", 0.0), ("sample:bluebirds", 2.0)}
    goto(at, HOME)
    goto(at, COMPARE_PAGE)
    assert at.number_input(key=compare_page.PRIOR).value == 2.0 and at.dataframe


# ---------------------------------------------------------------------------- Export
def _exec_snippet(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "<snippet>", "exec"), namespace)
    return namespace


def test_export_fits_when_the_step_run_has_not_moved_and_the_snippet_reproduces_it():
    at = goto(_home(), EXPORT_PAGE)
    assert any("Nothing to export yet" in i.value for i in at.info)
    assert not at.get("download_button")
    click(at, "export.fit")
    assert any("fitted to convergence" in i.value for i in at.info)
    assert sorted(_downloads(at)) == sorted(
        [
            "posteriors.csv",
            "labels.csv",
            "workers.csv",
            "params.json",
            "history.json",
            "metrics.json",
            "reproduce.py",
            "All of them (zip)",
        ]
    )
    code = at.code[0].value
    assert 'data = load_sample("bluebirds")' in code and 'cl.fit(data, "ds"' in code
    assert at.code[0].proto.wrap_lines  # its comments wrap at 1024 px instead of running off the box
    run = at.session_state[export_page.EXPORT_RUN]["run"]
    assert run.converged and at.session_state[state.RUN].index == 0  # the Step page's run is untouched
    ns = _exec_snippet(code)
    np.testing.assert_allclose(ns["posterior"], run.posterior, rtol=1e-12)
    # the files hold that run
    files = export_page.export_files(run, code)
    post = pd.read_csv(io.BytesIO(files["posteriors.csv"]))
    assert len(post) == 108 and {"item", "label", "confidence", "gold"} <= set(post.columns)
    assert sum(c.startswith("p_") for c in post.columns) == 2
    assert list(pd.read_csv(io.BytesIO(files["labels.csv"])).columns) == ["item", "label"]
    assert '"accuracy": 0.898' in files["metrics.json"].decode()


def test_export_takes_the_step_pages_cursor_and_the_snippet_stops_there():
    at = goto(_home(), STEP_PAGE)
    click(at, "stepper.step")
    click(at, "stepper.step")
    click(at, "stepper.e_step")
    run = at.session_state[state.RUN]
    goto(at, EXPORT_PAGE)
    assert any("**iteration 3, after E-step** (snapshot 5 of 5)" in i.value for i in at.info)
    assert any("Not at convergence" in c.value for c in at.caption)
    code = at.code[0].value
    assert "tol=0.0, max_iter=2" in code and "run.e_step()" in code
    ns = _exec_snippet(code)
    np.testing.assert_allclose(ns["posterior"], run.current.q, rtol=1e-12)
    # run to convergence on the Step page (accelerated from the cursor's end): the snippet replays the plain steps
    # and runs accelerated from there, and reproduces it; scrubbed back into the accelerated part, it goes there
    goto(at, STEP_PAGE)
    click(at, "stepper.run")
    assert run.acceleration is not None and run.accelerated_from == 5
    goto(at, EXPORT_PAGE)
    code = at.code[0].value
    assert "max_iter=2, accelerate=False" in code and "run.run(tol=1e-08, max_iter=10000, accelerate=True)" in code
    np.testing.assert_allclose(_exec_snippet(code)["posterior"], run.current.q, rtol=1e-12)
    goto(at, STEP_PAGE)
    click(at, "stepper.back")
    click(at, "stepper.back")
    goto(at, EXPORT_PAGE)
    code = at.code[0].value
    assert f"run.goto({run.index})" in code and run.index > 5
    np.testing.assert_allclose(_exec_snippet(code)["posterior"], run.current.q, rtol=1e-12)
    # majority vote has nothing to step: exported at once, no metrics download without gold
    goto(at, STEP_PAGE)
    ok(at.selectbox(key=state.W_METHOD).set_value("mv").run())
    goto(at, EXPORT_PAGE)
    assert any("majority vote" in i.value for i in at.info)
    assert "metrics.json" in _downloads(at)


def test_export_of_scores():
    at = _home()
    ok(at.selectbox(key="home.dataset").set_value("affect").run())
    goto(at, EXPORT_PAGE)
    click(at, "export.fit")
    names = _downloads(at)
    assert "labels.csv" not in names and "posteriors.csv" in names and "metrics.json" in names
    assert re.search(r'cl\.fit\(data, "scores"', at.code[0].value)
