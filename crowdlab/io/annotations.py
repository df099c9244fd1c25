"""Annotations: integer-coded crowd labels plus the names behind the codes (the data model every model reads).

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

`Annotations.from_labels` builds them from raw values; `to_long_dataframe` / `to_gold_dataframe` go back to names
for previews and export. Files are read into Annotations by :mod:`crowdlab.io.data` (`read_annotations`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io._lazy import lazy

pd = lazy("pandas")
sp = lazy("scipy.sparse")


def _names(values: Sequence | np.ndarray) -> tuple[str, ...]:
    if type(values) is tuple and set(map(type, values)) <= {str}:  # (the type test in C: 2x faster than a loop)
        return values  # already names (the readers' case: no copy of 10^6 strings)
    return tuple(map(str, values))


@dataclass(frozen=True, eq=False)
class Annotations:
    """Crowd labels as parallel integer arrays (one entry per observation).

    Shapes: ``item``, ``worker``, ``label`` / ``value``: (n_obs,); ``gold``: (n_items,); ``weight``: (n_obs,) or
    None.

    Soft votes (one mechanism for every class model): ``weight`` holds each observation's evidence, in (0, 1]. A
    judge's row "item i, label l, confidence c" becomes the observation (i, j, l) with weight c and, for every
    other class l', (i, j, l') with weight (1 - c) / (K - 1); a row of class probabilities p_<class> becomes one
    observation per class with a nonzero probability. The models read the weights through ``label_counts`` and
    ``vote_counts`` (and GLAD per observation): an observation of weight w counts as w of a label, so the
    likelihood they climb is the weighted (fractional-count) one,

        log p_w(x | theta) = sum_i log sum_k pi_k prod_{(i, j, l)} P(l | k, worker j)^w_ijl,

    which is the ordinary likelihood when every weight is 1. ``weight=None`` (hard labels) is exactly the old code
    path: nothing multiplies by a weight.

    Responses that are not classes ("can't tell"): ``response_names`` (R of them) extend the response alphabet
    beyond the K classes; a label code k >= K is the response ``response_names[k - K]``. Models with confusion
    matrices (Dawid-Skene) then have K + R rows per matrix, one column per class, so EM learns who abstains on
    which class; ``vote_counts`` counts class votes only. ``()`` (the default) is exactly the old code path.

    ``columns``: the file's own names of its (item, worker, label, gold) columns, as written in row 1 ("" for a role
    the file has no column of: a wide file's workers and labels, a missing gold column); ``()`` when the data were
    not read from a file. Exports name their columns so (an upload's ``question``/``answer`` stay so).
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
    sequence_starts: np.ndarray | None = None
    sequence_names: tuple[str, ...] = ()
    graph: object = None
    weight: np.ndarray | None = None
    response_names: tuple[str, ...] = ()
    ordinal: bool = False  # read with kind="ordinal": the classes are ratings in numeric order
    columns: tuple[str, ...] = ()

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
            object.__setattr__(self, "response_names", _names(self.response_names))
            top = len(self.class_names) + len(self.response_names)
            if n and (label.min() < 0 or label.max() >= top):
                raise DataError("label codes must lie in 0 .. n_classes - 1 (+ the non-class responses).")
        if self.value is not None:
            value = np.ascontiguousarray(self.value, dtype=np.float64)
            if value.shape != (n,):
                raise DataError("value array differs in length from the item array.")
            if not np.all(np.isfinite(value)):
                raise DataError("continuous values must be finite numbers.")
            object.__setattr__(self, "value", value)
        if n == 0:
            raise DataError("There are no labels.", hint="Add at least one row of item, worker, label.")
        if self.weight is not None:
            weight = np.ascontiguousarray(self.weight, dtype=np.float64)
            if weight.shape != (n,):
                raise DataError("weight array differs in length from the item array.")
            if self.label is None:
                raise DataError("weights (soft votes) apply to class labels, not continuous scores.")
            if not np.all(np.isfinite(weight)) or weight.min() <= 0:
                raise DataError("observation weights (soft votes) must be finite numbers above 0.")
            object.__setattr__(self, "weight", weight)
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
        if self.sequence_starts is not None:
            starts = np.ascontiguousarray(self.sequence_starts, dtype=np.int64)
            if (
                starts.ndim != 1
                or starts.size < 2
                or starts[0] != 0
                or starts[-1] != len(self.item_names)
                or (np.diff(starts) <= 0).any()
            ):
                raise DataError("sequence_starts must rise strictly from 0 to n_items (items ordered by sequence).")
            object.__setattr__(self, "sequence_starts", starts)
            names = _names(self.sequence_names) or tuple(str(i) for i in range(starts.size - 1))
            if len(names) != starts.size - 1:
                raise DataError("sequence_names needs one name per sequence.")
            object.__setattr__(self, "sequence_names", names)

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
    def is_sequential(self) -> bool:
        """Items form sequences (in order, boundaries in ``sequence_starts``)."""
        return self.sequence_starts is not None

    @property
    def n_sequences(self) -> int:
        return 0 if self.sequence_starts is None else int(self.sequence_starts.size - 1)

    @property
    def n_responses(self) -> int:
        """K + the number of responses that are not classes (``response_names``)."""
        return len(self.class_names) + len(self.response_names)

    @property
    def is_soft(self) -> bool:
        """True when the observations carry weights (soft votes, see the class docstring)."""
        return self.weight is not None

    @property
    def obs_weight(self) -> np.ndarray:
        """(n_obs,) the observations' weights: ``weight``, or ones for hard labels."""
        return np.ones(self.n_obs) if self.weight is None else self.weight

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
        M-step is ``X.T @ q`` (Traganitis & Giannakis eqs. 9 and 11), so one iteration costs O(observations x classes).
        """
        if self.is_continuous:
            raise DataError("label_counts needs class labels, not continuous scores.")
        R = self.n_responses  # K, or K + the non-class responses
        col = self.worker.astype(np.int64) * R + self.label
        X = sp.csr_matrix((self.obs_weight, (self.item, col)), shape=(self.n_items, self.n_workers * R))
        X.sum_duplicates()
        return X

    @cached_property
    def label_counts_t(self) -> sp.csc_matrix:
        """``label_counts.T`` (a CSC view of the same arrays), built once: the M-step's ``X.T @ q``."""
        return self.label_counts.T

    @cached_property
    def vote_counts(self) -> np.ndarray:
        """(n_items, K) number of votes for each class (the sum of their weights for soft votes; responses that are
        not classes are not votes)."""
        K = self.n_classes
        if self.response_names:
            cls = self.label < K
            w = None if self.weight is None else self.weight[cls]
            flat = np.bincount(
                self.item[cls].astype(np.int64) * K + self.label[cls], weights=w, minlength=self.n_items * K
            )
            return flat.reshape(self.n_items, K).astype(np.float64)
        flat = np.bincount(self.item.astype(np.int64) * K + self.label, weights=self.weight, minlength=self.n_items * K)
        return flat.reshape(self.n_items, K).astype(np.float64)

    @cached_property
    def labels_per_item(self) -> np.ndarray:
        """(N,) labels per item; soft votes: the rows read (the weights' sum, rounded), not the observations."""
        if self.weight is not None:
            return np.rint(np.bincount(self.item, weights=self.weight, minlength=self.n_items)).astype(np.int64)
        return np.bincount(self.item, minlength=self.n_items)

    @cached_property
    def labels_per_worker(self) -> np.ndarray:
        """(M,) labels per worker; soft votes: the rows read (the weights' sum, rounded)."""
        if self.weight is not None:
            return np.rint(np.bincount(self.worker, weights=self.weight, minlength=self.n_workers)).astype(np.int64)
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
        """Counts a person wants to see first (soft votes: the rows read, i.e. the total weight)."""
        n_labels = int(round(float(self.weight.sum()))) if self.is_soft else self.n_obs
        out = {
            "name": self.name,
            "items": self.n_items,
            "workers": self.n_workers,
            "labels": n_labels,
            "kind": "continuous scores" if self.is_continuous else f"{self.n_classes} classes",
            "labels per item (mean)": round(n_labels / max(self.n_items, 1), 2),
            "gold items": int(self.gold_mask.sum()),
        }
        if not self.is_continuous:
            out["classes"] = ", ".join(self.class_names)
        if self.is_soft:
            out["soft votes"] = f"{self.n_obs:,} weighted observations, total weight {self.weight.sum():,.2f}"
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


def to_long_dataframe(annotations: Annotations) -> pd.DataFrame:
    """One row per observation with names, not codes: item, worker, label (continuous: item, worker, value),
    and for soft votes each observation's ``weight``.

    Written with ``to_csv(index=False)`` it reads back (``read_annotations``) to the same codes (and weights).
    """
    a = annotations
    frame = pd.DataFrame(
        {
            "item": np.asarray(a.item_names, dtype=object)[a.item],
            "worker": np.asarray(a.worker_names, dtype=object)[a.worker],
        }
    )
    if a.is_continuous:
        frame["value"] = a.value
    else:
        frame["label"] = np.asarray(a.class_names + a.response_names, dtype=object)[a.label]  # "can't tell" too
        if a.is_soft:
            frame["weight"] = a.weight
    return frame


def to_gold_dataframe(annotations: Annotations) -> pd.DataFrame:
    """The known gold labels as a frame with columns item, label (class names, or floats for scores)."""
    a = annotations
    mask = a.gold_mask
    items = np.asarray(a.item_names, dtype=object)[mask]
    if a.gold is None:
        labels: np.ndarray = np.array([], dtype=object)
    elif a.is_continuous:
        labels = a.gold[mask]
    else:
        labels = np.asarray(a.class_names, dtype=object)[a.gold[mask]]
    return pd.DataFrame({"item": items, "label": labels})
