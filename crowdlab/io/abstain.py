""" "Can't tell" answers: labels read as responses that are not classes (``Annotations.response_names``, with
``abstain=``), and the note on a class spelled like one (``unsure``, ``?``, ...) when ``abstain`` is not given."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io.annotations import Annotations
from crowdlab.io.readers import count as _count
from crowdlab.io.readers import listing as _listing
from crowdlab.io.readers import (
    spell,
)

ABSTAIN_TOKENS = ("unsure", "can't tell", "cant tell", "?", "don't know", "dont know", "not sure")


def _abstain_note(ann: Annotations, where: str) -> tuple[str, ...]:
    """A note when a class is spelled like a "can't tell" answer and was read as a class."""
    seen = [c for c in ann.class_names if c.strip().lower() in ABSTAIN_TOKENS]
    if not seen:
        return ()
    how = spell("abstain", seen[0], where)
    if where == "python":
        how = f"read_annotations(..., {how})"
    return (
        f'Label {seen[0]!r} looks like a "can\'t tell" answer; it is read as a class here. {how} reads it as a '
        "response that is not a class (the models with confusion matrices learn who abstains on which class).",
    )


def with_abstentions(ann: Annotations, tokens: Sequence[str]) -> Annotations:
    """``ann`` with the classes named in ``tokens`` turned into responses that are not classes (``response_names``):
    the other classes keep their order and get codes 0 .. K' - 1, the tokens K' .. K' + R - 1."""
    names = list(ann.class_names)
    found = [t for t in tokens if t in names]
    if not found:
        return replace(ann, notes=ann.notes + (f"No label is {_listing([repr(t) for t in tokens], len(tokens))}.",))
    if ann.is_soft:
        raise DataError("abstain= and soft votes together are not supported: give one or the other.")
    classes = [c for c in names if c not in found]
    if len(classes) < 2:
        raise DataError(f"without {_listing([repr(t) for t in found], len(found))} fewer than two classes remain.")
    order = classes + found
    new = np.empty(len(names), dtype=np.int32)
    for code, c in enumerate(order):
        new[names.index(c)] = code
    gold = ann.gold
    dropped: tuple[str, ...] = ()
    if gold is not None:
        bad = np.isin(gold, [names.index(t) for t in found])
        if bad.any():  # "can't tell" is no true class: those items have no gold (a note says so)
            n_bad = int(bad.sum())
            gold = np.where(bad, -1, gold)
            dropped = (
                f"{_count(n_bad, 'gold label')} {'is' if n_bad == 1 else 'are'} "
                f'{_listing([repr(t) for t in found], len(found))}, a "can\'t tell" response and not a class: '
                f"{'that item has' if n_bad == 1 else 'those items have'} no gold (left out of every metric).",
            )
        gold = np.where(gold >= 0, new[np.maximum(gold, 0)], -1)
    n_abs = int(np.isin(ann.label, [names.index(t) for t in found]).sum())
    note = (
        f'Read {_listing([repr(t) for t in found], len(found))} as "can\'t tell" ({n_abs:,} labels): a response, '
        f"not a class; {len(classes)} classes remain."
    )
    return replace(
        ann, label=new[ann.label], class_names=tuple(classes), response_names=tuple(found), gold=gold,
        notes=ann.notes + (note,) + dropped,
    )  # fmt: skip


def _responses(ann: Annotations, abstain, where: str) -> Annotations:
    if ann.is_continuous:
        return ann
    if abstain is None:
        return replace(ann, notes=ann.notes + _abstain_note(ann, where)) if _abstain_note(ann, where) else ann
    return with_abstentions(ann, [abstain] if isinstance(abstain, str) else list(abstain))
