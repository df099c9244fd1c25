"""Annotations: integer-coded crowd labels plus the names behind the codes.

One observation per row of a long label file: ``item[j]`` was labelled ``label[j]`` by ``worker[j]``. Codes are
``int32`` indices into ``item_names``, ``worker_names`` and ``class_names``. Repeated (item, worker) pairs are kept
as separate observations (Dawid & Skene's observer 1 rated every patient three times).

Continuous scores (the lecture's "bad annotators" model, seed 004) keep a float ``value`` per observation instead
of a class code; ``label`` is then ``None`` and ``class_names`` is empty.

Gold is optional: ``gold[n]`` is the true class code of item ``n`` or -1 when unknown (continuous data: a float,
NaN when unknown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from crowdlab.errors import DataError

__all__ = ["Annotations"]


def _names(values: Sequence | np.ndarray) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


@dataclass(frozen=True, eq=False)
class Annotations:
    """Crowd labels as parallel integer arrays (one entry per observation).

    Shapes: ``item``, ``worker``, ``label`` / ``value``: (n_obs,); ``gold``: (n_items,).
    """

    item: np.ndarray
    worker: np.ndarray
    label: np.ndarray | None
    item_names: tuple[str, ...]
    worker_names: tuple[str, ...]
    class_names: tuple[str, ...] = ()
    value: np.ndarray | None = None
    gold: np.ndarray | None = None
    name: str = ""
    notes: tuple[str, ...] = field(default=())

    # ------------------------------------------------------------------ construction
    def __post_init__(self) -> None:
        item = np.ascontiguousarray(self.item, dtype=np.int32)
        worker = np.ascontiguousarray(self.worker, dtype=np.int32)
        object.__setattr__(self, "item", item)
        object.__setattr__(self, "worker", worker)
        object.__setattr__(self, "item_names", _names(self.item_names))
        object.__setattr__(self, "worker_names", _names(self.worker_names))
        object.__setattr__(self, "class_names", _names(self.class_names))
        n = item.shape[0]
        if worker.shape != (n,):
            raise DataError("item and worker arrays differ in length.")
        if self.label is None and self.value is None:
            raise DataError("Annotations need either class labels or continuous values.")
        if self.label is not None:
            label = np.ascontiguousarray(self.label, dtype=np.int32)
            if label.shape != (n,):
                raise DataError("label array differs in length from the item array.")
            object.__setattr__(self, "label", label)
            if n and (label.min() < 0 or label.max() >= len(self.class_names)):
                raise DataError("label codes must lie in 0 .. n_classes - 1.")
        if self.value is not None:
            value = np.ascontiguousarray(self.value, dtype=np.float64)
            if value.shape != (n,):
                raise DataError("value array differs in length from the item array.")
            if not np.all(np.isfinite(value)):
                raise DataError("continuous values must be finite numbers.")
            object.__setattr__(self, "value", value)
        if n == 0:
            raise DataError("There are no labels.", hint="Add at least one row of item, worker, label.")
        if item.min() < 0 or item.max() >= len(self.item_names):
            raise DataError("item codes must lie in 0 .. n_items - 1.")
        if worker.min() < 0 or worker.max() >= len(self.worker_names):
            raise DataError("worker codes must lie in 0 .. n_workers - 1.")
        if self.gold is not None:
            if self.is_continuous:
                gold = np.asarray(self.gold, dtype=np.float64)
            else:
                gold = np.asarray(self.gold, dtype=np.int32)
                if gold.size and (gold.min() < -1 or gold.max() >= self.n_classes):
                    raise DataError("gold codes must be -1 (unknown) or a class code.")
            if gold.shape != (len(self.item_names),):
                raise DataError("gold must have one entry per item.")
            object.__setattr__(self, "gold", gold)
        object.__setattr__(self, "notes", tuple(self.notes))

    @classmethod
    def from_labels(
        cls,
        items: Sequence,
        workers: Sequence,
        labels: Sequence,
        *,
        gold: dict | None = None,
        classes: Sequence | None = None,
        name: str = "",
    ) -> Annotations:
        """Build from raw (item, worker, label) values of any hashable type.

        Names are sorted (numerically when all of them are numbers) so codes are reproducible. ``classes`` fixes
        the class order (e.g. to include a class nobody used). ``gold`` maps item name -> class name.
        """
        item_names, item = _encode(items)
        worker_names, worker = _encode(workers)
        if classes is not None:
            class_names = _names(classes)
            index = {c: i for i, c in enumerate(class_names)}
            try:
                label = np.array([index[str(v)] for v in labels], dtype=np.int32)
            except KeyError as exc:
                raise DataError(f"label {exc.args[0]!r} is not one of the classes {class_names}.") from None
        else:
            class_names, label = _encode(labels)
        g = None
        if gold is not None:
            g = np.full(len(item_names), -1, dtype=np.int32)
            ipos = {n: i for i, n in enumerate(item_names)}
            cpos = {c: i for i, c in enumerate(class_names)}
            for k, v in gold.items():
                if str(k) in ipos and str(v) in cpos:
                    g[ipos[str(k)]] = cpos[str(v)]
        return cls(item, worker, label, item_names, worker_names, class_names, gold=g, name=name)

    # ------------------------------------------------------------------ sizes
    @property
    def n_obs(self) -> int:
        return int(self.item.shape[0])

    @property
    def n_items(self) -> int:
        return len(self.item_names)

    @property
    def n_workers(self) -> int:
        return len(self.worker_names)

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def is_continuous(self) -> bool:
        return self.label is None

    @property
    def has_gold(self) -> bool:
        if self.gold is None:
            return False
        if self.is_continuous:
            return bool(np.isfinite(self.gold).any())
        return bool((self.gold >= 0).any())

    @property
    def gold_mask(self) -> np.ndarray:
        """Boolean (n_items,): items whose gold label is known."""
        if self.gold is None:
            return np.zeros(self.n_items, dtype=bool)
        if self.is_continuous:
            return np.isfinite(self.gold)
        return self.gold >= 0

    def with_gold(self, gold: np.ndarray | None) -> Annotations:
        return replace(self, gold=gold)

    # ------------------------------------------------------------------ derived arrays (cached)
    @cached_property
    def label_counts(self) -> sp.csr_matrix:
        """Sparse (n_items, n_workers * K) count matrix X with X[n, m*K + k'] = #times worker m said k' on n.

        The EM hot paths are products with this matrix: the Dawid-Skene E-step is ``X @ log Gamma`` and the
        M-step is ``X.T @ q`` (seed 003 eqs. 9 and 11), so one iteration costs O(observations x classes).
        """
        if self.is_continuous:
            raise DataError("label_counts needs class labels, not continuous scores.")
        K = self.n_classes
        col = self.worker.astype(np.int64) * K + self.label
        X = sp.csr_matrix(
            (np.ones(self.n_obs), (self.item, col)), shape=(self.n_items, self.n_workers * K)
        )
        X.sum_duplicates()
        return X

    @cached_property
    def label_counts_T(self) -> sp.csr_matrix:
        return self.label_counts.T.tocsr()

    @cached_property
    def vote_counts(self) -> np.ndarray:
        """(n_items, K) number of votes for each class."""
        K = self.n_classes
        flat = np.bincount(self.item.astype(np.int64) * K + self.label, minlength=self.n_items * K)
        return flat.reshape(self.n_items, K).astype(np.float64)

    @cached_property
    def labels_per_item(self) -> np.ndarray:
        return np.bincount(self.item, minlength=self.n_items)

    @cached_property
    def labels_per_worker(self) -> np.ndarray:
        return np.bincount(self.worker, minlength=self.n_workers)

    @cached_property
    def value_range(self) -> tuple[float, float]:
        """(low, high) of the continuous scores."""
        if self.value is None:
            raise DataError("value_range needs continuous scores.")
        lo, hi = float(self.value.min()), float(self.value.max())
        if hi <= lo:
            hi = lo + 1.0
        return lo, hi

    # ------------------------------------------------------------------ display
    def summary(self) -> dict:
        """Counts a person wants to see first."""
        out = {
            "name": self.name,
            "items": self.n_items,
            "workers": self.n_workers,
            "labels": self.n_obs,
            "kind": "continuous scores" if self.is_continuous else f"{self.n_classes} classes",
            "labels per item (mean)": round(self.n_obs / max(self.n_items, 1), 2),
            "gold items": int(self.gold_mask.sum()),
        }
        if not self.is_continuous:
            out["classes"] = ", ".join(self.class_names)
        return out


def _encode(values: Sequence | np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """Map arbitrary values to sorted names and int32 codes (numeric order when all values are numbers)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iuf":
        uniq, codes = np.unique(arr, return_inverse=True)
        names = tuple(_fmt_number(u) for u in uniq)
        return names, codes.astype(np.int32)
    strs = np.asarray([str(v) for v in arr.tolist()], dtype=object)
    try:
        nums = np.asarray(strs, dtype=np.float64)
        uniq, codes = np.unique(nums, return_inverse=True)
        # keep the original spelling of each number
        first = {}
        for s, c in zip(strs.tolist(), codes.tolist()):
            first.setdefault(c, s)
        return tuple(first[i] for i in range(len(uniq))), codes.astype(np.int32)
    except ValueError:
        uniq, codes = np.unique(strs.astype(str), return_inverse=True)
        return tuple(str(u) for u in uniq), codes.astype(np.int32)


def _fmt_number(x) -> str:
    if isinstance(x, np.floating) and float(x).is_integer():
        return str(int(x))
    return str(x)
