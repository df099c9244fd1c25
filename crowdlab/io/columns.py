"""The columns of a label file: the accepted names of each role (item, worker, label or score, gold, sequence,
position) and how a long file's item, worker and label columns are found.

A header cell is compared by `_norm` (case, spaces, hyphens and CamelCase ignored: MTurk's ``WorkerId`` is
``worker_id``). Roles are found by the accepted names first, then by names that hold one of them as a word
(``annotator_name``, ``label_value``), then (a missing item column) the one column left over; ``columns=`` (the
user's names or indices) overrides all that. Where names and shape leave it open, `ColumnsUnclear` asks which column
is which (``columns=`` in Python, ``--columns`` on the command line, the Data page's column picker).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io.readers import Table as _Table
from crowdlab.io.readers import (
    column_listing,
)
from crowdlab.io.readers import count as _count

ITEM_ALIASES = ("item", "task", "question", "item_id", "task_id", "question_id", "hit_id")  # hit_id: MTurk's HITId


WORKER_ALIASES = ("worker", "annotator", "labeler", "labeller", "rater", "worker_id", "annotator_id")


LABEL_ALIASES = ("label", "answer", "response", "class", "annotation")


SCORE_ALIASES = ("value", "score", "rating")


GOLD_ALIASES = ("gold", "truth", "true_label", "gold_label")


SEQUENCE_ALIASES = ("sequence", "seq", "sentence", "sequence_id", "sentence_id", "chain")


POSITION_ALIASES = ("position", "pos", "index", "token", "t", "step")


def _norm(name: str) -> str:
    """Header cell -> alias key: CamelCase split into words (MTurk's ``WorkerId``, ``HITId``: worker_id, hit_id),
    lower case, spaces and hyphens as underscores."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name.strip()))
    return re.sub(r"[\s\-]+", "_", name.lower())


ANSWER_PREFIX = "answer."  # MTurk batch results: one Answer.<field> column per question of the HIT


def _answer_column(table: _Table, item: int | None, worker: int | None) -> int | None:
    """MTurk's label column: the one ``Answer.*`` column (``Answer.entails``); several (a HIT that asks two
    questions) raise `ColumnsUnclear`, which asks which one (``columns=``, ``--columns``, the Data page's picker)."""
    hits = [j for j, h in enumerate(table.header) if h.strip().lower().startswith(ANSWER_PREFIX)]
    if len(hits) > 1:
        names = column_listing([table.header[j] for j in hits])
        roles = [table.header[j] if j is not None else role for j, role in ((item, "ITEM"), (worker, "WORKER"))]
        example = table.spell("columns", ",".join([*roles, table.header[hits[0]]]))
        raise ColumnsUnclear(
            f"the file has {len(hits)} answer columns ({names}): which one holds the labels?",
            header=table.header,
            file=table.file,
            row=1,
            hint=f"Name it with the item and worker columns: {example}.",
        )
    return hits[0] if hits else None


def _find(table: _Table, aliases: Sequence[str], role: str, *, skip: Sequence[int] = ()) -> int | None:
    """Index of the one column whose name is an alias of ``role``; None when there is none."""
    hits = [j for j, h in enumerate(table.header) if _norm(h) in aliases and j not in skip]
    if len(hits) > 1:
        names = column_listing([table.header[j] for j in hits])
        raise DataError(
            f"more than one column could be the {role} column: {names}.",
            file=table.file,
            row=1,
            hint="Rename or delete all but one of them.",
        )
    return hits[0] if hits else None


def refuse_label_file(table: _Table, hint: str) -> None:
    """A gold file (plain or of sequences) must not be a label file: refuse one with a worker column."""
    worker = _find(table, WORKER_ALIASES, "worker")
    if worker is not None:
        raise DataError(
            f"this looks like a label file, not a gold file (it has a worker column, {table.header[worker]!r}).",
            file=table.file,
            row=1,
            hint=hint,
        )


def _missing_columns_error(table: _Table, missing: dict[str, Sequence[str]], hint: str = "") -> DataError:
    found = column_listing(table.header)
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
        found = column_listing(table.header)
        raise DataError(
            f"there is no column named {score_column!r}; the columns in row 1 are {found}.",
            file=table.file,
            row=1,
            hint="Pass score_column= one of those names, or leave it out to find the label column by name.",
        )
    return hits[0]


def _long_columns(
    table: _Table, score_column: str | None, columns: Sequence[int] | None = None, *, by_position: bool = False
) -> tuple[int, int, int, int | None]:
    """(item, worker, label, gold-or-None) column indices of a long file.

    Roles are found by the accepted names first, then (`_similar_columns`) by names that hold one of them as a word
    (``annotator_name``, ``label_value``); a missing item column is the one column left over. ``columns`` (item,
    worker, label indices, as the user named them) overrides all that; ``by_position`` takes the three columns of a
    three-column file in the order item, worker, label when their names say nothing."""
    if columns is not None:
        item, worker, label = columns
        gold = _find(table, GOLD_ALIASES, "gold", skip=(item, worker, label))
        return item, worker, label, gold
    item = _find(table, ITEM_ALIASES, "item")
    worker = _find(table, WORKER_ALIASES, "worker")
    if score_column is not None:
        label = _score_column(table, score_column)
    else:
        label = _find(table, LABEL_ALIASES + SCORE_ALIASES, "label")
        if label is None:
            label = _answer_column(table, item, worker)
    found = {"item": item, "worker": worker, "label": label}
    gold = _find(table, GOLD_ALIASES, "gold", skip=tuple(j for j in found.values() if j is not None))
    taken = {j for j in (*found.values(), gold) if j is not None}
    if None in found.values():
        for role, j in _similar_columns(table, skip=taken).items():
            if found[role] is None:
                found[role] = j
                taken.add(j)
    left = [j for j in range(len(table.header)) if j not in taken]
    missing_roles = [role for role, j in found.items() if j is None]
    if missing_roles == ["item"] and len(left) == 1:  # the item column is often just "id"; a label never is
        found["item"] = left[0]
    elif missing_roles and by_position and len(left) == len(missing_roles):
        for role, j in zip(missing_roles, left):
            found[role] = j
    item, worker, label = found["item"], found["worker"], found["label"]
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
        keys = {_norm(h) for h in table.header}
        if keys & set(SEQUENCE_ALIASES) and keys & set(POSITION_ALIASES):
            hint = f" This looks like a file of label sequences: read it with {table.spell('sequences', '')}."
        else:
            hint = (
                f" Or name them: {table.spell('columns', 'ITEM,WORKER,LABEL')}. If rows are items and columns are "
                f"workers, read it as a wide file ({table.spell('fmt', 'wide')})."
            )
        raise _missing_columns_error(table, missing, hint)
    return item, worker, label, gold


# words that make a column name one role's (``annotator_name`` is a worker column, ``label_value`` a label column)
_ROLE_WORDS = {
    "item": ("item", "task", "question"),
    "worker": ("worker", "annotator", "labeler", "labeller", "rater"),
    "label": ("label", "answer", "response", "class", "annotation") + SCORE_ALIASES,
}


def _words(name: str) -> set[str]:
    return {w for w in re.split(r"[^0-9a-z]+", name.lower()) if w}


def _similar_columns(table: _Table, skip: set[int] | Sequence[int] = ()) -> dict[str, int]:
    """{role: column} for the roles that exactly one column's name holds as a word (and no other role's word)."""
    words = [_words(h) if j not in skip else set() for j, h in enumerate(table.header)]
    out = {}
    for role, mine in _ROLE_WORDS.items():
        others = set().union(*(w for r, w in _ROLE_WORDS.items() if r != role))
        hits = [j for j, w in enumerate(words) if w & set(mine) and not w & others]
        if len(hits) == 1:
            out[role] = hits[0]
    return out


class ColumnsUnclear(DataError):
    """The file's shape and names do not say which column holds what: the user names them (``columns=`` in
    Python, ``--columns`` on the command line, the column picker on the Data page). ``header``: the column names."""

    def __init__(self, message: str, *, header: Sequence[str], **kw) -> None:
        self.header = tuple(header)
        super().__init__(message, **kw)


def _named_columns(table: _Table, columns) -> tuple[int, int, int]:
    """The (item, worker, label) column indices named by ``columns`` ("q,w,a" or three names, case and spaces
    ignored; or three column indices)."""
    if isinstance(columns, str):
        columns = [c for c in columns.split(",")]
    columns = list(columns)
    if len(columns) != 3:
        raise DataError(
            f"{table.spell('columns', ','.join(map(str, columns)))} names {len(columns)} columns; it takes three: the "
            "item, worker and label columns.",
            file=table.file,
            hint=f"For example {table.spell('columns', ','.join(table.header[:3]))}.",
        )
    found = []
    for role, c in zip(("item", "worker", "label"), columns):
        if isinstance(c, int | np.integer) and not isinstance(c, bool):
            if not 0 <= c < len(table.header):
                raise DataError(
                    f"the {role} column {c} you named is not a column of the file (0..{len(table.header) - 1}).",
                    file=table.file,
                )
            found.append(int(c))
            continue
        key = _norm(str(c))
        hits = [j for j, h in enumerate(table.header) if _norm(h) == key]
        if not hits:
            shown = column_listing(table.header)
            raise DataError(
                f"there is no column named {str(c).strip()!r} (the {role} column you named); the columns in row 1 are "
                f"{shown}.",
                file=table.file,
                row=1,
                hint=f"Name three of those: {table.spell('columns', 'ITEM,WORKER,LABEL')}.",
            )
        found.append(hits[0])
    if len(set(found)) < 3:
        raise DataError(
            "the item, worker and label columns you named are not three different columns.",
            file=table.file,
            row=1,
            hint=f"Name three different columns: {table.spell('columns', 'ITEM,WORKER,LABEL')}.",
        )
    return found[0], found[1], found[2]


def _ignored_note(table: _Table, used: Sequence[int]) -> tuple[str, ...]:
    ignored = [table.column_name(j) for j in range(len(table.header)) if j not in used]
    if not ignored:
        return ()
    return (f"Ignored {_count(len(ignored), 'column')}: {', '.join(repr(n) for n in ignored)}.",)
