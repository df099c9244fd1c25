"""Drawing a graph of any size the Networks page allows: which nodes are drawn (:func:`crowdlab.io.graph.drawn_nodes`),
where (:func:`crowdlab.io.graph.force_positions`), and the figures' counts and ticks (:mod:`crowdlab.plots.dependent`).

The audit's failure: over 2,000 nodes a uniform random subgraph fell apart and the spectral layout put almost every
node on about five points; 1,000 nodes in 8 communities were squashed to one side."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

import crowdlab.io.graph as graph
from crowdlab.io.graph import symmetric
from crowdlab.plots import dependent as figs
from crowdlab.teaching.simulate import simulate_sbm


def _graph(n, k, degree, seed=0):
    net = simulate_sbm(n, k, 4, avg_degree=degree, ratio=0.05, seed=seed)
    return net.annotations.graph.tocsr(), net.annotations.gold


def _nearest(pos: np.ndarray) -> np.ndarray:
    """Each node's distance to its nearest other node, over the drawing's extent (its larger side)."""
    d = np.sqrt(((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    return d.min(axis=1) / np.ptp(pos, axis=0).max()


def _readable(pos: np.ndarray) -> None:
    """Not collapsed onto a few points and not squashed onto a line."""
    assert np.all(np.isfinite(pos))
    near = _nearest(pos)
    assert np.median(near) > 1e-3, np.median(near)  # the old spectral drawing of 5,000 nodes: 0 (five dots)
    assert np.mean(near < 1e-4) < 0.02  # almost no node on top of another
    width, height = np.ptp(pos, axis=0)
    assert 1 / 3 < width / height < 3, (width, height)


def test_drawn_nodes_of_a_big_graph_stay_connected_and_cover_every_community():
    A, gold = _graph(5000, 4, 5.0)
    nodes = graph.drawn_nodes(A, 2000)
    assert nodes.size == 2000 and np.all(np.diff(nodes) > 0)
    np.testing.assert_array_equal(nodes, graph.drawn_nodes(A, 2000))  # deterministic
    sub = A[nodes][:, nodes]
    assert connected_components(sub, directed=False)[0] == 1  # a uniform random 2,000 fall into hundreds of pieces
    assert sub.nnz / 2 > 0.9 * 2000  # most drawn nodes keep their edges (a random 40 % keeps 16 % of them)
    share = np.bincount(gold[nodes], minlength=4) / 2000
    assert share.min() > 0.15  # the starts are spread, so every community is drawn
    small = graph.drawn_nodes(A[:300][:, :300], 2000)
    np.testing.assert_array_equal(small, np.arange(300))  # small enough: every node


def test_drawn_nodes_take_whole_pieces_largest_first():
    # pieces of 5 (a path), 3 (a triangle), 2 (an edge) and 2 isolated nodes
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (5, 6), (6, 7), (5, 7), (8, 9)]
    u, v = np.array(edges).T
    A = symmetric(sp.coo_matrix((np.ones(u.size), (u, v)), shape=(12, 12)))
    nodes = graph.drawn_nodes(A, 9)
    assert set(nodes[:8]) == set(range(8)) and nodes.size == 9 and nodes[8] in (8, 9)


@pytest.mark.parametrize(
    ("n", "k", "degree"),
    [(5000, 4, 5.0), (5000, 8, 20.0), (2900, 4, 5.0), (1000, 8, 5.0), (5000, 4, 0.5), (1000, 4, 1.0)],
)
def test_force_positions_draw_every_size_readably(n, k, degree):
    A, gold = _graph(n, k, degree)
    nodes = graph.drawn_nodes(A, 2000)
    sub = A[nodes][:, nodes].tocsr()
    pos = graph.force_positions(sub)
    assert pos.shape == (nodes.size, 2)
    _readable(pos)
    if n == 2900:
        np.testing.assert_array_equal(pos, graph.force_positions(sub))  # deterministic
    # neighbours are drawn close: an edge is much shorter than the distance between two random nodes
    c = sp.triu(sub).tocoo()
    edge = np.sqrt(((pos[c.row] - pos[c.col]) ** 2).sum(1)).mean()
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, nodes.size, (2, 5000))
    assert edge < 0.5 * np.sqrt(((pos[i] - pos[j]) ** 2).sum(1)).mean()


def test_force_positions_keep_communities_apart():
    """1,000 nodes in 8 communities (the audit's squashed case): each community's nodes sit closer to their own
    centre than to the nearest other community's."""
    A, gold = _graph(1000, 8, 5.0)
    pos = graph.force_positions(A)
    centre = np.stack([pos[gold == c].mean(axis=0) for c in range(8)])
    d = np.sqrt(((pos[:, None, :] - centre[None, :, :]) ** 2).sum(-1))
    assert np.mean(d.argmin(axis=1) == gold) > 0.6


def test_force_positions_pack_pieces_apart_and_small_graphs():
    edges = [(0, 1), (1, 2), (3, 4)]
    u, v = np.array(edges).T
    A = symmetric(sp.coo_matrix((np.ones(u.size), (u, v)), shape=(7, 7)))  # a path, an edge, two isolated nodes
    pos = graph.force_positions(A)
    assert pos.shape == (7, 2) and np.all(np.isfinite(pos))
    _, comp = connected_components(A, directed=False)
    d = np.sqrt(((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1))
    other = comp[:, None] != comp[None, :]
    assert d[other].min() > 0.5 * d[~other & (d > 0)].max() / 2  # the pieces do not overlap
    assert len({tuple(np.round(p, 6)) for p in pos}) == 7  # no two nodes on one point
    assert graph.force_positions(sp.csr_matrix((0, 0))).shape == (0, 2)
    assert graph.force_positions(sp.csr_matrix((1, 1))).shape == (1, 2)


def test_network_figure_says_which_wrong_count_is_drawn():
    pos = np.array([[0, 0], [1, 0], [0, 1]], dtype=float)
    args = (pos, np.array([[0, 1]]), np.array([0, 1, 0]), np.ones(3), ["a", "b"])
    wrong = np.array([True, True, False])
    ring = [t for t in figs.network_figure(*args, wrong=wrong, wrong_total=83).data if t.meta == "wrong"][0]
    assert ring.name == "wrong: 2 drawn of 83"  # the caption's 83 of all nodes; 2 of them drawn
    ring = [t for t in figs.network_figure(*args, wrong=wrong, wrong_total=2).data if t.meta == "wrong"][0]
    assert ring.name == "wrong (2)"  # everything drawn: one count
    untitled = figs.network_figure(*args, title="")
    assert not untitled.layout.title.text and untitled.layout.margin.t == 10  # presenter mode: no title, no margin


@pytest.mark.parametrize(("sweeps", "step"), [(1, 1), (3, 1), (8, 1), (9, 2), (40, 5), (100, 20)])
def test_sweep_trace_ticks_whole_sweeps(sweeps, step):
    fig = figs.sweep_trace(np.linspace(-10.0, -1.0, sweeps + 1))
    assert (fig.layout.xaxis.tick0, fig.layout.xaxis.dtick) == (0, step)  # never a tick at 0.2 sweeps
