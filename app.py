"""crowdlab home: what it is, the current dataset, a bundled-dataset picker, and where to go next."""

import streamlit as st

from crowdlab.ui import dataset_summary, page_frame, sample_picker

data = page_frame("crowdlab", icon=":material/science:")

st.markdown(
    "crowdlab is a laboratory for the **EM algorithm on crowd labels**: many people label the same items, "
    "and EM estimates both the true labels and how reliable each labeller is. "
    "Step through EM one half-step at a time and watch the objective climb, the confusion matrices sharpen "
    "and the accuracy against gold change. "
    "Start with a bundled dataset below; every page works on the current dataset shown here and in the sidebar."
)

left, right = st.columns([3, 2])
with left:
    dataset_summary(data)
with right:
    st.markdown("**Pick a dataset**")
    sample_picker()

st.subheader("Where to go next")
st.page_link("pages/2_Step_through_EM.py", label="Step through EM", icon=":material/stairs:")
st.caption("E-step, M-step, Back, scrub and run to convergence, with the objective and the bound F(q, θ).")
