"""Priors and initialisations: restarts from several starts and prior-strength sweeps (stoppable)."""

from crowdlab.ui import page_frame, presenter, priors_lab

page_frame("Priors and initialisations", icon=":material/tune:")
presenter.intro(
    "EM climbs to a local maximum that depends on where it starts, and a prior (pseudo-counts) changes which "
    "maximum is best. Restart from several initialisations, or sweep the prior strength, and compare the ends."
)
priors_lab()
