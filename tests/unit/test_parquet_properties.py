"""Property-based tests of the engines' Parquet reading (Hypothesis), as `test_read_properties` does for CSV:
generated Parquet files, with cells of any Arrow type and random damage (truncation, overwritten bytes, a file cut
to its magic number), either load to exactly the rows they hold or raise `DataError` (or `ModelError`, for one
class); never another exception, never a hang. The streaming reader reads them (``--stream``); the checks the Dask
engine runs before ``dd.read_parquet`` and after a failed read (`crowdlab.io.parquet`) face the same files.
"""

from __future__ import annotations

import datetime
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdlab.engines.stream import fit_file
from crowdlab.errors import DataError, ModelError
from crowdlab.io.parquet import check_dataset, find_unreadable

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

EXAMPLES = settings(
    max_examples=100,
    deadline=3000,  # ms per example: a hang fails the test
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)

NAMES = st.text(alphabet=st.sampled_from(list("abcXYZ019_-. é猫")), min_size=1, max_size=6).filter(
    lambda s: s.strip() == s and s.lower() not in ("na", "nan", "-", "n/a", "null", "none", "nil", "missing")
)


def _column(kind: str, values: list[str], draw) -> pa.Array:
    """``values`` (distinct small vocabulary, one per row) written as an Arrow column of ``kind``."""
    codes = {v: i for i, v in enumerate(dict.fromkeys(values))}
    n = len(values)
    if kind == "string":
        return pa.array(values)
    if kind == "large_string":
        return pa.array(values, pa.large_string())
    if kind == "dictionary":
        return pa.array(values).dictionary_encode()
    if kind == "int":
        return pa.array([codes[v] for v in values], pa.int64())
    if kind == "float":
        return pa.array([float(codes[v]) + 0.5 for v in values])
    if kind == "bool":
        return pa.array([bool(codes[v] % 2) for v in values])
    if kind == "date":
        return pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=codes[v]) for v in values])
    if kind == "binary":
        return pa.array([v.encode() for v in values], pa.binary())
    if kind == "bad_binary":
        return pa.array([b"\xff" + v.encode() for v in values], pa.binary())
    if kind == "null":
        return pa.nulls(n, pa.string())
    if kind == "with_nulls":
        holes = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        return pa.array([None if h else v for v, h in zip(values, holes)])
    if kind == "nan":
        return pa.array([float("nan") if i == 0 else float(codes[v]) for i, v in enumerate(values)])
    if kind == "list":
        return pa.array([[v] for v in values])
    if kind == "struct":
        return pa.array([{"v": v} for v in values])
    if kind == "map":
        return pa.array([[("k", v)] for v in values], pa.map_(pa.string(), pa.string()))
    raise AssertionError(kind)


KINDS = ["string", "large_string", "dictionary", "int", "float", "bool", "date", "binary"]
ODD = ["bad_binary", "null", "with_nulls", "nan", "list", "struct", "map"]


@st.composite
def parquet_files(draw):
    """(bytes of a Parquet file, its number of rows, whether every cell is a plain value)."""
    n = draw(st.integers(1, 40))
    items = draw(st.lists(NAMES, min_size=1, max_size=8, unique=True))
    workers = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    classes = draw(st.lists(NAMES, min_size=2, max_size=3, unique=True))
    cols = {
        "item": [draw(st.sampled_from(items)) for _ in range(n)],
        "worker": [draw(st.sampled_from(workers)) for _ in range(n)],
        "label": [draw(st.sampled_from(classes)) for _ in range(n)],
    }
    plain = True
    arrays = {}
    for name, values in cols.items():
        kind = draw(st.sampled_from(KINDS + ODD if draw(st.integers(0, 3)) == 0 else KINDS))
        plain = plain and kind in KINDS
        arrays[name] = _column(kind, values, draw)
    if draw(st.booleans()):
        arrays["note"] = pa.array([str(i) for i in range(n)])
    buf = io.BytesIO()
    pq.write_table(
        pa.table(arrays),
        buf,
        compression=draw(st.sampled_from(["none", "snappy", "zstd"])),
        row_group_size=draw(st.sampled_from([None, 3, 7])),
    )
    return buf.getvalue(), n, plain


@st.composite
def damaged(draw, data: bytes) -> bytes:
    data = bytearray(data)
    how = draw(st.sampled_from(["none", "truncate", "overwrite", "magic", "flip"]))
    if how == "truncate":
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif how == "overwrite":
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, len(data) - 1))
            data[at : at + 16] = draw(st.binary(min_size=1, max_size=16))
    elif how == "magic":
        data = bytearray(b"PAR1" + data[4:12])
    elif how == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data[at] ^= 1 << draw(st.integers(0, 7))
    return bytes(data)


@EXAMPLES
@given(made=parquet_files(), cuts=st.data())
def test_parquet_files_stream_or_raise_data_error(made, cuts, tmp_path):
    data, n_rows, plain = made
    whole = cuts.draw(st.booleans())
    path = tmp_path / "labels.parquet"
    path.write_bytes(data if whole else cuts.draw(damaged(data)))
    chunk_rows = cuts.draw(st.sampled_from([1, 5, 1000]))
    try:
        run = fit_file(path, "mv", chunk_rows=chunk_rows)
    except (DataError, ModelError):
        assert not (whole and plain and run_expected_to_load(data)), "a whole, plain file was refused"
        return
    assert run.data.n_obs <= n_rows
    if whole:
        assert run.data.n_obs == n_rows  # every row read, none dropped
    assert np.isfinite(run.posterior).all()


def run_expected_to_load(data: bytes) -> bool:
    """Whether a whole file of plain cells must load: unless its labels are all one class once read as text
    (two class names that are one number, "1" and "1.0"; bools; dates), which is a ModelError/DataError."""
    table = pq.read_table(io.BytesIO(data))
    labels = table.column("label").cast(pa.string()).to_pylist()
    return len({_num(x) for x in labels}) > 1


def _num(x: str):
    try:
        return float(x)
    except ValueError:
        return x


@EXAMPLES
@given(made=parquet_files(), cuts=st.data())
def test_the_dask_engines_parquet_checks_pass_or_raise_data_error(made, cuts, tmp_path):
    """What `crowdlab.engines.distributed` checks on the client (every file opens; its column names are distinct;
    no nested item, worker or label column; the files share their columns) and what it reads again after a
    failed read to name the file: a DataError or nothing, for whole and damaged files alike."""
    data, _, _ = made
    path = tmp_path / "part.parquet"
    path.write_bytes(cuts.draw(damaged(data)))
    other = tmp_path / "other.parquet"
    other.write_bytes(data)
    try:
        check_dataset([str(other), str(path)], lambda names, file: [n for n in names if n != "note"])
    except DataError:
        pass
    found = find_unreadable([str(other), str(path)])
    assert found is None or isinstance(found, DataError)


PARQUET_WORDS = ("Parquet", "nested values", "not UTF-8", "distinct names", "the file is empty")


@EXAMPLES
@given(made=parquet_files(), cuts=st.data())
def test_the_in_memory_reader_reads_what_the_stream_reads_with_the_same_messages(made, cuts, tmp_path):
    """Issue 42 §4: ``read_annotations`` refused every Parquet file that ``--stream`` and ``--engine dask`` read. A
    whole or damaged file now loads in memory to the stream's rows, or both refuse it; where the refusal is about
    the Parquet file itself (damaged, nested, duplicate names, bytes that are not UTF-8) the two say the same."""
    from crowdlab.io.data import read_annotations

    data, n_rows, _ = made
    whole = cuts.draw(st.booleans())
    path = tmp_path / "labels.parquet"
    path.write_bytes(data if whole else cuts.draw(damaged(data)))
    try:
        streamed, said = fit_file(path, "mv", chunk_rows=1000), None
    except (DataError, ModelError) as exc:
        streamed, said = None, str(exc)
    try:
        ann, told = read_annotations(path, kind="classes"), None
    except (DataError, ModelError) as exc:
        ann, told = None, str(exc)
    if said is not None and any(w in said for w in PARQUET_WORDS):
        assert told == said
    if told is not None and any(w in told for w in PARQUET_WORDS):
        assert said == told
    if streamed is not None and ann is not None:
        assert ann.n_obs == streamed.data.n_obs
        assert sorted(map(str, ann.class_names)) == sorted(map(str, streamed.data.class_names))
