"""The "Batch vs online" page under ``streamlit.testing.v1.AppTest``: a cold load on its own dataset, the one
stepper driving an online run (Step, E-step, M-step, Back, Run, Reset, Play), the curves against batch EM with
fixed axes, settings that reset the run, the hashing sweep, the sources (RTE, simulation, upload) and the state
across page switches (the working dataset of the other pages is never touched).

AppTest cannot drive ``st.file_uploader``: uploads go through :func:`crowdlab.ui.online_page.load_upload` (what
the Load button's callback calls) in a small wrapper app, as in test_sequences_page.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.engines.online import OnlineRun
from crowdlab.io import safe
from crowdlab.ui import online_page as op
from crowdlab.ui import state
from tests.app.helpers import arr, chart, click, ok, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "tests" / "data"
PAGE = "pages/10_Batch_vs_online.py"
STEP_PAGE = "pages/2_Step_through_EM.py"
TIMEOUT = 30
RUN = "onl.run.obj"

WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import online_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    online_page.load_upload(**request)
runpy.run_path({page!r}, run_name="__main__")
"""


def _page() -> AppTest:
    return ok(AppTest.from_file(str(ROOT / PAGE), default_timeout=TIMEOUT).run())


def _run(at: AppTest) -> OnlineRun:
    return at.session_state[RUN]


# unlike helpers.iteration_label: any "#### " heading (this stepper says "pass 1, block 1 of 11", not "iteration")
def _label(at: AppTest) -> str:
    found = [m.value.lstrip("# ") for m in at.markdown if m.value.startswith("#### ")]
    assert len(found) == 1, found
    return found[0]


def test_cold_load_steps_online_em_with_the_one_stepper():
    at = _page()
    assert at.session_state["onl.data.id"] == "sample:bluebirds"
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"  # the working dataset, untouched
    run = _run(at)
    assert isinstance(run, OnlineRun) and run.model.info.key == "online_ds" and run.index == 0
    assert _label(at) == "start: no block seen yet"
    buttons = {b.key: b.disabled for b in at.button if b.key.startswith("onl.stepper.")}
    assert buttons["onl.stepper.m_step"] and buttons["onl.stepper.back"] and not buttons["onl.stepper.step"]
    click(at, "onl.stepper.e_step")
    assert run.current.kind == "E" and _label(at).startswith("pass 1, block 1 of 11: after E-step")
    block = at.dataframe[0].value  # the block's q_i table
    assert len(block) == 10 and {"item", "ratings", "q(1)", "Fᵢ", "prediction", "gold"} <= set(block.columns)
    click(at, "onl.stepper.m_step")
    assert run.current.kind == "M" and run.last.t == 1
    click(at, "onl.stepper.step")
    assert run.last.t == 2 and run.index == 4
    click(at, "onl.stepper.back")
    assert run.index == 3 and _label(at).startswith("pass 1, block 2 of 11: after E-step")
    click(at, "onl.stepper.next")
    assert run.index == 4


def test_curves_have_fixed_axes_and_batch_em_beside_online():
    at = _page()
    obj = chart(at, "onl.objective_chart")
    acc = chart(at, "onl.accuracy_chart")
    assert obj is not None and acc is not None
    x_range, y_range = obj["layout"]["xaxis"]["range"], obj["layout"]["yaxis"]["range"]
    assert x_range == [0, op.OnlineConfig().passes * 108]
    assert {t["meta"] for t in obj["data"]} >= {"progressive", "online", "batch"}
    click(at, "onl.stepper.step")
    click(at, "onl.stepper.run")
    assert _run(at).converged and _label(at).startswith("pass 5, block 11 of 11: after M-step")
    obj2 = chart(at, "onl.objective_chart")
    assert obj2["layout"]["xaxis"]["range"] == x_range and obj2["layout"]["yaxis"]["range"] == y_range
    assert chart(at, "onl.accuracy_chart")["layout"]["yaxis"]["range"] == acc["layout"]["yaxis"]["range"]
    assert at.button(key="onl.stepper.play").disabled  # nothing left to play
    assert any("example" in c.value and "counter" in c.value for c in at.code)  # the vw table
    click(at, "onl.stepper.reset")
    assert len(_run(at).snapshots) == 1


def test_play_advances_one_half_step_per_tick():
    at = _page()
    run = _run(at)
    click(at, "onl.stepper.play")
    assert at.session_state["onl.stepper.playing"] and run.current.kind == "E"
    at.session_state["onl.stepper.play_last"] = 0.0
    ok(at.run())
    assert run.index == 2 and run.current.kind == "M"
    click(at, "onl.stepper.play")  # pause
    assert not at.session_state["onl.stepper.playing"]


def test_settings_reset_the_run_and_draw_the_schedule():
    at = _page()
    click(at, "onl.stepper.step")
    ok(at.slider(key=op.W["rho"]).set_value(0.9).run())
    run = _run(at)
    assert run.index == 0 and run.model.rho == 0.9
    assert "Settings changed: the run was reset." in [i.value for i in at.info]
    eta = chart(at, "onl.eta_chart")
    assert [t["meta"] for t in eta["data"]][:3] == ["rho_half", "rho_one", "eta"]
    ok(at.slider(key=op.W["rho"]).set_value(0.3).run())
    assert any("outside (0.5, 1]" in c.value for c in at.caption)
    grid = chart(at, "onl.confusion_chart")
    titles = [a["text"] for a in grid["layout"]["annotations"]]
    assert {"39", "97", "175", "335"} <= set(titles)  # bluebirds' most active workers (all label every image)
    ok(at.select_slider(key=op.W["buckets"]).set_value(4).run())
    assert _run(at).model.buckets == 4
    titles = [a["text"] for a in chart(at, "onl.confusion_chart")["layout"]["annotations"]]
    assert sum(t.startswith("bucket ") for t in titles) == 4
    ok(at.toggle(key=op.W["worker_steps"]).set_value(True).run())
    assert _run(at).model.worker_steps
    ok(at.selectbox(key=op.W["method"]).set_value("online_one_coin").run())
    assert _run(at).model.info.key == "online_one_coin"
    click(at, "onl.stepper.run")
    assert _run(at).converged and not _run(at).violations


def test_hashing_sweep_draws_accuracy_against_b():
    at = _page()
    assert chart(at, "onl.bucket_chart") is None
    click(at, "onl.sweep")
    fig = chart(at, "onl.bucket_chart")
    assert fig is not None
    hashed = next(t for t in fig["data"] if t["meta"] == "hashed")
    x = arr(hashed["x"])
    assert x[0] == 1 and x[-1] >= 39 and len(arr(hashed["y"])) == len(x)


def test_sources_rte_and_simulation():
    at = _page()
    ok(at.selectbox(key=op.W_SOURCE).set_value("rte").run())
    assert at.session_state["onl.data.id"] == "sample:rte" and _run(at).data.n_items == 800
    ok(at.number_input(key=op.SIM_N).set_value(500).run())
    click(at, "onl.sim.run")
    data = _run(at).data
    assert at.session_state["onl.data.id"].startswith("sim:online:500:") and data.n_items == 500
    click(at, "onl.stepper.step")
    assert _run(at).last.t == 1


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    text = WRAPPER.format(page=str(ROOT / PAGE))
    return wrapper_script(tmp_path_factory.mktemp("onl_upload_app"), text, "onl_wrapper.py")


def test_upload_through_the_one_reader_and_a_bad_file(wrapper):
    at = AppTest.from_file(str(wrapper), default_timeout=TIMEOUT)
    at.session_state["test.upload"] = dict(content=(DATA_DIR / "aliases_strings.csv").read_bytes(), name="a*b_.csv")
    ok(at.run())
    assert at.session_state["onl.data.id"].startswith("upload:")
    assert any(f"Loaded '{safe.md('a*b_.csv')}'" in s.value for s in at.success)  # the name escaped
    click(at, "onl.stepper.run")
    good = at.session_state["onl.data.id"]
    at.session_state["test.upload"] = dict(content=(DATA_DIR / "empty.csv").read_bytes(), name="empty.csv")
    at.run()
    assert not at.exception and len(at.error) == 1
    assert at.session_state["onl.data.id"] == good


def test_state_survives_switching_pages():
    at = ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run())
    ok(at.switch_page(PAGE).run())
    click(at, "onl.stepper.step")
    run = _run(at)
    ok(at.switch_page(STEP_PAGE).run())
    click(at, "stepper.step")
    ok(at.switch_page(PAGE).run())
    assert _run(at) is run and run.index == 2


# ---------------------------------------------------------------------------- the lecturer's audit
# unlike helpers.trace: None when no trace has that meta, and no check that only one has it
def _trace(fig: dict, meta: str) -> dict | None:
    return next((t for t in fig["data"] if t.get("meta") == meta), None)


def test_batch_reference_is_the_same_model_from_the_same_start():
    """The orange line is batch EM of the model online EM fits (one-coin when one-coin is chosen, the same B
    buckets, the same prior), from online EM's start: at 0 items both curves are at the same point, and the legend
    and caption say what it is. (It was Dawid-Skene from a majority-vote start whatever the model: -19.6 / 0.76
    against online's -24.5 at 0 items, and one-coin left it unchanged.)"""
    at = _page()
    run = _run(at)
    N = run.data.n_items
    for model, key, start in (("Dawid-Skene", "onl.objective_chart", run.snapshots[0].objective / N),
                                ("Dawid-Skene", "onl.accuracy_chart", run.snapshots[0].accuracy)):  # fmt: skip
        batch = _trace(chart(at, key), "batch")
        assert arr(batch["x"])[0] == 0 and arr(batch["y"])[0] == pytest.approx(start, abs=1e-9)
        assert batch["name"] == f"batch {model} EM, same start"
    ds = arr(_trace(chart(at, "onl.objective_chart"), "batch")["y"])
    assert any("same start" in c.value and "batch Dawid-Skene EM" in c.value for c in at.caption)
    ok(at.selectbox(key=op.W["method"]).set_value("online_one_coin").run())
    run = _run(at)
    fig = chart(at, "onl.objective_chart")
    one = arr(_trace(fig, "batch")["y"])
    assert _trace(fig, "batch")["name"] == "batch one-coin EM, same start"
    assert one[0] == pytest.approx(run.snapshots[0].objective / N, abs=1e-9)
    assert not np.allclose(one[: len(ds)], ds[: len(one)])  # the model changed, so did the orange line
    online = _trace(fig, "online")
    assert arr(online["y"])[0] == pytest.approx(one[0], abs=1e-9)
    ok(at.select_slider(key=op.W["buckets"]).set_value(4).run())
    batch = _trace(chart(at, "onl.objective_chart"), "batch")
    assert batch["name"] == "batch one-coin EM (B = 4), same start"
    assert arr(batch["y"])[0] == pytest.approx(_run(at).snapshots[0].objective / N, abs=1e-9)


def test_step_size_marker_follows_every_step():
    """The stepper's own step-size chart (inside the stepper, which a step reruns) marks the update of the block
    the cursor shows, with its ηₜ, at every step; the settings' chart (outside it, never rerun by a step) shows the
    schedule alone, so nothing there can lag behind the run."""
    at = _page()

    def now() -> tuple[float, float] | None:
        t = _trace(chart(at, "onl.eta_now_chart"), "now")
        return None if t is None else (float(arr(t["x"])[0]), float(arr(t["y"])[0]))

    assert now() is None  # no update yet
    run = _run(at)
    for n in range(1, 9):
        click(at, "onl.stepper.step")
        rec = run.snapshots[run.index]
        assert now() == (n, pytest.approx(rec.block.eta)) and rec.t == n
        assert any(f"ηₜ of this block = {rec.block.eta:.4f}" in c.value for c in at.caption)
        assert _trace(chart(at, "onl.eta_chart"), "now") is None
    click(at, "onl.stepper.e_step")  # the block of update 9, before its update
    assert now() == (9, pytest.approx(run.model.eta(9)))
    click(at, "onl.stepper.back")  # after the M-step of update 8
    assert now() == (8, pytest.approx(run.model.eta(8)))
    click(at, "onl.stepper.back")  # after the E-step of update 8
    assert now() == (8, pytest.approx(run.model.eta(8)))


def test_step_size_marker_after_switching_pages():
    """The audit's case: 3 steps, another page, back, 5 more steps: the marker is at update 8 (ηₜ = 0.1765), not
    left at update 3."""
    at = ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run())
    ok(at.switch_page(PAGE).run())
    for _ in range(3):
        click(at, "onl.stepper.step")
    ok(at.switch_page(STEP_PAGE).run())
    ok(at.switch_page(PAGE).run())
    for _ in range(5):
        click(at, "onl.stepper.step")
    t = _trace(chart(at, "onl.eta_now_chart"), "now")
    assert float(arr(t["x"])[0]) == 8 and float(arr(t["y"])[0]) == pytest.approx(0.1765, abs=5e-5)


def test_sweep_axis_labels_every_tick_and_shows_one_matrix_per_worker():
    at = _page()
    click(at, "onl.sweep")
    fig = chart(at, "onl.bucket_chart")
    x = fig["layout"]["xaxis"]
    assert x["ticktext"] == ["1", "2", "4", "8", "16", "32", "64", "per<br>worker"]
    point = _trace(fig, "per_worker_point")
    assert arr(point["x"])[0] == x["tickvals"][-1] > 64 and point["marker"]["symbol"] == "diamond"
    metas = [t["meta"] for t in fig["data"]]
    assert metas.index("per_worker") > metas.index("batch")  # drawn over batch EM's line


def test_block_table_shows_every_row_and_ui_text_names_its_source():
    """The block table is as tall as its rows (it cut the 8th of 10); the page writes ηₜ, qᵢ, Fᵢ (never η_t,
    q_i, F_i) and names the online-EM source by author and year, never "the blog"."""
    assert op.table_height(10) == op.table_height(op.TABLE_ROWS) == "content"  # every row, whatever its height
    assert op.table_height(op.TABLE_ROWS + 1) == op.table_height(500) == 35 * (op.TABLE_ROWS + 1) + 3
    at = _page()
    click(at, "onl.stepper.e_step")
    texts = [c.value for c in at.caption] + [m.value for m in at.markdown] + [t.label for t in at.tabs]
    texts += [i.value for i in at.info] + [op.INTRO]
    for key in ("onl.objective_chart", "onl.accuracy_chart", "onl.eta_chart", "onl.eta_now_chart"):
        fig = chart(at, key)
        texts += [t.get("name") or "" for t in fig["data"]] + [fig["layout"]["title"]["text"]]
    joined = "\n".join(texts)
    for bad in ("η_t", "q_i", "F_i", "blog's", "the blog ", "online-EM blog post"):
        assert bad not in joined, bad
    assert op.CITE in joined and op.CITE in op.INTRO and [m.value for m in at.markdown].count(op.INTRO) <= 1
