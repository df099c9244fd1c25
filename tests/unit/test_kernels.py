"""The compiled row kernels (`crowdlab.models.kernels`) give the numpy path's numbers, for every class model and every
way
the engine uses them.

The kernels switch on above ``MIN_CELLS`` (N x K) cells; these tests lower the threshold to 0 so that the bundled
sets go through them, and compare with the same runs forced onto numpy (``MIN_CELLS`` above any size): objectives,
bounds, posteriors, parameters, arg-max changes, the entropy and the column sums of q, semi-supervised clamping,
impossible rows (-inf) and hard EM.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from crowdlab.engines.run import Run
from crowdlab.io.samples import load_sample
from crowdlab.models import glad_steps, kernels, make_model
from crowdlab.models.base import entropy_rows, softmax_lse
from crowdlab.teaching.simulate import simulate_crowd

pytestmark = pytest.mark.skipif(kernels._compile() is None, reason="numba is not installed: nothing to compare")


def _through(monkeypatch, compiled: bool) -> None:
    """Every compiled pass on (the row kernels and GLAD's label passes, `crowdlab.models.glad_steps`), or none."""
    monkeypatch.setattr(kernels, "MIN_CELLS", 0 if compiled else 1 << 62)
    monkeypatch.setattr(glad_steps, "MIN_OBS", 0 if compiled else 1 << 62)


@pytest.fixture
def compiled(monkeypatch):
    _through(monkeypatch, True)


@pytest.fixture
def plain(monkeypatch):
    _through(monkeypatch, False)


def _trace(data, method, iters=15, **kw):
    model = make_model(method, **kw)
    run = Run(data, model, max_iter=iters)
    run.run()
    return run


def _runs(monkeypatch, data, method, **kw):
    _through(monkeypatch, False)
    ref = _trace(data, method, **kw)
    _through(monkeypatch, True)
    got = _trace(data, method, **kw)
    return ref, got


CASES = [
    ("bluebirds", "ds", {}),
    ("dogs", "ds", {"prior": 1.0}),
    ("dogs", "one_coin", {}),
    ("rte", "two_coin", {}),
    ("dogs", "mace", {}),
    ("patients", "ibcc", {}),
    ("bluebirds", "glad", {}),
    ("dogs", "glad", {"class_prior": "estimate", "prior": 0.5}),
    ("dogs", "ds", {"hard": True}),
]


@pytest.mark.parametrize(("name", "method", "kw"), CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_a_run_through_the_kernels_equals_the_numpy_run(monkeypatch, name, method, kw):
    data = load_sample(name)
    ref, got = _runs(monkeypatch, data, method, **kw)
    assert len(got.snapshots) == len(ref.snapshots)
    assert got.stop_reason == ref.stop_reason
    for a, b in zip(ref.snapshots, got.snapshots, strict=True):
        assert b.objective == pytest.approx(a.objective, rel=1e-12, abs=1e-9)
        assert b.bound == pytest.approx(a.bound, rel=1e-12, abs=1e-9)
        np.testing.assert_array_equal(b.changed, a.changed)
    np.testing.assert_allclose(got.posterior, ref.posterior, atol=1e-12)
    np.testing.assert_allclose(got.current.params.gamma, ref.current.params.gamma, atol=1e-12)


def test_semi_supervised_clamping_keeps_argmax_entropy_and_class_totals_right(monkeypatch):
    data = load_sample("bluebirds")
    kw = {"reveal": 0.3, "reveal_seed": 4}
    ref, got = _runs(monkeypatch, data, "ds", **kw)
    np.testing.assert_allclose(got.posterior, ref.posterior, atol=1e-12)
    for a, b in zip(ref.snapshots, got.snapshots, strict=True):
        assert b.bound == pytest.approx(a.bound, rel=1e-12, abs=1e-9)
        np.testing.assert_array_equal(b.changed, a.changed)
    model = got.model
    q = model.e_step(data, got.current.params)
    kc = model.known_classes(data)
    idx = np.flatnonzero(kc >= 0)
    assert idx.size > 0
    np.testing.assert_array_equal(model.posterior_argmax(q)[idx], kc[idx])
    np.testing.assert_allclose(model.q_column_sums(q), q.sum(axis=0), rtol=1e-13)
    assert model.entropy(q) == pytest.approx(entropy_rows(q), rel=1e-10, abs=1e-9)


def test_the_pass_gives_argmax_entropy_and_column_sums_of_its_posterior(compiled):
    data = simulate_crowd(3000, 15, 4, labels_per_item=3, seed=2).annotations
    model = make_model("ds")
    run = Run(data, model, max_iter=5)
    run.run()
    q = model.e_step(data, run.current.params)
    np.testing.assert_array_equal(model.posterior_argmax(q), np.argmax(q, axis=1))
    np.testing.assert_allclose(model.q_column_sums(q), q.sum(axis=0), rtol=1e-13)
    assert model.entropy(q) == pytest.approx(entropy_rows(q), rel=1e-11)
    other = q.copy()  # not the E-step's own array: computed from the values
    assert model.posterior_argmax(other) is None
    np.testing.assert_allclose(model.q_column_sums(other), q.sum(axis=0), rtol=1e-13)


def test_rows_with_impossible_classes_and_ties(compiled):
    rng = np.random.default_rng(5)
    lj = rng.normal(size=(400, 6)) * 40 - 300
    lj[::7, 2] = -np.inf  # a class the item cannot have
    lj[5] = 1.25  # a row of ties: the first column wins, as np.argmax
    lj[9, :3] = -np.inf
    off = rng.normal(size=6)
    want_q, want_lse = softmax_lse(lj + off)
    q, lse, am, entropy, colsum = kernels.softmax_rows_full(lj.copy(), off)
    np.testing.assert_allclose(q, want_q, atol=1e-15)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-14)
    np.testing.assert_array_equal(am, np.argmax(lj + off, axis=1))
    assert entropy == pytest.approx(entropy_rows(want_q), rel=1e-12)
    np.testing.assert_allclose(colsum, want_q.sum(axis=0), rtol=1e-13)
    assert not np.isnan(q).any()


def test_far_below_the_row_max_is_exactly_zero(compiled):
    """Items with hundreds of labels put classes thousands of nats below the best: q is 0 there (numpy gives 0 or a
    subnormal < 1e-304), the rest is unchanged, and exp never takes its subnormal slow path."""
    rng = np.random.default_rng(3)
    lj = rng.uniform(-2000.0, 0.0, size=(40000, 5))
    lj[:, 0] = 0.0
    lj[::3, 1] = -701.0  # just past the cut
    lj[1::3, 1] = -699.0  # just inside: exp(-699) = 2.6e-304 kept
    want_q, want_lse = softmax_lse(lj.copy())
    q, lse, am, entropy, colsum = kernels.softmax_rows_full(lj.copy())
    np.testing.assert_allclose(q, want_q, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-14, atol=1e-14)  # lse near 0 on some rows
    assert (q[lj < kernels.UNDERFLOW] == 0.0).all()
    assert (q[1::3, 1] > 0.0).all()
    assert entropy == pytest.approx(entropy_rows(want_q), rel=1e-12, abs=1e-250)
    np.testing.assert_allclose(colsum, want_q.sum(axis=0), rtol=1e-13, atol=1e-300)


def test_an_all_impossible_row_is_reported_not_hidden(compiled):
    lj = np.zeros((10, 3))
    lj[4] = -np.inf
    q, lse, *_ = kernels.softmax_rows_full(lj)
    assert np.isnan(q[4]).all() and np.isnan(lse[4])  # the engine's finite check names it
    assert np.isfinite(q[[0, 1, 2, 3, 5]]).all()


def test_add_row_offset_in_place_both_paths(monkeypatch):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(50, 4))
    off = rng.normal(size=4)
    for cells in (0, 1 << 62):
        monkeypatch.setattr(kernels, "MIN_CELLS", cells)
        b = a.copy()
        assert kernels.add_row_offset(b, off) is b
        np.testing.assert_array_equal(b, a + off)


def test_the_environment_switch_turns_the_kernels_off(monkeypatch):
    monkeypatch.setattr(kernels, "_TRIED", False)
    monkeypatch.setattr(kernels, "_KERNELS", None)
    monkeypatch.setenv("CROWDLAB_KERNELS", "numpy")
    assert kernels._compile() is None
    monkeypatch.delenv("CROWDLAB_KERNELS")
    monkeypatch.setattr(kernels, "_TRIED", False)
    assert kernels._compile() is not None


def test_import_crowdlab_does_not_import_numba():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "import sys, crowdlab; print('numba' in sys.modules)"], capture_output=True, text=True
    )
    assert out.stdout.strip() == "False", out.stderr


def test_ranked_argmax_breaks_ties_by_the_bonus_in_both_paths(monkeypatch):
    rng = np.random.default_rng(11)
    v = rng.integers(0, 4, size=(50000, 5)).astype(np.int64)  # many ties
    bonus = np.array([1, 4, 0, 3, 2], dtype=np.int64)
    top = v == v.max(axis=1, keepdims=True)
    want = np.argmax(np.where(top, bonus[None, :], -1), axis=1)  # among the tied, the largest bonus
    monkeypatch.setattr(kernels, "MIN_CELLS", 0)
    np.testing.assert_array_equal(kernels.ranked_argmax(v, bonus), want)
    monkeypatch.setattr(kernels, "MIN_CELLS", 1 << 62)
    np.testing.assert_array_equal(kernels.ranked_argmax(v, bonus), want)
    assert v.max() < 4  # the votes are not scaled in place


def test_majority_labels_are_the_same_through_the_kernel(monkeypatch):
    from crowdlab.models.majority import majority_labels

    data = simulate_crowd(20000, 8, 5, labels_per_item=2, seed=4).annotations  # two labels: many ties
    monkeypatch.setattr(kernels, "MIN_CELLS", 1 << 62)
    ref = majority_labels(data)
    data.__dict__.pop("vote_counts", None)
    monkeypatch.setattr(kernels, "MIN_CELLS", 0)
    np.testing.assert_array_equal(majority_labels(data), ref)


def test_first_use_gate_keeps_numba_unloaded_below_the_crossing_point(monkeypatch):
    """A one-off fit below FIRST_USE_CELLS never pays numba's import and cache load (issue 30: 1.2 s warm, 3.5 s
    cold against 0.35 s in numpy at 2.5 x 10^5 labels); once loaded, the kernels serve from MIN_CELLS on."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np; from crowdlab.models import kernels as k; "
        "a = np.random.default_rng(0).normal(size=(k.FIRST_USE_CELLS // 8, 4)); k.softmax_rows_full(a); "
        "print('numba' in sys.modules)"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "CROWDLAB_KERNELS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
    monkeypatch.delenv("CROWDLAB_KERNELS", raising=False)
    between = np.zeros((kernels.MIN_CELLS, 2))
    monkeypatch.setattr(kernels, "_TRIED", False)
    assert kernels._kernels_for(between) is None  # not loaded yet, too small to load them
    monkeypatch.setattr(kernels, "_TRIED", True)
    monkeypatch.setattr(kernels, "_KERNELS", {"loaded": True})
    assert kernels._kernels_for(between) == {"loaded": True}  # loaded already: used


@pytest.mark.parametrize("raw", [" numpy ", "numpy\n", "\tNumPy"])
def test_the_environment_switch_is_read_trimmed(monkeypatch, raw):
    """Issue 42: ' numpy ' and 'numpy\\n' were accepted by the settings check and then ignored (numba ran)."""
    monkeypatch.setattr(kernels, "_TRIED", False)
    monkeypatch.setattr(kernels, "_KERNELS", None)
    monkeypatch.setenv("CROWDLAB_KERNELS", raw)
    assert kernels._compile() is None
    assert kernels.load_for(1 << 40) is False


def test_a_refused_kernels_value_is_auto():
    from crowdlab.io.limits import kernels_choice

    assert kernels_choice({"CROWDLAB_KERNELS": " numba\n"}) == "numba"
    assert kernels_choice({"CROWDLAB_KERNELS": "gpu"}) == kernels_choice({}) == "auto"


def test_glad_label_passes_equal_their_numpy_forms(monkeypatch):
    """Each of GLAD's passes over the labels (`crowdlab.models.glad_steps`), compiled and in numpy, on soft votes
    (weights) and hard labels, with abilities of both signs and difficulties far from 1."""
    data = simulate_crowd(500, 12, 3, labels_per_item=4, seed=1).annotations
    rng = np.random.default_rng(2)
    alpha = rng.normal(0.5, 2.0, data.n_workers)
    beta = np.exp(rng.normal(0.0, 1.5, data.n_items))
    grow = np.exp(rng.normal(0.0, 0.3, data.n_items))
    q = rng.dirichlet(np.ones(3), data.n_items)
    soft = dataclasses.replace(data, weight=rng.uniform(0.1, 1.0, data.n_obs))
    for obs in (data, soft):
        got, want = {}, {}
        for out, on in ((got, True), (want, False)):
            _through(monkeypatch, on)
            w = glad_steps.gather_w(q, obs)
            out["w"] = w
            out["sums"] = glad_steps.worker_sums(obs, w, alpha, beta)
            out["trial"] = glad_steps.alpha_trial(obs, w, alpha, beta)
            out["b"] = glad_steps.b_trial(obs, w, alpha, beta, grow)
            out["lj"] = glad_steps.log_joint_data(obs, alpha, beta, 3)
        for key in got:
            a, b = got[key], want[key]
            for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,), strict=True):
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=key)
