"""Ask the class during a lesson: predict, then reveal, on the lesson's own run.

When a live class session is open in this browser (the lecturer started or resumed it on the Class page: its id and
key are in this browser session, or in the cookie that brings the lecturer back after a reload,
:func:`crowdlab.ui.class_page.resume_from_cookie`), a lesson step whose action is one half-step (``e_step`` /
``m_step``) of a Dawid-Skene or MACE run offers "Ask the class": a question about that half-step
(:mod:`crowdlab.classroom.predict`; its right answer is read off :func:`~crowdlab.classroom.predict.ahead`, a copy of
the run one half-step further, so the lesson's charts show nothing of the step before it runs) goes to every phone
through the class's store, on the Join page the students already have. The step's own button runs the step and
reveals the answer on the phones; under the lesson's chart, the Class page's predictions element
(:func:`crowdlab.ui.class_page.predictions_live`) shows the class's predictions beside what happened (the step's
outcome sentence moves under Previous / Next meanwhile). Leaving the
step withdraws a question still open (a revealed one stays on the phones until the next question).

Without a class session none of this is drawn; outside presenter mode one caption says how to open one.

Plain keys: :data:`ASKED` (question id, its Question, lesson key, step index) and :data:`ERROR`. Widget keys:
``lesson.ask.<kind>``. Store writes happen in callbacks only (the lesson page's, which call :func:`ask`,
:func:`after_step` and :func:`leave`).
"""

from __future__ import annotations

import streamlit as st

from crowdlab.classroom import predict
from crowdlab.classroom.store import ClassError, get_store
from crowdlab.engines.run import Run
from crowdlab.io import safe
from crowdlab.ui import class_page, presenter

ASKED = "lesson.asked"  # (question id, its predict.Question, lesson key, step index), or absent
ERROR = "lesson.class_error"  # a refusal of the store, shown once at the ask buttons
KINDS = {"e_step": ("flip", "objective"), "m_step": ("trust", "objective")}  # what each half-step can answer
LABELS = {
    "trust": "Ask: who is trusted most?",
    "flip": "Ask: will an item flip?",
    "objective": "Ask: objective up or down?",
}
WHO = "worker"  # what a lesson's prompt calls a worker of its crowd (the Class page says "student")
CHART_KEY = "lesson.predictions"
BARS_HEIGHT = 180  # the predictions' bars under the lesson's chart (the Class page's are 320 px)
SHRINK = 40  # a lesson's curve is this much lower while a question of its step is out: all on the first screen
HINT = (
    "Open a live class session on the **Class** page (in this browser) and the class can predict this half-step "
    "on their phones."
)


def session() -> tuple[str, str] | None:
    """The live class session this browser's lecturer is in, as (id, key), or None (none, it ended, or the class
    database cannot be reached: the lesson goes on without the class)."""
    try:
        if not st.session_state.get(class_page.SID):
            class_page.resume_from_cookie()  # a reload on the Lessons page: the Class page's cookie brings it back
        sid, key = st.session_state.get(class_page.SID), st.session_state.get(class_page.KEY)
        if not sid or not key:
            return None
        get_store().check_key(sid, key)
    except ClassError:
        return None
    return sid, key


def half_step(action: str, run: Run | None) -> bool:
    """Whether the step's ``action`` is one half-step of a run the class can be asked about."""
    verb = action.split(":", 1)[0]
    return verb in KINDS and predict.supports(run) and run.next_kind == verb[0].upper()


def asked(here: tuple[str, int]) -> tuple | None:
    """The question asked at lesson step ``here`` (lesson key, step index), or None (also once the lecturer has
    left the class session: nothing of it is drawn then)."""
    got = st.session_state.get(ASKED)
    if not got or tuple(got[2:4]) != tuple(here) or not st.session_state.get(class_page.SID):
        return None
    return got


def ask(run: Run, kind: str, here: tuple[str, int]) -> None:
    """Push the ``kind`` question about the run's next half-step to every phone (a callback's work)."""
    sess = session()
    if sess is None:
        st.session_state[ERROR] = "The class session has ended: open one on the Class page."
        return
    q = predict.question(predict.ahead(run), run.data, run.index, kind, WHO)
    if q is None:
        st.session_state[ERROR] = "The run ends before that step: there is nothing left to predict."
        return
    try:
        qid = get_store().ask(*sess, q.kind, q.prompt, q.options, q.answer)
    except ClassError as exc:
        st.session_state[ERROR] = str(exc)
        return
    st.session_state[ASKED] = (qid, q, *here)


def after_step(here: tuple[str, int], at: int, run: Run) -> None:
    """The step's action ran from snapshot ``at`` (a callback's work): when a question about it is out, reveal its
    answer on the phones (the step is the one it asked about), else withdraw it."""
    got = asked(here)
    if got is None:
        return
    qid, q = got[0], got[1]
    sess = session()
    if sess is None:
        return
    try:
        if at == q.at and run.index == q.target:
            get_store().reveal_question(*sess, qid)
        else:  # the run was moved since: the answer would not be this step's
            st.session_state.pop(ASKED, None)
            get_store().withdraw_question(*sess)
    except ClassError as exc:
        st.session_state[ERROR] = str(exc)


def leave() -> None:
    """The lesson leaves the step (a callback's work): a question still open there is withdrawn from the phones."""
    got = st.session_state.pop(ASKED, None)
    if not got:
        return
    sid, key = st.session_state.get(class_page.SID), st.session_state.get(class_page.KEY)
    try:
        cur = get_store().question(sid, key) if sid and key else None
        if cur is not None and cur["id"] == got[0] and cur["status"] == "open":
            get_store().withdraw_question(sid, key)
    except ClassError:  # the session ended meanwhile: nothing left on the phones
        pass


def controls(here: tuple[str, int], action: str, run: Run | None, done: bool, on_ask, button: str) -> None:
    """Before the step's button: "Ask the class" (one button per question this half-step answers), or, once asked,
    what the step's button will do. Nothing at other steps; without a class session, a hint (not on the projector).
    ``on_ask(kind, key, i)``: the lesson page's callback (it checks the step, then calls :func:`ask`)."""
    if done or not half_step(action, run):
        return
    if session() is None:
        if not presenter.is_on():
            st.caption(HINT)
        return
    error = st.session_state.pop(ERROR, None)
    if error:
        st.error(safe.md(error))
    if asked(here):
        st.caption(f"The question is on the phones: **{safe.md(button)}** runs the step and shows the answers.")
        return
    kinds = KINDS[action.split(":", 1)[0]]
    for col, kind in zip(st.columns(len(kinds)), kinds, strict=True):
        col.button(LABELS[kind], key=f"lesson.ask.{kind}", on_click=on_ask, args=(kind, *here), width="stretch")


def predictions(here: tuple[str, int]) -> None:
    """The class's predictions for the question of step ``here`` (the Class page's element), under the chart."""
    if asked(here):
        class_page.predictions_live(ASKED, CHART_KEY, BARS_HEIGHT, side=True)
