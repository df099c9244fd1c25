"""A checked table of crowd labels into `Annotations`, long or wide.

Long: one label per row (item, worker, label; optionally a per-item gold column, and a confidence, weight or
``p_<class>`` columns read as soft votes). Wide: one row per item, the item id first, one column per worker, blank =
no label (optionally a gold column). `read_long_csv` and `read_wide_csv` force one reading; `read_annotations`
(:mod:`crowdlab.io.data`) chooses it (:mod:`crowdlab.io.layout`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io._lazy import lazy
from crowdlab.io.annotations import Annotations
from crowdlab.io.columns import (
    GOLD_ALIASES,
    ITEM_ALIASES,
    LABEL_ALIASES,
    SCORE_ALIASES,
    WORKER_ALIASES,
    _find,
    _ignored_note,
    _long_columns,
    _norm,
)
from crowdlab.io.gold import _attach_gold
from crowdlab.io.limits import get_limits
from crowdlab.io.readers import (
    SHOW as _SHOW,
)
from crowdlab.io.readers import (
    UPLOADED,
    Column,
    Source,
    check_where,
    missing_values,
    no_worker_columns_error,
    read_table,
    spell,
)
from crowdlab.io.readers import Table as _Table
from crowdlab.io.readers import count as _count
from crowdlab.io.readers import listing as _listing
from crowdlab.io.readers import rows_error as _rows_error
from crowdlab.io.readers import rows_phrase as _rows_phrase
from crowdlab.io.soft import _soft_columns, _soft_from_table
from crowdlab.io.values import (
    _as_col,
    _check_labels_finite,
    _check_labels_present,
    _check_sizes,
    _checked_scores,
    _encode_col,
    _merge_note,
    _number_hint,
    _required_col,
    _resolve_kind,
    _to_float,
)

pd = lazy("pandas")


_GENERIC_STEMS = {"labels", "annotations", "data"}


def _check_choice(arg: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"{arg} must be one of {', '.join(map(repr, choices))}, not {value!r}.")


def _class_annotations(
    file: str,
    column: str,
    items: np.ndarray | Column,
    workers: np.ndarray | Column,
    labels: np.ndarray | Column,
    name: str,
    notes: tuple[str, ...],
    where: str = "python",
) -> Annotations:
    """Annotations with class codes; raises when there is only one class or past the limits."""
    labels, items, workers = _as_col(labels), _as_col(items), _as_col(workers)
    lim = get_limits()
    if labels.uniq.size > 20 * lim.max_classes:
        _check_sizes(file, where, classes=int(labels.uniq.size))
    class_names, label = _encode_col(labels, merge_numbers=True)
    if len(class_names) < 2:
        raise DataError(
            f"all {label.size:,} labels are the same class ({class_names[0]!r}); EM needs at least two classes.",
            file=file,
            column=column,
            hint="Check that this is the label column, or add the labels of the other classes. "
            f"For numeric scores use {spell('kind', 'continuous', where)}.",
        )
    _check_sizes(file, where, items=int(items.uniq.size), workers=int(workers.uniq.size), classes=len(class_names))
    item_names, item = _encode_col(items)
    worker_names, worker = _encode_col(workers)
    notes = notes + _merge_note(labels, class_names)
    return Annotations(item, worker, label, item_names, worker_names, class_names, name=name, notes=notes)


def _continuous_annotations(
    items: np.ndarray | Column,
    workers: np.ndarray | Column,
    values: np.ndarray,
    name: str,
    notes: tuple[str, ...],
    file: str = UPLOADED,
    where: str = "python",
) -> Annotations:
    items, workers = _as_col(items), _as_col(workers)
    _check_sizes(file, where, items=int(items.uniq.size), workers=int(workers.uniq.size))
    item_names, item = _encode_col(items)
    worker_names, worker = _encode_col(workers)
    return Annotations(item, worker, None, item_names, worker_names, value=values, name=name, notes=notes)


def _long_from_table(
    table: _Table,
    *,
    kind: str,
    name: str,
    score_column: str | None,
    cols: tuple[int, int, int, int | None] | None = None,
    layout_notes: tuple[str, ...] = (),
    soft: bool = True,
) -> Annotations:
    """Long format: one row per (item, worker, label), optionally a per-item gold column; ``columns`` holds the
    file's names of those columns."""
    cols = cols if cols is not None else _long_columns(table, score_column)
    ann = _long_read(
        table, kind=kind, name=name, score_column=score_column, cols=cols, layout_notes=layout_notes, soft=soft
    )
    return replace(ann, columns=tuple("" if j is None else table.header[j].strip() for j in cols))


def _long_read(
    table: _Table,
    *,
    kind: str,
    name: str,
    score_column: str | None,
    cols: tuple[int, int, int, int | None],
    layout_notes: tuple[str, ...],
    soft: bool,
) -> Annotations:
    item_j, worker_j, label_j, gold_j = cols
    items = _required_col(table, item_j, "item id")
    workers = _required_col(table, worker_j, "worker id")
    _check_labels_present(table, label_j)
    labels = table.col(label_j)
    kind, kind_notes = _resolve_kind(kind, table.header[label_j], score_column, labels, table.where)
    if kind != "continuous":
        _check_labels_finite(table, label_j)
    used = [item_j, worker_j, label_j] + ([gold_j] if gold_j is not None else [])
    kind_notes += _header_as_data_note(table, items, labels, (item_j, worker_j, label_j), kind)
    notes = table.notes + layout_notes + _ignored_note(table, used) + kind_notes
    column = table.column_name(label_j)
    if kind == "continuous":
        values = _checked_scores(table, label_j)
        ann = _continuous_annotations(items, workers, values, name, notes, table.file, table.where)
    else:
        conf_j, prob_js = _soft_columns(table, used) if soft else (None, [])
        used += ([conf_j] if conf_j is not None else []) + prob_js
        notes = table.notes + layout_notes + _ignored_note(table, used) + kind_notes
        ann = _class_annotations(table.file, column, items, workers, labels, name, notes, table.where)
        if conf_j is not None or prob_js:  # gold (per item) first, on the rows as read; then the soft votes
            if gold_j is not None:
                known = ~table.missing(gold_j)
                ann = _attach_gold(
                    ann, ann.item[known], table.values(gold_j)[known], table.rows[known], table.file,
                    table.header[gold_j], table.where,
                )  # fmt: skip
            return _soft_from_table(table, ann, None if prob_js else conf_j, prob_js)
    if gold_j is None:
        return ann
    known = ~table.missing(gold_j)
    gold_values = table.values(gold_j)[known]
    return _attach_gold(
        ann, ann.item[known], gold_values, table.rows[known], table.file, table.header[gold_j], table.where
    )


_ROLE_NAMES = set(ITEM_ALIASES + WORKER_ALIASES + LABEL_ALIASES + SCORE_ALIASES)


def _header_as_data_note(table: _Table, items: Column, labels: Column, cols, kind: str) -> tuple[str, ...]:
    """A note when row 1 looks like a data row (a file without a header row loses its first label to the column
    names, issue 41): its item cell is an item id of the file and its label cell one of the labels (continuous: a
    number), and neither is an accepted column name."""
    item_j, worker_j, label_j = cols
    head_item, head_label = table.header[item_j].strip(), table.header[label_j].strip()
    if not head_item or not head_label or {_norm(head_item), _norm(head_label)} & _ROLE_NAMES:
        return ()
    if kind == "continuous":
        try:
            label_like = math.isfinite(float(head_label))
        except ValueError:
            label_like = False
    else:
        label_like = bool((labels.uniq == head_label).any())
    if not (label_like and (items.uniq == head_item).any()):
        return ()
    row = ",".join(table.header)
    return (
        f"Row 1 ({row!r}) looks like a label, not column names: {head_item!r} is an item of the file and "
        f"{head_label!r} one of its labels. If the file has no header row, its first label was read as the column "
        f"names: add a first line naming the columns (e.g. item,worker,label).",
    )


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


def _wide_present(
    table: _Table, worker_cols: list[int], why: str = ""
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """(cells, present): the worker block as an object array and the mask of cells holding a label, after
    checking rows; notes on rows without labels and on cells that spell a missing value."""
    cells = table.cells[worker_cols].to_numpy(dtype=object)
    codes, uniq = pd.factorize(cells.ravel())
    uniq = np.asarray(uniq, dtype=object)
    miss_u = missing_values(uniq)
    present = ~miss_u[codes].reshape(cells.shape)
    labelled = present.any(axis=1)
    if not labelled.any():
        raise DataError("no cell holds a label.", file=table.file, hint="Fill in the workers' labels.")
    blank_item = table.blank(0) & labelled
    if blank_item.any():
        raise _rows_error(table, blank_item, 0, "labels but a blank item id", "Fill in the item id(s).")
    notes: tuple[str, ...] = ()
    if not labelled.all():
        skipped = table.rows[~labelled]
        notes += (f"Skipped {_count(skipped.size, 'row')} with no labels ({_rows_phrase(skipped)}).",)
    spelled = miss_u & (uniq != "")
    if spelled.any():
        n = int(np.isin(codes, np.flatnonzero(spelled)).sum())
        notes += (
            f"Read {_count(n, 'cell')} spelled like a missing value "
            f"({', '.join(sorted(repr(v) for v in uniq[spelled][:_SHOW]))}) as no label.",
        )
    notes += (
        f"Read as a wide table: {int(labelled.sum())} item rows x {len(worker_cols)} worker columns, item ids "
        f"from column {table.column_name(0)!r}{why}.",
    )
    return cells, present, notes


def _wide_from_table(
    table: _Table, *, kind: str, name: str, layout_notes: tuple[str, ...] = (), why: str = ""
) -> Annotations:
    """Wide format: one row per item, item id first, one column per worker, blank = no label. ``why``: the reason
    for the wide reading, added to its note; ``layout_notes``: notes before the others. ``columns``: the file's
    names of its item and gold columns (it has no worker or label column)."""
    gold_j = _find(table, GOLD_ALIASES, "gold", skip=(0,))
    ann = _wide_read(table, gold_j, kind=kind, name=name, layout_notes=layout_notes, why=why)
    gold = "" if gold_j is None else table.header[gold_j].strip()
    return replace(ann, columns=(table.header[0].strip(), "", "", gold))


def _wide_read(
    table: _Table, gold_j: int | None, *, kind: str, name: str, layout_notes: tuple[str, ...], why: str
) -> Annotations:
    worker_cols, column_notes = _wide_worker_columns(table, gold_j)
    if not worker_cols:
        raise no_worker_columns_error(table.file)
    cells, present, row_notes = _wide_present(table, worker_cols, why)
    labelled = present.any(axis=1)
    notes = table.notes + layout_notes + column_notes + row_notes
    r, c = np.nonzero(present)
    items = table.values(0)[r]
    workers = np.asarray([table.header[j] for j in worker_cols], dtype=object)[c]
    labels = cells[r, c]
    if kind == "auto":
        kind, kind_notes = _resolve_kind(kind, "", None, _as_col(labels), table.where)
        notes += kind_notes
    if kind == "continuous":
        ann = _wide_continuous(table, worker_cols, r, c, items, workers, labels, name, notes)
    else:
        ann = _class_annotations(table.file, "worker columns", items, workers, labels, name, notes, table.where)
    if gold_j is None:
        return ann
    known = ~table.missing(gold_j) & labelled
    codes = pd.Index(ann.item_names).get_indexer(table.values(0)[known])
    gold_values = table.values(gold_j)[known]
    return _attach_gold(ann, codes, gold_values, table.rows[known], table.file, table.header[gold_j], table.where)


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
    lim = get_limits().max_abs_value
    bad = np.flatnonzero(np.isnan(values) | (np.abs(values) > lim))
    if bad.size:
        cells = [
            f"{labels[k]!r} (row {table.rows[r[k]]}, worker {table.header[worker_cols[c[k]]]!r})" for k in bad[:_SHOW]
        ]
        raise DataError(
            f"{_count(bad.size, 'score')} {'is' if bad.size == 1 else 'are'} not a number (or larger in size than "
            f"{lim:g}): {_listing(cells, bad.size)}.",
            file=table.file,
            hint=_number_hint(True, table.where),
        )
    return _continuous_annotations(items, workers, values, name, notes, table.file, table.where)


def _default_name(table: _Table) -> str:
    """File stem; for a generic stem such as labels.csv, its folder's name (datasets are folders)."""
    if table.path is not None:
        if table.path.stem.lower() in _GENERIC_STEMS and table.path.parent.name:
            return table.path.parent.name
        return table.path.stem
    return Path(table.file).stem if table.file != UPLOADED else UPLOADED


_LONG_NEEDS = "a label file needs item, worker and label columns (or a wide table: item id, then worker columns)"


def read_long_csv(
    source: Source,
    *,
    kind: str = "auto",
    name: str | None = None,
    score_column: str | None = None,
    where: str = "python",
) -> Annotations:
    """Read a long CSV (one row per label: item, worker, label; optional per-item gold column).

    ``kind``: "classes", "continuous" or "auto" (continuous when the label column is named value, score or
    rating, when ``score_column`` names it, or when the labels are numbers with more than
    ``limits.continuous_threshold`` (20) distinct values; a note says so). ``score_column`` names the label/score
    column when it is not one of the accepted aliases. ``where`` ("python", "cli", "app") only changes how
    messages spell options.
    """
    _check_choice("kind", kind, ("auto", "classes", "continuous"))
    table = read_table(source, needs=_LONG_NEEDS, where=check_where(where))
    return _long_from_table(table, kind=kind, name=name or _default_name(table), score_column=score_column)


def read_wide_csv(
    source: Source, *, kind: str = "classes", name: str | None = None, where: str = "python"
) -> Annotations:
    """Read a wide CSV: one row per item, the item id in the first column, one column per worker.

    Blank (or NaN) cells are missing labels. A column named gold/truth/true_label/gold_label holds gold.
    ``kind`` "auto": continuous for numbers with many distinct values (see `read_long_csv`), else classes.
    """
    _check_choice("kind", kind, ("auto", "classes", "continuous"))
    table = read_table(source, needs=_LONG_NEEDS, wide=True, where=check_where(where))
    return _wide_from_table(table, kind=kind, name=name or _default_name(table))
