"""MRF-crowd: items on a graph whose labels tend to agree with their neighbours' (Traganitis & Giannakis, Sec. 5).

Prior (Traganitis & Giannakis eq. (28)): a Potts model, V(y_n, y_n') = 0 when the labels agree and delta (times the edge
weight) when they differ; local energy U_n(k) = 1/2 sum_{n' in N_n} V(k, y_n') (eq. (29)). We take the joint
energy U(y) = 1/2 sum over undirected edges of V, which makes eq. (29) exactly the energy of node n's
conditional, so p(y_n = k | F, y_N) ∝ exp(-U_n(k) + sum_m log Gamma_m(f_m(x_n), k)) (eq. (31)). delta defaults
to M, the number of workers (the paper's synthetic setting); ``delta="labels"`` sets delta_nn' = (M_n + M_n') / 4,
the mean of the two nodes' M_n / 2, the paper's choice for graphs built from features.

The exact E-step is intractable (the posterior couples all nodes), so two approximate E-steps are offered; the
UI says so, and each run reports the quantity its E-step actually improves:

- ``"icm"`` (Alg. 3): iterated conditional modes (eq. (33)) from the previous labels until no label changes (or
  ``max_sweeps``), then q_nk from eq. (34) with the neighbours' ICM labels (eq. (35)). ICM never decreases
  J(y_hat, Gamma) = sum_n log e_n(y_hat_n) - U(y_hat) = log p(F, y_hat | Gamma) + log Z; the M-step uses the soft
  q of eq. (34) (eq. (36)), so J may fall at an M-step: this EM is not guaranteed monotone. With ``hard=True`` q
  is the one-hot ICM labelling, and the M-step maximises J too: then J never decreases.
- ``"mean_field"`` (Remark 2): q_n ∝ exp(log e_n + delta/2 sum_n' w_nn' q_n'), swept until no entry moves by
  more than ``tol`` or for ``max_sweeps`` sweeps (a partial E-step, continued at the next iteration; each sweep
  still raises F). This is
  coordinate ascent on the mean-field free energy F(q, Gamma) = E_q[log p(F, y | Gamma)] + H(q) + log Z, a lower
  bound of log p(F | Gamma) + log Z, and the M-step (eq. (36)) maximises F in Gamma: variational EM never
  decreases F.

Both sweeps update one colour class of a proper graph colouring at a time (no two neighbours together), which
equals updating node by node (so the improvements above hold), vectorised as one sparse product per class.
log Z (the Potts partition function) does not depend on Gamma and is left out of the reported values.
Shapes: gamma (M, K, K); q (N, K); labels (N,); the graph is ``data.graph`` (N, N) symmetric sparse.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdlab.errors import DataError, ModelError
from crowdlab.io._lazy import lazy
from crowdlab.io.annotations import Annotations
from crowdlab.io.graph import color_classes
from crowdlab.models.base import LatentModel, ModelInfo, entropy_rows, log_dirichlet, normalise_columns
from crowdlab.models.dawid_skene import expected_counts
from crowdlab.models.hmm import emission_logs
from crowdlab.models.params import ClassParams

sp = lazy("scipy.sparse")  # imported on first use: ``import crowdlab`` stays light

TRACE_LIMIT = 50_000  # record the E-step's objective after every sweep up to this many nodes (else ends only)


def _softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax (max-shifted; cheaper than logsumexp for the many small sweeps)."""
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True, eq=False)
class MRFPosterior:
    """q (N, K); ``labels`` (N,) the ICM labelling (or arg-max q); ``trace``: the improved quantity after each
    sweep of the E-step; ``sweeps``: how many sweeps ran."""

    q: np.ndarray
    labels: np.ndarray
    trace: tuple[float, ...] = ()
    sweeps: int = 0


@dataclass(frozen=True, eq=False)
class MRFParams(ClassParams):
    """Confusion matrices (pi is uniform and unused: the Potts prior replaces it) and the posterior the M-step
    used, from which the next E-step starts (Alg. 3 starts ICM from the previous labels)."""

    state: MRFPosterior | None = None


class NetworkCrowd(LatentModel):
    """EM for crowd labels on a graph with a Potts prior (Traganitis & Giannakis, Alg. 3), ICM or mean-field E-step."""

    info = ModelInfo(
        "mrf",
        "MRF-crowd (networked items)",
        "classes",
        exact=False,
        latent="item",
        prior_pull="s pseudo-counts in every cell of every confusion matrix: a stronger prior pulls them towards "
        "uniform",
    )

    def __init__(
        self,
        delta: float | None = None,
        e_step: str = "icm",
        prior: float = 0.0,
        hard: bool = False,
        max_sweeps: int = 10,
        tol: float = 1e-4,
        seed: int = 0,
    ) -> None:
        if e_step not in ("icm", "mean_field"):
            raise ModelError("e_step must be 'icm' or 'mean_field'.")
        if delta is not None and delta != "labels" and float(delta) < 0:
            raise ModelError("delta must be >= 0 (or 'labels' for delta_nn' = (M_n + M_n') / 4).")
        if prior < 0:
            raise ModelError("prior strength must be >= 0.")
        self.delta = delta
        self.method = e_step
        self.prior = float(prior)
        self.hard = bool(hard)
        self.max_sweeps = int(max_sweeps)
        self.tol = float(tol)
        self.seed = seed
        self._classes: dict = {}  # per graph: penalties and colour blocks

    # -- description --------------------------------------------------------------------
    @property
    def has_prior(self) -> bool:
        return self.prior > 0

    @property
    def monotone(self) -> bool:
        """Mean-field EM and hard ICM-EM never decrease their objective; soft ICM-EM (Alg. 3) may."""
        return (self.method == "mean_field" and not self.hard) or (self.method == "icm" and self.hard)

    @property
    def objective_name(self) -> str:
        if self.method == "mean_field":
            return "mean-field free energy L(q, Γ) (+ log Z)"
        return "log p(F, ŷ | Γ) at the ICM labels (+ log Z)"

    def check(self, data: Annotations) -> None:
        super().check(data)
        if data.graph is None:
            raise ModelError("The MRF model needs a graph over the items (an edge list or a simulated network).")
        self.check_penalties(data)

    def check_penalties(self, data: Annotations) -> None:
        """Raise DataError when the Potts penalties delta_nn' w_nn' are not finite, negative, or so large that
        the total energy of the graph passes the largest float (then the objective could not be represented);
        the message names the heaviest edge."""
        D = self.penalties(data)
        vals = D.data
        with np.errstate(over="ignore", invalid="ignore"):
            total = float(vals.sum()) if vals.size else 0.0
        if not vals.size or (np.all(np.isfinite(vals)) and vals.min() >= 0 and total < 1e300):
            return
        C = D.tocoo()
        A = data.graph.tocoo()
        bad = ~np.isfinite(C.data) | (C.data < 0)
        i = int(np.flatnonzero(bad)[0]) if bad.any() else int(np.argmax(C.data))
        a, b = int(C.row[i]), int(C.col[i])
        w = A.tocsr()[a, b]
        names = data.item_names
        raise DataError(
            f"the edge between items '{names[a]}' and '{names[b]}' has weight {w:.6g}; with delta = "
            f"{self.delta_label(data)} its Potts penalty is {C.data[i]:.6g} and the graph's total penalty "
            f"{total:.6g}, beyond what a float can hold (1e300 is the limit here).",
            hint="Rescale the edge weights (only their product with delta matters) or lower delta.",
        )

    def delta_label(self, data: Annotations) -> str:
        """delta as a person set it: a number, or "(M_n + M_n') / 4"."""
        if self.delta == "labels":
            return "(M_n + M_n') / 4"
        return f"{float(data.n_workers if self.delta is None else self.delta):.6g}"

    def delta_for(self, data: Annotations) -> float:
        """The scalar delta (None -> M); for ``delta="labels"`` the mean of the per-edge values."""
        if self.delta == "labels":
            D = self.penalties(data)
            g = data.graph.data
            top = float(g.max()) if g.size else 1.0
            return float((D / top).sum() / max(float((g / top).sum()), 1e-300)) if top > 0 else 0.0
        return float(data.n_workers if self.delta is None else self.delta)

    def penalties(self, data: Annotations):
        """The graph with every edge weight multiplied by its Potts penalty delta_nn' (Traganitis & Giannakis eq. (28)).

        A number (default M) is one delta for every edge; ``"labels"`` gives delta_nn' = (M_n + M_n') / 4, the mean
        of the two nodes' M_n / 2 (M_n = labels on node n), the paper's setting for graphs built from features.
        Computed once per graph.
        """
        key = ("penalties", id(data.graph), self.delta)
        if key not in self._classes:
            A = data.graph.tocsr()
            if self.delta == "labels":
                m = data.labels_per_item.astype(np.float64)
                C = A.tocoo()
                with np.errstate(over="ignore"):
                    D = sp.csr_matrix((C.data * (m[C.row] + m[C.col]) / 4.0, (C.row, C.col)), shape=A.shape)
            else:
                with np.errstate(over="ignore", invalid="ignore"):
                    D = A * float(data.n_workers if self.delta is None else self.delta)
            self._classes[key] = D
        return self._classes[key]

    def _blocks(self, data: Annotations) -> tuple[np.ndarray, np.ndarray, list]:
        """Nodes reordered so every colour class is a contiguous block: (perm, bounds, rows of the permuted
        adjacency per block). Computed once per graph; the sweeps then work on slices, not fancy indexing."""
        key = ("blocks", id(data.graph), self.delta)
        if key not in self._classes:
            A = self.penalties(data)
            classes = color_classes(data.graph.tocsr(), self.seed)
            perm = np.concatenate(classes)
            bounds = np.concatenate([[0], np.cumsum([c.size for c in classes])])
            Ap = A[perm][:, perm].tocsr()
            rows = [Ap[bounds[i] : bounds[i + 1]] for i in range(len(classes))]
            self._classes[key] = (perm, bounds, rows)
        return self._classes[key]

    # -- E-step -------------------------------------------------------------------------
    def as_posterior(self, data: Annotations, q: np.ndarray) -> MRFPosterior:
        q = np.asarray(q, dtype=np.float64)
        return MRFPosterior(q, np.argmax(q, axis=1).astype(np.int32))

    def e_step(self, data: Annotations, params: MRFParams) -> MRFPosterior:
        logE = emission_logs(data, params.gamma)
        half = 0.5  # the rows carry delta_nn' (see ``penalties``)
        perm, bounds, rows = self._blocks(data)
        inv = np.empty_like(perm)
        inv[perm] = np.arange(perm.size)
        logE_p = logE[perm]
        start = params.state
        track = data.n_items <= TRACE_LIMIT
        if self.method == "mean_field":
            q = start.q[perm] if start is not None else _softmax(logE_p)
            trace = [self._mf_value(data, q[inv], params, logE)]
            sweeps = 0
            for _ in range(self.max_sweeps):
                sweeps += 1
                moved = 0.0
                for b, R in enumerate(rows):
                    lo, hi = bounds[b], bounds[b + 1]
                    new = _softmax(logE_p[lo:hi] + half * (R @ q))
                    moved = max(moved, float(np.abs(new - q[lo:hi]).max(initial=0.0)))
                    q[lo:hi] = new
                if track:
                    trace.append(self._mf_value(data, q[inv], params, logE))
                if moved < self.tol:
                    break
            q = q[inv]
            if not track:
                trace.append(self._mf_value(data, q, params, logE))
            return MRFPosterior(q, np.argmax(q, axis=1).astype(np.int32), tuple(trace), sweeps)
        labels = (start.labels if start is not None else np.argmax(logE, axis=1)).astype(np.int32)[perm]
        Y = np.zeros_like(logE_p)
        Y[np.arange(labels.size), labels] = 1.0
        trace = [self._icm_value(data, labels[inv], params, logE)]
        sweeps = 0
        for _ in range(self.max_sweeps):
            sweeps += 1
            changed = 0
            for b, R in enumerate(rows):
                lo, hi = bounds[b], bounds[b + 1]
                new = np.argmax(logE_p[lo:hi] + half * (R @ Y), axis=1).astype(np.int32)
                moved = np.flatnonzero(new != labels[lo:hi])
                if moved.size:
                    idx = lo + moved
                    Y[idx] = 0.0
                    Y[idx, new[moved]] = 1.0
                    labels[idx] = new[moved]
                    changed += moved.size
            if track:
                trace.append(self._icm_value(data, labels[inv], params, logE))
            if not changed:
                break
        labels, Y = labels[inv], Y[inv]
        if not track:
            trace.append(self._icm_value(data, labels, params, logE))
        if self.hard:
            q = Y
        else:
            q = _softmax(logE + half * (self.penalties(data) @ Y))  # eq. (34) with U from the ICM labels (eq. (35))
        return MRFPosterior(q, labels, tuple(trace), sweeps)

    # -- M-step -------------------------------------------------------------------------
    def m_step(self, data: Annotations, post) -> MRFParams:
        if isinstance(post, np.ndarray):
            post = self.as_posterior(data, post)
        gamma = normalise_columns(expected_counts(data, post.q), self.prior)
        K = data.n_classes
        return MRFParams(pi=np.full(K, 1.0 / K), gamma=gamma, state=post)

    # -- objectives ---------------------------------------------------------------------
    def log_prior(self, params: MRFParams) -> float:
        if not self.has_prior:
            return 0.0
        return log_dirichlet(np.swapaxes(params.gamma, 1, 2), 1.0 + self.prior)

    def potts_energy(self, data: Annotations, Y: np.ndarray) -> float:
        """U for (soft) labels Y: delta/2 * sum over undirected edges of w (1 - y_n . y_n').

        Computed as a sum of non-negative terms, w * sum_{k != j} y_nk y_n'j = sum(Y * (D @ other)) with
        other[n, k] = sum_{j != k} y_nj (prefix plus suffix sums, no "1 - y" cancellation): an edge whose ends
        agree adds exactly 0, so unit-weight edges still count next to a 1e295-weight one."""
        D = self.penalties(data)
        Y = np.asarray(Y, dtype=np.float64)
        YT = np.ascontiguousarray(Y.T)  # (K, N): the prefix sums run over contiguous rows
        other = np.empty_like(YT)
        acc = np.zeros(YT.shape[1])
        for k in range(YT.shape[0]):  # K row operations: other[k] = sum_{j < k} y_j ...
            other[k] = acc
            acc += YT[k]
        acc[:] = 0.0
        for k in range(YT.shape[0] - 1, -1, -1):  # ... + sum_{j > k} y_j
            other[k] += acc
            acc += YT[k]
        # both directions stored: 1/2 (undirected) * 1/2 (the Potts prior's factor)
        return 0.25 * float((Y * (D @ np.ascontiguousarray(other.T))).sum())

    def _icm_value(self, data, labels, params, logE=None) -> float:
        logE = emission_logs(data, params.gamma) if logE is None else logE
        Y = np.zeros_like(logE)
        Y[np.arange(labels.size), labels] = 1.0
        return float(logE[np.arange(labels.size), labels].sum() - self.potts_energy(data, Y)) + self.log_prior(params)

    def _mf_value(self, data, q, params, logE=None) -> float:
        logE = emission_logs(data, params.gamma) if logE is None else logE
        return float((q * logE).sum() - self.potts_energy(data, q) + entropy_rows(q)) + self.log_prior(params)

    def objective(self, data: Annotations, post, params: MRFParams) -> float:
        if isinstance(post, np.ndarray):
            post = self.as_posterior(data, post)
        if self.method == "mean_field":
            return self._mf_value(data, post.q, params)
        return self._icm_value(data, post.labels, params)

    def bound(self, data: Annotations, post, params: MRFParams) -> float:
        return self.objective(data, post, params)

    def complete_objective(self, data: Annotations, post, params: MRFParams) -> float:
        return self.objective(data, post, params)

    def log_likelihood(self, data: Annotations, params: MRFParams) -> float:
        raise ModelError("log p(F | Γ) is intractable under the MRF prior; see objective_name for what is reported.")
