"""Online EM (crowdlab.models.online, crowdlab.engines.online): accuracy against batch Dawid-Skene on the bundled
datasets, graceful degradation under hashing, a rising progressive objective, valid distributions after every
update, stable hashing, reproducibility, the exact batch limit, the stepper interface, the API and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import crowdlab as cl
from crowdlab.cli import main
from crowdlab.engines.online import OnlineRun, bucket_sweep, fast_fit
from crowdlab.errors import ModelError
from crowdlab.io.metrics import accuracy
from crowdlab.io.samples import load_sample, sample_paths
from crowdlab.models import DawidSkene, OneCoin, make_model
from crowdlab.models.online import (
    OnlineDawidSkene,
    OnlineOneCoin,
    Progress,
    format_table,
    stable_bucket,
    worker_buckets,
)
from crowdlab.teaching.simulate import simulate_crowd

ROOT = Path(__file__).resolve().parents[2]


def _acc(run) -> float:
    return accuracy(run.labels(), run.data.gold)


def _check_valid(params) -> None:
    g, pi = params.gamma, params.pi
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(pi))
    assert np.all(g >= 0) and np.all(pi >= 0)
    np.testing.assert_allclose(g.sum(axis=1), 1.0, atol=1e-12)  # columns (true class) sum to one
    np.testing.assert_allclose(pi.sum(), 1.0, atol=1e-12)


# ---------------------------------------------------------------------------- accuracy against batch EM
@pytest.mark.parametrize("key", ["bluebirds", "rte"])
def test_online_ds_within_one_point_of_batch_ds(key, request):
    data = request.getfixturevalue(key)
    batch = _acc(cl.fit(data, "ds"))
    online = cl.fit(data, "online_ds", passes=10)
    assert online.last.iteration == 10
    assert abs(_acc(online) - batch) <= 0.01 + 1e-12, (_acc(online), batch)


def test_single_item_blocks_need_a_clock_per_worker_on_rte(rte):
    """The blog's procedure, one item per update: with one global step RTE's rarely seen workers follow their last
    few labels; a step-size clock per worker recovers batch accuracy."""
    batch = _acc(cl.fit(rte, "ds"))
    per_worker = _acc(cl.fit(rte, "online_ds", batch_size=1, passes=3, worker_steps=True))
    assert abs(per_worker - batch) <= 0.01, (per_worker, batch)
    global_step = _acc(cl.fit(rte, "online_ds", batch_size=1, passes=3))
    assert global_step < per_worker - 0.02


def test_online_one_coin_matches_batch_one_coin_on_rte(rte):
    batch = _acc(cl.fit(rte, "one_coin"))
    online = _acc(cl.fit(rte, "online_one_coin", passes=10))
    assert abs(online - batch) <= 0.015


# ---------------------------------------------------------------------------- hashing
def test_hashing_degrades_gracefully_on_rte(rte):
    model = OnlineDawidSkene(passes=5)
    sweep = bucket_sweep(rte, model, buckets=[1, 4, 16, 64], seeds=(0, 1, 2))
    vals = sweep["values"]
    assert np.all(np.isfinite(vals)) and np.all(np.isfinite(sweep["per_worker"]))
    means = [*vals.mean(axis=1), sweep["per_worker"].mean()]  # B = 1, 4, 16, 64, one per worker (M = 164)
    for small, large in zip(means, means[1:]):
        assert small <= large + 0.01, means  # roughly monotone: more buckets never clearly worse
    assert means[0] < means[-1] - 0.02  # one population matrix is clearly worse than one per worker
    assert means[0] > 0.8  # ... but still a sensible aggregate (graceful)


def test_one_bucket_is_the_population_matrix(rte):
    run = cl.fit(rte, "online_ds", buckets=1, passes=2)
    g = run.params.gamma
    assert np.all(run.params.extra["bucket"] == 0)
    np.testing.assert_allclose(g, np.broadcast_to(g[0], g.shape))


def test_stable_bucket_is_fixed_across_processes():
    # BLAKE2b of the id, salted with the seed: these values must never change (saved models, other machines)
    assert stable_bucket("A1B0YWANQX8P6S", 64, 0) == 25
    assert stable_bucket("A1B0YWANQX8P6S", 64, 1) == 32
    assert stable_bucket("worker-7", 1000, 42) == 798
    assert stable_bucket("ü", 7, 0) == 3
    code = "from crowdlab.models.online import stable_bucket; print(stable_bucket('A1B0YWANQX8P6S', 64, 0))"
    for hashseed in ("12345",):  # Python's own str hash differs with PYTHONHASHSEED; ours must not
        env = {**os.environ, "PYTHONHASHSEED": hashseed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        assert out.stdout.strip() == "25"


def test_worker_buckets_none_is_identity_and_bad_b_raises():
    names = ("a", "b", "c")
    assert worker_buckets(names, None).tolist() == [0, 1, 2]
    assert set(worker_buckets(names, 2, seed=3).tolist()) <= {0, 1}
    with pytest.raises(ValueError):
        stable_bucket("a", 0)
    with pytest.raises(ValueError):
        OnlineDawidSkene(buckets=0)


# ---------------------------------------------------------------------------- the procedure
def test_progressive_objective_rises_on_simulated_data():
    data = simulate_crowd(3000, 30, 3, labels_per_item=6, seed=4).annotations
    _, _, prog = fast_fit(data, OnlineDawidSkene(passes=1, batch_size=5))
    F, pred, item = prog.arrays()
    assert F.size == data.n_items and np.all(np.isfinite(F))
    assert sorted(item.tolist()) == list(range(data.n_items))  # one pass sees every item once
    w = data.n_items // 10
    assert F[-w:].mean() > F[:w].mean() + 0.1
    # and the running average (vw's first column) ends above where it started
    rows = prog.rows
    at8 = next(r for r in rows if r["example counter"] == 8)
    assert rows[-1]["average so far"] > at8["average so far"]


@pytest.mark.parametrize("worker_steps", [False, True])
@pytest.mark.parametrize("cls", [OnlineDawidSkene, OnlineOneCoin])
def test_every_update_keeps_valid_distributions(cls, worker_steps, bluebirds):
    # the largest steps allowed with no prior (eta_1 just below 1), single items: the hardest case for validity
    model = cls(eta0=0.999, tau0=0.0, rho=0.3, batch_size=1, passes=1, prior=0.0, worker_steps=worker_steps)
    run = OnlineRun(bluebirds, model, track_every=1)
    for _ in range(40):
        run.step()
        _check_valid(run.params)
        q = run.posterior
        assert np.all(np.isfinite(q)) and np.allclose(q.sum(axis=1), 1.0)
        assert np.isfinite(run.last.objective)
    assert not run.violations


def test_block_posterior_is_the_dawid_skene_e_step(rte):
    model = OnlineDawidSkene(prior=0.0)
    stream = model.stream(rte)
    state = model.init_state(stream)
    items = np.array([5, 0, 799, 17])
    block = model.evaluate(stream, state, items)
    q_batch = DawidSkene().e_step(rte, model.params(stream, state))
    np.testing.assert_allclose(block.q, q_batch[items], atol=1e-12)
    assert block.ratings.tolist() == rte.labels_per_item[items].tolist()


@pytest.mark.parametrize("cls", [OnlineDawidSkene, OnlineOneCoin])
def test_block_objective_is_log_marginal_plus_prior_share(cls, bluebirds):
    """F_i at its maximiser q_i = log p(D_i | theta) + log P(theta) / |I| (the blog's per-item objective)."""
    model = cls(prior=2.0)
    stream = model.stream(bluebirds)
    state = model.init_state(stream)
    for _ in range(3):
        _, state = model.advance(stream, state)
    items = np.arange(bluebirds.n_items)
    block = model.evaluate(stream, state, items)
    params = model.params(stream, state)
    lj = np.asarray(bluebirds.label_counts @ np.log(params.gamma).reshape(-1, 2)) + np.log(params.pi)
    expected = np.logaddexp(lj[:, 0], lj[:, 1]) + model.log_prior(params) / bluebirds.n_items
    np.testing.assert_allclose(block.F, expected, rtol=1e-10)
    total = model.log_likelihood(bluebirds, params)
    assert block.F.sum() == pytest.approx(total, rel=1e-10)  # sum_i F_i is the batch objective


@pytest.mark.parametrize("worker_steps", [False, True])
def test_full_batch_with_unit_step_is_batch_em(worker_steps, rte):
    """batch_size = N and eta = 1 make one update exactly one batch EM iteration (E-step then MAP M-step)."""
    prior = 0.5
    model = OnlineDawidSkene(
        eta0=1.0, tau0=0.0, rho=0.0, batch_size=rte.n_items, passes=3, prior=prior, worker_steps=worker_steps
    )
    stream = model.stream(rte)
    state = model.init_state(stream)
    params = model.params(stream, state)
    ds = DawidSkene(prior=prior)
    for _ in range(3):
        _, state = model.advance(stream, state)
        params = ds.m_step(rte, ds.e_step(rte, params))
        online = model.params(stream, state)
        np.testing.assert_allclose(online.gamma, params.gamma, atol=1e-10)
        np.testing.assert_allclose(online.pi, params.pi, atol=1e-10)


def test_one_coin_full_batch_is_batch_one_coin(bluebirds):
    model = OnlineOneCoin(eta0=1.0, tau0=0.0, rho=0.0, batch_size=bluebirds.n_items, passes=1, prior=0.0)
    stream = model.stream(bluebirds)
    state = model.init_state(stream)
    start = model.params(stream, state)
    _, state = model.advance(stream, state)
    oc = OneCoin()
    expected = oc.m_step(bluebirds, oc.e_step(bluebirds, start))
    np.testing.assert_allclose(model.params(stream, state).extra["theta"], expected.extra["theta"], atol=1e-10)


def test_eta_schedule():
    m = OnlineDawidSkene(eta0=2.0, tau0=3.0, rho=0.5)
    assert m.eta(1) == pytest.approx(1.0)  # 2 * 4^-0.5 = 1, capped at 1
    assert m.eta(6) == pytest.approx(2.0 / 3.0)
    assert np.all(np.diff(m.eta(np.arange(1, 100))) <= 0)
    with pytest.raises(ValueError):
        OnlineDawidSkene(rho=-0.1)


def test_mini_batch_order_is_a_seeded_permutation(rte):
    m = OnlineDawidSkene(seed=3)
    stream = m.stream(rte)
    a, b = m.order(stream, 0), m.order(stream, 1)
    assert sorted(a.tolist()) == list(range(rte.n_items))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, m.order(stream, 0))


def test_seed_reproducibility(rte):
    a = cl.fit(rte, "online_ds", passes=2, seed=7)
    b = cl.fit(rte, "online_ds", passes=2, seed=7)
    c = cl.fit(rte, "online_ds", passes=2, seed=8)
    np.testing.assert_array_equal(a.params.gamma, b.params.gamma)
    np.testing.assert_array_equal(a.posterior, b.posterior)
    assert not np.array_equal(a.params.gamma, c.params.gamma)


def test_progress_rows_at_every_doubling_counter_inside_mini_batches():
    # with 10 items per update the table went 1, 16, 32, ...: one row per block at most (vw, and the README,
    # print 1, 2, 4, 8, ...); each row's averages are those of the items up to its counter
    data = simulate_crowd(300, 8, 3, labels_per_item=3, seed=2).annotations
    _, _, prog = fast_fit(data, OnlineDawidSkene(passes=1, batch_size=10))
    F = prog.arrays()[0]
    counters = [r["example counter"] for r in prog.rows]
    assert counters == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
    last = 0
    for r, c in zip(prog.rows, counters, strict=True):
        assert r["average so far"] == pytest.approx(F[:c].mean(), rel=1e-12)
        assert r["since last"] == pytest.approx(F[last:c].mean(), rel=1e-12)
        last = c


def test_progress_table_rows_at_doubling_counters():
    prog = Progress(("a", "b"), gold=np.array([0, 1, -1, 0, 1, 1, 0, 0, 1, 1]))
    model = OnlineDawidSkene(batch_size=1)
    data = simulate_crowd(10, 4, 2, labels_per_item=3, seed=0).annotations
    stream = model.stream(data)
    state = model.init_state(stream)
    for _ in range(10):
        block, state = model.advance(stream, state)
        prog.add(block)
    prog.finish(block)
    assert [r["example counter"] for r in prog.rows] == [1, 2, 4, 8, 10]
    assert all(r["label"] in ("a", "b", "?") for r in prog.rows)
    text = format_table(prog.rows)
    assert text.count("\n") == 2 + len(prog.rows) - 1 and "counter" in text


# ---------------------------------------------------------------------------- the stepper's interface
def test_online_run_steps_back_and_replays_exactly(bluebirds):
    run = OnlineRun(bluebirds, OnlineDawidSkene(passes=2, batch_size=7), checkpoint_every=4)
    assert run.next_kind == "E" and run.current.kind == "init"
    run.e_step()
    assert run.next_kind == "M" and run.current.kind == "E"
    run.m_step()
    for _ in range(10):
        run.step()
    forward = run.params.gamma.copy()
    at = run.index
    run.goto(5)
    assert run.current.kind == "E" and "after E-step" in run.position_label()
    back = run.params.gamma  # replayed from a checkpoint
    run.goto(at)
    np.testing.assert_array_equal(run.params.gamma, forward)
    run.goto(5)
    np.testing.assert_array_equal(run.params.gamma, back)
    run.goto(at)
    run.back()
    assert run.index == at - 1 and run.next_kind == "M"
    run.run()
    assert run.converged and run.next_kind is None and run.last.iteration == 2
    n = len(run.snapshots)
    run.step()  # nothing left to do
    assert len(run.snapshots) == n
    h = run.history()
    assert h["seen"][-1] == 2 * bluebirds.n_items and np.isfinite(h["objective"][-1])
    run.reset()
    assert len(run.snapshots) == 1 and run.index == 0


def test_make_model_and_fit_options(bluebirds):
    m = make_model("online_ds", eta0=0.5, buckets=8, passes=1, hard=False)
    assert isinstance(m, OnlineDawidSkene) and m.buckets == 8 and m.eta0 == 0.5
    assert isinstance(make_model("online_one_coin"), OnlineOneCoin)
    run = cl.fit(bluebirds, "online_ds", passes=1, batch_size=20, prior=0.0)
    assert run.model.prior == 0.0 and run.model.batch_size == 20
    with pytest.raises(TypeError):
        cl.fit(bluebirds, "online_ds", passes=1, momentum=0.9)
    with pytest.raises(ModelError):
        make_model("online_nope")
    with pytest.raises(ModelError):
        OnlineDawidSkene().check(load_sample("affect"))


def test_cli_online_writes_files(tmp_path, capsys):
    labels, gold = sample_paths("rte")
    out = tmp_path / "out"
    code = main(["fit", str(labels), "--gold", str(gold), "--method", "online_ds", "--passes", "3", "--buckets",
                 "32", "--eta0", "0.8", "--tau0", "5", "--rho", "0.7", "--batch-size", "20", "--seed", "1",
                 "--worker-steps", "--out", str(out)])  # fmt: skip
    assert code == 0
    names = {p.name for p in out.iterdir()}
    assert {"posteriors.csv", "labels.csv", "workers.csv", "params.json", "history.json", "metrics.json"} <= names
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["accuracy"] > 0.85
    params = json.loads((out / "params.json").read_text())
    assert params["method"] == "online_ds" and max(params["bucket"]) < 32
    printed = capsys.readouterr().out
    assert "example" in printed and "counter" in printed and "3 passes" in printed


def test_an_item_without_labels_gets_the_class_prior():
    from crowdlab.io.data import Annotations

    data = Annotations(
        item=np.array([0, 0, 2, 2]), worker=np.array([0, 1, 0, 1]), label=np.array([0, 1, 1, 1]),
        item_names=("a", "b", "c"), worker_names=("x", "y"), class_names=("n", "p"),
    )  # fmt: skip
    run = OnlineRun(data, OnlineDawidSkene(batch_size=1, passes=2, prior=0.0))
    run.run()
    assert not run.violations and np.all(np.isfinite(run.posterior))
    np.testing.assert_allclose(run.posterior[1], run.params.pi)  # no labels: q = pi
    F, _, item = run.progress.arrays()
    np.testing.assert_allclose(F[item == 1], 0.0, atol=1e-12)  # log sum_k pi_k = 0
