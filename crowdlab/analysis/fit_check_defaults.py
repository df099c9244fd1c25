"""The defaults of :func:`crowdlab.analysis.fit_check.fit_check`, in a module of their own so that the command line
can show them in ``crowdlab compare --help`` without importing pandas (``crowdlab --help`` stays fast)."""

from __future__ import annotations

CHECK_MODELS = ("ds", "one_coin", "two_coin", "glad", "mace", "mace_vb", "ibcc", "ebcc", "ordinal")
"""The class models whose held-out labels and replicates :func:`fit_check` can score (an item's class is the latent
variable and the labels are independent given it); majority vote has no model of the labels, and HMM, MRF and the
scores model are not item-class models."""
FOLDS = 5
EPSILON = 0.01
REPLICATES = 200
