"""Issue 31, "the engines read what the in-memory reader reads": damaged and odd Parquet files, lone CR line ends
and long errors from a Dask worker end in one-line `DataError` messages (``error: ...``, exit 2) under
``--stream`` and ``--engine dask``, never a traceback or a silent load. The malformed files are made here; the
Dask cases share one small in-process cluster.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crowdlab.cli import main
from crowdlab.engines.stream import fit_file
from crowdlab.errors import DataError
from crowdlab.io.data import read_annotations

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ITEMS = ["a", "a", "b", "b", "c", "c"]
WORKERS = ["w1", "w2"] * 3
LABELS = ["x", "y", "x", "x", "y", "y"]


def _table(label=None, **extra) -> pa.Table:
    return pa.table({"item": ITEMS, "worker": WORKERS, "label": LABELS if label is None else label, **extra})


def _good(path: Path, rows: int = 4000) -> Path:
    """A Parquet file of ``rows`` labels, written uncompressed-dictionary-free so a damaged page fails to decode."""
    rng = np.random.default_rng(0)
    table = pa.table(
        {
            "item": [f"i{i // 4}" for i in range(rows)],
            "worker": [f"w{i % 4}" for i in range(rows)],
            "label": rng.choice(["x", "y"], rows).tolist(),
        }
    )
    pq.write_table(table, path, compression="snappy", use_dictionary=False)
    return path


def truncated(path: Path) -> Path:
    data = _good(path).read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def corrupt_footer(path: Path) -> Path:
    data = bytearray(_good(path).read_bytes())
    meta_len = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - meta_len
    data[start : start + 40] = b"\xff" * 40
    path.write_bytes(bytes(data))
    return path


def corrupt_page(path: Path) -> Path:
    """The footer whole, the label column's data page overwritten: Arrow fails only when it reads the page."""
    _good(path)
    col = pq.ParquetFile(path).metadata.row_group(0).column(2)
    data = bytearray(path.read_bytes())
    start = col.data_page_offset + 64
    data[start : start + 1000] = np.random.default_rng(1).integers(0, 256, 1000, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))
    return path


def empty(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def nested(kind: str):
    def write(path: Path) -> Path:
        values = {
            "list": pa.array([[1], [0], [1], [1], [0], [0]]),
            "struct": pa.array([{"v": 1}, {"v": 0}] * 3),
            "map": pa.array([[("k", 1)], [("k", 0)]] * 3, pa.map_(pa.string(), pa.int64())),
        }[kind]
        pq.write_table(_table(values), path)
        return path

    write.__name__ = f"nested_{kind}"
    return write


def not_utf8(path: Path) -> Path:
    pq.write_table(_table(pa.array([b"\xff\xfe", b"y", b"x", b"x", b"y", b"y"], pa.binary())), path)
    return path


def nan_item(path: Path) -> Path:
    pq.write_table(pa.table({"item": [1.0, np.nan, 2.0, 2.0, 3.0, 3.0], "worker": WORKERS, "label": LABELS}), path)
    return path


def duplicate_names(path: Path) -> Path:
    arrays = [pa.array(ITEMS), pa.array(WORKERS), pa.array(LABELS), pa.array(LABELS)]
    pq.write_table(pa.Table.from_arrays(arrays, names=["item", "worker", "label", "label"]), path)
    return path


def _run(argv: list[str], capfd) -> tuple[int, list[str]]:
    code = main(argv)
    return code, capfd.readouterr().err.splitlines()


def _one_line_error(code: int, err: list[str], *says: str) -> str:
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    for s in says:
        assert s in err[0], err[0]
    return err[0]


# ---------------------------------------------------------------------- --stream
STREAM_CASES = [
    (truncated, "truncated or corrupt"),
    (corrupt_footer, "truncated or corrupt"),
    (corrupt_page, "truncated or corrupt"),
    (nested("list"), "column 'label': the column holds nested values (list"),
    (nested("struct"), "column 'label': the column holds nested values (struct"),
    (nested("map"), "column 'label': the column holds nested values (map"),
    (not_utf8, "column 'label': the column holds bytes that are not UTF-8 text (the first at row 2)"),
    (nan_item, "row 3, column 'item': 1 row has a blank item id"),
]


@pytest.mark.parametrize(("make", "says"), STREAM_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_stream_refuses_bad_parquet_in_one_line(make, says, tmp_path, capfd):
    path = make(tmp_path / "bad.parquet")
    code, err = _run(["fit", str(path), "--stream", "--out", str(tmp_path / "out")], capfd)
    _one_line_error(code, err, "file 'bad.parquet'", says)


def test_stream_reads_a_zero_byte_parquet_file_as_the_csv_reader_says_empty(tmp_path, capfd):
    path = empty(tmp_path / "bad.parquet")
    code, err = _run(["fit", str(path), "--stream", "--out", str(tmp_path / "out")], capfd)
    _one_line_error(code, err, "the file is empty (0 bytes).")


def test_stream_reads_lone_cr_line_ends_as_in_memory(tmp_path):
    """Classic Mac line ends: 4 rows in memory, and now 4 rows streamed (it said "a header row but no data
    rows"); a blank label is refused at the same row in both."""
    path = tmp_path / "cr.csv"
    path.write_bytes(b"item,worker,label\ra,w1,x\ra,w2,y\rb,w1,x\rb,w2,x\r")
    data = read_annotations(path)
    run = fit_file(path, "mv", chunk_rows=2)
    assert run.data.n_obs == data.n_obs == 4
    assert run.data.class_names == data.class_names
    bad = tmp_path / "cr_blank.csv"
    bad.write_bytes(b"item,worker,label\ra,w1,x\ra,w2,\rb,w1,x\rb,w2,x")
    with pytest.raises(DataError) as mem:
        read_annotations(bad)
    with pytest.raises(DataError) as streamed:
        fit_file(bad, "mv")
    assert streamed.value.row == mem.value.row == 3


# ---------------------------------------------------------------------- --engine dask
distributed = pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")


@pytest.fixture(scope="module")
def address():
    from crowdlab.engines.distributed import NO_DASHBOARD

    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, **NO_DASHBOARD)
    client = distributed.Client(cluster)
    yield cluster.scheduler_address
    client.close()
    cluster.close()


def two_schemas(folder: Path) -> Path:
    folder.mkdir()
    pq.write_table(_table(), folder / "a.parquet")
    other = pa.table({"task": ["d", "d"], "annotator": ["w1", "w2"], "answer": ["x", "y"]})
    pq.write_table(other, folder / "b.parquet")
    return folder


DASK_CASES = [
    (empty, "file '{path}': the file is empty (0 bytes)."),
    (truncated, "file '{path}': the Parquet file cannot be read: it is truncated or corrupt"),
    (corrupt_footer, "file '{path}': the Parquet file cannot be read: it is truncated or corrupt"),
    (corrupt_page, "file '{path}': the Parquet file cannot be read: it is truncated or corrupt"),
    (duplicate_names, "file '{path}', column 'label': more than one column is named 'label'"),
    (nested("list"), "file '{path}', column 'label': the column holds nested values (list"),
    (nested("struct"), "file '{path}', column 'label': the column holds nested values (struct"),
    (nested("map"), "file '{path}', column 'label': the column holds nested values (map"),
    (not_utf8, "column 'label': the column holds bytes that are not UTF-8 text"),
]


@pytest.mark.parametrize(("make", "says"), DASK_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_dask_refuses_bad_parquet_in_one_line(make, says, address, tmp_path, capfd):
    path = make(tmp_path / "bad.parquet")
    argv = ["fit", str(path), "--engine", "dask", "--scheduler", address, "--out", str(tmp_path / "out")]
    code, err = _run(argv, capfd)
    _one_line_error(code, err, says.format(path=path))


def test_dask_refuses_a_folder_of_two_schemas(address, tmp_path, capfd):
    folder = two_schemas(tmp_path / "data")
    argv = ["fit", str(folder), "--engine", "dask", "--scheduler", address, "--out", str(tmp_path / "out")]
    code, err = _run(argv, capfd)
    _one_line_error(code, err, "b.parquet", "do not share one set of columns", "'task'", "lacks 'item'")


def test_dask_reads_lone_cr_line_ends_and_parquet_nan_as_missing(address, tmp_path):
    from crowdlab.engines.distributed import fit

    path = tmp_path / "cr.csv"
    path.write_bytes(b"item,worker,label\ra,w1,x\ra,w2,y\rb,w1,x\rb,w2,x\r")
    assert fit(str(path), "mv", scheduler=address).data.n_obs == 4
    with pytest.raises(DataError, match="blank or NaN item id"):
        fit(str(nan_item(tmp_path / "nan.parquet")), "mv", scheduler=address)


def test_a_wide_file_read_by_a_dask_worker_is_one_line(address, tmp_path, capfd):
    """100,000 worker columns: the reader's DataError, raised in a worker, listed every column name; distributed
    sent it back as Exception('Long error message', ...) and the CLI printed a traceback."""
    path = tmp_path / "wide.csv"
    header = "item," + ",".join(f"w{j}" for j in range(100_000))
    path.write_text(header + "\n" + "\n".join(f"i{i}," + ",".join(["a", "b"] * 50_000) for i in range(2)) + "\n")
    argv = ["fit", str(path), "--engine", "dask", "--scheduler", address, "--out", str(tmp_path / "out")]
    code, err = _run(argv, capfd)
    line = _one_line_error(code, err, "file 'wide.csv', row 1: no worker or label column found")
    assert "and 99,981 more" in line and len(line) < 2000


def test_a_long_crowdlab_error_from_a_worker_keeps_its_type(address):
    """Any CrowdlabError longer than distributed's limit (10,000 characters) comes back as its own type, its text
    cut short, not as a plain Exception."""
    from crowdlab.engines.distributed import _carried_errors

    def fails():
        raise DataError("x, " * 20_000, file="part.csv", row=7)

    with distributed.Client(address) as client, pytest.raises(DataError) as exc, _carried_errors("the data frame"):
        client.submit(fails, pure=False).result()
    text = str(exc.value)
    assert text.startswith("file 'part.csv', row 7: x, x,") and text.endswith("(the rest of this long message is cut)")
    assert len(text) < 2100


# ---------------------------------------------------------------------- size options
def _bluebirds() -> str:
    from crowdlab.io.samples import sample_paths

    return str(sample_paths("bluebirds")[0])


def test_chunk_rows_past_what_memory_holds_is_refused_naming_the_range(tmp_path, capfd):
    """--chunk-rows 10**30 ended in an OverflowError; now the option, its range and the value are named."""
    code, err = _run(["fit", _bluebirds(), "--stream", "--chunk-rows", str(10**30), "--out", str(tmp_path)], capfd)
    line = _one_line_error(code, err, "--chunk-rows must be a whole number from 1 to ", "not 1e+30.")
    assert "memory is free" in line or "2,147,483,647" in line
    with pytest.raises(ValueError, match=r"chunk_rows must be a whole number from 1 to .*, not 0\."):
        fit_file(_bluebirds(), "mv", chunk_rows=0)
    with pytest.raises(ValueError, match="chunk_rows must be a whole number"):
        fit_file(_bluebirds(), "mv", chunk_rows=2.5)
    assert fit_file(_bluebirds(), "mv", chunk_rows=1e6).data.n_obs == 4212


def test_chunk_rows_bound_follows_free_memory(monkeypatch):
    from crowdlab.engines import stream

    monkeypatch.setattr(stream, "available_bytes", lambda: 10**12)  # 1 TB free
    assert stream.check_chunk_rows(stream.MAX_CHUNK_ROWS) == stream.MAX_CHUNK_ROWS
    monkeypatch.setattr(stream, "available_bytes", lambda: 10**9)  # 1 GB free: 10^7 rows
    assert stream.check_chunk_rows(10**7) == 10**7
    with pytest.raises(ValueError, match=r"from 1 to 10,000,000 .*1\.0 GB of memory is free.*not 10,000,001"):
        stream.check_chunk_rows(10**7 + 1)
    monkeypatch.setattr(stream, "available_bytes", lambda: 10**6)  # almost nothing free: the default still runs
    assert stream.check_chunk_rows(stream.DEFAULT_CHUNK_ROWS) == stream.DEFAULT_CHUNK_ROWS


def test_npartitions_past_the_data_is_refused_before_the_shuffle(address, tmp_path, capfd):
    """--npartitions 10**6 on 4,212 rows ran past 150 s (1,000 past 200 s): refused, naming the range."""
    from crowdlab.engines.distributed import MAX_PARTITIONS, check_npartitions

    base = ["fit", _bluebirds(), "--engine", "dask", "--scheduler", address, "--out", str(tmp_path / "out")]
    code, err = _run([*base, "--npartitions", str(10**6)], capfd)
    _one_line_error(code, err, f"--npartitions must be a whole number from 1 to {MAX_PARTITIONS:,}", "not 1,000,000.")
    code, err = _run([*base, "--npartitions", "1000"], capfd)
    _one_line_error(code, err, "from 1 to 263 (the data has 4,212 rows, at least 16 a partition;", "not 1,000.")
    assert check_npartitions(263, 4212) == 263 and check_npartitions(None, 5) is None
    assert check_npartitions(1, 3) == 1  # a tiny data set still runs in one partition
    assert check_npartitions(2.0) == 2  # 1e6 means a million
    for bad in (2.5, float("nan"), float("inf"), True, "3"):
        with pytest.raises(ValueError, match="npartitions must be a whole number"):
            check_npartitions(bad)


def test_workers_do_not_log_tracebacks_of_the_errors_the_client_says():
    """The worker's "Compute Failed" record (logged with a traceback) is dropped for a crowdlab error cut by
    distributed and for a Parquet part Arrow cannot read (the client says both in one line); others are kept."""
    import logging

    from crowdlab.engines.distributed import _ExpectedFailures

    def record(key, exception_text: str) -> logging.LogRecord:
        msg = "Compute Failed\nKey:       %s\nState:     %s\nTask:  %s\nException: %r\nTraceback: %r\n"
        args = (key, "executing", "<Task ...>", exception_text, "  File ...")
        return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, msg, args, None)

    keep = _ExpectedFailures().filter
    assert not keep(record(("read_parquet-0a1b", 0), "OSError('Corrupt snappy compressed data.')"))
    long = "Exception('Long error message', <class 'crowdlab.errors.DataError'>, \"file 'wide.csv' ...\")"
    assert not keep(record(("_read_csv_file-0a1b", 0), long))
    assert not keep(record(("_read_csv_file-0a1b", 0), "DataError(\"file 'a.csv': ...\")"))
    assert keep(record(("_part_round-0a1b", 0), "ZeroDivisionError('division by zero')"))
    assert keep(record(("read_parquet-0a1b", 0), "KeyError('x')"))


def test_dask_reads_a_folder_whose_files_differ_only_in_cell_types_as_text(address, tmp_path):
    """Same columns, labels as text in one file and integers in the other: read as text, as CSV files would be."""
    from crowdlab.engines.distributed import fit

    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(_table(), folder / "a.parquet")
    pq.write_table(pa.table({"item": ["d", "d"], "worker": ["w1", "w2"], "label": [1, 2]}), folder / "b.parquet")
    run = fit(str(folder), "mv", scheduler=address)
    assert run.data.class_names == ("1", "2", "x", "y") and run.data.n_obs == 8


HUGE = str(10**30)


@pytest.mark.parametrize(
    "extra",
    [
        ["--max-iter", HUGE, "--method", "mv"],
        ["--seed", HUGE, "--method", "mv"],
        ["--tie-seed", HUGE, "--method", "mv"],
        ["--method", "online_ds", "--buckets", HUGE],
        ["--method", "online_ds", "--passes", HUGE],
        ["--method", "online_ds", "--batch-size", HUGE, "--passes", "1"],
        ["--stream", "--chunk-rows", HUGE],
        ["--stream", "--max-iter", HUGE, "--method", "mv"],
        ["--engine", "dask", "--npartitions", HUGE],
    ],
    ids=lambda extra: " ".join(a for a in extra if a != HUGE),
)
def test_every_whole_number_option_of_fit_at_10_to_the_30_runs_or_is_one_line(extra, address, tmp_path, capfd):
    """The command line's size options at 10**30: a result, or one line naming the option (exit 2); never an
    OverflowError, a MemoryError or a hang."""
    argv = ["fit", _bluebirds(), *extra, "--out", str(tmp_path / "out")]
    if "dask" in extra:
        argv += ["--scheduler", address]
    code = main(argv)
    err = [line for line in capfd.readouterr().err.splitlines() if not line.startswith("warning:")]
    if code == 0:
        assert (tmp_path / "out" / "labels.csv").is_file()
    else:
        named = {"--buckets": "hash buckets", "--passes": "passes", "--chunk-rows": "--chunk-rows must be"}
        named["--npartitions"] = "--npartitions must be"
        flag = next(a for a in extra if a in named)
        _one_line_error(code, err, named[flag])
