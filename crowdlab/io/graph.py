"""Graphs over items (Traganitis & Giannakis, Sec. 5): edge lists, grid graphs of images, colourings, drawing positions.

Adjacency matrices are symmetric ``scipy.sparse.csr_matrix`` (n_items x n_items) with zero diagonal; weights
are kept when the edge list has them (the MRF multiplies the Potts penalty delta by the weight).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from crowdlab.errors import DataError
from crowdlab.io._lazy import lazy
from crowdlab.io.annotations import Annotations
from crowdlab.io.limits import get_limits
from crowdlab.io.limits import how_to_raise as limits_how
from crowdlab.io.readers import Source, check_where, read_table, rows_error, to_floats

pd = lazy("pandas")
sp = lazy("scipy.sparse")  # imported on first use: ``import crowdlab`` stays light

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
        wu = to_floats(col.uniq)
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


# ---------------------------------------------------------------------------- drawing a graph of any size
def drawn_nodes(A: sp.spmatrix, budget: int, seed: int = 0, starts: int = 8) -> np.ndarray:
    """The nodes to draw of a graph with more than ``budget`` nodes (sorted indices; all of them when it fits).

    Whole connected components, largest first; the first that does not fit is cut to a breadth-first ball grown
    from ``starts`` nodes of it at once (every node within d hops of a start, and a random part of those d + 1 hops
    away), so a drawn node keeps its neighbours. (A uniform random subset of a sparse graph keeps few of its edges and
    falls apart into isolated nodes and pairs.) The starts are spread out: a random one, then each next one as far
    as can be from those chosen. Deterministic in ``seed``; O(starts × (nodes + edges)) (scipy's connected
    components and breadth-first searches).
    """
    from scipy.sparse import csgraph

    A = sp.csr_matrix(A)
    n = A.shape[0]
    if n <= budget:
        return np.arange(n)
    _, comp = csgraph.connected_components(A, directed=False)
    sizes = np.bincount(comp)
    order = np.argsort(-sizes, kind="stable")
    n_whole = int((np.cumsum(sizes[order]) <= budget).sum())  # cumulative sizes grow: a prefix fits
    take = np.isin(comp, order[:n_whole])
    left = budget - int(take.sum())
    if left > 0:
        rng = np.random.default_rng(seed)
        members = np.flatnonzero(comp == order[n_whole])
        # spread starts: each next one as far as can be from those chosen (ties at random), so that the ball
        # reaches every region (every community of a block model) rather than the neighbourhood of a few
        first = [int(rng.choice(members))]
        far = csgraph.shortest_path(A, directed=False, unweighted=True, indices=first[0])
        for _ in range(min(starts, members.size) - 1):  # a few breadth-first searches, one per start
            first.append(int(rng.choice(members[far[members] == far[members].max()])))
            far = np.minimum(far, csgraph.shortest_path(A, directed=False, unweighted=True, indices=first[-1]))
        first = np.asarray(first)
        # hops from a virtual node joined to every start (one breadth-first search): the balls grow together
        S = sp.csr_matrix((np.ones(first.size), (np.zeros(first.size, dtype=np.int64), first)), shape=(1, n))
        B = sp.bmat([[None, S], [S.T, A]], format="csr")
        hops = csgraph.shortest_path(B, directed=False, unweighted=True, indices=0)[1:]
        within = np.cumsum(np.bincount(hops[members].astype(np.int64)))  # nodes within d hops, d = 0, 1, ...
        d = int(np.searchsorted(within, left))  # the first hop count that does not fit whole
        inner = members[hops[members] < d]
        shell = members[hops[members] == d]
        take[inner] = True
        take[rng.choice(shell, left - inner.size, replace=False)] = True
    return np.flatnonzero(take)


PIVOTS = 50  # pivots of the start (Brandes & Pich 2007's pivot MDS)
PIVOT_MIN = 20  # components smaller than this start from random positions
PARTNERS = 48  # nodes each node is repelled by per step (a random sample of its component; all when fewer)
GAP = 0.5  # neighbours closer than GAP * (the component's spread) / sqrt(its nodes) push apart: no node hides another


def _pivot_mds(A: sp.csr_matrix, rng: np.random.Generator) -> np.ndarray:
    """Pivot MDS of a connected graph (Brandes & Pich 2007): classical MDS of the breadth-first distances to
    ``PIVOTS`` random pivots; (n, 2)."""
    from scipy.sparse import csgraph

    n = A.shape[0]
    piv = rng.choice(n, min(PIVOTS, n), replace=False)
    C = csgraph.shortest_path(A, directed=False, unweighted=True, indices=piv).T ** 2  # (n, pivots)
    C = -0.5 * (C - C.mean(axis=0, keepdims=True) - C.mean(axis=1, keepdims=True) + C.mean())
    U, s, _ = np.linalg.svd(C, full_matrices=False)
    return U[:, :2] * s[:2]


def _per_component(values: np.ndarray, comp: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The mean of ``values`` (n, d) over each component, (components, d)."""
    return (
        np.stack([np.bincount(comp, weights=values[:, j], minlength=sizes.size) for j in range(values.shape[1])], 1)
        / sizes[:, None]
    )


def force_positions(A: sp.spmatrix, seed: int = 0, iterations: int = 150) -> np.ndarray:
    """(n, 2) drawing positions of any graph: force-directed, each connected component on its own, the components
    packed in rows, largest first (the biggest top left).

    The forces are those of Noack (2007)'s edge-repulsion LinLog energy, which draws densely linked groups
    (communities) as separate clusters: a pull of constant strength along each edge (times its weight), a push
    between every two nodes of a component of strength deg_i deg_j / distance (deg: weighted degree + 1, over the
    component's total), and a weak pull to the component's centre. A component of 20 nodes or more starts from
    Brandes & Pich (2007)'s pivot MDS, a smaller one from random positions. The push on a node is estimated from
    ``PARTNERS`` random nodes of its component each step (exact in a smaller component), so a step costs
    O(n · PARTNERS + edges); the step shrinks over ``iterations``. Each component is then scaled to an area in
    proportion to its nodes. Deterministic in ``seed``; vectorised over nodes and edges (the one loop over
    components only starts those of 20 nodes or more).
    """
    from scipy.sparse import csgraph

    A = sp.csr_matrix(A, dtype=np.float64)
    n = A.shape[0]
    if n == 0:
        return np.zeros((0, 2))
    rng = np.random.default_rng(seed)
    n_comp, comp = csgraph.connected_components(A, directed=False)
    sizes = np.bincount(comp, minlength=n_comp).astype(np.float64)
    # the start: unit-scale positions per component
    angle, radius = rng.random(n) * 2 * np.pi, np.sqrt(rng.random(n))
    X = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    for c in np.flatnonzero(sizes >= PIVOT_MIN):
        idx = np.flatnonzero(comp == c)
        P = _pivot_mds(A[idx][:, idx], rng)
        P -= P.mean(axis=0)
        X[idx] = P / (np.sqrt((P**2).sum(axis=1).mean()) + 1e-12) + 0.05 * rng.standard_normal(P.shape)
    # the forces
    C = A.tocoo()
    u, v, w = C.row, C.col, np.abs(C.data)
    deg = np.asarray(abs(A).sum(axis=1)).ravel() + 1.0
    push = deg / np.bincount(comp, weights=deg, minlength=n_comp)[comp]  # deg_i / (the component's total)
    members = np.argsort(comp, kind="stable")  # nodes grouped by component
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)[comp]
    size = sizes[comp].astype(np.int64)
    r = int(min(PARTNERS, size.max()))
    slot = np.arange(r)
    whole = size <= r  # a small component: every member, once
    valid = np.where(whole[:, None], slot[None, :] < size[:, None], True)
    scale = np.where(whole, 1.0, size / r)
    for it in range(iterations):
        pick = np.where(
            whole[:, None], np.minimum(slot[None, :], size[:, None] - 1), rng.random((n, r)) * size[:, None]
        )
        P = members[first[:, None] + pick.astype(np.int64)]
        dx, dy = X[:, 0:1] - X[P, 0], X[:, 1:2] - X[P, 1]
        wgt = valid * deg[P] / np.maximum(dx * dx + dy * dy, 1e-9)
        F = np.stack([(wgt * dx).sum(axis=1), (wgt * dy).sum(axis=1)], axis=1) * (scale * push)[:, None]
        centre = _per_component(X, comp, sizes)[comp]
        out = X - centre
        dist = np.sqrt((out * out).sum(axis=1))
        F -= 0.05 * deg[:, None] * out / (dist[:, None] + 1e-12)
        spread = np.sqrt(_per_component(dist[:, None] ** 2, comp, sizes)[comp, 0])
        # along an edge: the pull, which turns into a push closer than a node's share of the component's room
        gap = (GAP * spread / np.sqrt(size))[u]
        e = X[u] - X[v]
        length2 = (e * e).sum(axis=1) + 1e-18
        e *= (w * (1.0 - gap**2 / length2) / np.sqrt(length2))[:, None]
        F[:, 0] -= np.bincount(u, weights=e[:, 0], minlength=n)
        F[:, 1] -= np.bincount(u, weights=e[:, 1], minlength=n)
        cap = spread * (0.05 * (1 - it / iterations) + 1e-4)
        step = F / deg[:, None]
        length = np.sqrt((step * step).sum(axis=1)) + 1e-12
        X += step * (np.minimum(length, cap) / length)[:, None]
    return _pack(X, comp, sizes)


def _pack(X: np.ndarray, comp: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Scale each component to an area in proportion to its nodes and pack them in rows, largest first."""
    centre = _per_component(X, comp, sizes)
    X = X - centre[comp]
    spread = np.sqrt(_per_component((X * X).sum(axis=1, keepdims=True), comp, sizes)[:, 0])
    X = X * np.where(spread > 0, 0.6 * np.sqrt(sizes) / np.maximum(spread, 1e-12), 1.0)[comp, None]
    n_comp = sizes.size
    lo, hi = np.full((n_comp, 2), np.inf), np.full((n_comp, 2), -np.inf)
    np.minimum.at(lo, comp, X)
    np.maximum.at(hi, comp, X)
    box = hi - lo + 1.0  # one unit of space around each
    order = np.argsort(-sizes, kind="stable")
    width, height = box[order, 0], box[order, 1]
    row_width = max(width[0], 1.2 * np.sqrt((width * height).sum()))
    before = np.cumsum(width) - width
    row = np.unique(np.floor(before / row_width), return_inverse=True)[1].ravel()  # next fit, rows of ~row_width
    row_first = np.searchsorted(row, np.arange(row.max() + 1))
    row_height = np.zeros(row.max() + 1)
    np.maximum.at(row_height, row, height)
    top = -np.concatenate([[0.0], np.cumsum(row_height)[:-1]])
    corner = np.zeros((n_comp, 2))
    corner[order, 0] = before - before[row_first][row]
    corner[order, 1] = top[row] - height
    X = X - lo[comp] + corner[comp]
    return X - X.mean(axis=0)
