"""Batch EM on a Dask cluster over data partitioned by item: majority vote, Dawid-Skene, one-coin, two-coin, GLAD, MACE
(EM and VB) and IBCC, optionally semi-supervised (``known=``).

``crowdlab.engines.distributed.fit(source, method="ds")`` or ``crowdlab fit "data/*.parquet" --engine dask
[--scheduler tcp://host:8786]``.

- ``source``: a Dask DataFrame, a pandas DataFrame, a path or glob of long CSV files (each read by the one reading
  path, `crowdlab.io.readers.read_table`, with the long-file checks of `crowdlab.io.columns` and
  `crowdlab.io.values`) or of Parquet files. Columns are found by the same names as in a CSV (item/task/question,
  worker/annotator/..., label/answer/...). A null or blank id, or a null, blank or NaN-spelled label, is refused as
  the CSV reader refuses it (a `DataError` naming the column and the index of the first such row), before the
  shuffle.
- Parquet files are checked on the client before Dask reads them (`crowdlab.io.parquet`: empty, truncated or
  corrupt files, duplicate column names, nested item/worker/label columns, files of one dataset whose columns
  differ); a data page that fails while a worker reads it is named by reading the files again. A crowdlab error
  raised on a worker comes back as its own type even when ``distributed`` cut its long message (`_carried_errors`).
  ``npartitions`` is bounded (`check_npartitions`).
- Ids are factorised globally: the worker and class dictionaries (small) are computed once, ordered as
  `crowdlab.io.data.read_annotations` orders them, and sent to every partition; item names stay in their partition.
- The rows are shuffled so that every item's rows are in one partition (``by_item=True`` skips the shuffle for
  data already partitioned by item, after checking that no item is in two partitions).
- Each EM iteration is one round: one call per worker to an actor there that holds the worker's parts
  (`_Rounds`; an actor's call goes from the client to the worker and back without the scheduler, 2-3 ms against
  11-14 ms for a task on a 2-core machine): the parameters go to every worker (inside the call, or
  ``client.scatter(..., broadcast=True)`` when large); the worker runs
  `crowdlab.engines.blocks.block_round` (the E-step for the part's items, then the M-step statistics) on each part
  it holds, keeps each part's new posterior in the part, and returns the sum of its parts' expected counts
  (M x K x K), class totals and objective terms (the objective comes out of the same E-step, no second pass). The
  client adds the workers' sums in a fixed order and runs the model's ``m_step_from_stats``. The posteriors stay
  on the workers. By default the rounds are the evaluations of the EM map inside accelerated EM (SQUAREM,
  `crowdlab.engines.accel`; ``accelerate=False``: plain EM, one round an iteration).

``client``: a ``distributed.Client``; or ``scheduler``: the address of a running scheduler (its workers need
crowdlab installed, the same version); or neither: a LocalCluster on this machine (2 single-threaded workers,
in-process threads, no dashboard), closed at the end. The result (`DaskRun`) has the shape of ``cl.fit``'s:
``posteriors`` (a Dask DataFrame: item, p_<class>..., label, confidence), ``posterior_frame()`` (the same as a
pandas DataFrame in the in-memory item order), ``posterior`` / ``labels()`` (arrays in that order), ``params``,
``history()``, ``objective_history()``, ``converged``, ``stop_reason``.

Limits: the client holds the worker and class dictionaries and the (M, K, K) statistics; each partition holds its
rows and its items' posteriors; ``posterior_frame()`` brings every item's posterior to the client. Not supported:
gold, hard EM, other starts than majority vote, the scores/sequence/network/feature models. GLAD keeps each item's
difficulty in its part and runs its E pass and 2 m_rounds passes per iteration (`crowdlab.engines.glad_blocks`).
"""

from __future__ import annotations

import glob as _glob
import logging
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from crowdlab.engines.blocks import (
    EngineData,
    EngineRun,
    Stats,
    batch_em,
    block_round,
    check_known_model,
    engine_model,
    is_ebcc,
    known_for_items,
    mv_bonus,
    read_known,
    refuse_unmatched,
    round_times,
)
from crowdlab.engines.limits import MAX_ITER
from crowdlab.engines.restarts import with_restarts
from crowdlab.errors import CrowdlabError, DataError, ModelError, require_extra
from crowdlab.io.columns import ITEM_ALIASES, LABEL_ALIASES, WORKER_ALIASES, _long_columns, _norm
from crowdlab.io.readers import Column, check_where, column_listing, count, missing_values, not_a_file, read_table
from crowdlab.io.soft import soft_vote_column, soft_votes_elsewhere
from crowdlab.io.values import (
    INFINITE_HINT,
    _check_labels_present,
    _check_sizes,
    _encode_col,
    _merge_note,
    _required_col,
    infinite_labels,
)

COLUMNS = ("item", "worker", "label")
NO_DASHBOARD = {"dashboard_address": None, "scheduler_kwargs": {"dashboard_address": ":0"}}
"""LocalCluster options: no dashboard, and the scheduler's small HTTP server on a free port (not 8787, which
another cluster on the machine may hold)."""
BROADCAST_BYTES = 1 << 20
"""Parameters whose copies (one per worker) are larger than this are scattered to every worker once per iteration;
smaller ones travel with each worker's task (a scatter costs a round trip to every worker)."""


# ---------------------------------------------------------------------- reading
def _read_csv_file(path: str, where: str = "python") -> pd.DataFrame:
    """One long CSV file through the one reading path -> a frame of str columns item, worker, label."""
    table = read_table(path, needs="a label file needs item, worker and label columns", where=where)
    item_j, worker_j, label_j, _ = _long_columns(table, None)
    items = _required_col(table, item_j, "item id")
    workers = _required_col(table, worker_j, "worker id")
    _check_labels_present(table, label_j)
    return pd.DataFrame(
        {
            "item": items.array().astype(str),
            "worker": workers.array().astype(str),
            "label": table.col(label_j).array().astype(str),
        }
    )


def _alias_columns(columns, file: str) -> dict[str, str]:
    """{original column name: item/worker/label} by the accepted aliases."""
    out = {}
    for role, aliases in (("item", ITEM_ALIASES), ("worker", WORKER_ALIASES), ("label", LABEL_ALIASES)):
        hits = [c for c in columns if _norm(str(c)) in aliases]
        if len(hits) != 1:
            found = column_listing([str(c) for c in columns])
            problem = f"no {role} column found" if not hits else f"more than one column could be the {role} column"
            raise DataError(
                f"{problem}; the columns are {found}.",
                file=file,
                hint=f"Name the columns item, worker and label (accepted {role} names: {', '.join(aliases)}).",
            )
        out[hits[0]] = role
    soft = soft_vote_column(list(columns))
    if soft is not None:
        raise soft_votes_elsewhere(soft, file)
    return out


def read_source(source, *, npartitions: int | None = None, where: str = "python"):
    """A Dask DataFrame with str columns item, worker, label from ``source`` (see the module docstring)."""
    return _read(source, npartitions=npartitions, where=where)[0]


def _read(source, *, npartitions: int | None = None, where: str = "python"):
    """(`read_source`'s frame, {item/worker/label: the column's name in ``source``})."""
    require_extra("dask", "crowdlab.engines.distributed (Dask)")
    import dask.dataframe as dd

    if isinstance(source, pd.DataFrame):
        source = dd.from_pandas(source, npartitions=npartitions or 2)
    if isinstance(source, str | os.PathLike | list | tuple):
        files = _expand(source)
        if all(f.lower().endswith(_PARQUET) or os.path.isdir(f) for f in files):
            source = _read_parquet(files)
        else:
            meta = pd.DataFrame({c: pd.Series([], dtype=object) for c in COLUMNS})
            ddf = dd.from_map(_read_csv_file, files, args=(where,), meta=meta, enforce_metadata=False)
            return ddf, {c: c for c in COLUMNS}
    if not hasattr(source, "npartitions"):
        raise TypeError(f"cannot read labels from {type(source).__name__}; pass a Dask/pandas DataFrame or a path.")
    names = _alias_columns(list(source.columns), "the data frame")
    ddf = source[list(names)].rename(columns=names)
    return ddf, {role: str(name) for name, role in names.items()}


def _role_columns(names, file: str) -> list[str]:
    """The columns of a Parquet file that Dask reads: those named as an item, worker or label column."""
    aliases = set(ITEM_ALIASES) | set(WORKER_ALIASES) | set(LABEL_ALIASES)
    return [n for n in names if _norm(str(n)) in aliases]


def _read_parquet(files: list[str]):
    """``dd.read_parquet`` of checked files: each opens (not empty, truncated or corrupt), its columns have
    distinct names and no nested item, worker or label column, and all files have the same columns."""
    import dask.dataframe as dd

    from crowdlab.io.parquet import check_dataset, find_unreadable

    check_dataset(files, _role_columns)
    try:
        return dd.read_parquet(files)
    except (ValueError, OSError) as exc:  # Arrow's errors are ValueError / OSError subclasses
        if isinstance(exc, CrowdlabError | FileNotFoundError | PermissionError):
            raise
        found = find_unreadable(files)
        raise (found or DataError(f"Dask cannot read these Parquet files ({exc}).", file=", ".join(files))) from None


@contextmanager
def _carried_errors(source):
    """Errors raised on the cluster, said as the reader says them: a `CrowdlabError` whose message was too long
    for ``distributed`` (which sends ``Exception('Long error message', type, text)`` instead, and the CLI printed a
    traceback) is raised again as its own type with its text cut short; an Arrow error from reading a Parquet
    data page names the file that cannot be read."""
    try:
        yield
    except CrowdlabError:
        raise
    except Exception as exc:
        args = exc.args
        if len(args) == 3 and args[0] == "Long error message" and isinstance(args[1], type):
            if issubclass(args[1], CrowdlabError):
                raise _shortened(args[1], str(args[2])) from None
        if isinstance(exc, OSError | ValueError) and isinstance(source, str | os.PathLike | list | tuple):
            from crowdlab.io.parquet import find_unreadable

            files = [f for f in _expand(source) if f.lower().endswith(_PARQUET) or os.path.isdir(f)]
            found = find_unreadable(files) if files else None
            if found is not None:
                raise found from None
        raise


SHORT_ERROR = 2000
"""The most characters of an error's text carried back from a worker when ``distributed`` cut it."""


def _shortened(cls: type, text: str) -> CrowdlabError:
    """``cls`` (a CrowdlabError subclass) with ``text`` cut at a comma near `SHORT_ERROR` characters."""
    if len(text) > SHORT_ERROR:
        cut = text.rfind(", ", 0, SHORT_ERROR)
        text = text[: cut if cut > SHORT_ERROR // 2 else SHORT_ERROR] + " ... (the rest of this long message is cut)"
    if issubclass(cls, DataError):
        return DataError(text)
    try:
        return cls(text)
    except TypeError:
        return CrowdlabError(text)


def _expand(source) -> list[str]:
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    files: list[str] = []
    for s in items:
        s = str(s)
        hits = sorted(_glob.glob(s)) if any(ch in s for ch in "*?[") else [s]
        files.extend(hits)
    if not files:
        raise DataError("no file matches this pattern.", file=str(source), hint="Check the path or the glob.")
    for f in files:
        if os.path.isfile(f) or (os.path.isdir(f) and _holds_parquet(f)):
            continue
        folder = " A folder is read only as a Parquet dataset (.parquet files)." if os.path.isdir(f) else ""
        raise not_a_file(f, hint=folder)
    return files


_PARQUET = (".parquet", ".pq", ".parq")


def _holds_parquet(folder: str) -> bool:
    """Whether the folder (a Parquet dataset) has a Parquet file in it or below."""
    return any(f.is_file() for f in Path(folder).rglob("*") if f.name.lower().endswith(_PARQUET))


SUMMARY_META = pd.DataFrame(
    {"what": pd.Series([], dtype=object), "value": pd.Series([], dtype=object), "n": pd.Series([], dtype=np.int64)}
)


def _summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One partition before the shuffle as rows (what, value, n): for each column with missing cells, ("missing
    <column>", the index of the first, their number). Missing: a null or blank id, a null, blank or NaN-spelled
    label (`crowdlab.io.readers`). And ("rows", "", its number of rows)."""
    rows = pd.DataFrame({"what": ["rows"], "value": [""], "n": [len(frame)]}).astype(SUMMARY_META.dtypes.to_dict())
    return pd.concat([_missing_frame([_local_part(frame, False).summary]), rows], ignore_index=True)


MAX_PARTITIONS = 10_000
"""The most partitions after the shuffle: each is a task in every EM round and in the shuffle's graph (10^6
partitions of 4,212 rows ran for minutes without ending)."""
MIN_ROWS_PER_PARTITION = 16
"""The fewest rows a partition may hold on average: each partition's task costs milliseconds of scheduling in every
round, far more than the E-step of a few rows (1,000 partitions of the 4,212 rows of bluebirds ran past 200 s)."""


def check_npartitions(npartitions, n_rows: int | None = None, where: str = "python") -> int | None:
    """``npartitions`` refused (naming the option and the valid range) unless it is a whole number from 1 to
    `MAX_PARTITIONS` and, when ``n_rows`` is known, to one partition per `MIN_ROWS_PER_PARTITION` rows; None stays
    None."""
    if npartitions is None:
        return None
    name = "--npartitions" if where == "cli" else "npartitions"
    top = MAX_PARTITIONS if n_rows is None else max(1, min(MAX_PARTITIONS, int(n_rows) // MIN_ROWS_PER_PARTITION))
    if isinstance(npartitions, float) and npartitions.is_integer():  # 1e6 means a million
        npartitions = int(npartitions)
    whole = isinstance(npartitions, int | np.integer) and not isinstance(npartitions, bool)
    if not whole or not 1 <= npartitions <= top:
        why = ""
        if n_rows is not None and top < MAX_PARTITIONS:
            why = f"the data has {n_rows:,} rows, at least {MIN_ROWS_PER_PARTITION:,} a partition; "
        shown = f"{npartitions:,}" if whole and abs(npartitions) < 10**15 else f"{npartitions!r}"
        raise ModelError(
            f"{name} must be a whole number from 1 to {top:,} ({why}each partition is a task in every round), "
            f"not {shown}."
        )
    return int(npartitions)


def _refuse_missing(summary: pd.DataFrame, columns: dict[str, str], file: str) -> None:
    """The DataError of the first column (item, worker, label) with missing cells, as the CSV reader words it."""
    for col, what, hint in (
        ("item", "a blank or NaN item id", "Fill in the item id, or delete the row(s)."),
        ("worker", "a blank or NaN worker id", "Fill in the worker id, or delete the row(s)."),
        (
            "label",
            "a blank or NaN label",
            "Fill in those labels, or delete the rows (a long file lists only the labels that were given). "
            "If a spelling such as 'None' or 'NA' is a real class, give it another name.",
        ),
    ):
        hits = summary[summary["what"] == f"missing {col}"]
        if len(hits):
            n = int(hits["n"].sum())
            first = hits["value"].iloc[0]
            at = f"at index {first}" if n == 1 else f"the first at index {first}"
            raise DataError(
                f"{count(n, 'row')} {'has' if n == 1 else 'have'} {what} ({at}).",
                file=file,
                column=columns.get(col, col),
                hint=hint,
            )


# ---------------------------------------------------------------------- partitions
def _text(values, column: str):
    """A column of a partition as an Arrow (large) string array, nulls kept (numbers written as text); a nested
    column (list, struct, map) is refused as the streaming reader refuses it."""
    import pyarrow as pa

    from crowdlab.io.parquet import as_text

    arr = values.array if hasattr(values, "array") else values
    try:
        if not isinstance(arr, pa.Array | pa.ChunkedArray):  # a pandas column; an Arrow one is used as it is
            arr = pa.array(arr, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # mixed objects: each as its text
        arr = pa.array([None if v is None or (isinstance(v, float) and v != v) else str(v) for v in arr])
    return as_text(arr, column)


@dataclass
class LocalPart:
    """One partition's rows coded by its own dictionaries (the first pass): the distinct names of each column in
    the order of their first row (Arrow arrays), the rows' codes into them, and what the client needs to build
    the global dictionaries and refuse missing cells (``summary``)."""

    items: object
    item: np.ndarray
    worker: np.ndarray
    label: np.ndarray
    summary: dict


def _parquet_part(path: str, names: dict[str, str]):
    """One Parquet file's item, worker and label columns as an Arrow table (``names``: the file's column name ->
    item/worker/label), read by pyarrow straight into Arrow arrays: no pandas frame on the way."""
    import pyarrow.parquet as pq

    have = pq.read_schema(path).names
    if any(n not in have for n in names):
        _alias_columns(have, path)  # names what is missing or ambiguous in this file
        names = {n: role for n, role in _alias_columns(have, path).items()}
    table = pq.read_table(path, columns=list(names))
    return table.rename_columns([names[c] for c in table.column_names])


def _parquet_files(source) -> list[str] | None:
    """The files of ``source`` when it names Parquet files only (not folders), else None."""
    if not isinstance(source, str | os.PathLike | list | tuple):
        return None
    files = _expand(source)
    return files if all(f.lower().endswith(_PARQUET) and os.path.isfile(f) for f in files) else None


def _local_part(frame, hashes: bool) -> LocalPart:
    import pyarrow.compute as pc

    coded = {}
    missing = {}
    for col in COLUMNS:
        arr = _text(frame[col], col)
        enc = pc.dictionary_encode(arr, null_encoding="encode")
        codes = np.asarray(enc.indices, dtype=np.int32)
        uniq = enc.dictionary
        # the item names stay Arrow strings (only their hashes leave the partition, with by_item): no Python str
        # per item
        text = None if col == "item" else np.asarray(uniq.to_numpy(zero_copy_only=False), dtype=object)
        bad = np.asarray(pc.fill_null(pc.equal(uniq, ""), True), dtype=bool)
        if col == "label":
            bad = bad | missing_values(np.where(bad, "", text).astype(str))
        coded[col] = (codes, uniq, text, bad)
        if bad.any():
            rows = np.flatnonzero(bad[codes])
            at = frame.index[rows[0]] if hasattr(frame, "index") else rows[0]  # an Arrow table: the file's row
            missing[col] = (str(at), int(rows.size))
    i_codes, i_uniq, _, _ = coded["item"]
    w_codes, _, w_text, _ = coded["worker"]
    l_codes, _, l_text, l_bad = coded["label"]
    summary = {
        "workers": w_text,
        "worker_rows": np.bincount(w_codes, minlength=w_text.size),
        "labels": l_text[~l_bad] if l_bad.any() else l_text,
        "label_rows": np.bincount(l_codes, minlength=l_text.size)[~l_bad],
        "missing": missing,
        "n_items": len(i_uniq),
    }
    if hashes:
        from crowdlab.models.ebcc import item_keys

        summary["item_hashes"] = item_keys(i_uniq)  # the names' 64-bit keys (EBCC's start draws from the same)
    return LocalPart(i_uniq, i_codes, w_codes, l_codes, summary)


def _part_summary(lp: LocalPart) -> dict:
    return lp.summary


@dataclass
class Part:
    """One partition as a block of the engines (`crowdlab.engines.blocks.Block`): item codes local to the partition
    (names in ``items``, an Arrow string array), worker and label codes global. ``cur`` / ``prev``: (q, hard labels
    or None) of the partition's last two rounds, kept here on the worker that holds the part (the round's task is
    pinned to it and changes the part in place), so that a round sends only the statistics back."""

    items: object
    block: object
    known: np.ndarray | None = None  # semi-supervised EM: each item's fixed class, -1 where unknown
    matched: np.ndarray | None = None  # the indices of the known labels whose item is in this partition
    cur: tuple | None = None
    prev: tuple | None = None


def _to_block(
    lp: LocalPart, wmap: np.ndarray, lmap: np.ndarray, M: int, K: int, known=None, codes=None, cells: int = 0
) -> Part:
    from crowdlab.engines.blocks import make_block
    from crowdlab.models.kernels import load_for

    _tune_malloc()
    load_for(cells)  # the compiled kernels loaded while preparing, not in the first round
    n = len(lp.items)
    fixed = matched = None
    if known is not None:
        fixed, matched = known_for_items(lp.items, known, codes)
    if not lp.item.size:
        return Part(lp.items, None, fixed, matched)
    block = make_block(lp.item, wmap[lp.worker], lmap[lp.label], n, M, K)
    block.label_counts_t  # noqa: B018  the count matrix built here, in the preparation, not in the first round
    return Part(lp.items, block, fixed, matched)


def _part_matched(part: Part) -> np.ndarray:
    return part.matched


_MALLOC_TUNED = False
MMAP_THRESHOLD = 32 << 20  # bytes: numpy temporaries up to this size come from the heap, not a fresh mmap each
TRIM_THRESHOLD = 64 << 20  # bytes of free heap a worker keeps before handing memory back to the system


def _tune_malloc() -> bool:
    """Undo, in this worker process, what distributed's nanny's ``MALLOC_TRIM_THRESHOLD_=65536`` does to numpy.

    Setting any glibc malloc threshold turns off glibc's dynamic mmap threshold, so every allocation over 128 kB
    (each (n, K) temporary of a block's E-step, each (M, K, K) sum) is a fresh ``mmap`` whose pages fault in on
    first touch, and is unmapped when freed: a block round ran 2.5-3.5x slower in a nanny's worker than the same
    round in a plain process (2-core machine, 10^6 labels in 16 blocks: 70-90 ms instead of 22-36 ms). Here the
    thresholds are raised once per process (``mallopt``: mmap above 32 MB, trim above 64 MB of free heap); only
    in a process started with that variable (a nanny's worker), only on glibc. Returns whether it changed them."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED or "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        return False
    _MALLOC_TUNED = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
            libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        )
    except (OSError, AttributeError):  # not glibc
        return False


def _worker_round(parts: list[Part], model, params, M: int, K: int, mode: str, bonus, cells: int) -> Stats:
    """One round on one worker: `block_round` on each of its parts in turn (each part keeps its new posterior and
    the one before), and the sum of their statistics in the parts' order: one task and one small message per
    worker and round. ``cells``: N x K of the whole data set, which decides whether the compiled kernels pay for
    loading (`crowdlab.models.kernels.load_for`), as in memory."""
    from crowdlab.models.ebcc import item_keys
    from crowdlab.models.kernels import load_for

    _tune_malloc()
    load_for(cells)
    total = None
    for part in parts:
        n = len(part.items)
        keys = item_keys(part.items) if mode == "votes" and is_ebcc(model) else None  # EBCC's split
        q, hard, st = block_round(
            part.block, model, params, mode, bonus, part.known, n_items=n, M=M, K=K, split_keys=keys
        )
        part.prev, part.cur = part.cur, (q, hard)
        total = st if total is None else total + st
    return total


class _Rounds:
    """One worker's share of the rounds, as a Dask actor holding that worker's parts: a round is one call to it,
    which goes from the client straight to the worker (an actor's call does not pass through the scheduler): 2-3
    ms there and back on a 2-core machine, against 11-14 ms for a task submitted and gathered, in every round."""

    def __init__(self, parts: list[Part]) -> None:
        from distributed import get_worker

        self.parts = parts  # the worker's own Part objects (the round changes them in place, as a task would)
        self.worker = get_worker()

    def call(self, fn, *args):
        """``fn(parts, *args)`` on this worker's parts (GLAD's passes, `crowdlab.engines.glad_blocks.DaskOps`)."""
        return fn(self.parts, *args)

    def round(self, model, params, key, M: int, K: int, mode: str, bonus, cells: int) -> Stats:
        """`_worker_round` on this worker's parts; ``key``: the parameters' key when they were broadcast to every
        worker (large parameters are sent once per worker, not in each call)."""
        if key is not None:
            params = self.worker.data[key]
        return _worker_round(self.parts, model, params, M, K, mode, bonus, cells)


def _round_actor(client, addr: str, group: list):
    """The `_Rounds` actor of the worker at ``addr`` (its parts ``group`` are resolved there, on that worker)."""
    return client.submit(_Rounds, group, actor=True, pure=False, **_pinned(addr)).result()


def _part_frame(part: Part, which: str, class_names: tuple[str, ...]) -> pd.DataFrame:
    q, hard = getattr(part, which)
    lab = hard if hard is not None else np.argmax(q, axis=1).astype(np.int32) if q.size else np.zeros(0, np.int32)
    frame = pd.DataFrame({"item": pd.Series(part.items.to_numpy(zero_copy_only=False), dtype=object)})
    for k, c in enumerate(class_names):
        frame[f"p_{c}"] = q[:, k]
    frame["label"] = np.asarray(class_names, dtype=object)[lab]
    frame["confidence"] = q[np.arange(q.shape[0]), lab] if q.size else np.zeros(0)
    return frame


def _pinned(addr: str | None) -> dict:
    """``submit``'s options that keep a task on the worker ``addr`` (none when there is no address)."""
    return {"workers": [addr], "allow_other_workers": False} if addr else {}


def _by_worker(client, parts: list) -> list[tuple[str, list]]:
    """The parts grouped by the worker that holds each (in the parts' order), as [(address, [futures])]."""
    who = client.who_has(parts)
    groups: dict[str, list] = {}
    for f in parts:
        holders = sorted(who.get(f.key, ()))
        groups.setdefault(holders[0] if holders else "", []).append(f)
    return list(groups.items())


def _nunique(s: pd.Series) -> int:
    return s.nunique()


_ARROW = ("OSError(", "ArrowInvalid(", "ArrowIOError(", "ArrowNotImplementedError(", "ArrowTypeError(")
_EXPECTED = (
    *(f"{cls.__name__}(" for cls in (DataError, ModelError, CrowdlabError)),
    "Exception('Long error message', <class 'crowdlab.errors.",  # one of them, too long for distributed
)


class _ExpectedFailures(logging.Filter):
    """Drops a worker's "Compute Failed" record (a task, its key and a traceback) when the task raised one of
    crowdlab's errors (a bad file): the client raises that error again as a one-line message; other failures are
    still logged. The record's fourth argument is ``repr`` of the exception (`distributed.core.error_message`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        failed = str(record.msg).startswith("Compute Failed") and len(args) > 3
        # a Parquet part Arrow cannot read: the client names the file (`_carried_errors`)
        unreadable = str(args[0] if args else "").startswith("('read_parquet-") and str(args[3]).startswith(_ARROW)
        return not (failed and (str(args[3]).startswith(_EXPECTED) or unreadable))


@contextmanager
def _quiet_expected_failures():
    """`_ExpectedFailures` on the workers of this process (the default LocalCluster's threads) while fitting."""
    logger = logging.getLogger("distributed.worker")
    quiet = _ExpectedFailures()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


@contextmanager
def _client(client=None, scheduler: str | None = None):
    """The client to use, and whether this call owns (and closes) it."""
    if client is not None:
        yield client, False
        return
    from distributed import Client, LocalCluster

    if scheduler:
        c = Client(scheduler)
        try:
            yield c, True
        finally:
            c.close()
        return
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **NO_DASHBOARD)
    c = Client(cluster)
    try:
        yield c, True
    finally:
        c.close()
        cluster.close()


# ---------------------------------------------------------------------- the result
class DaskRun(EngineRun):
    """`crowdlab.engines.blocks.EngineRun` whose posteriors live in partitions: ``posteriors`` is a Dask DataFrame
    (item, p_<class>..., label, confidence); ``posterior_frame()`` computes it to pandas in the in-memory item
    order, and ``posterior`` / ``labels()`` / ``data.item_names`` follow that order."""

    def __init__(self, posteriors, frame: pd.DataFrame | None, **kw):
        self.posteriors = posteriors
        super().__init__(**kw)
        self._frame = frame

    def posterior_frame(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = _in_memory_order(self.posteriors.compute())
        return self._frame

    @property
    def data(self) -> EngineData:
        self._fill()
        return self._data

    @data.setter
    def data(self, value: EngineData) -> None:
        self._data = value

    def _fill(self) -> None:
        if getattr(self, "_q", None) is None and hasattr(self, "_frame"):
            f = self.posterior_frame()
            classes = self._data.class_names
            self._data.item_names = tuple(f["item"].tolist())
            self._q = f[[f"p_{c}" for c in classes]].to_numpy(dtype=np.float64)
            self._labels = pd.Index(classes).get_indexer(f["label"]).astype(np.int32)

    @property
    def posterior(self) -> np.ndarray:
        self._fill()
        return self._q

    @property
    def current(self):
        self._fill()
        return super().current

    def labels(self, snap=None) -> np.ndarray:
        self._fill()
        return self._labels


def _in_memory_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted as `crowdlab.io.data.read_annotations` codes items (numeric order when all ids are numbers)."""
    codes, uniq = pd.factorize(frame["item"].to_numpy(dtype=object))
    names, rank = _encode_col(Column(codes.astype(np.int32), np.asarray(uniq, dtype=object)))
    return frame.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)


# ---------------------------------------------------------------------- fitting
def fit(
    source,
    method: str = "ds",
    *,
    client=None,
    scheduler: str | None = None,
    npartitions: int | None = None,
    by_item: bool = False,
    prior: float = 0.0,
    tol: float = 1e-8,
    max_iter: int = MAX_ITER,
    where: str = "python",
    progress: Callable[[int, int], None] | None = None,
    known=None,
    model_options: dict | None = None,
    restarts: int | None = None,
    accelerate: bool = True,
) -> DaskRun:
    """Fit ``method`` ("mv", "ds", "one_coin", "two_coin", "mace", "mace_vb", "ibcc") by batch EM (or variational
    Bayes) on a Dask cluster (module docstring).

    ``npartitions``: partitions after the shuffle by item (default: as many as the input has). ``by_item``: the
    input's partitions already hold whole items (no shuffle; checked). ``known``: semi-supervised EM, a mapping
    item -> class or the path of a CSV file with item and label columns (sent to every partition, which keeps the
    classes of its own items). ``model_options``: the model's constructor options (e.g. ``class_prior``).

    ``accelerate`` (default True, as ``cl.fit``): SQUAREM around the EM map (`crowdlab.engines.accel`; each
    evaluation of the map is one round of calls to the workers, GLAD's its E pass and M-step passes), as
    `crowdlab.engines.stream.fit_file` does; ``accelerate=False``: plain EM, equal to ``cl.fit(...,
    accelerate=False)`` to 1e-8.
    """
    again = dict(client=client, scheduler=scheduler, npartitions=npartitions, by_item=by_item, prior=prior, tol=tol)
    again |= dict(max_iter=max_iter, where=where, progress=progress, known=known, accelerate=accelerate)
    best = with_restarts(lambda **kw: fit(source, **kw), method, restarts, model_options, again)  # EBCC: 8 seeds
    if best is not None:
        return best
    require_extra("dask", "crowdlab.engines.distributed.fit (batch EM on a Dask cluster)")
    from dask import delayed
    from distributed import wait

    model = engine_model(method, prior, model_options)
    check_where(where)
    check_npartitions(npartitions, where=where)
    check_known_model(model, known)
    known = read_known(known, where)
    import dask

    t0 = time.perf_counter()
    files = _parquet_files(source) if by_item else None  # a missing file fails here
    if files:  # no shuffle: each file is a partition, read by pyarrow in its own task (no pandas frame)
        import pyarrow.parquet as pq

        from crowdlab.io.parquet import check_dataset

        require_extra("dask", "crowdlab.engines.distributed (Dask)")
        check_dataset(files, _role_columns)  # the same checks as dask's path (`_read_parquet`)
        names = _alias_columns(pq.read_schema(files[0]).names, files[0])
        ddf, columns = None, {role: str(n) for n, role in names.items()}
    else:
        ddf, columns = _read(source, npartitions=npartitions, where=where)  # lazy; a missing file fails here
    file = str(source) if isinstance(source, str | os.PathLike) else "the data frame"
    # task-based shuffles (value counts, rows by item): no p2p extension needed on the scheduler
    with (
        _client(client, scheduler) as (c, owned),
        dask.config.set({"dataframe.shuffle.method": "tasks"}),
        _quiet_expected_failures(),
        _carried_errors(source),
    ):
        if not by_item:
            # the missing cells are found (and named by their index) before the shuffle moves the rows
            summary = c.compute(ddf.map_partitions(_summary, meta=SUMMARY_META)).result()
            _refuse_missing(summary, columns, file)
            check_npartitions(npartitions, int(summary.loc[summary["what"] == "rows", "n"].sum()), where)
            ddf = ddf.shuffle(on="item", npartitions=npartitions or ddf.npartitions)
        # first pass: each partition coded by its own dictionaries, kept on its worker; the client gets the
        # distinct names and counts (and, with by_item, a hash of each item name to check the promise)
        pieces = [delayed(_parquet_part)(f, names) for f in files] if files else ddf.to_delayed()
        # the partitions (files by item) dealt round-robin to the workers and kept there, so that every worker gets
        # the same share of the rounds' work (the scheduler's placement and its work stealing need not balance them)
        addrs = sorted(c.scheduler_info(n_workers=-1)["workers"]) if by_item else []
        tasks = [delayed(_local_part)(d, by_item) for d in pieces]
        if len(addrs) > 1:
            local = [
                c.compute(t, workers=[addrs[i % len(addrs)]], allow_other_workers=False) for i, t in enumerate(tasks)
            ]
        else:
            local = c.compute(tasks)
        sums = c.gather([c.submit(_part_summary, lp, pure=False) for lp in local])
        _refuse_missing(_missing_frame(sums), columns, file)
        n_obs = int(sum(int(s["worker_rows"].sum()) for s in sums))
        if not n_obs:
            raise DataError("there are no labels (no rows).", file=file, hint="Add the labels, one row per label.")
        if by_item:
            _check_hashes([s["item_hashes"] for s in sums])
        w_codes, w_uniq = pd.factorize(np.concatenate([s["workers"] for s in sums]))
        w_rows = np.bincount(w_codes, weights=np.concatenate([s["worker_rows"] for s in sums]), minlength=w_uniq.size)
        wcol = Column(np.arange(w_uniq.size, dtype=np.int32), np.asarray(w_uniq, dtype=object))
        worker_names, worker_codes = _encode_col(wcol)
        # the labels in the order of their first row (partitions in input order), so that of the spellings of one
        # number ("1", "1.0") the class is named by the first written, as `crowdlab.io.data.read_annotations` does
        l_codes, uniq = pd.factorize(np.concatenate([s["labels"] for s in sums]))
        label_rows = np.bincount(l_codes, weights=np.concatenate([s["label_rows"] for s in sums]), minlength=uniq.size)
        lcol = Column(np.arange(uniq.size, dtype=np.int32), np.asarray(uniq, dtype=object))
        class_names, label_codes = _encode_col(lcol, merge_numbers=True)
        infinite = infinite_labels(np.asarray(class_names, dtype=object))
        if infinite.any():  # as the in-memory reader and the stream refuse it (issue 42: read as a class)
            spelled = ", ".join(repr(str(v)) for v in np.asarray(class_names, dtype=object)[infinite])
            raise DataError(
                f"the labels hold an infinite number ({spelled}) among numeric labels.", file=file, hint=INFINITE_HINT
            )
        if len(class_names) < 2:
            raise DataError(
                f"all {int(n_obs):,} labels are the same class ({class_names[0]!r}); EM needs at least two classes.",
                file=file,
            )
        _check_sizes(file, where, workers=len(worker_names), classes=len(class_names))
        M, K = len(worker_names), len(class_names)
        if getattr(model.info, "binary_only", False) and K != 2:
            raise ModelError(f"{model.info.title} is for two classes; this data has {K}.")
        cells = int(sum(s_["n_items"] for s_ in sums)) * K
        labels_per_worker = np.zeros(M, dtype=np.int64)
        labels_per_worker[worker_codes] = w_rows.astype(np.int64)
        class_totals = np.bincount(label_codes, weights=label_rows, minlength=K)
        # second pass: each partition's own codes mapped to the global ones (a small map per partition)
        kcodes = None
        if known is not None:
            from crowdlab.engines.blocks import known_class_codes

            kcodes = known_class_codes(known, class_names)
        parts, wo, lo = [], 0, 0
        home = [addrs[i % len(addrs)] for i in range(len(local))] if len(addrs) > 1 else [None] * len(local)
        for lp, s_, addr in zip(local, sums, home):
            nw, nl = s_["workers"].size, s_["labels"].size
            parts.append(
                c.submit(
                    _to_block,
                    lp,
                    worker_codes[w_codes[wo : wo + nw]],
                    _label_map(s_, label_codes, l_codes, lo),
                    M,
                    K,
                    known,
                    kcodes,
                    cells,
                    pure=False,
                    **_pinned(addr),
                )
            )
            wo, lo = wo + nw, lo + nl
        del local
        if known is not None:
            hits = c.gather([c.submit(_part_matched, p, pure=False) for p in parts])
            refuse_unmatched(known, np.unique(np.concatenate([np.zeros(0, np.int64), *hits])))
        bonus = mv_bonus(class_totals)
        state = {"agree": None, "rounds": 0}
        wait(parts)
        groups = _by_worker(c, parts)
        from crowdlab.models.glad import GLAD

        rounds = [_round_actor(c, addr, group) for addr, group in groups]  # one actor per worker
        t1 = time.perf_counter()

        starts = state["starts"] = []

        def do_round(params, mode: str) -> Stats:
            starts.append(time.perf_counter())
            p, key = params, None
            if params is not None and _nbytes(params) * len(groups) > BROADCAST_BYTES:
                # once to every worker, not once per call; under a key of its own (hash=False): a content-hashed
                # key is shared by a later round whose parameters are equal (accelerated EM evaluates some twice),
                # and the release of the earlier round's future could then delete the data the new round reads
                p = c.scatter(params, broadcast=True, hash=False)
                key = p.key
            calls = [a.round(model, None if key else p, key, M, K, mode, bonus, cells) for a in rounds]
            total = None
            for call in calls:  # summed in the workers' fixed order
                st = call.result()
                total = st if total is None else total + st
            del p
            state["agree"] = total.agree
            state["rounds"] += 1
            return total

        em_kw = dict(tol=tol, max_iter=max_iter, progress=progress, accelerate=accelerate, n_obs=n_obs)
        if isinstance(model, GLAD):  # per-item difficulties kept in the parts: its own driver
            out, state["rounds"] = _fit_glad(c, rounds, parts, model, sums, M, K, em_kw)
            out.extra = False  # the parts' reported posterior is in ``cur`` (`DaskOps.finish`)
        else:
            out = batch_em(model, do_round, **em_kw)
        t2 = time.perf_counter()
        rounds.clear()  # the actors go with their handles
        if known is not None:  # what the outputs report (set after the rounds: the tasks need not carry it)
            model.with_known({i: class_names[k] for i, k in zip(known.items.tolist(), kcodes.tolist())})
        which = "prev" if out.extra else "cur"
        frames = [c.submit(_part_frame, part, which, class_names, pure=False) for part in parts]
        meta = pd.DataFrame(
            {"item": pd.Series([], dtype=object), **{f"p_{k}": pd.Series([], dtype=float) for k in class_names}}
        ).assign(label=pd.Series([], dtype=object), confidence=pd.Series([], dtype=float))
        import dask.dataframe as dd

        if owned:  # the cluster closes with this call: bring the posteriors home first
            frame = _in_memory_order(pd.concat(c.gather(frames), ignore_index=True))
            posteriors = dd.from_pandas(frame, npartitions=max(len(frames), 1))
        else:
            frame = None
            posteriors = dd.from_delayed(frames, meta=meta, verify_meta=False)
        notes = tuple(_merge_note(lcol, class_names))
        data = EngineData((), worker_names, class_names, labels_per_worker, int(n_obs), Path(file).stem, notes)
        run = DaskRun(
            posteriors,
            frame,
            data=data,
            model=model,
            snapshots=out.snapshots,
            q=None,
            hard_labels=None,
            tol=tol,
            max_iter=max_iter,
            engine="dask",
            violations=out.violations,
            agree=state["agree"],
            outcome=out,
        )
        if owned:
            run._fill()
        run.timings = {"read_s": t1 - t0, "em_s": t2 - t1, "rounds": state["rounds"], "partitions": len(parts)}
        if run.acceleration is not None:
            run.acceleration.passes = int(state["rounds"])
        run.timings |= round_times(starts, t2)
        return run


def _fit_glad(c, rounds, parts, model, sums, M: int, K: int, em_kw: dict):
    """GLAD through `crowdlab.engines.glad_blocks.glad_em` with the parts as blocks; the last parameters' beta
    put in the in-memory item order. (its Outcome, the passes over the parts)"""
    from dataclasses import replace

    from crowdlab.engines.glad_blocks import DaskOps, glad_em

    N = int(sum(s["n_items"] for s in sums))
    ops = DaskOps(rounds, model, N, M, K, int(em_kw["n_obs"]))  # the compiled passes as the in-memory fit's
    out = glad_em(model, ops, M, K, **em_kw)
    snaps = out.snapshots
    ops.finish()
    got = c.gather([c.submit(_part_items_beta, p, pure=False) for p in parts])
    items = np.concatenate([np.zeros(0, dtype=object), *(g[0] for g in got)])
    beta = np.concatenate([np.zeros(0), *(g[1] for g in got)])
    codes, uniq = pd.factorize(items)
    _, rank = _encode_col(Column(codes.astype(np.int32), np.asarray(uniq, dtype=object)))
    last = snaps[-1]
    last.params = replace(last.params, beta=beta[np.argsort(rank, kind="stable")])
    return out, ops.passes


def _part_items_beta(part) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(part.items.to_numpy(zero_copy_only=False), dtype=object), np.exp(part.glad["b"])


def _nbytes(params) -> int:
    return sum(getattr(v, "nbytes", 0) for v in vars(params).values()) if hasattr(params, "__dict__") else 0


def _label_map(summary: dict, label_codes: np.ndarray, l_codes: np.ndarray, offset: int) -> np.ndarray:
    """A partition's local label code -> the global class code."""
    n = summary["labels"].size  # every label is a class here: a missing one was refused before
    return label_codes[l_codes[offset : offset + n]].astype(np.int32)


def _missing_frame(sums: list[dict]) -> pd.DataFrame:
    rows = [(f"missing {col}", at, n) for s in sums for col, (at, n) in s["missing"].items()]
    return pd.DataFrame(rows, columns=list(SUMMARY_META.columns)).astype(SUMMARY_META.dtypes.to_dict())


def _check_hashes(hashes: list[np.ndarray]) -> None:
    """Raise when an item name is in two partitions (``by_item=True`` promised otherwise): each partition's
    distinct item names are hashed (64 bits), so a repeated hash is an item in two partitions."""
    every = np.sort(np.concatenate(hashes)) if hashes else np.zeros(0, np.uint64)
    # repeats of a sorted array (np.unique on 64-bit hashes takes its hash-table path here: 100x slower than a sort)
    twice = int(np.count_nonzero(every[1:] == every[:-1]))
    if twice:
        raise DataError(
            f"by_item=True, but {twice:,} item(s) have rows in more than one partition.",
            hint="Leave by_item=False (the rows are then shuffled by item).",
        )


def _check_by_item(ddf, client) -> None:
    """Raise when an item has rows in two partitions (``by_item=True`` promised otherwise)."""
    per_part = ddf["item"].map_partitions(_nunique, meta=("item", "int64"))
    total, parts = client.gather(client.compute([ddf["item"].nunique(), per_part.sum()]))
    if int(total) != int(parts):
        raise DataError(
            f"by_item=True, but {int(parts) - int(total):,} item(s) have rows in more than one partition.",
            hint="Leave by_item=False (the rows are then shuffled by item).",
        )
