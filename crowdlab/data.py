"""Annotations: integer-coded crowd labels plus the names behind the codes.

One observation per row of a long label file: ``item[j]`` was labelled ``label[j]`` by ``worker[j]``. Codes are
``int32`` indices into ``item_names``, ``worker_names`` and ``class_names``. Repeated (item, worker) pairs are kept
as separate observations (Dawid & Skene's observer 1 rated every patient three times).

Continuous scores (the lecture's "bad annotators" model) keep a float ``value`` per observation instead
of a class code; ``label`` is then ``None`` and ``class_names`` is empty.

Gold is optional: ``gold[n]`` is the true class code of item ``n`` or -1 when unknown (continuous data: a float,
NaN when unknown).

Sequences (Traganitis & Giannakis Sec. 4): items in (sequence, position) order; ``sequence_starts`` (S + 1,) holds the
offset of each sequence's first item. Networks (Sec. 5): ``graph`` is a symmetric ``scipy.sparse`` adjacency over the
items. Both are None for independent items.

Readers: `read_annotations` (long or wide CSV from a path, bytes or an upload, optional gold), `read_gold`,
`read_long_csv`, `read_wide_csv`; `to_long_dataframe` / `to_gold_dataframe` go back to names for previews and
export. Every bad input raises `DataError` naming the file, the spreadsheet row(s) (header = row 1), the column
and what to do; nothing is dropped without a sentence in `Annotations.notes`.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd
import scipy.sparse as sp

from crowdlab.errors import DataError

__all__ = [
    "Annotations",
    "read_annotations",
    "read_gold",
    "read_long_csv",
    "read_wide_csv",
    "to_gold_dataframe",
    "to_long_dataframe",
]


def _names(values: Sequence | np.ndarray) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


@dataclass(frozen=True, eq=False)
class Annotations:
    """Crowd labels as parallel integer arrays (one entry per observation).

    Shapes: ``item``, ``worker``, ``label`` / ``value``: (n_obs,); ``gold``: (n_items,).
    """

    item: np.ndarray
    worker: np.ndarray
    label: np.ndarray | None
    item_names: tuple[str, ...]
    worker_names: tuple[str, ...]
    class_names: tuple[str, ...] = ()
    value: np.ndarray | None = None
    gold: np.ndarray | None = None
    name: str = ""
    notes: tuple[str, ...] = field(default=())
    sequence_starts: np.ndarray | None = None
    sequence_names: tuple[str, ...] = ()
    graph: object = None

    # ------------------------------------------------------------------ construction
    def __post_init__(self) -> None:
        item = np.ascontiguousarray(self.item, dtype=np.int32)
        worker = np.ascontiguousarray(self.worker, dtype=np.int32)
        object.__setattr__(self, "item", item)
        object.__setattr__(self, "worker", worker)
        object.__setattr__(self, "item_names", _names(self.item_names))
        object.__setattr__(self, "worker_names", _names(self.worker_names))
        object.__setattr__(self, "class_names", _names(self.class_names))
        n = item.shape[0]
        if worker.shape != (n,):
            raise DataError("item and worker arrays differ in length.")
        if self.label is None and self.value is None:
            raise DataError("Annotations need either class labels or continuous values.")
        if self.label is not None:
            label = np.ascontiguousarray(self.label, dtype=np.int32)
            if label.shape != (n,):
                raise DataError("label array differs in length from the item array.")
            object.__setattr__(self, "label", label)
            if n and (label.min() < 0 or label.max() >= len(self.class_names)):
                raise DataError("label codes must lie in 0 .. n_classes - 1.")
        if self.value is not None:
            value = np.ascontiguousarray(self.value, dtype=np.float64)
            if value.shape != (n,):
                raise DataError("value array differs in length from the item array.")
            if not np.all(np.isfinite(value)):
                raise DataError("continuous values must be finite numbers.")
            object.__setattr__(self, "value", value)
        if n == 0:
            raise DataError("There are no labels.", hint="Add at least one row of item, worker, label.")
        if item.min() < 0 or item.max() >= len(self.item_names):
            raise DataError("item codes must lie in 0 .. n_items - 1.")
        if worker.min() < 0 or worker.max() >= len(self.worker_names):
            raise DataError("worker codes must lie in 0 .. n_workers - 1.")
        if self.gold is not None:
            if self.is_continuous:
                gold = np.asarray(self.gold, dtype=np.float64)
            else:
                gold = np.asarray(self.gold, dtype=np.int32)
                if gold.size and (gold.min() < -1 or gold.max() >= self.n_classes):
                    raise DataError("gold codes must be -1 (unknown) or a class code.")
            if gold.shape != (len(self.item_names),):
                raise DataError("gold must have one entry per item.")
            object.__setattr__(self, "gold", gold)
        object.__setattr__(self, "notes", tuple(self.notes))
        if self.sequence_starts is not None:
            starts = np.ascontiguousarray(self.sequence_starts, dtype=np.int64)
            if (
                starts.ndim != 1
                or starts.size < 2
                or starts[0] != 0
                or starts[-1] != len(self.item_names)
                or (np.diff(starts) <= 0).any()
            ):
                raise DataError("sequence_starts must rise strictly from 0 to n_items (items ordered by sequence).")
            object.__setattr__(self, "sequence_starts", starts)
            names = _names(self.sequence_names) or tuple(str(i) for i in range(starts.size - 1))
            if len(names) != starts.size - 1:
                raise DataError("sequence_names needs one name per sequence.")
            object.__setattr__(self, "sequence_names", names)

    @classmethod
    def from_labels(
        cls,
        items: Sequence,
        workers: Sequence,
        labels: Sequence,
        *,
        gold: dict | None = None,
        classes: Sequence | None = None,
        name: str = "",
    ) -> Annotations:
        """Build from raw (item, worker, label) values of any hashable type.

        Names are sorted (numerically when all of them are numbers) so codes are reproducible. ``classes`` fixes
        the class order (e.g. to include a class nobody used). ``gold`` maps item name -> class name.
        """
        item_names, item = _encode(items)
        worker_names, worker = _encode(workers)
        if classes is not None:
            class_names = _names(classes)
            index = {c: i for i, c in enumerate(class_names)}
            try:
                label = np.array([index[str(v)] for v in labels], dtype=np.int32)
            except KeyError as exc:
                raise DataError(f"label {exc.args[0]!r} is not one of the classes {class_names}.") from None
        else:
            class_names, label = _encode(labels)
        g = None
        if gold is not None:
            g = np.full(len(item_names), -1, dtype=np.int32)
            ipos = {n: i for i, n in enumerate(item_names)}
            cpos = {c: i for i, c in enumerate(class_names)}
            for k, v in gold.items():
                if str(k) in ipos and str(v) in cpos:
                    g[ipos[str(k)]] = cpos[str(v)]
        return cls(item, worker, label, item_names, worker_names, class_names, gold=g, name=name)

    # ------------------------------------------------------------------ sizes
    @property
    def n_obs(self) -> int:
        return int(self.item.shape[0])

    @property
    def n_items(self) -> int:
        return len(self.item_names)

    @property
    def n_workers(self) -> int:
        return len(self.worker_names)

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def is_sequential(self) -> bool:
        """Items form sequences (in order, boundaries in ``sequence_starts``)."""
        return self.sequence_starts is not None

    @property
    def n_sequences(self) -> int:
        return 0 if self.sequence_starts is None else int(self.sequence_starts.size - 1)

    @property
    def is_continuous(self) -> bool:
        return self.label is None

    @property
    def has_gold(self) -> bool:
        if self.gold is None:
            return False
        if self.is_continuous:
            return bool(np.isfinite(self.gold).any())
        return bool((self.gold >= 0).any())

    @property
    def gold_mask(self) -> np.ndarray:
        """Boolean (n_items,): items whose gold label is known."""
        if self.gold is None:
            return np.zeros(self.n_items, dtype=bool)
        if self.is_continuous:
            return np.isfinite(self.gold)
        return self.gold >= 0

    def with_gold(self, gold: np.ndarray | None) -> Annotations:
        return replace(self, gold=gold)

    # ------------------------------------------------------------------ derived arrays (cached)
    @cached_property
    def label_counts(self) -> sp.csr_matrix:
        """Sparse (n_items, n_workers * K) count matrix X with X[n, m*K + k'] = #times worker m said k' on n.

        The EM hot paths are products with this matrix: the Dawid-Skene E-step is ``X @ log Gamma`` and the
        M-step is ``X.T @ q`` (Traganitis & Giannakis eqs. 9 and 11), so one iteration costs O(observations x classes).
        """
        if self.is_continuous:
            raise DataError("label_counts needs class labels, not continuous scores.")
        K = self.n_classes
        col = self.worker.astype(np.int64) * K + self.label
        X = sp.csr_matrix((np.ones(self.n_obs), (self.item, col)), shape=(self.n_items, self.n_workers * K))
        X.sum_duplicates()
        return X

    @cached_property
    def vote_counts(self) -> np.ndarray:
        """(n_items, K) number of votes for each class."""
        K = self.n_classes
        flat = np.bincount(self.item.astype(np.int64) * K + self.label, minlength=self.n_items * K)
        return flat.reshape(self.n_items, K).astype(np.float64)

    @cached_property
    def labels_per_item(self) -> np.ndarray:
        return np.bincount(self.item, minlength=self.n_items)

    @cached_property
    def labels_per_worker(self) -> np.ndarray:
        return np.bincount(self.worker, minlength=self.n_workers)

    @cached_property
    def value_range(self) -> tuple[float, float]:
        """(low, high) of the continuous scores."""
        if self.value is None:
            raise DataError("value_range needs continuous scores.")
        lo, hi = float(self.value.min()), float(self.value.max())
        if hi <= lo:
            hi = lo + 1.0
        return lo, hi

    # ------------------------------------------------------------------ display
    def summary(self) -> dict:
        """Counts a person wants to see first."""
        out = {
            "name": self.name,
            "items": self.n_items,
            "workers": self.n_workers,
            "labels": self.n_obs,
            "kind": "continuous scores" if self.is_continuous else f"{self.n_classes} classes",
            "labels per item (mean)": round(self.n_obs / max(self.n_items, 1), 2),
            "gold items": int(self.gold_mask.sum()),
        }
        if not self.is_continuous:
            out["classes"] = ", ".join(self.class_names)
        return out


def _encode(values: Sequence | np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """Map arbitrary values to sorted names and int32 codes (numeric order when all values are numbers)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iuf":
        uniq, codes = np.unique(arr, return_inverse=True)
        names = tuple(_fmt_number(u) for u in uniq)
        return names, codes.astype(np.int32)
    strs = np.asarray([str(v) for v in arr.tolist()], dtype=object)
    try:
        nums = np.asarray(strs, dtype=np.float64)
        uniq, codes = np.unique(nums, return_inverse=True)
        # keep the original spelling of each number
        first = {}
        for s, c in zip(strs.tolist(), codes.tolist()):
            first.setdefault(c, s)
        return tuple(first[i] for i in range(len(uniq))), codes.astype(np.int32)
    except ValueError:
        uniq, codes = np.unique(strs.astype(str), return_inverse=True)
        return tuple(str(u) for u in uniq), codes.astype(np.int32)


def _fmt_number(x) -> str:
    if isinstance(x, np.floating) and float(x).is_integer():
        return str(int(x))
    return str(x)


# ====================================================================== readers
#
# Rules (see ``read_annotations``):
# - Bytes are decoded as UTF-8 (a BOM is fine; UTF-16 with a BOM, as Excel's "Unicode text" writes, is accepted).
# - The delimiter (comma, semicolon or tab) is chosen from the first lines: the one that splits the header into
#   the most columns and every sampled line into the same number of columns. One column means a bad separator.
# - Cells are stripped of surrounding spaces. Fully blank rows are skipped and counted in ``Annotations.notes``;
#   every other problem raises ``DataError``. Rows are numbered as a spreadsheet shows them (header = row 1).

Source = str | os.PathLike | bytes | bytearray | memoryview | BinaryIO
"""A path, raw bytes, or a binary file-like with ``getvalue()`` or ``read()`` (e.g. Streamlit's upload)."""

UPLOADED = "uploaded file"

ITEM_ALIASES = ("item", "task", "question", "item_id", "task_id", "question_id")
WORKER_ALIASES = ("worker", "annotator", "labeler", "labeller", "rater", "worker_id", "annotator_id")
LABEL_ALIASES = ("label", "answer", "response", "class", "annotation")
SCORE_ALIASES = ("value", "score", "rating")
GOLD_ALIASES = ("gold", "truth", "true_label", "gold_label")

MISSING_TOKENS = ("", "nan", "NaN", "NAN", "na", "NA", "n/a", "N/A", "#N/A", "null", "NULL", "Null", "<NA>")
"""Cell values read as "no label" (blank cells and the usual spreadsheet spellings of NaN)."""

_DELIMITERS = (",", ";", "\t")
_SNIFF_LINES = 50
_SHOW = 5  # how many offending rows / names a message lists
_GENERIC_STEMS = {"labels", "annotations", "data"}
_MAGIC = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx workbook is one)"),
    (b"\xd0\xcf\x11\xe0", "an Excel .xls workbook"),
)
_UTF8_HINT = (
    "Save the file as UTF-8 (Excel: Save As > 'CSV UTF-8'; LibreOffice: Save As > CSV, "
    "character set 'Unicode (UTF-8)') and load it again."
)
_EXPORT_HINT = "Export the data as CSV (comma-, semicolon- or tab-separated text) and load that file."


@dataclass(frozen=True)
class _Table:
    """A CSV file read as stripped strings, keeping the spreadsheet row number of every kept row."""

    file: str
    path: Path | None
    header: tuple[str, ...]
    cells: pd.DataFrame  # columns 0 .. n-1, one row per non-blank data row
    rows: np.ndarray  # (n_rows,) spreadsheet row numbers (header = 1)
    delimiter: str
    notes: tuple[str, ...]

    def column_name(self, j: int) -> str:
        """The header cell of column ``j`` as written, or its position when the cell is blank."""
        return self.header[j] or f"column {j + 1} (no header)"

    def values(self, j: int) -> np.ndarray:
        """Column ``j`` as an object array of str."""
        return self.cells[j].to_numpy(dtype=object)

    def missing(self, j: int) -> np.ndarray:
        """Boolean mask of cells in column ``j`` that hold no value (blank or a NaN spelling)."""
        return self.cells[j].isin(MISSING_TOKENS).to_numpy(dtype=bool)


# ---------------------------------------------------------------------- bytes -> table
def _load_source(source: Source) -> tuple[bytes, str, Path | None]:
    """Return the raw bytes, the file name used in messages, and the path (None for uploads)."""
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise DataError(
                "no such file.", file=str(path), hint="Check the path (it is read relative to where you started)."
            )
        return path.read_bytes(), path.name, path
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), UPLOADED, None
    if hasattr(source, "getvalue"):
        data = source.getvalue()
    elif hasattr(source, "read"):
        data = source.read()
    else:
        raise TypeError(f"cannot read annotations from {type(source).__name__}; pass a path, bytes or a file.")
    name = getattr(source, "name", None)
    file = Path(name).name if isinstance(name, str) and name else UPLOADED
    if isinstance(data, str):
        data = data.encode("utf-8")
    return bytes(data), file, None


def _decode(data: bytes, file: str) -> str:
    """Decode CSV bytes, refusing binary files and naming the first byte that is not UTF-8."""
    if not data.strip():
        problem = "the file is empty (0 bytes)." if not data else "the file holds only blank lines."
        raise DataError(problem, file=file, hint="Choose a CSV file with a header row and one row per label.")
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise DataError(f"this is not a CSV text file; it looks like {what}.", file=file, hint=_EXPORT_HINT)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise DataError("the file starts like UTF-16 text but is not.", file=file, hint=_UTF8_HINT) from None
    if b"\x00" in data[:4096]:
        raise DataError("this is not a CSV text file (it holds binary data).", file=file, hint=_EXPORT_HINT)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        offset = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        row = data.count(b"\n", 0, offset) + 1
        raise DataError(
            f"byte 0x{data[offset]:02x} at byte offset {offset} is not UTF-8 text "
            "(the file was probably saved as Latin-1/Windows-1252).",
            file=file,
            row=row,
            hint=_UTF8_HINT,
        ) from None


def _sniff_delimiter(lines: list[str]) -> str | None:
    """The delimiter that splits the header into the most columns and the sample lines consistently.

    Returns None when no candidate gives the header two or more columns.
    """
    best, best_score = None, (0.0, 1)
    for delim in _DELIMITERS:
        counts = [len(fields) for fields in csv.reader(lines, delimiter=delim)]
        if counts[0] < 2:
            continue
        score = (sum(c == counts[0] for c in counts) / len(counts), counts[0])
        if score > best_score:
            best, best_score = delim, score
    return best


def _parser_error(exc: Exception, file: str) -> DataError:
    """Turn a pandas tokenizer error into a DataError with the row it names."""
    text = str(exc)
    fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if fields:
        expected, line, saw = (int(g) for g in fields.groups())
        return DataError(
            f"this row has {saw} cells but the header has {expected}.",
            file=file,
            row=line,
            hint="A value probably contains the delimiter: put that value in double quotes, "
            "or remove the extra delimiter.",
        )
    quote = re.search(r"EOF inside string starting at row (\d+)", text)
    if quote:
        return DataError(
            "a double quote opened in this row is never closed.",
            file=file,
            row=int(quote.group(1)) + 1,
            hint='Close the quote, or write a literal quote as two quotes ("").',
        )
    return DataError(f"the CSV parser failed: {text}", file=file, hint=_EXPORT_HINT)


def _one_column_error(file: str, header_line: str, needs: str) -> DataError:
    return DataError(
        f"found only one column ({header_line[:60]!r}); {needs}.",
        file=file,
        row=1,
        hint="Separate the columns with commas, semicolons or tabs (spaces and other separators are not "
        "read), with the column names in row 1.",
    )


def _no_worker_columns_error(file: str) -> DataError:
    return DataError(
        "this wide file has no worker columns.",
        file=file,
        row=1,
        hint="A wide file has one row per item: the item id in the first column, then one column per worker "
        "(worker name in row 1, the worker's label in each cell, blank when missing). For one row per label "
        "use a long file with columns item, worker, label.",
    )


def _strip_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Strip surrounding spaces from every cell, column by column (vectorised)."""
    frame = frame.fillna("")
    return pd.DataFrame({j: frame[j].str.strip() for j in frame.columns}, index=frame.index)


def _read_table(source: Source, *, needs: str, wide: bool = False, allow_no_rows: bool = False) -> _Table:
    """Read a CSV source into a `_Table` of stripped strings, dropping (and counting) fully blank rows."""
    data, file, path = _load_source(source)
    text = _decode(data, file)
    body = text.lstrip()
    lead = text[: len(text) - len(body)].count("\n")
    sample = [line for line in body[:65536].splitlines()[:_SNIFF_LINES] if line.strip()]
    if not sample:
        raise DataError("the file holds only blank lines.", file=file, hint="Choose a CSV file with a header row.")
    delim = _sniff_delimiter(sample)
    if delim is None:
        raise _no_worker_columns_error(file) if wide else _one_column_error(file, sample[0], needs)
    try:
        frame = pd.read_csv(
            io.StringIO(text),
            sep=delim,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=False,
            skiprows=lead,
            header=0,
            engine="c",
        )
    except pd.errors.ParserError as exc:
        raise _parser_error(exc, file) from None
    header = tuple(h.strip() for h in next(csv.reader([sample[0]], delimiter=delim)))
    if len(header) != frame.shape[1]:
        header = tuple(str(c).strip() for c in frame.columns)
    frame.columns = range(frame.shape[1])
    cells = _strip_cells(frame)
    rows = np.arange(len(cells), dtype=np.int64) + lead + 2
    blank = (cells == "").all(axis=1).to_numpy(dtype=bool)
    notes: tuple[str, ...] = ()
    if blank.any():
        notes = (f"Skipped {_count(int(blank.sum()), 'empty row')} ({_rows_phrase(rows[blank])}).",)
        cells, rows = cells[~blank].reset_index(drop=True), rows[~blank]
    if not len(cells) and not allow_no_rows:
        raise DataError(
            "the file has a header row but no data rows." + (f" ({notes[0]})" if notes else ""),
            file=file,
            hint="Add the labels below the header, one row per label.",
        )
    return _Table(file, path, header, cells, rows, delim, notes)


# ---------------------------------------------------------------------- message helpers
def _count(n: int, noun: str) -> str:
    """'1 row', '3 rows'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _listing(things: Sequence, total: int | None = None) -> str:
    """'a, b, c and 4 more' from the first few of ``things``."""
    things = [str(t) for t in things]
    total = len(things) if total is None else total
    shown = ", ".join(things[:_SHOW])
    return shown if total <= _SHOW else f"{shown} and {total - _SHOW} more"


def _rows_phrase(rows: np.ndarray) -> str:
    """'row 4' or 'rows 4, 7, 9 and 2 more'."""
    return f"row {rows[0]}" if rows.size == 1 else f"rows {_listing(rows.tolist())}"


def _rows_error(
    table: _Table, mask: np.ndarray, column: int, problem: str, hint: str, *, show_values: bool = False
) -> DataError:
    """A DataError listing the spreadsheet rows where ``mask`` is set: "3 rows have {problem} (rows ...)".

    A single row goes into the error's ``row``; several are listed in the message (the first few and a count).
    With ``show_values`` the offending cells are quoted too.
    """
    rows = table.rows[mask]
    single = rows.size == 1
    text = f"{'1 row has' if single else f'{rows.size} rows have'} {problem}"
    if not single:
        text += f" ({_rows_phrase(rows)})"
    if show_values:
        text += ": " + _listing([repr(v) for v in table.values(column)[mask][:_SHOW]], rows.size)
    return DataError(
        text + ".",
        file=table.file,
        row=int(rows[0]) if single else None,
        column=table.column_name(column),
        hint=hint,
    )


# ---------------------------------------------------------------------- columns
def _norm(name: str) -> str:
    """Header cell -> alias key: lower case, spaces and hyphens as underscores."""
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def _find(table: _Table, aliases: Sequence[str], role: str, *, skip: Sequence[int] = ()) -> int | None:
    """Index of the one column whose name is an alias of ``role``; None when there is none."""
    hits = [j for j, h in enumerate(table.header) if _norm(h) in aliases and j not in skip]
    if len(hits) > 1:
        names = ", ".join(repr(table.header[j]) for j in hits)
        raise DataError(
            f"more than one column could be the {role} column: {names}.",
            file=table.file,
            row=1,
            hint="Rename or delete all but one of them.",
        )
    return hits[0] if hits else None


def _missing_columns_error(table: _Table, missing: dict[str, Sequence[str]], hint: str = "") -> DataError:
    found = ", ".join(repr(h) for h in table.header)
    accepted = "; ".join(f"{role}: {', '.join(aliases)}" for role, aliases in missing.items())
    return DataError(
        f"no {' or '.join(missing)} column found; the columns in row 1 are {found}.",
        file=table.file,
        row=1,
        hint=f"Name the columns in row 1 (case does not matter). Accepted names - {accepted}.{hint}",
    )


def _score_column(table: _Table, score_column: str) -> int:
    """Index of the column named ``score_column`` (case and spaces ignored)."""
    key = _norm(score_column)
    hits = [j for j, h in enumerate(table.header) if _norm(h) == key]
    if not hits:
        found = ", ".join(repr(h) for h in table.header)
        raise DataError(
            f"there is no column named {score_column!r}; the columns in row 1 are {found}.",
            file=table.file,
            row=1,
            hint="Pass score_column= one of those names, or leave it out to find the label column by name.",
        )
    return hits[0]


def _long_columns(table: _Table, score_column: str | None) -> tuple[int, int, int, int | None]:
    """(item, worker, label, gold-or-None) column indices of a long file."""
    item = _find(table, ITEM_ALIASES, "item")
    worker = _find(table, WORKER_ALIASES, "worker")
    if score_column is not None:
        label = _score_column(table, score_column)
    else:
        label = _find(table, LABEL_ALIASES + SCORE_ALIASES, "label")
    missing = {
        role: aliases
        for role, aliases, j in (
            ("item", ITEM_ALIASES, item),
            ("worker", WORKER_ALIASES, worker),
            ("label", LABEL_ALIASES + SCORE_ALIASES, label),
        )
        if j is None
    }
    if missing:
        hint = " If rows are items and columns are workers, read it as a wide file (fmt='wide')."
        raise _missing_columns_error(table, missing, hint)
    gold = _find(table, GOLD_ALIASES, "gold", skip=(item, worker, label))
    return item, worker, label, gold


def _looks_long(header: Sequence[str], score_column: str | None) -> bool:
    """A header naming a worker or a label column is a long file; anything else is read as wide."""
    keys = {_norm(h) for h in header}
    named = set(WORKER_ALIASES + LABEL_ALIASES + SCORE_ALIASES)
    return bool(keys & named) or score_column is not None


def _ignored_note(table: _Table, used: Sequence[int]) -> tuple[str, ...]:
    ignored = [table.column_name(j) for j in range(len(table.header)) if j not in used]
    if not ignored:
        return ()
    return (f"Ignored {_count(len(ignored), 'column')}: {', '.join(repr(n) for n in ignored)}.",)


# ---------------------------------------------------------------------- values
def _as_numbers(strings: np.ndarray) -> np.ndarray | None:
    """Float values of ``strings`` when every one is a finite number, else None."""
    if not len(strings):
        return None
    nums = pd.to_numeric(pd.Series(strings, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    return nums if np.isfinite(nums).all() else None


def _name_order(names: np.ndarray) -> np.ndarray:
    """Sorting permutation of names: numeric order when all are numbers, else string order."""
    nums = _as_numbers(names)
    strs = names.astype(str)
    if nums is None:
        return np.argsort(strs, kind="stable")
    return np.lexsort((strs, nums))


def _encode_names(values: np.ndarray, *, merge_numbers: bool = False) -> tuple[tuple[str, ...], np.ndarray]:
    """Sorted distinct names and int32 codes, hashing once (fast on 10^6 rows).

    With ``merge_numbers`` (class labels), spellings of the same number ("1", "1.0") are one name, kept as first
    written.
    """
    codes, uniq = pd.factorize(values)
    uniq = np.asarray(uniq, dtype=object)
    nums = _as_numbers(uniq) if merge_numbers else None
    if nums is not None:
        _, first, inverse = np.unique(nums, return_index=True, return_inverse=True)
        return tuple(uniq[first]), inverse[codes].astype(np.int32)
    order = _name_order(uniq)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return tuple(uniq[order]), rank[codes].astype(np.int32)


def _to_float(values: np.ndarray, decimal_comma: bool) -> np.ndarray:
    """Parse strings as floats; NaN where a cell is not a finite number."""
    series = pd.Series(values, dtype=object)
    if decimal_comma:
        series = series.str.replace(",", ".", regex=False)
    nums = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, copy=True)
    nums[~np.isfinite(nums)] = np.nan
    return nums


def _number_hint(kind_hint: bool) -> str:
    hint = "Write each score as a number such as 3 or 0.75."
    if kind_hint:
        hint += " To read text labels as classes, use kind='classes'."
    return hint


def _required_ids(table: _Table, j: int, what: str) -> np.ndarray:
    """Column ``j`` as ids, raising when any cell is blank."""
    blank = (table.cells[j] == "").to_numpy(dtype=bool)
    if blank.any():
        raise _rows_error(table, blank, j, f"a blank {what}", f"Fill in the {what}, or delete the row(s).")
    return table.values(j)


def _resolve_kind(kind: str, label_header: str, score_column: str | None) -> str:
    if kind != "auto":
        return kind
    return "continuous" if score_column is not None or _norm(label_header) in SCORE_ALIASES else "classes"


def _check_choice(arg: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"{arg} must be one of {', '.join(map(repr, choices))}, not {value!r}.")


# ---------------------------------------------------------------------- building Annotations
def _class_annotations(
    file: str,
    column: str,
    items: np.ndarray,
    workers: np.ndarray,
    labels: np.ndarray,
    name: str,
    notes: tuple[str, ...],
) -> Annotations:
    """Annotations with class codes; raises when there is only one class."""
    class_names, label = _encode_names(labels, merge_numbers=True)
    if len(class_names) < 2:
        raise DataError(
            f"all {len(labels)} labels are the same class ({class_names[0]!r}); EM needs at least two classes.",
            file=file,
            column=column,
            hint="Check that this is the label column, or add the labels of the other classes. "
            "For numeric scores use kind='continuous'.",
        )
    item_names, item = _encode_names(items)
    worker_names, worker = _encode_names(workers)
    return Annotations(item, worker, label, item_names, worker_names, class_names, name=name, notes=notes)


def _continuous_annotations(
    items: np.ndarray, workers: np.ndarray, values: np.ndarray, name: str, notes: tuple[str, ...]
) -> Annotations:
    item_names, item = _encode_names(items)
    worker_names, worker = _encode_names(workers)
    return Annotations(item, worker, None, item_names, worker_names, value=values, name=name, notes=notes)


def _class_lookup(class_names: tuple[str, ...], values: np.ndarray) -> np.ndarray:
    """Code of each distinct value among ``class_names`` (numbers match numerically), -1 when unseen."""
    index = {c: i for i, c in enumerate(class_names)}
    codes = np.array([index.get(str(v), -1) for v in values], dtype=np.int64)
    class_nums = _as_numbers(np.asarray(class_names, dtype=object))
    if class_nums is not None and (codes < 0).any():
        by_number = {float(x): i for i, x in enumerate(class_nums)}
        value_nums = _to_float(values, decimal_comma=False)
        for k in np.flatnonzero(codes < 0):
            codes[k] = by_number.get(float(value_nums[k]), -1)
    return codes


def _gold_classes(
    ann: Annotations, values: np.ndarray, file: str, column: str
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, tuple[str, ...]]:
    """Map gold class names to codes, adding classes no worker used.

    Returns (class_names, relabelled label codes, gold code per value, notes). Raises when the gold values
    share no class with the labels, or add more new classes than the labels have: the gold then does not belong
    to these labels (or holds scores; use kind='continuous').
    """
    inverse, uniq = pd.factorize(values)
    uniq = np.asarray(uniq, dtype=object)
    lookup = _class_lookup(ann.class_names, uniq)
    unseen = uniq[lookup < 0]
    if not unseen.size:
        return ann.class_names, ann.label, lookup[inverse], ()
    if unseen.size == uniq.size or unseen.size > ann.n_classes:
        raise DataError(
            f"{unseen.size} of the {uniq.size} gold classes never occur in the labels "
            f"({_listing(unseen.tolist())}); the labels use {_listing(ann.class_names, ann.n_classes)}.",
            file=file,
            column=column,
            hint="Check that the gold file belongs to this label file and spells the classes the same way. "
            "For numeric scores read the labels with kind='continuous'.",
        )
    names = np.asarray(ann.class_names + tuple(unseen), dtype=object)
    order = _name_order(names)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    lookup[lookup < 0] = np.arange(ann.n_classes, len(names))
    note = (
        f"Gold uses {_count(unseen.size, 'class')} no worker chose ({', '.join(map(repr, unseen))}); "
        "added to the classes.",
    )
    return tuple(names[order]), rank[ann.label], rank[lookup][inverse], note


def _check_gold_conflicts(ann: Annotations, codes: np.ndarray, gold: np.ndarray, file: str, column: str) -> None:
    """Raise when one item is given two different gold values."""
    pairs = pd.DataFrame({"item": codes, "gold": gold}).drop_duplicates()
    bad = pairs["item"][pairs["item"].duplicated()].unique()
    if bad.size:
        names = [repr(ann.item_names[i]) for i in bad[:_SHOW]]
        raise DataError(
            f"{_count(bad.size, 'item')} {'has' if bad.size == 1 else 'have'} conflicting gold labels "
            f"({_listing(names, bad.size)}).",
            file=file,
            column=column,
            hint="Give each item a single gold label (leave it blank where unknown).",
        )


def _attach_gold(
    ann: Annotations, codes: np.ndarray, values: np.ndarray, rows: np.ndarray, file: str, column: str
) -> Annotations:
    """Annotations with gold ``values`` (strings) for the items ``codes``; other items stay unknown."""
    if ann.is_continuous:
        nums = _to_float(values, decimal_comma=False)
        bad = np.isnan(nums)
        if bad.any():
            where = _listing([f"{v!r} (row {r})" for v, r in zip(values[bad][:_SHOW], rows[bad][:_SHOW])])
            raise DataError(
                f"{_count(int(bad.sum()), 'gold value')} {'is' if bad.sum() == 1 else 'are'} not a number: {where}.",
                file=file,
                column=column,
                hint=_number_hint(kind_hint=False),
            )
        _check_gold_conflicts(ann, codes, nums, file, column)
        gold = np.full(ann.n_items, np.nan)
        gold[codes] = nums
        return replace(ann, gold=gold)
    class_names, label, gold_codes, notes = _gold_classes(ann, values, file, column)
    _check_gold_conflicts(ann, codes, gold_codes, file, column)
    gold = np.full(ann.n_items, -1, dtype=np.int32)
    gold[codes] = gold_codes
    return replace(ann, label=label, class_names=class_names, gold=gold, notes=ann.notes + notes)


# ---------------------------------------------------------------------- long and wide
def _check_labels_present(table: _Table, j: int) -> None:
    """Raise listing the rows of a long file whose label cell is blank or NaN."""
    missing = table.missing(j)
    if missing.any():
        raise _rows_error(
            table,
            missing,
            j,
            "a blank or NaN label",
            "Fill in those labels, or delete the rows (a long file lists only the labels that were given). "
            "If 'NA' is a real class, give it another name.",
        )


def _long_from_table(table: _Table, *, kind: str, name: str, score_column: str | None) -> Annotations:
    """Long format: one row per (item, worker, label), optionally a per-item gold column."""
    item_j, worker_j, label_j, gold_j = _long_columns(table, score_column)
    kind = _resolve_kind(kind, table.header[label_j], score_column)
    items = _required_ids(table, item_j, "item id")
    workers = _required_ids(table, worker_j, "worker id")
    _check_labels_present(table, label_j)
    used = [item_j, worker_j, label_j] + ([gold_j] if gold_j is not None else [])
    notes = table.notes + _ignored_note(table, used)
    labels = table.values(label_j)
    column = table.column_name(label_j)
    if kind == "continuous":
        values = _to_float(labels, decimal_comma=table.delimiter == ";")
        bad = np.isnan(values)
        if bad.any():
            raise _rows_error(table, bad, label_j, "a score that is not a number", _number_hint(True), show_values=True)
        ann = _continuous_annotations(items, workers, values, name, notes)
    else:
        ann = _class_annotations(table.file, column, items, workers, labels, name, notes)
    if gold_j is None:
        return ann
    known = ~table.missing(gold_j)
    gold_values = table.values(gold_j)[known]
    return _attach_gold(ann, ann.item[known], gold_values, table.rows[known], table.file, table.header[gold_j])


def _wide_worker_columns(table: _Table, gold_j: int | None) -> tuple[list[int], tuple[str, ...]]:
    """Worker column indices (all but the item and gold columns) and notes on ignored empty columns."""
    workers, empty = [], 0
    seen: dict[str, int] = {}
    for j in range(1, len(table.header)):
        if j == gold_j:
            continue
        name = table.header[j]
        if not name:
            if table.missing(j).all():
                empty += 1
                continue
            raise DataError(
                "this column has labels but no worker name in row 1.",
                file=table.file,
                row=1,
                column=table.column_name(j),
                hint="Type the worker's name in row 1 of that column.",
            )
        if name in seen:
            raise DataError(
                f"worker {name!r} has two columns (columns {seen[name] + 1} and {j + 1}).",
                file=table.file,
                row=1,
                column=name,
                hint="Give each worker one column: rename or merge the two.",
            )
        seen[name] = j
        workers.append(j)
    notes = (f"Ignored {_count(empty, 'empty column')} without a name.",) if empty else ()
    return workers, notes


def _wide_present(table: _Table, worker_cols: list[int]) -> tuple[np.ndarray, tuple[str, ...]]:
    """(n_rows, n_workers) mask of cells holding a label, after checking rows; notes on rows without labels."""
    present = ~table.cells[worker_cols].isin(MISSING_TOKENS).to_numpy(dtype=bool)
    labelled = present.any(axis=1)
    if not labelled.any():
        raise DataError("no cell holds a label.", file=table.file, hint="Fill in the workers' labels.")
    blank_item = (table.cells[0] == "").to_numpy(dtype=bool) & labelled
    if blank_item.any():
        raise _rows_error(table, blank_item, 0, "labels but a blank item id", "Fill in the item id(s).")
    notes: tuple[str, ...] = ()
    if not labelled.all():
        skipped = table.rows[~labelled]
        notes += (f"Skipped {_count(skipped.size, 'row')} with no labels ({_rows_phrase(skipped)}).",)
    notes += (
        f"Read as a wide table: {int(labelled.sum())} item rows x {len(worker_cols)} worker columns, item ids "
        f"from column {table.column_name(0)!r}.",
    )
    return present, notes


def _wide_from_table(table: _Table, *, kind: str, name: str) -> Annotations:
    """Wide format: one row per item, item id first, one column per worker, blank = no label."""
    gold_j = _find(table, GOLD_ALIASES, "gold", skip=(0,))
    worker_cols, column_notes = _wide_worker_columns(table, gold_j)
    if not worker_cols:
        raise _no_worker_columns_error(table.file)
    present, row_notes = _wide_present(table, worker_cols)
    labelled = present.any(axis=1)
    notes = table.notes + column_notes + row_notes
    r, c = np.nonzero(present)
    items = table.values(0)[r]
    workers = np.asarray([table.header[j] for j in worker_cols], dtype=object)[c]
    labels = table.cells[worker_cols].to_numpy(dtype=object)[r, c]
    if kind == "continuous":
        ann = _wide_continuous(table, worker_cols, r, c, items, workers, labels, name, notes)
    else:
        ann = _class_annotations(table.file, "worker columns", items, workers, labels, name, notes)
    if gold_j is None:
        return ann
    known = ~table.missing(gold_j) & labelled
    codes = pd.Index(ann.item_names).get_indexer(table.values(0)[known])
    gold_values = table.values(gold_j)[known]
    return _attach_gold(ann, codes, gold_values, table.rows[known], table.file, table.header[gold_j])


def _wide_continuous(
    table: _Table,
    worker_cols: list[int],
    r: np.ndarray,
    c: np.ndarray,
    items: np.ndarray,
    workers: np.ndarray,
    labels: np.ndarray,
    name: str,
    notes: tuple[str, ...],
) -> Annotations:
    """Continuous scores from the present cells of a wide table; raises naming the non-number cells."""
    values = _to_float(labels, decimal_comma=table.delimiter == ";")
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        cells = [
            f"{labels[k]!r} (row {table.rows[r[k]]}, worker {table.header[worker_cols[c[k]]]!r})" for k in bad[:_SHOW]
        ]
        raise DataError(
            f"{_count(bad.size, 'score')} {'is' if bad.size == 1 else 'are'} not a number: "
            f"{_listing(cells, bad.size)}.",
            file=table.file,
            hint=_number_hint(True),
        )
    return _continuous_annotations(items, workers, values, name, notes)


def _default_name(table: _Table) -> str:
    """File stem; for a generic stem such as labels.csv, its folder's name (datasets are folders)."""
    if table.path is not None:
        if table.path.stem.lower() in _GENERIC_STEMS and table.path.parent.name:
            return table.path.parent.name
        return table.path.stem
    return Path(table.file).stem if table.file != UPLOADED else UPLOADED


_LONG_NEEDS = "a label file needs item, worker and label columns (or a wide table: item id, then worker columns)"


# ---------------------------------------------------------------------- public readers
def read_long_csv(
    source: Source, *, kind: str = "auto", name: str | None = None, score_column: str | None = None
) -> Annotations:
    """Read a long CSV (one row per label: item, worker, label; optional per-item gold column).

    ``kind``: "classes", "continuous" or "auto" (continuous when the label column is named value, score or
    rating, or when ``score_column`` names it). ``score_column`` names the label/score column when it is not
    one of the accepted aliases.
    """
    _check_choice("kind", kind, ("auto", "classes", "continuous"))
    table = _read_table(source, needs=_LONG_NEEDS)
    return _long_from_table(table, kind=kind, name=name or _default_name(table), score_column=score_column)


def read_wide_csv(source: Source, *, kind: str = "classes", name: str | None = None) -> Annotations:
    """Read a wide CSV: one row per item, the item id in the first column, one column per worker.

    Blank (or NaN) cells are missing labels. A column named gold/truth/true_label/gold_label holds gold.
    ``kind`` "auto" means "classes".
    """
    _check_choice("kind", kind, ("auto", "classes", "continuous"))
    table = _read_table(source, needs=_LONG_NEEDS, wide=True)
    return _wide_from_table(table, kind=kind, name=name or _default_name(table))


def read_annotations(
    source: Source,
    *,
    gold: Source | None = None,
    fmt: str = "auto",
    kind: str = "auto",
    name: str | None = None,
    score_column: str | None = None,
) -> Annotations:
    """Read crowd labels from a CSV path, bytes or uploaded file; every bad input raises `DataError`.

    ``fmt``: "long", "wide" or "auto" (long when row 1 names a worker or label column by one of the accepted
    aliases, else wide). ``kind``: "classes", "continuous" or "auto" (see `read_long_csv`; wide files default to
    classes). ``gold``: an optional gold CSV (see `read_gold`). ``name``: display name, default the file stem.
    """
    _check_choice("fmt", fmt, ("auto", "long", "wide"))
    _check_choice("kind", kind, ("auto", "classes", "continuous"))
    table = _read_table(source, needs=_LONG_NEEDS, wide=fmt == "wide")
    if fmt == "auto":
        fmt = "long" if _looks_long(table.header, score_column) else "wide"
    name = name or _default_name(table)
    if fmt == "long":
        ann = _long_from_table(table, kind=kind, name=name, score_column=score_column)
    else:
        ann = _wide_from_table(table, kind="continuous" if kind == "continuous" else "classes", name=name)
    return ann if gold is None else read_gold(gold, ann)


def _gold_columns(table: _Table) -> tuple[int, int]:
    """(item, gold label) column indices of a gold file."""
    worker = _find(table, WORKER_ALIASES, "worker")
    if worker is not None:
        raise DataError(
            f"this looks like a label file, not a gold file (it has a worker column, {table.header[worker]!r}).",
            file=table.file,
            row=1,
            hint="A gold file has two columns: item and its true label.",
        )
    item = _find(table, ITEM_ALIASES, "item")
    label = _find(table, GOLD_ALIASES, "gold label", skip=(item,) if item is not None else ())
    if label is None:
        label = _find(table, LABEL_ALIASES + SCORE_ALIASES, "gold label")
    missing = {
        role: aliases
        for role, aliases, j in (
            ("item", ITEM_ALIASES, item),
            ("label", GOLD_ALIASES + LABEL_ALIASES + SCORE_ALIASES, label),
        )
        if j is None
    }
    if missing:
        raise _missing_columns_error(table, missing)
    return item, label


def read_gold(source: Source, annotations: Annotations) -> Annotations:
    """Return ``annotations`` with the gold labels of a gold CSV (columns item and label) attached.

    The label column may be named gold, truth, true_label, gold_label, or any label alias. Gold may cover only
    some items (the rest stay unknown: -1, or NaN for continuous scores); blank gold cells are unknown too and
    are counted in the notes. It replaces any gold already attached. A gold file naming items without labels
    raises. A gold class no worker chose is added to ``class_names`` (label codes are renumbered to keep the
    names sorted) unless that looks like a mismatch (see `_gold_classes`). A gold file with a header but no rows
    attaches nothing and says so in the notes.
    """
    table = _read_table(source, needs="a gold file needs item and label columns", allow_no_rows=True)
    item_j, gold_j = _gold_columns(table)
    notes = annotations.notes + table.notes + _ignored_note(table, (item_j, gold_j))
    if annotations.gold is not None:
        notes += (f"Gold from '{table.file}' replaces the gold read before.",)
    base = replace(annotations, gold=None, notes=notes)
    if not len(table.rows):
        return replace(base, notes=notes + (f"Gold file '{table.file}' has no rows; no gold attached.",))
    items = _required_ids(table, item_j, "item id")
    known = ~table.missing(gold_j)
    if not known.all():
        base = replace(
            base, notes=notes + (f"{_count(int((~known).sum()), 'gold row')} with a blank label read as unknown.",)
        )
    codes = pd.Index(annotations.item_names).get_indexer(items[known])
    unknown = codes < 0
    if unknown.any():
        names = pd.unique(items[known][unknown])
        raise DataError(
            f"{_count(names.size, 'item')} in the gold file {'has' if names.size == 1 else 'have'} no labels "
            f"({_listing([repr(n) for n in names[:_SHOW]], names.size)}).",
            file=table.file,
            column=table.column_name(item_j),
            hint="Check that the gold file belongs to this label file and spells the item ids the same way "
            "(e.g. leading zeros), or delete those rows.",
        )
    return _attach_gold(
        base, codes, table.values(gold_j)[known], table.rows[known], table.file, table.column_name(gold_j)
    )


def to_long_dataframe(annotations: Annotations) -> pd.DataFrame:
    """One row per observation with names, not codes: item, worker, label (continuous: item, worker, value).

    Written with ``to_csv(index=False)`` it reads back (``read_annotations``) to the same codes.
    """
    a = annotations
    frame = pd.DataFrame(
        {
            "item": np.asarray(a.item_names, dtype=object)[a.item],
            "worker": np.asarray(a.worker_names, dtype=object)[a.worker],
        }
    )
    if a.is_continuous:
        frame["value"] = a.value
    else:
        frame["label"] = np.asarray(a.class_names, dtype=object)[a.label]
    return frame


def to_gold_dataframe(annotations: Annotations) -> pd.DataFrame:
    """The known gold labels as a frame with columns item, label (class names, or floats for scores)."""
    a = annotations
    mask = a.gold_mask
    items = np.asarray(a.item_names, dtype=object)[mask]
    if a.gold is None:
        labels: np.ndarray = np.array([], dtype=object)
    elif a.is_continuous:
        labels = a.gold[mask]
    else:
        labels = np.asarray(a.class_names, dtype=object)[a.gold[mask]]
    return pd.DataFrame({"item": items, "label": labels})


# ------------------------------------------------------- sequences (Traganitis & Giannakis, Sec. 4)
SEQUENCE_ALIASES = ("sequence", "seq", "sentence", "sequence_id", "sentence_id", "chain")
POSITION_ALIASES = ("position", "pos", "index", "token", "t", "step")
_SEQ_NEEDS = "a sequence label file needs sequence, position, worker and label columns"


def _positions(table: _Table, j: int) -> np.ndarray:
    """Column ``j`` as non-negative integer positions, raising with the offending rows."""
    raw = _required_ids(table, j, "position")
    pos = _to_float(raw, decimal_comma=False)
    bad = ~np.isfinite(pos) | (pos < 0) | (pos != np.round(pos))
    if bad.any():
        raise _rows_error(table, bad, j, "a position that is not a whole number >= 0", "Number positions 0, 1, 2, ...")
    return pos.astype(np.int64)


def _sequence_keys(table: _Table, seq_col: int, pos_col: int) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """(sequence names, sequence code per row, position per row)."""
    seq_names, seq = _encode_names(_required_ids(table, seq_col, "sequence id"))
    return seq_names, seq.astype(np.int64), _positions(table, pos_col)


def _sequence_items(seq: np.ndarray, pos: np.ndarray, n_seq: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Lay out items by (sequence, position): every position from the first to the last seen in a sequence is an
    item (a position nobody labelled becomes an item with no labels). Returns (item code per row, starts,
    item positions, number of unlabelled positions)."""
    first = np.full(n_seq, np.iinfo(np.int64).max)
    last = np.full(n_seq, -1)
    np.minimum.at(first, seq, pos)
    np.maximum.at(last, seq, pos)
    lengths = last - first + 1
    starts = np.concatenate([[0], np.cumsum(lengths)])
    item = starts[seq] + pos - first[seq]
    item_pos = np.arange(starts[-1]) - np.repeat(starts[:-1], lengths) + np.repeat(first, lengths)
    gaps = int(starts[-1] - np.unique(item).size)
    return item, starts, item_pos, gaps


def read_sequences(source: Source, *, gold: Source | None = None, name: str | None = None) -> Annotations:
    """Read crowd labels of sequences: a long CSV with columns sequence, position, worker, label.

    Items are the (sequence, position) pairs, ordered by sequence (names sorted, numerically when numbers) and
    position; ``sequence_starts`` marks the boundaries. A position inside a sequence that nobody labelled becomes
    an item without labels (noted). ``gold``: a CSV with columns sequence, position, label.
    """
    table = _read_table(source, needs=_SEQ_NEEDS)
    cols = {
        "sequence": _find(table, SEQUENCE_ALIASES, "sequence"),
        "position": _find(table, POSITION_ALIASES, "position"),
        "worker": _find(table, WORKER_ALIASES, "worker"),
        "label": _find(table, LABEL_ALIASES, "label"),
    }
    missing = {
        "sequence": SEQUENCE_ALIASES,
        "position": POSITION_ALIASES,
        "worker": WORKER_ALIASES,
        "label": LABEL_ALIASES,
    }
    missing = {k: v for k, v in missing.items() if cols[k] is None}
    if missing:
        raise _missing_columns_error(table, missing)
    seq_names, seq, pos = _sequence_keys(table, cols["sequence"], cols["position"])
    workers = _required_ids(table, cols["worker"], "worker id")
    blank = table.missing(cols["label"])
    if blank.any():
        raise _rows_error(table, blank, cols["label"], "no label", "Fill in the label, or delete the row(s).")
    labels = table.values(cols["label"])
    item, starts, item_pos, gaps = _sequence_items(seq, pos, len(seq_names))
    class_names, label = _encode_names(labels, merge_numbers=True)
    if len(class_names) < 2:
        raise DataError(
            f"all {len(labels)} labels are the same class ({class_names[0]!r}); EM needs at least two classes.",
            file=table.file,
            column=table.column_name(cols["label"]),
        )
    worker_names, worker = _encode_names(workers)
    seq_of_item = np.repeat(np.arange(len(seq_names)), np.diff(starts))
    item_names = tuple(f"{seq_names[s]}:{p}" for s, p in zip(seq_of_item.tolist(), item_pos.tolist()))
    notes = table.notes
    if gaps:
        notes += (f"{_count(gaps, 'position')} inside sequences had no labels; kept as unlabelled items.",)
    ann = Annotations(
        item,
        worker,
        label,
        item_names,
        worker_names,
        class_names,
        name=name or _default_name(table),
        notes=notes,
        sequence_starts=starts,
        sequence_names=seq_names,
    )
    return ann if gold is None else read_sequence_gold(gold, ann)


def read_sequence_gold(source: Source, annotations: Annotations) -> Annotations:
    """Attach gold from a CSV with columns sequence, position, label (items not in the labels raise)."""
    table = _read_table(source, needs="a sequence gold file needs sequence, position and label columns")
    s_col = _find(table, SEQUENCE_ALIASES, "sequence")
    p_col = _find(table, POSITION_ALIASES, "position")
    l_col = _find(table, LABEL_ALIASES + GOLD_ALIASES, "label")
    missing = {"sequence": SEQUENCE_ALIASES, "position": POSITION_ALIASES, "label": LABEL_ALIASES}
    missing = {k: v for k, v in missing.items() if {"sequence": s_col, "position": p_col, "label": l_col}[k] is None}
    if missing:
        raise _missing_columns_error(table, missing)
    index = {n: i for i, n in enumerate(annotations.item_names)}
    keys = [f"{s}:{p}" for s, p in zip(_required_ids(table, s_col, "sequence id"), _positions(table, p_col))]
    codes = np.array([index.get(k, -1) for k in keys], dtype=np.int64)
    unknown = codes < 0
    if unknown.any():
        raise _rows_error(
            table,
            unknown,
            s_col,
            "a (sequence, position) with no crowd labels",
            "Gold must name positions of the sequences in the label file.",
        )
    lookup = _class_lookup(annotations.class_names, table.values(l_col))
    if (lookup < 0).any():
        raise _rows_error(
            table, lookup < 0, l_col, "a gold label that no worker used", "Use the same tag set as the labels."
        )
    gold = np.full(annotations.n_items, -1, dtype=np.int32)
    gold[codes] = lookup
    return replace(annotations, gold=gold)
