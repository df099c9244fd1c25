"""Graphs over items (Traganitis & Giannakis, Sec. 5): edge lists, grid graphs of images, colourings, drawing positions.

Adjacency matrices are symmetric ``scipy.sparse.csr_matrix`` (n_items x n_items) with zero diagonal; weights
are kept when the edge list has them (the MRF multiplies the Potts penalty delta by the weight).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from crowdlab._lazy import lazy
from crowdlab.data import Annotations, Source
from crowdlab.errors import DataError
from crowdlab.limits import get_limits
from crowdlab.limits import how_to_raise as limits_how
from crowdlab.readers import check_where, read_table, rows_error

pd = lazy("pandas")

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


def _edge_columns(header: tuple[str, ...]) -> tuple[int | None, int | None, int | None]:
    norm = [h.strip().lower() for h in header]
    s = next((j for j, h in enumerate(norm) if h in SOURCE_ALIASES), None)
    t = next((j for j, h in enumerate(norm) if h in TARGET_ALIASES), None)
    w = next((j for j, h in enumerate(norm) if h in WEIGHT_ALIASES), None)
    return s, t, w


def read_edges(source: Source, annotations: Annotations, *, where: str = "python") -> Annotations:
    """Attach a graph from an edge-list CSV ``source,target[,weight]`` naming items of ``annotations``.

    Undirected: each edge is used once in both directions; repeated edges keep the largest weight; self-loops
    are dropped (noted). Without named columns the first two columns are source and target (noted); when row 1
    names two items it is an edge, not a header (noted). Edges naming unknown items, and weights that are not
    numbers in (0, ``limits.max_weight``], raise `DataError` listing the rows.
    """
    needs = "an edge list needs source and target columns"
    table = read_table(source, needs=needs, allow_no_rows=True, where=check_where(where))
    s, t, w = _edge_columns(table.header)
    notes: tuple[str, ...] = ()
    if s is None and t is None and len(table.header) >= 2:
        known = set(annotations.item_names)
        if table.header[0] in known and table.header[1] in known:
            table = read_table(source, needs=needs, header=False, where=where)
            notes += (
                f"Edge list '{table.file}' has no header: row 1 names two items, so it was read as an edge "
                "(columns 1 and 2 are source and target"
                + (
                    "; later columns are ignored: name a column 'weight' in a header row to use weights)."
                    if len(table.header) > 2
                    else ")."
                ),
            )
        else:
            notes += (
                f"Edge list '{table.file}': no column named source/target; read columns "
                f"{table.column_name(0)!r} and {table.column_name(1)!r} as source and target.",
            )
        s, t = 0, 1
        w = 2 if len(table.header) >= 3 and table.header[2].strip().lower() in WEIGHT_ALIASES else None
    if not table.n_rows:
        raise DataError("the edge list has a header row but no edges.", file=table.file, hint="Add one edge per row.")
    if s is None or t is None or s == t:
        raise DataError(
            "no source and target columns found.",
            file=table.file,
            row=1,
            hint="Name the columns source,target (and optionally weight).",
        )
    index = pd.Series(np.arange(annotations.n_items), index=pd.Index(annotations.item_names))
    u = index.reindex(table.values(s)).to_numpy()
    v = index.reindex(table.values(t)).to_numpy()
    bad = np.isnan(u) | np.isnan(v)
    if bad.any():
        raise rows_error(
            table,
            bad,
            s if np.isnan(u).any() else t,
            "an edge naming an item that has no labels",
            "Every source and target must be an item of the label file (spelt the same way).",
            show_values=True,
        )
    weight = np.ones(u.size)
    if w is not None:
        col = table.col(w)
        wu = pd.to_numeric(pd.Series(col.uniq, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
        lim = get_limits().max_weight
        badw_u = ~np.isfinite(wu) | (wu <= 0) | (wu > lim)
        if badw_u.any():
            raise rows_error(
                table,
                badw_u[col.codes],
                w,
                f"a weight that is not a number in (0, {lim:g}] (max_weight)",
                "Write each weight as a positive number such as 1 or 0.5. " + limits_how("max_weight", table.where),
                show_values=True,
            )
        weight = wu[col.codes]
    u, v = u.astype(np.int64), v.astype(np.int64)
    loops = int((u == v).sum())
    pairs = pd.DataFrame({"a": np.minimum(u, v), "b": np.maximum(u, v), "w": weight})
    best = pairs.groupby(["a", "b"], sort=False)["w"].max()
    repeated = len(pairs) - len(best)
    a, b = best.index.get_level_values(0).to_numpy(), best.index.get_level_values(1).to_numpy()
    A = symmetric(sp.coo_matrix((best.to_numpy(), (a, b)), shape=(annotations.n_items,) * 2))
    notes = annotations.notes + table.notes + notes
    if repeated:
        notes += (f"{repeated} repeated edge(s) (either direction) used once, with the largest weight.",)
    if loops:
        notes += (f"Dropped {loops} self-loop(s) from the edge list.",)
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
