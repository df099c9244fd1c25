"""Label files bigger than memory: batch EM that reads a long CSV (or Parquet) file in chunks, never all of it.

``crowdlab fit FILE --method ds --stream [--chunk-rows N]`` or ``crowdlab.engines.stream.fit_file(path, method="ds")``.

How it works (what is in memory, what is on disk):

1. **One pass over the CSV**, ``chunk_rows`` rows at a time. Each chunk (the header line + whole lines) goes
   through the one reading path, `crowdlab.io.readers.read_table`, and the long-file column checks of
   `crowdlab.io.columns` and `crowdlab.io.values` (column names and aliases, blank ids, missing labels, delimiter,
   encoding, NUL bytes, ragged rows, skipped blank and repeated-header rows), with rows numbered as in the whole file
   (a file whose lines end in lone carriage returns is copied with line feeds first). A Parquet file is read in row
   batches (``pyarrow.parquet.ParquetFile.iter_batches``), its cells as text, with the same column checks, and those
   of `crowdlab.io.parquet` (an empty, truncated or corrupt file, a nested column, bytes that are not UTF-8).
   The chunk's ids are factorised (Arrow's dictionary encoding) and its integer codes appended to a code file in a
   temporary folder; only the chunk's *distinct* names are kept.
2. **Dictionaries**: the distinct names of all chunks are factorised once more and ordered exactly as
   `crowdlab.io.data.read_annotations` orders them (numeric order when all names are numbers, "1" and "1.0" one
   class), so item, worker and class codes are the in-memory reader's codes.
3. **Blocks by item**: the codes are rewritten into bucket files, each holding every row of a contiguous range
   of items (about ``chunk_rows`` rows per bucket): an item whose rows are spread over the file, or cut by a
   chunk boundary, is whole in its bucket.
4. **EM**: one pass over the bucket files per iteration (`crowdlab.engines.blocks.batch_em`): the E-step of each
   bucket's items with the current parameters, then its expected counts; the sums give the M-step
   (the model's ``m_step_from_stats``). Results equal ``crowdlab.fit`` to rounding. By default the passes are
   the evaluations of the EM map inside accelerated EM (SQUAREM, `crowdlab.engines.accel`, the in-memory fit's
   own loop; ``accelerate=False``: plain EM, one pass an iteration).

Memory (measured at 10^8 labels in ``benchmarks/README.md``): the id dictionaries (text item ids in one Arrow
array, ~10-20 bytes each, sorted rather than hashed when built; numeric ids as Python strings, ~60-100 bytes
each), one chunk and one bucket, and at the end the reported posteriors (N x K float64, read back once). The
posteriors of each round are written to a file per round (the last two are kept), not held in memory.
Disk: 12 bytes per label and 2 x N x K x 8 bytes of posteriors in the temporary folder (``workdir``, default the
system's), removed at the end. When the reported posteriors do not fit (say 10^9 items), batch EM cannot run on one
machine (``fit_file`` checks the free memory first and says so): use online EM (``online_ds``,
`crowdlab.models.online`), which reads each row once and keeps no per-item state, or the Dask engine
(`crowdlab.engines.distributed`) across machines.

Models: mv, ds, one_coin, two_coin, mace, mace_vb, ibcc, ebcc by the shared rounds
(`crowdlab.engines.blocks.batch_em`), GLAD by its own passes (`crowdlab.engines.glad_blocks`, its difficulties and
posterior held in memory, 8 (K + 3) bytes per item); ``known=`` (a mapping or an item,label file) fixes items'
classes (semi-supervised EM, the whole (N,) code array in memory, 4 bytes per item).

Not supported when streaming: wide files, continuous scores, sequences, gold (score the written labels.csv
afterwards), hard EM and starts other than majority vote; CSV quoted fields spanning lines are kept whole
(a chunk is extended until its quotes balance). UTF-16/32 files must be converted to UTF-8 first.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from crowdlab.engines.blocks import (
    ArrowNames,
    Block,
    EngineData,
    EngineRun,
    Stats,
    batch_em,
    block_round,
    check_known_model,
    engine_model,
    is_ebcc,
    known_class_codes,
    known_for_items,
    make_block,
    mv_bonus,
    read_known,
    refuse_unmatched,
    round_times,
)
from crowdlab.engines.limits import MAX_ITER
from crowdlab.engines.restarts import with_restarts
from crowdlab.errors import DataError
from crowdlab.io.columns import SCORE_ALIASES, _long_columns, _norm
from crowdlab.io.layout import _looks_long
from crowdlab.io.readers import INVISIBLE, Column, Table, check_where, get_limits, not_a_file, read_table
from crowdlab.io.soft import soft_vote_column, soft_votes_elsewhere
from crowdlab.io.tables import _default_name
from crowdlab.io.values import (
    INFINITE_HINT,
    _as_numbers,
    _check_labels_present,
    _check_sizes,
    _encode_col,
    _merge_note,
    _required_col,
    _resolve_kind,
    infinite_labels,
)

DEFAULT_CHUNK_ROWS = 1_000_000
_MAX_BUCKETS = 256
_LONG_NEEDS = "a label file to stream needs item, worker and label columns (one row per label)"
MAX_CHUNK_ROWS = 2**31 - 1  # a chunk's rows are counted and coded in int32
BYTES_PER_CHUNK_ROW = 100  # the memory one row of a chunk takes while it is read and coded (about)


def check_chunk_rows(chunk_rows, where: str = "python") -> int:
    """``chunk_rows`` as an int, refused (naming the option and the valid range) unless it is a whole number from 1
    to what this machine's free memory holds at `BYTES_PER_CHUNK_ROW` bytes a row (at least the default, at most
    `MAX_CHUNK_ROWS`): a larger chunk would read the whole file into memory, or overflow."""
    from crowdlab.errors import ModelError

    name = "--chunk-rows" if where == "cli" else "chunk_rows"
    free = available_bytes()
    top = MAX_CHUNK_ROWS if free is None else max(DEFAULT_CHUNK_ROWS, min(MAX_CHUNK_ROWS, free // BYTES_PER_CHUNK_ROW))
    if isinstance(chunk_rows, float) and chunk_rows.is_integer():  # 1e6 means a million
        chunk_rows = int(chunk_rows)
    whole = isinstance(chunk_rows, int | np.integer) and not isinstance(chunk_rows, bool)
    if not whole or not 1 <= chunk_rows <= top:
        shown = (
            f"{chunk_rows:,}"
            if whole and abs(chunk_rows) < 10**15
            else f"{chunk_rows:.3g}"
            if whole
            else repr(chunk_rows)
        )
        free_said = (
            "" if free is None else f"; {free / 1e9:.1f} GB of memory is free, about {BYTES_PER_CHUNK_ROW} bytes a row"
        )
        raise ModelError(
            f"{name} must be a whole number from 1 to {top:,} (rows read at a time{free_said}), not {shown}."
        )
    return int(chunk_rows)


# ---------------------------------------------------------------------- reading in chunks
def _header_line(fh) -> tuple[bytes, int]:
    """(the first line that is not blank, b"" when none; the number of blank lines before it) of a file opened in
    binary mode, which is left just after that line."""
    lead = 0
    while line := fh.readline():
        if line.strip():
            return line, lead
        lead += 1
    return b"", lead


def _line_chunks(path: Path, chunk_rows: int, block: int = 8 << 20) -> Iterator[tuple[bytes, bytes, int]]:
    """Yield (header line, body of whole lines, file line number of the body's first line), ``chunk_rows`` lines
    per body (more when a quoted field spans lines: a body ends where its double quotes balance)."""
    with open(path, "rb") as fh:
        head, lead = _header_line(fh)
        if head.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
            raise DataError(
                "this file is UTF-16 or UTF-32 text; the streaming reader reads UTF-8.",
                file=path.name,
                hint="Convert it to UTF-8 (iconv -f UTF-16 -t UTF-8) or read it in memory.",
            )
        next_line = lead + 2  # file line number of the next body line
        buf = b""
        eof = not head
        while not eof or buf:
            while not eof and buf.count(b"\n") < chunk_rows:
                more = fh.read(block)
                if not more:
                    eof = True
                    break
                buf += more
            nl = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
            if nl.size >= chunk_rows:
                j = chunk_rows - 1
                while buf.count(b'"', 0, int(nl[j]) + 1) % 2 and j + 1 < nl.size:
                    j += 1
                if buf.count(b'"', 0, int(nl[j]) + 1) % 2 and not eof:
                    more = fh.read(block)  # a quoted field runs past the buffer: read on
                    if not more:
                        eof = True
                    buf += more
                    continue
                cut = int(nl[j]) + 1
                n_lines = j + 1
            elif eof:
                cut, n_lines = len(buf), nl.size + (0 if buf.endswith(b"\n") else 1)
            else:
                continue
            body, buf = buf[:cut], buf[cut:]
            if body:
                yield head, body, next_line
            next_line += n_lines
            if eof and not buf:
                break


def _lone_cr(path: Path, block: int = 1 << 16) -> bool:
    """Whether the file's first line ends in a lone carriage return (classic Mac line ends, which the in-memory
    reader reads as line ends too)."""
    with open(path, "rb") as fh:
        while more := fh.read(block):
            cr, lf = more.find(b"\r"), more.find(b"\n")
            if lf >= 0 and (cr < 0 or lf < cr):
                return False
            if cr >= 0:
                if cr + 1 == len(more):
                    more += fh.read(1)
                return more[cr + 1 : cr + 2] != b"\n"
    return False


def _with_lf(path: Path, folder: Path, block: int = 8 << 20) -> Path:
    """``path`` itself, or, when its lines end in lone carriage returns, a copy in ``folder`` with line feeds (the
    chunks are cut at line feeds)."""
    if not _lone_cr(path):
        return path
    copy = folder / "lf.csv"
    with open(path, "rb") as src, open(copy, "wb") as dst:
        while more := src.read(block):
            dst.write(more.replace(b"\r", b"\n"))
    return copy


def _shift(exc: DataError, offset: int) -> DataError:
    """The chunk's DataError with its row number counted in the whole file."""
    row = None if exc.row is None else exc.row + offset
    return DataError(exc.problem, file=exc.file, row=row, column=exc.column, hint=exc.hint)


class _Pass0:
    """State of the first pass: distinct names per chunk, codes on disk, notes."""

    def __init__(self, path: Path, folder: Path, chunk_rows: int, where: str, progress=None):
        self.path, self.folder, self.chunk_rows, self.where = path, folder, chunk_rows, where
        self.progress = progress  # progress(rows read so far, None) after each chunk
        self.items: list = []  # Arrow arrays of each chunk's distinct item names
        self.item_rows: list[np.ndarray] = []  # rows per distinct item name of each chunk
        self.workers: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []
        self.offsets = [0, 0, 0]
        self.label_j = 0  # the label column, once row 1 is read
        self.n_rows = 0
        self.notes: list[str] = []
        self.skipped: list[int] = []
        self.header: tuple[str, ...] = ()
        self.name = ""
        self.file = path.name
        self.parquet = False

    def run(self) -> None:
        import pyarrow as pa

        codes = open(self.folder / "codes.bin", "wb")
        cols = None
        with codes:
            for table, first_line, body in self._tables():
                if cols is None:
                    cols = self._columns(table)
                    self.label_j = cols[2]  # as found by name (MTurk's Answer.*), not only an alias
                if body is not None:
                    self._notes(table, first_line, body)
                if not table.n_rows:
                    continue
                item_j, worker_j, label_j = cols
                items = _required_col(table, item_j, "item id")
                workers = _required_col(table, worker_j, "worker id")
                _check_labels_present(table, label_j)
                labels = table.col(label_j)
                block = np.empty((table.n_rows, 3), dtype=np.int64)
                block[:, 0] = items.codes + self.offsets[0]
                block[:, 1] = workers.codes + self.offsets[1]
                block[:, 2] = labels.codes + self.offsets[2]
                block.tofile(codes)
                arr = items.arrow if items.arrow is not None else pa.array(items.uniq.tolist(), pa.large_string())
                self.items.append(arr.cast(pa.large_string()))
                self.item_rows.append(np.bincount(items.codes, minlength=items.uniq.size).astype(np.int32))
                self.workers.append(workers.uniq)
                self.labels.append(labels.uniq)
                for i, c in enumerate((items, workers, labels)):
                    self.offsets[i] += c.uniq.size
                self.n_rows += table.n_rows
                if self.progress is not None:
                    self.progress(self.n_rows, None)
                if sum(u.size for u in self.labels) > 20 * get_limits().max_classes:
                    self._check_classes()
        if cols is None:  # no header row, or nothing below it: the in-memory reader's own message
            self._no_rows_error()
        if not self.n_rows:
            raise DataError(
                "the file has a header row but no data rows.",
                file=self.file,
                hint="Add the labels below the header, one row per label.",
            )

    def _no_rows_error(self) -> None:
        """Raise what `read_table` says of a file without data rows: "the file is empty (0 bytes).", "... holds only
        blank lines." or "... has a header row but no data rows" (reading just the header row, never the file)."""
        if self.parquet:
            raise DataError("the Parquet file has no rows.", file=self.file, hint="Add the labels, one row per label.")
        with open(self.path, "rb") as fh:
            head, _ = _header_line(fh)
            size = fh.seek(0, os.SEEK_END)
        blank = b"\n" if size else b""  # only blank lines / 0 bytes
        try:
            read_table(head or blank, needs=_LONG_NEEDS, where=self.where)
        except DataError as exc:
            raise replace_file(exc, self.file) from None
        raise DataError(  # not reached: read_table refuses a header row alone
            "the file has a header row but no data rows.", file=self.file, hint="Add the labels below the header."
        )

    def _tables(self) -> Iterator[tuple[Table, int, bytes | None]]:
        """(table, file line of its first row, its bytes) per chunk: CSV chunks through `read_table`; Parquet
        row batches as tables of text cells (numbers written as text), rows numbered as a CSV export would be."""
        with open(self.path, "rb") as fh:
            self.parquet = fh.read(4) == b"PAR1"
        if self.parquet:
            yield from ((t, 0, None) for t in _parquet_tables(self.path, self.chunk_rows, self.file, self.where))
            return
        for head, body, first_line in _line_chunks(_with_lf(self.path, self.folder), self.chunk_rows):
            offset = first_line - 2  # read_table numbers the body's first line 2
            try:
                table = read_table(
                    head + (b"" if head.endswith(b"\n") else b"\n") + body,
                    needs=_LONG_NEEDS,
                    allow_no_rows=True,
                    where=self.where,
                )
            except DataError as exc:
                raise _shift(replace_file(exc, self.file), offset) from None
            yield replace(table, file=self.file, rows=table.rows + offset, path=self.path), first_line, body

    def _columns(self, table) -> tuple[int, int, int]:
        self.header = table.header
        self.name = _default_name(table)
        if not _looks_long(table.header, None):
            raise DataError(
                "the streaming reader reads long files (one row per label); this looks like a wide table.",
                file=self.file,
                row=1,
                hint="Read wide files in memory (crowdlab fit without --stream), or write them as item,worker,label.",
            )
        item_j, worker_j, label_j, gold_j = _long_columns(table, None)
        soft = soft_vote_column(table.header)
        if soft is not None:
            raise soft_votes_elsewhere(soft, self.file)
        if _norm(table.header[label_j]) in SCORE_ALIASES:
            raise DataError(
                "the label column holds continuous scores; the streaming engines fit class labels.",
                file=self.file,
                column=table.header[label_j],
                hint="Fit scores in memory (crowdlab fit --method scores).",
            )
        used = {item_j, worker_j, label_j}
        ignored = [table.column_name(j) for j in range(len(table.header)) if j not in used]
        if ignored:
            what = " (gold is not used when streaming; score labels.csv afterwards)" if gold_j is not None else ""
            self.notes.append(f"Ignored {len(ignored)} column(s): {', '.join(map(repr, ignored))}{what}.")
        return item_j, worker_j, label_j

    def _notes(self, table, first_line: int, body: bytes) -> None:
        for note in table.notes:
            if note.startswith("Skipped"):
                continue
            if note not in self.notes:
                self.notes.append(note)
        if any(n.startswith("Skipped") for n in table.notes):
            n_lines = body.count(b"\n") + (0 if body.endswith(b"\n") else 1)
            all_rows = np.arange(first_line, first_line + n_lines)
            self.skipped.extend(np.setdiff1d(all_rows, table.rows).tolist()[:10])
            self.skipped_count = getattr(self, "skipped_count", 0) + int(n_lines - table.n_rows)

    def _check_classes(self) -> None:
        n = len(pd.unique(np.concatenate(self.labels)))
        if n > 20 * get_limits().max_classes:
            _check_sizes(self.file, self.where, classes=n)


def _parquet_tables(path: Path, chunk_rows: int, file: str, where: str) -> Iterator[Table]:
    """A Parquet file in row batches of ``chunk_rows``, each a `Table` of text cells (nulls as blanks)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from crowdlab.io.parquet import as_text, check_schema, iter_batches, open_parquet

    pf = open_parquet(path, file)  # an empty, truncated or corrupt file, a nested column: a DataError
    check_schema(pf.schema_arrow, file)  # a column name twice: said as the in-memory reader and Dask say it
    header = tuple(str(n) for n in pf.schema_arrow.names)
    start = 0
    for batch in iter_batches(pf, chunk_rows, file):
        cells = {}
        for j in range(batch.num_columns):
            col = as_text(batch.column(j), header[j], file, start + 2)
            col = pc.utf8_trim(pc.fill_null(col, ""), INVISIBLE)
            cells[j] = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([col])), copy=False)
        frame = pd.DataFrame(cells, copy=False)
        rows = np.arange(start + 2, start + 2 + batch.num_rows, dtype=np.int64)
        start += batch.num_rows
        yield Table(file, path, header, frame, rows, ",", (), where)


def replace_file(exc: DataError, file: str) -> DataError:
    return DataError(exc.problem, file=file, row=exc.row, column=exc.column, hint=exc.hint)


def _release() -> None:
    """Give freed memory back to the system between phases: Arrow's pool (mimalloc keeps freed pages) and, with
    glibc, malloc_trim (freed chunks inside the heap); otherwise the next phase's large arrays come on top."""
    import sys

    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass


def _sorted_distinct(box: list) -> tuple[ArrowNames, np.ndarray]:
    """(distinct names in code-point order, the code of each input name) of the Arrow strings in ``box`` (a list
    of one chunked array, emptied here so that its chunks are freed once combined), by sorting.

    Sorting, not hashing: Arrow's dictionary encoding of 2 x 10^7 names peaked near 2.4 GB (its hash table grows
    by doubling, ~7x the names' bytes), the sort and the comparisons of neighbours at ~2.5x."""
    import pyarrow as pa
    import pyarrow.compute as pc

    flat = box.pop().combine_chunks()
    order = pc.array_sort_indices(flat)
    ordered = flat.take(order)
    del flat
    n = len(ordered)
    new = np.empty(n, dtype=bool)
    new[:1] = True
    if n > 1:
        new[1:] = np.asarray(pc.not_equal(ordered.slice(1), ordered.slice(0, n - 1)))
    names = ordered.filter(pa.array(new))
    del ordered
    code = np.cumsum(new, dtype=np.int32)
    code -= 1
    del new
    rank = np.empty(n, dtype=np.int32)
    rank[np.asarray(order)] = code
    del order, code
    _release()
    return ArrowNames(names), rank


def _global(locals_: list[np.ndarray], *, merge_numbers: bool = False, arrow=None):
    """(names, rank): the ordered names of the concatenated chunk-distinct values and the final code of each."""
    if arrow is not None:
        import pyarrow as pa

        chunks = pa.chunked_array(arrow, type=pa.large_string())
        arrow.clear()  # the chunks' arrays are freed as soon as they are combined
        first = chunks.slice(0, 1).to_pylist()
        if _as_numbers(np.asarray(first, dtype=object)) is None:
            # not all numbers (the first is not): code-point order by Arrow's sort, as `_encode_col` orders such
            # names, with the names kept in Arrow (no Python string per item)
            box = [chunks]
            del chunks
            return (*_sorted_distinct(box), None)
        enc = chunks.combine_chunks().dictionary_encode()
        del chunks
        indices = np.asarray(enc.indices, dtype=np.int32)
        col = Column(indices, np.asarray(enc.dictionary.to_numpy(zero_copy_only=False), dtype=object), enc.dictionary)
    else:
        codes, uniq = pd.factorize(np.concatenate(locals_))
        col = Column(codes.astype(np.int32), np.asarray(uniq, dtype=object))
    names, rank = _encode_col(col, merge_numbers=merge_numbers)
    return names, rank, col


# ---------------------------------------------------------------------- the data on disk
class StreamedData:
    """A long CSV read once into dictionaries (in memory) and bucket files of int32 codes (on disk)."""

    def __init__(self, path, chunk_rows: int, folder: Path, where: str = "python", progress=None):
        path = Path(path)
        if not path.is_file():
            raise not_a_file(path)
        p0 = _Pass0(path, folder, chunk_rows, where, progress)
        p0.run()
        _release()
        item_names, item_rank, _ = _global([], arrow=p0.items)
        worker_names, worker_rank, _ = _global(p0.workers)
        labels = _global(p0.labels, merge_numbers=True)
        class_names, label_rank, label_col = labels
        file = path.name
        kind, _ = _resolve_kind("auto", p0.header[p0.label_j], None, label_col, where)
        if kind == "continuous":
            raise DataError(
                f"the labels are {label_col.uniq.size:,} distinct numbers: they look like continuous scores, which "
                "the streaming engines do not fit.",
                file=file,
                hint="Fit scores in memory (crowdlab fit --method scores), or map them to a few classes.",
            )
        infinite = infinite_labels(np.asarray(class_names, dtype=object))
        if infinite.any():
            spelled = ", ".join(repr(str(v)) for v in np.asarray(class_names, dtype=object)[infinite])
            raise DataError(
                f"the labels hold an infinite number ({spelled}) among numeric labels.",
                file=file,
                column=p0.header[p0.label_j],
                hint=INFINITE_HINT,
            )
        if len(class_names) < 2:
            raise DataError(
                f"all {p0.n_rows:,} labels are the same class ({class_names[0]!r}); EM needs at least two classes.",
                file=file,
                hint="Check that this is the label column, or add the labels of the other classes.",
            )
        _check_sizes(file, where, workers=len(worker_names), classes=len(class_names))
        notes = list(p0.notes) + list(_merge_note(label_col, class_names))
        if p0.skipped:
            shown = ", ".join(map(str, p0.skipped[:5]))
            notes.append(
                f"Skipped {getattr(p0, 'skipped_count', 0):,} empty or repeated-header row(s) (rows {shown} ...)."
            )
        self.path, self.folder, self.file = path, folder, file
        self.n_items, self.n_workers, self.n_classes = len(item_names), len(worker_names), len(class_names)
        self.n_obs = p0.n_rows
        rows_each = np.concatenate(p0.item_rows)
        del p0.items, p0.item_rows
        labels_per_item = np.bincount(item_rank, weights=rows_each, minlength=self.n_items).astype(np.int64)
        del rows_each
        self._bucket(item_rank, worker_rank, label_rank, labels_per_item, chunk_rows)
        del item_rank, labels_per_item
        _release()
        self.data = EngineData(
            item_names, worker_names, class_names, self.labels_per_worker, self.n_obs, p0.name, notes
        )

    def _bucket(self, item_rank, worker_rank, label_rank, per_item: np.ndarray, chunk_rows: int) -> None:
        """Rewrite codes.bin into bucket files of whole items (contiguous item ranges of ~chunk_rows rows)."""
        target = max(chunk_rows, -(-self.n_obs // _MAX_BUCKETS))
        cum = np.cumsum(per_item)
        bounds = [0]
        while bounds[-1] < self.n_items:
            start_rows = cum[bounds[-1] - 1] if bounds[-1] else 0
            nxt = int(np.searchsorted(cum, start_rows + target, side="left")) + 1
            bounds.append(min(max(nxt, bounds[-1] + 1), self.n_items))
        self.bounds = np.asarray(bounds, dtype=np.int64)
        nb = len(bounds) - 1
        files = [open(self.folder / f"bucket{b:04d}.bin", "wb") for b in range(nb)]
        self.labels_per_worker = np.zeros(self.n_workers, dtype=np.int64)
        self.class_totals = np.zeros(self.n_classes, dtype=np.int64)
        src = self.folder / "codes.bin"
        step = max(chunk_rows, 1 << 16)
        try:
            # plain reads, not a memory map: mapped pages of the code file would count in the process's memory
            fh = open(src, "rb")
            while True:
                part = np.fromfile(fh, dtype=np.int64, count=3 * step).reshape(-1, 3)
                if not part.shape[0]:
                    break
                rec = np.empty((part.shape[0], 3), dtype=np.int32)
                rec[:, 0] = item_rank[part[:, 0]]
                rec[:, 1] = worker_rank[part[:, 1]]
                rec[:, 2] = label_rank[part[:, 2]]
                self.labels_per_worker += np.bincount(rec[:, 1], minlength=self.n_workers)
                self.class_totals += np.bincount(rec[:, 2], minlength=self.n_classes)
                b = np.searchsorted(self.bounds, rec[:, 0], side="right") - 1
                order = np.argsort(b, kind="stable")
                rec, b = rec[order], b[order]
                cuts = np.searchsorted(b, np.arange(nb + 1))
                for j in np.flatnonzero(np.diff(cuts)):
                    rec[cuts[j] : cuts[j + 1]].tofile(files[j])
            fh.close()
        finally:
            for f in files:
                f.close()
        os.remove(src)
        # each bucket's count matrix X (items x worker-labels, CSR) built once and stored beside its rows: the
        # E-step's X @ log Gamma and the M-step's X.T @ q then read it back instead of building it every pass
        for b in range(nb):
            lo, hi = int(self.bounds[b]), int(self.bounds[b + 1])
            rows = np.fromfile(self.folder / f"bucket{b:04d}.bin", dtype=np.int32).reshape(-1, 3)
            X = make_block(rows[:, 0] - lo, rows[:, 1], rows[:, 2], hi - lo, self.n_workers, self.n_classes)
            X = X.label_counts
            with open(self.folder / f"csr{b:04d}.bin", "wb") as fh:
                np.asarray([X.nnz], dtype=np.int64).tofile(fh)
                X.indptr.astype(np.int64).tofile(fh)
                X.indices.astype(np.int32).tofile(fh)
                X.data.astype(np.float64).tofile(fh)
            del rows, X

    def buckets(self) -> Iterator[tuple[int, int, np.ndarray]]:
        """(first item, last item + 1, rows (n, 3) int32 [item, worker, label]) per bucket."""
        for b in range(self.bounds.size - 1):
            rows = np.fromfile(self.folder / f"bucket{b:04d}.bin", dtype=np.int32).reshape(-1, 3)
            yield int(self.bounds[b]), int(self.bounds[b + 1]), rows

    def blocks(self) -> Iterator[tuple[int, int, Block]]:
        """(first item, last item + 1, the bucket as a `crowdlab.engines.blocks.Block` with its stored count matrix)."""
        import scipy.sparse as sp

        M, K = self.n_workers, self.n_classes
        for b, (lo, hi, rows) in enumerate(self.buckets()):
            with open(self.folder / f"csr{b:04d}.bin", "rb") as fh:
                nnz = int(np.fromfile(fh, dtype=np.int64, count=1)[0])
                indptr = np.fromfile(fh, dtype=np.int64, count=hi - lo + 1)
                indices = np.fromfile(fh, dtype=np.int32, count=nnz)
                data = np.fromfile(fh, dtype=np.float64, count=nnz)
            X = sp.csr_matrix((data, indices, indptr), shape=(hi - lo, M * K))
            yield lo, hi, make_block(rows[:, 0] - lo, rows[:, 1], rows[:, 2], hi - lo, M, K, label_counts=X)


def known_from_column(path, column: str, chunk_rows: int = DEFAULT_CHUNK_ROWS, where: str = "python"):
    """Semi-supervised EM from a column of the label file itself (``known_column``): the rows whose cell in
    ``column`` holds a class fix their item's class (blank cells: unknown). One more read of the file in chunks
    through the same reading path; an item given two different classes is refused."""
    from crowdlab.engines.blocks import KnownLabels

    path = Path(path)
    p0 = _Pass0(path, Path(tempfile.gettempdir()), int(chunk_rows), where)
    items, labels = [], []
    cols = None
    for table, _, _ in p0._tables():
        if cols is None:
            cols = p0._columns(table)
            hits = [j for j, h in enumerate(table.header) if h == column or _norm(h) == _norm(column)]
            if not hits:
                raise DataError(
                    f"no column {column!r} to read the known classes from; the columns are "
                    f"{', '.join(map(repr, table.header))}.",
                    file=p0.file,
                    hint="Name the column that holds the known classes (blank where unknown).",
                )
            j = hits[0]
            if j in cols:
                raise DataError(
                    f"the known classes cannot come from the {('item', 'worker', 'label')[cols.index(j)]} column.",
                    file=p0.file,
                    column=table.header[j],
                )
        if not table.n_rows:
            continue
        given = ~table.missing(j)
        if given.any():
            items.append(_required_col(table, cols[0], "item id").array()[given])
            labels.append(table.values(j)[given])
    if not items:
        return KnownLabels(np.zeros(0, object), np.zeros(0, object), p0.file)
    frame = pd.DataFrame({"item": np.concatenate(items), "label": np.concatenate(labels)}).drop_duplicates()
    twice = frame["item"].duplicated(keep=False)
    if twice.any():
        bad = frame.loc[twice, "item"].iloc[0]
        raise DataError(
            f"the known-class column gives item {bad!r} more than one class.",
            file=p0.file,
            column=column,
            hint="Give each item one known class (or leave its cells blank).",
        )
    return KnownLabels(frame["item"].to_numpy(dtype=object), frame["label"].to_numpy(dtype=object), p0.file)


# ---------------------------------------------------------------------- fitting
def available_bytes() -> int | None:
    """Physical memory free now (Linux/Unix sysconf), None where it cannot be asked."""
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _check_state_fits(n_items: int, n_classes: int) -> None:
    """Batch EM returns the (N, K) float64 posterior (the rounds keep theirs on disk); refuse, pointing to online
    EM, when it cannot fit."""
    need = n_items * n_classes * 8
    free = available_bytes()
    if free is not None and need > free:
        raise MemoryError(
            f"batch EM returns the posteriors of all {n_items:,} items ({need / 1e9:.1f} GB for {n_classes} classes) "
            f"but only {free / 1e9:.1f} GB of memory is free. Use online EM, which keeps no per-item state "
            "(method 'online_ds', crowdlab.models.online), or the Dask engine on a cluster "
            "(crowdlab.engines.distributed)."
        )


def fit_file(
    path,
    method: str = "ds",
    *,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    prior: float = 0.0,
    tol: float = 1e-8,
    max_iter: int = MAX_ITER,
    workdir=None,
    where: str = "python",
    progress: Callable[[int, int], None] | None = None,
    known=None,
    model_options: dict | None = None,
    known_column: str | None = None,
    read_progress: Callable[[int, None], None] | None = None,
    restarts: int | None = None,
    accelerate: bool = True,
) -> EngineRun:
    """Fit ``method`` ("mv", "ds", "one_coin", "two_coin", "mace", "mace_vb", "ibcc", "ebcc") to a long CSV or
    Parquet file without holding it in memory.

    ``known``: semi-supervised EM, items whose class stays fixed: a mapping item -> class or the path of a CSV
    file with item and label columns (the CLI's ``--known``). ``model_options``: the model's constructor options
    (e.g. ``{"class_prior": "estimate"}`` for MACE). ``known_column``: the same from a column of the file itself
    (a cell holding a class fixes that row's item; blank: unknown; `known_from_column`).

    Returns an :class:`crowdlab.engines.blocks.EngineRun` shaped like ``cl.fit``'s Run: ``labels()``, ``posterior``
    (N, K), ``params``, ``history()``, ``objective_history()``, ``converged``, ``stop_reason``, ``data``
    (names and counts). ``progress(iteration, max_iter)``: after each EM pass; ``read_progress(rows, None)``: after
    each chunk of the first pass, which reads the file. ``chunk_rows``: rows per chunk read and per bucket (memory
    ~ chunk_rows x 100 bytes). ``workdir``: where the temporary files go (12 bytes per label, and two N x K float64
    posterior files; removed at the end). ``restarts``: as :func:`crowdlab.engines.fit.fit`'s (EBCC: the best
    ELBO of 8 subtype seeds by default).

    ``accelerate`` (default True, as ``cl.fit``): SQUAREM around the EM map (`crowdlab.engines.accel`; each
    evaluation of the map is one pass over the buckets, GLAD's its E pass and M-step passes) for every model
    but majority vote: the fixed point of plain EM in fewer passes, stopping on the estimated remaining gain
    after checking that the stop is a maximum; ``run.acceleration`` says what it did (``timings["rounds"]``: the
    passes), and the posterior reported is the one at the last parameters (one more pass when the last pass was
    elsewhere). ``accelerate=False``: plain EM, equal to ``cl.fit(..., accelerate=False)`` to 1e-8.
    """
    again = dict(chunk_rows=chunk_rows, prior=prior, tol=tol, max_iter=max_iter, workdir=workdir, where=where)
    again |= dict(progress=progress, known=known, known_column=known_column, read_progress=read_progress)
    again |= dict(accelerate=accelerate)
    best = with_restarts(lambda **kw: fit_file(path, **kw), method, restarts, model_options, again)  # EBCC: 8 seeds
    if best is not None:
        return best
    check_where(where)
    chunk_rows = check_chunk_rows(chunk_rows, where)
    model = engine_model(method, prior, model_options)
    if known is not None and known_column is not None:
        raise ValueError("give known= or known_column=, not both.")
    check_known_model(model, known if known_column is None else known_column)
    known = read_known(known, where)
    if known_column is not None:
        known = known_from_column(path, known_column, chunk_rows, where)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="crowdlab-stream-", dir=workdir) as tmp:
        sd = StreamedData(path, int(chunk_rows), Path(tmp), where, read_progress)
        t1 = time.perf_counter()
        N, K = sd.n_items, sd.n_classes
        if getattr(model.info, "binary_only", False) and K != 2:
            from crowdlab.errors import ModelError

            raise ModelError(f"{model.info.title} is for two classes; this file has {K}.")
        _check_state_fits(N, K)
        from crowdlab.models.ebcc import item_keys
        from crowdlab.models.kernels import load_for

        load_for(N * K)  # the buckets run the compiled kernels whenever the in-memory fit of this file would
        fixed = None
        if known is not None:
            fixed, matched = known_for_items(sd.data.item_names, known, known_class_codes(known, sd.data.class_names))
            refuse_unmatched(known, matched)
            model.with_known(fixed)  # what the outputs report (the blocks get their own slices)
        # the posteriors of the last two rounds go to two files (plain writes: the page cache, not this process's
        # memory); only the one reported is read back, at the end
        files = [Path(tmp) / "q0.bin", Path(tmp) / "q1.bin"]
        state = {"cur": 1, "hard": None}
        bonus = mv_bonus(sd.class_totals.astype(float))

        starts = state["starts"] = []

        def do_round(params, mode: str) -> Stats:
            starts.append(time.perf_counter())
            state["cur"] = 1 - state["cur"]
            total = None
            hard = np.empty(N, dtype=np.int32) if mode == "mv" else None
            keys = item_keys(sd.data.item_names) if mode == "votes" and is_ebcc(model) else None  # EBCC's split
            with open(files[state["cur"]], "wb") as fq:
                for lo, hi, block in sd.blocks():
                    kn = None if fixed is None else fixed[lo:hi]
                    kk = None if keys is None else keys[lo:hi]
                    q, h, st = block_round(block, model, params, mode, bonus, kn, split_keys=kk)
                    np.ascontiguousarray(q, dtype=np.float64).tofile(fq)
                    if hard is not None:
                        hard[lo:hi] = h
                    total = st if total is None else total + st
                    del q, block
            state["hard"] = hard
            state["agree"] = total.agree
            state["rounds"] = state.get("rounds", 0) + 1
            return total

        from crowdlab.models.glad import GLAD

        em_kw = dict(tol=tol, max_iter=max_iter, progress=progress, accelerate=accelerate, n_obs=sd.n_obs)
        if isinstance(model, GLAD):  # per-item difficulties: its own driver, state in memory (8 (K + 3) B/item)
            from crowdlab.engines.glad_blocks import StreamOps, glad_em

            ops = StreamOps(sd.blocks, model, N, sd.n_workers, K, fixed, sd.n_obs)
            out = glad_em(model, ops, sd.n_workers, K, **em_kw)
            q = ops.report
            state["rounds"] = ops.passes
        else:
            out = batch_em(model, do_round, **em_kw)
            final = files[1 - state["cur"]] if out.extra else files[state["cur"]]
            _release()
            q = np.fromfile(final, dtype=np.float64).reshape(N, K)
        if known_column is not None:
            n_fixed = int((fixed >= 0).sum())
            sd.data.notes = (*sd.data.notes, f"Known classes of {n_fixed:,} item(s) from column {known_column!r}.")
        run = EngineRun(
            sd.data,
            model,
            out.snapshots,
            q,
            state["hard"],
            tol,
            max_iter,
            "stream",
            out.violations,
            agree=state.get("agree"),
            outcome=out,
        )
        t2 = time.perf_counter()
    run.timings = {"read_s": t1 - t0, "em_s": t2 - t1, "rounds": state["rounds"], "buckets": sd.bounds.size - 1}
    if run.acceleration is not None:
        run.acceleration.passes = int(state["rounds"])
    run.timings |= round_times(starts, t2)
    return run
