"""EBCC: Bayesian classifier combination with worker correlation through latent subtypes (Li, Rubinstein & Cohn
2019, "Exploiting worker correlation for label aggregation in crowdsourcing", ICML), fitted by variational Bayes.

Model (Li, Rubinstein & Cohn 2019, Sec. 3): every item has a true class y_n and, within its class, a latent
subtype g_n in 1..L shared by all the workers who label it; each worker has one confusion matrix per subtype:

- class prior kappa ~ Dir(nu0), y_n ~ Categorical(kappa);
- subtype mixture of class k: phi_k ~ Dir(eta0, ..., eta0) over the L subtypes, g_n | y_n = k ~ Categorical(phi_k);
- worker m's confusion column for class k and subtype l: V_ml(., k) ~ Dir(A0(., k)) (columns = true class, the
  house convention); each label of m on n is k' with probability V_{m, g_n}(k', y_n).

Workers who err together on some items (a shared blind spot, a copied answer) are explained by a subtype on which
all of them say the same wrong class; given the subtype their labels are independent again. Marginally over g_n
their labels are correlated, which Dawid-Skene's and IBCC's model cannot express. With L = 1 the model is IBCC
(Kim & Ghahramani 2012): the subtype Dirichlet over one element is a point mass (E log phi = 0, KL = 0), and every
update below becomes IBCC's (tested to 1e-8, :mod:`crowdlab.models.ibcc`).

Defaults follow the paper's reference implementation: L = 10 subtypes, eta0 = 0.1 / L per subtype (few subtypes
used), nu0 = 1, A0 = 1 off the diagonal and 4 on it (``prior`` adds to every cell and ``diagonal`` to the diagonal,
as IBCC's options; ``prior=0, diagonal=3`` is the paper's a_v = 4, b_v = 1).

Variational Bayes (mean field q(y, g) q(kappa) q(phi) q(V); the item's class and subtype are kept jointly as
r_nlk = q(y_n = k, g_n = l)), coordinate ascent in two half-steps stepped like EM:

- E-step: r_nlk ∝ exp(E log kappa_k + E log phi_k(l) + sum over n's labels of E log V_ml(label, k)), one sparse
  product X @ E log V with (l, k) as the columns; the class posterior is q_nk = sum_l r_nlk.
- M-step: nu_k = nu0_k + sum_n q_nk; eta_lk = eta0 + sum_n r_nlk; A_ml(k', k) = A0(k', k) + sum_n r_nlk
  #(m said k' on n).

Objective: the ELBO = sum r (E-step exponent) + H(r) - KL(q(kappa) || p) - KL(q(phi) || p) - KL(q(V) || p)
<= log p(x); each half-step maximises it over one factor, so it never decreases (checked on every step, tested on
200 seeded problems).

The subtypes are exchangeable, so a start that splits every class evenly over them would stay even for ever; as in
the paper's code, a start from class marginals q (majority vote, random, another model's posterior) splits each
item's q_nk over the subtypes with seeded Dirichlet(1, ..., 1) weights (``seed``). Each item's draws come from the
seed and its name alone (a counter-based generator, `split_subtypes`), so the in-memory, streaming and Dask fits start
alike whatever the order or partition of the items.

Parameters shown (``EbccParams``): pi = E kappa, gamma = each worker's confusion averaged over the subtypes,
gamma_m(k', k) = sum_l E phi_k(l) E V_ml(k', k) (what Dawid-Skene's matrix estimates), plus nu (K,), eta (L, K)
and A (M, L, K, K).

"Can't tell" responses (``data.response_names``): as IBCC's (:mod:`crowdlab.models.ibcc`), a point-estimated
rate rho_m(r, k) per worker, response and true class, shared by the subtypes (a worker abstains on a class, not on
a blind spot); the subtype Dirichlets count class answers only, and a worker who always abstains leaves the
posterior as it is without that worker (tested to 1e-12).

Shapes: r (N, L K) with column l K + k; q (N, K); ``abstain`` (M, R, K) or None.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdlab.errors import ModelError
from crowdlab.io.annotations import Annotations
from crowdlab.models.base import (
    LatentModel,
    ModelInfo,
    VariationalObjective,
    _inner,
    credible_draws,
    credible_interval,
    entropy_rows,
    safe_log,
    softmax_lse,
)
from crowdlab.models.dawid_skene import split_responses, with_response_rows
from crowdlab.models.ibcc import expected_log, kl_dirichlet
from crowdlab.models.kernels import add_row_offset
from crowdlab.models.params import ClassParams


@dataclass(frozen=True, eq=False)
class EbccParams(ClassParams):
    """Posterior means ``pi`` (K,), subtype-averaged confusions ``gamma`` (M, K, K), the Dirichlet parameters ``nu``
    (K,), ``eta`` (L, K) (subtype mixture of each class: column k) and ``A`` (M, L, K, K), and the prior's ``A0``
    (K, K) and ``eta0`` (a number) (what the "what just happened" formulas split A and eta into)."""

    nu: np.ndarray = None
    eta: np.ndarray = None
    A: np.ndarray = None
    A0: np.ndarray = None
    eta0: float = 0.0
    abstain: np.ndarray | None = None

    @property
    def n_subtypes(self) -> int:
        return int(self.eta.shape[0])

    def subtype_weights(self) -> np.ndarray:
        """(L, K): E phi_k(l), each class's expected mixture over the subtypes (columns sum to one)."""
        return self.eta / self.eta.sum(axis=0, keepdims=True)

    def to_dict(self, worker_names=None, class_names=None) -> dict:
        out = super().to_dict(worker_names, class_names)
        out["dirichlet_nu"] = self.nu.tolist()
        out["dirichlet_eta"] = self.eta.tolist()
        out["dirichlet_A"] = self.A.tolist()
        out.pop("A0", None)
        out.pop("eta0", None)
        if self.abstain is not None:
            out["abstain"] = self.abstain.tolist()
        out["note"] = (
            "pi is E[kappa]; gamma[m] averages worker m's subtype confusions A[m][l] (columns = true class, "
            "Dirichlet parameters) with the weights E[phi_k(l)] = eta[l][k] / sum_l eta[l][k]"
        )
        return out


def ebcc_params(nu, eta, A, A0, eta0: float, abstain: np.ndarray | None = None) -> EbccParams:
    nu = np.asarray(nu, dtype=np.float64)
    eta = np.asarray(eta, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    V = A / A.sum(axis=2, keepdims=True)  # (M, L, K', K) posterior means
    w = eta / eta.sum(axis=0, keepdims=True)  # (L, K)
    gamma = np.einsum("mlak,lk->mak", V, w)
    if abstain is not None:
        gamma = with_response_rows(gamma, abstain)
    return EbccParams(
        pi=nu / nu.sum(), gamma=gamma, nu=nu, eta=eta, A=A, A0=np.asarray(A0, float), eta0=float(eta0), abstain=abstain
    )


CLASS_PRIORS = ("uniform", "empirical")


def empirical_class_prior(data: Annotations) -> np.ndarray:
    """(K,) the sum over items of each item's share of class votes (an item with no class vote counts 1/K each):
    the paper code's ``alpha = sum_i z_ik`` from the soft majority vote (Li, Rubinstein & Cohn 2019)."""
    votes = np.asarray(data.vote_counts, dtype=np.float64)[:, : data.n_classes]
    total = votes.sum(axis=1, keepdims=True)
    shares = np.where(total > 0, votes / np.where(total > 0, total, 1.0), 1.0 / data.n_classes)
    return shares.sum(axis=0)


@dataclass(frozen=True)
class _Classes:
    """What `EBCC.prior_params` reads of a data set: its number of classes."""

    n_classes: int


@dataclass(frozen=True, eq=False)
class EbccPosterior:
    """The E-step's posterior: class marginals ``q`` (N, K) and the joint ``r`` (N, L K) over (subtype, class),
    column l K + k."""

    q: np.ndarray
    r: np.ndarray


_GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / the golden ratio: splitmix64's increment
_MASK = (1 << 64) - 1


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 ``x``, in place (wrapping arithmetic): each bit of the input moves about
    half the bits of the output."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def item_keys(names) -> np.ndarray:
    """(N,) uint64: a 64-bit key per item name (pandas' SipHash of the text, the same in every process and run).
    ``names``: a sequence of str, an Arrow string array, or the engines' `ArrowNames`."""
    from pandas.util import hash_array

    arr = getattr(names, "array", names)
    if not isinstance(arr, np.ndarray) and hasattr(arr, "to_numpy"):
        arr = arr.to_numpy(zero_copy_only=False)
    # categorize=False: the same keys, without first finding the distinct names (an engine's item names are
    # distinct already: 2 x 10^6 of them in 16 parts took 1.5 s with it, 0.35 s without)
    return hash_array(np.asarray(arr, dtype=object), categorize=False)


def split_subtypes(q: np.ndarray, L: int, seed: int, keys: np.ndarray, rows: int = 1 << 15) -> np.ndarray:
    """(N, L K): each q_nk split over the L subtypes with Dirichlet(1, ..., 1) weights (L independent Exp(1)
    draws, normalised). The draws of item n come from its name's key (`item_keys`) and ``seed`` alone, by a
    counter-based generator (splitmix64 of key XOR a salt per (class, subtype)), not from a stream in item order:
    any partition of the items, in any order, on any engine, draws the same split (``rows``: items per batch, which
    bounds the temporaries)."""
    N, K = q.shape
    if L == 1:
        return q.copy()
    base = int(_mix(np.array([(int(seed) + _GOLDEN) & _MASK], np.uint64))[0])
    salts = _mix(np.array([(base + (j + 1) * _GOLDEN) & _MASK for j in range(K * L)], dtype=np.uint64))
    keys = np.asarray(keys, dtype=np.uint64)
    out = np.empty((N, L * K))
    for lo in range(0, N, rows):
        hi = min(N, lo + rows)
        x = _mix(keys[lo:hi, None] ^ salts[None, :])  # (n, K L): column k L + l
        u = ((x >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53  # uniform on (0, 1), never 0 or 1
        e = -np.log(u).reshape(hi - lo, K, L)
        w = e / e.sum(axis=2, keepdims=True)
        out[lo:hi] = (w * q[lo:hi, :, None]).transpose(0, 2, 1).reshape(hi - lo, L * K)
    return out


class EBCC(VariationalObjective, LatentModel):
    """Li, Rubinstein & Cohn (2019): IBCC with L latent subtypes per class shared by the workers (variational Bayes)."""

    reads_responses = True  # "can't tell": point-estimated rates per worker and class (module docstring)

    info = ModelInfo(
        "ebcc",
        "Correlated workers (EBCC, variational)",
        "classes",
        exact=False,
        latent="item",
        has_hard=False,
        prior_pull=(
            "s more pseudo-counts in every cell of every subtype's confusion column and of the class prior (the "
            "diagonal bonus stays): a stronger prior pulls them towards uniform"
        ),
    )

    def __init__(
        self,
        prior: float = 0.0,
        hard: bool = False,
        diagonal: float = 3.0,
        subtypes: int = 10,
        subtype_prior: float = 0.1,
        seed: int = 0,
        class_prior: str = "uniform",
    ) -> None:
        if class_prior not in CLASS_PRIORS:
            raise ModelError(f"class_prior must be one of {', '.join(CLASS_PRIORS)} (got {class_prior!r}).")
        if prior < 0 or diagonal < 0:
            raise ModelError("prior strength and diagonal bonus must be >= 0.")
        if hard:
            raise ModelError(
                "EBCC is variational Bayes: it keeps a full posterior q(y, g); there is no hard version (untick "
                "Hard EM)."
            )
        if int(subtypes) != subtypes or not 1 <= int(subtypes) <= 50:
            raise ModelError(f"subtypes must be a whole number from 1 to 50 (got {subtypes!r}).")
        if not subtype_prior > 0 or not np.isfinite(subtype_prior):
            raise ModelError("subtype_prior (the total Dirichlet mass over the subtypes) must be > 0.")
        self.prior = float(prior)
        self.diagonal = float(diagonal)
        self.subtypes = int(subtypes)
        self.subtype_prior = float(subtype_prior)
        self.seed = int(seed)
        self.class_prior = class_prior
        self.hard = False

    @property
    def objective_name(self) -> str:
        return "ELBO (variational lower bound on log p(x))"

    # ------------------------------------------------------------------ prior
    def prior_params(self, data: Annotations) -> tuple[np.ndarray, float, np.ndarray]:
        """(nu0 (K,), eta0 (a number: every subtype of every class), A0 (K, K): every worker's every subtype).

        ``class_prior="empirical"`` (the authors' ``empirical_prior=True``): nu0_k = sum_n of item n's share of
        votes for class k (the soft majority vote the paper's code starts from), plus ``prior``; it needs the
        labels, so the streaming and Dask engines refuse it."""
        K = data.n_classes
        a = 1.0 + self.prior
        if self.class_prior == "empirical":
            if not isinstance(data, Annotations):
                raise ModelError(
                    "EBCC's empirical class prior reads every item's votes: fit it in memory (not --stream or "
                    "--engine dask)."
                )
            memo = self.__dict__.get("_nu0_memo")
            if memo is None or memo[0] is not data:
                memo = (data, empirical_class_prior(data) + self.prior)
                self.__dict__["_nu0_memo"] = memo
            nu0 = memo[1]
        else:
            nu0 = np.full(K, a)
        return nu0, self.subtype_prior / self.subtypes, np.full((K, K), a) + self.diagonal * np.eye(K)

    # ------------------------------------------------------------------ the E-step
    def _terms(self, data: Annotations, params: EbccParams):
        """(E log V as an (M K, L K) matrix, the row offset E log kappa_k + E log phi_k(l) (L K,), the KL of all
        the Dirichlet posteriors from their priors), remembered for the last two parameter sets."""
        memo = self.__dict__.setdefault("_terms_memo", [])
        for d, p, v in memo:
            if d is data and p is params:
                return v
        M, K, L = data.n_workers, data.n_classes, params.n_subtypes
        nu0, eta0, A0 = self.prior_params(data)
        e_v = expected_log(params.A, axis=2)  # (M, L, K', K)
        e_nu = expected_log(params.nu)
        e_eta = expected_log(params.eta, axis=0)  # (L, K)
        kl = kl_dirichlet(params.nu, nu0, elog=e_nu)
        kl += kl_dirichlet(params.eta, np.full_like(params.eta, eta0), axis=0, elog=e_eta)
        kl += kl_dirichlet(params.A, np.broadcast_to(A0, params.A.shape), axis=2, elog=e_v)
        e_rows = e_v
        if params.abstain is not None:  # class rows + log(1 - sum_r rho), response rows log rho, for every subtype
            R = params.abstain.shape[1]
            answered = safe_log(np.clip(1.0 - params.abstain.sum(axis=1, keepdims=True), 0.0, 1.0))  # (M, 1, K)
            rows = np.broadcast_to(safe_log(params.abstain)[:, None], (M, L, R, K))
            e_rows = np.concatenate([e_v + answered[:, None], rows], axis=2)
        mat = np.ascontiguousarray(e_rows.transpose(0, 2, 1, 3)).reshape(-1, L * K)
        off = (e_eta + e_nu[None, :]).reshape(L * K)
        v = (mat, off, kl)
        self.__dict__["_terms_memo"] = [*memo[-1:], (data, params, v)]
        return v

    def joint_log_joint(self, data: Annotations, params: EbccParams) -> np.ndarray:
        """(N, L K): the E-step's exponent for every (subtype, class) pair; -inf off a known item's class."""
        mat, off, _ = self._terms(data, params)
        lj = add_row_offset(np.asarray(data.label_counts @ mat), off)
        if self.semi_supervised:
            kc = self.known_classes(data)
            idx = np.flatnonzero(kc >= 0)
            if idx.size:
                K = data.n_classes
                cls = np.arange(lj.shape[1]) % K
                sub = lj[idx]
                sub[cls[None, :] != kc[idx, None]] = -np.inf
                lj[idx] = sub
        return lj

    def _joint(self, data: Annotations, params: EbccParams) -> tuple[EbccPosterior, np.ndarray, np.ndarray]:
        """(posterior, joint log joint, per-item log sum exp), remembered for the last two parameter sets."""
        memo = self.__dict__.setdefault("_joint_memo", [])
        for d, p, v in memo:
            if d is data and p is params:
                return v
        lj = self.joint_log_joint(data, params)
        r, lse = softmax_lse(lj)
        N, K = data.n_items, data.n_classes
        q = r.reshape(N, -1, K).sum(axis=1)
        v = (EbccPosterior(q, r), lj, lse)
        self.__dict__["_joint_memo"] = [*memo[-1:], (data, params, v)]
        return v

    def log_joint(self, data: Annotations, params: EbccParams) -> np.ndarray:
        """(N, K): log sum over the subtypes of exp(E-step exponent): its softmax is the class posterior q."""
        N, K = data.n_items, data.n_classes
        lj = self.joint_log_joint(data, params).reshape(N, -1, K)
        m = lj.max(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return m + np.log(np.exp(lj - np.where(np.isfinite(m), m, 0.0)[:, None, :]).sum(axis=1))

    def log_joint_parts(self, data: Annotations, params: EbccParams):
        return self.log_joint(data, params), None

    def e_step(self, data: Annotations, params: EbccParams) -> EbccPosterior:
        return self._joint(data, params)[0]

    # ------------------------------------------------------------------ the M-step
    def as_posterior(self, data: Annotations, q: np.ndarray) -> EbccPosterior:
        """Class marginals q (N, K) as a joint over (subtype, class): each q_nk split over the L subtypes with
        Dirichlet(1, ..., 1) weights drawn from ``seed`` and the item's name (the paper's start; an even split would
        never break the subtypes' symmetry; `split_subtypes`)."""
        q = self.clamp(data, np.asarray(q, dtype=np.float64))
        keys = item_keys(data.item_names) if self.subtypes > 1 else None
        return EbccPosterior(q, split_subtypes(q, self.subtypes, self.seed, keys))

    def m_step(self, data: Annotations, post) -> EbccParams:
        if not isinstance(post, EbccPosterior):
            post = self.as_posterior(data, post)
        M, K, L = data.n_workers, data.n_classes, self.subtypes
        N = data.n_items
        nu0, eta0, A0 = self.prior_params(data)
        r = post.r
        R = data.n_responses  # K, or K + the responses that are not classes
        counts = np.asarray(data.label_counts_t @ r).reshape(M, R, L, K).transpose(0, 2, 1, 3)  # (M, L, K', K)
        rho = None
        if R > K:
            rho = split_responses(counts.sum(axis=1), K)[1]
            counts = counts[:, :, :K]
        nu = nu0 + post.q.sum(axis=0)
        eta = eta0 + r.reshape(N, L, K).sum(axis=0)
        return ebcc_params(nu, eta, A0[None, None] + counts, A0, eta0, rho)

    def m_step_from_stats(self, counts: np.ndarray, r_sum: np.ndarray, n_items: int, start=None) -> EbccParams:
        """The M-step from sums over blocks (`crowdlab.engines.blocks`): ``counts`` (M, K', L K) = X.T @ r (worker
        m's label k' against column l K + k of r) and ``r_sum`` (L K,) the column totals of r."""
        M, K = counts.shape[0], counts.shape[1]
        L = self.subtypes
        nu0, eta0, A0 = self.prior_params(_Classes(K))
        per = r_sum.reshape(L, K)
        A = A0[None, None] + counts.reshape(M, K, L, K).transpose(0, 2, 1, 3)
        return ebcc_params(nu0 + per.sum(axis=0), eta0 + per, A, A0, eta0)

    # ------------------------------------------------------------------ the objective
    def elbo(self, data: Annotations, post, params: EbccParams) -> float:
        """E_r[E-step exponent] + H(r) - KL(every Dirichlet posterior || its prior). ``post``: the joint posterior
        (class marginals alone are split as the start splits them, :meth:`as_posterior`)."""
        memo = self.__dict__.get("_elbo_memo")
        if memo is not None and memo[0] is data and memo[1] is post and memo[2] is params:
            return memo[3]
        if not isinstance(post, EbccPosterior):
            post = self.as_posterior(data, post)
        own, lj, lse = self._joint(data, params)
        kl = self._terms(data, params)[2]
        if post is own:  # the E-step's own r: E_r[lj] + H(r) = sum of the log sum exps
            value = float(lse.sum()) - kl
        else:
            finite = np.where(post.r > 0, lj, 0.0)
            value = _inner(post.r, finite) + entropy_rows(post.r) - kl
        self.__dict__["_elbo_memo"] = (data, post, params, value)
        return value

    def entropy(self, q) -> float:
        return entropy_rows(q.r if isinstance(q, EbccPosterior) else q)

    def check(self, data: Annotations) -> None:
        super().check(data)
        if data.n_classes * self.subtypes > 2000:
            raise ModelError(
                f"EBCC keeps {self.subtypes} subtypes of each of the {data.n_classes} classes per item "
                f"({self.subtypes * data.n_classes} states); use fewer subtypes (at most 2,000 states)."
            )

    def free_parts(self, params: EbccParams) -> list:
        """Accelerated VB extrapolates the logs of the Dirichlet parameters nu, eta and A (and of the abstention
        rates)."""
        parts = [(params.nu, "log", 0), (params.eta, "log", 0), (params.A, "log", 0)]
        if params.abstain is not None:
            parts.append((params.abstain, "rates", 1))
        return parts

    def from_free_parts(self, params: EbccParams, arrays: list[np.ndarray]) -> EbccParams:
        abstain = arrays[3] if len(arrays) > 3 else None
        return ebcc_params(arrays[0], arrays[1], arrays[2], params.A0, params.eta0, abstain)

    def params_from(self, nu, eta, A) -> EbccParams:
        K = np.asarray(nu).shape[0]
        A0 = np.full((K, K), 1.0 + self.prior) + self.diagonal * np.eye(K)
        return ebcc_params(nu, eta, A, A0, self.subtype_prior / self.subtypes)

    def accuracy_intervals(
        self, params: EbccParams, level: float = 0.95, draws: int | None = None, seed: int = 0
    ) -> dict:
        return accuracy_intervals(params, level, draws, seed)


def accuracy_intervals(params: EbccParams, level: float = 0.95, draws: int | None = None, seed: int = 0) -> dict:
    """Posterior mean and central credible interval of each worker's accuracy sum_k kappa_k sum_l phi_k(l)
    V_ml(k, k), by Monte Carlo over the Dirichlet posteriors (seeded; the marginal of a Dirichlet column's entry is
    a Beta). Returns ``mean``, ``lo``, ``hi`` (M,), ``level`` and ``draws``."""
    A = params.A  # (M, L, K, K)
    diag = np.diagonal(A, axis1=2, axis2=3)  # (M, L, K)
    rest = A.sum(axis=2) - diag
    M, L, K = diag.shape
    draws = credible_draws(M, K * L, draws)
    # "can't tell": a right answer is an answer (1 - sum_r rho, a point estimate) that is right
    answered = np.ones((M, K)) if params.abstain is None else np.clip(1.0 - params.abstain.sum(axis=1), 0.0, 1.0)

    def sample(rng: np.random.Generator, n: int) -> np.ndarray:
        v = rng.beta(diag[None], rest[None], size=(n, M, L, K)) * answered[None, :, None, :]
        kappa = rng.dirichlet(params.nu, size=n)  # (n, K)
        g = rng.standard_gamma(np.broadcast_to(params.eta, (n, L, K)))
        phi = g / g.sum(axis=1, keepdims=True)
        return np.einsum("smlk,slk,sk->sm", v, phi, kappa)

    lo, hi = credible_interval(sample, M, K * L, level, draws, seed)
    return {"mean": params.worker_accuracy(), "lo": lo, "hi": hi, "level": level, "draws": draws}
