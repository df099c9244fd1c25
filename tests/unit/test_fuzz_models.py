"""EM fuzz for every model: thousands of generated problems (tests/unit/fuzz_problems.py), adversarial ones
included; no decrease of an exact objective, nothing non-finite, posteriors on the simplex.

Marked ``slow`` (CI runs it). The counts are chosen so the whole file takes about a minute on two cores. Every
warning is an error here (issue 42: OrdinalDS printed "overflow encountered in exp"): no warning leaks from a model.
"""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.engines.run import Run
from crowdlab.io.features import features_from_array
from crowdlab.models import DawidSkene, GoodBadScores, HMMCrowd, MajorityVote, NetworkCrowd, OneCoin, TwoCoin
from crowdlab.models.hmm import HMMParams
from crowdlab.models.majority import majority_labels, majority_posterior, vote_fractions
from crowdlab.models.raykar import RaykarModel
from tests.unit.fuzz_problems import (
    abstain_problem,
    check_run,
    class_problem,
    network_problem,
    score_problem,
    sequence_problem,
    soft_problem,
)

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("error")]

N_CLASS = 150  # per (model, soft/hard)
N_SEQ = 250  # per soft/hard
N_NET = 250  # per E-step variant
N_SCORES = 400  # per soft/hard
N_RAYKAR = 200
N_MAJORITY = 500
N_FISHER = 80
N_SOFT = 120  # per model
N_ABSTAIN = 80  # per (model, soft/hard) besides Dawid-Skene's N_CLASS


@pytest.mark.parametrize("model_cls", [DawidSkene, OneCoin, TwoCoin])
@pytest.mark.parametrize("hard", [False, True])
def test_class_models_adversarial(model_cls, hard):
    for seed in range(N_CLASS):
        data = class_problem(seed, K=2 if model_cls is TwoCoin else None)
        prior = (0.0, 0.5, 3.0)[seed % 3]
        init = ("majority", "random", "all_good")[(seed // 3) % 3]
        run = Run(data, model_cls(prior=prior, hard=hard), init, seed=seed, max_iter=30)
        run.run()
        check_run(run)


@pytest.mark.parametrize("prior", [0.0, 1.0])
def test_ordinal_on_adversarial_problems(prior):
    """The ordinal model (issue 42: 9 of 1,200 such runs overflowed in exp before its spread was capped)."""
    from crowdlab.models.ordinal import MAX_SPREAD, MIN_SPREAD, OrdinalDS

    for seed in range(N_CLASS * 2):
        data = class_problem(seed)
        init = ("majority", "random", "all_good")[seed % 3]
        run = Run(data, OrdinalDS(prior=prior), init, seed=seed, max_iter=30)
        run.run()
        check_run(run)
        spread = run.params.extra["spread"]
        assert np.all((spread >= MIN_SPREAD) & (spread <= MAX_SPREAD))


@pytest.mark.parametrize("model_key", ["ds", "one_coin", "two_coin", "glad", "mace", "mace_vb", "ibcc", "ebcc"])
def test_class_models_on_soft_votes(model_key):
    """Soft votes (weighted observations) on every adversarial design: nothing non-finite, and the weighted
    objective (the ELBO for the variational ones) never falls for all eight here."""
    from crowdlab.models import make_model

    for seed in range(N_SOFT // 2 if model_key == "ebcc" else N_SOFT):
        data = soft_problem(seed, K=2 if model_key == "two_coin" else None)
        opts = {} if model_key in ("mace_vb", "ibcc", "ebcc") else {"prior": (0.0, 0.5, 3.0)[seed % 3]}
        init = ("majority", "random", "all_good")[(seed // 3) % 3]
        run = Run(data, make_model(model_key, **opts), init, seed=seed, max_iter=30)
        run.run()
        check_run(run)


@pytest.mark.parametrize(
    ("model_key", "hard"),
    [(k, h) for k in ("ds", "one_coin", "two_coin", "mace") for h in (False, True)]
    + [("ibcc", False), ("ebcc", False), ("mace_vb", False)],
)
def test_class_models_with_abstentions(model_key, hard):
    """A "can't tell" response beside the classes, for every model with a place for it: nothing non-finite, the
    objective (the ELBO for IBCC and EBCC) monotone, columns over K + 1 responses on the simplex, majority vote
    counting class votes only; a worker who always abstains on some seeds (every fifth)."""
    from crowdlab.models import make_model

    n = N_CLASS if model_key == "ds" else N_ABSTAIN
    for seed in range(n):
        data = abstain_problem(seed, K=2 if model_key == "two_coin" else None)
        init = ("majority", "random", "all_good")[(seed // 3) % 3]
        opts = {} if model_key in ("ibcc", "ebcc", "mace_vb") else {"prior": (0.0, 0.5, 3.0)[seed % 3], "hard": hard}
        run = Run(data, make_model(model_key, **opts), init, seed=seed, max_iter=30)
        run.run()
        check_run(run)
        assert run.params.gamma.shape[1] == data.n_classes + 1
        np.testing.assert_allclose(run.params.gamma.sum(axis=1), 1.0, atol=1e-9)
        np.testing.assert_allclose(vote_fractions(data).sum(axis=1), 1.0)


def test_majority_vote_on_soft_votes():
    for seed in range(N_MAJORITY):
        data = soft_problem(seed)
        for q in (majority_posterior(data), vote_fractions(data)):
            assert np.all(np.isfinite(q)) and q.min() >= 0
            np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-12)
        lab = majority_labels(data)
        v = data.vote_counts
        assert np.all(v[np.arange(data.n_items), lab] >= v.max(axis=1) - 1e-12 * np.maximum(v.max(axis=1), 1))


@pytest.mark.parametrize("hard", [False, True])
def test_hmm(hard):
    for seed in range(N_SEQ):
        data = sequence_problem(seed)
        model = HMMCrowd(prior=(0.0, 1.0)[(seed // 2) % 2], hard=hard)
        if seed % 4 == 3:  # deterministic given parameters: exact zeros in pi0, T and Gamma (the log-space path)
            rng = np.random.default_rng(seed)
            K, M = data.n_classes, data.n_workers
            pi = np.eye(K)[int(rng.integers(K))]
            T = np.eye(K)[:, rng.permutation(K)]
            gamma = np.stack([np.eye(K)[:, rng.permutation(K)] for _ in range(M)])
            run = Run(data, model, "params", params=HMMParams(pi=pi, gamma=gamma, T=T), max_iter=30)
        else:
            run = Run(data, model, ("majority", "random")[seed % 2], seed=seed, max_iter=30)
        run.run()
        check_run(run)


@pytest.mark.parametrize(("e_step", "hard"), [("mean_field", False), ("icm", True)])
def test_mrf_monotone_variants(e_step, hard):
    for seed in range(N_NET):
        data = network_problem(seed)
        delta = None if seed % 4 == 3 else (None, 0.0, 1e3, "labels")[(seed // 4) % 4]
        model = NetworkCrowd(delta=delta, e_step=e_step, hard=hard, prior=(0.0, 1.0)[seed % 2], seed=seed)
        run = Run(data, model, ("majority", "random")[(seed // 2) % 2], seed=seed, max_iter=20)
        run.run()
        check_run(run, bound_below_objective=False)


def test_mrf_soft_icm_stays_finite():
    """Alg. 3 with soft q (not guaranteed monotone): still nothing non-finite, q on the simplex."""
    for seed in range(N_NET // 3):
        data = network_problem(seed)
        run = Run(data, NetworkCrowd(e_step="icm", seed=seed), seed=seed, max_iter=15)
        run.run()
        check_run(run, bound_below_objective=False)


@pytest.mark.parametrize("hard", [False, True])
def test_scores_model(hard):
    for seed in range(N_SCORES):
        data = score_problem(seed)
        init = ("all_good", "random")[seed % 2]
        run = Run(data, GoodBadScores(prior=(0.0, 1.0)[(seed // 2) % 2], hard=hard), init, seed=seed, max_iter=30)
        run.run()
        check_run(run)
        p = run.params
        lo, hi = p.low, p.high
        assert np.all((p.mu >= lo) & (p.mu <= hi)) and 0 < p.sigma < np.inf and 0 <= p.pi_good <= 1


def test_raykar():
    for seed in range(N_RAYKAR):
        data = class_problem(seed, K=2, max_items=25, max_workers=4)
        rng = np.random.default_rng(seed)
        d_raw = int(rng.integers(1, 4))
        X = rng.normal(size=(data.n_items, d_raw)) * (1.0, 1e6, 1e300, 1e-300, 1.0)[seed % 5]
        if seed % 4 == 1 and data.gold is not None:  # separable: the first feature is the truth
            X[:, 0] = np.where(data.gold == 1, 1.0, -1.0)
        feats = features_from_array(
            X, data.item_names, add_intercept=bool(seed % 2 == 0), standardize=bool(seed % 3 == 0)
        )
        model = RaykarModel(feats, l2=(0.0, 0.5, 2.0)[seed % 3], prior=(0.0, 1.0)[(seed // 3) % 2], hard=seed % 7 == 0)
        run = Run(data, model, ("majority", "random")[(seed // 2) % 2], seed=seed, max_iter=25)
        run.run()
        check_run(run)
        assert np.all(np.isfinite(run.params.w))


def test_majority_vote():
    for seed in range(N_MAJORITY):
        data = class_problem(seed)
        for q in (majority_posterior(data), vote_fractions(data)):
            assert np.all(np.isfinite(q)) and q.min() >= 0
            np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-12)
        lab = majority_labels(data)
        assert lab.shape == (data.n_items,) and lab.min() >= 0 and lab.max() < data.n_classes
        top = data.vote_counts.max(axis=1)
        assert np.all(data.vote_counts[np.arange(data.n_items), lab] == top)  # the label has the most votes
        run = Run(data, MajorityVote())
        assert run.history()["objective"].size == 1 and run.violations == []


def test_fisher_intervals_finite():
    """Wald intervals from the observed information: finite for scores of any size and adversarial crowds."""
    from crowdlab.analysis.fisher import worker_intervals

    for seed in range(N_FISHER):
        for data, model in ((score_problem(seed), GoodBadScores()), (class_problem(seed), DawidSkene())):
            run = Run(data, model, "all_good" if data.is_continuous else "majority", max_iter=30)
            run.run()
            df = worker_intervals(run)
            num = df[["estimate", "se", "lower", "upper"]].to_numpy(np.float64)
            assert np.all(np.isfinite(num)), (seed, df)
            assert np.all(df["lower"] <= df["estimate"] + 1e-12 * np.abs(df["estimate"]))
