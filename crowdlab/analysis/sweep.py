"""How priors and initialisations change the answer: prior-strength sweeps and restarts.

EM finds a local maximum that depends on where it starts. ``restarts`` runs a method from majority vote,
"everyone is good" and R seeded random starts, and groups the end points into distinct optima by their objective;
``prior_sweep`` refits with increasing Dirichlet/Beta prior strength (MAP). Both report progress and can be
stopped between fits (``should_stop``), returning what they have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crowdlab.engines.fit import fit
from crowdlab.engines.run import Run
from crowdlab.io.annotations import Annotations
from crowdlab.io.metrics import accuracy, macro_f, pearson

Progress = Callable[[int, int, str], None]


def class_permutation(labels: np.ndarray, reference: np.ndarray, n_classes: int) -> np.ndarray:
    """The relabelling ``perm`` (perm[k] = reference class of class k) that best matches ``reference``.

    EM's objective is invariant under renaming the latent classes (permute every Gamma's columns and pi), so a
    run can converge to the mirror image of another; matching by the Hungarian method on the K x K co-occurrence
    tells which classes correspond.
    """
    from scipy.optimize import linear_sum_assignment

    co = np.zeros((n_classes, n_classes))
    np.add.at(co, (labels, reference), 1)
    rows, cols = linear_sum_assignment(-co)
    perm = np.empty(n_classes, dtype=int)
    perm[rows] = cols
    return perm


@dataclass(frozen=True)
class LabelSwitch:
    """Evidence that a run's classes are a relabelling (a mirror optimum) of the majority vote's.

    ``perm[k]`` is the majority-vote class that EM's class k matches; ``agree`` / ``agree_mapped`` are the shares
    of items whose EM label equals the majority vote as it is / after mapping through ``perm``; ``accuracy`` /
    ``accuracy_mapped`` the same against gold (None without gold).
    """

    perm: np.ndarray
    agree: float
    agree_mapped: float
    accuracy: float | None = None
    accuracy_mapped: float | None = None

    def mapping(self, class_names) -> list[tuple[str, str]]:
        """(EM's class, the class it stands for) for every class that moved."""
        return [(class_names[k], class_names[int(j)]) for k, j in enumerate(self.perm) if int(j) != k]


@dataclass(frozen=True)
class PriorCollapse:
    """Evidence that a run's estimated class prior has collapsed onto the other classes: class ``k`` has prior
    ``pi`` although majority vote gives it ``mv_share`` of the items; ``share`` of the items keep it as their
    label now; ``accuracy`` / ``mv_accuracy`` against gold (None without gold)."""

    k: int
    pi: float
    mv_share: float
    share: float
    accuracy: float | None = None
    mv_accuracy: float | None = None


def prior_collapse(
    data: Annotations, pi: np.ndarray, labels: np.ndarray, *, ratio: float = 0.25, min_share: float = 0.1
) -> PriorCollapse | None:
    """A :class:`PriorCollapse` when an estimated class prior ``pi`` (K,) gives some class less than ``ratio`` of
    the share of items majority vote gives it (a class majority vote gives at least ``min_share`` of the items),
    else None; ``labels`` (N,) are the run's hard labels. The class most collapsed is reported.

    A model whose errors cannot depend on the true class (one-coin: one accuracy per worker, errors spread evenly)
    can fit a crowd that errs more on one class than on another better by calling nearly every item one class: a
    higher likelihood and a worse answer (bluebirds: pi = (0.972, 0.028), accuracy 0.583 against majority vote's
    0.759 and Dawid-Skene's 0.898).
    """
    from crowdlab.models.majority import majority_labels

    pi = np.asarray(pi, dtype=np.float64)
    if data.is_continuous or pi.shape != (data.n_classes,) or not np.all(np.isfinite(pi)):
        return None
    mv = majority_labels(data)
    mv_share = np.bincount(mv, minlength=data.n_classes) / max(len(mv), 1)
    fall = np.where(mv_share >= min_share, pi / np.maximum(mv_share, 1e-300), np.inf)
    k = int(np.argmin(fall))
    if not fall[k] < ratio:
        return None
    labels = np.asarray(labels, dtype=int)
    acc = mv_acc = None
    if data.has_gold:
        acc, mv_acc = accuracy(labels, data.gold), accuracy(mv, data.gold)
    return PriorCollapse(k, float(pi[k]), float(mv_share[k]), float(np.mean(labels == k)), acc, mv_acc)


def label_switch(data: Annotations, labels: np.ndarray, min_gain: float = 0.1) -> LabelSwitch | None:
    """A :class:`LabelSwitch` when the hard labels ``labels`` (N,) are a relabelling of the majority vote's
    classes, else None.

    EM's objective is unchanged when the latent classes are renamed, so a run can converge to the mirror image of
    the sensible optimum (every worker "adversarial", accuracy against gold near 0 for two classes). The classes
    are matched to the majority vote's by :func:`class_permutation`; the run counts as label-switched when the best
    matching is not the identity and agrees with the majority vote on at least ``min_gain`` more of the items than
    the labels as they are (so a minor class that EM merely renames by a few items does not fire).
    """
    from crowdlab.models.majority import majority_labels

    if data.is_continuous:
        return None
    K = data.n_classes
    labels = np.asarray(labels, dtype=int)
    mv = majority_labels(data)
    perm = class_permutation(labels, mv, K)
    if (perm == np.arange(K)).all():
        return None
    agree = float(np.mean(labels == mv))
    agree_mapped = float(np.mean(perm[labels] == mv))
    if agree_mapped < agree + min_gain:
        return None
    acc = acc_mapped = None
    if data.has_gold:
        acc = accuracy(labels, data.gold)
        acc_mapped = accuracy(perm[labels], data.gold)
    return LabelSwitch(perm, agree, agree_mapped, acc, acc_mapped)


def _score(data: Annotations, run: Run, reference: np.ndarray | None = None) -> dict:
    out = {"objective": run.last.objective, "iterations": int(run.last.iteration), "converged": run.converged}
    if reference is not None:
        perm = class_permutation(run.labels(), reference, data.n_classes)
        out["relabelled"] = bool((perm != np.arange(data.n_classes)).any())
    if not data.has_gold:
        return out
    if data.is_continuous:
        out["pearson r"] = pearson(run.params.mu, data.gold)
    else:
        out["accuracy"] = accuracy(run.labels(), data.gold)
        out["macro F"] = macro_f(run.labels(), data.gold, data.n_classes)
    return out


def restart_plan(n_random: int, include: Iterable[str] = ("majority", "all_good")) -> list[tuple[str, int]]:
    """(init, seed) pairs: the named starts, then ``n_random`` random starts with seeds 0 .. n_random - 1."""
    return [(i, 0) for i in include] + [("random", s) for s in range(n_random)]


def restarts(
    data: Annotations,
    method: str = "ds",
    *,
    n_random: int = 10,
    include: Iterable[str] = ("majority", "all_good"),
    prior: float = 0.0,
    hard: bool = False,
    tol: float = 1e-8,
    max_iter: int = 500,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """One row per start: init, seed, final objective, iterations, metrics vs gold, and ``optimum`` (0 = best).

    Starts whose final objectives agree within 1e-6 (relative) are counted as the same optimum. For class
    labels, ``relabelled`` says the end point is a relabelling of the classes relative to majority vote (a mirror
    image with the same objective: accuracy against gold is then low although the fit is as good).
    """
    plan = restart_plan(n_random, include)
    reference = None
    if not data.is_continuous:
        from crowdlab.models.majority import majority_labels

        reference = majority_labels(data)
    rows = []
    for i, (init, seed) in enumerate(plan):
        if should_stop is not None and should_stop():
            break
        if progress is not None:
            progress(i, len(plan), f"{init} (seed {seed})" if init == "random" else init)
        run = fit(data, method, init=init, seed=seed, prior=prior, hard=hard, tol=tol, max_iter=max_iter)
        rows.append({"init": init, "seed": seed, **_score(data, run, reference)})
    if progress is not None:
        progress(len(rows), len(plan), "done")
    table = pd.DataFrame(rows)
    if len(table):
        table["optimum"] = label_optima(table["objective"].to_numpy(dtype=float))
    return table


def label_optima(objectives: np.ndarray, rel_tol: float = 1e-6) -> np.ndarray:
    """Group objective values that agree within ``rel_tol``; 0 = the best group, 1 = next, ..."""
    order = np.argsort(-objectives, kind="stable")
    ids = np.empty(objectives.size, dtype=int)
    current, ref = -1, None
    for i in order:
        v = objectives[i]
        if ref is None or abs(v - ref) > rel_tol * max(1.0, abs(ref)):
            current += 1
            ref = v
        ids[i] = current
    return ids


def prior_sweep(
    data: Annotations,
    method: str = "ds",
    strengths: Iterable[float] = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0),
    *,
    init: str = "majority",
    hard: bool = False,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """One row per prior strength s (pseudo-counts): final objective (log posterior), metrics vs gold."""
    strengths = list(strengths)
    rows = []
    for i, s in enumerate(strengths):
        if should_stop is not None and should_stop():
            break
        if progress is not None:
            progress(i, len(strengths), f"prior {s:g}")
        run = fit(data, method, init=init, prior=float(s), hard=hard)
        row = {"prior": float(s), **_score(data, run)}
        if not data.is_continuous:
            row["mean worker accuracy"] = float(np.mean(run.params.worker_accuracy()))
        rows.append(row)
    if progress is not None:
        progress(len(rows), len(strengths), "done")
    return pd.DataFrame(rows)
