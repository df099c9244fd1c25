"""Gold labels: a gold file (item, label) or a gold column attached to `Annotations` (`read_gold`), and the known
labels of semi-supervised EM (`read_known`, ``--known FILE``), read as a gold file is read and refused in their own
words.

A gold class no worker chose is added to the classes unless that looks like a mismatch; an item given two different
gold labels, gold items without labels and gold scores that are not numbers raise `DataError`; a majority vote that
agrees with the gold less often than chance gets a note (a gold file of another dataset whose ids match by accident).
"""

from __future__ import annotations

import os
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
    _find,
    _ignored_note,
    _missing_columns_error,
    refuse_label_file,
)
from crowdlab.io.limits import get_limits
from crowdlab.io.readers import (
    SHOW as _SHOW,
)
from crowdlab.io.readers import (
    Source,
    check_where,
    missing_values,
    read_table,
    spell,
)
from crowdlab.io.readers import Table as _Table
from crowdlab.io.readers import count as _count
from crowdlab.io.readers import listing as _listing
from crowdlab.io.values import (
    _as_numbers,
    _class_lookup,
    _name_order,
    _number_hint,
    _number_key,
    _required_ids,
    _to_float,
)

pd = lazy("pandas")


def _gold_classes(
    ann: Annotations, values: np.ndarray, file: str, column: str, where: str = "python"
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
            f"For numeric scores read the labels with {spell('kind', 'continuous', where)}.",
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
    ann: Annotations,
    codes: np.ndarray,
    values: np.ndarray,
    rows: np.ndarray,
    file: str,
    column: str,
    where: str = "python",
) -> Annotations:
    """Annotations with gold ``values`` (strings) for the items ``codes``; other items stay unknown."""
    if ann.is_continuous:
        nums = _to_float(values, decimal_comma=False)
        lim = get_limits().max_abs_value
        big = np.abs(nums) > lim
        bad = np.isnan(nums) | big
        if bad.any():
            cells = _listing([f"{v!r} (row {r})" for v, r in zip(values[bad][:_SHOW], rows[bad][:_SHOW])])
            problem = "not a number" if not big.any() else f"not a number or larger in size than {lim:g}"
            raise DataError(
                f"{_count(int(bad.sum()), 'gold value')} {'is' if bad.sum() == 1 else 'are'} {problem}: {cells}.",
                file=file,
                column=column,
                hint=_number_hint(kind_hint=False),
            )
        _check_gold_conflicts(ann, codes, nums, file, column)
        gold = np.full(ann.n_items, np.nan)
        gold[codes] = nums
        return replace(ann, gold=gold)
    class_names, label, gold_codes, notes = _gold_classes(ann, values, file, column, where)
    _check_gold_conflicts(ann, codes, gold_codes, file, column)
    gold = np.full(ann.n_items, -1, dtype=np.int32)
    gold[codes] = gold_codes
    out = replace(ann, label=label, class_names=class_names, gold=gold)
    return replace(out, notes=ann.notes + notes + _below_chance_note(out, file))


GOLD_CHECK_MIN = 20  # items with gold before the majority vote's agreement with them is judged


def _below_chance_note(ann: Annotations, file: str) -> tuple[str, ...]:
    """A note when the majority vote agrees with the gold labels less often than chance (1/K) on at least
    :data:`GOLD_CHECK_MIN` items: the mark of a gold file from another dataset whose item ids match by accident
    (1, 2, 3...), which otherwise reads as a confident accuracy (0.134 for Zhou's web set scored against RTE's gold)."""
    has = ann.gold >= 0
    n, K = int(has.sum()), ann.n_classes
    if n < GOLD_CHECK_MIN or K < 2:
        return ()
    agree = float(np.mean(np.argmax(ann.vote_counts[has], axis=1) == ann.gold[has]))
    if agree >= 1.0 / K:
        return ()
    return (
        f"The majority vote agrees with the gold labels of {file} on {agree:.0%} of the {n:,} items with gold, less "
        f"than chance (1 in {K}): check that the gold file belongs to this label file (item ids that match by "
        "accident, such as 1, 2, 3, do not show it).",
    )


def _gold_says_scores(gold: Source, ann: Annotations) -> str | None:
    """A gold value that shows numeric class labels are scores (a number not among them), else None."""
    if _as_numbers(np.asarray(ann.class_names, dtype=object)) is None:
        return None
    try:
        table = read_table(gold, needs="a gold file needs item and label columns", allow_no_rows=True)
        _, gold_j = _gold_columns(table)
    except DataError:
        return None  # read_gold will say what is wrong
    col = table.col(gold_j)
    values = col.uniq[~missing_values(col.uniq)]
    if not values.size or _as_numbers(values) is None:
        return None
    known = {_number_key(c) for c in ann.class_names}
    unseen = [v for v in values.tolist() if _number_key(v) not in known]
    return unseen[0] if unseen else None


def _gold_columns(table: _Table) -> tuple[int, int]:
    """(item, gold label) column indices of a gold file."""
    refuse_label_file(table, "A gold file has two columns: item and its true label.")
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


def read_gold(source: Source, annotations: Annotations, *, where: str = "python") -> Annotations:
    """Return ``annotations`` with the gold labels of a gold CSV (columns item and label) attached.

    The label column may be named gold, truth, true_label, gold_label, or any label alias. Gold may cover only
    some items (the rest stay unknown: -1, or NaN for continuous scores); blank gold cells are unknown too and
    are counted in the notes. It replaces any gold already attached. A gold file naming items without labels
    raises. A gold class no worker chose is added to ``class_names`` (label codes are renumbered to keep the
    names sorted) unless that looks like a mismatch (see `_gold_classes`). A gold file with a header but no rows
    attaches nothing and says so in the notes.
    """
    table = read_table(
        source, needs="a gold file needs item and label columns", allow_no_rows=True, where=check_where(where)
    )
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
        base,
        codes,
        table.values(gold_j)[known],
        table.rows[known],
        table.file,
        table.column_name(gold_j),
        table.where,
    )


# a gold file's words as a known-labels file says them (read_known)
_KNOWN_WORDS = (
    ("a gold file needs", "a known-labels file needs"),
    ("not a gold file", "not a known-labels file"),
    ("A gold file has", "A known-labels file has"),
    ("the gold file", "the known-labels file"),
    ("gold classes", "known classes"),
    ("gold label", "known label"),
    ("gold row", "known row"),
)


def _known_words(text: str | None) -> str | None:
    for gold, known in _KNOWN_WORDS:
        text = text.replace(gold, known) if text else text
    return text


def known_error(exc: DataError) -> DataError:
    """A gold-file refusal (`read_gold`, `_gold_columns`) said of a known-labels file."""
    return DataError(
        _known_words(exc.problem), file=exc.file, row=exc.row, column=exc.column, hint=_known_words(exc.hint)
    )


def no_known_error(file: str | None) -> DataError:
    """A known-labels file that fixes no item's class (a header alone, or only blank labels): refused, for the
    in-memory fit and the engines alike."""
    return DataError(
        "the known-labels file gives no item a class (it has a header but no rows, or only blank labels).",
        file=file,
        hint="List the items whose class is known, one row each (item,label), or leave out --known.",
    )


def read_known(source: Source, annotations: Annotations, *, where: str = "python") -> np.ndarray:
    """(n_items,) class codes of a known-labels file (semi-supervised EM's ``--known FILE``: item,label of the items
    whose class is known; -1 elsewhere), read as a gold file is read, its refusals in its own words (they said
    "gold file"; issue 42). A file with no rows, or whose every label is blank, is refused: it fixes nothing,
    which a person who gave it did not mean. A class no worker used is refused too."""
    try:
        with_known = read_gold(source, annotations, where=where)
    except DataError as exc:
        raise known_error(exc) from None
    file = Path(source).name if isinstance(source, str | os.PathLike) else getattr(source, "name", None)
    if with_known.gold is None or not (np.asarray(with_known.gold) >= 0).any():
        raise no_known_error(file)
    if tuple(with_known.class_names) != tuple(annotations.class_names):
        extra = sorted(set(with_known.class_names) - set(annotations.class_names))
        raise DataError(
            f"known labels name classes no worker used ({', '.join(map(repr, extra[:_SHOW]))}).",
            file=file,
            hint=f"The classes are {_listing([repr(c) for c in annotations.class_names], annotations.n_classes)}.",
        )
    return np.asarray(with_known.gold)
