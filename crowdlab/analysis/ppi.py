"""With a little gold: intervals for the accuracy of the aggregated labels and each class's prevalence that use the
model's posterior on every item and the gold on the few (prediction-powered inference, Angelopoulos, Bates,
Fannjiang, Jordan & Zrnic 2023, *Science* 382: 669-674, eqs. 1-2 for a mean), beside the gold-only interval.

For a quantity that is a mean over items, theta = mean_n Y_n, the model gives a prediction f_n on every item:

- accuracy of the aggregated labels: Y_n = 1[label_n = true class_n], f_n = q_{n, label_n} (the posterior's own
  probability that item n's label is right);
- prevalence of class k: Y_n = 1[true class_n = k], f_n = q_{nk}.

On the n items with gold both are known; on the rest only f. The estimate is the mean of f corrected by the
*rectifier*, the mean error of f on the gold items:

    theta_PP = mean_{all items} f  -  mean_{gold items} (f - Y).

**The gold items are among the items** (there is no separate unlabeled set). Two targets, two variances:

- ``target="items"`` (the default): theta = the accuracy (prevalence) over the N items of this dataset, the number
  an analyst reports for the labels in hand. With f fixed (the model is fitted on the crowd's labels, never on the
  gold) and the gold items a simple random sample of the items, theta_PP above is the survey sampler's difference
  estimator and its variance is (1 - n/N) s^2_{f-Y} / n (a finite-population correction; no model assumption at
  all: f may be as miscalibrated as it likes, the rectifier pays for it and the interval widens).
- ``target="population"``: theta = E[Y] over the population the items were drawn from, the paper's own setting
  (labelled and unlabelled samples independent): the first term averages f over the N - n items without gold, and
  the variance is s^2_f / (N - n) + s^2_{f-Y} / n (the paper's CLT interval).

The naive interval uses the gold items alone: Wilson's score interval for a proportion (Wilson 1927), no
finite-population correction (the interval analysts usually quote). Both need the gold items to be a random
sample of the items: gold chosen because the items were hard or easy biases both. The model must not have seen
the gold (semi-supervised EM, "Reveal gold", makes f equal Y on the revealed items: :func:`gold_intervals` refuses
such a run).

Small gold sets and rare errors: EM's posteriors are often sure of nearly every item (DS on RTE: the model alone
says 0.99 of the labels are right; 0.93 are), so f - Y is near 0 on most gold items and near +-1 on the few errors,
and its sample variance from 100 gold items holding seven errors is often far too small: the bare CLT interval
then covers 0.92 (RTE, n = 100) and 0.88 (n = 50). Two guards, in the spirit of Agresti & Coull (1998) for a
proportion: the variance of f - Y is computed with one pseudo-item at each end of its range, +1 and -1, about the
gold items' own mean (the estimate does not move), and the quantile is Student's t with n - 1 degrees of freedom.
Coverage by simulation (1,000 gold sets per case, tests/unit/test_ppi.py): 0.946-0.99 from n = 50 to 500 (the
guards cost most at n = 50, where the interval is conservative; at n >= 300 they cost 2-4 % of the width).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

TARGETS = ("items", "population")

COLUMNS = (
    "quantity",
    "gold items",
    "gold only",
    "gold only low",
    "gold only high",
    "model alone",
    "PPI",
    "PPI low",
    "PPI high",
    "width ratio",
)


@dataclass(frozen=True)
class Interval:
    """An estimate with its standard error and its two-sided interval at ``level``."""

    estimate: float
    se: float
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low


def _z(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level}.")
    return float(stats.norm.ppf(0.5 + level / 2.0))


def _t(level: float, n: int) -> float:
    """Student's t quantile with n - 1 degrees of freedom (the rectifier's variance is estimated from n gold items):
    a shade wider than the normal one at n = 50, the same at n = 500."""
    _z(level)
    return float(stats.t.ppf(0.5 + level / 2.0, max(n - 1, 1)))


def wilson(successes: float, n: int, level: float = 0.95) -> Interval:
    """Wilson's score interval for a proportion from ``successes`` of ``n`` (Wilson 1927); NaN when n is 0."""
    if n <= 0:
        nan = float("nan")
        return Interval(nan, nan, nan, nan)
    z = _z(level)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    return Interval(float(p), float(np.sqrt(p * (1 - p) / n)), float(low), float(high))


def _rectifier(delta: np.ndarray, pseudo: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of f - Y over the gold items (last axis); the variance with ``pseudo`` pseudo-items at each
    end of f - Y's range, +1 and -1, counted about the gold items' own mean (module text): (mean, variance)."""
    n = delta.shape[-1]
    mean = delta.mean(axis=-1)
    ss = ((delta - mean[..., None]) ** 2).sum(axis=-1) + pseudo * ((1 - mean) ** 2 + (1 + mean) ** 2)
    dof = n + 2 * pseudo - 1
    return mean, ss / dof if dof > 0 else np.zeros_like(mean)


def ppi_mean(
    f_all: np.ndarray,
    gold: np.ndarray,
    y: np.ndarray,
    level: float = 0.95,
    *,
    target: str = "items",
    pseudo: float = 1.0,
) -> Interval:
    """Prediction-powered interval for theta = mean Y (module text).

    ``f_all`` (N,) the model's prediction on every item; ``gold`` (N,) bool, the items whose Y is known; ``y`` (N,)
    Y on those (ignored elsewhere). Vectorised over leading axes: ``f_all``, ``gold`` and ``y`` of shape (..., N)
    give arrays of estimates (the simulations draw a thousand gold sets at once); every row needs the same number
    of gold items.
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}; got {target!r}.")
    f_all = np.asarray(f_all, dtype=float)
    gold = np.broadcast_to(np.asarray(gold, dtype=bool), np.broadcast_shapes(f_all.shape, np.shape(gold)))
    f_all = np.broadcast_to(f_all, gold.shape)
    y = np.broadcast_to(np.asarray(y, dtype=float), gold.shape)
    N = gold.shape[-1]
    counts = gold.sum(axis=-1)
    n = int(np.max(counts)) if counts.size else 0
    if np.any(counts != n):
        raise ValueError("every row needs the same number of gold items.")
    if n == 0:
        nan = np.full(gold.shape[:-1], np.nan)
        return Interval(*(nan[()] for _ in range(4)))
    lead = gold.shape[:-1]
    rect, var_d = _rectifier((f_all - y)[gold].reshape(*lead, n), pseudo)
    if target == "items" or n == N:
        est = f_all.mean(axis=-1) - rect
        var = (1.0 - n / N) * var_d / n
    else:
        f_u = f_all[~gold].reshape(*lead, N - n)
        est = f_u.mean(axis=-1) - rect
        var_f = f_u.var(axis=-1, ddof=1) if N - n > 1 else 0.0
        var = var_f / (N - n) + var_d / n
    se = np.sqrt(var)
    z = _t(level, n)
    return Interval(est[()], se[()], (est - z * se)[()], (est + z * se)[()])


@dataclass(frozen=True)
class GoldIntervals:
    """The table of :func:`gold_intervals`: one row for the accuracy of the aggregated labels, one per class's
    prevalence (columns :data:`COLUMNS`; "width ratio" = PPI width / gold-only width), and what it rests on."""

    table: pd.DataFrame
    n_gold: int
    n_items: int
    level: float
    target: str
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The table as plain text, for the command line."""
        t = self.table
        head = f"{'':<28}{'gold only':>9}{'':14}{'model':>8}{'PPI':>8}{'':15}{'ratio':>7}"
        lines = [
            f"With gold on {self.n_gold:,} of {self.n_items:,} items: {self.level:.0%} intervals "
            f"(PPI target: {'these items' if self.target == 'items' else 'the population'})",
            head,
        ]
        for _, r in t.iterrows():
            name = str(r["quantity"])[:27]
            lines.append(
                f"{name:<28}{r['gold only']:>8.3f} [{r['gold only low']:.3f}, {r['gold only high']:.3f}]"
                f"{r['model alone']:>8.3f}{r['PPI']:>8.3f} [{r['PPI low']:.3f}, {r['PPI high']:.3f}]"
                f"{r['width ratio']:>7.2f}"
            )
        lines.append(
            "model: the posterior's own estimate, mean of f over the items (no interval: it trusts the model); "
            "ratio: PPI width / gold-only width"
        )
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


def interval_rows(
    q: np.ndarray,
    labels: np.ndarray,
    gold: np.ndarray,
    class_names: tuple | list,
    level: float = 0.95,
    *,
    target: str = "items",
) -> pd.DataFrame:
    """The rows of :class:`GoldIntervals` from arrays: ``q`` (N, K) posterior, ``labels`` (N,) aggregated class
    codes, ``gold`` (N,) class codes with -1 for unknown."""
    q = np.asarray(q, dtype=float)
    labels = np.asarray(labels, dtype=np.int64)
    gold = np.asarray(gold, dtype=np.int64)
    N, K = q.shape
    has = gold >= 0
    n = int(has.sum())
    quantities = [("accuracy of the labels", q[np.arange(N), labels], (labels == gold).astype(float))]
    quantities += [(f"share of {name}", q[:, k], (gold == k).astype(float)) for k, name in enumerate(class_names)]
    rows = []
    for name, f, y in quantities:
        naive = wilson(float(y[has].sum()), n, level)
        pp = ppi_mean(f, has, y, level, target=target)
        rows.append(
            {
                "quantity": name,
                "gold items": n,
                "gold only": naive.estimate,
                "gold only low": naive.low,
                "gold only high": naive.high,
                "model alone": float(f.mean()),
                "PPI": float(pp.estimate),
                "PPI low": float(pp.low),
                "PPI high": float(pp.high),
                "width ratio": float(pp.width / naive.width) if naive.width > 0 else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def gold_intervals(run, level: float = 0.95, *, target: str = "items") -> GoldIntervals:
    """Intervals for the accuracy of ``run``'s aggregated labels and each class's prevalence over the items, from
    its posterior on every item and the gold on the items that have it (module text), beside the gold-only ones.

    ``run``: a fitted :class:`crowdlab.engines.run.Run` of a class model (majority vote too) on data with gold.
    Raises ValueError without gold, for continuous scores, or when the run has seen the gold (semi-supervised EM).
    """
    data = run.data
    if data.is_continuous:
        raise ValueError("intervals from a little gold are for class labels; these are continuous scores.")
    if not data.has_gold:
        raise ValueError("these data have no gold labels: the intervals need gold on some items.")
    if getattr(run.model, "semi_supervised", False):
        raise ValueError(
            "this run has seen the gold (semi-supervised EM fixes the revealed items to their gold class), so its "
            "posterior is no prediction on those items: fit without Reveal gold / --reveal / --known."
        )
    rows = interval_rows(run.posterior, run.labels(), data.gold, data.class_names, level, target=target)
    n, N = int((data.gold >= 0).sum()), data.n_items
    notes = [
        "valid when the gold items are a random sample of the items (gold picked for hard or easy items biases "
        "both intervals)"
    ]
    if n == N:
        notes.append("every item has gold: the labels' accuracy and the shares are known exactly on these items")
    elif n < 50:
        notes.append(f"only {n} gold items: the normal approximation behind the PPI interval is rough below 50")
    return GoldIntervals(rows, n, N, level, target, notes)
