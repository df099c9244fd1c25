"""Lessons: the EM lecture told step by step on live runs (bad annotators, Dawid-Skene, what can go wrong),
then dependent data and error rates without labels."""

import streamlit as st

from crowdlab.ui import page_frame
from crowdlab.ui.lesson_page import lesson_page

page_frame("Lessons", icon=":material/school:")
st.caption(
    "Each step says what is about to happen, shows its formula, and has one button that does it on a live run; "
    "the lesson keeps its own data, so the working dataset of the other pages is untouched."
)
lesson_page()
