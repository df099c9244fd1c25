"""MRF-crowd on graphs: colourings, the two approximate E-steps, what each improves; Traganitis & Giannakis 6.2.1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import crowdlab as cl
from crowdlab.engines.run import Run
from crowdlab.errors import DataError, ModelError
from crowdlab.io.data import Annotations
from crowdlab.io.graph import greedy_coloring, grid_graph, read_edges, spectral_positions, symmetric
from crowdlab.io.metrics import macro_f
from crowdlab.models import DawidSkene, NetworkCrowd
from crowdlab.models.hmm import emission_logs
from crowdlab.models.mrf import MRFParams
from crowdlab.teaching.simulate import mix_from_counts, simulate_sbm

DATA = Path(__file__).resolve().parents[1] / "data"


def small_network(seed: int, n: int = 40, K: int = 3, degree: float = 3.0):
    net = simulate_sbm(n, K, 4, avg_degree=degree, ratio=0.2, labels_per_item=2, seed=seed)
    return net


def test_greedy_coloring_is_proper():
    for seed in range(5):
        A = small_network(seed, 200).adjacency
        color = greedy_coloring(A, seed)
        r, c = A.nonzero()
        assert (color[r] != color[c]).all() and (color >= 0).all()
    G = grid_graph(6, 7)
    assert (np.asarray(G.sum(axis=1)).ravel() <= 4).all() and G.nnz == 2 * (6 * 6 + 5 * 7)
    col = greedy_coloring(G)
    r, c = G.nonzero()
    assert (col[r] != col[c]).all()


def test_icm_labels_are_a_local_optimum_of_j():
    """After an ICM E-step no single label change raises J (checked by brute force)."""
    net = small_network(1)
    data = net.annotations
    model = NetworkCrowd(e_step="icm", hard=True)
    run = Run(data, model)
    run.step()
    post = run.e_step().posterior
    params = run.current.params
    base = model._icm_value(data, post.labels, params)
    for n in range(data.n_items):
        for k in range(data.n_classes):
            y = post.labels.copy()
            y[n] = k
            assert model._icm_value(data, y, params) <= base + 1e-9


def test_mean_field_fixed_point():
    net = small_network(2)
    data = net.annotations
    model = NetworkCrowd(e_step="mean_field", max_sweeps=500, tol=1e-12)
    run = Run(data, model)
    run.step()
    q = run.e_step().q
    logE = emission_logs(data, run.current.params.gamma)
    z = logE + 0.5 * model.delta_for(data) * (data.graph @ q)
    expect = np.exp(z - z.max(1, keepdims=True))
    np.testing.assert_allclose(q, expect / expect.sum(1, keepdims=True), atol=1e-8)


@pytest.mark.parametrize("e_step,hard", [("mean_field", False), ("icm", True)])
def test_monotone_variants_never_decrease_their_objective(e_step, hard):
    for seed in range(60):
        rng = np.random.default_rng(seed)
        net = small_network(seed, int(rng.integers(12, 60)), int(rng.integers(2, 4)), float(rng.uniform(0.5, 3)))
        run = Run(net.annotations, NetworkCrowd(e_step=e_step, hard=hard, prior=(0, 1.0)[seed % 2]), max_iter=15)
        run.run()
        obj = run.history()["objective"]
        assert np.all(np.isfinite(obj))
        assert np.all(np.diff(obj) >= -1e-9 * np.maximum(1, np.abs(obj[:-1]))), seed
        assert run.violations == []
        for s in run.snapshots[1:]:
            tr = np.array(getattr(s.posterior, "trace", ()) or [0.0])
            assert np.all(np.diff(tr) >= -1e-9 * np.maximum(1, np.abs(tr[:-1])))


def test_icm_e_step_never_decreases_j_within_its_sweeps():
    net = small_network(4, 300)
    run = Run(net.annotations, NetworkCrowd(e_step="icm"), max_iter=10)
    run.run()
    assert run.model.monotone is False  # Alg. 3 with soft q in the M-step: not guaranteed
    for s in run.snapshots:
        if s.kind == "E":
            tr = np.array(s.posterior.trace)
            assert np.all(np.diff(tr) >= -1e-9 * np.abs(tr[:-1]))


def test_delta_zero_is_dawid_skene_without_class_prior():
    net = small_network(5, 50)
    data = net.annotations
    model = NetworkCrowd(delta=0.0, e_step="mean_field")
    gamma = DawidSkene().m_step(data, np.full((50, 3), 1 / 3) + np.eye(3)[net.truth]).gamma
    params = MRFParams(pi=np.full(3, 1 / 3), gamma=gamma)
    q = model.e_step(data, params).q
    np.testing.assert_allclose(q, DawidSkene().e_step(data, params), atol=1e-10)


def test_mrf_needs_a_graph():
    data = cl.Annotations.from_labels([1, 2], ["a", "b"], ["x", "y"])
    with pytest.raises(ModelError, match="graph"):
        Run(data, NetworkCrowd())
    assert "mrf" not in cl.applicable_models(data)
    assert "mrf" in cl.applicable_models(small_network(0).annotations)


def seed_crowd_network(degree: float, seed: int):
    """K = 4, M = 10 (6 better than random, 4 random), 1,000 nodes (Traganitis & Giannakis Sec. 6.2.1)."""
    return simulate_sbm(
        1000,
        4,
        10,
        avg_degree=degree,
        mix=mix_from_counts({"expert": 6, "spammer": 4}),
        expert_accuracy=(0.35, 0.6),
        seed=seed,
    )


def test_mrf_em_beats_dawid_skene_and_gains_more_on_denser_graphs():
    gains = {}
    for degree in (0.5, 5.0):
        g = []
        for seed in range(3):
            net = seed_crowd_network(degree, seed)
            ds = macro_f(cl.fit(net.annotations, "ds").labels(), net.truth, 4)
            run = Run(net.annotations, NetworkCrowd(e_step="mean_field"), max_iter=50)
            run.run()
            g.append(macro_f(run.labels(), net.truth, 4) - ds)
        gains[degree] = float(np.mean(g))
    assert gains[5.0] > 0.1, gains
    assert gains[5.0] > gains[0.5], gains


def test_read_edges(tmp_path):
    data = cl.Annotations.from_labels(["a", "b", "c"], ["w", "w", "v"], ["x", "y", "x"])
    out = read_edges(DATA / "edges_ok.csv", data)
    A = out.graph.toarray()
    assert A[0, 1] == A[1, 0] == 1 and A[1, 2] == 2 and A[2, 2] == 0
    assert any("self-loop" in n for n in out.notes)
    with pytest.raises(DataError, match="no labels") as e:
        read_edges(DATA / "edges_unknown.csv", data)
    assert "rows 3, 4" in str(e.value)
    with pytest.raises(DataError, match="not a number in"):
        read_edges(DATA / "edges_bad_weight.csv", data)


def test_symmetric_and_positions():
    A = symmetric(sp.coo_matrix(([1.0, 1.0], ([0, 1], [1, 1])), shape=(3, 3)))
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0
    pos = spectral_positions(small_network(0, 80).adjacency)
    assert pos.shape == (80, 2) and np.all(np.isfinite(pos))


def test_annotations_keep_the_graph():
    net = small_network(3)
    assert isinstance(net.annotations, Annotations) and net.annotations.graph.shape == (40, 40)


def test_delta_from_labels_per_node():
    """delta="labels": delta_nn' = (M_n + M_n') / 4 on every edge; mean-field EM stays monotone."""
    net = simulate_sbm(60, 3, 6, avg_degree=3.0, ratio=0.2, density=0.5, seed=8)
    data = net.annotations
    model = NetworkCrowd(delta="labels", e_step="mean_field")
    D = model.penalties(data).tocoo()
    m = data.labels_per_item
    np.testing.assert_allclose(D.data, (m[D.row] + m[D.col]) / 4.0)
    run = Run(data, model, max_iter=20)
    run.run()
    obj = run.history()["objective"]
    assert np.all(np.diff(obj) >= -1e-9 * np.abs(obj[:-1])) and run.violations == []
    q = run.e_step().q if run.next_kind == "E" else run.current.q
    assert np.allclose(q.sum(axis=1), 1.0)
    with pytest.raises(ValueError):
        NetworkCrowd(delta=-1.0)
