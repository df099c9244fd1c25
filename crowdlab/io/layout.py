"""Long or wide: which reading a label table gets (`_choose_layout`).

The names in row 1 decide first (a worker or label column named: long). Where they say nothing, the file's shape
does (`_Shape`): one row per id in the first column is wide; repeated ids in a three-column file without blank cells,
whose (item, worker) pairs are mostly distinct, are long, in the order item, worker, label. When neither decides,
`ColumnsUnclear` asks rather than guess. A note says which reading was chosen and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io.columns import (
    GOLD_ALIASES,
    LABEL_ALIASES,
    SCORE_ALIASES,
    WORKER_ALIASES,
    ColumnsUnclear,
    _find,
    _long_columns,
    _named_columns,
    _norm,
    _similar_columns,
)
from crowdlab.io.readers import Table as _Table


def _roles_note(table: _Table, cols: Sequence[int], how: str) -> str:
    item, worker, label = (repr(table.column_name(j)) for j in cols[:3])
    return f"{item} as the item, {worker} as the worker and {label} as the label ({how})"


@dataclass(frozen=True)
class _Shape:
    """What a file's shape says about long vs wide: rows, distinct ids in column 0, blank cells in the three
    columns of a three-column file, and the share of distinct (column 0, column 1) pairs."""

    rows: int
    ids: int
    data_cols: tuple[int, ...]
    blanks: bool
    pairs: float

    @property
    def per_id(self) -> float:
        return self.rows / max(self.ids, 1)

    @property
    def long_by_position(self) -> bool:
        """Three columns, ids repeated, no blank cell, and mostly distinct (item, worker) pairs: a long file."""
        return len(self.data_cols) == 3 and self.ids < self.rows and not self.blanks and self.pairs >= 0.5

    def said(self, table: _Table) -> str:
        first = repr(table.column_name(0))
        return f"{self.rows:,} rows hold {self.ids:,} distinct ids in column {first} ({self.per_id:.1f} rows per id)"


def _shape(table: _Table, gold_j: int | None) -> _Shape:
    data_cols = tuple(j for j in range(len(table.header)) if j != gold_j)
    ids = table.col(0)
    blanks, pairs = True, 0.0
    if len(data_cols) == 3 and ids.uniq.size < table.n_rows:
        blanks = any(table.missing(j).any() for j in data_cols)
        second = table.col(data_cols[1])
        key = ids.codes.astype(np.int64) * max(second.uniq.size, 1) + second.codes
        pairs = np.unique(key).size / max(table.n_rows, 1)
    return _Shape(table.n_rows, int(ids.uniq.size), data_cols, blanks, float(pairs))


def _choose_layout(
    table: _Table, fmt: str, score_column: str | None, columns
) -> tuple[str, tuple[int, int, int, int | None] | None, tuple[str, ...]]:
    """("long" or "wide", the long file's (item, worker, label, gold) columns or None, notes saying which reading
    was chosen and why). Decided by the names in row 1 and by the shape (repeated ids in the first column, three
    columns, many rows per id); raises `ColumnsUnclear` when the two leave it open, rather than guess."""
    fmt_wide = table.spell("fmt", "wide")
    name_them = table.spell("columns", "ITEM,WORKER,LABEL")
    if columns is not None:
        if fmt == "wide":
            raise DataError(
                f"{table.spell('columns', 'ITEM,WORKER,LABEL')} names a long file's columns, and "
                f"{table.spell('fmt', 'wide')} asks for a wide reading.",
                file=table.file,
                hint="Drop one of the two.",
            )
        cols = _long_columns(table, score_column, _named_columns(table, columns))
        return (
            "long",
            cols,
            (f"Read as a long table (one label per row): {_roles_note(table, cols, 'as you named them')}.",),
        )
    gold_j = _find(table, GOLD_ALIASES, "gold", skip=(0,))
    if fmt == "long":  # the order item, worker, label only where the shape says long too
        by_position = not _looks_long(table.header, score_column) and _shape(table, gold_j).long_by_position
        cols = _long_columns(table, score_column, by_position=by_position)
        return "long", cols, ()
    named_long = _looks_long(table.header, score_column)
    if fmt == "wide":
        if named_long:
            return "wide", None, ()
        shape = _shape(table, gold_j)
        similar = _similar_columns(table, skip={0} if gold_j is None else {0, gold_j})
        if shape.ids < shape.rows and ({"worker", "label"} <= similar.keys() or shape.long_by_position):
            return (
                "wide",
                None,
                (
                    "Read as a wide table as asked, although the file looks long (one label per row): "
                    f"{shape.said(table)}. To read it as long, use {table.spell('fmt', 'long')} or {name_them}.",
                ),
            )
        return "wide", None, ()
    if named_long:
        return "long", None, ()  # the accepted names say it (the long reader finds the columns and says what's missing)
    shape = _shape(table, gold_j)
    if shape.ids == shape.rows:
        return "wide", None, (" (one row per item: row 1 names no worker or label column, and every id is on one row)",)
    similar = _similar_columns(table, skip=set() if gold_j is None else {gold_j})
    if {"worker", "label"} <= similar.keys():
        cols = _long_columns(table, score_column)
        why = "from their names"
        return (
            "long",
            cols,
            (f"Read as a long table (one label per row): {shape.said(table)}; {_roles_note(table, cols, why)}.",),
        )
    if shape.long_by_position:
        cols = _long_columns(table, score_column, by_position=True)
        return (
            "long",
            cols,
            (
                f"Read as a long table (one label per row): {shape.said(table)}, three columns and no blank cell; "
                f"{_roles_note(table, cols, 'in the order item, worker, label')}. If that is not their order, name "
                f"them: {name_them}.",
            ),
        )
    if len(shape.data_cols) == 3 or shape.per_id >= 2:
        raise ColumnsUnclear(
            f"cannot tell how to read this file: row 1 names no worker or label column, and {shape.said(table)}, as "
            f"in a long file (one label per row), but {_unclear_why(shape)}.",
            header=table.header,
            file=table.file,
            row=1,
            hint=f"Name the item, worker and label columns ({name_them}), or, if "
            f"each row is one item and each column after the first one worker, choose {fmt_wide}.",
        )
    return (
        "wide",
        None,
        (
            f" (row 1 names no worker or label column, and the file has {len(table.header)} columns; some ids are on "
            f"more than one row ({shape.rows:,} rows, {shape.ids:,} ids): their rows add labels to the same item)",
        ),
    )


def _unclear_why(shape: _Shape) -> str:
    if len(shape.data_cols) != 3:
        return f"it has {len(shape.data_cols)} columns, and which of them hold the worker and the label is not named"
    if shape.blanks:
        return "some cells are blank (a long file has a label in every row; a wide file has blanks)"
    return (
        f"only {shape.pairs:.0%} of the (column 1, column 2) pairs are distinct (a long file's item and worker pairs "
        "mostly are)"
    )


def _looks_long(header: Sequence[str], score_column: str | None) -> bool:
    """A header naming a worker or a label column is a long file; anything else is read as wide."""
    keys = {_norm(h) for h in header}
    named = set(WORKER_ALIASES + LABEL_ALIASES + SCORE_ALIASES)
    return bool(keys & named) or score_column is not None
