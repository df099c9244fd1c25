"""EM never decreases its objective, on 200 seeded random problems per exact model, and nothing goes non-finite."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.engines.run import Run
from crowdlab.io.data import Annotations
from crowdlab.models import DawidSkene, GoodBadScores, OneCoin, TwoCoin
from tests.unit.problems import DESIGNS, random_problem

N_PROBLEMS = 200


def _check_run(run: Run) -> None:
    h = run.history()
    obj, bound = h["objective"], h["bound"]
    assert np.all(np.isfinite(obj)) and np.all(np.isfinite(bound))
    for s in run.snapshots:
        assert np.all(np.isfinite(s.q))
        assert np.allclose(s.q.sum(axis=1), 1.0)
    tol = 1e-9 * np.maximum(1.0, np.abs(obj[:-1]))
    assert np.all(np.diff(obj) >= -tol), f"objective fell: {np.diff(obj).min()}"
    assert np.all(np.diff(bound) >= -1e-9 * np.maximum(1.0, np.abs(bound[:-1])))
    if not run.model.hard:
        # the bound never exceeds the objective and touches it after every exact E-step
        assert np.all(bound <= obj + 1e-8 * np.maximum(1.0, np.abs(obj)))
        e = h["kind"] == "E"
        np.testing.assert_allclose(bound[e], obj[e], rtol=1e-9, atol=1e-8)
    assert run.violations == []


def _problem(seed: int, binary: bool) -> Annotations:
    rng = np.random.default_rng(seed)
    K = 2 if binary else int(rng.integers(2, 5))
    design = DESIGNS[seed % len(DESIGNS)]
    return random_problem(rng, int(rng.integers(3, 60)), int(rng.integers(1, 8)), K, design)


@pytest.mark.parametrize("model_cls", [DawidSkene, OneCoin, TwoCoin])
@pytest.mark.parametrize("hard", [False, True])
def test_objective_never_decreases(model_cls, hard):
    for seed in range(N_PROBLEMS):
        data = _problem(seed, binary=model_cls is TwoCoin)
        prior = (0.0, 0.5, 3.0)[seed % 3]
        init = ("majority", "random", "all_good")[(seed // 3) % 3]
        run = Run(data, model_cls(prior=prior, hard=hard), init, seed=seed, max_iter=40)
        run.run()
        _check_run(run)


def _score_problem(seed: int) -> Annotations:
    rng = np.random.default_rng(seed)
    N, M = int(rng.integers(2, 40)), int(rng.integers(1, 8))
    ii, aa = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    keep = rng.random(ii.size) < (0.4 if seed % 2 else 1.0)
    keep[np.arange(N) * M] = True
    item, worker = ii.ravel()[keep], aa.ravel()[keep]
    mu = rng.uniform(0.2, 0.8, N)
    good = rng.random(M) < 0.6
    v = np.where(good[worker], np.clip(mu[item] + rng.normal(0, 0.05, item.size), 0, 1), rng.random(item.size))
    if seed % 7 == 0:
        v = np.round(v, 1)  # ties and identical scores
    return Annotations(item, worker, None, [f"i{n}" for n in range(N)], [f"a{m}" for m in range(M)], value=v)


@pytest.mark.parametrize("hard", [False, True])
def test_scores_objective_never_decreases(hard):
    for seed in range(N_PROBLEMS):
        data = _score_problem(seed)
        init = ("all_good", "random")[seed % 2]
        run = Run(data, GoodBadScores(prior=(0.0, 1.0)[seed % 2], hard=hard), init, seed=seed, max_iter=40)
        run.run()
        _check_run(run)


def test_violation_is_recorded_not_hidden():
    """A model whose M-step is sabotaged shows the drop in Run.violations and on the snapshot."""

    class Broken(DawidSkene):
        def m_step(self, data, q):
            p = super().m_step(data, q)
            from crowdlab.models.params import ClassParams

            return ClassParams(p.pi, 0.5 * p.gamma + 0.5 / data.n_classes)

    rng = np.random.default_rng(0)
    data = random_problem(rng, 40, 5, 3, "dense")
    run = Run(data, Broken())
    for _ in range(5):
        run.step()
    assert run.violations, "the drop must be recorded"
    assert any(s.violation for s in run.snapshots)
