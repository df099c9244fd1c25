"""crowdlab: a laboratory for the EM algorithm on crowd labels.

import crowdlab as cl
data = cl.read_annotations("labels.csv", gold="gold.csv")
run = cl.fit(data, "ds")
run.labels(), run.posterior, run.params
"""

from crowdlab.api import fit
from crowdlab.data import Annotations
from crowdlab.em import Run, Snapshot
from crowdlab.errors import DataError, ModelError
from crowdlab.frames import (
    GLAD,
    IBCC,
    KOS,
    MACE,
    MMSR,
    DawidSkene,
    MajorityVote,
    OneCoin,
    TwoCoin,
    Wawa,
    ZeroBasedSkill,
    aggregate,
    proba,
)
from crowdlab.models import MODELS, applicable_models, make_model


def __getattr__(name):  # readers live in crowdlab.data; resolved lazily while that module grows
    if name in ("read_annotations", "read_gold", "to_long_dataframe"):
        from crowdlab import data

        return getattr(data, name)
    raise AttributeError(name)


__all__ = [
    "GLAD",
    "IBCC",
    "KOS",
    "MACE",
    "MMSR",
    "DawidSkene",
    "MajorityVote",
    "OneCoin",
    "TwoCoin",
    "Wawa",
    "ZeroBasedSkill",
    "aggregate",
    "proba",
    "MODELS",
    "Annotations",
    "DataError",
    "ModelError",
    "Run",
    "Snapshot",
    "applicable_models",
    "fit",
    "make_model",
]
__version__ = "0.1.0"
