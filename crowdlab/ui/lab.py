"""The one EM stepper: a run kept under named session-state keys, its callbacks, and the stepping component.

Used by every stepping page (Step, Sequences, Networks, Learning from crowds, the lessons):

- :class:`RunSlot` names where one run lives (plain keys for the run, its id, the per-snapshot metrics, the
  pending move, the one-time notice and the start error, and the prefix of its widget keys) and how to get it.
- :func:`stepper` ``(slot, curves=..., panels=...)`` draws the whole stepper in one call: Back / E-step / M-step /
  Next / Step / Run to convergence / Reset with their keyboard shortcuts (:data:`SHORTCUTS`: ← → E M G 0 P),
  Play / Pause and its speed (one half-step per tick of ``st.fragment(run_every=...)``), the position and the
  scrubber, a violation warning, then the page's curves (default: objective and metrics against gold) and its
  own panels; side by side in presenter mode (:mod:`crowdlab.ui.presenter`). A model adds only its panels.
- The callbacks (``on_next(slot)``, ``on_back(slot)``, ``on_play(slot)``, ...) and the pieces (:func:`buttons`,
  :func:`position`, :func:`objective_chart`, :func:`metric_chart`, :func:`default_curves`) take a slot. The Step
  page's slot is :data:`crowdlab.ui.state.MAIN` (keys ``run.obj``, ``stepper.step``, ...).
- :class:`Lab` is a page with its own dataset, settings and run under a namespace ``ns`` (``seq``, ``net``), so
  the pages for i.i.d. items keep their working dataset untouched. Plain keys:

  ==========================  ===================================================================
  ``<ns>.data.id`` / ``.obj``   where the page's dataset came from, and the Annotations
  ``<ns>.data.extra``          what else the source knows (a simulation's true T and Gamma), a dict
  ``<ns>.config``              the page's settings (a frozen dataclass; a change resets the run)
  ``<ns>.run.*``               the run (``obj``, ``id``, ``error``, ``metrics``, ``pending``)
  ``<ns>.notice``              a one-time message ("Settings changed: the run was reset.")
  ``<ns>.derived``             results computed once per dataset (baselines, drawing positions)
  ``<ns>.widgets``             the values of the page's source widgets (mirrored, like the Data page's)
  ``<ns>.view.<name>``         view choices (picked sequence, open tab); forgotten when the dataset changes
  ==========================  ===================================================================

Every change happens in a callback (no explicit reruns); widget keys are views of the plain keys and are written
back before the widgets are drawn, so a page switch keeps everything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from crowdlab import plots
from crowdlab.engines.run import Run, Snapshot
from crowdlab.errors import CrowdlabError
from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.io.metrics import accuracy, macro_f, pearson
from crowdlab.plots.common import X_TITLE
from crowdlab.ui import presenter
from crowdlab.ui.live_chart import REVISION, live_chart
from crowdlab.ui.progress import Pace

_BESIDE: ContextVar[bool] = ContextVar("crowdlab_beside", default=False)


def beside() -> bool:
    """Whether the stepper being drawn puts its curves in a narrow column beside its panels: presenter mode, or a
    slot with ``beside=True`` (set while its body is drawn)."""
    return presenter.is_on() or _BESIDE.get()


NOTICE_SETTINGS = "Settings changed: the run was reset."
NOTICE_DATASET = "Dataset changed: the run was reset."
# what building a run (the initialisation, e.g. moment matching's optimiser) may raise: shown with st.error
START_ERRORS = (CrowdlabError, ValueError, ArithmeticError, RuntimeError)


def start_error(exc: Exception) -> str:
    """The message shown when a run cannot start: the library's own message for bad input or a bad choice,
    else what went wrong and what to try."""
    if isinstance(exc, CrowdlabError | ValueError):
        return str(exc)
    return f"The run could not start ({type(exc).__name__}: {exc}). Try another start or method."


# ---------------------------------------------------------------------------- one run under named keys
@dataclass(frozen=True, eq=False)
class RunSlot:
    """Where a run lives: plain keys ``run``, ``run_id``, ``metrics``, ``pending`` (a requested move the stepper
    computes next, under a spinner or a progress bar), and optionally ``notice`` (a one-time message, popped when
    the stepper shows it) and ``error`` (why the run could not be built); widget keys ``<widgets>.*``;
    ``getter()`` returns the run (building it when there is none yet). Play keeps its plain keys under
    ``<widgets>.playing`` / ``.play_last`` / ``.speed_value``. ``shortcuts=False``: the buttons take no keyboard
    shortcuts (the lessons' free controls, where ← → belong to the lesson's Previous / Next). ``beside=True``: the
    curves sit in a narrow column beside the panels in normal mode too, so that the curve and the main picture are
    on the first screen (the Step page; presenter mode does it on every page)."""

    run: str
    run_id: str
    metrics: str
    pending: str
    widgets: str
    getter: Callable[[], Run | None]
    notice: str | None = None
    error: str | None = None
    shortcuts: bool = True
    beside: bool = False  # curves in a narrow column beside the panels in normal mode too (presenter mode: always)
    accelerate: bool = True  # Run to convergence by SQUAREM (cl.fit's default); the lessons run plain EM to the end

    def key(self, name: str) -> str:
        """A widget key of this slot's stepper (``stepper.step``, ``seq.stepper.step``)."""
        return f"{self.widgets}.{name}"

    def get(self) -> Run | None:
        return self.getter()


# keyboard shortcuts of the stepper's buttons (Streamlit's native ``st.button(shortcut=...)``; "R" and "C" are
# Streamlit's own rerun and clear-cache keys, so "run to convergence" is G, for "go")
SHORTCUTS = {
    "back": "Left",
    "e_step": "E",
    "m_step": "M",
    "next": "Right",
    "run": "G",
    "reset": "0",
    "play": "P",
}
# how the position line says why a run stopped (crowdlab.engines.run.STOP_REASONS has the long form)
STOP_WORDS = {
    "converged": "converged",
    "stalled": "stalled: no gain above rounding, parameters still drifting",
    "max_iter": "stopped at the iteration limit",
    "stopped": "stopped",
    "passes": "every pass done",
    "no_signal": "stopped: the labels carry no signal (the objective is flat)",
}
# seconds per half-step while playing
SPEEDS = {"slow": 2.0, "normal": 1.0, "fast": 0.5}
DEFAULT_SPEED = "normal"
BUSY = {"E": "Computing the E-step...", "M": "Computing the M-step...", "step": "Computing an EM iteration..."}


def _playing_key(slot: RunSlot) -> str:
    return slot.key("playing")


def playing(slot: RunSlot) -> bool:
    """Whether Play is on for this slot."""
    return bool(st.session_state.get(_playing_key(slot)))


def speed(slot: RunSlot) -> float:
    """Seconds per half-step while playing."""
    return SPEEDS.get(st.session_state.get(slot.key("speed_value"), DEFAULT_SPEED), SPEEDS[DEFAULT_SPEED])


def _pause(slot: RunSlot) -> None:
    st.session_state[_playing_key(slot)] = False
    st.session_state.pop(slot.key("play_end"), None)


def play_ended(slot: RunSlot) -> bool:
    """Whether Play stopped by itself at the end of the run (until the next move)."""
    return bool(st.session_state.get(slot.key("play_end")))


def _page() -> str:
    """The page being run (its script hash): Play belongs to the page it was started on."""
    ctx = get_script_run_ctx()
    return "" if ctx is None else str(ctx.page_script_hash)


PAGES = "lab.pages"  # plain key: (the page of the previous full run, the page of this one)


def note_page() -> None:
    """Remember which page this full run draws (called by the page frame): Play stops when its page is left."""
    previous = (st.session_state.get(PAGES) or ("", ""))[1]
    st.session_state[PAGES] = (previous, _page())


def can_advance(run: Run | None) -> bool:
    """Whether Play has a half-step to show: stored snapshots ahead, or a new one before convergence / max_iter."""
    if run is None or not run.iterative:
        return False
    if not run.at_end:
        return True
    return run.stop_check() is None


def _move(slot: RunSlot, kind: str) -> None:
    """Move the cursor: "E", "M", "next" (whichever half-step is next) or "step" (to the end of the iteration).

    Over snapshots already computed the cursor just moves; a new snapshot is left as a request in ``pending``, which
    the stepper computes next under a spinner (so a slow step shows that it is working)."""
    run = slot.get()
    if run is None or not run.iterative:
        return
    nk = run.next_kind
    if kind == "next":
        kind = nk
    elif kind == "step" and nk == "M":
        kind = "M"
    if kind in ("E", "M") and kind != nk:
        return
    halves = 2 if kind == "step" else 1
    if run.index + halves <= len(run.snapshots) - 1:
        {"E": run.e_step, "M": run.m_step, "step": run.step}[kind]()
    else:
        st.session_state[slot.pending] = kind


def on_e_step(slot: RunSlot) -> None:
    _pause(slot)
    _move(slot, "E")


def on_m_step(slot: RunSlot) -> None:
    _pause(slot)
    _move(slot, "M")


def on_next(slot: RunSlot) -> None:
    """One half-step forward (the right-arrow key)."""
    _pause(slot)
    _move(slot, "next")


def on_step(slot: RunSlot) -> None:
    """Complete the EM iteration: E then M (or just M after an E-only step)."""
    _pause(slot)
    _move(slot, "step")


def on_back(slot: RunSlot) -> None:
    """One half-step back (the left-arrow key), as the scrubber moves: after E, M, back gives "after E"."""
    _pause(slot)
    run = slot.get()
    if run is not None:
        run.back()


def on_reset(slot: RunSlot) -> None:
    """Forget the steps of the current run (same settings)."""
    _pause(slot)
    run = slot.get()
    if run is not None:
        run.reset()
        st.session_state[slot.metrics] = None
        st.session_state[slot.pending] = False


def limit_way(where: str = "in the settings above") -> str:
    """What to do at the iteration limit, in words (the stepper's notice, the Export page)."""
    return f"raise Max iterations {where}: the run keeps its iterations and goes on from there"


def at_limit(run: Run | None) -> bool:
    """The run has done its ``max_iter`` iterations without converging: Run to convergence has nothing to do."""
    return bool(run is not None and run.iterative and not run.converged and run.last.iteration >= run.max_iter)


def kept_for_new_limit(run: Run | None, old, new) -> str | None:
    """When the only change from the settings ``old`` to ``new`` is a higher ``max_iter``, keep ``run`` with the
    new limit and return the notice to show; else None (the caller resets the run). EM's path does not depend on
    the limit, only where it stops, so an analyst who hit the limit goes on instead of starting again."""
    if run is None or not run.iterative or not hasattr(old, "max_iter") or new.max_iter <= old.max_iter:
        return None
    if replace(old, max_iter=new.max_iter) != new:
        return None
    run.max_iter = int(new.max_iter)
    if run.stop_reason == "max_iter":
        run.stop_reason = None
    return (
        f"Max iterations raised to {run.max_iter:,}: the run keeps its {run.last.iteration:,} iterations, and Run "
        "to convergence goes on from there."
    )


def on_run_to_convergence(slot: RunSlot) -> None:
    """Ask for a run to convergence; the stepper does it next, under a progress bar. At the iteration limit it
    says so and what to do (the click did nothing visible before: the run was already at its limit)."""
    _pause(slot)
    run = slot.get()
    if run is not None and run.iterative:
        st.session_state[slot.pending] = "run"
        if at_limit(run) and slot.notice:
            st.session_state[slot.notice] = (
                f"EM stopped at the iteration limit ({run.max_iter:,} iterations) before converging. To go on, "
                f"{limit_way()}."
            )


def on_scrub(slot: RunSlot) -> None:
    """The scrubber moved: go to its snapshot and pause Play. A "change" to where the run already is, is no
    scrub: Streamlit gives the slider a new identity whenever its range grows (every half-step that Play
    computes), and on a busy machine the browser reports the replaced slider's value back as a change; taking
    that for a scrub paused Play after two half-steps while its button still said "Pause"."""
    run = slot.get()
    key = slot.key("scrub")
    if run is None or key not in st.session_state:
        return
    value = int(st.session_state[key])
    if value == run.index:
        return  # nobody moved it: no pause
    if playing(slot) and value in (st.session_state.get(slot.key("scrub_drawn")) or ()):
        # a position Play itself just showed, reported late by a slowed browser (the slider keeps its identity
        # while Play replays computed snapshots): an echo, not a scrub; Play went back one step and stopped
        return
    _pause(slot)
    run.goto(value)


def on_play(slot: RunSlot) -> None:
    """Play / Pause: while playing, the stepper advances one half-step every :func:`speed` seconds."""
    if playing(slot):
        _pause(slot)
        return
    if not can_advance(slot.get()):
        return
    st.session_state.pop(slot.key("play_end"), None)
    st.session_state[_playing_key(slot)] = True
    st.session_state[slot.key("play_page")] = _page()
    st.session_state[slot.key("play_last")] = time.monotonic()
    _move(slot, "next")


def on_speed(slot: RunSlot) -> None:
    value = st.session_state.get(slot.key("speed"))
    if value in SPEEDS:
        st.session_state[slot.key("speed_value")] = value


def tick(slot: RunSlot) -> bool:
    """Play's clock: advance one half-step when one is due (True), or stop at the end.

    The one state change outside a callback: Streamlit's timer (``st.fragment(run_every=...)``) reruns the panel
    and has no callback of its own. Called at the top of the playing panel; a rerun for another reason before the
    half-step is due does not advance."""
    if not playing(slot) or st.session_state.get(slot.pending):
        return False
    run = slot.get()
    if not can_advance(run):
        _stop_at_end(slot, run)
    now, period = time.monotonic(), speed(slot)
    due = float(st.session_state.get(slot.key("play_last"), 0.0)) + period
    if now < due - 0.5 * period:  # a rerun for another reason, well before the half-step is due
        return False
    # the cadence is kept: the next half-step is due one period after this one was due, so a tick that came late
    # (the last draw took a while) does not push every later one back (it did: 1.5 half-steps a second at 0.5 s);
    # never more than a period behind, so a stall is not followed by a burst
    st.session_state[slot.key("play_last")] = due if now - due < period else now
    _move(slot, "next")
    return True


def _stop_at_end(slot: RunSlot, run: Run | None) -> None:
    """Play has nothing more to show (the run converged, stalled or reached its limit): it stops itself, says why
    in the position line, and the whole stepper is drawn again, so that its button says "Play" and its timer
    stops (the timer's own rerun draws only the panel below the buttons)."""
    _pause(slot)
    st.session_state[slot.key("play_end")] = True
    st.rerun()


def run_pending(slot: RunSlot, progress: Callable[[int, int], None] | None = None) -> bool:
    """Do a requested move now (a run to convergence reports ``progress(iteration, max_iter)``); True when one
    ran."""
    request = st.session_state.get(slot.pending)
    run = slot.get()
    if not request or run is None:
        return False
    st.session_state[slot.pending] = False
    try:
        if request is True or request == "run":
            # accelerated EM (SQUAREM), as cl.fit: the same fixed point in 40-60 % fewer EM maps; its accepted points
            # are "M" snapshots marked accelerated (Step and the lessons stay plain EM: that is what is taught)
            kw = {"accelerate": True} if slot.accelerate and isinstance(run, Run) else {}  # not online EM
            run.run(progress=progress, **kw)
        elif request in ("E", "M") and run.next_kind == request:
            (run.e_step if request == "E" else run.m_step)()
        elif request == "step":
            run.step()
    except CrowdlabError as exc:  # a half-step that would give NaN/inf (extreme data): the run stays where it was
        _pause(slot)
        st.session_state[slot.key("step_error")] = str(exc)
    return True


def snapshot_label(snap: Snapshot) -> str:
    """A snapshot in the stepper's words, the one vocabulary of every title and caption: "iteration 0,
    initialisation", "iteration 3, after E-step", "iteration 3, after M-step"."""
    if snap.kind == "init":
        return "iteration 0, initialisation"
    if snap.kind == "E":
        return f"iteration {snap.iteration + 1}, after E-step"
    return f"iteration {snap.iteration}, after M-step"


def where(run: Run, snap: Snapshot | None = None) -> str:
    """Where a chart's numbers come from, for its title: :func:`snapshot_label` of ``snap`` (default: the cursor's),
    or "majority vote" for a run with nothing to iterate."""
    return snapshot_label(snap if snap is not None else run.current) if run.iterative else "majority vote"


def step_label(run: Run) -> str:
    """ "iteration 3, after M-step" for the cursor's snapshot (a run that describes its own position, such as an
    online run's "pass 2, block 5 of 80", says so through ``position_label()``)."""
    if hasattr(run, "position_label"):
        return run.position_label()
    if not run.iterative:
        return "majority vote (one step, nothing to iterate)"
    return snapshot_label(run.current)


def metrics(slot: RunSlot, run: Run) -> dict[str, np.ndarray]:
    """Per-snapshot x position and metrics against gold, computed once per snapshot and kept in state.

    Keyed by the slot's run id: a new snapshot adds its own values; nothing is recomputed for the old ones (a
    reset run restarts the cache). Keys: ``x`` and then "accuracy" and "macro F" (class labels) or "Pearson r"
    (scores, the item means against continuous gold); only ``x`` when there is no gold.
    """
    run_id = st.session_state.get(slot.run_id)
    cache = st.session_state.get(slot.metrics)
    snaps = run.snapshots
    if cache is None or cache["run_id"] != run_id or cache["n"] > len(snaps) or cache["first"] is not snaps[0]:
        cache = {"run_id": run_id, "n": 0, "first": snaps[0], "values": {"x": []}}
    data = run.data
    values = cache["values"]
    new = snaps[cache["n"] :]
    if new:
        values["x"].extend(plots.half_step_positions([s.kind for s in new], [s.iteration for s in new]).tolist())
        if data.has_gold and data.is_continuous:
            values.setdefault("Pearson r", []).extend(_pearson(s.params, data) for s in new)
        elif data.has_gold:
            for s in new:
                pred = run.labels(s)
                values.setdefault("accuracy", []).append(accuracy(pred, data.gold))
                values.setdefault("macro F", []).append(macro_f(pred, data.gold, data.n_classes))
        cache["n"] = len(snaps)
    st.session_state[slot.metrics] = cache
    return {k: np.asarray(v, dtype=np.float64) for k, v in values.items()}


def _pearson(params, data: Annotations) -> float:
    mu = getattr(params, "mu", None)
    return float("nan") if mu is None else pearson(mu, data.gold)


# ---------------------------------------------------------------------------- stepper widgets
def progress_bar(box=None, unit: str = "iteration") -> tuple[object, Callable[[int, int], None]]:
    """A bar and its ``update(done, total)``; ``unit`` names what is counted (online EM counts updates)."""
    bar = (box or st).progress(0.0, text="Running EM to convergence...")
    show = lambda f, text: bar.progress(f, text=text)  # noqa: E731
    return bar, Pace(show, "Running EM", unit, bound=unit == "iteration")  # pace and time left, as measured


def with_progress(text: str, work: Callable[[Callable[[int, int], None]], Any]) -> Any:
    """``work(progress)`` under a progress bar labelled ``text`` (``progress(iteration, max_iter)``; the bar says
    the iteration, the measured time per iteration and at most how long is left: :class:`crowdlab.ui.progress.Pace`);
    the bar goes when done."""
    bar = st.progress(0.0, text=f"{text}...")
    try:
        return work(Pace(lambda f, words: bar.progress(f, text=words), text))  # pace and time left, measured
    finally:
        bar.empty()


def do_pending(slot: RunSlot, box=None) -> None:
    """Do the requested move now: a run to convergence under a progress bar, a new half-step or iteration under a
    spinner (shown after 0.5 s). ``box`` (an ``st.empty()``) holds them, so the page's layout does not shift."""
    request = st.session_state.get(slot.pending)
    if not request:
        return
    box = box if box is not None else st.empty()
    if request is True or request == "run":
        bar, update = progress_bar(box, getattr(slot.get(), "progress_unit", "iteration"))
        run_pending(slot, progress=update)
        box.empty()
        return
    with box.container(), st.spinner(BUSY.get(request, "Working...")):
        run_pending(slot)
    box.empty()


def buttons(slot: RunSlot, run: Run) -> None:
    """Back, E-step, M-step, Next, Step, Run to convergence, Reset, Play / Pause and its speed, in one row that
    wraps when narrow (keys ``<widgets>.back`` ...; shortcuts :data:`SHORTCUTS`)."""
    it = run.iterative
    nk = run.next_kind
    play = playing(slot)
    a = (slot,)
    k = slot.key
    row = st.container(horizontal=True, gap="small", vertical_alignment="center")
    if slot.beside and not presenter.is_on():  # normal mode's Step page: the buttons and the speed in one row
        st.html(COMPACT_BUTTONS_CSS)

    def button(name: str, label: str, callback, disabled: bool, **kw) -> None:
        key = SHORTCUTS.get(name) if slot.shortcuts else None
        if not slot.shortcuts and kw.get("help", "").endswith(")"):
            kw["help"] = kw["help"].rsplit(" (", 1)[0]  # no "(←)" in the tooltip of a button without its key
        row.button(label, key=k(name), on_click=callback, args=a, disabled=disabled, shortcut=key, **kw)

    # while playing the panel below reruns on its own and this row is not redrawn: every move stays enabled (the
    # callbacks check what applies, and any move pauses Play)
    button("back", "Back", on_back, run.index == 0 and not play, help="One half-step back (←)")
    button("e_step", "E-step", on_e_step, nk != "E" and not play, help="The E-step: update q (E)")
    button("m_step", "M-step", on_m_step, nk != "M" and not play, help="The M-step: update θ (M)")
    button("next", "Next", on_next, not it, help="One half-step forward: E or M, whichever is next (→)")
    button("step", "Step", on_step, not it, type="primary", help="A whole EM iteration: E then M")
    button(
        "run",
        "Run to convergence",
        on_run_to_convergence,
        not it or (run.converged and run.at_end and not play),
        help="Iterate until the objective stops changing (G)",
    )
    button("reset", "Reset", on_reset, len(run.snapshots) == 1 and not play, help="Back to the start (0)")
    button(
        "play",
        "Pause" if play else "Play",
        on_play,
        not play and not can_advance(run),
        icon=":material/pause:" if play else ":material/play_arrow:",
        help="Advance one half-step at a time, at the chosen speed (P)",
    )
    st.session_state[k("speed")] = st.session_state.get(k("speed_value"), DEFAULT_SPEED)
    row.selectbox(
        "Play speed (seconds per half-step)",
        list(SPEEDS),
        format_func=lambda s: f"{SPEEDS[s]:g} s",
        key=k("speed"),
        on_change=on_speed,
        args=a,
        label_visibility="collapsed",
        width=82 if slot.beside and not presenter.is_on() else 95,
    )


# narrower side padding of the stepper's buttons (presenter mode's CSS does the same): with it, the eight buttons
# and the speed fit one row at 1280 px with the sidebar open, and the curves start higher on the first screen
COMPACT_BUTTONS_CSS = (
    '<style>[data-testid="stMain"] [data-testid="stButton"] button '
    "{ padding-left: 0.4rem; padding-right: 0.4rem; }"
    '[data-testid="stMainBlockContainer"] { padding-top: 3rem; }'
    # the position's caption keeps two lines (as presenter mode's CSS does): a shorter one after the first Step
    # does not move the charts up
    '[class*="pos_block"] [data-testid="stCaptionContainer"] p { min-height: 2lh; }</style>'
)
# Normal mode's Step page puts the curves beside the panels when its main column is wide (1280 px with the sidebar
# open: the curve and the main picture on the first screen); where the column is narrower than BESIDE_MIN_PX (1024 px
# with the sidebar open) the two stack again, as before, so that no tab, formula or matrix is cut. A container query:
# the server cannot know the column's width, the browser does.
BESIDE_KEY = "stepper_beside"
BESIDE_MIN_PX = 760
BESIDE_CSS = (
    f"<style>.st-key-{BESIDE_KEY} {{ container-type: inline-size !important; }}"
    f"@container (max-width: {BESIDE_MIN_PX}px) {{"
    f" .st-key-{BESIDE_KEY} > div > [data-testid='stHorizontalBlock'] {{ flex-direction: column; }}"
    f" .st-key-{BESIDE_KEY} > div > [data-testid='stHorizontalBlock'] > [data-testid='stColumn']"
    " { width: 100% !important; flex: 1 1 auto !important; } }</style>"
)
POSITION_KEY = "pos_block"  # the position's block (its CSS class ends in "pos_block")


def position(slot: RunSlot, run: Run) -> None:
    """Where the cursor is ("iteration 3, after M-step"), the start, and the scrubber over the snapshots."""
    n = len(run.snapshots)
    tail = ""
    if run.iterative and run.at_end:
        reason = run.stop_reason or ("converged" if run.converged else "max_iter" if at_limit(run) else None)
        tail = f" · {STOP_WORDS[reason]}" if reason in STOP_WORDS else ""
        tail += f" ({run.max_iter:,})" if reason == "max_iter" else ""
    if getattr(run.current, "accelerated", 0):  # a point of Run to convergence's SQUAREM (`crowdlab.engines.accel`)
        tail += f" · accelerated (SQUAREM, {safe.plural(run.current.accelerated, 'EM map')})"
    if playing(slot):
        tail += f" · playing, {speed(slot):g} s per half-step"
    elif play_ended(slot) and run.at_end:
        tail += " · Play stopped at the end of the run"
    compact = beside()
    # a keyed block: presenter mode's CSS keeps two lines for its caption (crowdlab.ui.presenter.CSS)
    block = st.container(key=slot.key(POSITION_KEY))
    where, scrub = (
        block.columns([2, 3], vertical_alignment="center") if compact else (block.container(), block.container())
    )
    where.markdown(f"#### {step_label(run)}")
    count = f"snapshot {run.index} of {n - 1}"
    if n == 1 and run.iterative:
        count = "snapshot 0, the start (Step computes the next)"
    where.caption(f"{count} · {run.start_description}{tail}")
    if n > 1:
        key = slot.key("scrub")
        st.session_state[key] = run.index
        # the positions Play drew last (see on_scrub): a late report of one of them is not the lecturer's scrub
        drawn = list(st.session_state.get(slot.key("scrub_drawn")) or []) if playing(slot) else []
        st.session_state[slot.key("scrub_drawn")] = (drawn + [run.index])[-3:]
        scrub.slider(
            "Scrub through the computed snapshots",
            0,
            n - 1,
            key=key,
            on_change=on_scrub,
            args=(slot,),
            label_visibility="collapsed" if compact else "visible",
        )
    elif run.iterative:  # the scrubber's place, kept: the page did not move down when the first Step drew it
        scrub.slider(
            "Scrub through the computed snapshots",
            0,
            1,
            0,
            key=slot.key("scrub_none"),
            disabled=True,
            help="Nothing to scrub yet: Step computes the next snapshot.",
            label_visibility="collapsed" if compact else "visible",
        )


ROW_PX = 35  # a dataframe row (and its header) as Streamlit draws them in normal mode; presenter mode's are taller


def table_height(rows: int, cap: int = 320) -> int | str:
    """The height of every ``st.dataframe`` that lists rows: its own ("content": each row whole and no blank ones,
    whatever the row height) when ``rows`` normal rows fit in ``cap`` px, else ``cap`` px and it scrolls. A height
    in px per row cut the last row in presenter mode, whose rows are taller (Compare methods lost M-MSR)."""
    return "content" if ROW_PX * (rows + 1) + 3 <= cap else cap


def chart_height(default: int = 360) -> int:
    """A curve's height: smaller in presenter mode, where the curves and the main panel share the first screen."""
    return min(default, 300) if beside() else default


def curve_columns(spec: int | list[float]) -> list:
    """Where to draw the curves: side by side (``st.columns(spec)``), or stacked in presenter mode (they sit in a
    narrow column beside the main panel there)."""
    if beside():
        return [st.container() for _ in range(spec if isinstance(spec, int) else len(spec))]
    return list(st.columns(spec))


# Characters a title line in presenter mode's curve column (:func:`stepper`: a third of the page beside the main
# panel): about 215 px wide when the lecturer re-opens the sidebar at 1024 px (the server cannot know whether it is
# open, so titles are wrapped for the narrower case), where a line of the 15 px bold title font takes about 6.5 px
# a character; the 36 of the figure builders (which ``wrap_title`` used to keep) ran past the edge ("Objective: ELBO
# (variational lower" for IBCC and variational MACE).
CURVE_CHARS = 31
# the curves' x-axis title there: the full one (plots.X_TITLE, 31 characters, centred on the plot) lost its ")" at
# the chart's edge beside six-digit y tick labels ("-32050")
CURVE_X_TITLE = "iteration (E-steps at ½)"
# a legend entry's characters there (16 px font beside a 30 px line sample): "progressive: before each update (last
# N)" on Batch vs online ran 31 px past the edge with the sidebar open (26 characters at 12 px; at 16 px, 20)
LEGEND_CHARS = 20


def wrap_title(fig, chars: int = 40):
    """Break a figure's title into lines of at most ``chars`` characters (plotly cuts a long title at the edge of a
    narrow chart instead of wrapping it), growing the top margin to fit; returns the figure. A title its builder
    already wrapped at a wider width is wrapped again."""
    if presenter.is_on():
        chars = int(chars * 0.85)  # presenter mode draws at a larger scale in narrower columns
    return _wrap(fig, chars)


def _wrap(fig, chars: int):
    title = fig.layout.title.text
    lines = title.split("<br>") if title else []
    if not lines or max(len(line) for line in lines) <= chars:
        return fig
    text = plots.wrap_title(" ".join(lines), chars)  # the one wrapping rule (the builders break at spaces too)
    top = fig.layout.margin.t if fig.layout.margin.t is not None else 80
    n = text.count("<br>") + 1
    # a builder sized its top margin for its own lines (and any tick labels on top): it grows by the lines added
    grow = 22 * max(n - len(lines), 0) if len(lines) > 1 else 0
    fig.update_layout(title_text=text, margin_t=max(top + grow, 30 + 22 * n))
    return fig


# Wrapping a title by the width of its chart (plotly never wraps one): a bold title character takes about this
# many of its font size (Source Sans bold; digits and capitals wider, so the estimate errs to the long side)
TITLE_EM_PER_CHAR = 0.45
# the width of the Step page's main panel where a chart goes, at the narrowest the server must assume: presenter
# mode's two thirds beside the curves with the sidebar open at 1024 px, and normal mode's whole main column there
MAIN_PANEL_PX = {True: 440, False: 620}
BESIDE_PANEL_PX = 370  # normal mode's two thirds beside the curves with the sidebar open at 1024 px


def main_panel_px() -> int:
    """The narrowest width of the main panel where a chart goes (px), for wrapping its title."""
    if presenter.is_on():
        return MAIN_PANEL_PX[True]
    return BESIDE_PANEL_PX if beside() else MAIN_PANEL_PX[False]


TITLE_LINE_PX = 20  # a title line in the top margin (crowdlab.plots.common._layout)


def fit_title(fig, width_px: float):
    """Wrap a figure's title by the width of its chart (``width_px``, the narrowest it may be drawn at): as many
    characters a line as fit at its font size, so a wide chart keeps its title on one line instead of the
    builder's 30-odd characters; the top margin shrinks or grows with the number of lines. Returns the figure."""
    title = fig.layout.title.text
    if not title:
        return fig
    size = fig.layout.title.font.size or 15
    chars = max(20, int(width_px / (TITLE_EM_PER_CHAR * size)))
    old_n = title.count("<br>") + 1
    text = plots.wrap_title(title.replace("<br>", " "), chars)
    n = text.count("<br>") + 1
    top = fig.layout.margin.t if fig.layout.margin.t is not None else 80
    fig.update_layout(title_text=text, margin_t=max(top + TITLE_LINE_PX * (n - old_n), 30 + TITLE_LINE_PX * n))
    return fig


# a curve's width where the server must assume the narrowest: normal mode's half of the main column at 1024 px with
# the sidebar open (presenter mode's column: CURVE_CHARS)
CURVE_PX = 300


def curve_title(fig, width_px: float | None = None):
    """A curve's title wrapped by its chart's width (``width_px``; default: the stepper's curve column,
    :data:`CURVE_PX` or presenter mode's :data:`CURVE_CHARS`), then :func:`narrow` in presenter mode."""
    if width_px is not None or not beside():
        fit_title(fig, width_px or CURVE_PX)
    return narrow(fig, chars=None if width_px is None else 10_000)


def narrow(fig, chars: int | None = None):
    """A curve in presenter mode's narrow column: its title wrapped to :data:`CURVE_CHARS` (or ``chars``) and its
    x-axis title the short :data:`CURVE_X_TITLE` (whole with the sidebar open too), long legend entries broken at
    :data:`LEGEND_CHARS`, its legend (wrapped onto two lines there) moved clear of the x-axis title."""
    if not beside():
        return fig
    _wrap(fig, chars or CURVE_CHARS)
    if fig.layout.xaxis.title.text == X_TITLE:
        fig.update_layout(xaxis_title_text=CURVE_X_TITLE)
    for trace in fig.data:  # a legend entry longer than the column breaks onto a second line
        name = trace.name or ""
        if trace.showlegend is not False and "<br>" not in name and len(name) > LEGEND_CHARS:
            trace.name = plots.wrap_title(name, LEGEND_CHARS)
    if fig.layout.legend.y is not None and fig.layout.legend.y < 0:
        fig.update_layout(legend_y=-0.34)
    return fig


def objective_chart(
    slot: RunSlot,
    run: Run,
    *,
    title: str | None = None,
    show_bound: bool | None = None,
    height: int = 360,
    width_px: float | None = None,
) -> None:
    """The objective after every half-step (the bound dashed), the cursor marked. ``show_bound`` defaults to soft
    EM only: hard EM's objective *is* its complete-data objective, so a second, identical curve would say nothing."""
    model = run.model
    if show_bound is None:
        show_bound = not model.hard
    bound_name = "complete-data objective" if model.hard else "bound L(q, θ)"
    fig = plots.objective_curve(
        run.history(),
        run.index,
        title=title or f"Objective: {model.objective_name}",
        objective_name="objective",
        bound_name=bound_name,
        show_bound=show_bound,
        height=chart_height(height),
    )
    live_chart(curve_title(fig, width_px), slot.key("objective_chart"))


def metric_chart(slot: RunSlot, run: Run, *, height: int = 360, width_px: float | None = None) -> None:
    """Accuracy and macro F (or Pearson r) against gold over the snapshots, or a note when there is no gold."""
    m = metrics(slot, run)
    values = {k: v for k, v in m.items() if k != "x"}
    if values:
        x_now = float(m["x"][run.index])
        fig = plots.metric_curve(m["x"], values, x_now, height=chart_height(height))
        live_chart(curve_title(fig, width_px), slot.key("metric_chart"))
        st.caption(" · ".join(f"{k} now: **{v[run.index]:.3f}**" for k, v in values.items()))
    else:
        st.info("This dataset has no gold labels, so there is no accuracy to track.")


def default_curves(slot: RunSlot, run: Run) -> None:
    """The objective (both half-steps, the bound dashed) and the metrics against gold, the cursor marked."""
    left, right = curve_columns(2)
    with left:
        objective_chart(slot, run)
    with right:
        metric_chart(slot, run)


def violations(run: Run) -> None:
    if run.violations:
        st.warning(
            "EM check failed (exact EM never lowers its objective or the bound): " + "; ".join(run.violations[:5]),
            icon="⚠️",
        )


# ---------------------------------------------------------------------------- the one stepper component
Panel = Callable[[Run], None]


def stepper(
    slot: RunSlot,
    *,
    curves: Panel | None = None,
    panels: Panel | None = None,
    whole_page: bool = False,
    body: bool = True,
) -> Run | None:
    """The stepping component of every stepping page, in one call.

    Draws, in a fragment (a click reruns only the stepper): the slot's one-time notice, the buttons with their
    keyboard shortcuts (:data:`SHORTCUTS`), Play / Pause and its speed, the position and the scrubber, a warning
    if EM broke its guarantee, then ``curves(run)`` (default: the objective and the metrics against gold) and
    ``panels(run)`` (the model's own pictures); in presenter mode the curves go in a narrow column beside the
    panels, so both are on the first screen. A requested move is computed at the top under a spinner or a
    progress bar. When the run could not be built it shows the slot's error instead. Returns nothing useful to a
    page (the fragment runs later on its own); the run is ``slot.get()``. ``whole_page=True``: a click reruns the
    whole page instead of the fragment (the lesson, whose text above the controls follows the run). ``body=False``:
    the buttons only; the page draws the body (position, curves, and Play's ticks) elsewhere with
    :func:`stepper_body` (the lesson, whose chart is beside its text, above the free controls).
    """
    here = _page()
    came_back = (st.session_state.get(PAGES) or (here, here))[0] != here
    if playing(slot) and (came_back or st.session_state.get(slot.key("play_page")) != here):
        _pause(slot)  # Play stops when its page is left (coming back does not start it again)
    (_stepper if whole_page else st.fragment(_stepper))(slot, curves, panels, body)


def _stepper(slot: RunSlot, curves: Panel | None, panels: Panel | None, body: bool = True) -> None:
    status = st.empty()  # a fixed slot for the spinner / progress bar: the layout below never shifts
    run = slot.get()
    if run is None:
        _notice(slot)
        error = st.session_state.get(slot.error) if slot.error else None
        st.error(safe.md(error) if error else "No run: pick a dataset and a method.")
        return
    do_pending(slot, status)
    buttons(slot, run)
    if body:
        stepper_body(slot, curves, panels)


def stepper_body(slot: RunSlot, curves: Panel | None, panels: Panel | None = None) -> None:
    """The stepper's body, where the page puts it: the position and scrubber, then ``curves(run)`` and
    ``panels(run)``; while playing, a fragment that reruns every :func:`speed` seconds and advances the run one
    half-step each time, so whatever ``curves`` draws (the lesson's chart) moves with it."""
    if playing(slot):
        st.fragment(_playing_body, run_every=speed(slot))(slot, curves, panels)
    else:
        st.fragment(_still_body)(slot, curves, panels)


def _playing_body(slot: RunSlot, curves: Panel | None, panels: Panel | None) -> None:
    """The body while playing: a fragment with a timer (a separate function, so that pausing drops its timer)."""
    _body(slot, curves, panels)


def _still_body(slot: RunSlot, curves: Panel | None, panels: Panel | None) -> None:
    _body(slot, curves, panels)


def _notice(slot: RunSlot) -> None:
    box = st.container()  # always there: the notice never shifts what follows
    text = st.session_state.pop(slot.notice, None) if slot.notice else None
    if text:
        box.info(text, icon="ℹ️")


def _body_drawn(slot: RunSlot, curves: Panel | None, panels: Panel | None) -> None:
    status = st.empty()
    _notice(slot)
    tick(slot)
    do_pending(slot, status)
    run = slot.get()
    if run is None:
        return
    if playing(slot) and not can_advance(run):
        _stop_at_end(slot, run)  # the half-step just computed was the last: stop now, not a tick later
    failed = st.session_state.pop(slot.key("step_error"), None)
    if failed:
        st.error(safe.md(failed), icon="⚠️")
    # a transient spinner (it takes no place in the layout) that shows when drawing takes over 0.5 s (a big graph)
    with st.spinner("Drawing this step..."):
        position(slot, run)
        violations(run)
        draw_curves = curves or (lambda r: default_curves(slot, r))
        if beside() and panels is not None:
            # normal mode: side by side where the main column is wide enough (BESIDE_CSS, drawn with the buttons)
            left, right = st.container(key=BESIDE_KEY).columns([1, 2])
            with left:
                draw_curves(run)
            with right:
                panels(run)
            return
        draw_curves(run)
        if panels is not None:
            panels(run)


def _body(slot: RunSlot, curves: Panel | None, panels: Panel | None) -> None:
    token = _BESIDE.set(slot.beside and panels is not None)
    revision = REVISION.set(str(st.session_state.get(slot.run_id, "")))
    try:
        _body_drawn(slot, curves, panels)
    finally:
        REVISION.reset(revision)
        _BESIDE.reset(token)


# ---------------------------------------------------------------------------- a page with its own data and run
@dataclass(frozen=True, eq=False)
class Lab:
    """A page with its own dataset, settings and run under the namespace ``ns`` (see the module docstring).

    ``default()`` -> (data id, data, extra): the dataset of a cold start. ``build(data, config, extra)`` -> Run:
    a new run (a :class:`~crowdlab.errors.CrowdlabError` or ValueError becomes the run error shown to the
    person). ``config_widgets``: config field -> widget key. ``widget_defaults``: widget key -> default value of
    the mirrored source widgets. ``reset_on_new_data``: settings that depend on the dataset (delta, which scales
    with the number of workers) and go back to their default when it changes.
    """

    ns: str
    default: Callable[[], tuple[str, Annotations, dict]]
    build: Callable[[Annotations, Any, dict], Run]
    config_default: Any
    config_widgets: Mapping[str, str] = field(default_factory=dict)
    widget_defaults: Mapping[str, Any] = field(default_factory=dict)
    reset_on_new_data: tuple[str, ...] = ()  # settings that go back to their default with a new dataset

    def k(self, name: str) -> str:
        return f"{self.ns}.{name}"

    @property
    def slot(self) -> RunSlot:
        k = self.k
        return RunSlot(
            k("run.obj"), k("run.id"), k("run.metrics"), k("run.pending"), k("stepper"), self.get_run,
            notice=k("notice"), error=k("run.error"),
        )  # fmt: skip

    # -- the dataset ------------------------------------------------------------------
    def ensure(self) -> Annotations:
        """The page's dataset, loading the default one on a cold start."""
        if st.session_state.get(self.k("data.obj")) is None:
            data_id, data, extra = self.default()
            self.set_data(data_id, data, extra, notice=False)
        return self.data()

    def data(self) -> Annotations | None:
        return st.session_state.get(self.k("data.obj"))

    def data_id(self) -> str | None:
        return st.session_state.get(self.k("data.id"))

    def extra(self) -> dict:
        return st.session_state.get(self.k("data.extra")) or {}

    def set_data(self, data_id: str, data: Annotations, extra: dict | None = None, *, notice: bool = True) -> None:
        """Make ``data`` the page's dataset and reset the run (a notice when it changed)."""
        changed = data_id != self.data_id()
        st.session_state[self.k("data.id")] = data_id
        st.session_state[self.k("data.obj")] = data
        st.session_state[self.k("data.extra")] = dict(extra or {})
        self._reset_run()
        if changed:
            if self.reset_on_new_data:
                defaults = {f: getattr(self.config_default, f) for f in self.reset_on_new_data}
                st.session_state[self.k("config")] = replace(self.config(), **defaults)
            st.session_state[self.k("derived")] = {}
            prefix = self.k("view.")
            for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(prefix)]:
                del st.session_state[key]
            if notice:
                st.session_state[self.k("notice")] = NOTICE_DATASET

    def derived(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per dataset, kept under ``<ns>.derived`` (cleared when the dataset changes)."""
        store = st.session_state.get(self.k("derived"))
        if store is None or store.get("__id") != self.data_id():
            store = {"__id": self.data_id()}
            st.session_state[self.k("derived")] = store
        if name not in store:
            store[name] = compute()
        return store[name]

    # -- the settings -----------------------------------------------------------------
    def config(self):
        cfg = st.session_state.get(self.k("config"))
        if cfg is None:
            cfg = self.config_default
            st.session_state[self.k("config")] = cfg
        return cfg

    def set_config(self, **changes) -> bool:
        """Change the settings; when anything changed, reset the run and set the notice. Returns changed."""
        old = self.config()
        new = replace(old, **changes)
        if new == old:
            return False
        st.session_state[self.k("config")] = new
        kept = kept_for_new_limit(st.session_state.get(self.k("run.obj")), old, new)
        if kept is None:
            self._reset_run()
        st.session_state[self.k("notice")] = kept or NOTICE_SETTINGS
        return True

    def sync_config_widgets(self) -> None:
        """Write the settings into their widget keys before the widgets are drawn (restores the page)."""
        cfg = self.config()
        for name, key in self.config_widgets.items():
            st.session_state[key] = getattr(cfg, name)

    def on_config_widget(self) -> None:
        """on_change of every settings widget: read them all back (resets the run on a change)."""
        cfg = self.config()
        changes = {}
        for name, key in self.config_widgets.items():
            if key in st.session_state:
                changes[name] = type(getattr(cfg, name))(st.session_state[key])
        self.set_config(**changes)

    def config_widget(self, name: str) -> dict:
        """Keyword arguments of the settings widget for config field ``name``."""
        return {"key": self.config_widgets[name], "on_change": self.on_config_widget}

    # -- the run ------------------------------------------------------------------------
    def get_run(self) -> Run | None:
        """The current run; built from the dataset and the settings when there is none yet."""
        if st.session_state.get(self.k("run.obj")) is None and st.session_state.get(self.k("run.error")) is None:
            self._new_run()
        return st.session_state.get(self.k("run.obj"))

    def run_error(self) -> str | None:
        return st.session_state.get(self.k("run.error"))

    def run_id(self) -> int:
        return int(st.session_state.get(self.k("run.id"), 0))

    def _reset_run(self) -> None:
        for name in ("run.obj", "run.error", "run.metrics"):
            st.session_state[self.k(name)] = None
        st.session_state[self.k("run.pending")] = False

    def _new_run(self) -> None:
        data = self.ensure()
        st.session_state[self.k("run.id")] = self.run_id() + 1
        st.session_state[self.k("run.metrics")] = None
        st.session_state[self.k("run.pending")] = False
        try:
            run = self.build(data, self.config(), self.extra())
        except START_ERRORS as exc:
            st.session_state[self.k("run.obj")] = None
            st.session_state[self.k("run.error")] = start_error(exc)
            return
        st.session_state[self.k("run.obj")] = run
        st.session_state[self.k("run.error")] = None

    def pop_notice(self) -> str | None:
        return st.session_state.pop(self.k("notice"), None)

    # -- view choices and mirrored source widgets -------------------------------------------
    def view(self, name: str, default=None):
        return st.session_state.get(self.k("view." + name), default)

    def set_view(self, name: str, value) -> None:
        st.session_state[self.k("view." + name)] = value

    def _on_view(self, widget_key: str, name: str) -> None:
        if widget_key in st.session_state:
            self.set_view(name, st.session_state[widget_key])

    def view_widget(self, widget_key: str, name: str, valid: Callable[[Any], bool], default) -> dict:
        """Widget arguments of a view choice; writes the remembered (or default) value into the widget first."""
        value = self.view(name)
        if value is None or not valid(value):
            value = default
        st.session_state[widget_key] = value
        return {"key": widget_key, "on_change": self._on_view, "args": (widget_key, name)}

    def value(self, key: str):
        """The current value of a mirrored source widget (its default until the person changes it)."""
        return (st.session_state.get(self.k("widgets")) or {}).get(key, self.widget_defaults[key])

    def set_value(self, key: str, v) -> None:
        st.session_state[self.k("widgets")] = {**(st.session_state.get(self.k("widgets")) or {}), key: v}

    def _on_mirrored(self, key: str) -> None:
        self.set_value(key, st.session_state[key])

    def mirrored(self, key: str) -> dict:
        """Widget arguments of a mirrored source widget; writes the mirrored value into the widget key first."""
        st.session_state[key] = self.value(key)
        return {"key": key, "on_change": self._on_mirrored, "args": (key,)}

    def set_upload_message(self, error: str | None = None, ok: str | None = None) -> None:
        st.session_state[self.k("upload.error")] = error
        st.session_state[self.k("upload.ok")] = ok

    def upload_messages(self) -> None:
        """The last load's error (the reader's message) or success line."""
        error = st.session_state.get(self.k("upload.error"))
        ok = st.session_state.get(self.k("upload.ok"))
        if error:
            st.error(safe.md(error), icon=":material/error:")
            st.caption(f"This page's dataset is unchanged: {safe.md(self.data().name or self.data_id())}.")
        elif ok:
            st.success(ok)  # built with safe.md around each name
