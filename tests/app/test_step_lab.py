"""The Step page's panels and the Priors page under ``streamlit.testing.v1.AppTest``.

Every tab renders for every applicable method on four bundled datasets; the posterior table pages and orders;
"what just happened" follows the picked item and worker; the likelihood surface's EM path grows with Step;
the Priors page runs restarts and a prior sweep, resumes and stops a job, hands a start to the Step page; and
the state survives switching between the two pages.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab import plots
from crowdlab.analysis import sweep
from crowdlab.io import safe
from crowdlab.io.samples import load_sample
from crowdlab.models import applicable_models
from crowdlab.ui import lab, panels, presenter, priors_page, state
from crowdlab.ui.frame import PHONE_PAGES
from tests.app.helpers import arr, chart, click, figures, iteration_label, ok, trace

ROOT = Path(__file__).resolve().parents[2]
HOME = str(ROOT / "app.py")
STEP_PAGE = "pages/2_Step_through_EM.py"
PRIORS_PAGE = "pages/4_Priors_and_initialisations.py"
SAMPLES = ("bluebirds", "dogs", "affect", "patients")
CASES = [(s, m) for s in SAMPLES for m in applicable_models(load_sample(s))]


def _open(sample: str = "bluebirds", page: str = STEP_PAGE) -> AppTest:
    at = ok(AppTest.from_file(HOME, default_timeout=30).run())
    if sample != "bluebirds":
        ok(at.selectbox(key="home.dataset").set_value(sample).run())
    return ok(at.switch_page(page).run())


def _method(at: AppTest, method: str) -> AppTest:
    if at.selectbox(key=state.W_METHOD).value != method:
        ok(at.selectbox(key=state.W_METHOD).set_value(method).run())
    return at


def _tab(at: AppTest, tab: str) -> AppTest:
    at.session_state[state.VIEW_PREFIX + "tab"] = tab  # what the tab's on_change callback writes
    return ok(at.run())


# unlike plain helpers.chart: asserts that the key matches at most one chart (also used by test_wiring etc.)
def _chart(at: AppTest, key: str) -> dict | None:
    """The plotly spec of the chart with widget key ``key`` (None when it is not on the page)."""
    return chart(at, key, unique=True)


def _latex(at: AppTest) -> list[str]:
    return [x.value for x in at.latex]


def _run(at: AppTest):
    return at.session_state[state.RUN]


# ---------------------------------------------------------------------------- every tab, every method
@pytest.mark.parametrize(("sample", "method"), CASES)
def test_every_tab_renders_for_every_method(sample, method):
    at = _method(_open(sample), method)
    if method != "mv":
        click(at, "stepper.step")
        click(at, "stepper.e_step")  # the cursor on an E-step snapshot
    run = _run(at)
    scores = method == "scores"
    data = run.data

    _tab(at, "Posterior")
    if scores:
        assert _chart(at, "stepper.annotator_chart") is not None and _chart(at, "stepper.means_chart") is not None
    else:
        spec = _chart(at, "stepper.posterior_chart")
        heat = spec["data"][0]
        assert (heat["zmin"], heat["zmax"]) == (0, 1)
        assert len(heat["y"]) == min(panels.PAGE_SIZE, data.n_items)

    _tab(at, "Workers")
    assert _chart(at, "stepper.scores_chart" if scores else "stepper.reliability_chart") is not None
    if method in ("ds", "one_coin", "two_coin"):
        grid = _chart(at, "stepper.confusion_chart")
        names = [a["text"] for a in grid["layout"]["annotations"]]
        most_active = panels.by_activity(data)[: panels.DEFAULT_WORKERS]
        assert names == [data.worker_names[m] for m in most_active]
        assert all((t["zmin"], t["zmax"]) == (0, 1) for t in grid["data"])
    if method == "two_coin":
        assert _chart(at, "stepper.sens_spec_chart") is not None

    _tab(at, "Priors")
    bars = trace(_chart(at, "stepper.prior_chart"), "pi")
    assert arr(bars["y"]).sum() == pytest.approx(1.0)

    _tab(at, "Formulas")
    if method == "mv":
        assert any("Majority vote" in m.value for m in at.markdown)
    else:
        assert any("E-step just done" in m.value for m in at.markdown)
        assert len(at.latex) >= 3  # the formula, the numbers, and the next half-step's formula

    if method in ("one_coin", "two_coin", "ds") and data.n_classes == 2 or method == "scores":
        _tab(at, "Surface")
        assert _chart(at, "stepper.surface_chart") is not None
    else:  # a tab that would only say "not available" is left out (issue 26)
        assert "Surface" not in [t.label for t in at.tabs]


# ---------------------------------------------------------------------------- posterior table
def test_posterior_rows_stay_put_by_default():
    """The posterior table re-sorted its rows by uncertainty at every step by default: a lecturer could not follow
    one item. By default its rows are in the dataset's order, the same at every step."""
    at = _method(_open("dogs"), "ds")

    def rows() -> list[str]:
        return _chart(at, "stepper.posterior_chart")["data"][0]["y"]

    assert at.radio(key=panels.W_ORDER).value == panels.ORDER_DATASET
    click(at, "stepper.step")
    first = rows()
    click(at, "stepper.step")
    click(at, "stepper.step")
    assert rows() == first == list(_run(at).data.item_names[: len(first)])


def test_posterior_pages_and_orders_by_uncertainty_and_stars_changed_items():
    at = _method(_open("dogs"), "ds")
    ok(at.radio(key=panels.W_ORDER).set_value(panels.ORDER_UNCERTAIN).run())
    click(at, "stepper.step")
    run = _run(at)
    data = run.data
    q = run.current.q
    unc = 1 - q.max(axis=1)
    names = list(data.item_names)

    def rows() -> list[str]:
        return _chart(at, "stepper.posterior_chart")["data"][0]["y"]

    first = rows()
    u = unc[[names.index(r) for r in first]]
    assert np.all(np.diff(u) <= 1e-12) and u[0] == pytest.approx(unc.max())  # most uncertain first
    ok(at.number_input(key=panels.W_PAGE).set_value(2).run())
    second = rows()
    assert not set(first) & set(second)
    assert unc[[names.index(r) for r in second]].max() <= u.min() + 1e-12
    # changed items first, starred in the tick labels and outlined
    assert run.current.kind == "M" and run.current.changed.size == 0  # an M-step leaves q as it was ...
    changed = set(run.snapshots[run.index - 1].changed.tolist())  # ... the step's E-step changed labels
    assert changed, "the first E-step changes some hard labels on dogs"
    ok(at.radio(key=panels.W_ORDER).set_value(panels.ORDER_CHANGED).run())
    assert at.number_input(key=panels.W_PAGE).value == 2  # the page is remembered; go back to page 1
    ok(at.number_input(key=panels.W_PAGE).set_value(1).run())
    spec = _chart(at, "stepper.posterior_chart")
    top = spec["data"][0]["y"]
    n_star = min(len(changed), panels.PAGE_SIZE)
    assert {names.index(r) for r in top[:n_star]} <= changed
    ticks = spec["layout"]["yaxis"]["ticktext"]
    assert all(t.startswith(plots.matrices.CHANGED_MARK) for t in ticks[:n_star])
    assert not any(t.startswith(plots.matrices.CHANGED_MARK) for t in ticks[n_star:])
    outline = [s for s in spec["layout"]["shapes"] if s["name"] == "changed"][0]
    assert len(plots.parse_rect_path(outline["path"])) == n_star
    # the gold column: one entry per row with gold
    gold_rows = sum(len(t["y"]) for t in spec["data"] if t.get("meta", "").startswith("gold_"))
    assert gold_rows == int((data.gold[[names.index(r) for r in top]] >= 0).sum())
    assert any(f"{len(changed)} items in all" in c.value for c in at.caption)


def test_workers_pick_and_survive_a_page_switch():
    at = _method(_open("bluebirds"), "ds")
    _tab(at, "Workers")
    data = _run(at).data
    ok(at.multiselect(key=panels.W_WORKERS).set_value([5, 2]).run())
    names = [a["text"] for a in _chart(at, "stepper.confusion_chart")["layout"]["annotations"]]
    assert names == [data.worker_names[5], data.worker_names[2]]
    hi = trace(_chart(at, "stepper.reliability_chart"), "highlight")
    assert sorted(hi["text"]) == sorted([data.worker_names[5], data.worker_names[2]])
    ok(at.switch_page("app.py").run())
    ok(at.switch_page(STEP_PAGE).run())
    assert at.multiselect(key=panels.W_WORKERS).value == [5, 2]  # the tab and the pick are remembered


# ---------------------------------------------------------------------------- what just happened
def test_explain_follows_the_half_step_and_the_picked_item_and_worker():
    at = _method(_open("bluebirds"), "ds")
    _tab(at, "Formulas")
    data = _run(at).data
    assert any("The start: Majority vote" in m.value for m in at.markdown)
    click(at, "stepper.e_step")
    assert any("E-step just done" in m.value for m in at.markdown)
    item = at.selectbox(key=panels.W_ITEM)
    default = item.value
    assert default == int(np.argmax(1 - _run(at).current.q.max(axis=1)))  # the most uncertain item
    before = _latex(at)
    assert any(f"item {data.item_names[default]}" in x for x in before)
    other = (default + 1) % data.n_items
    ok(item.set_value(other).run())
    after = _latex(at)
    assert after != before and any(f"item {data.item_names[other]}" in x for x in after)
    # the M-step explains the picked worker (default: the most active)
    click(at, "stepper.m_step")
    assert any("M-step just done" in m.value for m in at.markdown)
    worker = at.selectbox(key=panels.W_WORKER)
    assert worker.value == int(panels.by_activity(data)[0])
    before = _latex(at)
    assert any(f"worker {data.worker_names[worker.value]}" in x for x in before)
    ok(worker.set_value(7).run())
    after = _latex(at)
    assert after != before and any(f"worker {data.worker_names[7]}" in x for x in after)
    assert at.selectbox(key=panels.W_ITEM).value == other  # the item pick stays


def test_explain_scores_model_uses_annotators_for_the_e_step():
    at = _open("affect")
    _tab(at, "Formulas")
    click(at, "stepper.step")  # after the M-step: item means
    assert any(r"\mu_i" in x for x in _latex(at))
    click(at, "stepper.e_step")
    data = _run(at).data
    w = at.selectbox(key=panels.W_WORKER).value
    assert any(f"annotator {data.worker_names[w]}" in x and "w_a" not in x for x in _latex(at))
    assert any(r"w_a" in x for x in _latex(at))


# ---------------------------------------------------------------------------- likelihood surface
def test_surface_two_coin_bluebirds_path_grows_with_step():
    at = _method(_open("bluebirds"), "two_coin")
    _tab(at, "Surface")
    data = _run(at).data
    top = int(panels.by_activity(data)[0])
    assert at.selectbox(key=panels.W_SURF_X).value != at.selectbox(key=panels.W_SURF_Y).value
    spec = _chart(at, "stepper.surface_chart")
    assert f"α ({data.worker_names[top]})" in spec["layout"]["title"]["text"]

    def path_len() -> int:
        return len(arr(trace(_chart(at, "stepper.surface_chart"), "path")["x"]))

    assert path_len() == 1
    click(at, "stepper.step")
    assert path_len() == 2
    click(at, "stepper.step")
    assert path_len() == 3
    click(at, "stepper.e_step")  # an E-step leaves the parameters (and the path) as they were
    assert path_len() == 3
    run = _run(at)
    spec = _chart(at, "stepper.surface_chart")
    cur = trace(spec, "current")
    p = run.current.params
    assert (arr(cur["x"])[0], arr(cur["y"])[0]) == pytest.approx((p.extra["alpha"][top], p.extra["beta"][top]))
    surf = trace(spec, "surface")
    assert len(arr(surf["x"])) == panels.SURFACE_N and surf["zmax"] == 0
    click(at, "stepper.back")  # to the M-step of iteration 2
    assert path_len() == 3
    click(at, "stepper.back")
    assert path_len() == 2  # the path follows the cursor
    cache = at.session_state[panels.SURFACE_CACHE]
    assert 1 <= len(cache) <= panels.SURFACE_CACHE_SIZE
    # the same parameter twice: a warning, no chart
    ok(at.selectbox(key=panels.W_SURF_Y).set_value(at.selectbox(key=panels.W_SURF_X).value).run())
    assert _chart(at, "stepper.surface_chart") is None and at.warning


# ---------------------------------------------------------------------------- the Priors page
def _priors(sample: str = "bluebirds") -> AppTest:
    return _open(sample, PRIORS_PAGE)


def _metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert len(found) == 1, [m.label for m in at.metric]
    return found[0]


def test_priors_page_restarts_match_the_library_and_count_optima():
    at = _priors()
    assert at.selectbox(key=priors_page.W_METHOD).value == "ds"
    ok(at.slider(key=priors_page.W_RANDOM).set_value(3).run())
    click(at, priors_page.B_RESTARTS)
    job = at.session_state[priors_page.RESTARTS]
    assert job["status"] == priors_page.DONE and len(job["rows"]) == 5
    ref = sweep.restarts(load_sample("bluebirds"), "ds", n_random=3)
    got = priors_page.table(job)
    np.testing.assert_allclose(got["objective"], ref["objective"])
    assert list(got["optimum"]) == list(ref["optimum"])
    assert list(got["relabelled"]) == list(ref["relabelled"])
    assert _metric(at, "distinct optima") == str(ref["optimum"].nunique())
    # four metrics in a row: each label fits its quarter of the 1024 px page (they were cut to "starts reaching
    # the …" and "mirror optima (…")
    assert len(at.metric) == 4
    assert all(len(m.label) <= priors_page.METRIC_LABEL_CHARS for m in at.metric), [m.label for m in at.metric]
    assert _chart(at, "priors.restart_chart") is not None and _chart(at, "priors.spread_chart") is not None
    assert [b.key for b in at.button if b.key == priors_page.B_STOP] == []  # Stop only while a job runs


def test_priors_page_prior_sweep_and_a_bad_strengths_list():
    at = _priors()
    ok(at.text_input(key=priors_page.W_STRENGTHS).set_value("0, 2, 10").run())
    click(at, priors_page.B_SWEEP)
    job = at.session_state[priors_page.SWEEP]
    t = priors_page.table(job)
    assert list(t["prior"]) == [0.0, 2.0, 10.0]
    # one format per column, so the decimals line up (the audit found 0.8981 beside 0.9 beside 0.88)
    configs = [json.loads(d.proto.columns) for d in at.dataframe]
    table = [c for c in configs if "prior" in c]
    assert len(table) == 1
    formats = {c: v["type_config"]["format"] for c, v in table[0].items() if "type_config" in v}
    floats = [c for c in t.columns if t[c].dtype.kind == "f"]
    assert set(floats) <= set(formats) and formats["objective"] == "%.2f" and formats["prior"] == "%g"
    assert formats["accuracy"] == formats["mean worker accuracy"] == "%.3f"
    ref = sweep.prior_sweep(load_sample("bluebirds"), "ds", [0.0, 2.0, 10.0])
    np.testing.assert_allclose(t["objective"], ref["objective"])
    spec = _chart(at, "priors.sweep_chart")
    assert trace(spec, "objective")["yaxis"] == "y2"
    assert [tr["meta"] for tr in spec["data"]][:2] == ["accuracy", "macro F"]
    assert any("Dawid-Skene: Prior strength s" in c.value and "towards uniform" in c.value for c in at.caption)
    # the caption says what the prior does in the method swept: one-coin's Beta prior pulls accuracies to 0.5
    ok(at.selectbox(key=priors_page.W_METHOD).set_value("one_coin").run())
    click(at, priors_page.B_SWEEP)
    said = [c.value for c in at.caption if "Prior strength s" in c.value]
    assert len(said) == 1 and "towards 0.5 (not 1/K)" in said[0] and "uniform" not in said[0], said
    job = at.session_state[priors_page.SWEEP]
    ok(at.text_input(key=priors_page.W_STRENGTHS).set_value("0, lots").run())
    at.button(key=priors_page.B_SWEEP).click().run()
    assert [e.value for e in at.error] == [
        safe.md("Prior strengths must be numbers separated by commas, e.g. 0, 0.5, 1, 2, 5, 10, 20.")
    ]
    assert at.session_state[priors_page.SWEEP] is job  # the old results stay


def test_priors_page_shows_the_tab_of_the_job_just_started():
    """The audit pressed "Run prior sweep" and saw nothing happen: the Restarts tab stayed open over the sweep."""
    at = _priors()
    ok(at.slider(key=priors_page.W_RANDOM).set_value(1).run())
    click(at, priors_page.B_RESTARTS)
    assert at.session_state[priors_page.W_TAB] == "Restarts"
    click(at, priors_page.B_SWEEP)
    assert at.session_state[priors_page.W_TAB] == "Prior sweep"
    assert [t.label for t in at.tabs] == list(priors_page.TABS)
    click(at, priors_page.B_RESTARTS)
    assert at.session_state[priors_page.W_TAB] == "Restarts"


@pytest.mark.parametrize("method", ["ibcc", "mace_vb"])
def test_priors_page_hard_em_is_off_for_variational_methods(method):
    at = _priors()
    ok(at.checkbox(key=priors_page.W_HARD).check().run())
    assert at.session_state[priors_page.SETTINGS].hard
    ok(at.selectbox(key=priors_page.W_METHOD).set_value(method).run())
    box = at.checkbox(key=priors_page.W_HARD)
    assert box.value is False and box.disabled and "no hard version" in box.help
    assert not at.session_state[priors_page.SETTINGS].hard
    ok(at.slider(key=priors_page.W_RANDOM).set_value(0).run())
    click(at, priors_page.B_RESTARTS)
    job = at.session_state[priors_page.RESTARTS]
    assert job["status"] == priors_page.DONE and len(job["rows"]) == 2


def test_priors_job_resumes_after_an_interruption_and_stops_on_request():
    at = _priors()
    ok(at.slider(key=priors_page.W_RANDOM).set_value(3).run())
    click(at, priors_page.B_RESTARTS)
    job = at.session_state[priors_page.RESTARTS]
    full = list(job["rows"])
    # a click during the job interrupted the run after two fits: the next run resumes where it was
    job["rows"] = full[:2]
    job["status"] = priors_page.RUNNING
    ok(at.run())
    assert job["status"] == priors_page.DONE and len(job["rows"]) == 5
    assert [r["objective"] for r in job["rows"]] == pytest.approx([r["objective"] for r in full])
    # Stop was clicked during a job: its callback set the flag that should_stop reads; the partial rows stay
    job["rows"] = full[:2]
    job["status"] = priors_page.RUNNING
    at.session_state[priors_page.STOP] = True
    ok(at.run())
    assert job["status"] == priors_page.STOPPED and len(job["rows"]) == 2
    assert any("Stopped after 2 of 5 fits" in w.value for w in at.warning)
    assert _metric(at, "reach the best").endswith("of 2")
    # a new job clears the flag and runs to the end
    click(at, priors_page.B_RESTARTS)
    assert at.session_state[priors_page.RESTARTS]["status"] == priors_page.DONE
    assert not at.warning


def test_use_a_restart_on_the_step_page():
    at = _priors()
    ok(at.slider(key=priors_page.W_RANDOM).set_value(2).run())
    click(at, priors_page.B_RESTARTS)
    t = priors_page.table(at.session_state[priors_page.RESTARTS])
    assert at.selectbox(key=priors_page.W_PICK).value == priors_page.best_start(t)
    assert not t.loc[priors_page.best_start(t), "relabelled"]
    ok(at.selectbox(key=priors_page.W_PICK).set_value(3).run())  # random start, seed 1
    click(at, priors_page.B_USE)
    cfg = at.session_state[state.CONFIG]
    assert (cfg.method, cfg.init, cfg.seed) == ("ds", "random", 1)
    ok(at.switch_page(STEP_PAGE).run())
    run = _run(at)
    assert (run.init, run.seed) == ("random", 1)
    assert at.selectbox(key=state.W_INIT).value == "random"
    click(at, "stepper.run")
    assert _run(at).last.objective == pytest.approx(t.loc[3, "objective"])


def test_state_survives_switching_between_step_and_priors_pages():
    at = _method(_open("bluebirds"), "two_coin")
    _tab(at, "Surface")
    click(at, "stepper.step")
    click(at, "stepper.step")
    run = _run(at)
    ok(at.switch_page(PRIORS_PAGE).run())
    assert at.selectbox(key=priors_page.W_METHOD).value == "two_coin"  # follows the Step page's method
    ok(at.slider(key=priors_page.W_RANDOM).set_value(2).run())
    click(at, priors_page.B_RESTARTS)
    n_opt = _metric(at, "distinct optima")
    ok(at.switch_page(STEP_PAGE).run())
    assert _run(at) is run and run.index == 4
    assert at.selectbox(key=state.W_METHOD).value == "two_coin"
    assert _chart(at, "stepper.surface_chart") is not None  # the open tab is remembered
    click(at, "stepper.step")
    ok(at.switch_page(PRIORS_PAGE).run())
    assert at.slider(key=priors_page.W_RANDOM).value == 2
    assert _metric(at, "distinct optima") == n_opt  # the results are still there
    # a new dataset drops the results made on the old one
    ok(at.switch_page("app.py").run())
    ok(at.selectbox(key="home.dataset").set_value("dogs").run())
    ok(at.switch_page(PRIORS_PAGE).run())
    assert not at.metric and any("Run restarts" in i.value for i in at.info)
    assert at.selectbox(key=priors_page.W_METHOD).value == "ds"  # two-coin does not apply to 4 classes


@pytest.mark.parametrize("method", ["ds", "one_coin", "two_coin", "mv"])
def test_intervals_tab_after_a_run(method):
    at = _method(_open(), method)
    if method != "mv":
        click(at, "stepper.run")
    _tab(at, "Intervals")
    if method == "mv":  # intervals exist for DS / one-coin / two-coin only: no tab that only says so
        assert "Intervals" not in [t.label for t in at.tabs]
    else:
        assert figures(at), "the interval chart is drawn"


# ---------------------------------------------------------------------------- the one stepper: shortcuts, Play, Back
def _info(at: AppTest) -> list[str]:
    return [i.value for i in at.info]


def test_every_shortcut_button_exists_and_does_its_action():
    at = _open()
    run = _run(at)
    shortcuts = {name: at.button(key=f"stepper.{name}").proto.shortcut for name in lab.SHORTCUTS}
    assert shortcuts == {
        "back": "left",
        "e_step": "e",
        "m_step": "m",
        "next": "right",
        "run": "g",
        "reset": "0",
        "play": "p",
    }
    click(at, "stepper.next")  # right arrow: one half-step, the E-step
    assert (run.index, run.current.kind) == (1, "E")
    click(at, "stepper.next")  # then the M-step
    assert (run.index, run.current.kind) == (2, "M")
    click(at, "stepper.e_step")  # e
    assert (run.index, run.current.kind) == (3, "E")
    click(at, "stepper.m_step")  # m
    assert (run.index, run.current.kind) == (4, "M")
    click(at, "stepper.back")  # left arrow: one half-step back
    assert (run.index, run.current.kind) == (3, "E")
    click(at, "stepper.run")  # g: to convergence
    assert run.converged and run.at_end and run.iteration > 2
    click(at, "stepper.reset")  # 0
    assert len(run.snapshots) == 1 and run.index == 0
    click(at, "stepper.play")  # p: plays, and shows the first half-step at once
    assert at.session_state["stepper.playing"] and run.index == 1
    assert at.button(key="stepper.play").label == "Pause"


def test_back_after_e_then_m_gives_after_e_as_the_scrubber_does():
    at = _open()
    run = _run(at)
    click(at, "stepper.e_step")
    click(at, "stepper.m_step")
    click(at, "stepper.back")
    assert iteration_label(at) == "iteration 1, after E-step" and run.index == 1
    assert at.slider(key=state.W_SCRUB).value == 1  # the scrubber shows the same snapshot
    click(at, "stepper.back")
    assert iteration_label(at) == "iteration 0, initialisation" and at.button(key="stepper.back").disabled
    assert any(c.value.startswith("snapshot 0 of 2 · ") for c in at.caption)


def test_a_fresh_run_calls_its_one_snapshot_the_start_not_0_of_0():
    at = _open()
    captions = [c.value for c in at.caption]
    assert any(c.startswith("snapshot 0, the start (Step computes the next) · ") for c in captions), captions
    assert not any("snapshot 0 of 0" in c for c in captions)
    click(at, "stepper.step")
    assert any(c.value.startswith("snapshot 2 of 2 · ") for c in at.caption)


def test_play_advances_one_half_step_per_tick_and_pause_stops():
    at = _open()
    run = _run(at)
    ok(at.selectbox(key="stepper.speed").set_value("fast").run())
    assert lab.SPEEDS[at.session_state["stepper.speed_value"]] == 0.5
    click(at, "stepper.play")
    seen = [(run.index, run.current.kind)]
    for _ in range(3):  # each tick of Play's timer (a rerun of the panel once the half-step is due)
        at.session_state["stepper.play_last"] = 0.0
        ok(at.run())
        seen.append((run.index, run.current.kind))
    assert seen == [(1, "E"), (2, "M"), (3, "E"), (4, "M")]
    ok(at.run())  # a rerun before the next half-step is due does not advance
    assert run.index == 4
    assert "playing, 0.5 s per half-step" in " ".join(c.value for c in at.caption)
    click(at, "stepper.play")  # Pause
    assert not at.session_state["stepper.playing"] and at.button(key="stepper.play").label == "Play"
    at.session_state["stepper.play_last"] = 0.0
    ok(at.run())
    assert run.index == 4
    # a manual move pauses Play too
    click(at, "stepper.play")
    assert run.index == 5
    click(at, "stepper.back")
    assert not at.session_state["stepper.playing"] and run.index == 4
    # leaving the page stops Play; coming back does not start it again
    click(at, "stepper.play")
    ok(at.switch_page(PRIORS_PAGE).run())
    ok(at.switch_page(STEP_PAGE).run())
    assert not at.session_state["stepper.playing"] and at.button(key="stepper.play").label == "Play"


def test_play_stops_at_convergence():
    at = _open()
    run = _run(at)
    click(at, "stepper.run")
    assert at.button(key="stepper.play").disabled  # nothing left to show
    ok(at.slider(key=state.W_SCRUB).set_value(len(run.snapshots) - 3).run())
    click(at, "stepper.play")  # replays the stored snapshots, then stops at the converged end
    for _ in range(4):
        at.session_state["stepper.play_last"] = 0.0
        ok(at.run())
    assert run.at_end and not at.session_state["stepper.playing"]
    assert len(run.snapshots) == run.index + 1
    # it says so, and its button says Play again (its timer's own reruns drew only the panel below the buttons)
    assert "Play stopped at the end of the run" in " ".join(c.value for c in at.caption)
    assert at.button(key="stepper.play").label == "Play"
    click(at, "stepper.back")  # the next move forgets it
    assert "Play stopped" not in " ".join(c.value for c in at.caption)


def test_a_late_report_of_a_position_play_showed_does_not_stop_play():
    """Replaying computed snapshots, a slowed browser reported the scrubber's previous position after Play had
    moved on: the handler took it for a scrub, Play went back one half-step and stopped."""
    at = _open()
    run = _run(at)
    click(at, "stepper.run")
    ok(at.slider(key=state.W_SCRUB).set_value(2).run())  # the lecturer's scrub: pauses, goes to 2
    click(at, "stepper.play")
    at.session_state["stepper.play_last"] = 0.0
    ok(at.run())  # the timer's next half-step
    assert at.session_state["stepper.playing"] and run.index == 4
    ok(at.slider(key=state.W_SCRUB).set_value(3).run())  # the late report of a position Play showed
    assert at.session_state["stepper.playing"] and run.index == 4
    ok(at.slider(key=state.W_SCRUB).set_value(0).run())  # a real scrub still pauses and moves
    assert not at.session_state["stepper.playing"] and run.index == 0


def test_the_notice_disappears_after_the_next_action():
    at = _open()
    ok(at.selectbox(key=state.W_METHOD).set_value("one_coin").run())
    assert _info(at) == [state.NOTICE_METHOD]
    click(at, "stepper.next")  # a click in the stepper reruns only the stepper: the notice goes with it
    assert state.NOTICE_METHOD not in _info(at)
    ok(at.number_input(key=state.W_PRIOR).set_value(1.0).run())
    assert _info(at) == ["Prior strength changed: the run was reset."]  # what changed, not "Method changed"
    ok(at.selectbox(key="stepper.speed").set_value("slow").run())  # so does any other widget of the stepper
    assert "Prior strength changed: the run was reset." not in _info(at)


def test_the_reset_notice_names_the_setting_that_changed():
    """Moving only "Reveal gold" (or another setting) says what changed, not "Method changed"."""
    at = _open()
    click(at, "stepper.step")
    ok(at.slider(key=state.W_REVEAL).set_value(20).run())
    assert _run(at).index == 0 and _run(at).model.semi_supervised
    assert _info(at) == ["Revealed gold changed: the run was reset."]
    ok(at.selectbox(key=state.W_INIT).set_value("random").run())
    assert _info(at) == ["Start changed: the run was reset."]
    cfg = state.MethodConfig()
    both = state.notice_for(cfg, replace(cfg, prior=1.0, hard=True, reveal=10))
    assert both == "Prior strength, hard EM and revealed gold changed: the run was reset."
    assert state.notice_for(cfg, replace(cfg, method="glad", prior=1.0)) == state.NOTICE_METHOD


def test_the_stopping_tab_counts_one_iteration_in_the_singular():
    at = _open()
    click(at, "stepper.step")
    _tab(at, "Stopping")
    said = " ".join(m.value for m in at.markdown)
    assert "Not converged yet: 1 iteration so far" in said and "1 iterations" not in said
    click(at, "stepper.step")
    _tab(at, "Stopping")
    assert any("Not converged yet: 2 iterations so far" in m.value for m in at.markdown)


_FRAMED = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))
_FRAMED = [p for p in _FRAMED if p not in PHONE_PAGES]  # the phone pages have no frame, no presenter mode


@pytest.mark.parametrize("page", [None, *_FRAMED])
def test_presenter_mode_from_the_url_loads_every_page(page):
    at = AppTest.from_file(HOME, default_timeout=30)
    at.query_params["present"] = "1"
    ok(at.run())
    if page is not None:
        ok(at.switch_page(page).run())
    assert at.session_state[presenter.KEY] is True
    assert at.toggle(key=presenter.W_TOGGLE).value is True
    assert any(presenter.CSS.strip() in h.proto.body for h in at.get("html"))
    if page is not None and "Step_through" in page:
        assert _info(at) == [] and at.button(key="stepper.play") is not None
        assert not any(c.value.startswith("The E-step updates") for c in at.caption)  # the intro is left out
        assert at.expander  # the method picker folds into an expander


def test_presenter_toggle_turns_it_on_and_off_and_keeps_the_url_in_step():
    at = _open()
    assert not at.session_state[presenter.KEY] if presenter.KEY in at.session_state else True
    presenter_css = lambda: [h for h in at.get("html") if "html { font-size" in h.proto.body]  # noqa: E731
    assert not presenter_css()
    ok(at.toggle(key=presenter.W_TOGGLE).set_value(True).run())
    assert at.session_state[presenter.KEY] is True and at.query_params["present"] in ("1", ["1"])
    assert any("font-size" in h.proto.body for h in at.get("html"))
    click(at, "stepper.step")  # the stepper works in presenter mode
    assert _run(at).iteration == 1
    ok(at.switch_page(PRIORS_PAGE).run())
    assert at.session_state[presenter.KEY] is True  # survives a page switch
    ok(at.toggle(key=presenter.W_TOGGLE).set_value(False).run())
    assert at.session_state[presenter.KEY] is False and "present" not in at.query_params
    assert not presenter_css()


@pytest.mark.parametrize(
    ("method", "hard", "prior"),
    [("ds", False, 0.0), ("ds", True, 1.0), ("glad", False, 0.0), ("mace_vb", False, 0.0), ("ibcc", False, 0.0)],
)
def test_presenter_curve_titles_fit_the_narrow_column_with_the_sidebar_open(method, hard, prior):
    """Presenter mode puts the curves in a third of the page: about 215 px wide when the lecturer re-opens the
    sidebar at 1024 px, room for 31 characters a title line. The builders' 36 ("Objective: ELBO (variational lower")
    ran past the chart's edge there, and so did the long x-axis title beside six-digit tick labels. The Step page's
    normal mode puts them in the same narrow column now (the curve and the main picture on the first screen), with
    the same wrapping."""
    at = _method(_open(), method)
    if hard:
        ok(at.checkbox(key=state.W_HARD).check().run())
    if prior:
        ok(at.number_input(key=state.W_PRIOR).set_value(prior).run())
    click(at, "stepper.step")
    keys = ("stepper.objective_chart", "stepper.metric_chart")
    normal = {k: _chart(at, k)["layout"] for k in keys}
    ok(at.toggle(key=presenter.W_TOGGLE).set_value(True).run())
    assert lab.CURVE_CHARS <= 31
    presented = {k: _chart(at, k)["layout"] for k in keys}
    for key in keys:
        for layout in (normal[key], presented[key]):
            text = layout["title"]["text"]
            lines = text.split("<br>")
            assert max(len(line) for line in lines) <= lab.CURVE_CHARS, (key, lines)
            assert layout["margin"]["t"] >= 30 + 20 * len(lines)
            assert layout["xaxis"]["title"]["text"] == lab.CURVE_X_TITLE
        assert presented[key]["title"]["text"].replace("<br>", " ") == normal[key]["title"]["text"].replace(
            "<br>", " "
        )  # nothing lost
    title = f"Objective: {_run(at).model.objective_name}"
    assert normal["stepper.objective_chart"]["title"]["text"].replace("<br>", " ") == safe.html(title)


def test_scores_item_means_axes_stay_put_from_step_to_step():
    """The Step page's μ_i scatter (scores model): the axes come from the data, not from the iterate, so they do
    not jump between snapshots, and every iterate's means lie inside them."""
    at = _method(_open("affect"), "scores")
    _tab(at, "Posterior")
    first = _chart(at, "stepper.means_chart")
    for _ in range(3):
        click(at, "stepper.step")
    _tab(at, "Posterior")
    later = _chart(at, "stepper.means_chart")
    for axis in ("xaxis", "yaxis"):
        assert first["layout"][axis]["range"] == later["layout"][axis]["range"]
    lo, hi = later["layout"]["yaxis"]["range"]
    for snap in _run(at).snapshots:
        assert lo <= snap.params.mu.min() and snap.params.mu.max() <= hi
