"""One machine's cores for the in-memory E- and M-steps: ``n_jobs`` threads over blocks of rows.

``crowdlab.fit(data, "ds", n_jobs=2)`` (or ``Run(..., n_jobs=2)``, ``crowdlab fit ... --n-jobs 2``) runs the
three passes of a class model's iteration that grow with the data in ``n_jobs`` threads, each over its own rows:

- the E-step's sparse product ``X @ log Gamma`` (Traganitis & Giannakis eq. 9), row blocks of X;
- the E-step's row kernels (softmax, log-sum-exp, arg-max, entropy, class totals; `crowdlab.models.kernels`),
  row blocks of the log joint, each block's class totals and entropy term added in block order;
- the bound's sum of q * log joint (numpy's einsum), row blocks;
- the M-step's expected counts ``X.T @ q`` (eq. 11), blocks of items (at most ``MAX_BLOCKS``), each block's
  counts into its own (C, K) array, the arrays added in block order.

The kernels are numba functions compiled with ``nogil=True`` (the sparse ones for the data's K, a constant in the
loop), so the threads run at the same time (scipy's sparse products hold the GIL and would not). The blocks depend
on the data only, not on ``n_jobs``: every n_jobs >= 2 gives the same numbers bit for bit; n_jobs = 1 (the default,
and the app's: one student's session does not take the server's cores from the others) is the single-threaded
code, which sums the class totals, the entropy and the expected counts in another order: the same to ~1e-16
relative. Without numba, or on small data (below ``MIN_CELLS`` cells), every
n_jobs runs the single-threaded code.

A `crowdlab.engines.run.Run` keeps the threaded passes' output arrays from one step to the next and reuses one
once nothing else refers to it (`_empty`): writing into pages mapped already, not new ones the two threads fault in
at once, took n_jobs = 2 at 10^7 labels from 1.3x to 1.7x one thread (benchmarks/README.md, part 4).
"""

from __future__ import annotations

import contextvars
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

import crowdlab.models.kernels as _kernels_module
from crowdlab.errors import ModelError

BLOCK_ROWS = 1 << 15  # rows per block of the row kernels (fixed, so the sums' order does not depend on n_jobs)
MIN_CELLS = 1 << 18  # N x K below this: one thread (a thread hand-off costs more than the work)
MAX_BLOCKS = 16  # item blocks of the M-step's expected counts, each summed into its own (C, K) array
ACC_BYTES = 256 << 20  # at most this much memory for those per-block sums
_JOBS: contextvars.ContextVar[int] = contextvars.ContextVar("crowdlab_n_jobs", default=1)
_SPARES: contextvars.ContextVar[list | None] = contextvars.ContextVar("crowdlab_spares", default=None)
_POOLS: dict[int, ThreadPoolExecutor] = {}


def check_n_jobs(n_jobs: int) -> int:
    """``n_jobs`` as an int >= 1 (ModelError otherwise); -1 means every core (``os.cpu_count()``)."""
    n = int(n_jobs)
    if n == -1:
        return os.cpu_count() or 1
    if n < 1:
        raise ModelError(f"n_jobs must be >= 1 (or -1 for every core); got {n_jobs}.")
    return n


@contextmanager
def jobs(n_jobs: int, spares: list | None = None) -> Iterator[None]:
    """Run the enclosed E- and M-steps with ``n_jobs`` threads (this thread's context only). ``spares``: a list
    the caller keeps from one step to the next (one per fit), in which the threaded passes keep their output
    arrays for reuse (`_empty`); without it every pass allocates new ones."""
    token = _JOBS.set(check_n_jobs(n_jobs))
    held = _SPARES.set(spares)
    try:
        yield
    finally:
        _SPARES.reset(held)
        _JOBS.reset(token)


def n_jobs() -> int:
    return _JOBS.get()


def _pool(n: int) -> ThreadPoolExecutor:
    pool = _POOLS.get(n)
    if pool is None:
        pool = _POOLS[n] = ThreadPoolExecutor(max_workers=n, thread_name_prefix="crowdlab-em")
    return pool


def _kernels(cells: int) -> dict | None:
    """The compiled kernels when more than one thread is asked for and the work is big enough, else None."""
    if _JOBS.get() < 2 or cells < MIN_CELLS:
        return None
    from crowdlab.models.kernels import load_for, loaded

    load_for(cells)
    return loaded()


SPARE_ARRAYS = 16  # at most this many output arrays kept for reuse by one fit (see `_empty`)


def _refs(items: list, i: int) -> int:
    """The reference count of ``items[i]`` as seen from here (`_FREE_REFS` is the count of an object that only a
    list holds, measured the same way, so that what an interpreter counts or borrows is the same in both)."""
    item = items[i]
    return sys.getrefcount(item)


_FREE_REFS = _refs([object()], 0)


def _empty(shape: tuple, dtype=np.float64) -> np.ndarray:
    """An uninitialised array for a threaded pass's output. Within a fit that keeps spares (``jobs(n, spares)``:
    `crowdlab.engines.run.Run` does), an array this fit had before and nothing else refers to any more is handed
    out again when one has the shape: its pages are mapped already, where a new array's are faulted in by the
    threads as they write, and two threads of one process faulting pages in at once slow each other down (the
    threaded sparse product over 2 x 10^6 rows: 21 ms into an array used before, 27-43 ms into a new one). The
    spares are the fit's own arrays, let go with it; one iteration's worth is the most they keep unused."""
    spares = _SPARES.get()
    dtype = np.dtype(dtype)
    if spares is None:
        return np.empty(shape, dtype)
    for i in range(len(spares)):  # (no local name for the spare while it is counted)
        if spares[i].shape == shape and spares[i].dtype == dtype and _refs(spares, i) <= _FREE_REFS:
            a = spares.pop(i)
            spares.append(a)  # most recently used last
            return a
    out = np.empty(shape, dtype)
    spares.append(out)
    if len(spares) > SPARE_ARRAYS:
        del spares[: len(spares) - SPARE_ARRAYS]
    return out


def run_blocks(fn: Callable[[int, int], object], bounds: np.ndarray) -> list:
    """``fn(lo, hi)`` for each consecutive pair of ``bounds`` on the thread pool; results in block order."""
    pool = _pool(_JOBS.get())
    return list(pool.map(fn, bounds[:-1].tolist(), bounds[1:].tolist()))


def row_bounds(n: int, block: int = BLOCK_ROWS) -> np.ndarray:
    return np.unique(np.r_[np.arange(0, n, block), n]).astype(np.int64)


def nnz_bounds(indptr: np.ndarray, parts: int) -> np.ndarray:
    """Row bounds cutting a CSR matrix into ``parts`` pieces of about equal nonzeros (the output rows of each
    piece are independent, so the cut does not change the numbers)."""
    n = indptr.size - 1
    targets = np.linspace(0, int(indptr[-1]), parts + 1)
    cut = np.searchsorted(indptr, targets, side="left").clip(0, n)
    cut[0], cut[-1] = 0, n
    return np.unique(cut).astype(np.int64)


def sparse_dot(X, B: np.ndarray) -> np.ndarray | None:
    """``X @ B`` for a CSR matrix X (n, C) and a dense B (C, K) in row blocks on the pool, each row summed in the
    order of scipy's own product (the same numbers); None when one thread is to do it (the caller's scipy)."""
    n, K = X.shape[0], B.shape[1]
    if _kernels(n * K) is None:
        return None
    from crowdlab.models.kernels import sparse_kernels

    dot = sparse_kernels(K)[0]
    B = np.ascontiguousarray(B, dtype=np.float64)
    out = _empty((n, K))
    indptr, indices, data = X.indptr, X.indices, np.asarray(X.data, dtype=np.float64)
    run_blocks(lambda lo, hi: dot(indptr, indices, data, B, out, lo, hi), nnz_bounds(indptr, 4 * _JOBS.get()))
    return out


def count_blocks(n_rows: int, out_cells: int) -> int:
    """How many item blocks the M-step's ``X.T @ q`` is cut into: one (C, K) sum per block, so at most
    ``MAX_BLOCKS`` and at most ``ACC_BYTES`` of them; it depends on the data only (not on n_jobs), so the sums
    are added in the same order for every n_jobs."""
    by_rows = -(-n_rows // (BLOCK_ROWS * 2))
    by_memory = max(2, ACC_BYTES // max(8 * out_cells, 1))
    return int(max(1, min(MAX_BLOCKS, by_rows, by_memory)))


def counts_dot(data, q: np.ndarray) -> np.ndarray | None:
    """``X.T @ q`` (the expected counts, (C, K)) over blocks of items on the pool, each block into its own sum
    and the sums added in block order; None when one thread is to do it."""
    n, K = q.shape
    if _kernels(n * K) is None:
        return None
    from crowdlab.models.kernels import sparse_kernels

    scatter = sparse_kernels(K)[1]
    X = data.label_counts
    C = X.shape[1]
    q = np.ascontiguousarray(q, dtype=np.float64)
    indptr, indices, w = X.indptr, X.indices, np.asarray(X.data, dtype=np.float64)
    bounds = nnz_bounds(indptr, count_blocks(n, C * K))
    sums = np.zeros((bounds.size - 1, C, K))

    def block(lo: int, hi: int) -> None:
        scatter(indptr, indices, w, q, sums[int(np.searchsorted(bounds, lo))], lo, hi)

    run_blocks(block, bounds)
    out = sums[0].copy()
    for part in sums[1:]:
        out += part
    return out


def softmax_blocks(lj: np.ndarray, off: np.ndarray, k: dict) -> tuple:
    """`crowdlab.models.kernels.softmax_rows_full`'s compiled path in row blocks on the pool: (q, lse, argmax,
    entropy, column sums), per-row results as in one pass (the log of each row's sum too, numpy's ``log`` in the
    block), the class totals and the entropy terms added over the blocks in block order."""
    n, K = lj.shape
    e = _empty(lj.shape)
    mx = _empty((n,))
    am = _empty((n,), np.int64)
    s = _empty((n,))
    bounds = row_bounds(n)
    cols = np.zeros((bounds.size - 1, K))

    def block(lo: int, hi: int) -> float:
        i = int(np.searchsorted(bounds, lo))
        k["shift"](lj[lo:hi], off, e[lo:hi], mx[lo:hi], am[lo:hi])
        with np.errstate(invalid="ignore", over="ignore"):
            np.exp(e[lo:hi], out=e[lo:hi])
        with np.errstate(invalid="ignore", divide="ignore"):
            inner = k["finish"](e[lo:hi], lj[lo:hi], mx[lo:hi], s[lo:hi], cols[i])
            log_s = np.log(s[lo:hi], out=s[lo:hi])  # s becomes the row's log-sum-exp: max + log(sum)
        part = float(log_s.sum()) - inner
        np.add(mx[lo:hi], log_s, out=s[lo:hi])
        return part

    entropy = 0.0
    for v in run_blocks(block, bounds):
        entropy += v
    colsum = np.zeros(K)
    for row in cols:
        colsum += row
    return e, s, am, entropy, colsum


def threaded_inner(q: np.ndarray, lj: np.ndarray) -> float | None:
    """sum(q * lj) (the bound's E_q[log p(x, y | theta)]) over row blocks on the pool (numpy's einsum releases the
    GIL), the blocks' sums added in block order; None for one thread."""
    if _JOBS.get() < 2 or q.ndim != 2 or q.size < MIN_CELLS:
        return None
    parts = run_blocks(lambda lo, hi: float(np.einsum("ij,ij->", q[lo:hi], lj[lo:hi])), row_bounds(q.shape[0]))
    total = 0.0
    for v in parts:
        total += v
    return total


def threaded_softmax(lj: np.ndarray, off: np.ndarray) -> tuple | None:
    """`softmax_blocks` when ``lj``'s softmax is to run in blocks on the pool, else None (one thread)."""
    if lj.ndim != 2 or lj.dtype != np.float64 or not lj.flags.c_contiguous:
        return None
    k = _kernels(lj.size)
    return None if k is None else softmax_blocks(lj, off, k)


_kernels_module.threaded_softmax = threaded_softmax
