"""Plotly figure builders: pure functions from results to ``go.Figure`` (no Streamlit).

One module a panel family: ``common`` (the conventions every figure shares), ``curves`` (objective, convergence,
metrics over iterations), ``matrices`` (confusion grids, posterior heatmaps), ``workers`` (reliability, priors,
the scorers), ``surface`` (likelihood contours), ``restarts`` (restarts and prior sweeps); the pages' own families:
``data``, ``models``, ``dependent``, ``online``, ``risk``. The run figures are re-exported here (``plots.X``).
"""

from crowdlab.errors import require_extra

require_extra("app", "crowdlab.plots (the figures)", ("plotly",))

from crowdlab.plots.common import COLOR_SCALE, half_step_positions, wrap_label, wrap_title
from crowdlab.plots.curves import convergence_chart, metric_curve, objective_curve, objective_with_gap
from crowdlab.plots.matrices import confusion_grid, parse_rect_path, posterior_heatmap, rect_path
from crowdlab.plots.restarts import objective_spread, prior_sweep_figure, restart_scatter
from crowdlab.plots.surface import objective_contour
from crowdlab.plots.workers import (
    annotator_bars,
    class_prior_bars,
    item_means_range,
    item_means_scatter,
    reliability_scatter,
    scores_vs_means,
    sens_spec_scatter,
)

__all__ = [
    "COLOR_SCALE",
    "annotator_bars",
    "class_prior_bars",
    "confusion_grid",
    "convergence_chart",
    "half_step_positions",
    "item_means_range",
    "item_means_scatter",
    "metric_curve",
    "objective_contour",
    "objective_curve",
    "objective_with_gap",
    "objective_spread",
    "parse_rect_path",
    "posterior_heatmap",
    "prior_sweep_figure",
    "reliability_scatter",
    "rect_path",
    "restart_scatter",
    "scores_vs_means",
    "sens_spec_scatter",
    "wrap_label",
    "wrap_title",
]
