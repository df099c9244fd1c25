"""The stepper's tabs: posteriors, workers, class priors, "what just happened" and the likelihood surface.

Each panel draws one snapshot of the run (the cursor's) from what the run already stores; nothing here runs an
EM step. The tabs are lazy (``st.tabs(..., on_change=...)``): only the open tab's panel runs, so a Step costs the
engine step, the curves and one panel. Costs that could grow with the data are bounded: the posterior heatmap
shows one page of items, the confusion grid at most ``MAX_WORKERS`` workers, and the likelihood surface (1,681
objective evaluations) is computed once per (parameters, coordinates) and kept in a small cache in session state.

View choices (order, page, picked item and worker, coordinates, the open tab) are widgets whose values are
copied to plain keys ``view.<name>`` (:func:`state.on_view_widget`) and written back before the widget is drawn,
so they survive a switch of tab or page; a choice that no longer fits the data falls back to its default.

Names shown in Markdown go through :func:`crowdlab.io.safe.md`; the figure builders and
:mod:`crowdlab.teaching.explain` escape
their own; select-box options are plain text (Streamlit renders no Markdown there), so their labels stay raw.

Above the tabs, a run that converged to a relabelled (mirror) optimum is called out with the evidence
(:func:`crowdlab.analysis.sweep.label_switch`). A dataset simulated on the Data page brings its truth along
(:func:`remember_truth`, plain key ``data.truth``): worker types and true confusion matrices beside the estimated
ones, good/bad annotators above P(good), "truth" instead of "gold" on the posterior view.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence

import numpy as np
import streamlit as st

from crowdlab import plots
from crowdlab.analysis import surface, sweep
from crowdlab.engines.init import moment_posterior_start
from crowdlab.engines.run import Run, Snapshot
from crowdlab.io import safe
from crowdlab.io.safe import plural
from crowdlab.models import ClassParams, ScoreParams
from crowdlab.models.majority import majority_labels, tied_items
from crowdlab.teaching import explain
from crowdlab.ui import lab, method_options, presenter, state
from crowdlab.ui.convergence_view import convergence_panel
from crowdlab.ui.intervals import applies as intervals_applies
from crowdlab.ui.intervals import worker_intervals_panel
from crowdlab.ui.live_chart import live_chart
from crowdlab.ui.model_panels import model_details_panel
from crowdlab.ui.reports_view import step_report_panel

# short names: nine long ones overflowed the tab strip at 1024 px (the rest hid behind a scroll arrow)
TABS = (
    "Posterior",
    "Workers",
    "Priors",
    "Formulas",  # what just happened: the half-step's formulas with its numbers
    "Surface",  # the likelihood surface with the EM path
    "Intervals",  # how sure: per-worker intervals
    "Details",  # what only GLAD, MACE and IBCC estimate
    "Stopping",  # convergence: gains, parameter change, why the run stopped
)
W_TAB = "stepper.tab"
W_ORDER = "stepper.post_order"
W_PAGE = "stepper.post_page"
W_WORKERS = "stepper.workers"
W_ITEM = "stepper.explain_item"
W_WORKER = "stepper.explain_worker"
W_SURF_X = "stepper.surface_x"
W_SURF_Y = "stepper.surface_y"
SURFACE_CACHE = "stepper.surface_cache"  # plain key: [(params, x, y, ranges, (xs, ys, Z)), ...], newest last
TRUTH = "data.truth"  # plain key: (data id, truth dict) of a simulated dataset (see remember_truth)

PAGE_SIZE = 25
DEFAULT_WORKERS = 8
MAX_WORKERS = 16
SURFACE_N = 41
SURFACE_CACHE_SIZE = 6
SURFACE_MODELS = ("one_coin", "two_coin", "ds", "scores")

ORDER_UNCERTAIN = "most uncertain first"
ORDER_CHANGED = "changed in this step first"
ORDER_WRONG = "wrong against gold first"
ORDER_DATASET = "dataset order"


# ---------------------------------------------------------------------------- helpers
def _restore(widget_key: str, name: str, valid: Callable[[object], bool], default) -> object:
    """Write the remembered view choice (or ``default`` when it is missing or invalid) into the widget key."""
    value = state.get_view(name)
    if value is None or not valid(value):
        value = default
    st.session_state[widget_key] = value
    return value


def _remember(widget_key: str, name: str) -> dict:
    return {"key": widget_key, "on_change": state.on_view_widget, "args": (widget_key, name)}


def uncertainty(q: np.ndarray) -> np.ndarray:
    """1 - max_k q_nk per row: 0 for a sure row, (K - 1) / K for a flat one."""
    return 1.0 - q.max(axis=1)


def by_activity(data) -> np.ndarray:
    """Workers, the most labels first (ties in worker order)."""
    return np.argsort(-data.labels_per_worker, kind="stable")


def changed_in_step(run: Run) -> np.ndarray:
    """Indices of the latent units whose hard label changed in the current step: after an E-step, that
    E-step's changes; after an M-step (which leaves q as it was), the changes of the E-step just before it."""
    snap = run.current
    if snap.kind == "M" and snap.index > 0 and run.snapshots[snap.index - 1].kind == "E":
        return run.snapshots[snap.index - 1].changed
    return snap.changed


def _changed_mask(run: Run, n: int) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    changed = changed_in_step(run)
    if changed.size:
        mask[changed] = True
    return mask


def _worker_label(data) -> Callable[[int], str]:
    counts = data.labels_per_worker
    return lambda m: f"{data.worker_names[m]} ({plural(int(counts[m]), 'label')})"


def _item_label(data) -> Callable[[int], str]:
    return lambda n: str(data.item_names[n])


# ---------------------------------------------------------------------------- a simulation's truth
def remember_truth(data_id: str, sim) -> None:
    """Keep what a simulation knows beyond the data (the Data page calls this when it makes a simulated dataset
    the working one): worker types and true confusion matrices of a crowd, good/bad flags of the lecture's
    scorers. The items' true classes / means are the dataset's gold already."""
    truth: dict = {}
    if hasattr(sim, "gamma"):
        truth.update(gamma=np.asarray(sim.gamma), pi=np.asarray(sim.pi), worker_types=tuple(sim.worker_types))
    if hasattr(sim, "good"):
        truth.update(good=np.asarray(sim.good, dtype=bool), sigma=float(sim.sigma))
    st.session_state[TRUTH] = (data_id, truth)


def current_truth(data) -> dict | None:
    """The truth of the working dataset when it is a simulation made on the Data page (None otherwise)."""
    held = st.session_state.get(TRUTH)
    if not held or held[0] != state.get_data_id():
        return None
    truth = held[1]
    if "gamma" in truth and truth["gamma"].shape[:2] != (data.n_workers, data.n_classes):
        return None
    if "good" in truth and truth["good"].shape != (data.n_workers,):
        return None
    return truth


def label_switch_notice(run: Run) -> None:
    """Say so when the run's classes are a relabelling (mirror optimum) of the majority vote's, with the
    evidence: agreement with the majority vote and accuracy against gold, as they are and mapped back."""
    data = run.data
    if not run.iterative or data.is_continuous or run.model.info.latent != "item":
        return
    found = sweep.label_switch(data, np.argmax(run.current.q, axis=1))
    if found is None:
        return
    pairs = ", ".join(f"{safe.md(a)} → {safe.md(b)}" for a, b in found.mapping(data.class_names))
    evidence = (
        f"its labels agree with the majority vote on {found.agree:.0%} of the items as they are, on "
        f"{found.agree_mapped:.0%} after renaming the classes ({pairs})"
    )
    if found.accuracy is not None:
        evidence += f"; accuracy against gold {found.accuracy:.1%} as they are, {found.accuracy_mapped:.1%} renamed"
    st.warning(
        "**Label switching: this run sits at a mirror image of the sensible optimum.** EM's objective does not "
        "change when the classes are renamed, so EM can converge to an optimum where every class means another; "
        f"{evidence}. Restart from majority vote, or read the classes through the renaming.",
        icon=":material/swap_horiz:",
    )


DETAILS_MODELS = ("glad", "mace", "mace_vb", "ibcc")  # the models the Details tab has pictures for


def shown_tabs(run: Run) -> tuple[str, ...]:
    """The tabs with something to show for this run's method and data (a tab that would only say "not available"
    is left out: GLAD, MACE and IBCC have no Surface and no Intervals tab; the other methods no Details tab).
    Decided by the method and the data, never by the cursor, so the tab bar stays still while EM steps."""
    key = run.model.info.key
    hidden = set()
    if not surface_applies(run):
        hidden.add("Surface")
    if not intervals_applies(key):
        hidden.add("Intervals")
    if key not in DETAILS_MODELS:
        hidden.add("Details")
    return tuple(t for t in TABS if t not in hidden)


def tab_bar(tabs: Sequence[str] = TABS) -> Sequence:
    """The lazy tabs of the stepper (only the open one runs); the open tab survives page switches (a remembered
    tab the method does not have opens the first one)."""
    _restore(W_TAB, "tab", lambda v: v in tabs, tabs[0])
    return st.tabs(tabs, **_remember(W_TAB, "tab"))


def _workers_and_report(run: Run) -> None:
    """The Workers tab: the model's picture of every worker, then the worker report table."""
    workers_panel(run)
    step_report_panel(run)


def draw_tabs(run: Run) -> None:
    panels = dict(
        zip(
            TABS,
            (
                posterior_panel,
                _workers_and_report,
                class_prior_panel,
                explain_panel,
                surface_panel,
                worker_intervals_panel,
                model_details_panel,
                convergence_panel,
            ),
        )
    )
    label_switch_notice(run)
    method_options.degenerate_notice(run)
    method_options.prior_collapse_notice(run)
    tabs = shown_tabs(run)
    for tab, panel in zip(tab_bar(tabs), (panels[t] for t in tabs)):
        if tab.open:
            with tab:
                panel(run)


# ---------------------------------------------------------------------------- posterior
def posterior_order(q: np.ndarray, changed: np.ndarray, order: str, gold: np.ndarray | None = None) -> np.ndarray:
    """Row order of the posterior table: by uncertainty at this snapshot (ties in dataset order), changed rows
    first, rows whose arg-max disagrees with gold first, or the dataset order."""
    unc = uncertainty(q)
    by_unc = np.argsort(-unc, kind="stable")
    if order == ORDER_CHANGED:
        return by_unc[np.argsort(~changed[by_unc], kind="stable")]
    if order == ORDER_WRONG and gold is not None:
        wrong = (gold >= 0) & (np.argmax(q, axis=1) != gold)
        return by_unc[np.argsort(~wrong[by_unc], kind="stable")]
    if order == ORDER_DATASET:
        return np.arange(q.shape[0])
    return by_unc


def posterior_panel(run: Run) -> None:
    """Items x classes heatmap of q, one page at a time, gold beside it, the items that just changed starred."""
    data = run.data
    snap = run.current
    if run.model.info.latent == "annotator":
        _scores_posterior(run)
        return
    q = snap.q
    N = data.n_items
    gold = data.gold if data.has_gold else None
    changed = _changed_mask(run, N)
    # the dataset order first and by default: its rows stay put from step to step, so a lecturer can follow one item
    # (sorted by uncertainty, the rows moved at every step); the sorted orders are a click away
    orders = [ORDER_DATASET, ORDER_UNCERTAIN, ORDER_CHANGED] + ([ORDER_WRONG] if gold is not None else [])
    n_pages = max(1, math.ceil(N / PAGE_SIZE))
    c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
    _restore(W_ORDER, "post_order", lambda v: v in orders, ORDER_DATASET)
    order = c1.radio("Order", orders, horizontal=True, **_remember(W_ORDER, "post_order"))
    _restore(W_PAGE, "post_page", lambda v: isinstance(v, int) and 1 <= v <= n_pages, 1)
    page = int(c2.number_input(f"Page (of {n_pages})", 1, n_pages, step=1, **_remember(W_PAGE, "post_page")))
    rows = posterior_order(q, changed, order, gold)[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    simulated = current_truth(data) is not None
    tied = None if run.iterative else tied_items(data)  # majority vote: its tied items are marked
    fig = plots.posterior_heatmap(
        q[rows],
        [data.item_names[n] for n in rows],
        data.class_names,
        gold=None if gold is None else gold[rows],
        changed=changed[rows],
        title=f"Posterior q, {lab.where(run, snap)} (rows: items, columns: classes)",
        gold_name="truth" if simulated else "gold",
        tied=None if tied is None else tied[rows],
    )
    live_chart(lab.fit_title(fig, lab.main_panel_px()), "stepper.posterior_chart")
    notes = [f"Items {(page - 1) * PAGE_SIZE + 1}–{(page - 1) * PAGE_SIZE + len(rows)} of {N:,}, {order}"]
    notes.append("uncertainty = 1 − max q at this snapshot")
    if tied is not None:
        notes.append(
            f"⚖ after a name: a tied vote ({plural(int(tied.sum()), 'item')} in all; each tied class gets an equal "
            f"share of q, the hard label goes to {method_options.TIE_PHRASES[run.model.tie_break]})"
        )
    if run.iterative:
        notes.append(
            f"★ and a dotted outline: hard label changed in this step's E-step ({plural(int(changed.sum()), 'item')} "
            "in all)"
        )
    if gold is not None and simulated:
        notes.append(
            "red outlines mark each item's true class (the simulation knows it); the truth column is green where "
            "the arg-max agrees"
        )
    elif gold is not None:
        notes.append("red outlines mark the gold class; the gold column is green where the arg-max agrees")
    st.caption("; ".join(notes) + ".")


def _scores_posterior(run: Run) -> None:
    """Scores model: the latent variable is per annotator (good or bad); the items carry means mu."""
    data = run.data
    snap = run.current
    truth = current_truth(data)
    good = None if truth is None else truth.get("good")
    left, right = st.columns(2)
    with left:
        fig = plots.annotator_bars(  # in annotator order: a bar stays in its place from step to step
            snap.q[:, 1],
            data.worker_names,
            truth=good,
            title=f"P(annotator is good), {lab.where(run, snap)}",
        )
        live_chart(lab.wrap_title(fig, 30), "stepper.annotator_chart")  # whole in a narrow column
        st.caption(
            "The posterior of the scores model is one number per annotator: P(good | their scores), in annotator "
            "order." + (" Above the bars (truth): what the simulation drew, good or bad." if good is not None else "")
        )
    with right:
        params: ScoreParams = snap.params
        if data.has_gold:
            ref, ref_name = data.gold, ("true mean" if truth is not None else "gold score")
        else:
            ref = np.bincount(data.item, weights=data.value, minlength=data.n_items) / np.maximum(
                data.labels_per_item, 1
            )
            ref_name = "plain average"
        fig = plots.item_means_scatter(
            params.mu, ref, data.item_names, reference_name=ref_name, axis_range=plots.item_means_range(data, ref)
        )
        live_chart(fig, "stepper.means_chart")
        st.caption(f"Each item's estimated mean μᵢ against its {ref_name}; σ = {params.sigma:.4g}.")


# ---------------------------------------------------------------------------- workers
def _grid_size() -> dict:
    """A confusion grid in the left of two columns (~330 px at 1024 px): two matrices a row, as more per row
    squeezed their numbers to ~6 px; taller cells in presenter mode."""
    return dict(cols=2, cell_height=190 if presenter.is_on() else 150, width_px=330)


def majority_agreement(data) -> np.ndarray:
    """(M,) the share of each worker's labels that agree with the (hard) majority vote."""
    mv = majority_labels(data)
    agree = np.bincount(data.worker, weights=(data.label == mv[data.item]), minlength=data.n_workers)
    return agree / np.maximum(data.labels_per_worker, 1)


def reliability_x(data) -> tuple[np.ndarray, str, bool]:
    """x of the reliability chart: the number of labels, or, when every worker labelled equally many items (a
    constant x would stack every point on one vertical line), the raw agreement with the majority vote."""
    n = data.labels_per_worker
    if n.min() != n.max():
        return n.astype(float), "number of labels", True
    return majority_agreement(data), "agreement with majority", False  # short: whole in a narrow chart


def _rms_residual(data, p: ScoreParams) -> np.ndarray:
    resid = data.value - p.mu[data.item]
    n = np.maximum(data.labels_per_worker, 1)
    return np.sqrt(np.bincount(data.worker, weights=resid * resid, minlength=data.n_workers) / n)


def _scores_workers(run: Run) -> None:
    data = run.data
    snap = run.current
    p: ScoreParams = snap.params
    rms = _rms_residual(data, p)
    truth = current_truth(data)
    good = None if truth is None else truth.get("good")
    fig = plots.scores_vs_means(
        data.value,
        p.mu[data.item],
        snap.q[data.worker, 1],
        [data.worker_names[m] for m in data.worker],
        sigma=p.sigma,
        title=f"Every score against its item's mean μᵢ ({lab.where(run, snap)})",
    )
    left, right = st.columns([3, 2])
    live_chart(fig, "stepper.scores_chart", where=left)
    left.caption(
        f"Colour: the annotator's P(good). A good annotator's scores lie around the diagonal, within ±2σ "
        f"(σ = {p.sigma:.4g}, dashed); a bad one's spread over the whole range [{p.low:g}, {p.high:g}]."
    )
    order = np.argsort(snap.q[:, 1], kind="stable")
    table = {
        "annotator": [data.worker_names[m] for m in order],
        "scores": data.labels_per_worker[order],
        "P(good)": snap.q[order, 1],
        "RMS(s − μ)": rms[order],
    }
    if good is not None:
        table["truth"] = ["good" if good[m] else "bad" for m in order]
    right.dataframe(
        table,
        hide_index=True,
        key="stepper.annotator_table",
        column_config={
            "P(good)": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.3f"),
            "RMS(s − μ)": st.column_config.NumberColumn(format="%.3g"),
        },
    )
    note = " The truth column is what the simulation drew." if good is not None else ""
    right.caption("The least trusted first." + note)


def _truth_workers(data, params: ClassParams, truth: dict, picked: list[int]) -> None:
    """A simulation's worker types and true confusion matrices beside the estimated ones (each picked worker's
    estimate, then its truth, side by side)."""
    gamma = truth["gamma"]
    acc_true = np.diagonal(gamma, axis1=1, axis2=2) @ truth["pi"]
    acc_est = params.worker_accuracy()
    order = by_activity(data)
    st.markdown("**The simulation's truth** (the crowd was drawn from these)")
    left, right = st.columns([1, 1] if data.n_classes > 2 else [3, 2])
    with left:
        if picked:
            shown = picked[: MAX_WORKERS // 2]
            pairs = np.stack([g for m in shown for g in (params.gamma[m], gamma[m])])
            names = [f"{data.worker_names[m]}: {side}" for m in shown for side in ("estimate", "truth")]
            fig = plots.confusion_grid(
                pairs,
                names,
                data.class_names,
                max_workers=MAX_WORKERS,
                **_grid_size(),  # each worker's estimate beside its truth
                title="Estimated and true Γₘ side by side (columns: true class)",
            )
            live_chart(fig, "stepper.true_confusion_chart")
    with right:
        st.dataframe(
            {
                "worker": [data.worker_names[m] for m in order],
                "type": [truth["worker_types"][m] for m in order],
                "true acc.": acc_true[order],
                "est. acc.": acc_est[order],
            },
            hide_index=True,
            key="stepper.truth_table",
            column_config={
                "true acc.": st.column_config.NumberColumn(format="%.3f"),
                "est. acc.": st.column_config.NumberColumn(format="%.3f"),
            },
        )
        err = float(np.abs(np.asarray(gamma) - params.gamma).sum(axis=1).mean() / 2)
        st.caption(
            f"Mean distance between true and estimated confusion columns (total variation): {err:.3f}. "
            "Accuracy = Σₖ πₖ Γₘ(k, k), each under its own class prior (true π, estimated π)."
        )


def workers_panel(run: Run) -> None:
    """Confusion matrices of the picked workers (fixed [0, 1] colours), the reliability chart, and for a
    simulation the true worker types and confusion matrices beside the estimates."""
    data = run.data
    snap = run.current
    K = 2 if data.is_continuous else data.n_classes
    if run.model.info.latent == "annotator":
        _scores_workers(run)
        return
    x, x_title, counts = reliability_x(data)
    x_note = (
        "every worker labelled the same number of items, so x is the raw agreement with the majority vote"
        if not counts
        else "x: the number of labels"
    )
    if not isinstance(snap.params, ClassParams):
        st.info("Majority vote estimates no confusion matrices; here is how often each worker agrees with it.")
        fig = plots.reliability_scatter(
            data.labels_per_worker.astype(float),
            majority_agreement(data),
            data.worker_names,
            chance=1.0 / K,
            title="Workers: agreement with the majority vote",
            y_title="agreement with majority",
        )
        live_chart(fig, "stepper.reliability_chart")
        return
    params: ClassParams = snap.params
    active = by_activity(data)
    options = active.tolist()
    default = options[:DEFAULT_WORKERS]
    _restore(W_WORKERS, "workers", lambda v: bool(v) and all(m in set(options) for m in v), default)
    picked = st.multiselect(
        "Workers to show",
        options,
        format_func=_worker_label(data),
        max_selections=MAX_WORKERS,
        **_remember(W_WORKERS, "workers"),
    )
    left, right = st.columns([3, 2])
    with left:
        if picked:
            K = data.n_classes
            fig = plots.confusion_grid(
                params.gamma[:, :K],  # the class answers; a "can't tell" row is told below
                data.worker_names,
                data.class_names,
                max_workers=MAX_WORKERS,
                workers=picked,
                **_grid_size(),
            )
            live_chart(lab.wrap_title(fig, 44), "stepper.confusion_chart")
            st.caption(
                f"{len(picked)} of {data.n_workers:,} workers (default: the most active). Colours fixed to [0, 1] "
                "at every iteration; row 0 on top."
            )
            if data.response_names:
                said = " / ".join(safe.md(r) for r in data.response_names)
                rates = "; ".join(
                    f"{safe.md(data.worker_names[m])}: "
                    + ", ".join(f"{params.gamma[m, K:, k].sum():.2f}" for k in range(min(K, 6)))
                    for m in picked
                )
                st.caption(
                    f"Each column also gives \"can't tell\" ({said}) a share, not drawn: P(can't tell | true class "
                    f"{', '.join(safe.md(c) for c in data.class_names[:6])}) = {rates}. The drawn class rows of a "
                    "column sum to one minus it."
                )
        else:
            st.info("Pick at least one worker to see a confusion matrix.")
    with right:
        fig = plots.reliability_scatter(
            x,
            params.worker_accuracy(),
            data.worker_names,
            highlight=picked,
            chance=1.0 / K,
            x_title=x_title,
            counts=counts,
        )
        live_chart(fig, "stepper.reliability_chart")
        st.caption(f"Estimated accuracy Σₖ πₖ Γₘ(k, k) per worker; {x_note}; dotted: chance (1/K).")
        if "alpha" in params.extra:
            fig = plots.sens_spec_scatter(params.extra["alpha"], params.extra["beta"], data.worker_names)
            live_chart(fig, "stepper.sens_spec_chart")
    truth = current_truth(data)
    if truth is not None and "gamma" in truth:
        _truth_workers(data, params, truth, picked)


# ---------------------------------------------------------------------------- class priors
def class_prior_panel(run: Run) -> None:
    data = run.data
    snap = run.current
    if isinstance(snap.params, ScoreParams):
        p = snap.params
        fig = plots.class_prior_bars(
            np.array([1.0 - p.pi_good, p.pi_good]), ["bad", "good"], title="Prior of an annotator being bad / good"
        )
        live_chart(fig, "stepper.prior_chart")
        truth = current_truth(data)
        cols = st.columns(3 if truth is not None and "good" in truth else 2)
        cols[0].metric("π_good", f"{p.pi_good:.3f}")
        cols[1].metric("σ (good annotators' noise)", f"{p.sigma:.4g}")
        st.caption(
            f"A bad annotator's scores are uniform on [{p.low:g}, {p.high:g}] ({explain.range_note(p)}): "
            f"density {1 / (p.high - p.low):.4g}."
        )
        if len(cols) == 3:
            cols[2].metric("Truth: share good, σ", f"{truth['good'].mean():.3f}, {truth['sigma']:.4g}", border=False)
        return
    reference = None
    if data.has_gold:
        g = data.gold[data.gold >= 0]
        reference = np.bincount(g, minlength=data.n_classes) / max(g.size, 1)
    if isinstance(snap.params, ClassParams):
        pi, title = snap.params.pi, f"Class prior π, {lab.where(run, snap)}"
    else:
        pi, title = snap.q.mean(axis=0), "Share of the (soft) majority votes"
    left, right = st.columns(2)
    with left:
        fig = plots.class_prior_bars(pi, data.class_names, reference=reference, title=title)
        live_chart(fig, "stepper.prior_chart")
        if reference is not None:
            st.caption("Red bars: the share of each class among the items with gold.")
    if run.iterative:
        with right:
            snaps = run.snapshots
            x = state.metrics(run)["x"]
            pis = np.array([s.params.pi for s in snaps])
            fig = plots.metric_curve(
                x,
                {f"π({c})": pis[:, k] for k, c in enumerate(data.class_names)},
                float(x[run.index]),
                title="π over the iterations",
            )
            live_chart(fig, "stepper.prior_path_chart")


# ---------------------------------------------------------------------------- what just happened
def _latex(lines: Sequence[str]) -> None:
    for line in lines:
        st.latex(line)


def explain_panel(run: Run) -> None:
    """The formulas of the half-step that produced this snapshot, with the numbers of a picked item / worker; in
    presenter mode at the narrower width (:func:`crowdlab.teaching.explain.narrow`): its larger font puts this tab
    beside
    the curves, 446 px wide with the sidebar open, where Dawid-Skene's products ran 80 px past the edge."""
    with explain.narrow() if lab.beside() else contextlib.nullcontext():
        _explain_panel(run)


def _explain_panel(run: Run) -> None:
    data = run.data
    snap = run.current
    scores = run.model.info.latent == "annotator"
    key = run.model.info.key
    q_unc = uncertainty(snap.q) if not scores else None
    items = range(data.n_items)
    workers = range(data.n_workers)
    default_item = int(np.argmax(q_unc)) if q_unc is not None else _most_spread_item(data)
    default_worker = int(by_activity(data)[0]) if not scores else int(np.argmin(np.abs(snap.q[:, 1] - 0.5)))
    c1, c2 = st.columns(2)
    _restore(W_ITEM, "explain_item", lambda v: isinstance(v, int) and 0 <= v < data.n_items, default_item)
    item = c1.selectbox(
        "Item (default: " + ("the scores that disagree most)" if scores else "the most uncertain)"),
        items,
        format_func=_item_label(data),
        **_remember(W_ITEM, "explain_item"),
    )
    _restore(W_WORKER, "explain_worker", lambda v: isinstance(v, int) and 0 <= v < data.n_workers, default_worker)
    worker = c2.selectbox(
        ("Annotator (default: the least certain)" if scores else "Worker (default: the most active)"),
        workers,
        format_func=_worker_label(data),
        **_remember(W_WORKER, "explain_worker"),
    )
    if data.is_soft:
        st.caption(explain.SOFT_NOTE)
    if not run.iterative:
        _explain_majority(data, int(item))
        return
    prev = run.snapshot(snap.index - 1) if snap.index > 0 else None  # with its posterior (recomputed if released)

    own = explain.NEW_MODEL_EXPLAINERS.get(key)  # GLAD, MACE, IBCC: their own formulas

    def e_lines(params) -> list[str]:
        if own:
            return own[0](data, params, int(item))
        if scores:
            return explain.e_step_scores(data, params, int(worker))
        return explain.e_step_classes(data, params, int(item), key)

    def m_lines(q, result=None) -> list[str]:
        if own:  # the M-step's result for q: the next snapshot's, or computed now for the preview
            after = result if result is not None else run.model.m_step(data, snap.post)
            extra = {"alpha_prior": run.model.alpha_prior} if key == "glad" else {}  # its prior's term too
            return own[1](data, q, after, int(worker), **extra)
        if scores:
            lo, hi = run.model._range(data)
            return explain.m_step_scores(
                data, q, int(item), prior=getattr(run.model, "prior", 0.0), sigma_floor=run.model._sigma_min(lo, hi)
            )
        return explain.m_step_classes(data, q, int(worker), key)

    wname, iname = safe.md(data.worker_names[worker]), safe.md(data.item_names[item])
    e_unit = f"annotator **{wname}**" if scores else f"item **{iname}**"
    m_unit = f"item **{iname}**" if scores else f"worker **{wname}**"
    if snap.kind == "init":
        st.markdown(f"**The start: {run.start_description}.** {_start_story(run)}")
        if run.kind_after(snap) == "E":
            if not scores:
                st.latex(r"q_0(\text{this item}) = (" + ",\\ ".join(f"{v:.3g}" for v in snap.q[item]) + ")")
            st.markdown(f"Then θ₀ = M-step(q₀); for {m_unit}:")
            _latex(m_lines(snap.q, snap.params))
        else:
            st.markdown(f"Then q₀ = E-step(θ₀); for {e_unit}:")
            _latex(e_lines(snap.params))
    elif snap.kind == "E":
        st.markdown(
            f"**E-step just done** ({lab.snapshot_label(prev)} → {lab.snapshot_label(snap)}): the posterior q from "
            f"the parameters θ of {lab.snapshot_label(prev)}, here for {e_unit}."
        )
        _latex(e_lines(prev.params))
        if run.model.hard:
            st.caption("Hard EM then keeps only the arg-max: q becomes one-hot.")
    else:
        st.markdown(
            f"**M-step just done** ({lab.snapshot_label(prev)} → {lab.snapshot_label(snap)}): the parameters θ from "
            f"the posterior q of {lab.snapshot_label(prev)}, here for {m_unit}."
        )
        _latex(m_lines(prev.q, snap.params))
    if getattr(run.model, "prior", 0.0) > 0 and snap.kind != "E":
        st.caption(
            f"With prior strength {run.model.prior:g} the M-step also adds pseudo-counts (MAP); the fractions shown "
            "are the maximum-likelihood ones, the stored estimate is pulled towards the prior."
        )
    nxt = run.kind_after(snap)
    if nxt is not None:
        with st.expander(f"The next half-step ({nxt}-step) from this snapshot"):
            _latex(e_lines(snap.params) if nxt == "E" else m_lines(snap.q))


def _most_spread_item(data) -> int:
    """Scores: the item whose scores disagree most (largest variance), the most telling weighted mean."""
    n = np.maximum(data.labels_per_item, 1)
    mean = np.bincount(data.item, weights=data.value, minlength=data.n_items) / n
    var = np.bincount(data.item, weights=(data.value - mean[data.item]) ** 2, minlength=data.n_items) / n
    return int(np.argmax(var))


SCORES_STARTS = {  # the scores model's starts ("majority" is "all_good" there, crowdlab.engines.init)
    "all_good": "Everyone is assumed good (wₐ = 1): μ and σ come from all scores, and π_good starts at 0.5.",
    "random": "Each annotator's wₐ = P(good) is drawn at random (uniform on [0, 1]) from the seed; μ, σ and π_good "
    "come from the M-step on them.",
    "posterior": "One annotator is taken to be good (wₐ = 1), every other one bad (wₐ = 0); μ, σ and π_good come "
    "from the M-step on that: the start from which EM finds the degenerate maximum.",
}


def _start_story(run: Run) -> str:
    if run.model.info.latent == "annotator":
        return SCORES_STARTS.get("all_good" if run.init == "majority" else run.init, "")
    if run.init == "moments" and moment_posterior_start(run.model):
        return (
            "(π, Γ) from matching the label statistics' moments (Traganitis & Giannakis, Alg. 2); q₀ is "
            "Dawid-Skene's E-step from them, and this model's own parameters come from its first M-step."
        )
    return {
        "majority": "q₀ is each item's share of votes per class (a soft majority vote).",
        "all_good": "q₀ is the posterior if every worker were right with probability 0.8, errors spread evenly.",
        "random": "q₀ is drawn at random (a flat Dirichlet per item) from the seed.",
        "moments": "θ₀ = (π, Γ) from matching the label statistics' moments (Traganitis & Giannakis, Alg. 2); "
        "q₀ is the E-step from θ₀.",
    }.get(run.init, "")


def _explain_majority(data, item: int) -> None:
    votes = data.vote_counts[item]
    total = max(votes.sum(), 1.0)
    st.markdown("**Majority vote** has no parameters and takes no steps: each item's posterior is its share of votes.")
    st.latex(r"q_{nk} = \frac{\#\{\text{labels of item } n \text{ that say } k\}}{\#\{\text{labels of item } n\}}")
    parts = [rf"\frac{{{int(v)}}}{{{int(total)}}}" for v in votes]
    _latex(explain.wrap(r"\text{this item}: q = (" + ",\\ ".join(parts) + ")"))


# ---------------------------------------------------------------------------- likelihood surface
def surface_defaults(model_key: str, data, coords: list[surface.Coord]) -> tuple[int, int]:
    """Indices into ``coords``: alpha and beta of the most active worker (two-coin), Gamma(1|1) and Gamma(0|0) of
    the most active worker (binary Dawid-Skene); the accuracies theta of the two most active workers (one-coin;
    theta and p with a single worker); sigma and pi_good (the scores model)."""
    if model_key == "scores":
        return coords.index(surface.Coord("sigma")), coords.index(surface.Coord("pi_good"))
    active = by_activity(data)
    if model_key in ("two_coin", "ds"):
        a, b = ("alpha", "beta") if model_key == "two_coin" else ("g11", "g00")
        return coords.index(surface.Coord(a, int(active[0]))), coords.index(surface.Coord(b, int(active[0])))
    x = coords.index(surface.Coord("theta", int(active[0])))
    y = coords.index(surface.Coord("theta", int(active[1]))) if len(active) > 1 else len(coords) - 1
    return x, y


def _params_snapshot(run: Run) -> Snapshot:
    """The snapshot whose parameters the cursor shows (after an E-step: the one before, same parameters)."""
    i = run.index
    while i > 0 and run.snapshots[i].kind == "E":
        i -= 1
    return run.snapshots[i]


def cached_surface(run: Run, params, x: surface.Coord, y: surface.Coord, ranges: tuple):
    """(xs, ys, Z) for these parameters, coordinates and grid ranges, from the session's small cache or computed
    now."""
    cache = st.session_state.setdefault(SURFACE_CACHE, [])
    for p, cx, cy, rg, value in cache:
        if p is params and cx == x and cy == y and rg == ranges:
            return value
    with st.spinner(f"Evaluating the objective on a {SURFACE_N} × {SURFACE_N} grid..."):
        value = surface.objective_surface(
            run.data, run.model, params, x, y, n=SURFACE_N, x_range=ranges[0], y_range=ranges[1]
        )
    cache.append((params, x, y, ranges, value))
    del cache[:-SURFACE_CACHE_SIZE]
    return value


def surface_applies(run: Run) -> bool:
    data = run.data
    key = run.model.info.key
    if key == "scores":
        return True
    if data.response_names:  # the surface's coordinates are the class cells of two-class confusion matrices
        return False
    return key in SURFACE_MODELS and not data.is_continuous and data.n_classes == 2


def surface_panel(run: Run) -> None:
    data = run.data
    key = run.model.info.key
    if not surface_applies(run):
        st.info(
            "The likelihood surface is drawn for Dawid-Skene, one-coin and two-coin on two-class data (e.g. "
            "bluebirds or textual entailment) and for the lecture's scores model: pick one of them to watch EM "
            "climb."
            + (
                ' Not with "can\'t tell" responses (read the file without them to see it).'
                if data.response_names
                else ""
            )
        )
        return
    coords = surface.coords_for(key, data.n_workers, data.n_items)
    labels = [c.label(data) for c in coords]
    dx, dy = surface_defaults(key, data, coords)
    valid = lambda v: isinstance(v, int) and 0 <= v < len(coords)  # noqa: E731
    c1, c2 = st.columns(2)
    _restore(W_SURF_X, "surface_x", valid, dx)
    ix = c1.selectbox(
        "x parameter", range(len(coords)), format_func=labels.__getitem__, **_remember(W_SURF_X, "surface_x")
    )
    _restore(W_SURF_Y, "surface_y", valid, dy)
    iy = c2.selectbox(
        "y parameter", range(len(coords)), format_func=labels.__getitem__, **_remember(W_SURF_Y, "surface_y")
    )
    if ix == iy:
        st.warning("Pick two different parameters.")
        return
    cx, cy = coords[ix], coords[iy]
    base = _params_snapshot(run)
    ranges = (surface.coord_range(run, cx), surface.coord_range(run, cy))
    xs, ys, Z = cached_surface(run, base.params, cx, cy, ranges)
    px, py, idx = surface.em_path(run, cx, cy)
    keep = idx <= base.index
    done = run.converged and base.index == idx[-1]
    fig = plots.objective_contour(
        xs,
        ys,
        Z,
        px[keep],
        py[keep],
        path_index=idx[keep],
        x_title=labels[ix],
        y_title=labels[iy],
        title=f"Objective over {labels[ix]} and {labels[iy]} ({lab.where(run, base)})",
        end_label="end (converged)" if done else "now",
    )
    live_chart(fig, "stepper.surface_chart")
    objective = np.array([run.snapshots[i].objective for i in idx[keep]])
    with st.expander("The EM path in numbers"):
        st.dataframe(
            {"snapshot": idx[keep], labels[ix]: px[keep], labels[iy]: py[keep], "objective": objective},
            hide_index=True,
            key="stepper.surface_path",
            column_config={
                labels[ix]: st.column_config.NumberColumn(format="%.4g"),
                labels[iy]: st.column_config.NumberColumn(format="%.4g"),
                "objective": st.column_config.NumberColumn(format="%.2f"),
            },
        )
    hard = " Hard EM climbs the complete-data objective, not this one." if run.model.hard else ""
    density = ""
    if key == "scores":
        p = base.params
        density = (
            f" Bad annotators' density: {1 / (p.high - p.low):.4g} on [{p.low:g}, {p.high:g}] "
            f"({explain.range_note(p)})."
        )
    st.caption(
        "Colours: the objective (log-likelihood" + (" + log prior" if run.model.has_prior else "") + ") relative "
        f"to the best point of this slice (yellow star). Every other parameter is held at its value at snapshot "
        f"{base.index}, so this is one 2-D slice of a surface over all parameters, and the EM path (the start, "
        "then every M-step up to now) is its projection: EM moves all parameters at once, so the path need not "
        "climb this slice step by step; at convergence it ends at the slice's best point." + hard + density
    )
