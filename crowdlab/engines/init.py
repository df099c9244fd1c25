"""Initialisations: where an EM run starts.

Every strategy returns an :class:`Start`: a posterior ``q0``, parameters ``params0`` and which half-step comes
next. Posterior-based starts set ``params0 = m_step(q0)`` (next: E); parameter-based starts set
``q0 = e_step(params0)`` (next: M). Either way the pair is a valid EM state, so the bound F(q, theta) and the
objective are defined from the first snapshot on.

- ``"majority"`` (default; Raykar et al. 2010, Traganitis & Giannakis): q0 = soft majority vote. For the scores model,
  whose latent variable is per annotator, it is the same as "all_good".
- ``"all_good"`` (the EM lecture, "Initialize parameters: estimate parameters assuming all annotators are good"):
  scores model: w_a = 1 for everyone, mu and sigma from all scores, pi_good = 0.5. Class models: q0 is the
  posterior when every worker is assumed right with probability ``good_accuracy`` (0.8) and errors spread
  evenly (a sharpened majority vote).
- ``"random"``: q0 rows drawn from a flat Dirichlet with a seeded generator (scores: w_a ~ U(0, 1)).
- ``"params"``: user-given parameters (``params=``), validated; q0 = e_step(params).
- ``"posterior"``: start from another model's result (``q0=`` its posterior), e.g. DS started from one-coin.
- ``"moments"`` (Traganitis & Giannakis, Sec. 3.2, Alg. 2; :mod:`crowdlab.engines.moments`): a parameter start, pi,
Gamma from
  moment matching (eq. (17)); q0 = e_step(params0), next: M. Per model: Dawid-Skene takes (pi, Gamma) as they
  are; one-coin takes theta_m = sum_k pi_k Gamma_m(k, k) (its pi, unless the model fixes the class prior);
  two-coin takes alpha_m = Gamma_m(1, 1), beta_m = Gamma_m(0, 0), p = pi_1; the HMM adds T from the lagged
  moments (eqs. (21)-(23)) with pi0 = pi; the MRF takes Gamma with a uniform pi (Alg. 4). GLAD, MACE and IBCC,
  whose parameters are not (pi, Gamma), start from Dawid-Skene's posterior at the moment estimates (q0, then
  their own M-step; next: E). The scores model and majority vote raise ModelError. Entries of Gamma, pi (and T)
  below ``MOMENT_FLOOR`` are lifted to it (then renormalised): the simplex projection sets small entries to
  exactly zero, and one label the moments call impossible would otherwise veto a class in the first E-step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import one_hot_argmax
from crowdlab.models.majority import vote_fractions
from crowdlab.models.one_coin import one_coin_gamma

INITS = {
    "majority": "Majority vote (soft)",
    "all_good": "Assume everyone is good",
    "random": "Random (seeded)",
    "params": "Given parameters",
    "posterior": "Another model's result",
    "moments": "Moment matching (Traganitis & Giannakis)",  # Sec. 3.2; short enough for a select box
}
MOMENT_FLOOR = 1e-3  # lower bound on the moment-matched Gamma entries used as an EM start


@dataclass(frozen=True, eq=False)
class Start:
    q0: object  # the posterior: an (n, K) array, or the model's posterior object (HMM: with pairwise xi)
    params0: object
    next_kind: str  # "E" or "M"
    description: str


def initialise(
    model,
    data: Annotations,
    strategy: str = "majority",
    *,
    seed: int | None = 0,
    params=None,
    q0: np.ndarray | None = None,
    q0_name: str | None = None,
    good_accuracy: float = 0.8,
) -> Start:
    """Build the starting state of an EM run (see the module docstring for the strategies). ``q0_name`` names the
    model whose posterior ``q0`` is (the stepper shows it; default "Another model's result")."""
    rng = np.random.default_rng(seed)
    continuous = model.info.latent == "annotator"
    if strategy == "params":
        if params is None:
            raise ModelError("Initialisation 'params' needs parameters (params=...).")
        _validate_params(params)
        return Start(model.e_step(data, params), params, "M", INITS["params"])
    if strategy == "moments" and not moment_posterior_start(model):
        params0, desc = _moment_params(model, data, seed)
        return Start(model.e_step(data, params0), params0, "M", desc)
    if strategy == "moments":  # GLAD, MACE, IBCC: parametrised otherwise than by (pi, Gamma)
        q = _moment_posterior(data, seed)
        desc = INITS["moments"] + ": Dawid-Skene's posterior at the moment estimates"
    elif strategy == "posterior":
        if q0 is None:
            raise ModelError("Initialisation 'posterior' needs a posterior (q0=...).")
        q = _validate_q(np.asarray(q0, dtype=np.float64), data, model)
        desc = q0_name or INITS["posterior"]
    elif strategy == "random":
        n = data.n_workers if continuous else data.n_items
        k = 2 if continuous else data.n_classes
        q = rng.dirichlet(np.ones(k), size=n)
        desc = f"{INITS['random']} (seed {seed})"
    elif strategy == "all_good" or (strategy == "majority" and continuous):
        if continuous:
            q, params0 = model.all_good(data)
            return Start(q, params0, "E", INITS["all_good"])
        else:
            K = data.n_classes
            gamma = one_coin_gamma(np.full(data.n_workers, good_accuracy), K)
            if data.response_names:  # a non-class response is equally likely whatever the class: it says nothing
                R = len(data.response_names)
                gamma = np.concatenate([0.9 * gamma, np.full((data.n_workers, R, K), 0.1 / R)], axis=1)
            from crowdlab.models.base import softmax_rows
            from crowdlab.models.dawid_skene import class_log_joint

            q = softmax_rows(class_log_joint(data, np.full(K, 1.0 / K), gamma))
        desc = INITS["all_good"]
    elif strategy == "majority":
        q = vote_fractions(data)
        desc = INITS["majority"]
    else:
        raise ModelError(f"Unknown initialisation {strategy!r}; choose one of {', '.join(INITS)}.")
    if getattr(model, "hard", False):
        q = one_hot_argmax(np.log(np.maximum(q, 1e-300)))
    post = model.as_posterior(data, q)
    return Start(post, model.m_step(data, post), "E", desc)


def moment_posterior_start(model) -> bool:
    """True for the class models whose parameters are not (pi, Gamma) or a map of them (GLAD, MACE, IBCC): moment
    matching starts them from Dawid-Skene's posterior at the moment estimates, then their own M-step."""
    from crowdlab.models.dawid_skene import DawidSkene
    from crowdlab.models.hmm import HMMCrowd
    from crowdlab.models.majority import MajorityVote
    from crowdlab.models.mrf import NetworkCrowd
    from crowdlab.models.one_coin import OneCoin
    from crowdlab.models.raykar import RaykarModel
    from crowdlab.models.two_coin import TwoCoin

    own = (DawidSkene, OneCoin, TwoCoin, HMMCrowd, NetworkCrowd, RaykarModel, MajorityVote)
    return not isinstance(model, own) and model.info.latent == "item" and model.info.data_kind == "classes"


def _moment_posterior(data: Annotations, seed: int | None) -> np.ndarray:
    """(N, K): Dawid-Skene's posterior at the moment-matched (pi, Gamma) (floored like `_moment_params`)."""
    from crowdlab.models.base import softmax_rows
    from crowdlab.models.dawid_skene import DawidSkene, class_log_joint

    params, _ = _moment_params(DawidSkene(), data, seed)
    return softmax_rows(class_log_joint(data, params.pi, params.gamma))


def _moment_params(model, data: Annotations, seed: int | None) -> tuple[object, str]:
    """Starting parameters of ``model`` from moment matching (see the module docstring), and a description."""
    from crowdlab.engines.moments import hmm_moment_params, moment_estimates
    from crowdlab.models.hmm import HMMCrowd, HMMParams
    from crowdlab.models.majority import MajorityVote
    from crowdlab.models.mrf import MRFParams, NetworkCrowd
    from crowdlab.models.one_coin import OneCoin
    from crowdlab.models.two_coin import TwoCoin

    if isinstance(model, MajorityVote) or model.info.latent == "annotator" or data.is_continuous:
        raise ModelError("moment matching applies to class labels")
    est = moment_estimates(data, seed=0 if seed is None else int(seed))
    K = est.pi.size
    gamma = np.maximum(est.gamma, MOMENT_FLOOR)
    gamma = gamma / gamma.sum(axis=1, keepdims=True)
    pi = np.maximum(est.pi, MOMENT_FLOOR)
    pi = pi / pi.sum()
    desc = INITS["moments"]
    if isinstance(model, OneCoin):
        theta = np.diagonal(gamma, axis1=1, axis2=2) @ pi
        return model.params_from(pi if model.class_prior is None else model.class_prior, theta), desc
    if isinstance(model, TwoCoin):
        return model.params_from(pi[1], gamma[:, 1, 1], gamma[:, 0, 0]), desc
    if isinstance(model, HMMCrowd):
        T = np.maximum(hmm_moment_params(data, params=est).T, MOMENT_FLOOR)
        T = T / T.sum(axis=0, keepdims=True)
        return HMMParams(pi=pi, gamma=gamma, T=T), desc + ", T from lagged moments (Sec. 4.2)"
    if isinstance(model, NetworkCrowd):
        return MRFParams(pi=np.full(K, 1.0 / K), gamma=gamma), desc
    return model.params_from(pi, gamma) if hasattr(model, "params_from") else est, desc


def _validate_q(q: np.ndarray, data: Annotations, model) -> np.ndarray:
    n = data.n_workers if model.info.latent == "annotator" else data.n_items
    k = 2 if model.info.latent == "annotator" else data.n_classes
    if q.shape != (n, k):
        raise ModelError(f"starting posterior has shape {q.shape}; this data needs {(n, k)}.")
    if not np.all(np.isfinite(q)) or (q < 0).any():
        raise ModelError("starting posterior must be finite and non-negative.")
    s = q.sum(axis=1, keepdims=True)
    if (s <= 0).any():
        raise ModelError("every row of the starting posterior needs some mass.")
    return q / s


def _validate_params(params) -> None:
    gamma = getattr(params, "gamma", None)
    pi = getattr(params, "pi", None)
    if gamma is not None:
        g = np.asarray(gamma)
        if not np.all(np.isfinite(g)) or (g < 0).any() or not np.allclose(g.sum(axis=1), 1.0, atol=1e-6):
            raise ModelError("given confusion matrices must be non-negative with columns summing to 1.")
    if pi is not None:
        p = np.asarray(pi)
        if (p < 0).any() or not np.isclose(p.sum(), 1.0, atol=1e-6):
            raise ModelError("given class prior must be non-negative and sum to 1.")
