"""Error rates without labels: classifiers' accuracies from unlabelled outputs (Donmez, Lebanon & Balasubramanian
2010), live."""

from crowdlab.ui import page_frame, presenter
from crowdlab.ui.risk_page import risk_page

page_frame("Error rates without labels", icon=":material/rule:")
presenter.intro(
    "k classifiers label n examples nobody has labelled. If the class balance p(y) is known, the classifiers' "
    "accuracies θⱼ, hence their error rates 1 − θⱼ, can be estimated from the outputs alone by maximum likelihood "
    "(Donmez, Lebanon & Balasubramanian 2010). Classes are 1 and 2, as in the paper."
)
risk_page()
