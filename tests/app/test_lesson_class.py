"""Ask the class during a lesson (crowdlab.ui.lesson_class) under AppTest: with a live class session open in this
browser, the first lesson's Dawid-Skene M-step pushes a question computed from the lesson's own run to the phones
(the Join page), the phones predict, and the step shows the class's predictions beside what happened, with the
right answer the run itself then gives; leaving a step withdraws an open question; without a class session the
lesson is as it was (a one-line hint outside presenter mode)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from crowdlab.classroom import predict
from crowdlab.classroom.store import get_store
from crowdlab.io import safe
from crowdlab.teaching import lessons as L
from crowdlab.ui import class_page as cp
from crowdlab.ui import lesson_class as lc
from crowdlab.ui import lesson_page as lp
from crowdlab.ui import presenter
from tests.app.helpers import chart, click, goto, ok

ROOT = Path(__file__).resolve().parents[2]
HOME = str(ROOT / "app.py")
LESSONS = str(ROOT / "pages" / "0_Lessons.py")
JOIN = str(ROOT / "pages" / "12_Join.py")
E_STEP = [s.action for s in L.EM_LESSON.steps].index("e_step", 4)  # the bluebirds' E-step (Dawid-Skene)
M_STEP = E_STEP + 1


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("CROWDLAB_CLASS_DB", raising=False)
    monkeypatch.setenv("CROWDLAB_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(lp, "HOLD_S", 0.0)  # AppTest clicks as soon as a step is drawn
    return tmp_path


def _lecturer_in_lessons(students: int = 3) -> tuple[AppTest, list[str]]:
    """The lecturer starts a class on the Class page, ``students`` join from their phones, and the lecturer goes
    to the Lessons page in the same browser session; returns the session and the students' tokens."""
    at = goto(ok(AppTest.from_file(HOME, default_timeout=30).run()), "pages/11_Class.py")
    click(at, "class.start")
    click(at, "class.key_seen")
    code = get_store().session(at.session_state[cp.SID]).join_code
    tokens = [get_store().join(code, f"Phone {k}", client=f"10.0.0.{k}", browser=f"browser-{k:02d}-xxxxxxxxxxxx")[1]
              for k in range(students)]  # fmt: skip
    return goto(at, "pages/0_Lessons.py"), tokens


def _walk_to(at: AppTest, step: int) -> AppTest:
    """From the first lesson's first step to ``step``, every action done on the way."""
    while at.session_state[lp.STEP] < step:
        click(at, lp.W_ACTION)
        click(at, lp.W_NEXT)
    return at


def _phone(token: str) -> AppTest:
    phone = AppTest.from_file(JOIN, default_timeout=30)
    phone.query_params["t"] = token
    return ok(phone.run())


def _question(at: AppTest) -> dict | None:
    return get_store().question(at.session_state[cp.SID], at.session_state[cp.KEY])


def test_a_lesson_asks_the_class_before_the_m_step_and_shows_the_predictions_beside_it():
    at, tokens = _lecturer_in_lessons()
    _walk_to(at, M_STEP)
    run = at.session_state[lp.RUN]
    assert run.next_kind == "M" and predict.model_name(run) == "Dawid-Skene"
    assert at.button(key="lesson.ask.trust") and at.button(key="lesson.ask.objective")
    mark = (run.index, len(run.snapshots))
    click(at, "lesson.ask.trust")

    qid, q = at.session_state[lc.ASKED][:2]
    assert (run.index, len(run.snapshots)) == mark  # computed ahead on a copy: the lesson's run did not move
    assert q.prompt == "Which worker will Dawid-Skene trust most after the next M-step?"
    assert q.at == run.index and q.target == run.index + 1 and q.answer in q.options
    cur = _question(at)
    assert cur["id"] == qid and cur["status"] == "open" and cur["answer"] == q.answer
    assert any("runs the step and shows the answers" in c.value for c in at.caption)
    assert chart(at, lc.CHART_KEY) is not None  # the Class page's predictions element, under the lesson's chart

    # the phones: one on the Join page, two through the store
    phone = _phone(tokens[0])
    assert any(safe.md(q.prompt) in m.value for m in phone.markdown)
    click(phone, "student.predict.0")
    for k, token in enumerate(tokens[1:], start=1):
        get_store().predict(token, qid, q.options[k % len(q.options)])
    ok(at.run())
    assert any("3 of 3 students have predicted" in c.value for c in at.caption)

    click(at, lp.W_ACTION)  # the M-step runs: the answer is revealed on the phones
    run = at.session_state[lp.RUN]
    assert run.index == q.target and run.current.kind == "M"
    trust = predict.trust(run, run.index)
    truth = str(run.data.worker_names[int(np.argmax(trust))])  # who the run itself now trusts most
    assert q.answer == truth
    assert _question(at)["status"] == "revealed"
    said = " ".join(s.value for s in at.success)
    assert f"Most trusted: **{safe.md(truth)}**" in said
    right = sum(q.options[k % len(q.options)] == truth for k in range(3))
    assert f"{right} of 3 predicted it" in said
    assert at.session_state[lp.DONE] in [s.value for s in at.success]  # the lesson's own outcome, as before
    bars = chart(at, lc.CHART_KEY)
    assert f"✓ {truth}" in [str(x) for x in bars["data"][0]["x"]]
    ok(phone.run())
    mine = q.options[0]
    shown = [s.value for s in phone.success] + [w.value for w in phone.warning]
    assert any(("right!" if mine == truth else "the answer was") in v for v in shown), shown

    click(at, lp.W_NEXT)  # the next step: the revealed answer stays on the phones, the lesson moves on
    assert lc.ASKED not in at.session_state and chart(at, lc.CHART_KEY) is None
    assert _question(at)["status"] == "revealed"


def test_the_e_step_question_is_about_the_lessons_run_and_leaving_withdraws_it():
    at, tokens = _lecturer_in_lessons(1)
    _walk_to(at, E_STEP)
    assert at.button(key="lesson.ask.flip") and at.button(key="lesson.ask.objective")
    assert not [b for b in at.button if b.key == "lesson.ask.trust"]  # an E-step does not change the trust
    click(at, "lesson.ask.flip")
    q = at.session_state[lc.ASKED][1]
    assert q.kind == "flip" and q.prompt.startswith("Will item ") and q.target == q.at + 1
    click(at, lp.W_ACTION)
    run = at.session_state[lp.RUN]
    n = list(map(str, run.data.item_names)).index(q.detail["item"])
    flipped = run.labels(run.snapshots[q.at])[n] != run.labels(run.current)[n]
    assert q.answer == predict.FLIP_OPTIONS[0 if flipped else 1]
    assert any(f"Item {safe.md(q.detail['item'])} was" in s.value for s in at.success)

    click(at, lp.W_PREV)  # back one step and forward again: the E-step's start; ask, then leave it unanswered
    click(at, lp.W_NEXT)
    assert at.session_state[lp.STEP] == E_STEP and at.session_state[lp.DONE] is None
    click(at, "lesson.ask.objective")
    assert _question(at)["status"] == "open" and at.session_state[lc.ASKED][1].answer == "stay"
    click(at, lp.W_NEXT)
    assert _question(at) is None  # withdrawn from the phones
    assert lc.ASKED not in at.session_state


def test_without_a_class_session_the_lesson_is_as_before():
    at = ok(AppTest.from_file(LESSONS, default_timeout=30).run())
    _walk_to(at, M_STEP)
    assert not [b for b in at.button if str(b.key).startswith("lesson.ask.")]
    assert any("Class" in c.value and "predict" in c.value for c in at.caption)  # the one-line hint
    assert chart(at, lc.CHART_KEY) is None
    click(at, lp.W_ACTION)
    assert [s.value for s in at.success] == [at.session_state[lp.DONE]]
    at.session_state[presenter.KEY] = True  # on the projector: no hint
    click(at, lp.W_PREV)
    assert not any("Class" in c.value and "predict" in c.value for c in at.caption)


def test_with_a_class_session_steps_that_are_not_one_half_step_offer_no_question():
    at, _ = _lecturer_in_lessons(1)
    for i, step in enumerate(L.EM_LESSON.steps[: M_STEP + 2]):
        asks = [b.key for b in at.button if str(b.key).startswith("lesson.ask.")]
        half = step.action in ("e_step", "m_step") and i >= E_STEP
        assert bool(asks) == half, (i, step.action, asks)  # the scorers' half-steps are not Dawid-Skene's
        click(at, lp.W_ACTION)
        click(at, lp.W_NEXT)


def test_with_the_free_controls_open_the_question_and_its_predictions_are_drawn_too():
    at, tokens = _lecturer_in_lessons(1)
    _walk_to(at, M_STEP)
    at.session_state[lp.FREE_OPEN] = True  # the picture is the stepper's body (a fragment) now
    ok(at.run())
    click(at, "lesson.ask.objective")
    qid, q = at.session_state[lc.ASKED][:2]
    get_store().predict(tokens[0], qid, "up")
    ok(at.run())
    assert chart(at, lc.CHART_KEY) is not None
    assert any("1 of 1 students have predicted" in c.value for c in at.caption)
    click(at, lp.W_ACTION)
    assert q.answer == "up" and any("The objective went from" in s.value for s in at.success)
    assert any("1 of 1 predicted it" in s.value for s in at.success)


def test_leaving_the_class_session_hides_the_lessons_question():
    at, _ = _lecturer_in_lessons(1)
    _walk_to(at, M_STEP)
    click(at, "lesson.ask.trust")
    at.session_state[cp.SID] = None  # the lecturer left the session (the Class page's Leave)
    ok(at.run())
    assert chart(at, lc.CHART_KEY) is None and not [b for b in at.button if str(b.key).startswith("lesson.ask.")]
    click(at, lp.W_ACTION)
    assert [s.value for s in at.success] == [at.session_state[lp.DONE]]
