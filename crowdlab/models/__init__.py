"""The model families. ``MODELS`` maps a short key to the class; ``make_model`` builds one with options."""

from __future__ import annotations

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.dawid_skene import DawidSkene
from crowdlab.models.ebcc import EBCC, EbccParams, EbccPosterior
from crowdlab.models.glad import GLAD, GladParams
from crowdlab.models.hmm import HMMCrowd, HMMParams, HMMPosterior
from crowdlab.models.ibcc import IBCC, IbccParams
from crowdlab.models.mace import MACE, MaceParams, MaceVB, MaceVBParams
from crowdlab.models.majority import MajorityVote
from crowdlab.models.mrf import MRFParams, MRFPosterior, NetworkCrowd
from crowdlab.models.one_coin import OneCoin
from crowdlab.models.online import ONLINE_MODELS, OnlineDawidSkene, OnlineOneCoin
from crowdlab.models.ordinal import OrdinalDS
from crowdlab.models.params import ClassParams
from crowdlab.models.raykar import RaykarModel, RaykarParams
from crowdlab.models.scores import GoodBadScores, ScoreParams
from crowdlab.models.two_coin import TwoCoin

MODELS = {
    "mv": MajorityVote,
    "ds": DawidSkene,
    "one_coin": OneCoin,
    "two_coin": TwoCoin,
    "glad": GLAD,
    "mace": MACE,
    "mace_vb": MaceVB,
    "ibcc": IBCC,
    "ebcc": EBCC,
    "scores": GoodBadScores,
    "hmm": HMMCrowd,
    "mrf": NetworkCrowd,
    "ordinal": OrdinalDS,
}
ALIASES = {
    "dawid_skene": "ds",
    "majority": "mv",
    "onecoin": "one_coin",
    "twocoin": "two_coin",
    "bayesian_ds": "ibcc",
    "vb_ds": "ibcc",
    "correlated": "ebcc",
    "ordinal_ds": "ordinal",
}
CLASS_PRIOR_MODELS = ("glad", "mace", "mace_vb")
"""Models whose true-class prior is a choice: ``class_prior="uniform"`` (fixed, as in their papers; the default) or
``"estimate"`` (in closed form, like Dawid-Skene's). Uniform costs on skewed classes: on the product set (88 % of one
class) MACE gets 0.838 with it and 0.937 estimated (benchmarks/README.md)."""


def estimates_class_prior(model) -> bool:
    """True when ``model`` is one of CLASS_PRIOR_MODELS set to estimate its class prior (not the papers' uniform)."""
    return (
        getattr(model, "info", None) is not None
        and model.info.key in CLASS_PRIOR_MODELS
        and (model.class_prior == "estimate")
    )


SEMI_SUPERVISED = ("known", "reveal", "reveal_seed")
"""``make_model`` options of semi-supervised EM (``LatentModel.with_known``), for every item-latent class model."""
FEATURE_MODELS = {"raykar": RaykarModel}
"""Models that also need item features (``make_model(key, features=...)``); not in ``MODELS``, whose entries are
built from the labels alone, and listed by ``applicable_models`` only when features are given."""
# ONLINE_MODELS ("online_ds", "online_one_coin"; crowdlab.models.online): online EM, run by
# crowdlab.engines.online.OnlineRun rather than crowdlab.engines.run.Run; built by make_model and cl.fit, not listed by
# applicable_models (the Step and Compare pages step batch EM; the "Batch vs online" page steps these)


def make_model(key: str, **options):
    """Build model ``key`` (see ``MODELS``) with options such as ``prior=`` and ``hard=``.

    Semi-supervised EM: ``known=`` (item -> class, or an (n_items,) array of codes with -1 for unknown) and/or
    ``reveal=`` (a fraction of the gold labels, drawn with ``reveal_seed=``) fix those items' classes in every
    E-step (see ``crowdlab.models.base.LatentModel.with_known``).
    """
    key = ALIASES.get(key, key)
    semi = {k: options.pop(k) for k in SEMI_SUPERVISED if k in options}
    if key in ONLINE_MODELS:
        options.pop("hard", None)  # online EM is soft
        return ONLINE_MODELS[key](**options)
    if key in FEATURE_MODELS:
        if options.get("features") is None:
            raise ModelError(f"Method {key!r} needs item features (features=...; see crowdlab.io.features).")
        model = FEATURE_MODELS[key](**options)
    elif key not in MODELS:
        raise ModelError(f"Unknown method {key!r}; choose one of {', '.join([*MODELS, *ONLINE_MODELS])}.")
    elif MODELS[key] is MajorityVote:  # no EM options; only its tie rule
        model = MajorityVote(**{k: v for k, v in options.items() if k in ("tie_break", "tie_seed")})
    else:
        model = MODELS[key](**options)
    if semi.get("known") is not None or semi.get("reveal"):
        if not hasattr(model, "with_known"):
            raise ModelError(f"{model.info.title} has no semi-supervised version (known= / reveal=).")
        model.with_known(semi.get("known"), semi.get("reveal"), semi.get("reveal_seed", 0))
    return model


def applicable_models(data: Annotations, features=None) -> list[str]:
    """Keys of the models that apply to ``data`` (classes vs scores, binary-only models); with ``features``
    (`crowdlab.io.features.ItemFeatures` aligned with ``data``'s items) also the feature models (Raykar)."""
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
        if cls is OrdinalDS and not (data.ordinal and not data.is_soft and not data.response_names):
            continue  # ratings read with kind="ordinal" (crowdlab.io.data.read_annotations)
        if data.response_names and not getattr(cls, "reads_responses", False):
            continue  # no place for a "can't tell" response (crowdlab.engines.run.check_responses)
        out.append(key)
    if features is not None and not data.is_continuous and data.n_classes == 2:
        if getattr(features, "item_names", None) == data.item_names:
            out.extend(FEATURE_MODELS)
    return out


__all__ = [
    "CLASS_PRIOR_MODELS",
    "estimates_class_prior",
    "FEATURE_MODELS",
    "MODELS",
    "ONLINE_MODELS",
    "ClassParams",
    "DawidSkene",
    "EBCC",
    "EbccParams",
    "EbccPosterior",
    "GLAD",
    "GladParams",
    "GoodBadScores",
    "HMMCrowd",
    "HMMParams",
    "HMMPosterior",
    "IBCC",
    "IbccParams",
    "MACE",
    "MaceParams",
    "MaceVB",
    "MaceVBParams",
    "MRFParams",
    "MRFPosterior",
    "MajorityVote",
    "NetworkCrowd",
    "OneCoin",
    "OnlineDawidSkene",
    "OnlineOneCoin",
    "OrdinalDS",
    "RaykarModel",
    "RaykarParams",
    "ScoreParams",
    "TwoCoin",
    "applicable_models",
    "make_model",
]
