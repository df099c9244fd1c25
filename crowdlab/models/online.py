"""Online EM for Dawid-Skene and one-coin: one item's block of labels at a time ("the nominalonlineextract blog post").

The blog post writes batch EM as maximising F(alpha, gamma, q) = sum_i F_i(alpha, gamma, q_i), where
F_i = E_{q_i}[log L(D_i | alpha, gamma, Z_i)] + (1 / |I|) log P(alpha, gamma) + E_{q_i}[log P(Z_i)] + H(q_i) and
|I| is the number of items. Its procedure streams the data grouped by item:

1. receive the block D_i of (item, worker, label) triples of one item (here: of a mini-batch of items);
2. maximise F_i over q_i with the global parameters fixed: with the item's label independent of everything else
   given (alpha, gamma) this is exact, q_i(k) ∝ pi_k prod_{labels l of worker m} Gamma_m(l, k) (Dawid & Skene's
   E-step, eq. (9) of the Traganitis & Giannakis survey), and F_i at the optimum is log p(D_i | theta) plus
   (1 / |I|) log P(theta);
3. move the worker parameters alpha (the confusion matrices Gamma_m) and the class prior gamma (pi here) by a
   step of size eta_t = eta0 (tau0 + t)^(-rho);
4. discard q_i.

The blog's step 3 is a gradient step alpha <- alpha + eta_t grad_alpha F_i. Taken literally on probabilities it
can leave the simplex (a column of Gamma_m with a negative entry) and needs a projection. This module takes the
same step in the space of expected sufficient statistics instead: stepwise EM (Cappé & Moulines 2009; Sato &
Ishii 2000). With s = (the (B, K, K) expected counts s_gamma[b, k_said, k_true] and the (K,) expected class
totals s_pi), scaled to |I| items,

    s <- (1 - eta_t) s + eta_t * (|I| / |batch|) * s_batch(q),     theta <- M-step(s + Dirichlet pseudo-counts),

where s_batch holds the block's expected counts under q_i. A convex combination of two valid statistics is a
valid statistic, and the M-step of a valid statistic is a proper distribution, so every update keeps each column
of every Gamma_b and pi on the simplex, whatever eta_t in [0, 1]. Cappé & Moulines show that this recursion is a
stochastic approximation (Robbins-Monro) of the batch EM fixed point: in the parameter space it is, to first
order, the blog's gradient step preconditioned by the inverse complete-data Fisher information (a natural
gradient step), which is why a single step size works for every worker whatever its number of labels. It
converges for sum eta_t = inf and sum eta_t^2 < inf, i.e. rho in (0.5, 1]. Scaling the block's statistics by
|I| / |batch| makes s an estimate of the whole data set's statistics, so the Dirichlet prior counts once against
|I| items' worth of data: the blog's (1 / |I|) log P(alpha, gamma) per block. ``n_items`` (|I|) is, as the blog
says, effectively a tuning parameter setting the weight of the prior.

Workers are mapped to B confusion matrices by the hashing trick: a stable seeded hash (BLAKE2b of the worker id
string, salted with the seed, never Python's per-process ``hash``) modulo B. Workers whose ids collide share one
confusion matrix; with B = 1 every worker is modelled by the population confusion matrix, the blog's graceful
degradation. ``buckets=None`` keeps one matrix per worker (no hashing).

Progressive validation (vowpal wabbit's style, as the blog prints it): before each update the block's F_i and
the predicted label arg-max q_i are recorded under the current parameters, so the running average of F_i is an
honest held-out estimate that should rise as data is consumed.

Shapes: pi (K,), Gamma per bucket (B, K, K) with columns = true class, per worker (M, K, K); q_i (n_block, K).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import (
    ModelInfo,
    log_beta_pdf,
    log_dirichlet,
    logsumexp_rows,
    needs_classes,
    safe_log,
    softmax_rows,
)
from crowdlab.models.dawid_skene import class_log_joint
from crowdlab.models.one_coin import one_coin_gamma
from crowdlab.models.params import ClassParams

# the most label visits (passes x labels) one online run makes, and the rate the estimate in its message assumes
MAX_LABEL_VISITS = 10**9
LABEL_VISITS_PER_SECOND = 1e6  # bluebirds, 10 items per update: 1.7e6; RTE (164 workers): 1.2e5


def _duration(seconds: float) -> str:
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            return f"about {seconds / size:,.3g} {unit}"
    return f"about {seconds:.3g} seconds"


# ---------------------------------------------------------------------------- hashing trick
def stable_bucket(name: str, buckets: int, seed: int = 0) -> int:
    """The bucket of worker ``name`` among ``buckets``: BLAKE2b (8-byte digest) of the id's UTF-8 bytes, salted
    with ``seed``, modulo ``buckets``. The same in every process and on every machine (unlike Python's ``hash``)."""
    if buckets < 1:
        raise ModelError("the number of hash buckets must be at least 1.")
    salt = int(seed).to_bytes(8, "little", signed=True)
    digest = hashlib.blake2b(str(name).encode("utf-8"), digest_size=8, salt=salt + bytes(8)).digest()
    return int.from_bytes(digest, "little") % int(buckets)


def worker_buckets(worker_names, buckets: int | None, seed: int = 0) -> np.ndarray:
    """(M,) bucket of every worker; ``buckets=None`` gives each worker its own (the identity)."""
    if buckets is None:
        return np.arange(len(worker_names), dtype=np.int64)
    return np.array([stable_bucket(w, buckets, seed) for w in worker_names], dtype=np.int64)


# ---------------------------------------------------------------------------- the stream and the state
@dataclass(frozen=True, eq=False)
class ItemStream:
    """The labels grouped by item (CSR by item, built once): the rows of item i are ``indptr[i]:indptr[i + 1]``
    of ``bucket`` (the worker's hash bucket) and ``label``. ``n_per_bucket``: labels per bucket (B,)."""

    indptr: np.ndarray  # (N + 1,)
    bucket: np.ndarray  # (n_obs,) int64, item-sorted
    label: np.ndarray  # (n_obs,) int64, item-sorted
    bucket_of_worker: np.ndarray  # (M,)
    n_buckets: int
    n_classes: int
    n_items: int

    @cached_property
    def n_per_bucket(self) -> np.ndarray:
        return np.bincount(self.bucket, minlength=self.n_buckets).astype(np.float64)

    def rows(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, lengths, offsets): the observation rows of ``items`` concatenated, each item's number of rows,
        and where each item's rows start in the concatenation (vectorised, no loop over items)."""
        starts = self.indptr[items]
        lengths = self.indptr[items + 1] - starts
        offsets = np.cumsum(lengths) - lengths
        rows = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(offsets - starts, lengths)
        return rows, lengths, offsets


@dataclass(frozen=True, eq=False)
class OnlineState:
    """Where online EM stands: the expected sufficient statistics (scaled to |I| items) and the position in the
    stream. ``t``: updates done; ``seen``: item blocks seen; ``epoch``: passes completed; ``pos``: items of the
    current pass already seen (the pass's order is a seeded permutation, so (epoch, pos) fixes what comes next)."""

    s_gamma: np.ndarray  # (B, K, K): s_gamma[b, k_said, k_true]
    s_pi: np.ndarray  # (K,)
    t: int = 0
    seen: int = 0
    epoch: int = 0
    pos: int = 0
    t_bucket: np.ndarray | None = None  # (B,) blocks that contained each bucket (``worker_steps`` only)


@dataclass(frozen=True, eq=False)
class Block:
    """One update's block, evaluated before the update (progressive validation): its ``items``, q_i (n, K), the
    per-item F_i (log p(D_i | theta) + log P(theta) / |I|), the predicted class and the number of ratings."""

    items: np.ndarray
    q: np.ndarray
    F: np.ndarray
    pred: np.ndarray
    ratings: np.ndarray
    eta: float
    rows: np.ndarray | None = None  # the block's observation rows in the stream (reused by the update)


# ---------------------------------------------------------------------------- the model
class OnlineDawidSkene:
    """Online (stepwise) EM for Dawid-Skene: a confusion matrix per hash bucket of workers, and a class prior.

    Options: ``eta0``, ``tau0``, ``rho`` (the step size eta_t = eta0 (tau0 + t)^(-rho), t = 1, 2, ..., capped at
    1); ``buckets`` (hashing trick, None = one matrix per worker); ``passes`` over the data; ``batch_size`` (items
    per update); ``seed`` (the item order of every pass, and the hash salt); ``prior`` (Dirichlet pseudo-counts
    on every cell of every column and of pi, counted once against |I| items); ``n_items`` (|I|, default the
    data's); ``init_accuracy`` (the starting confusion matrices: this on the diagonal, the rest spread evenly;
    uniform class prior); ``worker_steps`` (see below).

    ``worker_steps=False`` (the default) is stepwise EM as Cappé & Moulines write it: one step eta_t for all the
    statistics, the block's scaled by |I| / |block|. For a worker who labels few items that scaling lets one of
    its labels stand for |I| items' worth, so with single-item blocks its matrix swings with its last few labels
    (on RTE, 50 labels per worker, accuracy stays near 0.88 with ``batch_size=1``). ``worker_steps=True`` gives
    each bucket its own clock: its statistics move only when the block holds its labels, by eta_{t_b} with t_b
    the number of such blocks, towards the block's counts scaled to the bucket's own number of labels n_b
    (|I| / N n_b). That is the same stepwise recursion run on each bucket's own sub-stream (and, like the blog's
    gradient step, it moves only the parameters of the block's workers); the class prior keeps the global step.
    It recovers batch accuracy with single-item blocks (RTE: 0.9275).
    """

    info = ModelInfo("online_ds", "Online Dawid-Skene (stepwise EM)", "classes", exact=False, latent="item")
    symmetric = False
    hard = False
    exact = False
    monotone = False  # online EM is a stochastic approximation: nothing it climbs is guaranteed on each step

    def __init__(
        self,
        eta0: float = 1.0,
        tau0: float = 10.0,
        rho: float = 0.6,
        buckets: int | None = None,
        passes: int = 10,
        batch_size: int = 10,
        seed: int = 0,
        prior: float = 1.0,
        n_items: int | None = None,
        init_accuracy: float = 0.7,
        worker_steps: bool = False,
    ) -> None:
        finite = all(np.isfinite(float(x)) for x in (eta0, tau0, rho, prior, init_accuracy))
        if not finite:
            raise ModelError("eta0, tau0, rho, prior and init_accuracy must be finite numbers.")
        if not 0.0 <= rho <= 1.0:
            raise ModelError(
                f"rho = {rho:g} is outside [0, 1]: with rho > 1 the steps eta0 (tau0 + t)^(-rho) add up to a finite "
                "distance, so the statistics cannot leave the start (Robbins-Monro convergence needs rho in (0.5, 1])."
            )
        if tau0 < 0:
            raise ModelError(f"tau0 = {tau0:g} must be >= 0.")
        top = (1.0 + float(tau0)) ** float(rho)
        if not 0.0 < eta0 <= top * (1.0 + 1e-12):
            raise ModelError(
                f"eta0 = {eta0:g} is outside (0, (1 + tau0)^rho] = (0, {top:.4g}] for tau0 = {tau0:g}, rho = {rho:g}: "
                "each step eta0 (tau0 + t)^(-rho) must be at most 1 (a larger one is a step of 1 that forgets "
                "everything before its block)."
            )
        if buckets is not None and int(buckets) < 1:
            raise ModelError("buckets must be a positive number of hash buckets (or None: one per worker).")
        if int(passes) < 1 or int(batch_size) < 1:
            raise ModelError("passes and batch_size must be at least 1.")
        if prior < 0:
            raise ModelError("prior strength must be >= 0 (pseudo-counts added to every cell).")
        if not 0.0 < init_accuracy < 1.0:
            raise ModelError("init_accuracy must lie strictly between 0 and 1 (and above chance, 1/K).")
        self.eta0 = float(eta0)
        self.tau0 = float(tau0)
        self.rho = float(rho)
        self.buckets = None if buckets is None else int(buckets)
        self.passes = int(passes)
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.prior = float(prior)
        self.n_items = None if n_items is None else int(n_items)
        self.init_accuracy = float(init_accuracy)
        self.worker_steps = bool(worker_steps)

    # -- description ------------------------------------------------------------------
    @property
    def has_prior(self) -> bool:
        return self.prior > 0

    @property
    def objective_name(self) -> str:
        return "log-likelihood log p(F | θ)" + (" + log prior" if self.has_prior else "") + " (online: not monotone)"

    def options(self) -> dict:
        """The constructor's keyword arguments (to rebuild the model or describe it)."""
        keys = (
            "eta0",
            "tau0",
            "rho",
            "buckets",
            "passes",
            "batch_size",
            "seed",
            "prior",
            "n_items",
            "init_accuracy",
            "worker_steps",
        )
        return {k: getattr(self, k) for k in keys}

    def with_options(self, **changes) -> OnlineDawidSkene:
        return type(self)(**{**self.options(), **changes})

    def eta(self, t: np.ndarray | int) -> np.ndarray | float:
        """The step size of update t (1-based): eta0 (tau0 + t)^(-rho), capped at 1 (a convex combination)."""
        t = np.asarray(t, dtype=np.float64)
        out = np.minimum(1.0, self.eta0 * np.power(np.maximum(self.tau0 + t, 1e-12), -self.rho))
        return float(out) if out.ndim == 0 else out

    def check(self, data: Annotations) -> None:
        """Refuse what cannot work on ``data``, each with the valid range: continuous scores; a start at or below
        chance (``init_accuracy`` <= 1/K says the labels mean the opposite, and EM follows it to the label-swapped
        fixed point); with no prior, a step of 1 on a block smaller than the data (it leaves every worker outside
        the block zero counts); statistics larger than the confusion-cell limit (``buckets``); more label visits
        than :data:`MAX_LABEL_VISITS` (``passes``)."""
        from crowdlab.errors import ModelError
        from crowdlab.io.limits import get_limits, how_to_raise

        if data.is_continuous:
            raise ModelError(needs_classes(self.info.title, data))
        if data.response_names:
            raise ModelError(f"{self.info.title} has no rows for responses that are not classes: use Dawid-Skene.")
        if data.is_soft:
            raise ModelError(
                f"{self.info.title} streams whole labels; this dataset has soft votes (weighted labels): use batch "
                "Dawid-Skene or one-coin, which read the weights."
            )
        K = data.n_classes
        if not self.init_accuracy > 1.0 / K:
            raise ModelError(
                f"init_accuracy = {self.init_accuracy:g} is outside (1/K, 1) = ({1.0 / K:.4g}, 1) for K = {K} classes: "
                "a start at or below chance says the labels mean something else, and EM follows it."
            )
        if self.prior == 0 and self.eta(1) >= 1.0 and self.batch_size < data.n_items:
            raise ModelError(
                f"With prior 0 the first step eta0 (tau0 + 1)^(-rho) = {self.eta(1):.4g} must be below 1 when a block "
                f"({self.batch_size} items) is smaller than the data ({data.n_items} items): a step of 1 keeps only "
                "the block's counts. Use eta0 < (1 + tau0)^rho, a prior > 0, or batch_size >= the number of items."
            )
        B = data.n_workers if self.buckets is None else self.buckets
        cap = get_limits().max_confusion_cells
        if B * K * K > cap:
            raise ModelError(
                f"{B:,} hash buckets x {K}^2 classes = {B * K * K:,} confusion cells ({B * K * K * 8 / 1e9:.3g} GB) is "
                f"more than the {cap:,} allowed (max_confusion_cells): use at most {max(cap // (K * K), 1):,} buckets "
                f"(this data has {data.n_workers:,} workers). " + how_to_raise("max_confusion_cells")
            )
        visits = self.passes * max(data.n_obs, 1)
        if visits > MAX_LABEL_VISITS:
            raise ModelError(
                f"{self.passes:,} passes over {data.n_obs:,} labels are {visits:.3g} label visits, more than the "
                f"{MAX_LABEL_VISITS:,} one online run makes (at about {LABEL_VISITS_PER_SECOND:,.0f} a second that "
                f"would take {_duration(visits / LABEL_VISITS_PER_SECOND)}): use at most "
                f"{max(MAX_LABEL_VISITS // max(data.n_obs, 1), 1):,} passes."
            )

    # -- the stream ----------------------------------------------------------------------
    def stream(self, data: Annotations) -> ItemStream:
        """The labels grouped by item and the workers' buckets (built once per data set)."""
        self.check(data)
        order = np.argsort(data.item, kind="stable")
        indptr = np.zeros(data.n_items + 1, dtype=np.int64)
        np.cumsum(data.labels_per_item, out=indptr[1:])
        of_worker = worker_buckets(data.worker_names, self.buckets, self.seed)
        B = int(self.buckets) if self.buckets is not None else data.n_workers
        return ItemStream(
            indptr=indptr,
            bucket=of_worker[data.worker[order]],
            label=data.label[order].astype(np.int64),
            bucket_of_worker=of_worker,
            n_buckets=B,
            n_classes=data.n_classes,
            n_items=data.n_items,
        )

    def scale_items(self, stream: ItemStream) -> float:
        """|I|: the number of items the statistics are scaled to."""
        return float(self.n_items if self.n_items is not None else stream.n_items)

    def init_state(self, stream: ItemStream) -> OnlineState:
        """The statistics the starting parameters would expect from |I| items: pi uniform, every Gamma_b with
        ``init_accuracy`` on the diagonal; bucket b's columns hold its (scaled) number of labels."""
        K = stream.n_classes
        pi0 = np.full(K, 1.0 / K)
        g0 = one_coin_gamma(np.array([self.init_accuracy]), K)[0]  # (K, K), columns = true class
        scale = self.scale_items(stream) / max(stream.n_items, 1)
        n_b = stream.n_per_bucket * scale
        s_gamma = n_b[:, None, None] * (g0 * pi0[None, :])[None, :, :]
        t_bucket = np.zeros(stream.n_buckets) if self.worker_steps else None
        return OnlineState(s_gamma=s_gamma, s_pi=self.scale_items(stream) * pi0, t_bucket=t_bucket)

    # -- parameters from statistics (the M-step) --------------------------------------
    def bucket_params(self, state: OnlineState) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(pi (K,), Gamma per bucket (B, K, K), theta per bucket (B,) or None): the MAP M-step of the statistics."""
        s = self.prior
        c = state.s_gamma + s
        total = c.sum(axis=1, keepdims=True)
        if s > 0 or np.all(total > 0):
            gamma = c / total
        else:  # no prior and a column without counts (a bucket nobody in the data hashes to): the start's column
            g0 = np.broadcast_to(one_coin_gamma(np.array([self.init_accuracy]), c.shape[1])[0], c.shape)
            gamma = np.where(total > 0, c / np.where(total > 0, total, 1.0), g0)
        pi = (state.s_pi + s) / (state.s_pi.sum() + s * state.s_pi.shape[0])
        return pi, gamma, None

    def params(self, stream: ItemStream, state: OnlineState) -> ClassParams:
        """Per-worker parameters (M, K, K) (a worker gets its bucket's matrix); ``extra`` holds the bucket."""
        pi, gamma_b, theta_b = self.bucket_params(state)
        extra = {"bucket": stream.bucket_of_worker.copy()}
        if theta_b is not None:
            extra["theta"] = theta_b[stream.bucket_of_worker]
        return ClassParams(pi=pi, gamma=gamma_b[stream.bucket_of_worker], extra=extra)

    def log_prior_buckets(self, pi: np.ndarray, gamma_b: np.ndarray, theta_b: np.ndarray | None) -> float:
        if not self.has_prior:
            return 0.0
        a = 1.0 + self.prior
        return log_dirichlet(np.swapaxes(gamma_b, 1, 2), a) + log_dirichlet(pi, a)

    def log_prior(self, params: ClassParams) -> float:
        """log P(theta) over the distinct bucket matrices (a shared matrix is one parameter, counted once)."""
        if not self.has_prior:
            return 0.0
        bucket = params.extra.get("bucket", np.arange(params.n_workers))
        _, first = np.unique(bucket, return_index=True)
        theta = params.extra.get("theta")
        return self.log_prior_buckets(params.pi, params.gamma[first], None if theta is None else theta[first])

    # -- whole-data quantities (for display and comparison with batch EM) -------------
    def e_step(self, data: Annotations, params: ClassParams) -> np.ndarray:
        """The posterior of every item under the current parameters (inference mode; not part of the stream)."""
        return softmax_rows(class_log_joint(data, params.pi, params.gamma))

    def log_likelihood(self, data: Annotations, params: ClassParams) -> float:
        """The batch objective log p(x | theta) (+ log prior): what batch EM climbs, here only measured."""
        lj = class_log_joint(data, params.pi, params.gamma)
        return float(logsumexp_rows(lj).sum()) + self.log_prior(params)

    def objective(self, data: Annotations, q, params: ClassParams) -> float:
        return self.log_likelihood(data, params)

    # -- one update ------------------------------------------------------------------------
    def order(self, stream: ItemStream, epoch: int) -> np.ndarray:
        """The item order of pass ``epoch``: a permutation seeded by (seed, epoch)."""
        return np.random.default_rng([self.seed, int(epoch)]).permutation(stream.n_items)

    def next_items(self, stream: ItemStream, state: OnlineState, order: np.ndarray | None = None) -> np.ndarray:
        """The items of the next block: the next ``batch_size`` of this pass's order (a pass's last block may be
        smaller)."""
        order = self.order(stream, state.epoch) if order is None else order
        return order[state.pos : state.pos + self.batch_size]

    def evaluate(self, stream: ItemStream, state: OnlineState, items: np.ndarray) -> Block:
        """Steps 1-2: the block's q_i (the exact maximiser of F_i with the parameters fixed) and F_i at it."""
        pi, gamma_b, theta_b = self.bucket_params(state)
        rows, lengths, offsets = stream.rows(items)
        log_g = safe_log(gamma_b)
        ll = log_g[stream.bucket[rows], stream.label[rows], :]  # (rows, K)
        log_pi = safe_log(pi)
        local = np.repeat(np.arange(len(items)), lengths)  # the block's item of every row (an item may have none)
        sums = [np.bincount(local, weights=ll[:, k], minlength=len(items)) for k in range(ll.shape[1])]
        lj = np.stack(sums, axis=1) + log_pi[None, :]
        F = logsumexp_rows(lj)
        q = np.exp(lj - F[:, None])
        if self.has_prior:
            F = F + self._log_prior_logs(log_g, log_pi, theta_b) / self.scale_items(stream)
        return Block(items, q, F, np.argmax(lj, axis=1), lengths, self.eta(state.t + 1), rows)

    def _log_prior_logs(self, log_g: np.ndarray, log_pi: np.ndarray, theta_b) -> float:
        """log P(theta) from the logs already computed (:meth:`log_prior_buckets` without a second log)."""
        a = 1.0 + self.prior
        B, K, _ = log_g.shape
        from scipy.special import gammaln  # on first use: ``import crowdlab`` stays light

        const = gammaln(K * a) - K * gammaln(a)
        return float((B * K + 1) * const + (a - 1.0) * (log_g.sum() + log_pi.sum()))

    def update(self, stream: ItemStream, state: OnlineState, block: Block) -> OnlineState:
        """Step 3: s <- (1 - eta_t) s + eta_t (|I| / |block|) s_block(q), then the position moves on."""
        K, B = stream.n_classes, stream.n_buckets
        rows = block.rows if block.rows is not None else stream.rows(block.items)[0]
        q_rows = np.repeat(block.q, block.ratings, axis=0)
        cell = stream.bucket[rows] * K + stream.label[rows]
        counts = np.empty((B * K, K))
        for k in range(K):  # K bincounts over the block's rows: O(rows + B K) each
            counts[:, k] = np.bincount(cell, weights=q_rows[:, k], minlength=B * K)
        eta = block.eta
        w = eta * self.scale_items(stream) / len(block.items)
        t_bucket = state.t_bucket
        if self.worker_steps:  # each bucket on its own clock, scaled to its own number of labels
            c = np.bincount(stream.bucket[rows], minlength=B)
            here = np.flatnonzero(c)
            t_bucket = t_bucket.copy()
            t_bucket[here] += 1
            e_b = np.asarray(self.eta(t_bucket[here]))
            n_b = stream.n_per_bucket[here] * self.scale_items(stream) / max(stream.n_items, 1)
            w_b = (e_b * n_b / c[here])[:, None, None]
            s_gamma = state.s_gamma.copy()
            s_gamma[here] = (1.0 - e_b)[:, None, None] * s_gamma[here] + w_b * counts.reshape(B, K, K)[here]
        else:
            s_gamma = (1.0 - eta) * state.s_gamma + w * counts.reshape(B, K, K)
        s_pi = (1.0 - eta) * state.s_pi + w * block.q.sum(axis=0)
        pos = state.pos + len(block.items)
        epoch = state.epoch
        if pos >= stream.n_items:
            epoch, pos = epoch + 1, 0
        return OnlineState(s_gamma, s_pi, state.t + 1, state.seen + len(block.items), epoch, pos, t_bucket)

    def advance(self, stream: ItemStream, state: OnlineState, order: np.ndarray | None = None):
        """One whole update: (the block as evaluated before the update, the new state)."""
        block = self.evaluate(stream, state, self.next_items(stream, state, order))
        return block, self.update(stream, state, block)

    def run_pass(self, stream: ItemStream, state: OnlineState, on_block=None) -> OnlineState:
        """The rest of the current pass, block by block (the fast path: no snapshots); ``on_block(block)`` sees
        every block's progressive values."""
        epoch = state.epoch
        order = self.order(stream, epoch)
        while state.epoch == epoch:
            block, state = self.advance(stream, state, order)
            if on_block is not None:
                on_block(block)
        return state


class OnlineOneCoin(OnlineDawidSkene):
    """Online (stepwise) EM for the one-coin model: one accuracy theta_b per hash bucket (Donmez, Lebanon &
    Balasubramanian 2010, eq. (8)). The statistics are Dawid-Skene's; the M-step keeps only their trace (expected
    correct labels) and total, so theta_b = (correct_b + s) / (total_b + 2 s) with a Beta(1 + s, 1 + s) prior."""

    info = ModelInfo("online_one_coin", "Online one-coin (stepwise EM)", "classes", exact=False, latent="item")
    symmetric = True

    def bucket_params(self, state: OnlineState):
        s = self.prior
        correct = np.trace(state.s_gamma, axis1=1, axis2=2)
        total = state.s_gamma.sum(axis=(1, 2))
        has = total + 2 * s > 0  # else no prior and no labels in the bucket: the start's accuracy
        theta = np.where(has, (correct + s) / np.where(has, total + 2 * s, 1.0), self.init_accuracy)
        theta = np.clip(theta, 1e-12, 1 - 1e-12)
        K = state.s_pi.shape[0]
        pi = (state.s_pi + s) / (state.s_pi.sum() + s * K)
        return pi, one_coin_gamma(theta, K), theta

    def log_prior_buckets(self, pi, gamma_b, theta_b) -> float:
        if not self.has_prior:
            return 0.0
        a = 1.0 + self.prior
        return log_beta_pdf(theta_b, a, a) + log_dirichlet(pi, a)

    def _log_prior_logs(self, log_g: np.ndarray, log_pi: np.ndarray, theta_b) -> float:
        a = 1.0 + self.prior
        K = log_pi.shape[0]
        from scipy.special import gammaln

        return log_beta_pdf(theta_b, a, a) + float(gammaln(K * a) - K * gammaln(a) + (a - 1.0) * log_pi.sum())


ONLINE_MODELS = {"online_ds": OnlineDawidSkene, "online_one_coin": OnlineOneCoin}


# ---------------------------------------------------------------------------- progressive validation table
@dataclass
class Progress:
    """vowpal wabbit's progress table over the blocks: at example counters 1, 2, 4, 8, ... a row with the average
    F_i so far, the average since the last row, the counter, the item's label (gold, or "?"), the prediction and
    its number of ratings. ``F`` / ``pred`` / ``item`` keep every item's progressive values in stream order."""

    class_names: tuple[str, ...]
    gold: np.ndarray | None = None
    F: list = field(default_factory=list)
    pred: list = field(default_factory=list)
    item: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    _total: float = 0.0
    _n: int = 0
    _since_total: float = 0.0
    _since_n: int = 0
    _next: int = 1

    def add(self, block: Block) -> None:
        self.F.append(block.F)
        self.pred.append(block.pred)
        self.item.append(block.items)
        F = np.asarray(block.F, dtype=np.float64)
        csum = np.cumsum(F)
        n_before, total_before, since_before = self._n, self._total, self._since_total
        done = 0  # items of this block already in the sums at the last row (since_before counts before it)
        while self._next <= n_before + F.size:  # every counter 1, 2, 4, ... this block reaches gets its row
            j = self._next - n_before - 1  # the item that reached the counter
            upto = float(csum[j])
            self._n, self._total = self._next, total_before + upto
            self._since_total = since_before + upto - (float(csum[done - 1]) if done else 0.0)
            self._since_n += j + 1 - done
            self._row(block, j, self._next)
            since_before, done = 0.0, j + 1
            self._next *= 2
        rest = float(csum[-1]) - (float(csum[done - 1]) if done else 0.0) if F.size else 0.0
        self._n, self._total = n_before + F.size, total_before + (float(csum[-1]) if F.size else 0.0)
        self._since_total = since_before + rest
        self._since_n += F.size - done

    def _row(self, block: Block, j: int, counter: int) -> None:
        i = int(block.items[j])
        g = -1 if self.gold is None else int(self.gold[i])
        self.rows.append(
            {
                "average so far": self._total / self._n,
                "since last": self._since_total / max(self._since_n, 1),
                "example counter": counter,
                "label": self.class_names[g] if g >= 0 else "?",
                "prediction": self.class_names[int(block.pred[j])],
                "ratings": int(block.ratings[j]),
            }
        )
        self._since_total, self._since_n = 0.0, 0

    def finish(self, block: Block | None) -> None:
        """A last row for the final example (vw prints one at the end), unless the last row was for it."""
        if block is not None and self._since_n > 0:
            self._row(block, len(block.F) - 1, self._n)

    @property
    def average(self) -> float:
        return self._total / self._n if self._n else float("nan")

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(F, pred, item) of every item visit so far, in stream order."""
        if not self.F:
            e = np.zeros(0)
            return e, e.astype(np.int64), e.astype(np.int64)
        return np.concatenate(self.F), np.concatenate(self.pred), np.concatenate(self.item)

    def copy(self) -> Progress:
        return replace(self, F=list(self.F), pred=list(self.pred), item=list(self.item), rows=list(self.rows))


def format_table(rows: list[dict]) -> str:
    """The progress rows as vw prints them: fixed-width columns under a two-line header."""
    head = (
        f"{'average':>10} {'since':>10} {'example':>9} {'current':>10} {'current':>10} {'current':>8}\n"
        f"{'Fᵢ':>10} {'last':>10} {'counter':>9} {'label':>10} {'predict':>10} {'ratings':>8}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['average so far']:>10.6f} {r['since last']:>10.6f} {r['example counter']:>9d} "
            f"{str(r['label'])[:10]:>10} {str(r['prediction'])[:10]:>10} {r['ratings']:>8d}"
        )
    return "\n".join(lines)
