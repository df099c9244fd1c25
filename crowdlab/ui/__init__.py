"""The Streamlit layer (the only package code that imports streamlit): state machine, page frame, stepper."""

from crowdlab.errors import extra_message, missing_modules

if missing_modules("app"):  # streamlit runs the app, so it is there; plotly may not be: one line, no traceback
    import streamlit as st

    st.error(extra_message("app", "The crowdlab app", missing_modules("app")))
    st.stop()

from crowdlab.ui.charts import use_light_template

use_light_template()  # before any figure is built: 0.2 kB of template a figure instead of Streamlit's 3.7 kB

from crowdlab.ui.frame import dataset_summary, page_frame, sample_picker, use_sample
from crowdlab.ui.priors_page import priors_lab
from crowdlab.ui.stepper import method_picker, stepper_panel

__all__ = [
    "dataset_summary",
    "method_picker",
    "page_frame",
    "priors_lab",
    "sample_picker",
    "stepper_panel",
    "use_sample",
]
