"""Graphs over items (Traganitis & Giannakis, Sec. 5): edge lists, grid graphs of images, colourings, drawing positions.

Adjacency matrices are symmetric ``scipy.sparse.csr_matrix`` (n_items x n_items) with zero diagonal; weights
are kept when the edge list has them (the MRF multiplies the Potts penalty delta by the weight).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from crowdlab.data import Annotations, Source, _load_source, _read_table
from crowdlab.errors import DataError

SOURCE_ALIASES = ("source", "src", "from", "u", "node1", "item1")
TARGET_ALIASES = ("target", "dst", "to", "v", "node2", "item2")
WEIGHT_ALIASES = ("weight", "w", "strength")


def symmetric(A: sp.spmatrix) -> sp.csr_matrix:
    """max(A, A^T) without self-loops, as CSR with float weights."""
    A = sp.csr_matrix(A, dtype=np.float64)
    A = A.maximum(A.T).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    return A


def read_edges(source: Source, annotations: Annotations) -> Annotations:
    """Attach a graph from an edge-list CSV ``source,target[,weight]`` naming items of ``annotations``.

    Undirected: each edge is used once in both directions; repeated edges keep the largest weight; self-loops
    are dropped (noted). Edges naming unknown items raise `DataError` listing the rows.
    """
    _load_source(source)  # raises the usual errors for empty / binary / non-UTF-8 files
    table = _read_table(source, needs="an edge list needs source and target columns")
    norm = [h.strip().lower() for h in table.header]
    s = next((j for j, h in enumerate(norm) if h in SOURCE_ALIASES), 0 if len(norm) >= 2 else None)
    t = next((j for j, h in enumerate(norm) if h in TARGET_ALIASES), 1 if len(norm) >= 2 else None)
    if s is None or t is None or s == t:
        raise DataError(
            "no source and target columns found.",
            file=table.file,
            row=1,
            hint="Name the columns source,target (and optionally weight).",
        )
    w = next((j for j, h in enumerate(norm) if h in WEIGHT_ALIASES), None)
    index = pd.Series(np.arange(annotations.n_items), index=pd.Index(annotations.item_names))
    u = index.reindex(table.values(s)).to_numpy()
    v = index.reindex(table.values(t)).to_numpy()
    bad = np.isnan(u) | np.isnan(v)
    if bad.any():
        rows = table.rows[bad]
        raise DataError(
            f"{int(bad.sum())} edge(s) name items that have no labels (rows {', '.join(map(str, rows[:5]))}"
            + (" ..." if bad.sum() > 5 else "")
            + ").",
            file=table.file,
            hint="Every source and target must be an item of the label file.",
        )
    weight = np.ones(u.size)
    if w is not None:
        weight = pd.to_numeric(pd.Series(table.values(w)), errors="coerce").to_numpy()
        badw = ~np.isfinite(weight) | (weight <= 0)
        if badw.any():
            raise DataError(
                f"{int(badw.sum())} weight(s) are not positive numbers (rows "
                f"{', '.join(map(str, table.rows[badw][:5]))}).",
                file=table.file,
                column=table.header[w],
            )
    u, v = u.astype(np.int64), v.astype(np.int64)
    loops = int((u == v).sum())
    A = symmetric(sp.coo_matrix((weight, (u, v)), shape=(annotations.n_items,) * 2))
    notes = annotations.notes + ((f"Dropped {loops} self-loop(s) from the edge list.",) if loops else ())
    from dataclasses import replace

    return replace(annotations, graph=A, notes=notes)


def grid_graph(height: int, width: int, diagonal: bool = False) -> sp.csr_matrix:
    """The 4-neighbour (or 8-neighbour) grid over the pixels of a height x width image, row-major order."""
    idx = np.arange(height * width).reshape(height, width)
    pairs = [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])]
    if diagonal:
        pairs += [(idx[:-1, :-1], idx[1:, 1:]), (idx[:-1, 1:], idx[1:, :-1])]
    u = np.concatenate([a.ravel() for a, _ in pairs])
    v = np.concatenate([b.ravel() for _, b in pairs])
    return symmetric(sp.coo_matrix((np.ones(u.size), (u, v)), shape=(height * width,) * 2))


def greedy_coloring(A: sp.csr_matrix, seed: int = 0) -> np.ndarray:
    """A proper colouring (adjacent nodes get different colours), by random-priority independent sets.

    Each round colours every uncoloured node whose priority beats all its uncoloured neighbours' (an
    independent set), vectorised with one sparse product per round. Updating one colour class at a time is
    then equivalent to updating the nodes one by one (Gauss-Seidel), which is what makes ICM and mean-field
    sweeps monotone.
    """
    n = A.shape[0]
    pattern = A.copy().tocsr()
    pattern.data = np.ones_like(pattern.data)
    prio = np.random.default_rng(seed).permutation(n).astype(np.float64) + 1.0
    color = np.full(n, -1, dtype=np.int64)
    c = 0
    while (color < 0).any():
        live = np.where(color < 0, prio, 0.0)
        # the largest live priority among each node's neighbours
        nb = pattern.multiply(live[None, :]).tocsr()
        nb_max = np.zeros(n)
        if nb.nnz:
            nb_max = np.asarray(nb.max(axis=1).todense()).ravel()
        pick = (color < 0) & (live > nb_max)
        color[pick] = c
        c += 1
    return color


def color_classes(A: sp.csr_matrix, seed: int = 0) -> list[np.ndarray]:
    """Node indices of each colour class of :func:`greedy_coloring`."""
    color = greedy_coloring(A, seed)
    order = np.argsort(color, kind="stable")
    bounds = np.searchsorted(color[order], np.arange(color.max() + 2))
    return [order[bounds[i] : bounds[i + 1]] for i in range(color.max() + 1)]


def spectral_positions(A: sp.csr_matrix, seed: int = 0) -> np.ndarray:
    """(n, 2) drawing positions: the two smallest non-trivial eigenvectors of the normalised Laplacian, spread by
    a few steps of neighbour averaging; computed once per graph (the UI caches it)."""
    from scipy.sparse.linalg import eigsh

    n = A.shape[0]
    rng = np.random.default_rng(seed)
    if n <= 3:
        return rng.random((n, 2))
    deg = np.asarray(A.sum(axis=1)).ravel() + 1e-9
    d = sp.diags(1.0 / np.sqrt(deg))
    L = sp.eye(n) - d @ A @ d
    try:
        k = min(3, n - 1)
        _, vecs = eigsh(L, k=k, sigma=-1e-3, which="LM", v0=rng.random(n))
        pos = vecs[:, 1:3] if vecs.shape[1] >= 3 else rng.random((n, 2))
    except Exception:  # noqa: BLE001 - a disconnected or tiny graph: fall back to random positions
        pos = rng.random((n, 2))
    pos = pos + 0.02 * rng.standard_normal(pos.shape) * (pos.std(axis=0, keepdims=True) + 1e-9)
    return (pos - pos.mean(axis=0)) / (pos.std(axis=0) + 1e-12)
