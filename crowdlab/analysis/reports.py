"""Worker reports: who labelled how much, how well, what they confuse, who is a spammer; and the crowd's agreement.

:func:`worker_report` gives one row per worker from a fitted run of a class model:

==================  ==========================================================================================
``n_labels``        how many labels the worker gave
``accuracy``        estimated P(worker is right) = sum_k pi_k Gamma_m(k, k); for GLAD, whose accuracy depends on
                    the item, the mean of sigma(alpha_m beta_i) over the items the worker labelled
``lower``/``upper`` its interval: for the variational models (IBCC, MACE by VB) the central credible interval
                    of the posterior (``model.accuracy_intervals``, Monte Carlo with a fixed seed); else Wald
                    from the observed information (:func:`crowdlab.analysis.fisher.worker_intervals`, Louis' identity)
                    where the model has one (Dawid-Skene, one-coin, two-coin); for MACE's EM the Wald interval
                    of the worker's own theta and xi (:func:`crowdlab.analysis.fisher.mace_worker_intervals`); else
                    (GLAD,
                    very large crowds) the Clopper-Pearson interval of the estimate as a proportion of the n labels
                    (acc n successes in n trials: the labels taken as known). Every interval holds its estimate.
                    ``interval`` says which
``worst_confusion`` the largest off-diagonal entry of the worker's confusion matrix: "says B when A" and its
                    probability (``worst_rate``)
``spammer_score``   Raykar & Yu (2012), "Eliminating spammers and ranking annotators for crowdsourced labeling
                    tasks": S_m = 1/(K(K-1)) sum_{c<c'} sum_k (Gamma_m(k, c) - Gamma_m(k, c'))^2, the
                    squared distance of the confusion matrix from the rank-one matrices of workers who answer
                    without looking (0 = a spammer, whatever their bias; 1 = perfect or perfectly inverted; for
                    K = 2 it is (alpha + beta - 1)^2)
``agreement``       share of the worker's labels equal to the run's (hard) consensus label
``abstention_rate`` (data with responses that are not classes only) share of the worker's answers that were
                    "can't tell"; its confusion matrix's extra row says on which classes
==================  ==========================================================================================

:func:`krippendorff_alpha` is the nominal alpha of the whole label set (Krippendorff 2011, "Computing
Krippendorff's alpha-reliability"): 1 - D_o / D_e from the coincidence matrix of the items with two or more labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdlab.analysis.fisher import MACE_INTERVAL, clopper_pearson, mace_worker_intervals, worker_intervals
from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.mace import MACE

__all__ = ["krippendorff_alpha", "spammer_score", "worker_report"]


def spammer_score(gamma: np.ndarray) -> np.ndarray:
    """(M,) Raykar & Yu's spammer score of confusion matrices ``gamma`` (M, K, K), columns = true class."""
    gamma = np.asarray(gamma, dtype=np.float64)
    K = gamma.shape[-1]
    if K < 2:
        return np.zeros(gamma.shape[0])
    # sum over pairs c < c' of ||column c - column c'||^2 = K * sum_c ||col_c||^2 - ||sum_c col_c||^2
    sq = np.einsum("mkc,mkc->m", gamma, gamma)
    tot = gamma.sum(axis=2)
    pairs = K * sq - np.einsum("mk,mk->m", tot, tot)
    return pairs / (K * (K - 1))


def krippendorff_alpha(data: Annotations) -> float:
    """Nominal Krippendorff's alpha of the labels (NaN when fewer than two items carry two or more labels, or
    when every pairable label is the same class so no disagreement is expected)."""
    if data.is_continuous:
        raise ModelError("Krippendorff's alpha here is the nominal one: it needs class labels.")
    V = data.vote_counts.astype(np.float64)  # (N, K) labels per item and class
    m = V.sum(axis=1)
    keep = m >= 2
    if keep.sum() < 1:
        return float("nan")
    V, m = V[keep], m[keep]
    w = 1.0 / (m - 1.0)
    o = (V * w[:, None]).T @ V - np.diag((V * w[:, None]).sum(axis=0))  # coincidences o_ck
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d_o = (n - np.trace(o)) / n
    d_e = (n * n - (n_c**2).sum()) / (n * (n - 1.0))
    if d_e <= 0:
        return float("nan")
    return float(1.0 - d_o / d_e)


WALD_MAX_WORKERS = 2_000  # the observed information costs ~4 ms per worker: beyond this, exact intervals only
WALD_MAX_CLASSES = 8  # and K^2 x K^2 per worker
ACCURACY_UNDER_PRIOR = "Σ_k π_k Γ(k, k)"
ACCURACY_ON_LABELS = "the mean of σ(α_j β_i) over the items the worker labelled (GLAD: it depends on the item)"
CLOPPER_PEARSON = "Clopper-Pearson (the estimate over n labels, labels as known)"


def worker_report(run, *, level: float = 0.95, intervals: bool = True) -> pd.DataFrame:
    """One row per worker (see the module docstring) from ``run`` (a :class:`crowdlab.engines.run.Run` of a class model
    at its cursor). ``df.attrs["krippendorff_alpha"]`` holds the dataset's alpha. Wald intervals need the observed
    information, which costs ~4 ms per worker: above WALD_MAX_WORKERS workers or WALD_MAX_CLASSES classes every
    interval is Clopper-Pearson (a crowd of 100,000 workers takes 0.1 s instead of 6 minutes). ``intervals=False``
    skips the Wald intervals (Clopper-Pearson, or the credible interval of a variational model)."""
    data: Annotations = run.data
    params = run.params
    if data.is_continuous or not hasattr(params, "gamma"):
        if data.is_continuous:
            raise ModelError("Worker reports need class labels; the scores model rates annotators by P(good).")
        raise ModelError(
            f"Worker reports need a class model with confusion matrices ({run.model.info.title} has none); fit "
            "one, e.g. ds."
        )
    gamma = params.gamma
    M, K = data.n_workers, data.n_classes
    n = data.labels_per_worker  # soft votes: the rows read, not the weighted observations
    on_labels = getattr(params, "accuracy_on_labels", None)  # GLAD: over the difficulties of the worker's items
    # else under the class prior; an HMM weighs by its chain's stationary distribution
    acc = on_labels(data) if on_labels is not None else params.worker_accuracy()
    labels = run.labels()
    hit = (data.label == labels[data.item]).astype(np.float64)
    if data.is_soft:  # a soft vote agrees by the weight it puts on the consensus label
        hit = hit * data.weight
    agreement = np.bincount(data.worker, weights=hit, minlength=M) / np.maximum(n, 1)
    # the exact binomial interval of the estimate as a proportion of the worker's n labels (labels taken as known)
    lower, upper = clopper_pearson(acc * n, n.astype(float), level)
    how = np.full(M, CLOPPER_PEARSON, dtype=object)
    credible = getattr(run.model, "accuracy_intervals", None)
    if credible is not None:  # a variational posterior: its own credible interval
        ci = credible(params, level=level)
        lower, upper = ci["lo"], ci["hi"]
        how = np.full(M, f"credible (posterior, {ci['draws']:,} draws)", dtype=object)
    elif (
        intervals
        and run.iterative
        and M <= WALD_MAX_WORKERS
        and K <= WALD_MAX_CLASSES
        and isinstance(run.model, MACE)
        and not data.response_names  # its observed information has no spam-only responses
    ):
        wi = mace_worker_intervals(run.model, data, params, level=level)  # (its variational version: above)
        ok = wi["note"].eq("").to_numpy()
        lower = np.where(ok, wi["lower"].to_numpy(float), lower)
        upper = np.where(ok, wi["upper"].to_numpy(float), upper)
        how = np.where(ok, MACE_INTERVAL, how)
    elif intervals and run.iterative and M <= WALD_MAX_WORKERS and K <= WALD_MAX_CLASSES and not data.response_names:
        try:
            wi = worker_intervals(run, level=level)
            wi = wi[wi["parameter"] == "accuracy"] if "parameter" in wi else wi
            if len(wi) == M:
                ok = wi["note"].fillna("").eq("").to_numpy() if "note" in wi else np.ones(M, bool)
                lower = np.where(ok, wi["lower"].to_numpy(float), lower)
                upper = np.where(ok, wi["upper"].to_numpy(float), upper)
                how = np.where(ok, "Wald (observed information)", how)
        except (ModelError, ValueError, np.linalg.LinAlgError, KeyError):
            pass  # the model has no observed information: the exact interval stays
    gamma = gamma[:, :K, :]  # the class responses (a "can't tell" row is no confusion)
    off = gamma.copy()
    off[:, np.arange(K), np.arange(K)] = -1.0
    flat = off.reshape(M, K * K).argmax(axis=1)
    said, true = np.divmod(flat, K)
    worst_rate = off.reshape(M, K * K)[np.arange(M), flat]
    names = data.class_names
    worst = [f"says {names[s]} when {names[t]}" for s, t in zip(said.tolist(), true.tolist())]
    df = pd.DataFrame(
        {
            "worker": list(data.worker_names),
            "n_labels": n,
            "accuracy": acc,
            "lower": lower,
            "upper": upper,
            "interval": how,
            "worst_confusion": worst,
            "worst_rate": worst_rate,
            "spammer_score": spammer_score(gamma),
            "agreement": agreement,
        }
    )
    if data.response_names:  # the share of the worker's answers that were "can't tell" (a response, not a class)
        said = np.bincount(data.worker, weights=(data.label >= K).astype(np.float64), minlength=M)
        df.insert(2, "abstention_rate", said / np.maximum(n, 1))
    _with_dependence(df, run)  # "can't tell" counts as one more response the pair may agree on
    df.attrs["krippendorff_alpha"] = krippendorff_alpha(data)
    df.attrs["accuracy_formula"] = ACCURACY_ON_LABELS if on_labels is not None else ACCURACY_UNDER_PRIOR
    return df


def _with_dependence(df: pd.DataFrame, run) -> None:
    """The dependence check's columns (:mod:`crowdlab.analysis.dependence`): ``copying_partner`` (the worker with
    whom this one agrees most beyond what conditional independence predicts among the flagged pairs, "" when
    none), ``partner_excess`` (that pair's kappa, 0 when none) and ``partner_p`` (Holm-adjusted p-value, 1 when
    none); ``df.attrs["dependence"]`` (the :class:`DependenceReport`, None when it could not be run) and
    ``df.attrs["effective_annotators"]``."""
    from crowdlab.analysis.dependence import dependence_check, run_known

    M = run.data.n_workers
    partner = np.full(M, "", dtype=object)
    excess, p_best = np.zeros(M), np.ones(M)
    try:
        rep = dependence_check(run.data, run.params, run.posterior, known=run_known(run))
    except (ModelError, ValueError, MemoryError):
        rep = None
    if rep is not None and rep.n_flagged:
        names = run.data.worker_names
        order = np.argsort(rep.p_holm, kind="stable")[::-1]  # best last: it overwrites
        for i in order[rep.flagged[order]]:
            for w, other in ((rep.a[i], rep.b[i]), (rep.b[i], rep.a[i])):
                partner[w], excess[w], p_best[w] = names[other], rep.kappa[i], rep.p_holm[i]
    df["copying_partner"] = partner
    df["partner_excess"] = excess
    df["partner_p"] = p_best
    df.attrs["dependence"] = rep
    df.attrs["effective_annotators"] = rep.effective if rep is not None else {}
