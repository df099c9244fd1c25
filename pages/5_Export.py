"""Export: posteriors, hard labels, worker parameters, the objective history, and the Python that reproduces the run."""

from crowdlab.ui import page_frame
from crowdlab.ui.export_page import export_page

page_frame("Export", icon=":material/download:")
export_page()
