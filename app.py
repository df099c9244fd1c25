"""crowdlab home: what it is, the current dataset, a bundled-dataset picker, and where to go next."""

import streamlit as st

from crowdlab.teaching.lessons import LESSONS, short_title
from crowdlab.ui import dataset_summary, page_frame, sample_picker

data = page_frame("crowdlab", icon=":material/science:", needs_data=False)

st.markdown(
    "crowdlab is a laboratory for the **EM algorithm on crowd labels**: many people label the same items, "
    "and EM estimates both the true labels and how reliable each labeller is. "
    "Step through EM one half-step at a time and watch the objective climb, the confusion matrices sharpen "
    "and the accuracy against gold change. "
    "Start with a bundled dataset below; every page works on the current dataset shown here and in the sidebar."
)

sample_picker()  # the full width: the longest dataset name is whole at 1024 px
if data is not None:  # None: the bundled sample is over a limit the app was started with (the frame says which)
    dataset_summary(data)

st.subheader("Where to go next")
st.page_link("pages/0_Lessons.py", label="Lessons", icon=":material/school:")
st.caption("Guided lessons on live runs: " + " · ".join(short_title(lesson) for lesson in LESSONS.values()) + ".")
st.page_link("pages/1_Data.py", label="Data", icon=":material/table_chart:")
st.caption("Upload your own labels (long or wide CSV, optional gold) or simulate a crowd; see who labelled what.")
st.page_link("pages/2_Step_through_EM.py", label="Step through EM", icon=":material/stairs:")
st.caption("E-step, M-step, Back, scrub and run to convergence, with the objective and the bound L(q, θ).")
st.page_link("pages/3_Compare_methods.py", label="Compare methods", icon=":material/compare_arrows:")
st.caption("Every method on the current data: accuracy, macro F and log loss against gold; where they disagree.")
st.page_link("pages/4_Priors_and_initialisations.py", label="Priors and initialisations", icon=":material/tune:")
st.caption("Restart EM from many starts and sweep the prior strength: how many optima, and which is right?")
st.page_link("pages/5_Export.py", label="Export", icon=":material/download:")
st.caption("Posteriors, labels, worker parameters and the objective history as files; the Python that reproduces them.")

st.subheader("Dependent data")
st.caption("These pages keep their own datasets, so the dataset above stays as it is.")
st.page_link("pages/6_Sequences.py", label="Sequences", icon=":material/timeline:")
st.caption("Labels that form Markov chains (e.g. named entities): HMM-crowd EM, its transition matrix, Viterbi paths.")
st.page_link("pages/7_Networks.py", label="Networks", icon=":material/hub:")
st.caption("Items on a graph: MRF-crowd EM with ICM or mean-field E-steps, against i.i.d. Dawid-Skene.")

st.subheader("Estimation and learning")
st.page_link("pages/8_Error_rates_without_labels.py", label="Error rates without labels", icon=":material/rule:")
st.caption("Classifiers' error rates from unlabelled outputs: identifiability, Fisher information, figures.")
st.page_link("pages/9_Learning_from_crowds.py", label="Learning from crowds", icon=":material/scatter_plot:")
st.caption("Raykar's EM learns a classifier and every annotator's sensitivity and specificity; the boundary moves.")
st.page_link("pages/10_Batch_vs_online.py", label="Batch vs online", icon=":material/stream:")
st.caption("Online EM reads a few items at a time: step it beside batch EM; the step size and hashing workers.")

st.subheader("In the lecture hall")
st.page_link("pages/11_Class.py", label="Class", icon=":material/groups:")
st.caption("The class is the crowd: students label from their phones, then EM finds out who was careless.")
