"""Batch vs online EM: the same data through batch Dawid-Skene EM and online (stepwise) EM, side by side."""

from crowdlab.ui import page_frame, presenter
from crowdlab.ui.online_page import ONL, online_page

page_frame("Batch vs online EM", icon=":material/stream:", dataset=ONL.ensure)
presenter.intro(
    "Batch EM reads every item before it changes the parameters. Online EM (an online-EM blog post; stepwise EM, "
    "Cappé & Moulines 2009) reads a few items, finds their posteriors q_i with the parameters fixed, moves the "
    "confusion matrices and the class prior a step η_t towards what those items say, and forgets q_i. "
    "The x axis counts items seen, so one batch iteration is one pass."
)
online_page()
