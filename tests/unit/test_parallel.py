"""n_jobs: the in-memory E-step and M-step statistics in threads over blocks of items (crowdlab.models.parallel).

Every n_jobs >= 2 gives the same numbers bit for bit (the blocks depend on the data only), and the same as one
thread to 1e-12; the threaded path runs only where it should (n_jobs >= 2, numba, enough cells). The thresholds
are lowered here so that a small crowd takes the threaded path.
"""

from __future__ import annotations

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.models import parallel
from crowdlab.models.dawid_skene import class_log_joint_parts, expected_counts
from crowdlab.models.kernels import load_for, softmax_rows_full
from crowdlab.teaching.simulate import simulate_crowd

pytest.importorskip("numba")


@pytest.fixture(scope="module")
def crowd():
    return simulate_crowd(10000, 40, 4, labels_per_item=5, seed=11).annotations


@pytest.fixture
def small_blocks(monkeypatch):
    """The threaded path from a few cells on, with small blocks (several per thread)."""
    assert load_for(1 << 30)  # the compiled kernels, as a large fit loads them
    monkeypatch.setattr(parallel, "MIN_CELLS", 1)
    monkeypatch.setattr(parallel, "BLOCK_ROWS", 256)


def test_the_threaded_primitives_equal_the_single_threaded_ones(crowd, small_blocks):
    rng = np.random.default_rng(0)
    M, K = crowd.n_workers, crowd.n_classes
    gamma = rng.dirichlet(np.ones(K), size=(M, K)).transpose(0, 2, 1)
    pi = rng.dirichlet(np.ones(K))
    lj1, off = class_log_joint_parts(crowd, pi, gamma)
    q1, lse1, am1, ent1, col1 = softmax_rows_full(lj1.copy(), off)
    c1 = expected_counts(crowd, q1)
    with parallel.jobs(2):
        assert parallel.sparse_dot(crowd.label_counts, np.ones((M * K, K))) is not None  # the threaded paths run
        assert parallel.threaded_softmax(lj1.copy(), off) is not None
        assert parallel.threaded_inner(q1, lj1) == pytest.approx(float((q1 * lj1).sum()), rel=1e-12)
        lj2, _ = class_log_joint_parts(crowd, pi, gamma)
        q2, lse2, am2, ent2, col2 = softmax_rows_full(lj2.copy(), off)
        c2 = expected_counts(crowd, q2)
    assert np.array_equal(lj1, lj2)  # each row summed in scipy's order
    assert np.array_equal(q1, q2) and np.array_equal(lse1, lse2) and np.array_equal(am1, am2)
    np.testing.assert_allclose(col2, col1, rtol=1e-13)
    assert ent2 == pytest.approx(ent1, rel=1e-12)
    np.testing.assert_allclose(c2, c1, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("method", ["ds", "one_coin", "two_coin"])
def test_fits_agree_across_n_jobs(crowd, small_blocks, method):
    data = crowd if method != "two_coin" else simulate_crowd(20000, 30, 2, labels_per_item=5, seed=2).annotations
    runs = {n: cl.fit(data, method, n_jobs=n, max_iter=200) for n in (1, 2, 3)}
    # 2 and 3 threads: the same blocks, the same sums, bit for bit
    assert np.array_equal(runs[2].posterior, runs[3].posterior)
    assert runs[2].objective_history() == runs[3].objective_history()
    # one thread: the same numbers to rounding, the same number of iterations
    assert runs[1].last.iteration == runs[2].last.iteration
    np.testing.assert_allclose(runs[2].posterior, runs[1].posterior, rtol=0, atol=1e-12)
    np.testing.assert_allclose(runs[2].objective_history(), runs[1].objective_history(), rtol=1e-12)
    assert np.array_equal(runs[2].history()["bound"], runs[3].history()["bound"])
    np.testing.assert_allclose(runs[2].history()["bound"], runs[1].history()["bound"], rtol=1e-12)
    assert runs[2].n_jobs == 2 and not runs[2].violations


def test_one_thread_or_small_data_takes_the_single_threaded_path(crowd):
    X = crowd.label_counts
    B = np.ones((X.shape[1], crowd.n_classes))
    assert parallel.sparse_dot(X, B) is None  # n_jobs 1 (the default)
    with parallel.jobs(2):
        assert parallel.sparse_dot(X, B) is None  # 10,000 x 4 cells: below MIN_CELLS
    assert parallel.n_jobs() == 1  # the context ends with the block


def test_count_blocks_depend_on_the_data_not_on_n_jobs():
    assert parallel.count_blocks(10**7, 25) == parallel.MAX_BLOCKS
    assert parallel.count_blocks(1000, 25) == 1
    assert parallel.count_blocks(10**7, 10**8) == 2  # the per-block sums kept under ACC_BYTES


def test_bad_n_jobs_is_refused(crowd):
    with pytest.raises(ValueError, match="n_jobs"):
        cl.fit(crowd, "ds", n_jobs=0)
    assert cl.fit(crowd, "mv", n_jobs=-1).n_jobs >= 1


def test_cli_n_jobs_is_bounded_by_the_cores(tmp_path, capsys, monkeypatch):
    from crowdlab.cli import main

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    path = tmp_path / "l.csv"
    path.write_text("item,worker,label\n" + "".join(f"i{i},w{j},{(i + j) % 2}\n" for i in range(20) for j in range(3)))
    assert main(["fit", str(path), "--method", "ds", "--out", str(tmp_path / "o"), "--n-jobs", "8"]) == 0
    assert "--n-jobs 8 is more than this machine's 2 cores; using 2" in capsys.readouterr().err
    assert main(["fit", str(path), "--method", "ds", "--out", str(tmp_path / "o"), "--n-jobs", "0"]) != 0
    assert "--n-jobs" in capsys.readouterr().err


def test_a_spare_is_handed_out_again_only_when_nothing_refers_to_it():
    spares: list = []
    with parallel.jobs(2, spares):
        a = parallel._empty((1000, 3))
        b = parallel._empty((1000, 3))
        assert a is not b  # a is still held here
        view = a[10:20]
        del a
        c = parallel._empty((1000, 3))
        assert c is not view.base  # a view keeps its array from reuse
        del view, c
        again = parallel._empty((1000, 3))
        assert len(spares) == 3 and any(again is s for s in spares)  # one of the two let go, not a new one
        assert parallel._empty((1000,), np.int64).dtype == np.int64  # another dtype: another array
    with parallel.jobs(2):
        d = parallel._empty((1000, 3))
    assert all(d is not s for s in spares)  # no spares list: always a new array


def test_a_run_reuses_its_arrays_and_gets_the_same_numbers(crowd, small_blocks, monkeypatch):
    from crowdlab.engines.run import Run
    from crowdlab.models import make_model

    kept = Run(crowd, make_model("ds"), "majority", n_jobs=2, keep_posteriors=2)
    for _ in range(10):
        kept.step()
    after_10 = {id(a) for a in kept._spares}
    for _ in range(20):
        kept.step()
    assert 0 < len(after_10) <= parallel.SPARE_ARRAYS
    assert {id(a) for a in kept._spares} == after_10  # the same arrays, not new ones each step
    monkeypatch.setattr(parallel, "_empty", lambda shape, dtype=np.float64: np.empty(shape, dtype))
    fresh = Run(crowd, make_model("ds"), "majority", n_jobs=2, keep_posteriors=2)
    for _ in range(30):
        fresh.step()
    assert not fresh.__dict__.get("_spares")
    assert np.array_equal(kept.posterior, fresh.posterior)
    assert kept.objective_history() == fresh.objective_history()
