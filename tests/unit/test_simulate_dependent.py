"""Simulators of dependent labels: Markov-chain sequences, stochastic block models (Traganitis & Giannakis, Sec. 6)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdlab.teaching.simulate import simulate_sbm, simulate_sequences, sticky_transitions


def test_sequences_follow_the_transition_matrix():
    T = sticky_transitions(3, 0.9)
    sim = simulate_sequences(400, 50, 3, 4, transition=T, seed=2)
    a = sim.annotations
    assert a.is_sequential and a.n_sequences == 400 and a.n_items == 20000
    st = a.sequence_starts
    prev = np.ones(a.n_items, dtype=bool)
    prev[st[:-1]] = False
    cur = np.flatnonzero(prev)
    counts = np.zeros((3, 3))
    np.add.at(counts, (sim.truth[cur], sim.truth[cur - 1]), 1)
    np.testing.assert_allclose(counts / counts.sum(axis=0), T, atol=0.02)
    assert a.labels_per_item.min() == 4  # default: every worker labels every position


def test_sequences_with_varied_lengths_and_missing_labels():
    sim = simulate_sequences(5, [1, 3, 7, 2, 9], 2, 6, labels_per_item=2, seed=0)
    a = sim.annotations
    assert list(np.diff(a.sequence_starts)) == [1, 3, 7, 2, 9]
    assert (a.labels_per_item == 2).all()
    assert a.item_names[:5] == ("0:0", "1:0", "1:1", "1:2", "2:0")
    again = simulate_sequences(5, [1, 3, 7, 2, 9], 2, 6, labels_per_item=2, seed=0)
    np.testing.assert_array_equal(again.annotations.label, a.label)


def test_random_transitions_are_column_stochastic():
    sim = simulate_sequences(3, 4, 4, 2, self_transition=None, seed=5)
    np.testing.assert_allclose(sim.T.sum(axis=0), 1.0)
    with pytest.raises(ValueError, match="columns summing to 1"):
        simulate_sequences(3, 4, 2, 2, transition=np.ones((2, 2)))


def test_sbm_hits_the_average_degree_and_is_assortative():
    net = simulate_sbm(20000, 4, 3, avg_degree=5.0, ratio=0.05, seed=1)
    A = net.adjacency
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0
    assert A.nnz / 20000 == pytest.approx(5.0, rel=0.05)
    r, c = A.nonzero()
    same = (net.truth[r] == net.truth[c]).mean()
    # with p_out = 0.05 p_in and 4 equal blocks, the share of within-block edges is 1 / (1 + 0.05 * 3) = 0.87
    assert same == pytest.approx(1 / (1 + 0.05 * 3), abs=0.02)
    assert net.annotations.graph is A


def test_sbm_rejects_impossible_degree():
    with pytest.raises(ValueError, match="too high"):
        simulate_sbm(10, 2, 2, avg_degree=50)
