"""Sequences: crowd labels that form Markov chains; step through HMM-crowd EM and compare it with i.i.d. methods."""

from crowdlab.ui import page_frame, presenter
from crowdlab.ui.sequences_page import SEQ, sequences_page

page_frame("Sequences", icon=":material/timeline:", dataset=SEQ.ensure)
presenter.intro(
    "When the items form sequences (the words of a sentence, the frames of a video), neighbouring true labels "
    "depend on each other. HMM-crowd EM (Traganitis & Giannakis, Alg. 1) learns the transition matrix T along with "
    "every worker's confusion matrix: forward-backward is its exact E-step, so the log-likelihood never falls."
)
sequences_page()
