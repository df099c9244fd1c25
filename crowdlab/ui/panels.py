"""The stepper's tabs: posteriors, workers, class priors, "what just happened" and the likelihood surface.

Each panel draws one snapshot of the run (the cursor's) from what the run already stores; nothing here runs an
EM step. The tabs are lazy (``st.tabs(..., on_change=...)``): only the open tab's panel runs, so a Step costs the
engine step, the curves and one panel. Costs that could grow with the data are bounded: the posterior heatmap
shows one page of items, the confusion grid at most ``MAX_WORKERS`` workers, and the likelihood surface (1,681
objective evaluations) is computed once per (parameters, coordinates) and kept in a small cache in session state.

View choices (order, page, picked item and worker, coordinates, the open tab) are widgets whose values are
copied to plain keys ``view.<name>`` (:func:`state.on_view_widget`) and written back before the widget is drawn,
so they survive a switch of tab or page; a choice that no longer fits the data falls back to its default.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import streamlit as st

from crowdlab import explain, plots, surface
from crowdlab.em import Run, Snapshot
from crowdlab.models import ClassParams, ScoreParams
from crowdlab.models.majority import majority_labels
from crowdlab.ui import state
from crowdlab.ui.intervals import worker_intervals_panel

TABS = ("Posterior", "Workers", "Class priors", "What just happened", "Likelihood surface", "How sure? (intervals)")
W_TAB = "stepper.tab"
W_ORDER = "stepper.post_order"
W_PAGE = "stepper.post_page"
W_WORKERS = "stepper.workers"
W_ITEM = "stepper.explain_item"
W_WORKER = "stepper.explain_worker"
W_SURF_X = "stepper.surface_x"
W_SURF_Y = "stepper.surface_y"
SURFACE_CACHE = "stepper.surface_cache"  # plain key: [(params, x, y, (xs, ys, Z)), ...], newest last

PAGE_SIZE = 25
DEFAULT_WORKERS = 8
MAX_WORKERS = 16
SURFACE_N = 41
SURFACE_CACHE_SIZE = 6
SURFACE_MODELS = ("one_coin", "two_coin")

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
    return lambda m: f"{data.worker_names[m]} ({counts[m]:,} labels)"


def _item_label(data) -> Callable[[int], str]:
    return lambda n: str(data.item_names[n])


def tab_bar() -> Sequence:
    """The lazy tabs of the stepper (only the open one runs); the open tab survives page switches."""
    _restore(W_TAB, "tab", lambda v: v in TABS, TABS[0])
    return st.tabs(TABS, **_remember(W_TAB, "tab"))


def draw_tabs(run: Run) -> None:
    panels = (posterior_panel, workers_panel, class_prior_panel, explain_panel, surface_panel, worker_intervals_panel)
    for tab, panel in zip(tab_bar(), panels):
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
    orders = [ORDER_UNCERTAIN, ORDER_CHANGED] + ([ORDER_WRONG] if gold is not None else []) + [ORDER_DATASET]
    n_pages = max(1, math.ceil(N / PAGE_SIZE))
    c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
    _restore(W_ORDER, "post_order", lambda v: v in orders, ORDER_UNCERTAIN)
    order = c1.radio("Order", orders, horizontal=True, **_remember(W_ORDER, "post_order"))
    _restore(W_PAGE, "post_page", lambda v: isinstance(v, int) and 1 <= v <= n_pages, 1)
    page = int(c2.number_input(f"Page (of {n_pages})", 1, n_pages, step=1, **_remember(W_PAGE, "post_page")))
    rows = posterior_order(q, changed, order, gold)[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    fig = plots.posterior_heatmap(
        q[rows],
        [data.item_names[n] for n in rows],
        data.class_names,
        gold=None if gold is None else gold[rows],
        changed=changed[rows],
        title=f"Posterior q at snapshot {snap.index} (rows: items, columns: classes)",
    )
    st.plotly_chart(fig, key="stepper.posterior_chart")
    notes = [f"Items {(page - 1) * PAGE_SIZE + 1}–{(page - 1) * PAGE_SIZE + len(rows)} of {N:,}, {order}"]
    notes.append("uncertainty = 1 − max q at this snapshot")
    if run.iterative:
        notes.append(
            f"★ and a dotted outline: hard label changed in this step's E-step ({changed.sum():,} items in all)"
        )
    if gold is not None:
        notes.append("red outlines mark the gold class; the gold column is green where the arg-max agrees")
    st.caption("; ".join(notes) + ".")


def _scores_posterior(run: Run) -> None:
    """Scores model: the latent variable is per annotator (good or bad); the items carry means mu."""
    data = run.data
    snap = run.current
    left, right = st.columns(2)
    with left:
        order = np.argsort(snap.q[:, 1], kind="stable")
        fig = plots.annotator_bars(
            snap.q[order, 1],
            [data.worker_names[m] for m in order],
            title=f"P(annotator is good) at snapshot {snap.index}",
        )
        st.plotly_chart(fig, key="stepper.annotator_chart")
        st.caption(
            "The posterior of the scores model is one number per annotator: P(good | their scores); "
            "the least trusted annotators first."
        )
    with right:
        params: ScoreParams = snap.params
        if data.has_gold:
            ref, ref_name = data.gold, "gold score"
        else:
            ref = np.bincount(data.item, weights=data.value, minlength=data.n_items) / np.maximum(
                data.labels_per_item, 1
            )
            ref_name = "plain average"
        fig = plots.item_means_scatter(params.mu, ref, data.item_names, reference_name=ref_name)
        st.plotly_chart(fig, key="stepper.means_chart")
        st.caption(f"Each item's estimated mean μ_i against its {ref_name}; σ = {params.sigma:.4g}.")


# ---------------------------------------------------------------------------- workers
def workers_panel(run: Run) -> None:
    """Confusion matrices of the picked workers (fixed [0, 1] colours) and the reliability chart."""
    data = run.data
    snap = run.current
    K = 2 if data.is_continuous else data.n_classes
    if run.model.info.latent == "annotator":
        fig = plots.reliability_scatter(
            data.labels_per_worker.astype(float),
            snap.q[:, 1],
            data.worker_names,
            title="Annotators: P(good) vs number of scores",
            y_title="P(good)",
        )
        left, right = st.columns([3, 2])
        left.plotly_chart(fig, key="stepper.reliability_chart")
        p: ScoreParams = snap.params
        resid = data.value - p.mu[data.item]
        n = np.maximum(data.labels_per_worker, 1)
        rms = np.sqrt(np.bincount(data.worker, weights=resid * resid, minlength=data.n_workers) / n)
        order = np.argsort(snap.q[:, 1], kind="stable")
        right.dataframe(
            {
                "annotator": [data.worker_names[m] for m in order],
                "scores": data.labels_per_worker[order],
                "P(good)": snap.q[order, 1],
                "RMS(s − μ)": rms[order],
            },
            hide_index=True,
            key="stepper.annotator_table",
            column_config={
                "P(good)": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.3f"),
                "RMS(s − μ)": st.column_config.NumberColumn(format="%.3g"),
            },
        )
        right.caption(f"The least trusted first. A good annotator's scores scatter around μ_i with σ = {p.sigma:.4g}.")
        return
    if not isinstance(snap.params, ClassParams):
        mv = majority_labels(data)
        agree = np.bincount(data.worker, weights=(data.label == mv[data.item]), minlength=data.n_workers)
        rate = agree / np.maximum(data.labels_per_worker, 1)
        st.info("Majority vote estimates no confusion matrices; here is how often each worker agrees with it.")
        fig = plots.reliability_scatter(
            data.labels_per_worker.astype(float),
            rate,
            data.worker_names,
            chance=1.0 / K,
            title="Workers: agreement with the majority vote",
            y_title="agreement with majority",
        )
        st.plotly_chart(fig, key="stepper.reliability_chart")
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
            fig = plots.confusion_grid(
                params.gamma,
                data.worker_names,
                data.class_names,
                max_workers=MAX_WORKERS,
                workers=picked,
                cols=4 if data.n_classes <= 2 else 3,
            )
            st.plotly_chart(fig, key="stepper.confusion_chart")
            st.caption(
                f"{len(picked)} of {data.n_workers:,} workers (default: the most active). Colours fixed to [0, 1] "
                "at every iteration; row 0 on top."
            )
        else:
            st.info("Pick at least one worker to see a confusion matrix.")
    with right:
        fig = plots.reliability_scatter(
            data.labels_per_worker.astype(float),
            params.worker_accuracy(),
            data.worker_names,
            highlight=picked,
            chance=1.0 / K,
        )
        st.plotly_chart(fig, key="stepper.reliability_chart")
        st.caption("Estimated accuracy Σ_k π_k Γ_m(k, k) against the number of labels; dotted: chance (1/K).")
        if "alpha" in params.extra:
            fig = plots.sens_spec_scatter(params.extra["alpha"], params.extra["beta"], data.worker_names)
            st.plotly_chart(fig, key="stepper.sens_spec_chart")


# ---------------------------------------------------------------------------- class priors
def class_prior_panel(run: Run) -> None:
    data = run.data
    snap = run.current
    if isinstance(snap.params, ScoreParams):
        p = snap.params
        fig = plots.class_prior_bars(
            np.array([1.0 - p.pi_good, p.pi_good]), ["bad", "good"], title="Prior of an annotator being bad / good"
        )
        st.plotly_chart(fig, key="stepper.prior_chart")
        c1, c2 = st.columns(2)
        c1.metric("π_good", f"{p.pi_good:.3f}")
        c2.metric("σ (good annotators' noise)", f"{p.sigma:.4g}")
        return
    reference = None
    if data.has_gold:
        g = data.gold[data.gold >= 0]
        reference = np.bincount(g, minlength=data.n_classes) / max(g.size, 1)
    if isinstance(snap.params, ClassParams):
        pi, title = snap.params.pi, f"Class prior π at snapshot {snap.index}"
    else:
        pi, title = snap.q.mean(axis=0), "Share of the (soft) majority votes"
    left, right = st.columns(2)
    with left:
        fig = plots.class_prior_bars(pi, data.class_names, reference=reference, title=title)
        st.plotly_chart(fig, key="stepper.prior_chart")
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
            st.plotly_chart(fig, key="stepper.prior_path_chart")


# ---------------------------------------------------------------------------- what just happened
def _latex(lines: Sequence[str]) -> None:
    for line in lines:
        st.latex(line)


def explain_panel(run: Run) -> None:
    """The formulas of the half-step that produced this snapshot, with the numbers of a picked item / worker."""
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
    if not run.iterative:
        _explain_majority(data, int(item))
        return
    prev = run.snapshots[snap.index - 1] if snap.index > 0 else None

    def e_lines(params) -> list[str]:
        if scores:
            return explain.e_step_scores(data, params, int(worker))
        return explain.e_step_classes(data, params, int(item), key)

    def m_lines(q) -> list[str]:
        if scores:
            return explain.m_step_scores(data, q, int(item))
        return explain.m_step_classes(data, q, int(worker), key)

    e_unit = f"annotator **{data.worker_names[worker]}**" if scores else f"item **{data.item_names[item]}**"
    m_unit = f"item **{data.item_names[item]}**" if scores else f"worker **{data.worker_names[worker]}**"
    if snap.kind == "init":
        st.markdown(f"**The start: {run.start_description}.** {_start_story(run)}")
        if run.kind_after(snap) == "E":
            if not scores:
                st.latex(r"q_0(\text{this item}) = (" + ",\\ ".join(f"{v:.3g}" for v in snap.q[item]) + ")")
            st.markdown(f"Then θ₀ = M-step(q₀); for {m_unit}:")
            _latex(m_lines(snap.q))
        else:
            st.markdown(f"Then q₀ = E-step(θ₀); for {e_unit}:")
            _latex(e_lines(snap.params))
    elif snap.kind == "E":
        st.markdown(
            f"**E-step just done** (snapshot {prev.index} → {snap.index}): the posterior q from the parameters θ of "
            f"snapshot {prev.index}, here for {e_unit}."
        )
        _latex(e_lines(prev.params))
        if run.model.hard:
            st.caption("Hard EM then keeps only the arg-max: q becomes one-hot.")
    else:
        st.markdown(
            f"**M-step just done** (snapshot {prev.index} → {snap.index}): the parameters θ from the posterior q of "
            f"snapshot {prev.index}, here for {m_unit}."
        )
        _latex(m_lines(prev.q))
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


def _start_story(run: Run) -> str:
    if run.model.info.latent == "annotator":
        return "Everyone is assumed good (w_a = 1): μ and σ come from all scores, and π_good starts at 0.5."
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
    st.latex(r"\text{this item}: q = (" + ",\\ ".join(parts) + ")")


# ---------------------------------------------------------------------------- likelihood surface
def surface_defaults(model_key: str, data, coords: list[surface.Coord]) -> tuple[int, int]:
    """Indices into ``coords``: alpha and beta of the most active worker (two-coin); the accuracies theta of the
    two most active workers (one-coin; theta and p with a single worker)."""
    active = by_activity(data)
    if model_key == "two_coin":
        return coords.index(surface.Coord("alpha", int(active[0]))), coords.index(surface.Coord("beta", int(active[0])))
    x = coords.index(surface.Coord("theta", int(active[0])))
    y = coords.index(surface.Coord("theta", int(active[1]))) if len(active) > 1 else len(coords) - 1
    return x, y


def _params_snapshot(run: Run) -> Snapshot:
    """The snapshot whose parameters the cursor shows (after an E-step: the one before, same parameters)."""
    i = run.index
    while i > 0 and run.snapshots[i].kind == "E":
        i -= 1
    return run.snapshots[i]


def cached_surface(run: Run, params, x: surface.Coord, y: surface.Coord):
    """(xs, ys, Z) for these parameters and coordinates, from the session's small cache or computed now."""
    cache = st.session_state.setdefault(SURFACE_CACHE, [])
    for p, cx, cy, value in cache:
        if p is params and cx == x and cy == y:
            return value
    with st.spinner("Evaluating the objective on a 41 × 41 grid..."):
        value = surface.objective_surface(run.data, run.model, params, x, y, n=SURFACE_N)
    cache.append((params, x, y, value))
    del cache[:-SURFACE_CACHE_SIZE]
    return value


def surface_panel(run: Run) -> None:
    data = run.data
    key = run.model.info.key
    if key not in SURFACE_MODELS or data.is_continuous or data.n_classes != 2:
        st.info(
            "The likelihood surface is drawn for the one-coin and two-coin models on two-class data "
            "(e.g. bluebirds or textual entailment): pick one of them to watch EM climb."
        )
        return
    coords = surface.coords_for(key, data.n_workers)
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
    xs, ys, Z = cached_surface(run, base.params, cx, cy)
    px, py, idx = surface.em_path(run, cx, cy)
    keep = idx <= base.index
    fig = plots.objective_contour(
        xs,
        ys,
        Z,
        px[keep],
        py[keep],
        path_index=idx[keep],
        x_title=labels[ix],
        y_title=labels[iy],
        title=f"Objective over {labels[ix]} and {labels[iy]} (other parameters as at snapshot {base.index})",
    )
    left, right = st.columns([3, 1])
    left.plotly_chart(fig, key="stepper.surface_chart")
    objective = np.array([run.snapshots[i].objective for i in idx[keep]])
    right.markdown("**The EM path**")
    right.dataframe(
        {"snapshot": idx[keep], labels[ix]: px[keep], labels[iy]: py[keep], "objective": objective},
        hide_index=True,
        key="stepper.surface_path",
        column_config={
            labels[ix]: st.column_config.NumberColumn(format="%.3f"),
            labels[iy]: st.column_config.NumberColumn(format="%.3f"),
            "objective": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    hard = " Hard EM climbs the complete-data objective, not this one." if run.model.hard else ""
    st.caption(
        "Colours: the objective (log-likelihood" + (" + log prior" if run.model.has_prior else "") + ") relative "
        "to the best point of this slice. Every other parameter is held at its value at the current snapshot, so "
        "this is one 2-D slice of a surface over all parameters, and the EM path (init and every M-step, up to now) "
        "is its projection: EM moves all parameters at once, so the path need not climb this slice step by step; "
        "at convergence it ends at the slice's best point." + hard
    )
