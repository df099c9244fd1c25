"""The Networks page under ``streamlit.testing.v1.AppTest``: a cold load on its own simulated SBM, the stepper's
controls, the E-step and delta settings (each resets the run with a notice), the approximate-E-step notes and the
sweep trace, simulate / image / upload as sources, every tab, and the page's state across page switches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.io import safe
from crowdlab.ui import networks_page as npg
from crowdlab.ui import presenter, state
from tests.app.helpers import arr, chart, click, figures, iteration_label, ok, trace, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
PAGE = "pages/7_Networks.py"
SEQ_PAGE = "pages/6_Sequences.py"
TIMEOUT = 30
RUN = "net.run.obj"
RESET = "Settings changed: the run was reset."

WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import networks_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    networks_page.load_upload(**request)
runpy.run_path({page!r}, run_name="__main__")
"""
LABELS = b"item,worker,label\na,w1,x\na,w2,x\nb,w1,x\nb,w2,y\nc,w1,y\nc,w2,y\nd,w1,y\nd,w2,x\n"
EDGES = b"source,target\na,b\nb,c\nc,d\n"
GOLD = b"item,label\na,x\nd,y\n"


def _page() -> AppTest:
    return ok(AppTest.from_file(str(ROOT / PAGE), default_timeout=TIMEOUT).run())


def _run(at: AppTest):
    return at.session_state[RUN]


def test_cold_load_draws_the_sbm_and_says_the_e_step_is_approximate():
    at = _page()
    assert at.session_state["net.data.id"] == "sim:sbm:1000:4:10:5:0.05:0"
    data = at.session_state["net.data.obj"]
    assert data.graph is not None and data.n_items == 1000 and data.n_workers == 10
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"
    run = _run(at)
    assert run.model.info.key == "mrf" and run.model.method == "icm" and run.model.delta_for(data) == 10
    assert at.slider(key=npg.W_DELTA).value == 10.0 and at.slider(key=npg.W_DELTA).max == 30.0
    notes = [i.value for i in at.info]
    assert any("approximate" in n and "not guaranteed monotone" in n and "J(ŷ, Γ)" in n for n in notes)
    graph = chart(at, "net.graph_chart")
    classes = [t for t in graph["data"] if str(t.get("meta", "")).startswith("class:")]
    assert len(classes) == 4 and sum(len(arr(t["x"], float)) for t in classes) == 1000
    assert "wrong" in {t.get("meta") for t in graph["data"]}
    assert trace(graph, "edges")
    assert chart(at, "net.trace_chart") is None  # no E-step yet: a sentence, not an empty chart
    assert any(c.value.startswith("No E-step yet") for c in at.caption)
    caption = " ".join(c.value for c in at.caption)
    assert "opacity = the posterior's max q" in caption and "force-directed layout" in caption
    objective = chart(at, "net.stepper.objective_chart")
    assert "ICM labels" in objective["layout"]["title"]["text"].replace("<br>", " ")  # wrapped to fit


def test_step_e_m_back_scrub_run_reset_and_the_sweep_trace():
    at = _page()
    run = _run(at)
    click(at, "net.stepper.e_step")
    assert run.current.kind == "E" and iteration_label(at) == "iteration 1, after E-step"
    spec = chart(at, "net.trace_chart")
    sweeps = trace(spec, "trace")
    post = run.current.posterior
    y = arr(sweeps["y"], float)
    assert y.size == len(post.trace) == post.sweeps + 1 and y[0] == 0 and np.all(np.diff(y) >= -1e-9)
    assert spec["layout"]["xaxis"]["dtick"] >= 1 and spec["layout"]["xaxis"]["tick0"] == 0  # whole sweeps
    # the stepper's words: "iteration 1", not "snapshot 1"
    assert any("of the E-step of iteration 1," in c.value for c in at.caption)
    title = chart(at, "net.graph_chart")["layout"]["title"]["text"].replace("<br>", " ")
    assert title == "Nodes coloured by the EM posterior: iteration 1, after E-step"
    click(at, "net.stepper.m_step")
    click(at, "net.stepper.step")
    assert (run.index, run.iteration) == (4, 2)
    click(at, "net.stepper.back")  # one half-step back: after E, M gives "after E"
    assert run.index == 3 and run.current.kind == "E"
    click(at, "net.stepper.back")
    assert run.index == 2
    ok(at.slider(key="net.stepper.scrub").set_value(1).run())
    assert run.index == 1 and iteration_label(at) == "iteration 1, after E-step"
    click(at, "net.stepper.run")
    assert run.at_end and (run.converged or run.iteration == run.max_iter)
    acc = at.session_state["net.run.metrics"]["values"]["accuracy"]
    assert acc[-1] > 0.95 and acc[-1] > acc[0] + 0.2
    click(at, "net.stepper.reset")
    assert len(run.snapshots) == 1 and iteration_label(at) == "iteration 0, initialisation"


def test_e_step_and_delta_changes_reset_the_run_with_a_notice():
    at = _page()
    click(at, "net.stepper.step")
    old = _run(at)
    ok(at.radio(key=npg.W_ESTEP).set_value("mean_field").run())
    new = _run(at)
    assert new is not old and new.model.method == "mean_field" and new.index == 0
    assert RESET in [i.value for i in at.info]
    assert any("free energy L(q, Γ)" in i.value for i in at.info)
    click(at, "net.stepper.run")
    assert not new.violations  # mean-field EM never lowers F: the engine checks it
    ok(at.slider(key=npg.W_DELTA).set_value(0.0).run())
    run = _run(at)
    assert run is not new and run.model.delta_for(run.data) == 0.0 and RESET in [i.value for i in at.info]
    ok(at.selectbox(key=npg.W_INIT).set_value("moments").run())
    assert _run(at).start_description.startswith("Moment matching") and _run(at).model.delta == 0.0
    click(at, "net.stepper.step")
    assert RESET not in [i.value for i in at.info]


def test_tabs_colouring_and_comparison():
    at = _page()
    click(at, "net.stepper.run")
    ok(at.radio(key=npg.W_COLOUR).set_value(npg.COLOUR_BY[1]).run())
    assert "Dawid-Skene" in chart(at, "net.graph_chart")["layout"]["title"]["text"]
    at.session_state["net.view.tab"] = "Comparison"
    ok(at.run())
    table = at.session_state[npg.CURSOR]["table"].set_index("method")
    assert list(table.index)[:2] == ["Majority vote", "i.i.d. Dawid-Skene"]
    mrf = table.iloc[2]
    # the graph helps (Traganitis & Giannakis Sec. 6.2)
    assert mrf["macro F"] > table.loc["i.i.d. Dawid-Skene", "macro F"] + 0.1
    assert npg.CONFUSION_ERROR in table.columns and "Traganitis & Giannakis" in npg.CONFUSION_ERROR
    at.session_state["net.view.tab"] = "Workers"
    ok(at.run())
    assert len(chart(at, "net.confusion_chart")["data"]) == npg.DEFAULT_WORKERS


def test_simulate_and_image_sources_reset_delta_and_step():
    at = _page()
    ok(at.slider(key=npg.W_DELTA).set_value(25.0).run())
    at.slider(key=npg.SIM_N).set_value(300)
    at.slider(key=npg.SIM_M).set_value(6)
    ok(at.run())
    click(at, "net.sim.run")
    data = at.session_state["net.data.obj"]
    assert data.n_items == 300 and data.n_workers == 6
    assert "Dataset changed: the run was reset." in [i.value for i in at.info]
    assert at.slider(key=npg.W_DELTA).value == 6.0 and at.slider(key=npg.W_DELTA).max == 18.0  # back to M
    click(at, "net.stepper.step")
    click(at, "net.img.run")
    data = at.session_state["net.data.obj"]
    assert data.n_items == npg.IMAGE_SHAPE[0] * npg.IMAGE_SHAPE[1] and data.class_names == ("background", "disc", "bar")
    click(at, "net.stepper.run")
    graph = chart(at, "net.graph_chart")
    xs = np.concatenate([arr(t["x"], float) for t in graph["data"] if str(t.get("meta", "")).startswith("class:")])
    assert set(np.unique(xs)) == set(range(npg.IMAGE_SHAPE[1]))  # the pixel grid, not a spectral layout
    acc = at.session_state["net.run.metrics"]["values"]["accuracy"]
    assert acc[-1] > acc[0]


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    text = WRAPPER.format(page=str(ROOT / PAGE))
    return wrapper_script(tmp_path_factory.mktemp("net_upload_app"), text, "net_wrapper.py")


def test_upload_labels_and_an_edge_list_and_a_bad_edge_list(wrapper):
    at = AppTest.from_file(str(wrapper), default_timeout=TIMEOUT)
    at.session_state["test.upload"] = dict(labels=LABELS, edges=EDGES, gold=GOLD, name="lab.csv", gold_name="g.csv")
    ok(at.run())
    data = at.session_state["net.data.obj"]
    assert data.n_items == 4 and data.graph.nnz == 6 and data.has_gold
    loaded = f"Loaded '{safe.md('lab.csv')}' and '{safe.md('edges.csv')}': 4 nodes, 3 edges"  # names escaped
    assert any(loaded in s.value for s in at.success)
    click(at, "net.stepper.run")
    assert _run(at).data is data
    good = at.session_state["net.data.id"]
    at.session_state["test.upload"] = dict(labels=LABELS, edges=b"source,target\na,zz\n", name="lab.csv")
    at.run()
    assert not at.exception and len(at.error) == 1 and "no labels" in at.error[0].value
    assert at.session_state["net.data.id"] == good


def test_state_survives_switching_pages():
    at = ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run())
    ok(at.switch_page(PAGE).run())
    ok(at.radio(key=npg.W_ESTEP).set_value("mean_field").run())
    ok(at.slider(key=npg.W_DELTA).set_value(5.0).run())
    click(at, "net.stepper.step")
    click(at, "net.stepper.e_step")
    run = _run(at)
    ok(at.switch_page(SEQ_PAGE).run())
    click(at, "seq.stepper.step")
    ok(at.switch_page("app.py").run())
    ok(at.switch_page(PAGE).run())
    assert _run(at) is run and run.index == 3
    assert at.radio(key=npg.W_ESTEP).value == "mean_field" and at.slider(key=npg.W_DELTA).value == 5.0
    assert iteration_label(at) == "iteration 2, after E-step"
    assert at.session_state["seq.run.obj"].index == 2  # the Sequences page kept its run too


def test_per_edge_delta_from_labels_resets_and_runs():
    at = AppTest.from_file(str(ROOT / "pages" / "7_Networks.py"), default_timeout=30)
    at.run()
    assert not at.exception
    at.checkbox(key="net.delta_labels").check().run()
    assert not at.exception
    assert at.session_state["net.delta_labels"] is True
    at.button(key="net.stepper.step").click().run()
    assert not at.exception and not at.error
    assert at.session_state["net.delta_labels"] is True  # survives the rerun
    caption = " ".join(str(c.value) for c in at.caption)
    assert "δ =" in caption or figures(at)


def test_play_and_the_shortcuts_drive_the_pages_run_and_a_settings_notice_goes_with_the_next_step():
    at = _page()
    run = _run(at)
    assert {k: at.button(key=f"net.stepper.{k}").proto.shortcut for k in ("next", "back", "e_step")} == {
        "next": "right",
        "back": "left",
        "e_step": "e",
    }
    click(at, "net.stepper.play")
    assert (run.index, run.current.kind) == (1, "E")
    at.session_state["net.stepper.play_last"] = 0.0
    ok(at.run())
    assert (run.index, run.current.kind) == (2, "M")
    click(at, "net.stepper.play")  # Pause
    assert not at.session_state["net.stepper.playing"]
    ok(at.radio(key=npg.W_ESTEP).set_value("mean_field").run())
    assert "Settings changed: the run was reset." in [i.value for i in at.info]
    click(at, "net.stepper.next")
    assert "Settings changed: the run was reset." not in [i.value for i in at.info]


def _order(at: AppTest) -> list[str]:
    """Keys of the widgets and charts, in the order the page draws them (depth first)."""
    out = []

    def walk(node) -> None:
        kind = getattr(node, "type", None)
        if kind == "plotly_chart" or (kind == "bidi_component" and node.proto.component_name == "crowdlab_live_chart"):
            out.append(node.proto.id.rsplit("-", 1)[-1])
        elif getattr(node, "key", None):
            out.append(node.key)
        for k in sorted(getattr(node, "children", None) or {}):
            walk(node.children[k])

    walk(at._tree)
    return out


def _captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def test_a_graph_of_5000_nodes_is_drawn_readably_and_its_counts_agree():
    """The audit: over 2,000 nodes the drawing collapsed to about five dots, and the legend counted 55 wrong nodes
    where the caption said 83."""
    at = _page()
    ok(at.slider(key=npg.SIM_N).set_value(5000).run())
    click(at, "net.sim.run")
    click(at, "net.stepper.step")
    data, run = at.session_state["net.data.obj"], _run(at)
    assert data.n_items == 5000
    graph = chart(at, "net.graph_chart")
    classes = [t for t in graph["data"] if str(t.get("meta", "")).startswith("class:")]
    pos = np.stack(
        [np.concatenate([arr(t["x"], float) for t in classes]), np.concatenate([arr(t["y"], float) for t in classes])],
        axis=1,
    )
    assert len(pos) == npg.MAX_DRAWN
    d = np.sqrt(((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    near = d.min(axis=1) / np.ptp(pos, axis=0).max()
    assert np.median(near) > 1e-3 and np.mean(near < 1e-4) < 0.02  # not five dots
    assert len(arr(trace(graph, "edges")["x"], float)) / 3 > npg.MAX_DRAWN  # the drawn nodes keep their edges
    total = int(((np.argmax(run.current.q, axis=1) != data.gold) & (data.gold >= 0)).sum())
    drawn = len(arr(trace(graph, "wrong")["x"], float))
    assert 0 < drawn < total
    assert trace(graph, "wrong")["name"] == f"wrong: {drawn:,} drawn of {total:,}"
    assert f"({total:,} of 5,000 nodes; {drawn:,} of them among the 2,000 drawn)" in _captions(at)
    assert "2,000 are drawn" in _captions(at) and "random 2,000" not in _captions(at)


def test_presenter_mode_puts_the_graph_on_the_first_screen():
    """Dataset and settings fold into one expander, and the graph has no title and comes before its colour choice,
    so it starts high enough to be seen whole at 1024 x 768 (the browser test measures it)."""
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=TIMEOUT)
    at.session_state[presenter.KEY] = True
    ok(at.run())
    labels = [e.label for e in at.expander]
    assert labels[0].startswith("Settings and dataset: ICM E-step, δ = 10, start from majority vote")
    assert not any(label.startswith("Dataset") for label in labels)
    order = _order(at)
    assert order.index("net.graph_chart") < order.index(npg.W_COLOUR)
    graph = chart(at, "net.graph_chart")
    assert not graph["layout"].get("title", {}).get("text") and graph["layout"]["height"] <= 440
    ok(at.toggle(key=presenter.W_TOGGLE).set_value(False).run())
    order = _order(at)
    assert order.index(npg.W_COLOUR) < order.index("net.graph_chart")  # the choice above it otherwise
    assert [e.label for e in at.expander][0].startswith("Dataset:")


def test_the_sweeps_are_words_when_there_is_nothing_to_draw_and_opacity_is_noted_only_where_it_varies():
    at = _page()
    click(at, "net.stepper.run")
    run = _run(at)
    trace, index = npg.last_trace(run)
    assert len(trace) == 2  # converged ICM: the last E-step changed nothing in its one sweep
    assert chart(at, "net.trace_chart") is None  # not an empty 0-1 axis
    iteration = run.snapshots[index].iteration + 1
    said = f"The E-step of iteration {iteration} took 1 sweep: J did not change (the labels were already settled)."
    assert said in _captions(at)
    assert "opacity = the posterior's max q" in _captions(at)
    for by in (npg.COLOUR_BY[2], npg.COLOUR_BY[3]):  # majority vote and truth: every node opaque
        ok(at.radio(key=npg.W_COLOUR).set_value(by).run())
        assert "opacity" not in _captions(at), by
    ok(at.radio(key=npg.W_COLOUR).set_value(npg.COLOUR_BY[1]).run())
    assert "opacity = the posterior's max q" in _captions(at)


def test_one_vocabulary_subscripts_and_whose_equations():
    at = _page()
    click(at, "net.stepper.step")
    ok(at.radio(key=npg.W_ESTEP).set_value("mean_field").run())
    click(at, "net.stepper.e_step")
    info = " ".join(i.value for i in at.info)
    assert "Traganitis & Giannakis, Remark 2" in info and "qₙ ∝ exp(log eₙ" in info
    assert "q_n" not in info and "e_n" not in info and "E_q" not in info
    assert at.radio(key=npg.W_ESTEP).options == ["ICM", "Mean field"]
    assert "Traganitis & Giannakis, Alg. 3" in npg.APPROXIMATE["icm"]
    assert "Alg. 3" in at.radio(key=npg.W_ESTEP).help and "Traganitis & Giannakis" in at.radio(key=npg.W_ESTEP).help
    assert at.checkbox(key=npg.W_DELTA_LABELS).label == "δ per edge from the labels: (Mₙ + Mₙ′) / 4"
    # the charts say where the cursor is as the stepper's heading does
    assert iteration_label(at) == "iteration 1, after E-step"
    ours = " ".join(c.value for c in at.caption if not c.value.startswith("snapshot "))  # less the stepper's count
    assert "of the E-step of iteration 1," in ours and "snapshot" not in ours
    at.session_state["net.view.tab"] = "Workers"
    ok(at.run())
    title = chart(at, "net.confusion_chart")["layout"]["title"]["text"].replace("<br>", " ")
    assert "iteration 1, after E-step" in title and "snapshot" not in title


def test_numbered_workers_are_named_workers(wrapper):
    labels = b"item,worker,label\na,39,x\na,97,x\nb,39,x\nb,97,y\nc,39,y\nc,97,y\nd,39,y\nd,97,x\n"
    at = AppTest.from_file(str(wrapper), default_timeout=TIMEOUT)
    at.session_state["test.upload"] = dict(labels=labels, edges=EDGES, gold=GOLD, name="lab.csv")
    ok(at.run())
    at.session_state["net.view.tab"] = "Workers"
    ok(at.run())
    spec = chart(at, "net.confusion_chart")
    names = [a["text"] for a in spec["layout"]["annotations"]]
    assert "worker 39" in names and "worker 97" in names and "39" not in names
    assert npg.worker_title("w3") == "w3" and npg.worker_title("7") == "worker 7"


def test_the_baseline_is_fitted_once_per_graph_across_sessions(monkeypatch):
    calls = []
    fit = npg.baselines_fit
    monkeypatch.setattr(npg, "baselines_fit", lambda data: calls.append(1) or fit(data))
    npg.baselines_cached.clear()
    _page()
    _page()  # a second session (a revisit in a new tab): the cached fit
    assert len(calls) == 1
