"""Every class model the engines offer (MACE by EM and VB, IBCC, EBCC, semi-supervised known labels) equals the
in-memory fit to 1e-8 on the streaming engine (a streamed file, chunks that cut items) and on a real 2-worker Dask
LocalCluster (EBCC's random start is drawn from each item's name, so every partition draws what the in-memory fit
draws); what needs the whole data set in memory is refused with a message that says why and what to use."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

import crowdlab as cl
from crowdlab.cli import main
from crowdlab.engines.blocks import ENGINE_METHODS
from crowdlab.engines.stream import fit_file
from crowdlab.errors import DataError, ModelError
from crowdlab.io.data import read_annotations, to_long_dataframe
from crowdlab.io.samples import sample_paths
from crowdlab.teaching.simulate import simulate_crowd
from tests.unit.test_stream import assert_same_fit

# the engines' plain EM (accelerate=False) equals the in-memory fit's plain EM, half-step for half-step: these
# tests compare the two (the accelerated engines: tests/unit/test_engine_accel.py)
plain_fit = functools.partial(cl.fit, accelerate=False)

NEW = ["glad", "mace", "mace_vb", "ibcc", "ebcc"]
FAST = ["bluebirds", "patients"]
SLOW = ["simulated", "rte", "dogs"]  # the same checks, marked slow (EBCC on dogs takes ~1 min)
DASK_FAST = ["patients"]  # a Dask round costs ~40 ms of scheduling: the other sets run in the slow suite


def assert_same_params(mem, eng, tol=1e-8):
    """Every floating-point parameter (the models' own: theta, xi, Dirichlet posteriors, ...) agrees to ``tol``."""
    from crowdlab.engines.run import param_vector

    a, b = param_vector(mem.params), param_vector(eng.params)
    assert a.shape == b.shape
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol)


def _check_stream(key, method, tmp_path, **kw):
    labels, _ = sample_paths(key)
    limit = 300 if key == "simulated" else 10000
    mem = plain_fit(read_annotations(labels), method, max_iter=limit, **kw)
    rows = 37 if method not in ("ebcc", "glad") else 400
    eng = fit_file(labels, method, chunk_rows=rows, workdir=tmp_path, max_iter=limit, accelerate=False, **kw)
    assert_same_fit(mem, eng)
    assert_same_params(mem, eng)
    assert eng.violations == [] and mem.stop_reason == eng.stop_reason
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("key", FAST)
@pytest.mark.parametrize("method", NEW)
def test_stream_new_models_equal_in_memory(key, method, tmp_path):
    _check_stream(key, method, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("key", SLOW)
@pytest.mark.parametrize("method", NEW)
def test_stream_new_models_equal_in_memory_larger_sets(key, method, tmp_path):
    _check_stream(key, method, tmp_path)


def test_stream_model_options_and_prior(tmp_path):
    """MACE with an estimated class prior and a prior strength: the options reach the engine's model."""
    labels, _ = sample_paths("bluebirds")
    mem = plain_fit(read_annotations(labels), "mace", prior=0.5, model_options={"class_prior": "estimate"})
    eng = fit_file(
        labels, "mace", chunk_rows=100, prior=0.5, model_options={"class_prior": "estimate"}, accelerate=False
    )
    assert_same_fit(mem, eng)
    assert_same_params(mem, eng)
    assert abs(eng.params.pi[0] - 0.5) > 1e-3  # estimated, not the uniform prior


def _known_file(tmp_path, key="dogs", every=7):
    labels, gold = sample_paths(key)
    g = pd.read_csv(gold, dtype=str).iloc[::every]
    path = tmp_path / "known.csv"
    g.to_csv(path, index=False)
    return labels, path


@pytest.mark.parametrize(
    "method",
    ["glad", "mace_vb", "ebcc", *(pytest.param(m, marks=pytest.mark.slow) for m in ("ds", "one_coin", "mace", "ibcc"))],
)
def test_stream_known_labels_equal_in_memory(method, tmp_path):
    labels, known = _known_file(tmp_path, "bluebirds", every=5)
    data = read_annotations(labels)
    from crowdlab.cli import _known_codes

    mem = plain_fit(data, method, known=_known_codes(str(known), data))
    work = tmp_path / "work"
    work.mkdir()
    eng = fit_file(labels, method, chunk_rows=300, known=known, workdir=work, accelerate=False)
    assert_same_fit(mem, eng)
    # GLAD stops here by the stall rule (37 iterations on both engines), not at a stationary point, and its halving
    # line search takes or halves a step whose change is at rounding level by the order of a sum, which the blocks
    # change: on an AMD EPYC machine one item's difficulty (1 of 305 parameters) ended 2.7e-8 apart (1e-8 elsewhere)
    assert_same_params(mem, eng, tol=1e-7 if method == "glad" else 1e-8)
    fixed = mem.model.known_classes(data)
    assert (fixed >= 0).sum() == 22
    np.testing.assert_array_equal(eng.labels()[fixed >= 0], fixed[fixed >= 0])  # clamped
    # a mapping item -> class gives the same fit
    g = pd.read_csv(known, dtype=str)
    again = fit_file(
        labels, method, chunk_rows=300, known=dict(zip(g["item"], g["label"])), workdir=work, accelerate=False
    )
    np.testing.assert_array_equal(again.posterior, eng.posterior)


def test_known_labels_refused_with_reasons(tmp_path):
    labels, _ = sample_paths("bluebirds")
    with pytest.raises(DataError, match="no labels in the data"):
        fit_file(labels, "ds", known={"not-an-item": "1"})
    with pytest.raises(DataError, match="classes no worker used"):
        fit_file(labels, "ds", known={read_annotations(labels).item_names[0]: "zebra"})
    with pytest.raises(ModelError, match="no semi-supervised version"):
        fit_file(labels, "mv", known={read_annotations(labels).item_names[0]: "1"})


def test_glad_on_stream_keeps_every_difficulty(tmp_path):
    """GLAD's per-item difficulties on the streaming engine: beta for every item, in the in-memory order."""
    labels, _ = sample_paths("patients")
    mem = plain_fit(read_annotations(labels), "glad")
    eng = fit_file(labels, "glad", chunk_rows=20, accelerate=False)
    assert eng.params.beta.shape == (45,)
    np.testing.assert_allclose(eng.params.beta, mem.params.beta, rtol=0, atol=1e-8)
    np.testing.assert_allclose(eng.params.alpha, mem.params.alpha, rtol=0, atol=1e-8)
    assert "glad" in ENGINE_METHODS


@pytest.mark.parametrize(("after", "reason"), [(3, "stalled"), (60, "converged")])
def test_glad_stall_is_judged_alike_in_memory_and_on_the_engines(monkeypatch, client, after, reason):
    """A GLAD run that stalls (`stalled_at`, forced here once ``after`` iterations are done) ends "converged" when
    the gradient leaves nothing to gain there (`crowdlab.engines.run.at_optimum`), else "stalled": the streaming
    and Dask engines' driver decides it from its block sums as the in-memory Run does from the data."""
    from crowdlab.engines import blocks, glad_blocks, run
    from crowdlab.engines.distributed import fit

    def forced(snaps):
        return max((s.iteration for s in snaps if s.kind == "M"), default=0) >= after

    for module in (run, blocks, glad_blocks):
        monkeypatch.setattr(module, "stalled_at", forced)
    labels, _ = sample_paths("bluebirds")
    mem = plain_fit(read_annotations(labels), "glad")
    for eng in (
        fit_file(labels, "glad", chunk_rows=400, accelerate=False),
        fit(str(labels), "glad", client=client, npartitions=2, accelerate=False),
    ):
        assert mem.last.iteration == eng.last.iteration == after
        assert mem.stop_reason == eng.stop_reason == reason
        assert mem.converged == eng.converged == (reason == "converged")
        assert_same_fit(mem, eng)


def test_cli_stream_accepts_the_new_methods_and_known(tmp_path, capsys):
    labels, known = _known_file(tmp_path, "bluebirds", every=5)
    for method in ("glad", "mace", "mace_vb", "ibcc", "ebcc"):
        out = tmp_path / f"out-{method}"
        argv = ["fit", str(labels), "--method", method, "--stream", "--plain", "--known", str(known)]
        assert main([*argv, "--out", str(out)]) == 0
        said = capsys.readouterr().out
        assert "semi-supervised: 22 items keep their known class" in said and "engine: stream" in said
        mem_out = tmp_path / f"mem-{method}"
        plain = ["--plain", "--known", str(known)]  # both plain EM
        assert main(["fit", str(labels), "--method", method, *plain, "--out", str(mem_out)]) == 0
        a = pd.read_csv(out / "posteriors.csv")
        b = pd.read_csv(mem_out / "posteriors.csv")
        cols = [c for c in a.columns if c.startswith("p_")]
        np.testing.assert_allclose(a[cols].to_numpy(), b[cols].to_numpy(), atol=1e-8)
    capsys.readouterr()
    assert main(["fit", str(labels), "--method", "scores", "--stream", "--out", str(tmp_path / "g")]) != 0
    assert "needs the whole data set in memory" in capsys.readouterr().err


# ---------------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    from crowdlab.engines.distributed import NO_DASHBOARD

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, **NO_DASHBOARD)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _check_dask(key, method, client, **kw):
    from crowdlab.engines.distributed import fit

    labels, _ = sample_paths(key)
    limit = 300 if key == "simulated" else 10000
    mem = plain_fit(read_annotations(labels), method, max_iter=limit)
    run = fit(str(labels), method, client=client, npartitions=3, max_iter=limit, accelerate=False, **kw)
    assert_same_fit(mem, run)
    assert_same_params(mem, run)
    assert run.violations == [] and run.stop_reason == mem.stop_reason


@pytest.mark.parametrize("key", DASK_FAST)
@pytest.mark.parametrize(
    "method", ["glad", "ibcc", "ebcc", *(pytest.param(m, marks=pytest.mark.slow) for m in ("mace", "mace_vb"))]
)
def test_dask_new_models_equal_in_memory(key, method, client):
    _check_dask(key, method, client)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["bluebirds", *SLOW])
@pytest.mark.parametrize("method", ["glad", "mace", "mace_vb", "ibcc", "ebcc"])
def test_dask_new_models_equal_in_memory_larger_sets(key, method, client):
    _check_dask(key, method, client)


@pytest.mark.parametrize(
    "method", ["ibcc", *(pytest.param(m, marks=pytest.mark.slow) for m in ("glad", "ds", "mace", "ebcc"))]
)
def test_dask_known_labels_equal_in_memory(method, client, tmp_path):
    from crowdlab.cli import _known_codes
    from crowdlab.engines.distributed import fit

    labels, known = _known_file(tmp_path, "bluebirds", every=4)
    data = read_annotations(labels)
    mem = plain_fit(data, method, known=_known_codes(str(known), data))
    run = fit(str(labels), method, client=client, npartitions=4, known=known, accelerate=False)
    assert_same_fit(mem, run)
    # GLAD: as in test_stream_known_labels_equal_in_memory (stall rule; one item's difficulty 3.9e-8 apart on AMD)
    assert_same_params(mem, run, tol=1e-7 if method == "glad" else 1e-8)
    fixed = mem.model.known_classes(data)
    np.testing.assert_array_equal(run.labels()[fixed >= 0], fixed[fixed >= 0])
    with pytest.raises(DataError, match="no labels in the data"):
        fit(str(labels), method, client=client, known={"nope": data.class_names[0]})


def test_cli_engine_dask_runs_ebcc_with_known_labels(client, tmp_path, capsys):
    """``crowdlab fit --method ebcc --engine dask --known``: the posteriors the in-memory CLI writes, to 1e-8."""
    labels, known = _known_file(tmp_path, "bluebirds", every=5)
    address = client.scheduler.address
    out, mem = tmp_path / "dask", tmp_path / "mem"
    argv = ["fit", str(labels), "--method", "ebcc", "--known", str(known)]
    assert main([*argv, "--engine", "dask", "--scheduler", address, "--npartitions", "3", "--out", str(out)]) == 0
    assert "engine: dask" in capsys.readouterr().out
    assert main([*argv, "--out", str(mem)]) == 0
    a, b = (pd.read_csv(d / "posteriors.csv").set_index("item").sort_index() for d in (out, mem))
    cols = [c for c in a.columns if c.startswith("p_")]
    assert len(cols) == 2 and len(a) == 108
    np.testing.assert_allclose(a[cols].to_numpy(), b[cols].to_numpy(), atol=1e-8)


def test_dask_refuses_what_needs_memory(client):
    from crowdlab.engines.distributed import fit

    labels, _ = sample_paths("patients")
    with pytest.raises(ModelError, match="need.*in memory"):
        fit(str(labels), "scores", client=client)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["glad", "mace", "mace_vb", "ibcc", "ebcc"])
def test_million_labels_both_engines(method, client, tmp_path):
    """A simulated crowd of 10^6 labels (100,000 items x 10 labels, 400 workers, 3 classes): the streamed file and
    the Dask engine over 4 partitions equal the in-memory fit to 1e-8."""
    from crowdlab.engines.distributed import fit

    path = tmp_path / "million.csv"
    if not path.exists():
        sim = simulate_crowd(n_items=100_000, n_workers=400, n_classes=3, labels_per_item=10, seed=3)
        to_long_dataframe(sim.annotations)[["item", "worker", "label"]].to_csv(path, index=False)
    data = read_annotations(path)
    assert data.n_obs == 10**6
    # GLAD to the fit's end (plain EM converges at iteration 84): mid-run, a safeguarded step whose check sits at
    # rounding level may be taken in one engine and halved in another for results that differ in the last bit
    # (GLAD's first M-step, comparing values, once left one of 104,003 parameters 2.4e-8 apart after 15
    # iterations); at the end they agree to 1e-8 and stop alike
    limit = 100 if method == "glad" else 60
    mem = plain_fit(data, method, max_iter=limit)
    work = tmp_path / "work"
    work.mkdir()
    eng = fit_file(path, method, chunk_rows=200_000, max_iter=limit, workdir=work, accelerate=False)
    assert_same_fit(mem, eng)
    assert_same_params(mem, eng)
    run = fit(str(path), method, client=client, npartitions=4, max_iter=limit, accelerate=False)
    assert_same_fit(mem, run)
    assert_same_params(mem, run)


# ---------------------------------------------------------------------- the DataFrame API's engine= option
def _frame_pair(est_cls, df, **kw):
    mem = est_cls(accelerate=False, **kw).fit(df)  # plain EM on both engines
    eng = est_cls(engine="stream", chunk_rows=500, accelerate=False, **kw).fit(df)
    pd.testing.assert_index_equal(mem.probas_.index, eng.probas_.index)
    np.testing.assert_allclose(eng.probas_.to_numpy(), mem.probas_.to_numpy(), rtol=0, atol=1e-8)
    np.testing.assert_allclose(eng.errors_.to_numpy(), mem.errors_.to_numpy(), rtol=0, atol=1e-8)
    assert eng.labels_.equals(mem.labels_) and eng.stop_reason_ == mem.stop_reason_
    return mem, eng


def test_estimators_engine_stream_equal_memory():
    """engine="stream" fits the DataFrame's own codes: results in its own task, worker and class order and values."""
    labels, _ = sample_paths("bluebirds")
    df = pd.read_csv(labels).rename(columns={"item": "task"})
    df["worker"] = "w" + df["worker"].astype(str)  # text workers, integer tasks and labels
    _frame_pair(cl.DawidSkene, df, prior=0.5)
    _, eng = _frame_pair(cl.MACE, df, inference="vb")
    assert eng.spamming_intervals_.shape == (39, 2)
    task = df["task"].iloc[0]
    mem, eng = _frame_pair(cl.GLAD, df, known={task: 1})
    assert eng.labels_[task] == 1
    np.testing.assert_allclose(eng.difficulties_.to_numpy(), mem.difficulties_.to_numpy(), atol=1e-8)
    plain = cl.aggregate(df, "ibcc", accelerate=False)
    assert cl.aggregate(df, "ibcc", engine="stream", accelerate=False).equals(plain)


def test_estimators_engine_refusals():
    labels, _ = sample_paths("patients")
    df = pd.read_csv(labels)
    with pytest.raises(ValueError, match="engine must be one of memory, stream, dask"):
        cl.DawidSkene(engine="spark")
    with pytest.raises(ValueError, match="hard=True needs engine='memory'"):
        cl.DawidSkene(engine="stream", hard=True)
    with pytest.raises(ValueError, match="init='random' needs engine='memory'"):
        cl.GLAD(engine="dask", init="random").fit(df)


def test_estimators_engine_dask_equal_memory(client):
    labels, _ = sample_paths("patients")
    df = pd.read_csv(labels)
    mem = cl.IBCC(accelerate=False).fit(df)
    eng = cl.IBCC(engine="dask", client=client, accelerate=False).fit(df)
    np.testing.assert_allclose(eng.probas_.to_numpy(), mem.probas_.to_numpy(), rtol=0, atol=1e-8)
    assert eng.labels_.equals(mem.labels_)


def test_stream_known_from_a_column_of_the_file(tmp_path, capsys):
    """known_column / --known-column: the classes in a column of the label file itself (blank: unknown) give the
    fit of the same classes as a known-labels file."""
    labels, known = _known_file(tmp_path, "bluebirds", every=5)
    rows = pd.read_csv(labels, dtype=str)
    fixed = pd.read_csv(known, dtype=str).set_index("item")["label"]
    rows["truth"] = rows["item"].map(fixed).where(rows.index % 3 == 0)  # on some of an item's rows only
    with_col = tmp_path / "with_truth.csv"
    rows.to_csv(with_col, index=False)
    used = rows.dropna().drop_duplicates("item")[["item", "truth"]]
    sub = tmp_path / "used.csv"
    used.rename(columns={"truth": "label"}).to_csv(sub, index=False)
    a = fit_file(with_col, "ibcc", chunk_rows=200, known_column="truth")
    b = fit_file(labels, "ibcc", chunk_rows=200, known=sub)
    np.testing.assert_array_equal(a.posterior, b.posterior)
    assert any("from column 'truth'" in n for n in a.data.notes) and len(used) > 5
    out = tmp_path / "o"
    assert (
        main(["fit", str(with_col), "--stream", "--method", "ibcc", "--known-column", "truth", "--out", str(out)]) == 0
    )
    assert f"semi-supervised: {len(used)} items keep their known class" in capsys.readouterr().out
    first_two = rows.index[rows["item"] == rows.loc[0, "item"]][:2]  # one item's two rows, two classes
    rows.loc[first_two, "truth"] = ["0", "1"]
    rows.to_csv(with_col, index=False)
    with pytest.raises(DataError, match="more than one class"):
        fit_file(with_col, "ibcc", known_column="truth")
    with pytest.raises(DataError, match="no column 'nope'"):
        fit_file(with_col, "ibcc", known_column="nope")
