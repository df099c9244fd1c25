"""Generators of synthetic crowds with a known truth.

Two scenarios, both fully vectorised (no Python loop over items or observations) and reproducible from a seed
through ``numpy.random.default_rng(seed)``:

- :func:`simulate_crowd`: a Dawid-Skene crowd (Traganitis & Giannakis Sec. 2). Classes y_n ~ Categorical(pi); worker m
  answers item n with k' drawn from column y_n of its confusion matrix, f_m(x_n) ~ gamma_{m, y_n} (the data
  generation described in Traganitis & Giannakis, Sec. 7). Confusion matrices follow the house convention:
  ``Gamma[m, k', k] = P(worker m says k' | true class k)`` (columns = true class, each column sums to 1).
- :func:`simulate_scores`: the EM lecture's "bad annotators" scenario. Item means mu_i; good
  annotators score N(mu_i, sigma^2) (clipped to the score range), bad annotators score Uniform[low, high]
  whatever the item.

Worker types of :func:`simulate_crowd` (``WORKER_TYPES``):

``expert``
    Diagonal (accuracy per true class) drawn from ``expert_accuracy``; the error mass 1 - a of each column is
    spread over the other classes by a flat Dirichlet draw.
``novice``
    The same construction with accuracies a little above chance, default 1/K + U(0.1, 0.3).
``spammer``
    Ignores the truth: every column of Gamma is the same distribution p_m ~ Dirichlet(2, ..., 2), so Gamma has
    rank one and the answers carry no information about the class.
``adversary``
    Systematically wrong: diagonal a ~ U(0, 0.1); of the remaining mass 1 - a, a fraction f ~ U(0.8, 1) goes
    to sigma_m(k) for a random derangement sigma_m (a permutation without fixed points), the rest is spread
    over the other classes. A consistent adversary is informative once its permutation is learnt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from crowdlab.io.annotations import Annotations

__all__ = [
    "DEFAULT_MIX",
    "WORKER_TYPES",
    "SimulatedCorrelated",
    "SimulatedCrowd",
    "SimulatedNetwork",
    "SimulatedRaykar",
    "SimulatedScores",
    "SimulatedSequences",
    "mix_from_counts",
    "simulate_correlated",
    "simulate_crowd",
    "simulate_raykar",
    "simulate_sbm",
    "simulate_scores",
    "simulate_sequences",
    "sticky_transitions",
    "worker_type_counts",
]

WORKER_TYPES: tuple[str, ...] = ("expert", "novice", "spammer", "adversary")
DEFAULT_MIX: dict[str, float] = {"expert": 0.7, "novice": 0.3}

_PLURAL = {"expert": "experts", "novice": "novices", "spammer": "spammers", "adversary": "adversaries"}
_ADVERSARY_DIAGONAL = (0.0, 0.1)
_ADVERSARY_FOCUS = (0.8, 1.0)
_SPAMMER_CONCENTRATION = 2.0


@dataclass(frozen=True, eq=False)
class SimulatedCrowd:
    """A simulated Dawid-Skene crowd and the truth behind it.

    Shapes: ``truth`` (n_items,) true class codes (also ``annotations.gold``); ``gamma`` (M, K, K) with
    ``gamma[m, k', k] = P(worker m says k' | true class k)``; ``pi`` (K,); ``worker_types`` one name per
    worker.
    """

    annotations: Annotations
    truth: np.ndarray
    gamma: np.ndarray
    pi: np.ndarray
    worker_types: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class SimulatedScores:
    """The EM lecture's good/bad scorers and the truth behind them.

    Shapes: ``true_means`` (n_items,) (also ``annotations.gold``); ``good`` (n_annotators,) bool, True for a
    good annotator. ``sigma``, ``low``, ``high`` are the generating parameters.
    """

    annotations: Annotations
    true_means: np.ndarray
    good: np.ndarray
    sigma: float
    low: float
    high: float


# ------------------------------------------------------------ validation
def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be a whole number, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}.")
    return int(value)


def _check_range(name: str, value: Sequence[float], lo: float = 0.0, hi: float = 1.0) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high), got {value!r}.") from None
    if not (np.isfinite(a) and np.isfinite(b) and lo <= a <= b <= hi):
        raise ValueError(f"{name} must satisfy {lo} <= low <= high <= {hi}, got ({a}, {b}).")
    return a, b


def mix_from_counts(counts: Mapping[str, int]) -> dict[str, float]:
    """Turn worker counts per type into the fractions :func:`simulate_crowd` takes as ``mix``.

    ``mix_from_counts({"expert": 8, "novice": 4, "spammer": 2, "adversary": 1})`` with ``n_workers=15`` gives
    exactly those counts back (see :func:`worker_type_counts`).
    """
    if not counts:
        raise ValueError("counts is empty: give at least one worker type with a positive count.")
    bad = sorted(set(counts) - set(WORKER_TYPES))
    if bad:
        raise ValueError(f"unknown worker type(s) {bad}; choose from {list(WORKER_TYPES)}.")
    values = {k: _check_int(f"count of {k!r}", v, 0) for k, v in counts.items()}
    total = sum(values.values())
    if total == 0:
        raise ValueError("counts add up to 0: give at least one worker.")
    return {k: v / total for k, v in values.items()}


def _check_mix(mix: Mapping[str, float] | None) -> dict[str, float]:
    if mix is None:
        return dict(DEFAULT_MIX)
    if not mix:
        raise ValueError("mix is empty: give fractions for at least one worker type.")
    bad = sorted(set(mix) - set(WORKER_TYPES))
    if bad:
        raise ValueError(f"unknown worker type(s) {bad} in mix; choose from {list(WORKER_TYPES)}.")
    fr = {}
    for k, v in mix.items():
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"mix fraction for {k!r} must be a number, got {v!r}.") from None
        if not np.isfinite(f) or f < 0:
            raise ValueError(f"mix fraction for {k!r} must be a non-negative number, got {v!r}.")
        fr[k] = f
    total = sum(fr.values())
    if abs(total - 1.0) > 1e-3:
        raise ValueError(f"mix fractions must sum to 1, they sum to {total:.4g} (use mix_from_counts for counts).")
    return {k: v / total for k, v in fr.items()}


def worker_type_counts(n_workers: int, mix: Mapping[str, float] | None = None) -> dict[str, int]:
    """Number of workers of each type: ``mix`` fractions times ``n_workers``, rounded by largest remainder.

    The counts sum to exactly ``n_workers``; ties in the remainders go to the type listed first in
    ``WORKER_TYPES``. Keys are all of ``WORKER_TYPES`` (zero counts included).
    """
    n = _check_int("n_workers", n_workers, 1)
    fr = _check_mix(mix)
    raw = np.array([fr.get(t, 0.0) * n for t in WORKER_TYPES])
    raw = np.round(raw, 9)  # 8/15 * 15 must count as 8, not 7.999999
    base = np.floor(raw).astype(np.int64)
    short = n - int(base.sum())
    order = np.argsort(-(raw - base), kind="stable")
    base[order[:short]] += 1
    return dict(zip(WORKER_TYPES, base.tolist()))


# ------------------------------------------------------------ confusion matrices
def _other_classes(K: int) -> np.ndarray:
    """(K, K-1): row k lists the classes other than k, in increasing order."""
    j = np.arange(K - 1)
    return j[None, :] + (j[None, :] >= np.arange(K)[:, None])


def _dirichlet(rng: np.random.Generator, alpha: float, size: tuple[int, ...]) -> np.ndarray:
    """Symmetric Dirichlet draws along the last axis (vectorised over the leading axes)."""
    g = rng.gamma(alpha, size=size)
    s = g.sum(axis=-1, keepdims=True)
    return np.divide(g, s, out=np.full_like(g, 1.0 / size[-1]), where=s > 0)


def _diagonal_gamma(
    rng: np.random.Generator,
    n: int,
    K: int,
    accuracy: tuple[float, float],
) -> np.ndarray:
    """(n, K, K) confusion matrices: diagonal ~ U(accuracy), errors spread by Dirichlet (expert, novice)."""
    a = rng.uniform(accuracy[0], accuracy[1], size=(n, K))  # a[m, k] = Gamma[m, k, k]
    spread = _dirichlet(rng, 1.0, (n, K, K - 1))  # errors of true class k over the other classes
    colmajor = np.zeros((n, K, K))  # colmajor[m, k, k'] = Gamma[m, k', k]
    ks = np.arange(K)
    colmajor[:, ks, ks] = a
    colmajor[:, ks[:, None], _other_classes(K)] = (1.0 - a)[..., None] * spread
    return colmajor.transpose(0, 2, 1)


def _spammer_gamma(rng: np.random.Generator, n: int, K: int) -> np.ndarray:
    """(n, K, K) rank-one confusion matrices: every column is the same distribution (ignores the truth)."""
    p = _dirichlet(rng, _SPAMMER_CONCENTRATION, (n, K))
    return np.repeat(p[:, :, None], K, axis=2)


def _derangements(rng: np.random.Generator, n: int, K: int) -> np.ndarray:
    """(n, K) random permutations of 0..K-1 without fixed points (rejection sampling, vectorised)."""
    perm = np.argsort(rng.random((n, K)), axis=1)
    fixed = (perm == np.arange(K)).any(axis=1)
    while fixed.any():  # expected about e rounds
        perm[fixed] = np.argsort(rng.random((int(fixed.sum()), K)), axis=1)
        fixed = (perm == np.arange(K)).any(axis=1)
    return perm


def _adversary_gamma(rng: np.random.Generator, n: int, K: int) -> np.ndarray:
    """(n, K, K) systematically wrong confusion matrices: mass on a derangement of the classes."""
    a = rng.uniform(*_ADVERSARY_DIAGONAL, size=(n, K))
    focus = rng.uniform(*_ADVERSARY_FOCUS, size=(n, K))
    spread = _dirichlet(rng, 1.0, (n, K, K - 1))
    sigma = _derangements(rng, n, K)
    ks = np.arange(K)
    colmajor = np.zeros((n, K, K))
    colmajor[:, ks, ks] = a
    colmajor[:, ks[:, None], _other_classes(K)] = ((1.0 - a) * (1.0 - focus))[..., None] * spread
    rows = np.arange(n)[:, None]
    colmajor[rows, ks[None, :], sigma] += (1.0 - a) * focus
    return colmajor.transpose(0, 2, 1)


# ------------------------------------------------------------ assignment designs
def _fixed_design(rng: np.random.Generator, N: int, M: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """Each item gets L distinct workers chosen uniformly at random."""
    workers = np.argsort(rng.random((N, M)), axis=1)[:, :L]
    workers.sort(axis=1)
    return np.repeat(np.arange(N), L), workers.ravel()


def _bernoulli_mask(rng: np.random.Generator, N: int, M: int, p: float) -> np.ndarray:
    """(N, M) mask with each pair observed with probability p; an item left empty gets one random worker."""
    mask = rng.random((N, M)) < p
    empty = np.flatnonzero(~mask.any(axis=1))
    mask[empty, rng.integers(0, M, size=empty.size)] = True
    return mask


def _names(prefix: str, n: int) -> tuple[str, ...]:
    width = len(str(max(n - 1, 0)))
    return tuple(f"{prefix}{i:0{width}d}" for i in range(n))


def _workers(
    rng: np.random.Generator,
    M: int,
    K: int,
    counts: Mapping[str, int],
    expert_accuracy: tuple[float, float],
    novice_accuracy: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray]:
    """Worker types shuffled over the M workers, and their (M, K, K) confusion matrices."""
    types = np.repeat(np.array(WORKER_TYPES), [counts[t] for t in WORKER_TYPES])
    types = types[rng.permutation(M)]
    gamma = np.empty((M, K, K))
    builders = {
        "expert": lambda n: _diagonal_gamma(rng, n, K, expert_accuracy),
        "novice": lambda n: _diagonal_gamma(rng, n, K, novice_accuracy),
        "spammer": lambda n: _spammer_gamma(rng, n, K),
        "adversary": lambda n: _adversary_gamma(rng, n, K),
    }
    for t in WORKER_TYPES:
        idx = np.flatnonzero(types == t)
        if idx.size:
            gamma[idx] = builders[t](idx.size)
    return types, gamma


def _responses(
    rng: np.random.Generator, truth: np.ndarray, gamma: np.ndarray, L: int | None, density: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item, worker, label): the design (L workers per item, or each pair w.p. density), then every label drawn
    from column truth[item] of Gamma[worker] by inverse-CDF sampling, all observations at once."""
    N, (M, K, _) = truth.size, gamma.shape
    if density is None:
        item, worker = _fixed_design(rng, N, M, L)
    else:
        item, worker = np.nonzero(_bernoulli_mask(rng, N, M, density))
    cdf = np.cumsum(gamma, axis=1)[worker, :, truth[item]]  # (n_obs, K)
    u = rng.random(item.size)
    label = np.minimum((u[:, None] >= cdf).sum(axis=1), K - 1)
    return item, worker, label


# ------------------------------------------------------------ simulate_crowd
def simulate_crowd(
    n_items: int = 500,
    n_workers: int = 10,
    n_classes: int = 3,
    *,
    labels_per_item: int | None = None,
    density: float | None = None,
    mix: Mapping[str, float] | None = None,
    class_prior: Sequence[float] | np.ndarray | None = None,
    expert_accuracy: tuple[float, float] = (0.85, 0.97),
    novice_accuracy: tuple[float, float] | None = None,
    seed: int | None = 0,
) -> SimulatedCrowd:
    """Simulate a Dawid-Skene crowd with experts, novices, spammers, adversaries (Traganitis & Giannakis Secs. 2, 7).

    Parameters
    ----------
    n_items, n_workers, n_classes:
        N, M and K (K >= 2).
    labels_per_item, density:
        The assignment design; give at most one. ``labels_per_item=L``: every item is labelled by exactly L
        distinct workers chosen at random (default ``min(5, n_workers)``). ``density=p``: every (item, worker)
        pair is observed independently with probability p; an item that drew no worker gets one at random, so
        every item has at least one label.
    mix:
        Fractions of each worker type (keys from ``WORKER_TYPES``), summing to 1; default ``DEFAULT_MIX``
        (70% experts, 30% novices). Counts are rounded by largest remainder (:func:`worker_type_counts`) and
        the types are shuffled over the workers. Use :func:`mix_from_counts` to ask for exact counts.
    class_prior:
        pi, shape (K,); default uniform.
    expert_accuracy, novice_accuracy:
        Ranges of the diagonal entries Gamma[m, k, k] of experts and novices; novices default to
        (1/K + 0.1, 1/K + 0.3), clipped to at most 0.95.
    seed:
        Seed of ``numpy.random.default_rng``; the same arguments and seed give the same crowd.

    Returns
    -------
    SimulatedCrowd
        ``annotations`` (class names "0".."K-1", items "0".."N-1", workers "w0".., gold = truth),
        ``truth`` (N,), ``gamma`` (M, K, K) column-stochastic, ``pi`` (K,), ``worker_types`` (M,).
    """
    N = _check_int("n_items", n_items, 1)
    M = _check_int("n_workers", n_workers, 1)
    K = _check_int("n_classes", n_classes, 2)
    L, density = _design(M, labels_per_item, density, default=min(5, M))
    counts, expert_accuracy, novice_accuracy = _prepare_workers(M, K, mix, expert_accuracy, novice_accuracy)
    if class_prior is None:
        pi = np.full(K, 1.0 / K)
    else:
        pi = np.asarray(class_prior, dtype=np.float64).ravel()
        if pi.shape != (K,):
            raise ValueError(f"class_prior needs {K} entries (one per class), got {pi.size}.")
        if not np.all(np.isfinite(pi)) or (pi < 0).any() or abs(pi.sum() - 1.0) > 1e-6:
            raise ValueError("class_prior must be non-negative and sum to 1.")
        pi = pi / pi.sum()

    rng = np.random.default_rng(seed)
    types, gamma = _workers(rng, M, K, counts, expert_accuracy, novice_accuracy)
    truth = rng.choice(K, size=N, p=pi).astype(np.int32)
    item, worker, label = _responses(rng, truth, gamma, L, density)

    design = f"{L} labels per item" if density is None else f"density {density:g}"
    kinds = ", ".join(f"{counts[t]} {_PLURAL[t]}" for t in WORKER_TYPES if counts[t])
    ann = Annotations(
        item=item.astype(np.int32),
        worker=worker.astype(np.int32),
        label=label.astype(np.int32),
        item_names=tuple(str(i) for i in range(N)),
        worker_names=_names("w", M),
        class_names=tuple(str(k) for k in range(K)),
        gold=truth.copy(),
        name="simulated crowd",
        notes=(f"simulate_crowd: N={N}, M={M}, K={K}, {design}, {kinds}, seed={seed}",),
    )
    return SimulatedCrowd(annotations=ann, truth=truth, gamma=gamma, pi=pi, worker_types=tuple(types.tolist()))


# ------------------------------------------------------------ simulate_scores
def simulate_scores(
    n_items: int = 20,
    n_good: int = 3,
    n_bad: int = 2,
    *,
    sigma: float = 0.1,
    low: float = 0.0,
    high: float = 1.0,
    missing: float = 0.0,
    seed: int | None = 0,
) -> SimulatedScores:
    """Simulate the lecture's "bad annotators" scores.

    Item means mu_i ~ U(low + 0.2 (high - low), low + 0.8 (high - low)) (U(0.2, 0.8) on the lecture's [0, 1]).
    A good annotator scores s_ia ~ N(mu_i, sigma^2), clipped to [low, high]; a bad one s_ia ~ U[low, high],
    ignoring the item. Each score is missing independently with probability ``missing``; an item left with no
    score keeps one from a random annotator. Annotators are named "A0", "A1", ... in a shuffled order in which
    the good ones are never all listed first (when there are both kinds).

    Returns
    -------
    SimulatedScores
        ``annotations`` (continuous: ``value`` set, ``label`` None, gold = true means), ``true_means``
        (n_items,), ``good`` (n_annotators,) bool.
    """
    N = _check_int("n_items", n_items, 1)
    G = _check_int("n_good", n_good, 0)
    B = _check_int("n_bad", n_bad, 0)
    A = G + B
    if A < 1:
        raise ValueError("need at least one annotator (n_good + n_bad >= 1).")
    sigma, low, high, missing = float(sigma), float(low), float(high), float(missing)
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a positive number, got {sigma}.")
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"the score range needs low < high, got low={low}, high={high}.")
    if not (np.isfinite(missing) and 0.0 <= missing < 1.0):
        raise ValueError(f"missing must be a probability in [0, 1), got {missing}.")

    rng = np.random.default_rng(seed)
    good = np.arange(A) < G
    if 0 < G < A:
        # shuffle until the good annotators are not simply the first G (probability 1 / C(A, G) per draw)
        while True:
            order = rng.permutation(good)
            if not order[:G].all():
                break
        good = order

    width = high - low
    mu = rng.uniform(low + 0.2 * width, low + 0.8 * width, size=N)
    noisy = np.clip(mu[:, None] + sigma * rng.standard_normal((N, A)), low, high)
    uniform = rng.uniform(low, high, size=(N, A))
    scores = np.where(good[None, :], noisy, uniform)

    mask = _bernoulli_mask(rng, N, A, 1.0 - missing) if missing > 0 else np.ones((N, A), dtype=bool)
    item, worker = np.nonzero(mask)

    ann = Annotations(
        item=item.astype(np.int32),
        worker=worker.astype(np.int32),
        label=None,
        item_names=tuple(str(i) for i in range(N)),
        worker_names=tuple(f"A{a}" for a in range(A)),
        class_names=(),
        value=scores[item, worker],
        gold=mu.copy(),
        name="simulated scores",
        notes=(f"simulate_scores: N={N}, {G} good, {B} bad, sigma={sigma:g}, [{low:g}, {high:g}], seed={seed}",),
    )
    return SimulatedScores(annotations=ann, true_means=mu, good=good, sigma=sigma, low=low, high=high)


# ---------------------------------------------- dependent labels (Traganitis & Giannakis, Secs. 4-6)
def _prepare_workers(M: int, K: int, mix, expert_accuracy, novice_accuracy):
    counts = worker_type_counts(M, mix)
    expert_accuracy = _check_range("expert_accuracy", expert_accuracy)
    if novice_accuracy is None:
        novice_accuracy = (min(1.0 / K + 0.1, 0.95), min(1.0 / K + 0.3, 0.95))
    return counts, expert_accuracy, _check_range("novice_accuracy", novice_accuracy)


def _design(
    M: int, labels_per_item: int | None, density: float | None, default: int | None = None
) -> tuple[int | None, float | None]:
    """Validated (labels per item, density): exactly one is not None; ``default`` labels per item (else M)."""
    if labels_per_item is not None and density is not None:
        raise ValueError("give either labels_per_item or density, not both.")
    if density is not None:
        density = float(density)
        if not (np.isfinite(density) and 0.0 < density <= 1.0):
            raise ValueError(f"density must be a probability in (0, 1], got {density}.")
        return None, density
    if labels_per_item is None:
        return (M if default is None else default), None
    L = _check_int("labels_per_item", labels_per_item, 1)
    if L > M:
        raise ValueError(f"labels_per_item ({L}) cannot exceed n_workers ({M}): each item needs distinct workers.")
    return L, None


def sticky_transitions(K: int, self_transition: float) -> np.ndarray:
    """(K, K) T[k_new, k_old]: stay with probability ``self_transition``, else move uniformly to another class."""
    if not 0.0 <= self_transition <= 1.0:
        raise ValueError("self_transition must lie in [0, 1].")
    return np.eye(K) * self_transition + (1.0 - np.eye(K)) * (1.0 - self_transition) / (K - 1)


@dataclass(frozen=True, eq=False)
class SimulatedSequences:
    """Crowd-labelled Markov chains: ``annotations`` (sequential, gold = truth), ``truth`` (N,), ``T`` (K, K)
    with T[k_new, k_old], ``pi0`` (K,), ``gamma`` (M, K, K), ``worker_types``."""

    annotations: Annotations
    truth: np.ndarray
    T: np.ndarray
    pi0: np.ndarray
    gamma: np.ndarray
    worker_types: tuple[str, ...]


def simulate_sequences(
    n_sequences: int = 100,
    length: int | Sequence[int] = 40,
    n_classes: int = 4,
    n_workers: int = 10,
    *,
    self_transition: float | None = 0.8,
    transition: np.ndarray | None = None,
    pi0: Sequence[float] | None = None,
    labels_per_item: int | None = None,
    density: float | None = None,
    mix: Mapping[str, float] | None = None,
    expert_accuracy: tuple[float, float] = (0.6, 0.9),
    novice_accuracy: tuple[float, float] | None = None,
    seed: int | None = 0,
) -> SimulatedSequences:
    """S Markov chains of labels (Traganitis & Giannakis, Sec. 6.1.1), each position labelled by a Dawid-Skene crowd.

    ``length``: one length for all sequences or one per sequence. The chain: y_1 ~ pi0 (default uniform),
    y_n ~ T(., y_{n-1}) with T ``transition`` if given, else sticky with ``self_transition``, else (both None)
    random columns ~ Dirichlet(1) as in the paper. Workers as in :func:`simulate_crowd`; by default every worker
    labels every position (the paper's setting); ``labels_per_item`` / ``density`` leave labels missing.
    The chains are drawn one time step at a time for all sequences at once.
    """
    S = _check_int("n_sequences", n_sequences, 1)
    K = _check_int("n_classes", n_classes, 2)
    M = _check_int("n_workers", n_workers, 1)
    lengths = np.broadcast_to(np.asarray(length, dtype=np.int64), (S,)).copy()
    if (lengths < 1).any():
        raise ValueError("every sequence needs length >= 1.")
    L, density = _design(M, labels_per_item, density)
    counts, expert_accuracy, novice_accuracy = _prepare_workers(M, K, mix, expert_accuracy, novice_accuracy)
    rng = np.random.default_rng(seed)
    if transition is not None:
        T = np.asarray(transition, dtype=np.float64)
        if T.shape != (K, K) or (T < 0).any() or not np.allclose(T.sum(axis=0), 1.0):
            raise ValueError("transition must be (K, K) with non-negative columns summing to 1 (T[new, old]).")
    elif self_transition is not None:
        T = sticky_transitions(K, self_transition)
    else:
        T = _dirichlet(rng, 1.0, (K, K)).T
    p0 = np.full(K, 1.0 / K) if pi0 is None else np.asarray(pi0, dtype=np.float64)
    types, gamma = _workers(rng, M, K, counts, expert_accuracy, novice_accuracy)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    truth = np.empty(int(starts[-1]), dtype=np.int32)
    y = rng.choice(K, size=S, p=p0)
    truth[starts[:-1]] = y
    cdf = np.cumsum(T, axis=0)  # cdf[:, k_old]
    for t in range(1, int(lengths.max())):
        live = np.flatnonzero(lengths > t)
        u = rng.random(live.size)
        y[live] = np.minimum((u[:, None] >= cdf[:, y[live]].T).sum(axis=1), K - 1)
        truth[starts[live] + t] = y[live]
    item, worker, label = _responses(rng, truth, gamma, L, density)
    seq_of = np.repeat(np.arange(S), lengths)
    pos = np.arange(truth.size) - starts[seq_of]
    ann = Annotations(
        item=item.astype(np.int32),
        worker=worker.astype(np.int32),
        label=label.astype(np.int32),
        item_names=tuple(f"{s}:{p}" for s, p in zip(seq_of.tolist(), pos.tolist())),
        worker_names=_names("w", M),
        class_names=tuple(str(k) for k in range(K)),
        gold=truth.copy(),
        name="simulated sequences",
        notes=(f"simulate_sequences: S={S}, N={truth.size}, M={M}, K={K}, seed={seed}",),
        sequence_starts=starts,
        sequence_names=tuple(str(s) for s in range(S)),
    )
    return SimulatedSequences(ann, truth, T, p0, gamma, tuple(types.tolist()))


@dataclass(frozen=True, eq=False)
class SimulatedNetwork:
    """A stochastic block model with crowd labels: ``annotations`` (graph = adjacency, gold = truth),
    ``truth`` (N,), ``adjacency`` (sparse, symmetric, 0/1), ``p_in``, ``p_out``, ``gamma``, ``worker_types``."""

    annotations: Annotations
    truth: np.ndarray
    adjacency: object
    p_in: float
    p_out: float
    gamma: np.ndarray
    worker_types: tuple[str, ...]


def sbm_probabilities(sizes: np.ndarray, avg_degree: float, ratio: float) -> tuple[float, float]:
    """(p_in, p_out) with p_out = ratio * p_in giving the expected average degree ``avg_degree``."""
    N = sizes.sum()
    within_pairs = float((sizes * (sizes - 1)).sum()) / 2
    between_pairs = float(N * (N - 1)) / 2 - within_pairs
    p_in = avg_degree * N / 2 / (within_pairs + ratio * between_pairs)
    if p_in > 1:
        raise ValueError("average degree too high for this many nodes and ratio.")
    return p_in, ratio * p_in


def _sbm_edges(rng: np.random.Generator, truth: np.ndarray, K: int, p_in: float, p_out: float) -> np.ndarray:
    """(E, 2) undirected edges of an SBM: the number of edges per block pair ~ Binomial, endpoints uniform within
    the blocks, duplicates and self-loops dropped (rare when sparse)."""
    members = [np.flatnonzero(truth == k) for k in range(K)]
    chunks = []
    for a in range(K):
        for b in range(a, K):
            na, nb = members[a].size, members[b].size
            pairs = na * (na - 1) // 2 if a == b else na * nb
            if pairs == 0:
                continue
            m = rng.binomial(pairs, p_in if a == b else p_out)
            u = members[a][rng.integers(0, na, size=m)]
            v = members[b][rng.integers(0, nb, size=m)]
            chunks.append(np.stack([u, v], axis=1))
    e = np.concatenate(chunks) if chunks else np.zeros((0, 2), dtype=np.int64)
    e = e[e[:, 0] != e[:, 1]]
    e = np.sort(e, axis=1)
    return np.unique(e, axis=0)


def simulate_sbm(
    n_items: int = 1000,
    n_classes: int = 4,
    n_workers: int = 10,
    *,
    avg_degree: float = 5.0,
    ratio: float = 0.05,
    class_prior: Sequence[float] | None = None,
    labels_per_item: int | None = None,
    density: float | None = None,
    mix: Mapping[str, float] | None = None,
    expert_accuracy: tuple[float, float] = (0.6, 0.9),
    novice_accuracy: tuple[float, float] | None = None,
    seed: int | None = 0,
) -> SimulatedNetwork:
    """A stochastic block model (Traganitis & Giannakis Sec. 6.2.1): communities = classes, edge within a community with
    probability p_in and between communities with p_out = ``ratio`` * p_in, set so the expected average degree
    is ``avg_degree``; every node labelled by a Dawid-Skene crowd (by default every worker labels every node)."""
    import scipy.sparse as sp

    N = _check_int("n_items", n_items, 2)
    K = _check_int("n_classes", n_classes, 2)
    M = _check_int("n_workers", n_workers, 1)
    L, density = _design(M, labels_per_item, density)
    counts, expert_accuracy, novice_accuracy = _prepare_workers(M, K, mix, expert_accuracy, novice_accuracy)
    pi = np.full(K, 1.0 / K) if class_prior is None else np.asarray(class_prior, dtype=np.float64)
    rng = np.random.default_rng(seed)
    types, gamma = _workers(rng, M, K, counts, expert_accuracy, novice_accuracy)
    truth = rng.choice(K, size=N, p=pi).astype(np.int32)
    p_in, p_out = sbm_probabilities(np.bincount(truth, minlength=K), avg_degree, ratio)
    edges = _sbm_edges(rng, truth, K, p_in, p_out)
    adj = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(N, N))
    adj = (adj + adj.T).tocsr()
    item, worker, label = _responses(rng, truth, gamma, L, density)
    ann = Annotations(
        item=item.astype(np.int32),
        worker=worker.astype(np.int32),
        label=label.astype(np.int32),
        item_names=tuple(str(i) for i in range(N)),
        worker_names=_names("w", M),
        class_names=tuple(str(k) for k in range(K)),
        gold=truth.copy(),
        name="simulated network (SBM)",
        notes=(f"simulate_sbm: N={N}, K={K}, M={M}, average degree {avg_degree:g}, seed={seed}",),
        graph=adj,
    )
    return SimulatedNetwork(ann, truth, adj, p_in, p_out, gamma, tuple(types.tolist()))


# ---------------------------------------------------------------- Raykar et al. 2010: features and a classifier
@dataclass(frozen=True, eq=False)
class SimulatedRaykar:
    """Items with features, a logistic truth and two-coin annotators (Raykar et al. 2010).

    ``annotations`` (binary, gold = truth); ``features`` (`crowdlab.io.features.ItemFeatures`, intercept first, not
    standardised, so ``w`` is on the same scale); ``truth`` (N,) 0/1; ``w`` (d + 1,) true weights, intercept
    first; ``alpha``, ``beta`` (M,) true sensitivities and specificities; ``p_true`` (N,) sigma(w^T x_i);
    ``worker_types`` "expert" / "novice" per annotator.
    """

    annotations: Annotations
    features: object
    truth: np.ndarray
    w: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    p_true: np.ndarray
    worker_types: tuple[str, ...]

    def draw_items(self, n: int, seed: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fresh items from the same distribution: (X (n, d + 1) design rows, p (n,), y (n,)) for prediction."""
        rng = np.random.default_rng(seed)
        raw = rng.standard_normal((_check_int("n", n, 1), self.w.size - 1))
        X = self.features.transform(raw)
        p = 1.0 / (1.0 + np.exp(-(X @ self.w)))
        return X, p, (rng.random(p.size) < p).astype(np.int32)


def simulate_raykar(
    n_items: int = 2000,
    d: int = 2,
    n_annotators: int = 5,
    n_novices: int = 3,
    *,
    alpha: Sequence[float] | np.ndarray | None = None,
    beta: Sequence[float] | np.ndarray | None = None,
    w: Sequence[float] | np.ndarray | None = None,
    expert_range: tuple[float, float] = (0.85, 0.95),
    novice_range: tuple[float, float] = (0.55, 0.7),
    signal: float = 2.0,
    density: float | None = None,
    seed: int | None = 0,
) -> SimulatedRaykar:
    """Simulate Raykar's setting: features x_i ~ N(0, I_d), truth y_i ~ Bernoulli(sigma(w^T [1, x_i])), and
    two-coin annotators of whom ``n_novices`` are novices (a majority of novices makes majority vote degrade).

    ``w`` (d + 1,), intercept first; by default the intercept ~ U(-0.5, 0.5) and the slopes are a uniformly random
    direction of length ``signal``. Experts draw alpha_j, beta_j ~ U(``expert_range``), novices
    U(``novice_range``) (independently), unless ``alpha`` / ``beta`` (M,) are given. The novices sit at random
    positions among the annotators ("w0", "w1", ...). Every annotator labels every item (Raykar's setting), or
    with ``density`` each (item, annotator) pair is observed with that probability (every item keeps >= 1 label).
    Classes are "0" and "1" (1 = positive); items "0".."N-1".
    """
    from crowdlab.io.features import features_from_array

    N = _check_int("n_items", n_items, 2)
    D = _check_int("d", d, 1)
    M = _check_int("n_annotators", n_annotators, 1)
    V = _check_int("n_novices", n_novices, 0)
    if V > M:
        raise ValueError(f"n_novices ({V}) cannot exceed n_annotators ({M}).")
    expert_range = _check_range("expert_range", expert_range)
    novice_range = _check_range("novice_range", novice_range)
    if density is not None:
        density = float(density)
        if not (np.isfinite(density) and 0.0 < density <= 1.0):
            raise ValueError(f"density must be a probability in (0, 1], got {density}.")
    rng = np.random.default_rng(seed)
    novice = np.zeros(M, dtype=bool)
    novice[rng.permutation(M)[:V]] = True
    lo = np.where(novice, novice_range[0], expert_range[0])
    hi = np.where(novice, novice_range[1], expert_range[1])
    a_true = rng.uniform(lo, hi)
    b_true = rng.uniform(lo, hi)
    for name, given in (("alpha", alpha), ("beta", beta)):
        if given is None:
            continue
        arr = np.asarray(given, dtype=np.float64).ravel()
        if arr.shape != (M,) or not np.all((arr >= 0) & (arr <= 1)):
            raise ValueError(f"{name} needs {M} probabilities (one per annotator).")
        if name == "alpha":
            a_true = arr
        else:
            b_true = arr
    if w is None:
        u = rng.standard_normal(D)
        w_true = np.concatenate([[rng.uniform(-0.5, 0.5)], float(signal) * u / np.linalg.norm(u)])
    else:
        w_true = np.asarray(w, dtype=np.float64).ravel()
        if w_true.shape != (D + 1,) or not np.all(np.isfinite(w_true)):
            raise ValueError(f"w needs d + 1 = {D + 1} finite weights (intercept first).")
    raw = rng.standard_normal((N, D))
    item_names = tuple(str(i) for i in range(N))
    features = features_from_array(raw, item_names, add_intercept=True, standardize=False)
    p_true = 1.0 / (1.0 + np.exp(-(features.X @ w_true)))
    truth = (rng.random(N) < p_true).astype(np.int32)
    if density is None:
        mask = np.ones((N, M), dtype=bool)
    else:
        mask = _bernoulli_mask(rng, N, M, density)
    item, worker = np.nonzero(mask)
    y = truth[item]
    u = rng.random(item.size)
    label = np.where(y == 1, u < a_true[worker], u >= b_true[worker]).astype(np.int32)
    types = tuple("novice" if v else "expert" for v in novice)
    ann = Annotations(
        item=item.astype(np.int32),
        worker=worker.astype(np.int32),
        label=label,
        item_names=item_names,
        worker_names=_names("w", M),
        class_names=("0", "1"),
        gold=truth.copy(),
        name="simulated crowd with features",
        notes=(f"simulate_raykar: N={N}, d={D}, M={M} ({V} novices), seed={seed}",),
    )
    return SimulatedRaykar(ann, features, truth, w_true, a_true, b_true, p_true, types)


# ------------------------------------------------------------ simulate_correlated
@dataclass(frozen=True, eq=False)
class SimulatedCorrelated:
    """A crowd whose cliques copy a shared noisy label, and the truth behind it.

    Shapes: ``truth`` (n_items,); ``clique`` (M,) int: the clique of each worker, -1 for one who labels alone;
    ``gamma`` (M, K, K): each worker's confusion matrix marginally (a copier's mixes the clique's shared label,
    weight rho, with its own); ``shared`` (n_cliques, n_items): each clique's shared noisy label; ``rho``: the
    probability that a clique member copies the shared label.
    """

    annotations: Annotations
    truth: np.ndarray
    clique: np.ndarray
    gamma: np.ndarray
    pi: np.ndarray
    shared: np.ndarray
    rho: float

    def copying_pairs(self) -> np.ndarray:
        """(M, M) bool: True for two different workers of the same clique (the pairs that copy when rho > 0)."""
        c = self.clique
        same = (c[:, None] == c[None, :]) & (c[:, None] >= 0)
        np.fill_diagonal(same, False)
        return same


def simulate_correlated(
    n_items: int = 300,
    n_independent: int = 6,
    cliques: Sequence[int] = (4,),
    n_classes: int = 3,
    *,
    rho: float = 0.6,
    accuracy: tuple[float, float] = (0.65, 0.85),
    clique_accuracy: tuple[float, float] | None = None,
    density: float | None = None,
    seed: int | None = 0,
) -> SimulatedCorrelated:
    """A correlated crowd: ``n_independent`` workers who label alone and cliques of the given sizes whose members,
    on each item, copy their clique's one shared noisy label with probability ``rho`` and otherwise label alone.

    Every worker (and every clique's shared label) has a Dawid-Skene confusion matrix: accuracy per true class
    drawn from ``accuracy`` (``clique_accuracy`` for the clique members and their shared labels, default the same),
    the errors spread by a flat Dirichlet draw. The shared label of clique c on item n is drawn from clique c's
    confusion column of the true class, so copied errors coincide. ``rho = 0`` gives today's independent crowd
    (:func:`simulate_crowd`'s model); ``rho = 1`` makes a clique one voter counted as many.

    Design: every worker labels every item (``density=None``), or each (item, worker) pair is kept with
    probability ``density`` (an item left without labels gets one worker). Workers are named ``w0..`` for the
    independent ones and ``c<clique>_<member>`` for the copiers; classes "0".."K-1"; gold = truth.
    """
    N = _check_int("n_items", n_items, 1)
    Mi = _check_int("n_independent", n_independent, 0)
    K = _check_int("n_classes", n_classes, 2)
    sizes = [_check_int("clique size", s, 1) for s in cliques]
    if not 0.0 <= float(rho) <= 1.0:
        raise ValueError(f"rho is a probability (0 to 1), got {rho!r}.")
    accuracy = _check_range("accuracy", accuracy)
    clique_accuracy = accuracy if clique_accuracy is None else _check_range("clique_accuracy", clique_accuracy)
    M = Mi + sum(sizes)
    if M < 1:
        raise ValueError("the crowd needs at least one worker.")
    if density is not None and not 0.0 < float(density) <= 1.0:
        raise ValueError(f"density must lie in (0, 1], got {density!r}.")
    rng = np.random.default_rng(seed)
    C = len(sizes)
    clique = np.concatenate([np.full(Mi, -1), np.repeat(np.arange(C), sizes)]).astype(np.int64)
    own = np.empty((M, K, K))
    if Mi:
        own[:Mi] = _diagonal_gamma(rng, Mi, K, accuracy)
    if M > Mi:
        own[Mi:] = _diagonal_gamma(rng, M - Mi, K, clique_accuracy)
    shared_gamma = _diagonal_gamma(rng, C, K, clique_accuracy) if C else np.zeros((0, K, K))
    pi = np.full(K, 1.0 / K)
    truth = rng.integers(0, K, size=N).astype(np.int32)

    def draw(g: np.ndarray, who: np.ndarray, items: np.ndarray) -> np.ndarray:
        cdf = np.cumsum(g, axis=1)[who, :, truth[items]]
        return np.minimum((rng.random(items.size)[:, None] >= cdf).sum(axis=1), K - 1)

    shared = np.zeros((C, N), dtype=np.int64)
    if C:
        cc, nn = np.meshgrid(np.arange(C), np.arange(N), indexing="ij")
        shared = draw(shared_gamma, cc.ravel(), nn.ravel()).reshape(C, N)
    if density is None:
        item, worker = (a.ravel() for a in np.meshgrid(np.arange(N), np.arange(M), indexing="ij"))
    else:
        item, worker = np.nonzero(_bernoulli_mask(rng, N, M, float(density)))
    label = draw(own, worker, item)
    c = clique[worker]
    copy = (c >= 0) & (rng.random(item.size) < float(rho))
    label[copy] = shared[c[copy], item[copy]]
    gamma = own.copy()
    for m in np.flatnonzero(clique >= 0):
        gamma[m] = float(rho) * shared_gamma[clique[m]] + (1.0 - float(rho)) * own[m]
    names = [*_names("w", Mi)] if Mi else []
    for ci, s in enumerate(sizes):
        names += [f"c{ci}_{j}" for j in range(s)]
    ann = Annotations(
        item=item.astype(np.int32),
        worker=worker.astype(np.int32),
        label=label.astype(np.int32),
        item_names=tuple(str(i) for i in range(N)),
        worker_names=tuple(names),
        class_names=tuple(str(k) for k in range(K)),
        gold=truth.copy(),
        name="simulated correlated crowd",
        notes=(
            f"simulate_correlated: N={N}, {Mi} independent workers, cliques of {list(sizes)}, K={K}, rho={rho:g}, "
            f"seed={seed}",
        ),
    )
    return SimulatedCorrelated(ann, truth, clique, gamma, pi, shared, float(rho))


# ------------------------------------------------------------ simulate_shared_error
def simulate_shared_error(
    n_items: int = 600,
    n_workers: int = 20,
    labels_per_item: int = 10,
    *,
    pi1: float = 0.22,
    accuracy: tuple[float, float] = (0.8, 0.95),
    hard_share: float = 0.4,
    hard_error: float = 0.45,
    seed: int = 0,
) -> SimulatedCrowd:
    """A binary crowd with an error the workers share on one class (issue 38, section 2): a share ``hard_share``
    of the class-0 items are "hard", and on a hard item every worker says class 1 with probability ``hard_error``
    whatever its own accuracy; elsewhere worker m is right with its accuracy (uniform in ``accuracy``). The true
    share of class 1 is ``pi1``. Conditional independence given the class fails (the hard items' labels are
    correlated through the item), and a Dawid-Skene fit can absorb the shared error into asymmetric confusion
    matrices and a class prior far above ``pi1``. ``gamma`` holds each worker's marginal confusion matrix (the
    hard items mixed in); ``worker_types`` is "shared error" for every worker."""
    N = _check_int("n_items", n_items, 2)
    M = _check_int("n_workers", n_workers, 2)
    L = min(_check_int("labels_per_item", labels_per_item, 1), M)
    rng = np.random.default_rng(seed)
    truth = (rng.random(N) < float(pi1)).astype(np.int64)
    hard = (truth == 0) & (rng.random(N) < float(hard_share))
    acc = rng.uniform(*accuracy, size=M)
    item, worker = _fixed_design(rng, N, M, L)
    right = rng.random(item.size) < acc[worker]
    label = np.where(right, truth[item], 1 - truth[item])
    on_hard = hard[item]
    label[on_hard] = (rng.random(int(on_hard.sum())) < float(hard_error)).astype(np.int64)
    gamma = np.empty((M, 2, 2))
    p1_given_0 = float(hard_share) * float(hard_error) + (1.0 - float(hard_share)) * (1.0 - acc)
    gamma[:, 1, 0] = p1_given_0
    gamma[:, 0, 0] = 1.0 - p1_given_0
    gamma[:, 1, 1] = acc
    gamma[:, 0, 1] = 1.0 - acc
    ann = Annotations(
        item=item.astype(np.int32),
        worker=worker.astype(np.int32),
        label=label.astype(np.int32),
        item_names=_names("i", N),
        worker_names=_names("w", M),
        class_names=("0", "1"),
        gold=truth.astype(np.int32),
        name="simulated crowd with a shared error",
        notes=(
            f"simulate_shared_error: N={N}, M={M}, {L} labels an item, pi1={pi1:g}, hard_share={hard_share:g}, "
            f"hard_error={hard_error:g}, seed={seed}",
        ),
    )
    return SimulatedCrowd(ann, truth, gamma, np.array([1.0 - pi1, pi1]), ("shared error",) * M)
