"""The model families. ``MODELS`` maps a short key to the class; ``make_model`` builds one with options."""

from __future__ import annotations

from crowdlab.data import Annotations
from crowdlab.errors import ModelError
from crowdlab.models.dawid_skene import DawidSkene
from crowdlab.models.hmm import HMMCrowd, HMMParams, HMMPosterior
from crowdlab.models.majority import MajorityVote
from crowdlab.models.mrf import MRFParams, MRFPosterior, NetworkCrowd
from crowdlab.models.one_coin import OneCoin
from crowdlab.models.online import ONLINE_MODELS, OnlineDawidSkene, OnlineOneCoin
from crowdlab.models.params import ClassParams
from crowdlab.models.raykar import RaykarModel, RaykarParams
from crowdlab.models.scores import GoodBadScores, ScoreParams
from crowdlab.models.two_coin import TwoCoin

MODELS = {
    "mv": MajorityVote,
    "ds": DawidSkene,
    "one_coin": OneCoin,
    "two_coin": TwoCoin,
    "scores": GoodBadScores,
    "hmm": HMMCrowd,
    "mrf": NetworkCrowd,
}
ALIASES = {"dawid_skene": "ds", "majority": "mv", "onecoin": "one_coin", "twocoin": "two_coin"}
FEATURE_MODELS = {"raykar": RaykarModel}
"""Models that also need item features (``make_model(key, features=...)``); not in ``MODELS``, whose entries are
built from the labels alone, and listed by ``applicable_models`` only when features are given."""
# ONLINE_MODELS ("online_ds", "online_one_coin"; crowdlab.models.online): online EM, run by
# crowdlab.online_run.OnlineRun rather than crowdlab.em.Run; built by make_model and cl.fit, not listed by
# applicable_models (the Step and Compare pages step batch EM; the "Batch vs online" page steps these)


def make_model(key: str, **options):
    """Build model ``key`` (see ``MODELS``) with options such as ``prior=`` and ``hard=``."""
    key = ALIASES.get(key, key)
    if key in ONLINE_MODELS:
        options.pop("hard", None)  # online EM is soft
        return ONLINE_MODELS[key](**options)
    if key in FEATURE_MODELS:
        if options.get("features") is None:
            raise ModelError(f"Method {key!r} needs item features (features=...; see crowdlab.features).")
        return FEATURE_MODELS[key](**options)
    if key not in MODELS:
        raise ModelError(f"Unknown method {key!r}; choose one of {', '.join([*MODELS, *ONLINE_MODELS])}.")
    cls = MODELS[key]
    if cls is MajorityVote:
        return cls()
    return cls(**options)


def applicable_models(data: Annotations, features=None) -> list[str]:
    """Keys of the models that apply to ``data`` (classes vs scores, binary-only models); with ``features``
    (`crowdlab.features.ItemFeatures` aligned with ``data``'s items) also the feature models (Raykar)."""
    out = []
    for key, cls in MODELS.items():
        info = cls.info
        if data.is_continuous != (info.data_kind == "continuous"):
            continue
        if info.binary_only and data.n_classes != 2:
            continue
        if cls is HMMCrowd and not data.is_sequential:
            continue
        if cls is NetworkCrowd and data.graph is None:
            continue
        out.append(key)
    if features is not None and not data.is_continuous and data.n_classes == 2:
        if getattr(features, "item_names", None) == data.item_names:
            out.extend(FEATURE_MODELS)
    return out


__all__ = [
    "FEATURE_MODELS",
    "MODELS",
    "ONLINE_MODELS",
    "ClassParams",
    "DawidSkene",
    "GoodBadScores",
    "HMMCrowd",
    "HMMParams",
    "HMMPosterior",
    "MRFParams",
    "MRFPosterior",
    "MajorityVote",
    "NetworkCrowd",
    "OneCoin",
    "OnlineDawidSkene",
    "OnlineOneCoin",
    "RaykarModel",
    "RaykarParams",
    "ScoreParams",
    "TwoCoin",
    "applicable_models",
    "make_model",
]
