"""A reusable EM stepper: a run kept under named session-state keys, its callbacks, and the shared widgets.

Two layers, used by the Step page and by the pages for dependent data (Sequences, Networks):

- :class:`RunSlot` names where one run lives (plain keys for the run, its id, the per-snapshot metrics and the
  "run to convergence" request, and the prefix of its widget keys) and how to get it. The stepping callbacks
  (``on_step(slot)``, ``on_back(slot)``, ...) and the widgets (:func:`buttons`, :func:`position`,
  :func:`objective_chart`, :func:`metric_chart`) take a slot. The Step page's slot is
  :data:`crowdlab.ui.state.MAIN` (keys ``run.obj``, ``stepper.step``, ...).
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
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import streamlit as st

from crowdlab import plots
from crowdlab.data import Annotations
from crowdlab.em import Run
from crowdlab.errors import CrowdlabError
from crowdlab.metrics import accuracy, macro_f, pearson

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
    """Where a run lives: plain keys ``run``, ``run_id``, ``metrics``, ``pending``; widget keys ``<widgets>.*``;
    ``getter()`` returns the run (building it when there is none yet)."""

    run: str
    run_id: str
    metrics: str
    pending: str
    widgets: str
    getter: Callable[[], Run | None]

    def key(self, name: str) -> str:
        """A widget key of this slot's stepper (``stepper.step``, ``seq.stepper.step``)."""
        return f"{self.widgets}.{name}"

    def get(self) -> Run | None:
        return self.getter()


def on_e_step(slot: RunSlot) -> None:
    run = slot.get()
    if run is not None and run.next_kind == "E":
        run.e_step()


def on_m_step(slot: RunSlot) -> None:
    run = slot.get()
    if run is not None and run.next_kind == "M":
        run.m_step()


def on_step(slot: RunSlot) -> None:
    run = slot.get()
    if run is not None and run.iterative:
        run.step()


def on_back(slot: RunSlot) -> None:
    run = slot.get()
    if run is not None:
        run.back()


def on_reset(slot: RunSlot) -> None:
    """Forget the steps of the current run (same settings)."""
    run = slot.get()
    if run is not None:
        run.reset()
        st.session_state[slot.metrics] = None
        st.session_state[slot.pending] = False


def on_run_to_convergence(slot: RunSlot) -> None:
    """Ask for a run to convergence; the stepper panel does it next, under a progress bar."""
    run = slot.get()
    if run is not None and run.iterative:
        st.session_state[slot.pending] = True


def on_scrub(slot: RunSlot) -> None:
    run = slot.get()
    key = slot.key("scrub")
    if run is not None and key in st.session_state:
        run.goto(int(st.session_state[key]))


def run_pending(slot: RunSlot, progress: Callable[[int, int], None] | None = None) -> bool:
    """Do a requested run to convergence now (``progress(iteration, max_iter)``); True when one ran."""
    run = slot.get()
    if not st.session_state.get(slot.pending) or run is None:
        return False
    st.session_state[slot.pending] = False
    run.run(progress=progress)
    return True


def step_label(run: Run) -> str:
    """ "iteration 3, after M-step" for the cursor's snapshot."""
    snap = run.current
    if not run.iterative:
        return "majority vote (one step, nothing to iterate)"
    if snap.kind == "init":
        return "iteration 0, initialisation"
    if snap.kind == "E":
        return f"iteration {snap.iteration + 1}, after E-step"
    return f"iteration {snap.iteration}, after M-step"


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
def progress_bar() -> tuple[object, Callable[[int, int], None]]:
    bar = st.progress(0.0, text="Running EM to convergence...")
    last = [0.0]

    def update(iteration: int, max_iter: int) -> None:
        now = time.perf_counter()
        if now - last[0] > 0.1:
            last[0] = now
            bar.progress(min(iteration / max(max_iter, 1), 1.0), text=f"Running EM: iteration {iteration}")

    return bar, update


def do_pending(slot: RunSlot) -> None:
    """Run to convergence now when it was asked for, under a progress bar."""
    if st.session_state.get(slot.pending):
        bar, update = progress_bar()
        run_pending(slot, progress=update)
        bar.empty()


def buttons(slot: RunSlot, run: Run) -> None:
    """E-step, M-step, Step, Run to convergence, Back, Reset (keys ``<widgets>.e_step`` ...)."""
    it = run.iterative
    nk = run.next_kind
    a = (slot,)
    cols = st.columns(6)
    cols[0].button("E-step", key=slot.key("e_step"), on_click=on_e_step, args=a, disabled=nk != "E", width="stretch")
    cols[1].button("M-step", key=slot.key("m_step"), on_click=on_m_step, args=a, disabled=nk != "M", width="stretch")
    cols[2].button(
        "Step", key=slot.key("step"), on_click=on_step, args=a, disabled=not it, type="primary", width="stretch"
    )
    cols[3].button(
        "Run to convergence",
        key=slot.key("run"),
        on_click=on_run_to_convergence,
        args=a,
        disabled=not it or (run.converged and run.at_end),
        width="stretch",
    )
    cols[4].button("Back", key=slot.key("back"), on_click=on_back, args=a, disabled=run.index == 0, width="stretch")
    cols[5].button(
        "Reset", key=slot.key("reset"), on_click=on_reset, args=a, disabled=len(run.snapshots) == 1, width="stretch"
    )


def position(slot: RunSlot, run: Run) -> None:
    """Where the cursor is ("iteration 3, after M-step"), the start, and the scrubber over the snapshots."""
    n = len(run.snapshots)
    tail = " · converged" if run.iterative and run.converged and run.at_end else ""
    st.markdown(f"#### {step_label(run)}")
    st.caption(f"snapshot {run.index} of {n - 1} · {run.start_description}{tail}")
    if n > 1:
        key = slot.key("scrub")
        st.session_state[key] = run.index
        st.slider("Scrub through the computed snapshots", 0, n - 1, key=key, on_change=on_scrub, args=(slot,))


def objective_chart(
    slot: RunSlot, run: Run, *, title: str | None = None, show_bound: bool = True, height: int = 360
) -> None:
    """The objective after every half-step (the bound dashed), the cursor marked."""
    model = run.model
    bound_name = "complete-data objective" if model.hard else "bound F(q, θ)"
    fig = plots.objective_curve(
        run.history(),
        run.index,
        title=title or f"Objective: {model.objective_name}",
        objective_name="objective",
        bound_name=bound_name,
        show_bound=show_bound,
        height=height,
    )
    st.plotly_chart(fig, key=slot.key("objective_chart"))


def metric_chart(slot: RunSlot, run: Run, *, height: int = 360) -> None:
    """Accuracy and macro F (or Pearson r) against gold over the snapshots, or a note when there is no gold."""
    m = metrics(slot, run)
    values = {k: v for k, v in m.items() if k != "x"}
    if values:
        x_now = float(m["x"][run.index])
        st.plotly_chart(plots.metric_curve(m["x"], values, x_now, height=height), key=slot.key("metric_chart"))
        st.caption(" · ".join(f"{k} now: **{v[run.index]:.3f}**" for k, v in values.items()))
    else:
        st.info("This dataset has no gold labels, so there is no accuracy to track.")


def violations(run: Run) -> None:
    if run.violations:
        st.warning(
            "EM check failed (exact EM never lowers its objective or the bound): " + "; ".join(run.violations[:5]),
            icon="⚠️",
        )


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
        return RunSlot(k("run.obj"), k("run.id"), k("run.metrics"), k("run.pending"), k("stepper"), self.get_run)

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
        self._reset_run()
        st.session_state[self.k("notice")] = NOTICE_SETTINGS
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
            st.error(error, icon=":material/error:")
            st.caption(f"This page's dataset is unchanged: {self.data().name or self.data_id()}.")
        elif ok:
            st.success(ok)


def stepper_head(lab: Lab) -> Run | None:
    """The top of a Lab's stepping panel: a pending run to convergence, the buttons, the position and scrubber,
    and a warning if EM broke its guarantee; None (and an error message) when the run could not be built."""
    slot = lab.slot
    run = slot.get()
    if run is None:
        st.error(lab.run_error() or "No run: pick a dataset.")
        return None
    do_pending(slot)
    buttons(slot, run)
    position(slot, run)
    violations(run)
    return run
