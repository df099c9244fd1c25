"""Compiled row kernels for the E-step's per-item work (numba, cached on disk), with the numpy code as reference.

Why: at 10^6 labels and K = 5 the two sparse products of a Dawid-Skene iteration (``X @ log Gamma`` and
``X.T @ q``, scipy's sparsetools) take about 2.7 ms each, but numpy's elementwise work on the (N, K) log joint
took more than both: adding log pi, the row max, the shift, the exponentials, the row sums, the normalisation and
the arg-max each make one pass with an inner loop of length K (about 1 ms each at N = 10^5, K = 5). Here they are
two compiled passes over the rows plus numpy's vectorised ``exp`` and ``log``: the posterior, the per-row
log-sum-exp, the arg-max and the entropy of q for the price of about 1.5 ms. Shifted log joints below
``UNDERFLOW`` (-700) give q = 0 exactly, as they would in numpy up to 1e-304, without exp's subnormal slow path.

Numba is optional: without it (or below ``MIN_CELLS``; or below ``FIRST_USE_CELLS`` until something larger has
loaded them, where numba's import and first-call compilation would cost more than they save; or with
``CROWDLAB_KERNELS=numpy``) the same functions run in numpy. Both give the same numbers to rounding
(``tests/unit/test_kernels.py``). The kernels are compiled on first use and cached next to this file (or in numba's
user cache when that is not writable); ``import crowdlab`` never imports numba.
"""

from __future__ import annotations

import os

import numpy as np

MIN_CELLS = 1 << 15  # N x K below this: numpy (on small data both take microseconds)
# The first use of the compiled kernels in a process costs numba's import and the load of its cache (about 0.5-1 s;
# a compile when the cache is cold, about 3 s), which a one-off fit of fewer cells never earns back: below this many
# cells the kernels are not loaded (they are used from MIN_CELLS on once something larger has loaded them).
# Measured by benchmarks/bench_startup.py (part kernels): see benchmarks/README.md.
FIRST_USE_CELLS = 1 << 20
# A shifted log joint below this gives q = 0 exactly (exp(-700) = 1e-304: it cannot change a row sum >= 1). numpy's
# vectorised exp takes its slow path for results in or below the subnormal range (x < -708): 9 ms instead of
# 0.5 ms for 5 x 10^5 cells, which items with hundreds of labels reach; clamping the argument keeps it fast.
UNDERFLOW = -700.0

_KERNELS: dict | None = None
# crowdlab.models.parallel sets this to its row-block softmax on import (this module stays below it: no import
# cycle); it returns None when one thread is to do the work
threaded_softmax = None
_NO_OFFSET = np.zeros(0)
_TRIED = False


# ---------------------------------------------------------------- numpy row primitives (every model uses them)
def row_max(log_w: np.ndarray) -> np.ndarray:
    """(n,) max over each row: a loop over the few columns (numpy's ``max(axis=1)`` over a short last axis is about
    5x slower at K = 5)."""
    n, K = log_w.shape
    if K == 0 or K > 32:
        return log_w.max(axis=1)
    m = log_w[:, 0].copy()
    for k in range(1, K):
        np.maximum(m, log_w[:, k], out=m)
    return m


def row_sums(w: np.ndarray) -> np.ndarray:
    """(n,) sum over each row of a 2-d array (``einsum``: about 3x faster than ``sum(axis=1)`` for few columns, and
    no BLAS call, whose threads stall on a busy machine)."""
    if w.dtype != np.float64:
        return w.sum(axis=1)
    return np.einsum("ij->i", w)


def softmax_lse(log_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(softmax of each row, log sum exp of each row) in one max-shifted pass: the E-step's posterior and the
    terms of the observed log-likelihood come from the same exponentials."""
    log_w = np.asarray(log_w, dtype=np.float64)
    m = row_max(log_w)
    with np.errstate(invalid="ignore"):
        e = log_w - m[:, None]
    np.exp(e, out=e)
    s = row_sums(e)
    with np.errstate(invalid="ignore", divide="ignore"):
        e /= s[:, None]
        return e, m + np.log(s)


def _compile() -> dict | None:
    """The compiled kernels, or None when numba is missing or disabled."""
    global _KERNELS, _TRIED
    if _TRIED:
        return _KERNELS
    _TRIED = True
    if os.environ.get("CROWDLAB_KERNELS", "").lower() == "numpy":
        return None
    try:
        import numba
    except ImportError:
        if os.environ.get("CROWDLAB_KERNELS", "").lower() == "numba":
            from crowdlab.errors import require_extra

            require_extra("fast", "CROWDLAB_KERNELS=numba (compiled kernels)")
        return None

    jit = numba.njit(cache=True, boundscheck=False, nogil=True)

    @jit
    def add_offset(a, off):  # pragma: no cover - compiled
        n, K = a.shape
        for i in range(n):
            for k in range(K):
                a[i, k] += off[k]

    @jit
    def shift(lj, off, e, mx, am):  # pragma: no cover - compiled
        """lj += off per row (when off has K entries), then the row max, its first arg-max and e = lj - max."""
        n, K = lj.shape
        add = off.shape[0] == K
        for i in range(n):
            if add:
                for k in range(K):
                    lj[i, k] += off[k]
            best = lj[i, 0]
            arg = 0
            for k in range(1, K):
                v = lj[i, k]
                arg = k if v > best else arg
                best = v if v > best else best
            mx[i] = best
            am[i] = arg
            for k in range(K):
                d = lj[i, k] - best
                e[i, k] = UNDERFLOW if d <= UNDERFLOW else d  # exp stays normal (NaN passes); finish() zeroes them

    @jit
    def finish(e, lj, mx, s, colsum):  # pragma: no cover - compiled
        """Normalise the rows of e = exp(lj - max) in place; s = row sums; colsum = column sums of q; returns
        sum_ik q_ik (lj_ik - max_i) (each row summed on its own first: no loop-carried chain across rows)."""
        n, K = e.shape
        for k in range(K):
            colsum[k] = 0.0
        acc = 0.0
        for i in range(n):
            t = 0.0
            for k in range(K):
                t += e[i, k]
            s[i] = t
            inv = 1.0 / t
            m = mx[i]
            r = 0.0
            for k in range(K):
                d = lj[i, k] - m
                v = 0.0 if d <= UNDERFLOW else e[i, k] * inv
                e[i, k] = v
                colsum[k] += v
                r += v * d if v > 0.0 else 0.0
            acc += r
        return acc

    @jit
    def ranked_argmax(v, bonus, out):  # pragma: no cover - compiled
        """out[i] = arg-max over k of K v[i, k] + bonus[k] (integers: bonus < K breaks ties only)."""
        n, K = v.shape
        for i in range(n):
            best = v[i, 0] * K + bonus[0]
            arg = 0
            for k in range(1, K):
                w = v[i, k] * K + bonus[k]
                arg = k if w > best else arg
                best = w if w > best else best
            out[i] = arg

    _KERNELS = {
        "add_offset": add_offset,
        "shift": shift,
        "finish": finish,
        "ranked_argmax": ranked_argmax,
    }
    return _KERNELS


def _kernels_for(a: np.ndarray, dtype=np.float64) -> dict | None:
    """The compiled kernels when ``a`` is a C-contiguous (n, K) array of ``dtype`` with at least MIN_CELLS cells,
    and either they are loaded already or ``a`` is large enough to pay for loading them (FIRST_USE_CELLS;
    ``CROWDLAB_KERNELS=numba`` loads them from MIN_CELLS on)."""
    if a.ndim != 2 or a.size < MIN_CELLS or a.dtype != dtype or not a.flags.c_contiguous:
        return None
    if not _TRIED and a.size < FIRST_USE_CELLS and os.environ.get("CROWDLAB_KERNELS", "").lower() != "numba":
        return None
    return _compile()


_SPARSE: dict[int, tuple] = {}


def sparse_kernels(K: int) -> tuple:
    """(dot, scatter) compiled for K columns (a constant, so the inner loops unroll: with K a run-time value they
    were 1.8x slower than scipy's product; with it, as fast), for the threads of `crowdlab.models.parallel`:

    - ``dot(indptr, indices, data, B, out, lo, hi)``: out[i] = sum_j data[j] B[indices[j]] over CSR row i, for
      lo <= i < hi, the terms in scipy's order (the same numbers as ``X @ B``);
    - ``scatter(indptr, indices, data, q, out, lo, hi)``: out[indices[j]] += data[j] q[i] over CSR rows lo .. hi - 1
      (``X[lo:hi].T @ q[lo:hi]`` added to out).

    Compiled on first use for each K (about 0.2 s; not cached on disk: they are closures over K)."""
    got = _SPARSE.get(K)
    if got is not None:
        return got
    import numba

    jit = numba.njit(boundscheck=False, nogil=True)

    @jit
    def dot(indptr, indices, data, B, out, lo, hi):  # pragma: no cover - compiled
        for i in range(lo, hi):
            for k in range(K):
                out[i, k] = 0.0
            for j in range(indptr[i], indptr[i + 1]):
                c = indices[j]
                v = data[j]
                for k in range(K):
                    out[i, k] += v * B[c, k]

    @jit
    def scatter(indptr, indices, data, q, out, lo, hi):  # pragma: no cover - compiled
        for i in range(lo, hi):
            for j in range(indptr[i], indptr[i + 1]):
                c = indices[j]
                v = data[j]
                for k in range(K):
                    out[c, k] += v * q[i, k]

    _SPARSE[K] = (dot, scatter)
    return dot, scatter


def loaded() -> dict | None:
    """The compiled kernels when they are loaded already (nothing is loaded here)."""
    return _KERNELS


def load_for(cells: int) -> bool:
    """Load the kernels now when a fit of ``cells`` (N x K of the whole data set) pays for them (FIRST_USE_CELLS):
    the streaming and Dask engines call it before working on blocks that are each too small to decide it alone, so
    their blocks run the kernels whenever the in-memory fit of the same data would. Returns whether they are
    loaded."""
    if _TRIED:
        return _KERNELS is not None
    if cells < FIRST_USE_CELLS and os.environ.get("CROWDLAB_KERNELS", "").lower() != "numba":
        return False
    return _compile() is not None


def add_row_offset(a: np.ndarray, off: np.ndarray) -> np.ndarray:
    """a += off[None, :] in place (a: (n, K) float64); returns a."""
    k = _kernels_for(a)
    if k is None:
        a += off[None, :]
    else:
        k["add_offset"](a, np.ascontiguousarray(off, dtype=np.float64))
    return a


def softmax_rows_full(lj: np.ndarray, off: np.ndarray | None = None) -> tuple:
    """(q, lse, argmax, entropy, column sums of q) of the rows of a log joint ``lj`` (n, K), after adding ``off``
    (K,) to every row of ``lj`` in place when it is given:

    - q: the softmax of each row (max-shifted, so no overflow);
    - lse: log sum_k exp(lj[i, k]) per row (the observed log-likelihood terms);
    - argmax: (n,) first arg-max per row, as ``np.argmax`` (None from the numpy path: computed when asked);
    - entropy: H(q) = -sum q log q over all rows, computed without a log of q as sum_i [lse_i - sum_k q_ik lj_ik]
      (None from the numpy path);
    - column sums: (K,) sum_i q_ik, the M-step's class totals (None from the numpy path).

    A row of -inf (an impossible item) gives NaN in q and lse in both paths; the engine reports it.
    """
    k = _kernels_for(lj)
    if k is None:
        if off is not None:
            lj += off[None, :]
        q, lse = softmax_lse(lj)
        return q, lse, None, None, None
    off = _NO_OFFSET if off is None else np.ascontiguousarray(off, dtype=np.float64)
    blocks = None if threaded_softmax is None else threaded_softmax(lj, off)
    if blocks is not None:  # n_jobs threads over row blocks (crowdlab.models.parallel)
        return blocks
    n = lj.shape[0]
    e = np.empty_like(lj)
    mx = np.empty(n)
    am = np.empty(n, dtype=np.int64)
    s = np.empty(n)
    colsum = np.empty(lj.shape[1])
    k["shift"](lj, off, e, mx, am)
    with np.errstate(invalid="ignore", over="ignore"):
        np.exp(e, out=e)
    with np.errstate(invalid="ignore", divide="ignore"):
        inner = k["finish"](e, lj, mx, s, colsum)
        log_s = np.log(s)
    lse = mx + log_s
    entropy = float(log_s.sum()) - inner
    return e, lse, am, entropy, colsum


def ranked_argmax(v: np.ndarray, bonus: np.ndarray) -> np.ndarray:
    """(n,) int32 arg-max per row of K * v + bonus for integer votes v (n, K) and a tie-breaking bonus (K,) of
    distinct integers in [0, K): the most votes wins, a tie goes to the largest bonus. One compiled pass without
    the (n, K) temporary when numba is there; numpy otherwise (``v`` is not modified)."""
    k = _kernels_for(v, np.int64)
    if k is None:
        w = v * v.shape[1]
        w += bonus[None, :]
        return np.argmax(w, axis=1).astype(np.int32)
    out = np.empty(v.shape[0], dtype=np.int32)
    k["ranked_argmax"](v, np.ascontiguousarray(bonus, dtype=v.dtype), out)
    return out
