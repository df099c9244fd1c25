"""Learning a classifier from crowds: Raykar et al.'s EM, with the decision boundary moving at every step."""

from crowdlab.ui import page_frame, presenter
from crowdlab.ui.raykar_page import RAY, raykar_page

page_frame("Learning a classifier from crowds", icon=":material/scatter_plot:", dataset=RAY.ensure)
presenter.intro(
    "Items have features x; several annotators label them, some well, some badly. EM (Raykar et al. 2010) learns "
    "a logistic classifier σ(wᵀx) and every annotator's sensitivity α and specificity β together: the E-step "
    "weighs the labels by who gave them and by what the classifier thinks; the M-step re-fits the classifier to "
    "those soft labels. Majority vote trusts everyone equally."
)
raykar_page()
