"""Item features for models that learn a classifier from crowd labels (Raykar et al. 2010).

`ItemFeatures` is a design matrix ``X`` (n_items, d) aligned row for row with an `Annotations`' items
(``item_names``), with the column names and the transform that produced it, so new items are mapped the same way:

- ``add_intercept=True`` puts a column of ones first, named ``"intercept"`` (``ItemFeatures.intercept`` is then
  True; the Raykar model leaves that weight out of its L2 penalty);
- ``standardize=True`` centres and scales every raw column with the mean and standard deviation over the labelled
  items (``mean``, ``scale``; a constant column keeps scale 1, with a note). ``transform(raw)`` applies the same
  centring, scaling and intercept to new raw feature rows.

Reading (`read_features`): a CSV with one row per item, ``item,f1,...,fd``. The item column is found by name
(item, task, question, item_id, ...; as for label files), else it is the first column (with a note); every other
column is a feature. The same reader rules as the label files apply (UTF-8, comma/semicolon/tab, spreadsheet row
numbers with the header as row 1, a semicolon file may use decimal commas). Every labelled item needs exactly one
row: missing items, duplicate item rows, blank or non-numeric cells raise `DataError` naming the items, rows and
columns. Rows for items that have no labels are not an error: they are kept apart, transformed the same way, in
``new_item_names`` / ``X_new`` (items to predict), and a note says how many there were.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io._lazy import lazy
from crowdlab.io.annotations import Annotations
from crowdlab.io.columns import ITEM_ALIASES, _find
from crowdlab.io.limits import get_limits
from crowdlab.io.readers import Source, check_where
from crowdlab.io.readers import count as _count
from crowdlab.io.readers import listing as _listing
from crowdlab.io.readers import read_table as _read_table
from crowdlab.io.readers import rows_phrase as _rows_phrase
from crowdlab.io.values import _required_ids, _to_float

pd = lazy("pandas")

__all__ = ["INTERCEPT", "ItemFeatures", "features_from_array", "read_features"]

INTERCEPT = "intercept"
_SHOW = 5
_HINT = "A features file has a header row (item, f1, ..., fd) and one row of numbers per item."
_NEEDS = "a features file needs an item column and at least one feature column (item, f1, ..., fd)"


@dataclass(frozen=True, eq=False)
class ItemFeatures:
    """Design matrix ``X`` (n_items, d) for the items ``item_names`` (the labelled items, in code order).

    ``names`` (d,) column names (``"intercept"`` first when ``intercept``); ``mean`` / ``scale`` (d_raw,) the
    standardisation of the raw columns (zeros / ones when not standardised); ``new_item_names`` and ``X_new``
    (n_new, d): rows of the features file for items without labels, transformed the same way.
    """

    names: tuple[str, ...]
    X: np.ndarray
    item_names: tuple[str, ...] = ()
    intercept: bool = False
    mean: np.ndarray | None = None
    scale: np.ndarray | None = None
    new_item_names: tuple[str, ...] = ()
    X_new: np.ndarray | None = None
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        X = np.ascontiguousarray(self.X, dtype=np.float64)
        if X.ndim != 2:
            raise DataError(f"features must be a 2-D (items, features) array, got shape {X.shape}.")
        if not np.all(np.isfinite(X)):
            raise DataError("features must be finite numbers.")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "names", tuple(str(n) for n in self.names))
        if len(self.names) != X.shape[1]:
            raise DataError(f"{len(self.names)} feature names for {X.shape[1]} columns.")
        names = tuple(str(n) for n in self.item_names) or tuple(str(i) for i in range(X.shape[0]))
        if len(names) != X.shape[0]:
            raise DataError(f"{len(names)} item names for {X.shape[0]} rows of features.")
        object.__setattr__(self, "item_names", names)
        d_raw = X.shape[1] - int(self.intercept)
        if self.intercept and (X.shape[1] == 0 or not np.all(X[:, 0] == 1.0)):
            raise DataError("the intercept column (column 0) must be all ones.")
        mean = np.zeros(d_raw) if self.mean is None else np.asarray(self.mean, dtype=np.float64)
        scale = np.ones(d_raw) if self.scale is None else np.asarray(self.scale, dtype=np.float64)
        if mean.shape != (d_raw,) or scale.shape != (d_raw,) or (scale <= 0).any():
            raise DataError("mean and scale need one entry per raw feature column (scale > 0).")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "scale", scale)
        X_new = np.zeros((0, X.shape[1])) if self.X_new is None else np.asarray(self.X_new, dtype=np.float64)
        if X_new.ndim != 2 or X_new.shape[1] != X.shape[1] or X_new.shape[0] != len(self.new_item_names):
            raise DataError("X_new needs one row per new item and the same columns as X.")
        object.__setattr__(self, "X_new", X_new)
        object.__setattr__(self, "new_item_names", tuple(str(n) for n in self.new_item_names))
        object.__setattr__(self, "notes", tuple(self.notes))

    @property
    def n_items(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        """Number of columns of the design matrix (intercept included)."""
        return int(self.X.shape[1])

    @property
    def raw_names(self) -> tuple[str, ...]:
        """The feature columns as read (without the intercept)."""
        return self.names[1:] if self.intercept else self.names

    @property
    def penalised(self) -> np.ndarray:
        """(d,) bool: columns whose weight an L2 prior shrinks (all but the intercept)."""
        mask = np.ones(self.d, dtype=bool)
        if self.intercept:
            mask[0] = False
        return mask

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """Raw feature rows (n, d_raw) -> design rows (n, d): the same centring, scaling and intercept as ``X``."""
        raw = np.asarray(raw, dtype=np.float64)
        if raw.ndim == 1:
            raw = raw[None, :]
        if raw.ndim != 2 or raw.shape[1] != len(self.raw_names):
            raise DataError(f"new items need {len(self.raw_names)} feature columns ({', '.join(self.raw_names)}).")
        if not np.all(np.isfinite(raw)):
            raise DataError("features of new items must be finite numbers.")
        Z = (raw - self.mean) / self.scale
        if self.intercept:
            Z = np.hstack([np.ones((Z.shape[0], 1)), Z])
        return Z

    def aligned_with(self, data: Annotations) -> bool:
        """True when the rows are ``data``'s items in code order."""
        return self.item_names == data.item_names


def _design(
    raw: np.ndarray, names: Sequence[str], *, add_intercept: bool, standardize: bool, fit_rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """(design, mean, scale, notes) for ``raw`` (n, d_raw); standardisation statistics over ``fit_rows``."""
    d_raw = raw.shape[1]
    mean, scale, notes = np.zeros(d_raw), np.ones(d_raw), ()
    if standardize:
        base = raw if fit_rows is None else raw[fit_rows]
        # statistics of base / m (m: a power of two >= the column's largest |value|): finite for 1e308-sized values
        top = np.abs(base).max(axis=0) if base.shape[0] else np.zeros(d_raw)
        exps = np.minimum(np.frexp(np.where(top > 0, top, 1.0))[1], 1023)
        m = np.where(top > 0, np.ldexp(1.0, exps), 1.0)
        mean_m, sd_m = (base / m).mean(axis=0), (base / m).std(axis=0)
        mean = mean_m * m
        const = ~(sd_m > 1e-12 * np.maximum(1.0 / m, np.abs(mean_m)))
        scale = np.where(const, 1.0, sd_m * m)
        if const.any():
            cols = [names[j] for j in np.flatnonzero(const)]
            notes = (
                f"{_count(len(cols), 'feature column')} {'is' if len(cols) == 1 else 'are'} constant "
                f"({_listing(cols)}); centred but not scaled.",
            )
    with np.errstate(over="ignore", invalid="ignore"):
        Z = (raw - mean) / scale
    if not np.all(np.isfinite(Z)):  # raw - mean overflowed (values near 1e308 of both signs)
        Z = (raw / 2 - mean / 2) / (scale / 2)
    if add_intercept:
        Z = np.hstack([np.ones((Z.shape[0], 1)), Z])
    return Z, mean, scale, notes


def features_from_array(
    raw: np.ndarray,
    item_names: Sequence | None = None,
    names: Sequence[str] | None = None,
    *,
    add_intercept: bool = True,
    standardize: bool = False,
    where: str = "python",
) -> ItemFeatures:
    """`ItemFeatures` from a raw (n_items, d_raw) array (rows in item code order); names default to f1..fd."""
    raw = np.asarray(raw, dtype=np.float64)
    if raw.ndim == 1:
        raw = raw[:, None]
    if raw.ndim != 2:
        raise DataError(f"features must be a 2-D (items, features) array, got shape {raw.shape}.")
    if not np.all(np.isfinite(raw)):
        raise DataError("features must be finite numbers.")
    names = tuple(str(n) for n in names) if names is not None else tuple(f"f{j + 1}" for j in range(raw.shape[1]))
    if len(names) != raw.shape[1]:
        raise DataError(f"{len(names)} feature names for {raw.shape[1]} columns.")
    if add_intercept and INTERCEPT in names:
        raise DataError(f"a feature is already named {INTERCEPT!r}; pass add_intercept=False or rename it.")
    X, mean, scale, notes = _design(raw, names, add_intercept=add_intercept, standardize=standardize, fit_rows=None)
    return ItemFeatures(
        names=((INTERCEPT,) if add_intercept else ()) + names,
        X=X,
        item_names=tuple(str(i) for i in item_names) if item_names is not None else (),
        intercept=add_intercept,
        mean=mean,
        scale=scale,
        notes=notes,
    )


def _match_items(ids: np.ndarray, item_names: tuple[str, ...]) -> np.ndarray:
    """Code of each feature-file id among the labelled ``item_names`` (-1 when not labelled).

    Ids match as written; an id that does not, when both it and the item names are numbers, matches numerically
    ("7.0" is item "7").
    """
    codes = pd.Index(item_names).get_indexer(ids)
    todo = codes < 0
    if todo.any():
        names_num = _to_float(np.asarray(item_names, dtype=object), decimal_comma=False)
        if np.isfinite(names_num).all() and np.unique(names_num).size == names_num.size:
            ids_num = _to_float(ids[todo], decimal_comma=False)
            found = pd.Index(names_num).get_indexer(ids_num)
            codes[np.flatnonzero(todo)] = np.where(np.isfinite(ids_num), found, -1)
    return codes


def read_features(
    source: Source,
    annotations: Annotations,
    *,
    add_intercept: bool = True,
    standardize: bool = False,
    where: str = "python",
) -> ItemFeatures:
    """Read a features CSV (``item,f1,...,fd``) and align it with ``annotations``' items (see the module doc).

    Raises `DataError` for a file without feature columns, blank item ids, duplicate items, cells that are not
    finite numbers (listing rows and columns) and labelled items without a row (listing the items). Rows for
    unlabelled items go to ``X_new``; with ``standardize`` the statistics are those of the labelled items.
    """
    try:
        table = _read_table(source, needs=_NEEDS, allow_no_rows=True, where=check_where(where))
    except DataError as exc:
        if exc.problem.startswith(("the file is empty", "the file holds only blank lines")):
            raise DataError(exc.problem, file=exc.file, row=exc.row, column=exc.column, hint=_HINT) from None
        raise
    if not len(table.cells):
        raise DataError("the file has a header row but no data rows.", file=table.file, hint=_HINT)
    item_j = _find(table, ITEM_ALIASES, "item")
    notes = list(table.notes)
    if item_j is None:
        item_j = 0
        notes.append(f"Item ids read from the first column, {table.column_name(0)!r}.")
    feat_cols = [j for j in range(len(table.header)) if j != item_j]
    if not feat_cols:
        raise DataError(
            "there are no feature columns.", file=table.file, row=1, hint="Add one column per feature after the item."
        )
    names = tuple(table.column_name(j) for j in feat_cols)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(
            f"feature column name(s) used twice: {_listing([repr(n) for n in dup])}.",
            file=table.file,
            row=1,
            hint="Give every feature column its own name.",
        )
    if add_intercept and INTERCEPT in names:
        raise DataError(
            f"a column is already named {INTERCEPT!r}.",
            file=table.file,
            row=1,
            column=INTERCEPT,
            hint="Delete it (an intercept is added for you) or rename it.",
        )
    ids = _required_ids(table, item_j, "item id")
    ids = np.asarray([str(v) for v in ids], dtype=object)
    dupe = pd.Series(ids).duplicated(keep=False).to_numpy()
    if dupe.any():
        items = list(dict.fromkeys(ids[dupe].tolist()))
        raise DataError(
            f"{_count(len(items), 'item')} {'has' if len(items) == 1 else 'have'} more than one row "
            f"({_listing([repr(i) for i in items])}; {_rows_phrase(table.rows[dupe])}).",
            file=table.file,
            column=table.column_name(item_j),
            hint="Keep one row of features per item.",
        )
    raw = np.column_stack([_to_float(table.col(j), decimal_comma=table.delimiter == ";") for j in feat_cols])
    lim = get_limits().max_abs_value
    bad_r, bad_c = np.nonzero(np.isnan(raw) | (np.abs(raw) > lim))
    if bad_r.size:
        cells = [
            f"{table.values(feat_cols[c])[r]!r} (row {table.rows[r]}, column {names[c]!r})"
            for r, c in zip(bad_r[:_SHOW], bad_c[:_SHOW])
        ]
        rows = np.unique(table.rows[bad_r])
        cols = [names[c] for c in np.unique(bad_c)]
        raise DataError(
            f"{_count(bad_r.size, 'feature cell')} {'is' if bad_r.size == 1 else 'are'} blank, not a number or "
            f"larger in size than {lim:g} (max_abs_value): "
            f"{_listing(cells, bad_r.size)}.",
            file=table.file,
            row=int(rows[0]) if rows.size == 1 else None,
            column=cols[0] if len(cols) == 1 else None,
            hint="Write every feature as a number such as 3 or 0.75 (no blanks: fill in or drop the item).",
        )
    codes = _match_items(ids, annotations.item_names)
    hit = codes[codes >= 0]
    if np.unique(hit).size != hit.size:
        twice = np.flatnonzero(np.bincount(hit, minlength=annotations.n_items) > 1)
        raise DataError(
            f"{_count(twice.size, 'item')} {'has' if twice.size == 1 else 'have'} more than one row, spelt "
            f"differently ({_listing([repr(annotations.item_names[i]) for i in twice], twice.size)}).",
            file=table.file,
            column=table.column_name(item_j),
            hint="Keep one row of features per item.",
        )
    have = np.zeros(annotations.n_items, dtype=bool)
    have[codes[codes >= 0]] = True
    if not have.all():
        missing = [annotations.item_names[i] for i in np.flatnonzero(~have)]
        raise DataError(
            f"{_count(len(missing), 'labelled item')} {'has' if len(missing) == 1 else 'have'} no row of features "
            f"({_listing([repr(m) for m in missing], len(missing))}).",
            file=table.file,
            column=table.column_name(item_j),
            hint="Add a row for every item in the label file (the ids must match the label file's item ids).",
        )
    labelled = codes >= 0
    order = np.empty(annotations.n_items, dtype=np.int64)
    order[codes[labelled]] = np.flatnonzero(labelled)
    Z, mean, scale, std_notes = _design(
        raw, names, add_intercept=add_intercept, standardize=standardize, fit_rows=order
    )
    new = np.flatnonzero(~labelled)
    if new.size:
        notes.append(
            f"{_count(new.size, 'row')} for items without labels ({_listing([repr(i) for i in ids[new]], new.size)}) "
            "kept apart for prediction (X_new)."
        )
    return ItemFeatures(
        names=((INTERCEPT,) if add_intercept else ()) + names,
        X=Z[order],
        item_names=annotations.item_names,
        intercept=add_intercept,
        mean=mean,
        scale=scale,
        new_item_names=tuple(ids[new].tolist()),
        X_new=Z[new],
        notes=tuple(notes) + std_notes,
    )
