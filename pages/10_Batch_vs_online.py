"""Batch vs online EM: the same data through batch Dawid-Skene EM and online (stepwise) EM, side by side."""

from crowdlab.ui import page_frame, presenter
from crowdlab.ui.online_page import INTRO, ONL, online_page

page_frame("Batch vs online EM", icon=":material/stream:", dataset=ONL.ensure)
presenter.intro(INTRO)
online_page()
