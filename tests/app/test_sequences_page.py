"""The Sequences page under ``streamlit.testing.v1.AppTest``: a cold load on its own simulated dataset, the stepper's
controls, settings that reset the run, simulate / NER / upload as sources, every tab, and the page's state across
page switches (the working dataset of the other pages is never touched).

AppTest cannot drive ``st.file_uploader``: uploads go through :func:`crowdlab.ui.sequences_page.load_upload` (what
the Load button's callback calls) in a small wrapper app, as in test_pages.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.io import safe
from crowdlab.ui import sequences_page as sp
from crowdlab.ui import state
from tests.app.helpers import arr, chart, click, iteration_label, ok, wrapper_script

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "tests" / "data"
PAGE = "pages/6_Sequences.py"
STEP_PAGE = "pages/2_Step_through_EM.py"
TIMEOUT = 30
RUN = "seq.run.obj"
DEFAULT_ID = "sim:seq:50:40:4:10:0.8:10:0"

WRAPPER = """
import runpy
import streamlit as st
from crowdlab.ui import sequences_page

request = st.session_state.pop("test.upload", None)
if request is not None:
    sequences_page.load_upload(**request)
runpy.run_path({page!r}, run_name="__main__")
"""


def _page() -> AppTest:
    return ok(AppTest.from_file(str(ROOT / PAGE), default_timeout=TIMEOUT).run())


def _run(at: AppTest):
    return at.session_state[RUN]


def _tab(at: AppTest, tab: str) -> AppTest:
    at.session_state[sp.OPEN_TAB] = tab  # what the tab bar's on_change callback writes
    return ok(at.run())


def test_cold_load_has_its_own_simulated_dataset_and_leaves_the_working_one():
    at = _page()
    assert at.session_state["seq.data.id"] == DEFAULT_ID
    data = at.session_state["seq.data.obj"]
    assert data.is_sequential and (data.n_sequences, data.n_items, data.n_classes) == (50, 2000, 4)
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"  # the other pages' dataset, untouched
    assert any("sequences: **50**" in m.value for m in at.sidebar.markdown)
    assert any("other pages work on **Bluebirds" in m.value for m in at.sidebar.markdown)
    run = _run(at)
    assert run.model.info.key == "hmm" and run.index == 0
    assert iteration_label(at) == "iteration 0, initialisation"
    assert {b.key: b.disabled for b in at.button if b.key.startswith("seq.stepper.")} == {
        "seq.stepper.e_step": False,
        "seq.stepper.m_step": True,
        "seq.stepper.step": False,
        "seq.stepper.run": False,
        "seq.stepper.back": True,
        "seq.stepper.reset": True,
        "seq.stepper.next": False,
        "seq.stepper.play": False,
    }
    # the strip view: truth, the baselines, the HMM's posterior and its Viterbi path, top-down
    strip = chart(at, "seq.strip_chart")
    heat = next(t for t in strip["data"] if t.get("meta") == "strip")
    assert strip["layout"]["yaxis"]["ticktext"] == [sp.ROW_TRUTH, sp.ROW_MV, sp.ROW_DS, sp.ROW_HMM, sp.ROW_VITERBI]
    assert arr(heat["z"]).shape == (5, 40)
    assert any(t.get("meta") == "mistakes" for t in strip["data"])
    assert chart(at, "seq.stepper.objective_chart") is not None


def test_step_e_m_back_scrub_run_reset_move_the_run():
    at = _page()
    run = _run(at)
    click(at, "seq.stepper.step")
    assert (run.index, run.iteration) == (2, 1) and iteration_label(at) == "iteration 1, after M-step"
    click(at, "seq.stepper.e_step")
    assert run.current.kind == "E" and iteration_label(at) == "iteration 2, after E-step"
    assert at.button(key="seq.stepper.e_step").disabled
    click(at, "seq.stepper.m_step")
    assert (run.index, run.iteration) == (4, 2)
    click(at, "seq.stepper.back")  # one half-step back: after E, M gives "after E"
    assert run.index == 3 and run.current.kind == "E"
    click(at, "seq.stepper.back")
    assert run.index == 2 and len(run.snapshots) == 5
    ok(at.slider(key="seq.stepper.scrub").set_value(3).run())
    assert run.index == 3 and iteration_label(at) == "iteration 2, after E-step"
    click(at, "seq.stepper.run")
    assert run.converged and run.at_end and run.iteration > 5 and not run.violations
    assert at.button(key="seq.stepper.run").disabled
    acc = at.session_state["seq.run.metrics"]["values"]["accuracy"]
    assert len(acc) == len(run.snapshots) and acc[-1] > acc[0] + 0.2  # the HMM beats its majority-vote start
    click(at, "seq.stepper.reset")
    assert len(run.snapshots) == 1 and iteration_label(at) == "iteration 0, initialisation"
    assert at.session_state["seq.run.metrics"] is None or at.session_state["seq.run.metrics"]["n"] == 1


def test_settings_reset_the_run_with_a_notice_and_every_start_works():
    at = _page()
    click(at, "seq.stepper.step")
    old = _run(at)
    for init in ("ds", "moments"):
        ok(at.selectbox(key=sp.W_INIT).set_value(init).run())
        new = _run(at)
        assert (
            new is not old and new.index == 0 and [i.value for i in at.info] == ["Settings changed: the run was reset."]
        )
        click(at, "seq.stepper.step")
        assert not new.violations and new.iteration == 1
        old = new
    ok(at.checkbox(key=sp.W_HARD).check().run())
    assert _run(at).model.hard and _run(at).index == 0
    click(at, "seq.stepper.run")
    assert _run(at).converged and not _run(at).violations  # hard EM never lowers its objective either
    click(at, "seq.stepper.step")  # the notice was shown once
    assert not at.info


def test_every_tab_draws_and_the_comparison_is_computed_once_per_snapshot():
    at = _page()
    click(at, "seq.stepper.run")
    _tab(at, "Transitions")
    spec = chart(at, "seq.transition_chart")
    T = arr(spec["data"][0]["z"])
    np.testing.assert_allclose(T.sum(axis=0), 1.0)  # columns: "from"
    assert spec["layout"]["yaxis"]["autorange"] == "reversed"
    assert spec["layout"]["coloraxis"]["cmin"] == 0 and spec["layout"]["coloraxis"]["cmax"] == 1
    assert chart(at, "seq.transition_ref") is not None
    assert any("‖T − T̂‖₁" in c.value for c in at.caption)
    _tab(at, "Workers")
    assert len(chart(at, "seq.confusion_chart")["data"]) == sp.DEFAULT_WORKERS
    _tab(at, "Comparison")
    table = at.session_state[sp.CURSOR]["table"].set_index("method")
    assert list(table.index) == [
        "Majority vote",
        "i.i.d. Dawid-Skene",
        "HMM-crowd (posterior arg-max)",
        "HMM-crowd (Viterbi)",
    ]
    assert {"accuracy", "macro F", sp.CONFUSION_ERROR, "‖T − T̂‖₁"} <= set(table.columns)
    assert table.loc["HMM-crowd (posterior arg-max)", "macro F"] > table.loc["i.i.d. Dawid-Skene", "macro F"] + 0.05
    assert np.isnan(table.loc["i.i.d. Dawid-Skene", "‖T − T̂‖₁"])
    cached = at.session_state[sp.CURSOR]
    ok(at.run())
    assert at.session_state[sp.CURSOR] is cached  # not recomputed without a move


def test_simulate_then_step():
    at = _page()
    at.slider(key=sp.SIM_S).set_value(20)
    at.slider(key=sp.SIM_K).set_value(3)
    at.slider(key=sp.SIM_LABELS).set_value(3)
    ok(at.run())
    click(at, "seq.sim.run")
    data = at.session_state["seq.data.obj"]
    assert at.session_state["seq.data.id"] == "sim:seq:20:40:3:10:0.8:3:0"
    assert (data.n_sequences, data.n_classes) == (20, 3) and data.n_obs == 20 * 40 * 3
    assert [i.value for i in at.info] == ["Dataset changed: the run was reset."]
    click(at, "seq.stepper.step")
    assert _run(at).data is data and _run(at).iteration == 1


def test_the_ner_sample_loads_and_steps():
    at = _page()
    click(at, "seq.ner.load")
    data = at.session_state["seq.data.obj"]
    assert at.session_state["seq.data.id"] == "sample:ner" and data.n_items == 39_025 and data.n_classes == 9
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"
    click(at, "seq.stepper.step")
    assert _run(at).iteration == 1 and not _run(at).violations
    strip = chart(at, "seq.strip_chart")
    legend = [t["name"] for t in strip["data"] if str(t.get("meta", "")).startswith("legend:")]
    assert legend == list(data.class_names)


@pytest.fixture(scope="module")
def wrapper(tmp_path_factory) -> Path:
    text = WRAPPER.format(page=str(ROOT / PAGE))
    return wrapper_script(tmp_path_factory.mktemp("seq_upload_app"), text, "seq_wrapper.py")


def _upload(wrapper: Path, name: str, gold: str | None = None, at: AppTest | None = None) -> AppTest:
    at = at or AppTest.from_file(str(wrapper), default_timeout=TIMEOUT)
    at.session_state["test.upload"] = dict(
        content=(DATA_DIR / name).read_bytes(),
        gold=None if gold is None else (DATA_DIR / gold).read_bytes(),
        name=name,
        gold_name=gold,
    )
    return at.run()


def test_upload_a_sequence_file_and_a_bad_one(wrapper):
    at = ok(_upload(wrapper, "seq_small.csv", "seq_gold.csv"))
    data = at.session_state["seq.data.obj"]
    assert at.session_state["seq.data.id"].startswith("upload:") and data.n_sequences == 2
    loaded = f"Loaded '{safe.md('seq_small.csv')}' with gold from '{safe.md('seq_gold.csv')}'"  # names escaped
    assert any(loaded in s.value for s in at.success)
    click(at, "seq.stepper.run")
    assert _run(at).data is data and not _run(at).violations
    good = at.session_state["seq.data.id"]
    _upload(wrapper, "seq_no_position.csv", at=at)
    assert not at.exception and len(at.error) == 1 and "position" in at.error[0].value
    assert at.session_state["seq.data.id"] == good
    assert any("This page's dataset is unchanged" in c.value for c in at.caption)


def test_state_survives_switching_pages():
    at = ok(AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run())
    ok(at.switch_page(PAGE).run())
    click(at, "seq.stepper.step")
    click(at, "seq.stepper.e_step")
    at.session_state["seq.view.sequence"] = 3
    ok(at.selectbox(key=sp.W_INIT).set_value("ds").run())
    click(at, "seq.stepper.step")
    run = _run(at)
    ok(at.switch_page(STEP_PAGE).run())
    assert at.session_state[state.RUN].data.name.startswith("Bluebirds")
    click(at, "stepper.step")
    ok(at.switch_page("app.py").run())
    ok(at.switch_page(PAGE).run())
    assert _run(at) is run and run.index == 2
    assert at.selectbox(key=sp.W_INIT).value == "ds"  # restored from the plain key
    assert at.selectbox(key=sp.W_SEQUENCE).value == 3
    assert iteration_label(at) == "iteration 1, after M-step"


def _path(at: AppTest, key: str) -> tuple[int, ...]:
    """Where the widget ``key`` sits in the page's element tree (the delta path its fragment is known by)."""

    def walk(node, path):
        for i, child in getattr(node, "children", {}).items():
            if getattr(child, "key", None) == key:
                return (*path, i)
            found = walk(child, (*path, i))
            if found:
                return found
        return None

    found = walk(at._tree, ())
    assert found, key
    return found


def test_a_step_right_after_simulate_finds_its_stepper():
    """A Step clicked while Simulate's rerun is still running is sent to the stepper's fragment as it was before
    that rerun: the "Dataset changed" notice must not move the stepper (a moved fragment gets a new id, and the
    click was lost with "Couldn't find fragment with id"). The notice then goes with the next action."""
    at = _page()
    before = _path(at, "seq.stepper.step")
    at.slider(key=sp.SIM_S).set_value(20)
    click(at, "seq.sim.run")
    assert [i.value for i in at.info] == ["Dataset changed: the run was reset."]
    assert _path(at, "seq.stepper.step") == before
    click(at, "seq.stepper.step")
    assert _run(at).iteration == 1 and not at.info


def test_play_and_the_shortcuts_drive_the_pages_run():
    at = _page()
    run = _run(at)
    assert at.button(key="seq.stepper.next").proto.shortcut == "right"
    click(at, "seq.stepper.play")
    assert at.session_state["seq.stepper.playing"] and (run.index, run.current.kind) == (1, "E")
    at.session_state["seq.stepper.play_last"] = 0.0
    ok(at.run())
    assert (run.index, run.current.kind) == (2, "M")
    click(at, "seq.stepper.back")  # pauses, one half-step back
    assert not at.session_state["seq.stepper.playing"] and iteration_label(at) == "iteration 1, after E-step"


# ---------------------------------------------------------------------------- the lecturer's audit of this page
def _in_columns(at: AppTest, key: str) -> bool:
    """Whether the chart ``key`` sits inside st.columns within its tab (side by side) or across the tab."""
    from streamlit.testing.v1.element_tree import Column, Tab

    def walk(node, inside):
        for child in getattr(node, "children", {}).values():
            if getattr(child, "type", None) in ("plotly_chart", "bidi_component") and child.proto.id.endswith(
                "-" + key
            ):
                return inside
            found = walk(child, False if isinstance(child, Tab) else inside or isinstance(child, Column))
            if found is not None:
                return found
        return None

    found = walk(at._tree, False)
    assert found is not None, key
    return found


def _captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def _ner(at: AppTest) -> AppTest:
    click(at, "seq.ner.load")
    assert at.session_state["seq.data.id"] == "sample:ner"
    return at


@pytest.mark.parametrize("present", [False, True])
def test_nine_class_transitions_are_stacked_and_written_small_ones_side_by_side(present):
    """Audit (CoNLL NER, both modes): two 9 x 9 maps side by side were unreadable and their rows did not line up
    (one title wrapped). Now a K x K map too narrow at half width goes across the tabs, one above the other, with
    numbers that fit; small maps stay side by side; both always have the same top margin and plot height."""
    at = _page()
    at.session_state["presenter"] = present
    _tab(at, "Transitions")
    small = [chart(at, "seq.transition_chart"), chart(at, "seq.transition_ref")]
    assert _in_columns(at, "seq.transition_chart") and _in_columns(at, "seq.transition_ref")
    _ner(at)
    click(at, "seq.stepper.step")
    assert at.session_state[sp.OPEN_TAB] == "Transitions"
    big = [chart(at, "seq.transition_chart"), chart(at, "seq.transition_ref")]
    assert not _in_columns(at, "seq.transition_chart") and not _in_columns(at, "seq.transition_ref")
    for pair in (small, big):
        assert len({(f["layout"]["margin"]["t"], f["layout"]["height"]) for f in pair}) == 1  # rows line up
        assert all("<br>" not in f["layout"]["title"]["text"] for f in pair)
        for f in pair:
            text = np.asarray(f["data"][0]["text"])
            assert all(len(x) <= 4 for x in text.ravel())
    tags = list(at.session_state["seq.data.obj"].class_names)
    assert big[0]["layout"]["xaxis"]["tickvals"] == tags  # every "from" label shown
    assert big[0]["layout"]["title"]["text"] == "Estimated T̂ after iteration 1"


def test_presenter_workers_numbers_fit_and_nine_tags_leave_room_for_the_titles():
    """Audit (presenter mode): "0.440.160.140.09" in 4 x 4 cells; with CoNLL's 9 tags the upright class labels ran
    into the next row's worker names."""
    at = _page()
    at.session_state["presenter"] = True
    _tab(at, "Workers")
    spec = chart(at, "seq.confusion_chart")
    assert len(spec["data"]) == sp.DEFAULT_WORKERS
    assert all(len(x) <= 3 for t in spec["data"] for x in np.asarray(t["text"]).ravel())  # ".44" at 14 px
    _ner(at)
    spec = chart(at, "seq.confusion_chart")
    layout = spec["layout"]
    assert len(spec["data"]) == 4 and layout["xaxis"]["tickangle"] == -90  # two to a row, labels upright
    plot_h = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    gap = (layout["yaxis"]["domain"][0] - layout["yaxis3"]["domain"][1]) * plot_h
    assert gap >= 0.56 * 14 * len("B-MISC") + 16 + 17
    assert "The 4 most active of 46 workers" in _captions(at)


def test_comparison_says_how_each_fit_stopped_and_whether_the_chain_helps():
    """Audit: the caption said "i.i.d. Dawid-Skene fitted to convergence once (500 iterations)" when that fit hit
    the limit, and "run to convergence for the final comparison" after the run had converged; the page promised
    that the sequence helps, which on CoNLL it does not. The captions now say what happened, with live numbers."""
    at = _page()
    assert sp.WHEN_IT_HELPS in _captions(at) and "CoNLL NER" in sp.WHEN_IT_HELPS
    _tab(at, "Comparison")
    click(at, "seq.stepper.run")
    run = _run(at)
    text = _captions(at)
    assert f"the end of the run, converged after {run.iteration} iterations" in text
    assert "Run to convergence for the final comparison" not in text
    assert "i.i.d. Dawid-Skene fitted once for this dataset: converged after" in text
    assert "the chain helps here" in text
    assert "Traganitis & Giannakis, eq. (37)" in text and "eq. (38)" in text
    click(at, "seq.stepper.back")
    assert "Run to convergence for the final comparison" in _captions(at)
    # CoNLL NER: i.i.d. DS stops at its 500-iteration limit, and a short HMM run at its own
    _ner(at)
    ok(at.number_input(key=sp.W_MAX_ITER).set_value(3).run())
    click(at, "seq.stepper.run")
    assert _run(at).stop_reason == "max_iter"
    text = _captions(at)
    assert "i.i.d. Dawid-Skene fitted once for this dataset: stopped at the 500-iteration limit before converging" in (
        text
    )
    assert "the end of the run, stopped at the 3-iteration limit before converging" in text
    assert "the chain does not help here" in text


def test_no_verdict_on_the_chain_before_the_hmm_has_run():
    """Issue 26: at iteration 0 the page compared an unfitted HMM with converged Dawid-Skene and said "the chain does
    not help here". The verdict now waits until HMM-crowd's run has ended, as Dawid-Skene's has."""
    verdicts = ("the chain helps here", "the chain does not help here", "the chain makes no difference here")
    at = _page()
    for _ in range(2):  # at the start, then after one iteration: numbers, but no verdict
        text = _captions(at)
        assert "Accuracy here: HMM-crowd" in text and "Whether the chain helps shows when" in text
        assert not any(v in text for v in verdicts)
        click(at, "seq.stepper.step")
    click(at, "seq.stepper.run")
    text = _captions(at)
    assert any(v in text for v in verdicts) and "Whether the chain helps shows when" not in text
    click(at, "seq.stepper.back")  # back from the end: the cursor is no longer at the run's end
    assert not any(v in _captions(at) for v in verdicts)


def test_the_open_tab_stays_open_when_a_new_dataset_comes_in():
    """Audit: Simulate sent the page back to the Strip view."""
    at = _page()
    _tab(at, "Workers")
    at.slider(key=sp.SIM_S).set_value(20)
    click(at, "seq.sim.run")
    assert at.session_state["seq.data.id"].startswith("sim:seq:20:")
    assert at.session_state[sp.OPEN_TAB] == "Workers" and at.session_state[sp.W_TAB] == "Workers"
    assert chart(at, "seq.confusion_chart") is not None and chart(at, "seq.strip_chart") is None


def test_one_vocabulary_named_start_and_one_hard_em_curve():
    """Audit: "iteration 2, after M-step" above charts titled "snapshot 4"; the i.i.d. DS start shown as "Another
    model's result"; hard EM drew "objective" and "complete-data objective" as two identical curves, titled
    log p(x, ẑ | θ) while its help said log p(F, ŷ | θ)."""
    at = _page()
    click(at, "seq.stepper.step")
    click(at, "seq.stepper.step")
    assert iteration_label(at) == "iteration 2, after M-step"
    strip = chart(at, "seq.strip_chart")["layout"]["title"]["text"]
    assert "iteration 2, after M-step" in strip and "snapshot" not in strip
    for tab, key in (("Transitions", "seq.transition_chart"), ("Workers", "seq.confusion_chart")):
        _tab(at, tab)
        title = chart(at, key)["layout"]["title"]["text"].replace("<br>", " ")
        assert "after iteration 2" in title and "snapshot" not in title
    ok(at.selectbox(key=sp.W_INIT).set_value("ds").run())
    starts = [c.value for c in at.caption if "snapshot 0" in c.value]
    assert starts and sp.DS_START in starts[0] and "Another model" not in starts[0]
    click(at, "seq.stepper.step")
    click(at, "seq.stepper.reset")
    assert _run(at).start_description == sp.DS_START
    assert "Moment matching (Traganitis & Giannakis, Alg. 2)" in at.selectbox(key=sp.W_INIT).help
    ok(at.checkbox(key=sp.W_HARD).check().run())
    click(at, "seq.stepper.step")
    spec = chart(at, "seq.stepper.objective_chart")
    lines = [t for t in spec["data"] if "lines" in str(t.get("mode", ""))]
    assert len(lines) == 1  # one curve: the bound of hard EM is the same number
    assert "log p(F, ŷ | θ)" in spec["layout"]["title"]["text"] and "log p(F, ŷ | θ)" in sp.HARD_HELP
    assert at.checkbox(key=sp.W_HARD).help == sp.HARD_HELP
