"""Evaluation against gold labels and against known confusion matrices.

Conventions: class codes are ints 0..K-1; ``gold[n] = -1`` marks an item without gold, and every metric uses
only the items with gold (NaN when there are none). For continuous scores gold is a float, NaN when unknown.
Confusion matrices follow the house convention ``Gamma[k', k] = P(says k' | true class k)`` (columns = true
class), and so does :func:`confusion_matrix` (rows = predicted class, columns = true class).

Traganitis & Giannakis, Sec. 7: per-class precision and recall, the F-score of eq. (37), and the
average confusion-matrix estimation error of eq. (38).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "PrecisionRecallF",
    "accuracy",
    "auc",
    "confusion_error",
    "confusion_matrix",
    "log_loss",
    "macro_f",
    "pearson",
    "precision_recall_f",
    "soft_accuracy",
]


class PrecisionRecallF(NamedTuple):
    """Per-class precision, recall and F (each (K,)) and the macro F-score of Traganitis & Giannakis eq. (37)."""

    precision: np.ndarray
    recall: np.ndarray
    f: np.ndarray
    macro_f: float


def _gold_pair(pred: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pred, gold) restricted to items with gold >= 0."""
    pred = np.asarray(pred)
    gold = np.asarray(gold)
    if pred.shape[:1] != gold.shape or gold.ndim != 1:
        raise ValueError(f"pred and gold need one entry per item: got shapes {pred.shape} and {gold.shape}.")
    mask = gold >= 0
    return pred[mask], gold[mask].astype(np.int64)


def _check_codes(name: str, codes: np.ndarray, n_classes: int) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.size and (codes.min() < 0 or codes.max() >= n_classes):
        raise ValueError(f"{name} codes must lie in 0 .. {n_classes - 1}.")
    return codes.astype(np.int64)


def accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    """Fraction of items with gold (gold >= 0) whose predicted class equals the gold class; NaN if none.

    Shapes: ``pred`` (N,) int, ``gold`` (N,) int with -1 for unknown.
    """
    p, g = _gold_pair(pred, gold)
    if g.size == 0:
        return float("nan")
    return float(np.mean(p == g))


def soft_accuracy(q: np.ndarray, gold: np.ndarray) -> float:
    """Mean posterior mass on the gold class, mean_n q[n, gold_n], over items with gold; NaN if none.

    This is the expected accuracy of a prediction drawn from q. For a majority vote whose q splits ties
    evenly (q = 1/2 on each of two tied classes) it is the accuracy "with ties split".
    Shapes: ``q`` (N, K), ``gold`` (N,).
    """
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 2:
        raise ValueError(f"q must be an (items, classes) array, got shape {q.shape}.")
    qg, g = _gold_pair(q, gold)
    if g.size == 0:
        return float("nan")
    _check_codes("gold", g, q.shape[1])
    return float(np.mean(qg[np.arange(g.size), g]))


def confusion_matrix(pred: np.ndarray, gold: np.ndarray, n_classes: int) -> np.ndarray:
    """Counts C[k', k] = #items with gold class k predicted as k' (rows = predicted, columns = true class).

    The orientation matches the confusion matrices Gamma (columns = true class): dividing each column by its
    sum gives the aggregator's empirical Gamma. Only items with gold >= 0 count. Shape (K, K), int64.
    """
    p, g = _gold_pair(pred, gold)
    K = int(n_classes)
    p = _check_codes("pred", p, K)
    g = _check_codes("gold", g, K)
    return np.bincount(p * K + g, minlength=K * K).reshape(K, K)


def precision_recall_f(pred: np.ndarray, gold: np.ndarray, n_classes: int) -> PrecisionRecallF:
    """Per-class precision, recall, F and the F-score of Traganitis & Giannakis eq. (37).

    Precision_k = #(pred = k and gold = k) / #(pred = k); Recall_k = #(pred = k and gold = k) / #(gold = k);
    F_k = 2 Precision_k Recall_k / (Precision_k + Recall_k), and eq. (37):

        F-score = (2 / K) sum_k Precision_k Recall_k / (Precision_k + Recall_k) = mean_k F_k.

    Edge cases (only items with gold >= 0 count):

    - a class that is predicted but never true (or true but never predicted) has precision = recall = F = 0
      (the undefined ratio counts as 0), and so does any class with Precision_k + Recall_k = 0: it contributes
      0 to the sum of eq. (37);
    - a class absent from both the gold and the prediction carries no information: its precision, recall and F
      are NaN and it is left out of the average, i.e. K in eq. (37) counts only the classes that occur in the
      gold or the prediction;
    - with no gold items everything is NaN.
    """
    K = int(n_classes)
    C = confusion_matrix(pred, gold, K).astype(np.float64)
    tp = np.diag(C)
    n_pred = C.sum(axis=1)
    n_true = C.sum(axis=0)
    present = (n_pred + n_true) > 0
    precision = np.divide(tp, n_pred, out=np.zeros(K), where=n_pred > 0)
    recall = np.divide(tp, n_true, out=np.zeros(K), where=n_true > 0)
    denom = precision + recall
    f = np.divide(2.0 * precision * recall, denom, out=np.zeros(K), where=denom > 0)
    precision[~present] = np.nan
    recall[~present] = np.nan
    f[~present] = np.nan
    macro = float(np.mean(f[present])) if present.any() else float("nan")
    return PrecisionRecallF(precision, recall, f, macro)


def macro_f(pred: np.ndarray, gold: np.ndarray, n_classes: int) -> float:
    """The F-score of Traganitis & Giannakis eq. (37) (macro average of per-class F); see :func:`precision_recall_f`."""
    return precision_recall_f(pred, gold, n_classes).macro_f


def _norm1(A: np.ndarray) -> np.ndarray:
    """Induced matrix 1-norm over the last two axes: the largest absolute column sum."""
    return np.abs(A).sum(axis=-2).max(axis=-1)


def confusion_error(gamma_true: np.ndarray, gamma_est: np.ndarray) -> float:
    """Average confusion-matrix estimation error, Traganitis & Giannakis eq. (38).

        eps_CM = (1/M) sum_m ||Gamma_m - Gamma_hat_m||_1 / ||Gamma_m||_1,

    with ||.||_1 the induced matrix 1-norm (largest absolute column sum); for column-stochastic Gamma_m the
    denominator is 1. Shapes: (M, K, K) stacks or a single (K, K) matrix (M = 1). Ranges over [0, 2] for
    column-stochastic matrices. Classes must be in the same order in both (no label-permutation matching).
    """
    G = np.asarray(gamma_true, dtype=np.float64)
    H = np.asarray(gamma_est, dtype=np.float64)
    if G.shape != H.shape:
        raise ValueError(f"gamma_true and gamma_est differ in shape: {G.shape} vs {H.shape}.")
    if G.ndim == 2:
        G, H = G[None], H[None]
    if G.ndim != 3 or G.shape[1] != G.shape[2] or G.shape[0] == 0:
        raise ValueError(f"confusion matrices must be (M, K, K) or (K, K), got shape {G.shape}.")
    den = _norm1(G)
    if (den <= 0).any():
        raise ValueError("a true confusion matrix is all zeros: its 1-norm is 0.")
    return float(np.mean(_norm1(G - H) / den))


def log_loss(q: np.ndarray, gold: np.ndarray, eps: float = 1e-15) -> float:
    """Mean negative log posterior of the gold class, -mean_n log q[n, gold_n], over items with gold.

    q is clipped to [eps, 1] first so a confident mistake costs -log(eps) instead of infinity. NaN if no gold.
    Shapes: ``q`` (N, K), ``gold`` (N,).
    """
    q = np.asarray(q, dtype=np.float64)
    if q.ndim != 2:
        raise ValueError(f"q must be an (items, classes) array, got shape {q.shape}.")
    qg, g = _gold_pair(q, gold)
    if g.size == 0:
        return float("nan")
    _check_codes("gold", g, q.shape[1])
    return float(-np.mean(np.log(np.clip(qg[np.arange(g.size), g], eps, 1.0))))


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation of x (e.g. estimated means) and y (e.g. continuous gold), over pairs where both are
    finite (NaN gold = unknown). NaN when fewer than 2 pairs remain or either side is constant."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y need one entry per item: got shapes {x.shape} and {y.shape}.")
    mask = np.isfinite(x) & np.isfinite(y)
    if mask.sum() < 2:
        return float("nan")
    xs, ys = x[mask], y[mask]
    xs = xs / max(float(np.abs(xs).max()), 1e-300)  # r is scale-free: |x| <= 1 keeps 1e308-sized inputs finite
    ys = ys / max(float(np.abs(ys).max()), 1e-300)
    xc = xs - xs.mean()
    yc = ys - ys.mean()
    den = np.sqrt((xc * xc).sum() * (yc * yc).sum())
    if den == 0:
        return float("nan")
    return float(np.clip((xc * yc).sum() / den, -1.0, 1.0))


def auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for the binary ``truth`` (1 = positive), ties counted as half.

    The Mann-Whitney statistic: the fraction of (positive, negative) pairs whose positive item scores higher,
    computed from average ranks. Items with truth -1 (unknown) are left out; NaN when either class is absent.
    Shapes: ``scores`` (N,) float, ``truth`` (N,) int in {-1, 0, 1}.
    """
    from scipy.stats import rankdata

    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(truth)
    if s.shape != t.shape or s.ndim != 1:
        raise ValueError(f"scores and truth need one entry per item: got shapes {s.shape} and {t.shape}.")
    known = t >= 0
    s, t = s[known], t[known]
    if t.size and t.max() > 1:
        raise ValueError("auc needs binary truth (0, 1; -1 for unknown).")
    pos = t == 1
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if n1 == 0 or n0 == 0:
        return float("nan")
    ranks = rankdata(s)  # average ranks for ties
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))
