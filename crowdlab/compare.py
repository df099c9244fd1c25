"""Run every applicable method on one dataset and compare them (against gold when there is gold)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crowdlab.api import fit
from crowdlab.data import Annotations
from crowdlab.em import Run
from crowdlab.metrics import accuracy, log_loss, macro_f, pearson, soft_accuracy
from crowdlab.models import MODELS, applicable_models


@dataclass(frozen=True, eq=False)
class Comparison:
    """Runs by method key, the summary table, pairwise agreement of hard labels and the disputed items."""

    runs: dict[str, Run]
    table: pd.DataFrame
    agreement: pd.DataFrame
    disagreements: pd.DataFrame


def compare_methods(
    data: Annotations,
    methods: list[str] | None = None,
    *,
    prior: float = 0.0,
    progress: Callable[[int, int, str], None] | None = None,
    **fit_options,
) -> Comparison:
    """Fit each method (default: all that apply) to convergence and tabulate.

    Table columns: method, iterations, converged, objective, and with gold: accuracy, soft accuracy (ties
    split), macro F (Traganitis & Giannakis eq. 37), log loss for class labels; Pearson r for scores. The plain mean of
    the scores is added as the baseline for continuous data.
    """
    methods = methods or applicable_models(data)
    runs: dict[str, Run] = {}
    for i, key in enumerate(methods):
        if progress is not None:
            progress(i, len(methods), MODELS[key].info.title)
        runs[key] = fit(data, key, prior=prior, **fit_options)
    if progress is not None:
        progress(len(methods), len(methods), "done")
    rows = [_row(data, key, run) for key, run in runs.items()]
    if data.is_continuous:
        plain = np.bincount(data.item, weights=data.value, minlength=data.n_items) / data.labels_per_item
        row = {"method": "Mean of the scores", "iterations": 0, "converged": True, "objective": None}
        if data.has_gold:
            row["pearson r"] = pearson(plain, data.gold)
        rows.insert(0, row)
        return Comparison(runs, pd.DataFrame(rows), pd.DataFrame(), pd.DataFrame())
    table = pd.DataFrame(rows)
    labels = {MODELS[k].info.title: run.labels() for k, run in runs.items()}
    return Comparison(runs, table, _agreement(labels), _disagreements(data, labels))


def _row(data: Annotations, key: str, run: Run) -> dict:
    row = {
        "method": MODELS[key].info.title,
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
