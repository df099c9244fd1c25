"""The Step page's "Model details" tab: what only GLAD, MACE and IBCC estimate, at the cursor's snapshot.

- GLAD (Whitehill et al. 2009): every worker's ability alpha_j and every item's difficulty 1/beta_i, with the
  hardest items in a table (four narrow columns, whole in half the tab at 1024 px).
- MACE (Hovy et al. 2013): who is a spammer: P(spamming) = 1 - theta_j per worker and what each answers when
  spamming (the strategy xi_j), with a 95% interval of P(spamming): by EM the Wald interval of the worker's own
  information (:func:`crowdlab.analysis.fisher.mace_worker_intervals`), by variational Bayes the credible interval of
  its
  Beta posterior (:func:`crowdlab.models.mace.spam_intervals`); the table across the tab (every column whole at
  1024 px, as IBCC's), the chart under it.
- IBCC (Kim & Ghahramani 2012): credible intervals of each worker's accuracy from the Dirichlet posteriors
  (:func:`crowdlab.models.ibcc.accuracy_intervals`, Monte Carlo with a fixed seed), kept in a small cache in
  session state keyed on the parameters, so scrubbing back recomputes nothing; beside them in the table,
  Dawid-Skene's Fisher-based (Wald) interval for the same worker, from the Data page's cached worker report.

Other models get a note. Widget keys ``stepper.details.*``; no view choices to remember beyond the table sizes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from crowdlab.analysis.fisher import mace_worker_intervals
from crowdlab.analysis.reports import WALD_MAX_CLASSES, WALD_MAX_WORKERS
from crowdlab.engines.run import Run
from crowdlab.models.glad import GladParams
from crowdlab.models.ibcc import IbccParams, accuracy_intervals
from crowdlab.models.mace import MaceParams, MaceVBParams, spam_intervals
from crowdlab.plots import models as figs
from crowdlab.plots.risk import interval_chart
from crowdlab.ui import lab
from crowdlab.ui.intervals import ELSEWHERE
from crowdlab.ui.live_chart import live_chart
from crowdlab.ui.reports_view import ds_report_if_ready

MODELS = ("glad", "mace", "mace_vb", "ibcc")
CACHE = "stepper.details.cache"  # plain key: [(params, dict of intervals)], newest last
CACHE_SIZE = 6
TABLE_ROWS = 200
SPAM_LINE = 0.5
# column widths in px: every column whole at 1024 px (GLAD's table sits in a half column, about 270 px there)
GLAD_COLUMNS = {
    "item": st.column_config.TextColumn("item", width=80),
    "difficulty 1/β": st.column_config.NumberColumn("1/β", format="%.3f", width=60, help="difficulty 1/βᵢ"),
    "max q": st.column_config.NumberColumn("max q", format="%.2f", width=60, help="the posterior's largest entry"),
    "right": st.column_config.CheckboxColumn("right", width=55, help="the arg-max of q agrees with gold"),
}
MACE_COLUMNS = {
    "worker": st.column_config.TextColumn("worker", width=90),
    "labels": st.column_config.NumberColumn("labels", format="%d", width=60),
    "P(spamming)": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.3f", width=130),
    "spams with": st.column_config.TextColumn("spams with", width=95),
    "ξ of it": st.column_config.NumberColumn("ξ of it", format="%.3f", width=70),
}


def model_details_panel(run: Run) -> None:
    params = run.params
    if isinstance(params, GladParams):
        _glad(run, params)
    elif isinstance(params, MaceParams):
        _mace(run, params)
    elif isinstance(params, IbccParams):
        _ibcc(run, params)
    else:
        st.info(
            "This tab shows what only some models estimate: GLAD's worker ability and item difficulty, MACE's "
            "spammers, and IBCC's credible intervals of each worker's accuracy. Pick one of them as the method."
        )
        return
    if run.model.info.key in ELSEWHERE:  # these models have no Intervals tab (crowdlab.ui.panels.shown_tabs)
        st.caption("Intervals:" + ELSEWHERE[run.model.info.key])


def _glad(run: Run, p: GladParams) -> None:
    """Abilities on the left, difficulties and the hardest items on the right: two equal columns, so the table's
    four narrow columns fit whole at 1024 px (about 270 px there, 310 px in presenter mode)."""
    data = run.data
    left, right = st.columns(2)
    live_chart(
        figs.ability_chart(p.alpha, data.worker_names, data.labels_per_worker), "stepper.details.ability", where=left
    )
    left.caption(
        "P(worker j is right on item i) = σ(αⱼ βᵢ). αⱼ = 0: guessing; αⱼ < 0 (red): right less often than "
        "chance; large αⱼ: an expert. Gaussian prior N(1, 1) on αⱼ."
    )
    live_chart(figs.difficulty_histogram(p.beta), "stepper.details.difficulty", where=right)
    q = run.posterior
    table = pd.DataFrame({"item": list(data.item_names), "difficulty 1/β": p.difficulty, "max q": q.max(axis=1)})
    if data.has_gold:
        gold = data.gold
        table["right"] = np.where(gold >= 0, np.argmax(q, axis=1) == gold, None)
    table = table.sort_values("difficulty 1/β", ascending=False, kind="stable").head(TABLE_ROWS)
    right.markdown("**The hardest items**")
    right.dataframe(
        table,
        hide_index=True,
        key="stepper.details.items",
        height=260,
        column_config=GLAD_COLUMNS,
    )
    right.caption(
        "A hard item (small βᵢ) pulls every worker's σ(αⱼ βᵢ) towards 1/2, so its labels count for little; "
        "log βᵢ has a Gaussian prior N(1, 1). *right*: the arg-max of q agrees with gold."
    )


def _mace(run: Run, p: MaceParams) -> None:
    """The counts, then the table across the tab (every column whole at 1024 px, as IBCC's), then the chart."""
    data = run.data
    spam = p.spamming
    n_spam = int((spam > SPAM_LINE).sum())
    # a row that wraps when narrow (presenter mode with the sidebar open): a label is never cut to "Spammers (P > …"
    row = st.container(horizontal=True, gap="medium", key="stepper.details.counts")
    row.metric(
        "Spammers (P > 0.5)",
        f"{n_spam} of {data.n_workers:,}",
        help="Workers with P(spamming) > 0.5.",
        width="content",
    )
    labels = data.labels_per_worker
    share = float(labels[spam > SPAM_LINE].sum() / max(labels.sum(), 1))
    row.metric("Their share of the labels", f"{share:.1%}", width="content")
    row.metric("Mean competence θ", f"{float(np.mean(p.theta)):.3f}", width="content")
    vb = isinstance(p, MaceVBParams)  # variational Bayes: the Beta posterior's central 95% of P(spamming)
    interval, kind = (spam_intervals(p, 0.95), "95% credible") if vb else _mace_wald(run, p)
    favourite = np.argmax(p.xi, axis=1)
    table = pd.DataFrame(
        {
            "worker": list(data.worker_names),
            "labels": labels,
            "P(spamming)": spam,
            "spams with": [str((data.class_names + data.response_names)[k]) for k in favourite],
            "ξ of it": p.xi[np.arange(data.n_workers), favourite],
        }
    )
    fmt = dict(MACE_COLUMNS)
    if interval is not None:  # the interval right after the estimate
        table.insert(3, kind, [f"{a:.2f} – {b:.2f}" for a, b in zip(*interval)])
        fmt[kind] = st.column_config.TextColumn(kind, width=110)
        fmt["P(spamming)"] = st.column_config.NumberColumn(format="%.3f", width=95)  # no bar: the interval shows
    table = table.sort_values("P(spamming)", ascending=False, kind="stable")
    st.dataframe(
        table.head(TABLE_ROWS),
        hide_index=True,
        height=248,
        key="stepper.details.spam_table",
        column_config=fmt,
    )
    live_chart(figs.spam_chart(spam, data.worker_names, labels, interval=interval), "stepper.details.spam")
    st.caption(
        "Each label of worker j is the truth with probability θⱼ; otherwise j is spamming and answers from its "
        "own strategy ξⱼ (its favourite answer in the table). A spammer who always says the same class looks "
        "reliable to majority vote on items of that class; MACE sees through it."
        + (
            " Variational Bayes: θⱼ has a Beta posterior; P(spamming) is its mean, and the whiskers and the "
            "table give its central 95% credible interval (wide for a worker with few labels)."
            if vb
            else WALD_WORDS
            if interval is not None
            else ""
        )
        + (
            ""
            if vb or interval is None or run.converged
            else " EM has not converged yet: the intervals assume a maximum."
        )
    )


WALD_WORDS = (
    " The whiskers and the table's 95% Wald interval come from the observed information of the worker's own θⱼ and "
    "ξⱼ, the other workers held at their estimates (logit scale; an exact binomial interval where θⱼ or ξⱼ sits on "
    "its boundary)."
)


def _mace_wald(run: Run, p: MaceParams) -> tuple[tuple[np.ndarray, np.ndarray] | None, str]:
    """EM's P(spamming) intervals (:func:`crowdlab.analysis.fisher.mace_worker_intervals`), within the worker report's
    size
    limits (else none)."""
    data = run.data
    if data.n_workers > WALD_MAX_WORKERS or data.n_classes > WALD_MAX_CLASSES or data.response_names:
        return None, ""  # (its observed information has no spam-only "can't tell" responses)
    wi = mace_worker_intervals(run.model, data, p)
    return (wi["spam_lower"].to_numpy(), wi["spam_upper"].to_numpy()), "95% Wald"


def _intervals(p: IbccParams) -> dict:
    cache = st.session_state.setdefault(CACHE, [])
    for params, value in cache:
        if params is p:
            return value
    with st.spinner("Sampling the Dirichlet posteriors..."):
        value = accuracy_intervals(p, level=0.95, seed=0)
    cache.append((p, value))
    del cache[:-CACHE_SIZE]
    return value


def _ds_comparison(ci: dict, ds: pd.DataFrame | None) -> str:
    """The caption under the table: how IBCC's credible intervals compare with Dawid-Skene's."""
    if ds is None:
        return (
            "Dawid-Skene's intervals for comparison come from the Data page's worker report; on a dataset this "
            "large it waits for its button there."
        )
    kinds = " and ".join(sorted(set(ds["interval"])))
    width_c = float(np.median(ci["hi"] - ci["lo"]))
    width_d = float(np.median(ds["upper"] - ds["lower"]))
    return (
        f"*DS 95%*: Dawid-Skene's interval for the same worker ({kinds}; maximum likelihood, fitted from majority "
        f"vote as on the Data page). Median width: {width_c:.3f} credible (IBCC) against {width_d:.3f} (DS)."
    )


def _ibcc(run: Run, p: IbccParams) -> None:
    """The table first (credible interval beside Dawid-Skene's, readable at 1024 px without scrolling sideways),
    then the chart of every worker's credible interval."""
    data = run.data
    ci = _intervals(p)
    ds = ds_report_if_ready(data)
    span = [f"{a:.2f} – {b:.2f}" for a, b in zip(ci["lo"], ci["hi"])]
    table = pd.DataFrame({"worker": list(data.worker_names), "labels": data.labels_per_worker, "mean": ci["mean"]})
    table["95% credible"] = span
    if ds is not None:  # Dawid-Skene's intervals (Wald, observed information) for the same workers
        table["DS 95%"] = [f"{a:.2f} – {b:.2f}" for a, b in zip(ds["lower"], ds["upper"])]
    for k, c in enumerate(data.class_names[:6]):
        table[f"Γ({c},{c}) 95%"] = [f"{a:.2f} – {b:.2f}" for a, b in zip(ci["diag_lo"][:, k], ci["diag_hi"][:, k])]
    order = np.argsort(-(ci["hi"] - ci["lo"]), kind="stable")  # the widest first
    st.markdown(f"**Each worker's accuracy: IBCC's credible interval beside Dawid-Skene's** ({lab.where(run)})")
    st.dataframe(
        table.iloc[order].head(TABLE_ROWS),
        hide_index=True,
        height=248,
        key="stepper.details.credible_table",
        column_config={
            "worker": st.column_config.TextColumn("worker", width=90),
            "labels": st.column_config.NumberColumn("labels", format="%d", width=60),
            "mean": st.column_config.NumberColumn("mean", format="%.3f", width=60),
            "95% credible": st.column_config.TextColumn("95% credible", width=110),
            "DS 95%": st.column_config.TextColumn("DS 95%", width=110),
        },
    )
    st.caption(_ds_comparison(ci, ds))
    fig = interval_chart(
        [str(n) for n in data.worker_names],
        ci["mean"],
        ci["lo"],
        ci["hi"],
        n_labels=data.labels_per_worker,
        chance=1.0 / data.n_classes,
        x_title="accuracy Σₖ κₖ Γₘ(k, k)",
        title=f"Accuracy per worker: posterior mean and 95 % credible interval ({lab.where(run)})",
    )
    fig.update_traces(name="95 % credible interval (Dirichlet posteriors)", selector=dict(meta="wald"))
    live_chart(fig, "stepper.details.credible")
    st.caption(
        "From the Dirichlet posteriors of this snapshot: Γₘ(k, k) ~ Beta(Aₘ(k, k), Σₖ' Aₘ(k', k) − Aₘ(k, k)) "
        f"and κ ~ Dir(ν); the accuracy's interval by Monte Carlo ({ci['draws']:,} draws, fixed seed), each class's "
        "exactly (the worker report shows the same intervals). A worker with few labels keeps a wide interval: the "
        "prior still speaks for them. The table lists the widest first."
    )
