"""The Step page explains every step with every number (``streamlit.testing.v1.AppTest``).

Every method's "What just happened" lines fit the projector; the lecture model shows its numbers and density;
a mirrored run is called out as label-switched; the likelihood surface is drawn for binary Dawid-Skene and the
scores model; a simulation's truth (worker types, true confusion matrices, good/bad annotators) is shown beside
the estimates; the reliability chart never stacks every worker on one x.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.teaching import explain
from crowdlab.ui import panels, state
from tests.app.helpers import arr, click, ok, trace
from tests.app.test_step_lab import HOME, STEP_PAGE, _chart, _method, _open, _run, _tab

DATA_PAGE = "pages/1_Data.py"


def _latex(at: AppTest) -> list[str]:
    return [x.value.strip().removeprefix("$$").removesuffix("$$").strip() for x in at.latex]


def _frame(at: AppTest, column: str):
    """The one dataframe on the page with ``column``."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1
    return found[0]


def _simulated(button: str) -> AppTest:
    at = ok(AppTest.from_file(HOME, default_timeout=30).run())
    at = ok(at.switch_page(DATA_PAGE).run())
    click(at, button)
    return ok(at.switch_page(STEP_PAGE).run())


@pytest.mark.parametrize(
    ("sample", "method"),
    [(s, m) for s in ("bluebirds", "patients") for m in ("ds", "one_coin", "two_coin", "mv")] + [("affect", "scores")],
)
def test_every_explanation_line_fits_and_every_new_panel_renders(sample, method):
    at = _open(sample)
    if method == "two_coin" and sample == "patients":
        return  # two-coin is for two classes
    _method(at, method)
    _tab(at, "Formulas")
    for _ in range(2):
        if method != "mv":
            click(at, "stepper.e_step")
        lines = _latex(at)
        assert lines
        wide = [x for x in lines if explain.visible_width(x) > explain.MAX_WIDTH]
        assert not wide, wide[:2]
        assert not any("e-" in x for x in lines)
        if method != "mv":
            click(at, "stepper.m_step")
    _tab(at, "Surface")
    applies = method == "scores" or (method != "mv" and _run(at).data.n_classes == 2)
    assert (_chart(at, "stepper.surface_chart") is not None) == applies
    _tab(at, "Workers")
    assert _chart(at, "stepper.scores_chart" if method == "scores" else "stepper.reliability_chart") is not None


def test_lecture_model_shows_pi_good_sigma_and_its_density():
    at = _simulated("data.scores.run")
    _method(at, "scores")
    _tab(at, "Formulas")
    click(at, "stepper.step")
    click(at, "stepper.e_step")
    text = " ".join(_latex(at))
    p = _run(at).current.params
    assert rf"\pi_{{good}} = {explain._f(p.pi_good)}" in text and r"\text{(the lecture's range)}" in text
    click(at, "stepper.m_step")
    lines = _latex(at)
    assert any(x.startswith(r"\sigma^2 = \frac") for x in lines)
    sums = [x for x in lines if x.startswith((r"\textstyle\sum_a", r"\quad"))]
    assert sums and not any("more" in x for x in sums)  # 5 annotators: every term of mu_i written out
    _tab(at, "Surface")
    spec = _chart(at, "stepper.surface_chart")
    assert "σ" in spec["layout"]["xaxis"]["title"]["text"] and "π_good" in spec["layout"]["yaxis"]["title"]["text"]
    path = trace(spec, "path")
    run = _run(at)
    assert len(arr(path["x"])) == run.current.iteration + 1
    assert arr(trace(spec, "current")["x"])[0] == pytest.approx(run.current.params.sigma)
    assert any("lecture's range" in c.value for c in at.caption)


def test_simulated_scores_show_which_annotators_are_good():
    at = _simulated("data.scores.run")
    truth = at.session_state[panels.TRUTH][1]["good"]
    click(at, "stepper.step")
    _tab(at, "Workers")
    table = _frame(at, "truth")
    names = at.session_state[state.DATA].worker_names
    expect = {n: "good" if g else "bad" for n, g in zip(names, truth)}
    assert dict(zip(table["annotator"], table["truth"])) == expect
    _tab(at, "Posterior")
    spec = _chart(at, "stepper.annotator_chart")
    bars, said = trace(spec, "p_good"), trace(spec, "truth")
    assert dict(zip(bars["x"], said["text"])) == expect
    _tab(at, "Priors")
    assert any(m.label.startswith("Truth") for m in at.metric)


def test_scores_model_names_its_real_start_and_keeps_its_annotators_in_place():
    """The lecture's scores in presenter mode: the settings' header and the line under the position both name the
    run's real start ("Assume everyone is good", never "Majority vote"), the P(good) bars keep annotator order from
    step to step, and the row of true types above them is labelled "truth" on the chart itself."""
    at = AppTest.from_file(HOME, default_timeout=30)
    at.query_params["present"] = "1"
    at = ok(at.run())
    at = ok(at.switch_page(DATA_PAGE).run())
    click(at, "data.scores.run")
    at = ok(at.switch_page(STEP_PAGE).run())
    everyone = "Assume everyone is good"

    def header() -> str:
        return next(e.label for e in at.expander if e.label.startswith("Method:"))

    assert header() == f"Method: {state.method_title('scores')} · start: {everyone}"
    assert any(c.value.endswith(f"· {everyone}") for c in at.caption)
    start = at.selectbox(key=state.W_INIT)
    assert start.value == "all_good" and list(start.options) == [everyone, "Random (seeded)"]
    names = list(_run(at).data.worker_names)
    good = at.session_state[panels.TRUTH][1]["good"]
    orders = []
    for _ in range(3):
        _tab(at, "Posterior")
        spec = _chart(at, "stepper.annotator_chart")
        orders.append(list(trace(spec, "p_good")["x"]))
        assert arr(trace(spec, "p_good")["y"]) == pytest.approx(_run(at).current.q[:, 1])
        said = trace(spec, "truth")
        assert list(said["text"]) == ["good" if g else "bad" for g in good]
        axis = spec["layout"]["yaxis"]
        assert dict(zip(axis["tickvals"], axis["ticktext"]))[float(arr(said["y"])[0])] == "truth"
        click(at, "stepper.step")
    assert orders == [names] * 3
    # the start "only this annotator good": named as such in both places
    ok(at.selectbox(key=state.W_ONLY_GOOD).set_value(1).run())
    assert header().endswith(f"start: {state.ONLY_GOOD_START}")
    assert any(c.value.endswith(f"· {state.ONLY_GOOD_START}") for c in at.caption)
    _tab(at, "Formulas")
    assert any("One annotator is taken to be good" in m.value for m in at.markdown)
    # back to class labels: majority vote is the start again
    at = ok(at.switch_page("app.py").run())
    ok(at.selectbox(key="home.dataset").set_value("bluebirds").run())
    assert at.session_state[state.CONFIG].init == "majority"


def test_glad_and_mace_details_fit_the_projector():
    """Presenter mode's Details tab: GLAD's table in half the tab and MACE's across it, every column with a width
    that adds up to less than the space at 1024 px; GLAD's difficulty histogram has plain ticks and every bar
    whole inside its x range."""
    at = AppTest.from_file(HOME, default_timeout=30)
    at.query_params["present"] = "1"
    at = ok(ok(at.run()).switch_page(STEP_PAGE).run())
    for method, room in (("glad", 270), ("mace", 560), ("mace_vb", 560)):
        _method(at, method)
        click(at, "stepper.step")
        _tab(at, "Details")
        assert len(at.dataframe) == 1
        config = json.loads(at.dataframe[0].proto.columns)
        shown = [c for c in at.dataframe[0].value.columns]
        widths = [config[c]["width"] for c in shown]
        assert all(isinstance(w, int) for w in widths) and sum(widths) <= room, (method, dict(zip(shown, widths)))
        if method == "glad":
            spec = _chart(at, "stepper.details.difficulty")
            bars = trace(spec, "difficulty")
            x, w = arr(bars["x"]), arr(bars["width"])
            lo, hi = spec["layout"]["xaxis"]["range"]
            assert lo < (x - w / 2).min() and (x + w / 2).max() < hi  # the hardest items' bar too
            assert w == pytest.approx(np.full(w.size, w[0]))  # equal widths, none a hairline
            ticks = spec["layout"]["xaxis"]["ticktext"]
            assert 2 <= len(ticks) <= 6 and all(float(t) > 0 for t in ticks)
            assert "type" not in spec["layout"]["xaxis"] or spec["layout"]["xaxis"]["type"] != "log"


def test_simulated_crowd_shows_true_types_and_confusion_matrices():
    at = _simulated("data.sim.run")
    _method(at, "ds")
    click(at, "stepper.step")
    _tab(at, "Workers")
    held = at.session_state[panels.TRUTH]
    assert held[0] == at.session_state[state.DATA_ID]
    true_grid = _chart(at, "stepper.true_confusion_chart")
    picked = at.multiselect(key=panels.W_WORKERS).value
    est, true = arr(true_grid["data"][0]["z"]), arr(true_grid["data"][1]["z"])  # side by side
    np.testing.assert_allclose(true, held[1]["gamma"][picked[0]])
    np.testing.assert_allclose(est, _run(at).current.params.gamma[picked[0]])
    names = [a["text"] for a in true_grid["layout"]["annotations"]]
    assert names[:2] == [f"{_run(at).data.worker_names[picked[0]]}: {s}" for s in ("estimate", "truth")]
    table = _frame(at, "type")
    assert set(table["type"]) <= {"expert", "novice", "spammer", "adversary"}
    _tab(at, "Posterior")
    heat = _chart(at, "stepper.posterior_chart")
    assert any(t.get("meta") == "gold_agrees" and t["x"][0] == "truth" for t in heat["data"])
    # a bundled dataset has no simulation truth
    at = _open("bluebirds")
    _tab(at, "Workers")
    assert _chart(at, "stepper.true_confusion_chart") is None


def test_reliability_x_is_never_constant():
    at = _method(_open("bluebirds"), "ds")  # every bluebirds worker labelled all 108 items
    _tab(at, "Workers")
    spec = _chart(at, "stepper.reliability_chart")
    xs = np.concatenate([arr(t["x"]) for t in spec["data"]])
    assert np.ptp(xs) > 0.1 and "majority" in spec["layout"]["xaxis"]["title"]["text"]


def test_a_mirrored_run_is_called_label_switched():
    at = _method(_open("bluebirds"), "ds")
    click(at, "stepper.run")
    assert not any("Label switching" in w.value for w in at.warning)
    ok(at.selectbox(key=state.W_INIT).set_value("random").run())
    ok(at.number_input(key=state.W_SEED).set_value(0).run())
    click(at, "stepper.run")
    warn = [w.value for w in at.warning if "Label switching" in w.value]
    assert warn and "0 → 1" in warn[0] and "accuracy against gold" in warn[0]
