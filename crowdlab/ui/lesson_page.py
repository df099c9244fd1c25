"""The Lessons page: a guided lesson told one step at a time on a live EM run (:mod:`crowdlab.teaching.lessons`).

Each step shows its narration, the formula of the action about to run, ONE button that does exactly that action
on the lesson's run, the outcome with the run's own numbers, and the chart of its effect; Previous / Next move
through the lesson (and the keys → / ←, what a presentation clicker sends). The run lives in a
:class:`crowdlab.ui.lab.RunSlot` (:data:`SLOT`), so the Step page's controls work on it too: the free controls under
the lesson are the one stepper component (:func:`lab.stepper`), without its keyboard shortcuts (the arrows belong to
the lesson), in an expander that stays open once opened.

Plain keys (state survives a page switch): ``lesson.key``, ``lesson.step``, ``lesson.done`` (the outcome text once
the step's action ran), ``lesson.details`` (its details, shown behind a fold while ``lesson.done`` is set),
``lesson.mark`` (where the run stood after the lesson last moved it), ``lesson.free_open``
(whether the free controls are open), ``lesson.shown`` (the last step drawn in full, chart included, and when it
first was), and the slot's ``lesson.run.obj`` / ``.id`` / ``.metrics`` / ``.pending``. Widget keys:
``lesson.pick``, ``lesson.action``, ``lesson.prev``, ``lesson.next``, ``lesson.replay``, ``lesson.free``,
``lesson.stepper.*``, ``lesson.chart.*``. Every change happens in a callback. The step buttons' callbacks carry the
lesson and step they were drawn for and do nothing at another step; Previous and Next also wait until the step
they leave was drawn in full and has been on screen :data:`HOLD_S`, so a double click (or a clicker's double
press) moves one step, not two.

With a live class session open in this browser, a half-step of a Dawid-Skene or MACE run (the first lesson's
E-step and M-step on the bluebirds) offers "Ask the class" before its button: predict, then reveal, on the lesson's
own run (:mod:`crowdlab.ui.lesson_class`).
"""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from crowdlab import plots
from crowdlab.engines.run import Run
from crowdlab.plots import dependent as dplots
from crowdlab.plots import models as mplots
from crowdlab.plots import risk as rplots
from crowdlab.teaching import lessons
from crowdlab.ui import lab, lesson_class, presenter
from crowdlab.ui.live_chart import REVISION, live_chart, preload

KEY, STEP, DONE, MARK = "lesson.key", "lesson.step", "lesson.done", "lesson.mark"
DETAILS = "lesson.details"  # the step's details (behind a fold under its outcome), filled when its action ran
SHOWN, FREE_OPEN = "lesson.shown", "lesson.free_open"
RUN, RUN_ID, METRICS, PENDING = "lesson.run.obj", "lesson.run.id", "lesson.run.metrics", "lesson.run.pending"
W_PICK, W_ACTION, W_PREV, W_NEXT, W_REPLAY, W_FREE = (
    "lesson.pick",
    "lesson.action",
    "lesson.prev",
    "lesson.next",
    "lesson.replay",
    "lesson.free",
)
# the lesson's Previous / Next take the stepper's arrow keys (a presentation clicker sends → and ←); the free
# controls below the lesson take no keys at all (SLOT has shortcuts=False), so a key never moves a hidden run
PREV_KEY, NEXT_KEY = lab.SHORTCUTS["back"], lab.SHORTCUTS["next"]
DEFAULT = "em"
CHART_HEIGHT = 320  # with its outcome under it, whole on the first screen at 1024 x 768 (340 left some 2 px under)
# the picture column's width at the narrowest (1024 px with the sidebar open): its titles wrap by it (in the
# stepper's narrow curve column, 31 characters, they had left half of this column blank)
CHART_PX = 330
OUTCOME_KEY = "lesson_outcome"  # the container of the step's outcome (CSS class st-key-lesson_outcome)
TEXT_KEY = "lesson_text"  # the container of the step's words (its CSS class: st-key-lesson_text)
# a display formula in the text column (under half the page) is set a little smaller, so that the widest (the Potts
# E-step) is whole at 1024 px; KaTeX never wraps a display formula, and its box cut it
TEXT_CSS = "<style>.st-key-lesson_text .katex-display { font-size: 0.86em; }</style>"
HOLD_S = 0.4  # Previous / Next do nothing this long after a step was first drawn: a double click moves one step


def get_run() -> Run | None:
    return st.session_state.get(RUN)


SLOT = lab.RunSlot(RUN, RUN_ID, METRICS, PENDING, "lesson.stepper", get_run, shortcuts=False, accelerate=False)


# ---------------------------------------------------------------------------- state
def current() -> tuple[lessons.Lesson, int]:
    """The lesson and step index (a cold start: the first lesson, step 1, no run yet)."""
    key = st.session_state.get(KEY)
    if key not in lessons.LESSONS:
        key = DEFAULT
        _goto(key, 0)
    lesson = lessons.LESSONS[key]
    i = int(np.clip(st.session_state.get(STEP, 0), 0, len(lesson.steps) - 1))
    return lesson, i


def _mark(run: Run | None) -> tuple | None:
    """Where a run stands: moving it with the free controls changes this."""
    return None if run is None else (id(run), run.index, len(run.snapshots))


def _set_run(run: Run | None) -> None:
    if run is not st.session_state.get(RUN):
        st.session_state[RUN_ID] = st.session_state.get(RUN_ID, 0) + 1
        st.session_state[METRICS] = None
    st.session_state[RUN] = run
    st.session_state[PENDING] = False
    st.session_state[MARK] = _mark(run)


def _goto(key: str, i: int) -> None:
    """Arrive at step ``i`` of lesson ``key`` with the run every earlier action leads to."""
    lesson = lessons.LESSONS[key]
    lesson_class.leave()  # a question still open at the step the lesson leaves goes off the phones
    st.session_state[KEY] = key
    st.session_state[STEP] = i
    st.session_state[DONE] = None
    _set_run(lessons.prepare(lesson, i))


def lesson_data():
    """The dataset the sidebar summarises: the live run's, or before the first start the one it will load."""
    lesson, i = current()
    run = get_run()
    if run is not None:
        return run.data
    verb, _, arg = lesson.steps[i].action.partition(":")
    return lessons.SETUPS[arg].data() if verb == "start" else None


def moved() -> bool:
    """Whether the run was moved with the free controls since the lesson last moved it."""
    return _mark(get_run()) != st.session_state.get(MARK)


# ---------------------------------------------------------------------------- callbacks
def on_pick() -> None:
    key = st.session_state.get(W_PICK)
    if key in lessons.LESSONS and key != st.session_state.get(KEY):
        _goto(key, 0)


def _at(key: str, i: int) -> bool:
    """Whether the lesson still stands at step ``i`` of lesson ``key`` (the step a button was drawn for): a second
    click that arrives before the page was drawn again finds the lesson elsewhere and does nothing."""
    lesson, here = current()
    return lesson.key == key and here == i


def on_action(key: str, i: int) -> None:
    """Do the step's action on the live run; keep the outcome sentence with the numbers it produced."""
    if not _at(key, i):
        return
    lesson = lessons.LESSONS[key]
    step = lesson.steps[i]
    run = get_run()
    if st.session_state.get(DONE) is not None or not lessons.applicable(run, step.action):
        return
    before, at = lessons.facts(run), None if run is None else run.index
    new = lessons.apply(run, step.action)
    _set_run(new)
    if at is not None:
        lesson_class.after_step((key, i), at, new)  # a question about this half-step: its answer on the phones
    after, ref = lessons.facts(new), lessons.reference(lesson.key)
    st.session_state[DONE] = lessons.fill(step.outcome, before, after, ref)
    st.session_state[DETAILS] = lessons.fill(step.details, before, after, ref) if step.details else None


def _shown(key: str, i: int) -> bool:
    """Whether step ``i`` of lesson ``key`` is where the lesson stands, was drawn in full, and has been on screen
    for :data:`HOLD_S`: the second click of a double click on Previous / Next does nothing, whether it arrives while
    the step the first click led to is still being drawn (the old button still on screen) or just after."""
    shown = st.session_state.get(SHOWN)
    if not _at(key, i) or not shown or tuple(shown[:2]) != (key, i):
        return False
    return time.monotonic() - shown[2] >= HOLD_S


def on_next(key: str, i: int) -> None:
    """The next step; when this step's action has not run (or the run was moved), arrive by replaying."""
    if not _shown(key, i) or i + 1 >= len(lessons.LESSONS[key].steps):
        return
    if st.session_state.get(DONE) is not None and not moved():
        lesson_class.leave()
        st.session_state[STEP] = i + 1
        st.session_state[DONE] = None
        return
    _goto(key, i + 1)


def on_prev(key: str, i: int) -> None:
    if _shown(key, i) and i > 0:
        _goto(key, i - 1)


def on_replay(key: str, i: int) -> None:
    if _at(key, i):
        _goto(key, i)


def on_ask(kind: str, key: str, i: int) -> None:
    """Ask the class what the step's half-step will do (its answer computed from the run), before it runs."""
    if _at(key, i) and st.session_state.get(DONE) is None and get_run() is not None:
        lesson_class.ask(get_run(), kind, (key, i))


def on_free() -> None:
    """The free controls' expander was opened or closed: remember it (it stays open while they are used)."""
    st.session_state[FREE_OPEN] = bool(st.session_state.get(W_FREE))


# ---------------------------------------------------------------------------- the page
def lesson_page() -> None:
    """Lesson picker, the step (narration, formula, action, outcome, chart), Previous / Next, free controls."""
    lab.do_pending(SLOT)  # a move asked for by the free controls first, so the text above them follows the run
    if not presenter.is_on():  # the projector needs the room: the lecturer knows this
        st.caption("One button per step does what the text describes, on a live run (the lesson keeps its own data).")
    lesson, i = current()
    st.session_state[W_PICK] = lesson.key
    st.segmented_control(
        "Lesson",
        list(lessons.LESSONS),
        format_func=lambda k: lessons.short_title(lessons.LESSONS[k]),
        key=W_PICK,
        on_change=on_pick,
        required=True,
        label_visibility="collapsed",
    )
    n = len(lesson.steps)
    step = lesson.steps[i]
    run = get_run()
    ref = lessons.reference(lesson.key)
    st.caption(f"{lesson.title} · **step {i + 1} of {n}**")
    # the text on the left, the chart on the right: the chart is on the first screen at 1024 x 768 whatever the
    # length of the narration (stacked, only 19-88 % of it was, under the narration, formula and outcome)
    # (presenter mode, the projector's full width; with the sidebar open the text column would be too narrow and
    # push the step's button below the first screen, so the normal mode keeps the text above the chart)
    if presenter.is_on():
        text, picture = st.columns([1, 1.15], gap="medium")
    else:
        text, picture = st.container(), st.container()
    st.html(TEXT_CSS)
    with text, st.container(key=TEXT_KEY):
        _text(lesson, i, run, ref)
    fresh = step.action.split(":")[0] in ("start", "switch_model")  # the action brings a new run and model
    # with the free controls open, the picture is the stepper's body: the position line over the chart, and Play's
    # ticks (a fragment that reruns on its own) redraw the chart at each half-step, in place
    free = run is not None and bool(st.session_state.get(FREE_OPEN))
    with picture:
        if free:
            lab.stepper_body(SLOT, lambda r: _picture(step, r, (lesson.key, i)))
        else:
            _picture(step, None if fresh and st.session_state.get(DONE) is None else run, (lesson.key, i))
    _drawn((lesson.key, i))  # drawn in full: Previous / Next may leave it (a run cut short never gets here)
    if run is not None:
        st.session_state[W_FREE] = free  # open until closed, across clicks
        with st.expander("Step freely on this run (the Step page's controls)", key=W_FREE, on_change=on_free):
            # the one stepper of every stepping page (Play, Back, ...), without keys; its body is the picture
            lab.stepper(SLOT, curves=_no_curves, whole_page=True, body=not free)


def _picture(step: lessons.Step, run: Run | None, here: tuple[str, int]) -> None:
    """The step's chart and, under it, its outcome; when the class was asked about the step, the class's
    predictions instead (the outcome goes under Previous / Next, and a curve is a little lower: all of it on the
    first screen at 1024 x 768)."""
    asked = lesson_class.asked(here) is not None
    try:
        chart(step, run, shrink=lesson_class.SHRINK if asked else 0)
    except Exception:
        _drawn(here)  # a chart that fails must not hold Previous / Next
        raise
    if asked:
        lesson_class.predictions(here)
    else:
        _outcome(step, run)


def next_lesson(key: str) -> str | None:
    """The lesson after ``key`` in the picker's order (None after the last)."""
    keys = list(lessons.LESSONS)
    at = keys.index(key)
    return keys[at + 1] if at + 1 < len(keys) else None


def on_next_lesson(key: str, i: int) -> None:
    """The last step's Next: the next lesson, at its first step."""
    following = next_lesson(key)
    if following is not None and _shown(key, i) and i + 1 == len(lessons.LESSONS[key].steps):
        _goto(following, 0)


def _text(lesson: lessons.Lesson, i: int, run: Run | None, ref) -> None:
    """The step's words: title, narration, formula, its one action, Previous / Next, and the outcome."""
    n = len(lesson.steps)
    step = lesson.steps[i]
    st.subheader(step.title)
    st.markdown(lessons.fill(step.narration, lessons.facts(run), {}, ref))
    st.latex(r"\begin{gathered}" + step.formula + r"\end{gathered}")  # "\\" in a formula breaks the line
    done = st.session_state.get(DONE)
    here = (lesson.key, i)  # every step button acts only on the step it was drawn for
    lesson_class.controls(here, step.action, run, done is not None, on_ask, step.button)
    st.button(
        step.button + (" ✓" if done is not None else ""),
        key=W_ACTION,
        on_click=on_action,
        args=here,
        type="primary",
        disabled=done is not None or not lessons.applicable(run, step.action),
        width="stretch",
    )
    c2, c3 = st.columns(2, vertical_alignment="center")
    # no arrow icons: the buttons show their keys, ← and →; no tooltips: one over Previous / Next opens over the
    # step's button just above them and takes its click (the caption below names the next lesson)
    c2.button(
        "Previous", key=W_PREV, on_click=on_prev, args=here, disabled=i == 0, width="stretch", shortcut=PREV_KEY,
    )  # fmt: skip
    following = next_lesson(lesson.key) if i + 1 >= n else None
    if following is None:
        c3.button(
            "Next", key=W_NEXT, on_click=on_next, args=here, disabled=i + 1 >= n, width="stretch",
            shortcut=NEXT_KEY,
        )  # fmt: skip
    else:  # the last step offers the next lesson
        c3.button(
            "Next lesson", key=W_NEXT, on_click=on_next_lesson, args=here, width="stretch", shortcut=NEXT_KEY,
            type="primary" if done is not None else "secondary",
        )  # fmt: skip
    if lesson_class.asked(here):  # the class's predictions take the outcome's place under the chart
        _outcome(step, run)
    if moved():
        st.warning("The run was moved with the controls below since this step began.", icon=":material/info:")
        st.button("Back to this step's start", key=W_REPLAY, on_click=on_replay, args=here)
    if following is not None:
        st.caption(f"Next lesson: **{lessons.LESSONS[following].title}**")


def _outcome(step: lessons.Step, run: Run | None) -> None:
    """What the step's action did, with the run's numbers (under the chart, so both are on the first screen)."""
    done = st.session_state.get(DONE)
    with st.container(key=OUTCOME_KEY):
        if done is not None:
            st.success(done)
            details = st.session_state.get(DETAILS)
            if details:  # what a short outcome leaves out, behind a fold
                with st.expander("The numbers behind it"):
                    st.markdown(details)
        elif not lessons.applicable(run, step.action) and not moved():
            st.info("Nothing to do at this point of the run: press Next.")


def _drawn(here: tuple[str, int]) -> None:
    """Step ``here`` was drawn in full: remember it, with the time it first was (a redraw keeps that time)."""
    shown = st.session_state.get(SHOWN)
    if not shown or tuple(shown[:2]) != here:
        st.session_state[SHOWN] = (*here, time.monotonic())


def _no_curves(run: Run) -> None:
    """The lesson draws its own chart above the free controls."""


# ---------------------------------------------------------------------------- charts
def chart(step: lessons.Step, run: Run | None, shrink: int = 0) -> None:
    """The figure named by ``step.chart``, drawn from the run at its cursor (a new run: new axes); a curve
    ``shrink`` px lower than usual."""
    if run is None:
        st.info(f"Press **{step.button}** to begin.")
        preload()  # plotly.js parsed while the lecturer speaks, not after the click
        return
    token = REVISION.set(str(st.session_state.get(RUN_ID, "")))
    try:
        _chart(step, run, shrink)
    finally:
        REVISION.reset(token)


def _chart(step: lessons.Step, run: Run, shrink: int = 0) -> None:
    name = step.chart
    if name == "objective":
        lab.objective_chart(SLOT, run, height=CHART_HEIGHT - shrink, width_px=CHART_PX)
    elif name == "accuracy":
        lab.metric_chart(SLOT, run, height=CHART_HEIGHT - shrink, width_px=CHART_PX)
    elif name == "objective_gap":  # a late, small rise shown on a log axis of the gap under the curve
        fig = plots.objective_with_gap(
            run.history(), run.index, f"Objective: {run.model.objective_name}", objective_name="objective",
            height=CHART_HEIGHT + 40 - shrink,
        )  # fmt: skip
        live_chart(lab.curve_title(fig, CHART_PX), "lesson.chart.objective_gap")
    else:
        live_chart(FIGURES[name](run), f"lesson.chart.{name}")


def _item_means(run: Run):
    d = run.data
    return plots.item_means_scatter(
        run.params.mu, d.gold, d.item_names, reference_name="true mean", title="Estimated μᵢ against the true means",
        height=CHART_HEIGHT, axis_range=plots.item_means_range(d),
    )  # fmt: skip


def _annotators(run: Run):
    return plots.annotator_bars(run.current.q[:, 1], run.data.worker_names, height=CHART_HEIGHT)


def _confusion(run: Run):
    d = run.data
    acc = run.params.worker_accuracy()
    order = np.argsort(acc)
    show = [int(order[0]), int(order[len(order) // 2]), int(order[-1])]
    return plots.confusion_grid(
        run.params.gamma, d.worker_names, d.class_names, workers=show, cols=3,
        title="Γₘ of the least, a middling and the most accurate worker",
    )  # fmt: skip


def _strip(run: Run):
    """The showcase sentence: the truth, the majority start every run of the lesson begins from (its snapshot 0,
    whose accuracy the lesson quotes) and the run at its cursor."""
    d = run.data
    lo, hi = lessons.showcase_sequence()
    name = "HMM-crowd" if run.model.info.key == "hmm" else "Dawid-Skene"
    rows = {"truth": d.gold[lo:hi], lessons.MAJORITY_ROW: lessons.majority_start(d)[lo:hi], name: run.labels()[lo:hi]}
    return dplots.sequence_strip(
        rows, d.class_names, confidence={name: run.current.q[lo:hi].max(axis=1)},
        title=f"One sequence: the truth, the soft majority vote and {name}, {lab.where(run)}", height=260,
    )  # fmt: skip


def _transitions(run: Run):
    return dplots.transition_heatmap(run.params.T, run.data.class_names, height=CHART_HEIGHT)


def _network(run: Run):
    d = run.data
    pos, edges = lessons.network_layout()
    labels = run.labels()
    return dplots.network_figure(
        pos, edges, labels, run.current.q.max(axis=1), d.class_names, wrong=labels != d.gold, height=420,
        title=f"{'MRF-crowd' if run.model.info.key == 'mrf' else 'Dawid-Skene'}, {lab.where(run)}",
    )  # fmt: skip


def _spam(run: Run):
    """MACE's P(spamming) per worker, one row per true worker type when the simulation's are known."""
    d = run.data
    types = lessons.worker_types(d)
    groups = types if types is not None else ["workers"] * d.n_workers
    return mplots.spam_by_group(
        run.params.spamming, groups, d.worker_names, order=["expert", "novice", "spammer", "workers"],
        height=CHART_HEIGHT, title=f"MACE's P(spamming) = 1 − θⱼ, {lab.where(run)}, by true worker type",
    )  # fmt: skip


def _class_prior(run: Run) -> float:
    return float(run.model.class_prior[0])


def _loglik(run: Run):
    from crowdlab.analysis.risk import symmetric_loglik

    p = _class_prior(run)
    grid = np.linspace(0.0, 1.0, 201)
    curve = symmetric_loglik(grid, run.data.label, [p, 1.0 - p])
    return rplots.loglik_curves(
        grid, {f"n = {run.data.n_items}, p = {p:g}": curve}, theta_true=lessons.RISK_THETA, height=CHART_HEIGHT,
        title="Log-likelihood of the outputs as a function of θ", em_path=_theta_path(run),
    )  # fmt: skip


def _theta(params) -> float | None:
    """One classifier's θ (its accuracy) in a one-coin run's parameters."""
    t = (getattr(params, "extra", None) or {}).get("theta")
    return float(np.ravel(t)[0]) if t is not None and np.size(t) == 1 else None


def _theta_path(run: Run) -> list[float]:
    """EM's θ at its start and after each M-step up to the cursor: the chart draws the start, the path and the
    estimate (it drew neither EM's start nor where EM went)."""
    snaps = run.snapshots[: run.index + 1]
    path = [_theta(s.params) for s in snaps if s.kind in ("init", "M")]
    return [t for t in path if t is not None]


def _fisher(run: Run):
    from crowdlab.analysis.fisher import fisher_symmetric

    th = np.linspace(0.5, 1.0, 101)
    p = np.linspace(0.51, 0.99, 97)
    return rplots.fisher_contour(
        th, p, fisher_symmetric(th[None, :], p[:, None]), current=(lessons.RISK_THETA, _class_prior(run)),
        height=CHART_HEIGHT, title="Fisher information J(θ, p); the cross: this classifier, the diamond: EM's θ̂",
        estimate=_theta(run.params) if run.index > 0 else None,
    )  # fmt: skip


def _dependence(run: Run):
    """The dependence check's heatmap after the run's model (:mod:`crowdlab.analysis.dependence`)."""
    from crowdlab.analysis.dependence import dependence
    from crowdlab.plots.copying import pair_heatmap

    return pair_heatmap(
        dependence(run), height=CHART_HEIGHT + 10,
        title=f"{run.model.info.title}, {lab.where(run)}: each pair's κ (outlined: flagged)",
    )  # fmt: skip


def _fit_check(run: Run):
    """Lesson 6's held-out scores (the lesson's reference fit check: :func:`crowdlab.teaching.lessons.reference`)."""
    from crowdlab.plots.fit_check import held_out_figure

    table = lessons.reference("fit")["table"]
    return held_out_figure(table, title="Held-out labels (5 folds): mean log score per label, no gold used")


FIGURES = {
    "fit_check": _fit_check,
    "dependence": _dependence,
    "item_means": _item_means,
    "annotators": _annotators,
    "confusion": _confusion,
    "strip": _strip,
    "transitions": _transitions,
    "network": _network,
    "loglik": _loglik,
    "fisher": _fisher,
    "spam": _spam,
}
