"""Data: upload a label file, simulate a crowd or the lecture's scorers, or pick a bundled set; then look at it."""

from crowdlab.ui import page_frame
from crowdlab.ui.data_page import data_page

data = page_frame("Data", icon=":material/table_chart:", needs_data=False)
data_page(data)
