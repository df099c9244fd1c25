"""The dependence check (crowdlab/analysis/dependence.py) and the correlated-crowd simulator: exact tails, the
leave-pair-out expectation against a loop, the effective numbers on known matrices, and on simulated cliques
(Dawid-Skene fitted): the clique flagged at rho >= 0.3 in >= 95 of 100 crowds, a false flag at rho = 0 in <= 5;
EBCC (Li, Rubinstein & Cohn 2019) as accurate as Dawid-Skene without copying and better with it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binom

import crowdlab as cl
from crowdlab.analysis.dependence import (
    dependence_check,
    effective_annotators,
    holm,
    pair_tables,
    poisson_binomial_sf,
)
from crowdlab.engines.run import Run
from crowdlab.io.data import Annotations
from crowdlab.io.metrics import accuracy
from crowdlab.models import DawidSkene
from crowdlab.models.majority import majority_labels
from crowdlab.teaching.simulate import simulate_correlated


def test_poisson_binomial_tail_exact():
    p = np.array([[0.3] * 12 + [0.0] * 3, [0.9] * 15])
    out = poisson_binomial_sf(p, np.array([12, 15]), np.array([5.0, 14.0]))
    np.testing.assert_allclose(out, [binom.sf(4, 12, 0.3), binom.sf(13, 15, 0.9)], rtol=1e-12)
    pv = np.array([0.1, 0.5, 0.8, 0.35])
    brute = sum(np.prod(np.where(s, pv, 1 - pv)) for s in itertools.product([0, 1], repeat=4) if sum(s) >= 2)
    assert poisson_binomial_sf(pv[None], np.array([4]), np.array([2.0]))[0] == pytest.approx(brute, rel=1e-12)


def test_holm():
    np.testing.assert_allclose(holm(np.array([0.01, 0.04, 0.03, 0.5])), [0.04, 0.09, 0.09, 0.5])


def test_effective_numbers_on_known_matrices():
    assert effective_annotators(np.full((4, 4), np.nan))["eigen"] == pytest.approx(4.0)
    assert effective_annotators(np.ones((4, 4)))["eigen"] == pytest.approx(1.0)
    two_and_one = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]], float)
    e = effective_annotators(two_and_one, np.ones(3))
    assert e["eigen"] == pytest.approx(1.8) and e["kish"] == pytest.approx(3.0) and e["weighted"] == pytest.approx(1.8)
    assert effective_annotators(np.full((3, 3), np.nan), np.array([1.0, 1.0, 0.0]))["kish"] == pytest.approx(2.0)


def test_expectation_matches_a_loop_with_repeated_labels():
    rng = np.random.default_rng(4)
    N, M, K = 40, 4, 3
    item = np.repeat(np.arange(N), M)
    worker = np.tile(np.arange(M), N)
    extra = rng.choice(item.size, 15, replace=False)  # some workers label an item twice
    item, worker = np.r_[item, item[extra]], np.r_[worker, worker[extra]]
    label = rng.integers(0, K, item.size)
    data = Annotations(item, worker, label, [str(n) for n in range(N)], ["a", "b", "c", "d"], ["x", "y", "z"])
    run = Run(data, DawidSkene(prior=1.0), "majority", max_iter=50)
    run.run()
    rep = dependence_check(data, run.params, run.posterior, min_shared=1)
    assert rep.n_tested == 6
    for a, b, o, e, s in zip(rep.a, rep.b, rep.observed, rep.expected, rep.shared):
        obs, exp = pair_tables(data, run.params, run.posterior, a, b)
        assert obs.sum() == pytest.approx(s) and exp.sum() == pytest.approx(s)
        assert np.trace(obs) == pytest.approx(o) and np.trace(exp) == pytest.approx(e)
    assert not rep.exact[np.isin(rep.a, worker[extra]) | np.isin(rep.b, worker[extra])].all()
    frame = rep.frame()
    assert list(frame["p-value"]) == sorted(frame["p-value"])
    assert "pairs_flagged" in rep.to_dict() and "tested for copying" in rep.summary()


def test_simulator_shapes_and_rho_zero_is_independent():
    sim = simulate_correlated(200, 3, (3, 2), 4, rho=1.0, seed=1)
    d = sim.annotations
    assert d.n_workers == 8 and d.n_obs == 200 * 8 and list(sim.clique) == [-1] * 3 + [0] * 3 + [1] * 2
    assert sim.copying_pairs().sum() == 2 * (3 + 1)
    lab = np.zeros((200, 8), int)
    lab[d.item, d.worker] = d.label
    np.testing.assert_array_equal(lab[:, 3], sim.shared[0])  # rho = 1: every member says the shared label
    np.testing.assert_array_equal(lab[:, 4], lab[:, 5])
    np.testing.assert_allclose(sim.gamma.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="rho is a probability"):
        simulate_correlated(10, 2, (2,), rho=1.5)


def _check(rho: float, seed: int):
    sim = simulate_correlated(3000, 8, (4,), 3, rho=rho, seed=seed)
    run = Run(sim.annotations, DawidSkene(), "majority", max_iter=300)
    run.run()
    rep = dependence_check(sim.annotations, run.params, run.posterior)
    cp = sim.copying_pairs()[rep.a, rep.b]
    return bool(rep.flagged[cp].any()), bool(rep.flagged[~cp].any())


@pytest.mark.slow
@pytest.mark.parametrize("rho", [0.0, 0.3, 0.6, 0.9])
def test_check_flags_cliques_in_95_of_100_crowds(rho):
    res = np.array([_check(rho, seed) for seed in range(100)])
    if rho == 0:
        assert res.any(axis=1).sum() <= 5  # any flag is a false one
    else:
        assert res[:, 0].sum() >= 95


def test_check_flags_a_strong_clique_quickly():
    hit, false = _check(0.6, 0)
    assert hit and not false
    hit, false = _check(0.0, 1)
    assert not hit and not false


def test_ebcc_beats_dawid_skene_on_a_strong_clique():
    """EBCC's variational fit has local optima that depend on its random start (``seed``): of three starts, the one
    with the highest ELBO (here 0.898 against the worst start's 0.824, whose ELBO is 11 nats lower) beats
    Dawid-Skene (0.816), which follows the clique."""
    sim = simulate_correlated(500, 6, (4,), 3, rho=0.9, seed=0)
    ds = accuracy(cl.fit(sim.annotations, "ds").labels(), sim.truth)
    runs = [cl.fit(sim.annotations, "ebcc", model_options={"seed": s}) for s in range(3)]
    best = max(runs, key=lambda r: r.objective_history()[-1])
    assert accuracy(best.labels(), sim.truth) > ds + 0.05


@pytest.mark.slow
def test_ebcc_against_dawid_skene_on_cliques():
    mean = {}
    for rho in (0.0, 0.3, 0.6, 0.9):
        acc = {"ds": [], "ebcc": [], "mv": []}
        for seed in range(20):
            sim = simulate_correlated(500, 6, (4,), 3, rho=rho, seed=seed)
            for m in ("ds", "ebcc"):
                acc[m].append(accuracy(cl.fit(sim.annotations, m).labels(), sim.truth))
            acc["mv"].append(accuracy(majority_labels(sim.annotations), sim.truth))
        mean[rho] = {k: float(np.mean(v)) for k, v in acc.items()}
    assert mean[0.0]["ebcc"] >= mean[0.0]["ds"] - 0.005
    assert mean[0.6]["ebcc"] > mean[0.6]["ds"] and mean[0.9]["ebcc"] > mean[0.9]["ds"]
    assert mean[0.9]["ebcc"] > mean[0.9]["ds"] + 0.05  # Dawid-Skene follows the clique (0.77 against 0.90)


def test_the_llm_judge_panel_copying_pair_is_flagged_given_the_truth_and_absorbed_without_it():
    """The two qwen2.5 judges (step, self-consistency) agree on 352 of 400 trajectories. Given the truth (Dawid-Skene
    with every item's gold as known) they are the one pair flagged; fitted without gold, Dawid-Skene takes their
    shared answer for the truth and rates them near-perfect, so nothing is left to flag: the limit the copy lesson
    teaches (agreement mistaken for accuracy)."""
    data = cl.load_sample("judges")
    qwen = {"selfcons3:qwen2.5:14b", "step:qwen2.5:14b"}
    given = cl.dependence(cl.fit(data, "ds", known=np.asarray(data.gold)))
    flagged = given.frame(top=10)
    flagged = flagged[flagged["Holm p"] <= given.level]
    assert given.n_flagged == 1 and {flagged.iloc[0]["worker a"], flagged.iloc[0]["worker b"]} == qwen
    blind = cl.dependence(cl.fit(data, "ds"))
    assert blind.n_flagged == 0
