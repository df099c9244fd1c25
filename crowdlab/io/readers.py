"""The one reading path: bytes of any file kind (labels, gold, sequences, edges, features) -> a checked table.

Every reader in crowdlab (`crowdlab.io.data`, `crowdlab.io.graph.read_edges`, `crowdlab.io.features.read_features`)
starts
with `read_table`, which does all the checks that do not depend on what the columns mean, in this order:

1. size: the file is no larger than the limit (`crowdlab.io.limits`), checked before it is read;
2. what the file is: archives (gzip, zip, bzip2, xz, zstd, 7-Zip, RAR), Excel/OpenDocument workbooks, PDF,
   images, Parquet/Arrow/HDF5/SQLite/NumPy files, HTML/XML and JSON (lines) are refused with a named guess and
   what to do ("this looks like a gzip archive: decompress it first");
3. encoding over the whole file: UTF-8 (with or without BOM), UTF-16 and UTF-32 with a BOM (decoded); UTF-16/32
   without a BOM, a UTF-16/32 BOM in front of 8-bit text, NUL bytes anywhere (row and column named) and bytes
   that are not UTF-8 (row named) are refused;
   the check is streamed in chunks, so it needs no copy of the file;
4. shape: blank lines before the header, the delimiter (comma, semicolon or tab; sniffed from a bounded sample),
   the number of columns and rows against the limits (counted before parsing), a line with no line break;
5. cells: parsed by pandas' C tokenizer into Arrow strings; surrounding white space and invisible characters
   (zero-width spaces, byte-order marks, no-break spaces) are stripped (noted when invisible ones were there);
   fully blank rows and rows that repeat the header are skipped, each with a note naming the rows. Files with
   very many columns (wide files) and small files are tokenised by the csv module into one block (100,000
   columns load in about a second; a small file in a millisecond).

Work per line is bounded: the sniffing sample is at most ~1 MB, and no per-cell Python loop runs over a long
file (checks work on each column's distinct values). Rows are numbered as a spreadsheet shows them (header =
row 1). Every refusal is a `DataError` naming the file, the row and the column where known, and what to do, in
the spelling of where the user is (``where``: "python", "cli" or "app"; see `spell`).
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io._lazy import lazy
from crowdlab.io.limits import get_limits, how_to_raise

pd = lazy("pandas")

Source = str | os.PathLike | bytes | bytearray | memoryview | BinaryIO
"""A path, raw bytes, or a binary file-like with ``getvalue()`` or ``read()`` (e.g. Streamlit's upload)."""

UPLOADED = "uploaded file"
WHERE = ("python", "cli", "app")

MISSING_TOKENS = ("", "nan", "NaN", "NAN", "na", "NA", "n/a", "N/A", "#N/A", "null", "NULL", "Null", "<NA>")
"""The usual spellings of "no value" (compared case-insensitively, see `missing_values`)."""
MISSING_LOWER = frozenset(
    {"", "nan", "na", "n/a", "#n/a", "null", "<na>", "none", "nil", "-", "--", "#null!", "#value!", "missing"}
)
"""Lower-case cell values read as "no value": blanks, NaN/NA/NULL/None in any case, a lone dash."""

INVISIBLE = (
    " \t\r\n\v\f\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u200c\u200d"
    "\u2028\u2029\u202f\u205f\u2060\u3000\ufeff"
)
"""Characters stripped from both ends of every cell (white space, zero-width spaces, byte-order marks)."""
_INVISIBLE_BYTES = (b"\xe2\x80\x8b", b"\xe2\x80\x8c", b"\xe2\x80\x8d", b"\xe2\x81\xa0", b"\xef\xbb\xbf")
_SPACE_BYTES = (
    b" ",
    b"\t",
    b"\v",
    b"\f",
    b"\r",
    b"\xc2\xa0",
    b"\xe1\x9a\x80",
    b"\xe2\x80",
    b"\xe2\x81",
    b"\xe3\x80\x80",
)

_SPACE_LEADS = tuple(sorted({b[:1] for b in _SPACE_BYTES + _INVISIBLE_BYTES}))

DELIMITERS = (",", ";", "\t")
_SNIFF_LINES = 50
_SNIFF_BYTES = 1 << 20  # the delimiter sample: at most 1 MB after the header line
_MAX_HEADER_BYTES = 64 << 20
_WIDE_COLUMNS = 2000  # more columns than this: csv-module tokenizer into one block
_SMALL_BYTES = 1 << 18  # smaller files: the csv module too (pandas' parser costs milliseconds to start)
_CHUNK = 16 << 20
SHOW = 5  # how many offending rows / names a message lists
csv.field_size_limit(max(csv.field_size_limit(), _MAX_HEADER_BYTES))  # a cell is bounded by the file size limit

UTF8_HINT = (
    "Save the file as UTF-8 (Excel: Save As > 'CSV UTF-8'; LibreOffice: Save As > CSV, "
    "character set 'Unicode (UTF-8)') and load it again."
)
EXPORT_HINT = "Export the data as CSV (comma-, semicolon- or tab-separated text) and load that file."
_DECOMPRESS = "Decompress it first and load the CSV file inside."
_SPREADSHEET = "Open it in Excel or LibreOffice and save it as CSV (Save As > 'CSV UTF-8'), then load that file."

# (magic bytes at offset 0, what the file looks like, what to do)
_MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"\x1f\x8b", "a gzip archive (.gz)", _DECOMPRESS),
    (b"\xfd7zXZ\x00", "an xz archive (.xz)", _DECOMPRESS),
    (b"\x28\xb5\x2f\xfd", "a Zstandard archive (.zst)", _DECOMPRESS),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", _DECOMPRESS),
    (b"Rar!\x1a\x07", "a RAR archive", _DECOMPRESS),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Excel .xls workbook (or another Office document)", _SPREADSHEET),
    (b"%PDF", "a PDF document", EXPORT_HINT),
    (b"\x89PNG", "a PNG image", EXPORT_HINT),
    (b"\xff\xd8\xff", "a JPEG image", EXPORT_HINT),
    (b"GIF8", "a GIF image", EXPORT_HINT),
    (b"PAR1", "a Parquet file", "Write it as CSV (pandas: pd.read_parquet(path).to_csv('labels.csv', index=False))."),
    (b"ARROW1", "an Arrow/Feather file", "Write it as CSV (pandas: pd.read_feather(path).to_csv(...))."),
    (b"SQLite format 3\x00", "an SQLite database", "Export the table as CSV (sqlite3 -csv -header ...)."),
    (b"\x89HDF", "an HDF5 file", "Write the table as CSV (pandas: pd.read_hdf(path).to_csv(...))."),
    (b"\x93NUMPY", "a NumPy .npy array", "Write it as CSV with a header row (numpy.savetxt or pandas)."),
    (b"{\\rtf", "an RTF document", EXPORT_HINT),
)


# ---------------------------------------------------------------------- where the user is
_SPELLINGS = {
    "kind": {"python": 'kind="{v}"', "cli": "--kind {v}", "app": "'Kind of labels' = {v}"},
    "method": {"python": 'method="{v}"', "cli": "--method {v}", "app": "the method '{v}'"},
    "fmt": {"python": 'fmt="{v}"', "cli": "--format {v}", "app": "'Format' = {v}"},
    "columns": {
        "python": "columns={v!r}",
        "cli": "--columns {v}",
        "app": "the column picker (item, worker, label) below",
    },
    "abstain": {"python": "abstain={v!r}", "cli": "--abstain {v!r}", "app": "'Can't tell answer' = {v!r}"},
    "score_column": {"python": 'score_column="{v}"', "cli": "a column named score", "app": "a column named score"},
    "sequences": {
        "python": "crowdlab.io.sequences.read_sequences(...)",
        "cli": "--format sequences",
        "app": "the upload on the Sequences page",
    },
}


def spell(option: str, value: str, where: str = "python") -> str:
    """How the user sets ``option`` to ``value`` where they are: ``kind="continuous"`` in Python,
    ``--kind continuous`` on the command line, the widget's name in the app."""
    forms = _SPELLINGS[option]
    return forms.get(where, forms["python"]).format(v=value)


def check_where(where: str) -> str:
    if where not in WHERE:
        raise ValueError(f"where must be one of {', '.join(map(repr, WHERE))}, not {where!r}.")
    return where


# ---------------------------------------------------------------------- numbers
# what pandas' to_numeric reads as a float: decimal digits with an optional exponent, inf, infinity, nan (any case)
_FLOAT_TEXT = r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)$"


def to_floats(strings) -> np.ndarray:
    """(n,) float64 of strings (an object array of str; None for none), NaN where one is not a number: what
    ``pd.to_numeric(..., errors="coerce")`` gives under pandas 3.1, correctly rounded under any pandas (2.x and 3.0
    misread about 1 float string in 3 by one unit in the last place). Arrow's cast parses (correctly rounded, fast);
    a regular expression first picks the cells it can parse, so a column of text costs no exception."""
    import pyarrow as pa
    import pyarrow.compute as pc

    given = np.asarray(strings)
    if given.dtype.kind in "iufb":  # numbers already (a DataFrame's int labels): nothing to parse
        return given.astype(np.float64)
    values = np.asarray(strings, dtype=object)
    try:
        arr = pa.array(values, pa.string(), from_pandas=True)
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # text mixed with numbers (an object column): as the text they show
        arr = pa.array([None if v is None else str(v) for v in values], pa.string(), from_pandas=True)
    arr = pc.utf8_trim_whitespace(arr)
    ok = pc.match_substring_regex(arr, _FLOAT_TEXT, ignore_case=True).fill_null(False)
    out = np.full(len(arr), np.nan)
    idx = np.flatnonzero(ok.to_numpy(zero_copy_only=False))
    if idx.size:
        out[idx] = pc.cast(arr.take(pa.array(idx)), pa.float64()).to_numpy(zero_copy_only=False)
    return out


# ---------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Column:
    """One column factorised: ``codes`` (n_rows,) int32 indices into ``uniq`` (distinct stripped strings)."""

    codes: np.ndarray
    uniq: np.ndarray  # object array of str
    arrow: object = None  # the same distinct values as an Arrow array, when read by Arrow (sorted by Arrow)

    def array(self) -> np.ndarray:
        """The column as an object array of str (one per row; for small files and messages)."""
        return self.uniq[self.codes]

    def take(self, mask: np.ndarray) -> Column:
        """The rows where ``mask`` is set (distinct values no longer used are dropped)."""
        codes = self.codes[mask]
        used = np.bincount(codes, minlength=self.uniq.size) > 0
        if used.all():
            return Column(codes, self.uniq, self.arrow)
        new = (np.cumsum(used) - 1).astype(np.int32)
        arrow = None if self.arrow is None else self.arrow.filter(used)
        return Column(new[codes], self.uniq[used], arrow)


@dataclass(frozen=True)
class Table:
    """A CSV file read as stripped strings, keeping the spreadsheet row number of every kept row."""

    file: str
    path: Path | None
    header: tuple[str, ...]
    cells: pd.DataFrame  # columns 0 .. n-1, one row per kept data row (Arrow strings, or one object block)
    rows: np.ndarray  # (n_rows,) spreadsheet row numbers (header = 1)
    delimiter: str
    notes: tuple[str, ...]
    where: str = "python"
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_rows(self) -> int:
        return int(self.rows.size)

    def column_name(self, j: int) -> str:
        """The header cell of column ``j`` as written, or its position when the cell is blank."""
        return self.header[j] or f"column {j + 1} (no header)"

    def col(self, j: int) -> Column:
        """Column ``j`` factorised (cached): distinct values are checked once, not once per row."""
        if j not in self._cache:
            self._cache[j] = _factorize(self.cells[j])
        return self._cache[j]

    def values(self, j: int) -> np.ndarray:
        """Column ``j`` as an object array of str."""
        return self.col(j).array()

    def missing(self, j: int) -> np.ndarray:
        """Boolean mask of cells in column ``j`` that hold no value (blank or a spelling of NaN/NULL/None)."""
        c = self.col(j)
        return missing_values(c.uniq)[c.codes]

    def blank(self, j: int) -> np.ndarray:
        c = self.col(j)
        return (c.uniq == "")[c.codes]

    def spell(self, option: str, value: str) -> str:
        return spell(option, value, self.where)


def missing_values(values: np.ndarray) -> np.ndarray:
    """Boolean mask: which (stripped) strings spell a missing value, case-insensitively (see `MISSING_LOWER`)."""
    if not len(values):
        return np.zeros(0, dtype=bool)
    if len(values) < 5000:
        return np.fromiter((str(v).lower() in MISSING_LOWER for v in values), dtype=bool, count=len(values))
    s = pd.Series(values, dtype="str")
    return s.str.lower().isin(MISSING_LOWER).to_numpy(dtype=bool)


# ---------------------------------------------------------------------- message helpers
def count(n: int, noun: str) -> str:
    """'1 row', '3 rows', '2 classes'."""
    if n == 1:
        return f"{n:,} {noun}"
    plural = noun + "es" if noun.endswith(("s", "x", "ch", "sh")) else noun + "s"
    return f"{n:,} {plural}"


def listing(things: Sequence, total: int | None = None) -> str:
    """'a, b, c and 4 more' from the first few of ``things``."""
    things = [str(t) for t in things]
    total = len(things) if total is None else total
    shown = ", ".join(things[:SHOW])
    return shown if total <= SHOW else f"{shown} and {total - SHOW:,} more"


SHOW_COLUMNS = 20  # how many column names a message lists
_LONG_NAME = 80  # a longer column name is cut in messages


def column_listing(names: Sequence) -> str:
    """ "'item', 'worker', 'label'": the first `SHOW_COLUMNS` names quoted (each cut at `_LONG_NAME` characters),
    then "and N more": a header of 100,000 columns makes a message of one line, not of megabytes."""
    names = [str(n) for n in names]
    quoted = [repr(n) if len(n) <= _LONG_NAME else repr(n[:_LONG_NAME]) + "..." for n in names[:SHOW_COLUMNS]]
    shown = ", ".join(quoted)
    return shown if len(names) <= SHOW_COLUMNS else f"{shown} and {len(names) - SHOW_COLUMNS:,} more"


def rows_phrase(rows: np.ndarray) -> str:
    """'row 4' or 'rows 4, 7, 9 and 2 more'."""
    rows = np.asarray(rows)
    return f"row {rows[0]}" if rows.size == 1 else f"rows {listing(rows[:SHOW].tolist(), rows.size)}"


def rows_error(
    table: Table, mask: np.ndarray, column: int, problem: str, hint: str, *, show_values: bool = False
) -> DataError:
    """A DataError listing the spreadsheet rows where ``mask`` is set: "3 rows have {problem} (rows ...)"."""
    rows = table.rows[mask]
    single = rows.size == 1
    text = f"{'1 row has' if single else f'{rows.size:,} rows have'} {problem}"
    if not single:
        text += f" ({rows_phrase(rows)})"
    if show_values:
        idx = np.flatnonzero(mask)[:SHOW]
        c = table.col(column)
        text += ": " + listing([repr(v) for v in c.uniq[c.codes[idx]]], rows.size)
    return DataError(
        text + ".",
        file=table.file,
        row=int(rows[0]) if single else None,
        column=table.column_name(column),
        hint=hint,
    )


def limit_error(what: str, field_name: str, where: str, *, file: str | None = None, **kw) -> DataError:
    """``what`` (e.g. "1,000 classes") is past the limit ``field_name``."""
    lim = getattr(get_limits(), field_name)
    hint = kw.pop("hint", "")
    hint = (hint + " " if hint else "") + how_to_raise(field_name, where)
    return DataError(f"{what} is more than the {lim:,} crowdlab accepts ({field_name}).", file=file, hint=hint, **kw)


# ---------------------------------------------------------------------- bytes
def not_a_file(path, hint: str = "") -> DataError:
    """The error for a path that is not a regular file: missing, a folder, or a device or pipe (/dev/null), each
    said as what it is (they were all "no such file"). ``hint`` is added to the advice."""
    p = Path(path)
    if p.is_dir():
        problem = "this is a folder, not a file."
        advice = "Give the path of the label file inside it."
    elif p.exists():
        problem = "this is not a regular file (a device, pipe or socket)."
        advice = "Give the path of a CSV file."
    else:
        problem = "no such file."
        advice = "Check the path (it is read relative to where you started)."
    return DataError(problem, file=str(path), hint=advice + hint)


def load_source(source: Source) -> tuple[bytes, str, Path | None]:
    """Return the raw bytes, the file name used in messages, and the path (None for uploads).

    The size limit is checked before a path is read.
    """
    max_bytes = get_limits().max_file_mb * 1e6
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise not_a_file(path)
        size = path.stat().st_size
        if size > max_bytes:
            raise _size_error(size, path.name)
        return path.read_bytes(), path.name, path
    if isinstance(source, bytes | bytearray | memoryview):
        data, file = bytes(source), UPLOADED
    else:
        if hasattr(source, "getvalue"):
            data = source.getvalue()
        elif hasattr(source, "read"):
            data = source.read()
        else:
            raise TypeError(f"cannot read a table from {type(source).__name__}; pass a path, bytes or a file.")
        name = getattr(source, "name", None)
        file = Path(name).name if isinstance(name, str) and name else UPLOADED
        if isinstance(data, str):
            data = data.encode("utf-8")
        data = bytes(data)
    if len(data) > max_bytes:
        raise _size_error(len(data), file)
    return data, file, None


def _size_error(size: int, file: str) -> DataError:
    lim = get_limits().max_file_mb
    return DataError(
        f"the file is {size / 1e6:,.1f} MB, more than the {lim:g} MB crowdlab reads (max_file_mb).",
        file=file,
        hint="Split it. " + how_to_raise("max_file_mb"),
    )


def _sniff_kind(data: bytes, file: str) -> None:
    """Refuse files that are not delimited text, naming what they look like."""
    for magic, what, todo in _MAGIC:
        if data.startswith(magic):
            raise DataError(f"this is not a CSV text file; it looks like {what}.", file=file, hint=todo)
    if data.startswith(b"BZh") and data[3:4].isdigit() and data[4:10] == b"1AY&SY":
        raise DataError(
            "this is not a CSV text file; it looks like a bzip2 archive (.bz2).", file=file, hint=_DECOMPRESS
        )
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
        head = data[:4096]
        if b"xl/" in head or b"[Content_Types].xml" in head and b"word/" not in head:
            what, todo = "an Excel .xlsx workbook (renamed?)", _SPREADSHEET
        elif b"opendocument.spreadsheet" in head:
            what, todo = "an OpenDocument .ods spreadsheet", _SPREADSHEET
        elif b"word/" in head:
            what, todo = "a Word .docx document", EXPORT_HINT
        else:
            what = "a ZIP archive (an Excel .xlsx workbook is one too)"
            todo = "Unzip it and load the CSV file inside; for a workbook, " + _SPREADSHEET
        raise DataError(f"this is not a CSV text file; it looks like {what}.", file=file, hint=todo)
    start = re.search(rb"[^\s\xef\xbb\xbf]", data[:4096])
    if start is None:
        return
    head = data[start.start() : start.start() + 512].lower()
    if head.startswith((b"<!doctype html", b"<html")):
        raise DataError("this is not a CSV text file; it looks like an HTML web page.", file=file, hint=EXPORT_HINT)
    if head.startswith(b"<?xml"):
        raise DataError("this is not a CSV text file; it looks like an XML document.", file=file, hint=EXPORT_HINT)
    if head[:1] in (b"{", b"["):
        line = head.split(b"\n", 1)[0].rstrip()
        lines = b"JSON lines (one JSON object per line)" if line.endswith(b"}") and head[:1] == b"{" else b"JSON"
        raise DataError(
            f"this is not a CSV file; it looks like {lines.decode()}.",
            file=file,
            row=1,
            hint="Convert it to CSV with a header row (pandas: pd.read_json(path, lines=True).to_csv("
            "'labels.csv', index=False)) and load that file.",
        )


def _nul_guess(head: bytes) -> str | None:
    """'UTF-16 (little-endian)' etc. when the NUL bytes of ``head`` fall in the pattern of that encoding."""
    n = len(head) - len(head) % 4
    if n < 4:
        return None
    arr = np.frombuffer(head[:n], dtype=np.uint8).reshape(-1, 4) == 0
    share = arr.mean(axis=0)  # fraction of NULs at offsets 0, 1, 2, 3 of each 4-byte group
    if share[1] > 0.9 and share[2] > 0.9 and share[3] > 0.9 and share[0] < 0.1:
        return "UTF-32 (little-endian)"
    if share[0] > 0.9 and share[1] > 0.9 and share[2] > 0.9 and share[3] < 0.1:
        return "UTF-32 (big-endian)"
    odd, even = (share[1] + share[3]) / 2, (share[0] + share[2]) / 2
    if odd > 0.6 and even < 0.1:
        return "UTF-16 (little-endian)"
    if even > 0.6 and odd < 0.1:
        return "UTF-16 (big-endian)"
    return None


def _line_and_column(data: bytes, offset: int) -> tuple[int, str | None]:
    """(spreadsheet row, header cell) of the byte at ``offset`` of UTF-8 ``data``."""
    row = data.count(b"\n", 0, offset) + 1
    line_start = data.rfind(b"\n", 0, offset) + 1
    header_end = data.find(b"\n", 0, min(len(data), _SNIFF_BYTES))
    header = data[: header_end if header_end >= 0 else min(len(data), 4096)].decode("utf-8", "replace")
    delim = max(DELIMITERS, key=header.count)
    names = [h.strip() for h in header.split(delim)]
    k = data.count(delim.encode(), line_start, offset)
    column = None
    if row == 1:
        column = None
    elif k < len(names):
        column = names[k] or f"column {k + 1} (no header)"
    return row, column


def _check_nul(data: bytes, file: str) -> None:
    nul = data.find(b"\x00")
    if nul < 0:
        return
    head = data[:4096]
    guess = _nul_guess(head)
    if guess:
        raise DataError(
            f"this looks like {guess} text without a byte-order mark (BOM); crowdlab reads UTF-8, and UTF-16 or "
            "UTF-32 only with a BOM.",
            file=file,
            hint=UTF8_HINT,
        )
    if head.count(b"\x00") * 10 > len(head):
        raise DataError(
            "this is not a CSV text file (it holds binary data: many NUL bytes at the start).",
            file=file,
            hint=EXPORT_HINT,
        )
    row, column = _line_and_column(data, nul)
    where = "in the header" if row == 1 else "in this cell"
    raise DataError(
        f"the file holds binary data: a NUL byte (0x00) at byte offset {nul:,} {where} (is it damaged?).",
        file=file,
        row=row,
        column=column,
        hint="Remove the NUL bytes (or export the data again as CSV UTF-8) and load the file again.",
    )


_TEXT_MARKS = frozenset("\n\r,;\t")


def _check_misplaced_bom(text: str, rest: bytes, name: str, file: str) -> None:
    """Refuse a UTF-16/32 byte-order mark in front of 8-bit text: decoded as ``name`` (``text``; empty where that
    failed) it has no line break or separator at all, while the bytes after the mark read as UTF-8 text that has
    them (UTF-16 would give one column of CJK-looking characters)."""
    if not _TEXT_MARKS.isdisjoint(text) or b"\x00" in rest:  # 8-bit text has no NUL bytes; UTF-16/32 text does
        return
    try:
        plain = rest.decode("utf-8")
    except UnicodeDecodeError:
        return
    if _TEXT_MARKS.isdisjoint(plain):
        return
    raise DataError(
        f"the file starts with a {name} byte-order mark (BOM), but the text after it is 8-bit (UTF-8 or ASCII), "
        f"not {name}: read as {name} it has no line breaks or separators.",
        file=file,
        hint="Save the file again as UTF-8 (Excel: Save As > 'CSV UTF-8'), or remove its first "
        f"{4 if name == 'UTF-32' else 2} bytes, and load it again.",
    )


def to_utf8(data: bytes, file: str) -> bytes:
    """Validate the encoding over the whole file and return UTF-8 bytes without a BOM (a view when possible)."""
    if re.search(rb"\S", data) is None:
        problem = "the file is empty (0 bytes)." if not data else "the file holds only blank lines."
        raise DataError(problem, file=file, hint="Choose a CSV file with a header row and one row per label.")
    _sniff_kind(data, file)
    for bom, codec, name in (
        (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
        (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
        (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
    ):
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(codec)
            except UnicodeDecodeError as exc:
                _check_misplaced_bom("", data[len(bom) :], name, file)
                row = data[len(bom) : len(bom) + exc.start].decode(codec, "replace").count("\n") + 1
                raise DataError(
                    f"the file starts like {name} text but is not (bytes at offset {exc.start + len(bom):,} do not "
                    f"decode as {name}).",
                    file=file,
                    row=row,
                    hint=UTF8_HINT,
                ) from None
            _check_misplaced_bom(text, data[len(bom) :], name, file)
            out = text.encode("utf-8")
            _check_nul(out, file)
            _sniff_kind(out, file)
            return out
    _check_nul(data, file)
    bom = 0
    if data.startswith(codecs.BOM_UTF8):
        data, bom = data[3:], 3
    if not data.isascii():
        decoder = codecs.getincrementaldecoder("utf-8")()
        view = memoryview(data)
        for start in range(0, len(data), _CHUNK):
            try:
                decoder.decode(view[start : start + _CHUNK], final=start + _CHUNK >= len(data))
            except UnicodeDecodeError as exc:
                offset = start + exc.start
                row, column = _line_and_column(data, offset)
                raise DataError(
                    f"byte 0x{data[offset]:02x} at byte offset {offset + bom:,} is not UTF-8 text "
                    "(the file was probably saved as Latin-1/Windows-1252).",
                    file=file,
                    row=row,
                    column=column,
                    hint=UTF8_HINT,
                ) from None
    return data


# ---------------------------------------------------------------------- shape
def sniff_delimiter(lines: list[str]) -> str | None:
    """The delimiter that splits the header into the most columns and the sample lines consistently.

    Returns None when no candidate gives the header two or more columns.
    """
    best, best_score = None, (0.0, 1)
    for delim in DELIMITERS:
        counts = [len(fields) for fields in csv.reader(lines, delimiter=delim)]
        if not counts or counts[0] < 2:
            continue
        score = (sum(c == counts[0] for c in counts) / len(counts), counts[0])
        if score > best_score:
            best, best_score = delim, score
    return best


def parser_error(exc: Exception, file: str, lead: int = 0) -> DataError:
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
            row=int(quote.group(1)) + 1 + lead,
            hint='Close the quote, or write a literal quote as two quotes ("").',
        )
    return DataError(f"the CSV parser failed: {text}", file=file, hint=EXPORT_HINT)


def one_column_error(file: str, header_line: str, needs: str) -> DataError:
    return DataError(
        f"found only one column ({header_line[:60]!r}); {needs}.",
        file=file,
        row=1,
        hint="Separate the columns with commas, semicolons or tabs (spaces and other separators are not "
        "read), with the column names in row 1.",
    )


def no_worker_columns_error(file: str) -> DataError:
    return DataError(
        "this wide file has no worker columns.",
        file=file,
        row=1,
        hint="A wide file has one row per item: the item id in the first column, then one column per worker "
        "(worker name in row 1, the worker's label in each cell, blank when missing). For one row per label "
        "use a long file with columns item, worker, label.",
    )


def _parse_wide(data: bytes, delim: str, lead: int, n_cols: int, file: str, where: str) -> pd.DataFrame:
    """Tokenise a file with very many columns with the csv module into one object block (fast for wide files)."""
    text = data.decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    out: list[list[str]] = []
    for _ in range(lead + 1):
        next(reader, None)
    try:  # rows are records, as everywhere (reader.line_num counts the line breaks inside quoted values too)
        for fields in reader:
            _add_row(out, fields, n_cols, lead + 2 + len(out), file, where)
    except csv.Error as exc:
        row = lead + 2 + len(out)
        raise DataError(f"the CSV parser failed: {exc}.", file=file, row=row, hint=EXPORT_HINT) from None
    arr = np.empty((len(out), n_cols), dtype=object)
    if out:
        arr[:] = out
    return pd.DataFrame(arr, columns=range(n_cols), dtype=object, copy=False)


def _add_row(out: list, fields: list[str], n_cols: int, line: int, file: str, where: str) -> None:
    """Append one tokenised row, padded to ``n_cols``; raise for extra cells or past the cell limit."""
    if len(fields) > n_cols:
        raise DataError(
            f"this row has {len(fields)} cells but the header has {n_cols}.",
            file=file,
            row=line,
            hint="A value probably contains the delimiter: put that value in double quotes, "
            "or remove the extra delimiter.",
        )
    if len(fields) < n_cols:
        fields = fields + [""] * (n_cols - len(fields))
    out.append(fields)
    if len(out) * n_cols > get_limits().max_cells:
        raise limit_error(
            f"a wide file of more than {len(out):,} rows x {n_cols:,} columns", "max_cells", where, file=file
        )


def _parse_arrow(data: bytes, start: int, delim: str, n_cols: int) -> pd.DataFrame | None:
    """Tokenise the rows after byte ``start`` with Arrow's CSV reader (multi-threaded, straight into Arrow
    strings, no copy of the bytes); None when Arrow refuses the file (a ragged or blank row, a quoted line break),
    so that pandas' tokenizer, which pads short rows and names the offending row, reads it instead."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = [f"c{j}" for j in range(n_cols)]
    try:
        tbl = pacsv.read_csv(
            pa.py_buffer(memoryview(data)[start:]),
            read_options=pacsv.ReadOptions(column_names=names, block_size=16 << 20),
            parse_options=pacsv.ParseOptions(
                delimiter=delim, quote_char='"', double_quote=True, ignore_empty_lines=False
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowException):
        return None
    columns = {j: pd.Series(pd.arrays.ArrowStringArray(tbl.column(j)), copy=False) for j in range(n_cols)}
    return pd.DataFrame(columns, copy=False)  # Arrow strings as they are (no conversion)


def _strip(frame: pd.DataFrame) -> pd.DataFrame:
    """Strip white space and invisible characters from both ends of every cell."""
    if frame.shape[1] > _WIDE_COLUMNS:
        values = frame.to_numpy(dtype=object)
        flat = [v.strip(INVISIBLE) for v in values.ravel().tolist()]
        block = np.empty(values.shape, dtype=object)
        block.ravel()[:] = flat
        return pd.DataFrame(block, columns=frame.columns, dtype=object, copy=False)
    return pd.DataFrame({j: frame[j].str.strip(INVISIBLE) for j in frame.columns}, index=frame.index)


def read_table(
    source: Source,
    *,
    needs: str,
    wide: bool = False,
    allow_no_rows: bool = False,
    header: bool = True,
    where: str = "python",
) -> Table:
    """Read a delimited text source into a `Table` of stripped strings (see the module docstring for the checks).

    ``header=False`` reads row 1 as data too (the columns are then named "column 1", "column 2", ...).
    """
    lim = get_limits()
    data, file, path = load_source(source)
    if data.startswith(b"PAR1"):  # a Parquet file: read as the engines read it (crowdlab.io.parquet)
        return _parquet_table(data, file, path, allow_no_rows=allow_no_rows, where=where)
    data = to_utf8(data, file)
    first = re.search(rb"[^\s]", data)
    if first is None:
        raise DataError("the file holds only blank lines.", file=file, hint="Choose a CSV file with a header row.")
    lead = data.count(b"\n", 0, first.start())
    head_end = data.find(b"\n", first.start(), first.start() + _MAX_HEADER_BYTES)
    if head_end < 0 and len(data) - first.start() > _MAX_HEADER_BYTES:
        raise DataError(
            f"row 1 is longer than {_MAX_HEADER_BYTES >> 20} MB without a line break.",
            file=file,
            row=lead + 1,
            hint="A CSV file has one row per line: check that this is a CSV file and that its lines end in line "
            "breaks.",
        )
    sample_end = len(data) if head_end < 0 else min(len(data), head_end + _SNIFF_BYTES)
    if head_end >= 0 and sample_end < len(data):
        cut = data.rfind(b"\n", head_end + 1, sample_end)
        sample_end = cut if cut > head_end else head_end
    sample_text = data[first.start() : sample_end].decode("utf-8", "replace")
    sample = [line for line in sample_text.splitlines()[:_SNIFF_LINES] if line.strip()]
    if not sample:
        raise DataError("the file holds only blank lines.", file=file, hint="Choose a CSV file with a header row.")
    delim = sniff_delimiter(sample)
    if delim is None:
        if head_end < 0 and len(data) > 100_000:
            raise DataError(
                f"the file has no line breaks ({len(data):,} bytes on one line) and no delimiter.",
                file=file,
                row=lead + 1,
                hint="A CSV file has a header row, then one row per line; " + needs + ".",
            )
        raise no_worker_columns_error(file) if wide else one_column_error(file, sample[0], needs)
    names = tuple(h.strip(INVISIBLE) for h in next(csv.reader([sample[0]], delimiter=delim)))
    n_cols = len(names)
    if n_cols > lim.max_columns:
        raise limit_error(f"row 1 has {n_cols:,} columns, which", "max_columns", where, file=file, row=1)
    # rows from the sample's mean line length; counted exactly only when that comes near the limit
    per_line = max(len(sample_text) / max(sample_text.count("\n"), 1), 1.0)
    n_lines = len(data) / per_line
    if n_lines > lim.max_rows / 2:
        n_lines = data.count(b"\n", first.start()) + (0 if data.endswith(b"\n") else 1)
    if n_lines - 1 > lim.max_rows:
        raise limit_error(f"the file has {n_lines - 1:,} rows, which", "max_rows", where, file=file)
    skip = lead + (1 if header else 0)
    odd_quotes = data.count(b'"') % 2 == 1  # a quote never closed: let pandas' tokenizer name the row
    frame = None
    if n_cols > _WIDE_COLUMNS or (len(data) < _SMALL_BYTES and not odd_quotes):
        frame = _parse_wide(data, delim, skip - 1, n_cols, file, where)
    elif not odd_quotes:
        body_start = first.start() if not header else (len(data) if head_end < 0 else head_end + 1)
        frame = _parse_arrow(data, body_start, delim, n_cols)
    if frame is None:  # Arrow refused the file: pandas' tokenizer names the row (or pads short rows)
        try:
            frame = pd.read_csv(
                io.BytesIO(data),
                sep=delim,
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                skip_blank_lines=False,
                skiprows=skip,
                header=None,
                names=range(n_cols),
                engine="c",
                encoding="utf-8",
            )
        except pd.errors.ParserError as exc:
            raise parser_error(exc, file, lead) from None
        except pd.errors.EmptyDataError:
            frame = pd.DataFrame({j: pd.Series([], dtype="str") for j in range(n_cols)})
    notes: tuple[str, ...] = ()
    # single bytes are found by memchr (fast); only then the multi-byte sequences are searched
    if any(b in data for b in _SPACE_LEADS) and any(b in data for b in _SPACE_BYTES + _INVISIBLE_BYTES):
        frame = _strip(frame)
        if any(b in data for b in _INVISIBLE_BYTES):
            notes += ("Removed invisible characters (zero-width spaces or byte-order marks) around cell values.",)
    rows = np.arange(skip + 1, skip + 1 + len(frame), dtype=np.int32 if len(frame) < 2**30 else np.int64)
    if not header:
        names = tuple(f"column {j + 1}" for j in range(n_cols))
    keep = np.ones(len(frame), dtype=bool)
    first = _factorize(frame[0])
    blank = _all_equal(frame, first, ("",) * n_cols)
    if blank.any():
        notes += (f"Skipped {count(int(blank.sum()), 'empty row')} ({rows_phrase(rows[blank])}).",)
        keep &= ~blank
    if header and any(names):
        repeat = _all_equal(frame, first, names) & keep
        if repeat.any():
            notes += (
                f"Skipped {count(int(repeat.sum()), 'row')} that repeat the header row ({rows_phrase(rows[repeat])}).",
            )
            keep &= ~repeat
    if not keep.all():
        frame = frame[keep].reset_index(drop=True)
        rows = rows[keep]
        first = first.take(keep)
    if not len(frame) and not allow_no_rows:
        one_line = " (the file has no line break after row 1)" if head_end < 0 else ""
        raise DataError(
            "the file has a header row but no data rows" + one_line + "." + (f" ({notes[0]})" if notes else ""),
            file=file,
            hint="Add the labels below the header, one row per label.",
        )
    return Table(file, path, names, frame, rows, delim, notes, where, {0: first})


def _parquet_table(data: bytes, file: str, path: Path | None, *, allow_no_rows: bool, where: str) -> Table:
    """A Parquet file's bytes as a `Table` of stripped text cells (nulls and NaN as blanks), through the checks the
    streaming and Dask engines make (`crowdlab.io.parquet`), in their words: an empty, truncated or corrupt file
    (its footer, or a data page found only while reading), duplicate column names, a nested column, bytes that are
    not UTF-8; then the row and column limits."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from crowdlab.io.parquet import as_text, check_schema, iter_batches, open_parquet

    lim = get_limits()
    pf = open_parquet(data, file)
    check_schema(pf.schema_arrow, file)
    header = tuple(str(n) for n in pf.schema_arrow.names)
    if len(header) > lim.max_columns:
        raise limit_error(f"the file has {len(header):,} columns, which", "max_columns", where, file=file, row=1)
    n_rows = int(pf.metadata.num_rows)
    if n_rows > lim.max_rows:
        raise limit_error(f"the file has {n_rows:,} rows, which", "max_rows", where, file=file)
    if not n_rows and not allow_no_rows:
        raise DataError("the Parquet file has no rows.", file=file, hint="Add the labels, one row per label.")
    whole = pa.Table.from_batches(list(iter_batches(pf, 1 << 20, file)), schema=pf.schema_arrow)
    cells = {}
    for j, name in enumerate(header):
        col = as_text(whole.column(j), name, file, 2)
        col = pc.utf8_trim(pc.fill_null(col, ""), INVISIBLE)
        cells[j] = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([col])), copy=False)
    frame = pd.DataFrame(cells, copy=False) if cells else pd.DataFrame()
    rows = np.arange(2, 2 + n_rows, dtype=np.int32 if n_rows < 2**30 else np.int64)
    return Table(file, path, header, frame, rows, ",", (), where)


def _factorize(series: pd.Series) -> Column:
    """Distinct values and int32 codes; Arrow's dictionary encoding for Arrow strings (twice pandas' speed)."""
    arr = getattr(series.array, "_pa_array", None)
    if arr is not None and len(series) > 10_000 and arr.num_chunks:
        encoded = arr.dictionary_encode().unify_dictionaries()  # one dictionary, no copy of the strings
        codes = np.concatenate([np.asarray(c.indices) for c in encoded.chunks]).astype(np.int32, copy=False)
        dictionary = encoded.chunk(0).dictionary
        return Column(codes, np.asarray(dictionary.to_numpy(zero_copy_only=False), dtype=object), dictionary)
    codes, uniq = pd.factorize(series)
    return Column(np.asarray(codes, dtype=np.int32), np.asarray(uniq, dtype=object))


def _all_equal(frame: pd.DataFrame, first: Column, values: Sequence[str]) -> np.ndarray:
    """Rows whose every cell equals ``values`` (cell by cell); checks column 0 (factorised) first, then only the
    candidates."""
    n = len(frame)
    hit = np.flatnonzero(first.uniq == values[0])
    if not n or not hit.size:
        return np.zeros(n, dtype=bool)
    idx = np.flatnonzero(first.codes == hit[0])
    sub = frame.iloc[idx].to_numpy(dtype=object)
    same = (sub == np.asarray(values, dtype=object)[None, :]).all(axis=1)
    out = np.zeros(n, dtype=bool)
    out[idx[same]] = True
    return out
