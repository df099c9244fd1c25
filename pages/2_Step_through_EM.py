"""Step through EM: pick a method, then move one half-step at a time (or run to convergence)."""

import streamlit as st

from crowdlab.ui import method_picker, page_frame, presenter, stepper_panel
from crowdlab.ui.method_options import options_panel

page_frame("Step through EM", icon=":material/stairs:", notice=False)
presenter.intro(
    "The E-step updates the posterior q over the true labels; the M-step re-estimates the parameters θ. "
    "Exact EM never lowers the objective, and the bound L(q, θ) touches it right after each E-step."
)
left, right = st.columns([2, 1])  # the method and its options, folded, side by side: one row
with left:
    method_picker()
with right:
    options_panel()
stepper_panel()
