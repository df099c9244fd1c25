"""crowdlab: a laboratory for the EM algorithm on crowd labels.

import crowdlab as cl
data = cl.read_annotations("labels.csv", gold="gold.csv")
run = cl.fit(data, "ds")
run.labels(), run.posterior, run.params
"""

from crowdlab.engines.fit import fit
from crowdlab.engines.run import Run, Snapshot
from crowdlab.errors import DataError, ModelError, NotFittedError
from crowdlab.io.annotations import Annotations
from crowdlab.models import MODELS, applicable_models, make_model

_FRAMES = (
    "EBCC",
    "GLAD",
    "IBCC",
    "MACE",
    "KOS",
    "MMSR",
    "DawidSkene",
    "MajorityVote",
    "OneCoin",
    "TwoCoin",
    "Wawa",
    "ZeroBasedSkill",
    "aggregate",
    "proba",
)


def __getattr__(name):
    """The DataFrame API (``crowdlab.aggregate``, ``crowdlab.DawidSkene``, ...) and the readers, imported on first use:
    ``import crowdlab`` itself does not load pandas."""
    if name in _FRAMES:
        from crowdlab import frames

        return getattr(frames, name)
    if name in ("read_annotations", "read_gold", "to_long_dataframe"):
        from crowdlab.io import data

        return getattr(data, name)
    if name in ("dependence", "dependence_check"):
        from crowdlab.analysis import dependence

        return getattr(dependence, name)
    if name in ("fit_check", "FitCheck"):
        from crowdlab.analysis import fit_check

        return getattr(fit_check, name)
    if name in ("gold_intervals", "ppi_mean"):
        from crowdlab.analysis import ppi

        return getattr(ppi, name)
    if name in ("load_sample", "SAMPLES"):
        from crowdlab.io import samples

        return getattr(samples, name)
    raise AttributeError(f"module 'crowdlab' has no attribute {name!r}")


def __dir__():
    return sorted(
        set(globals())
        | set(_FRAMES)
        | {"read_annotations", "read_gold", "to_long_dataframe", "load_sample", "SAMPLES", "dependence", "fit_check"}
        | {"gold_intervals", "ppi_mean"}
    )


__all__ = [
    *_FRAMES,
    "MODELS",
    "Annotations",
    "DataError",
    "ModelError",
    "NotFittedError",
    "Run",
    "Snapshot",
    "SAMPLES",
    "load_sample",
    "applicable_models",
    "dependence",
    "fit",
    "fit_check",
    "gold_intervals",
    "make_model",
    "ppi_mean",
]
__version__ = "0.9.0"
