"""The Export page's intervals from a little gold (issue 38 section 3): the accuracy of the exported labels and each
class's share over all items, prediction-powered (:mod:`crowdlab.analysis.ppi`) beside gold-only.

They sit in the Export page's Metrics tab, under the accuracy against gold: an analyst who takes the labels away
with gold on a few hundred items asks there "how accurate are these labels, and how many of each class are
there?", and the accuracy on the gold items alone is the number the intervals widen into one for every item.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from crowdlab.analysis.ppi import GoldIntervals, gold_intervals
from crowdlab.engines.run import Run
from crowdlab.io import safe


def _cell(est: float, low: float, high: float) -> str:
    return f"{est:.3f} [{low:.3f}, {high:.3f}]"


def interval_table(run: Run) -> tuple[pd.DataFrame, GoldIntervals]:
    """The shown table (quantity, gold only, model alone, PPI, width ratio as text) and the intervals behind it;
    ValueError where they do not apply (:func:`crowdlab.analysis.ppi.gold_intervals`)."""
    res = gold_intervals(run)
    t = res.table
    return pd.DataFrame(
        {
            "quantity": t["quantity"],
            "gold only (Wilson)": [_cell(*r) for r in t[["gold only", "gold only low", "gold only high"]].to_numpy()],
            "model alone": [f"{v:.3f}" for v in t["model alone"]],
            "prediction-powered": [_cell(*r) for r in t[["PPI", "PPI low", "PPI high"]].to_numpy()],
            "width ratio": [f"{v:.2f}" for v in t["width ratio"]],
        }
    ), res


def gold_intervals_section(run: Run) -> None:
    """The section; nothing for continuous scores or data without gold; a caption when the run has seen the gold."""
    data = run.data
    if data.is_continuous or not data.has_gold or run.posterior is None:
        return
    st.markdown("**With a little gold: intervals over all items**")
    try:
        shown, res = interval_table(run)
    except ValueError as exc:
        st.caption(safe.md(str(exc)))
        return
    st.dataframe(shown, hide_index=True, width="stretch", key="export.gold_intervals")
    st.caption(
        f"95% intervals for the {data.n_items:,} items, from the gold on {res.n_gold:,} of them. *Gold only*: "
        "Wilson's interval on the gold items. *Prediction-powered* (Angelopoulos et al. 2023): the posterior's "
        "estimate over every item, corrected by its error on the gold items; its width against the gold-only one "
        "is the *width ratio*. *Model alone* trusts the posterior and has no interval: where it differs from "
        "the other two, the posterior is miscalibrated. " + " ".join(f"Note: {safe.md(n)}." for n in res.notes)
    )
