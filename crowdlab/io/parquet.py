"""Parquet label files as every reader reads them (in memory, ``--stream``, ``--engine dask``): the checks the CSV
path does, said in its words, before and while Arrow reads.

The in-memory reader (`crowdlab.io.readers.read_table`: ``cl.read_annotations``, ``crowdlab fit FILE``, the app's
upload) reads a whole file through the same checks as the streaming engine (issue 42: it refused a file the engines
read). What Arrow would end in a traceback ends here in a `DataError` naming the file and the
column: an empty (0-byte), truncated or corrupt file (its footer, or a data page read later), a nested column
(list, struct, map: a cell must hold one id or label), duplicate column names, and files of one dataset whose
columns differ.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from crowdlab.errors import DataError

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
REWRITE_HINT = (
    "Write the file again (pandas: frame.to_parquet(path)) or export it as CSV, and check that it was copied whole."
)


def _arrow_errors() -> tuple[type[BaseException], ...]:
    import pyarrow as pa

    return (pa.ArrowException, OSError)


def unreadable(exc: BaseException, file: str) -> DataError:
    """The DataError for a Parquet file Arrow cannot read (Arrow's own words in brackets, first line only)."""
    said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if len(said) > 300:
        said = said[:300] + " ..."
    said = said.rstrip(".")
    return DataError(
        f"the Parquet file cannot be read: it is truncated or corrupt (Arrow: {said}).", file=file, hint=REWRITE_HINT
    )


def _passes(exc: BaseException) -> bool:
    """Errors that are not about the file's bytes: a missing file or no permission are said by the caller."""
    return isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError | MemoryError)


def open_parquet(path, file: str | None = None, *, check: bool = True):
    """A ``pyarrow.parquet.ParquetFile`` of ``path`` (or of a file's bytes: the in-memory reader's upload), no
    nested column in it (``check``); an empty, truncated or corrupt file is a DataError naming ``file`` (default:
    the path's name)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    in_memory = isinstance(path, bytes | bytearray | memoryview)
    file = ("uploaded file" if in_memory else Path(path).name) if file is None else file
    if (len(path) if in_memory else os.path.getsize(path)) == 0:
        raise DataError(
            "the file is empty (0 bytes).", file=file, hint="Choose a file with a header row and one row per label."
        )
    try:
        pf = pq.ParquetFile(pa.BufferReader(path) if in_memory else path)
        schema = pf.schema_arrow
    except _arrow_errors() as exc:
        if _passes(exc):
            raise
        raise unreadable(exc, file) from None
    if check:
        for name, typ in zip(schema.names, schema.types):
            refuse_nested(typ, str(name), file)
    return pf


def check_schema(schema, file: str, columns: Sequence[str] | None = None) -> None:
    """Refuse a column name given twice, and a nested column among ``columns`` (default all)."""
    names = [str(n) for n in schema.names]
    twice = [n for n, k in Counter(names).items() if k > 1]
    if twice:
        shown = ", ".join(repr(n) for n in twice[:5])
        raise DataError(
            f"more than one column is named {shown}; the columns of a Parquet dataset need distinct names.",
            file=file,
            column=twice[0],
            hint="Rename or delete all but one of them.",
        )
    wanted = set(names if columns is None else columns)
    for name, typ in zip(names, schema.types):
        if name in wanted:
            refuse_nested(typ, name, file)


def is_nested(arrow_type) -> bool:
    import pyarrow as pa

    t = arrow_type
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_struct(t)
        or pa.types.is_map(t)
        or pa.types.is_union(t)
        or (hasattr(pa.types, "is_list_view") and (pa.types.is_list_view(t) or pa.types.is_large_list_view(t)))
    )


def refuse_nested(arrow_type, column: str, file: str | None = None) -> None:
    """A DataError for a nested column (list, struct, map): a label file's cells are single values."""
    if is_nested(arrow_type):
        raise DataError(
            f"the column holds nested values ({arrow_type}), not one id or label per cell.",
            file=file,
            column=column,
            hint="Write the column as plain text or numbers (one label per row), e.g. by exploding the lists, "
            "or drop it.",
        )


def as_text(arr, column: str, file: str | None = None, first_row: int | None = None):
    """An Arrow column as large strings (numbers, dates written as text; nulls kept), as the engines read it: a
    nested column refused (`refuse_nested`), a float NaN made null (a missing cell, as a blank in a CSV file),
    bytes that are not UTF-8 refused as the CSV reader refuses them (naming the row when ``first_row``, the
    spreadsheet row of the array's first element, is given)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    refuse_nested(arr.type, column, file)
    if pa.types.is_floating(arr.type):
        arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
    try:
        return arr.cast(pa.large_string())
    except pa.ArrowInvalid:
        if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)
                or pa.types.is_fixed_size_binary(arr.type)):  # fmt: skip
            raise
    at = ""
    for i, value in enumerate(arr.to_pylist()):
        try:
            (value or b"").decode("utf-8")
        except UnicodeDecodeError:
            at = f" (the first at row {first_row + i})" if first_row is not None else f" (the first at index {i})"
            break
    raise DataError(
        f"the column holds bytes that are not UTF-8 text{at}.",
        file=file,
        column=column,
        hint="Write the ids and labels as UTF-8 text (or numbers).",
    )


def iter_batches(pf, batch_size: int, file: str, columns: Sequence[str] | None = None) -> Iterator:
    """``pf.iter_batches`` with a data page Arrow cannot read (a corrupt or truncated file whose footer is whole)
    said as `unreadable`."""
    batches = pf.iter_batches(batch_size=batch_size, columns=columns)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except _arrow_errors() as exc:
            if _passes(exc):
                raise
            raise unreadable(exc, file) from None
        yield batch


def parquet_files(path) -> list[str]:
    """A Parquet file, or the Parquet files in a folder (a dataset) and below, in name order."""
    p = Path(path)
    if p.is_dir():
        return sorted(str(f) for f in p.rglob("*") if f.is_file() and f.name.lower().endswith(PARQUET_SUFFIXES))
    return [str(p)]


def check_dataset(paths: Sequence, columns_of=None) -> None:
    """Open every Parquet file of ``paths`` (files or dataset folders), with the checks of `open_parquet`, and
    refuse files whose column names differ (the first file's against each other one). ``columns_of``: a function
    (column names, file) -> the names whose nesting matters (default: all)."""
    first: tuple[str, list[str]] | None = None
    for path in paths:
        for f in parquet_files(path):
            file = str(f)
            pf = open_parquet(f, file, check=False)
            names = [str(n) for n in pf.schema_arrow.names]
            check_schema(pf.schema_arrow, file, None if columns_of is None else columns_of(names, file))
            if first is None:
                first = (file, names)
            elif set(names) != set(first[1]):
                only = [n for n in names if n not in first[1]]
                lacks = [n for n in first[1] if n not in names]
                said = "; ".join(
                    part
                    for part in (
                        f"it has {_quoted(only)} that {Path(first[0]).name!r} has not" if only else "",
                        f"it lacks {_quoted(lacks)}" if lacks else "",
                    )
                    if part
                )
                raise DataError(
                    f"the Parquet files do not share one set of columns: {said}.",
                    file=file,
                    hint="Give every file the same columns (item, worker, label), or read the files one at a time.",
                )


def _quoted(names: Sequence[str], show: int = 10) -> str:
    shown = ", ".join(repr(n) for n in names[:show])
    return shown if len(names) <= show else f"{shown} and {len(names) - show:,} more"


def find_unreadable(paths: Sequence, columns: Sequence[str] | None = None) -> DataError | None:
    """After a read failed somewhere in a dataset: read every Parquet file of ``paths`` through (only
    ``columns``, when given) and return the `unreadable` error of the first that fails; None when all read."""
    for path in paths:
        for f in parquet_files(path):
            try:
                pf = open_parquet(f, str(f), check=False)
                cols = None if columns is None else [c for c in columns if c in pf.schema_arrow.names]
                for _ in iter_batches(pf, 1 << 16, str(f), cols):
                    pass
            except DataError as exc:
                return exc
    return None
