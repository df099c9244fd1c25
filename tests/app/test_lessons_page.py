"""The Lessons page under ``streamlit.testing.v1.AppTest``: every lesson from its first step to its last, pressing
the step's action (which must really move the run) and Next each time; Previous, skipping an action, the free
controls and coming back to the step's start; the working dataset of the other pages is never touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from crowdlab import lessons as L
from crowdlab.ui import lesson_page as lp
from crowdlab.ui import state

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "0_Lessons.py")
TIMEOUT = 30


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.message for e in at.exception]
    return at


def _mark(at: AppTest):
    run = at.session_state[lp.RUN] if lp.RUN in at.session_state else None
    if run is None:
        return None
    return (at.session_state[lp.RUN_ID], run.index, run.current.kind, len(run.snapshots), run.current.objective)


def test_cold_start_is_the_first_lesson_at_its_first_step_with_no_run():
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    assert at.session_state[lp.KEY] == "em" and at.session_state[lp.STEP] == 0
    assert at.session_state[lp.RUN] is None
    assert at.button(key=lp.W_PREV).disabled and not at.button(key=lp.W_ACTION).disabled
    assert at.subheader[0].value == L.EM_LESSON.steps[0].title
    assert len(at.latex) == 1 and "Uniform" in at.latex[0].value
    assert at.session_state[state.DATA_ID] == "sample:bluebirds"  # the frame's working dataset, untouched
    sidebar = " ".join(m.value for m in at.sidebar.markdown)
    assert "simulated scores" in sidebar and "Bluebirds" in sidebar  # the lesson's data, and the working set named


@pytest.mark.parametrize("key", list(L.LESSONS))
def test_every_lesson_first_to_last_step_action_then_next(key):
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    if key != "em":
        _ok(at.segmented_control(key=lp.W_PICK).set_value(key).run())
    lesson = L.LESSONS[key]
    assert at.session_state[lp.KEY] == key and at.session_state[lp.STEP] == 0
    for i, step in enumerate(lesson.steps):
        assert at.session_state[lp.STEP] == i
        assert at.subheader[0].value == step.title
        assert at.button(key=lp.W_ACTION).label == step.button
        before = _mark(at)
        _ok(at.button(key=lp.W_ACTION).click().run())
        after = _mark(at)
        assert after is not None and after != before, (key, i, step.action)
        verb = step.action.split(":")[0]
        if verb in ("start", "restart_from", "switch_model"):
            assert before is None or after[0] == before[0] + 1  # a new run in the slot
        if verb in ("e_step", "m_step"):
            assert after[2] == verb[0].upper() and after[1] == before[1] + 1
        assert at.session_state[lp.DONE] and [s.value for s in at.success] == [at.session_state[lp.DONE]]
        assert at.button(key=lp.W_ACTION).disabled  # done once
        assert "{a[" not in at.session_state[lp.DONE] and "nan" not in at.session_state[lp.DONE]
        if i + 1 < len(lesson.steps):
            _ok(at.button(key=lp.W_NEXT).click().run())
    assert at.button(key=lp.W_NEXT).disabled


def test_previous_replays_the_earlier_state_and_next_without_the_action_does_it():
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.button(key=lp.W_NEXT).click().run())  # skip the start: arriving at step 2 starts the run
    run = at.session_state[lp.RUN]
    assert at.session_state[lp.STEP] == 1 and run is not None and run.index == 0 and run.next_kind == "E"
    _ok(at.button(key=lp.W_ACTION).click().run())
    assert at.session_state[lp.RUN].current.kind == "E"
    _ok(at.button(key=lp.W_NEXT).click().run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # M-step
    assert at.session_state[lp.RUN].current.kind == "M"
    _ok(at.button(key=lp.W_PREV).click().run())
    run = at.session_state[lp.RUN]
    assert at.session_state[lp.STEP] == 1 and run.index == 0 and at.session_state[lp.DONE] is None
    assert not at.success


def test_free_controls_move_the_run_and_back_to_the_step_start_restores_it():
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.button(key=lp.W_ACTION).click().run())
    _ok(at.button(key=lp.W_NEXT).click().run())  # step 2: the E-step
    _ok(at.button(key=lp.SLOT.key("e_step")).click().run())  # the Step page's E-step button, on the lesson's run
    assert at.session_state[lp.RUN].current.kind == "E"
    assert at.warning and at.button(key=lp.W_ACTION).disabled  # the E-step no longer applies
    _ok(at.button(key=lp.W_REPLAY).click().run())
    run = at.session_state[lp.RUN]
    assert run.index == 0 and run.next_kind == "E" and not at.warning
    assert not at.button(key=lp.W_ACTION).disabled


def test_switching_lessons_starts_the_new_one_and_state_survives_a_rerun():
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.button(key=lp.W_ACTION).click().run())
    _ok(at.segmented_control(key=lp.W_PICK).set_value("risk").run())
    assert at.session_state[lp.KEY] == "risk" and at.session_state[lp.STEP] == 0
    assert at.session_state[lp.RUN] is None
    _ok(at.button(key=lp.W_ACTION).click().run())
    run = at.session_state[lp.RUN]
    _ok(at.run())
    assert at.session_state[lp.RUN] is run and at.session_state[lp.DONE]
    assert len(at.get("plotly_chart")) == 1


def _chart(at: AppTest, key: str) -> dict | None:
    found = [c for c in at.get("plotly_chart") if c.proto.id.endswith("-" + key)]
    return json.loads(found[0].proto.spec) if found else None


def test_item_means_axes_stay_put_from_step_to_step():
    """The μ_i scatter of the scores lesson: the same axes at the start and after the M-step (taken from the data,
    holding every iterate's means), and dots large enough for a projector."""
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # start: the plain averages
    start = _chart(at, "lesson.chart.item_means")
    _ok(at.button(key=lp.W_NEXT).click().run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # E-step
    _ok(at.button(key=lp.W_NEXT).click().run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # M-step
    after = _chart(at, "lesson.chart.item_means")
    assert start is not None and after is not None
    for axis in ("xaxis", "yaxis"):
        assert start["layout"][axis]["range"] == after["layout"][axis]["range"]
    run = at.session_state[lp.RUN]
    assert run.current.kind == "M"
    lo, hi = start["layout"]["yaxis"]["range"]
    for snap in run.snapshots:
        assert lo <= snap.params.mu.min() and snap.params.mu.max() <= hi  # every iterate inside the fixed axes
    items = next(t for t in after["data"] if t.get("meta") == "items")
    assert items["marker"]["size"] >= 7
