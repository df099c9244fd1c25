"""The dependence check's heatmap (:mod:`crowdlab.analysis.dependence`): every tested pair of workers, coloured by
its excess agreement over what conditional independence predicts (kappa), flagged pairs outlined.

Conventions: :mod:`crowdlab.plots.common`."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from crowdlab.plots.common import _empty, _layout, figure, wrap_label
from crowdlab.plots.matrices import rect_path

MAX_WORKERS = 30  # the heatmap shows at most this many workers: those in the strongest pairs


def shown_workers(report, max_workers: int = MAX_WORKERS) -> np.ndarray:
    """Worker codes the heatmap shows: every worker when there are few, else those of the pairs with the smallest
    p-values (then largest kappa) until ``max_workers``, in worker order."""
    M = len(report.worker_names)
    if M <= max_workers:
        return np.arange(M)
    order = np.lexsort((-report.kappa, report.p_value))
    seen: list[int] = []
    for i in order:
        for w in (int(report.a[i]), int(report.b[i])):
            if w not in seen and len(seen) < max_workers:
                seen.append(w)
        if len(seen) >= max_workers:
            break
    return np.array(sorted(seen), dtype=int)


TOP_QUANTILE = 0.95  # the colour range covers this share of the shown |kappa|; the rest saturate
MIN_TOP = 0.05  # no narrower range than +-0.05 (a crowd where every pair is as CI predicts stays pale)


def colour_top(z: np.ndarray) -> float:
    """The half-width of the heatmap's colour range: the ``TOP_QUANTILE`` quantile of the finite |kappa| shown,
    within [``MIN_TOP``, 1] (kappa lies in [-1, 1]; a handful of extreme pairs on few shared items would otherwise
    stretch the range until every other cell is white)."""
    v = np.abs(z[np.isfinite(z)])
    if v.size == 0:
        return 1.0
    return float(np.clip(np.quantile(v, TOP_QUANTILE), MIN_TOP, 1.0))


def pair_heatmap(report, *, title: str | None = None, max_workers: int = MAX_WORKERS, height: int = 460) -> go.Figure:
    """Heatmap of ``report.kappa_matrix`` over :func:`shown_workers` (rows and columns: workers; untested pairs
    blank), colour range [-top, top] around 0 (red: agree more than independence predicts; :func:`colour_top`:
    the values that inform, within [-1, 1], a few extreme pairs saturating); the flagged pairs outlined (one path
    shape named ``flagged``). Numbers on the cells up to 12 workers."""
    title = title or "Excess agreement of each pair over conditional independence (κ; outlined: flagged)"
    if report.n_tested == 0:
        return _empty(title, f"No pair of workers shares {report.min_shared} items or more.")
    idx = shown_workers(report, max_workers)
    z = report.kappa_matrix[np.ix_(idx, idx)]
    labels = [f"{i + 1}. {wrap_label(report.worker_names[j], 22, 1)}" for i, j in enumerate(idx)]
    top = colour_top(z)
    n = idx.size
    # rounded first, then + 0.0: a κ of -0.001 reads 0.00, not "-0.00"
    shown = np.round(np.nan_to_num(z), 2) + 0.0
    text = np.where(np.isfinite(z), np.char.mod("%.2f", shown), "") if n <= 12 else None
    # a plain dict (as every builder's): :func:`figure` raises its fonts in presenter mode (a go.Heatmap it passed
    # through, and plotly fitted the cell numbers to 11-14 px)
    heat = dict(
        type="heatmap",
        z=z,
        x=list(range(1, n + 1)),
        y=labels,
        zmin=-top,
        zmax=top,
        colorscale="RdBu_r",
        colorbar=dict(title=dict(text="κ"), thickness=12),
        hovertemplate="%{y} with worker %{x}: κ = %{z:.3f}<extra></extra>",
        xgap=1,
        ygap=1,
        name="kappa",
    )
    if text is not None:
        heat |= dict(text=text, texttemplate="%{text}", textfont=dict(size=12))
    pos = {int(w): i for i, w in enumerate(idx)}
    cells = []
    for a, b in zip(report.a[report.flagged], report.b[report.flagged]):
        if int(a) in pos and int(b) in pos:
            for r, c in ((pos[int(a)], pos[int(b)]), (pos[int(b)], pos[int(a)])):
                cells.append((c - 0.5, c + 0.5, r - 0.5, r + 0.5))
    shapes = []
    if cells:
        shapes.append(
            dict(
                type="path",
                path=rect_path(cells),
                xref="x",
                yref="y",
                line=dict(color="black", width=2),
                name="flagged",
            )
        )
    shown = (
        "" if n == len(report.worker_names) else f" ({n} of {len(report.worker_names)} workers: the strongest pairs)"
    )
    fig = figure(
        [heat],
        _layout(
            title + shown,
            height,
            title_width=60,
            shapes=shapes,
            xaxis=dict(type="category", title="worker (number as in the rows)", side="bottom"),
            yaxis=dict(type="category", autorange="reversed"),
        ),
    )
    return fig
