"""GLAD, MACE and IBCC over 200 seeded random problems each: the objective (log-likelihood + log prior for GLAD and
MACE, whose M-steps are generalised; the ELBO for IBCC and MACE by variational Bayes) never decreases, nothing goes
non-finite; and the same with semi-supervised EM (a random fraction of the gold revealed) for every class model."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.engines.run import Run
from crowdlab.models import GLAD, IBCC, MACE, DawidSkene, MaceVB, MaceVBParams, OneCoin, TwoCoin
from tests.unit.test_em_monotone import N_PROBLEMS, _check_run, _problem

# issue 42: every warning is an error in the fuzz of the models (none may leak from a model)
pytestmark = pytest.mark.filterwarnings("error")


def _check_elbo_run(run: Run) -> None:
    """IBCC, MACE (VB): the ELBO after every half-step (objective and bound are the same number) never decreases."""
    h = run.history()
    elbo = h["objective"]
    assert np.all(np.isfinite(elbo))
    np.testing.assert_allclose(h["bound"], elbo)
    for s in run.snapshots:
        assert np.all(np.isfinite(s.q)) and np.allclose(s.q.sum(axis=1), 1.0)
        if isinstance(s.params, MaceVBParams):
            assert np.all(np.isfinite(s.params.ab)) and np.all(s.params.ab > 0) and np.all(s.params.c > 0)
        else:
            assert np.all(np.isfinite(s.params.A)) and np.all(s.params.A > 0)
    assert np.all(np.diff(elbo) >= -1e-9 * np.maximum(1.0, np.abs(elbo[:-1]))), np.diff(elbo).min()
    assert run.violations == []


@pytest.mark.parametrize("model_cls", [GLAD, MACE])
@pytest.mark.parametrize("hard", [False, True])
def test_generalised_em_objective_never_decreases(model_cls, hard):
    for seed in range(N_PROBLEMS):
        data = _problem(seed, binary=False)
        prior = (0.0, 0.5, 3.0)[seed % 3]
        init = ("majority", "random", "all_good")[(seed // 3) % 3]
        options = {"class_prior": ("uniform", "estimate")[seed % 2]}
        run = Run(data, model_cls(prior=prior, hard=hard, **options), init, seed=seed, max_iter=25)
        run.run()
        _check_run(run)


def test_ibcc_elbo_never_decreases():
    for seed in range(N_PROBLEMS):
        data = _problem(seed, binary=False)
        prior = (0.0, 0.5, 3.0)[seed % 3]
        init = ("majority", "random", "all_good")[(seed // 3) % 3]
        run = Run(data, IBCC(prior=prior, diagonal=(0.0, 1.0)[seed % 2]), init, seed=seed, max_iter=40)
        run.run()
        _check_elbo_run(run)


def test_mace_vb_elbo_never_decreases():
    for seed in range(N_PROBLEMS):
        data = _problem(seed, binary=False)
        options = {
            "prior": (0.0, 0.5, 3.0)[seed % 3],
            "class_prior": ("uniform", "estimate")[seed % 2],
            "theta_prior": ((0.5, 0.5), (1.0, 1.0), (2.0, 5.0), (0.1, 0.3))[seed % 4],
            "strategy_prior": (10.0, 0.5, 1.0)[(seed // 4) % 3],
        }
        init = ("majority", "random", "all_good")[(seed // 3) % 3]
        run = Run(data, MaceVB(**options), init, seed=seed, max_iter=40)
        run.run()
        _check_elbo_run(run)


@pytest.mark.parametrize("model_cls", [DawidSkene, OneCoin, TwoCoin, GLAD, MACE, IBCC, MaceVB])
def test_semi_supervised_never_decreases(model_cls):
    for seed in range(0, N_PROBLEMS, 4):
        data = _problem(seed, binary=model_cls is TwoCoin)
        reveal = (0.1, 0.5, 1.0, 0.0)[seed % 4 // 1 % 4]
        model = model_cls(prior=(0.0, 1.0)[seed % 2]).with_known(reveal=reveal or 0.3, seed=seed)
        run = Run(data, model, ("majority", "random")[seed % 2], seed=seed, max_iter=25)
        run.run()
        (_check_elbo_run if model_cls in (IBCC, MaceVB) else _check_run)(run)
        kc = model.known_classes(data)
        np.testing.assert_array_equal(run.labels()[kc >= 0], data.gold[kc >= 0])
