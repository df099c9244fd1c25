"""Priors and initialisations: restarts from several starts and prior-strength sweeps, stoppable and resumable.

A job (restarts or a prior sweep) is a plan of fits kept under a plain key with the rows finished so far. The
page works through the plan one fit at a time, updating an ``st.progress`` bar after each fit; every row is
stored the moment its fit ends, so nothing finished is ever lost.

Stopping. A click in Streamlit during a running script asks for a rerun, and the running script is interrupted
at its next Streamlit call: here the progress update after the current fit. The Stop button's callback then
runs first in the new run, sets the plain key ``sweep.stop`` (which ``should_stop`` reads between fits) and marks
the job stopped; the page shows the partial results. Any other click during a job interrupts it the same way,
and the job then resumes where it was. This page is deliberately not an ``st.fragment``: in Streamlit a click
inside a fragment does not interrupt a running script (a fragment rerun waits for the run to end), so a Stop
inside a fragment would only act after the whole job.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from crowdlab import plots
from crowdlab.analysis import sweep
from crowdlab.engines.fit import fit
from crowdlab.engines.init import INITS
from crowdlab.io import safe
from crowdlab.models.majority import majority_labels
from crowdlab.ui import state

# plain keys (survive page switches)
SETTINGS = "sweep.settings"
RESTARTS = "sweep.restarts"  # the restarts job: {"kind", "data_id", "settings", "plan", "rows", "status"}
SWEEP = "sweep.prior"  # the prior-sweep job, same shape
STOP = "sweep.stop"
# widget keys
W_METHOD = "priors.method"
W_RANDOM = "priors.n_random"
W_PRIOR = "priors.prior"
W_STRENGTHS = "priors.strengths"
W_INIT = "priors.init"
W_HARD = "priors.hard"
W_PICK = "priors.pick"
B_RESTARTS = "priors.run_restarts"
B_SWEEP = "priors.run_sweep"
W_TAB = "priors.tab"
TABS = ("Restarts", "Prior sweep")
B_STOP = "priors.stop"
B_USE = "priors.use_start"

STEP_PAGE = "pages/2_Step_through_EM.py"
DEFAULT_STRENGTHS = "0, 0.5, 1, 2, 5, 10, 20"
METRIC_LABEL_CHARS = 15  # a metric label in a quarter of the main column at 1024 px (with its help icon)
NAMED_STARTS = ("majority", "all_good")
RUNNING, DONE, STOPPED = "running", "done", "stopped"


@dataclass(frozen=True)
class LabSettings:
    """The page's choices: method, random restarts R, prior for the restarts, the strengths swept, the start
    used by the sweep, and hard EM."""

    method: str = ""
    n_random: int = 10
    prior: float = 0.0
    strengths: str = DEFAULT_STRENGTHS
    init: str = "majority"
    hard: bool = False


WIDGETS = {
    "method": W_METHOD,
    "n_random": W_RANDOM,
    "prior": W_PRIOR,
    "strengths": W_STRENGTHS,
    "init": W_INIT,
    "hard": W_HARD,
}


def parse_strengths(text: str) -> list[float]:
    """ "0, 0.5, 1" -> [0.0, 0.5, 1.0]; raises ValueError with a message a person can act on."""
    parts = [p for p in text.replace(";", ",").replace(" ", ",").split(",") if p]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"Prior strengths must be numbers separated by commas, e.g. {DEFAULT_STRENGTHS}.") from None
    if not values:
        raise ValueError(f"Give at least one prior strength, e.g. {DEFAULT_STRENGTHS}.")
    if any(v < 0 or not np.isfinite(v) for v in values):
        raise ValueError("Prior strengths are pseudo-counts: they must be 0 or more.")
    return values


def iterative_methods(data) -> list[str]:
    return [m for m in state.method_options(data) if m != "mv"]


# ---------------------------------------------------------------------------- settings <-> widgets
def get_settings(data) -> LabSettings:
    s = st.session_state.get(SETTINGS) or LabSettings()
    options = iterative_methods(data)
    if s.method not in options:
        cfg = state.get_config()
        s = _no_hard_where_none(
            LabSettings(**{**asdict(s), "method": cfg.method if cfg.method in options else options[0]})
        )
        st.session_state[SETTINGS] = s
    return s


def _no_hard_where_none(s: LabSettings) -> LabSettings:
    """Hard EM off for a method that has none (IBCC, MACE (VB): :func:`state.hard_applies`)."""
    return replace(s, hard=False) if s.hard and not state.hard_applies(s.method) else s


def _on_settings() -> None:
    s = st.session_state.get(SETTINGS) or LabSettings()
    changes = {f: st.session_state[k] for f, k in WIDGETS.items() if k in st.session_state}
    st.session_state[SETTINGS] = _no_hard_where_none(LabSettings(**{**asdict(s), **changes}))


def _sync_widgets(s: LabSettings) -> None:
    for field, key in WIDGETS.items():
        st.session_state[key] = getattr(s, field)


# ---------------------------------------------------------------------------- jobs
def _plan(kind: str, s: LabSettings) -> list:
    if kind == "restarts":
        return sweep.restart_plan(int(s.n_random), NAMED_STARTS)
    return parse_strengths(s.strengths)


def _start(kind: str) -> None:
    """on_click of "Run restarts" / "Run prior sweep": a new job replaces the old one of its kind."""
    data = state.get_data()
    s = get_settings(data)
    try:
        plan = _plan(kind, s)
    except ValueError as exc:
        st.session_state[f"{SETTINGS}.error"] = str(exc)
        return
    st.session_state.pop(f"{SETTINGS}.error", None)
    for other in (RESTARTS, SWEEP):  # one job at a time
        job = st.session_state.get(other)
        if job and job["status"] == RUNNING:
            job["status"] = STOPPED
    st.session_state[STOP] = False
    st.session_state[W_TAB] = TABS[0] if kind == "restarts" else TABS[1]  # show the job just started
    st.session_state[RESTARTS if kind == "restarts" else SWEEP] = {
        "kind": kind,
        "data_id": state.get_data_id(),
        "settings": s,
        "plan": plan,
        "rows": [],
        "status": RUNNING,
        "seconds": 0.0,
    }


def on_stop() -> None:
    """on_click of Stop: ``should_stop`` reads the flag; a running job keeps its rows and is marked stopped."""
    st.session_state[STOP] = True
    for key in (RESTARTS, SWEEP):
        job = st.session_state.get(key)
        if job and job["status"] == RUNNING:
            job["status"] = STOPPED


def should_stop() -> bool:
    return bool(st.session_state.get(STOP, False))


def _fit_row(job: dict, data, entry) -> dict:
    s: LabSettings = job["settings"]
    if job["kind"] == "restarts":
        init, seed = entry
        run = fit(data, s.method, init=init, seed=seed, prior=s.prior, hard=s.hard)
        reference = None if data.is_continuous else job.setdefault("reference", majority_labels(data))
        return {"init": init, "seed": seed, **sweep._score(data, run, reference)}
    row = sweep.prior_sweep(data, s.method, [float(entry)], init=s.init, hard=s.hard).iloc[0].to_dict()
    return row


def _entry_name(job: dict, entry) -> str:
    if job["kind"] == "restarts":
        init, seed = entry
        return f"random start (seed {seed})" if init == "random" else INITS.get(init, init).lower()
    return f"prior strength {float(entry):g}"


def work(job: dict, data) -> None:
    """Fit the rest of ``job``'s plan, one fit at a time, under a progress bar (see the module docstring)."""
    n = len(job["plan"])
    what = "Restarts" if job["kind"] == "restarts" else "Prior sweep"
    bar = st.progress(len(job["rows"]) / max(n, 1), text=f"{what}: {len(job['rows'])} of {n} fits done")
    while len(job["rows"]) < n:
        if should_stop():
            job["status"] = STOPPED
            break
        entry = job["plan"][len(job["rows"])]
        t0 = time.perf_counter()
        row = _fit_row(job, data, entry)
        job["rows"].append(row)
        job["seconds"] += time.perf_counter() - t0
        done = len(job["rows"])
        # a Streamlit call: a click (Stop) during the job interrupts the run here, after the row is stored
        bar.progress(done / n, text=f"{what}: {done} of {n} fits done (last: {_entry_name(job, entry)})")
    if len(job["rows"]) == n:
        job["status"] = DONE
    bar.empty()


def table(job: dict) -> pd.DataFrame:
    """The rows finished so far; restarts also get ``optimum`` (0 = best) over those rows."""
    out = pd.DataFrame(job["rows"])
    if job["kind"] == "restarts" and len(out):
        out["optimum"] = sweep.label_optima(out["objective"].to_numpy(dtype=float))
    return out


# one number format per column, so that a column's decimals line up (the objective to 0.01 nats, rates to 0.001)
FORMATS = {"prior": "%g", "objective": "%.2f", "iterations": "%d", "seed": "%d", "optimum": "%d"}


def number_formats(t: pd.DataFrame) -> dict:
    """``column_config`` for a restart or sweep table: :data:`FORMATS`, and 3 decimals for every other float."""
    out = {}
    for col in t.columns:
        fmt = FORMATS.get(col, "%.3f" if pd.api.types.is_float_dtype(t[col]) else None)
        if fmt is not None:
            out[col] = st.column_config.NumberColumn(col, format=fmt)
    return out


def current_job(key: str) -> dict | None:
    """The job under ``key`` when it belongs to the working dataset (a job on another dataset is dropped)."""
    job = st.session_state.get(key)
    if job is not None and job["data_id"] != state.get_data_id():
        del st.session_state[key]
        return None
    return job


# ---------------------------------------------------------------------------- the page
def priors_lab() -> None:
    """Controls, the job in progress (if any) with its Stop button, then the results of both kinds of job."""
    data = state.get_data()
    options = iterative_methods(data)
    if not options:
        st.error("No iterative method applies to this dataset.")
        return
    s = get_settings(data)
    _sync_widgets(s)
    # three rows (the method, the restarts, the sweep): every method title is whole at 1024 px
    c1, c2 = st.columns([3, 2], vertical_alignment="bottom")
    c1.selectbox("Method", options, format_func=state.method_title, key=W_METHOD, on_change=_on_settings)
    c2.checkbox(
        "Hard EM",
        key=W_HARD,
        on_change=_on_settings,
        disabled=not state.hard_applies(s.method),
        help=state.hard_help(s.method),
    )
    r1, r2 = st.columns([3, 2], vertical_alignment="bottom")
    r1.slider("Random restarts R", 0, 50, key=W_RANDOM, on_change=_on_settings)
    r2.number_input("Prior strength (restarts)", min_value=0.0, step=0.5, key=W_PRIOR, on_change=_on_settings)
    d1, d2 = st.columns([3, 2], vertical_alignment="bottom")
    d1.text_input(
        "Prior strengths to sweep (pseudo-counts)",
        key=W_STRENGTHS,
        on_change=_on_settings,
        help="Comma-separated; 0 = maximum likelihood.",
    )
    d2.selectbox("Start of the sweep", state.BASIC_INITS, format_func=INITS.get, key=W_INIT, on_change=_on_settings)
    st.caption(
        f"Restarts: from {INITS['majority'].lower()}, from everyone assumed good, and from R random posteriors "
        "(seeds 0 .. R − 1), each run to convergence. The prior sweep refits from one start at every strength."
    )
    restarts_job, sweep_job = current_job(RESTARTS), current_job(SWEEP)
    running = [j for j in (restarts_job, sweep_job) if j is not None and j["status"] == RUNNING]
    b1, b2, b3, _ = st.columns([2, 2, 1, 3])
    b1.button("Run restarts", key=B_RESTARTS, on_click=_start, args=("restarts",), type="primary", width="stretch")
    b2.button("Run prior sweep", key=B_SWEEP, on_click=_start, args=("sweep",), width="stretch")
    stop_slot = b3.empty()
    error = st.session_state.get(f"{SETTINGS}.error")
    if error:
        st.error(safe.md(error))
    if running:
        stop_slot.button("Stop", key=B_STOP, on_click=on_stop, width="stretch")
        work(running[0], data)
        stop_slot.empty()
    tab_r, tab_s = st.tabs(TABS, key=W_TAB, on_change="rerun")
    with tab_r:
        restarts_results(restarts_job, data)
    with tab_s:
        sweep_results(sweep_job)


def _status(job: dict) -> None:
    n, k = len(job["plan"]), len(job["rows"])
    s: LabSettings = job["settings"]
    head = f"{state.method_title(s.method)}" + (", hard EM" if s.hard else "")
    if job["status"] == STOPPED:
        st.warning(f"Stopped after {k} of {n} fits: the results below are partial ({head}).", icon="⏹️")
    else:
        st.caption(f"{head}: {k} fits in {job['seconds']:.1f} s.")


def restarts_results(job: dict | None, data) -> None:
    if job is None or not job["rows"]:
        st.info("Run restarts to see how much the end point depends on the start.")
        return
    _status(job)
    t = table(job)
    s: LabSettings = job["settings"]
    n_opt = int(t["optimum"].nunique())
    best = t["optimum"].to_numpy() == 0
    # four metrics share the width: labels of at most METRIC_LABEL_CHARS (a column is ~130 px at 1024 px), the
    # rest of what they mean in their help
    cols = st.columns(4)
    cols[0].metric(
        "distinct optima", n_opt, help="End points whose objectives agree within 1e-6 (relative) count once."
    )
    cols[1].metric(
        "reach the best",
        f"{int(best.sum())} of {len(t)}",
        help="Starts that end at the best optimum (the highest objective).",
    )
    cols[2].metric("best objective", f"{t['objective'].max():.6g}")
    if "relabelled" in t.columns:
        cols[3].metric(
            "mirror optima",
            int(t["relabelled"].sum()),
            help="Starts whose classes came out relabelled: the same fit with the classes renamed, the objective "
            "as good, the accuracy not.",
        )
    left, right = st.columns(2)
    left.plotly_chart(plots.restart_scatter(t), key="priors.restart_chart")
    if "relabelled" in t.columns and t["relabelled"].any():
        left.caption(
            "Crosses: the classes came out relabelled against majority vote (a mirror optimum): the fit is as good, "
            "but the names of the classes are swapped, so the accuracy against gold is low."
        )
    right.plotly_chart(plots.objective_spread(t), key="priors.spread_chart")
    st.dataframe(t, hide_index=True, column_config=number_formats(t), key="priors.restart_table")
    labels = [
        f"{r.init}" + (f" (seed {r.seed})" if r.init == "random" else "") + f": objective {r.objective:.6g}"
        for r in t.itertuples()
    ]
    p1, p2 = st.columns([3, 2], vertical_alignment="bottom")
    if st.session_state.get(W_PICK) not in range(len(t)):
        st.session_state[W_PICK] = best_start(t)
    pick = p1.selectbox("Restart", range(len(t)), format_func=labels.__getitem__, key=W_PICK)
    row = t.iloc[int(pick)]
    p2.button(
        "Use this start on the Step page",
        key=B_USE,
        on_click=_use_start,
        args=(s.method, str(row["init"]), int(row["seed"]), float(s.prior), bool(s.hard)),
        width="stretch",
    )
    step_page_link()


def best_start(t: pd.DataFrame) -> int:
    """Row of the first restart that reached the best optimum without relabelling the classes (else the best)."""
    ok = t["optimum"].to_numpy() == 0
    if "relabelled" in t.columns:
        ok &= ~t["relabelled"].to_numpy(dtype=bool)
    return int(np.flatnonzero(ok)[0]) if ok.any() else int(np.argmax(t["objective"].to_numpy()))


def step_page_link() -> None:
    """A link to the Step page (a caption instead where the app was started from a page file, as in tests)."""
    try:
        st.page_link(STEP_PAGE, label="Go to Step through EM", icon=":material/stairs:")
    except StreamlitPageNotFoundError:
        st.caption("Open **Step through EM** in the sidebar.")


def _use_start(method: str, init: str, seed: int, prior: float, hard: bool) -> None:
    state.set_config(method=method, init=init, seed=seed, prior=prior, hard=hard)


def sweep_results(job: dict | None) -> None:
    if job is None or not job["rows"]:
        st.info("Run a prior sweep to see how pseudo-counts change the answer.")
        return
    _status(job)
    t = table(job)
    st.plotly_chart(plots.prior_sweep_figure(t), key="priors.sweep_chart")
    method = job["settings"].method
    st.caption(
        f"{state.method_title(method)}: {state.prior_help(method)} The objective (log-likelihood + log prior) "
        "changes scale, and a moderate prior often helps workers with few labels."
    )
    st.dataframe(t, hide_index=True, column_config=number_formats(t), key="priors.sweep_table")
