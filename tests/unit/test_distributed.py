"""Batch EM on a real Dask cluster (crowdlab.engines.distributed) equals the in-memory fit."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

import crowdlab as cl
from crowdlab.cli import main
from crowdlab.engines.stream import fit_file
from crowdlab.errors import DataError
from crowdlab.io.data import read_annotations, to_long_dataframe
from crowdlab.io.samples import sample_paths
from crowdlab.teaching.simulate import simulate_crowd
from tests.unit.test_stream import assert_formula_cells_escaped, assert_same_files, assert_same_fit, write_formula_file

# the engines' plain EM (accelerate=False) equals the in-memory fit's plain EM, half-step for half-step
plain_fit = functools.partial(cl.fit, accelerate=False)

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    from crowdlab.engines.distributed import NO_DASHBOARD

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, **NO_DASHBOARD)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _fit(source, method, client, **kw):
    from crowdlab.engines.distributed import fit

    kw.setdefault("accelerate", False)  # compared with plain_fit
    return fit(source, method, client=client, **kw)


@pytest.mark.parametrize(
    "key, method",
    [
        ("bluebirds", "ds"),
        ("rte", "two_coin"),
        ("dogs", "one_coin"),
        ("patients", "ds"),
        ("simulated", "mv"),
        ("simulated", "ds"),
    ],
)
def test_dask_equals_in_memory_on_bundled_data(key, method, client):
    labels, _ = sample_paths(key)
    # the simulated crowd's slow tail (a spammer's confusion entries creeping to 0) runs 5,000 iterations to the
    # stopping rule; both engines stop at the same iteration limit instead (one Dask round costs ~40 ms)
    limit = 300 if key == "simulated" else 10000
    mem = plain_fit(read_annotations(labels), method, max_iter=limit)
    run = _fit(str(labels), method, client, npartitions=3, max_iter=limit)
    assert_same_fit(mem, run)
    assert run.violations == [] and run.engine == "dask"
    hist = run.objective_history()
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(hist, hist[1:]))  # never decreases
    assert run.posteriors.npartitions == 3  # a Dask DataFrame until computed
    np.testing.assert_allclose(run.posterior.sum(axis=1), 1.0)


def test_dask_equals_in_memory_on_simulated_crowd_from_a_dask_frame(client, tmp_path):
    sim = simulate_crowd(n_items=400, n_workers=25, n_classes=3, labels_per_item=4, seed=7)
    frame = to_long_dataframe(sim.annotations)[["item", "worker", "label"]].astype(str)
    path = tmp_path / "sim.csv"
    frame.to_csv(path, index=False)
    mem = plain_fit(read_annotations(path), "ds", prior=0.5)
    run = _fit(dd.from_pandas(frame.sample(frac=1.0, random_state=1), npartitions=5), "ds", client, prior=0.5)
    assert_same_fit(mem, run)
    hist = run.objective_history()
    assert len(hist) > 3 and np.all(np.diff(hist) >= -1e-9 * np.abs(hist[1:]))


def test_large_parameters_are_broadcast_once_and_the_fit_is_the_same(client, monkeypatch):
    """Parameters over BROADCAST_BYTES go to every worker once per round (the actors read them from the worker's
    memory); the fit is the one whose parameters travel in the calls, and the in-memory one."""
    import crowdlab.engines.distributed as dist

    labels, _ = sample_paths("bluebirds")
    sent = _fit(str(labels), "ds", client, npartitions=3)
    scattered = []
    real = client.scatter
    monkeypatch.setattr(client, "scatter", lambda *a, **k: scattered.append(1) or real(*a, **k))
    monkeypatch.setattr(dist, "BROADCAST_BYTES", 0)
    broadcast = _fit(str(labels), "ds", client, npartitions=3)
    assert len(scattered) == broadcast.timings["rounds"] - 1  # every round after the majority-vote start
    # the same numbers up to the order in which the workers' sums are added (the shuffle places the partitions)
    np.testing.assert_allclose(broadcast.objective_history(), sent.objective_history(), rtol=1e-12)
    np.testing.assert_allclose(broadcast.posterior, sent.posterior, rtol=0, atol=1e-10)
    assert_same_fit(plain_fit(read_annotations(labels), "ds"), broadcast)


def test_partitions_by_item_one_item_empty_and_a_worker_in_one_partition(client, tmp_path):
    rng = np.random.default_rng(0)
    rows = [(f"i{i}", f"w{w}", str(int(rng.random() < 0.3 + 0.4 * (i % 2)))) for i in range(30) for w in range(4)]
    big = pd.DataFrame(rows, columns=["task", "annotator", "answer"])
    one_item = pd.DataFrame([("solo", "w0", "1"), ("solo", "lonely", "0"), ("solo", "w2", "1")], columns=big.columns)
    empty = big.iloc[:0]
    parts = [big.iloc[:60], one_item, empty, big.iloc[60:]]
    ddf = dd.from_map(lambda i: parts[i], range(4), meta=big.iloc[:0])
    whole = pd.concat(parts, ignore_index=True)
    path = tmp_path / "parts.csv"
    whole.to_csv(path, index=False)
    data = read_annotations(path)
    assert "lonely" in data.worker_names
    for method in ("ds", "mv"):  # 12 iterations: this small crowd converges slowly
        run = _fit(ddf, method, client, by_item=True, max_iter=12)
        assert_same_fit(plain_fit(data, method, max_iter=12), run)
    # the same rows in partitions that split items: refused with by_item=True, shuffled without it
    split = dd.from_map(lambda i: [whole.iloc[:50], whole.iloc[50:]][i], range(2), meta=big.iloc[:0])
    with pytest.raises(DataError, match="more than one partition"):
        _fit(split, "ds", client, by_item=True)
    assert_same_fit(
        plain_fit(data, "ds", max_iter=5), _fit(split, "ds", client, npartitions=7, max_iter=5)
    )  # more partitions than needed


def test_cli_engine_dask_on_parquet_and_csv_globs_writes_the_same_files(client, tmp_path, capsys):
    labels, _ = sample_paths("bluebirds")
    frame = pd.read_csv(labels, dtype=str)
    folder = tmp_path / "data"
    folder.mkdir()
    shuffled = frame.sample(frac=1.0, random_state=0)
    for i, piece in enumerate([shuffled.iloc[:1500], shuffled.iloc[1500:3000], shuffled.iloc[3000:]]):
        piece.to_parquet(folder / f"part{i}.parquet", index=False)
        piece.to_csv(folder / f"part{i}.csv", index=False)
    mem, pq, csv = tmp_path / "mem", tmp_path / "pq", tmp_path / "csv"
    assert main(["fit", str(labels), "--method", "ds", "--plain", "--out", str(mem)]) == 0
    address = client.scheduler.address
    dask = ["--engine", "dask", "--scheduler", address, "--plain"]
    assert main(["fit", str(folder / "*.parquet"), *dask, "--out", str(pq)]) == 0
    assert "engine: dask; converged" in capsys.readouterr().out
    assert_same_files(mem, pq)
    assert main(["fit", str(folder / "*.csv"), *dask, "--out", str(csv)]) == 0
    assert_same_files(mem, csv)


def test_bad_csv_part_names_file_and_row(client, tmp_path):
    (tmp_path / "a.csv").write_text("item,worker,label\n1,a,x\n1,b,y\n")
    (tmp_path / "b.csv").write_text("item,worker,label\n2,a,x\n2,b,\n")
    with pytest.raises(DataError) as exc:
        _fit(str(tmp_path / "*.csv"), "ds", client)
    assert exc.value.file == "b.csv" and exc.value.row == 3
    with pytest.raises(DataError, match="no file matches"):
        _fit(str(tmp_path / "*.parquet"), "ds", client)


def test_cli_engine_dask_escapes_formula_cells(client, tmp_path, capsys):
    path = write_formula_file(tmp_path / "formula.csv")
    address = client.scheduler.address
    assert main(["fit", str(path), "--engine", "dask", "--scheduler", address, "--out", str(tmp_path / "out")]) == 0
    assert_formula_cells_escaped(tmp_path / "out")


def test_cli_bad_input_is_one_line_without_worker_tracebacks(tmp_path, capfd):
    """A folder is not a file (as the in-memory reader says); a file the reader refuses on a worker of the
    default in-process cluster: its one-line DataError, without the worker's "Compute Failed" log and traceback."""
    folder, empty, out = tmp_path / "adir.csv", tmp_path / "empty.csv", str(tmp_path / "out")
    folder.mkdir()
    empty.write_bytes(b"")
    with pytest.raises(DataError) as mem:
        read_annotations(folder)
    assert main(["fit", str(folder), "--engine", "dask", "--out", out]) == 2
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: file '{folder}': {mem.value.problem} {mem.value.hint}")
    with pytest.raises(DataError) as mem:
        read_annotations(empty)
    assert main(["fit", str(empty), "--engine", "dask", "--out", out]) == 2
    assert capfd.readouterr().err.splitlines() == [f"error: {mem.value}"]


def test_frames_with_missing_cells_are_refused_and_classes_named_as_in_memory(client, tmp_path):
    """A null or blank id, a null or NaN-spelled label: a DataError naming the column (not dropped, not a raw
    ValueError). Spellings of one number: the class is named by the first row's, as in memory and streaming."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "task": [f"i{i}" for i in range(20) for _ in range(3)],
            "worker": [f"w{w}" for _ in range(20) for w in range(3)],
            "answer": rng.choice(["a", "b"], 60),
        }
    )
    for col, value in (("answer", np.nan), ("answer", "NA"), ("task", np.nan), ("worker", None)):
        bad = frame.copy()
        bad.loc[5, col] = value
        with pytest.raises(DataError, match="1 row has a blank or NaN") as exc:
            _fit(bad, "ds", client)
        assert exc.value.column == col and "at index 5" in str(exc.value)
    spellings = ["1.0", "2", "1", "2.0", "1", "2.0", "1", "2.0"]  # the later spellings are the more frequent
    path = tmp_path / "mixed.csv"
    path.write_text("item,worker,label\n" + "\n".join(f"i{n // 2},w{n % 2},{s}" for n, s in enumerate(spellings)))
    data = read_annotations(path)
    assert data.class_names == ("1.0", "2") == fit_file(path, "mv").data.class_names
    run = _fit(str(path), "mv", client)
    assert run.data.class_names == data.class_names
    assert_same_fit(plain_fit(data, "mv"), run)


@pytest.mark.slow
def test_default_local_cluster_is_started_and_closed():
    from crowdlab.engines.distributed import fit

    labels, _ = sample_paths("patients")
    run = fit(str(labels), "ds", accelerate=False)
    assert_same_fit(plain_fit(read_annotations(labels), "ds"), run)
    assert len(run.posteriors.compute()) == 45  # computable after the cluster closed


def test_nested_parquet_column_is_refused_not_loaded(client, tmp_path):
    """Issue 31: a list column read by Dask was loaded silently (its lists as text ids); it is refused, naming it."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"item": ["a", "a", "b", "b"], "worker": ["w1", "w2", "w1", "w2"], "label": [[1], [0], [1], [1]]})
    path = tmp_path / "nested.parquet"
    pq.write_table(table, path)
    with pytest.raises(DataError, match="nested values") as exc:
        _fit(str(path), "ds", client, by_item=True)
    assert exc.value.column == "label"


def test_null_item_in_a_frame_is_refused_not_named_none(client):
    """A None item id in a pandas frame stays missing through the partitions' Arrow coding (not the item "None")."""
    frame = pd.DataFrame(
        {"item": ["a", "a", None, "b"], "worker": ["w1", "w2", "w1", "w2"], "label": ["x", "y", "x", "y"]}
    )
    with pytest.raises(DataError, match="blank or NaN item id") as exc:
        _fit(frame, "ds", client, by_item=True)
    assert exc.value.column == "item"


def test_parquet_files_by_item_are_read_by_pyarrow_per_file(client, tmp_path, monkeypatch):
    """by_item=True on Parquet files: each file one partition read by pyarrow in its task (no pandas frame); the
    same fit as in memory, columns found by their aliases, a missing label named by column and row, files whose
    columns differ and an item in two files refused."""
    data = simulate_crowd(300, 8, 3, labels_per_item=4, seed=4).annotations
    frame = to_long_dataframe(data)
    cuts = [0, 400, 800, len(frame)]  # 4 labels per item: cuts at item boundaries
    folder = tmp_path / "by_item"
    folder.mkdir()
    for i in range(3):  # columns found by their aliases
        piece = frame.iloc[cuts[i] : cuts[i + 1]].rename(columns={"item": "task", "worker": "annotator"})
        piece.to_parquet(folder / f"p{i}.parquet", index=False)

    def not_dask(*a, **k):
        raise AssertionError("dask's read_parquet (pandas frames) was used")

    monkeypatch.setattr(dd, "read_parquet", not_dask)
    run = _fit(str(folder / "*.parquet"), "ds", client, by_item=True, max_iter=30)
    assert run.timings["partitions"] == 3
    rounds = run.timings["round_s"]  # one per round, from its start to the next one's
    assert len(rounds) == run.timings["rounds"] and min(rounds) > 0
    assert sum(rounds) <= run.timings["em_s"]  # from the first round's start to the end of EM
    assert run.timings["steady_s"] == pytest.approx(np.mean(rounds[2:]))
    assert_same_fit(plain_fit(data, "ds", max_iter=30), run)
    frame.iloc[:400].to_parquet(folder / "p0.parquet", index=False)  # item, worker: not the other files' names
    with pytest.raises(DataError, match="column"):
        _fit(str(folder / "*.parquet"), "ds", client, by_item=True)
    frame = frame.rename(columns={"item": "task", "worker": "annotator"})
    bad = frame.iloc[:400].astype({"label": object})
    bad.iloc[7, bad.columns.get_loc("label")] = None
    bad.to_parquet(folder / "p0.parquet", index=False)
    with pytest.raises(DataError, match="blank or NaN label") as err:
        _fit(str(folder / "*.parquet"), "ds", client, by_item=True)
    assert "index 7" in str(err.value)
    frame.iloc[:404].to_parquet(folder / "p0.parquet", index=False)  # item 101's rows in p0 and p1
    with pytest.raises(DataError, match="more than one partition"):
        _fit(str(folder / "*.parquet"), "ds", client, by_item=True)


def test_one_worker_cluster_fits_parquet_files_by_item(tmp_path):
    """One worker: nothing to deal the partitions to, no task pinned (``allow_other_workers`` without ``workers``
    was refused by distributed)."""
    from crowdlab.engines.distributed import NO_DASHBOARD

    data = simulate_crowd(120, 6, 2, labels_per_item=3, seed=1).annotations
    frame = to_long_dataframe(data)
    for i, (lo, hi) in enumerate([(0, 180), (180, len(frame))]):  # 3 labels per item: cut at an item boundary
        frame.iloc[lo:hi].to_parquet(tmp_path / f"p{i}.parquet", index=False)
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, **NO_DASHBOARD)
    with distributed.Client(cluster) as c:
        run = _fit(str(tmp_path / "*.parquet"), "ds", c, by_item=True, max_iter=20)
        assert_same_fit(plain_fit(data, "ds", max_iter=20), run)
    cluster.close()


def test_a_nanny_worker_raises_the_malloc_thresholds_a_plain_process_keeps_them():
    """distributed's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which makes every numpy temporary over
    128 kB a fresh mmap (a block round 2.5-3.5x slower); the round raises glibc's thresholds in such a process
    only."""
    import subprocess
    import sys

    code = "from crowdlab.engines.distributed import _tune_malloc as t; print(t(), t())"
    env = {k: v for k, v in __import__("os").environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert plain.stdout.split() == ["False", "False"]
    nanny = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**env, "MALLOC_TRIM_THRESHOLD_": "65536"}
    )
    assert nanny.stdout.split() == ["True", "False"]  # once per process


def test_an_infinite_label_among_numbers_is_refused_as_in_memory(client, tmp_path):
    """Issue 42 §7: a label `inf` was read as a class; Dask refuses it as the in-memory reader and the stream do."""
    f = tmp_path / "inf.csv"
    f.write_text("item,worker,label\n1,a,0\n1,b,inf\n2,a,1\n2,b,1\n3,a,0\n3,b,0\n")
    with pytest.raises(DataError, match=r"infinite number \('inf'\) among numeric labels"):
        _fit(str(f), "ds", client)
