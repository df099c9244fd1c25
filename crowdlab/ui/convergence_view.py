"""The Step page's "Convergence" tab: how fast EM is still moving, and why the run stopped.

It plots :meth:`crowdlab.engines.run.Run.convergence_trace` (per iteration: the objective gain and the largest parameter
change, on a log10 scale with a fixed y range) with the cursor's iteration marked, says why a run to convergence
stopped (:data:`crowdlab.engines.run.STOP_REASONS`), and explains plateaus: the objective gain can fall to almost
nothing
near a saddle point and then rise again, which is why the stopping rule also watches the parameters.
"""

from __future__ import annotations

import streamlit as st

from crowdlab import plots
from crowdlab.engines.run import STILL, STOP_REASONS, Run
from crowdlab.io.safe import plural

PLATEAU_NOTE = (
    "A plateau is not always the end. Near a saddle point EM's steps become tiny, so both curves drop, and then "
    "EM slides off the saddle and climbs again: Dawid-Skene on the CrowdScale 2013 fact-evaluation set pauses "
    "around iterations 60–160 and then gains another 284 nats. This is why crowdlab calls a run converged only "
    "when the objective has stopped changing *and* the parameter changes keep shrinking geometrically (a fixed "
    "point), for 10 iterations in a row; a run whose objective has not risen above rounding error for 20 "
    "iterations while its parameters move without shrinking is reported as stalled (if they keep shrinking, EM "
    "is closing in on the fixed point: the objective goes flat first, and the run goes on until it settles)."
)


HARD_NOTE = (
    "Hard EM stops differently: it reaches its fixed point exactly, in a finite number of steps. Once no item's "
    "arg-max label changes, the M-step returns the same parameters (a change of 0, drawn at the floor) and the run "
    "stops at once; the 10-iteration test is for soft EM, which only approaches its fixed point. "
)


def stop_sentence(run: Run) -> str:
    """Why the run stopped, in words (or where it stands when it was stepped by hand). A run that converged
    because its parameters stopped moving altogether (hard EM, once no label changes) says so."""
    change = run.last.param_change if run.last.kind == "M" else None
    exact = change is not None and 0 <= change <= STILL
    if run.stop_reason == "converged" and exact:
        return "Stop reason: converged: the last iteration left every parameter where it was (an exact fixed point)."
    if run.stop_reason in STOP_REASONS:
        return f"Stop reason: {STOP_REASONS[run.stop_reason]}."
    if run.converged:
        return "The last step passes the convergence tests (objective and parameters settled)."
    return f"Not converged yet: {plural(run.last.iteration, 'iteration')} so far (press Run to convergence, G)."


def convergence_panel(run: Run) -> None:
    """log10 objective gain and parameter change per iteration, the stop reason and the plateau note."""
    if not run.iterative:
        st.info("Majority vote is not iterative: there is nothing to converge.")
        return
    trace = run.convergence_trace()
    objective = run.last.objective
    tol_line = None if objective is None else run.tol * max(1.0, abs(objective))
    fig = plots.convergence_chart(
        trace,
        run.current.iteration,
        tol_line=tol_line,
        title=f"How fast EM is still moving (cursor: iteration {run.current.iteration})",
    )
    st.plotly_chart(fig, key="stepper.convergence_chart")
    hard = " (hard EM: the gain is that of the complete-data objective)" if run.model.hard else ""
    st.markdown(f"**{stop_sentence(run)}**")
    st.caption(
        "Blue: log10 of the objective's gain in each iteration" + hard + "; purple: log10 of the largest change "
        "of any parameter; dashed: the objective test's threshold (tolerance × |objective|); dotted red: the "
        "cursor. Gains at or below zero are drawn at the floor (10^-16). "
        + (HARD_NOTE if run.model.hard else "")
        + PLATEAU_NOTE
    )
