"""A real headless Chromium (Debian's /usr/bin/chromium) against ``streamlit run app.py`` (fixtures: conftest.py).

Order matters and is the file's order: first every page is opened cold by deep link (the very first request of
the fresh server is a deep link, not the home page), then an upload is carried through the Step, Compare and
Export pages in one session, then the stepping controls are clicked through. Screenshots land in
tests/e2e/artifacts/<name>.png. Never ``playwright install`` here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crowdlab.io.data import to_gold_dataframe, to_long_dataframe
from crowdlab.teaching.simulate import mix_from_counts, simulate_crowd
from crowdlab.ui.frame import PHONE_PAGES
from tests.e2e.helpers import (
    ITERATION,
    assert_no_exception,
    assert_nothing_cut,
    iteration,
    screenshot,
    sidebar_link,
    sidebar_text,
    wait_idle,
    wait_page,
)

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
BAD_FILE = ROOT / "tests" / "data" / "missing_label_column.csv"


def _page_paths() -> list[tuple[str, str]]:
    """(URL path, artifact name) of every page: pages/N_Name.py is served at /Name; the home page last."""
    out = []
    for f in sorted((ROOT / "pages").glob("*.py")):
        if f"pages/{f.name}" in PHONE_PAGES:  # no frame, no sidebar: tests/e2e/test_class_browser.py
            continue
        path = re.sub(r"^\d+_", "", f.stem)
        out.append(("/" + path, path.lower()))
    return out + [("/", "home")]


@pytest.mark.parametrize("path,name", _page_paths(), ids=[n for _, n in _page_paths()])
def test_every_page_opens_cold_by_deep_link(server, page, path, name):
    page.goto(server + path)
    wait_page(page)
    assert_no_exception(page)
    assert "Bluebirds" in sidebar_text(page)  # the frame loaded the default dataset on a cold link
    if name == "data":
        page.locator(".js-plotly-plot").nth(3).wait_for()  # the four pictures of the data
    wait_idle(page)
    assert_no_exception(page)
    screenshot(page, name)


@pytest.fixture()
def crowd_csv(tmp_path) -> tuple[Path, Path]:
    """A small long CSV (and its gold CSV) written to a temporary folder."""
    sim = simulate_crowd(150, 8, 3, labels_per_item=4, mix=mix_from_counts({"expert": 5, "novice": 2, "spammer": 1}))
    labels, gold = tmp_path / "e2e_crowd.csv", tmp_path / "e2e_gold.csv"
    to_long_dataframe(sim.annotations).to_csv(labels, index=False)
    to_gold_dataframe(sim.annotations).to_csv(gold, index=False)
    return labels, gold


def _choose(page, index: int, path: Path) -> None:
    """Put a file into the index-th file uploader of the page and wait until Streamlit has it."""
    uploader = page.locator('[data-testid="stFileUploader"]').nth(index)
    uploader.locator('input[type="file"]').set_input_files(str(path))
    uploader.locator(f'[data-testid="stFileChipName"][title="{path.name}"]').wait_for()
    wait_idle(page)


def test_upload_then_step_compare_and_export_in_one_session(server, page, crowd_csv):
    labels, gold = crowd_csv
    page.goto(server + "/Data")
    wait_page(page)
    assert "Bluebirds" in sidebar_text(page)

    # 1. a bad file: the reader's message, no traceback, the dataset stays
    _choose(page, 0, BAD_FILE)
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text("no label column found").wait_for()
    wait_idle(page)
    assert_no_exception(page)
    assert "Bluebirds" in sidebar_text(page)
    screenshot(page, "data_bad_upload")

    # 2. a good file with gold: the sidebar summary changes, the run is reset with a notice
    _choose(page, 0, labels)
    _choose(page, 1, gold)
    page.get_by_role("button", name="Load", exact=True).click()
    page.get_by_text("Dataset changed: loaded").first.wait_for()
    wait_idle(page)
    text = sidebar_text(page)
    assert "e2e_crowd" in text and "items: 150" in text and "Bluebirds" not in text
    page.get_by_text("Loaded 'e2e_crowd.csv' with gold from 'e2e_gold.csv'").wait_for()
    page.locator(".js-plotly-plot").nth(3).wait_for()
    assert_no_exception(page)
    screenshot(page, "data_uploaded")

    # 3. the Step page through the sidebar (same session): Step several times, then Run to convergence
    sidebar_link(page, "Step through EM")
    page.get_by_text(ITERATION).first.wait_for()
    assert "e2e_crowd" in sidebar_text(page)
    assert iteration(page) == (0, "initialisation")
    step = page.get_by_role("button", name="Step", exact=True)
    for i in range(1, 4):
        step.click()
        page.get_by_text(f"iteration {i}, after M-step").first.wait_for()
        wait_idle(page)
    page.get_by_role("button", name="Run to convergence").click()
    page.get_by_text("converged").first.wait_for()
    wait_idle(page)
    it, kind = iteration(page)
    assert it > 3 and kind == "after M-step"
    assert_no_exception(page)
    screenshot(page, "step_uploaded")

    # 4. Compare: every method on the upload, scored against the uploaded gold
    sidebar_link(page, "Compare methods")
    page.get_by_role("button", name="Run all methods").click()
    page.get_by_text("Highest accuracy").wait_for()
    wait_idle(page)
    assert page.locator(".js-plotly-plot").count() == 1
    assert_no_exception(page)
    screenshot(page, "compare_uploaded")

    # 5. Export: the Step page's converged run, and a snippet that reloads the uploaded files
    sidebar_link(page, "Export")
    page.get_by_text(f"iteration {it}, after M-step").first.wait_for()
    page.get_by_text('read_annotations("e2e_crowd.csv", gold="e2e_gold.csv")').wait_for()
    assert page.get_by_role("button", name="posteriors.csv").is_visible()
    # every method run on Compare, side by side in one file (issue 26)
    assert page.get_by_role("button", name="labels_all_methods.csv").count() == 1
    assert_no_exception(page)
    screenshot(page, "export_uploaded")


def test_step_page_cold_deep_link_then_home(server, page):
    # 1. a cold deep link to the Step page: the frame loads the default dataset
    page.goto(server + "/Step_through_EM")
    page.get_by_text(ITERATION).first.wait_for()
    wait_idle(page)
    assert_no_exception(page)
    assert page.get_by_text("Bluebirds").first.is_visible()
    assert iteration(page) == (0, "initialisation")

    # 2. Step three times: the iteration advances by one each time
    step = page.get_by_role("button", name="Step", exact=True)
    for i in range(1, 4):
        step.click()
        page.get_by_text(f"iteration {i}, after M-step").first.wait_for()
        wait_idle(page)
    assert iteration(page) == (3, "after M-step")

    # 3. E-step alone, then M-step
    page.get_by_role("button", name=re.compile(r"^E-step")).click()
    page.get_by_text("iteration 4, after E-step").first.wait_for()
    wait_idle(page)
    page.get_by_role("button", name=re.compile(r"^M-step")).click()
    page.get_by_text("iteration 4, after M-step").first.wait_for()
    wait_idle(page)

    # 4. Run to convergence: many more iterations, and the Run button is then disabled
    page.get_by_role("button", name="Run to convergence").click()
    page.get_by_text("converged").first.wait_for()
    wait_idle(page)
    it, kind = iteration(page)
    assert it > 4 and kind == "after M-step"
    assert page.get_by_role("button", name="Run to convergence").is_disabled()
    assert page.locator(".js-plotly-plot").count() >= 3  # objective, accuracy, confusion matrices
    assert_no_exception(page)
    screenshot(page, "step_through_em_converged")

    # 5. Back goes one half-step back, then one more, nothing recomputed. Run to convergence is accelerated EM: its
    # points jump by the EM maps each took (and two may follow each other without an E-step between), so the
    # positions are read off the page, each one earlier than the one before
    back = page.get_by_role("button", name=re.compile(r"^Back"))
    where = (it, kind)
    for _ in range(2):
        back.click()
        page.wait_for_function(
            "w => { const m = document.body.innerText.match(/iteration (\\d+), (after [EM]-step)/);"
            " return m && (m[1] + m[2]) !== w; }",
            arg=f"{where[0]}{where[1]}",
        )
        wait_idle(page)
        now = iteration(page)
        assert now[0] < where[0] or (now[0] == where[0] and now[1] == "after E-step" != where[1]), (where, now)
        where = now
    it, kind = where[0] + 1, where[1]  # step 6 below checks "iteration {it - 1}, {kind}"
    # 6. the home page (sidebar navigation keeps the session; a reload would start a new one), then back
    page.locator('[data-testid="stSidebar"]').get_by_role("link", name=re.compile(r"Home$")).click()
    page.get_by_text("Where to go next").wait_for()
    wait_idle(page)
    assert_no_exception(page)
    assert page.get_by_text("Bluebirds").first.is_visible()
    page.locator('[data-testid="stMain"]').get_by_role("link", name=re.compile("Step through EM")).click()
    page.get_by_text(ITERATION).first.wait_for()
    wait_idle(page)
    assert iteration(page) == (it - 1, kind)  # the run survived the page switch
    assert_no_exception(page)


def test_posterior_view_and_home_dataset_switch(server, page):
    page.goto(server + "/")
    page.get_by_text("Where to go next").wait_for()
    wait_idle(page)
    # switch dataset on the home page, then open the Step page via its link (same session)
    page.get_by_label("Bundled dataset").click()
    page.get_by_role("option", name=re.compile("Dog breeds")).click()
    page.get_by_text("Dataset changed: loaded").first.wait_for()
    wait_idle(page)
    assert_no_exception(page)
    page.locator('[data-testid="stMain"]').get_by_role("link", name=re.compile("Step through EM")).click()
    page.get_by_text(ITERATION).first.wait_for()
    wait_idle(page)
    assert page.get_by_text("Dog breeds").first.is_visible()
    page.get_by_role("button", name="Step", exact=True).click()
    page.get_by_text("iteration 1, after M-step").first.wait_for()
    wait_idle(page)
    page.get_by_text("Posterior", exact=True).click()
    wait_idle(page)
    page.get_by_text("red outlines mark the gold class").wait_for()
    assert_no_exception(page)
    screenshot(page, "step_posterior_dogs")


@pytest.mark.parametrize(
    "path,name,tab,away",
    [("/Sequences", "sequences", "Transitions", None), ("/Networks", "networks", "Comparison", "Sequences")],
)
def test_dependent_data_page_steps_runs_and_keeps_its_run(server, page, path, name, tab, away):
    # 1. a cold deep link: the page's own default dataset, the other pages' dataset named in the sidebar
    page.goto(server + path)
    page.get_by_text(ITERATION).first.wait_for()
    wait_page(page)
    assert_no_exception(page)
    assert iteration(page) == (0, "initialisation")
    assert "simulated" in sidebar_text(page) and "Bluebirds" in sidebar_text(page)

    # 2. Step three times (E-step, M-step alone: tests/app), then Run to convergence and Back
    step = page.get_by_role("button", name="Step", exact=True)
    for i in range(1, 4):
        step.click()
        page.get_by_text(f"iteration {i}, after M-step").first.wait_for()
        wait_idle(page)
    assert_no_exception(page)
    page.get_by_role("button", name="Run to convergence").click()
    page.get_by_text("converged").first.wait_for()
    wait_idle(page)
    it, kind = iteration(page)
    assert it >= 3 and kind == "after M-step"
    assert page.locator(".js-plotly-plot").count() >= 3
    assert_no_exception(page)
    screenshot(page, f"{name}_converged")
    back = page.get_by_role("button", name=re.compile(r"^Back"))  # the name ends with its shortcut's key
    back.click()
    page.get_by_text(f"iteration {it}, after E-step").first.wait_for()
    wait_idle(page)
    back.click()
    page.get_by_text(f"iteration {it - 1}, after M-step").first.wait_for()
    wait_idle(page)

    # 3. another tab; then away through the sidebar and back: the run is where it was
    page.get_by_role("tab", name=tab).click()
    wait_idle(page)
    assert_no_exception(page)
    screenshot(page, f"{name}_{tab.lower()}")
    if away is not None:
        sidebar_link(page, away)
        assert_no_exception(page)
        sidebar_link(page, path.strip("/"))
        page.get_by_text(ITERATION).first.wait_for()
        wait_idle(page)
        assert iteration(page) == (it - 1, "after M-step")
        assert_no_exception(page)


def test_learning_from_crowds_steps_and_runs(server, page):
    page.goto(server + "/Learning_from_crowds")
    page.get_by_text(ITERATION).first.wait_for()
    wait_page(page)
    assert_no_exception(page)
    page.get_by_role("button", name="Step", exact=True).click()
    page.get_by_text("iteration 1, after M-step").first.wait_for()
    wait_idle(page)
    page.get_by_role("button", name="Run to convergence").click()
    page.get_by_text(re.compile(r"· (converged|stalled)")).first.wait_for()  # the position line says why it stopped
    wait_idle(page)
    assert page.locator(".js-plotly-plot").count() >= 4
    assert_no_exception(page)
    screenshot(page, "learning_from_crowds_converged")


def test_error_rates_tabs_render(server, page):
    page.goto(server + "/Error_rates_without_labels")
    wait_page(page)
    assert_no_exception(page)
    tabs = page.get_by_role("tab")
    for i in range(tabs.count()):
        tabs.nth(i).click()
        wait_idle(page)
        assert_no_exception(page)
    assert page.locator(".js-plotly-plot").count() >= 2
    screenshot(page, "error_rates_last_tab")


def test_step_page_interval_tab(server, page):
    page.goto(server + "/Step_through_EM")
    page.get_by_text(ITERATION).first.wait_for()
    wait_page(page)
    page.get_by_role("button", name="Run to convergence").click()
    page.get_by_text("converged").first.wait_for()
    wait_idle(page)
    page.get_by_role("tab", name="Intervals").click()
    wait_idle(page)
    assert_no_exception(page)
    assert page.locator(".js-plotly-plot").count() >= 2
    screenshot(page, "step_intervals")


SELECT_PAGES = ("home", "step_through_em", "priors_and_initialisations", "sequences", "networks")


@pytest.mark.parametrize("path,name", _page_paths(), ids=[n for _, n in _page_paths()])
def test_nothing_cut_off_at_1024_with_the_sidebar_open(server, page, path, name):
    """At the projector's width with the sidebar open (the narrow case): no tab hides behind the strip's scroll
    arrow, no button, label or metric is cut to an ellipsis, and every option of every select box fits its box."""
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(server + path)
    wait_page(page)
    assert_no_exception(page)
    strips = page.evaluate(
        "() => Array.from(document.querySelectorAll('[role=tablist]')).map(t => [t.scrollWidth, t.clientWidth,"
        " Array.from(t.querySelectorAll('[role=tab]')).map(x => x.innerText).join(' | ')])"
    )
    assert not [s for s in strips if s[0] > s[1] + 1], strips
    if name == "data":
        page.get_by_role("button", name="Download all labels (long CSV)").wait_for()  # below the pictures' code
        wait_idle(page)
    if name in SELECT_PAGES:  # (the Step page's method select is folded: its speed select is shown)
        page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').filter(visible=True).first.wait_for()
        wait_idle(page)
    assert_nothing_cut(page, name)
    # the folded parts (dataset sources, settings, seeds) and every tab
    expanders = page.locator('[data-testid="stMain"] [data-testid="stExpander"] summary')
    for i in range(expanders.count()):
        expanders.nth(i).click()
    wait_idle(page)
    assert_nothing_cut(page, f"{name}, expanders open")
    tabs = page.locator('[data-testid="stMain"] [role=tab]')
    i = 0
    while i < tabs.count():
        tab = tabs.nth(i)
        tab.scroll_into_view_if_needed()
        tab.click()
        wait_idle(page)
        assert_nothing_cut(page, f"{name}, tab {tab.inner_text()!r}")
        i += 1


AFTER_RUN = [  # page, the button that runs it, a text only its results show, the screenshot's name
    ("/Priors_and_initialisations", "Run restarts", "reach the best", "priors_after_restarts"),
    ("/Export", "Fit to convergence", "posteriors.csv", "export_after_fit"),
    ("/Compare_methods", "Run all methods", "Agreement between methods", "compare_after_run"),
    ("/Step_through_EM", "Run to convergence", "converged", "step_after_convergence"),
]


@pytest.mark.parametrize("path,button,done,name", AFTER_RUN, ids=[n for *_, n in AFTER_RUN])
def test_nothing_cut_off_at_1024_after_running(server, page, path, button, done, name):
    """The cold pages are checked above; the results a click brings (restart metrics and scatter, the export's
    download buttons, the comparison's tables and heatmap, the converged stepper's tabs) must fit too. A new-user
    audit found 'starts reaching the …', 'posteriors.…' and a 'time' column cut to 'tin' here."""
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(server + path)
    wait_page(page)
    page.get_by_role("button", name=button).first.click()
    page.locator('[data-testid="stMain"]').get_by_text(done).first.wait_for(timeout=90_000)
    wait_idle(page)
    assert_no_exception(page)
    assert_nothing_cut(page, f"{name}, after running")
    tabs = page.locator('[data-testid="stMain"] [role=tab]')
    for i in range(tabs.count()):
        tab = tabs.nth(i)
        tab.scroll_into_view_if_needed()
        tab.click()
        wait_idle(page)
        assert_nothing_cut(page, f"{name}, after running, tab {tab.inner_text()!r}")
    screenshot(page, name)
