"""The Step page's method-specific options, below the method picker (a change resets the run, like every method
choice; the values live in :class:`crowdlab.ui.state.MethodConfig`):

- majority vote: **Ties go to** (:data:`crowdlab.models.majority.TIE_RULES`: the most frequent class, a seeded
  random draw, the first worker's label) and how many items are tied;
- the scores model (the EM lecture on bad annotators): a **floor on σ** and a start from **only one annotator
  good**, the start from which EM finds the model's degenerate global maximum; the note that explains it
  (:func:`degenerate_notice`) sits above the tabs, since it follows the cursor;
- GLAD, MACE and MACE (VB): the **true-class prior**, uniform as in their papers or estimated like Dawid-Skene's
  (:data:`crowdlab.models.CLASS_PRIOR_MODELS`);
- class models with gold: **Reveal gold** (semi-supervised EM, :meth:`crowdlab.models.base.LatentModel.with_known`):
  that share of the gold labels is fixed in every E-step.

Select-box labels are plain text (Streamlit renders no Markdown there); names in Markdown go through
:func:`crowdlab.io.safe.md`.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from crowdlab.analysis import sweep
from crowdlab.engines.run import Run
from crowdlab.io import safe
from crowdlab.io.annotations import Annotations
from crowdlab.models import CLASS_PRIOR_MODELS, ScoreParams
from crowdlab.models.majority import tied_items
from crowdlab.ui import presenter, state

TIE_LABELS = {"frequent": "most frequent class", "random": "random (seed)", "first": "first worker's label"}
TIE_PHRASES = {
    "frequent": "the tied class most frequent in the whole file",
    "random": "a tied class drawn at random",
    "first": "the tied class named first in the file",
}
DEGENERATE_SIGMA = 1.01  # sigma within 1 % of its floor counts as "at the floor"


def tie_count(data: Annotations) -> int:
    """How many items majority vote has to break a tie on."""
    return int(tied_items(data).sum())


EBCC_STEP_NOTE = (
    "EBCC's answer depends on the random split of its start over the subtypes: this page steps one split "
    "(seed 0); Compare, Export's Fit to convergence, `cl.fit` and the command line fit 8 splits and keep the best "
    "ELBO (bluebirds: 0.778 from seed 0, 0.861 from the best of 8), so their labels can differ from this run's."
)


def options_panel() -> None:
    """The options of the chosen method (nothing when it has none)."""
    data = state.get_data()
    if data is None:
        return
    cfg = state.get_config()
    scores = cfg.method == "scores"
    reveal = state.reveal_applies(cfg.method, data)
    class_prior = cfg.method in CLASS_PRIOR_MODELS
    ebcc = cfg.method == "ebcc"
    if cfg.method != "mv" and not scores and not reveal and not class_prior and not ebcc:
        return
    # the method picker above has written the config into every widget key (state.sync_config_widgets)
    with presenter.settings("Method options", always=True):
        if ebcc:  # folded with the options: the curve and the main picture stay on the first screen
            st.caption(EBCC_STEP_NOTE)
        row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
        if cfg.method == "mv":
            _ties(row, data, cfg)
        if scores:
            _scores(row, data, cfg)
        if class_prior:
            _class_prior(row, data, cfg)
        if reveal:
            _reveal(row, data, cfg)


def _ties(row, data: Annotations, cfg: state.MethodConfig) -> None:
    row.selectbox(
        "Ties go to",
        list(TIE_LABELS),
        format_func=TIE_LABELS.get,
        key=state.W_TIE_BREAK,
        on_change=state.on_config_widget,
        width=230,
        help="Which class a tied item gets. 'random' draws among the tied classes with the seed under "
        "'Seed and stopping rule'; 'first worker's label' takes the first tied label in file order.",
    )
    n = tie_count(data)
    if n == 0:
        row.markdown(f"**No tied item** among the {data.n_items:,}: the tie rule changes nothing here.")
        return
    seed = f" (seed {cfg.seed})" if cfg.tie_break == "random" else ""
    row.markdown(
        f"**{n:,} of {data.n_items:,} items are tied** (two or more classes share the most votes); each goes to "
        f"{TIE_PHRASES[cfg.tie_break]}{seed}. The posterior view marks them ⚖."
    )


def _scores(row, data: Annotations, cfg: state.MethodConfig) -> None:
    row.number_input(
        "Floor on σ",
        min_value=0.0,
        step=0.01,
        format="%.3f",
        key=state.W_SIGMA_MIN,
        on_change=state.on_config_widget,
        width=130,
        help="The smallest σ EM may use, in score units; 0 = the default, 1/1000 of the score range. A floor near "
        "the spread you expect of a good annotator removes the degenerate maximum (one annotator 'good' with "
        "σ → 0).",
    )
    names = data.worker_names
    row.selectbox(
        "Start: only this annotator good",
        [-1, *range(data.n_workers)],
        format_func=lambda m: "off (use 'Start from')" if m < 0 else str(names[m]),
        key=state.W_ONLY_GOOD,
        on_change=state.on_config_widget,
        width=250,
        help="Start EM from the posterior 'this annotator is good, every other one bad': the start from which "
        "EM finds the model's degenerate maximum.",
    )


CLASS_PRIOR_LABELS = {"uniform": "uniform (as in the paper)", "estimate": "estimated (like Dawid-Skene)"}


def _class_prior(row, data: Annotations, cfg: state.MethodConfig) -> None:
    row.selectbox(
        "True-class prior",
        list(CLASS_PRIOR_LABELS),
        format_func=CLASS_PRIOR_LABELS.get,
        key=state.W_CLASS_PRIOR,
        on_change=state.on_config_widget,
        width=290,
        help="GLAD's and MACE's papers fix P(true class) uniform. Estimated, it is the mean of the posterior, as in "
        "Dawid-Skene. When one class dominates, uniform pushes items towards the rare classes: on the product set "
        "(88 % of one class) MACE gets 0.838 with it and 0.937 estimated. Not always better: GLAD on bluebirds "
        "gets 0.722 uniform and 0.574 estimated.",
    )


def _reveal(row, data: Annotations, cfg: state.MethodConfig) -> None:
    row.slider(
        "Reveal gold",
        0,
        100,
        step=5,
        format="%d %%",
        key=state.W_REVEAL,
        on_change=state.on_config_widget,
        width=250,
        help="Semi-supervised EM: this share of the items with gold keep their gold class in every E-step "
        "(drawn with the seed under 'Seed and stopping rule').",
    )
    run = state.get_run()
    fixed = fixed_count(run)
    n_gold = int((data.gold >= 0).sum())
    if fixed:
        row.caption(
            f"{fixed:,} of {n_gold:,} items with gold are fixed to their gold class (seed {cfg.seed}); accuracy "
            "against gold counts them too."
        )
    else:
        row.caption(f"Unsupervised: none of the {n_gold:,} gold labels is used by EM.")


def fixed_count(run: Run | None) -> int:
    """How many items the run's model fixes to a known class (0 when it is not semi-supervised)."""
    model = None if run is None else run.model
    if model is None or not getattr(model, "semi_supervised", False):
        return 0
    return int((model.known_classes(run.data) >= 0).sum())


# ---------------------------------------------------------------------------- the scores model's degenerate optimum
def degenerate_state(run: Run) -> tuple[bool, bool] | None:
    """(sigma at its floor, a single good annotator) of the scores model at the cursor; None for other models."""
    params = run.current.params
    if not isinstance(params, ScoreParams) or run.model.info.key != "scores":
        return None
    floor = run.model._sigma_min(params.low, params.high)
    at_floor = bool(params.sigma <= floor * DEGENERATE_SIGMA)
    good = run.current.q[:, 1] > 0.5
    single = bool(good.sum() == 1 and run.data.n_workers > 1)
    return at_floor, single


def degenerate_notice(run: Run) -> None:
    """The scores model near its degenerate maximum (σ at its floor, or one good annotator): say why, and what
    to do about it. Drawn above the Step page's tabs, so it follows the cursor."""
    found = degenerate_state(run)
    if found is None or not any(found):
        return
    at_floor, single = found
    p: ScoreParams = run.current.params
    what = []
    if single:
        m = int(np.argmax(run.current.q[:, 1]))
        what.append(f"only {safe.md(run.data.worker_names[m])} is 'good'")
    if at_floor:
        what.append(f"σ = {p.sigma:.3g} sits at its floor")
    st.info(
        f"**Near the scores model's degenerate maximum: {' and '.join(what)}.** With a single good annotator the "
        "item means μᵢ copy that annotator's scores, their residuals vanish, σ falls to its floor, and each of "
        "their scores adds −log σ to the objective: the lower the floor, the higher this useless maximum (on the "
        "lecture's crowd, 20 items and 5 annotators: 117.3 at the default floor, against 67.7 for the sensible "
        "answer). EM reaches it from a start with one good annotator. Remedy: set **Floor on σ** to about the "
        "spread you expect of a good annotator (0.07 on the lecture's [0, 1] scores): the degenerate answer then "
        "scores below the sensible one, and from 'Assume everyone is good' EM finds the sensible optimum.",
        icon=":material/warning:",
    )


def prior_collapse_notice(run: Run, name: str | None = None) -> None:
    """Say so when the cursor's estimated class prior has collapsed (:func:`crowdlab.analysis.sweep.prior_collapse`: a
    class
    majority vote gives many items has almost no prior left), with the live numbers and what to do. Drawn above the
    Step page's tabs, so it follows the cursor."""
    pi = getattr(run.current.params, "pi", None)
    if not run.iterative or pi is None or run.data.is_continuous or run.model.info.latent != "item":
        return
    found = sweep.prior_collapse(run.data, pi, np.argmax(run.current.q, axis=1))
    if found is None:
        return
    cls = safe.md(run.data.class_names[found.k])
    score = ""
    if found.accuracy is not None:
        score = f" Accuracy against gold: {found.accuracy:.3f}, against majority vote's {found.mv_accuracy:.3f}."
    if run.model.info.key == "one_coin":
        why = (
            "A higher objective is not always a better answer: one-coin's errors cannot depend on the true class "
            "(one accuracy per worker, errors spread evenly), so it can explain a crowd that errs more on one class "
            "than on another by calling nearly everything the other class. A model with per-class errors "
            "(Dawid-Skene, two-coin) does not need to."
        )
    else:
        why = (
            "The objective is higher there, but a class that loses almost all its items is worth a second look: "
            "compare the methods on this dataset (Compare methods), or try a prior strength."
        )
    whose = f"{safe.md(name)}: t" if name else "T"  # on Compare methods: which method's prior
    st.info(
        f"**{whose}he class prior has collapsed: π = {found.pi:.3f} for class {cls}**, which majority vote gives "
        f"{found.mv_share:.0%} of the items; {found.share:.0%} of the items get class {cls} now.{score} {why}",
        icon=":material/warning:",
    )
