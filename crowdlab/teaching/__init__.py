"""The lessons, the "what just happened" explanations, and the crowd simulators. Uses analysis and below; no
figures (those are :mod:`crowdlab.plots`) and no Streamlit (:mod:`crowdlab.ui`)."""
