"""The "Learning a classifier from crowds" page (Raykar et al. 2010), one EM half-step at a time.

EM learns a logistic classifier p_i = sigma(w^T x_i) together with every annotator's sensitivity alpha_j and
specificity beta_j: the E-step turns the labels and the classifier into posteriors mu_i, the M-step re-fits alpha,
beta (closed form) and w (logistic regression on the soft labels mu_i). The page draws the items in the plane of
two features, coloured by mu_i, with the current decision boundary w^T x = 0 moving at every M-step beside the
boundary of the same logistic regression trained on majority-vote labels (dashed); the annotators in ROC space
(1 - beta, alpha) with their trail; the objective; and AUC / accuracy against the truth per iteration.

The page keeps its own dataset, settings and run under ``raykar.*`` (a :class:`crowdlab.ui.lab.Lab`), so the
working dataset of the other pages stays as it was. Cold start: :func:`crowdlab.teaching.simulate.simulate_raykar` with
d = 2 features, 500 items, 5 annotators of whom 3 are novices (majority vote is then poor), plus 2,000 fresh test
items from the same distribution. An upload is a label file (binary) and a features file (item, f1, ..., fd;
standardised); the drawing uses the first two features (the others held at their mean, 0).

Plain keys besides the Lab's: ``raykar.snapmetrics`` (the per-snapshot metrics of the run, computed once per new
snapshot, as :func:`crowdlab.ui.lab.metrics` does). The majority-vote baseline is cached with ``st.cache_data`` on
(dataset id, l2).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from scipy.special import expit

from crowdlab import plots
from crowdlab.engines.run import Run
from crowdlab.errors import DataError
from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.io.features import ItemFeatures, read_features
from crowdlab.io.metrics import accuracy, auc
from crowdlab.io.safe import plural
from crowdlab.models.majority import majority_labels
from crowdlab.models.raykar import RaykarModel, logistic_regression
from crowdlab.plots import risk as figs
from crowdlab.teaching.simulate import simulate_raykar
from crowdlab.ui import lab, presenter
from crowdlab.ui.frame import file_boxes, load_upload_cached, upload_id
from crowdlab.ui.live_chart import live_chart

NS = "raykar"
SNAPMETRICS = "raykar.snapmetrics"
N_TEST = 2000
MAX_POINTS = 2500  # items drawn in the scatter (a fixed random subset beyond that)
MAX_ANNOTATORS = 20  # annotators drawn in ROC space (the most active)

# source widgets (values mirrored under raykar.widgets)
SIM_N = "raykar.sim.items"
SIM_M = "raykar.sim.annotators"
SIM_V = "raykar.sim.novices"
SIM_SEED = "raykar.sim.seed"
SIM_BIAS = "raykar.sim.biased"
SIM_DEFAULTS = {SIM_N: 500, SIM_M: 5, SIM_V: 3, SIM_SEED: 0, SIM_BIAS: True}
BIASED_NOVICE = ((0.8, 0.95), (0.3, 0.5))  # biased novices: alpha ~ U(0.8, 0.95), beta ~ U(0.3, 0.5)
UP_LABELS, UP_FEATURES, UP_GOLD = "raykar.upload.labels", "raykar.upload.features", "raykar.upload.gold"
# settings widgets
W_L2, W_PRIOR, W_MAX_ITER = "raykar.l2", "raykar.prior", "raykar.max_iter"
# the ROC chart in presenter mode, under the scatter (beside it, its column was about 130 px wide and the names
# overlapped): the pictures' width (about 440 px with the sidebar open), names placed for presenter mode's 16 px
# text (crowdlab.plots.common.PRESENTER_PX) on a square about 270 px wide
ROC_PRESENTER = {"title_width": 40, "label_px": (270.0, 16.0), "height": 440}
# the metrics table: short headers, three decimals and fixed widths, whole in the pictures' width (about 445 px
# with the sidebar open in presenter mode)
METRIC_COLUMNS = {
    "model": st.column_config.TextColumn("model", width=163),
    "AUC": st.column_config.Column("AUC", width=48),
    "accuracy": st.column_config.Column("acc.", width=48, help="accuracy of the classifier on the training items"),
    "test AUC": st.column_config.Column("test AUC", width=62),
    "test accuracy": st.column_config.Column("test acc.", width=62),
    "labels accuracy": st.column_config.Column("labels", width=56, help="accuracy of the labels (arg-max)"),
}


@dataclass(frozen=True)
class RaykarConfig:
    """Precision l2 of the Gaussian prior on w (0: none), Beta pseudo-counts on alpha and beta, max iterations."""

    l2: float = 1.0
    prior: float = 0.0
    max_iter: int = 200


# ---------------------------------------------------------------------------- loaders (cached on small keys)
@st.cache_data(max_entries=8, show_spinner="Simulating items, a classifier and annotators...")
def simulate_cached(n_items: int, n_annotators: int, n_novices: int, seed: int, biased: bool = False) -> dict:
    """:func:`crowdlab.teaching.simulate.simulate_raykar` with d = 2, and N_TEST fresh items; cached on the parameters.

    ``biased``: the novices say 1 too often (alpha ~ U(0.8, 0.95), beta ~ U(0.3, 0.5)), so majority vote is biased
    towards 1, not just noisy. The same seed gives the same items, truth and novices either way (the simulation is
    run again with the novices' alpha and beta replaced; its random stream is unchanged)."""
    sim = simulate_raykar(n_items, 2, n_annotators, n_novices, seed=seed)
    if biased and n_novices > 0:
        novice = np.array([t == "novice" for t in sim.worker_types])
        rng = np.random.default_rng([seed, 7])
        alpha, beta = sim.alpha.copy(), sim.beta.copy()
        alpha[novice] = rng.uniform(*BIASED_NOVICE[0], int(novice.sum()))
        beta[novice] = rng.uniform(*BIASED_NOVICE[1], int(novice.sum()))
        sim = simulate_raykar(n_items, 2, n_annotators, n_novices, alpha=alpha, beta=beta, seed=seed)
    X_test, _, y_test = sim.draw_items(N_TEST, seed=seed + 10_000)
    return {
        "annotations": sim.annotations,
        "extra": {
            "features": sim.features,
            "w": sim.w,
            "alpha": sim.alpha,
            "beta": sim.beta,
            "kinds": sim.worker_types,
            "truth": sim.truth,
            "X_test": X_test,
            "y_test": y_test,
        },
    }


def _named(content: bytes, name: str) -> io.BytesIO:
    f = io.BytesIO(content)
    f.name = name
    return f


@st.cache_data(max_entries=8, show_spinner="Reading the files...")
def read_upload_cached(
    labels: bytes, features: bytes, gold: bytes | None, name: str, features_name: str
) -> tuple[Annotations, ItemFeatures]:
    """The label file (and gold) and the features file, aligned; cached on their bytes. Raises DataError."""
    data = load_upload_cached(labels, gold, "auto", name)
    if data.is_continuous or data.n_classes != 2:
        raise DataError(
            f"learning a classifier from crowds needs two classes; '{name}' has "
            + ("scores" if data.is_continuous else f"{data.n_classes} ({', '.join(data.class_names)})")
            + ".",
            hint="Upload a label file with two classes (e.g. 0/1 or no/yes); the second is the positive class.",
        )
    feats = read_features(_named(features, features_name), data, standardize=True, where="app")
    return data, feats


@st.cache_data(max_entries=16, show_spinner="Training logistic regression on majority-vote labels...")
def mv_baseline(data_id: str, l2: float, _data: Annotations, _extra: dict) -> dict:
    """Majority vote and the logistic regression trained on its labels (same l2), with their scores against the
    truth (training items; and the test items of a simulation). Keyed on (dataset id, l2), never on arrays."""
    feats: ItemFeatures = _extra["features"]
    mv = majority_labels(_data)
    w = logistic_regression(feats.X, mv.astype(np.float64), l2, penalised=feats.penalised.astype(np.float64))
    truth = _truth(_data, _extra)
    out = {"mv": mv, "w": w}
    if truth is not None:
        s = expit(feats.X @ w)
        out |= {"auc": auc(s, truth), "acc": accuracy((s > 0.5).astype(int), truth), "mv_acc": accuracy(mv, truth)}
    if "X_test" in _extra:
        s = expit(_extra["X_test"] @ w)
        out |= {"test_auc": auc(s, _extra["y_test"]), "test_acc": accuracy((s > 0.5).astype(int), _extra["y_test"])}
    return out


def _truth(data: Annotations, extra: dict) -> np.ndarray | None:
    if "truth" in extra:
        return np.asarray(extra["truth"])
    return data.gold if data.has_gold else None


def simulation(
    n_items: int, n_annotators: int, n_novices: int, seed: int, biased: bool
) -> tuple[str, Annotations, dict]:
    sim = simulate_cached(n_items, n_annotators, n_novices, seed, biased)
    data_id = f"sim:raykar:{n_items}:{n_annotators}:{n_novices}:{seed}:{'biased' if biased else 'noisy'}"
    return data_id, sim["annotations"], sim["extra"]


def _default() -> tuple[str, Annotations, dict]:
    return simulation(*SIM_DEFAULTS.values())


def _build(data: Annotations, cfg: RaykarConfig, extra: dict) -> Run:
    model = RaykarModel(extra["features"], l2=cfg.l2, prior=cfg.prior)
    return Run(data, model, "majority", tol=1e-8, max_iter=cfg.max_iter)


RAY = lab.Lab(
    NS,
    default=_default,
    build=_build,
    config_default=RaykarConfig(),
    config_widgets={"l2": W_L2, "prior": W_PRIOR, "max_iter": W_MAX_ITER},
    widget_defaults=SIM_DEFAULTS,
)


# ---------------------------------------------------------------------------- loading (callbacks call these)
def use_simulation() -> None:
    """on_click of Simulate: the mirrored slider values -> a new simulated dataset (the run resets)."""
    v = RAY.value
    m = int(v(SIM_M))
    RAY.set_data(*simulation(int(v(SIM_N)), m, min(int(v(SIM_V)), m), int(v(SIM_SEED)), bool(v(SIM_BIAS))))


def load_upload(
    labels: bytes,
    features: bytes,
    gold: bytes | None = None,
    name: str = "labels.csv",
    features_name: str = "features.csv",
) -> bool:
    """Read an uploaded label file and features file; True on success. On a DataError the reader's message is
    kept for the page (``raykar.upload.error``) and the dataset stays."""
    try:
        data, feats = read_upload_cached(labels, features, gold, name, features_name)
    except DataError as exc:
        RAY.set_upload_message(error=str(exc))
        return False
    key = labels + b"\0features\0" + features + b"\0gold\0" + (gold or b"")
    RAY.set_data(upload_id(key), data, {"features": feats})
    RAY.set_upload_message(
        ok=f"Loaded '{safe.md(name)}' and '{safe.md(features_name)}': {plural(data.n_items, 'item')}, "
        f"{plural(data.n_workers, 'annotator')}, {plural(len(feats.raw_names), 'feature')} "
        f"({', '.join(safe.md(n) for n in feats.raw_names[:6])}{' ...' if feats.d > 7 else ''}); "
        f"positive class '{safe.md(data.class_names[1])}'."
    )
    return True


def _on_load() -> None:
    labels = st.session_state.get(UP_LABELS)
    features = st.session_state.get(UP_FEATURES)
    if labels is None or features is None:
        RAY.set_upload_message(error="Choose a label file and a features file first.")
        return
    gold = st.session_state.get(UP_GOLD)
    load_upload(
        labels.getvalue(),
        features.getvalue(),
        None if gold is None else gold.getvalue(),
        labels.name,
        features.name,
    )


# ---------------------------------------------------------------------------- derived
def plane(feats: ItemFeatures) -> dict:
    """The two drawn coordinates (the first two features; one feature: a fixed jitter as y), their names, the
    box around them, and how to reduce a weight vector to the plane (the other features at their mean)."""
    X = feats.X
    start = 1 if feats.intercept else 0
    raw = X[:, start:]
    names = list(feats.raw_names)
    x = raw[:, 0]
    if raw.shape[1] >= 2:
        y, y_name = raw[:, 1], names[1]
    else:
        y, y_name = np.random.default_rng(0).uniform(-1, 1, x.size), "(jitter: one feature only)"
    pad = lambda v: 0.05 * max(float(np.ptp(v)), 1e-9)  # noqa: E731
    box = (x.min() - pad(x), x.max() + pad(x), y.min() - pad(y), y.max() + pad(y))
    rest = raw[:, 2:].mean(axis=0) if raw.shape[1] > 2 else np.zeros(0)
    show = np.arange(x.size)
    if x.size > MAX_POINTS:
        show = np.sort(np.random.default_rng(0).choice(x.size, MAX_POINTS, replace=False))
    return {"x": x, "y": y, "x_name": names[0], "y_name": y_name, "box": box, "rest": rest, "show": show,
            "intercept": feats.intercept, "d_raw": raw.shape[1]}  # fmt: skip


def in_plane(w: np.ndarray, pl: dict) -> np.ndarray:
    """(b, w1, w2) of the line w^T x = 0 in the drawn plane (other features at their mean; none: w2 = 0)."""
    w = np.asarray(w, dtype=np.float64)
    b = float(w[0]) if pl["intercept"] else 0.0
    coef = w[1:] if pl["intercept"] else w
    w2 = float(coef[1]) if pl["d_raw"] >= 2 else 0.0
    return np.array([b + float(coef[2:] @ pl["rest"]), float(coef[0]), w2])


def snapshot_metrics(run: Run) -> pd.DataFrame | None:
    """Per snapshot: x position, iteration, objective, AUC and accuracy against the truth of the classifier
    sigma(w^T x) and of the posterior mu (training items) and of the classifier on the test items (simulation).
    Computed once per new snapshot and kept under ``raykar.snapmetrics``; None without a truth."""
    extra = RAY.extra()
    truth = _truth(run.data, extra)
    if truth is None:
        return None
    run_id = RAY.run_id()
    snaps = run.snapshots
    cache = st.session_state.get(SNAPMETRICS)
    if cache is None or cache["run_id"] != run_id or cache["n"] > len(snaps) or cache["first"] is not snaps[0]:
        cache = {"run_id": run_id, "n": 0, "first": snaps[0], "rows": []}
    X = extra["features"].X
    for s in snaps[cache["n"] :]:
        p = expit(X @ s.params.w)
        mu = s.q[:, 1]
        row = {
            "x": float(s.iteration + 0.5 if s.kind == "E" else s.iteration),
            "snapshot": s.index,
            "kind": s.kind,
            "iteration": s.iteration,
            "objective": s.objective,
            "classifier AUC": auc(p, truth),
            "classifier accuracy": accuracy((p > 0.5).astype(int), truth),
            "posterior accuracy": accuracy((mu > 0.5).astype(int), truth),
        }
        if "X_test" in extra:
            pt = expit(extra["X_test"] @ s.params.w)
            row["test AUC"] = auc(pt, extra["y_test"])
            row["test accuracy"] = accuracy((pt > 0.5).astype(int), extra["y_test"])
        cache["rows"].append(row)
    cache["n"] = len(snaps)
    st.session_state[SNAPMETRICS] = cache
    return pd.DataFrame(cache["rows"])


# ---------------------------------------------------------------------------- the page
def raykar_page() -> None:
    """Dataset, settings, then the stepper (its notice, buttons, Play, curves and the pictures)."""
    source_section()
    settings_section()
    stepper_panel()


def source_section() -> None:
    data = RAY.ensure()
    with st.expander(f"Dataset: **{safe.md(data.name or RAY.data_id())}** — simulate or upload labels and features"):
        sim, upload = st.tabs(["Simulate", "Upload"])
        with sim:
            st.markdown(
                "Items with two features x ~ N(0, I), a logistic truth y ~ Bernoulli(σ(wᵀ[1, x])), and two-coin "
                "annotators: experts with α, β ~ U(0.85, 0.95), novices U(0.55, 0.7), or, when biased, novices "
                "who say 1 too often (α ~ U(0.8, 0.95), β ~ U(0.3, 0.5)). With a majority of biased novices "
                "majority vote is biased too; EM learns who to trust."
            )
            c1, c2, c3, c4 = st.columns(4)
            c1.slider("Items", 50, 5000, step=50, **RAY.mirrored(SIM_N))
            c2.slider("Annotators", 1, 15, **RAY.mirrored(SIM_M))
            m = int(RAY.value(SIM_M))
            if RAY.value(SIM_V) > m:
                RAY.set_value(SIM_V, m)
            c3.slider("of whom novices", 0, m, **RAY.mirrored(SIM_V))
            c4.number_input("Seed", min_value=0, step=1, **RAY.mirrored(SIM_SEED))
            st.toggle("Novices say 1 too often (biased, not just noisy)", **RAY.mirrored(SIM_BIAS))
            st.button("Simulate", key="raykar.sim.run", type="primary", on_click=use_simulation)
        with upload:
            st.markdown(
                "A label file with two classes (long `item,worker,label` or wide; the second class is the positive "
                "one) and a features file with one row per item: `item,f1,...,fd` (standardised here). The drawing "
                "uses the first two features."
            )
            file_boxes([("Label file", UP_LABELS), ("Features file", UP_FEATURES), ("Gold file (optional)", UP_GOLD)])
            st.button("Load", key="raykar.upload.load", type="primary", on_click=_on_load)
        RAY.upload_messages()


def settings_section() -> None:
    """The page's settings (a change resets the run), folded into an expander in presenter mode."""
    with presenter.settings("Settings: priors on w, α and β; max iterations"):
        _settings_widgets()


def _settings_widgets() -> None:
    RAY.sync_config_widgets()
    c1, c2, c3 = st.columns(3)
    c1.number_input(
        "l2: precision of the Gaussian prior on w",
        min_value=0.0,
        step=0.5,
        help="Shrinks the slopes (not the intercept) towards 0; 0 = no prior (separable data then diverge).",
        **RAY.config_widget("l2"),
    )
    c2.number_input(
        "Prior strength on α, β",
        min_value=0.0,
        step=0.5,
        help="Beta(1 + s, 1 + s) pseudo-counts on every αⱼ and βⱼ (MAP EM); 0 = maximum likelihood.",
        **RAY.config_widget("prior"),
    )
    c3.number_input("Max iterations", min_value=1, step=10, **RAY.config_widget("max_iter"))


def stepper_panel() -> None:
    """The one stepper (:func:`crowdlab.ui.lab.stepper`): the objective and the accuracy as curves; the items and
    boundaries beside the annotators, and the table, as the page's pictures."""
    lab.stepper(RAY.slot, curves=curves_panel, panels=pictures_panel)


def _context(run: Run) -> tuple[dict, dict, dict]:
    """(extra, majority-vote baseline, drawing plane) of the page's dataset (cached)."""
    extra = RAY.extra()
    base = mv_baseline(f"{NS}:{RAY.data_id()}", RAY.config().l2, run.data, extra)
    return extra, base, RAY.derived("plane", lambda: plane(extra["features"]))


def curves_panel(run: Run) -> None:
    _, base, _ = _context(run)
    table = snapshot_metrics(run)
    c1, c2 = lab.curve_columns(2)
    with c1:
        lab.objective_chart(RAY.slot, run, height=340)
    with c2:
        if table is None:
            st.info("No truth (no gold labels in the upload): there is nothing to score the classifiers against.")
        else:
            metric_chart(table, base, float(table["x"][run.index]))


def pictures_panel(run: Run) -> None:
    extra, base, pl = _context(run)
    if presenter.is_on():  # the pictures share the page with the curves: one under the other, each readable
        scatter_panel(run, pl, base, extra)
        roc_panel(run, extra)
    else:
        left, right = st.columns([3, 2])
        with left:
            scatter_panel(run, pl, base, extra)
        with right:
            roc_panel(run, extra)
    table = snapshot_metrics(run)
    if table is not None:
        metrics_table(run, table, base)


def metric_chart(table: pd.DataFrame, base: dict, x_now: float) -> None:
    """Accuracy against the truth over the snapshots: Raykar's classifier (on the test items of a simulation) and
    its posterior labels, beside the classifier trained on majority vote and majority vote's own labels."""
    test = "test accuracy" in table
    n = len(table)
    clf = "test accuracy" if test else "classifier accuracy"
    where = " (test items)" if test else ""
    values = {f"Raykar classifier{where}": table[clf].to_numpy(float)}
    mv_clf = base.get("test_acc" if test else "acc")
    if mv_clf is not None:
        values[f"MV-trained classifier{where}"] = np.full(n, mv_clf)
    values["Raykar posterior labels"] = table["posterior accuracy"].to_numpy(float)
    if "mv_acc" in base:
        values["majority-vote labels"] = np.full(n, base["mv_acc"])
    x = table["x"].to_numpy(float)
    fig = plots.metric_curve(x, values, x_now, title="Accuracy against the truth", height=lab.chart_height(340))
    live_chart(lab.wrap_title(fig), "raykar.metric_chart")


def scatter_panel(run: Run, pl: dict, base: dict, extra: dict) -> None:
    snap = run.current
    show = pl["show"]
    truth = _truth(run.data, extra)
    true_w = extra.get("w")
    fig = figs.raykar_scatter(
        pl["x"][show],
        pl["y"][show],
        snap.q[show, 1],
        truth=None if truth is None else truth[show],
        boundary=in_plane(snap.params.w, pl),
        mv_boundary=in_plane(base["w"], pl),
        true_boundary=None if true_w is None else in_plane(true_w, pl),
        box=pl["box"],
        x_title=pl["x_name"],
        y_title=pl["y_name"],
        title=f"Items coloured by μᵢ, {lab.where(run, snap)}; boundaries wᵀx = 0",
    )
    # presenter mode: the pictures' whole width (stacked), its title wrapped by it
    fig = lab.fit_title(fig, lab.MAIN_PANEL_PX[True]) if presenter.is_on() else lab.wrap_title(fig, 36)
    live_chart(fig, "raykar.scatter_chart")
    notes = [
        "Colour: the posterior μᵢ = P(yᵢ = 1 | labels, xᵢ) after the last E-step (fixed scale [0, 1])",
        "solid: Raykar's classifier at this snapshot; dashed: the same logistic regression trained on majority-vote "
        "labels" + ("; dotted: the true boundary" if true_w is not None else ""),
    ]
    if truth is not None:
        notes.append("circles: truth 1, diamonds: truth 0")
    if pl["d_raw"] > 2:
        notes.append(f"the other {pl['d_raw'] - 2} features held at their mean (0) for the lines")
    if show.size < pl["x"].size:
        notes.append(f"{show.size:,} of {pl['x'].size:,} items drawn")
    st.caption("; ".join(notes) + ".")


def roc_panel(run: Run, extra: dict) -> None:
    data = run.data
    idx = [i for i in range(run.index + 1) if run.snapshots[i].kind != "E"]
    A = np.vstack([run.snapshots[i].params.alpha for i in idx])
    B = np.vstack([run.snapshots[i].params.beta for i in idx])
    shown = np.argsort(-data.labels_per_worker, kind="stable")[:MAX_ANNOTATORS]
    kinds = extra.get("kinds")
    fig = figs.roc_trail(
        1.0 - B[:, shown],
        A[:, shown],
        [data.worker_names[m] for m in shown],
        true_fpr=None if "beta" not in extra else 1.0 - np.asarray(extra["beta"])[shown],
        true_tpr=None if "alpha" not in extra else np.asarray(extra["alpha"])[shown],
        kinds=None if kinds is None else [kinds[m] for m in shown],
        # the square plot is as wide as its narrow column (about 140 px): a taller figure only adds blank space
        **(ROC_PRESENTER if presenter.is_on() else {"title_width": 26, "height": 335}),
    )
    live_chart(fig, "raykar.roc_chart")
    note = "Each annotator's (1 − β, α) at init and every M-step up to the cursor; top left is perfect"
    if "alpha" in extra:
        note += "; hollow circles: the true values"
    if shown.size < data.n_workers:
        note += f"; the {shown.size} most active of {data.n_workers:,}"
    st.caption(note + ".")


def metrics_table(run: Run, table: pd.DataFrame, base: dict) -> pd.DataFrame:
    """The majority-vote baseline, then one row per complete iteration up to the cursor: the classifier's AUC and
    accuracy (training items; test items of a simulation) and the accuracy of the labels (posterior arg-max)."""
    done = table[(table["kind"] != "E") & (table["snapshot"] <= run.index)]
    test = "test accuracy" in table
    rows = [
        {
            "model": "trained on majority vote",
            "AUC": base.get("auc", np.nan),
            "accuracy": base.get("acc", np.nan),
            **({"test AUC": base.get("test_auc"), "test accuracy": base.get("test_acc")} if test else {}),
            "labels accuracy": base.get("mv_acc", np.nan),
        }
    ]
    for _, r in done.iterrows():
        rows.append(
            {
                "model": "Raykar, init" if r["iteration"] == 0 else f"Raykar, iteration {int(r['iteration'])}",
                "AUC": r["classifier AUC"],
                "accuracy": r["classifier accuracy"],
                **({"test AUC": r["test AUC"], "test accuracy": r["test accuracy"]} if test else {}),
                "labels accuracy": r["posterior accuracy"],
            }
        )
    shown = pd.DataFrame(rows)
    numbers = [c for c in shown.columns if c != "model"]
    st.dataframe(
        shown.style.format("{:.3f}", subset=numbers, na_rep="—"),
        hide_index=True,
        key="raykar.metrics_table",
        column_config={c: METRIC_COLUMNS[c] for c in shown.columns if c in METRIC_COLUMNS},
    )
    where = f"on the training items; test: {N_TEST:,} fresh items of the simulation" if test else "against gold"
    st.caption(
        f"AUC and accuracy (acc.) of the classifier σ(wᵀx) {where}. Labels: the accuracy of majority vote's "
        "labels in the first row, then of the arg-max of the posterior μᵢ. AUC depends only on the direction of w; "
        "a biased crowd shifts the majority-vote classifier's intercept, which the accuracy sees."
    )
    return shown
