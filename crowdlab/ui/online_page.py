"""The "Batch vs online" page: batch Dawid-Skene EM and online (stepwise) EM on the same data, side by side.

Online EM (:mod:`crowdlab.models.online`, after the nominalonlineextract blog post and Cappé & Moulines 2009) reads the
items in mini-batches; the one stepper (:func:`crowdlab.ui.lab.stepper`) steps it: the E-step evaluates the next
block (qᵢ and its Fᵢ, before any update: progressive validation), the M-step moves the expected statistics by ηₜ.
Beside it: batch EM of the same model from the same start, per iteration (one iteration = one pass over the N
items), on the x axis of items seen.

The page keeps its own dataset, settings and run under ``onl.*`` (a :class:`crowdlab.ui.lab.Lab`); the working
dataset of the other pages is untouched. Sources: bluebirds and RTE (bundled, with gold), a simulated crowd
(:func:`crowdlab.teaching.simulate.simulate_crowd`) and an upload (read by :func:`crowdlab.io.data.read_annotations`,
the one
reader path). Derived per dataset (``onl.derived``): batch EM's curves per model (they fix the axes before anyone
has stepped) and the accuracy-vs-B sweep (computed on request, with at most 100 updates per pass so it takes
seconds).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
import streamlit as st

from crowdlab import plots
from crowdlab.engines.online import OnlineRun, batch_curves, bucket_sweep
from crowdlab.errors import DataError
from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.io.metrics import accuracy
from crowdlab.io.samples import SAMPLES
from crowdlab.models import make_model
from crowdlab.models.online import format_table
from crowdlab.plots import online as figs
from crowdlab.plots.online import padded_range
from crowdlab.ui import lab, presenter
from crowdlab.ui.frame import (
    file_boxes,
    load_sample_cached,
    load_upload_cached,
    simulate_crowd_cached,
    upload_id,
)
from crowdlab.ui.live_chart import live_chart

NS = "onl"
SOURCE_SAMPLES = ("bluebirds", "rte")
W_SOURCE = "onl.source"
SIM_N, SIM_M, SIM_K = "onl.sim.items", "onl.sim.workers", "onl.sim.classes"
SIM_L, SIM_SEED = "onl.sim.per_item", "onl.sim.seed"
SIM_DEFAULTS = {SIM_N: 2000, SIM_M: 40, SIM_K: 3, SIM_L: 5, SIM_SEED: 0}
UP_LABELS, UP_GOLD = "onl.upload.labels", "onl.upload.gold"
W = {
    k: f"onl.{k}"
    for k in ("method", "eta0", "tau0", "rho", "buckets", "passes", "batch_size", "seed", "prior", "worker_steps")
}
BUCKET_CHOICES = (*(2**i for i in range(13)), 0)  # 0 (last, the most): one matrix per worker, no hashing
TAU_CHOICES = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)
# the seed of this page: a blog post whose author and year the copy we have does not give (docs/references.md)
CITE = "the nominalonlineextract blog post"
INTRO = (
    "Batch EM reads every item before it changes the parameters. Online EM (" + CITE + "; stepwise "
    "EM, Cappé & Moulines 2009) reads a few items, finds their posteriors qᵢ with the parameters fixed, moves the "
    "confusion matrices and the class prior a step ηₜ towards what those items say, and forgets qᵢ. "
    "The x axis counts items seen, so one batch iteration is one pass."
)
METHODS = {"online_ds": "Dawid-Skene (a confusion matrix per bucket)", "online_one_coin": "one-coin (an accuracy)"}


@dataclass(frozen=True)
class OnlineConfig:
    """The online run's settings (``buckets`` 0 = one matrix per worker); a change resets the run."""

    method: str = "online_ds"
    eta0: float = 1.0
    tau0: float = 10.0
    rho: float = 0.6
    buckets: int = 0
    passes: int = 5
    batch_size: int = 10
    seed: int = 0
    prior: float = 1.0
    worker_steps: bool = False


def model_of(cfg: OnlineConfig, **changes):
    cfg = replace(cfg, **changes)
    opts = asdict(cfg)
    method = opts.pop("method")
    opts["buckets"] = opts["buckets"] or None
    return make_model(method, **opts)


def track_every(data: Annotations, cfg: OnlineConfig) -> int:
    """Measure the whole-data objective and accuracy about 100 times per pass (every update on small data)."""
    per_pass = -(-data.n_items // cfg.batch_size)
    return max(1, per_pass // 100)


def _build(data: Annotations, cfg: OnlineConfig, extra: dict) -> OnlineRun:
    return OnlineRun(data, model_of(cfg), track_every=track_every(data, cfg))


def _default() -> tuple[str, Annotations, dict]:
    return "sample:bluebirds", load_sample_cached("bluebirds"), {}


ONL = lab.Lab(
    NS,
    default=_default,
    build=_build,
    config_default=OnlineConfig(),
    config_widgets=W,
    widget_defaults=SIM_DEFAULTS,
)


# ---------------------------------------------------------------------------- sources (callbacks)
def use_sample(key: str) -> None:
    ONL.set_data(f"sample:{key}", load_sample_cached(key), {})
    ONL.set_upload_message()


def _on_source() -> None:
    key = st.session_state.get(W_SOURCE)
    if key in SOURCE_SAMPLES:
        use_sample(key)


def use_simulation() -> None:
    v = ONL.value
    n, m, k, per, seed = (int(v(x)) for x in (SIM_N, SIM_M, SIM_K, SIM_L, SIM_SEED))
    per = min(per, m)
    ONL.set_data(f"sim:online:{n}:{m}:{k}:{per}:{seed}", simulate_crowd_cached(n, m, k, per, seed), {})
    ONL.set_upload_message(ok=f"Simulated {n:,} items, {m} workers, {k} classes, {per} labels per item.")


def load_upload(content: bytes, gold: bytes | None = None, name: str = "labels.csv") -> bool:
    """Read an uploaded label file (and gold) through the one reader path; True on success, else the reader's
    message is kept and the dataset stays."""
    try:
        data = load_upload_cached(content, gold, "classes", name)
    except DataError as exc:
        ONL.set_upload_message(error=str(exc))
        return False
    ONL.set_data(upload_id(content + b"\0gold\0" + (gold or b"")), data, {})
    ONL.set_upload_message(
        ok=f"Loaded '{safe.md(name)}': {data.n_items:,} items, {data.n_workers:,} workers, {data.n_obs:,} labels"
        + (f", gold for {int(data.gold_mask.sum()):,} items." if data.has_gold else ", no gold.")
    )
    return True


def _on_load() -> None:
    f = st.session_state.get(UP_LABELS)
    if f is None:
        ONL.set_upload_message(error="Choose a label file first.")
        return
    g = st.session_state.get(UP_GOLD)
    load_upload(f.getvalue(), None if g is None else g.getvalue(), f.name)


# ---------------------------------------------------------------------------- derived (once per dataset)
def batch(data: Annotations, cfg: OnlineConfig) -> dict:
    """Batch EM of the online run's model (Dawid-Skene or one-coin, its B hash buckets, its prior) from the online
    run's start (:func:`crowdlab.engines.online.batch_curves`): its iteration 0 is the online run's start, and its
    curve fixes the axes before anyone has stepped. Computed once per model (the step size, the mini-batches and
    the passes do not change it)."""
    key = f"batch:{cfg.method}:{cfg.prior:g}:{cfg.buckets}:{cfg.seed if cfg.buckets else 0}"
    return ONL.derived(key, lambda: batch_curves(data, model_of(cfg)))


def batch_words(b: dict, cfg: OnlineConfig) -> str:
    """What the batch reference is, in words (its legend entry): "batch Dawid-Skene EM (B = 4), same start"."""
    hashed = f" (B = {cfg.buckets:,})" if cfg.buckets else ""
    return f"batch {b['model']} EM{hashed}, same start"


def _sweep_key(cfg: OnlineConfig) -> str:
    return f"sweep:{replace(cfg, buckets=0, seed=0)}"


def sweep_model(data: Annotations, cfg: OnlineConfig):
    """The sweep's model: the current settings with at most 100 updates per pass (mini-batches of at least N / 100
    items), so 3 seeds x every B take seconds on any dataset the page holds."""
    return model_of(cfg, batch_size=max(cfg.batch_size, -(-data.n_items // 100)))


def _on_sweep() -> None:
    data, cfg = ONL.data(), ONL.config()
    ONL.derived(_sweep_key(cfg), lambda: bucket_sweep(data, sweep_model(data, cfg), seeds=(0, 1, 2)))


# ---------------------------------------------------------------------------- the page
def source_section() -> None:
    data = ONL.ensure()
    data_id = ONL.data_id() or ""
    st.session_state[W_SOURCE] = data_id.removeprefix("sample:") if data_id.startswith("sample:") else None
    with st.expander(f"Dataset: **{safe.md(data.name or data_id)}** ({data.n_items:,} items, {data.n_obs:,} labels)"):
        st.selectbox(
            "Bundled dataset", SOURCE_SAMPLES, format_func=lambda k: SAMPLES[k].title, key=W_SOURCE,
            on_change=_on_source, placeholder="(a simulation or an upload)",
        )  # fmt: skip
        sim, upload = st.tabs(["Simulate a crowd", "Upload labels"])
        with sim:
            c = st.columns(5)
            c[0].number_input("Items", 50, 20_000, step=500, **ONL.mirrored(SIM_N))
            c[1].number_input("Workers", 2, 5000, step=10, **ONL.mirrored(SIM_M))
            c[2].number_input("Classes", 2, 10, **ONL.mirrored(SIM_K))
            c[3].number_input("Labels per item", 1, 50, **ONL.mirrored(SIM_L))
            c[4].number_input("Seed", 0, 10**6, **ONL.mirrored(SIM_SEED))
            st.button("Simulate", key="onl.sim.run", type="primary", on_click=use_simulation)
        with upload:
            file_boxes([("Label file (long or wide CSV)", UP_LABELS), ("Gold file (optional)", UP_GOLD)])
            st.button("Load", key="onl.upload.load", type="primary", on_click=_on_load)
        ONL.upload_messages()


def settings_section() -> None:
    """Three tabs of settings (a change resets the run): the step size (its schedule drawn beside the sliders; the
    stepper's own copy marks the current update), hashing, and the rest."""
    ONL.sync_config_widgets()
    cfg, data = ONL.config(), ONL.data()
    with presenter.settings("Settings: step size ηₜ, hash buckets B, passes and mini-batches"):
        rate, hashing, rest = st.tabs(["Step size ηₜ", "Hashing workers", "Passes, mini-batches, prior"])
        with rate:
            left, right = st.columns([1, 1])
            with left:
                st.slider("η₀", 0.05, 5.0, step=0.05, **ONL.config_widget("eta0"))
                st.select_slider("τ₀", TAU_CHOICES, format_func=lambda v: f"{v:g}", **ONL.config_widget("tau0"))
                st.slider("ρ", 0.0, 1.0, step=0.05, **ONL.config_widget("rho"))
            with right:
                live_chart(eta_figure(None), "onl.eta_chart")
            st.caption(
                "Online EM moves the statistics by ηₜ each update. It converges (Robbins-Monro) when the steps "
                "add up to infinity, so it can travel anywhere, and their squares add up to a finite number, so the "
                "noise of single blocks averages out: Σ ηₜ = ∞ and Σ ηₜ² < ∞, i.e. ρ in (0.5, 1]. With ρ ≤ 0.5 "
                "the estimate keeps jittering; with ρ = 1 it is a running average that forgets its bad start "
                "slowly. τ₀ delays the decay: large τ₀ means small, careful early steps. The stepper's tab "
                "*Step size ηₜ* marks the update the run is at."
                + ("" if 0.5 < cfg.rho <= 1 else f" **ρ = {cfg.rho:g} is outside (0.5, 1].**")
            )
        with hashing:
            hashing_tab(data, cfg)
        with rest:
            c = st.columns([3, 2])  # the model's name is whole at 1024 px
            c[0].selectbox("Model", list(METHODS), format_func=METHODS.get, **ONL.config_widget("method"))
            c[1].number_input("Prior (pseudo-counts)", 0.0, 100.0, step=0.5, **ONL.config_widget("prior"))
            d = st.columns(3)
            d[0].number_input("Passes", 1, 50, **ONL.config_widget("passes"))
            d[1].number_input("Items per update", 1, 10_000, **ONL.config_widget("batch_size"))
            d[2].number_input("Seed (order, hash)", 0, 10**6, **ONL.config_widget("seed"))
            st.toggle(
                "A step-size clock per worker (bucket)",
                help="Each worker's statistics move only when the block holds its labels, by η at its own count "
                "of such blocks, scaled to its own number of labels (single-item blocks then match batch EM).",
                **ONL.config_widget("worker_steps"),
            )
            st.caption(
                "Each pass reads the items in a new seeded random order. The prior adds pseudo-counts to every cell "
                f"once against the whole data set (log P(θ) / |I| per item, as in {CITE}); batch EM uses the same "
                "model, prior and start. Without a clock per worker one step ηₜ moves every statistic and a block's "
                "counts stand for |I| items: with one item per update a rarely seen worker's matrix then follows its "
                "last few labels."
            )


def eta_figure(run: OnlineRun | None):
    """The step-size schedule of the current settings; with a run, its current update marked: the update whose
    block the cursor shows (after an E-step the update about to be made, with the ηₜ it will use; none at the
    start). The settings draw it without a run: they sit outside the stepper's fragment, which a step reruns alone,
    so a marker there would lag behind the run."""
    cfg, data = ONL.config(), ONL.data()
    rec = None if run is None else run.snapshots[run.index]
    t_now = None
    if rec is not None and rec.block is not None:
        t_now = rec.t + 1 if rec.kind == "E" else rec.t
    n_up = cfg.passes * -(-data.n_items // cfg.batch_size)
    fig = figs.eta_schedule(cfg.eta0, cfg.tau0, cfg.rho, n_up, t_now=t_now, height=240)
    if presenter.is_on():  # 16 px legend entries in a narrow column: one a row (a row of three ran past the edge)
        rows = len([t for t in fig.data if t.showlegend is not False])
        fig.update_layout(legend_orientation="v", margin_b=58 + 24 * rows, height=240 + 24 * (rows - 2))
    return fig


def hashing_tab(data: Annotations, cfg: OnlineConfig) -> None:
    left, right = st.columns([1, 2])
    with left:
        st.select_slider(
            "Hash buckets B", BUCKET_CHOICES, format_func=lambda b: "one per worker" if b == 0 else f"{b:,}",
            **ONL.config_widget("buckets"),
        )  # fmt: skip
        st.caption(
            f"Each worker id is hashed (BLAKE2b, salted with the seed) to one of B confusion matrices, so the memory "
            f"is fixed in advance whatever the number of workers (here M = {data.n_workers:,}). Workers that "
            "collide share a matrix; with B = 1 everyone gets the population's matrix."
        )
        st.button(
            "Compute accuracy vs B", key="onl.sweep", on_click=_on_sweep,
            help="The current settings with B = 1, 2, 4, ... and 3 hash seeds each (at most 100 updates per pass)",
        )  # fmt: skip
    with right:
        sweep = (st.session_state.get(ONL.k("derived")) or {}).get(_sweep_key(cfg))
        if sweep is None:
            st.info("Press *Compute accuracy vs B* to run the current settings with B = 1, 2, 4, ... buckets.")
            return
        vals = sweep["values"]
        ref = batch(data, replace(cfg, buckets=0))
        fig = figs.accuracy_vs_buckets(
            sweep["buckets"], vals.mean(axis=1), vals.min(axis=1), vals.max(axis=1), n_workers=data.n_workers,
            per_worker=float(sweep["per_worker"].mean()), batch=_batch_final(ref, data),
            per_worker_range=(float(sweep["per_worker"].min()), float(sweep["per_worker"].max())),
            chosen=cfg.buckets or None, y_title=sweep["measure"], height=300,
        )  # fmt: skip
        live_chart(fig, "onl.bucket_chart")


def _batch_final(ref: dict, data: Annotations) -> float | None:
    if data.has_gold:
        return float(ref["accuracy"][-1])
    return float(ref["objective"][-1]) / data.n_items


def stepper_panel() -> None:
    lab.stepper(ONL.slot, curves=curves_panel, panels=block_panel)


def _progressive_accuracy(run: OnlineRun, seen: np.ndarray) -> np.ndarray:
    """Accuracy of the predictions made before each update, over the last N item visits, at each record."""
    data = run.data
    _, pred, item = run.progress.arrays()
    if not data.has_gold or pred.size == 0:
        return np.full(seen.size, np.nan)
    g = data.gold[item]
    known = g >= 0
    c_ok = np.concatenate([[0], np.cumsum((pred == g) & known)])
    c_n = np.concatenate([[0], np.cumsum(known)])
    hi = np.minimum(seen.astype(int), pred.size)
    lo = np.maximum(hi - data.n_items, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c_n[hi] > c_n[lo], (c_ok[hi] - c_ok[lo]) / np.maximum(c_n[hi] - c_n[lo], 1), np.nan)


def curves_panel(run: OnlineRun) -> None:
    data, cfg = run.data, ONL.config()
    N = data.n_items
    h = run.history()
    upto = slice(0, run.index + 1)
    seen = h["seen"][upto].astype(np.float64)
    b = batch(data, cfg)
    b_name = batch_words(b, cfg)
    x_max = cfg.passes * N
    bx = b["iteration"] * N
    keep = bx <= x_max
    obj = h["objective"][upto] / N
    x_now = float(h["seen"][run.index])
    c1, c2 = lab.curve_columns(2)
    with c1:
        y = padded_range(b["objective"][keep] / N, pad=0.15)
        fig = figs.online_curve(
            [("progressive: average Fᵢ so far", seen, h["progressive"][upto], "progressive"),
             ("online: log p(F | θ) / N", seen[np.isfinite(obj)], obj[np.isfinite(obj)], "online")],
            (bx[keep], b["objective"][keep] / N), x_now, title="Objective per item", x_max=x_max, y_range=y,
            height=lab.chart_height(330), batch_name=b_name,
        )  # fmt: skip
        live_chart(lab.narrow(lab.wrap_title(fig)), "onl.objective_chart")
    with c2:
        if not data.has_gold:
            st.info("This dataset has no gold labels, so there is no accuracy to track.")
        else:
            acc = h["accuracy"][upto]
            prog = _progressive_accuracy(run, seen)
            lo = float(np.nanmin(b["accuracy"][keep]))
            fig = figs.online_curve(
                [("online: every item, current θ", seen[np.isfinite(acc)], acc[np.isfinite(acc)], "online"),
                 ("progressive: before each update (last N)", seen, prog, "progressive")],
                (bx[keep], b["accuracy"][keep]), x_now, title="Accuracy against gold", x_max=x_max,
                y_range=(max(0.0, lo - 0.08), 1.0), height=lab.chart_height(330), batch_name=b_name,
            )  # fmt: skip
            live_chart(lab.narrow(lab.wrap_title(fig)), "onl.accuracy_chart")
    rec = run.snapshots[run.index]
    eta = "" if rec.block is None else f" · ηₜ of this block = {rec.block.eta:.4f}"
    hashed = f" with the same B = {cfg.buckets:,} hash buckets" if cfg.buckets else ""
    st.caption(
        f"{int(x_now):,} items seen of {x_max:,} ({cfg.passes} passes){eta}. Orange: batch {b['model']} EM, the "
        f"model online EM fits{hashed}, with the same prior and from the same start ({b['start']}), so both "
        f"curves begin at the same point; it reads all {N:,} items per iteration (one marker per pass). Online EM "
        f"updates after every {cfg.batch_size} and never sees q of more than one block at a time."
    )


MAX_MATRICES = 8
TABLE_ROWS = 20  # a block's table shows this many rows whole; a bigger block scrolls


def table_height(n_rows: int) -> int | str:
    """The block table's height (:func:`crowdlab.ui.lab.table_height`): every row up to :data:`TABLE_ROWS`, then
    it scrolls."""
    return lab.table_height(n_rows, lab.ROW_PX * (TABLE_ROWS + 1) + 3)


def matrices_tab(run: OnlineRun) -> None:
    """The confusion matrices at the cursor: the most active workers, or with hashing the busiest buckets."""
    data = run.data
    params = run.params
    bucket = params.extra["bucket"]
    busy = np.argsort(-data.labels_per_worker, kind="stable")
    if run.model.buckets is None:
        picked = busy[:MAX_MATRICES]
        names = safe.html_all(data.worker_names)
        note = f"the {len(picked)} most active of {data.n_workers:,} workers"
    else:
        per_bucket = np.bincount(bucket, weights=data.labels_per_worker, minlength=run.model.buckets)
        members = np.bincount(bucket, minlength=run.model.buckets)
        top = [b for b in np.argsort(-per_bucket, kind="stable") if members[b] > 0][:MAX_MATRICES]
        picked = [int(np.flatnonzero(bucket == b)[0]) for b in top]  # one worker stands for its bucket
        names = [""] * data.n_workers
        for b, m in zip(top, picked):
            names[m] = f"bucket {b} ({members[b]} worker{'s' if members[b] != 1 else ''})"
        note = f"the {len(picked)} busiest of B = {run.model.buckets:,} buckets; workers who collide share one"
    fig = plots.confusion_grid(
        params.gamma, names, safe.html_all(data.class_names), max_workers=MAX_MATRICES, workers=picked,
        cols=2 if presenter.is_on() else 4, title="Confusion matrices Γ (columns: true class, rows: says)",
    )  # fmt: skip
    live_chart(lab.wrap_title(fig, 44), "onl.confusion_chart")
    st.caption(f"At this snapshot: {note}. Colours fixed to [0, 1]; row 0 on top.")


def block_panel(run: OnlineRun) -> None:
    """Four tabs: the confusion matrices, the current block (its ratings, qᵢ, Fᵢ, prediction, gold), the step size
    with the current update marked, and the progress table (vw style)."""
    data = run.data
    rec = run.snapshots[run.index]
    tabs = st.tabs(["Confusion matrices", "This block", "Step size ηₜ", "Progressive validation"])
    matrices, here, rate, table_tab = tabs
    with matrices:
        matrices_tab(run)
    with here:
        if rec.block is None:
            st.markdown("No block yet: press Step or E-step to read the first one.")
        else:
            blk = rec.block
            st.caption(
                f"{len(blk.items)} items; ηₜ = {blk.eta:.4f}; qᵢ and Fᵢ = log p(Dᵢ | θ) (+ log prior / |I|) "
                f"under the parameters before this block's update (progressive validation, as in {CITE})."
            )
            names = np.asarray(data.class_names, dtype=object)
            table = pd.DataFrame({"item": [data.item_names[i] for i in blk.items], "ratings": blk.ratings})
            cols = {}
            for k, c in enumerate(data.class_names[:6]):
                table[f"q({c})"] = blk.q[:, k]
                cols[f"q({c})"] = st.column_config.NumberColumn(format="%.3f")
            table["Fᵢ"] = blk.F
            cols["Fᵢ"] = st.column_config.NumberColumn(format="%.2f")
            table["prediction"] = names[blk.pred]
            if data.has_gold:
                gold = data.gold[blk.items]
                table["gold"] = np.where(gold >= 0, names[np.maximum(gold, 0)], "?")
            shown = table.head(200)
            st.dataframe(shown, hide_index=True, height=table_height(len(shown)), column_config=cols, key="onl.block")
    with rate:
        live_chart(eta_figure(run), "onl.eta_now_chart")
        st.caption(
            "The schedule of the settings; the ring is the update the cursor shows (after an E-step: the update "
            "about to be made). Its ηₜ is how far this block moves the statistics."
            if rec.block is not None
            else "The schedule of the settings. No update yet: press Step or E-step to read the first block."
        )
    with table_tab:
        st.caption(
            "Rows at example counters 1, 2, 4, 8, ... (at the item that reaches them): the average Fᵢ so far and "
            "since the last row, the item's gold label ('?' if unknown), the prediction before the update, and its "
            "number of ratings. The average should rise as data is consumed."
        )
        st.code(format_table(run.table()), language=None)
    if data.has_gold and run.index > 0:
        labels = run.labels()
        st.caption(f"Accuracy of every item's arg-max q under the current θ: {accuracy(labels, data.gold):.4f}.")


def online_page() -> None:
    source_section()
    settings_section()
    stepper_panel()
