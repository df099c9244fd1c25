"""The model protocol every EM model implements, and the machinery they share.

A model is a small object holding its hyper-parameters (prior strength, soft or hard EM). Its methods are pure
functions over immutable inputs:

- ``init(data, q0, rng) -> params`` is done by :mod:`crowdlab.engines.init`, which produces a starting posterior
  ``q0`` (or parameters) and calls ``m_step`` on it;
- ``e_step(data, params) -> q``: the posterior over the latent variables, shape (n_latent, n_states);
- ``m_step(data, q) -> params``: closed-form maximiser of E_q[log p(x, z | theta)] (+ log prior for MAP);
- ``log_likelihood(data, params) -> float``: the observed-data objective log p(x | theta) (+ log prior);
- ``complete_objective(data, q, params) -> float``: E_q[log p(x, z | theta)] (+ log prior). With the entropy of q
  added it is the EM lower bound F(q, theta) <= log p(x | theta), with equality right after an exact E-step.

All the models here share one structure: the latent variables are independent given the parameters, one per
"latent unit" (an item for the class models, an annotator for the lecture's scores model), so everything follows
from ``log_joint(data, params)``: the (n_latent, n_states) array of log p(x_unit, z_unit = s | theta).

Hard EM (the EM lecture, "Hard EM") replaces the posterior by its arg-max (a one-hot q). Its objective is the
complete-data log-likelihood log p(x, z_hat | theta) (+ log prior), which hard EM never decreases.

Semi-supervised EM (every item-latent class model): items whose class is known (``with_known(known=...)`` or a
revealed fraction of the gold, ``with_known(reveal=0.1, seed=0)``) keep a one-hot q at their known class in every
E-step (and in the start). The objective becomes log p(x, y_known | theta) = sum over unknown items of
log sum_s p(x_n, s | theta) + sum over known items of log p(x_n, y_n | theta) (+ log prior), which EM still never
decreases; the M-steps are unchanged (a known item's labels count, with weight one, towards its class).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.io.readers import spell
from crowdlab.models.kernels import add_row_offset, row_max, row_sums, softmax_lse, softmax_rows_full

TINY = 1e-300  # floor inside logs: log(0) becomes about -690, never -inf


def safe_log(x: np.ndarray | float) -> np.ndarray:
    """log(x) with zeros mapped to log(1e-300) so no -inf (and no NaN in 0 * log 0) leaves a model."""
    return np.log(np.maximum(x, TINY))


def row_argmax(q: np.ndarray) -> np.ndarray:
    """(n,) arg-max of each row, ties to the first column as ``np.argmax``; two columns by one comparison (numpy's
    ``argmax(axis=1)`` on (10^6, 2) takes about 20x longer)."""
    if q.ndim == 2 and q.shape[1] == 2:
        return (q[:, 1] > q[:, 0]).view(np.int8)
    return np.argmax(q, axis=1)


def column_sums(q: np.ndarray) -> np.ndarray:
    """(K,) sum over the rows of a 2-d array (``einsum``: about 4x faster than ``sum(axis=0)`` on (10^5, 5))."""
    q = np.asarray(q)
    if q.dtype != np.float64 or q.ndim != 2:
        return q.sum(axis=0)
    return np.einsum("ij->j", q)


def logsumexp_rows(log_w: np.ndarray) -> np.ndarray:
    """(n,) log sum_k exp(log_w[n, k]), max-shifted (plain numpy: faster than scipy's general logsumexp)."""
    m = row_max(log_w)
    return m + np.log(row_sums(np.exp(log_w - m[:, None])))


def softmax_rows(log_w: np.ndarray) -> np.ndarray:
    """Normalise each row of log-weights to probabilities (max-shifted, stable)."""
    return softmax_lse(log_w)[0]


def one_hot_argmax(log_w: np.ndarray, tie_order: np.ndarray | None = None) -> np.ndarray:
    """One-hot arg-max per row; ties go to the first state (or the first in ``tie_order``)."""
    idx = np.argmax(log_w, axis=1)
    q = np.zeros_like(log_w, dtype=np.float64)
    q[np.arange(log_w.shape[0]), idx] = 1.0
    return q


def entropy_rows(q: np.ndarray) -> float:
    """Sum over rows of the Shannon entropy -sum q log q (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0)
    return float(-t.sum())


def log_dirichlet(x: np.ndarray, alpha: float, axis: int = -1) -> float:
    """Sum of log Dirichlet(alpha, ..., alpha) densities of the simplex vectors along ``axis`` of ``x``.

    ``alpha = 1`` (no prior) gives 0 for log-density up to the constant log Gamma(K), which is included so the
    value is the true log density.
    """
    from scipy.special import gammaln  # imported on first use: ``import crowdlab`` stays light

    x = np.asarray(x, dtype=np.float64)
    K = x.shape[axis]
    n_vec = x.size // K
    const = gammaln(K * alpha) - K * gammaln(alpha)
    if alpha == 1.0:
        return float(n_vec * const)
    return float(n_vec * const + (alpha - 1.0) * safe_log(x).sum())


def log_beta_pdf(x: np.ndarray, a: float, b: float) -> float:
    """Sum of log Beta(a, b) densities of the entries of ``x``."""
    from scipy.special import gammaln

    x = np.asarray(x, dtype=np.float64)
    const = gammaln(a + b) - gammaln(a) - gammaln(b)
    out = x.size * const
    if a != 1.0:
        out += (a - 1.0) * safe_log(x).sum()
    if b != 1.0:
        out += (b - 1.0) * safe_log(1.0 - x).sum()
    return float(out)


def normalise_columns(counts: np.ndarray, pseudo: float = 0.0) -> np.ndarray:
    """Columns of ``counts + pseudo`` (axis -2) normalised to sum to one; an empty column becomes uniform.

    A column with no mass is a class with zero posterior weight: every column then maximises the objective, and
    the uniform one keeps the numbers finite.
    """
    c = counts + pseudo
    tot = c.sum(axis=-2, keepdims=True)
    K = counts.shape[-2]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(tot > 0, c / np.where(tot > 0, tot, 1.0), 1.0 / K)
    return out


def needs_classes(title: str, data: Annotations) -> str:
    """The message for a class model given continuous scores, with the reader's note on why it read scores (a
    gold file of numbers not among the labels, or many distinct numbers) and how to read classes instead."""
    why = [n for n in getattr(data, "notes", ()) if n.startswith("Read the labels as continuous scores")]
    # the reader's note spells its option where the user is (``--kind classes`` on the command line): so does this
    where = next((w for w in ("cli", "app") if why and spell("kind", "classes", w) in why[0]), "python")
    fits = f" The good/bad annotators model fits them: {spell('method', 'scores', where)}."
    return f"{title} needs class labels; this dataset has continuous scores.{fits}" + (f" {why[0]}" if why else "")


FREE_KINDS = ("simplex", "rates", "log", "logit", "real")


def to_free(parts) -> np.ndarray:
    """One unconstrained vector from ``parts``, a list of (array, kind, axis): "simplex" (probability vectors along
    ``axis``): their logs; "rates" (entries along ``axis`` summing to at most one): the logs of the entries and of
    what is left, 1 - their sum; "log" (positive): logs; "logit" (in [0, 1]): logits; "real": as they are. Zeros
    map to log(1e-300), so nothing is infinite. What accelerated EM extrapolates in (Varadhan & Roland 2008 work
    in any parametrisation; the logs keep every extrapolated point a valid parameter set)."""
    out = []
    for x, kind, axis in parts:
        x = np.asarray(x, dtype=np.float64)
        if kind == "simplex" or kind == "log":
            y = safe_log(x)
        elif kind == "rates":
            rest = np.clip(1.0 - x.sum(axis=axis, keepdims=True), 0.0, 1.0)
            y = safe_log(np.concatenate([x, rest], axis=axis))
        elif kind == "logit":
            y = safe_log(x) - safe_log(1.0 - x)
        elif kind == "real":
            y = x
        else:  # pragma: no cover - a model's own declaration
            raise ModelError(f"unknown kind of free coordinates {kind!r} (one of {FREE_KINDS})")
        out.append(y.ravel())
    return np.concatenate(out) if out else np.zeros(0)


def from_free(vec: np.ndarray, parts) -> list[np.ndarray]:
    """The arrays of ``parts`` (shapes and kinds as given to :func:`to_free`) back from an unconstrained vector:
    probability vectors renormalised (max-shifted softmax along their axis), rates likewise with the remainder
    dropped, exp of logs (capped at exp(700)), the logistic of logits, reals as they are."""
    out, at = [], 0
    for x, kind, axis in parts:
        shape = list(np.shape(x))
        if kind == "rates":
            shape[axis] += 1
        n = int(np.prod(shape))
        y = np.asarray(vec[at : at + n], dtype=np.float64).reshape(shape)
        at += n
        if kind in ("simplex", "rates"):
            e = np.exp(np.maximum(y - y.max(axis=axis, keepdims=True), -700.0))  # no subnormals (exp's slow path)
            p = e / e.sum(axis=axis, keepdims=True)
            out.append(np.delete(p, -1, axis=axis) if kind == "rates" else p)
        elif kind == "log":
            out.append(np.exp(np.minimum(y, 700.0)))
        elif kind == "logit":
            out.append(0.5 * (1.0 + np.tanh(0.5 * y)))  # 1 / (1 + exp(-y)), without overflow
        else:
            out.append(y)
    return out


@dataclass(frozen=True, eq=False)
class WarmPosterior:
    """A posterior q (n, K) together with the parameters of the E-step that produced it (None at the start).

    Models whose M-step is iterative (GLAD's gradient ascent, MACE's inner EM over the spam indicators) start it
    from those parameters, so every M-step provably raises E_q[log p(x, z | theta)] + log prior (generalised EM).
    """

    q: np.ndarray
    params: object = None


@dataclass(eq=False)
class _EPass:
    """One memo entry of :meth:`LatentModel._pass`: the log joint at (data, params) and, once the soft E-step or
    the objective asked for them, the exact posterior q, the per-unit log-likelihood terms and the entropy of q."""

    data: object
    params: object
    lj: np.ndarray
    q: np.ndarray | None = None
    rows: np.ndarray | None = None
    entropy: float | None = None
    argmax: np.ndarray | None = None
    colsum: np.ndarray | None = None
    rows_finite: bool | None = None


def _inner(q: np.ndarray, lj: np.ndarray) -> float:
    """sum(q * lj) without the (n, K) temporary (``einsum``, no BLAS call) when the shapes agree."""
    q = np.asarray(q)
    if q.shape == lj.shape and q.dtype == np.float64 and lj.dtype == np.float64:
        from crowdlab.models.parallel import threaded_inner

        par = threaded_inner(q, lj)  # n_jobs threads over row blocks, else None
        if par is not None:
            return par
        return float(np.einsum("ij,ij->", q, lj) if q.ndim == 2 else np.einsum("i,i->", q.ravel(), lj.ravel()))
    return float((q * lj).sum())


@dataclass(frozen=True)
class ModelInfo:
    """What the UI and the CLI need to know about a model."""

    key: str
    title: str
    data_kind: str  # "classes" or "continuous"
    exact: bool  # exact E-step (objective guaranteed not to decrease)
    latent: str  # "item" or "annotator"
    binary_only: bool = False
    prior_pull: str = ""  # what the prior strength s does, in one phrase (the Step page's help, the Priors page)
    has_hard: bool = True  # a hard (classification) EM exists; False for variational Bayes, which keeps q whole


CREDIBLE_DRAWS = 4000  # Monte Carlo draws for a credible interval of a small crowd
CREDIBLE_MIN_DRAWS = 400  # ... and the fewest for a large one
CREDIBLE_BUDGET = 4_000_000  # draws x workers x classes per interval (about 0.3 s)


def credible_draws(M: int, K: int, draws: int | None = None) -> int:
    """How many posterior draws a credible interval over M workers and K classes takes: ``draws`` if given, else
    CREDIBLE_DRAWS, fewer (down to CREDIBLE_MIN_DRAWS) for crowds whose M K draws would exceed CREDIBLE_BUDGET."""
    if draws is not None:
        return max(int(draws), 1)
    return int(np.clip(CREDIBLE_BUDGET // max(M * K, 1), CREDIBLE_MIN_DRAWS, CREDIBLE_DRAWS))


def credible_interval(sample, M: int, K: int, level: float, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Central ``level`` interval of M quantities by Monte Carlo: ``sample(rng, n)`` returns (n, M) draws from the
    posterior; they are taken in batches of at most 2e6 / (M K) draws from one seeded generator."""
    rng = np.random.default_rng(seed)
    batch = max(1, min(draws, int(2e6 // max(M * K, 1))))
    parts, done = [], 0
    while done < draws:
        n = min(batch, draws - done)
        parts.append(sample(rng, n))
        done += n
    tail = (1.0 - level) / 2.0
    values = np.concatenate(parts, axis=0)
    return np.quantile(values, tail, axis=0), np.quantile(values, 1.0 - tail, axis=0)


class VariationalObjective:
    """For the models fitted by variational Bayes (IBCC, MACE by VB; put it before ``LatentModel`` in the bases):
    their ``elbo(data, q, params)`` is the objective, the bound and the complete objective, and the ELBO at the
    E-step's own q plays the part of log p(x | theta). Coordinate ascent never lowers it (``monotone``).

    Their parameters are posteriors, so each such model also gives ``accuracy_intervals(params, level, draws,
    seed)``: the posterior mean and central credible interval of every worker's accuracy sum_k pi_k Gamma_m(k, k)
    (a dict with ``mean``, ``lo``, ``hi`` (M,), ``level`` and ``draws``), which the worker report shows."""

    def accuracy_intervals(self, params, level: float = 0.95, draws: int | None = None, seed: int = 0) -> dict:
        raise NotImplementedError

    @property
    def monotone(self) -> bool:
        return True

    @property
    def has_prior(self) -> bool:
        return True  # the priors are the model

    def objective(self, data: Annotations, q, params) -> float:
        if q is None:
            q = self.e_step(data, params)
        return self.elbo(data, q, params)

    def bound(self, data: Annotations, q, params) -> float:
        return self.elbo(data, q, params)

    def complete_objective(self, data: Annotations, q, params) -> float:
        return self.elbo(data, q, params)

    def log_likelihood(self, data: Annotations, params) -> float:
        """The ELBO at the optimal q for these posteriors (the VB analogue of log p(x | theta))."""
        return self.elbo(data, self.e_step(data, params), params)


class LatentModel:
    """Shared EM machinery for models whose latent variables are independent given theta.

    Subclasses set ``info`` and implement ``log_joint``, ``m_step`` and ``log_prior``.
    """

    info: ModelInfo
    hard: bool = False
    known: object = None  # semi-supervised EM: item -> class (see ``with_known``)
    reveal: float | None = None
    reveal_seed: int = 0

    # -- to implement ------------------------------------------------------------------
    def log_joint(self, data: Annotations, params) -> np.ndarray:  # pragma: no cover - abstract
        """(n_latent, n_states): log p(x_unit, z_unit = s | theta)."""
        raise NotImplementedError

    def m_step(self, data: Annotations, q: np.ndarray):  # pragma: no cover - abstract
        raise NotImplementedError

    def log_prior(self, params) -> float:
        return 0.0

    def free_parts(self, params) -> list | None:
        """The parameters that accelerated EM extrapolates (`crowdlab.engines.accel`), as (array, kind, axis) for
        :func:`to_free`; None (the default): this model's EM is not accelerated."""
        return None

    def from_free_parts(self, params, arrays: list[np.ndarray]):
        """A parameter set like ``params`` from new values of the arrays of :meth:`free_parts`."""
        raise NotImplementedError  # pragma: no cover - only with free_parts

    # -- semi-supervised EM --------------------------------------------------------------
    def with_known(self, known=None, reveal: float | None = None, seed: int = 0):
        """Semi-supervised EM: fix the class of some items in every E-step; returns ``self``.

        ``known``: a mapping item -> class (item and class names as in the data, or integer codes), or an
        (n_items,) integer array of class codes with -1 for unknown. ``reveal``: a fraction in [0, 1] of the items
        with gold whose gold class is revealed (drawn with ``seed``); both may be given (the union is known).
        """
        if reveal is not None and not 0.0 <= float(reveal) <= 1.0:
            raise ModelError("reveal must be a fraction between 0 and 1.")
        self.known = known
        self.reveal = None if reveal is None else float(reveal)
        self.reveal_seed = int(seed)
        self.__dict__.pop("_known_memo", None)
        self.__dict__.pop("_lj_memo", None)  # memoised posteriors were clamped to the old known items
        return self

    @property
    def semi_supervised(self) -> bool:
        return self.known is not None or bool(self.reveal)

    def known_classes(self, data: Annotations) -> np.ndarray:
        """(n_items,) int: the fixed class of each item, -1 where it is not known (memoised per dataset)."""
        memo = self.__dict__.get("_known_memo")
        if memo is not None and memo[0] is data:
            return memo[1]
        out = resolve_known(data, self.known, self.reveal, self.reveal_seed)
        self.__dict__["_known_memo"] = (data, out)
        return out

    def clamp(self, data: Annotations, q: np.ndarray) -> np.ndarray:
        """q with the rows of the known items replaced by one-hot rows at their class (a copy when any)."""
        if not self.semi_supervised:
            return q
        kc = self.known_classes(data)
        idx = np.flatnonzero(kc >= 0)
        if idx.size == 0:
            return q
        q = np.array(q, dtype=np.float64, copy=True)
        q[idx] = 0.0
        q[idx, kc[idx]] = 1.0
        return q

    # -- shared ------------------------------------------------------------------------
    def as_posterior(self, data: Annotations, q: np.ndarray):
        """The posterior object the M-step takes, from marginals q (here: q itself, known items clamped)."""
        return self.clamp(data, q)

    @property
    def exact(self) -> bool:
        """True when EM on this model is exact (soft E-step): the observed log-likelihood never decreases."""
        return self.info.exact and not self.hard

    @property
    def monotone(self) -> bool:
        """Whether this EM provably never decreases its objective (the engine checks it on every step)."""
        return self.exact or self.hard

    @property
    def objective_name(self) -> str:
        if self.hard:
            return "complete-data log-likelihood log p(F, ŷ | θ)" + (" + log prior" if self.has_prior else "")
        return "log-likelihood log p(F | θ)" + (" + log prior" if self.has_prior else "")

    @property
    def has_prior(self) -> bool:
        return False

    def log_joint_parts(self, data: Annotations, params) -> tuple[np.ndarray, np.ndarray | None]:
        """(A, b): the log joint is A + b[None, :] (b None: A is the whole of it). A is a fresh array the caller may
        change. Class models return the sparse product and log pi apart, so that adding log pi is folded into the
        E-step's first pass over the rows (`crowdlab.models.kernels`)."""
        return self.log_joint(data, params), None

    def _pass(self, data: Annotations, params, soft: bool = False) -> _EPass:
        """What has been computed at (data, params), memoised for the last two pairs: the engine evaluates the
        E-step, the objective and the bound at the same parameters (the objective after an M-step at the parameters
        the next E-step starts from), and one sparse product and one pass of exponentials serve them all.
        ``soft``: also the exact posterior q (known items clamped), the per-unit terms of the observed
        log-likelihood, the arg-max, the entropy and the column sums of q, all from the same passes."""
        memo = self.__dict__.setdefault("_lj_memo", [])
        for e in memo:
            if e.data is data and e.params is params:
                if soft and e.q is None:
                    self._fill_soft(data, e, e.lj, None)
                return e
        lj, off = self.log_joint_parts(data, params)
        if soft:
            e = _EPass(data, params, lj)
            self._fill_soft(data, e, lj, off)  # adds off to lj in place
        else:
            e = _EPass(data, params, lj if off is None else add_row_offset(lj, off))
        self.__dict__["_lj_memo"] = [*memo[-1:], e]
        return e

    def _fill_soft(self, data: Annotations, e: _EPass, lj: np.ndarray, off: np.ndarray | None) -> None:
        q, rows, am, entropy, colsum = softmax_rows_full(lj, off)
        if self.semi_supervised:
            kc = self.known_classes(data)
            idx = np.flatnonzero(kc >= 0)
            if idx.size:
                rows[idx] = lj[idx, kc[idx]]
                q[idx] = 0.0
                q[idx, kc[idx]] = 1.0
                entropy = colsum = None  # recomputed from rows and q when asked
                if am is not None:
                    am[idx] = kc[idx]
        e.q, e.rows, e.argmax, e.entropy, e.colsum = q, rows, am, entropy, colsum

    def _lj(self, data: Annotations, params) -> np.ndarray:
        """``log_joint`` memoised for the last two (data, params) pairs (see ``_pass``)."""
        return self._pass(data, params).lj

    def _soft(self, data: Annotations, params) -> _EPass:
        """The memo entry at (data, params) with the exact posterior q and what comes with it (see ``_pass``)."""
        return self._pass(data, params, soft=True)

    def posterior_is_finite(self, q: np.ndarray) -> bool:
        """True when ``q`` is the exact posterior of this model's own memoised E-step and every row's
        log-sum-exp is finite: then each row of q is exp(finite)/sum with the sum in [1, K], finite too. False
        means "not known" (the caller checks q itself)."""
        e = self._posterior_entry(q)
        if e is None or e.rows is None or self.hard:
            return False
        if e.rows_finite is None:
            e.rows_finite = bool(np.isfinite(e.rows.sum()))
        return e.rows_finite

    def q_column_sums(self, q: np.ndarray) -> np.ndarray:
        """(K,) sum_n q_nk, the M-step's class totals: taken from the E-step's pass when q is its posterior."""
        e = self._posterior_entry(q)
        if e is not None and e.colsum is not None:
            return e.colsum.copy()
        return column_sums(q)

    def posterior_argmax(self, q: np.ndarray) -> np.ndarray | None:
        """The row-wise arg-max of a posterior this model's E-step produced (and still memoises), found in the same
        pass as q (`crowdlab.models.kernels`); None when it was not (the caller computes it)."""
        e = self._posterior_entry(q)
        return None if e is None else e.argmax

    def _posterior_entry(self, q: np.ndarray) -> _EPass | None:
        """The memo entry whose exact posterior is the array ``q`` itself (identity, not equality), or None."""
        for e in self.__dict__.get("_lj_memo", ()):
            if e.q is q:
                return e
        return None

    def e_step(self, data: Annotations, params) -> np.ndarray:
        """Posterior q (n_latent, n_states); one-hot arg-max under hard EM."""
        if self.hard:
            return self.clamp(data, one_hot_argmax(self._lj(data, params)))
        return self._soft(data, params).q

    def log_likelihood(self, data: Annotations, params) -> float:
        """Observed-data log-likelihood sum_n log sum_s p(x_n, z_n = s | theta) (+ log prior); a known item
        contributes log p(x_n, y_n | theta) instead (semi-supervised EM)."""
        return float(self._soft(data, params).rows.sum()) + self.log_prior(params)

    def complete_objective(self, data: Annotations, q: np.ndarray, params) -> float:
        """E_q[log p(x, z | theta)] + log prior (hard EM's objective when q is one-hot)."""
        q = q.q if isinstance(q, WarmPosterior) else q
        lj = self._lj(data, params)
        return _inner(q, lj) + self.log_prior(params)

    def entropy(self, q: np.ndarray) -> float:
        """H(q) = -sum q log q over the rows. For a posterior this model's E-step produced (and still memoised),
        sum_n log p(x_n | theta) - E_q[log p(x, z | theta)] (log q = log joint - log sum exp, the same number
        without a logarithm of q); otherwise computed from q."""
        e = self._posterior_entry(q)
        if e is None:
            return entropy_rows(q)
        if e.entropy is None:
            e.entropy = float(e.rows.sum()) - _inner(q, e.lj)
        return e.entropy

    def bound(self, data: Annotations, q: np.ndarray, params) -> float:
        """The EM lower bound F(q, theta) = E_q[log p(x, z | theta)] + H(q) (+ log prior) <= objective.

        At the exact posterior of ``params`` (the E-step's own q) F equals the objective, log p(x | theta)
        (+ log prior), and that is what is returned."""
        q = q.q if isinstance(q, WarmPosterior) else q
        if not self.hard:
            e = self._posterior_entry(q)
            if e is not None and e.params is params and e.data is data:
                return self.log_likelihood(data, params)
        return self.complete_objective(data, q, params) + self.entropy(q)

    def objective(self, data: Annotations, q: np.ndarray | None, params) -> float:
        """What this EM climbs: log p(x | theta) for soft EM, log p(x, z_hat | theta) for hard EM."""
        if self.hard:
            if q is None:
                q = self.e_step(data, params)
            return self.complete_objective(data, q, params)
        return self.log_likelihood(data, params)

    def hard_labels(self, q: np.ndarray) -> np.ndarray:
        return np.argmax(q, axis=1).astype(np.int32)

    spreads_errors = False  # errors spread evenly over the K - 1 other classes (one-coin, GLAD): K >= 2 needed

    def check(self, data: Annotations) -> None:
        """Raise ModelError when the model does not apply to ``data``."""
        from crowdlab.errors import ModelError

        if self.info.data_kind == "classes" and data.is_continuous:
            raise ModelError(needs_classes(self.info.title, data))
        if self.info.data_kind == "continuous" and not data.is_continuous:
            raise ModelError(f"{self.info.title} needs continuous scores; this dataset has class labels.")
        if self.info.binary_only and data.n_classes != 2:
            raise ModelError(f"{self.info.title} is for two classes; this dataset has {data.n_classes}.")
        if self.spreads_errors and data.n_classes < 2:
            raise ModelError(
                f"{self.info.title} spreads a worker's errors over the K - 1 other classes, so it needs at least two "
                f"classes; this dataset has {data.n_classes}."
            )
        if self.semi_supervised:
            if self.info.latent != "item" or data.is_continuous:
                raise ModelError(f"{self.info.title} has no item classes to fix: semi-supervised EM needs classes.")
            self.known_classes(data)  # raises on items or classes the data does not have


def resolve_known(data: Annotations, known, reveal: float | None, seed: int) -> np.ndarray:
    """(n_items,) int class codes fixed by semi-supervised EM (-1: unknown); see ``LatentModel.with_known``.

    A mapping's keys are item names and its values class names (``str(key)`` is tried too: 7 finds item "7"). An
    integer that is no name is read as a code (item position, class index) only where that cannot be a misreading:
    when no name is itself an integer. With items "101", "102", "103", key 1 is an error, never the second item."""
    from crowdlab.errors import ModelError

    N, K = data.n_items, data.n_classes
    out = np.full(N, -1, dtype=np.int64)
    if known is not None:
        if isinstance(known, dict):
            items = {name: n for n, name in enumerate(data.item_names)}
            classes = {name: k for k, name in enumerate(data.class_names)}
            numeric: dict[str, bool] = {}  # "items" / "classes": whether some name is an integer (computed once)

            def code(x, names, what: str, size: int) -> int | None:
                if isinstance(x, bool | np.bool_) or not isinstance(x, int | np.integer) or not 0 <= int(x) < size:
                    return None
                if what not in numeric:
                    numeric[what] = any(str(n).strip().lstrip("+-").isdigit() for n in names)
                return None if numeric[what] else int(x)

            for key, value in known.items():
                n = items.get(key, items.get(str(key)))
                if n is None:
                    n = code(key, data.item_names, "items", N)
                if n is None:
                    raise ModelError(
                        f"Known label for item {key!r}, which is not in the data (items are named like "
                        f"{', '.join(map(repr, data.item_names[:3]))})."
                    )
                k = classes.get(value, classes.get(str(value)))
                if k is None:
                    k = code(value, data.class_names, "classes", K)
                if k is None:
                    raise ModelError(
                        f"Known label {value!r} for item {key!r} is not one of the classes "
                        f"({', '.join(map(repr, data.class_names[:10]))})."
                    )
                out[n] = k
        else:
            arr = np.asarray(known)
            if arr.shape != (N,) or not np.issubdtype(arr.dtype, np.integer):
                raise ModelError(f"known= must be a mapping item -> class or {N} integer class codes (-1: unknown).")
            if ((arr < -1) | (arr >= K)).any():
                raise ModelError(f"known class codes must lie in -1..{K - 1}.")
            out[:] = arr
    if reveal:
        if data.gold is None or not data.has_gold:
            raise ModelError("reveal= needs gold labels to reveal; this dataset has none.")
        gold = np.asarray(data.gold)
        with_gold = np.flatnonzero(gold >= 0)
        n_reveal = int(round(float(reveal) * with_gold.size))
        pick = np.random.default_rng(seed).choice(with_gold, size=n_reveal, replace=False)
        out[pick] = gold[pick]
    return out
