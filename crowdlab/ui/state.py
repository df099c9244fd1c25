"""The session-state machine of the app: the working dataset, the method config and the current EM run.

Everything that must survive a page switch lives under plain keys (Streamlit forgets the value of a widget whose
page is not showing, so widget keys are only views of the plain keys, written back before each widget is drawn):

==========================  ==========================================================================
``data.id``                 where the working dataset came from: ``sample:<key>``, ``upload:<sha1>``,
                            ``sim:<parameters>``
``data.obj``                the :class:`~crowdlab.io.annotations.Annotations` themselves
``data.source``             a Python expression that reloads them (for the Export page's snippet)
``method.config``           a :class:`MethodConfig` (method key, init, prior strength, hard EM, seed, tol,
                            max_iter)
``run.obj``                 the current :class:`~crowdlab.engines.run.Run` (None when it could not be built)
``run.id``                  a counter, bumped whenever a new run replaces the old one
``run.error``               why the run could not be built (a message a person can act on), or None
``run.metrics``             per-snapshot metrics against gold, computed once per snapshot (:func:`metrics`)
``run.pending``             a move the stepper computes next: "run" (to convergence, under a progress bar), "E",
                            "M" or "step" (a new snapshot, under a spinner); False when none
``notice``                  a one-time message naming what changed ("Method changed: the run was reset.",
                            "Revealed gold changed: ..."), popped when the stepper shows it (the next action
                            clears it)
``view.<name>``             the panels' view choices (tab, posterior order and page, picked item and
                            worker, surface coordinates); forgotten when the dataset changes
==========================  ==========================================================================

The working dataset's reference run, Dawid-Skene fitted from majority vote (:func:`reference_run`), is fitted here
too, once per dataset id (``st.cache_resource``), for the panels that read it: the Data page passes it to the worker
report, IBCC's details compare with that report.

Every change happens in an ``on_click`` / ``on_change`` callback (never an explicit rerun). Changing the dataset or
the method config replaces the run and sets a notice. Widget keys are namespaced per page (``stepper.method``).
The stepping callbacks and widgets are the shared ones of :mod:`crowdlab.ui.lab`, on the slot :data:`MAIN` (these
keys); the Sequences and Networks pages keep their own dataset and run under ``seq.*`` and ``net.*`` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

from crowdlab.engines.fit import fit
from crowdlab.engines.init import INITS
from crowdlab.engines.limits import MAX_ITER
from crowdlab.engines.run import POSTERIOR_WINDOW, Run, posterior_window
from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.models import CLASS_PRIOR_MODELS, MODELS, applicable_models, make_model
from crowdlab.ui import lab

DATA_ID = "data.id"
DATA = "data.obj"
DATA_SOURCE = "data.source"
CONFIG = "method.config"
RUN = "run.obj"
RUN_ID = "run.id"
RUN_ERROR = "run.error"
METRICS = "run.metrics"
PENDING = "run.pending"
NOTICE = "notice"
VIEW_PREFIX = "view."

DEFAULT_SAMPLE = "bluebirds"
DEFAULT_METHOD = "ds"
REFERENCE_MAX_ITER = 500  # the reference Dawid-Skene fit (reference_run): enough for every bundled set, bounded
# initialisations offered in the UI (the others need a user-given parameter set or posterior); moment matching
# (Traganitis & Giannakis, Alg. 2) for the class models: Dawid-Skene, one-coin and two-coin start from the
# moment-matched (pi, Gamma), GLAD, MACE and IBCC from Dawid-Skene's posterior there (crowdlab.engines.init)
BASIC_INITS = ("majority", "all_good", "random")
UI_INITS = (*BASIC_INITS, "moments")
# the scores model (latent per annotator): "majority" is "all_good" there (crowdlab.engines.init), so it is not offered
# twice
ANNOTATOR_INITS = ("all_good", "random")
MOMENT_METHODS = ("ds", "one_coin", "two_coin", "glad", "mace", "mace_vb", "ibcc")

NOTICE_METHOD = "Method changed: the run was reset."
NOTICE_DATASET = "Dataset changed: loaded"  # how the notice after a new dataset begins (:func:`loaded_notice`)
# what the notice names when the method stays and something else changed (the widgets' words)
CONFIG_NAMES = {
    "init": "start",
    "prior": "prior strength",
    "hard": "hard EM",
    "seed": "seed",
    "tol": "tolerance",
    "max_iter": "max iterations",
    "tie_break": "tie rule",
    "sigma_min": "floor on σ",
    "only_good": "start (only this annotator good)",
    "reveal": "revealed gold",
    "class_prior": "true-class prior",
}
ONLY_GOOD_START = "One annotator good, every other one bad"  # the start description of ``only_good``

# stepper widget keys (views of ``method.config``)
W_METHOD = "stepper.method"
W_INIT = "stepper.init"
W_PRIOR = "stepper.prior"
W_HARD = "stepper.hard"
W_SEED = "stepper.seed"
W_TOL = "stepper.tol"
W_MAX_ITER = "stepper.max_iter"
W_SCRUB = "stepper.scrub"
W_TIE_BREAK = "stepper.tie_break"
W_SIGMA_MIN = "stepper.sigma_min"
W_ONLY_GOOD = "stepper.only_good"
W_REVEAL = "stepper.reveal"
W_CLASS_PRIOR = "stepper.class_prior"
CONFIG_WIDGETS = {
    "method": W_METHOD,
    "init": W_INIT,
    "prior": W_PRIOR,
    "hard": W_HARD,
    "seed": W_SEED,
    "tol": W_TOL,
    "max_iter": W_MAX_ITER,
    "tie_break": W_TIE_BREAK,
    "sigma_min": W_SIGMA_MIN,
    "only_good": W_ONLY_GOOD,
    "reveal": W_REVEAL,
    "class_prior": W_CLASS_PRIOR,
}


@dataclass(frozen=True)
class MethodConfig:
    """How to run EM: which model, where to start, MAP prior strength, hard EM, and when to stop."""

    method: str = DEFAULT_METHOD
    init: str = "majority"
    prior: float = 0.0
    hard: bool = False
    seed: int = 0
    tol: float = 1e-8
    max_iter: int = MAX_ITER  # the one limit of cl.fit, Compare, Export and the CLI (crowdlab.engines.limits)
    # method options of :mod:`crowdlab.ui.method_options` (each used only where it applies)
    tie_break: str = "frequent"  # majority vote: who gets a tie (crowdlab.models.majority.TIE_RULES; seed: ``seed``)
    sigma_min: float = 0.0  # scores model: floor on sigma in score units; 0 = the model's default (1e-3 of the range)
    only_good: int = -1  # scores model: start from "only this annotator is good" (an annotator code); -1 = off
    reveal: int = 0  # class models with gold: percent of the gold labels fixed in every E-step (seed: ``seed``)
    class_prior: str = "uniform"  # GLAD, MACE, MACE (VB): "uniform" as in their papers, or "estimate"


# ---------------------------------------------------------------------------- reading
def get_data() -> Annotations | None:
    return st.session_state.get(DATA)


def get_data_id() -> str | None:
    return st.session_state.get(DATA_ID)


def get_data_source() -> str | None:
    """The Python expression that reloads the working dataset (None when unknown)."""
    return st.session_state.get(DATA_SOURCE)


def get_config() -> MethodConfig:
    cfg = st.session_state.get(CONFIG)
    if cfg is None:
        cfg = MethodConfig()
        st.session_state[CONFIG] = cfg
    return cfg


def get_run() -> Run | None:
    """The current run; built from the dataset and the config when there is none yet."""
    if st.session_state.get(RUN) is None and st.session_state.get(RUN_ERROR) is None and get_data() is not None:
        _new_run()
    return st.session_state.get(RUN)


def get_run_error() -> str | None:
    return st.session_state.get(RUN_ERROR)


def data_key(data: Annotations) -> str:
    """The key of what is cached per dataset: the working dataset's id, or one for data without an id."""
    return get_data_id() or f"unnamed:{id(data)}"


@st.cache_resource(max_entries=4, show_spinner="Fitting Dawid-Skene for the worker report...")
def _reference_fit(data_id: str, _data: Annotations) -> Run:
    return fit(_data, "ds", max_iter=REFERENCE_MAX_ITER)


def reference_run(data: Annotations) -> Run:
    """Dawid-Skene fitted from majority vote (at most :data:`REFERENCE_MAX_ITER` iterations) on ``data``, the
    working dataset: what the Data page's worker report reads and IBCC's intervals are compared with. Fitted once per
    dataset id (:func:`data_key`) and shared by the sessions that show that dataset (``st.cache_resource``: the Run
    itself, which nothing steps; the Annotations are not hashed). Raises what :func:`crowdlab.engines.fit.fit`
    raises (a ``ModelError``, ``ValueError`` or ``ArithmeticError`` on data it cannot fit)."""
    return _reference_fit(data_key(data), data)


def pop_notice() -> str | None:
    return st.session_state.pop(NOTICE, None)


def method_options(data: Annotations) -> list[str]:
    """The methods offered for ``data``: :func:`crowdlab.models.applicable_models`."""
    return applicable_models(data)


def method_title(key: str) -> str:
    return MODELS[key].info.title


def prior_help(key: str) -> str:
    """The prior-strength widget's help for method ``key``: what s does in that model (``ModelInfo.prior_pull``)."""
    cls = MODELS.get(key)
    pull = cls.info.prior_pull if cls is not None else ""
    return "Prior strength s (MAP EM; 0 = maximum likelihood)" + (f": {pull}." if pull else ".")


def hard_applies(method: str) -> bool:
    """Whether ``method`` has a hard (classification) EM: not majority vote, not the variational methods (IBCC,
    MACE (VB)), which keep the whole posterior (``ModelInfo.has_hard``)."""
    cls = MODELS.get(method)
    return method != "mv" and cls is not None and cls.info.has_hard


HARD_HELP = "Replace the posterior by its arg-max (classification EM); the objective becomes log p(F, ŷ | θ)."


def hard_help(method: str) -> str:
    """The Hard EM checkbox's help: what it does, and why it is off for a method without a hard version."""
    if method == "mv" or hard_applies(method):
        return HARD_HELP
    title = method_title(method)
    return f"{HARD_HELP} {title} is variational Bayes: it keeps the whole posterior, so it has no hard version."


def inits_for(method: str) -> tuple[str, ...]:
    """The initialisations offered for ``method``, its default first: moment matching only where it applies; for
    the scores model "Assume everyone is good" (what majority vote means there) and a random start."""
    cls = MODELS.get(method)
    if cls is not None and cls.info.latent == "annotator":
        return ANNOTATOR_INITS
    return UI_INITS if method in MOMENT_METHODS else BASIC_INITS


def _fit_init(cfg: MethodConfig, old: MethodConfig | None = None) -> MethodConfig:
    """A config whose start applies to its method: a start the method does not offer falls back to its default
    (majority vote; the scores model: everyone good), and so does the old method's default when only the method
    changed (leaving the scores model for Dawid-Skene starts from majority vote again). Hard EM is turned off for
    a method that has none (:func:`hard_applies`; IBCC, MACE (VB)): the run is built, not refused."""
    if cfg.hard and cfg.method != "mv" and not hard_applies(cfg.method):
        cfg = replace(cfg, hard=False)
    offered = inits_for(cfg.method)
    if old is not None and cfg.method != old.method and cfg.init == old.init == inits_for(old.method)[0]:
        return replace(cfg, init=offered[0])
    return cfg if cfg.init in offered else replace(cfg, init=offered[0])


def start_title() -> str:
    """Where the run starts, in a few words: the current run's own description up to any colon (the scores
    model's "majority vote" is "Assume everyone is good"; a start from one good annotator says so; GLAD's moment
    start is "Moment matching (...)"), or the config's start when there is no run."""
    run = get_run()
    if run is not None:
        return run.start_description.partition(":")[0]
    cfg = get_config()
    return INITS.get(cfg.init, cfg.init)


def notice_for(old: MethodConfig, new: MethodConfig) -> str:
    """The reset notice naming what changed: "Method changed: ..." when the method did, else the changed settings
    ("Revealed gold changed: the run was reset.")."""
    if old.method != new.method:
        return NOTICE_METHOD
    changed = [name for field, name in CONFIG_NAMES.items() if getattr(old, field) != getattr(new, field)]
    if not changed:
        return NOTICE_METHOD
    what = changed[0] if len(changed) == 1 else ", ".join(changed[:-1]) + " and " + changed[-1]
    return f"{what[0].upper()}{what[1:]} changed: the run was reset."


def default_method(data: Annotations) -> str:
    """Dawid-Skene where it applies, else the first applicable method (the scores model on scores)."""
    options = method_options(data)
    if DEFAULT_METHOD in options:
        return DEFAULT_METHOD
    iterative = [k for k in options if k != "mv"]
    return (iterative or options)[0]


# ---------------------------------------------------------------------------- changing
def ensure_dataset(loader: Callable[[], tuple[str, Annotations, str]]) -> None:
    """Load the default dataset (``loader()`` -> (id, data, source)) when the session has none (a cold link)."""
    if get_data() is None:
        data_id, data, source = loader()
        set_dataset(data_id, data, notice=False, source=source)


def loaded_notice(data: Annotations) -> str:
    """What a new working dataset holds, in the notice after it was loaded: its items, workers, labels and how many
    items have gold (the notice said only "the run was reset")."""
    gold = int(data.gold_mask.sum()) if data.has_gold else 0
    gold_words = "no gold" if not gold else f"gold for {gold:,} of them"
    return (
        f"{NOTICE_DATASET} **{safe.md(data.name or 'the data')}**: {data.n_items:,} items, {data.n_workers:,} "
        f"workers, {data.n_obs:,} labels, {gold_words}. The run starts again from its first step."
    )


def set_dataset(data_id: str, data: Annotations, *, notice: bool = True, source: str | None = None) -> None:
    """Make ``data`` the working dataset; keep the method when it applies, and reset the run.

    ``source`` is a Python expression that reloads the data with the crowdlab API (e.g.
    ``load_sample("bluebirds")``), used by the Export page's reproduction snippet.
    """
    changed = data_id != get_data_id()
    st.session_state[DATA_ID] = data_id
    st.session_state[DATA] = data
    st.session_state[DATA_SOURCE] = source
    old = cfg = get_config()
    if cfg.method not in method_options(data):
        cfg = replace(cfg, method=default_method(data))
    st.session_state[CONFIG] = _fit_init(cfg, old)
    _reset_run()
    if changed:
        _reset_views()
    if notice and changed:
        st.session_state[NOTICE] = loaded_notice(data)


def set_config(**changes) -> bool:
    """Change the method config; when anything changed, reset the run (unless only Max iterations rose:
    :func:`crowdlab.ui.lab.kept_for_new_limit`) and set the notice. Returns changed."""
    old = get_config()
    new = _fit_init(replace(old, **changes), old)
    if new == old:
        return False
    st.session_state[CONFIG] = new
    kept = lab.kept_for_new_limit(st.session_state.get(RUN), old, new)  # a higher limit keeps the run
    if kept is None:
        _reset_run()
    st.session_state[NOTICE] = kept or notice_for(old, new)
    return True


def _reset_run() -> None:
    st.session_state[RUN] = None
    st.session_state[RUN_ERROR] = None
    st.session_state[METRICS] = None
    st.session_state[PENDING] = False


def _new_run() -> None:
    data = get_data()
    cfg = get_config()
    st.session_state[RUN_ID] = st.session_state.get(RUN_ID, 0) + 1
    st.session_state[METRICS] = None
    st.session_state[PENDING] = False
    try:
        model = make_model(cfg.method, **model_options(cfg, data))
        init, init_kwargs = start_options(cfg, data)
        run = Run(
            data,
            model,
            init,
            seed=cfg.seed,
            tol=cfg.tol,
            max_iter=cfg.max_iter,
            keep_posteriors=step_posteriors(data, cfg.max_iter),
            **init_kwargs,
        )
        if init == "posterior":  # the scores model from one good annotator (start_options)
            run.start_description = ONLY_GOOD_START
    except lab.START_ERRORS as exc:
        st.session_state[RUN] = None
        st.session_state[RUN_ERROR] = lab.start_error(exc)
        return
    st.session_state[RUN] = run
    st.session_state[RUN_ERROR] = None


POSTERIOR_BYTES = 512 * 2**20  # the Step page keeps every posterior while a run to its limit stays under this


def step_posteriors(data: Annotations, max_iter: int) -> int | None:
    """``keep_posteriors`` of the Step page's run: :func:`crowdlab.engines.run.posterior_window`, and the window
    too when one posterior per half-step up to ``max_iter`` would pass :data:`POSTERIOR_BYTES` (TREC, 20,232 items
    x 4 classes, to the 10,000-iteration limit: 13 GB; scrubbing back that far recomputes a posterior instead)."""
    keep = posterior_window(data)
    if keep is None and (2 * max_iter + 1) * data.n_items * max(data.n_classes, 1) * 8 > POSTERIOR_BYTES:
        return POSTERIOR_WINDOW
    return keep


def reveal_applies(method: str, data: Annotations) -> bool:
    """Semi-supervised EM ("Reveal gold") applies: an item-latent class model (not majority vote) and gold."""
    cls = MODELS.get(method)
    return (
        cls is not None
        and cls.info.latent == "item"
        and cls.info.data_kind == "classes"
        and hasattr(cls, "with_known")
        and not data.is_continuous
        and data.has_gold
    )


def model_options(cfg: MethodConfig, data: Annotations) -> dict:
    """The ``make_model`` options of ``cfg`` for ``data``: prior and hard EM; majority vote's tie rule; the scores
    model's floor on sigma; an estimated class prior (GLAD, MACE); the revealed share of gold (semi-supervised EM)
    where it applies."""
    out: dict = {"prior": cfg.prior, "hard": cfg.hard}
    if cfg.method == "mv":
        out.update(tie_break=cfg.tie_break, tie_seed=cfg.seed)
    if cfg.method == "scores" and cfg.sigma_min > 0:
        out["sigma_min"] = float(cfg.sigma_min)
    if cfg.method in CLASS_PRIOR_MODELS and cfg.class_prior != "uniform":
        out["class_prior"] = cfg.class_prior
    if cfg.reveal > 0 and reveal_applies(cfg.method, data):
        out.update(reveal=cfg.reveal / 100.0, reveal_seed=cfg.seed)
    return out


def start_options(cfg: MethodConfig, data: Annotations) -> tuple[str, dict]:
    """The initialisation of ``cfg``: its ``init``, or for the scores model with ``only_good`` set the posterior
    "annotator ``only_good`` is good, every other one bad" (the start that finds the degenerate optimum)."""
    if cfg.method == "scores" and 0 <= cfg.only_good < data.n_workers:
        q0 = np.zeros((data.n_workers, 2))
        q0[:, 0] = 1.0
        q0[cfg.only_good] = (0.0, 1.0)
        return "posterior", {"q0": q0}
    return cfg.init, {}


def _reset_views() -> None:
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(VIEW_PREFIX)]:
        del st.session_state[key]


# ---------------------------------------------------------------------------- view choices (plain keys)
def get_view(name: str, default=None):
    """A panel's view choice (``view.<name>``), or ``default`` when none was made."""
    return st.session_state.get(VIEW_PREFIX + name, default)


def set_view(name: str, value) -> None:
    st.session_state[VIEW_PREFIX + name] = value


def on_view_widget(widget_key: str, name: str) -> None:
    """on_change of a view widget: copy its value into the plain key ``view.<name>``."""
    if widget_key in st.session_state:
        set_view(name, st.session_state[widget_key])


# ---------------------------------------------------------------------------- widgets <-> plain keys
def sync_config_widgets() -> None:
    """Write the config into the stepper's widget keys before the widgets are drawn (restores a page)."""
    cfg = get_config()
    for field, key in CONFIG_WIDGETS.items():
        st.session_state[key] = getattr(cfg, field)


def on_config_widget() -> None:
    """on_change of every method widget: read them all back into the config (resets the run on a change)."""
    cfg = get_config()
    changes = {}
    for field, key in CONFIG_WIDGETS.items():
        if key in st.session_state:
            changes[field] = type(getattr(cfg, field))(st.session_state[key])
    set_config(**changes)


# ---------------------------------------------------------------------------- stepper callbacks (lab.RunSlot)
MAIN = lab.RunSlot(RUN, RUN_ID, METRICS, PENDING, "stepper", get_run, notice=NOTICE, error=RUN_ERROR, beside=True)


def on_e_step() -> None:
    lab.on_e_step(MAIN)


def on_m_step() -> None:
    lab.on_m_step(MAIN)


def on_step() -> None:
    lab.on_step(MAIN)


def on_back() -> None:
    lab.on_back(MAIN)


def on_reset() -> None:
    """Forget the steps of the current run (same method and config)."""
    lab.on_reset(MAIN)


def on_run_to_convergence() -> None:
    """Ask for a run to convergence; the stepper panel does it next, under a progress bar."""
    lab.on_run_to_convergence(MAIN)


def on_scrub() -> None:
    lab.on_scrub(MAIN)


def run_pending(progress: Callable[[int, int], None] | None = None) -> bool:
    """Do a requested run to convergence now (``progress(iteration, max_iter)``); True when one ran."""
    return lab.run_pending(MAIN, progress)


# ---------------------------------------------------------------------------- derived, cached per snapshot
step_label = lab.step_label


def metrics(run: Run) -> dict[str, np.ndarray]:
    """Per-snapshot x position and metrics against gold, computed once per snapshot and kept in state
    (:func:`crowdlab.ui.lab.metrics` on the Step page's run: keys ``x``, "accuracy", "macro F" or "Pearson r")."""
    return lab.metrics(MAIN, run)
