"""The Networks page: crowd labels on a graph with a Potts prior (Traganitis & Giannakis, Sec. 5), MRF-crowd EM.

The page keeps its own dataset, settings and run under ``net.*`` (a :class:`crowdlab.ui.lab.Lab`). Cold start: a
stochastic block model of 1,000 nodes in K = 4 communities, average degree 5, labelled by Traganitis & Giannakis' crowd
(10 workers: 6 experts with accuracy U(0.35, 0.6), 4 spammers). Other sources: a simulated SBM with other
parameters, an uploaded label file with an edge list, and a small noisy image on its pixel grid.

The E-steps are approximate (the exact posterior of a Potts MRF is intractable): ICM (Traganitis & Giannakis,
Alg. 3) improves J(ŷ, Γ) = log p(F, ŷ | Γ) + log Z at the ICM labels and its EM is not guaranteed monotone; mean
field (their Remark 2) ascends the free energy L(q, Γ). The page says so, plots the model's own objective, and the
trace of that quantity over the sweeps of the last E-step. The drawing's positions (force-directed,
:func:`crowdlab.io.graph.force_positions`, or the pixel grid) and the i.i.d. Dawid-Skene baseline are computed once
per graph (``st.cache_data`` on the dataset id, then kept under ``net.derived``); a graph over ``MAX_DRAWN`` nodes
is drawn in part (:func:`crowdlab.io.graph.drawn_nodes`: whole pieces, then a breadth-first ball, so drawn nodes keep
their neighbours). Chart titles and captions name a position as the stepper does ("iteration 2, after M-step").
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from crowdlab.engines.run import Run
from crowdlab.errors import DataError
from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.io.data import read_annotations
from crowdlab.io.graph import drawn_nodes, force_positions, grid_graph, read_edges
from crowdlab.io.metrics import accuracy, confusion_error, macro_f
from crowdlab.models import NetworkCrowd, make_model
from crowdlab.models.majority import majority_labels
from crowdlab.plots import confusion_grid
from crowdlab.plots import dependent as figs
from crowdlab.teaching.simulate import simulate_sbm
from crowdlab.ui import lab, presenter
from crowdlab.ui.frame import file_boxes, upload_id
from crowdlab.ui.live_chart import live_chart
from crowdlab.ui.sequences_page import seed_crowd

NS = "net"
MAX_DRAWN = 2000
DEFAULT_WORKERS = 8
E_STEPS = {"icm": "ICM", "mean_field": "Mean field"}
SOURCES = {"icm": "Traganitis & Giannakis, Alg. 3", "mean_field": "Traganitis & Giannakis, Remark 2"}
INITS = {"majority": "Majority vote (soft)", "moments": "Moment matching"}
CONFUSION_ERROR = "confusion error (Traganitis & Giannakis, eq. 38)"
TABS = ("Graph", "Workers", "Comparison")
COLOUR_BY = ("EM posterior (at the cursor)", "i.i.d. Dawid-Skene", "majority vote", "truth")
APPROXIMATE = {
    "icm": "**The E-step is approximate.** The exact posterior of a Potts MRF couples every node, so EM cannot "
    "compute it. ICM (Traganitis & Giannakis, Alg. 3) sets each node in turn to its best label given its "
    "neighbours' (their eq. 33), which never lowers **J(ŷ, Γ) = log p(F, ŷ | Γ) + log Z** at the ICM labels ŷ, and "
    "then takes the soft q of their eq. 34 for the M-step. That M-step is not guaranteed to raise J, so **ICM-EM is "
    "not guaranteed monotone**: the objective curve below is J, and it may dip.",
    "mean_field": "**The E-step is approximate.** The exact posterior of a Potts MRF couples every node, so EM "
    "cannot compute it. Mean field (Traganitis & Giannakis, Remark 2) replaces it by independent qₙ and sweeps "
    "qₙ ∝ exp(log eₙ + δ/2 Σ w qₙ′), which never lowers the **free energy L(q, Γ)** = (the mean of "
    "log p(F, y | Γ) under q) + H(q) + log Z, a lower bound of log p(F | Γ) + log Z; the M-step raises L too, so "
    "this variational EM never lowers F. The objective curve below is F, not the (intractable) likelihood.",
}

# source widgets (mirrored under net.widgets)
SIM_N, SIM_K, SIM_M = "net.sim.nodes", "net.sim.classes", "net.sim.workers"
SIM_DEGREE, SIM_RATIO, SIM_SEED = "net.sim.degree", "net.sim.ratio", "net.sim.seed"
IMG_WORKERS, IMG_ACC, IMG_SEED = "net.img.workers", "net.img.accuracy", "net.img.seed"
SIM_DEFAULTS = {SIM_N: 1000, SIM_K: 4, SIM_M: 10, SIM_DEGREE: 5.0, SIM_RATIO: 0.05, SIM_SEED: 0}
IMG_DEFAULTS = {IMG_WORKERS: 5, IMG_ACC: 0.6, IMG_SEED: 0}
IMAGE_SHAPE = (36, 48)
UPLOAD_LABELS, UPLOAD_EDGES, UPLOAD_GOLD = "net.upload.labels", "net.upload.edges", "net.upload.gold"
# settings and view widgets
W_ESTEP, W_DELTA, W_INIT = "net.e_step", "net.delta", "net.init"
W_DELTA_LABELS = "net.delta_labels"
W_SEED, W_TOL, W_MAX_ITER = "net.seed", "net.tol", "net.max_iter"
W_TAB, W_COLOUR = "net.tab", "net.colour_by"
CURSOR = "net.cursor"  # plain key: the comparison at the cursor, {"key": (run id, index), "table": ...}


@dataclass(frozen=True)
class NetConfig:
    """MRF-crowd EM settings: E-step, Potts strength delta (None = M, the number of workers), start, seed and
    stopping rule."""

    e_step: str = "icm"
    delta: float | None = None
    init: str = "majority"
    seed: int = 0
    tol: float = 1e-8
    max_iter: int = 100


# ---------------------------------------------------------------------------- loaders (cached on small keys)
@st.cache_data(max_entries=8, show_spinner="Simulating a network...")
def simulate_cached(N: int, K: int, M: int, degree: float, ratio: float, seed: int):
    """:func:`crowdlab.teaching.simulate.simulate_sbm` with Traganitis & Giannakis' crowd, cached on its parameters."""
    return simulate_sbm(N, K, M, avg_degree=degree, ratio=ratio, seed=seed, **seed_crowd(M))


def image_truth(height: int, width: int) -> np.ndarray:
    """A small synthetic image, (height * width,) row-major class codes: background 0, a disc 1, a bar 2."""
    yy, xx = np.mgrid[0:height, 0:width]
    img = np.zeros((height, width), dtype=np.int32)
    img[(yy - height * 0.45) ** 2 + (xx - width * 0.3) ** 2 <= (min(height, width) * 0.28) ** 2] = 1
    img[(yy > height * 0.2) & (yy < height * 0.85) & (xx > width * 0.62) & (xx < width * 0.8)] = 2
    return img.ravel()


def image_crowd(height: int, width: int, n_workers: int, accuracy_: float, seed: int) -> Annotations:
    """Every worker labels every pixel of :func:`image_truth`: right with probability ``accuracy_``, else a
    uniformly drawn other class (symmetric noise); the graph is the 4-neighbour pixel grid."""
    truth = image_truth(height, width)
    K, N = 3, truth.size
    rng = np.random.default_rng(seed)
    right = rng.random((n_workers, N)) < accuracy_
    shift = rng.integers(1, K, size=(n_workers, N))
    said = np.where(right, truth[None, :], (truth[None, :] + shift) % K)
    return Annotations(
        item=np.tile(np.arange(N), n_workers).astype(np.int32),
        worker=np.repeat(np.arange(n_workers), N).astype(np.int32),
        label=said.ravel().astype(np.int32),
        item_names=tuple(f"{r}:{c}" for r in range(height) for c in range(width)),
        worker_names=tuple(f"w{m}" for m in range(n_workers)),
        class_names=("background", "disc", "bar"),
        gold=truth,
        name="noisy image (pixel grid)",
        notes=(f"{height} x {width} pixels, {n_workers} workers right with probability {accuracy_:g}",),
        graph=grid_graph(height, width),
    )


@st.cache_data(max_entries=4, show_spinner="Making a noisy image...")
def image_cached(n_workers: int, accuracy_: float, seed: int) -> Annotations:
    return image_crowd(*IMAGE_SHAPE, n_workers, accuracy_, seed)


@st.cache_data(max_entries=8, show_spinner="Reading the files...")
def read_upload_cached(
    labels: bytes, edges: bytes, gold: bytes | None, name: str, edges_name: str, gold_name: str | None
) -> Annotations:
    """:func:`crowdlab.io.data.read_annotations` then :func:`crowdlab.io.graph.read_edges`, cached on the bytes."""
    g = None if gold is None else _named(gold, gold_name or "gold file")
    data = read_annotations(_named(labels, name), gold=g, kind="classes", name=Path(name).stem, where="app")
    return read_edges(_named(edges, edges_name), data, where="app")


def baselines_fit(data: Annotations) -> dict:
    """Majority vote and i.i.d. Dawid-Skene to convergence."""
    ds = Run(data, make_model("ds"), keep_posteriors=2)
    ds.run()
    return {"mv": majority_labels(data), "ds": ds.labels(), "ds_q": ds.posterior, "ds_gamma": ds.params.gamma}


@st.cache_data(max_entries=6, show_spinner="Fitting i.i.d. Dawid-Skene once for this graph (the baseline)...")
def baselines_cached(data_id: str, _data: Annotations) -> dict:
    """:func:`baselines_fit`, cached on the dataset id (a revisit, or another session on the same graph, reuses it)."""
    return baselines_fit(_data)


@st.cache_data(max_entries=6, show_spinner="Laying out the graph (once per graph)...")
def drawing_cached(data_id: str, _data: Annotations, _grid: tuple[int, int] | None = None) -> dict:
    """Nodes to draw (all, or ``MAX_DRAWN`` of them: :func:`crowdlab.io.graph.drawn_nodes`), their positions (the pixel
    grid, or :func:`crowdlab.io.graph.force_positions`) and the edges among them; ``pieces``: connected pieces drawn."""
    from scipy.sparse.csgraph import connected_components

    A = _data.graph.tocsr()
    n = A.shape[0]
    nodes = drawn_nodes(A, MAX_DRAWN)
    if nodes.size < n:
        A = A[nodes][:, nodes].tocsr()
    if _grid is not None:
        h, w = _grid
        pos = np.stack([nodes % w, -(nodes // w)], axis=1).astype(np.float64)
    else:
        pos = force_positions(A)
    upper = A.tocoo()
    keep = upper.row < upper.col
    return {
        "nodes": nodes,
        "pos": pos,
        "edges": np.stack([upper.row[keep], upper.col[keep]], axis=1),
        "n": n,
        "pieces": int(connected_components(A, directed=False)[0]),
    }


def _named(content: bytes, name: str) -> io.BytesIO:
    f = io.BytesIO(content)
    f.name = name
    return f


def simulation(N: int, K: int, M: int, degree: float, ratio: float, seed: int) -> tuple[str, Annotations, dict]:
    net = simulate_cached(N, K, M, degree, ratio, seed)
    return f"sim:sbm:{N}:{K}:{M}:{degree:g}:{ratio:g}:{seed}", net.annotations, {"gamma": net.gamma}


def _default() -> tuple[str, Annotations, dict]:
    return simulation(*SIM_DEFAULTS.values())


def _build(data: Annotations, cfg: NetConfig, extra: dict) -> Run:
    model = NetworkCrowd(delta=cfg.delta, e_step=cfg.e_step, seed=cfg.seed)
    return Run(data, model, cfg.init, seed=cfg.seed, tol=cfg.tol, max_iter=cfg.max_iter)


NET = lab.Lab(
    NS,
    default=_default,
    build=_build,
    config_default=NetConfig(),
    config_widgets={
        "e_step": W_ESTEP,
        "init": W_INIT,
        "seed": W_SEED,
        "tol": W_TOL,
        "max_iter": W_MAX_ITER,
    },
    widget_defaults={**SIM_DEFAULTS, **IMG_DEFAULTS},
    reset_on_new_data=("delta",),
)


def baselines() -> dict:
    data = NET.ensure()
    return NET.derived("baselines", lambda: baselines_cached(f"{NS}:{NET.data_id()}", data))


def drawing() -> dict:
    data = NET.ensure()
    grid = NET.extra().get("grid")
    return NET.derived("drawing", lambda: drawing_cached(f"{NS}:{NET.data_id()}", data, grid))


def delta_now(data: Annotations) -> float:
    """delta of the current settings (the default: M, the number of workers)."""
    d = NET.config().delta
    if d == "labels":  # delta_nn' = (M_n + M_n') / 4: show the mean of M_n / 2 on the slider
        return float(data.labels_per_item.mean() / 2.0)
    return float(data.n_workers if d is None else d)


# ---------------------------------------------------------------------------- loading (callbacks call these)
def use_simulation() -> None:
    v = NET.value
    NET.set_data(
        *simulation(
            int(v(SIM_N)), int(v(SIM_K)), int(v(SIM_M)), float(v(SIM_DEGREE)), float(v(SIM_RATIO)), int(v(SIM_SEED))
        )
    )


def use_image() -> None:
    m, a, seed = int(NET.value(IMG_WORKERS)), float(NET.value(IMG_ACC)), int(NET.value(IMG_SEED))
    NET.set_data(f"sim:image:{m}:{a:g}:{seed}", image_cached(m, a, seed), {"grid": IMAGE_SHAPE})


def load_upload(
    labels: bytes,
    edges: bytes,
    gold: bytes | None = None,
    name: str = "labels.csv",
    edges_name: str = "edges.csv",
    gold_name: str | None = None,
) -> bool:
    """Read an uploaded label file, edge list (and gold) and make them the page's dataset; True on success. On a
    :class:`DataError` the reader's message is kept for the page (``net.upload.error``) and the dataset stays."""
    try:
        data = read_upload_cached(labels, edges, gold, name, edges_name, gold_name)
    except DataError as exc:
        NET.set_upload_message(error=str(exc))
        return False
    NET.set_data(upload_id(labels + b"\0edges\0" + edges + b"\0gold\0" + (gold or b"")), data, {})
    NET.set_upload_message(
        ok=f"Loaded '{safe.md(name)}' and '{safe.md(edges_name)}': {data.n_items:,} nodes, "
        f"{int(data.graph.nnz) // 2:,} edges, {data.n_workers:,} workers."
    )
    return True


def _on_load() -> None:
    labels, edges = st.session_state.get(UPLOAD_LABELS), st.session_state.get(UPLOAD_EDGES)
    if labels is None or edges is None:
        NET.set_upload_message(error="Choose a label file and an edge list (source,target[,weight]) first.")
        return
    gold = st.session_state.get(UPLOAD_GOLD)
    load_upload(
        labels.getvalue(),
        edges.getvalue(),
        None if gold is None else gold.getvalue(),
        labels.name,
        edges.name,
        None if gold is None else gold.name,
    )


def _on_delta() -> None:
    NET.set_config(delta=float(st.session_state[W_DELTA]))


def _on_delta_labels() -> None:
    NET.set_config(delta="labels" if st.session_state[W_DELTA_LABELS] else None)


# ---------------------------------------------------------------------------- derived
def comparison_table(data: Annotations, run: Run, base: dict, truth: dict) -> pd.DataFrame:
    """Majority vote, i.i.d. DS and MRF-EM at the cursor: accuracy and macro F against gold; with a simulation's
    truth also the confusion error (Traganitis & Giannakis, eq. 38)."""
    snap = run.current
    rows = [
        ("Majority vote", base["mv"], None),
        ("i.i.d. Dawid-Skene", base["ds"], base["ds_gamma"]),
        (f"MRF-EM, {E_STEPS[run.model.method]}", np.argmax(snap.q, axis=1), snap.params.gamma),
    ]
    out = []
    for name, labels, gamma in rows:
        row = {"method": name}
        if data.has_gold:
            row["accuracy"] = accuracy(labels, data.gold)
            row["macro F"] = macro_f(labels, data.gold, data.n_classes)
        if "gamma" in truth:
            row[CONFUSION_ERROR] = np.nan if gamma is None else confusion_error(truth["gamma"], gamma)
        out.append(row)
    return pd.DataFrame(out)


def last_trace(run: Run) -> tuple[tuple[float, ...], int | None]:
    """The improved quantity over the sweeps of the E-step behind the cursor's posterior, and that snapshot."""
    snap = run.current
    post = snap.posterior
    trace = getattr(post, "trace", ())
    if not trace:
        return (), None
    i = snap.index
    while i > 0 and run.snapshots[i].kind == "M":
        i -= 1
    return trace, i


def _sweeps(n: int) -> str:
    return f"{n} sweep" if n == 1 else f"{n} sweeps"


# ---------------------------------------------------------------------------- the page
def networks_page() -> None:
    """Dataset, settings, then the stepper (its notice, buttons, Play, curves and the tabs). In presenter mode the
    dataset and the settings fold into one expander, so the graph starts higher on the first screen."""
    if presenter.is_on():
        data = NET.ensure()
        cfg = NET.config()
        delta = "δ per edge" if cfg.delta == "labels" else f"δ = {delta_now(data):g}"
        with st.expander(
            f"Settings and dataset: {E_STEPS[cfg.e_step]} E-step, {delta}, start from {INITS[cfg.init].lower()} · "
            f"**{safe.md(data.name)}**"
        ):
            _settings_widgets()
            st.markdown("**Dataset**: simulate a network, a noisy image, or upload")
            _source_widgets()
    else:
        source_section()
        settings_section()
    stepper_panel()


def source_section() -> None:
    data = NET.ensure()
    with st.expander(f"Dataset: **{safe.md(data.name)}** — simulate a network, a noisy image, or upload"):
        _source_widgets()


def _source_widgets() -> None:
    sbm, image, upload = st.tabs(["Simulate (SBM)", "Noisy image (pixel grid)", "Upload"])
    with sbm:
        st.markdown(
            "A **stochastic block model**: communities = classes, an edge inside a community with probability "
            "pᵢₙ, between communities with pₒᵤₜ = ratio × pᵢₙ, set by the average degree. Every node is labelled by "
            "every worker of Traganitis & Giannakis' crowd (40 % spammers, experts with accuracy U(0.35, 0.6))."
        )
        c1, c2, c3 = st.columns(3)
        c1.slider("Nodes", 100, 5000, step=100, **NET.mirrored(SIM_N))
        c2.slider("Classes (communities)", 2, 8, **NET.mirrored(SIM_K))
        c3.slider("Workers", 2, 30, **NET.mirrored(SIM_M))
        d1, d2, d3 = st.columns(3)
        d1.slider("Average degree", 0.5, 20.0, step=0.5, **NET.mirrored(SIM_DEGREE))
        d2.slider("Ratio pₒᵤₜ / pᵢₙ", 0.0, 1.0, step=0.01, **NET.mirrored(SIM_RATIO))
        d3.number_input("Seed", min_value=0, step=1, **NET.mirrored(SIM_SEED))
        st.button("Simulate", key="net.sim.run", type="primary", on_click=use_simulation)
    with image:
        st.markdown(
            f"A {IMAGE_SHAPE[0]} × {IMAGE_SHAPE[1]} image (background, a disc, a bar); every worker labels every "
            "pixel, right with the given probability; the graph joins each pixel to its 4 neighbours."
        )
        c1, c2, c3 = st.columns(3)
        c1.slider("Workers", 1, 15, **NET.mirrored(IMG_WORKERS))
        c2.slider("Accuracy of a worker", 0.34, 1.0, step=0.02, **NET.mirrored(IMG_ACC))
        c3.number_input("Seed", min_value=0, step=1, **NET.mirrored(IMG_SEED))
        st.button("Make the image", key="net.img.run", type="primary", on_click=use_image)
    with upload:
        st.markdown(
            "A label file (long `item,worker,label` or wide CSV), an edge list `source,target[,weight]` naming its "
            "items, and optionally gold (`item,label`)."
        )
        file_boxes([("Label file", UPLOAD_LABELS), ("Edge list", UPLOAD_EDGES), ("Gold file (optional)", UPLOAD_GOLD)])
        st.button("Load", key="net.upload.load", type="primary", on_click=_on_load)
    NET.upload_messages()


def settings_section() -> None:
    """The page's settings (a change resets the run)."""
    with presenter.settings(f"Settings: {E_STEPS[NET.config().e_step]} E-step, δ and start", key="net.settings"):
        _settings_widgets()


def _settings_widgets() -> None:
    data = NET.ensure()
    NET.sync_config_widgets()
    M = data.n_workers
    st.session_state[W_DELTA] = min(delta_now(data), 3.0 * M)
    per_edge = NET.config().delta == "labels"
    st.session_state[W_DELTA_LABELS] = per_edge
    c1, c2, c3 = st.columns([2, 2, 3], vertical_alignment="bottom")  # every start whole at 1024 px
    c1.radio(
        "E-step",
        list(E_STEPS),
        format_func=E_STEPS.get,
        horizontal=True,
        help="ICM: Traganitis & Giannakis, Alg. 3; mean field: their Remark 2.",
        **NET.config_widget("e_step"),
    )
    c2.slider(
        "δ, the Potts penalty for disagreeing neighbours",
        0.0,
        3.0 * M,
        step=0.5,
        key=W_DELTA,
        on_change=_on_delta,
        disabled=per_edge,
        help=f"0: no graph (i.i.d. Dawid-Skene with a uniform prior); the default is M = {M} workers.",
    )
    c3.selectbox(
        "Start from",
        list(INITS),
        format_func=INITS.get,
        help="Moment matching: Traganitis & Giannakis, Alg. 2 and 4.",
        **NET.config_widget("init"),
    )
    st.checkbox(  # its own row: the label is whole at 1024 px
        "δ per edge from the labels: (Mₙ + Mₙ′) / 4",
        key=W_DELTA_LABELS,
        on_change=_on_delta_labels,
        help="Traganitis & Giannakis' choice for graphs built from features: each node contributes Mₙ / 2, half "
        "its number of labels, so well-labelled nodes trust their neighbours more.",
    )
    with st.expander("Seed and stopping rule"):
        d1, d2, d3 = st.columns(3)
        d1.number_input("Seed (colouring of the sweeps)", min_value=0, step=1, **NET.config_widget("seed"))
        d2.number_input("Tolerance (relative)", min_value=0.0, format="%.1e", **NET.config_widget("tol"))
        d3.number_input("Max iterations", min_value=1, step=10, **NET.config_widget("max_iter"))
    st.info(APPROXIMATE[NET.config().e_step], icon=":material/warning:")


def stepper_panel() -> None:
    """The one stepper (:func:`crowdlab.ui.lab.stepper`): the objective, the sweeps of the last E-step and the
    metrics as curves, the graph, workers and comparison as tabs."""
    lab.stepper(NET.slot, curves=curves_panel, panels=tabs_panel)


def curves_panel(run: Run) -> None:
    c1, c2 = lab.curve_columns(2)  # two columns: a third would be too narrow for its title at 1024 px
    with c1:
        lab.objective_chart(NET.slot, run, title=f"Objective: {run.model.objective_name}", show_bound=False)
        sweeps_panel(run)
    with c2:
        lab.metric_chart(NET.slot, run)


def sweeps_panel(run: Run) -> None:
    """The improved quantity over the sweeps of the E-step behind the cursor: a chart, or a sentence where a chart
    would be empty (no E-step yet, one sweep, nothing gained)."""
    trace, at = last_trace(run)
    name = "F" if run.model.method == "mean_field" else "J"
    title = "Sweeps of the last E-step"
    if at is None:
        st.markdown(f"**{title}**")
        st.caption(f"No E-step yet: step once to see {name} grow over the sweeps of an E-step.")
        return
    which = e_step_name(run, at)
    gain = float(trace[-1] - trace[0])
    if len(trace) <= 2 or gain == 0.0:
        st.markdown(f"**{title}**")
        change = "did not change" if gain == 0.0 else f"rose by {gain:.4g}"
        settled = " (the labels were already settled)" if gain == 0.0 else ""
        st.caption(f"The {which} took {_sweeps(len(trace) - 1)}: {name} {change}{settled}.")
        return
    fig = figs.sweep_trace(trace, title=title, y_title=name)
    fig.update_layout(height=lab.chart_height(fig.layout.height or 360))
    live_chart(lab.wrap_title(fig, 28), "net.trace_chart")
    st.caption(
        f"{name} over the {_sweeps(len(trace) - 1)} of the {which}, as the gain over its start: it never falls "
        "within an E-step."
    )


def e_step_name(run: Run, index: int) -> str:
    """ "E-step of iteration 3" for the E-step snapshot ``index`` (the stepper's "iteration 3, after E-step")."""
    snap = run.snapshots[index]
    return "E-step of the start" if snap.kind == "init" else f"E-step of iteration {snap.iteration + 1}"


def tabs_panel(run: Run) -> None:
    panels = (graph_panel, workers_panel, comparison_panel)
    for tab, panel in zip(st.tabs(TABS, **NET.view_widget(W_TAB, "tab", lambda v: v in TABS, TABS[0])), panels):
        if tab.open:
            with tab:
                panel(run)


def graph_panel(run: Run) -> None:
    """The graph coloured as chosen; in presenter mode without a title and with the choice below it, so the drawing
    starts high on the first screen (the heading above says where the cursor is)."""
    data = run.data
    draw = drawing()
    nodes = draw["nodes"]
    compact = presenter.is_on()
    options = list(COLOUR_BY if data.has_gold else COLOUR_BY[:-1])
    chart = st.container() if compact else None  # presenter mode: the drawing above the choice
    by = st.radio(
        "Colour the nodes by", options, horizontal=True,
        **NET.view_widget(W_COLOUR, "colour", lambda v: v in options, options[0]),
    )  # fmt: skip
    chart = st.container() if chart is None else chart
    base = baselines()
    snap = run.current
    if by == COLOUR_BY[0]:
        labels, conf = np.argmax(snap.q, axis=1), snap.q.max(axis=1)
    elif by == COLOUR_BY[1]:
        labels, conf = base["ds"], base["ds_q"].max(axis=1)
    elif by == COLOUR_BY[2]:
        labels, conf = base["mv"], np.ones(data.n_items)
    else:
        labels, conf = np.maximum(data.gold, 0), np.where(data.gold >= 0, 1.0, 0.0)
    wrong = (labels != data.gold) & (data.gold >= 0) if data.has_gold and by != COLOUR_BY[3] else None
    n_wrong = None if wrong is None else int(wrong.sum())
    title = (
        f"Nodes coloured by the EM posterior: {lab.step_label(run)}"
        if by == COLOUR_BY[0]
        else f"Nodes coloured by {by}"
    )
    fig = figs.network_figure(
        draw["pos"],
        draw["edges"],
        labels[nodes],
        conf[nodes],
        data.class_names,
        wrong=None if wrong is None else wrong[nodes],
        wrong_total=n_wrong,
        names=[data.item_names[i] for i in nodes],
        title="" if compact else title,
        height=(400 if compact else 560) if "grid" in NET.extra() else (440 if compact else 620),
    )
    with chart:
        live_chart(lab.wrap_title(fig, 60), "net.graph_chart")
    st.caption(graph_caption(data, draw, by, wrong, n_wrong))


def graph_caption(data: Annotations, draw: dict, by: str, wrong, n_wrong: int | None) -> str:
    """What the drawing shows: opacity (when it varies), the rings and their counts (all nodes, and the drawn ones
    when only part is drawn), which nodes are drawn and how they were placed."""
    n, drawn = draw["n"], draw["nodes"].size
    notes = []
    if by in COLOUR_BY[:2]:
        notes.append("opacity = the posterior's max q (faint: unsure)")
    elif by == COLOUR_BY[3] and (data.gold < 0).any():
        notes.append("faint: no gold label")
    if wrong is not None:
        ring = f"black rings: wrong against gold ({n_wrong:,} of {n:,} nodes"
        if drawn < n:
            ring += f"; {int(wrong[draw['nodes']].sum()):,} of them among the {drawn:,} drawn"
        notes.append(ring + ")")
    if "grid" in NET.extra():
        notes.append(f"{n:,} pixels on their grid, {len(draw['edges']):,} edges")
    else:
        if drawn < n:
            notes.append(
                f"the graph has {n:,} nodes: {drawn:,} are drawn, with the {len(draw['edges']):,} edges among them "
                "(its largest connected pieces; one too big is cut to the nodes nearest 8 random starting nodes, so "
                "neighbours stay together); scores and counts cover all nodes"
            )
        else:
            notes.append(f"{n:,} nodes, {len(draw['edges']):,} edges")
        pieces = draw.get("pieces", 1)
        packed = f"; its {pieces:,} connected pieces side by side, largest first" if pieces > 1 else ""
        notes.append(f"force-directed layout (LinLog, Noack 2007), computed once per graph{packed}")
    return "; ".join(notes) + "."


def worker_title(name: str) -> str:
    """A worker's name as a title: "worker 39" for a bare number (which would read as a count), else the name."""
    return f"worker {name}" if str(name).strip().isdigit() else str(name)


def workers_panel(run: Run) -> None:
    data = run.data
    active = np.argsort(-data.labels_per_worker, kind="stable")[:DEFAULT_WORKERS]
    fig = confusion_grid(
        run.current.params.gamma,
        [worker_title(w) for w in data.worker_names],
        data.class_names,
        workers=active.tolist(),
        cols=4,
        title=f"Confusion matrices Γₘ, {lab.step_label(run)} (columns: true class, rows: worker says)",
    )
    live_chart(lab.wrap_title(fig, 60), "net.confusion_chart")
    st.caption(f"The {len(active)} most active of {data.n_workers:,} workers; colours fixed to [0, 1].")


def comparison_panel(run: Run) -> None:
    data = run.data
    key = (NET.run_id(), run.index, id(run.current))
    cached = st.session_state.get(CURSOR)
    if cached is None or cached["key"] != key:
        cached = {"key": key, "table": comparison_table(data, run, baselines(), NET.extra())}
        st.session_state[CURSOR] = cached
    table = cached["table"]
    if len(table.columns) == 1:
        st.info("No gold labels and no simulation truth: there is nothing to score the methods against.")
        return
    numbers = [c for c in table.columns if c != "method"]
    st.table(table.style.format("{:.3f}", subset=numbers, na_rep="—").hide(axis="index"))
    st.caption(
        f"MRF-EM at the cursor ({lab.step_label(run)}, δ = {run.model.delta_for(data):g}); majority vote and i.i.d. "
        "Dawid-Skene ignore the graph. Run to convergence for the final comparison."
    )
