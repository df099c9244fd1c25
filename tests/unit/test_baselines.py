"""Baselines that are not EM (Wawa, Zero-Based Skill, KOS, M-MSR): hand-worked examples and the papers' properties."""

import numpy as np
import pytest

from crowdlab.errors import ModelError
from crowdlab.io.data import Annotations
from crowdlab.io.metrics import accuracy
from crowdlab.models import baselines as B
from crowdlab.teaching.simulate import simulate_crowd


def _ann(rows, classes=("a", "b")):
    items = [r[0] for r in rows]
    workers = [r[1] for r in rows]
    labels = [r[2] for r in rows]
    return Annotations.from_labels(items, workers, labels, classes=classes)


# three workers on four items: w1 and w2 agree with the majority everywhere, w3 twice out of four
TOY = [
    ("i1", "w1", "a"), ("i1", "w2", "a"), ("i1", "w3", "b"),
    ("i2", "w1", "b"), ("i2", "w2", "b"), ("i2", "w3", "b"),
    ("i3", "w1", "a"), ("i3", "w2", "b"), ("i3", "w3", "b"),
    ("i4", "w1", "a"), ("i4", "w3", "b"),
]  # fmt: skip


def test_wawa_by_hand():
    data = _ann(TOY)
    r = B.wawa(data)
    # majority: i1 a, i2 b, i3 b, i4 tie (a 1, b 1) -> most frequent class overall: b (7 of 11)
    # agreement: w1 says a,b,a,a vs a,b,b,b -> 2/4; w2 a,b,b -> 3/3; w3 b,b,b,b -> 3/4
    np.testing.assert_allclose(r.skills, [0.5, 1.0, 0.75])
    # weighted vote: i1 a: .5+1 = 1.5 vs b .75 -> a; i3: a .5 vs b 1.75 -> b; i4: a .5 vs b .75 -> b
    assert [data.class_names[k] for k in r.labels] == ["a", "b", "b", "b"]
    np.testing.assert_allclose(r.scores.sum(axis=1), 1.0)
    assert r.scores[0, 0] > r.scores[0, 1]


def test_zero_based_skill_moves_towards_agreement():
    data = _ann(TOY)
    r = B.zero_based_skill(data, n_iter=200)
    # at the fixed point each skill equals the worker's agreement with the weighted vote (labels a, b, b, b)
    np.testing.assert_allclose(r.skills, [0.5, 1.0, 0.75], atol=1e-4)
    assert [data.class_names[k] for k in r.labels] == ["a", "b", "b", "b"]


def _kos_reference(data, n_iter, seed):
    """Karger, Oh & Shah's Algorithm 1 written with explicit loops over edges (independent of the vectorised one)."""
    A = [1.0 if lab == 1 else -1.0 for lab in data.label]
    edges = list(zip(data.item.tolist(), data.worker.tolist()))
    y = list(np.random.default_rng(seed).normal(1.0, 1.0, size=len(edges)))
    for _ in range(n_iter):
        x = [sum(A[f] * y[f] for f, (h, _) in enumerate(edges) if h == i and f != e) for e, (i, _) in enumerate(edges)]
        y = [sum(A[f] * x[f] for f, (_, k) in enumerate(edges) if k == j and f != e) for e, (_, j) in enumerate(edges)]
    total = [sum(A[e] * y[e] for e, (i2, _) in enumerate(edges) if i2 == i) for i in range(data.n_items)]
    return np.sign(total)


def test_kos_equals_the_papers_algorithm_written_out():
    sim = simulate_crowd(30, 6, 2, labels_per_item=3, seed=4)
    data = sim.annotations
    for n_iter in (1, 2, 5):
        r = B.kos(data, n_iter=n_iter, seed=7)
        ref = _kos_reference(data, n_iter, seed=7)
        decided = ref != 0
        assert np.array_equal(r.labels[decided], (ref[decided] > 0).astype(np.int32))
    assert r.hard and np.all(r.scores.sum(axis=1) == 1)


def test_kos_binary_only():
    data = _ann([("i", "w", "a"), ("i", "v", "b"), ("j", "w", "c")], classes=("a", "b", "c"))
    with pytest.raises(ModelError, match="binary"):
        B.kos(data)


def test_kos_recovers_truth_on_a_spammer_hammer_crowd():
    rng = np.random.default_rng(0)
    N, M, per = 600, 60, 9
    truth = rng.integers(0, 2, N)
    hammer = rng.random(M) < 0.5
    items = np.repeat(np.arange(N), per)
    workers = np.concatenate([rng.choice(M, per, replace=False) for _ in range(N)])
    right = np.where(hammer[workers], True, rng.random(items.size) < 0.5)
    labels = np.where(right, truth[items], 1 - truth[items])
    data = Annotations(items, workers, labels, tuple(map(str, range(N))), tuple(map(str, range(M))), ("0", "1"))
    acc = accuracy(B.kos(data, n_iter=10).labels, truth)
    assert acc > 0.97  # hammers are always right, spammers random: KOS finds the hammers


def test_mmsr_recovers_accuracies_and_flags_an_adversary():
    rng = np.random.default_rng(1)
    N, M, K = 3000, 12, 3
    p = np.linspace(0.55, 0.95, M)
    p[0] = 0.05  # an adversary: almost always wrong
    truth = rng.integers(0, K, N)
    items = np.repeat(np.arange(N), M)
    workers = np.tile(np.arange(M), N)
    right = rng.random(items.size) < p[workers]
    wrong = (truth[items] + rng.integers(1, K, items.size)) % K
    labels = np.where(right, truth[items], wrong)
    data = Annotations(items, workers, labels, tuple(map(str, range(N))), tuple(map(str, range(M))), ("0", "1", "2"))
    r = B.mmsr(data)
    np.testing.assert_allclose(r.skills[1:], p[1:], atol=0.04)
    assert r.skills[0] < 1.0 / K  # below chance: its vote counts against the class it names
    assert accuracy(r.labels, truth) > 0.95


@pytest.mark.parametrize("seed", range(5))
def test_mmsr_with_three_workers_finds_the_adversary(seed):
    # two good workers and one adversary of the same strength: with signs started at all +1 the good workers'
    # votes cancelled and the adversary came out as an expert (0.92) on some draws
    rng = np.random.default_rng(seed)
    N = 200
    truth = rng.integers(0, 2, N)
    p = np.array([0.9, 0.9, 0.1])
    items = np.repeat(np.arange(N), 3)
    workers = np.tile(np.arange(3), N)
    right = rng.random(items.size) < p[workers]
    labels = np.where(right, truth[items], 1 - truth[items])
    data = Annotations(items, workers, labels, tuple(map(str, range(N))), ("a", "b", "c"), ("0", "1"))
    r = B.mmsr(data)
    assert r.skills[2] < 0.5 < min(r.skills[0], r.skills[1])
    assert accuracy(r.labels, truth) > 0.9


def test_mmsr_follows_two_agreeing_workers_against_one_who_always_disagrees():
    rows = [(f"i{i}", w, lab) for i in range(6) for w, lab in (("w1", "ab"[i % 2]), ("w2", "ab"[i % 2]))]
    rows += [(f"i{i}", "w3", "ba"[i % 2]) for i in range(6)]
    data = _ann(rows)
    r = B.mmsr(data)
    assert [data.class_names[k] for k in r.labels] == ["ab"[i % 2] for i in range(6)]
    assert r.skills[2] < 0.5 < r.skills[0]


def test_agreement_matrix_by_hand():
    data = _ann(TOY)
    C, common = B.agreement_matrix(data)
    # w1-w2 share i1..i3, agree on i1, i2 -> 2/3; w1-w3 share i1..i4, agree on i2 -> 1/4; w2-w3 agree on i2, i3
    np.testing.assert_allclose(C[0, 1], 2 / 3)
    np.testing.assert_allclose(C[0, 2], 1 / 4)
    np.testing.assert_allclose(C[1, 2], 2 / 3)
    assert common[0, 2] == 4 and common[0, 0] == 0


def test_baselines_on_bluebirds_beat_chance_and_stay_finite(bluebirds):
    for key, (_, f) in B.BASELINES.items():
        r = f(bluebirds)
        assert np.all(np.isfinite(r.scores)) and np.all(np.isfinite(r.skills)), key
        np.testing.assert_allclose(r.scores.sum(axis=1), 1.0)
        assert accuracy(r.labels, bluebirds.gold) > 0.65, key


def test_options_are_checked_in_one_line():
    data = _ann(TOY)
    with pytest.raises(ValueError, match="lr_steps must be at least 1, not 0"):  # was a ZeroDivisionError
        B.zero_based_skill(data, lr_steps=0)
    with pytest.raises(TypeError, match="n_iter must be a whole number, not 1.5"):
        B.zero_based_skill(data, n_iter=1.5)
    with pytest.raises(ValueError, match="lr must be a finite number above 0"):
        B.zero_based_skill(data, lr=-1.0)
    with pytest.raises(ValueError, match="n_iter must be at least 1"):
        B.kos(_ann(TOY), n_iter=-1)
    with pytest.raises(ValueError, match="n_iter must be at least 1"):
        B.mmsr(data, n_iter=0)
    with pytest.raises(TypeError, match="seed must be a whole number"):
        B.mmsr(data, seed="a")
    with pytest.raises(TypeError, match=r"has no option 'n_iterations'; its options: n_iter, tol, seed"):
        B.check_options("mmsr", {"n_iterations": 5})


def test_mmsr_on_one_class_gives_that_class():
    data = _ann([("i1", "w1", "a"), ("i1", "w2", "a"), ("i2", "w1", "a"), ("i2", "w3", "a")], classes=("a",))
    r = B.mmsr(data)  # was LinAlgError: Eigenvalues did not converge
    assert r.labels.tolist() == [0, 0] and np.all(r.scores == 1.0) and np.all(r.skills == 1.0)
