"""Lessons: the EM lecture told step by step on live runs (bad annotators, Dawid-Skene, what can go wrong), then
dependent data, error rates without labels, whom to trust and annotators who copy each other."""

from crowdlab.ui import page_frame
from crowdlab.ui.lesson_page import lesson_data, lesson_page

page_frame("Lessons", icon=":material/school:", dataset=lesson_data)
lesson_page()
