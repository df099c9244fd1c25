"""Lessons: the EM lecture told step by step on live runs (bad annotators, Dawid-Skene, what can go wrong),
then dependent data and error rates without labels."""

import streamlit as st

from crowdlab.ui import page_frame
from crowdlab.ui.lesson_page import lesson_data, lesson_page

page_frame("Lessons", icon=":material/school:", dataset=lesson_data)
st.caption("One button per step does what the text describes, on a live run (the lesson keeps its own data).")
lesson_page()
