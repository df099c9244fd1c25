"""Networks: crowd labels on a graph; step through MRF-crowd EM (ICM or mean field) and compare with i.i.d. DS."""

from crowdlab.ui import page_frame, presenter
from crowdlab.ui.networks_page import NET, networks_page

page_frame("Networks", icon=":material/hub:", dataset=NET.ensure)
presenter.intro(
    "When the items are nodes of a graph (friends, linked pages, neighbouring pixels), neighbours tend to share "
    "their true label. MRF-crowd EM (Traganitis & Giannakis, Alg. 3) puts a Potts prior on the labels: disagreeing "
    "neighbours cost δ each. Compare it with i.i.d. Dawid-Skene, which ignores the graph."
)
networks_page()
