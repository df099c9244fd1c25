"""The cells of a label table as values: names sorted and coded (numbers in numeric order, exactly beyond 2^53;
spellings of one number merged for class labels), numbers parsed, required cells checked, the kind of the labels
decided ("auto": classes or continuous scores), and the limits on items, workers and classes.

Every problem raises `DataError` naming the rows (numbered as a spreadsheet shows them, header = row 1) and the
column.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import numpy as np

from crowdlab.io._lazy import lazy
from crowdlab.io.columns import SCORE_ALIASES, _norm
from crowdlab.io.limits import get_limits
from crowdlab.io.limits import how_to_raise as limits_how
from crowdlab.io.readers import (
    SHOW as _SHOW,
)
from crowdlab.io.readers import (
    Column,
    limit_error,
    missing_values,
    spell,
    to_floats,
)
from crowdlab.io.readers import Table as _Table
from crowdlab.io.readers import listing as _listing
from crowdlab.io.readers import rows_error as _rows_error

pd = lazy("pandas")


def _as_numbers(strings: np.ndarray) -> np.ndarray | None:
    """Float values of ``strings`` when every one is a finite number, else None (rejects fast on text)."""
    if not len(strings):
        return None
    try:
        float(strings[0])
    except (TypeError, ValueError):
        return None
    nums = to_floats(strings)
    return nums if np.isfinite(nums).all() else None


def _string_order(names: np.ndarray, arrow=None) -> np.ndarray:
    """Stable sorting permutation of strings by code point (Arrow's sort: fast on 10^6 names); ``arrow``: the same
    strings as an Arrow array, when there is one (no conversion)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = arrow if arrow is not None else pa.array(names, type=pa.large_string())
    return np.asarray(pc.array_sort_indices(values), dtype=np.int64)


def _name_order(names: np.ndarray, nums: np.ndarray | None = None, arrow=None) -> np.ndarray:
    """Sorting permutation of names: numeric order when all are numbers (exact beyond 2^53), else string order."""
    nums = _as_numbers(names) if nums is None else nums
    if nums is None:
        return _string_order(names, arrow)
    order = np.lexsort((_string_order(names).argsort(), nums))
    big = np.abs(nums) >= 2.0**53
    if big.any() and big.sum() <= 1_000_000:
        # floats tie beyond 2^53: order those exactly
        keys = [Decimal(str(v)) for v in names[order]]
        order = order[np.asarray(sorted(range(len(keys)), key=lambda i: (keys[i], i)), dtype=np.int64)]
    return order


def _number_key(text: str) -> Decimal | str:
    """The exact value of a number written as text (so '1' and '1.0' match, 2^53 and 2^53 + 1 do not)."""
    try:
        return Decimal(text).normalize()
    except InvalidOperation:
        return text


def _encode_col(col: Column, *, merge_numbers: bool = False) -> tuple[tuple[str, ...], np.ndarray]:
    """Sorted distinct names and int32 codes of a factorised column.

    With ``merge_numbers`` (class labels), spellings of the same number ("1", "1.0") are one name, kept as first
    written; numbers are compared exactly (integers beyond 2^53 stay apart).
    """
    uniq = col.uniq
    nums = _as_numbers(uniq)
    if merge_numbers and nums is not None:
        keys = [_number_key(str(u)) for u in uniq.tolist()]
        distinct = sorted(set(keys))
        code_of = {k: i for i, k in enumerate(distinct)}
        first: dict = {}
        for u, k in zip(uniq.tolist(), keys):
            first.setdefault(k, u)
        rank = np.asarray([code_of[k] for k in keys], dtype=np.int32)
        return tuple(first[k] for k in distinct), rank[col.codes]
    order = _name_order(uniq, nums, col.arrow)
    rank = np.empty(len(uniq), dtype=np.int32)
    rank[order] = np.arange(len(uniq), dtype=np.int32)
    return tuple(uniq[order].tolist()), rank[col.codes]


def _encode_names(values: np.ndarray, *, merge_numbers: bool = False) -> tuple[tuple[str, ...], np.ndarray]:
    """`_encode_col` of an array of strings."""
    codes, uniq = pd.factorize(np.asarray(values, dtype=object))
    return _encode_col(Column(codes.astype(np.int32), np.asarray(uniq, dtype=object)), merge_numbers=merge_numbers)


def _to_float(values: np.ndarray | Column, decimal_comma: bool) -> np.ndarray:
    """Parse strings as floats; NaN where a cell is not a finite number (a Column is parsed once per value)."""
    if isinstance(values, Column):
        return _to_float(values.uniq, decimal_comma)[values.codes]
    series = pd.Series(values, dtype=object)
    if decimal_comma:
        series = series.str.replace(",", ".", regex=False)
    nums = to_floats(series.to_numpy(dtype=object))
    nums[~np.isfinite(nums)] = np.nan
    return nums


def _number_hint(kind_hint: bool, where: str = "python") -> str:
    hint = "Write each score as a number such as 3 or 0.75."
    if kind_hint:
        hint += f" To read text labels as classes, use {spell('kind', 'classes', where)}."
    return hint


def _checked_scores(table: _Table, j: int, col: Column | None = None, *, what: str = "a score") -> np.ndarray:
    """Column ``j`` (or ``col``, a subset of its rows) as finite floats within the limit, raising naming rows."""
    col = table.col(j) if col is None else col
    nums_u = _to_float(col.uniq, decimal_comma=table.delimiter == ";")
    bad_u = np.isnan(nums_u)
    if bad_u.any():
        raise _rows_error(
            table,
            bad_u[col.codes],
            j,
            f"{what} that is not a number",
            _number_hint(True, table.where),
            show_values=True,
        )
    lim = get_limits().max_abs_value
    big_u = np.abs(nums_u) > lim
    if big_u.any():
        raise _rows_error(
            table,
            big_u[col.codes],
            j,
            f"{what} larger in size than {lim:g} (max_abs_value)",
            "Rescale the scores (e.g. to 0..100). " + limits_how("max_abs_value", table.where),
            show_values=True,
        )
    return nums_u[col.codes]


def _required_col(table: _Table, j: int, what: str) -> Column:
    """Column ``j`` factorised, raising when any cell is blank."""
    col = table.col(j)
    blank_u = col.uniq == ""
    if blank_u.any():
        raise _rows_error(table, blank_u[col.codes], j, f"a blank {what}", f"Fill in the {what}, or delete the row(s).")
    return col


def _required_ids(table: _Table, j: int, what: str) -> np.ndarray:
    """Column ``j`` as ids (object array of str), raising when any cell is blank."""
    return _required_col(table, j, what).array()


def _resolve_kind(
    kind: str, label_header: str, score_column: str | None, labels: Column | None = None, where: str = "python"
) -> tuple[str, tuple[str, ...]]:
    """(kind, notes): "auto" is continuous for a score-named column or for numbers with many distinct values."""
    if kind != "auto":
        return kind, ()
    if score_column is not None or _norm(label_header) in SCORE_ALIASES:
        return "continuous", ()
    if labels is not None:
        nums = _as_numbers(labels.uniq)
        threshold = get_limits().continuous_threshold
        if nums is not None:
            distinct = np.unique(nums).size
            if distinct > threshold:
                return "continuous", (
                    f"Read the labels as continuous scores: they are {distinct:,} distinct numbers (more than "
                    f"{threshold}). To read them as classes, use {spell('kind', 'classes', where)}.",
                )
    return "classes", ()


def _as_col(values: np.ndarray | Column) -> Column:
    if isinstance(values, Column):
        return values
    codes, uniq = pd.factorize(np.asarray(values, dtype=object))
    return Column(codes.astype(np.int32), np.asarray(uniq, dtype=object))


def _check_sizes(file: str, where: str, *, items: int = 0, workers: int = 0, classes: int = 0) -> None:
    """Raise past the limits on items, workers, classes and the workers' confusion matrices."""
    lim = get_limits()
    if items > lim.max_items:
        raise limit_error(f"{items:,} items", "max_items", where, file=file)
    if workers > lim.max_workers:
        raise limit_error(f"{workers:,} workers", "max_workers", where, file=file)
    if classes > lim.max_classes:
        raise limit_error(
            f"{classes:,} classes",
            "max_classes",
            where,
            file=file,
            hint=f"If the labels are scores on a scale, read them with {spell('kind', 'continuous', where)}.",
        )
    if workers * classes * classes > lim.max_confusion_cells:
        raise limit_error(
            f"{workers:,} workers x {classes:,}^2 classes ({workers * classes * classes:,} confusion-matrix entries)",
            "max_confusion_cells",
            where,
            file=file,
        )


def _merge_note(labels: Column, class_names: tuple[str, ...]) -> tuple[str, ...]:
    """A note when spellings of one number ("1", "1.0") were read as one class."""
    if labels.uniq.size == len(class_names):
        return ()
    merged = sorted(set(labels.uniq.tolist()) - set(class_names))
    return (
        f"Read {_listing([repr(m) for m in merged], len(merged))} as the same number as another label's spelling "
        f"(classes {_listing([repr(c) for c in class_names], len(class_names))}).",
    )


def _class_lookup(class_names: tuple[str, ...], values: np.ndarray) -> np.ndarray:
    """Code of each distinct value among ``class_names`` (numbers match numerically), -1 when unseen."""
    index = {c: i for i, c in enumerate(class_names)}
    codes = np.array([index.get(str(v), -1) for v in values], dtype=np.int64)
    class_nums = _as_numbers(np.asarray(class_names, dtype=object))
    if class_nums is not None and (codes < 0).any():
        by_number = {_number_key(c): i for i, c in enumerate(class_names)}
        for k in np.flatnonzero(codes < 0):
            codes[k] = by_number.get(_number_key(str(values[k])), -1)
    return codes


def _check_labels_present(table: _Table, j: int) -> None:
    """Raise listing the rows of a long file whose label cell is blank or spells a missing value."""
    missing = table.missing(j)
    if missing.any():
        c = table.col(j)
        spelled = sorted({repr(v) for v in c.uniq[missing_values(c.uniq)] if v})
        what = (
            "a blank or NaN label"
            if not spelled
            else f"a blank label or one that spells a missing value ({', '.join(spelled[:_SHOW])})"
        )
        raise _rows_error(
            table,
            missing,
            j,
            what,
            "Fill in those labels, or delete the rows (a long file lists only the labels that were given). "
            "If a spelling such as 'None' or 'NA' is a real class, give it another name.",
        )


def infinite_labels(names: np.ndarray) -> np.ndarray:
    """(n,) mask of the class names that are infinite numbers (``inf``, ``-Infinity``) when every other name is a
    number or a missing value; all False among words (``cat``, ``dog``, ``inf``: there it is a word)."""
    names = np.asarray(names, dtype=object)
    nums = to_floats(names)
    infinite = np.isinf(nums)
    if not infinite.any() or not np.isfinite(nums[~infinite & ~missing_values(names)]).all():
        return np.zeros(names.shape, dtype=bool)
    return infinite


INFINITE_HINT = "A class label is a finite number (or a word): fix those labels, or delete the rows."


def _check_labels_finite(table: _Table, j: int) -> None:
    """Raise listing the rows whose class label is an infinite number among numeric labels (issue 42: ``inf`` was
    read as one more class)."""
    c = table.col(j)
    infinite = infinite_labels(c.uniq)
    if infinite.any():
        spelled = ", ".join(repr(v) for v in c.uniq[infinite][:_SHOW])
        what = f"an infinite number as a label ({spelled}), among numeric labels"
        raise _rows_error(table, infinite[c.codes], j, what, INFINITE_HINT)
