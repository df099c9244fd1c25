"""The Sequences page: labels that form Markov chains (Traganitis & Giannakis, Sec. 4), HMM-crowd EM step by step.

The page keeps its own dataset, settings and run under ``seq.*`` (a :class:`crowdlab.ui.lab.Lab`), so the working
dataset of the other pages stays as it was. Cold start: a simulated set (50 sequences of 40 positions, K = 4,
Traganitis & Giannakis' crowd of 6 experts and 4 spammers), which steps instantly; the bundled CoNLL NER validation
split (39,025 tokens) is one click away. Majority vote and i.i.d. Dawid-Skene, the baselines of the strip view and of
the comparison, are fitted once per dataset (kept under ``seq.derived``, under a progress bar);
Viterbi and the comparison at the cursor once per (run, snapshot), kept under ``seq.cursor``.

One vocabulary for where the run is: the stepper's "iteration 2, after M-step" (chart titles say "after iteration
2" for the parameters they show). The open tab is a plain key of its own (``seq.open_tab``): it stays open when a
new dataset comes in (the other view choices, such as the picked sequence, are forgotten then).
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from crowdlab.engines.run import STOP_REASONS, Run, Snapshot, posterior_window
from crowdlab.errors import DataError
from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.io.metrics import accuracy, confusion_error, macro_f
from crowdlab.io.safe import plural
from crowdlab.io.samples import SEQUENCE_SAMPLES
from crowdlab.io.sequences import read_sequences
from crowdlab.models import HMMCrowd, make_model
from crowdlab.models.majority import majority_labels
from crowdlab.plots import confusion_grid
from crowdlab.plots import dependent as figs
from crowdlab.teaching.simulate import mix_from_counts, simulate_sequences
from crowdlab.ui import lab, presenter, state
from crowdlab.ui.frame import file_boxes, load_sample_cached, upload_id
from crowdlab.ui.live_chart import live_chart
from crowdlab.ui.progress import seconds

NS = "seq"
# Traganitis & Giannakis' experiments: experts a little better than chance, and spammers
SEED_CROWD_ACCURACY = (0.35, 0.6)
SPAMMER_SHARE = 0.4
MAX_POSITIONS = 60  # positions drawn in one strip (a window of a longer sequence)
DEFAULT_WORKERS = 8
MAX_WORKERS = 12

INITS = {
    "majority": "Majority vote (soft)",
    "moments": "Moment matching",  # T from lagged moments (Traganitis & Giannakis, Alg. 2: the help says so)
    "ds": "i.i.d. Dawid-Skene posterior",
}
TABS = ("Strip view", "Transitions", "Workers", "Comparison")
ROW_TRUTH, ROW_MV, ROW_DS, ROW_HMM, ROW_VITERBI = "truth", "majority vote", "i.i.d. DS", "HMM posterior", "HMM Viterbi"
M_MV, M_DS, M_HMM, M_VITERBI = (
    "Majority vote",
    "i.i.d. Dawid-Skene",
    "HMM-crowd (posterior arg-max)",
    "HMM-crowd (Viterbi)",
)  # the comparison's rows
CONFUSION_ERROR = "confusion error"  # Traganitis & Giannakis, eq. (38)

# source widgets (values mirrored under seq.widgets)
SIM_S = "seq.sim.sequences"
SIM_LEN = "seq.sim.length"
SIM_K = "seq.sim.classes"
SIM_M = "seq.sim.workers"
SIM_STAY = "seq.sim.stay"
SIM_LABELS = "seq.sim.labels"
SIM_SEED = "seq.sim.seed"
SIM_DEFAULTS = {SIM_S: 50, SIM_LEN: 40, SIM_K: 4, SIM_M: 10, SIM_STAY: 0.8, SIM_LABELS: 10, SIM_SEED: 0}
UPLOAD_FILE = "seq.upload.file"
UPLOAD_GOLD = "seq.upload.gold"
# settings widgets
W_INIT, W_PRIOR, W_HARD = "seq.init", "seq.prior", "seq.hard"
W_SEED, W_TOL, W_MAX_ITER = "seq.seed", "seq.tol", "seq.max_iter"
W_TAB, W_SEQUENCE, W_START = "seq.tab", "seq.sequence", "seq.window_start"
CURSOR = "seq.cursor"  # plain key: what was computed at the cursor, {"key": (run id, index), ...}
OPEN_TAB = "seq.open_tab"  # plain key: the open tab (kept when the dataset changes)
DS_START = "i.i.d. Dawid-Skene posterior"  # how the stepper names that start (the engine says "another model's")
# about how wide a chart across the tabs is drawn at 1024 px: beside the sidebar, and in presenter mode's right column
CHART_PX = {False: 560, True: 640}
# the size heatmap numbers and tick labels are drawn at: the figure's 12 px, presenter mode's 16 px
TEXT_PX = {False: 12.0, True: 16.0}  # presenter mode: crowdlab.plots.common.PRESENTER_PX
TITLE_CHARS = 34  # a title line of a chart half as wide as the tabs (15 px bold)


@dataclass(frozen=True)
class SeqConfig:
    """HMM-crowd EM settings: start, MAP prior strength, hard EM (Viterbi), seed and stopping rule."""

    init: str = "majority"
    prior: float = 0.0
    hard: bool = False
    seed: int = 0
    tol: float = 1e-8
    max_iter: int = 500


# ---------------------------------------------------------------------------- loaders (cached on small keys)
def seed_crowd(n_workers: int) -> dict:
    """Traganitis & Giannakis' crowd for ``n_workers``: 40 % spammers, the rest experts with accuracy U(0.35, 0.6)."""
    spammers = min(int(round(SPAMMER_SHARE * n_workers)), n_workers - 1)
    return {
        "mix": mix_from_counts({"expert": n_workers - spammers, "spammer": spammers}),
        "expert_accuracy": SEED_CROWD_ACCURACY,
    }


@st.cache_data(max_entries=8, show_spinner="Simulating sequences...")
def simulate_cached(S: int, length: int, K: int, M: int, stay: float, labels: int, seed: int):
    """:func:`crowdlab.teaching.simulate.simulate_sequences` with Traganitis & Giannakis' crowd, cached on its
    parameters."""
    return simulate_sequences(S, length, K, M, self_transition=stay, labels_per_item=labels, seed=seed, **seed_crowd(M))


@st.cache_data(max_entries=8, show_spinner="Reading the file...")
def read_upload_cached(content: bytes, gold: bytes | None, name: str, gold_name: str | None) -> Annotations:
    """:func:`crowdlab.io.sequences.read_sequences` on uploaded bytes, cached on the bytes."""
    g = None if gold is None else _named(gold, gold_name or "gold file")
    return read_sequences(_named(content, name), gold=g, name=Path(name).stem, where="app")


def baselines_fit(data_id: str, _data: Annotations, _progress=None) -> dict:
    """Majority vote and i.i.d. Dawid-Skene to convergence; ``_progress(iteration, max_iter)`` follows the fit
    (the full CoNLL data take a while). Kept once per dataset under ``seq.derived`` (not ``st.cache_data``: a
    cached function may not draw the progress bar it reports to)."""
    ds = Run(_data, make_model("ds"), keep_posteriors=2)
    ds.run(progress=_progress)
    return {
        "mv": majority_labels(_data),
        "ds": ds.labels(),
        "ds_q": ds.posterior,
        "ds_gamma": ds.params.gamma,
        "ds_iterations": ds.last.iteration,
        "ds_stop": ds.stop_reason,
        "ds_max_iter": ds.max_iter,
    }


def stop_text(reason: str | None, iterations: int, max_iter: int, *, count: bool = True) -> str:
    """How a finished run stopped, in words: "converged after 23 iterations", "stopped at the 500-iteration limit
    before converging", ... (``count=False``: without "after n iterations")."""
    after = f" after {plural(iterations, 'iteration')}" if count else ""
    if reason == "max_iter":
        return f"stopped at the {max_iter}-iteration limit before converging"
    return ("converged" if reason == "converged" else STOP_REASONS.get(reason, "stopped")) + after


def _named(content: bytes, name: str) -> io.BytesIO:
    f = io.BytesIO(content)
    f.name = name
    return f


def simulation(
    S: int, length: int, K: int, M: int, stay: float, labels: int, seed: int
) -> tuple[str, Annotations, dict]:
    sim = simulate_cached(S, length, K, M, stay, labels, seed)
    data_id = f"sim:seq:{S}:{length}:{K}:{M}:{stay:g}:{labels}:{seed}"
    return data_id, sim.annotations, {"T": sim.T, "gamma": sim.gamma, "pi0": sim.pi0}


def _default() -> tuple[str, Annotations, dict]:
    return simulation(*SIM_DEFAULTS.values())


def _build(data: Annotations, cfg: SeqConfig, extra: dict) -> Run:
    model = HMMCrowd(prior=cfg.prior, hard=cfg.hard)
    options = dict(seed=cfg.seed, tol=cfg.tol, max_iter=cfg.max_iter, keep_posteriors=posterior_window(data))
    if cfg.init == "ds":
        return Run(data, model, "posterior", q0=baselines()["ds_q"], q0_name=DS_START, **options)
    return Run(data, model, cfg.init, **options)


SEQ = lab.Lab(
    NS,
    default=_default,
    build=_build,
    config_default=SeqConfig(),
    config_widgets={
        "init": W_INIT,
        "prior": W_PRIOR,
        "hard": W_HARD,
        "seed": W_SEED,
        "tol": W_TOL,
        "max_iter": W_MAX_ITER,
    },
    widget_defaults=SIM_DEFAULTS,
)


# data id -> seconds the baseline fit last took in this server process: the CoNLL NER caption states it, measured,
# instead of a promised constant ("about a second" for a start that took 23 s on a busy machine)
MEASURED: dict[str, float] = {}


def baselines() -> dict:
    """Majority vote and i.i.d. DS of the page's dataset, computed once per dataset (under a progress bar the
    first time, with its pace and the time left: on the full CoNLL data it takes seconds); the time it took is
    kept in :data:`MEASURED`."""
    data = SEQ.ensure()
    data_id = SEQ.data_id()

    def fit() -> dict:
        t0 = time.perf_counter()
        out = lab.with_progress(
            "Fitting i.i.d. Dawid-Skene once for this dataset (the baseline)",
            lambda progress: baselines_fit(f"{NS}:{data_id}", data, progress),
        )
        MEASURED[data_id] = time.perf_counter() - t0
        return out

    return SEQ.derived("baselines", fit)


def ner_timing() -> str:
    """What loading CoNLL NER costs, in measured words where this server has measured it."""
    took = MEASURED.get("sample:ner")
    measured = f" (it took {seconds(took)} the last time here)" if took is not None else ""
    return (
        "Loading reads the file in well under a second; then i.i.d. Dawid-Skene (the baseline) is fitted once, up "
        f"to 500 iterations{measured}, under a progress bar that shows its pace and the time left at most. "
        "HMM-crowd's Run to convergence stops at the 500-iteration limit (the log-likelihood still creeps up by "
        "about 10⁻⁷ of itself an iteration); its bar, too, shows the pace and the time left."
    )


# ---------------------------------------------------------------------------- loading (callbacks call these)
def use_simulation() -> None:
    """on_click of Simulate: the mirrored slider values -> a new simulated dataset (the run resets)."""
    v = SEQ.value
    labels = min(int(v(SIM_LABELS)), int(v(SIM_M)))
    SEQ.set_data(
        *simulation(
            int(v(SIM_S)), int(v(SIM_LEN)), int(v(SIM_K)), int(v(SIM_M)), float(v(SIM_STAY)), labels, int(v(SIM_SEED))
        )
    )


def use_sample(key: str = "ner") -> None:
    """Make a bundled sequence dataset (CoNLL NER) the page's dataset."""
    SEQ.set_data(f"sample:{key}", load_sample_cached(key), {})


def load_upload(content: bytes, gold: bytes | None = None, name: str = "sequences.csv", gold_name=None) -> bool:
    """Read an uploaded sequence file (and gold) and make it the page's dataset; True on success. On a
    :class:`DataError` the reader's message is kept for the page (``seq.upload.error``) and the dataset stays."""
    try:
        data = read_upload_cached(content, gold, name, gold_name)
    except DataError as exc:
        SEQ.set_upload_message(error=str(exc))
        return False
    SEQ.set_data(upload_id(content + b"\0gold\0" + (gold or b"")), data, {})
    with_gold = f" with gold from '{safe.md(gold_name)}'" if gold is not None else ""
    SEQ.set_upload_message(
        ok=f"Loaded '{safe.md(name)}'{with_gold}: {data.n_sequences:,} sequences, {data.n_items:,} positions, "
        f"{data.n_workers:,} workers."
    )
    return True


def _on_load() -> None:
    upload = st.session_state.get(UPLOAD_FILE)
    if upload is None:
        SEQ.set_upload_message(error="Choose a label file first (sequence,position,worker,label).")
        return
    gold = st.session_state.get(UPLOAD_GOLD)
    load_upload(
        upload.getvalue(),
        None if gold is None else gold.getvalue(),
        upload.name,
        None if gold is None else gold.name,
    )


# ---------------------------------------------------------------------------- derived at the cursor
def params_snapshot(run: Run) -> Snapshot:
    """The snapshot whose parameters the cursor shows (after an E-step: the M-step or init before it)."""
    i = run.index
    while i > 0 and run.snapshots[i].kind == "E":
        i -= 1
    return run.snapshots[i]


def params_at(run: Run) -> str:
    """Where the parameters the tabs show come from, in the stepper's words: "after iteration 2" (its M-step;
    after an E-step still the M-step before it) or "at the start"."""
    snap = params_snapshot(run)
    return "at the start" if snap.kind == "init" else f"after iteration {snap.iteration}"


def run_status(run: Run) -> str:
    """Where the cursor is and, at the end of a finished run, how it stopped ("iteration 500, after M-step: the end
    of the run, stopped at the 500-iteration limit before converging")."""
    where = lab.step_label(run)
    if run.at_end and run.stop_reason:
        return f"{where}: the end of the run, {stop_text(run.stop_reason, run.last.iteration, run.max_iter)}"
    if run.stop_reason:
        how = stop_text(run.stop_reason, run.last.iteration, run.max_iter, count=False)
        return f"{where}; the run went on to iteration {run.last.iteration} and {how} there"
    return where


def at_cursor(run: Run) -> dict:
    """Viterbi labels and the comparison table at the cursor, computed once per (run id, snapshot)."""
    key = (SEQ.run_id(), run.index, id(run.current))
    cached = st.session_state.get(CURSOR)
    if cached is None or cached["key"] != key:
        params = params_snapshot(run).params
        viterbi = run.model.decode(run.data, params)
        table = comparison_table(run.data, run.current, params, viterbi, baselines(), SEQ.extra())
        cached = {"key": key, "viterbi": viterbi, "table": table}
        st.session_state[CURSOR] = cached
    return cached


def transition_error(T_true: np.ndarray, T_est: np.ndarray) -> float:
    """||T - T_hat||_1, the induced 1-norm (largest absolute column sum), as in Traganitis & Giannakis' experiments."""
    return float(np.abs(np.asarray(T_true) - np.asarray(T_est)).sum(axis=0).max())


def comparison_table(
    data: Annotations, snap: Snapshot, params, viterbi: np.ndarray, base: dict, truth: dict
) -> pd.DataFrame:
    """Majority vote, i.i.d. DS, the HMM's posterior arg-max and its Viterbi path: accuracy and macro F against
    gold; with a simulation's truth also the confusion error (Traganitis & Giannakis, eq. (38)) and
    ||T - T_hat||_1 (NaN where a method has no such parameter)."""
    hmm = np.argmax(snap.q, axis=1)
    rows = [
        (M_MV, base["mv"], None, None),
        (M_DS, base["ds"], base["ds_gamma"], None),
        (M_HMM, hmm, params.gamma, params.T),
        (M_VITERBI, viterbi, params.gamma, params.T),
    ]
    out = []
    for name, labels, gamma, T in rows:
        row = {"method": name}
        if data.has_gold:
            row["accuracy"] = accuracy(labels, data.gold)
            row["macro F"] = macro_f(labels, data.gold, data.n_classes)
        if "gamma" in truth:
            row[CONFUSION_ERROR] = np.nan if gamma is None else confusion_error(truth["gamma"], gamma)
            row["‖T − T̂‖₁"] = np.nan if T is None else transition_error(truth["T"], T)
        out.append(row)
    return pd.DataFrame(out)


def gold_transitions(data: Annotations) -> np.ndarray | None:
    """T counted from consecutive gold labels (pairs with both known), columns normalised; None without gold."""
    if not data.has_gold:
        return None
    K = data.n_classes
    has_prev = np.ones(data.n_items, dtype=bool)
    has_prev[data.sequence_starts[:-1]] = False
    cur = np.flatnonzero(has_prev)
    g = data.gold
    ok = (g[cur] >= 0) & (g[cur - 1] >= 0)
    counts = np.bincount(g[cur][ok] * K + g[cur - 1][ok], minlength=K * K).reshape(K, K).astype(np.float64)
    total = counts.sum(axis=0, keepdims=True)
    return np.where(total > 0, counts / np.maximum(total, 1), 1.0 / K)


def background_class(labels: np.ndarray, K: int) -> int | None:
    """The class most labels are (when it is more than half of them: NER's O), drawn in grey."""
    share = np.bincount(labels, minlength=K) / max(labels.size, 1)
    k = int(np.argmax(share))
    return k if share[k] > 0.5 else None


def default_sequence(data: Annotations, mv: np.ndarray) -> int:
    """The sequence (at most MAX_POSITIONS long) where majority vote is wrong most often (disagrees with DS
    most often without gold): the one most worth a look."""
    starts = data.sequence_starts
    wrong = (mv != data.gold) & (data.gold >= 0) if data.has_gold else np.zeros(data.n_items, dtype=bool)
    per_seq = np.add.reduceat(wrong.astype(np.int64), starts[:-1])
    per_seq[np.diff(starts) > MAX_POSITIONS] = -1
    return int(np.argmax(per_seq))


# ---------------------------------------------------------------------------- the page
WHEN_IT_HELPS = (
    "When does the chain help? When true labels persist along a sequence and single labels are unreliable, as in "
    "the simulation (sticky chains, 40 % spammers), where HMM-crowd beats i.i.d. Dawid-Skene clearly. It need not "
    "help otherwise: on the bundled CoNLL NER, whose Turk workers are mostly good, HMM-crowd ends below i.i.d. "
    "Dawid-Skene. The line under the curves compares them at the cursor."
)


def sequences_page() -> None:
    """Dataset, settings, then the stepper (its notice, buttons, Play, curves and the tabs)."""
    presenter.intro(WHEN_IT_HELPS)
    source_section()
    settings_section()
    stepper_panel()


def source_section() -> None:
    data = SEQ.ensure()
    with st.expander(f"Dataset: **{safe.md(data.name)}** — simulate, load the CoNLL NER sample, or upload"):
        sim, sample, upload = st.tabs(["Simulate", "Bundled: CoNLL NER", "Upload"])
        with sim:
            simulate_tab()
        with sample:
            s = SEQUENCE_SAMPLES["ner"]
            st.markdown(f"**{s.title}**: {s.description}")
            st.caption(ner_timing())
            st.button("Load CoNLL NER", key="seq.ner.load", type="primary", on_click=use_sample, args=("ner",))
        with upload:
            upload_tab()
        SEQ.upload_messages()


def simulate_tab() -> None:
    st.markdown(
        "Markov chains of labels with a sticky transition matrix (stay with the given probability, else move to "
        "another class at random); each position labelled by Traganitis & Giannakis' crowd: **40 % spammers**, "
        "the rest experts with accuracy U(0.35, 0.6)."
    )
    c1, c2, c3, c4 = st.columns(4)
    c1.slider("Sequences", 5, 500, step=5, **SEQ.mirrored(SIM_S))
    c2.slider("Length", 5, 100, **SEQ.mirrored(SIM_LEN))
    c3.slider("Classes", 2, 8, **SEQ.mirrored(SIM_K))
    c4.slider("Workers", 2, 30, **SEQ.mirrored(SIM_M))
    workers = int(SEQ.value(SIM_M))
    if SEQ.value(SIM_LABELS) > workers:
        SEQ.set_value(SIM_LABELS, workers)
    d1, d2, d3 = st.columns(3)
    d1.slider("Self-transition probability", 0.0, 1.0, step=0.05, **SEQ.mirrored(SIM_STAY))
    d2.slider("Labels per position", 1, workers, **SEQ.mirrored(SIM_LABELS))
    d3.number_input("Seed", min_value=0, step=1, **SEQ.mirrored(SIM_SEED))
    st.button("Simulate", key="seq.sim.run", type="primary", on_click=use_simulation)


def upload_tab() -> None:
    st.markdown(
        "A long CSV with columns `sequence,position,worker,label` (one label per row); gold is optional: "
        "`sequence,position,label`."
    )
    file_boxes([("Label file", UPLOAD_FILE), ("Gold file (optional)", UPLOAD_GOLD)])
    st.button("Load", key="seq.upload.load", type="primary", on_click=_on_load)


def settings_section() -> None:
    """The page's settings (a change resets the run), folded into an expander in presenter mode."""
    with presenter.settings(f"Settings: start from {INITS.get(SEQ.config().init)}", key="seq.settings"):
        _settings_widgets()


def _settings_widgets() -> None:
    SEQ.sync_config_widgets()
    c1, c2, c3 = st.columns([4, 2, 3], vertical_alignment="bottom")  # every start, "Hard EM (Viterbi)" whole
    c1.selectbox(
        "Start from",
        list(INITS),
        format_func=INITS.get,
        help="Moment matching (Traganitis & Giannakis, Alg. 2) takes a few seconds on CoNLL NER; i.i.d. DS fits "
        "Dawid-Skene first (once per dataset).",
        **SEQ.config_widget("init"),
    )
    c2.number_input(
        "Prior strength", min_value=0.0, step=0.5, help=state.prior_help("hmm"),
        **SEQ.config_widget("prior"),
    )  # fmt: skip
    c3.checkbox(
        "Hard EM (Viterbi)",
        help=HARD_HELP,
        **SEQ.config_widget("hard"),
    )
    with st.expander("Seed and stopping rule"):
        d1, d2, d3 = st.columns(3)
        d1.number_input("Seed", min_value=0, step=1, **SEQ.config_widget("seed"))
        d2.number_input("Tolerance (relative)", min_value=0.0, format="%.1e", **SEQ.config_widget("tol"))
        d3.number_input("Max iterations", min_value=1, step=10, **SEQ.config_widget("max_iter"))


# the page's notation is Traganitis & Giannakis': F the crowd's labels, y the true ones, ŷ the Viterbi path
HARD_HELP = (
    "The E-step keeps only the most probable label path ŷ (Viterbi); the objective becomes log p(F, ŷ | θ), the "
    "complete-data log-likelihood at ŷ (one curve: the EM bound is the same number there)."
)


def objective_title(run: Run) -> str:
    """The objective chart's title, in the page's notation (the help of "Hard EM" writes the same)."""
    prior = " + log prior" if run.model.has_prior else ""
    if run.model.hard:
        return f"Objective: log p(F, ŷ | θ){prior} at the Viterbi path ŷ"
    return f"Objective: log-likelihood log p(F | θ){prior}"


def curves_panel(run: Run) -> None:
    """The objective (with hard EM one curve: its bound is the same number), the metrics against gold and the
    verdict: does the chain help here?"""
    slot = SEQ.slot
    left, right = lab.curve_columns(2)
    with left:
        lab.objective_chart(slot, run, title=objective_title(run))
    with right:
        lab.metric_chart(slot, run)
    verdict(run)  # under both curves; in presenter mode's narrow column under "accuracy now"


def stepper_panel() -> None:
    """The one stepper (:func:`crowdlab.ui.lab.stepper`) on the page's run, with the tabs below the curves."""
    lab.stepper(SEQ.slot, curves=curves_panel, panels=tabs_panel)


def _on_tab() -> None:
    if st.session_state.get(W_TAB) in TABS:
        st.session_state[OPEN_TAB] = st.session_state[W_TAB]


def tab_widget() -> dict:
    """Arguments of the tab bar: the open tab kept under its own plain key, so a new dataset leaves it open."""
    value = st.session_state.get(OPEN_TAB)
    st.session_state[W_TAB] = value if value in TABS else TABS[0]
    return {"key": W_TAB, "on_change": _on_tab}


def tabs_panel(run: Run) -> None:
    """The open tab: strip view, transitions, workers or the comparison (only the open one runs)."""
    panels = (strip_panel, transitions_panel, workers_panel, comparison_panel)
    for tab, panel in zip(st.tabs(TABS, **tab_widget()), panels):
        if tab.open:
            with tab:
                panel(run)


def verdict(run: Run) -> None:
    """One line: does the chain help here? HMM-crowd's accuracy at the cursor against i.i.d. Dawid-Skene's, whose
    fit has run to its end: like with like only once HMM-crowd's run has ended too (at iteration 0 an unfitted HMM
    against converged Dawid-Skene said "the chain does not help here"), before that no verdict."""
    table = at_cursor(run)["table"]
    if "accuracy" not in table.columns:
        return
    acc = table.set_index("method")["accuracy"]
    hmm, ds = max(acc[M_HMM], acc[M_VITERBI]), acc[M_DS]  # the better of HMM-crowd's two label estimates
    if not (run.at_end and run.stop_reason):
        st.caption(
            f"Accuracy here: HMM-crowd **{acc[M_HMM]:.3f}** (Viterbi {acc[M_VITERBI]:.3f}) at "
            f"{lab.step_label(run)}, i.i.d. Dawid-Skene **{ds:.3f}** at the end of its fit, majority vote "
            f"{acc[M_MV]:.3f}. Whether the chain helps shows when HMM-crowd's run has ended too (Run to convergence)."
        )
        return
    if hmm > ds + 5e-4:
        word = "the chain helps here"
    elif hmm < ds - 5e-4:
        word = "the chain does not help here"
    else:
        word = "the chain makes no difference here"
    st.caption(
        f"Accuracy here: HMM-crowd **{acc[M_HMM]:.3f}** (Viterbi {acc[M_VITERBI]:.3f}), i.i.d. Dawid-Skene "
        f"**{ds:.3f}**, majority vote {acc[M_MV]:.3f}: {word}."
    )


def strip_panel(run: Run) -> None:
    data = run.data
    base = baselines()
    starts = data.sequence_starts
    S = data.n_sequences
    lengths = np.diff(starts)
    fmt = lambda s: f"sequence {data.sequence_names[s]} ({lengths[s]} positions)"  # noqa: E731
    default = SEQ.derived("default_sequence", lambda: default_sequence(data, base["mv"]))
    c1, c2 = st.columns([3, 1])
    s = int(
        c1.selectbox(
            "Sequence (default: where majority vote errs most)",
            range(S),
            format_func=fmt,
            **SEQ.view_widget(W_SEQUENCE, "sequence", lambda v: isinstance(v, int) and 0 <= v < S, default),
        )
    )
    n = int(lengths[s])
    first = 0
    if n > MAX_POSITIONS:
        last = n - MAX_POSITIONS
        first = int(
            c2.number_input(
                "First position shown",
                0,
                last,
                step=MAX_POSITIONS // 2,
                **SEQ.view_widget(W_START, "start", lambda v: isinstance(v, int) and 0 <= v <= last, 0),
            )
        )
    lo = int(starts[s]) + first
    sl = slice(lo, lo + min(n, MAX_POSITIONS))
    snap = run.current
    cur = at_cursor(run)
    rows = {}
    if data.has_gold and (data.gold[sl] >= 0).any():
        rows[ROW_TRUTH] = data.gold[sl]
    rows |= {
        ROW_MV: base["mv"][sl],
        ROW_DS: base["ds"][sl],
        ROW_HMM: np.argmax(snap.q[sl], axis=1),
        ROW_VITERBI: cur["viterbi"][sl],
    }
    conf = {ROW_DS: base["ds_q"][sl].max(axis=1), ROW_HMM: snap.q[sl].max(axis=1)}
    fig = figs.sequence_strip(
        rows,
        data.class_names,
        positions=np.arange(first, first + sl.stop - sl.start),
        confidence=conf,
        background=SEQ.derived("background", lambda: background_class(base["mv"], data.n_classes)),
        title=safe.html(f"sequence {data.sequence_names[s]}, {lab.step_label(run)}: truth, baselines, the HMM"),
    )
    live_chart(fig, "seq.strip_chart")  # a one-line title: its legend sits right under it
    notes = [f"HMM rows at {lab.step_label(run)}; majority vote and i.i.d. DS are fitted once"]
    if ROW_TRUTH in rows:
        truth = rows[ROW_TRUTH]
        wrong = {k: int(((v != truth) & (truth >= 0)).sum()) for k, v in rows.items() if k != ROW_TRUTH}
        notes.append(
            "× marks a label that disagrees with the truth: " + ", ".join(f"{k} {v}" for k, v in wrong.items())
        )
    if n > MAX_POSITIONS:
        notes.append(f"positions {first}–{first + MAX_POSITIONS - 1} of {n}")
    st.caption("; ".join(notes) + ".")


def chart_px() -> int:
    """About how wide a chart across the tabs is drawn (at 1024 px; wider screens only give more room)."""
    return CHART_PX[presenter.is_on()]


def text_px() -> float:
    """The size heatmap numbers and tick labels are drawn at (presenter mode's CSS enlarges them)."""
    return TEXT_PX[presenter.is_on()]


def same_top(figures: list) -> None:
    """Give figures drawn side by side the same top margin (the most any title needs), their titles pinned to the
    top, and heights grown by what each margin grew: their plot areas line up row for row."""
    top = max(f.layout.margin.t or 0 for f in figures)
    for f in figures:
        f.update_layout(
            height=f.layout.height + top - (f.layout.margin.t or 0),
            margin_t=top,
            title=dict(y=1.0, yref="container", yanchor="top", pad=dict(t=12)),
        )


def transitions_panel(run: Run) -> None:
    """The estimated T beside (or, when a K x K matrix would be too narrow there to read, above) the reference:
    the simulation's true T or T counted from the gold labels."""
    data = run.data
    base = params_snapshot(run)
    names = data.class_names
    K = data.n_classes
    truth = SEQ.extra()
    if "T" in truth:
        ref, ref_title = truth["T"], "True T of the simulation"
    else:
        ref = SEQ.derived("gold_T", lambda: gold_transitions(data))
        ref_title = "T counted from the gold labels"
    full, size = chart_px(), text_px()
    half = (full - 16) // 2
    # side by side while the numbers fit a cell of a half-width chart; else each chart across the tabs
    side = figs.fitting_cell_text(np.zeros(1), figs.transition_cell_px(K, names, half), size) is not None
    width = half if side else full

    def heatmap(T: np.ndarray, title: str):
        return figs.transition_heatmap(
            T, names, title=title, width_px=width, text_px=size, title_width=TITLE_CHARS if side else 2 * TITLE_CHARS
        )

    shown = [heatmap(base.params.T, f"Estimated T̂ {params_at(run)}")]
    if ref is not None:
        shown.append(heatmap(ref, ref_title))
    same_top(shown)
    boxes = st.columns(2) if side else [st.container(), st.container()]
    live_chart(shown[0], "seq.transition_chart", where=boxes[0])
    if ref is not None:
        live_chart(shown[1], "seq.transition_ref", where=boxes[1])
    else:
        boxes[1].info("No gold labels: nothing to compare the estimated transitions with.")
    notes = [
        "T[to, from] = P(label at n + 1 = to | label at n = from); every column sums to 1; colours fixed to [0, 1]"
    ]
    if shown[0].data[0].text is None:
        notes.append("the numbers are in the hover (too many classes to write them on the cells)")
    if ref is not None:
        notes.append(f"‖T − T̂‖₁ (largest column sum of |differences|) = {transition_error(ref, base.params.T):.3f}")
    st.caption("; ".join(notes) + ".")


def workers_panel(run: Run) -> None:
    """The most active workers' confusion matrices: two rows, fewer columns (and workers) as K grows, so the class
    labels fit under every matrix."""
    data = run.data
    base = params_snapshot(run)
    K = data.n_classes
    cols = 4 if K <= 5 else 3 if K <= 7 else 2
    active = np.argsort(-data.labels_per_worker, kind="stable")[: min(DEFAULT_WORKERS, 2 * cols)]
    fig = confusion_grid(
        base.params.gamma,
        data.worker_names,
        data.class_names,
        max_workers=MAX_WORKERS,
        workers=active.tolist(),
        cols=cols,
        title=f"Confusion matrices Γₘ {params_at(run)} (columns: true class, rows: worker says)",
        width_px=chart_px(),
        text_px=text_px(),
    )
    live_chart(lab.wrap_title(fig, 60), "seq.confusion_chart")
    notes = [f"The {len(active)} most active of {data.n_workers:,} workers; colours fixed to [0, 1]"]
    truth = SEQ.extra()
    if "gamma" in truth:
        err = confusion_error(truth["gamma"], base.params.gamma)
        ds = confusion_error(truth["gamma"], baselines()["ds_gamma"])
        notes.append(
            f"confusion error (Traganitis & Giannakis, eq. (38)) of the HMM here {err:.3f}, of i.i.d. DS {ds:.3f}"
        )
    st.caption("; ".join(notes) + ".")


def comparison_panel(run: Run) -> None:
    data = run.data
    table = at_cursor(run)["table"]
    if len(table.columns) == 1:
        st.info("No gold labels and no simulation truth: there is nothing to score the methods against.")
        return
    numbers = [c for c in table.columns if c != "method"]
    st.table(table.style.format("{:.3f}", subset=numbers, na_rep="—").hide(axis="index"))
    base = baselines()
    ds = stop_text(base.get("ds_stop"), base["ds_iterations"], base.get("ds_max_iter", base["ds_iterations"]))
    hmm = f"HMM rows at {run_status(run)}"
    if not (run.at_end and run.stop_reason):
        hmm += ": Run to convergence for the final comparison"
    notes = [hmm, f"i.i.d. Dawid-Skene fitted once for this dataset: {ds}"]
    if data.has_gold:
        notes.append("macro F: Traganitis & Giannakis, eq. (37), over the classes")
    if CONFUSION_ERROR in table.columns:
        notes.append("confusion error: their eq. (38)")
    st.caption("; ".join(notes) + ".")
