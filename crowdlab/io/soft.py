"""Soft votes: a label's confidence, its weight, or one probability per class (``p_<class>`` columns) read as weighted
observations (see :class:`~crowdlab.io.annotations.Annotations`), and the refusal of the engines that count whole
labels (streaming, Dask) to read such files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io.annotations import Annotations
from crowdlab.io.columns import _find, _norm
from crowdlab.io.readers import Table as _Table
from crowdlab.io.readers import count as _count
from crowdlab.io.readers import listing as _listing
from crowdlab.io.readers import rows_error as _rows_error
from crowdlab.io.readers import rows_phrase as _rows_phrase
from crowdlab.io.values import _to_float


def soft_votes(ann: Annotations, P: np.ndarray) -> Annotations:
    """``ann`` with row r's label replaced by the probabilities ``P[r]`` (n_obs, K) over the classes: one weighted
    observation per class with a nonzero probability, in row order. Rows whose probabilities are all 0 or 1 keep
    exactly their one observation, and when every row does, the result has no weights at all (hard labels)."""
    P = np.asarray(P, dtype=np.float64)
    n, K = P.shape
    keep = P > 0
    if np.all(P[keep] == 1.0):
        label = np.argmax(P, axis=1).astype(np.int32)
        return replace(ann, label=label, weight=None)
    rows, cls = np.nonzero(keep)  # row-major: each row's classes in code order
    return replace(ann, item=ann.item[rows], worker=ann.worker[rows], label=cls.astype(np.int32), weight=P[rows, cls])


CONFIDENCE_ALIASES = ("confidence", "conf", "probability", "prob")


WEIGHT_ALIASES = ("weight",)  # the observation's weight as such (what ``to_long_dataframe`` writes for soft votes)


def soft_vote_column(header: Sequence[str]) -> str | None:
    """The first column of ``header`` the in-memory reader would read as soft votes (a confidence or a p_<class>
    column), or None: the streaming and Dask engines, which count whole labels, refuse such files with it."""
    for h in header:
        if _norm(str(h)) in CONFIDENCE_ALIASES + WEIGHT_ALIASES or _norm(str(h)).startswith("p_"):
            return str(h)
    return None


def soft_votes_elsewhere(column: str, file: str | None) -> DataError:
    return DataError(
        f"column {column!r} holds soft votes (a probability per label), which only the in-memory engine reads; "
        "this engine counts whole labels.",
        file=file,
        hint="Fit it in memory (without --stream or --engine dask), or drop the column to fit the hard labels.",
    )


def _soft_columns(table: _Table, used: Sequence[int]) -> tuple[int | None, list[int]]:
    """(the confidence or weight column or None, the p_<class> columns) of a long file."""
    conf = _find(table, CONFIDENCE_ALIASES + WEIGHT_ALIASES, "confidence", skip=used)
    probs = [j for j, h in enumerate(table.header) if _norm(h).startswith("p_") and j not in used]
    return conf, probs


def _soft_from_table(table: _Table, ann: Annotations, conf_j: int | None, prob_js: list[int]) -> Annotations:
    """Soft votes from a ``confidence`` column (the probability of the row's label; the rest spread evenly over
    the other classes) or from ``p_<class>`` columns (one probability per class, each row normalised)."""
    K = ann.n_classes
    n = ann.n_obs
    if prob_js:
        names = [table.header[j].strip()[2:] for j in prob_js]
        lookup = {c: k for k, c in enumerate(ann.class_names)}
        unknown = [c for c in names if c not in lookup]
        if unknown:
            raise DataError(
                f"probability column(s) {', '.join(repr('p_' + c) for c in unknown)} name no class of the label "
                f"column (classes {_listing([repr(c) for c in ann.class_names], K)}).",
                file=table.file,
                hint="Name each probability column p_ followed by a class exactly as the label column writes it.",
            )
        P = np.zeros((n, K))
        for j, c in zip(prob_js, names):
            P[:, lookup[c]] = np.where(table.missing(j), 0.0, _soft_numbers(table, j))
        tot = P.sum(axis=1)
        bad = tot <= 0
        if bad.any():
            raise DataError(
                f"{_rows_phrase(table.rows[bad])} give every class probability 0.", file=table.file,
                hint="Give each row at least one positive probability.",
            )  # fmt: skip
        off = np.abs(tot - 1.0) > 1e-6
        P = P / tot[:, None]
        what = f"{_count(len(prob_js), 'probability column')} ({', '.join(table.header[j] for j in prob_js)})"
        note = f"Read soft votes from {what}: each row counts as its class probabilities."
        if off.any():
            note += f" {_count(int(off.sum()), 'row')} did not sum to 1 and were normalised."
    elif _norm(table.header[conf_j]) in WEIGHT_ALIASES:  # one weighted observation per row, as written
        w = np.where(table.missing(conf_j), 1.0, _soft_numbers(table, conf_j))
        zero = w <= 0
        if zero.any():
            raise _rows_error(table, zero, conf_j, "a weight of 0", "Drop the rows of weight 0, or give a weight > 0.")
        out = replace(ann, weight=None if np.all(w == 1.0) else w)
        note = f"Read column {table.header[conf_j]!r} as each label's weight (a share of a vote, soft votes)."
        return replace(out, notes=out.notes + (note,))
    else:
        c = np.where(table.missing(conf_j), 1.0, _soft_numbers(table, conf_j))
        P = np.repeat(((1.0 - c) / max(K - 1, 1))[:, None], K, axis=1)
        P[np.arange(n), ann.label] = c
        note = (
            f"Read soft votes from column {table.header[conf_j]!r}: each row's label counts as its confidence c, "
            "and 1 - c is spread evenly over the other classes."
        )
        if table.missing(conf_j).any():
            note += f" {_count(int(table.missing(conf_j).sum()), 'row')} without a confidence count as certain."
    out = soft_votes(ann, P)
    if out.is_soft:
        note += f" {n:,} rows became {out.n_obs:,} weighted observations."
    else:
        note += " Every probability is 0 or 1: these are hard labels."
    return replace(out, notes=out.notes + (note,))


def _soft_numbers(table: _Table, j: int) -> np.ndarray:
    """A probability column as numbers in [0, 1] (a missing cell reads 0 here; the caller decides what it means);
    a cell that is not a number or lies outside [0, 1] raises naming its rows."""
    col = table.col(j)
    missing = table.missing(j)
    values = _to_float(col.uniq, decimal_comma=table.delimiter == ";")[col.codes]
    values = np.where(missing, 0.0, values)
    bad = ~missing & ~((values >= 0) & (values <= 1))  # NaN (not a number) fails both
    if bad.any():
        raise _rows_error(
            table, bad, j, "a probability that is not a number from 0 to 1",
            "Soft votes are probabilities: give each as a number from 0 to 1.", show_values=True,
        )  # fmt: skip
    return values
