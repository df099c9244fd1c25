"""The reading front door: `read_annotations` reads crowd labels (long or wide CSV or Parquet, from a path, bytes or
an upload, optional gold) into :class:`~crowdlab.io.annotations.Annotations`. Every bad input raises `DataError`
naming the file, the spreadsheet row(s) (header = row 1), the column and what to do; nothing is dropped without a
sentence in ``Annotations.notes``. The bytes -> table checks are `crowdlab.io.readers.read_table` (the one reading
path of every file kind); the modules below give the columns their meaning. ``where`` ("python", "cli", "app")
chooses how hints spell options.

The reading is split by job, one module each:

- :mod:`crowdlab.io.annotations`: the data model, and `to_long_dataframe` / `to_gold_dataframe` back to names;
- :mod:`crowdlab.io.columns`: the accepted column names and how a long file's columns are found;
- :mod:`crowdlab.io.layout`: long or wide, from the names in row 1 and the file's shape;
- :mod:`crowdlab.io.values`: cells to names, codes and numbers; the limits on sizes;
- :mod:`crowdlab.io.tables`: the long and the wide reading (`read_long_csv`, `read_wide_csv`);
- :mod:`crowdlab.io.soft` (soft votes), :mod:`crowdlab.io.abstain` ("can't tell" answers);
- :mod:`crowdlab.io.gold`: `read_gold`, `read_known`;
- :mod:`crowdlab.io.sequences`: `read_sequences`, `read_sequence_gold`.

Every name this module held before that split is imported here too, so ``from crowdlab.io.data import X`` keeps
working (the repository imports each name from its own module).
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io.abstain import _responses
from crowdlab.io.annotations import Annotations
from crowdlab.io.gold import _gold_says_scores, read_gold
from crowdlab.io.layout import _choose_layout
from crowdlab.io.readers import Source, check_where, read_table, spell
from crowdlab.io.readers import load_source as _load_source
from crowdlab.io.tables import _LONG_NEEDS, _check_choice, _default_name, _long_from_table, _wide_from_table

# Every other name this module held before the split (issue 41), imported back so that old imports keep working.
# isort: off
# fmt: off
from crowdlab.io._lazy import lazy  # noqa: F401
from crowdlab.io.abstain import ABSTAIN_TOKENS, _abstain_note, with_abstentions  # noqa: F401
from crowdlab.io.annotations import _encode, _fmt_number, _names, to_gold_dataframe, to_long_dataframe  # noqa: F401
from crowdlab.io.columns import (  # noqa: F401
    _ROLE_WORDS, ANSWER_PREFIX, GOLD_ALIASES, ITEM_ALIASES, LABEL_ALIASES, POSITION_ALIASES, SCORE_ALIASES,
    SEQUENCE_ALIASES, WORKER_ALIASES, ColumnsUnclear, _answer_column, _find, _ignored_note, _long_columns,
    _missing_columns_error, _named_columns, _norm, _score_column, _similar_columns, _words,
)
from crowdlab.io.gold import (  # noqa: F401
    _KNOWN_WORDS, GOLD_CHECK_MIN, _attach_gold, _below_chance_note, _check_gold_conflicts, _gold_classes,
    _gold_columns, _known_words, known_error, no_known_error, read_known,
)
from crowdlab.io.layout import _looks_long, _roles_note, _Shape, _shape, _unclear_why  # noqa: F401
from crowdlab.io.limits import get_limits  # noqa: F401
from crowdlab.io.limits import how_to_raise as limits_how  # noqa: F401
from crowdlab.io.readers import (  # noqa: F401
    UPLOADED, Column, column_listing, limit_error, missing_values, no_worker_columns_error, to_floats,
)
from crowdlab.io.readers import SHOW as _SHOW  # noqa: F401
from crowdlab.io.readers import Table as _Table  # noqa: F401
from crowdlab.io.readers import count as _count  # noqa: F401
from crowdlab.io.readers import listing as _listing  # noqa: F401
from crowdlab.io.readers import rows_error as _rows_error  # noqa: F401
from crowdlab.io.readers import rows_phrase as _rows_phrase  # noqa: F401
from crowdlab.io.sequences import (  # noqa: F401
    _SEQ_NEEDS, _check_layout, _positions, _sequence_items, _sequence_keys, read_sequence_gold, read_sequences,
)
from crowdlab.io.soft import (  # noqa: F401
    CONFIDENCE_ALIASES, WEIGHT_ALIASES, _soft_columns, _soft_from_table, _soft_numbers, soft_vote_column, soft_votes,
    soft_votes_elsewhere,
)
from crowdlab.io.tables import (  # noqa: F401
    _GENERIC_STEMS, _ROLE_NAMES, _class_annotations, _continuous_annotations, _header_as_data_note, _long_read,
    _wide_continuous, _wide_present, _wide_read, _wide_worker_columns, read_long_csv, read_wide_csv,
)
from crowdlab.io.values import (  # noqa: F401
    INFINITE_HINT, _as_col, _as_numbers, _check_labels_finite, _check_labels_present, _check_sizes, _checked_scores,
    _class_lookup, _encode_col, _encode_names, _merge_note, _name_order, _number_hint, _number_key, _required_col,
    _required_ids, _resolve_kind, _string_order, _to_float, infinite_labels,
)
# fmt: on
# isort: on

_read_table = read_table

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
