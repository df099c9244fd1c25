"""The Lessons page under ``streamlit.testing.v1.AppTest``: every lesson from its first step to its last, pressing
the step's action (which must really move the run) and Next each time; Previous, skipping an action, the free
controls and coming back to the step's start; the working dataset of the other pages is never touched. The arrow
keys belong to Previous / Next (none to the free controls), the free controls stay open, a double click on Next
moves one step, and the sequence strip's majority row is the run's own start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.io.metrics import accuracy
from crowdlab.models.majority import majority_labels
from crowdlab.teaching import lessons as L
from crowdlab.ui import lab, state
from crowdlab.ui import lesson_page as lp
from tests.app.helpers import arr, chart, figures, trace

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "0_Lessons.py")
TIMEOUT = 30


@pytest.fixture(autouse=True)
def no_hold(monkeypatch):
    """AppTest clicks as soon as a step is drawn: no double-click guard (the test of the guard sets its own)."""
    monkeypatch.setattr(lp, "HOLD_S", 0.0)


# unlike helpers.ok: checks for an exception only, not for st.error
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
    following = lp.next_lesson(key)
    if following is None:
        assert at.button(key=lp.W_NEXT).disabled
        return
    # the last step offers the next lesson: its Next says so and goes there, at its first step
    assert at.button(key=lp.W_NEXT).label == "Next lesson" and not at.button(key=lp.W_NEXT).disabled
    assert L.LESSONS[following].title in " ".join(c.value for c in at.caption)
    at.session_state[lp.SHOWN] = (key, len(lesson.steps) - 1, 0.0)  # on screen long enough (HOLD_S)
    _ok(at.button(key=lp.W_NEXT).click().run())
    assert at.session_state[lp.KEY] == following and at.session_state[lp.STEP] == 0
    assert at.subheader[0].value == L.LESSONS[following].steps[0].title


def test_trust_lesson_spam_chart_shows_the_run_and_the_counts_the_outcome_quotes():
    """Lesson 4, step 4 (MACE converged): the chart's dots are the run's P(spamming) = 1 - theta_j, one row per
    true worker type, and the spammers' row counts exactly the flagged spammers the outcome quotes."""
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.segmented_control(key=lp.W_PICK).set_value("trust").run())
    i = [s.action for s in L.TRUST_LESSON.steps].index("switch_model:mace") + 1
    for _ in range(i):
        _ok(at.button(key=lp.W_ACTION).click().run())
        _ok(at.button(key=lp.W_NEXT).click().run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # MACE to convergence
    assert at.session_state[lp.STEP] == i and L.TRUST_LESSON.steps[i].chart == "spam"
    run = at.session_state[lp.RUN]
    assert run.model.info.key == "mace" and run.converged
    spec = chart(at, "lesson.chart.spam", unique=True)
    dots = trace(spec, "spam")
    assert arr(dots["x"], float) == pytest.approx(run.params.spamming)
    f = L.facts(run)
    ticks = spec["layout"]["yaxis"]["ticktext"]
    assert f"spammer<br>{f['caught']} of {f['n_spammers']} flagged" in ticks
    assert f"**{f['caught']} of the {f['n_spammers']}**" in at.session_state[lp.DONE]
    assert spec["layout"]["height"] == lp.CHART_HEIGHT
    assert not at.error


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
    assert len(figures(at)) == 1


def test_item_means_axes_stay_put_from_step_to_step():
    """The μ_i scatter of the scores lesson: the same axes at the start and after the M-step (taken from the data,
    holding every iterate's means), and dots large enough for a projector."""
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # start: the plain averages
    start = chart(at, "lesson.chart.item_means")
    _ok(at.button(key=lp.W_NEXT).click().run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # E-step
    _ok(at.button(key=lp.W_NEXT).click().run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # M-step
    after = chart(at, "lesson.chart.item_means")
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


def test_arrow_keys_are_the_lessons_previous_and_next_and_the_free_controls_take_no_keys():
    """A presentation clicker sends → and ←: they must move the lesson, never the hidden free controls' run."""
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # the run exists: the free controls are drawn
    shortcuts = {b.key: b.proto.shortcut.lower() for b in at.button if b.proto.shortcut}
    assert shortcuts == {lp.W_PREV: "left", lp.W_NEXT: "right"}
    free = [b for b in at.button if b.key.startswith(lp.SLOT.widgets + ".")]
    assert {b.key for b in free} >= {lp.SLOT.key(name) for name in lab.SHORTCUTS}
    assert not any(b.proto.shortcut for b in free)
    assert not any(b.proto.help.endswith(("(←)", "(→)", "(E)")) for b in free)  # no key named in a tooltip
    assert state.MAIN.shortcuts  # the Step page's stepper keeps its keys


def test_free_controls_stay_open_while_they_are_used():
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.button(key=lp.W_ACTION).click().run())
    _ok(at.button(key=lp.W_NEXT).click().run())
    assert not at.expander[0].proto.expanded  # closed until opened
    at.session_state[lp.FREE_OPEN] = True  # what opening it does (on_free)
    _ok(at.run())
    assert at.expander[0].proto.expanded
    _ok(at.button(key=lp.SLOT.key("e_step")).click().run())  # a warning appears above it: it stays open
    assert at.warning and at.expander[0].proto.expanded
    _ok(at.button(key=lp.SLOT.key("back")).click().run())
    _ok(at.button(key=lp.W_REPLAY).click().run())
    _ok(at.button(key=lp.W_NEXT).click().run())
    assert at.expander[0].proto.expanded and at.session_state[lp.STEP] == 2


def test_on_free_remembers_the_expander(monkeypatch):
    fake = {lp.W_FREE: True}
    monkeypatch.setattr(lp.st, "session_state", fake)
    lp.on_free()
    assert fake[lp.FREE_OPEN] is True
    fake[lp.W_FREE] = False
    lp.on_free()
    assert fake[lp.FREE_OPEN] is False


def test_a_double_click_on_next_moves_one_step(monkeypatch):
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    for _ in range(6):
        _ok(at.button(key=lp.W_NEXT).click().run())
    _ok(at.button(key=lp.W_ACTION).click().run())
    assert at.session_state[lp.STEP] == 6 and at.session_state[lp.DONE]  # step 7, its action done
    monkeypatch.setattr(lp, "HOLD_S", 60.0)
    assert at.session_state[lp.SHOWN][:2] == ("em", 6)
    at.session_state[lp.SHOWN] = ("em", 6, float("-inf"))  # step 7 has been on screen for long
    _ok(at.button(key=lp.W_NEXT).click().run())  # the first click of a double click
    assert at.session_state[lp.STEP] == 7
    _ok(at.button(key=lp.W_NEXT).click().run())  # the second click, just after step 8 was drawn: nothing
    assert at.session_state[lp.STEP] == 7
    _ok(at.button(key=lp.W_PREV).click().run())
    assert at.session_state[lp.STEP] == 7
    monkeypatch.setattr(lp, "HOLD_S", 0.0)
    at.session_state[lp.SHOWN] = None  # step 8 not drawn in full yet (a run cut short by the second click)
    _ok(at.button(key=lp.W_NEXT).click().run())
    assert at.session_state[lp.STEP] == 7
    _ok(at.button(key=lp.W_NEXT).click().run())  # drawn in full now: Next moves on
    assert at.session_state[lp.STEP] == 8


def test_step_callbacks_act_only_on_the_step_they_were_drawn_for(monkeypatch):
    fake = {lp.KEY: "em", lp.STEP: 3, lp.SHOWN: ("em", 3, 0.0), lp.DONE: "done", lp.MARK: None}
    monkeypatch.setattr(lp.st, "session_state", fake)
    lp.on_next("em", 2)  # a click on the Next of step 3, drawn before the lesson moved on
    lp.on_prev("em", 2)
    lp.on_next("risk", 3)
    assert fake[lp.STEP] == 3
    lp.on_next("em", 3)
    assert fake[lp.STEP] == 4


def test_sequence_strip_majority_row_is_the_runs_start_and_the_text_quotes_its_accuracy():
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.segmented_control(key=lp.W_PICK).set_value("dependent").run())
    _ok(at.button(key=lp.W_ACTION).click().run())
    run = at.session_state[lp.RUN]
    d = run.data
    lo, hi = L.showcase_sequence()
    spec = chart(at, "lesson.chart.strip")
    strip = next(t for t in spec["data"] if t["type"] == "heatmap")
    names = spec["layout"]["yaxis"]["ticktext"]
    assert L.MAJORITY_ROW in names
    row = strip["z"][names.index(L.MAJORITY_ROW)]
    start = run.labels(run.snapshots[0])
    assert row == start[lo:hi].tolist()  # the row is the run's snapshot 0 (the old hard-vote row was not)
    assert row != majority_labels(d)[lo:hi].tolist()
    acc = accuracy(start, d.gold)
    assert f"**{acc:.3f}**" in at.session_state[lp.DONE] and L.MAJORITY_ROW in at.session_state[lp.DONE]
    assert f"{acc:.3f}" != f"{accuracy(majority_labels(d), d.gold):.3f}"  # the hard vote's figure would differ
    _ok(at.button(key=lp.W_NEXT).click().run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # Dawid-Skene to convergence: the same start row, quoted again
    spec = chart(at, "lesson.chart.strip")
    strip = next(t for t in spec["data"] if t["type"] == "heatmap")
    assert strip["z"][spec["layout"]["yaxis"]["ticktext"].index(L.MAJORITY_ROW)] == row
    assert f"started from: {acc:.3f}" in at.session_state[lp.DONE]


def test_risk_lesson_charts_draw_em_start_path_and_estimate_and_no_maximum_on_a_flat_curve():
    """Error rates without labels: the flat log-likelihood (p = 1/2) had a dot marking a maximum at θ = 0 (the grid's
    arg-max); EM's start (0.6) was never drawn; after "Run EM" the Fisher chart did not show where EM went."""
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.segmented_control(key=lp.W_PICK).set_value("risk").run())
    _ok(at.button(key=lp.W_ACTION).click().run())  # step 1: a skewed p, EM's start
    spec = chart(at, "lesson.chart.loglik", unique=True)
    assert arr(trace(spec, "em:start")["x"], float) == pytest.approx([L.RISK_START])
    assert trace(spec, "mle:" + spec["data"][0]["meta"].split(":", 1)[1]) is not None  # a real maximum
    for _ in range(2):  # step 3: p = 1/2, the flat curve
        _ok(at.button(key=lp.W_NEXT).click().run())
        _ok(at.button(key=lp.W_ACTION).click().run())
    assert at.session_state[lp.STEP] == 2
    spec = chart(at, "lesson.chart.loglik", unique=True)
    assert not any(str(t.get("meta", "")).startswith("mle:") for t in spec["data"])  # no maximum where there is none
    assert arr(trace(spec, "em:start")["x"], float) == pytest.approx([L.RISK_START])
    for _ in range(3):  # step 6: the weak classifier, EM run
        _ok(at.button(key=lp.W_NEXT).click().run())
        _ok(at.button(key=lp.W_ACTION).click().run())
    assert at.session_state[lp.STEP] == 5
    run = at.session_state[lp.RUN]
    spec = chart(at, "lesson.chart.fisher", unique=True)
    assert arr(trace(spec, "estimate")["x"], float) == pytest.approx([L.facts(run)["theta"]])


def _to_step(at: AppTest, key: str, i: int) -> AppTest:
    """Lesson ``key`` at step ``i`` with every earlier action done, this step's action not yet."""
    if key != "em":
        _ok(at.segmented_control(key=lp.W_PICK).set_value(key).run())
    for _ in range(i):
        if not at.button(key=lp.W_ACTION).disabled:
            _ok(at.button(key=lp.W_ACTION).click().run())
        _ok(at.button(key=lp.W_NEXT).click().run())
    assert at.session_state[lp.STEP] == i
    return at


def test_no_tooltip_on_previous_or_next_it_would_cover_the_steps_button():
    """Issue 37: on a lesson's last step the 'Next lesson' tooltip opened over the step's button and took its
    click; Previous / Next sit just under that button, so none of them has a tooltip."""
    at = _to_step(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run(), "em", len(L.EM_LESSON.steps) - 1)
    assert at.button(key=lp.W_NEXT).label == "Next lesson"
    for key in (lp.W_PREV, lp.W_NEXT):
        assert not at.button(key=key).proto.help, key


def test_copy_lesson_last_step_folds_its_details_under_a_short_outcome():
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    last = len(L.COPY_LESSON.steps) - 1
    at = _to_step(at, "copy", last)
    assert not any(e.label == "The numbers behind it" for e in at.expander)
    _ok(at.button(key=lp.W_ACTION).click().run())
    fold = [e for e in at.expander if e.label == "The numbers behind it"]
    assert len(fold) == 1 and "Kish" in fold[0].markdown[0].value and "κ" in fold[0].markdown[0].value
    assert "Kish" not in at.success[0].value and len(at.success[0].value.split()) <= 60
    _ok(at.button(key=lp.W_PREV).click().run())  # another step: no fold left behind
    assert not any(e.label == "The numbers behind it" for e in at.expander)


def test_risk_lesson_em_step_draws_theta_climbing_the_likelihood_to_the_closed_form():
    """Issue 37: 'EM climbs to the closed form' drew the objective against the iteration; it draws EM's θ path on
    the log-likelihood curve, from its start to the estimate at eq. (9)'s value, climbing."""
    at = _to_step(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run(), "risk", 1)
    _ok(at.button(key=lp.W_ACTION).click().run())
    spec = chart(at, "lesson.chart.loglik", unique=True)
    pts = [trace(spec, m) for m in ("em:start", "em:path", "em:estimate")]
    x = np.concatenate([arr(t["x"], float) for t in pts])
    y = np.concatenate([arr(t["y"], float) for t in pts])
    assert x[0] == pytest.approx(L.RISK_START) and x.size > 3
    assert np.all(np.diff(y) >= -1e-9) and y[-1] > y[0]  # up the curve
    assert x[-1] == pytest.approx(L.reference("risk")["skewed"]["eq9"], abs=1e-3)


def test_free_controls_run_to_convergence_is_plain_em_as_taught():
    """The lessons teach plain EM: their Run to convergence does every half-step (the Step page accelerates)."""
    at = _ok(AppTest.from_file(PAGE, default_timeout=TIMEOUT).run())
    _ok(at.button(key=lp.W_ACTION).click().run())
    _ok(at.button(key=lp.SLOT.key("run")).click().run())
    run = at.session_state[lp.RUN]
    assert run.at_end and run.acceleration is None
    assert not any(s.accelerated for s in run.snapshots) and len(run.snapshots) == 2 * run.last.iteration + 1
