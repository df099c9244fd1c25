"""Plotly figure builders: pure functions from results to ``go.Figure`` (no Streamlit).

``run``: figures of an EM run (objective, metrics, confusion matrices, posteriors, ...);
``data``: pictures of a label set and of method comparisons.
"""

from crowdlab.plots.run import *  # noqa: F403
from crowdlab.plots.run import __all__ as _run_all

__all__ = list(_run_all)
