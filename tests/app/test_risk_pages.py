"""The pages "Error rates without labels" (Donmez et al. 2010) and "Learning a classifier from crowds" (Raykar
et al. 2010), and the per-worker intervals panel, under ``streamlit.testing.v1.AppTest``.

Error rates: a cold load, the sliders changing the verdict and the table, every tab drawn, the Monte-Carlo studies
finishing and cached (a rerun computes no chunk again). Learning from crowds: a cold load on its own simulated
dataset, the stepper's controls, the decision boundary moving between iterations, settings and sources (AppTest
cannot drive ``st.file_uploader``: uploads go through :func:`crowdlab.ui.raykar_page.load_upload` in a wrapper
app, as the Sequences tests do). Intervals: :func:`crowdlab.ui.intervals.worker_intervals_panel` through
``AppTest.from_function`` on small fitted runs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.io.data import to_long_dataframe
from crowdlab.teaching.simulate import simulate_raykar
from crowdlab.ui import intervals as iv
from crowdlab.ui import raykar_page as rp
from crowdlab.ui import risk_page as rk
from tests.app.helpers import arr, chart, click, ok, trace, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
RISK = str(ROOT / "pages" / "8_Error_rates_without_labels.py")
RAYKAR = str(ROOT / "pages" / "9_Learning_from_crowds.py")
TIMEOUT = 30
RUN = "raykar.run.obj"

WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import raykar_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    raykar_page.load_upload(**request)
runpy.run_path({page!r}, run_name="__main__")
"""


TABLE_COLUMN = {  # a dataframe's key does not reach AppTest: tables are found by a column of their own
    "risk.estimates_table": "θ̂ (9)",
    "risk.fig3_variance": "variance",
    "risk.two_table": "quantity",
    "raykar.metrics_table": "model",
    "stepper.intervals_table": "worker",
}


def _table(at: AppTest, key: str):
    found = [d.value for d in at.dataframe if TABLE_COLUMN[key] in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


# ============================================================================ error rates without labels
def _risk() -> AppTest:
    return ok(AppTest.from_file(RISK, default_timeout=TIMEOUT).run())


def _tab(at: AppTest, tab: str) -> AppTest:
    at.session_state[rk.TAB_VIEW] = tab  # what the tab bar's on_change callback writes
    return ok(at.run())


def test_error_rates_page_loads_cold_with_a_verdict_a_table_and_fig_1():
    at = _risk()
    assert [s.key for s in at.slider][:4] == [rk.P, rk.THETA, rk.N, rk.K]
    assert any("Identifiable (p(y) is not uniform" in s.value for s in at.success)
    table = _table(at, "risk.estimates_table")
    assert list(table["classifier"]) == ["f1", "f2", "f3"]
    cf = table["θ̂ (9)"].astype(float)
    assert np.all(np.abs(cf - 0.75) < 0.2)
    curves = chart(at, "risk.fig1_curves")
    assert [t["meta"] for t in curves["data"] if t["meta"].startswith("curve:")] == [
        "curve:n = 100",
        "curve:n = 250",
        "curve:n = 500",
    ]
    assert chart(at, "risk.fig1_contour") is not None
    assert chart(at, "risk.fig3_error") is None  # lazy tabs: only the open one runs


def test_sliders_change_the_verdict_and_the_table():
    at = _risk()
    before = _table(at, "risk.estimates_table")
    ok(at.slider(key=rk.K).set_value(5).run())
    assert list(_table(at, "risk.estimates_table")["classifier"]) == ["f1", "f2", "f3", "f4", "f5"]
    assert any("All 5 together" in m.value for m in at.markdown)
    ok(at.number_input(key=rk.SEED).set_value(3).run())
    after = _table(at, "risk.estimates_table")
    assert list(after["θ̂ (9)"][:3]) != list(before["θ̂ (9)"])  # fresh data for a new seed
    # a uniform p(y): not identifiable (Prop. 3), no estimate from eq. (9)
    at.slider(key=rk.P).set_value(0.5).run()
    assert not at.exception
    assert any("Not identifiable: p(y) is uniform" in e.value for e in at.error)
    assert set(_table(at, "risk.estimates_table")["θ̂ (9)"]) == {"—"}
    # out of the symmetric model's range: a warning with the constrained estimate
    at.slider(key=rk.P).set_value(0.95).run()
    ok(at.slider(key=rk.THETA).set_value(0.2).run())
    assert at.session_state[rk.VALUES][rk.THETA] == 0.2  # mirrored under the plain key


def test_fisher_tab_draws_both_panels_and_the_printed_equation_on_request():
    at = _tab(_risk(), rk.TABS[1])
    err = chart(at, "risk.fig3_error")
    heat = trace(err, "error")
    assert arr(heat["z"]).shape == (len(rk.GRID_P), len(rk.GRID_THETA))
    assert (heat["zmin"], heat["zmax"]) == (0.0, 0.3)
    assert list(err["layout"]["xaxis"]["range"]) == list(chart(at, "risk.fig3_fisher")["layout"]["xaxis"]["range"])
    z_bottom, z_top = arr(heat["z"])[0].mean(), arr(heat["z"])[-1].mean()
    assert z_bottom > 2 * z_top  # p(y) near 1/2 (bottom row) is much harder (Donmez et al. Fig. 3)
    corrected = arr(trace(chart(at, "risk.fig3_fisher"), "fisher")["z"])
    variance = _table(at, "risk.fig3_variance")
    mc, good, printed = (float(v) for v in variance["variance"])
    assert abs(mc - good) < abs(mc - printed)  # the corrected J predicts the Monte-Carlo variance
    ok(at.toggle(key=rk.PRINTED).set_value(True).run())
    assert any("weights the squared score by p(y)" in w.value for w in at.warning)
    printed_z = arr(trace(chart(at, "risk.fig3_fisher"), "fisher")["z"])
    assert not np.allclose(np.nan_to_num(printed_z), np.nan_to_num(corrected))


def test_error_vs_n_tab_runs_the_monte_carlo_once_and_caches_it():
    at = _risk()
    rk.fig46_chunk_cached.clear()  # the cache lives as long as the process: start empty
    calls = rk.MC_CALLS["fig46"]
    start = time.process_time()
    _tab(at, rk.TABS[2])
    first = time.process_time() - start
    computed = rk.MC_CALLS["fig46"] - calls
    assert computed == len(rk.NS_LIST)  # one chunk per sample size, under the progress bar
    fig4 = chart(at, "risk.fig4")
    assert [t["meta"] for t in fig4["data"]] == [f"collaborative:{k}" for k in rk.K_LIST]
    y = {t["meta"]: arr(t["y"]) for t in fig4["data"]}
    assert y["collaborative:10"][-1] < y["collaborative:1"][0]  # more data and more classifiers: smaller error
    assert y["collaborative:10"].mean() < y["collaborative:1"].mean()
    fig6 = chart(at, "risk.fig6")
    assert len([t for t in fig6["data"] if t["meta"].startswith("single:")]) == 10
    assert arr(trace(fig6, "collaborative")["y"]).mean() < np.mean(
        [arr(t["y"]).mean() for t in fig6["data"] if t["meta"].startswith("single:")]
    )
    # a rerun (any other widget) and a fresh session with the same parameters compute nothing again
    start = time.process_time()
    ok(at.run())
    _tab(AppTest.from_file(RISK, default_timeout=TIMEOUT).run(), rk.TABS[2])
    assert rk.MC_CALLS["fig46"] - calls == computed
    assert time.process_time() - start < first + 1.0


def test_misspecified_and_two_population_tabs():
    at = _tab(_risk(), rk.TABS[3])
    fig8 = chart(at, "risk.fig8")
    metas = [t["meta"] for t in fig8["data"]]
    assert metas == [f"assumed:{a:g}" for a in rk.assumed_marginals(0.75)]
    y = {t["meta"]: arr(t["y"]) for t in fig8["data"]}
    assert y["assumed:0.75"][-1] < y["assumed:0.65"][-1]  # the right p(y) keeps improving, a wrong one levels off
    assert chart(at, "risk.fig8_limit") is not None
    _tab(at, rk.TABS[4])
    fig = chart(at, "risk.two_contour")
    assert {"surface", "ridge_a", "ridge_b", "truth", "estimate"} <= {t["meta"] for t in fig["data"]}
    est = _table(at, "risk.two_table")
    assert abs(float(est["estimate"][0]) - 0.85) < 0.15 and abs(float(est["estimate"][1]) - 0.65) < 0.15
    at.slider(key=rk.PB).set_value(0.75).run()  # the same marginal twice: Prop. 7 fails
    assert not at.exception
    assert any("Not identifiable: the two populations have the same marginal" in e.value for e in at.error)
    assert "ridge_b" not in {t["meta"] for t in chart(at, "risk.two_contour")["data"]}


def test_error_rates_verdicts_write_theta_as_the_page_does():
    """The library's verdicts say "theta = 0.7280", "1/l < theta_j < 1", "theta11 = ..."; the page shows θ, θⱼ,
    θ₁₁ as everywhere else on it (and no underscore in the table's notes)."""
    at = _risk()
    said = [s.value for s in at.success] + [w.value for w in at.warning]
    assert any("eq. (9) gives θ = " in v for v in said) and any("every 1/l < θⱼ < 1" in v for v in said)
    assert not any("theta" in v for v in said)
    notes = [c.value for c in at.caption if "Risk R(" in c.value]
    assert len(notes) == 1 and "R(fⱼ) = 1 − θⱼ" in notes[0] and "_j" not in notes[0]
    _tab(at, rk.TABS[4])
    verdict = [s.value for s in at.success]
    assert any("θ₁₁ = " in v and "θ₂₂ = " in v for v in verdict) and not any("theta" in v for v in verdict)
    assert rk.readable("theta <= 1/2; theta_j by 1 - theta_j; theta11, theta22") == "θ ≤ 1/2; θⱼ by 1 - θⱼ; θ₁₁, θ₂₂"


# ============================================================================ learning from crowds
def _raykar() -> AppTest:
    return ok(AppTest.from_file(RAYKAR, default_timeout=TIMEOUT).run())


def _boundary(at: AppTest) -> tuple:
    t = trace(chart(at, "raykar.scatter_chart"), "boundary")
    return tuple(np.round(np.asarray(t["x"] + t["y"], dtype=float), 6))


def test_raykar_page_loads_cold_on_its_own_simulation():
    at = _raykar()
    assert at.session_state["raykar.data.id"] == "sim:raykar:500:5:3:0:biased"
    assert at.session_state["data.id"] == "sample:bluebirds"  # the other pages' dataset, untouched
    run = at.session_state[RUN]
    assert run.model.info.key == "raykar" and run.index == 0
    spec = chart(at, "raykar.scatter_chart")
    assert {"items:1", "items:0", "boundary", "mv_boundary", "true_boundary"} <= {t["meta"] for t in spec["data"]}
    roc = chart(at, "raykar.roc_chart")
    assert len([t for t in roc["data"] if t["meta"].startswith("trail:")]) == 5
    assert chart(at, "raykar.stepper.objective_chart") is not None
    assert {b.key: b.disabled for b in at.button if b.key.startswith("raykar.stepper.")} == {
        "raykar.stepper.e_step": False,
        "raykar.stepper.m_step": True,
        "raykar.stepper.step": False,
        "raykar.stepper.run": False,
        "raykar.stepper.back": True,
        "raykar.stepper.reset": True,
        "raykar.stepper.next": False,
        "raykar.stepper.play": False,
    }


def test_raykar_stepper_moves_the_boundary_and_learns_a_better_classifier_than_majority_vote():
    at = _raykar()
    run = at.session_state[RUN]
    b0 = _boundary(at)
    click(at, "raykar.stepper.step")
    assert (run.index, run.iteration) == (2, 1)
    b1 = _boundary(at)
    assert b1 != b0  # the M-step moved w
    click(at, "raykar.stepper.e_step")
    assert run.current.kind == "E" and _boundary(at) == b1  # an E-step leaves w, moves mu
    click(at, "raykar.stepper.m_step")
    assert run.index == 4 and _boundary(at) != b1
    roc = chart(at, "raykar.roc_chart")
    assert len(arr(trace(roc, "trail:w0")["x"])) == 3  # init and two M-steps
    click(at, "raykar.stepper.back")  # one half-step back: after E, M gives "after E"
    assert run.index == 3 and run.current.kind == "E"
    click(at, "raykar.stepper.back")
    assert run.index == 2 and _boundary(at) == b1
    ok(at.slider(key="raykar.stepper.scrub").set_value(0).run())
    assert run.index == 0 and _boundary(at) == b0
    click(at, "raykar.stepper.run")
    assert run.stop_reason in ("converged", "stalled") and run.at_end and not run.violations, run.stop_reason
    table = _table(at, "raykar.metrics_table")
    assert table["model"].iloc[0] == "trained on majority vote" and len(table) == run.iteration + 2
    last, mv = table.iloc[-1], table.iloc[0]
    assert last["test accuracy"] > mv["test accuracy"] + 0.01  # biased novices shift the MV classifier
    assert last["labels accuracy"] > mv["labels accuracy"]  # EM's labels beat majority vote's
    click(at, "raykar.stepper.reset")
    assert len(run.snapshots) == 1 and _boundary(at) == b0


def test_raykar_in_presenter_mode_fits_its_narrow_columns():
    """Presenter mode (the sidebar may be open): the ROC chart under the scatter (beside it, it was about 130 px
    wide, its names on top of each other), its names drawn at 16 px and placed for that size on a square about
    270 px wide; the metrics table's columns add up to less than the pictures' width."""
    at = AppTest.from_file(RAYKAR, default_timeout=TIMEOUT)
    at.query_params["present"] = "1"
    at = ok(at.run())
    roc = chart(at, "raykar.roc_chart")
    now = [t for t in roc["data"] if t.get("meta") == "now"][0]
    assert now["textfont"]["size"] >= 16 and rp.ROC_PRESENTER["label_px"] == (270.0, 16.0)
    assert roc["layout"]["height"] >= 400
    assert all(len(line) <= 40 for line in roc["layout"]["title"]["text"].split("<br>"))
    table = [d for d in at.dataframe if "model" in d.value.columns][0]
    config = json.loads(table.proto.columns)
    widths = [config[c]["width"] for c in table.value.columns]
    assert sum(widths) <= 445, dict(zip(table.value.columns, widths))
    assert config["test accuracy"]["label"] == "test acc."


def test_raykar_settings_and_simulation_reset_the_run():
    at = _raykar()
    click(at, "raykar.stepper.step")
    old = at.session_state[RUN]
    ok(at.number_input(key=rp.W_L2).set_value(5.0).run())
    new = at.session_state[RUN]
    assert new is not old and new.model.l2 == 5.0 and new.index == 0
    assert [i.value for i in at.info] == ["Settings changed: the run was reset."]
    ok(at.slider(key=rp.SIM_N).set_value(200).run())
    ok(at.toggle(key=rp.SIM_BIAS).set_value(False).run())
    click(at, "raykar.sim.run")
    assert at.session_state["raykar.data.id"] == "sim:raykar:200:5:3:0:noisy"
    assert at.session_state[RUN].data.n_items == 200
    assert len(arr(trace(chart(at, "raykar.scatter_chart"), "items:1")["x"])) < 200


def test_raykar_upload_of_labels_and_features(tmp_path):
    sim = simulate_raykar(120, 3, 4, 2, seed=5)
    labels = to_long_dataframe(sim.annotations).to_csv(index=False).encode()
    raw = sim.features.X[:, 1:]
    features = "item,a,b,c\n" + "".join(f"{i},{r[0]},{r[1]},{r[2]}\n" for i, r in enumerate(raw))
    page = wrapper_script(tmp_path, WRAPPER.format(page=RAYKAR), "page.py", links=False)  # the script alone
    at = AppTest.from_file(str(page), default_timeout=TIMEOUT)
    at.session_state["test.upload"] = {"labels": labels, "features": features.encode(), "name": "crowd.csv"}
    ok(at.run())
    assert at.session_state["raykar.data.id"].startswith("upload:")
    assert any("3 features (a, b, c)" in s.value for s in at.success)
    spec = chart(at, "raykar.scatter_chart")
    assert spec["layout"]["xaxis"]["title"]["text"] == "a" and spec["layout"]["yaxis"]["title"]["text"] == "b"
    assert any("other 1 features held at their mean" in c.value for c in at.caption)
    click(at, "raykar.stepper.run")
    # a broken features file: the reader's message, the dataset stays
    at.session_state["test.upload"] = {"labels": labels, "features": b"item,a\n0,1\n", "name": "crowd.csv"}
    at.run()
    assert any("no row of features" in e.value for e in at.error)
    assert at.session_state["raykar.data.obj"].n_items == 120


# ============================================================================ per-worker intervals
def _intervals_app(key: str, steps: int | None = None) -> None:
    import streamlit as st

    from crowdlab.engines.run import Run
    from crowdlab.models import make_model
    from crowdlab.teaching.simulate import simulate_crowd
    from crowdlab.ui.intervals import worker_intervals_panel

    if "run" not in st.session_state:
        data = simulate_crowd(150, 8, 2, labels_per_item=4, seed=1).annotations
        run = Run(data, make_model(key))
        if steps is None:
            run.run()
        else:
            for _ in range(steps):
                run.step()
        st.session_state["run"] = run
    worker_intervals_panel(st.session_state["run"])


def _intervals(key: str, steps: int | None = None) -> AppTest:
    return ok(AppTest.from_function(_intervals_app, args=(key, steps), default_timeout=TIMEOUT).run())


@pytest.mark.parametrize("key", ["ds", "one_coin", "two_coin"])
def test_intervals_panel_shows_every_worker_sorted_with_its_interval(key):
    at = _intervals(key)
    spec = chart(at, "stepper.intervals_chart")
    est = np.concatenate([arr(t["x"]) for t in spec["data"]])
    assert len(est) == 8
    order = spec["layout"]["yaxis"]["categoryarray"]
    table = _table(at, "stepper.intervals_table")
    assert list(table["worker"]) == order[::-1]  # the table: highest first; the chart: highest on top
    assert np.all(table["lower"] <= table["estimate"]) and np.all(table["estimate"] <= table["upper"])
    assert np.all(table["se"] > 0) and np.all(table["upper"] - table["lower"] < 0.6)


def test_intervals_panel_native_parameters_and_the_cache():
    calls = iv.CALLS["n"]
    at = _intervals("two_coin")
    assert iv.CALLS["n"] == calls + 1
    ok(at.run())
    assert iv.CALLS["n"] == calls + 1  # a rerun recomputes nothing
    ok(at.radio(key=iv.W_WHAT).set_value("native").run())
    assert at.selectbox(key=iv.W_PARAM).options == ["alpha (sensitivity)", "beta (specificity)"]
    alpha = chart(at, "stepper.intervals_chart")
    ok(at.selectbox(key=iv.W_PARAM).set_value("beta (specificity)").run())
    beta = chart(at, "stepper.intervals_chart")
    assert alpha["layout"]["xaxis"]["title"]["text"] != beta["layout"]["xaxis"]["title"]["text"]
    assert iv.CALLS["n"] == calls + 2  # one computation per choice of what; the parameter is a view of it
    ok(at.radio(key=iv.W_SCALE).set_value("logit").run())
    assert at.session_state[iv.VIEW] == {iv.W_WHAT: "native", iv.W_PARAM: "beta (specificity)", iv.W_SCALE: "logit"}


def test_intervals_panel_notes_an_unconverged_run_and_declines_other_models():
    at = _intervals("ds", steps=1)
    assert any("has not converged" in c.value for c in at.caption)
    at = _intervals("mv")
    assert any("Dawid-Skene, one-coin and two-coin only" in i.value for i in at.info)
    assert chart(at, "stepper.intervals_chart") is None


def _scores_intervals_app() -> None:
    import streamlit as st

    from crowdlab.engines.fit import fit
    from crowdlab.teaching.simulate import simulate_scores
    from crowdlab.ui.intervals import worker_intervals_panel

    if "run" not in st.session_state:
        st.session_state["run"] = fit(simulate_scores(60, 5, 3, seed=1).annotations, "scores", init="all_good")
    worker_intervals_panel(st.session_state["run"])


def test_intervals_panel_draws_the_item_means_of_the_scores_model():
    at = ok(AppTest.from_function(_scores_intervals_app, default_timeout=TIMEOUT).run())
    assert not at.info
    spec = chart(at, "stepper.intervals_chart")
    est = np.concatenate([arr(t["x"]) for t in spec["data"]])
    assert len(est) == iv.SCORES_ROWS  # the 40 widest of 60 item intervals
    run = at.session_state["run"]
    assert spec["layout"]["xaxis"]["range"] == pytest.approx([run.params.low, run.params.high])  # the score range
    glob = [d.value for d in at.dataframe if "parameter" in d.value.columns]
    assert len(glob) == 1 and list(glob[0]["parameter"]) == ["sigma", "pi_good"]
    t = glob[0]
    assert np.all((t["lower"] <= t["estimate"]) & (t["estimate"] <= t["upper"]))
    assert any("40 widest of 60" in c.value for c in at.caption)
