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

import io
import math
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from crowdlab.errors import DataError  # noqa: F401
from crowdlab.io._lazy import lazy  # noqa: F401
from crowdlab.io.abstain import (  # noqa: F401 (re-exported: these names lived here)
    ABSTAIN_TOKENS,
    _abstain_note,
    _responses,
    with_abstentions,
)
from crowdlab.io.annotations import (  # noqa: F401 (re-exported: these names lived here)
    Annotations,
    _encode,
    _fmt_number,
    _names,
    to_gold_dataframe,
    to_long_dataframe,
)
from crowdlab.io.columns import (  # noqa: F401 (re-exported: these names lived here)
    _ROLE_WORDS,
    ANSWER_PREFIX,
    GOLD_ALIASES,
    ITEM_ALIASES,
    LABEL_ALIASES,
    POSITION_ALIASES,
    SCORE_ALIASES,
    SEQUENCE_ALIASES,
    WORKER_ALIASES,
    ColumnsUnclear,
    _answer_column,
    _find,
    _ignored_note,
    _long_columns,
    _missing_columns_error,
    _named_columns,
    _norm,
    _score_column,
    _similar_columns,
    _words,
)
from crowdlab.io.gold import (  # noqa: F401 (re-exported: these names lived here)
    _KNOWN_WORDS,
    GOLD_CHECK_MIN,
    _attach_gold,
    _below_chance_note,
    _check_gold_conflicts,
    _gold_classes,
    _gold_columns,
    _gold_says_scores,
    _known_words,
    known_error,
    no_known_error,
    read_gold,
    read_known,
)
from crowdlab.io.layout import (  # noqa: F401 (re-exported: these names lived here)
    _choose_layout,
    _looks_long,
    _roles_note,
    _Shape,
    _shape,
    _unclear_why,
)
from crowdlab.io.limits import get_limits  # noqa: F401
from crowdlab.io.limits import how_to_raise as limits_how  # noqa: F401
from crowdlab.io.readers import (  # noqa: F401
    SHOW as _SHOW,
)
from crowdlab.io.readers import (  # noqa: F401
    UPLOADED,
    Column,
    Source,
    check_where,
    column_listing,
    limit_error,
    missing_values,
    no_worker_columns_error,
    read_table,
    spell,
    to_floats,
)
from crowdlab.io.readers import Table as _Table  # noqa: F401
from crowdlab.io.readers import count as _count  # noqa: F401
from crowdlab.io.readers import listing as _listing  # noqa: F401
from crowdlab.io.readers import load_source as _load_source  # noqa: F401
from crowdlab.io.readers import rows_error as _rows_error  # noqa: F401
from crowdlab.io.readers import rows_phrase as _rows_phrase  # noqa: F401
from crowdlab.io.soft import (  # noqa: F401 (re-exported: these names lived here)
    CONFIDENCE_ALIASES,
    WEIGHT_ALIASES,
    _soft_columns,
    _soft_from_table,
    _soft_numbers,
    soft_vote_column,
    soft_votes,
    soft_votes_elsewhere,
)
from crowdlab.io.values import (  # noqa: F401 (re-exported: these names lived here)
    INFINITE_HINT,
    _as_col,
    _as_numbers,
    _check_labels_finite,
    _check_labels_present,
    _check_sizes,
    _checked_scores,
    _class_lookup,
    _encode_col,
    _encode_names,
    _merge_note,
    _name_order,
    _number_hint,
    _number_key,
    _required_col,
    _required_ids,
    _resolve_kind,
    _string_order,
    _to_float,
    infinite_labels,
)

pd = lazy("pandas")
sp = lazy("scipy.sparse")

__all__ = [
    "Annotations",
    "read_annotations",
    "read_gold",
    "read_long_csv",
    "read_wide_csv",
    "ColumnsUnclear",
    "to_gold_dataframe",
    "to_long_dataframe",
]

# Rules (see ``read_annotations``): the bytes -> table checks are `crowdlab.io.readers.read_table` (the one reading
# path of every file kind); the modules of this folder give the columns their meaning. Every problem raises
# ``DataError``; every row skipped and every value reinterpreted gets a sentence in ``Annotations.notes``. Rows are
# numbered as a spreadsheet shows them (header = row 1). ``where`` ("python", "cli", "app") chooses how hints spell
# options.

_GENERIC_STEMS = {"labels", "annotations", "data"}


_read_table = read_table


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
    table = _read_table(source, needs=_LONG_NEEDS, where=check_where(where))
    return _long_from_table(table, kind=kind, name=name or _default_name(table), score_column=score_column)


def read_wide_csv(
    source: Source, *, kind: str = "classes", name: str | None = None, where: str = "python"
) -> Annotations:
    """Read a wide CSV: one row per item, the item id in the first column, one column per worker.

    Blank (or NaN) cells are missing labels. A column named gold/truth/true_label/gold_label holds gold.
    ``kind`` "auto": continuous for numbers with many distinct values (see `read_long_csv`), else classes.
    """
    _check_choice("kind", kind, ("auto", "classes", "continuous"))
    table = _read_table(source, needs=_LONG_NEEDS, wide=True, where=check_where(where))
    return _wide_from_table(table, kind=kind, name=name or _default_name(table))


def read_annotations(
    source: Source,
    *,
    gold: Source | None = None,
    fmt: str = "auto",
    kind: str = "auto",
    name: str | None = None,
    score_column: str | None = None,
    columns: str | Sequence[str | int] | None = None,
    where: str = "python",
    soft: bool = True,
    abstain: str | Sequence[str] | None = None,
) -> Annotations:
    """Read crowd labels from a CSV path, bytes or uploaded file; every bad input raises `DataError`.

    ``fmt``: "long", "wide" or "auto": long when row 1 names a worker or label column (by one of the accepted
    aliases, or a name holding one as a word, e.g. ``annotator_name``); otherwise decided by the file's shape: one
    row per id in the first column is wide, repeated ids in a three-column file without blank cells are long (the
    columns in the order item, worker, label); when neither decides, `ColumnsUnclear` asks for ``columns``. A note
    says which reading was chosen and why. ``columns``: the item, worker and label columns of a long file by name
    (``"q,w,a"`` or ``("q", "w", "a")``) or index. ``kind``: "classes", "continuous" or "auto" (see
    `read_long_csv`). ``gold``: an optional gold CSV (see `read_gold`). ``name``: display name, default the file
    stem. ``where``: "python", "cli" or "app", how messages spell options (``kind="continuous"``, ``--kind
    continuous``, the widget's name). ``soft``: read a long file's ``confidence``, ``weight`` or ``p_<class>``
    columns as soft votes (see :class:`Annotations`); False ignores them (a note says so) and reads the hard labels.
    ``abstain``: a label (or labels) meaning "can't tell", read as a response that is not a class
    (``Annotations.response_names``); without it, a label spelled like one (``unsure``, ``can't tell``, ``?``, ...)
    is read as a class, with a note. ``kind="ordinal"``: numeric labels read as ordered classes (ratings; see
    :mod:`crowdlab.models.ordinal`).
    """
    _check_choice("fmt", fmt, ("auto", "long", "wide"))
    _check_choice("kind", kind, ("auto", "classes", "continuous", "ordinal"))
    if kind == "ordinal":  # classes whose names are numbers, in numeric order (crowdlab.models.ordinal)
        again = read_annotations(
            source,
            gold=gold,
            fmt=fmt,
            kind="classes",
            name=name,
            columns=columns,
            where=where,
            soft=soft,
            abstain=abstain,
        )
        return _ordinal(again)
    table = _read_table(source, needs=_LONG_NEEDS, wide=fmt == "wide", where=check_where(where))
    fmt, cols, layout_notes = _choose_layout(table, fmt, score_column, columns)
    name = name or _default_name(table)

    def read(kind: str) -> Annotations:
        if fmt == "long":
            return _long_from_table(
                table,
                kind=kind,
                name=name,
                score_column=score_column,
                cols=cols,
                layout_notes=layout_notes,
                soft=soft,
            )
        why = "".join(n for n in layout_notes if n.startswith(" ("))
        notes = tuple(n for n in layout_notes if not n.startswith(" ("))
        return _wide_from_table(table, kind=kind, name=name, layout_notes=notes, why=why)

    ann = read(kind)
    if gold is None:
        return _responses(ann, abstain, where)
    gold = _rereadable(gold)
    if kind == "auto" and not ann.is_continuous:
        example = _gold_says_scores(gold, ann)
        if example is not None:
            note = (
                f"Read the labels as continuous scores: they are numbers and the gold file holds numbers that are "
                f"not among them (e.g. {example!r}). To read them as classes, use {spell('kind', 'classes', where)}."
            )
            ann = read("continuous")
            ann = replace(ann, notes=ann.notes + (note,))
    return _responses(read_gold(gold, ann, where=where), abstain, where)


def _ordinal(ann: Annotations) -> Annotations:
    """Ratings read as ordered classes: every label must be a number (the classes are then in numeric order)."""

    def number(c: str) -> bool:
        try:
            return np.isfinite(float(c))
        except ValueError:
            return False

    bad = [c for c in ann.class_names if not number(c)]
    if bad:
        bad = bad[0]
        raise DataError(
            f"kind='ordinal' reads ratings, and the label {bad!r} is not a number.",
            hint="Give the ratings as numbers (e.g. 1-5 stars), or read the labels with kind='classes'.",
        )
    levels = [float(c) for c in ann.class_names]
    if any(b <= a for a, b in zip(levels, levels[1:])):  # compared, not subtracted: 1e308 - -1e308 overflows
        raise DataError("the ratings' levels are not in numeric order.")  # pragma: no cover - _encode sorts them
    note = (
        f"Read the labels as ordinal ratings: {len(levels)} levels from {ann.class_names[0]} to "
        f"{ann.class_names[-1]} (crowdlab.models.ordinal.OrdinalDS treats nearby levels as likelier errors)."
    )
    return replace(ann, notes=ann.notes + (note,), ordinal=True)


def _rereadable(source: Source) -> Source:
    """A source that can be read twice (a stream with only ``read()`` becomes named bytes)."""
    if isinstance(source, str | os.PathLike | bytes | bytearray | memoryview) or hasattr(source, "getvalue"):
        return source
    data, file, _ = _load_source(source)
    out = io.BytesIO(data)
    out.name = file
    return out


_SEQ_NEEDS = "a sequence label file needs sequence, position, worker and label columns"


def _positions(table: _Table, j: int) -> np.ndarray:
    """Column ``j`` as whole positions 0 .. max_position, raising with the offending rows (checked per value)."""
    col = _required_col(table, j, "position")
    pos_u = _to_float(col.uniq, decimal_comma=False)
    bad_u = ~np.isfinite(pos_u) | (pos_u < 0) | (pos_u != np.round(pos_u))
    if bad_u.any():
        raise _rows_error(
            table,
            bad_u[col.codes],
            j,
            "a position that is not a whole number >= 0",
            "Number positions 0, 1, 2, ...",
            show_values=True,
        )
    lim = get_limits().max_position
    big_u = pos_u > lim
    if big_u.any():
        raise _rows_error(
            table,
            big_u[col.codes],
            j,
            f"a position beyond {lim:,} (max_position)",
            "Number the positions of each sequence 0, 1, 2, ...",
            show_values=True,
        )
    return pos_u.astype(np.int64)[col.codes]


def _sequence_keys(table: _Table, seq_col: int, pos_col: int) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """(sequence names, sequence code per row, position per row)."""
    seq_names, seq = _encode_col(_required_col(table, seq_col, "sequence id"))
    return seq_names, seq.astype(np.int64), _positions(table, pos_col)


def _check_layout(table: _Table, pos_col: int, seq: np.ndarray, pos: np.ndarray) -> None:
    """Refuse gaps longer than ``max_position_gap`` and layouts past ``max_items`` before allocating them."""
    lim = get_limits()
    order = np.lexsort((pos, seq))
    s, p = seq[order], pos[order]
    same = s[1:] == s[:-1]
    gap = np.where(same, p[1:] - p[:-1] - 1, 0)
    if gap.size and gap.max() > lim.max_position_gap:
        k = int(np.argmax(gap))
        row = int(table.rows[order[k + 1]])
        raise DataError(
            f"position {int(p[k + 1]):,} follows position {int(p[k]):,} of the same sequence: a gap of {int(gap[k]):,} "
            f"unlabelled positions, more than the {lim.max_position_gap:,} crowdlab lays out (max_position_gap).",
            file=table.file,
            row=row,
            column=table.column_name(pos_col),
            hint="Number the positions of each sequence 0, 1, 2, ... without large jumps. "
            + limits_how("max_position_gap", table.where),
        )
    starts = np.flatnonzero(np.r_[True, ~same])
    ends = np.r_[starts[1:], s.size] - 1
    total = int((p[ends] - p[starts] + 1).sum())
    if total > lim.max_items:
        raise limit_error(f"the sequences span {total:,} positions, which", "max_items", table.where, file=table.file)


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


def read_sequences(
    source: Source, *, gold: Source | None = None, name: str | None = None, where: str = "python"
) -> Annotations:
    """Read crowd labels of sequences: a long CSV with columns sequence, position, worker, label.

    Items are the (sequence, position) pairs, ordered by sequence (names sorted, numerically when numbers) and
    position; ``sequence_starts`` marks the boundaries. A position inside a sequence that nobody labelled becomes
    an item without labels (noted); gaps longer than ``limits.max_position_gap`` and positions beyond
    ``limits.max_position`` raise before anything is allocated. ``gold``: a CSV with columns sequence, position,
    label. ``where``: how messages spell options ("python", "cli", "app").
    """
    table = _read_table(source, needs=_SEQ_NEEDS, where=check_where(where))
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
    workers = _required_col(table, cols["worker"], "worker id")
    _check_labels_present(table, cols["label"])
    _check_layout(table, cols["position"], seq, pos)
    labels = table.col(cols["label"])
    if labels.uniq.size > 20 * get_limits().max_classes:
        _check_sizes(table.file, table.where, classes=int(labels.uniq.size))
    class_names, label = _encode_col(labels, merge_numbers=True)
    if len(class_names) < 2:
        raise DataError(
            f"all {label.size:,} labels are the same class ({class_names[0]!r}); EM needs at least two classes.",
            file=table.file,
            column=table.column_name(cols["label"]),
        )
    _check_sizes(table.file, table.where, workers=int(workers.uniq.size), classes=len(class_names))
    item, starts, item_pos, gaps = _sequence_items(seq, pos, len(seq_names))
    worker_names, worker = _encode_col(workers)
    seq_of_item = np.repeat(np.arange(len(seq_names)), np.diff(starts))
    item_names = tuple(f"{seq_names[s]}:{p}" for s, p in zip(seq_of_item.tolist(), item_pos.tolist()))
    notes = table.notes + _ignored_note(table, list(cols.values())) + _merge_note(labels, class_names)
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
    return ann if gold is None else read_sequence_gold(gold, ann, where=where)


def read_sequence_gold(source: Source, annotations: Annotations, *, where: str = "python") -> Annotations:
    """Attach gold from a CSV with columns sequence, position, label.

    Raises for a label file given as gold (it has a worker column), positions not in the labels, gold labels no
    worker used, and one position given two different gold labels; repeated identical rows are read once (noted).
    """
    table = _read_table(
        source, needs="a sequence gold file needs sequence, position and label columns", where=check_where(where)
    )
    worker = _find(table, WORKER_ALIASES, "worker")
    if worker is not None:
        raise DataError(
            f"this looks like a label file, not a gold file (it has a worker column, {table.header[worker]!r}).",
            file=table.file,
            row=1,
            hint="A sequence gold file has three columns: sequence, position and the true label.",
        )
    s_col = _find(table, SEQUENCE_ALIASES, "sequence")
    p_col = _find(table, POSITION_ALIASES, "position")
    l_col = _find(table, LABEL_ALIASES + GOLD_ALIASES, "label")
    missing = {"sequence": SEQUENCE_ALIASES, "position": POSITION_ALIASES, "label": LABEL_ALIASES}
    missing = {k: v for k, v in missing.items() if {"sequence": s_col, "position": p_col, "label": l_col}[k] is None}
    if missing:
        raise _missing_columns_error(table, missing)
    _check_labels_present(table, l_col)
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
    pairs = pd.DataFrame({"item": codes, "gold": lookup})
    dup_pair = pairs.duplicated().to_numpy()
    distinct = pairs.drop_duplicates()
    conflict = pairs["item"].isin(distinct["item"][distinct["item"].duplicated()]).to_numpy()
    if conflict.any():
        raise _rows_error(
            table,
            conflict,
            l_col,
            "a gold label that contradicts another row for the same (sequence, position)",
            "Give each position one gold label.",
        )
    notes = annotations.notes
    if dup_pair.any():
        notes += (
            f"Gold file '{table.file}': {_count(int(dup_pair.sum()), 'repeated row')} "
            f"({_rows_phrase(table.rows[dup_pair])}) read once.",
        )
    gold = np.full(annotations.n_items, -1, dtype=np.int32)
    gold[codes] = lookup
    return replace(annotations, gold=gold, notes=notes + table.notes)
