"""Accelerated EM (SQUAREM, `crowdlab.engines.accel`) on the streaming and Dask engines (issue 40 section 1): the
fixed point of plain EM run to its own end, in fewer passes over the data, never going down; the default of the
engines' front doors, and ``accelerate=False`` still plain EM.

Two data sets: the bundled bluebirds (every model converges there in 25-64 plain iterations, so the stop's fixed
costs, 8 confirmation steps and a maximum check of 12-25 evaluations, make an accelerated fit take about as many
passes as plain EM: only the fixed point is asserted there), and a weak binary crowd written here (400 items, 20
novices of accuracy 0.55-0.7, 3 labels an item), where plain EM creeps for 140-765 iterations as it does on large
real sets: there the accelerated run must also take fewer passes than the plain run of the same engine."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

import crowdlab as cl
from crowdlab.cli import main
from crowdlab.engines.stream import fit_file
from crowdlab.io.data import read_annotations, to_long_dataframe
from crowdlab.io.samples import sample_paths
from crowdlab.teaching.simulate import simulate_crowd

MODELS = ("ds", "one_coin", "two_coin", "mace", "mace_vb", "ibcc", "ebcc", "glad")  # both sets are binary
WEAK = dict(n_items=400, n_workers=20, n_classes=2, labels_per_item=3, mix={"novice": 1.0})


@pytest.fixture(scope="module")
def weak(tmp_path_factory):
    """The weak crowd's label file (long CSV)."""
    sim = simulate_crowd(**WEAK, novice_accuracy=(0.55, 0.7), seed=1)
    path = tmp_path_factory.mktemp("weak") / "weak.csv"
    to_long_dataframe(sim.annotations)[["item", "worker", "label"]].to_csv(path, index=False)
    return path


@functools.cache
def _plain_end(path: str, method: str) -> float:
    """The objective where plain EM in memory ends when run to its own fixed point (test_accel.py's reference)."""
    run = cl.fit(read_annotations(path), method, accelerate=False, tol=1e-12, max_iter=20000, restarts=1)
    return float(run.last.objective)


@functools.cache
def _plain_stream_passes(path: str, method: str) -> int:
    """The passes of the streaming engine's plain EM (the Dask engine's plain EM makes the same rounds: both equal
    the in-memory plain fit half-step for half-step, tests/unit/test_engine_models.py)."""
    run = fit_file(path, method, chunk_rows=400, accelerate=False, restarts=1)
    assert run.acceleration is None and run.stop_reason == "converged"
    return int(run.timings["rounds"])


def _assert_accelerated_fixed_point(run, path, method) -> None:
    """At plain EM's fixed point (1e-6 relative; above it only after leaving a saddle, said in ``saddles``),
    stopped by the accelerated rule after a passed maximum check, never going down, every pass counted."""
    acc = run.acceleration
    assert acc is not None and run.stop_reason == "converged" and run.converged
    assert acc.check["passed"] and acc.gap <= 1e-8 * 1e4
    plain = _plain_end(str(path), method)
    rel = (run.last.objective - plain) / abs(plain)
    assert abs(rel) <= 1e-6 or (acc.saddles and rel > 0), (run.last.objective, plain, acc.summary())
    assert run.violations == []
    hist = np.asarray(run.objective_history())
    assert np.all(np.diff(hist) >= -1e-9 * abs(hist[-1]))  # monotone (the EM models' log-likelihood, VB's ELBO)
    assert acc.passes == run.timings["rounds"] >= acc.evaluations - acc.check["evaluations"]
    assert run.last.iteration + acc.check["evaluations"] == acc.evaluations


def _check(fit_one, method, weak) -> None:
    birds, _ = sample_paths("bluebirds")
    _assert_accelerated_fixed_point(fit_one(birds, method), birds, method)
    run = fit_one(weak, method)
    _assert_accelerated_fixed_point(run, weak, method)
    plain = _plain_stream_passes(str(weak), method)
    # 2.5-9x fewer (GLAD: 3.6x, 180 passes against 642; its M-step is 2 of the 3 passes of an evaluation)
    assert 2 * run.timings["rounds"] < plain, (run.timings["rounds"], plain)


@pytest.mark.parametrize("method", MODELS)
def test_accelerated_stream_reaches_plain_ems_fixed_point_in_fewer_passes(method, weak):
    _check(lambda path, m: fit_file(path, m, chunk_rows=400, restarts=1), method, weak)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    from crowdlab.engines.distributed import NO_DASHBOARD

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, **NO_DASHBOARD)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.mark.parametrize("method", MODELS)
def test_accelerated_dask_reaches_plain_ems_fixed_point_in_fewer_passes(method, weak, client):
    from crowdlab.engines.distributed import fit

    _check(lambda path, m: fit(str(path), m, client=client, npartitions=3, restarts=1), method, weak)


def test_the_engines_run_the_in_memory_accelerated_path():
    """One mechanism: the streaming engine's accelerated run takes the in-memory accelerated run's path (the same
    evaluations, cycles and fallbacks) and ends at its objective and posterior, the posterior at its parameters."""
    labels, _ = sample_paths("bluebirds")
    data = read_annotations(labels)
    for method in ("ds", "mace", "ibcc"):
        mem = cl.fit(data, method)
        eng = fit_file(labels, method, chunk_rows=500)
        a, b = mem.acceleration, eng.acceleration
        assert (a.evaluations, a.cycles, a.fallbacks) == (b.evaluations, b.cycles, b.fallbacks)
        assert eng.last.iteration == mem.last.iteration and list(eng.history()["kind"]) == list(mem.history()["kind"])
        np.testing.assert_allclose(eng.objective_history(), mem.objective_history(), rtol=1e-10)
        np.testing.assert_allclose(eng.posterior, mem.posterior, rtol=0, atol=1e-10)
        # the passes: the votes, then one per E-step of an evaluated point, one more for the reported posterior
        assert b.evaluations < b.passes <= 2 + 4 * b.cycles + 8 + b.check["evaluations"] + 1
    # GLAD: its M-step's line searches take or halve steps at rounding level by the order of the sums, so the path
    # may differ by an evaluation (42 and 42 here); the end is the same
    mem, eng = cl.fit(data, "glad"), fit_file(labels, "glad", chunk_rows=500)
    assert abs(eng.last.objective - mem.last.objective) <= 1e-10 * abs(mem.last.objective)
    np.testing.assert_allclose(eng.posterior, mem.posterior, rtol=0, atol=1e-6)
    np.testing.assert_allclose(eng.params.beta, mem.params.beta, rtol=1e-5)


def test_glad_counts_every_pass_over_the_buckets(weak, monkeypatch):
    """GLAD's passes (the start, E passes, the M-step's trial, value and difficulty passes, a re-evaluation) are
    what its streaming ops count: every read of the buckets, plain and accelerated."""
    from crowdlab.engines import glad_blocks

    made = []

    class Counting(glad_blocks.StreamOps):
        def __init__(self, blocks, *args, **kw) -> None:
            self.reads = 0

            def counted():
                self.reads += 1
                return blocks()

            super().__init__(counted, *args, **kw)
            made.append(self)

    monkeypatch.setattr(glad_blocks, "StreamOps", Counting)
    for path in (sample_paths("bluebirds")[0], weak):
        for accelerate in (False, True):
            run = fit_file(path, "glad", chunk_rows=400, accelerate=accelerate, restarts=1)
            ops = made[-1]
            assert ops.passes == ops.reads == run.timings["rounds"] > 2 * run.last.iteration


@pytest.mark.parametrize("method", ["ibcc", "glad"])
def test_accelerated_stream_with_known_classes_ends_where_the_in_memory_fit_ends(method, tmp_path):
    labels, gold = sample_paths("bluebirds")
    g = pd.read_csv(gold, dtype=str).iloc[::5]
    known = dict(zip(g["item"], g["label"]))
    data = read_annotations(labels)
    codes = np.full(data.n_items, -1)
    index = {name: n for n, name in enumerate(data.item_names)}
    for item, label in known.items():
        codes[index[item]] = data.class_names.index(label)
    mem = cl.fit(data, method, known=codes)
    eng = fit_file(labels, method, chunk_rows=300, known=known)
    assert eng.acceleration is not None and eng.stop_reason == "converged" and eng.violations == []
    assert abs(eng.last.objective - mem.last.objective) <= 1e-8 * abs(mem.last.objective)
    np.testing.assert_allclose(eng.posterior, mem.posterior, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(eng.labels()[codes >= 0], codes[codes >= 0])


def test_front_doors_accelerate_the_engines_by_default(weak, tmp_path, capsys):
    """``crowdlab fit --stream`` says what accelerated EM did (and writes it to history.json, with the passes);
    ``--plain`` runs plain EM; the DataFrame API's engine="stream" accelerates unless accelerate=False."""
    import json

    out, plain = tmp_path / "acc", tmp_path / "plain"
    assert main(["fit", str(weak), "--method", "ds", "--stream", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "accelerated EM (SQUAREM)" in said and "passes over the data" in said and "engine: stream; converged" in said
    history = json.loads((out / "history.json").read_text())
    assert history["acceleration"]["passes"] < 300 and history["engine"] == "stream"
    assert main(["fit", str(weak), "--method", "ds", "--stream", "--plain", "--out", str(plain)]) == 0
    said = capsys.readouterr().out
    assert "SQUAREM" not in said and "EM: 763 iterations" in said
    assert "acceleration" not in json.loads((plain / "history.json").read_text())
    mem = cl.fit(read_annotations(weak), "ds")  # the in-memory accelerated fit: the same path
    got = pd.read_csv(out / "posteriors.csv")[["p_0", "p_1"]].to_numpy()
    np.testing.assert_allclose(got, mem.posterior, rtol=0, atol=1e-8)
    df = pd.read_csv(weak).rename(columns={"item": "task"})
    fast = cl.DawidSkene(engine="stream").fit(df)
    slow = cl.DawidSkene(engine="stream", accelerate=False).fit(df)
    assert fast.run_.acceleration is not None and slow.run_.acceleration is None
    assert fast.n_iter_ < slow.n_iter_ / 4
    same = cl.DawidSkene().fit(df)  # in memory, accelerated
    np.testing.assert_allclose(fast.probas_.to_numpy(), same.probas_.to_numpy(), rtol=0, atol=1e-6)


def test_dask_fit_accelerates_by_default(weak, client):
    from crowdlab.engines.distributed import fit

    run = fit(str(weak), "ibcc", client=client, npartitions=2)
    assert run.acceleration is not None and run.stop_reason == "converged"
    assert "passes over the data" in run.acceleration.summary()
    eng = cl.IBCC(engine="dask", client=client).fit(pd.read_csv(weak).rename(columns={"item": "task"}))
    assert eng.run_.acceleration is not None and eng.stop_reason_ == "converged"
    frame = run.posterior_frame()
    p0 = pd.Series(frame["p_0"].to_numpy(), index=frame["item"].astype(int)).sort_index()
    np.testing.assert_allclose(eng.probas_[0].sort_index().to_numpy(), p0.to_numpy(), atol=1e-5)
