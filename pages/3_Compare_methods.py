"""Compare methods: run every applicable method on the current dataset; scores against gold and agreement."""

from crowdlab.ui import page_frame
from crowdlab.ui.compare_page import compare_page

data = page_frame("Compare methods", icon=":material/compare_arrows:")
compare_page(data)
