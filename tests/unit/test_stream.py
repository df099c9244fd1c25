"""Streaming batch EM (crowdlab.engines.stream) equals the in-memory fit on every bundled label file, chunk by chunk."""

from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd
import pytest

import crowdlab as cl
from crowdlab.cli import main
from crowdlab.engines import stream
from crowdlab.engines.blocks import ArrowNames
from crowdlab.errors import DataError, ModelError
from crowdlab.io.data import read_annotations
from crowdlab.io.samples import sample_paths

# the engines' plain EM (accelerate=False) equals the in-memory fit's plain EM, half-step for half-step: these
# tests compare the two (the accelerated engines: tests/unit/test_engine_accel.py)
plain_fit = functools.partial(cl.fit, accelerate=False)
fit_file = functools.partial(stream.fit_file, accelerate=False)

CLASS_SAMPLES = ["bluebirds", "rte", "dogs", "patients", "simulated"]
METHODS = ["mv", "ds", "one_coin", "two_coin"]


def assert_same_fit(mem, eng, tol=1e-8):
    """Posteriors, labels, parameters and the objective/bound history agree to ``tol``."""
    assert tuple(eng.data.item_names) == tuple(mem.data.item_names)
    assert tuple(eng.data.worker_names) == tuple(mem.data.worker_names)
    assert tuple(eng.data.class_names) == tuple(mem.data.class_names)
    np.testing.assert_allclose(eng.posterior, mem.posterior, rtol=0, atol=tol)
    np.testing.assert_array_equal(eng.labels(), mem.labels())
    hm, he = mem.history(), eng.history()
    assert list(he["kind"]) == list(hm["kind"])
    for key in ("objective", "bound"):
        a, b = hm[key], he[key]
        scale = np.maximum(1.0, np.abs(np.nan_to_num(a)))
        assert np.all(np.isnan(a) == np.isnan(b))
        assert np.nanmax(np.abs(a - b) / scale, initial=0.0) < tol
    assert eng.converged == mem.converged
    if mem.params is not None:
        np.testing.assert_allclose(eng.params.gamma, mem.params.gamma, rtol=0, atol=tol)
        np.testing.assert_allclose(eng.params.pi, mem.params.pi, rtol=0, atol=tol)


@pytest.mark.parametrize("key", CLASS_SAMPLES)
@pytest.mark.parametrize("method", METHODS)
def test_stream_equals_in_memory_on_bundled_data(key, method, tmp_path):
    labels, _ = sample_paths(key)
    data = read_annotations(labels)
    if method == "two_coin" and data.n_classes != 2:
        with pytest.raises(ModelError):
            fit_file(labels, method, chunk_rows=50, workdir=tmp_path)
        return
    limit = 300 if key == "simulated" else 10000  # its slow tail runs 5,000 iterations: both stop at 300
    mem = plain_fit(data, method, max_iter=limit)
    # 37 rows per chunk: chunk boundaries fall inside items' runs of rows (items have 5-39 labels here)
    eng = fit_file(labels, method, chunk_rows=37, workdir=tmp_path, max_iter=limit)
    assert_same_fit(mem, eng)
    assert list(tmp_path.iterdir()) == []  # the code files are removed
    assert eng.data.n_obs == data.n_obs
    np.testing.assert_array_equal(eng.data.labels_per_worker, data.labels_per_worker)


def test_rows_in_any_order_and_uneven_chunks(tmp_path):
    """Rows of an item scattered over the whole file (not grouped), odd chunk sizes, one chunk for everything."""
    labels, _ = sample_paths("dogs")
    frame = pd.read_csv(labels, dtype=str).sample(frac=1.0, random_state=3)
    path = tmp_path / "shuffled.csv"
    frame.to_csv(path, index=False)
    mem = plain_fit(read_annotations(path), "ds")
    for rows in (333, 10**7):
        assert_same_fit(mem, fit_file(path, "ds", chunk_rows=rows))
    patients, _ = sample_paths("patients")  # one row per chunk
    assert_same_fit(plain_fit(read_annotations(patients), "ds"), fit_file(patients, "ds", chunk_rows=1))


def test_messy_file_reads_like_the_in_memory_reader(tmp_path):
    """BOM, aliases, blank lines, a repeated header, a quoted id with a line break and a comma, across chunks."""
    rows = ["\ufefftask;annotator;answer"]
    rng = np.random.default_rng(0)
    for i in range(40):
        for w in range(4):
            item = f'"item {i}\nline, two"' if i == 7 else f"t{i:02d}"
            rows.append(f"{item};w{w};{'yes' if rng.random() < 0.7 else 'no'}")
        if i == 10:
            rows.append("")
        if i == 20:
            rows.append("task;annotator;answer")
    path = tmp_path / "messy.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    data = read_annotations(path)
    eng = fit_file(path, "ds", chunk_rows=9)
    assert_same_fit(plain_fit(data, "ds"), eng)
    assert "item 7\nline, two" in eng.data.item_names
    assert isinstance(eng.data.item_names, ArrowNames)  # text ids stay in Arrow (no Python string per item)
    assert any("Skipped 2" in n for n in eng.data.notes)


def test_errors_name_the_row_of_the_whole_file(tmp_path):
    lines = ["item,worker,label"] + [f"i{i // 3},w{i % 3},{i % 2}" for i in range(100)]
    lines[77] = "i25,w1,"  # file row 78 has a blank label, in the 8th chunk of 10 rows
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as exc:
        fit_file(path, "ds", chunk_rows=10)
    assert exc.value.row == 78 and exc.value.file == "bad.csv"
    lines[77] = "i25,w1,1,extra"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as exc:
        fit_file(path, "ds", chunk_rows=10)
    assert exc.value.row == 78


def test_refuses_what_it_cannot_stream(tmp_path):
    affect, _ = sample_paths("affect")
    with pytest.raises(DataError, match="continuous scores"):
        fit_file(affect, "ds", chunk_rows=1000)
    wide = tmp_path / "wide.csv"
    wide.write_text("item,alice,bob\n1,a,b\n2,a,a\n")
    with pytest.raises(DataError, match="wide table"):
        fit_file(wide, "ds")
    with pytest.raises(ModelError, match="online_ds"):
        fit_file(affect, "online_ds")
    with pytest.raises(ModelError, match="in memory"):
        fit_file(affect, "scores")


def test_cli_stream_writes_the_same_files(tmp_path, capsys):
    labels, _ = sample_paths("rte")
    a, b = tmp_path / "mem", tmp_path / "stream"
    assert main(["fit", str(labels), "--method", "ds", "--plain", "--out", str(a)]) == 0
    assert (
        main(["fit", str(labels), "--method", "ds", "--stream", "--plain", "--chunk-rows", "500", "--out", str(b)]) == 0
    )
    assert "engine: stream; converged" in capsys.readouterr().out
    assert_same_files(a, b)
    assert main(["fit", str(labels), "--stream", "--gold", str(labels), "--out", str(b)]) == 2


IN_MEMORY_ONLY = {
    "mv_tied",
    "lower",
    "upper",
    "interval",
    "worst_confusion",
    "worst_rate",
    "spammer_score",
    "agreement",
    "copying_partner",  # the copying check (main's worker report) reads the label rows: in memory only
    "partner_p",
    "partner_excess",
}


def assert_same_files(a, b, tol=1e-8):
    """The files ``crowdlab fit`` writes, equal in content (numbers to ``tol``)."""
    for name in ("posteriors.csv", "labels.csv", "workers.csv"):
        fa, fb = pd.read_csv(a / name, dtype={"item": str}), pd.read_csv(b / name, dtype={"item": str})
        # what the in-memory fit adds from the labels it holds: tie flags and the worker report's columns
        assert set(fa.columns) - set(fb.columns) <= IN_MEMORY_ONLY, name
        fa = fa[[c for c in fa.columns if c in fb.columns]]
        assert list(fa.columns) == list(fb.columns) and len(fa) == len(fb), name
        for col in fa.columns:
            if fa[col].dtype.kind == "f":
                np.testing.assert_allclose(fb[col], fa[col], rtol=0, atol=tol, err_msg=name)
            else:
                assert fa[col].astype(str).tolist() == fb[col].astype(str).tolist(), name
    pa_, pb = json.loads((a / "params.json").read_text()), json.loads((b / "params.json").read_text())
    assert pa_.keys() == pb.keys()
    for key in ("pi", "gamma"):
        if key in pa_:
            np.testing.assert_allclose(pb[key], pa_[key], rtol=0, atol=tol)
    ha, hb = json.loads((a / "history.json").read_text()), json.loads((b / "history.json").read_text())
    assert ha["iterations"] == hb["iterations"] and ha["converged"] == hb["converged"]
    assert "stop_reason" in hb
    for sa, sb in zip(ha["snapshots"], hb["snapshots"], strict=True):
        assert sa["kind"] == sb["kind"]
        for key in ("objective", "bound"):
            if sa[key] is None:
                assert sb[key] is None
            else:
                assert abs(sa[key] - sb[key]) <= tol * max(1.0, abs(sa[key]))


def write_formula_file(path):
    """A long label file whose item, worker and class names a spreadsheet would run as formulas (and an item -5,
    a plain number); each is some item's label or a worker, so each is written to labels.csv or workers.csv."""
    rng = np.random.default_rng(2)
    rows = [f"i{i},w{w},{rng.choice(['a', 'b'])}" for i in range(20) for w in range(4)]
    rows += ["=cmd|' /C calc'!A0,+w9,a", "-2+3,w7,b", "i1,@w8,b", "i2,@w8,a", "-5,w1,a", "-5,w2,a"]
    rows += ["x1,w0,=1+1", "x1,w1,=1+1", "x1,w2,=1+1"]
    path.write_text("item,worker,label\n" + "\n".join(rows) + "\n")
    return path


def assert_formula_cells_escaped(out):
    """Every text cell of the CSV files in ``out`` that a spreadsheet would run gets an apostrophe; numbers not."""
    import csv

    from crowdlab.io.safe import FORMULA_START

    cells = {}
    for name in ("labels.csv", "workers.csv", "posteriors.csv"):
        with open(out / name, newline="") as fh:
            cells[name] = [row[0] for row in csv.reader(fh)]
        for cell in cells[name]:
            assert not cell.startswith(FORMULA_START) or cell.lstrip("-").replace(".", "").isdigit(), (name, cell)
    assert {"'=cmd|' /C calc'!A0", "'-2+3", "-5", "x1"} <= set(cells["labels.csv"])
    assert {"'+w9", "'@w8", "w0"} <= set(cells["workers.csv"])
    assert {"'=cmd|' /C calc'!A0", "'-2+3", "-5"} <= set(cells["posteriors.csv"])
    labels = pd.read_csv(out / "labels.csv", dtype=str, keep_default_na=False).set_index("item")["label"]
    assert labels["x1"] == "'=1+1"  # a class name


@pytest.mark.parametrize("engine", [[], ["--stream", "--chunk-rows", "7"]])
def test_cli_stream_escapes_formula_cells_like_the_in_memory_fit(engine, tmp_path, capsys):
    """The README's promise for every CSV crowdlab writes: the streaming engine's files as the in-memory fit's."""
    path = write_formula_file(tmp_path / "formula.csv")
    assert main(["fit", str(path), "--method", "ds", *engine, "--out", str(tmp_path / "out")]) == 0
    assert_formula_cells_escaped(tmp_path / "out")


@pytest.mark.parametrize(
    "text", [b"", b"\n \n\n", b"item,worker,label\n", b"\nitem,worker,label", b"item;worker;label\r\n"]
)
def test_no_data_rows_reads_like_the_in_memory_reader(text, tmp_path):
    """0 bytes, blank lines, a header row alone: the in-memory reader's message, not "only blank lines" for all."""
    path = tmp_path / "labels.csv"
    path.write_bytes(text)
    with pytest.raises(DataError) as mem:
        read_annotations(path)
    with pytest.raises(DataError) as eng:
        fit_file(path, "ds", chunk_rows=1)
    assert str(eng.value) == str(mem.value)
    empty = tmp_path / "empty.parquet"
    pd.DataFrame({c: pd.Series([], dtype=str) for c in ("item", "worker", "label")}).to_parquet(empty)
    with pytest.raises(DataError, match="has no rows"):
        fit_file(empty, "ds")


def test_parquet_file_streams_in_row_batches(tmp_path):
    labels, _ = sample_paths("rte")
    frame = pd.read_csv(labels)  # integer item and label columns: read as text, as from the CSV
    path = tmp_path / "rte.parquet"
    frame.rename(columns={"item": "task", "label": "answer"}).to_parquet(path, index=False, row_group_size=1000)
    assert_same_fit(plain_fit(read_annotations(labels), "one_coin"), fit_file(path, "one_coin", chunk_rows=333))
    frame.loc[4500, "label"] = None
    frame.to_parquet(path, index=False)
    with pytest.raises(DataError) as exc:
        fit_file(path, "ds", chunk_rows=1000)
    assert exc.value.row == 4502  # numbered as the CSV export of the table would be (header = row 1)


def test_per_item_state_that_does_not_fit_points_to_online_em(monkeypatch):
    import crowdlab.engines.stream as stream

    monkeypatch.setattr(stream, "available_bytes", lambda: 1000)
    labels, _ = sample_paths("patients")
    with pytest.raises(MemoryError, match="online_ds"):
        fit_file(labels, "ds")


def test_text_ids_sorted_not_hashed_give_the_in_memory_codes(tmp_path):
    """Item dictionaries built by sorting the chunks' names: code-point order (upper before lower case, prefixes
    first, non-ASCII last), an item's name in many chunks one item, the same codes as the in-memory reader."""
    rng = np.random.default_rng(5)
    names = np.array(["b", "a", "ab", "a b", "B", "Zz", "é1", "e", "_x", "a-1", "10x", "it0009", "it10"])
    items = rng.choice(names, 400)
    frame = pd.DataFrame(
        {"item": items, "worker": rng.choice(["w1", "w2", "w3", "w4"], 400), "label": rng.choice(["p", "n"], 400)}
    ).drop_duplicates(["item", "worker"])
    path = tmp_path / "ids.csv"
    frame.to_csv(path, index=False)
    data = read_annotations(path)
    assert list(data.item_names) == sorted(set(items))
    for rows in (1, 7, 10**6):  # every item cut over many chunks, and one chunk
        eng = fit_file(path, "ds", chunk_rows=rows)
        assert isinstance(eng.data.item_names, ArrowNames)
        assert_same_fit(plain_fit(data, "ds"), eng)


def test_sorted_distinct_codes_every_name():
    import pyarrow as pa

    from crowdlab.engines.stream import _sorted_distinct

    parts = [["c", "a", "c2"], ["a", "b"], ["b", "c", "a"], ["zz"]]
    names, rank = _sorted_distinct([pa.chunked_array([pa.array(p, pa.large_string()) for p in parts])])
    assert list(names) == ["a", "b", "c", "c2", "zz"]
    flat = [x for p in parts for x in p]
    assert [names[int(r)] for r in rank] == flat
    assert rank.dtype == np.int32


@pytest.mark.parametrize("max_iter", [0, 1, 2])
def test_posteriors_from_disk_are_the_last_e_step(max_iter, tmp_path):
    """Each round's posteriors go to a file in the work folder, not memory; the one read back is the last E-step's
    (what cl.fit reports), an ordinary array that outlives the removed folder."""
    labels, _ = sample_paths("bluebirds")
    mem = plain_fit(read_annotations(labels), "ds", max_iter=max_iter)
    eng = fit_file(labels, "ds", chunk_rows=100, max_iter=max_iter, workdir=tmp_path)
    assert type(eng.posterior) is np.ndarray and eng.posterior.dtype == np.float64
    assert list(tmp_path.iterdir()) == []
    np.testing.assert_allclose(eng.posterior, mem.posterior, rtol=0, atol=1e-8)
    np.testing.assert_array_equal(eng.labels(), mem.labels())


def test_round_times_per_round_and_after_the_first_two(tmp_path):
    """``timings["round_s"]``: each round's seconds (the EM time, less what comes before the first round);
    ``steady_s``: their mean after the majority-vote round and the first EM round (what benchmarks/bench_dask.py
    compares with an in-memory step)."""
    from crowdlab.engines.blocks import round_times

    labels, _ = sample_paths("bluebirds")
    run = fit_file(labels, "ds", chunk_rows=500, workdir=tmp_path)
    rounds = run.timings["round_s"]
    assert len(rounds) == run.timings["rounds"] >= 3 and min(rounds) > 0
    assert sum(rounds) <= run.timings["em_s"]  # from the first round's start to the end of EM
    assert run.timings["steady_s"] == pytest.approx(np.mean(rounds[2:]))
    assert round_times([1.0, 1.5, 3.5], 4.0) == {"round_s": [0.5, 2.0, 0.5], "steady_s": 0.5}
    assert round_times([1.0, 2.0], 4.0) == {"round_s": [1.0, 2.0], "steady_s": None}
    assert round_times([], 4.0) == {}
