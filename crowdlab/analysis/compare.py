"""Run every applicable method on one dataset and compare them (against gold when there is gold)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crowdlab.engines.fit import fit
from crowdlab.engines.run import Run
from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.io.metrics import accuracy, log_loss, macro_f, pearson, soft_accuracy
from crowdlab.models import MODELS, applicable_models
from crowdlab.models.base import VariationalObjective
from crowdlab.models.baselines import BASELINES, Baseline

EM_KIND = "EM"
VB_KIND = "variational Bayes"  # IBCC, MACE (VB): stepped like EM, but the objective is an ELBO
BASELINE_KIND = "baseline (not EM)"


def run_kind(run: Run) -> str:
    """The table's "kind" of a fitted run: EM, variational Bayes (its objective is an ELBO, not log p(x | theta),
    so the two objectives are not to be compared) or a baseline that climbs nothing."""
    if not run.iterative:
        return BASELINE_KIND
    return VB_KIND if isinstance(run.model, VariationalObjective) else EM_KIND


@dataclass(frozen=True, eq=False)
class Comparison:
    """Runs by method key, the summary table, pairwise agreement of hard labels and the disputed items; with
    ``baselines``: the non-EM results by key and a note per baseline that does not apply (``skipped``). ``labels``:
    each row's answer per item by the table's method name, in the table's order (class codes; for scores, the
    estimated mean per item)."""

    runs: dict[str, Run]
    table: pd.DataFrame
    agreement: pd.DataFrame
    disagreements: pd.DataFrame
    baselines: dict[str, Baseline] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    labels: dict[str, np.ndarray] = field(default_factory=dict)


def compare_methods(
    data: Annotations,
    methods: list[str] | None = None,
    *,
    prior: float = 0.0,
    progress: Callable[[int, int, str], None] | None = None,
    baselines: bool = False,
    iteration_progress: Callable[[int, int], None] | None = None,
    **fit_options,
) -> Comparison:
    """Fit each method (default: all that apply) to convergence and tabulate.

    Table columns: method, kind (:func:`run_kind`), iterations, converged, objective, and with gold: accuracy,
    soft accuracy (ties split), macro F (Traganitis & Giannakis eq. 37), log loss for class labels; Pearson r for
    scores; and the wall time in seconds. The plain mean of the scores is added as the baseline for continuous data.

    ``baselines=True`` adds the non-EM aggregations of :data:`crowdlab.models.baselines.BASELINES` (Wawa, Zero-Based
    Skill, KOS, M-MSR) as rows of kind "baseline (not EM)" (majority vote is one too): accuracy and macro F
    against gold (their scores are vote shares, not posteriors: no soft accuracy or log loss), and their labels
    join the agreement matrix and the disputed items. One that does not apply (KOS on more than two classes)
    is left out with its reason in ``Comparison.skipped``.

    ``methods``: the method keys to fit, in the order given (the Compare page's chooser; default None: every one
    that applies, :func:`crowdlab.models.applicable_models`); one that is unknown or does not apply is refused.

    ``progress(i, n, title)`` is called before each of the n methods (and ``(n, n, "done")`` at the end);
    ``iteration_progress(iteration, max_iter)`` after every iteration inside an iterative method's fit, so a long
    fit shows how far it is.
    """
    methods = chosen_methods(data, methods)
    extra = list(BASELINES) if baselines and not data.is_continuous else []
    total = len(methods) + len(extra)
    runs: dict[str, Run] = {}
    seconds: dict[str, float] = {}
    for i, key in enumerate(methods):
        if progress is not None:
            progress(i, total, MODELS[key].info.title)
        t0 = time.perf_counter()
        runs[key] = fit(data, key, prior=prior, progress=iteration_progress, **fit_options)
        seconds[key] = time.perf_counter() - t0
    done: dict[str, Baseline] = {}
    skipped: dict[str, str] = {}
    for j, key in enumerate(extra):
        title, func = BASELINES[key]
        if progress is not None:
            progress(len(methods) + j, total, title)
        t0 = time.perf_counter()
        try:
            done[key] = func(data)
        except ModelError as exc:
            skipped[key] = str(exc)
            continue
        seconds[key] = time.perf_counter() - t0
    if progress is not None:
        progress(total, total, "done")
    rows = [_row(data, key, run) | {"time (s)": seconds[key]} for key, run in runs.items()]
    if data.is_continuous:
        plain = np.bincount(data.item, weights=data.value, minlength=data.n_items) / data.labels_per_item
        row = {"method": "Mean of the scores", "kind": BASELINE_KIND, "iterations": 0, "converged": True}
        row["objective"] = None
        if data.has_gold:
            row["pearson r"] = pearson(plain, data.gold)
        rows.insert(0, row)
        means = {row["method"]: plain} | {MODELS[k].info.title: run.params.mu for k, run in runs.items()}
        return Comparison(runs, pd.DataFrame(rows), pd.DataFrame(), pd.DataFrame(), labels=means)
    rows += [_baseline_row(data, key, b) | {"time (s)": seconds[key]} for key, b in done.items()]
    table = pd.DataFrame(rows)
    labels = {MODELS[k].info.title: run.labels() for k, run in runs.items()}
    labels |= {BASELINES[k][0]: b.labels for k, b in done.items()}
    return Comparison(runs, table, _agreement(labels), _disagreements(data, labels), done, skipped, labels)


def chosen_methods(data: Annotations, methods: list[str] | None) -> list[str]:
    """``methods`` checked against those that apply to ``data`` (None: all of them); ValueError naming any other."""
    options = applicable_models(data)
    if methods is None:
        return options
    methods = list(dict.fromkeys(methods))
    bad = [m for m in methods if m not in options]
    if bad:
        raise ValueError(
            f"{', '.join(map(repr, bad))} {'is' if len(bad) == 1 else 'are'} not among the methods that apply to these "
            f"data: {', '.join(options)}."
        )
    return methods


def _baseline_row(data: Annotations, key: str, result: Baseline) -> dict:
    row = {
        "method": BASELINES[key][0],
        "kind": BASELINE_KIND,
        "iterations": int(result.iterations),
        "converged": None,
        "objective": None,
    }
    if data.has_gold:
        row["accuracy"] = accuracy(result.labels, data.gold)
        row["soft accuracy"] = float("nan")
        row["macro F"] = macro_f(result.labels, data.gold, data.n_classes)
        row["log loss"] = float("nan")
    return row


def _row(data: Annotations, key: str, run: Run) -> dict:
    row = {
        "method": MODELS[key].info.title,
        "kind": run_kind(run),
        "iterations": int(run.last.iteration),
        "converged": bool(run.converged),
        "objective": run.last.objective,
    }
    if not data.has_gold:
        return row
    if data.is_continuous:
        row["pearson r"] = pearson(run.params.mu, data.gold)
        return row
    lab = run.labels()
    row["accuracy"] = accuracy(lab, data.gold)
    row["soft accuracy"] = soft_accuracy(run.posterior, data.gold)
    row["macro F"] = macro_f(lab, data.gold, data.n_classes)
    row["log loss"] = log_loss(run.posterior, data.gold)
    return row


def _agreement(labels: dict[str, np.ndarray]) -> pd.DataFrame:
    names = list(labels)
    L = np.stack([labels[n] for n in names])
    agree = (L[:, None, :] == L[None, :, :]).mean(axis=2)
    return pd.DataFrame(agree, index=names, columns=names)


def _disagreements(data: Annotations, labels: dict[str, np.ndarray]) -> pd.DataFrame:
    L = np.stack(list(labels.values()))
    idx = np.flatnonzero((L != L[0]).any(axis=0))
    names = np.asarray(data.class_names, dtype=object)
    out = pd.DataFrame({"item": np.asarray(data.item_names, dtype=object)[idx]})
    if data.has_gold:
        g = data.gold[idx]
        out["gold"] = np.where(g >= 0, names[np.maximum(g, 0)], "")
    for n, lab in labels.items():
        out[n] = names[lab[idx]]
    out["labels"] = data.labels_per_item[idx]
    return out.reset_index(drop=True)
