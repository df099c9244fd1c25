"""Crowd labels of sequences (Traganitis & Giannakis, Sec. 4): `read_sequences` (columns sequence, position, worker,
label) and `read_sequence_gold` (sequence, position, label).

Items are the (sequence, position) pairs, ordered by sequence and position; ``Annotations.sequence_starts`` marks the
boundaries. A position inside a sequence that nobody labelled becomes an item without labels (noted); gaps and
positions past the limits raise before anything is allocated.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io._lazy import lazy
from crowdlab.io.annotations import Annotations
from crowdlab.io.columns import (
    GOLD_ALIASES,
    LABEL_ALIASES,
    POSITION_ALIASES,
    SEQUENCE_ALIASES,
    WORKER_ALIASES,
    _find,
    _ignored_note,
    _missing_columns_error,
    refuse_label_file,
)
from crowdlab.io.limits import get_limits
from crowdlab.io.limits import how_to_raise as limits_how
from crowdlab.io.readers import (
    Source,
    check_where,
    limit_error,
    read_table,
)
from crowdlab.io.readers import Table as _Table
from crowdlab.io.readers import count as _count
from crowdlab.io.readers import rows_error as _rows_error
from crowdlab.io.readers import rows_phrase as _rows_phrase
from crowdlab.io.tables import _default_name
from crowdlab.io.values import (
    _check_labels_present,
    _check_sizes,
    _class_lookup,
    _encode_col,
    _merge_note,
    _required_col,
    _required_ids,
    _to_float,
)

pd = lazy("pandas")


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
    table = read_table(source, needs=_SEQ_NEEDS, where=check_where(where))
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
    table = read_table(
        source, needs="a sequence gold file needs sequence, position and label columns", where=check_where(where)
    )
    refuse_label_file(table, "A sequence gold file has three columns: sequence, position and the true label.")
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
